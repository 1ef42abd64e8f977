"""dp-accounting wrappers (dpreg.privacy.rdp)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from dp_accounting.rdp import rdp_privacy_accountant as dpa_rdp

from dpreg.privacy import (
    gaussian_delta,
    gaussian_epsilon,
    gaussian_pld_epsilon,
    gaussian_rdp_delta,
    gaussian_rdp_epsilon,
    zcdp_to_eps,
)
from dpreg.privacy.rdp import DEFAULT_ORDERS

CASES = [(0.5, 1), (1.0, 10), (5.0, 1), (20.0, 1000), (100.0, 1)]


def test_default_orders_dense() -> None:
    assert DEFAULT_ORDERS.max() == pytest.approx(1e4 + 1)
    assert np.all(np.diff(DEFAULT_ORDERS) > 0)
    assert np.all(np.isin(np.arange(2, 257), DEFAULT_ORDERS))
    # adjacent orders (as alpha - 1) at most 1.2% apart above the bottom decade
    upper = DEFAULT_ORDERS[DEFAULT_ORDERS > 1.1] - 1
    assert np.max(upper[1:] / upper[:-1]) < 1.012


@pytest.mark.parametrize(("sigma", "count"), CASES)
@pytest.mark.parametrize("delta", [1e-5, 1e-9])
def test_rdp_epsilon_equals_zcdp_conversion(sigma: float, count: int, delta: float) -> None:
    # count Gaussians with noise multiplier sigma are exactly count/(2 sigma^2)-zCDP
    # (RDP alpha * rho at every order); dp-accounting minimises the same CKS
    # expression over the grid, so ours <= theirs <= ours (1 + 1e-4).
    rho = count / (2 * sigma**2)
    ours = zcdp_to_eps(rho, delta)
    theirs = gaussian_rdp_epsilon(sigma, count, delta)
    assert ours <= theirs * (1 + 1e-12)
    assert theirs <= ours * (1 + 1e-4)
    coarse = gaussian_rdp_epsilon(sigma, count, delta, orders=dpa_rdp.DEFAULT_RDP_ORDERS)
    assert theirs <= coarse * (1 + 1e-12)  # the dense grid is never worse


def test_coarse_grid_is_loose_for_huge_noise() -> None:
    # dp-accounting's own default grid stops at order 1024; for sigma = 1000 the
    # optimal order is ~5000 and the default grid roughly doubles epsilon.
    exact = zcdp_to_eps(1 / (2 * 1000.0**2), 1e-6)
    coarse = gaussian_rdp_epsilon(1000.0, 1, 1e-6, orders=dpa_rdp.DEFAULT_RDP_ORDERS)
    assert coarse > 1.5 * exact
    assert gaussian_rdp_epsilon(1000.0, 1, 1e-6) == pytest.approx(exact, rel=1e-4)


@pytest.mark.parametrize(("sigma", "count"), CASES)
@pytest.mark.parametrize("delta", [1e-5, 1e-9])
def test_rdp_delta_inverts_epsilon(sigma: float, count: int, delta: float) -> None:
    # For a fixed order the eps(delta) and delta(eps) bounds are inverse to each
    # other, so the grid minima are too (dp-accounting's compute_delta/compute_epsilon).
    eps = gaussian_rdp_epsilon(sigma, count, delta)
    assert gaussian_rdp_delta(sigma, count, eps) == pytest.approx(delta, rel=1e-9)


@pytest.mark.parametrize(("sigma", "count"), CASES)
@pytest.mark.parametrize("eps", [0.1, 1.0, 5.0])
def test_rdp_delta_upper_bounds_exact_profile(sigma: float, count: int, eps: float) -> None:
    # count-fold composition of N(0, sigma^2) = one Gaussian of sensitivity sqrt(count).
    exact = gaussian_delta(sigma, eps, math.sqrt(count))
    rdp = gaussian_rdp_delta(sigma, count, eps)
    assert rdp >= exact
    assert rdp <= 1.0


@pytest.mark.parametrize(("sigma", "count", "delta"), [(1.0, 1, 1e-5), (5.0, 100, 1e-6)])
def test_pld_epsilon_close_to_exact(sigma: float, count: int, delta: float) -> None:
    # PLD with pessimistic discretisation h = 1e-4: exact <= PLD <= exact + h
    # (dp-accounting composes count Gaussians as one of sigma / sqrt(count); the
    # lower slack 1e-8 covers dp-accounting's root-finding tolerance).
    exact = gaussian_epsilon(sigma, delta, math.sqrt(count))
    pld = gaussian_pld_epsilon(sigma, count, delta)
    assert exact - 1e-8 <= pld <= exact + 1e-4
    assert pld < gaussian_rdp_epsilon(sigma, count, delta)  # PLD is tighter than RDP


@pytest.mark.parametrize("bad", [0.0, -1.0, math.nan, math.inf])
def test_bad_noise_multiplier(bad: float) -> None:
    with pytest.raises(ValueError, match="noise_multiplier"):
        gaussian_rdp_epsilon(bad, 1, 1e-5)
    with pytest.raises(ValueError, match="noise_multiplier"):
        gaussian_rdp_delta(bad, 1, 1.0)
    with pytest.raises(ValueError, match="noise_multiplier"):
        gaussian_pld_epsilon(bad, 1, 1e-5)


@pytest.mark.parametrize("bad", [0, -3, 1.5, True, "2"])
def test_bad_count(bad: object) -> None:
    with pytest.raises(ValueError, match="count"):
        gaussian_rdp_epsilon(1.0, bad, 1e-5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="count"):
        gaussian_pld_epsilon(1.0, bad, 1e-5)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [0.0, 1.0, -1e-6, math.nan])
def test_bad_delta(bad: float) -> None:
    with pytest.raises(ValueError, match="delta"):
        gaussian_rdp_epsilon(1.0, 1, bad)
    with pytest.raises(ValueError, match="delta"):
        gaussian_pld_epsilon(1.0, 1, bad)


@pytest.mark.parametrize("bad", [0.0, -1.0, math.nan])
def test_bad_epsilon(bad: float) -> None:
    with pytest.raises(ValueError, match="epsilon"):
        gaussian_rdp_delta(1.0, 1, bad)


@pytest.mark.parametrize("bad", [[], [1.0, 2.0], [0.5], [2.0, math.nan]])
def test_bad_orders(bad: list[float]) -> None:
    with pytest.raises(ValueError, match="orders"):
        gaussian_rdp_epsilon(1.0, 1, 1e-5, orders=bad)
