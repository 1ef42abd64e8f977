"""Calibration of the Gaussian mechanism ``f(D) + N(0, sigma^2 I)``.

``sensitivity`` is always the L2 sensitivity of ``f`` under the neighbouring relation
the caller has in mind (add/remove or replace-one); computing it is the caller's job.

* zCDP: Bun & Steinke (2016), Proposition 1.6: ``rho = sensitivity^2 / (2 sigma^2)``.
* Classic (epsilon, delta): Dwork & Roth (2014), Theorem A.1,
  ``sigma = sqrt(2 log(1.25/delta)) sensitivity / epsilon`` (proven for epsilon < 1).
* Analytic Gaussian mechanism (AGM): Balle & Wang (2018), "Improving the Gaussian
  Mechanism for Differential Privacy: Analytical Calibration and Optimal Denoising",
  Theorem 8 / Algorithm 1: the exact privacy profile and the smallest sigma meeting it.
"""

from __future__ import annotations

import math

from dpreg._validation import check_positive, check_probability

__all__ = [
    "analytic_gaussian_sigma",
    "classic_gaussian_sigma",
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_zcdp",
    "zcdp_gaussian_sigma",
]


def zcdp_gaussian_sigma(rho: float, sensitivity: float) -> float:
    """Noise scale giving rho-zCDP for an L2-sensitivity-``sensitivity`` query.

    Bun & Steinke (2016), Proposition 1.6: ``N(0, sigma^2)`` noise on a query of
    sensitivity ``Delta`` is ``Delta^2 / (2 sigma^2)``-zCDP, so
    ``sigma = Delta / sqrt(2 rho)``.

    Parameters
    ----------
    rho : float
        Target zCDP parameter, > 0 (``math.inf`` gives ``sigma = 0``, no noise).
    sensitivity : float
        L2 sensitivity of the query, > 0.

    Returns
    -------
    float
        The standard deviation sigma.

    Raises
    ------
    ValueError
        If ``rho`` or ``sensitivity`` is not positive (or is NaN).

    Examples
    --------
    >>> zcdp_gaussian_sigma(0.125, 1.0)  # Delta / sqrt(2 rho)
    2.0
    """
    rho = check_positive(rho, "rho", allow_inf=True)
    sensitivity = check_positive(sensitivity, "sensitivity")
    if math.isinf(rho):
        return 0.0
    return sensitivity / math.sqrt(2.0 * rho)


def gaussian_zcdp(sigma: float, sensitivity: float) -> float:
    """Return rho of the Gaussian mechanism, ``sensitivity^2 / (2 sigma^2)``.

    Bun & Steinke (2016), Proposition 1.6 (exact: the Gaussian mechanism's Renyi
    divergence of order alpha is exactly ``alpha * rho``).

    Parameters
    ----------
    sigma : float
        Noise standard deviation, > 0.
    sensitivity : float
        L2 sensitivity of the query, > 0.

    Returns
    -------
    float
        rho > 0.

    Raises
    ------
    ValueError
        If ``sigma`` or ``sensitivity`` is not a finite positive number.

    Examples
    --------
    >>> gaussian_zcdp(2.0, 1.0)  # Delta^2 / (2 sigma^2)
    0.125
    """
    sigma = check_positive(sigma, "sigma")
    sensitivity = check_positive(sensitivity, "sensitivity")
    return sensitivity**2 / (2.0 * sigma**2)


def classic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float) -> float:
    """Classic Gaussian-mechanism noise scale ``sqrt(2 log(1.25/delta)) Delta / epsilon``.

    Dwork & Roth (2014), "The Algorithmic Foundations of Differential Privacy",
    Theorem A.1 (and Theorem 3.22).

    Parameters
    ----------
    epsilon : float
        Target epsilon, > 0.
    delta : float
        Target delta in (0, 1).
    sensitivity : float
        L2 sensitivity of the query, > 0.

    Returns
    -------
    float
        The standard deviation sigma.

    Raises
    ------
    ValueError
        If an argument is out of range or NaN.

    Notes
    -----
    The theorem is proven only for ``epsilon < 1``; the formula is returned for any
    ``epsilon`` but for ``epsilon >= 1`` it is *not* a certified guarantee (it can
    fail to be (epsilon, delta)-DP for large epsilon). Use
    :func:`analytic_gaussian_sigma`, which is exact for every epsilon and always
    smaller than this value for ``epsilon < 1``.

    Examples
    --------
    >>> round(classic_gaussian_sigma(1.0, 1e-6, 1.0), 4)  # sqrt(2 ln(1.25/delta)) / eps
    5.2988
    """
    epsilon = check_positive(epsilon, "epsilon")
    delta = check_probability(delta, "delta")
    sensitivity = check_positive(sensitivity, "sensitivity")
    return math.sqrt(2.0 * math.log(1.25 / delta)) * sensitivity / epsilon


def _log_gaussian_delta(sigma: float, epsilon: float, sensitivity: float) -> float:
    """Log of Balle & Wang (2018), Theorem 8, evaluated in log space.

    ``delta = Phi(a - b) - exp(eps) Phi(-a - b)`` with ``a = Delta/(2 sigma)`` and
    ``b = eps sigma / Delta``; both terms via ``log_ndtr`` so ``exp(eps)`` never
    overflows, and the difference as ``log(x) + log(-expm1(y - x))``.
    """
    from scipy import special  # imported on first use: job start-up (docs/scaling.md)

    a = sensitivity / (2.0 * sigma)
    b = epsilon * sigma / sensitivity
    log_x = float(special.log_ndtr(a - b))
    log_y = epsilon + float(special.log_ndtr(-a - b))
    if not log_y < log_x:
        return -math.inf
    return log_x + math.log(-math.expm1(log_y - log_x))


def gaussian_delta(sigma: float, epsilon: float, sensitivity: float) -> float:
    """Exact privacy profile delta(epsilon) of the Gaussian mechanism.

    Balle & Wang (2018), Theorem 8: ``N(0, sigma^2)`` noise on a query of L2
    sensitivity ``Delta`` is (epsilon, delta)-DP iff ``delta >= delta(epsilon)`` with::

        delta(epsilon) = Phi(Delta/(2 sigma) - epsilon sigma/Delta)
                         - exp(epsilon) Phi(-Delta/(2 sigma) - epsilon sigma/Delta).

    Equivalently ``E[(1 - exp(epsilon - L))_+]`` for the privacy loss
    ``L ~ N(mu, 2 mu)``, ``mu = Delta^2/(2 sigma^2)``.  Evaluated with log-CDFs, so it
    is accurate for large epsilon and tiny deltas.

    Parameters
    ----------
    sigma : float
        Noise standard deviation, > 0.
    epsilon : float
        Epsilon, > 0.
    sensitivity : float
        L2 sensitivity of the query, > 0.

    Returns
    -------
    float
        delta in [0, 1).

    Raises
    ------
    ValueError
        If an argument is not a finite positive number.

    Examples
    --------
    >>> f'{gaussian_delta(4.0, 1.0, 1.0):.3e}'
    '2.924e-06'
    """
    sigma = check_positive(sigma, "sigma")
    epsilon = check_positive(epsilon, "epsilon")
    sensitivity = check_positive(sensitivity, "sensitivity")
    return math.exp(_log_gaussian_delta(sigma, epsilon, sensitivity))


_MAX_STEPS = 400  # bracket widening steps of 2 in log scale: e^(+-800) covers float64


def _expand_bracket(fun, lo: float, hi: float, what: str) -> tuple[float, float]:
    """Widen ``[lo, hi]`` (log scale) until ``fun(lo) > 0 >= fun(hi)``; fun decreasing.

    Raises ``ValueError`` (naming ``what``) instead of looping when no bracket exists in
    float64 (a budget too small or too large to calibrate).
    """
    for _ in range(_MAX_STEPS):
        if fun(lo) > 0.0:
            break
        lo, hi = lo - 2.0, lo
    else:
        raise ValueError(f"{what} is outside what float64 can calibrate (no bracket)")
    for _ in range(_MAX_STEPS):
        if fun(hi) <= 0.0:
            break
        lo, hi = hi, hi + 2.0
    else:
        raise ValueError(f"{what} is outside what float64 can calibrate (no bracket)")
    return lo, hi


def analytic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float) -> float:
    """Smallest sigma making the Gaussian mechanism (epsilon, delta)-DP (the AGM).

    Balle & Wang (2018), Theorem 8 / Algorithm 1 (analytic Gaussian mechanism): the
    smallest sigma with ``gaussian_delta(sigma, epsilon, sensitivity) <= delta``.
    Found by :func:`scipy.optimize.brentq` on ``log delta(sigma) - log delta`` in
    ``log sigma`` (delta(sigma) is strictly decreasing), then nudged up, if needed, so
    that the returned sigma satisfies the constraint. Valid for every epsilon > 0.

    Parameters
    ----------
    epsilon : float
        Target epsilon, > 0.
    delta : float
        Target delta in (0, 1).
    sensitivity : float
        L2 sensitivity of the query, > 0.

    Returns
    -------
    float
        The standard deviation sigma (relative accuracy about 1e-13).

    Raises
    ------
    ValueError
        If an argument is out of range or NaN.

    Examples
    --------
    >>> sigma = analytic_gaussian_sigma(1.0, 1e-6, sensitivity=1.0)
    >>> round(sigma, 4)
    4.2247
    >>> round(gaussian_epsilon(sigma, 1e-6, 1.0), 6)
    1.0
    """
    epsilon = check_positive(epsilon, "epsilon")
    delta = check_probability(delta, "delta")
    sensitivity = check_positive(sensitivity, "sensitivity")
    log_delta = math.log(delta)

    def excess(log_sigma: float) -> float:
        sigma = math.exp(min(max(log_sigma, -745.0), 709.0))  # float64's range
        return _log_gaussian_delta(sigma, epsilon, sensitivity) - log_delta

    # delta(sigma) depends on sigma/sensitivity only: start from the classic scale,
    # written in logs so that a tiny delta or epsilon cannot overflow it.
    start = (
        0.5 * math.log(2.0 * (math.log(1.25) - log_delta))
        + math.log(sensitivity)
        - math.log(epsilon)
    )
    what = f"(epsilon={epsilon!r}, delta={delta!r}, sensitivity={sensitivity!r})"
    lo, hi = _expand_bracket(excess, start - 2.0, start + 0.5, what)
    from scipy import optimize  # imported on first use: job start-up (docs/scaling.md)

    root = optimize.brentq(excess, lo, hi, xtol=1e-14, rtol=1e-15)
    # Certify the returned value itself (exp/log rounding included).
    for _ in range(1000):
        if math.exp(_log_gaussian_delta(math.exp(root), epsilon, sensitivity)) <= delta:
            break
        root += 1e-14 * max(1.0, abs(root))
    else:  # pragma: no cover - brentq's root is within a few ulps
        raise ValueError(f"analytic_gaussian_sigma: could not certify {what}")
    sigma = math.exp(root)
    if not (0.0 < sigma < math.inf):
        raise ValueError(f"analytic_gaussian_sigma: sigma out of float64 range for {what}")
    return sigma


def gaussian_epsilon(sigma: float, delta: float, sensitivity: float) -> float:
    """Smallest epsilon for which the Gaussian mechanism is (epsilon, delta)-DP.

    The inverse in epsilon of the exact privacy profile of Balle & Wang (2018),
    Theorem 8 (see :func:`gaussian_delta`), found by :func:`scipy.optimize.brentq`.
    Since ``k`` compositions of ``N(0, sigma^2)`` noise equal one Gaussian with
    sensitivity ``sqrt(k) Delta``, this is also the exact epsilon of ``k``-fold
    composition with ``sensitivity = sqrt(k) Delta``.

    Parameters
    ----------
    sigma : float
        Noise standard deviation, > 0.
    delta : float
        Target delta in (0, 1).
    sensitivity : float
        L2 sensitivity of the query, > 0.

    Returns
    -------
    float
        epsilon >= 0 (0 when already ``delta(0) <= delta``, i.e. (0, delta)-DP).

    Raises
    ------
    ValueError
        If an argument is out of range or NaN.

    Examples
    --------
    >>> round(gaussian_epsilon(4.0, 1e-6, 1.0), 4)
    1.0607
    """
    sigma = check_positive(sigma, "sigma")
    delta = check_probability(delta, "delta")
    sensitivity = check_positive(sensitivity, "sensitivity")
    log_delta = math.log(delta)

    def excess(eps: float) -> float:
        return _log_gaussian_delta(sigma, eps, sensitivity) - log_delta

    if excess(0.0) <= 0.0:
        return 0.0
    lo, hi = 0.0, 1.0
    for _ in range(_MAX_STEPS):
        if excess(hi) <= 0.0:
            break
        lo, hi = hi, 2.0 * hi
    else:
        raise ValueError(
            f"gaussian_epsilon: no finite epsilon for sigma={sigma!r}, delta={delta!r},"
            f" sensitivity={sensitivity!r} (float64 range)"
        )
    from scipy import optimize

    return float(optimize.brentq(excess, lo, hi, xtol=1e-15, rtol=1e-15))
