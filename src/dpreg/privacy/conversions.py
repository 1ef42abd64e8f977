"""Conversions between rho-zCDP and (epsilon, delta)-DP, and composition of budgets.

Two conversions from zCDP to approximate DP are offered, named by the constants in
:data:`CONVERSIONS` so that every result row can record which one was used:

``"simple"``
    Bun & Steinke (2016), "Concentrated Differential Privacy: Simplifications,
    Extensions, and Lower Bounds", Proposition 1.3:
    ``epsilon = rho + 2 * sqrt(rho * log(1/delta))``.
``"tight"`` (the default, :data:`DEFAULT_CONVERSION`)
    Canonne, Kamath & Steinke (2020), "The Discrete Gaussian for Differential
    Privacy", Proposition 12 / Corollary 13: a rho-zCDP mechanism is RDP of order
    ``alpha`` with ``alpha * rho`` for every ``alpha > 1``, hence
    (epsilon, delta)-DP with::

        epsilon = inf_{alpha > 1}  rho * alpha
                  + (log(1/delta) + (alpha - 1) * log(1 - 1/alpha) - log(alpha)) / (alpha - 1).

    It is never larger than the simple bound (we return the minimum of both, so
    ``tight <= simple`` holds exactly in floating point).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from dpreg._validation import check_choice, check_positive, check_probability
from dpreg.privacy._bounded_min import minimize_bounded
from dpreg.privacy.budgets import ZCDP, ApproxDP, Budget, check_budget

__all__ = [
    "CONVERSIONS",
    "DEFAULT_CONVERSION",
    "SIMPLE",
    "TIGHT",
    "approx_dp_to_zcdp",
    "compose",
    "eps_to_zcdp",
    "zcdp_to_approx_dp",
    "zcdp_to_eps",
]

SIMPLE = "simple"
"""Name of the Bun & Steinke (2016, Prop. 1.3) conversion."""

TIGHT = "tight"
"""Name of the Canonne, Kamath & Steinke (2020, Prop. 12 / Cor. 13) conversion."""

CONVERSIONS: tuple[str, ...] = (SIMPLE, TIGHT)
"""All conversion names accepted by the ``method`` argument."""

DEFAULT_CONVERSION = TIGHT
"""The conversion the pipeline uses unless configured otherwise."""

# Search range for t = log(alpha - 1) in the tight conversion.  The optimum sits near
# alpha - 1 ~ sqrt(log(1/delta) / rho): for rho in [1e-8, 1e4] and delta in
# [1e-300, 1 - 1e-16] that is t in about [-37, +11], well inside [-45, 45].
_MAX_DOUBLINGS = 2100  # more doublings than float64 has exponents: a bracket or an error
_T_LO, _T_HI = -45.0, 45.0
_T_GRID = np.linspace(_T_LO, _T_HI, 361)


def _tight_objective(t: np.ndarray | float, rho: float, log_inv_delta: float) -> np.ndarray:
    """CKS (2020, Cor. 13) epsilon at order alpha = 1 + exp(t), computed stably.

    With u = alpha - 1: log(alpha) = log1p(u) and log(1 - 1/alpha) = t - log1p(u).
    """
    t = np.asarray(t, dtype=np.float64)
    u = np.exp(t)
    log_alpha = np.log1p(u)
    with np.errstate(over="ignore"):  # huge rho * alpha is +inf: never the minimum
        return rho * (1.0 + u) + (log_inv_delta - log_alpha) / u + (t - log_alpha)


def _simple_eps(rho: float, log_inv_delta: float) -> float:
    return rho + 2.0 * math.sqrt(rho * log_inv_delta)


def _tight_eps(rho: float, log_inv_delta: float) -> float:
    # Coarse global scan (robust if the objective were not unimodal in t), then a
    # bounded Brent refinement between the neighbours of the best grid point.
    values = _tight_objective(_T_GRID, rho, log_inv_delta)
    k = int(np.argmin(values))
    lo = _T_GRID[max(k - 1, 0)]
    hi = _T_GRID[min(k + 1, _T_GRID.size - 1)]
    _, fun = minimize_bounded(  # scipy's bounded Brent search, bit for bit
        lambda t: float(_tight_objective(t, rho, log_inv_delta)), lo, hi, xatol=1e-12, maxiter=500
    )
    best = min(float(values[k]), fun)
    return min(best, _simple_eps(rho, log_inv_delta))


def zcdp_to_eps(rho: float, delta: float, method: str = DEFAULT_CONVERSION) -> float:
    """Epsilon of a rho-zCDP guarantee at a given delta.

    Parameters
    ----------
    rho : float
        zCDP parameter, > 0 (``math.inf`` gives ``math.inf``).
    delta : float
        Target delta in (0, 1).
    method : {"tight", "simple"}
        ``"simple"``: Bun & Steinke (2016), Proposition 1.3,
        ``rho + 2 sqrt(rho log(1/delta))``.
        ``"tight"``: Canonne, Kamath & Steinke (2020), Proposition 12 / Corollary 13,
        ``inf_{alpha>1} rho alpha + (log(1/delta) + (alpha-1) log(1-1/alpha)
        - log(alpha)) / (alpha-1)``, optimised numerically over alpha (and never
        larger than the simple value).

    Returns
    -------
    float
        The epsilon, clipped below at 0.  (For tiny ``rho`` and ``delta`` close to 1
        the tight bound can drop below zero; such a mechanism is (0, delta)-DP.)

    Raises
    ------
    ValueError
        If ``rho <= 0``, ``delta`` is outside (0, 1), either is NaN, or ``method`` is
        not one of :data:`CONVERSIONS`.

    Examples
    --------
    >>> round(zcdp_to_eps(0.5, 1e-6), 4)
    5.2215
    >>> round(zcdp_to_eps(0.5, 1e-6, 'simple'), 4)
    5.7565
    """
    rho = check_positive(rho, "rho", allow_inf=True)
    delta = check_probability(delta, "delta")
    check_choice(method, "method", CONVERSIONS)
    if math.isinf(rho):
        return math.inf
    log_inv_delta = -math.log(delta)
    if method == SIMPLE:
        eps = _simple_eps(rho, log_inv_delta)
    else:
        eps = _tight_eps(rho, log_inv_delta)
    return max(eps, 0.0)


def eps_to_zcdp(epsilon: float, delta: float, method: str = DEFAULT_CONVERSION) -> float:
    """Largest rho whose rho-zCDP guarantee converts to at most ``epsilon`` at ``delta``.

    The inverse of :func:`zcdp_to_eps` (which is strictly increasing in rho). Use it
    to calibrate a zCDP mechanism to an (epsilon, delta) target: a rho-zCDP mechanism
    with this rho is (epsilon, delta)-DP. It is not an implication the other way:
    (epsilon, delta)-DP does not imply rho-zCDP.

    Parameters
    ----------
    epsilon : float
        Target epsilon, > 0 (``math.inf`` gives ``math.inf``).
    delta : float
        Target delta in (0, 1).
    method : {"tight", "simple"}
        ``"simple"``: closed-form inverse of Bun & Steinke (2016), Proposition 1.3,
        ``sqrt(rho) = sqrt(epsilon + log(1/delta)) - sqrt(log(1/delta))``.
        ``"tight"``: root of Canonne, Kamath & Steinke (2020), Corollary 13, found with
        :func:`scipy.optimize.brentq` (bracketed below by the simple value).

    Returns
    -------
    float
        rho > 0 with ``zcdp_to_eps(rho, delta, method) <= epsilon`` (up to the root
        finder's relative tolerance of about 1e-15).

    Raises
    ------
    ValueError
        If ``epsilon <= 0``, ``delta`` is outside (0, 1), either is NaN, or ``method``
        is unknown.

    Examples
    --------
    >>> rho = eps_to_zcdp(1.0, 1e-6)
    >>> round(rho, 5)
    0.02436
    >>> round(zcdp_to_eps(rho, 1e-6), 6)
    1.0
    """
    epsilon = check_positive(epsilon, "epsilon", allow_inf=True)
    delta = check_probability(delta, "delta")
    check_choice(method, "method", CONVERSIONS)
    if math.isinf(epsilon):
        return math.inf
    log_inv_delta = -math.log(delta)
    # sqrt(eps + L) - sqrt(L) written without cancellation.
    sqrt_rho = epsilon / (math.sqrt(epsilon + log_inv_delta) + math.sqrt(log_inv_delta))
    rho_simple = sqrt_rho * sqrt_rho
    if method == SIMPLE:
        if not (rho_simple > 0.0 and math.isfinite(rho_simple)):
            raise ValueError(
                f"epsilon={epsilon!r} at delta={delta!r} is outside what float64 can"
                f" calibrate (rho = {rho_simple!r} underflows); use epsilon >= 1e-150"
            )
        return rho_simple
    return _tight_rho(float(epsilon), float(delta), rho_simple)


@functools.lru_cache(maxsize=4096)  # pure in its (public) arguments; studies call it per cell
def _tight_rho(epsilon: float, delta: float, rho_simple: float) -> float:
    """Return the tight root of :func:`eps_to_zcdp` (validated arguments; memoised)."""
    log_inv_delta = -math.log(delta)
    # The tight bound is <= 0 below rho ~ 1.4 delta^2, so rho stays representable even
    # when the simple value underflows: start the bracket at the smallest normal rho.
    rho_simple = max(rho_simple, 1e-300)

    def gap(rho: float) -> float:
        return _tight_eps(rho, log_inv_delta) - epsilon

    lo = rho_simple  # tight <= simple, so gap(lo) <= 0
    if gap(lo) >= 0.0:
        return lo
    hi = 2.0 * lo
    for _ in range(_MAX_DOUBLINGS):
        if gap(hi) > 0.0:
            break
        lo, hi = hi, 2.0 * hi
    else:  # pragma: no cover - tight >= simple/4 for every rho, so 2 doublings suffice
        raise ValueError(f"eps_to_zcdp: no bracket found for epsilon={epsilon!r}")
    from scipy import optimize

    return float(optimize.brentq(gap, lo, hi, xtol=1e-300, rtol=4 * np.finfo(float).eps))


def zcdp_to_approx_dp(budget: ZCDP, delta: float, method: str = DEFAULT_CONVERSION) -> ApproxDP:
    """Convert a :class:`ZCDP` budget to an :class:`ApproxDP` budget at ``delta``.

    Parameters
    ----------
    budget : ZCDP
        The rho-zCDP guarantee.
    delta : float
        Target delta in (0, 1).
    method : {"tight", "simple"}
        Conversion, see :func:`zcdp_to_eps` (Canonne, Kamath & Steinke 2020, Cor. 13;
        Bun & Steinke 2016, Prop. 1.3).

    Returns
    -------
    ApproxDP
        ``ApproxDP(zcdp_to_eps(budget.rho, delta, method), delta)``.

    Raises
    ------
    TypeError
        If ``budget`` is not a :class:`ZCDP`.
    ValueError
        For a bad ``delta``/``method``, or if the converted epsilon is 0 (``delta`` so
        large that the guarantee is (0, delta)-DP, which :class:`ApproxDP` cannot hold).

    Examples
    --------
    >>> from dpreg.privacy.budgets import ZCDP
    >>> b = zcdp_to_approx_dp(ZCDP(0.5), 1e-6)
    >>> round(b.epsilon, 4), b.delta
    (5.2215, 1e-06)
    """
    check_budget(budget, ZCDP)
    eps = zcdp_to_eps(budget.rho, delta, method)
    if eps <= 0.0:
        raise ValueError(
            f"rho={budget.rho!r} at delta={delta!r} converts to epsilon=0 ((0, delta)-DP);"
            " ApproxDP needs epsilon > 0: use a smaller delta"
        )
    return ApproxDP(eps, delta)


def approx_dp_to_zcdp(budget: ApproxDP, method: str = DEFAULT_CONVERSION) -> ZCDP:
    """Largest zCDP budget that converts back to at most ``budget`` (same delta).

    A calibration target, not an implication: a rho-zCDP mechanism with the returned
    rho is ``budget``-DP, but an arbitrary ``budget``-DP mechanism need not be zCDP.

    Parameters
    ----------
    budget : ApproxDP
        The (epsilon, delta) target.
    method : {"tight", "simple"}
        Conversion, see :func:`eps_to_zcdp` (Canonne, Kamath & Steinke 2020, Cor. 13;
        Bun & Steinke 2016, Prop. 1.3).

    Returns
    -------
    ZCDP
        ``ZCDP(eps_to_zcdp(budget.epsilon, budget.delta, method))``.

    Raises
    ------
    TypeError
        If ``budget`` is not an :class:`ApproxDP`.
    ValueError
        If ``method`` is unknown.

    Examples
    --------
    >>> from dpreg.privacy.budgets import ApproxDP
    >>> round(approx_dp_to_zcdp(ApproxDP(1.0, 1e-6)).rho, 5)
    0.02436
    """
    check_budget(budget, ApproxDP)
    return ZCDP(eps_to_zcdp(budget.epsilon, budget.delta, method))


def compose(*budgets: Budget) -> Budget:
    """Sequential composition of budgets of one kind.

    Parameters
    ----------
    *budgets : ZCDP or ApproxDP
        One or more budgets, all of the same kind.

    Returns
    -------
    ZCDP or ApproxDP
        For zCDP the sum of the rhos (Bun & Steinke 2016, Lemma 2.3); for approximate
        DP the sums of epsilons and of deltas (basic composition, Dwork & Roth 2014,
        Theorem 3.16).

    Raises
    ------
    TypeError
        If no budget is given, an argument is not a budget, or kinds are mixed (convert
        first with :func:`zcdp_to_approx_dp` or :func:`approx_dp_to_zcdp`).
    ValueError
        If the composed delta reaches 1.

    Examples
    --------
    >>> from dpreg.privacy.budgets import ZCDP
    >>> compose(ZCDP(0.1), ZCDP(0.2)).rho == 0.1 + 0.2
    True
    """
    if not budgets:
        raise TypeError("compose needs at least one budget")
    for b in budgets:
        check_budget(b)
    kinds = {type(b) for b in budgets}
    if len(kinds) > 1:
        raise TypeError(
            "cannot compose ZCDP and ApproxDP budgets directly; convert them to one kind first"
            " (zcdp_to_approx_dp(budget, delta) or approx_dp_to_zcdp(budget))"
        )
    if isinstance(budgets[0], ZCDP):
        return ZCDP(math.fsum(b.rho for b in budgets))
    return ApproxDP(math.fsum(b.epsilon for b in budgets), math.fsum(b.delta for b in budgets))
