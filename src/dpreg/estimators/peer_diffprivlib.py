r"""diffprivlib's ``LinearRegression`` as an external peer of the benchmark (optional).

IBM's diffprivlib (``pip install dpreg[peers]``) is the private linear regression most
users try first. Its ``LinearRegression`` perturbs the coefficients of the least-squares
objective (the functional mechanism of Zhang et al. 2012): with ``fit_intercept=False``
the budget :math:`\varepsilon` is split evenly over :math:`1 + d + d(d+1)/2` Laplace
mechanisms, one per monomial coefficient (:math:`\sum y_i^2`, :math:`\sum x_{ij}y_i`,
:math:`\sum x_{ij}x_{ik}`), each with the sensitivity its per-feature bounds give, and
the noisy objective is minimised. It is **pure** :math:`\varepsilon`-DP (δ = 0) under
replace-one neighbours (its sensitivities are ranges of products), which implies the
zero-out relation the benchmark compares under; at the same ε it is held to a stronger
guarantee than the (ε, δ) methods, and the benchmark labels it so.

Bounds: rows with :math:`\|x_i\| \le B` have every coordinate in :math:`[-B, B]`, so the
peer gets ``bounds_X = (-B, B)`` per feature and ``bounds_y = (-C, C)``: symmetric, where
its known sensitivity defect does not bite. **The defect** (diffprivlib issue #105, open
at version 0.6.6): the sensitivity of each squared term :math:`\sum_i x_{ij}^2` is
computed from the lower bound twice, :math:`\max(|l_j|, |l_j|)^2`, instead of
:math:`\max(|l_j|, |u_j|)^2`; with bounds such as ``(0, 1)`` it is 0, and those terms get
**no noise at all**. ``tests/unit/test_peer_diffprivlib.py`` demonstrates it and checks
that the benchmark's symmetric bounds are unaffected.

The peer is not vectorised (one diffprivlib fit per trial, each with its own seed drawn
from ``rng``) and not part of the estimator registry: it is a comparison, not a dpreg
estimator.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpreg._validation import check_bounded_design
from dpreg.privacy.budgets import ApproxDP, PureDP, check_approx_dp_budget
from dpreg.results import Fit

__all__ = ["PEER_INSTALL_HINT", "diffprivlib_available", "run_diffprivlib_linear_regression"]

PEER_INSTALL_HINT = "diffprivlib is not installed (pip install 'dpreg[peers]')"


def diffprivlib_available() -> bool:
    """Whether diffprivlib can be imported (the optional ``peers`` extra)."""
    try:
        import diffprivlib.models  # noqa: F401
    except ImportError:
        return False
    return True


def run_diffprivlib_linear_regression(
    X: Any,
    y: Any,
    *,
    budget: ApproxDP,
    rng: np.random.Generator,
    trials: int = 1,
    bound_X: float,
    bound_y: float,
) -> Fit:
    r"""Fit diffprivlib's ``LinearRegression`` (no intercept) ``trials`` times.

    Parameters
    ----------
    X, y : array_like
        Rows with :math:`\|x_i\| \le` ``bound_X`` and :math:`|y_i| \le` ``bound_y``.
    budget : ApproxDP
        Only its epsilon is used: the peer is pure epsilon-DP (its ``budget_spent`` is
        a :class:`~dpreg.privacy.budgets.PureDP`).
    rng : numpy.random.Generator
        Seeds of the trials' fits (diffprivlib draws from its own ``RandomState``).
    trials : int
        Independent fits (a Python loop: diffprivlib is not vectorised).
    bound_X, bound_y : float
        Public bounds; each feature gets ``(-bound_X, bound_X)``, ``y`` gets
        ``(-bound_y, bound_y)``.

    Returns
    -------
    Fit
        ``theta`` (trials, d), ``budget_spent = PureDP(epsilon)``, estimator
        ``"diffprivlib_linear_regression"``, diagnostics ``mechanisms`` (the number of
        Laplace mechanisms the budget is split over) and ``pure_dp = True``.

    Raises
    ------
    ImportError
        If diffprivlib is not installed.
    """
    if not diffprivlib_available():
        raise ImportError(PEER_INSTALL_HINT)
    from diffprivlib.accountant import BudgetAccountant
    from diffprivlib.models import LinearRegression

    epsilon, _ = check_approx_dp_budget(budget)
    X, y, trials, rng = check_bounded_design(
        X, y, bound_X=bound_X, bound_y=bound_y, trials=trials, rng=rng
    )
    d = X.shape[1]
    seeds = rng.integers(0, 2**31 - 1, size=trials)
    theta = np.empty((trials, d))
    for t, seed in enumerate(seeds):
        model = LinearRegression(
            epsilon=epsilon,
            bounds_X=(-float(bound_X) * np.ones(d), float(bound_X) * np.ones(d)),
            bounds_y=(-float(bound_y), float(bound_y)),
            fit_intercept=False,
            random_state=int(seed),
            accountant=BudgetAccountant(),
        )
        theta[t] = np.ravel(model.fit(X, y).coef_)
    return Fit(
        theta=theta,
        budget_spent=PureDP(epsilon),
        estimator="diffprivlib_linear_regression",
        diagnostics={"mechanisms": 1 + d + d * (d + 1) // 2, "pure_dp": True},
    )
