r"""Confidence intervals for the empirical minimiser from private gradient descent.

Brown et al. (2024), §3: run DP-GD (Algorithm 1) so that the whole construction is
rho-zCDP, build m estimates by independent runs, checkpoints or batched means
(:mod:`dpreg.inference.constructions`) and form the t-interval of eq. (12)
(:mod:`dpreg.inference.intervals`). The intervals are for the empirical minimiser
:math:`\hat\theta_j` (OLS) when no gradient is clipped, and for the minimiser
:math:`\hat\theta_{\gamma,j}` of the Huber objective that clipping optimises otherwise
(§1.3, §2.5). They use only released iterates, so they cost no extra budget.

*Budget.* The privacy budget covers every noisy step of the construction
(docs/notes/brown2024.md §8 item 3): m runs of :math:`T = \lfloor N/m\rfloor` steps or one
run of N steps, with :math:`\lambda^2 = 2N\gamma^2/(\rho n^2)` (Lemma 2.1 with T replaced by
the total N). Giving each of m independent runs the full rho would spend m rho.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpreg._validation import check_positive, check_probability
from dpreg.estimators.dpgd import fit_dp_gd
from dpreg.inference.constructions import (
    METHODS,
    RUN_ESTIMATES,
    batch_windows,
    batched_means_estimates,
    checkpoint_estimates,
    checkpoint_indices,
    independent_runs_estimates,
)
from dpreg.inference.intervals import ConfidenceIntervals, t_interval, t_quantile
from dpreg.privacy.budgets import ZCDP, ApproxDP

__all__ = ["dp_gd_confidence_intervals", "intervals_from_path", "intervals_from_runs"]


def _check_int(value: Any, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {value!r}")
    return int(value)


def intervals_from_path(
    path: np.ndarray,
    *,
    method: str,
    m: int = 10,
    burn_in: int = 20,
    alpha: float = 0.05,
    metadata: dict[str, Any] | None = None,
) -> ConfidenceIntervals:
    """Checkpoint or batched-means intervals from single runs ``path (trials, N + 1, d)``.

    Pure post-processing of released iterates (no privacy cost); see
    :mod:`dpreg.inference.constructions` for the indices.
    """
    N = path.shape[-2] - 1
    if method == "checkpoints":
        est = checkpoint_estimates(path, m, burn_in)
        used: dict[str, Any] = {"checkpoints": checkpoint_indices(N, m, burn_in).tolist()}
    elif method == "batched_means":
        est = batched_means_estimates(path, m, burn_in)
        first, L = batch_windows(N, m, burn_in)
        used = {"batch_first": first, "batch_length": L}
    else:
        raise ValueError(f"method must be 'checkpoints' or 'batched_means'; got {method!r}")
    return _assemble(est, method, m, burn_in, alpha, {"iterates": used, **(metadata or {})})


def intervals_from_runs(
    paths: np.ndarray,
    *,
    burn_in: int = 20,
    alpha: float = 0.05,
    run_estimate: str = "final",
    metadata: dict[str, Any] | None = None,
) -> ConfidenceIntervals:
    """Independent-runs intervals from ``paths (trials, m, T + 1, d)``."""
    m = paths.shape[-3]
    est = independent_runs_estimates(paths, burn_in, run_estimate)
    T = paths.shape[-2] - 1
    used = {"final": T} if run_estimate == "final" else {"first": burn_in + 1, "last": T}
    meta = {"iterates": used, "run_estimate": run_estimate, **(metadata or {})}
    return _assemble(est, "independent_runs", m, burn_in, alpha, meta)


def _assemble(
    est: np.ndarray, method: str, m: int, burn_in: int, alpha: float, meta: dict[str, Any]
) -> ConfidenceIntervals:
    center, half = t_interval(est, alpha)
    metadata = {
        "m": m,
        "burn_in": burn_in,
        "alpha": alpha,
        "df": m - 1,
        "t_quantile": t_quantile(alpha, m),
        **meta,
    }
    return ConfidenceIntervals(
        lower=center - half,
        upper=center + half,
        center=center,
        half_width=half,
        estimates=est,
        method=method,
        metadata=metadata,
    )


def dp_gd_confidence_intervals(
    X: np.ndarray,
    y: np.ndarray,
    *,
    budget: ZCDP | ApproxDP,
    rng: np.random.Generator,
    method: str,
    total_steps: int,
    clip: float,
    step: float,
    m: int = 10,
    burn_in: int = 20,
    alpha: float = 0.05,
    run_estimate: str = "final",
    trials: int = 1,
    theta0: np.ndarray | None = None,
    bound_X: float | None = None,
    bound_y: float | None = None,
    conversion: str = "simple",
    kernel: str = "fast",
) -> ConfidenceIntervals:
    r"""Private per-coordinate confidence intervals from DP-GD (Brown et al. 2024, §3).

    Parameters
    ----------
    X : array_like, shape (n, d)
    y : array_like, shape (n,)
    budget : ZCDP or ApproxDP
        Budget of the *whole* construction (all ``total_steps`` noisy steps).
    rng : numpy.random.Generator
    method : {"independent_runs", "checkpoints", "batched_means"}
        The construction (§3.1). Theorem 3.1 proves coverage
        :math:`\ge 1 - \alpha - \beta` for the first two (final iterates, burn-in 0,
        no clipping, T large enough); batched means is the paper's heuristic.
    total_steps : int
        N, the total number of noisy gradient steps (the x-axis of Figures 5, 6, 10,
        11). Independent runs use m runs of :math:`\lfloor N/m\rfloor` steps.
    clip : float
        :math:`\gamma` (e.g. :math:`5\sqrt p`).
    step : float
        :math:`\eta`.
    m : int, default 10
        Number of runs / checkpoints / batches (the t-interval has m - 1 df).
    burn_in : int, default 20
        Iterates discarded at the start of each run (App. B uses 20). Use 0 with
        ``run_estimate="final"`` for the exact constructions of Theorem 3.1.
    alpha : float, default 0.05
        Nominal miscoverage.
    run_estimate : {"final", "post_burn_in_mean"}, default "final"
        Independent runs only: the run's final iterate (Theorem 3.1) or the mean of
        its post-burn-in iterates (the experiments' practical variant).
    trials : int, default 1
        Independent repetitions of the whole construction, vectorised.
    theta0 : array_like, shape (d,), optional
        Initial point (default 0).
    bound_X, bound_y : float or None
        Public data bounds to check (default none: gradient clipping needs none).
    conversion : {"simple", "tight"}
        zCDP conversion for ``ApproxDP`` budgets (see :func:`fit_dp_gd`).
    kernel : {"rows", "fast"}, default "fast"
        Gradient evaluation of :func:`~dpreg.estimators.dpgd.dp_gd_path`.

    Returns
    -------
    ConfidenceIntervals
        ``(trials, d)`` bounds; ``metadata`` as documented there, with
        ``budget_spent`` the zCDP of the whole construction (m runs compose).

    Raises
    ------
    ValueError
        Unknown method or run estimate, ``m < 2``, ``alpha`` outside (0, 1), too few
        steps for the burn-in, and every error of :func:`fit_dp_gd`.

    Examples
    --------
    >>> import numpy as np
    >>> from dpreg import ZCDP
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(2000, 2))
    >>> y = X @ np.array([1.0, -1.0]) + rng.normal(size=2000)
    >>> ci = dp_gd_confidence_intervals(X, y, budget=ZCDP(1.0), rng=rng, method='independent_runs',
    ...                                 total_steps=400, clip=10.0, step=0.5, m=10)
    >>> ci.lower.shape, bool(np.all(ci.lower < ci.upper))
    ((1, 2), True)
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}; got {method!r}")
    if run_estimate not in RUN_ESTIMATES:
        raise ValueError(f"run_estimate must be one of {RUN_ESTIMATES}; got {run_estimate!r}")
    total_steps = _check_int(total_steps, "total_steps", 1)
    m = _check_int(m, "m", 2)
    burn_in = _check_int(burn_in, "burn_in", 0)
    trials = _check_int(trials, "trials", 1)
    alpha = check_probability(alpha, "alpha")
    check_positive(clip, "clip", allow_inf=True)
    common = dict(
        budget=budget,
        rng=rng,
        step=step,
        clip=clip,
        theta0=theta0,
        bound_X=bound_X,
        bound_y=bound_y,
        conversion=conversion,
        return_path=True,
        kernel=kernel,
    )
    if method == "independent_runs":
        T = total_steps // m
        if T < 1 or (run_estimate == "post_burn_in_mean" and T <= burn_in):
            raise ValueError(
                f"independent runs of total_steps // m = {T} steps leave no iterate after"
                f" burn_in={burn_in}; increase total_steps or lower m or burn_in"
            )
        fit = fit_dp_gd(X, y, trials=trials * m, T=T, accounting_steps=m * T, **common)
        d = fit.theta.shape[1]
        paths = fit.path.reshape(trials, m, T + 1, d)
        clip_frac = fit.nonprivate_diagnostics["clip_fraction"].reshape(trials, m * T).mean(axis=1)
        spent = ZCDP(m * fit.budget_spent.rho)
        meta = _meta(fit, spent, clip_frac, total_steps=m * T, steps_per_run=T)
        meta["proven"] = run_estimate == "final"
        return intervals_from_runs(
            paths, burn_in=burn_in, alpha=alpha, run_estimate=run_estimate, metadata=meta
        )
    checkpoint_indices(total_steps, m, burn_in)  # validates the spacing before running
    fit = fit_dp_gd(X, y, trials=trials, T=total_steps, **common)
    clip_frac = fit.nonprivate_diagnostics["clip_fraction"].mean(axis=1)
    meta = _meta(
        fit, fit.budget_spent, clip_frac, total_steps=total_steps, steps_per_run=total_steps
    )
    meta["proven"] = method == "checkpoints"
    return intervals_from_path(
        fit.path, method=method, m=m, burn_in=burn_in, alpha=alpha, metadata=meta
    )


def _meta(
    fit: Any, spent: ZCDP, clip_frac: np.ndarray, *, total_steps: int, steps_per_run: int
) -> dict[str, Any]:
    return {
        "total_steps": total_steps,
        "steps_per_run": steps_per_run,
        "noise_std": fit.diagnostics["noise_std"],
        "clip": fit.diagnostics["clip"],
        "step": fit.diagnostics["step"],
        "budget_spent": spent,
        "clip_fraction": clip_frac,
        "target": (
            "empirical minimiser (OLS) if no gradient is clipped; minimiser of the Huber"
            " objective of the clipped loss otherwise (Brown et al. 2024, Sec. 2.5)"
        ),
    }
