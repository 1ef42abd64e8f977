r"""Experiments of Brown et al. (2024): DP-GD accuracy, clipping and confidence intervals.

Study kinds (see :mod:`dpreg.experiments.kinds`; figures in :mod:`dpreg.plotting.brown2024`):

``brown_error_vs_dim``
    Figs. 1 and 9: error of DP-GD, OLS and AdaSSP against p at fixed n/p.
``brown_cost_of_privacy``
    Figs. 2 and 8: privacy error :math:`\|\theta_T - \hat\theta\|` and sampling error
    :math:`\|\hat\theta - \theta^*\|` against n, with the Lemma 2.3 predictions and the
    crossover :math:`n^*` (:mod:`dpreg.theory.dpgd`).
``brown_clip_heatmap``
    Fig. 3: fraction of gradients clipped on a (p, gamma) grid.
``brown_bias_variance`` / ``brown_error_vs_clipping``
    Figs. 4 and 7: many DP-GD runs on one data set per gamma (and T); squared bias,
    variance and error against gamma, or error against the realised clip fraction.
``brown_ci``
    Figs. 5/6 and 10/11: coverage and length of the three interval constructions
    (:mod:`dpreg.inference`) against the total number of iterations N, with the
    non-private OLS interval width and coverage of the Huber target beside
    :math:`\hat\theta`.

Data (Section 4; App. B; :class:`~dpreg.data.synthetic.BrownDGP`): :math:`\theta^*`
uniform on the unit sphere, :math:`\xi_i \sim N(\mu_\xi, \sigma^2)` with
:math:`\mu_\xi = 0` (the paper; the authors' scripts use 1, docs/notes/brown2024.md §5.0 -- option
``noise_mean``), :math:`x_i \sim N(0, I)` (``design: isotropic``) or
:math:`N(0, U\Lambda U^\top)` with :math:`\Lambda = \mathrm{diag}(2, 1, u_3, \dots, u_p)`,
:math:`u_i \sim U[1, 2]` and :math:`U` Haar on SO(p), drawn per data set
(``design: anisotropic``). DP-GD (:func:`~dpreg.estimators.dpgd.fit_dp_gd`) uses
:math:`\theta_0 = 0`, :math:`\gamma = c_\gamma\sqrt p` (``clip_scale``, default 5) and the
zCDP noise of Lemma 2.1; its rows record the budget in both units.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dpreg.data.datasets import Dataset
from dpreg.data.synthetic import BROWN_DESIGNS, BrownDGP
from dpreg.estimators.adassp import MECHANISMS as ADASSP_MECHANISMS
from dpreg.estimators.adassp import fit_adassp
from dpreg.estimators.dpgd import GramRowGradient, fit_dp_gd
from dpreg.experiments.budgets import budget_columns
from dpreg.experiments.params import (
    KindParams,
    at_least,
    cell_conversion,
    choice,
    finite,
    nonnegative,
    open_interval,
    param,
    positive,
    positive_integer,
)
from dpreg.experiments.study_kind import StudyKind
from dpreg.inference import intervals_from_path, intervals_from_runs, ols_interval_half_width
from dpreg.inference.coverage import coverage_summary
from dpreg.privacy.budgets import ZCDP, ApproxDP
from dpreg.privacy.conversions import zcdp_to_eps
from dpreg.theory import dpgd as theory
from dpreg.theory.dpgd_ci import ci_half_width_theory

__all__ = [
    "BIAS_VARIANCE",
    "CI",
    "CLIP_HEATMAP",
    "COST_OF_PRIVACY",
    "DESIGNS",
    "ERROR_VS_CLIPPING",
    "ERROR_VS_DIM",
    "BrownBiasVarianceParams",
    "BrownCIParams",
    "BrownClipHeatmapParams",
    "BrownCostOfPrivacyParams",
    "BrownErrorVsClippingParams",
    "BrownErrorVsDimParams",
    "BrownParams",
    "run_ci",
    "run_clip_heatmap",
    "run_clip_sweep",
    "run_cost_of_privacy",
    "run_error_vs_dim",
    "summarise_ci",
    "summarise_clip_heatmap",
    "summarise_clip_sweep",
    "summarise_cost_of_privacy",
    "summarise_error_vs_dim",
]

DESIGNS = BROWN_DESIGNS
CI_METHODS = ("independent_runs", "checkpoints", "batched_means")
DEFAULT_DELTA = 1e-6  # footnote 2: rho = 0.015 is (0.925, 1e-6)-DP


# ----------------------------------------------------------------------- parameters
# One frozen dataclass per kind (dpreg.experiments.params); keyword-only, so a kind's
# required keys may follow the shared keys with defaults. The tables of config/README.md
# are generated from them (python -m dpreg.experiments.kind_docs).

_POSITIVE = finite(positive)


@dataclass(frozen=True, kw_only=True)
class BrownParams(KindParams):
    """Keys every ``brown_*`` kind takes: the data design, DP-GD and the budget."""

    kind = "brown_*"
    design: str = param(
        "isotropic",
        doc="design of the rows x_i: `isotropic` N(0, I) or `anisotropic` N(0, U diag(2, 1,"
        " u_3..u_p) U^T) with u_i ~ U[1, 2] and U Haar on SO(p), drawn per data set (App. B)",
        check=choice(*DESIGNS),
    )
    rho: float = param(
        0.015,
        doc="zCDP budget rho of one DP-GD run, all T steps (Lemma 2.1's noise; footnote 2:"
        " 0.015 is (0.925, 1e-6)-DP)",
        check=_POSITIVE,
    )
    T: int = param(20, doc="DP-GD iterations T", check=positive_integer)
    step: float = param(0.2, doc="DP-GD step size eta", check=_POSITIVE)
    clip_scale: float = param(
        5.0, doc="c_gamma of the clip threshold gamma = c_gamma sqrt(p)", check=_POSITIVE
    )
    sigma: float = param(
        1.0, doc="standard deviation sigma of the label noise xi_i", check=_POSITIVE
    )
    noise_mean: float = param(
        0.0,
        doc="mean mu_xi of the label noise (the paper: 0; the authors' scripts: 1)",
    )
    delta: float = param(
        DEFAULT_DELTA,
        doc="delta of the (epsilon, delta) recorded beside rho in every row",
        check=open_interval(0, 1),
    )


@dataclass(frozen=True, kw_only=True)
class BrownErrorVsDimParams(BrownParams):
    """Cell keys of ``brown_error_vs_dim`` (Figs. 1 and 9): Fig. 1's rho, T and step."""

    kind = "brown_error_vs_dim"
    rho: float = param(
        0.05, doc="zCDP budget rho of one DP-GD run, all T steps (Fig. 1)", check=_POSITIVE
    )
    T: int = param(10, doc="DP-GD iterations T (Fig. 1)", check=positive_integer)
    step: float = param(0.25, doc="DP-GD step size eta (Fig. 1)", check=_POSITIVE)
    delta: float = param(
        DEFAULT_DELTA,
        doc="delta of AdaSSP's (epsilon, delta) = Claim A.6's conversion of rho, also"
        " recorded in every row",
        check=open_interval(0, 1),
    )
    p: int = param(doc="dimension p", check=at_least(2))
    n_per_p: float = param(
        100, doc="n / p: each trial draws n = int(n_per_p) p rows", check=_POSITIVE
    )
    adassp_failure_prob: float = param(
        0.05, doc="AdaSSP's failure probability (its `failure_prob`)", check=open_interval(0, 1)
    )
    adassp_mechanism: str = param(
        "analytic",
        doc="AdaSSP's Gaussian mechanism (its `mechanism`)",
        check=choice(*ADASSP_MECHANISMS),
    )


@dataclass(frozen=True, kw_only=True)
class BrownCostOfPrivacyParams(BrownParams):
    """Cell keys of ``brown_cost_of_privacy`` (Figs. 2 and 8); ``n > p + 1`` (check_cell)."""

    kind = "brown_cost_of_privacy"
    n: int = param(
        doc="sample size n (> p + 1); a fresh data set per trial", check=positive_integer
    )
    p: int = param(doc="dimension p", check=positive_integer)


@dataclass(frozen=True, kw_only=True)
class BrownClipHeatmapParams(BrownParams):
    """Cell keys of ``brown_clip_heatmap`` (Fig. 3)."""

    kind = "brown_clip_heatmap"
    sigma: float = param(
        1.0,
        doc="accepted but not used by this kind: its data have sigma = 1",
        check=_POSITIVE,
    )
    noise_mean: float = param(
        0.0, doc="accepted but not used by this kind: its data have mu_xi = 0"
    )
    clip_scale: float = param(
        5.0, doc="accepted but not used by this kind: `gamma` sets the thresholds", check=_POSITIVE
    )
    p: int = param(doc="dimension p", check=positive_integer)
    gamma: float | list[float] = param(
        doc="absolute clip threshold(s) gamma, one DP-GD run each on the trial's data set"
        " (the authors: 20 values in linspace(sqrt(5), 3 sqrt(200)))",
        check=_POSITIVE,
    )
    n_per_p: float = param(
        100, doc="n / p: each trial draws n = int(n_per_p) p rows", check=_POSITIVE
    )


@dataclass(frozen=True, kw_only=True)
class BrownBiasVarianceParams(BrownParams):
    """Cell keys of ``brown_bias_variance`` (Fig. 4); ``n > p + 1`` (check_cell)."""

    kind = "brown_bias_variance"
    clip_scale: float = param(
        5.0,
        doc="accepted but not used by this kind: `clip_scales` sets gamma",
        check=_POSITIVE,
    )
    n: int = param(doc="sample size n (> p + 1) of the one data set", check=positive_integer)
    p: int = param(doc="dimension p", check=positive_integer)
    clip_scales: float | list[float] = param(
        doc="clip levels c, gamma = c sqrt(p); level k of the list draws its runs from"
        " `default_rng([seed, k])`",
        check=_POSITIVE,
    )
    data_seed: int = param(0, doc="seed of the one fixed data set", check=nonnegative)


@dataclass(frozen=True, kw_only=True)
class BrownErrorVsClippingParams(BrownBiasVarianceParams):
    """Cell keys of ``brown_error_vs_clipping`` (Fig. 7): those of ``brown_bias_variance``."""

    kind = "brown_error_vs_clipping"


@dataclass(frozen=True, kw_only=True)
class BrownCIParams(BrownParams):
    """Cell keys of ``brown_ci`` (Figs. 5/6, 10/11).

    Across keys (check_cell): ``n > p + 1`` and ``total_steps - burn_in >= m``.
    """

    kind = "brown_ci"
    T: int = param(
        20,
        doc="accepted but not used by this kind: a construction runs `total_steps` steps"
        " (independent runs: total_steps / m each)",
        check=positive_integer,
    )
    n: int = param(doc="sample size n (> p + 1) of the one data set", check=positive_integer)
    p: int = param(doc="dimension p", check=positive_integer)
    total_steps: int = param(
        doc="N, the noisy steps of one interval construction (rho covers all N)",
        check=positive_integer,
    )
    data_seed: int = param(0, doc="seed of the one fixed data set", check=nonnegative)
    m: int = param(
        10, doc="m: independent runs, checkpoints or batches per interval", check=at_least(2)
    )
    burn_in: int = param(20, doc="burn-in b: iterates dropped first", check=nonnegative)
    alpha: float = param(
        0.05, doc="level alpha: intervals of nominal coverage 1 - alpha", check=open_interval(0, 1)
    )
    methods: str | list[str] = param(
        list(CI_METHODS),
        doc="interval constructions (independent runs are skipped when N/m <= b, App. B)",
        check=choice(*CI_METHODS),
    )
    run_estimate: str = param(
        "post_burn_in_mean",
        doc="estimate of one independent run: its `final` iterate (Theorem 3.1) or the"
        " `post_burn_in_mean` of its iterates (the experiments)",
        check=choice("final", "post_burn_in_mean"),
    )


def _params(spec: type[KindParams], cell: Mapping[str, Any]) -> Any:
    """Return the cell's typed parameters (the workflow's ``conversion`` key left aside)."""
    return spec.from_cell(cell)


# ----------------------------------------------------------------------------- data


def _draw_data(
    n: int,
    p: int,
    *,
    rng: np.random.Generator,
    design: str,
    sigma: float = 1.0,
    noise_mean: float = 0.0,
    out: np.ndarray | None = None,
    rotated: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One data set of :class:`~dpreg.data.synthetic.BrownDGP`: ``(X, y, theta_star)``.

    Draws the truth then the data from ``rng`` (the order the studies' results rely on).
    ``out``, ``rotated``: reused (n, p) buffers for the design's normals and (anisotropic)
    its rotated copy (``BrownDGP.sample``).
    """
    dgp = BrownDGP.draw(rng=rng, p=p, design=design, sigma=sigma, noise_mean=noise_mean)
    data = dgp.sample(n, rng=rng, out=out, rotated=rotated)
    return data.X, data.y, dgp.theta


def _design_buffers(
    n: int, p: int, trials: int, design: str
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """(n, p) buffers reused by every trial's design: ``(normals, rotated)`` (None: new arrays).

    Each data set's normals overwrite the last one's (used by nothing after its trial), so
    the pages are faulted in once per job, not per trial (up to 400 MB per data set in
    Fig. 8b; the same values either way, docs/scaling.md). The anisotropic design (Fig. 9)
    is a rotated copy of the normals: it gets a second buffer for the copy (a buffer for
    the normals alone only kept them alive longer: no faster, 145 MB more memory).
    """
    if trials <= 1:
        return None, None
    if design == "isotropic":
        return np.empty((n, p)), None
    return np.empty((n, p)), np.empty((n, p))


def _preload_compiled(draws: int) -> None:
    """Load the compiled normal fill (and numba) up front for a job of many small draws.

    ``dpreg.data.synthetic`` takes numba's fill for a draw of at least 2^20 normals or
    once numba is loaded; a job drawing at least 2^26 normals (about 0.4 s saved at ~6 ns
    per draw, numba's start-up) in many smaller data sets (Figs. 1/2/8/9: one per trial)
    pays that start-up once and draws all of them compiled,
    the same values and generator states as numpy's (``tests/unit/test_normal_kernel.py``);
    the Gram kernel's compiled passes follow (the same bits as their numpy references).
    The warm-up draws from a throwaway generator, never from a study stream.
    """
    if draws >= 2**26:
        from dpreg.data.normal_kernel import standard_normal_fill

        standard_normal_fill(np.random.default_rng(0), np.empty(1))


def _ols(
    X: np.ndarray, y: np.ndarray, gram: np.ndarray | None = None, moment: np.ndarray | None = None
) -> np.ndarray:
    # normal equations: the Gaussian designs here are well conditioned, and lstsq would
    # copy an (n, p) design of up to 0.5 GB (Fig. 8b); ``gram``, ``moment``: X'X and X'y
    # if already formed (the same products, so the same values)
    return np.linalg.solve(X.T @ X if gram is None else gram, X.T @ y if moment is None else moment)


def _dpgd(
    X: np.ndarray,
    y: np.ndarray,
    P: BrownParams,
    *,
    rng: np.random.Generator,
    trials: int = 1,
    clip: float | None = None,
    T: int | None = None,
    kernel: str | GramRowGradient | None = None,
    **extra: Any,
):
    p = X.shape[1]
    if kernel is None:
        kernel = "fast" if trials > 1 else "rows"  # "fast" stores two more (n, p) arrays
    gamma = clip if clip is not None else float(P.clip_scale) * math.sqrt(p)
    return fit_dp_gd(
        X,
        y,
        budget=ZCDP(float(P.rho)),
        rng=rng,
        trials=trials,
        T=int(T if T is not None else P.T),
        step=float(P.step),
        clip=gamma,
        bound_X=None,
        bound_y=None,
        kernel=kernel,
        **extra,
    )


def _common_rows(
    frame: pd.DataFrame, P: BrownParams, cell: Mapping[str, Any], seed: int
) -> pd.DataFrame:
    """Add ``seed`` and the budget columns (``conversion``: the workflow's cell key)."""
    frame.insert(1, "seed", np.full(len(frame), seed, dtype=np.uint64))
    budget = budget_columns(
        rho=float(P.rho),
        delta=float(P.delta),
        conversion=cell_conversion(cell),
    )
    for key, value in budget.items():
        frame[key] = value
    return frame


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else [value]


# ------------------------------------------------------------------- Figs. 1 and 9


def run_error_vs_dim(
    cell: Mapping[str, Any], *, trials: int, first_trial: int, seed: int, data: Dataset | None
) -> pd.DataFrame:
    r"""Figs. 1/9: one fresh data set per trial (n = n_per_p * p); OLS, DP-GD, AdaSSP.

    Keys and defaults (Fig. 1's ``rho = 0.05``, ``T = 10``, ``step = 0.25``):
    :class:`BrownErrorVsDimParams`. AdaSSP runs at the :math:`(\varepsilon, \delta)` of Claim A.6
    (:math:`\varepsilon = \rho + 2\sqrt{\rho\log(1/\delta)}`, 1.712 at rho = 0.05)
    with data bounds read off the data non-privately (the authors' choice, which favours
    AdaSSP; docs/notes/brown2024.md §8 item 12) and ``failure_prob = adassp_failure_prob``.
    """
    del data
    P = _params(BrownErrorVsDimParams, cell)
    p = int(P.p)
    n = int(P.n_per_p) * p
    delta = float(P.delta)
    eps = zcdp_to_eps(float(P.rho), delta, method="simple")
    _preload_compiled(trials * n * (p + 1))
    normals, rotated = _design_buffers(n, p, trials, P.design)
    rows = []
    for j in range(trials):
        rng = np.random.default_rng([seed, j])
        X, y, truth = _draw_data(
            n,
            p,
            rng=rng,
            design=P.design,
            sigma=float(P.sigma),
            noise_mean=float(P.noise_mean),
            out=normals,
            rotated=rotated,
        )
        # one run: the Gram kernel, whose X'X and row norms serve OLS and AdaSSP's bound
        kernel = GramRowGradient(X, y, float(P.clip_scale) * math.sqrt(p))
        ols = _ols(X, y, kernel.gram, kernel.moment)
        fit = _dpgd(X, y, P, rng=rng, kernel=kernel)
        ada = fit_adassp(
            X,
            y,
            budget=ApproxDP(eps, delta),
            rng=rng,
            bound_X=float(kernel.norms.max()),
            bound_y=float(np.abs(y).max()),
            failure_prob=float(P.adassp_failure_prob),
            mechanism=P.adassp_mechanism,
        )
        for method, theta, clip in (
            ("ols", ols, 0.0),
            ("dp_gd", fit.theta[0], float(fit.nonprivate_diagnostics["clip_fraction"].mean())),
            ("adassp", ada.theta[0], math.nan),
        ):
            rows.append(
                {
                    "trial": first_trial + j,
                    "method": method,
                    "p": p,
                    "n": n,
                    "err_true": float(np.linalg.norm(theta - truth)),
                    "err_hat": float(np.linalg.norm(theta - ols)),
                    "clip_fraction": clip,
                    "adassp_epsilon": eps,
                }
            )
    return _common_rows(pd.DataFrame(rows), P, cell, seed)


def _mean_se(group: pd.DataFrame, col: str) -> dict[str, float]:
    v = group[col].to_numpy(dtype=float)
    v = v[np.isfinite(v)]
    se = float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else math.nan
    return {f"{col}_mean": float(v.mean()) if v.size else math.nan, f"{col}_se": se}


def summarise_error_vs_dim(
    runs: pd.DataFrame, references: Sequence[Mapping[str, Any]] = ()
) -> pd.DataFrame:
    """Per (p, method): mean and SE of ``err_true`` and ``err_hat``, clip fraction."""
    del references
    rows = []
    for (p, method), g in runs.groupby(["p", "method"], sort=True):
        rows.append(
            {
                "p": int(p),
                "n": int(g["n"].iloc[0]),
                "method": method,
                **_mean_se(g, "err_true"),
                **_mean_se(g, "err_hat"),
                "clip_fraction": float(g["clip_fraction"].mean()),
                "trials": len(g),
                "rho": float(g["rho"].iloc[0]),
                "epsilon_adassp": float(g["adassp_epsilon"].iloc[0]),
                "delta": float(g["delta"].iloc[0]),
            }
        )
    return pd.DataFrame(rows)


# ------------------------------------------------------------------- Figs. 2 and 8


def run_cost_of_privacy(
    cell: Mapping[str, Any], *, trials: int, first_trial: int, seed: int, data: Dataset | None
) -> pd.DataFrame:
    """Figs. 2/8: fresh data per trial; privacy and sampling errors of the last iterate."""
    del data
    P = _params(BrownCostOfPrivacyParams, cell)
    n, p = int(P.n), int(P.p)
    _preload_compiled(trials * n * (p + 1))
    normals, rotated = _design_buffers(n, p, trials, P.design)
    rows = []
    for j in range(trials):
        rng = np.random.default_rng([seed, j])
        X, y, truth = _draw_data(
            n,
            p,
            rng=rng,
            design=P.design,
            sigma=float(P.sigma),
            noise_mean=float(P.noise_mean),
            out=normals,
            rotated=rotated,
        )
        # one run on a large design: the Gram kernel (one product over the rows per
        # step), whose X'X is formed once for it, OLS and the noiseless path
        kernel = GramRowGradient(X, y, float(P.clip_scale) * math.sqrt(p))
        gram = kernel.gram
        ols = _ols(X, y, gram, kernel.moment)
        fit = _dpgd(X, y, P, rng=rng, kernel=kernel)
        gd = _noiseless_gd(
            X, ols, T=int(fit.diagnostics["T"]), step=fit.diagnostics["step"], gram=gram
        )
        rows.append(
            {
                "trial": first_trial + j,
                "n": n,
                "p": p,
                "privacy_error": float(np.linalg.norm(fit.theta[0] - ols)),
                "noise_error": float(np.linalg.norm(fit.theta[0] - gd)),
                "optimisation_error": float(np.linalg.norm(gd - ols)),
                "sampling_error": float(np.linalg.norm(ols - truth)),
                "total_error": float(np.linalg.norm(fit.theta[0] - truth)),
                "clip_fraction": float(fit.nonprivate_diagnostics["clip_fraction"].mean()),
                "T": int(fit.diagnostics["T"]),
                "step": fit.diagnostics["step"],
                "clip": fit.diagnostics["clip"],
            }
        )
    return _common_rows(pd.DataFrame(rows), P, cell, seed)


def _noiseless_gd(
    X: np.ndarray, ols: np.ndarray, *, T: int, step: float, gram: np.ndarray | None = None
) -> np.ndarray:
    r"""Iterate T of gradient descent without noise or clipping from :math:`\theta_0 = 0`.

    :math:`\theta_T = \hat\theta + (I - \eta\Sigma)^T(\theta_0 - \hat\theta)`,
    :math:`\Sigma = X^\top X / n` (the mean of Lemma 2.3 of Brown et al. 2024). The paper's
    privacy error :math:`\|\theta_T - \hat\theta\|` contains this deterministic
    optimisation error :math:`(I - \eta\Sigma)^T\hat\theta`, which does not fall with n.
    """
    n, p = X.shape
    contraction = np.eye(p) - step * (X.T @ X if gram is None else gram) / n
    return ols - np.linalg.matrix_power(contraction, T) @ ols


def summarise_cost_of_privacy(
    runs: pd.DataFrame, references: Sequence[Mapping[str, Any]] = ()
) -> pd.DataFrame:
    """Per n: mean/SE of both errors, RMS predictions (isotropic theory) and n*."""
    del references
    rows = []
    for n, g in runs.groupby("n", sort=True):
        p, T = int(g["p"].iloc[0]), int(g["T"].iloc[0])
        gamma, eta, rho = (
            float(g["clip"].iloc[0]),
            float(g["step"].iloc[0]),
            float(g["rho"].iloc[0]),
        )
        rows.append(
            {
                "n": int(n),
                "p": p,
                **_mean_se(g, "privacy_error"),
                **_mean_se(g, "noise_error"),
                **_mean_se(g, "optimisation_error"),
                **_mean_se(g, "sampling_error"),
                **_mean_se(g, "total_error"),
                "privacy_rms_theory": math.sqrt(
                    theory.isotropic_privacy_mse(n, p, T=T, clip=gamma, rho=rho, step=eta)
                ),
                "sampling_rms_theory": math.sqrt(theory.ols_sampling_mse(n, p)),
                "crossover_n_theory": theory.crossover_n(T=T, clip=gamma, rho=rho, step=eta),
                "clip_fraction": float(g["clip_fraction"].mean()),
                "trials": len(g),
                "T": T,
                "step": eta,
                "clip": gamma,
                "rho": rho,
                "epsilon": float(g["epsilon"].iloc[0]),
                "delta": float(g["delta"].iloc[0]),
            }
        )
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- Fig. 3


def run_clip_heatmap(
    cell: Mapping[str, Any], *, trials: int, first_trial: int, seed: int, data: Dataset | None
) -> pd.DataFrame:
    """Fig. 3: for each trial one data set (n = n_per_p * p) and one run per gamma.

    The clip fraction is the total number of clipped per-example gradients over the
    ``T n`` computed (the authors' definition). ``gamma`` is a list of absolute
    thresholds (author code: 20 values in ``linspace(sqrt(5), 3 sqrt(200))``).
    """
    del data
    P = _params(BrownClipHeatmapParams, cell)
    p = int(P.p)
    n = int(P.n_per_p) * p
    rows = []
    for j in range(trials):
        rng = np.random.default_rng([seed, j])
        X, y, _ = _draw_data(n, p, rng=rng, design=P.design)
        for gamma in _as_list(P.gamma):
            fit = _dpgd(X, y, P, rng=rng, clip=float(gamma))
            rows.append(
                {
                    "trial": first_trial + j,
                    "p": p,
                    "n": n,
                    "gamma": float(gamma),
                    "gamma_over_sqrt_p": float(gamma) / math.sqrt(p),
                    "clip_fraction": float(fit.nonprivate_diagnostics["clip_fraction"].mean()),
                }
            )
    return _common_rows(pd.DataFrame(rows), P, cell, seed)


def summarise_clip_heatmap(
    runs: pd.DataFrame, references: Sequence[Mapping[str, Any]] = ()
) -> pd.DataFrame:
    """Per (p, gamma): mean clip fraction over trials."""
    del references
    keys = ["p", "n", "gamma", "gamma_over_sqrt_p", "rho", "epsilon", "delta"]
    table = runs.groupby(keys, sort=True)["clip_fraction"].agg(["mean", "count"]).reset_index()
    return table.rename(columns={"mean": "clip_fraction", "count": "trials"})


# --------------------------------------------------------------------- Figs. 4 and 7


def _fixed_data(
    P: BrownBiasVarianceParams | BrownCIParams,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return _draw_data(
        int(P.n),
        int(P.p),
        rng=np.random.default_rng(int(P.data_seed)),
        design=P.design,
        sigma=float(P.sigma),
        noise_mean=float(P.noise_mean),
    )


def run_clip_sweep(
    cell: Mapping[str, Any], *, trials: int, first_trial: int, seed: int, data: Dataset | None
) -> pd.DataFrame:
    r"""Figs. 4/7: one data set (``data_seed``), ``trials`` DP-GD runs per clip level.

    ``clip_scales`` lists :math:`c` with :math:`\gamma = c\sqrt p`; run ``k`` of the
    list draws from ``default_rng([seed, k])``. Rows hold the final iterate and its
    errors against :math:`\hat\theta`, :math:`\theta^*` and the Huber target.
    """
    del data
    P = _params(BrownBiasVarianceParams, cell)
    X, y, truth = _fixed_data(P)
    p = X.shape[1]
    ols = _ols(X, y)
    frames = []
    for k, c in enumerate(_as_list(P.clip_scales)):
        gamma = float(c) * math.sqrt(p)
        fit = _dpgd(X, y, P, rng=np.random.default_rng([seed, k]), trials=trials, clip=gamma)
        huber = theory.huber_target(X, y, gamma)
        frame = pd.DataFrame(fit.theta, columns=[f"theta_{j}" for j in range(p)])
        frame.insert(0, "trial", np.arange(first_trial, first_trial + trials))
        frame["clip_scale"] = float(c)
        frame["gamma"] = gamma
        frame["T"] = int(fit.diagnostics["T"])
        frame["clip_fraction"] = fit.nonprivate_diagnostics["clip_fraction"].mean(axis=1)
        frame["err_hat"] = np.linalg.norm(fit.theta - ols, axis=1)
        frame["err_true"] = np.linalg.norm(fit.theta - truth, axis=1)
        frame["err_huber"] = np.linalg.norm(fit.theta - huber, axis=1)
        for j in range(p):
            frame[f"ols_{j}"] = ols[j]
            frame[f"truth_{j}"] = truth[j]
        frames.append(frame)
    return _common_rows(pd.concat(frames, ignore_index=True), P, cell, seed)


def summarise_clip_sweep(
    runs: pd.DataFrame, references: Sequence[Mapping[str, Any]] = ()
) -> pd.DataFrame:
    r"""Per (T, gamma): bias-variance decomposition of :math:`\theta_T` and clip fraction.

    ``bias2_hat = ||mean theta_T - theta_hat||^2``, ``variance = mean ||theta_T - mean||^2``
    (ddof 1), ``mse_hat = mean ||theta_T - theta_hat||^2`` (= bias2 + variance up to the
    ddof); the same against :math:`\theta^*` (``*_true``); mean norms ``err_*``.
    """
    del references
    p = sum(1 for c in runs.columns if c.startswith("theta_"))
    cols = [f"theta_{j}" for j in range(p)]
    rows = []
    for (T, gamma), g in runs.groupby(["T", "gamma"], sort=True):
        theta = g[cols].to_numpy()
        ols = g[[f"ols_{j}" for j in range(p)]].iloc[0].to_numpy()
        truth = g[[f"truth_{j}" for j in range(p)]].iloc[0].to_numpy()
        mean = theta.mean(axis=0)
        R = theta.shape[0]
        variance = float(np.sum((theta - mean) ** 2) / max(R - 1, 1))
        rows.append(
            {
                "T": int(T),
                "gamma": float(gamma),
                "clip_scale": float(g["clip_scale"].iloc[0]),
                "clip_fraction": float(g["clip_fraction"].mean()),
                "bias2_hat": float(np.sum((mean - ols) ** 2)),
                "bias2_true": float(np.sum((mean - truth) ** 2)),
                "variance": variance,
                "mse_hat": float(np.mean(np.sum((theta - ols) ** 2, axis=1))),
                "mse_true": float(np.mean(np.sum((theta - truth) ** 2, axis=1))),
                **_mean_se(g, "err_hat"),
                **_mean_se(g, "err_true"),
                **_mean_se(g, "err_huber"),
                "trials": R,
                "rho": float(g["rho"].iloc[0]),
                "epsilon": float(g["epsilon"].iloc[0]),
                "delta": float(g["delta"].iloc[0]),
            }
        )
    return pd.DataFrame(rows)


def _tagged(figure: str):
    def summarise(runs: pd.DataFrame, references: Sequence[Mapping[str, Any]] = ()) -> pd.DataFrame:
        table = summarise_clip_sweep(runs, references)
        table.insert(0, "figure", figure)
        return table

    summarise.__doc__ = f"{summarise_clip_sweep.__doc__}\n    Tagged ``figure = {figure!r}``."
    summarise.__wrapped__ = summarise_clip_sweep  # type: ignore[attr-defined]
    return summarise


# ------------------------------------------------------------ Figs. 5/6 and 10/11


def _trial_streams(
    seed: int, tag: int, trials: int, first_trial: int, runs: int = 1
) -> list[np.random.Generator]:
    """One Generator per (trial, run), keyed ``[seed, tag, trial, run]`` (fixed length).

    Keys use the global trial index, so a trial draws the same noise however the trials
    are split into chunks or blocks (``numpy.random.SeedSequence`` drops trailing zero
    words, so keys of one length keep the streams apart).
    """
    return [
        np.random.default_rng([seed, tag, k, r])
        for k in range(first_trial, first_trial + trials)
        for r in range(runs)
    ]


def run_ci(
    cell: Mapping[str, Any], *, trials: int, first_trial: int, seed: int, data: Dataset | None
) -> pd.DataFrame:
    r"""Figs. 5/6, 10/11: ``trials`` replicate CI constructions at N = ``total_steps``.

    One data set (``data_seed``; the target :math:`\hat\theta` is its empirical
    minimiser, docs/notes/brown2024.md §5.1). The budget ``rho`` covers all N noisy steps
    of a construction. Checkpoints and batched means are computed from the same single runs
    (trial k draws its noise from ``default_rng([seed, 2, k, 0])``); independent runs
    use m runs of N/m steps (run r of trial k: ``default_rng([seed, 3, k, r])``) and are
    skipped when ``N/m <= burn_in`` (App. B). Streams are keyed by the global trial
    index, so any split of the trials into calls gives the same runs.

    One row per (trial, method) with per-coordinate coverage of :math:`\hat\theta`
    and of the Huber target :math:`\hat\theta_\gamma`, lengths, and the exact expected
    length without clipping (:func:`dpreg.theory.dpgd_ci.ci_half_width_theory`:
    ``length_theory_j`` = 2 t E[s]/sqrt(m), ``length_theory_rms_j`` = 2 t sqrt(E[s^2]/m)).
    """
    del data
    P = _params(BrownCIParams, cell)
    X, y, _ = _fixed_data(P)
    p = X.shape[1]
    N = int(P.total_steps)
    m = int(P.m)
    burn_in = int(P.burn_in)
    alpha = float(P.alpha)
    step = float(P.step)
    run_estimate = P.run_estimate
    methods = _as_list(P.methods)
    gamma = float(P.clip_scale) * math.sqrt(p)
    ols = _ols(X, y)
    huber = theory.huber_target(X, y, gamma)
    ols_half = ols_interval_half_width(X, y, alpha)
    results = []
    if {"checkpoints", "batched_means"} & set(methods):
        fit = _dpgd(
            X,
            y,
            P,
            rng=_trial_streams(seed, 2, trials, first_trial),
            trials=trials,
            T=N,
            return_path=True,
            kernel="fused",
        )
        clip = fit.nonprivate_diagnostics["clip_fraction"].mean(axis=1)
        for method in ("checkpoints", "batched_means"):
            if method in methods:
                ci = intervals_from_path(fit.path, method=method, m=m, burn_in=burn_in, alpha=alpha)
                results.append((method, ci, clip, fit.diagnostics["noise_std"]))
    if "independent_runs" in methods and N // m > burn_in:
        T = N // m
        fit = _dpgd(
            X,
            y,
            P,
            rng=_trial_streams(seed, 3, trials, first_trial, runs=m),
            trials=trials * m,
            T=T,
            return_path=True,
            accounting_steps=m * T,
            kernel="fused",
        )
        paths = fit.path.reshape(trials, m, T + 1, p)
        ci = intervals_from_runs(paths, burn_in=burn_in, alpha=alpha, run_estimate=run_estimate)
        clip = fit.nonprivate_diagnostics["clip_fraction"].reshape(trials, m * T).mean(axis=1)
        results.append(("independent_runs", ci, clip, fit.diagnostics["noise_std"]))
    frames = []
    for method, ci, clip, noise_std in results:
        expected = ci_half_width_theory(
            X,
            y,
            method=method,
            total_steps=N,
            step=step,
            noise_std=noise_std,
            m=m,
            burn_in=burn_in,
            alpha=alpha,
            run_estimate=run_estimate,
        )
        cov_hat, cov_huber, length = ci.covers(ols), ci.covers(huber), ci.length
        columns: dict[str, Any] = {
            "trial": np.arange(first_trial, first_trial + trials),
            "method": method,
            "total_steps": N,
            "m": m,
            "burn_in": burn_in,
            "alpha": alpha,
            "n": X.shape[0],
            "p": p,
            "clip": gamma,
            "noise_std": noise_std,
            "clip_fraction": clip,
        }
        for j in range(p):
            columns[f"covered_hat_{j}"] = cov_hat[:, j]
            columns[f"covered_huber_{j}"] = cov_huber[:, j]
            columns[f"length_{j}"] = length[:, j]
            columns[f"ols_length_{j}"] = 2.0 * ols_half[j]
            columns[f"length_theory_{j}"] = 2.0 * expected.expected[j]
            columns[f"length_theory_rms_{j}"] = 2.0 * expected.rms[j]
        columns["huber_minus_ols"] = float(np.linalg.norm(huber - ols))
        frame = pd.DataFrame(columns)
        frames.append(frame)
    if not frames:
        raise ValueError(f"no CI method applies at total_steps={N} (methods {methods})")
    return _common_rows(pd.concat(frames, ignore_index=True), P, cell, seed)


def _first_mean(g: pd.DataFrame, prefix: str, p: int) -> float:
    cols = [f"{prefix}_{j}" for j in range(p)]
    if not set(cols) <= set(g.columns):
        return math.nan
    return float(g[cols].iloc[0].to_numpy().mean())


def summarise_ci(runs: pd.DataFrame, references: Sequence[Mapping[str, Any]] = ()) -> pd.DataFrame:
    r"""Per (N, method): coverage of theta_hat and of the Huber target, lengths.

    Coverage: ``coverage`` (mean over runs and coordinates), ``coverage_low`` /
    ``coverage_high`` (2.5/97.5 percentiles across coordinates, Fig. 5's error bars),
    ``coverage_se`` (from per-run averages) and ``coverage_se_nominal``; the same with
    ``huber_`` prefix. Length: mean, ``length_se`` (from per-run averages), 2.5/97.5
    percentiles across coordinates of the per-coordinate mean length (Fig. 6),
    ``ols_length`` (mean over coordinates of the non-private OLS interval, Fig. 6's
    dashed line), and the exact no-clipping expectation ``length_theory``
    (:math:`2t\,E[s]/\sqrt m` averaged over coordinates) and ``length_theory_rms``
    (:math:`2t\sqrt{E[s^2]/m}`; :mod:`dpreg.theory.dpgd_ci`).
    """
    del references
    p = sum(1 for c in runs.columns if c.startswith("covered_hat_"))
    rows = []
    for (N, method), g in runs.groupby(["total_steps", "method"], sort=True):
        alpha = float(g["alpha"].iloc[0])
        hat = coverage_summary(g[[f"covered_hat_{j}" for j in range(p)]].to_numpy(), alpha)
        hub = coverage_summary(g[[f"covered_huber_{j}" for j in range(p)]].to_numpy(), alpha)
        lengths = g[[f"length_{j}" for j in range(p)]].to_numpy()
        per_coord = lengths.mean(axis=0)
        per_run = lengths.mean(axis=1)
        rows.append(
            {
                "total_steps": int(N),
                "method": method,
                "coverage": hat["mean"],
                "coverage_low": hat["low"],
                "coverage_high": hat["high"],
                "coverage_se": hat["se"],
                "coverage_se_nominal": hat["se_nominal"],
                "huber_coverage": hub["mean"],
                "huber_coverage_se": hub["se"],
                "length": float(lengths.mean()),
                "length_se": float(per_run.std(ddof=1) / math.sqrt(len(per_run)))
                if len(per_run) > 1
                else math.nan,
                "length_low": float(np.percentile(per_coord, 2.5)),
                "length_high": float(np.percentile(per_coord, 97.5)),
                "length_theory": _first_mean(g, "length_theory", p),
                "length_theory_rms": _first_mean(g, "length_theory_rms", p),
                "ols_length": float(
                    g[[f"ols_length_{j}" for j in range(p)]].iloc[0].to_numpy().mean()
                ),
                "nominal": 1.0 - alpha,
                "clip_fraction": float(g["clip_fraction"].mean()),
                "noise_std": float(g["noise_std"].iloc[0]),
                "huber_minus_ols": float(g["huber_minus_ols"].iloc[0]),
                "runs": hat["runs"],
                "m": int(g["m"].iloc[0]),
                "burn_in": int(g["burn_in"].iloc[0]),
                "n": int(g["n"].iloc[0]),
                "p": p,
                "rho": float(g["rho"].iloc[0]),
                "epsilon": float(g["epsilon"].iloc[0]),
                "delta": float(g["delta"].iloc[0]),
            }
        )
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------- registry


def _check_n_above_p(P: BrownCostOfPrivacyParams | BrownBiasVarianceParams | BrownCIParams):
    if P.n <= P.p + 1:
        raise ValueError(f"{P.kind}: n must exceed p + 1; got n={P.n}, p={P.p}")


def _check_cost(cell: Mapping[str, Any]) -> None:
    """Cross-key check of ``brown_cost_of_privacy``: ``n > p + 1`` (OLS)."""
    _check_n_above_p(_params(BrownCostOfPrivacyParams, cell))


def _check_sweep(spec: type[BrownBiasVarianceParams]):
    def check(cell: Mapping[str, Any]) -> None:
        """Cross-key check of the clip sweeps: ``n > p + 1`` (OLS)."""
        _check_n_above_p(_params(spec, cell))

    return check


def _check_ci(cell: Mapping[str, Any]) -> None:
    """Cross-key checks of ``brown_ci``: ``n > p + 1`` and ``total_steps - burn_in >= m``."""
    P = _params(BrownCIParams, cell)
    _check_n_above_p(P)
    m, b, N = P.m, P.burn_in, P.total_steps
    if N - b < m:
        raise ValueError(
            f"{P.kind}: need total_steps - burn_in >= m; got m={m}, total_steps={N}, burn_in={b}"
        )


def _fig(name: str):
    def draw(table: pd.DataFrame, *, title: str | None = None) -> Any:
        from dpreg.plotting import brown2024 as plots

        return getattr(plots, name)(table, title=title)

    # Named after the plotting function it calls (imported lazily: matplotlib is loaded
    # only by figure jobs), so the figure index (docs/figures.md) points at it.
    draw.__module__, draw.__name__, draw.__qualname__ = "dpreg.plotting.brown2024", name, name
    return draw


ERROR_VS_DIM = StudyKind(
    name="brown_error_vs_dim",
    run=run_error_vs_dim,
    summarise=summarise_error_vs_dim,
    figure=_fig("plot_error_vs_dim"),
    params=BrownErrorVsDimParams,
)
COST_OF_PRIVACY = StudyKind(
    name="brown_cost_of_privacy",
    run=run_cost_of_privacy,
    summarise=summarise_cost_of_privacy,
    figure=_fig("plot_cost_of_privacy"),
    params=BrownCostOfPrivacyParams,
    check_cell=_check_cost,
)
CLIP_HEATMAP = StudyKind(
    name="brown_clip_heatmap",
    run=run_clip_heatmap,
    summarise=summarise_clip_heatmap,
    figure=_fig("plot_clip_heatmap"),
    params=BrownClipHeatmapParams,
)
BIAS_VARIANCE = StudyKind(
    name="brown_bias_variance",
    run=run_clip_sweep,
    summarise=_tagged("bias_variance"),
    figure=_fig("plot_bias_variance"),
    params=BrownBiasVarianceParams,
    check_cell=_check_sweep(BrownBiasVarianceParams),
)
ERROR_VS_CLIPPING = StudyKind(
    name="brown_error_vs_clipping",
    run=run_clip_sweep,
    summarise=_tagged("error_vs_clipping"),
    figure=_fig("plot_error_vs_clipping"),
    params=BrownErrorVsClippingParams,
    check_cell=_check_sweep(BrownErrorVsClippingParams),
)
CI = StudyKind(
    name="brown_ci",
    run=run_ci,
    summarise=summarise_ci,
    figure=_fig("plot_ci"),
    params=BrownCIParams,
    check_cell=_check_ci,
)
