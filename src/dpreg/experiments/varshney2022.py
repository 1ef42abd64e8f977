r"""Validation study of Varshney, Thakurta & Jain (2022) -- the paper ran none.

The study is the one proposed in docs/notes/varshney2022.md §5.1.

Two study kinds:

``varshney_sim``
    E1-E5: synthetic Gaussian data :math:`x\sim N(0, H)`, :math:`H = \mathrm{diag}(\lambda)`
    with :math:`\lambda_i = \kappa^{-(i-1)/(d-1)}`, :math:`w^*` uniform on the sphere scaled
    to :math:`\|w^*\|_H = 1` (fixed per cell by ``w_star_seed``), :math:`y = \langle x,
    w^*\rangle + \sigma z`. Every trial draws its own data stream; all methods and all
    (sigma, epsilon) pairs of a cell read the *same* stream (paired design). Metric: the
    exact excess population risk :math:`\frac12\|\bar w - w^*\|_H^2`.
``varshney_diagnostics``
    E6: per-step :math:`\zeta_t`, :math:`\gamma_t`, DP-STAT stop index, no-break flag,
    clipped fraction and the true residual scale :math:`\sqrt{\|w_t - w^*\|_H^2 +
    \sigma^2}` of the adaptive methods.

Methods (``methods`` key):

==================  =========================================================================
``ambssgd``         DP-AMBSSGD as written (Algorithm 2, exact alpha, practical K)
``ambssgd_margin``  same, DP-STAT stops at ``s - stat_margin * alpha sqrt(K)`` (non-paper)
``fixedclip``       constant clip :math:`R_xB\ln^aN`, multiplier :math:`\alpha/\sqrt2`
``oracleclip``      Lemma 3.11's clip from the true :math:`w_t - w^*` (non-private reference)
``sgd``             the same schedule without clip or noise (non-private reference)
``dp_ssgd``         DP-SSGD (Algorithm 1), FMT21 shuffling calibration; step size rule
                    ``dpssgd_eta_rule`` (Theorem 3.2's by default); see below
``dp_sgd``          DP-SGD, Poisson sampling, RDP accountant, one run per ``dpsgd_clip_scales``
``dp_sgd_tuned``    DP-SGD on the grid ``dpsgd_grid_clip_scales`` x ``dpsgd_grid_eta_scales``;
                    the table reports the grid point chosen on held-out replicates (below)
``adassp``          AdaSSP (Wang 2018) on rows clipped to public Gaussian-quantile bounds;
                    with ``adassp_stream`` from statistics accumulated over the stream
==================  =========================================================================

The first five share one vectorised pass per data stream (:func:`ambssgd_pass`);
``dp_ssgd`` makes its own pass over the same stream (N single-row steps, so it is skipped,
with a ``not_run`` row, above ``dpssgd_max_n``, and on trials from ``dpssgd_trials`` on);
the last three need the data in memory and run trial by trial (keep them to moderate N),
except that with ``dpsgd_stream`` the two DP-SGD methods read each Poisson subsample from
:class:`~dpreg.data.streams.CounterGaussianRows` (rows regenerated on demand, same law,
not paired with the stream) and never hold the N rows. ``dp_ssgd`` and, with
``adassp_stream``, AdaSSP's statistics do not draw the stream again: they observe the
chunks the first five's pass draws (:data:`SHARE_STREAM`; the same rows in the same
blocks, so bit-identical to reading streams of their own). Hyperparameters are Theorem 3.7's with
oracle constants (docs/notes/varshney2022.md §2.4, §8 item 16), the same oracle knowledge for
every method.

*DP-SSGD validity.* The FMT21 calibration certifies at most
``eps(eps0 = 1)`` (about 0.22 at N = 1e4, 0.024 at N = 1e6 for delta = 1e-6): for a
larger target the run is over-noised at the largest certifiable epsilon (still
(eps, delta)-DP; ``status = over_noised``, ``epsilon_certified`` recorded); where FMT21
certifies nothing (N < 16 ln(4/delta)) it refuses (``status = refused``, no risk).

*Tuned DP-SGD.* Every trial runs every grid point (``dp_sgd_grid`` rows, clip
:math:`C = c R_x(1+\sigma)`, step :math:`e L/(R_x^2 + (L-1)\|H\|)`, all sharing the
trial's data and Poisson subsamples). The summary reports ``dp_sgd_tuned`` by two-fold
cross-fitting over trial parity: the grid point with the smallest median on the even
trials is evaluated on the odd trials and vice versa. Selection uses other data sets from
the same distribution (public-data tuning), so it is *not* charged to the privacy budget:
a non-private tuning step, labelled as such.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dpreg.data.streams import CounterGaussianRows, GaussianStream
from dpreg.estimators.ambssgd_core import (
    OracleInfo,
    RunSpec,
    ambssgd_pass,
    block_layout,
    paper_hyperparameters,
)
from dpreg.estimators.ambssgd_privacy import (
    NOISE_MULTIPLIER_RULES,
    ShufflingRegimeWarning,
    ambssgd_noise_multiplier,
    calibrate_dp_ssgd,
    calibrate_poisson_dpsgd,
    fixed_clip_noise_multiplier,
)
from dpreg.estimators.dp_ssgd import (
    DP_SSGD_ETA_RULES,
    DpSsgdFeed,
    dp_ssgd_hyperparameters,
    dp_ssgd_stream_pass,
)
from dpreg.estimators.dpsgd_poisson import dp_sgd_poisson_runs, dp_sgd_poisson_stream_runs
from dpreg.experiments.params import (
    KindParams,
    at_least,
    choice,
    nonnegative,
    open_interval,
    param,
    positive,
    positive_integer,
)
from dpreg.experiments.study_kind import StudyKind
from dpreg.experiments.varshney2022_adassp import (
    BLOCK_ROWS,
    StreamedAdasspStatistics,
    adassp_bounds,
    adassp_gram_fit,
    streamed_adassp_rows,
)
from dpreg.theory import ambssgd as theory

__all__ = [
    "SimParams",
    "METHODS",
    "SIM",
    "check_sim_cell",
    "run_sim_cell",
    "sample_complexity",
    "summarise_sim",
    "tuned_dp_sgd",
]

STREAM_METHODS: tuple[str, ...] = ("ambssgd", "ambssgd_margin", "fixedclip", "oracleclip", "sgd")
STORED_METHODS: tuple[str, ...] = ("dp_sgd", "adassp", "dp_sgd_tuned")
METHODS: tuple[str, ...] = STREAM_METHODS + ("dp_ssgd",) + STORED_METHODS
GRID_METHOD = "dp_sgd_grid"
"""Run rows of the tuned DP-SGD grid (one per grid point); summarised as ``dp_sgd_tuned``."""
_RULE = {
    "ambssgd": "adaptive",
    "ambssgd_margin": "adaptive",
    "fixedclip": "fixed",
    "oracleclip": "oracle",
    "sgd": "none",
}
_NOISE_STREAM = 2**31 - 1
_SSGD_STREAM = 2**31 - 2
_GRID_STREAM = 2**31 - 3
_DPSGD_STREAM = 2**31 - 4


@dataclass(frozen=True)
class SimParams(KindParams):
    """Cell keys of the ``varshney_sim`` and ``varshney_diagnostics`` kinds."""

    kind = "varshney_sim"
    d: int = param(doc="dimension", check=positive_integer)
    n: int | None = param(None, doc="sample size N (give exactly one of `n`, `n_per_d`)")
    n_per_d: float | None = param(None, doc="N / d instead of `n`", check=positive)
    kappa: float = param(1.0, doc="condition number of the geometric spectrum", check=at_least(1))
    sigma: float | list[float] = param(0.1, doc="noise level(s) of y", check=nonnegative)
    epsilon: float | list[float] = param(1.0, doc="privacy budget(s)", check=positive)
    delta: float = param(1e-6, doc="privacy delta", check=open_interval(0, 1))
    methods: str | list[str] = param(
        ["ambssgd", "fixedclip", "oracleclip", "sgd"],
        doc="methods run on every stream (table in the module docstring)",
        check=choice(*METHODS),
    )
    c1: float = param(1.0, doc="block-layout constant of Algorithm 2", check=positive)
    n_queries: int = param(20, doc="DP-STAT's K (practical value)", check=positive_integer)
    noise_multiplier_rule: str = param(
        "exact",
        doc="Theorem 3.6's multiplier: exact or the paper's closed form",
        check=choice(*NOISE_MULTIPLIER_RULES),
    )
    x_norm_rule: str = param(
        "exact",
        doc="R_x^2 from the spectrum or Cor. 3.8's R_x^2 = d",
        check=choice("exact", "paper"),
    )
    stat_margin: float = param(
        2.0, doc="DP-STAT margin of `ambssgd_margin` (non-paper)", check=nonnegative
    )
    w_star_seed: int = param(0, doc="seed of the true w*")
    dpsgd_clip_scales: float | list[float] = param(
        [1.0], doc="DP-SGD clip(s), in units of the public clip", check=positive
    )
    dpsgd_batch_size: float = param(1000, doc="DP-SGD expected batch size", check=positive)
    dpsgd_epochs: float = param(1.0, doc="DP-SGD epochs", check=positive)
    dpsgd_grid_clip_scales: list[float] = param(
        [0.03, 0.1, 0.3, 1.0], doc="tuned DP-SGD: clip grid (distinct)", check=positive
    )
    dpsgd_grid_eta_scales: list[float] = param(
        [0.3, 1.0], doc="tuned DP-SGD: step-size grid (distinct)", check=positive
    )
    dpssgd_eta_rule: str = param(
        "theorem", doc="DP-SSGD step size rule", check=choice(*DP_SSGD_ETA_RULES)
    )
    dpssgd_max_n: int | None = param(
        None, doc="skip DP-SSGD (a `not_run` row) above this N", check=positive_integer
    )
    dpssgd_trials: int | None = param(
        None,
        doc="run DP-SSGD on trials 0..k-1 only (`not_run` rows for the others): its N "
        "sequential steps dominate the job time at large N",
        check=positive_integer,
    )
    dpsgd_stream: bool = param(
        False,
        doc="DP-SGD (fixed and tuned) reads each Poisson subsample from rows regenerated "
        "on demand (CounterGaussianRows), never the N rows in memory; not paired",
    )
    adassp_stream: bool = param(
        False,
        doc="AdaSSP accumulates X'X, X'y over the stream block by block (never the N rows "
        "in memory); same rows, release and noise draws as in memory",
    )


SIM_KEYS = frozenset(SimParams.required_keys() | SimParams.optional_keys() | {"conversion"})


# ------------------------------------------------------------------------ cell parsing


SHARE_STREAM = True
"""AdaSSP's statistics and DP-SSGD observe the chunks of DP-AMBSSGD's stream (one draw of
the rows); ``False``: each reads a stream of its own (the reference path, same rows)."""


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else [value]


def _number(value: Any, name: str, *, lo: float = 0.0, strict: bool = True, inf: bool = False):
    if isinstance(value, str) and value.strip().lower() in ("inf", ".inf"):
        value = math.inf
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name} must be a number; got {value!r}")
    v = float(value)
    bad = math.isnan(v) or (v <= lo if strict else v < lo) or (math.isinf(v) and not inf)
    if bad:
        raise ValueError(f"{name} must be {'>' if strict else '>='} {lo:g}; got {value!r}")
    return v


def _spec(cell: Mapping[str, Any]) -> dict[str, Any]:
    P = SimParams.from_cell(cell)
    d = P.d
    if isinstance(d, bool) or not isinstance(d, int) or d < 1:
        raise ValueError(f"d must be a positive integer; got {d!r}")
    if (P.n is None) == (P.n_per_d is None):
        raise ValueError("give exactly one of n or n_per_d (N = n_per_d * d)")
    n = P.n if P.n is not None else _number(P.n_per_d, "n_per_d") * d
    if isinstance(n, float) and n.is_integer():
        n = int(n)
    if isinstance(n, bool) or not isinstance(n, int) or n < 2 * d:
        raise ValueError(f"n must be an integer >= 2 d = {2 * d}; got {n!r}")
    methods = _list(P.methods)
    unknown = [m for m in methods if m not in METHODS]
    if unknown or not methods:
        raise ValueError(f"methods must be a non-empty list from {list(METHODS)}; got {methods}")
    sigmas = [_number(s, "sigma", strict=False) for s in _list(P.sigma)]
    epsilons = [_number(e, "epsilon") for e in _list(P.epsilon)]
    delta = _number(P.delta, "delta")
    if delta >= 1:
        raise ValueError(f"delta must lie in (0, 1); got {delta!r}")
    rule = P.noise_multiplier_rule
    if rule not in NOISE_MULTIPLIER_RULES:
        raise ValueError(f"noise_multiplier_rule must be one of {NOISE_MULTIPLIER_RULES}")
    for e in epsilons:
        ambssgd_noise_multiplier(e, delta, rule)  # refuses "paper" outside its range
    kappa = _number(P.kappa, "kappa")
    if kappa < 1:
        raise ValueError(f"kappa must be >= 1; got {kappa!r}")
    x_norm_rule = P.x_norm_rule
    if x_norm_rule not in ("exact", "paper"):
        raise ValueError(f"x_norm_rule must be exact or paper; got {x_norm_rule!r}")
    K = P.n_queries
    if isinstance(K, bool) or not isinstance(K, int) or K < 1:
        raise ValueError(f"n_queries must be a positive integer; got {K!r}")
    c1 = _number(P.c1, "c1")
    layout = block_layout(n, kappa=kappa, c1=c1)
    if "adassp" in methods and any(s == 0 for s in sigmas):
        pass  # AdaSSP is fine with sigma = 0
    return {
        "n": n,
        "d": d,
        "kappa": kappa,
        "sigmas": sigmas,
        "epsilons": epsilons,
        "delta": delta,
        "methods": methods,
        "rule": rule,
        "x_norm_rule": x_norm_rule,
        "K": K,
        "c1": c1,
        "layout": layout,
        "stat_margin": _number(P.stat_margin, "stat_margin", strict=False),
        "w_star_seed": int(P.w_star_seed),
        "clip_scales": [_number(c, "dpsgd_clip_scales") for c in _list(P.dpsgd_clip_scales)],
        "batch": _number(P.dpsgd_batch_size, "dpsgd_batch_size"),
        "epochs": _number(P.dpsgd_epochs, "dpsgd_epochs"),
        "grid_clips": _positive_list(P.dpsgd_grid_clip_scales, "dpsgd_grid_clip_scales"),
        "grid_etas": _positive_list(P.dpsgd_grid_eta_scales, "dpsgd_grid_eta_scales"),
        "ssgd_eta_rule": P.dpssgd_eta_rule,
        "ssgd_max_n": _max_n(P.dpssgd_max_n),
        "dpsgd_stream": P.dpsgd_stream,
        "adassp_stream": P.adassp_stream,
        "ssgd_trials": _max_n(P.dpssgd_trials, "dpssgd_trials"),
    }


def _positive_list(value: Any, key: str) -> list[float]:
    values = [_number(v, key) for v in _list(value)]
    if not values or len(set(values)) != len(values):
        raise ValueError(f"{key} must be a non-empty list of distinct positive numbers")
    return values


def _max_n(value: Any, key: str = "dpssgd_max_n") -> int | None:
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{key} must be a positive integer or null; got {value!r}")
    return value


def check_sim_cell(cell: Mapping[str, Any]) -> None:
    """Validate a ``varshney_sim`` / ``varshney_diagnostics`` cell (ValueError naming the key)."""
    spec = _spec(cell)
    if {"dp_sgd", "dp_sgd_tuned"} & set(spec["methods"]) and spec["batch"] > spec["n"]:
        raise ValueError(f"dpsgd_batch_size must be <= n = {spec['n']}")


def eigenvalues(d: int, kappa: float) -> np.ndarray:
    r"""Geometric spectrum :math:`\lambda_i = \kappa^{-(i-1)/(d-1)}`.

    As in docs/notes/varshney2022.md §5.1.
    """
    if d == 1:
        return np.ones(1)
    return kappa ** (-np.arange(d) / (d - 1))


def true_w_star(d: int, lam: np.ndarray, seed: int) -> np.ndarray:
    r""":math:`w^*` uniform on the sphere, scaled to :math:`\\|w^*\\|_H = 1`."""
    u = np.random.default_rng([seed, d]).standard_normal(d)
    return u / math.sqrt(float(u @ (lam * u)))


# ----------------------------------------------------------------------------- runs


def _stream_runs(spec: dict[str, Any], hp_by_sigma: dict[float, Any]) -> tuple[RunSpec, list]:
    labels, rules, alphas, alpha_s, fixed, domains, sigmas, margins = ([] for _ in range(8))
    for sigma in spec["sigmas"]:
        hp = hp_by_sigma[sigma]
        for method in spec["methods"]:
            if method not in STREAM_METHODS:
                continue
            eps_list = [math.inf] if method == "sgd" else spec["epsilons"]
            for eps in eps_list:
                a = (
                    0.0
                    if method == "sgd"
                    else ambssgd_noise_multiplier(eps, spec["delta"], spec["rule"])
                )
                a_grad = a if _RULE[method] == "adaptive" else fixed_clip_noise_multiplier(a)
                labels.append((method, sigma, eps))
                rules.append(_RULE[method])
                alphas.append(a_grad)
                alpha_s.append(a)
                fixed.append(hp.fixed_clip)
                domains.append(hp.stat_domain)
                sigmas.append(sigma)
                margins.append(spec["stat_margin"] if method == "ambssgd_margin" else 0.0)
    runs = RunSpec(
        clip_rule=tuple(rules),
        noise_multiplier=np.array(alphas),
        stat_noise_multiplier=np.array(alpha_s),
        fixed_clip=np.array(fixed),
        stat_domain=np.array(domains),
        sigma=np.array(sigmas),
        stat_margin=np.array(margins),
    )
    return runs, labels


def _setup(cell: Mapping[str, Any]):
    spec = _spec(cell)
    lam = eigenvalues(spec["d"], spec["kappa"])
    w_star = true_w_star(spec["d"], lam, spec["w_star_seed"])
    hp_by_sigma = {
        s: paper_hyperparameters(
            spec["n"],
            spec["layout"].b,
            H_eigenvalues=lam,
            w_star_H_norm=1.0,
            sigma=s,
            x_norm_rule=spec["x_norm_rule"],
        )  # fmt: skip
        for s in spec["sigmas"]
    }
    return spec, lam, w_star, hp_by_sigma


def _run_stream(spec, lam, w_star, hp_by_sigma, trial_ids, seed, rng, observers=()):
    """DP-AMBSSGD and its variants over the cell's stream; ``observers`` see every chunk.

    With observers, the stream is drawn up to N rows after the pass (the rows the pass
    dropped), so each observer sees the first N rows of every trial.
    """
    runs, labels = _stream_runs(spec, hp_by_sigma)
    if not labels:
        return None, labels, 0.0
    hp = next(iter(hp_by_sigma.values()))
    source = GaussianStream(
        seed, trial_ids, lam, w_star, chunk_rows=BLOCK_ROWS, observers=observers
    )
    start = time.perf_counter()
    res = ambssgd_pass(
        source,
        layout=spec["layout"],
        runs=runs,
        eta=hp.eta,
        x_norm=math.sqrt(hp.x_norm_sq),
        log_factor=hp.log_factor,
        n_queries=spec["K"],
        rng=rng,
        oracle=OracleInfo(w_star=w_star, H=lam, kappa=spec["kappa"]),
    )
    if observers:
        source.drain(spec["n"])
    return res, labels, time.perf_counter() - start


def _excess(W: np.ndarray, w_star: np.ndarray, lam: np.ndarray) -> np.ndarray:
    diff = W - w_star
    return 0.5 * np.einsum("...d,d,...d->...", diff, lam, diff)


def _stored_rows(spec, lam, w_star, hp_by_sigma, trial_ids, seed, rng) -> list[dict[str, Any]]:
    """dp_sgd and adassp, one data set at a time (they need the rows in memory)."""
    from dpreg.estimators import get_estimator
    from dpreg.privacy.budgets import ApproxDP

    rows: list[dict[str, Any]] = []
    n, d = spec["n"], spec["d"]
    methods = set(spec["methods"])
    if spec["dpsgd_stream"]:
        methods -= {"dp_sgd", "dp_sgd_tuned"}  # _streamed_dpsgd_rows runs them
    if spec["adassp_stream"]:
        methods -= {"adassp"}  # streamed_adassp_rows runs it, with the same rng after this
    if not methods & set(STORED_METHODS):
        return rows
    grid = _grid_setup(spec, lam, hp_by_sigma) if "dp_sgd_tuned" in methods else None
    rows_out = None  # one (X, base, z) for every trial: drawn into in place (issue 18)
    for trial in trial_ids:
        rows_out = GaussianStream(seed, [trial], lam, w_star).materialise(n, out=rows_out)
        X, base, z = rows_out[0][0], rows_out[1][0], rows_out[2][0]  # take(n)'s rows
        if grid is not None:
            rows += _grid_rows(grid, X, base, z, w_star, lam, trial, seed)
        if "adassp" in methods:  # AdaSSP's clipped design: bound_X does not depend on sigma
            bx = adassp_bounds(d, lam, 0.0)[0]
            norms = np.linalg.norm(X, axis=1)
            Xc = X * np.minimum(1.0, bx / norms)[:, None]
            xtx = Xc.T @ Xc  # once, not per sigma: fit_adassp's product (adassp_gram_fit)
        for sigma in spec["sigmas"]:
            y = base + sigma * z
            hp = hp_by_sigma[sigma]
            for eps in spec["epsilons"]:
                budget = ApproxDP(eps, spec["delta"])
                if "dp_sgd" in methods:
                    L = spec["batch"]
                    eta = L / (hp.x_norm_sq + (L - 1) * lam.max())
                    for scale in spec["clip_scales"]:
                        clip = scale * math.sqrt(hp.x_norm_sq) * (1.0 + sigma)
                        fit = get_estimator("dp_sgd_poisson")(
                            X, y, budget=budget, rng=rng, clip=clip, eta=eta, batch_size=L,
                            n_public=spec["n"], epochs=spec["epochs"],
                        )  # fmt: skip
                        rows.append(
                            {
                                "trial": trial,
                                "method": f"dp_sgd_c{scale:g}",
                                "sigma": sigma,
                                "epsilon": eps,
                                "excess_risk": float(_excess(fit.theta[0], w_star, lam)),
                                "clip_fraction": float(
                                    fit.nonprivate_diagnostics["clip_fraction"][0]
                                ),
                            }
                        )
                if "adassp" in methods:
                    by = adassp_bounds(d, lam, sigma)[1]
                    yc = np.clip(y, -by, by)
                    fit = adassp_gram_fit(
                        Xc, xtx, yc, budget=budget, rng=rng, bound_X=bx, bound_y=by
                    )
                    rows.append(
                        {
                            "trial": trial,
                            "method": "adassp",
                            "sigma": sigma,
                            "epsilon": eps,
                            "excess_risk": float(_excess(fit.theta[0], w_star, lam)),
                            "clip_fraction": float(np.mean((norms > bx) | (np.abs(y) > by))),
                        }
                    )
    return rows


def _grid_setup(spec, lam, hp_by_sigma, multipliers=None) -> dict[str, Any]:
    """Lay out the tuned DP-SGD grid: one lane per (sigma, epsilon, clip scale, eta scale).

    ``multipliers``: the calibrated multiplier per epsilon if the caller has them (the
    same ``calibrate_poisson_dpsgd`` values; about 0.3 s of accounting per epsilon).
    """
    n, L, delta = spec["n"], spec["batch"], spec["delta"]
    q = L / n
    steps = math.ceil(spec["epochs"] / q)
    H_norm = float(lam.max())
    if multipliers is None:
        multipliers = {e: calibrate_poisson_dpsgd(e, delta, q, steps) for e in spec["epsilons"]}
    labels, sig, clip, eta, mult = [], [], [], [], []
    for sigma in spec["sigmas"]:
        rx2 = hp_by_sigma[sigma].x_norm_sq
        base_eta = L / (rx2 + (L - 1) * H_norm)
        for eps in spec["epsilons"]:
            for c in spec["grid_clips"]:
                for e in spec["grid_etas"]:
                    labels.append((sigma, eps, c, e))
                    sig.append(sigma)
                    clip.append(c * math.sqrt(rx2) * (1.0 + sigma))
                    eta.append(e * base_eta)
                    mult.append(multipliers[eps])
    return {
        "labels": labels,
        "sigma": np.array(sig),
        "clip": np.array(clip),
        "eta": np.array(eta),
        "noise_multiplier": np.array(mult),
        "batch": L,
        "steps": steps,
    }


def _grid_rows(grid, X, base, z, w_star, lam, trial, seed) -> list[dict[str, Any]]:
    """One trial of every grid point (shared data and Poisson subsamples, own DP noise)."""
    theta, clip_fraction = dp_sgd_poisson_runs(
        X, base, z, sigma=grid["sigma"], clip=grid["clip"], eta=grid["eta"],
        noise_multiplier=grid["noise_multiplier"], batch_size=grid["batch"],
        steps=grid["steps"], rng=np.random.default_rng([seed, _GRID_STREAM, trial]),
    )  # fmt: skip
    excess = _excess(theta, w_star, lam)
    return [
        {
            "trial": trial,
            "method": GRID_METHOD,
            "sigma": sigma,
            "epsilon": eps,
            "excess_risk": float(excess[r]),
            "clip_fraction": float(clip_fraction[r]),
            "clip_scale": c,
            "eta_scale": e,
        }
        for r, (sigma, eps, c, e) in enumerate(grid["labels"])
    ]


def _streamed_dpsgd_rows(spec, lam, w_star, hp_by_sigma, trial_ids, seed) -> list[dict]:
    """``dp_sgd`` (fixed clips) and ``dp_sgd_tuned`` with ``dpsgd_stream``: rows on demand.

    Per trial one pass of :func:`dp_sgd_poisson_stream_runs` over every lane (sigma x
    epsilon x clip scale, then the tuned grid), all lanes sharing the Poisson subsamples,
    each subsample regenerated from :class:`CounterGaussianRows`. Each lane is the
    algorithm of ``fit_dp_sgd_poisson`` with its calibration (RDP, public n, add-or-remove
    one); ``epsilon_spent`` is the accountant's epsilon at the calibrated multiplier.
    """
    methods = set(spec["methods"]) & {"dp_sgd", "dp_sgd_tuned"}
    if not (spec["dpsgd_stream"] and methods):
        return []
    from dpreg.estimators.ambssgd_privacy import poisson_dpsgd_epsilon

    n, d, L, delta = spec["n"], spec["d"], spec["batch"], spec["delta"]
    q = L / n
    steps = math.ceil(spec["epochs"] / q)
    H_norm = float(lam.max())
    mult = {e: calibrate_poisson_dpsgd(e, delta, q, steps) for e in spec["epsilons"]}
    spent = {e: poisson_dpsgd_epsilon(m, q, steps, delta) for e, m in mult.items()}
    labels, sig, clip, eta, alpha = [], [], [], [], []
    if "dp_sgd" in methods:
        for sigma in spec["sigmas"]:
            rx2 = hp_by_sigma[sigma].x_norm_sq
            for eps in spec["epsilons"]:
                for c in spec["clip_scales"]:
                    labels.append((f"dp_sgd_c{c:g}", sigma, eps, None))
                    sig.append(sigma)
                    clip.append(c * math.sqrt(rx2) * (1.0 + sigma))
                    eta.append(L / (rx2 + (L - 1) * H_norm))
                    alpha.append(mult[eps])
    if "dp_sgd_tuned" in methods:
        grid = _grid_setup(spec, lam, hp_by_sigma, multipliers=mult)
        labels += [(GRID_METHOD, s, e, (c, g)) for s, e, c, g in grid["labels"]]
        sig += list(grid["sigma"])
        clip += list(grid["clip"])
        eta += list(grid["eta"])
        alpha += list(grid["noise_multiplier"])
    rows: list[dict[str, Any]] = []
    for trial in trial_ids:
        source = CounterGaussianRows(seed, trial, lam, w_star)
        theta, clip_fraction = dp_sgd_poisson_stream_runs(
            source.rows, n, d, sigma=np.array(sig), clip=np.array(clip), eta=np.array(eta),
            noise_multiplier=np.array(alpha), batch_size=L, steps=steps,
            rng=np.random.default_rng([seed, _DPSGD_STREAM, trial]),
        )  # fmt: skip
        excess = _excess(theta, w_star, lam)
        for r, (method, sigma, eps, point) in enumerate(labels):
            row = {
                "trial": trial,
                "method": method,
                "sigma": sigma,
                "epsilon": eps,
                "excess_risk": float(excess[r]),
                "clip_fraction": float(clip_fraction[r]),
                "epsilon_spent": spent[eps],
            }
            if point is not None:
                row["clip_scale"], row["eta_scale"] = point
            rows.append(row)
    return rows


def _ssgd_calibration(spec) -> dict[float, tuple[str, float, float]]:
    """Per target epsilon: (status, noise multiplier, certified epsilon) of DP-SSGD."""
    out: dict[float, tuple[str, float, float]] = {}
    for eps in spec["epsilons"]:
        if spec["ssgd_max_n"] is not None and spec["n"] > spec["ssgd_max_n"]:
            out[eps] = ("not_run", math.nan, math.nan)
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ShufflingRegimeWarning)
                cal = calibrate_dp_ssgd(eps, spec["delta"], spec["n"])
        except ValueError:  # FMT21 certifies nothing at this N
            out[eps] = ("refused", math.nan, math.nan)
            continue
        status = "ok" if cal.in_regime else "over_noised"
        out[eps] = (status, cal.noise_multiplier, cal.epsilon)
    return out


def _ssgd_lanes(spec, lam, w_star, hp_by_sigma, trial_ids):
    """DP-SSGD's calibration, lanes (sigma, eps), their (eta, clip) and the trials run."""
    n, d = spec["n"], spec["d"]
    cal = _ssgd_calibration(spec)
    lanes = [
        (s, e)
        for s in spec["sigmas"]
        for e in spec["epsilons"]
        if cal[e][0] in ("ok", "over_noised")
    ]
    steps = {}
    for sigma, eps in lanes:
        steps[(sigma, eps)] = dp_ssgd_hyperparameters(
            n, d, x_norm_sq=hp_by_sigma[sigma].x_norm_sq, H_norm=float(lam.max()),
            kappa=spec["kappa"], w_star_norm=float(np.linalg.norm(w_star)), sigma=sigma,
            noise_multiplier=cal[eps][1], rule=spec["ssgd_eta_rule"],
        )  # fmt: skip
    cap = spec["ssgd_trials"]
    run_ids = [t for t in trial_ids if cap is None or t < cap]
    return cal, lanes, steps, run_ids


def _ssgd_options(cal, lanes, steps, seed) -> dict[str, Any]:
    """Keyword arguments of ``dp_ssgd_stream_pass`` / ``DpSsgdFeed`` for the lanes."""
    return {
        "eta": np.array([steps[k][0] for k in lanes]),
        "clip": np.array([steps[k][1] for k in lanes]),
        "noise_multiplier": np.array([cal[e][1] for _, e in lanes]),
        "sigma": np.array([s for s, _ in lanes]),
        "rng": np.random.default_rng([seed, _SSGD_STREAM]),
    }


def _ssgd_feed(spec, lam, w_star, hp_by_sigma, trial_ids, seed):
    """DP-SSGD as an observer of the cell's stream (all ``trial_ids``), or None.

    Returns ``(observer, feed, setup)``: the callable to attach to the stream, the
    :class:`~dpreg.estimators.dp_ssgd.DpSsgdFeed` holding the result and the output of
    :func:`_ssgd_lanes`.
    """
    if "dp_ssgd" not in spec["methods"]:
        return None
    setup = _ssgd_lanes(spec, lam, w_star, hp_by_sigma, trial_ids)
    cal, lanes, steps, run_ids = setup
    if not (lanes and run_ids):
        return None
    feed = DpSsgdFeed(len(run_ids), spec["d"], spec["n"], **_ssgd_options(cal, lanes, steps, seed))
    if run_ids == trial_ids:
        return feed, feed, setup
    sel = [trial_ids.index(t) for t in run_ids]

    def observe(X, base, z):
        feed(X[sel], base[sel], z[sel])

    return observe, feed, setup


def _ssgd_rows(spec, lam, w_star, hp_by_sigma, trial_ids, seed, fed=None) -> list[dict[str, Any]]:
    """DP-SSGD (Algorithm 1) over the cell's stream: one pass, N single-row steps.

    ``fed``: the :func:`_ssgd_feed` triple whose observer already ran the pass on the
    chunks of the cell's stream (the same rows, steps and draws as reading a stream of
    its own, ``tests/unit/test_varshney2022_shared_stream.py``).
    """
    if "dp_ssgd" not in spec["methods"]:
        return []
    n = spec["n"]
    if fed is None:
        cal, lanes, steps, run_ids = _ssgd_lanes(spec, lam, w_star, hp_by_sigma, trial_ids)
    else:
        cal, lanes, steps, run_ids = fed[2]
    excess = clip_fraction = None
    if lanes and run_ids:
        if fed is not None:
            if fed[1].result is None:
                raise RuntimeError("the DP-SSGD feed saw fewer than N rows")
            w_bar, clip_fraction = fed[1].result
        else:
            w_bar, clip_fraction = dp_ssgd_stream_pass(
                GaussianStream(seed, run_ids, lam, w_star), n,
                **_ssgd_options(cal, lanes, steps, seed),
            )  # fmt: skip
        excess = _excess(np.moveaxis(w_bar, 1, 2), w_star, lam)  # (D, R)
    rows = []
    for sigma in spec["sigmas"]:
        for eps in spec["epsilons"]:
            status, _, eps_cert = cal[eps]
            lane = lanes.index((sigma, eps)) if (sigma, eps) in lanes else None
            for trial in trial_ids:
                r = lane if trial in run_ids else None
                k = run_ids.index(trial) if r is not None else None
                rows.append(
                    {
                        "trial": trial,
                        "method": "dp_ssgd",
                        "sigma": sigma,
                        "epsilon": eps,
                        "excess_risk": math.nan if r is None else float(excess[k, r]),
                        "clip_fraction": math.nan if r is None else float(clip_fraction[k, r]),
                        "status": status if trial in run_ids else "not_run",
                        "epsilon_certified": eps_cert,
                        "dpssgd_eta": math.nan if r is None else steps[(sigma, eps)][0],
                    }
                )
    return rows


def run_sim_cell(
    cell: Mapping[str, Any], *, trials: int, first_trial: int, seed: int, data: Any = None
) -> pd.DataFrame:
    """Run one chunk of a ``varshney_sim`` cell: one row per (trial, method, sigma, epsilon)."""
    del data
    spec, lam, w_star, hp_by_sigma = _setup(cell)
    trial_ids = list(range(first_trial, first_trial + trials))
    rng = np.random.default_rng([seed, _NOISE_STREAM])
    # AdaSSP's statistics and DP-SSGD read the same rows as the pass: they observe its
    # chunks instead of drawing the stream again (same rows, blocks and draws).
    shared = SHARE_STREAM and bool(_stream_runs(spec, hp_by_sigma)[1])
    ada = None
    if shared and spec["adassp_stream"] and "adassp" in spec["methods"]:
        ada = StreamedAdasspStatistics(spec, lam, len(trial_ids))
    ssgd = _ssgd_feed(spec, lam, w_star, hp_by_sigma, trial_ids, seed) if shared else None
    observers = [o for o in (ada, None if ssgd is None else ssgd[0]) if o is not None]
    res, labels, _ = _run_stream(
        spec, lam, w_star, hp_by_sigma, trial_ids, seed, rng, observers=observers
    )
    rows: list[dict[str, Any]] = []
    if res is not None:
        excess = _excess(np.moveaxis(res.w_bar, 1, 2), w_star, lam)  # (D, R)
        st = res.steps
        for r, (method, sigma, eps) in enumerate(labels):
            for k, trial in enumerate(trial_ids):
                rows.append(
                    {
                        "trial": trial,
                        "method": method,
                        "sigma": sigma,
                        "epsilon": eps,
                        "excess_risk": float(excess[k, r]),
                        "clip_fraction": float(st["clip_fraction"][k, r].mean()),
                        "zeta_last": float(st["zeta"][k, r, -1]),
                        "stop_index_mean": float(st["stop_index"][k, r].mean()),
                        "no_break_fraction": float(st["no_break"][k, r].mean()),
                    }
                )
    rows += _stored_rows(spec, lam, w_star, hp_by_sigma, trial_ids, seed, rng)
    if spec["adassp_stream"] and "adassp" in spec["methods"]:
        rows += streamed_adassp_rows(spec, lam, w_star, trial_ids, seed, rng, accumulated=ada)
    rows += _streamed_dpsgd_rows(spec, lam, w_star, hp_by_sigma, trial_ids, seed)
    rows += _ssgd_rows(spec, lam, w_star, hp_by_sigma, trial_ids, seed, fed=ssgd)
    frame = pd.DataFrame(rows)
    lay = spec["layout"]
    if "n_per_d" in cell:
        frame["n_per_d"] = float(cell["n_per_d"])
    frame["seed"] = np.uint64(seed)
    frame["n"] = spec["n"]
    frame["d"] = spec["d"]
    frame["kappa"] = spec["kappa"]
    frame["delta"] = spec["delta"]
    frame["T"] = lay.T
    frame["b"] = lay.b
    frame["s"] = lay.s
    frame["noise_multiplier_rule"] = spec["rule"]
    return frame


def _q(values: pd.Series, p: float) -> float:
    v = values.to_numpy(dtype=float)
    v = v[np.isfinite(v)]
    return float(np.quantile(v, p)) if v.size else math.nan


def summarise_sim(runs: pd.DataFrame, references: Sequence[Mapping[str, Any]] = ()) -> pd.DataFrame:
    r"""Median and 10-90% band of the excess risk per (n, d, kappa, sigma, epsilon, method).

    Adds the non-private reference median at the same (n, d, kappa, sigma)
    (``sgd_median``), the theory curves :math:`\\sigma^2d/N`, the headline rate, the
    exact OLS excess, Theorem 3.7 with C = 1, the "existing" :math:`d^3/(\\varepsilon^2N^2)`
    rate and Lemma 3.11's explicit bound at the run's layout (adaptive runs).
    """
    del references
    keys = ["n", "d", "kappa", "sigma", "epsilon", "method"]
    grid = runs["method"] == GRID_METHOD
    rows = [
        {**dict(zip(keys, key, strict=True)), **_risk_stats(g)}
        for key, g in runs[~grid].groupby(keys, sort=True)
    ]
    rows += tuned_dp_sgd(runs[grid])
    table = pd.DataFrame(rows).sort_values(keys, kind="stable").reset_index(drop=True)
    ref = table[table["method"] == "sgd"][["n", "d", "kappa", "sigma", "median"]]
    ref = ref.rename(columns={"median": "sgd_median"})
    table = table.merge(ref, on=["n", "d", "kappa", "sigma"], how="left")
    n, d, s, e = table["n"], table["d"], table["sigma"], table["epsilon"].replace(np.inf, np.nan)
    table["sigma2_d_over_n"] = s**2 * d / n
    table["headline_rate"] = theory.headline_rate(s, d, n, e)
    table["ols_expected"] = theory.ols_expected_excess(s, d, n)
    table["theorem_3_7_c1"] = [
        theory.theorem_3_7_rate(si, di, ni, ei, de, kappa=ki) if np.isfinite(ei) else np.nan
        for si, di, ni, ei, de, ki in zip(s, d, n, e, table["delta"], table["kappa"], strict=True)
    ]
    table["existing_rate"] = theory.existing_rate(d, n, e, sigma=s)
    lemma = []
    for _, r in table.iterrows():
        if not np.isfinite(r["epsilon"]) or not r["method"].startswith("ambssgd"):
            lemma.append(np.nan)
            continue
        lam = eigenvalues(int(r["d"]), float(r["kappa"]))
        hp = paper_hyperparameters(
            int(r["n"]), int(r["b"]), H_eigenvalues=lam, w_star_H_norm=1.0, sigma=r["sigma"]
        )
        a = ambssgd_noise_multiplier(r["epsilon"], r["delta"])
        lemma.append(
            float(
                theory.lemma_3_11_bound(
                    H_eigenvalues=lam,
                    sigma=r["sigma"],
                    w_star_H_norm=1.0,
                    n=r["n"],
                    T=r["T"],
                    b=r["b"],
                    eta=hp.eta,
                    noise_multiplier=a,
                    c1=1.0,
                )  # fmt: skip
            )
        )
    table["lemma_3_11_bound"] = lemma
    table["lemma_3_11_batch_ratio"] = [
        _batch_ratio(r)
        if np.isfinite(r["epsilon"]) and r["method"].startswith("ambssgd")
        else np.nan
        for _, r in table.iterrows()
    ]
    if "n_per_d" in runs:
        stars = sample_complexity(table)
        on = ["d", "kappa", "sigma", "epsilon", "method"]
        table = table.merge(stars[[*on, "n_star", "n_star_reached"]], on=on, how="left")
    return table


def _batch_ratio(r: pd.Series) -> float:
    """Lemma 3.11's batch condition at a summary row's layout (>= 1: the lemma applies)."""
    lam = eigenvalues(int(r["d"]), float(r["kappa"]))
    hp = paper_hyperparameters(
        int(r["n"]), int(r["b"]), H_eigenvalues=lam, w_star_H_norm=1.0, sigma=r["sigma"]
    )
    return float(
        theory.lemma_3_11_batch_condition(
            H_eigenvalues=lam,
            b=int(r["b"]),
            eta=hp.eta,
            n=r["n"],
            noise_multiplier=ambssgd_noise_multiplier(r["epsilon"], r["delta"]),
        )  # fmt: skip
    )


def _risk_stats(g: pd.DataFrame) -> dict[str, Any]:
    """Median, 10-90% band, mean and diagnostics of one group of trial rows."""
    ex = g["excess_risk"]
    row: dict[str, Any] = {
        "median": _q(ex, 0.5),
        "q10": _q(ex, 0.1),
        "q90": _q(ex, 0.9),
        "mean": float(ex.mean()),
        "trials": int(ex.notna().sum()),
        "clip_fraction_median": _q(g["clip_fraction"], 0.5),
        "T": int(g["T"].iloc[0]),
        "b": int(g["b"].iloc[0]),
        "delta": float(g["delta"].iloc[0]),
    }
    cols = (
        "stop_index_mean",
        "no_break_fraction",
        "zeta_last",
        "epsilon_certified",
        "epsilon_spent",
    )
    for col in cols:
        if col in g and g[col].notna().any():
            row[f"{col}_median"] = _q(g[col].dropna(), 0.5)
    if "status" in g and g["status"].notna().any():
        row["status"] = "/".join(sorted(g["status"].dropna().unique()))
    return row


def tuned_dp_sgd(grid_runs: pd.DataFrame) -> list[dict[str, Any]]:
    """``dp_sgd_tuned`` rows: the grid point chosen on held-out replicates (cross-fitting).

    Per (n, d, kappa, sigma, epsilon): trials are split by parity; the grid point with the
    smallest median excess risk on one half (ties: the first in (clip scale, eta scale)
    order) is evaluated on the other half, both ways, and the two evaluation halves are
    pooled. The chosen points are in ``selected`` ("even->odd | odd->even"). With trials of
    one parity only, no held-out half exists: the row has no risk and says so.
    """
    keys = ["n", "d", "kappa", "sigma", "epsilon"]
    out = []
    if grid_runs.empty:
        return out
    for key, g in grid_runs.groupby(keys, sort=True):
        parity = g["trial"].to_numpy() % 2
        picked, evaluated = [], []
        for fold in (0, 1):
            tune, test = g[parity == fold], g[parity != fold]
            if tune.empty or test.empty:
                continue
            medians = tune.groupby(["clip_scale", "eta_scale"], sort=True)["excess_risk"].median()
            c, e = medians.idxmin()
            picked.append(f"C x{c:g}, eta x{e:g}")
            evaluated.append(test[(test["clip_scale"] == c) & (test["eta_scale"] == e)])
        row = {**dict(zip(keys, key, strict=True)), "method": "dp_sgd_tuned"}
        if evaluated:
            row.update(_risk_stats(pd.concat(evaluated)))
            row["selected"] = " | ".join(picked)
        else:
            row.update(_risk_stats(g.assign(excess_risk=np.nan)))
            row.update(trials=0, selected="n/a: needs trials of both parities")
        out.append(row)
    return out


def sample_complexity(table: pd.DataFrame, factor: float = 2.0) -> pd.DataFrame:
    r"""E5's :math:`N^*(d)`: the smallest N of the grid with median <= factor x non-private.

    Per (d, kappa, sigma, epsilon, method) of a summary table (with ``sgd_median``);
    ``n_star`` is NaN and ``n_star_reached`` False when no N of the grid qualifies
    (reported as "n/a", never dropped); ``n_max`` is the largest N tried.
    """
    rows = []
    for (d, kappa, sigma, eps, method), g in table.groupby(
        ["d", "kappa", "sigma", "epsilon", "method"], sort=True
    ):
        if method == "sgd":
            continue
        g = g.sort_values("n")
        ok = g[g["median"] <= factor * g["sgd_median"]]
        rows.append(
            {
                "d": d,
                "kappa": kappa,
                "sigma": sigma,
                "epsilon": eps,
                "method": method,
                "n_star": float(ok["n"].iloc[0]) if len(ok) else math.nan,
                "n_star_reached": bool(len(ok)),
                "n_max": float(g["n"].max()),
            }
        )
    return pd.DataFrame(
        rows,
        columns=["d", "kappa", "sigma", "epsilon", "method", "n_star", "n_star_reached", "n_max"],
    )


def _figure_sim(table: pd.DataFrame, *, title: str | None = None) -> Any:
    from dpreg.plotting.varshney2022 import plot_sim

    return plot_sim(table, title=title)


SIM = StudyKind(
    name="varshney_sim",
    run=run_sim_cell,
    summarise=summarise_sim,
    figure=_figure_sim,
    params=SimParams,
    check_cell=check_sim_cell,
)
