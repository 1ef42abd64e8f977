r"""Study kind ``ci_coverage``: coverage of the parametric-bootstrap intervals.

Checks :func:`dpreg.inference.bootstrap.bootstrap_intervals` where no theorem does: per
trial, draw a fresh dataset of the isotropic regime design
(:func:`dpreg.data.regimes.load_regime_split`: :math:`x\sim N(0, I_d)`,
:math:`y = x^\top\theta + \sigma e`, rows divided by the public bounds
:math:`2\sqrt d` and :math:`3\sqrt{1+\sigma^2}` and projected onto the unit ball and
:math:`[-1, 1]`; :math:`\theta` a unit vector drawn with the dataset), run the estimator
once with its public hyperparameters (:mod:`dpreg.estimators.methods`) at
:math:`(\varepsilon, \delta = 1/n^2)`, build its intervals from the release only and
record whether each coordinate's interval covers its target.

**Targets** (docs/inference.md). Every interval is scored against both:

* ``empirical``: the least-squares fit :math:`\hat\theta` of the trial's own data (Brown
  et al. 2024's target; what a release of one table estimates);
* ``population``: the least-squares coefficient of the bounded population,
  :math:`\theta_{\rm pop} = E[x_bx_b^\top]^{-1}E[x_by_b]` for the rows as released
  (:math:`x_b, y_b` after division and projection). The projection attenuates it, so it
  is not :math:`\theta` in bounded units; by rotational symmetry of the isotropic design
  :math:`\theta_{\rm pop} = \kappa\,\theta` with a scalar :math:`\kappa(d, \sigma)`,
  computed once by a large seeded Monte Carlo draw (:func:`population_scale`; public,
  since the design is synthetic).

An interval built for one target (``target`` column) is judged on that target
(``covered``); its coverage of the other is kept as ``covered_other``. Beside it, the
non-private OLS t-interval (classical standard errors, as statsmodels computes them) is
scored on the population target.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dpreg.data.datasets import Dataset
from dpreg.data.regimes import NOISES, load_regime_split, regime_rows, regime_theta
from dpreg.estimators.methods import PublicInputs, get_method
from dpreg.estimators.registry import get_estimator
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
from dpreg.inference.bootstrap import (
    BOOTSTRAP_ESTIMATORS,
    INTERVALS,
    TARGETS,
    UncheckedRegimeWarning,
    bootstrap_intervals,
)
from dpreg.privacy.budgets import ApproxDP

__all__ = [
    "CI_COVERAGE",
    "CICoverageParams",
    "ols_half_width",
    "population_scale",
    "run_ci_coverage",
    "summarise_ci_coverage",
]

#: Targets each estimator's release supports (IHM releases no statistic of y alone).
SUPPORTED_TARGETS = {
    "adassp": TARGETS,
    "linear_mixing": TARGETS,
    "sheffet_sketch": TARGETS,
    "ihm": ("empirical",),
}


@dataclass(frozen=True, kw_only=True)
class CICoverageParams(KindParams):
    """Cell keys of ``ci_coverage``. Across keys (check_cell): ``n > d + 1``."""

    kind = "ci_coverage"
    estimator: str = param(
        doc="the estimator whose bootstrap intervals are checked (hyperparameters from the"
        " public rule of dpreg.estimators.methods)",
        check=choice(*BOOTSTRAP_ESTIMATORS),
    )
    n: int = param(doc="rows of each trial's dataset", check=at_least(3))
    d: int = param(doc="coefficients", check=positive_integer)
    epsilon: float = param(doc="epsilon of one release", check=finite(positive))
    delta: float | None = param(
        None, doc="delta of one release; default 1/n^2 (Lev et al. 2026, §5)",
        check=open_interval(0, 1),
    )  # fmt: skip
    sigma: float = param(
        0.5, doc="noise standard deviation sigma of the regime design", check=finite(nonnegative)
    )
    noise: str = param("gaussian", doc="noise law of the regime design", check=choice(*NOISES))
    targets: str | list[str] = param(
        list(TARGETS),
        doc="interval targets: `empirical` (the OLS fit of the trial's data) and/or"
        " `population` (the bounded population's LS coefficient); a target the estimator's"
        " release cannot support (IHM: population) is skipped",
        check=choice(*TARGETS),
    )
    interval: str = param(
        "basic", doc="bootstrap interval: `basic` (pivot) or `percentile`", check=choice(*INTERVALS)
    )
    alpha: float = param(0.05, doc="intervals of level 1 - alpha", check=open_interval(0, 1))
    replicates: int = param(500, doc="bootstrap replicates per interval", check=at_least(10))
    yty_share: float = param(
        0.1,
        doc="AdaSSP: share of epsilon spent on a noisy y'y (its population target needs it);"
        " used when `population` is among the targets",
        check=open_interval(0, 1),
    )
    population_draws: int = param(
        1_000_000,
        doc="rows of the Monte Carlo draw that computes the population coefficient's scale",
        check=at_least(10_000),
    )


def _check_cell(cell: Mapping[str, Any]) -> None:
    """Cross-key check of ``ci_coverage``: ``n > d + 1`` (OLS and its t-interval)."""
    P = CICoverageParams.from_cell(cell)
    if P.n <= P.d + 1:
        raise ValueError(f"ci_coverage: n must exceed d + 1; got n={P.n}, d={P.d}")


@functools.lru_cache(maxsize=64)
def population_scale(
    d: int, sigma: float, noise: str, draws: int = 1_000_000
) -> tuple[float, float]:
    r"""Scalar :math:`\kappa` with :math:`\theta_{\rm pop} = \kappa\theta`, and its Monte Carlo SE.

    For the isotropic regime design the bounded population's least-squares coefficient is
    parallel to :math:`\theta`: the projection onto the unit ball commutes with rotations,
    so :math:`E[x_bx_b^\top] = c I` and :math:`E[x_by_b]` is invariant under every rotation
    that fixes :math:`\theta`. :math:`\kappa` is estimated by least squares on ``draws``
    rows of the design itself (:func:`~dpreg.data.regimes.load_regime_split`), in blocks of
    250,000 rows with seeds :math:`2^{40} + b`, as the mean of :math:`\theta_b^\top\hat c_b`
    over blocks; the SE is their spread over :math:`\sqrt{\text{blocks}}`.

    Examples
    --------
    >>> kappa, se = population_scale(3, 0.5, "gaussian", draws=100_000)
    >>> round(kappa, 2), se < 0.01  # C_X / C_Y = 2 sqrt(3) / (3 sqrt(1.25)) = 1.033 unclipped
    (1.03, True)
    """
    block = min(draws, 250_000)
    blocks = max(2, math.ceil(draws / block))
    values = []
    for b in range(blocks):
        seed = 2**40 + b
        rows, _ = load_regime_split(n=block, d=d, n_test=1, sigma=sigma, noise=noise, seed=seed)
        coef = np.linalg.solve(rows.X.T @ rows.X, rows.X.T @ rows.y)
        values.append(float(regime_theta(d=d, seed=seed) @ coef))
    arr = np.asarray(values)
    return float(arr.mean()), float(arr.std(ddof=1) / math.sqrt(arr.size))


def ols_half_width(X: np.ndarray, y: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    r"""Non-private OLS and its t-interval half-widths (classical standard errors).

    :math:`t_{1-\alpha/2,\,n-d}\,s\sqrt{[(X^\top X)^{-1}]_{jj}}`,
    :math:`s^2 = \mathrm{RSS}/(n-d)`: statsmodels' OLS interval
    (:func:`dpreg.inference.coverage.ols_interval_half_width`, tested equal), by the normal
    equations so that a study of thousands of trials does not pay statsmodels' overhead.
    """
    n, d = X.shape
    G = X.T @ X
    ols = np.linalg.solve(G, X.T @ y)
    resid = y - X @ ols
    s2 = float(resid @ resid) / (n - d)
    se = np.sqrt(s2 * np.diag(np.linalg.inv(G)))
    return ols, _t_quantile(alpha, n - d) * se


@functools.lru_cache(maxsize=256)
def _t_quantile(alpha: float, df: int) -> float:
    r""":math:`t_{1-\alpha/2,\,df}`, once per (alpha, df): a public constant of the cell."""
    from scipy import stats  # imported on first use: job start-up (docs/scaling.md)

    return float(stats.t.ppf(1.0 - alpha / 2.0, df))


#: How a cell's trials run: ``"fast"`` (:func:`_trials`: the rows drawn as arrays by
#: :func:`~dpreg.data.regimes.regime_rows`, the columns computed once per cell) or
#: ``"reference"`` (:func:`_trials_reference`: a :class:`~dpreg.data.datasets.Dataset`
#: per trial and one dict per row). The same frame, bit for bit
#: (``tests/unit/test_ci_coverage_study.py``); docs/scaling.md, session 25.
_PATH = "fast"


def _trials(
    P: CICoverageParams,
    estimator: Any,
    hyper: dict[str, Any],
    public: PublicInputs,
    targets: list[str],
    kappa: float,
    *,
    trials: int,
    first_trial: int,
    seed: int,
) -> pd.DataFrame:
    """Run the trials of :func:`run_ci_coverage`, their per-trial results kept as arrays.

    Each trial draws and computes what :func:`_trials_reference` does, in the same order
    from the same generator; the interval bounds, truths and OLS half-widths are stored
    in (trials, ...) arrays and the columns are formed from them once: elementwise
    comparisons and differences, counts over the d coordinates divided by d (what
    ``mean`` of a boolean array computes) and means along the last, contiguous axis
    (numpy's pairwise sum of each row, as ``mean`` of the row).
    """
    n, d, eps, delta = public.n, public.d, public.epsilon, public.delta
    alpha, sigma = float(P.alpha), float(P.sigma)
    budget = ApproxDP(eps, delta)
    n_targets = len(targets)
    data_seeds = np.empty(trials, dtype=np.int64)
    population = np.empty((trials, d))
    empirical = np.empty((trials, d))
    ols_half = np.empty((trials, d))
    spent = np.empty(trials)
    lower = np.empty((trials, n_targets, d))
    upper = np.empty((trials, n_targets, d))
    with warnings.catch_warnings():  # checking coverage is what this study is for
        warnings.simplefilter("ignore", UncheckedRegimeWarning)
        for j in range(trials):
            rng = np.random.default_rng([seed, first_trial + j])
            data_seed = int(rng.integers(2**32))
            data_seeds[j] = data_seed
            theta, X, y = regime_rows(n=n + 1, d=d, sigma=sigma, noise=P.noise, seed=data_seed)
            X, y = X[:n], y[:n]  # the training rows (one held-out row, as the loader's split)
            population[j] = kappa * theta
            empirical[j], ols_half[j] = ols_half_width(X, y, alpha)
            fit = estimator(
                X, y, budget=budget, rng=rng, trials=1, bound_X=1.0, bound_y=1.0, **hyper
            )
            spent[j] = fit.budget_spent.epsilon
            for i, target in enumerate(targets):
                ci = bootstrap_intervals(
                    fit,
                    public=public,
                    rng=rng,
                    alpha=alpha,
                    replicates=int(P.replicates),
                    target=target,
                    interval=P.interval,
                    require_checked=False,
                )
                lower[j, i], upper[j, i] = ci.lower[0], ci.upper[0]
    truth = {"population": population[:, None, :], "empirical": empirical[:, None, :]}
    own = np.empty((trials, n_targets, d), dtype=bool)
    other = np.empty((trials, n_targets, d), dtype=bool)
    for i, target in enumerate(targets):
        mine, theirs = truth[target], truth["population" if target == "empirical" else "empirical"]
        own[:, i] = (lower[:, i] <= mine[:, 0]) & (mine[:, 0] <= upper[:, i])
        other[:, i] = (lower[:, i] <= theirs[:, 0]) & (theirs[:, 0] <= upper[:, i])
    ols_covered = np.abs(empirical - population) <= ols_half

    def per_row(values: np.ndarray) -> np.ndarray:  # one value per (trial, target) row
        return np.repeat(values, n_targets) if values.ndim == 1 else values.reshape(-1)

    return pd.DataFrame(
        {
            "trial": per_row(np.arange(first_trial, first_trial + trials, dtype=np.int64)),
            "seed": np.full(trials * n_targets, seed, dtype=np.uint64),
            "data_seed": per_row(data_seeds),
            "estimator": [P.estimator] * (trials * n_targets),
            "target": list(targets) * trials,
            "n": np.full(trials * n_targets, n, dtype=np.int64),
            "d": np.full(trials * n_targets, d, dtype=np.int64),
            "covered": per_row(np.count_nonzero(own, axis=-1) / d),
            "covered_first": per_row(own[..., 0]),
            "covered_other": per_row(np.count_nonzero(other, axis=-1) / d),
            "length": per_row(np.add.reduce(upper - lower, axis=-1) / d),
            "ols_length": per_row(2.0 * (np.add.reduce(ols_half, axis=-1) / d)),
            "ols_covered": per_row(np.count_nonzero(ols_covered, axis=-1) / d),
            "kappa": np.full(trials * n_targets, kappa),
            "spent_epsilon": per_row(spent),
        }
    )


def _trials_reference(
    P: CICoverageParams,
    estimator: Any,
    hyper: dict[str, Any],
    public: PublicInputs,
    targets: list[str],
    kappa: float,
    *,
    trials: int,
    first_trial: int,
    seed: int,
) -> pd.DataFrame:
    """Run the trials of :func:`run_ci_coverage` one row dict at a time (the reference)."""
    n, d, eps, delta = public.n, public.d, public.epsilon, public.delta
    rows = []
    for j in range(trials):
        trial = first_trial + j
        rng = np.random.default_rng([seed, trial])
        data_seed = int(rng.integers(2**32))
        train, _ = load_regime_split(
            n=n, d=d, n_test=1, sigma=float(P.sigma), noise=P.noise, seed=data_seed
        )
        X, y = train.X, train.y
        truth = {"population": kappa * regime_theta(d=d, seed=data_seed)}
        truth["empirical"], ols_half = ols_half_width(X, y, float(P.alpha))
        fit = estimator(
            X, y, budget=ApproxDP(eps, delta), rng=rng, trials=1, bound_X=1.0, bound_y=1.0,
            **hyper,
        )  # fmt: skip
        ols_cov = np.abs(truth["empirical"] - truth["population"]) <= ols_half
        for target in targets:
            with warnings.catch_warnings():  # checking coverage is what this study is for
                warnings.simplefilter("ignore", UncheckedRegimeWarning)
                ci = bootstrap_intervals(
                    fit,
                    public=public,
                    rng=rng,
                    alpha=float(P.alpha),
                    replicates=int(P.replicates),
                    target=target,
                    interval=P.interval,
                    require_checked=False,
                )
            other = "population" if target == "empirical" else "empirical"
            own = ci.covers(truth[target])[0]
            rows.append(
                {
                    "trial": trial,
                    "seed": np.uint64(seed),
                    "data_seed": data_seed,
                    "estimator": P.estimator,
                    "target": target,
                    "n": n,
                    "d": d,
                    "covered": float(own.mean()),
                    "covered_first": bool(own[0]),
                    "covered_other": float(ci.covers(truth[other])[0].mean()),
                    "length": float(ci.length[0].mean()),
                    "ols_length": float(2.0 * ols_half.mean()),
                    "ols_covered": float(ols_cov.mean()),
                    "kappa": kappa,
                    "spent_epsilon": float(fit.budget_spent.epsilon),
                }
            )
    return pd.DataFrame(rows)


def run_ci_coverage(
    cell: Mapping[str, Any], *, trials: int, first_trial: int, seed: int, data: Dataset | None
) -> pd.DataFrame:
    r"""One row per trial and target: coverage and width of the bootstrap interval.

    Trial ``k`` (global index) draws everything from ``default_rng([seed, k])``: the seed
    of its dataset (``data_seed``), then the release, then the bootstrap. Columns:
    ``trial``, ``seed``, ``data_seed``, ``estimator``, ``target``, ``n``, ``d``,
    ``covered`` (fraction of the d coordinates whose interval covers its target),
    ``covered_first`` (coordinate 0 only: independent across trials), ``covered_other``
    (fraction covering the other target), ``length`` (mean interval length),
    ``ols_length`` and ``ols_covered`` (the non-private OLS t-interval on the population
    target), ``kappa``, ``spent_epsilon`` and the budget columns.
    """
    del data
    P = CICoverageParams.from_cell(cell)
    n, d, eps = int(P.n), int(P.d), float(P.epsilon)
    delta = float(P.delta) if P.delta is not None else 1.0 / n**2
    public = PublicInputs(n=n, d=d, epsilon=eps, delta=delta, bound_X=1.0, bound_y=1.0)
    method = get_method(P.estimator)
    hyper = method.hyperparameters(public)
    wanted = [P.targets] if isinstance(P.targets, str) else list(P.targets)
    targets = [t for t in TARGETS if t in wanted and t in SUPPORTED_TARGETS[P.estimator]]
    if P.estimator == "adassp" and "population" in targets:
        hyper["yty_share"] = float(P.yty_share)
    if P.estimator == "ihm":
        # Every trial draws a fresh dataset, so the certified gradient kernel (built and
        # cached per dataset) never pays for its set-up in T = 3 passes: the reference
        # passes, equal to rounding (docs/scaling.md, issue 18).
        hyper["kernel"] = "rows"
    estimator = get_estimator(method.estimator)
    kappa, _ = population_scale(d, float(P.sigma), P.noise, int(P.population_draws))
    run = _trials if _PATH == "fast" and targets else _trials_reference
    frame = run(
        P, estimator, hyper, public, targets, kappa, trials=trials, first_trial=first_trial,
        seed=seed,
    )  # fmt: skip
    for key, value in budget_columns(
        epsilon=eps, delta=delta, conversion=cell_conversion(cell)
    ).items():
        frame[key] = value
    frame["alpha"] = float(P.alpha)
    frame["interval"] = P.interval
    frame["replicates"] = int(P.replicates)
    return frame


def summarise_ci_coverage(
    runs: pd.DataFrame, references: Sequence[Mapping[str, Any]] = ()
) -> pd.DataFrame:
    r"""Per (estimator, target, n, d, epsilon): coverage with its standard errors, widths.

    ``coverage`` is the mean of ``covered`` over trials (all coordinates);
    ``coverage_se`` its standard error from the spread of the per-trial means (which
    accounts for the dependence between coordinates of one trial);
    ``coverage_se_nominal`` the binomial SE at the nominal level,
    :math:`\sqrt{(1-\alpha)\alpha/(\text{trials}\cdot d)}`; ``z`` is
    ``(coverage - nominal) / max(coverage_se, coverage_se_nominal)``. ``coverage_first``
    and ``coverage_first_se`` are the same for coordinate 0 alone (exactly binomial).
    ``length`` (mean interval length) with ``length_se``, ``ols_length``,
    ``width_ratio`` (= length / ols_length) and ``ols_coverage`` (the non-private OLS
    interval on the population target); ``coverage_other``: the same intervals judged on
    the other target.
    """
    del references
    rows = []
    keys = ["estimator", "target", "n", "d", "epsilon"]
    for (est, target, n, d, eps), g in runs.groupby(keys, sort=True):
        trials = len(g)
        alpha = float(g["alpha"].iloc[0])
        nominal = 1.0 - alpha
        cov = g["covered"].to_numpy(float)
        se = float(cov.std(ddof=1) / math.sqrt(trials)) if trials > 1 else math.nan
        se_nom = math.sqrt(nominal * alpha / (trials * int(d)))
        first = g["covered_first"].to_numpy(float)
        length = g["length"].to_numpy(float)
        mean = float(cov.mean())
        rows.append(
            {
                "estimator": est,
                "target": target,
                "n": int(n),
                "d": int(d),
                "epsilon": float(eps),
                "delta": float(g["delta"].iloc[0]),
                "trials": trials,
                "nominal": nominal,
                "coverage": mean,
                "coverage_se": se,
                "coverage_se_nominal": se_nom,
                "z": (mean - nominal) / max(se, se_nom) if np.isfinite(se) else math.nan,
                "coverage_first": float(first.mean()),
                "coverage_first_se": math.sqrt(
                    max(first.mean() * (1 - first.mean()), 1e-12) / trials
                ),
                "coverage_other": float(g["covered_other"].mean()),
                "length": float(length.mean()),
                "length_se": float(length.std(ddof=1) / math.sqrt(trials))
                if trials > 1
                else math.nan,
                "ols_length": float(g["ols_length"].mean()),
                "width_ratio": float(length.mean() / g["ols_length"].mean()),
                "ols_coverage": float(g["ols_covered"].mean()),
                "kappa": float(g["kappa"].iloc[0]),
                "spent_epsilon": float(g["spent_epsilon"].max()),
                "interval": str(g["interval"].iloc[0]),
                "replicates": int(g["replicates"].iloc[0]),
            }
        )
    return pd.DataFrame(rows)


def _figure(table: pd.DataFrame, *, title: str | None = None) -> Any:
    from dpreg.plotting.ci_coverage import plot_ci_coverage

    return plot_ci_coverage(table, title=title)


CI_COVERAGE = StudyKind(
    name="ci_coverage",
    run=run_ci_coverage,
    summarise=summarise_ci_coverage,
    figure=_figure,
    params=CICoverageParams,
    check_cell=_check_cell,
)
