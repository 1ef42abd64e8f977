"""Thin wrappers over Google's ``dp-accounting`` for composed Gaussian mechanisms.

``noise_multiplier`` is ``sigma / sensitivity`` throughout (dp-accounting's unit).
The neighbouring relation is dp-accounting's default (add-or-remove-one); for the
plain (unsampled) Gaussian mechanism the accounting is the same under replace-one as
long as ``sensitivity`` is the L2 sensitivity under that relation.

* RDP: Mironov (2017), "Renyi Differential Privacy", Proposition 7 (Gaussian RDP
  ``alpha / (2 noise_multiplier^2)``) and Proposition 1 (additive composition),
  converted to (epsilon, delta) by dp-accounting with Canonne, Kamath & Steinke
  (2020), Proposition 12, minimised over a finite grid of orders.
* PLD: Koskela et al. (2020) / Doroshenko et al. (2022) privacy-loss-distribution
  accounting with pessimistic discretisation, via ``dp_accounting.pld``.
"""

from __future__ import annotations

import numbers
from typing import TYPE_CHECKING

import numpy as np

from dpreg._validation import check_positive, check_probability

if TYPE_CHECKING:  # dp-accounting is imported lazily: it is slow to import
    from dp_accounting import DpEvent
    from dp_accounting.rdp import RdpAccountant

__all__ = [
    "DEFAULT_ORDERS",
    "gaussian_pld_epsilon",
    "gaussian_rdp_delta",
    "gaussian_rdp_epsilon",
]

DEFAULT_ORDERS: np.ndarray = np.unique(
    np.concatenate(
        [
            1.0 + np.logspace(-2, 4, 1201),
            1.0 + np.arange(1, 100) / 10.0,
            np.arange(2.0, 257.0),
            [512.0, 1024.0],
        ]
    )
)
"""Dense RDP order grid: ``1 + logspace(-2, 4, 1201)`` (200 points a decade, up to
order 10001) plus the integers 2..256 and all of dp-accounting's own default orders
(so it is never worse than those). dp-accounting ignores orders <= 1.01."""


def _check_count(count: object) -> int:
    if isinstance(count, bool) or not isinstance(count, numbers.Integral) or count < 1:
        raise ValueError(f"count must be a positive integer; got {count!r}")
    return int(count)


def _check_orders(orders: object) -> np.ndarray:
    if orders is None:
        return DEFAULT_ORDERS
    arr = np.asarray(orders, dtype=np.float64).ravel()
    if arr.size == 0 or not np.all(np.isfinite(arr)) or np.any(arr <= 1.0):
        raise ValueError(
            f"orders must be a non-empty sequence of finite numbers > 1; got {orders!r}"
        )
    return arr


def _gaussian_event(noise_multiplier: float, count: int) -> DpEvent:
    import dp_accounting

    event = dp_accounting.GaussianDpEvent(noise_multiplier=noise_multiplier)
    return dp_accounting.SelfComposedDpEvent(event=event, count=count)


def _rdp_accountant(noise_multiplier: float, count: int, orders: object) -> RdpAccountant:
    noise_multiplier = check_positive(noise_multiplier, "noise_multiplier")
    count = _check_count(count)
    from dp_accounting.rdp import RdpAccountant

    accountant = RdpAccountant(orders=_check_orders(orders))
    accountant.compose(_gaussian_event(noise_multiplier, count))
    return accountant


def gaussian_rdp_epsilon(
    noise_multiplier: float, count: int, delta: float, orders: object = None
) -> float:
    """Epsilon at ``delta`` of ``count`` Gaussian mechanisms, by RDP accounting.

    The RDP of one Gaussian mechanism is ``alpha / (2 noise_multiplier^2)`` (Mironov
    2017, Prop. 7), composition adds (Prop. 1), and dp-accounting converts with
    Canonne, Kamath & Steinke (2020), Proposition 12, minimised over ``orders``.
    This equals :func:`dpreg.privacy.conversions.zcdp_to_eps` with
    ``rho = count / (2 noise_multiplier^2)`` up to the order grid (ours is never larger).

    Parameters
    ----------
    noise_multiplier : float
        ``sigma / sensitivity``, > 0.
    count : int
        Number of compositions, >= 1.
    delta : float
        Target delta in (0, 1).
    orders : sequence of float, optional
        RDP orders (> 1); defaults to :data:`DEFAULT_ORDERS`.

    Returns
    -------
    float
        epsilon >= 0.

    Raises
    ------
    ValueError
        If an argument is out of range.

    Examples
    --------
    >>> round(gaussian_rdp_epsilon(1.0, 100, 1e-5), 3)  # 100 steps, multiplier 1
    96.035
    """
    delta = check_probability(delta, "delta")
    return float(_rdp_accountant(noise_multiplier, count, orders).get_epsilon(delta))


def gaussian_rdp_delta(
    noise_multiplier: float, count: int, epsilon: float, orders: object = None
) -> float:
    """Delta at ``epsilon`` of ``count`` Gaussian mechanisms, by RDP accounting.

    Mironov (2017), Props. 1 and 7, converted by dp-accounting with Canonne, Kamath &
    Steinke (2020), Proposition 12 (the delta form), minimised over ``orders``.

    Parameters
    ----------
    noise_multiplier : float
        ``sigma / sensitivity``, > 0.
    count : int
        Number of compositions, >= 1.
    epsilon : float
        Target epsilon, > 0.
    orders : sequence of float, optional
        RDP orders (> 1); defaults to :data:`DEFAULT_ORDERS`.

    Returns
    -------
    float
        delta in [0, 1].

    Raises
    ------
    ValueError
        If an argument is out of range.

    Examples
    --------
    >>> f'{gaussian_rdp_delta(10.0, 1, 1.0):.2e}'
    '1.16e-24'
    """
    epsilon = check_positive(epsilon, "epsilon")
    return float(_rdp_accountant(noise_multiplier, count, orders).get_delta(epsilon))


def gaussian_pld_epsilon(
    noise_multiplier: float,
    count: int,
    delta: float,
    value_discretization_interval: float = 1e-4,
) -> float:
    """Epsilon at ``delta`` of ``count`` Gaussian mechanisms, by PLD accounting.

    Uses ``dp_accounting.pld.PLDAccountant`` (privacy loss distributions, Koskela et
    al. 2020; connect-the-dots discretisation, Doroshenko et al. 2022) with a
    pessimistic discretisation, so the result is an upper bound on the exact epsilon
    (Balle & Wang 2018, Thm. 8 with sensitivity ``sqrt(count)``, see
    :func:`dpreg.privacy.gaussian.gaussian_epsilon`) and close to it.

    Parameters
    ----------
    noise_multiplier : float
        ``sigma / sensitivity``, > 0.
    count : int
        Number of compositions, >= 1.
    delta : float
        Target delta in (0, 1).
    value_discretization_interval : float, default 1e-4
        Privacy-loss grid width; smaller is tighter and slower.

    Returns
    -------
    float
        epsilon >= 0.

    Raises
    ------
    ValueError
        If an argument is out of range.

    Examples
    --------
    >>> round(gaussian_pld_epsilon(1.0, 100, 1e-5), 2)
    91.82
    """
    noise_multiplier = check_positive(noise_multiplier, "noise_multiplier")
    count = _check_count(count)
    delta = check_probability(delta, "delta")
    interval = check_positive(value_discretization_interval, "value_discretization_interval")
    from dp_accounting.pld import PLDAccountant

    accountant = PLDAccountant(value_discretization_interval=interval)
    accountant.compose(_gaussian_event(noise_multiplier, count))
    return float(accountant.get_epsilon(delta))
