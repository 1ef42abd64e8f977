r"""Kind ``ftrl_iterate_bounds``: App. D's high-probability bounds and Lemma D.12 vs simulation.

Choquette-Choo et al. (2023), App. D.2–D.3, on the Fig. 2 design (Gaussian inputs,
:math:`\lambda_k = k^{-\alpha}`): Noisy-FTRL (57) is simulated for ``T`` steps from
:math:`\theta_0` at ``initial_distance`` from :math:`\theta^\star`, split as Property D.2
into the noiseless iterate (58), the label-noise component (59) and the DP-noise
component (60), with the noise :math:`w_t \sim \mathcal N(0, \sigma^2I)`,
:math:`\sigma = G\gamma_\infty(\beta)/\sqrt{2\rho}` of each mechanism (Noisy-SGD, and
ν-Noisy-FTRL with ν = ημ). Per trial it records, for every bound of
:mod:`dpreg.theory.ftrl_high_probability` (D.4 iterates and gradients, D.6, D.7, D.8;
explicit constants), whether the trial violates it at some step and the largest
simulation / bound ratio, and :math:`\|\tilde\theta_{T-1} - \theta^\star\|^2` of the
noise process (label + DP noise, the process of Lemma D.12 started at the optimum).

The step is :math:`\eta = \text{eta\_fraction}/b_x` with :math:`b_x` the input-norm
threshold of event ℰ₁ (:func:`~dpreg.theory.ftrl_high_probability.proposition_d5_events`,
a public quantity of :math:`H`, T and p), so D.4's step condition holds.

Seeds: mechanism ``m`` draws from ``default_rng([seed, stream_key(m)])``; the trials of
a seed block are vectorised (one loop over the T steps).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd

from dpreg.data.datasets import Dataset
from dpreg.estimators.ftrl import correlated_noise
from dpreg.estimators.ftrl_correlations import independent, nu_ftrl
from dpreg.experiments.params import (
    KindParams,
    choice,
    finite,
    half_open_interval,
    nonnegative,
    open_interval,
    param,
    positive,
    positive_integer,
)
from dpreg.experiments.study_kind import StudyKind
from dpreg.seeds import stream_key
from dpreg.theory import ftrl_high_probability as hp
from dpreg.theory.ftrl_noise_covariance import lemma_d12_covariance, lemma_d12_trace_bound

__all__ = [
    "BOUNDS",
    "FtrlIterateBoundsParams",
    "check_iterate_cell",
    "run_iterate_bounds",
    "summarise_iterate_bounds",
]

BOUNDS: dict[str, str] = {
    "d4_iterate": "Thm D.4 ||theta_t - theta*||^2",
    "d4_gradient": "Thm D.4 ||g_t||^2",
    "d6": "Prop D.6 noiseless part",
    "d7": "Prop D.7 label-noise part",
    "d8": "Prop D.8 DP-noise part",
}
"""High-probability bounds recorded per trial (column stem -> label)."""

_POSITIVE = finite(positive)


@dataclass(frozen=True)
class FtrlIterateBoundsParams(KindParams):
    """Cell keys of ``ftrl_iterate_bounds`` (App. D.2 bounds and Lemma D.12)."""

    kind = "ftrl_iterate_bounds"
    d: int = param(doc="dimension, H = diag(k^-alpha), k = 1..d", check=positive_integer)
    T: int = param(doc="steps (the horizon of Theorem D.4)", check=positive_integer)
    alpha: float = param(1.0, doc="eigenvalue decay lambda_k = k^-alpha", check=finite(nonnegative))
    p: float = param(
        0.1, doc="failure probability of the D.4-D.8 bounds", check=open_interval(0, 1)
    )
    eta_fraction: float = param(
        0.5,
        doc="step eta = eta_fraction / b_x (b_x: event E1's threshold)",
        check=half_open_interval(0, 1),
    )
    mechanisms: list[str] = param(
        ["sgd", "nu_ftrl"],
        doc="`sgd` (independent noise) and/or `nu_ftrl` (nu = eta mu)",
        check=choice("sgd", "nu_ftrl"),
    )
    rho: float = param(
        1.0, doc="zCDP rho calibrating sigma = G gamma_inf / sqrt(2 rho)", check=_POSITIVE
    )
    clip: float = param(1.0, doc="clip norm G in the calibration", check=_POSITIVE)
    sigma_sgd: float = param(0.5, doc="label-noise standard deviation", check=finite(nonnegative))
    initial_distance: float = param(
        1.0,
        doc="distance from theta_0 to theta* along (1, ..., 1)/sqrt(d)",
        check=finite(nonnegative),
    )


def check_iterate_cell(cell: Mapping[str, Any]) -> None:
    """Check across keys: a non-empty list of distinct mechanisms; T >= 2."""
    P = FtrlIterateBoundsParams.from_cell(cell)
    if not P.mechanisms or len(set(P.mechanisms)) != len(P.mechanisms):
        raise ValueError(
            f"ftrl_iterate_bounds: mechanisms must be a non-empty list without repeats; "
            f"got {P.mechanisms!r}"
        )
    if P.T < 2:
        raise ValueError(f"ftrl_iterate_bounds: T must be >= 2; got {P.T!r}")


_SETUP_KEYS = (
    "d",
    "T",
    "alpha",
    "p",
    "eta_fraction",
    "rho",
    "clip",
    "sigma_sgd",
    "initial_distance",
)


def _setup(P: FtrlIterateBoundsParams, mechanism: str) -> dict[str, Any]:
    """Return the mechanism's public constants and bounds (read-only arrays), cached.

    A function of public cell keys only; the seed blocks and chunks of a cell share it
    (``lemma_d12_covariance`` is most of it: ~0.1 s per call at T = 2000), so it is cached
    on those keys (issue 18, docs/scaling.md).
    """
    return _setup_cached(tuple(getattr(P, key) for key in _SETUP_KEYS), mechanism)


@lru_cache(maxsize=32)
def _setup_cached(values: tuple, mechanism: str) -> dict[str, Any]:
    P = SimpleNamespace(**dict(zip(_SETUP_KEYS, values, strict=True)))
    out = _setup_uncached(P, mechanism)
    for value in (out["lam"], out["beta"], *out["bounds"].values()):
        value.setflags(write=False)  # shared by the calls: never written
    return out


def _setup_uncached(P: Any, mechanism: str) -> dict[str, Any]:
    lam = np.arange(1, P.d + 1, dtype=np.float64) ** -P.alpha
    ev = hp.proposition_d5_events(lam, T=P.T, p=P.p, sigma_sgd=P.sigma_sgd)
    eta = P.eta_fraction / ev.input_sq
    corr = independent() if mechanism == "sgd" else nu_ftrl(eta * float(lam.min()))
    sigma = P.clip * math.sqrt(corr.gamma_inf_sq / (2.0 * P.rho))
    beta = corr.coefficients(P.T)
    steps = np.arange(P.T)
    kw = {"eigenvalues": lam, "eta": eta, "T": P.T, "p": P.p}
    d4 = hp.theorem_d4_bound(
        steps,
        beta=beta,
        sigma=sigma,
        sigma_sgd=P.sigma_sgd,
        initial_distance=P.initial_distance,
        **kw,
    )
    bounds = {
        "d4_iterate": d4.iterate_sq,
        "d4_gradient": d4.gradient_sq,
        "d6": hp.proposition_d6_bound(steps, initial_distance=P.initial_distance, **kw),
        "d7": hp.proposition_d7_bound(steps, sigma_sgd=P.sigma_sgd, **kw),
        "d8": hp.proposition_d8_bound(steps, beta=beta, sigma=sigma, **kw),
    }
    last = [P.T - 1]
    cov = lemma_d12_covariance(beta, lam, eta, last, sigma=sigma, sigma_sgd=P.sigma_sgd)
    d12 = lemma_d12_trace_bound(beta, lam, eta, last, sigma=sigma, sigma_sgd=P.sigma_sgd)
    return {
        "lam": lam,
        "eta": eta,
        "beta": beta,
        "sigma": sigma,
        "nu": eta * float(lam.min()) if mechanism == "nu_ftrl" else math.nan,
        "bounds": bounds,
        "d12_exact": float(cov.sum()),
        "d12_bound": float(d12[0]),
        "b_x": ev.input_sq,
    }


SIM_KERNELS: tuple[str, ...] = ("auto", "numpy", "numba")
"""Step loops of the simulation: ``numpy`` (the reference, :func:`_simulate_reference`),
``numba`` (:mod:`dpreg.experiments._ftrl_iterates_jit`: the same operations on the same
draws, bit for bit) and ``auto`` (``numba`` for ``d`` <= 128 once the loop has at least
``2**15`` trial-steps, about 0.1 s of the numpy loop per call, or numba is loaded in the
process; issue 18, docs/scaling.md)."""

_COMPILED_MIN_WORK = 2**15
_DRAW_BLOCK = 2**21  # normals per block of steps drawn at once (16 MB)


def _simulate(
    P: FtrlIterateBoundsParams, s: dict[str, Any], trials: int, rng, *, kernel: str = "auto"
) -> dict:
    """Squared norms (T, trials) of the D.2 components, theta' and g_t; vectorised.

    ``kernel`` (:data:`SIM_KERNELS`) picks the step loop; every choice draws the same
    numbers in the same order and returns the same bits
    (``tests/unit/test_ftrl_iterates_kernel.py``).
    """
    if kernel not in SIM_KERNELS:
        raise ValueError(f"kernel must be one of {SIM_KERNELS}; got {kernel!r}")
    if kernel == "auto":
        big = P.T * trials >= _COMPILED_MIN_WORK or "numba" in sys.modules
        kernel = "numba" if big and P.d <= 128 else "numpy"
    if kernel == "numpy":
        return _simulate_reference(P, s, trials, rng)
    if P.d > 128:
        raise ValueError(f"kernel='numba' needs d <= 128 (one pairwise-sum block); got {P.d}")
    from dpreg.data.normal_kernel import standard_normals
    from dpreg.experiments import _ftrl_iterates_jit  # numba: imported on first use

    eta, T, d = float(s["eta"]), P.T, P.d
    # numpy's draws by the compiled fill (the same values and generator state)
    z = standard_normals(rng, np.empty((T, trials, d)), compiled_from=0)
    z *= s["sigma"]
    correlated_noise(s["beta"], z, out=z)  # in place: one (T, trials, d) array
    hat = np.full((trials, d), P.initial_distance / math.sqrt(d))
    sgd = np.zeros((trials, d))
    dp = np.zeros((trials, d))
    keys = ("d6", "d7", "d8", "d4_iterate", "d4_gradient")
    out = np.empty((len(keys), T, trials))
    noise_sq = np.empty(trials)
    root = np.sqrt(s["lam"])
    width = trials * d + trials  # one step's draws: x (trials, d), then xi (trials,)
    block = max(1, _DRAW_BLOCK // width)
    for first in range(0, T, block):
        m = min(block, T - first)
        draws = standard_normals(rng, np.empty((m, width)), compiled_from=0)  # m steps
        _ftrl_iterates_jit.iterate_steps(
            draws, root, float(P.sigma_sgd), eta, z, hat, sgd, dp, out, noise_sq, first, T
        )
    result = {key: out[k] for k, key in enumerate(keys)}
    result["noise_sq"] = noise_sq
    return result


def _simulate_reference(P: FtrlIterateBoundsParams, s: dict[str, Any], trials: int, rng) -> dict:
    """:func:`_simulate` by the numpy step loop (the reference)."""
    lam, eta, T, d = s["lam"], s["eta"], P.T, P.d
    z = rng.standard_normal((T, trials, d))
    z *= s["sigma"]
    correlated_noise(s["beta"], z, out=z)  # in place: one (T, trials, d) array
    hat = np.full((trials, d), P.initial_distance / math.sqrt(d))
    sgd = np.zeros((trials, d))
    dp = np.zeros((trials, d))
    keys = ("d6", "d7", "d8", "d4_iterate", "d4_gradient")
    out = {k: np.empty((T, trials)) for k in keys}
    root = np.sqrt(lam)
    for t in range(T):
        x = root * rng.standard_normal((trials, d))
        xi = P.sigma_sgd * rng.standard_normal(trials)
        theta = hat + sgd + dp
        out["d6"][t] = (hat**2).sum(1)
        out["d7"][t] = (sgd**2).sum(1)
        out["d8"][t] = (dp**2).sum(1)
        out["d4_iterate"][t] = (theta**2).sum(1)
        out["d4_gradient"][t] = (x**2).sum(1) * ((x * theta).sum(1) - xi) ** 2
        if t == T - 1:
            out["noise_sq"] = ((sgd + dp) ** 2).sum(1)
            break
        hat = hat - eta * x * (x * hat).sum(1, keepdims=True)
        sgd = sgd - eta * x * ((x * sgd).sum(1) - xi)[:, None]
        dp = dp - eta * x * (x * dp).sum(1, keepdims=True) - eta * z[t]
    return out


def run_iterate_bounds(
    cell: Mapping[str, Any],
    *,
    trials: int,
    first_trial: int,
    seed: int,
    data: Dataset | None = None,
) -> pd.DataFrame:
    r"""One cell: per trial and mechanism, the violations and ratios of every bound.

    Columns: ``mechanism``, ``d``, ``T``, ``p``, ``eta``, ``nu``, ``sigma``,
    ``violated_<b>`` (the trial exceeds bound b at some step t < T) and ``ratio_<b>``
    (largest simulation / bound ratio over steps t >= 1: at t = 0 the iterate equals its
    bound exactly) for b in :data:`BOUNDS`, ``noise_sq`` (:math:`\|\tilde\theta_{T-1} -
    \theta^\star\|^2` of the noise process), ``d12_exact`` (:math:`\mathrm{Tr}S_{T-1}`,
    exact) and ``d12_bound`` (Lemma D.12's trace bound).
    """
    del data
    P = FtrlIterateBoundsParams.from_cell(cell)
    check_iterate_cell(cell)
    frames = []
    for mech in P.mechanisms:
        s = _setup(P, mech)
        sim = _simulate(P, s, trials, np.random.default_rng([seed, stream_key(mech)]))
        cols: dict[str, Any] = {
            "mechanism": mech,
            "d": P.d,
            "T": P.T,
            "p": P.p,
            "eta": s["eta"],
            "nu": s["nu"],
            "sigma": s["sigma"],
            "b_x": s["b_x"],
        }
        for key in BOUNDS:
            bound = s["bounds"][key][:, None]
            cols[f"violated_{key}"] = np.any(sim[key] > bound * (1 + 1e-12), axis=0)
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(bound[1:] > 0, sim[key][1:] / bound[1:], 0.0)
            cols[f"ratio_{key}"] = ratio.max(axis=0)
        cols["noise_sq"] = sim["noise_sq"]
        cols["d12_exact"] = s["d12_exact"]
        cols["d12_bound"] = s["d12_bound"]
        frames.append(pd.DataFrame(cols, index=range(trials)))
    out = pd.concat(frames, ignore_index=True)
    out.insert(0, "trial", np.tile(np.arange(first_trial, first_trial + trials), len(frames)))
    out.insert(1, "seed", np.full(len(out), seed, dtype=np.uint64))
    return out


def summarise_iterate_bounds(
    runs: pd.DataFrame, references: Sequence[Mapping[str, Any]] = ()
) -> pd.DataFrame:
    r"""One row per (d, mechanism, bound).

    Columns: ``d``, ``mechanism``, ``bound``, ``label``, ``type`` (``high_probability``
    or ``expectation``), ``runs``, ``p``, ``violation_fraction``, ``violation_limit``
    (p + 3 binomial SE), ``max_ratio`` (largest simulation / bound over trials and steps
    t >= 1), and for Lemma D.12 (``bound = "d12"``) ``mean`` / ``se`` of the simulated
    :math:`\mathrm{Tr}S_{T-1}`, ``exact`` and ``bound_value``; ``max_ratio`` is then
    mean / bound.
    """
    del references
    rows = []
    for (d, mech), g in runs.groupby(["d", "mechanism"], sort=True):
        n = len(g)
        p = float(g["p"].iloc[0])
        limit = p + 3.0 * math.sqrt(p * (1.0 - p) / n)
        for key, label in BOUNDS.items():
            rows.append(
                {
                    "d": int(d),
                    "mechanism": mech,
                    "bound": key,
                    "label": label,
                    "type": "high_probability",
                    "runs": n,
                    "p": p,
                    "violation_fraction": float(g[f"violated_{key}"].mean()),
                    "violation_limit": limit,
                    "max_ratio": float(g[f"ratio_{key}"].max()),
                }
            )
        mean = float(g["noise_sq"].mean())
        se = float(g["noise_sq"].std(ddof=1) / math.sqrt(n)) if n > 1 else math.nan
        bound = float(g["d12_bound"].iloc[0])
        rows.append(
            {
                "d": int(d),
                "mechanism": mech,
                "bound": "d12",
                "label": "Lemma D.12 Tr S_t",
                "type": "expectation",
                "runs": n,
                "p": math.nan,
                "mean": mean,
                "se": se,
                "exact": float(g["d12_exact"].iloc[0]),
                "bound_value": bound,
                "max_ratio": mean / bound if bound > 0 else math.nan,
            }
        )
    return pd.DataFrame(rows)


def _figure(table: pd.DataFrame, *, title: str | None = None) -> Any:
    from dpreg.plotting.choquettechoo2023_iterates import plot_iterate_bounds

    return plot_iterate_bounds(table, title=title)


ITERATE_BOUNDS = StudyKind(
    name="ftrl_iterate_bounds",
    run=run_iterate_bounds,
    summarise=summarise_iterate_bounds,
    figure=_figure,
    params=FtrlIterateBoundsParams,
    check_cell=check_iterate_cell,
)
