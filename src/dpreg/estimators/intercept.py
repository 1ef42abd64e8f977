r"""An intercept for every estimator: a public constant column inside the row bound.

None of the papers' estimators fits an intercept: each regresses ``y`` on ``X`` through
the origin. A constant column is the standard way to add one, and for a private
estimator it must be added *inside the public bound*, so that the bound (and with it
every sensitivity and noise scale) stays what the analyst declared. With rows
:math:`\|x_i\| \le B` and a scale :math:`s > 0`, the augmented row is

.. math::

    \tilde x_i = \frac{(x_i, sB)}{\sqrt{1+s^2}}, \qquad \|\tilde x_i\| \le B,

so any estimator called with ``bound_X = B`` on :math:`\tilde X` keeps its guarantee:
the augmentation is a fixed, public, row-by-row map (it reads nothing off the data, and
a neighbouring pair of datasets stays a neighbouring pair under the same relation).
Under **zero-out** this needs the relation's own reading: a record is replaced by the
*null record*, which contributes nothing to the estimator (Kairouz et al. 2021), and the
map sends the null record to the all-zero augmented row, not to :math:`(0, sB)/\sqrt{1+s^2}`.
A record replaced by the feature row :math:`x = 0` with :math:`y = 0` in original units is
a different neighbour: its augmented row is not zero, so for that pair the guarantee is
the replace-one one (for the clipped-gradient methods, twice the zero-out sensitivity).
Add/remove and replace-one pairs are kept as they are. A
fit :math:`\tilde\theta \in \mathbb R^{d+1}` maps back to

.. math::

    \beta = \frac{\tilde\theta_{1..d}}{\sqrt{1+s^2}}, \qquad
    \beta_0 = \frac{sB\,\tilde\theta_{d+1}}{\sqrt{1+s^2}},

with :math:`\tilde x^\top\tilde\theta = x^\top\beta + \beta_0` for every row (post-
processing, so :math:`(\beta, \beta_0)` has the same ``budget_spent``). The price is
the factor :math:`\sqrt{1+s^2}` by which the features shrink (at ``s = 1`` every
coefficient must be :math:`\sqrt2` times larger to fit the same line, which some
estimators pay for in noise or in regularisation); ``s`` trades that against how large
an intercept is cheap to represent (:math:`|\beta_0| \le sB\|\tilde\theta\|/\sqrt{1+s^2}`).
The default ``s = 1`` puts the constant column on the scale of the largest row.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from dpreg._validation import check_matrix, check_positive
from dpreg.results import Fit

__all__ = ["add_intercept_column", "with_intercept", "split_intercept"]


def _check_scale(scale: Any) -> float:
    return float(check_positive(scale, "intercept_scale"))


def add_intercept_column(X: Any, bound_X: float, *, scale: float = 1.0) -> np.ndarray:
    r"""Return the rows :math:`(x_i, sB)/\sqrt{1+s^2}`: same bound ``B``, one more column.

    Parameters
    ----------
    X : array_like, shape (n, d)
        Rows with :math:`\|x_i\| \le` ``bound_X`` (public bound; not checked here, the
        estimator checks the augmented rows against the same bound).
    bound_X : float
        The public row bound :math:`B`.
    scale : float, default 1.0
        :math:`s`: the constant column before normalisation is :math:`sB`.

    Returns
    -------
    ndarray, shape (n, d + 1)

    Examples
    --------
    >>> import numpy as np
    >>> add_intercept_column(np.array([[0.6, 0.8], [0.0, 0.0]]), 1.0)
    array([[0.42426407, 0.56568542, 0.70710678],
           [0.        , 0.        , 0.70710678]])
    """
    X = check_matrix(X, "X")
    bound_X = float(check_positive(bound_X, "bound_X"))
    s = _check_scale(scale)
    norm = math.sqrt(1.0 + s * s)
    out = np.empty((X.shape[0], X.shape[1] + 1))
    out[:, :-1] = X / norm
    out[:, -1] = s * bound_X / norm
    return out


def split_intercept(
    theta: Any, bound_X: float, *, scale: float = 1.0
) -> tuple[np.ndarray, np.ndarray]:
    r"""Map a fit on :func:`add_intercept_column`'s rows back to ``(coef, intercept)``.

    Parameters
    ----------
    theta : array_like, shape (trials, d + 1)
        Fits on the augmented rows.
    bound_X, scale : float
        As given to :func:`add_intercept_column`.

    Returns
    -------
    coef : ndarray, shape (trials, d)
    intercept : ndarray, shape (trials,)

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.6, 0.8], [0.1, -0.2]])
    >>> theta = np.array([[1.0, -2.0, 0.5]])
    >>> coef, b0 = split_intercept(theta, 1.0)
    >>> np.allclose(add_intercept_column(X, 1.0) @ theta[0], X @ coef[0] + b0[0])
    True
    """
    theta = np.asarray(theta, dtype=np.float64)
    if theta.ndim != 2 or theta.shape[1] < 2:
        raise ValueError(f"theta must have shape (trials, d + 1) with d >= 1; got {theta.shape}")
    bound_X = float(check_positive(bound_X, "bound_X"))
    s = _check_scale(scale)
    norm = math.sqrt(1.0 + s * s)
    return theta[:, :-1] / norm, theta[:, -1] * s * bound_X / norm


def with_intercept(
    estimator: Callable[..., Fit],
    X: Any,
    y: Any,
    *,
    bound_X: float,
    intercept_scale: float = 1.0,
    **kwargs: Any,
) -> Fit:
    r"""Fit ``estimator`` with an intercept (module docstring): same bound, same budget.

    Parameters
    ----------
    estimator : callable
        A registered estimator (``X, y, *, bound_X=..., ...``, see
        ``docs/architecture.md``, "The estimator contract").
    X, y : array_like
        Rows with :math:`\|x_i\| \le` ``bound_X`` and the response.
    bound_X : float
        Public row bound, passed on unchanged (the augmented rows satisfy it).
    intercept_scale : float, default 1.0
        :math:`s` of :func:`add_intercept_column`.
    **kwargs
        Everything else the estimator takes (budget, rng, trials, bound_y, ...).

    Returns
    -------
    Fit
        ``theta`` (trials, d) the coefficients, ``intercept`` (trials,); the
        estimator's ``budget_spent``, diagnostics and path (on the augmented rows) kept,
        and ``diagnostics["intercept_scale"]``.

    Examples
    --------
    >>> import numpy as np
    >>> from dpreg.estimators.ols import fit_ols
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-0.5, 0.5, size=(200, 2))
    >>> y = X @ np.array([0.3, -0.2]) + 0.4
    >>> fit = with_intercept(fit_ols, X, y, bound_X=1.0)
    >>> np.round(fit.theta, 6), np.round(fit.intercept, 6)
    (array([[ 0.3, -0.2]]), array([0.4]))
    """
    X_aug = add_intercept_column(X, bound_X, scale=intercept_scale)
    fit = estimator(X_aug, y, bound_X=bound_X, **kwargs)
    coef, intercept = split_intercept(fit.theta, bound_X, scale=intercept_scale)
    return Fit(
        theta=coef,
        budget_spent=fit.budget_spent,
        estimator=fit.estimator,
        path=fit.path,
        diagnostics={**fit.diagnostics, "intercept_scale": float(intercept_scale)},
        nonprivate_diagnostics=dict(fit.nonprivate_diagnostics),
        intercept=intercept,
    )
