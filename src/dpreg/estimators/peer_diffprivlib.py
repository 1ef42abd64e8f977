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

**Two implementations** (``impl``). ``"library"`` runs diffprivlib itself, one fit per
trial; it builds one mechanism object per monomial coefficient, which costs about
0.1 s per fit at d = 128 in Python overhead. ``"vectorised"`` (the default) is dpreg's
own implementation of the same mechanism at the symmetric bounds: the same
sensitivities (:func:`functional_mechanism_scales`), the same even split of ε, the same
noise (diffprivlib's Laplace sampler from four uniforms, Holohan & Braghin 2021, drawn
from a ``numpy.random.RandomState`` seeded as the library seeds it, in the library's
order of mechanisms, all of them in one array operation), the same folding of the
squared terms onto :math:`[0, \infty)`, and the same minimisation of the noisy objective
(``scipy.optimize.minimize`` from zero with the analytic gradient, the library's
objective evaluated with the library's arithmetic). Given a seed, the two return the
same fit; ``tests/unit/test_peer_diffprivlib.py`` checks the scales against the
library's mechanisms, the noisy coefficients and fits against the library's seed by
seed, and the laws of the two with independent seeds.

**The minimisation** (``kernel``). ``"auto"`` (the default) runs scipy's BFGS compiled
(:func:`dpreg.estimators.peer_bfgs_kernel.minimise_compiled`: scipy's algorithm, line
searches and memoisation with scipy's and numpy's arithmetic, numpy's own BLAS included),
which returns scipy's point bit for bit, or declines (a value that is not finite, numpy
not built on its usual OpenBLAS) and then scipy runs; ``"scipy"`` always calls
``scipy.optimize.minimize``, the reference. Same coefficients, same fit
(``tests/unit/test_peer_bfgs_kernel.py``); 5-40x less CPU per fit, 17x summed over the
benchmark's datasets (docs/scaling.md).

The peer is not part of the estimator registry: it is a comparison, not a dpreg
estimator. Its trials are a Python loop (one minimisation per trial).
"""

from __future__ import annotations

import importlib.util
from typing import Any

import numpy as np

from dpreg._validation import check_bounded_design
from dpreg.estimators.peer_bfgs_kernel import minimise_compiled
from dpreg.privacy.budgets import ApproxDP, PureDP, check_approx_dp_budget
from dpreg.results import Fit

__all__ = [
    "PEER_IMPLEMENTATIONS",
    "PEER_INSTALL_HINT",
    "PEER_KERNELS",
    "diffprivlib_available",
    "functional_mechanism_scales",
    "run_diffprivlib_linear_regression",
]

PEER_INSTALL_HINT = "diffprivlib is not installed (pip install 'dpreg[peers]')"
PEER_IMPLEMENTATIONS = ("vectorised", "library")
PEER_KERNELS = ("auto", "scipy")


def diffprivlib_available() -> bool:
    """Whether diffprivlib is installed (the optional ``peers`` extra).

    Looked up, not imported: importing it loads scikit-learn (about 1 s of CPU, in every
    benchmark job), and the default ``"vectorised"`` implementation never imports it.
    ``impl="library"`` imports it, and raises the ``ImportError`` of a broken install.
    """
    try:
        return importlib.util.find_spec("diffprivlib") is not None
    except (ImportError, ValueError):  # a parent package missing; a module without spec
        return False


def functional_mechanism_scales(
    d: int, epsilon: float, bound_X: float, bound_y: float
) -> tuple[np.ndarray, np.ndarray]:
    r"""Laplace scales of diffprivlib's functional mechanism at bounds (-B, B), (-C, C).

    The budget is split evenly, :math:`\varepsilon_0 = \varepsilon / (1 + d + d(d+1)/2)`,
    over the monomial coefficients in the library's order: :math:`\sum_i y_i^2`
    (sensitivity :math:`C^2`), then :math:`\sum_i x_{ij} y_i` for each j (the range of
    the product, :math:`2BC`), then for each j the square :math:`\sum_i x_{ij}^2`
    (:math:`B^2`) followed by the cross terms :math:`\sum_i x_{ij} x_{ik}`, k > j
    (:math:`2B^2`). The squared terms are released through the folded mechanism (noisy
    value reflected onto :math:`[0, \infty)`).

    Parameters
    ----------
    d : int
        Number of features.
    epsilon : float
        The whole budget (pure ε-DP).
    bound_X, bound_y : float
        The bounds B and C.

    Returns
    -------
    scales : numpy.ndarray
        Shape ``(1 + d + d(d+1)/2,)``: sensitivity / :math:`\varepsilon_0`, in order.
    folded : numpy.ndarray of bool
        Which coefficients are folded (the squares).

    Examples
    --------
    >>> scales, folded = functional_mechanism_scales(2, 6.0, 1.0, 1.0)
    >>> scales.tolist(), folded.tolist()
    ([1.0, 2.0, 2.0, 1.0, 2.0, 1.0], [True, False, False, True, False, True])
    """
    B, C = float(bound_X), float(bound_y)
    local_epsilon = epsilon / (1 + d + d * (d + 1) / 2)
    rows, cols = np.triu_indices(d)
    squares = rows == cols
    sensitivity = np.concatenate(
        [[C**2], np.full(d, 2.0 * B * C), np.where(squares, B**2, 2.0 * B**2)]
    )
    folded = np.concatenate([[True], np.zeros(d, dtype=bool), squares])
    return sensitivity / local_epsilon, folded


def _monomial_coefficients(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    r"""Compute the exact monomial coefficients of the least-squares objective.

    :math:`\sum_i y_i^2`, :math:`\sum_i x_{ij} y_i`, :math:`\sum_i x_{ij} x_{ik}` (k >= j), in
    the library's order and with its arithmetic (``numpy.einsum``); data-only, so
    computed once for all trials.
    """
    rows, cols = np.triu_indices(X.shape[1])
    y2 = y.reshape(-1, 1)
    gram = np.einsum("ij,ik", X, X)
    return np.concatenate(
        [(y2**2).sum(axis=0), np.einsum("ij,ik->jk", X, y2)[:, 0], gram[rows, cols]]
    )


def _noisy_coefficients(
    values: np.ndarray, d: int, seed: int, scales: np.ndarray, folded: np.ndarray
) -> tuple[np.float64, np.ndarray, np.ndarray]:
    """One trial's noisy monomial coefficients, drawn as diffprivlib draws them."""
    u = np.random.RandomState(seed).random(4 * values.size).reshape(-1, 4)
    laplace = np.log(1 - u[:, 0]) * np.cos(np.pi * u[:, 1]) + np.log(1 - u[:, 2]) * np.cos(
        np.pi * u[:, 3]
    )
    noisy = values - scales * laplace
    noisy = np.where(folded, np.abs(noisy), noisy)
    rows, cols = np.triu_indices(d)
    quadratic = np.zeros((d, d))
    quadratic[rows, cols] = noisy[1 + d :]
    quadratic[cols, rows] = noisy[1 + d :]
    return noisy[0], noisy[1 : 1 + d], quadratic


def _minimise_noisy_objective(c0: Any, c1: np.ndarray, c2: np.ndarray) -> np.ndarray:
    r"""Minimise :math:`c_0 - 2 c_1^\top w + w^\top c_2 w` as diffprivlib does (BFGS from 0)."""
    from scipy.optimize import minimize  # lazy: job start-up (docs/scaling.md)

    def objective(omega: np.ndarray) -> tuple[Any, np.ndarray]:
        value = c0
        value -= 2 * np.dot(c1, omega)
        value += np.multiply(c2, np.multiply.outer(omega, omega)).sum()
        value += 0 * (omega**2).sum()
        grad = -2 * c1 + 2 * np.matmul(c2, omega) + 2 * omega * 0
        return value, grad

    return minimize(objective, np.zeros(c1.size), jac=True).x


def _minimise(c0: Any, c1: np.ndarray, c2: np.ndarray, kernel: str) -> np.ndarray:
    """Minimise as the library does: compiled where that claims scipy's bits, else scipy."""
    if kernel == "auto":
        w = minimise_compiled(c0, c1, c2)
        if w is not None:
            return w
    return _minimise_noisy_objective(c0, c1, c2)


def run_diffprivlib_linear_regression(
    X: Any,
    y: Any,
    *,
    budget: ApproxDP,
    rng: np.random.Generator,
    trials: int = 1,
    bound_X: float,
    bound_y: float,
    impl: str = "vectorised",
    kernel: str = "auto",
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
        Seeds of the trials' fits (each fit draws from a ``RandomState`` with its seed).
    trials : int
        Independent fits (a Python loop over the minimisations).
    bound_X, bound_y : float
        Public bounds; each feature gets ``(-bound_X, bound_X)``, ``y`` gets
        ``(-bound_y, bound_y)``.
    impl : {"vectorised", "library"}
        ``"vectorised"`` (default): dpreg's implementation of the library's mechanism
        (module docstring), which needs neither diffprivlib nor its per-coefficient
        objects; ``"library"``: diffprivlib's ``LinearRegression`` itself, the
        reference. Same seed, same fit.
    kernel : {"auto", "scipy"}
        The vectorised implementation's minimisation: ``"auto"`` (default) scipy's BFGS
        compiled, bit for bit (scipy itself where the compiled replica declines);
        ``"scipy"``: ``scipy.optimize.minimize``, the reference. Same fit.

    Returns
    -------
    Fit
        ``theta`` (trials, d), ``budget_spent = PureDP(epsilon)``, estimator
        ``"diffprivlib_linear_regression"``, diagnostics ``mechanisms`` (the number of
        Laplace mechanisms the budget is split over) and ``pure_dp = True``.

    Raises
    ------
    ImportError
        If ``impl="library"`` and diffprivlib is not installed.
    ValueError
        If ``impl`` is not one of :data:`PEER_IMPLEMENTATIONS` or ``kernel`` not one of
        :data:`PEER_KERNELS`.

    Examples
    --------
    >>> import numpy as np
    >>> from dpreg.privacy.budgets import ApproxDP
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-0.5, 0.5, size=(2000, 2))
    >>> y = np.clip(X @ np.array([1.0, -1.0]), -1, 1)
    >>> fit = run_diffprivlib_linear_regression(
    ...     X, y, budget=ApproxDP(10.0, 1e-6), rng=rng, trials=3, bound_X=1.0, bound_y=1.0)
    >>> fit.theta.shape, fit.diagnostics["mechanisms"], fit.budget_spent.epsilon
    ((3, 2), 6, 10.0)
    """
    if impl not in PEER_IMPLEMENTATIONS:
        raise ValueError(f"impl must be one of {PEER_IMPLEMENTATIONS}, got {impl!r}")
    if kernel not in PEER_KERNELS:
        raise ValueError(f"kernel must be one of {PEER_KERNELS}, got {kernel!r}")
    if impl == "library" and not diffprivlib_available():
        raise ImportError(PEER_INSTALL_HINT)
    epsilon, _ = check_approx_dp_budget(budget)
    X, y, trials, rng = check_bounded_design(
        X, y, bound_X=bound_X, bound_y=bound_y, trials=trials, rng=rng
    )
    d = X.shape[1]
    seeds = rng.integers(0, 2**31 - 1, size=trials)
    if impl == "library":
        theta = _library_fits(X, y, seeds, epsilon, bound_X, bound_y)
    else:
        X = np.array(X, dtype=float)
        y = np.asarray(y, dtype=float)
        scales, folded = functional_mechanism_scales(d, epsilon, bound_X, bound_y)
        values = _monomial_coefficients(X, y)
        theta = np.empty((trials, d))
        for t, seed in enumerate(seeds):
            c0, c1, c2 = _noisy_coefficients(values, d, int(seed), scales, folded)
            theta[t] = _minimise(c0, c1, c2, kernel)
    return Fit(
        theta=theta,
        budget_spent=PureDP(epsilon),
        estimator="diffprivlib_linear_regression",
        diagnostics={"mechanisms": 1 + d + d * (d + 1) // 2, "pure_dp": True},
    )


def _library_fits(
    X: np.ndarray, y: np.ndarray, seeds: np.ndarray, epsilon: float, bound_X: float, bound_y: float
) -> np.ndarray:
    """Run the reference: one diffprivlib ``LinearRegression`` fit per seed."""
    from diffprivlib.accountant import BudgetAccountant
    from diffprivlib.models import LinearRegression

    d = X.shape[1]
    theta = np.empty((seeds.size, d))
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
    return theta
