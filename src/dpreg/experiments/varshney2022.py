r"""Validation study of Varshney, Thakurta & Jain (2022) -- the paper ran none (notes §5.1).

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

=================  =========================================================================
``ambssgd``        DP-AMBSSGD as written (Algorithm 2, exact alpha, practical K)
``ambssgd_margin`` same, DP-STAT stops at ``s - stat_margin * alpha sqrt(K)`` (non-paper)
``fixedclip``      constant clip :math:`R_xB\ln^aN`, multiplier :math:`\alpha/\sqrt2`
``oracleclip``     Lemma 3.11's clip from the true :math:`w_t - w^*` (non-private reference)
``sgd``            the same schedule without clip or noise (non-private reference)
``dp_sgd``         DP-SGD, Poisson sampling, RDP accountant, one run per ``dpsgd_clip_scales``
``adassp``         AdaSSP (Wang 2018) on rows clipped to public Gaussian-quantile bounds
=================  =========================================================================

The first five share one vectorised pass per data stream (:func:`ambssgd_pass`); the
last two need the data in memory and run trial by trial (keep them to moderate N).
Hyperparameters are Theorem 3.7's with oracle constants (notes §2.4, §8 item 16), the
same oracle knowledge for every method.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from dpreg.estimators.ambssgd_core import (
    GaussianStream,
    OracleInfo,
    RunSpec,
    ambssgd_pass,
    block_layout,
    paper_hyperparameters,
)
from dpreg.estimators.ambssgd_privacy import (
    NOISE_MULTIPLIER_RULES,
    ambssgd_noise_multiplier,
    fixed_clip_noise_multiplier,
)
from dpreg.experiments.kinds import StudyKind, register_kind
from dpreg.theory import ambssgd as theory

__all__ = [
    "DIAGNOSTICS",
    "METHODS",
    "SIM",
    "check_sim_cell",
    "run_diagnostics_cell",
    "run_sim_cell",
    "summarise_diagnostics",
    "summarise_sim",
]

STREAM_METHODS: tuple[str, ...] = ("ambssgd", "ambssgd_margin", "fixedclip", "oracleclip", "sgd")
STORED_METHODS: tuple[str, ...] = ("dp_sgd", "adassp")
METHODS: tuple[str, ...] = STREAM_METHODS + STORED_METHODS
_RULE = {
    "ambssgd": "adaptive",
    "ambssgd_margin": "adaptive",
    "fixedclip": "fixed",
    "oracleclip": "oracle",
    "sgd": "none",
}
_NOISE_STREAM = 2**31 - 1

SIM_KEYS = frozenset(
    {
        "n",
        "n_per_d",
        "d",
        "kappa",
        "sigma",
        "epsilon",
        "delta",
        "methods",
        "c1",
        "n_queries",
        "noise_multiplier_rule",
        "x_norm_rule",
        "stat_margin",
        "w_star_seed",
        "dpsgd_clip_scales",
        "dpsgd_batch_size",
        "dpsgd_epochs",
        "conversion",
    }
)


# ------------------------------------------------------------------------ cell parsing


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
    d = cell.get("d")
    if isinstance(d, bool) or not isinstance(d, int) or d < 1:
        raise ValueError(f"d must be a positive integer; got {d!r}")
    if ("n" in cell) == ("n_per_d" in cell):
        raise ValueError("give exactly one of n or n_per_d (N = n_per_d * d)")
    n = cell["n"] if "n" in cell else _number(cell["n_per_d"], "n_per_d") * d
    if isinstance(n, float) and n.is_integer():
        n = int(n)
    if isinstance(n, bool) or not isinstance(n, int) or n < 2 * d:
        raise ValueError(f"n must be an integer >= 2 d = {2 * d}; got {n!r}")
    methods = _list(cell.get("methods", ["ambssgd", "fixedclip", "oracleclip", "sgd"]))
    unknown = [m for m in methods if m not in METHODS]
    if unknown or not methods:
        raise ValueError(f"methods must be a non-empty list from {list(METHODS)}; got {methods}")
    sigmas = [_number(s, "sigma", strict=False) for s in _list(cell.get("sigma", 0.1))]
    epsilons = [_number(e, "epsilon") for e in _list(cell.get("epsilon", 1.0))]
    delta = _number(cell.get("delta", 1e-6), "delta")
    if delta >= 1:
        raise ValueError(f"delta must lie in (0, 1); got {delta!r}")
    rule = cell.get("noise_multiplier_rule", "exact")
    if rule not in NOISE_MULTIPLIER_RULES:
        raise ValueError(f"noise_multiplier_rule must be one of {NOISE_MULTIPLIER_RULES}")
    for e in epsilons:
        ambssgd_noise_multiplier(e, delta, rule)  # refuses "paper" outside its range
    kappa = _number(cell.get("kappa", 1.0), "kappa")
    if kappa < 1:
        raise ValueError(f"kappa must be >= 1; got {kappa!r}")
    x_norm_rule = cell.get("x_norm_rule", "exact")
    if x_norm_rule not in ("exact", "paper"):
        raise ValueError(f"x_norm_rule must be exact or paper; got {x_norm_rule!r}")
    K = cell.get("n_queries", 20)
    if isinstance(K, bool) or not isinstance(K, int) or K < 1:
        raise ValueError(f"n_queries must be a positive integer; got {K!r}")
    c1 = _number(cell.get("c1", 1.0), "c1")
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
        "stat_margin": _number(cell.get("stat_margin", 2.0), "stat_margin", strict=False),
        "w_star_seed": int(cell.get("w_star_seed", 0)),
        "clip_scales": [
            _number(c, "dpsgd_clip_scales") for c in _list(cell.get("dpsgd_clip_scales", [1.0]))
        ],
        "batch": _number(cell.get("dpsgd_batch_size", 1000), "dpsgd_batch_size"),
        "epochs": _number(cell.get("dpsgd_epochs", 1.0), "dpsgd_epochs"),
    }


def check_sim_cell(cell: Mapping[str, Any]) -> None:
    """Validate a ``varshney_sim`` / ``varshney_diagnostics`` cell (ValueError naming the key)."""
    spec = _spec(cell)
    if "dp_sgd" in spec["methods"] and spec["batch"] > spec["n"]:
        raise ValueError(f"dpsgd_batch_size must be <= n = {spec['n']}")


def eigenvalues(d: int, kappa: float) -> np.ndarray:
    r"""Geometric spectrum :math:`\lambda_i = \kappa^{-(i-1)/(d-1)}` (notes §5.1)."""
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


def _run_stream(spec, lam, w_star, hp_by_sigma, trial_ids, seed, rng):
    runs, labels = _stream_runs(spec, hp_by_sigma)
    if not labels:
        return None, labels, 0.0
    hp = next(iter(hp_by_sigma.values()))
    source = GaussianStream(seed, trial_ids, lam, w_star)
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
    return res, labels, time.perf_counter() - start


def _excess(W: np.ndarray, w_star: np.ndarray, lam: np.ndarray) -> np.ndarray:
    diff = W - w_star
    return 0.5 * np.einsum("...d,d,...d->...", diff, lam, diff)


def _stored_rows(spec, lam, w_star, hp_by_sigma, trial_ids, seed, rng) -> list[dict[str, Any]]:
    """dp_sgd and adassp, one data set at a time (they need the rows in memory)."""
    from scipy import stats

    from dpreg.estimators import get_estimator
    from dpreg.privacy.budgets import ApproxDP

    rows: list[dict[str, Any]] = []
    n, d = spec["n"], spec["d"]
    for trial in trial_ids:
        X, base, z = GaussianStream(seed, [trial], lam, w_star).take(n)
        X, base, z = X[0], base[0], z[0]
        for sigma in spec["sigmas"]:
            y = base + sigma * z
            hp = hp_by_sigma[sigma]
            for eps in spec["epsilons"]:
                budget = ApproxDP(eps, spec["delta"])
                if "dp_sgd" in spec["methods"]:
                    L = spec["batch"]
                    eta = L / (hp.x_norm_sq + (L - 1) * lam.max())
                    for scale in spec["clip_scales"]:
                        clip = scale * math.sqrt(hp.x_norm_sq) * (1.0 + sigma)
                        fit = get_estimator("dp_sgd_poisson")(
                            X, y, budget=budget, rng=rng, clip=clip, eta=eta, batch_size=L,
                            epochs=spec["epochs"],
                        )  # fmt: skip
                        rows.append(
                            {
                                "trial": trial,
                                "method": f"dp_sgd_c{scale:g}",
                                "sigma": sigma,
                                "epsilon": eps,
                                "excess_risk": float(_excess(fit.theta[0], w_star, lam)),
                                "clip_fraction": float(fit.diagnostics["clip_fraction"][0]),
                            }
                        )
                if "adassp" in spec["methods"]:
                    bx = math.sqrt(stats.chi2.ppf(0.999, d) * lam.max())
                    by = (1.0 + sigma) * stats.norm.ppf(0.9995)
                    norms = np.linalg.norm(X, axis=1)
                    Xc = X * np.minimum(1.0, bx / norms)[:, None]
                    yc = np.clip(y, -by, by)
                    fit = get_estimator("adassp")(
                        Xc, yc, budget=budget, rng=rng, bound_X=bx, bound_y=by
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


def run_sim_cell(
    cell: Mapping[str, Any], *, trials: int, first_trial: int, seed: int, data: Any = None
) -> pd.DataFrame:
    """Run one chunk of a ``varshney_sim`` cell: one row per (trial, method, sigma, epsilon)."""
    del data
    spec, lam, w_star, hp_by_sigma = _setup(cell)
    trial_ids = list(range(first_trial, first_trial + trials))
    rng = np.random.default_rng([seed, _NOISE_STREAM])
    res, labels, elapsed = _run_stream(spec, lam, w_star, hp_by_sigma, trial_ids, seed, rng)
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
    frame = pd.DataFrame(rows)
    lay = spec["layout"]
    frame["seed"] = np.uint64(seed)
    frame["n"] = spec["n"]
    frame["d"] = spec["d"]
    frame["kappa"] = spec["kappa"]
    frame["delta"] = spec["delta"]
    frame["T"] = lay.T
    frame["b"] = lay.b
    frame["s"] = lay.s
    frame["noise_multiplier_rule"] = spec["rule"]
    frame["wall_time_s"] = elapsed / trials  # excluded from reproducibility checks
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
    rows = []
    for key, g in runs.groupby(keys, sort=True):
        row = dict(zip(keys, key, strict=True))
        ex = g["excess_risk"]
        row.update(
            {
                "median": _q(ex, 0.5),
                "q10": _q(ex, 0.1),
                "q90": _q(ex, 0.9),
                "mean": float(ex.mean()),
                "trials": int(len(g)),
                "clip_fraction_median": _q(g["clip_fraction"], 0.5),
                "T": int(g["T"].iloc[0]),
                "b": int(g["b"].iloc[0]),
                "delta": float(g["delta"].iloc[0]),
            }
        )
        for col in ("stop_index_mean", "no_break_fraction", "zeta_last"):
            if col in g and g[col].notna().any():
                row[f"{col}_median"] = _q(g[col].dropna(), 0.5)
        rows.append(row)
    table = pd.DataFrame(rows)
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
    return table


def _figure_sim(table: pd.DataFrame, *, title: str | None = None) -> Any:
    from dpreg.plotting.varshney2022 import plot_sim

    return plot_sim(table, title=title)


SIM = register_kind(
    StudyKind(
        name="varshney_sim",
        run=run_sim_cell,
        summarise=summarise_sim,
        figure=_figure_sim,
        required=frozenset({"d"}),
        optional=SIM_KEYS - {"d"},
        check_cell=check_sim_cell,
    )
)


# ---------------------------------------------------------------------- diagnostics


def run_diagnostics_cell(
    cell: Mapping[str, Any], *, trials: int, first_trial: int, seed: int, data: Any = None
) -> pd.DataFrame:
    """Run one chunk of ``varshney_diagnostics``: rows per (trial, method, sigma, eps, step)."""
    del data
    spec, lam, w_star, hp_by_sigma = _setup(cell)
    spec["methods"] = [m for m in spec["methods"] if m in STREAM_METHODS]
    trial_ids = list(range(first_trial, first_trial + trials))
    rng = np.random.default_rng([seed, _NOISE_STREAM])
    res, labels, _ = _run_stream(spec, lam, w_star, hp_by_sigma, trial_ids, seed, rng)
    st = res.steps
    T = spec["layout"].T
    hp0 = hp_by_sigma
    frames = []
    for r, (method, sigma, eps) in enumerate(labels):
        hp = hp0[sigma]
        scale = math.sqrt(hp.x_norm_sq) * hp.log_factor
        for k, trial in enumerate(trial_ids):
            frames.append(
                pd.DataFrame(
                    {
                        "trial": trial,
                        "method": method,
                        "sigma": sigma,
                        "epsilon": eps,
                        "step": np.arange(T),
                        "zeta": st["zeta"][k, r],
                        "gamma": st["gamma"][k, r],
                        "stop_index": st["stop_index"][k, r],
                        "no_break": st["no_break"][k, r],
                        "clip_fraction": st["clip_fraction"][k, r],
                        "residual_scale": st["residual_scale"][k, r],
                        "zeta_over_target": st["zeta"][k, r] / (scale * st["residual_scale"][k, r]),
                        "excess_risk_iterate": st["excess_risk_iterate"][k, r],
                    }
                )
            )
    frame = pd.concat(frames, ignore_index=True)
    frame["seed"] = np.uint64(seed)
    frame["n"] = spec["n"]
    frame["d"] = spec["d"]
    frame["kappa"] = spec["kappa"]
    frame["T"] = T
    return frame


def summarise_diagnostics(
    runs: pd.DataFrame, references: Sequence[Mapping[str, Any]] = ()
) -> pd.DataFrame:
    """Per (n, d, sigma, epsilon, method, step): median and 10-90% of each diagnostic."""
    del references
    keys = ["n", "d", "kappa", "sigma", "epsilon", "method", "step"]
    cols = ["zeta", "gamma", "stop_index", "clip_fraction", "residual_scale", "zeta_over_target"]
    rows = []
    for key, g in runs.groupby(keys, sort=True):
        row = dict(zip(keys, key, strict=True))
        for c in cols:
            v = g[c].astype(float).dropna()
            if len(v):
                row[f"{c}_median"] = _q(v, 0.5)
                row[f"{c}_q10"] = _q(v, 0.1)
                row[f"{c}_q90"] = _q(v, 0.9)
        row["no_break_fraction"] = float(g["no_break"].mean())
        row["trials"] = int(len(g))
        rows.append(row)
    return pd.DataFrame(rows)


def _figure_diag(table: pd.DataFrame, *, title: str | None = None) -> Any:
    from dpreg.plotting.varshney2022 import plot_diagnostics

    return plot_diagnostics(table, title=title)


DIAGNOSTICS = register_kind(
    StudyKind(
        name="varshney_diagnostics",
        run=run_diagnostics_cell,
        summarise=summarise_diagnostics,
        figure=_figure_diag,
        required=frozenset({"d"}),
        optional=SIM_KEYS - {"d"},
        check_cell=check_sim_cell,
    )
)
