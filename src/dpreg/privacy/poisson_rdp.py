r"""The RDP epsilon of composed Poisson-subsampled Gaussians, skipping orders that cannot win.

``dp-accounting``'s ``RdpAccountant`` computes the RDP of a Poisson-subsampled Gaussian
(Mironov, Talwar & Zhang 2019: an exact binomial sum at integer orders, a series at
fractional ones) at each of its default orders :math:`\alpha`, multiplies by the number of
steps, and returns :math:`\min_\alpha \varepsilon_\alpha` with (Canonne, Kamath & Steinke
2020, Proposition 12)

.. math::

    \varepsilon_\alpha = R_\alpha + \ln(1 - 1/\alpha) - \ln(\delta\alpha)/(\alpha - 1).

Most of its time goes to orders far from the minimiser (the series at the small
fractional orders, the long sums at orders 128 to 1024). :func:`poisson_rdp_epsilon`
returns the **same number** (bit for bit) while computing only the orders that could
attain the minimum. It skips an order when a valid lower bound on its
:math:`\varepsilon_\alpha` exceeds the smallest value already computed (with a margin far
above round-off), from two facts about the true values:

* the Rényi divergence is nondecreasing in its order (van Erven & Harremoës 2014,
  Theorem 3), so :math:`R_\alpha \ge R_\beta` for a computed order :math:`\beta < \alpha`;
* :math:`R_\alpha \ge T\,\mathrm{KL} \ge 2T\,\mathrm{TV}^2` (Pinsker), where the total
  variation between the subsampled mixture and the Gaussian is
  :math:`q\,(2\Phi(1/(2\sigma)) - 1)`.

The computed orders go through ``dp-accounting``'s own functions (its per-order RDP and
its ``compute_epsilon`` on the kept orders), so the minimum is the number the full
accountant returns. When the Pinsker bound is below :data:`ZERO_GUARD` (where an order's
epsilon could be clipped to 0), the full accountant runs instead.
``tests/unit/test_poisson_rdp.py`` checks equality with the full accountant on a grid that
covers the calibration's brackets and on random inputs.

At an integer order :math:`\alpha` the accountant's binomial sum (Mironov, Talwar & Zhang
2019, Sec. 3.3: :math:`A_\alpha = \sum_{i=0}^{\alpha} \binom{\alpha}{i} q^i
(1-q)^{\alpha-i} e^{(i^2-i)/(2\sigma^2)}`, in log space) is evaluated by
:func:`log_a_int`: the same floating-point operations in the same order as
``dp-accounting``'s ``_compute_log_a_int``, with its :math:`3(\alpha+1)` scalar
``gammaln`` calls made as one array call (the same function per element) and its
log-space additions inlined (issue 18: the accountant's Python calls were about a third of
``dp_sgd_poisson``'s CPU in the benchmark). At a fractional order, :func:`log_a_frac`
does the same for ``_compute_log_a_frac`` (the series of Mironov et al. 2019, Sec. 3.3):
its terms 32 at a time as array expressions of the same operations, then its log-space
sums and its stopping rule term by term as there; a series that does not stop within the
accountant's 1000 terms is handed to ``dp-accounting`` itself (which excludes that
order). The same floats, tested against ``dp-accounting`` on random orders, rates and
noise multipliers.
"""

from __future__ import annotations

import math

__all__ = [
    "ZERO_GUARD",
    "log_a_frac",
    "log_a_int",
    "poisson_rdp_epsilon",
    "poisson_rdp_epsilon_full",
]

#: Below this lower bound on the composed RDP, the full accountant runs (no skipping).
ZERO_GUARD = 1e-6
_REL_MARGIN = 1e-6  # relative margin of a skip, far above the accountant's round-off


def poisson_rdp_epsilon_full(
    noise_multiplier: float, sampling_rate: float, steps: int, delta: float
) -> float:
    """Compute the reference: a fresh ``dp-accounting`` ``RdpAccountant``, default orders.

    Examples
    --------
    >>> round(poisson_rdp_epsilon_full(1.0, 0.01, 1000, 1e-5), 6)
    2.101367
    """
    import dp_accounting
    from dp_accounting.rdp import RdpAccountant

    event = dp_accounting.PoissonSampledDpEvent(
        sampling_rate, dp_accounting.GaussianDpEvent(noise_multiplier)
    )
    accountant = RdpAccountant()
    accountant.compose(dp_accounting.SelfComposedDpEvent(event, steps))
    return float(accountant.get_epsilon(delta))


def _check_rate_and_sigma(q: float, sigma: float) -> None:
    """Raise ``ValueError`` naming ``q`` or ``sigma`` unless 0 < q < 1 and sigma > 0."""
    if not 0.0 < q < 1.0:
        raise ValueError(f"q must be in (0, 1); got {q!r}")
    if not sigma > 0:
        raise ValueError(f"sigma must be > 0; got {sigma!r}")


def log_a_int(q: float, sigma: float, alpha: int) -> float:
    r"""Return :math:`\log A_\alpha` at an integer order, as ``dp-accounting`` computes it.

    The binomial sum of the Poisson-subsampled Gaussian (Mironov, Talwar & Zhang 2019,
    Sec. 3.3) term by term in log space, with the operations of ``dp-accounting``'s
    ``_compute_log_a_int`` in its order (the coefficients from ``gammaln`` of
    :math:`0..\alpha` in one array call), so the same float (module docstring).

    Parameters
    ----------
    q : float
        Poisson rate in (0, 1).
    sigma : float
        Noise multiplier > 0.
    alpha : int
        Integer order >= 1 (the accountant divides by :math:`\alpha - 1` afterwards).

    Returns
    -------
    float
        :math:`\log A_\alpha`.

    Examples
    --------
    >>> from dp_accounting.rdp import rdp_privacy_accountant as rdp
    >>> log_a_int(0.01, 1.5, 32) == float(rdp._compute_log_a_int(0.01, 1.5, 32))
    True
    """
    import numpy as np
    from scipy.special import gammaln

    alpha = int(alpha)
    if alpha < 1:
        raise ValueError(f"alpha must be an integer >= 1; got {alpha!r}")
    _check_rate_and_sigma(q, sigma)
    i = np.arange(alpha + 1)
    lg = gammaln(np.arange(alpha + 2, dtype=np.float64))  # gammaln(m) for m = 0..alpha+1
    # _log_comb(alpha, i) = gammaln(alpha + 1) - gammaln(i + 1) - gammaln(alpha - i + 1)
    log_comb = lg[alpha + 1] - lg[i + 1] - lg[alpha - i + 1]
    log_coef = log_comb + i * math.log(q) + (alpha - i) * math.log1p(-q)
    terms = (log_coef + (i * i - i) / (2 * (sigma**2))).tolist()
    log_a = -math.inf
    for term in terms:  # _log_add(log_a, term), inlined
        # min / max as the builtins decide them (the second replaces the first only when
        # strictly smaller / larger), without their calls
        a = term if term < log_a else log_a
        b = term if term > log_a else log_a
        log_a = b if a == -math.inf else math.log1p(math.exp(a - b)) + b
    return log_a


_FRAC_TERMS = 1000  # dp-accounting's _MAX_STEPS_LOG_A_FRAC
_FRAC_CHUNK = 32  # terms formed per array expression (the series stops after ~20 here)


def log_a_frac(q: float, sigma: float, alpha: float) -> float:
    r"""Return :math:`\log A_\alpha` at a fractional order, as ``dp-accounting`` computes it.

    The two-sided series of the Poisson-subsampled Gaussian (Mironov, Talwar & Zhang 2019,
    Sec. 3.3) with the operations of ``dp-accounting``'s ``_compute_log_a_frac`` in its
    order and its stopping rule (module docstring); the same float, or ``inf`` (from
    ``dp-accounting`` itself) when the series does not stop within 1000 terms.

    Parameters
    ----------
    q : float
        Poisson rate in (0, 1).
    sigma : float
        Noise multiplier > 0.
    alpha : float
        Finite order > 1 (not an integer: integers go through :func:`log_a_int`).

    Returns
    -------
    float
        :math:`\log A_\alpha`.

    Examples
    --------
    >>> from dp_accounting.rdp import rdp_privacy_accountant as rdp
    >>> log_a_frac(0.01, 1.5, 2.5) == float(rdp._compute_log_a_frac(0.01, 1.5, 2.5))
    True
    """
    import numpy as np
    from dp_accounting.rdp import rdp_privacy_accountant as rdp
    from scipy.special import gammaln, log_ndtr

    _check_rate_and_sigma(q, sigma)
    if not (math.isfinite(alpha) and alpha > 1):
        raise ValueError(f"alpha must be a finite order > 1; got {alpha!r}")
    z0 = sigma**2 * math.log(1 / q - 1) + 0.5
    log1mq, log_q = math.log1p(-q), math.log(q)
    scale, two_var = math.sqrt(2) * sigma, 2 * (sigma**2)
    log_half, log_two, root_two = math.log(0.5), math.log(2), 2**0.5
    gamma_top = gammaln(alpha + 1)
    log_a0 = log_a1 = last_s0 = last_s1 = -math.inf
    for start in range(0, _FRAC_TERMS, _FRAC_CHUNK):
        i = np.arange(start, min(start + _FRAC_CHUNK, _FRAC_TERMS))
        j = alpha - i
        log_coef = gamma_top - gammaln(i + 1) - gammaln(alpha - i + 1)  # _log_comb(alpha, i)
        log_t0 = log_coef + i * log_q + j * log1mq
        log_t1 = log_coef + j * log_q + i * log1mq
        # math.log(0.5) + _log_erfc(x), _log_erfc(x) = log(2) + log_ndtr(-x * 2**0.5)
        log_e0 = log_half + (log_two + log_ndtr(-((i - z0) / scale) * root_two))
        log_e1 = log_half + (log_two + log_ndtr(-((z0 - j) / scale) * root_two))
        log_s0 = (log_t0 + (i * i - i) / two_var + log_e0).tolist()
        log_s1 = (log_t1 + (j * j - j) / two_var + log_e1).tolist()
        for s0, s1 in zip(log_s0, log_s1, strict=True):
            # _log_add(log_a0, s0), _log_add(log_a1, s1), _log_add(log_a0, log_a1), inlined
            # min / max written out as the builtins decide them (see log_a_int)
            a, b = (s0 if s0 < log_a0 else log_a0), (s0 if s0 > log_a0 else log_a0)
            log_a0 = b if a == -math.inf else math.log1p(math.exp(a - b)) + b
            a, b = (s1 if s1 < log_a1 else log_a1), (s1 if s1 > log_a1 else log_a1)
            log_a1 = b if a == -math.inf else math.log1p(math.exp(a - b)) + b
            a = log_a1 if log_a1 < log_a0 else log_a0
            b = log_a1 if log_a1 > log_a0 else log_a0
            total = b if a == -math.inf else math.log1p(math.exp(a - b)) + b
            if s0 < last_s0 and s1 < last_s1 and max(s0, s1) < total - 30:
                return total
            last_s0, last_s1 = s0, s1
    return float(rdp._compute_log_a_frac(q, sigma, alpha))  # not converged: its warning, inf


def _rdp_at(q: float, sigma: float, order: float) -> float:
    """Return the accountant's RDP at one order (``_compute_rdp_poisson_subsampled_gaussian``)."""
    from dp_accounting.rdp import rdp_privacy_accountant as rdp

    if 0.0 < q < 1.0 and sigma > 0 and math.isfinite(order) and order > 1:
        if order.is_integer():
            return log_a_int(q, sigma, int(order)) / (order - 1)
        return log_a_frac(q, sigma, order) / (order - 1)
    return float(rdp._compute_rdp_poisson_subsampled_gaussian(q, sigma, [order])[0])


def _tail_bound(order: float, delta: float) -> float:
    # The conversion's terms without R (a lower bound of epsilon_alpha when R >= 0).
    return math.log1p(-1.0 / order) - math.log(delta * order) / (order - 1.0)


def _visit_order(
    orders: list[float], sigma: float, q: float, count: int, delta: float
) -> list[float]:
    """Orders from a guess of the minimiser outwards: upwards first, then downwards.

    The guess minimises ``R_2 a / 2 + tail(a)`` (the RDP taken linear in the order, from
    its exact value at order 2). The order of visits changes only how many orders are
    skipped, never the result.
    """
    x = math.exp(1.0 / (sigma * sigma)) - 1.0 if sigma > 0.04 else math.inf
    slope = count * math.log1p(q * q * x) / 2.0  # R_2 / 2 (Mironov et al. 2019, order 2)
    start = min(range(len(orders)), key=lambda i: slope * orders[i] + _tail_bound(orders[i], delta))
    return orders[start:] + orders[:start][::-1]


def poisson_rdp_epsilon(
    noise_multiplier: float, sampling_rate: float, steps: int, delta: float
) -> float:
    r"""Epsilon of ``steps`` Poisson-subsampled Gaussians, equal to the full accountant's.

    Parameters
    ----------
    noise_multiplier : float
        Noise std over the L2 sensitivity, :math:`\sigma > 0`.
    sampling_rate : float
        Poisson rate :math:`q \in (0, 1]`.
    steps : int
        Number of composed mechanisms :math:`T \ge 1`.
    delta : float
        Target delta in (0, 1).

    Returns
    -------
    float
        The value of :func:`poisson_rdp_epsilon_full` (the same float), computed from the
        orders that can attain the minimum (module docstring).

    Examples
    --------
    >>> poisson_rdp_epsilon(1.0, 0.01, 1000, 1e-5) == poisson_rdp_epsilon_full(
    ...     1.0, 0.01, 1000, 1e-5)
    True
    """
    import numpy as np
    from dp_accounting.rdp import rdp_privacy_accountant as rdp
    from scipy.special import ndtr

    sigma, q, count = float(noise_multiplier), float(sampling_rate), int(steps)
    tv = q * (2.0 * float(ndtr(0.5 / sigma)) - 1.0)
    floor = count * 2.0 * tv * tv
    if q >= 1.0 or not floor > ZERO_GUARD:
        return poisson_rdp_epsilon_full(sigma, q, count, delta)
    orders = sorted(float(a) for a in rdp.DEFAULT_RDP_ORDERS)
    kept_orders: list[float] = []
    kept_rdp: list[float] = []
    best = math.inf
    for order in _visit_order(orders, sigma, q, count, delta):
        # Only finite values bound the true RDP (the accountant returns inf for an order
        # whose series did not converge: that order is excluded, not infinite).
        below = [
            r for a, r in zip(kept_orders, kept_rdp, strict=True) if a < order and math.isfinite(r)
        ]
        r_low = max([floor, *below])
        bound = r_low + _tail_bound(order, delta)
        if bound - _REL_MARGIN * (abs(bound) + r_low + 1.0) > best:
            continue  # cannot attain the minimum
        # As RdpAccountant composes: 0 + count * (RDP at this order).
        value = 0.0 + count * np.array([_rdp_at(q, sigma, order)])
        kept_orders.append(order)
        kept_rdp.append(float(value[0]))
        if math.isfinite(kept_rdp[-1]):
            best = min(best, kept_rdp[-1] + _tail_bound(order, delta))
    return float(rdp.compute_epsilon(kept_orders, kept_rdp, delta)[0])
