"""zCDP <-> (epsilon, delta) conversions and composition (dpreg.privacy.conversions)."""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pytest
from dp_accounting.rdp import rdp_privacy_accountant as dpa_rdp
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from dpreg.privacy import (
    CONVERSIONS,
    DEFAULT_CONVERSION,
    ZCDP,
    ApproxDP,
    approx_dp_to_zcdp,
    compose,
    eps_to_zcdp,
    zcdp_to_approx_dp,
    zcdp_to_eps,
)
from dpreg.privacy.rdp import DEFAULT_ORDERS

RHOS = st.floats(min_value=-8, max_value=4).map(lambda x: 10.0**x)
DELTAS = st.floats(min_value=-12, max_value=-2).map(lambda x: 10.0**x)
METHODS = st.sampled_from(CONVERSIONS)
PROPERTY = settings(max_examples=60, deadline=None)


def brute_force_tight(rho: float, delta: float) -> float:
    """CKS (2020) Cor. 13 written literally and minimised over a dense grid of alpha."""
    alpha = 1.0 + np.logspace(-7, 7, 400_001)
    eps = rho * alpha + (
        math.log(1 / delta) + (alpha - 1) * np.log(1 - 1 / alpha) - np.log(alpha)
    ) / (alpha - 1)
    return float(eps.min())


# --------------------------------------------------------------------------- constants


def test_conversion_names() -> None:
    assert CONVERSIONS == ("simple", "tight")
    assert DEFAULT_CONVERSION == "tight"


# --------------------------------------------------------------------------- reference values


def test_simple_reference_values() -> None:
    # Hand computation: 0.015 + 2 sqrt(0.015 ln 1e6) = 0.015 + 2 * 0.455228 = 0.925456.
    assert zcdp_to_eps(0.015, 1e-6, method="simple") == pytest.approx(0.925456, abs=1e-6)
    assert round(zcdp_to_eps(0.015, 1e-6, method="simple"), 3) == 0.925
    # 10 + 2 sqrt(10 ln 1e5) = 10 + 2 * 10.729830 = 31.45966.
    assert zcdp_to_eps(10.0, 1e-5, method="simple") == pytest.approx(31.45966, abs=1e-5)


@pytest.mark.parametrize(
    ("rho", "delta", "expected"),
    [(0.015, 1e-6, 0.771734), (10.0, 1e-5, 30.110857), (1e-8, 1e-6, 3.45588e-4)],
)
def test_tight_reference_values(rho: float, delta: float, expected: float) -> None:
    # Expected values: the literal formula on a 400k-point alpha grid (checked below).
    assert zcdp_to_eps(rho, delta) == pytest.approx(expected, rel=1e-5)
    assert zcdp_to_eps(rho, delta, method="tight") == zcdp_to_eps(rho, delta)


@pytest.mark.parametrize("rho", [1e-8, 1e-5, 0.015, 1.0, 10.0, 1e3, 1e4])
@pytest.mark.parametrize("delta", [1e-12, 1e-6, 1e-2])
def test_tight_matches_literal_formula_on_dense_grid(rho: float, delta: float) -> None:
    ours = zcdp_to_eps(rho, delta)
    grid = max(brute_force_tight(rho, delta), 0.0)  # ours is clipped at 0 (rho << delta^2)
    # ours is an infimum over the continuum: never above the grid minimum (beyond fp) ...
    assert ours <= grid + 1e-12 * max(1.0, grid)
    # ... and the grid (ratio 1.00008 between neighbours) gets within 1e-7 relative of it.
    assert grid == pytest.approx(ours, rel=1e-7, abs=1e-12)


@pytest.mark.parametrize("rho", [1e-8, 1e-4, 0.015, 1.0, 10.0, 1e4])
@pytest.mark.parametrize("delta", [1e-12, 1e-6, 1e-2])
def test_tight_not_above_simple_on_grid(rho: float, delta: float) -> None:
    tight, simple = zcdp_to_eps(rho, delta, "tight"), zcdp_to_eps(rho, delta, "simple")
    assert tight <= simple
    assert tight < simple  # strictly better in this whole range


@PROPERTY
@given(rho=RHOS, delta=DELTAS)
def test_tight_not_above_simple_property(rho: float, delta: float) -> None:
    assert zcdp_to_eps(rho, delta, "tight") <= zcdp_to_eps(rho, delta, "simple")


# --------------------------------------------------------------------------- dp-accounting


@pytest.mark.parametrize("sigma", [0.5, 1.0, 5.0, 20.0, 100.0])
@pytest.mark.parametrize("delta", [1e-5, 1e-9])
def test_tight_matches_dp_accounting_gaussian(sigma: float, delta: float) -> None:
    """Exact relationship tested.

    dp-accounting's RdpAccountant gives the GaussianDpEvent(sigma) the RDP curve
    ``alpha / (2 sigma^2) = alpha * rho`` (q = 1 branch of
    ``_compute_rdp_poisson_subsampled_gaussian``) and ``compute_epsilon`` returns
    ``min over its orders a > 1.01 of  a rho + log1p(-1/a) - log(delta a) / (a - 1)``,
    which is algebraically CKS (2020) Prop. 12, i.e. our objective at alpha = a (its
    KL branch, returning 0, only fires when delta^2 > 1 - exp(-a rho), not here).
    Hence ours (inf over all alpha > 1) <= theirs on any grid, and on our dense grid
    (200 orders per decade up to 1e4) theirs exceeds ours by < 1e-4 relative.
    """
    rho = 1.0 / (2.0 * sigma**2)
    ours = zcdp_to_eps(rho, delta)
    for orders in (dpa_rdp.DEFAULT_RDP_ORDERS, DEFAULT_ORDERS):
        accountant = dp_accounting.rdp.RdpAccountant(orders=orders)
        accountant.compose(dp_accounting.GaussianDpEvent(noise_multiplier=sigma))
        theirs = accountant.get_epsilon(delta)
        assert ours <= theirs * (1 + 1e-12)
    # our dense grid: within 1e-4 relative
    assert theirs <= ours * (1 + 1e-4)
    if sigma <= 5.0:
        # dp-accounting's default grid (steps of 0.1 below 11, then sparse up to 1024)
        # is within 1% for moderate noise; for sigma = 20 or 100 it is 2-5% loose.
        coarse = dp_accounting.rdp.RdpAccountant(orders=dpa_rdp.DEFAULT_RDP_ORDERS)
        coarse.compose(dp_accounting.GaussianDpEvent(noise_multiplier=sigma))
        assert coarse.get_epsilon(delta) <= ours * 1.01


@pytest.mark.parametrize("order", [1.5, 2.0, 7.25, 64.0, 1000.0])
def test_per_order_formula_equals_dp_accounting(order: float) -> None:
    rho, delta = 0.3, 1e-6
    theirs, _ = dpa_rdp.compute_epsilon([order], [order * rho], delta)
    literal = rho * order + (
        math.log(1 / delta) + (order - 1) * math.log(1 - 1 / order) - math.log(order)
    ) / (order - 1)
    assert theirs == pytest.approx(literal, rel=1e-12)
    assert zcdp_to_eps(rho, delta) <= theirs


def test_composed_zcdp_matches_dp_accounting_zcdp_events() -> None:
    budgets = [ZCDP(0.01), ZCDP(0.05), ZCDP(0.2)]
    accountant = dp_accounting.rdp.RdpAccountant(orders=DEFAULT_ORDERS)
    for b in budgets:
        accountant.compose(dp_accounting.ZCDpEvent(rho=b.rho))
    ours = compose(*budgets).to_approx_dp(1e-6).epsilon
    theirs = accountant.get_epsilon(1e-6)
    assert ours <= theirs * (1 + 1e-12)
    assert theirs == pytest.approx(ours, rel=1e-4)


# --------------------------------------------------------------------------- inverses


# rho >= 2 delta^2 keeps the tight epsilon > 0 (below ~1.4 delta^2 it is clipped to 0).
ROUND_TRIP_GRID = [
    (rho, delta)
    for rho in [1e-8, 1e-4, 0.015, 1.0, 10.0, 1e4]
    for delta in [1e-12, 1e-6, 1e-2]
    if rho >= 2 * delta**2
]


@pytest.mark.parametrize("method", CONVERSIONS)
@pytest.mark.parametrize(("rho", "delta"), ROUND_TRIP_GRID)
def test_round_trip_grid(method: str, rho: float, delta: float) -> None:
    eps = zcdp_to_eps(rho, delta, method)
    assert eps_to_zcdp(eps, delta, method) == pytest.approx(rho, rel=1e-9)


@PROPERTY
@given(rho=RHOS, delta=DELTAS, method=METHODS)
def test_round_trip_property(rho: float, delta: float, method: str) -> None:
    assume(rho >= 2 * delta**2)
    eps = zcdp_to_eps(rho, delta, method)
    assert eps_to_zcdp(eps, delta, method) == pytest.approx(rho, rel=1e-9)


@PROPERTY
@given(
    eps=st.floats(min_value=-3, max_value=3).map(lambda x: 10.0**x), delta=DELTAS, method=METHODS
)
def test_eps_to_zcdp_is_largest_feasible_rho(eps: float, delta: float, method: str) -> None:
    rho = eps_to_zcdp(eps, delta, method)
    assert rho > 0
    assert zcdp_to_eps(rho, delta, method) <= eps * (1 + 1e-12)
    assert zcdp_to_eps(rho * (1 + 1e-6), delta, method) > eps


def test_simple_inverse_closed_form() -> None:
    eps, delta = 1.0, 1e-5
    log_inv = math.log(1 / delta)
    expected = (math.sqrt(eps + log_inv) - math.sqrt(log_inv)) ** 2
    assert eps_to_zcdp(eps, delta, "simple") == pytest.approx(expected, rel=1e-12)
    # the tight conversion allows a larger rho for the same (eps, delta)
    assert eps_to_zcdp(eps, delta, "tight") > expected


# --------------------------------------------------------------------------- monotonicity


@PROPERTY
@given(rho=RHOS, factor=st.floats(1.001, 100.0), delta=DELTAS, method=METHODS)
def test_eps_increasing_in_rho(rho: float, factor: float, delta: float, method: str) -> None:
    assume(rho >= 2 * delta**2)
    assert zcdp_to_eps(rho * factor, delta, method) > zcdp_to_eps(rho, delta, method)


@PROPERTY
@given(rho=RHOS, delta=DELTAS, factor=st.floats(1.01, 1e3), method=METHODS)
def test_eps_decreasing_in_delta(rho: float, delta: float, factor: float, method: str) -> None:
    bigger = min(delta * factor, 0.5)
    assume(bigger > delta and rho >= 2 * bigger**2)
    assert zcdp_to_eps(rho, bigger, method) < zcdp_to_eps(rho, delta, method)


# --------------------------------------------------------------------------- edge cases


def test_infinite_budgets() -> None:
    assert zcdp_to_eps(math.inf, 1e-6) == math.inf
    assert zcdp_to_eps(math.inf, 1e-6, "simple") == math.inf
    assert eps_to_zcdp(math.inf, 1e-6) == math.inf


def test_tiny_rho_large_delta_is_zero_epsilon() -> None:
    # CKS bound drops below 0 when rho << delta^2: (0, delta)-DP; clipped to 0.
    assert zcdp_to_eps(1e-8, 0.5) == 0.0
    assert zcdp_to_eps(1e-8, 0.5, "simple") > 0.0
    with pytest.raises(ValueError, match="epsilon=0"):
        zcdp_to_approx_dp(ZCDP(1e-8), 0.5)


@pytest.mark.parametrize("rho", [0.0, -1.0, math.nan, -math.inf])
def test_bad_rho(rho: float) -> None:
    with pytest.raises(ValueError, match="rho"):
        zcdp_to_eps(rho, 1e-6)


@pytest.mark.parametrize("delta", [0.0, 1.0, -0.1, 1.5, math.nan])
def test_bad_delta(delta: float) -> None:
    with pytest.raises(ValueError, match="delta"):
        zcdp_to_eps(0.5, delta)
    with pytest.raises(ValueError, match="delta"):
        eps_to_zcdp(1.0, delta)
    with pytest.raises(ValueError, match="delta"):
        ZCDP(0.5).to_approx_dp(delta)


@pytest.mark.parametrize("eps", [0.0, -1.0, math.nan])
def test_bad_epsilon(eps: float) -> None:
    with pytest.raises(ValueError, match="epsilon"):
        eps_to_zcdp(eps, 1e-6)


def test_bad_method() -> None:
    with pytest.raises(ValueError, match="method"):
        zcdp_to_eps(0.5, 1e-6, method="exact")
    with pytest.raises(ValueError, match="method"):
        eps_to_zcdp(1.0, 1e-6, method="Tight")


# --------------------------------------------------------------------------- budget objects


@pytest.mark.parametrize("method", CONVERSIONS)
def test_budget_methods_and_wrappers(method: str) -> None:
    z = ZCDP(0.5)
    a = z.to_approx_dp(1e-6, method=method)
    assert a == zcdp_to_approx_dp(z, 1e-6, method)
    assert a == ApproxDP(zcdp_to_eps(0.5, 1e-6, method), 1e-6)
    back = a.to_zcdp(method=method)
    assert back == approx_dp_to_zcdp(a, method)
    assert back.rho == pytest.approx(0.5, rel=1e-9)


def test_budget_methods_default_to_tight() -> None:
    assert ZCDP(0.5).to_approx_dp(1e-6).epsilon == zcdp_to_eps(0.5, 1e-6, "tight")
    assert ApproxDP(1.0, 1e-6).to_zcdp().rho == eps_to_zcdp(1.0, 1e-6, "tight")


def test_wrappers_reject_wrong_budget_kind() -> None:
    with pytest.raises(TypeError, match="ZCDP"):
        zcdp_to_approx_dp(ApproxDP(1.0, 1e-6), 1e-6)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="ApproxDP"):
        approx_dp_to_zcdp(ZCDP(0.5))  # type: ignore[arg-type]


# --------------------------------------------------------------------------- composition


def test_compose_zcdp_adds_rho() -> None:
    out = compose(ZCDP(0.1), ZCDP(0.2), ZCDP(0.05))
    assert isinstance(out, ZCDP)
    assert out.rho == pytest.approx(0.35, rel=1e-15)
    assert compose(ZCDP(0.3)) == ZCDP(0.3)


def test_compose_approx_dp_basic_composition() -> None:
    out = compose(ApproxDP(0.5, 1e-6), ApproxDP(1.0, 2e-6))
    assert isinstance(out, ApproxDP)
    assert out.epsilon == pytest.approx(1.5)
    assert out.delta == pytest.approx(3e-6)


def test_compose_split_round_trip() -> None:
    parts = ZCDP(1.0).split(1, 2, 3)
    assert compose(*parts).rho == pytest.approx(1.0, rel=1e-15)


def test_compose_errors() -> None:
    with pytest.raises(TypeError, match="convert"):
        compose(ZCDP(0.1), ApproxDP(1.0, 1e-6))
    with pytest.raises(TypeError, match="at least one"):
        compose()
    with pytest.raises(TypeError, match="budget"):
        compose(ZCDP(0.1), 0.2)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="delta"):
        compose(ApproxDP(1.0, 0.6), ApproxDP(1.0, 0.6))
