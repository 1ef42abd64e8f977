"""Gaussian mechanism calibration (dpreg.privacy.gaussian)."""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_distribution, privacy_loss_mechanism
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from dpreg.privacy import (
    analytic_gaussian_sigma,
    classic_gaussian_sigma,
    gaussian_delta,
    gaussian_epsilon,
    gaussian_zcdp,
    zcdp_gaussian_sigma,
)

EPS_GRID = [0.01, 0.1, 1.0, 10.0, 50.0]
DELTA_GRID = [1e-12, 1e-6, 1e-2]
EPSILONS = st.floats(min_value=-2, max_value=1.7).map(lambda x: 10.0**x)
DELTAS = st.floats(min_value=-12, max_value=-1).map(lambda x: 10.0**x)
SENS = st.floats(min_value=-3, max_value=3).map(lambda x: 10.0**x)
FACTORS = st.floats(min_value=1.01, max_value=10.0)
PROPERTY = settings(max_examples=40, deadline=None)


# --------------------------------------------------------------------------- zCDP


def test_zcdp_sigma_reference_values() -> None:
    assert zcdp_gaussian_sigma(0.5, 1.0) == pytest.approx(1.0, rel=1e-15)
    assert zcdp_gaussian_sigma(0.015, 2.0) == pytest.approx(11.547005383792516, rel=1e-12)
    assert zcdp_gaussian_sigma(math.inf, 1.0) == 0.0
    assert gaussian_zcdp(2.0, 1.0) == pytest.approx(0.125, rel=1e-15)


@PROPERTY
@given(rho=st.floats(-8, 4).map(lambda x: 10.0**x), sens=SENS)
def test_zcdp_sigma_inverse(rho: float, sens: float) -> None:
    assert gaussian_zcdp(zcdp_gaussian_sigma(rho, sens), sens) == pytest.approx(rho, rel=1e-12)


@PROPERTY
@given(rho=st.floats(-8, 4).map(lambda x: 10.0**x), factor=FACTORS, sens=SENS)
def test_zcdp_sigma_monotone_and_linear(rho: float, factor: float, sens: float) -> None:
    assert zcdp_gaussian_sigma(rho * factor, sens) < zcdp_gaussian_sigma(rho, sens)
    assert zcdp_gaussian_sigma(rho, sens * factor) == pytest.approx(
        factor * zcdp_gaussian_sigma(rho, sens), rel=1e-12
    )


# --------------------------------------------------------------------------- classic


def test_classic_reference_value() -> None:
    # sqrt(2 ln(1.25e5)) = sqrt(23.47223) = 4.844815
    assert classic_gaussian_sigma(1.0, 1e-5, 1.0) == pytest.approx(4.844805, rel=1e-6)
    assert classic_gaussian_sigma(0.5, 1e-5, 3.0) == pytest.approx(6 * 4.844805, rel=1e-6)


@pytest.mark.parametrize("eps", [0.01, 0.1, 0.5, 0.99])
@pytest.mark.parametrize("delta", DELTA_GRID)
def test_classic_is_private_for_eps_below_one(eps: float, delta: float) -> None:
    # Dwork & Roth Thm A.1 holds for eps < 1: the exact profile confirms it.
    assert gaussian_delta(classic_gaussian_sigma(eps, delta, 1.0), eps, 1.0) <= delta


def test_classic_fails_for_large_eps() -> None:
    # The docstring caveat is real: beyond eps = 1 the classic scale can be too small.
    sigma = classic_gaussian_sigma(10.0, 1e-6, 1.0)
    assert gaussian_delta(sigma, 10.0, 1.0) > 1e-6
    assert sigma < analytic_gaussian_sigma(10.0, 1e-6, 1.0)


# --------------------------------------------------------------------------- analytic (AGM)


@pytest.mark.parametrize("eps", EPS_GRID)
@pytest.mark.parametrize("delta", DELTA_GRID)
@pytest.mark.parametrize("sens", [1.0, 3.7])
def test_agm_attains_delta(eps: float, delta: float, sens: float) -> None:
    sigma = analytic_gaussian_sigma(eps, delta, sens)
    assert gaussian_delta(sigma, eps, sens) == pytest.approx(delta, rel=1e-6)
    assert gaussian_delta(sigma, eps, sens) <= delta  # certified side of the root
    assert gaussian_delta(sigma * (1 - 1e-9), eps, sens) > delta  # and the smallest


@pytest.mark.parametrize("eps", EPS_GRID)
@pytest.mark.parametrize("delta", DELTA_GRID)
def test_agm_matches_dp_accounting(eps: float, delta: float) -> None:
    # dp_accounting.get_sigma_gaussian: an independent implementation of the same
    # Balle & Wang (2018) calibration (scipy.stats.norm.logcdf, sensitivity 1).
    ours = analytic_gaussian_sigma(eps, delta, 2.5) / 2.5
    assert ours == pytest.approx(dp_accounting.get_sigma_gaussian(eps, delta), rel=1e-9)


def test_agm_extreme_epsilon_no_overflow() -> None:
    sigma = analytic_gaussian_sigma(1000.0, 1e-6, 1.0)  # exp(1000) would overflow
    assert math.isfinite(sigma) and sigma > 0
    assert gaussian_delta(sigma, 1000.0, 1.0) == pytest.approx(1e-6, rel=1e-6)


def test_agm_reference_value_eps1() -> None:
    agm, classic = analytic_gaussian_sigma(1.0, 1e-5, 1.0), classic_gaussian_sigma(1.0, 1e-5, 1.0)
    assert agm == pytest.approx(3.730632, rel=1e-6)
    assert agm < classic


@pytest.mark.parametrize("eps", [0.01, 0.1, 0.5, 0.99])
@pytest.mark.parametrize("delta", DELTA_GRID)
def test_agm_below_classic_for_eps_below_one(eps: float, delta: float) -> None:
    assert analytic_gaussian_sigma(eps, delta, 1.0) < classic_gaussian_sigma(eps, delta, 1.0)


@PROPERTY
@given(eps=EPSILONS, delta=DELTAS, factor=FACTORS, sens=SENS)
def test_agm_monotone_and_linear(eps: float, delta: float, factor: float, sens: float) -> None:
    sigma = analytic_gaussian_sigma(eps, delta, sens)
    assert analytic_gaussian_sigma(eps * factor, delta, sens) < sigma
    assert analytic_gaussian_sigma(eps, min(delta * factor, 0.5), sens) < sigma
    assert analytic_gaussian_sigma(eps, delta, sens * factor) == pytest.approx(
        factor * sigma, rel=1e-9
    )


@PROPERTY
@given(eps=EPSILONS, delta=DELTAS, factor=FACTORS, sens=SENS)
def test_classic_monotone_and_linear(eps: float, delta: float, factor: float, sens: float) -> None:
    sigma = classic_gaussian_sigma(eps, delta, sens)
    assert classic_gaussian_sigma(eps * factor, delta, sens) < sigma
    assert classic_gaussian_sigma(eps, min(delta * factor, 0.5), sens) < sigma
    assert classic_gaussian_sigma(eps, delta, sens * factor) == pytest.approx(
        factor * sigma, rel=1e-12
    )


# --------------------------------------------------------------------------- privacy profile


@PROPERTY
@given(sigma=st.floats(-1, 2).map(lambda x: 10.0**x), eps=EPSILONS, factor=FACTORS)
def test_profile_decreasing_in_sigma_and_eps(sigma: float, eps: float, factor: float) -> None:
    d = gaussian_delta(sigma, eps, 1.0)
    if d > 1e-250:  # below that the profile underflows to 0 for both
        assert gaussian_delta(sigma * factor, eps, 1.0) < d
        assert gaussian_delta(sigma, eps * factor, 1.0) < d


@pytest.mark.parametrize(
    ("sigma", "sens", "eps"),
    [(1.0, 1.0, 0.5), (2.0, 1.0, 0.1), (0.8, 1.0, 1.0), (3.0, 2.0, 0.3), (0.2, 1.0, 10.0)],
)
def test_profile_matches_dp_accounting_closed_form(sigma: float, sens: float, eps: float) -> None:
    # dp-accounting's GaussianPrivacyLoss evaluates the same Theorem 8 formula.
    theirs = privacy_loss_mechanism.GaussianPrivacyLoss(
        sigma, sensitivity=sens
    ).get_delta_for_epsilon(eps)
    assert gaussian_delta(sigma, eps, sens) == pytest.approx(theirs, rel=1e-12)


@pytest.mark.parametrize(
    ("sigma", "sens", "eps"),
    [(1.0, 1.0, 0.5), (2.0, 1.0, 0.1), (0.8, 1.0, 1.0), (3.0, 2.0, 0.3), (1.0, 1.0, 3.0)],
)
@pytest.mark.parametrize("connect_dots", [False, True])
def test_profile_sandwiched_by_pld(sigma: float, sens: float, eps: float, connect_dots) -> None:
    """Tolerance from the discretisation.

    The PLD is built with pessimistic rounding on a grid of width h: every privacy
    loss value is moved *up* by at most h (and the truncated upper tail, mass
    < e^-50, goes to +inf). Since delta(eps) = E[(1 - exp(eps - L))_+] is increasing
    in L, exact(eps) <= PLD(eps) <= exact(eps - h) + 2e-22.
    """
    h = 1e-4
    pld = privacy_loss_distribution.from_gaussian_mechanism(
        sigma, sensitivity=sens, value_discretization_interval=h, use_connect_dots=connect_dots
    )
    theirs = pld.get_delta_for_epsilon(eps)
    exact = gaussian_delta(sigma, eps, sens)
    assert exact * (1 - 1e-12) <= theirs <= gaussian_delta(sigma, eps - h, sens) + 2e-22
    assert exact < gaussian_delta(sigma, eps - h, sens)  # the window is not empty


@pytest.mark.parametrize(
    ("sigma", "sens", "eps", "seed"),
    [(1.0, 1.0, 0.5, 1), (2.0, 1.0, 0.1, 2), (0.8, 1.5, 1.0, 3), (1.0, 1.0, 2.0, 4)],
)
def test_profile_monte_carlo(sigma: float, sens: float, eps: float, seed: int) -> None:
    """delta(eps) = E_{x ~ P}[(1 - exp(eps - L(x)))_+], L = log p_P(x) / p_Q(x).

    P = N(0, sigma^2), Q = N(sens, sigma^2); L from scipy's log-densities, not from
    the closed form.  Tolerance: 4 Monte Carlo standard errors.
    """
    rng = np.random.default_rng(seed)
    n = 400_000
    x = rng.normal(0.0, sigma, size=n)
    loss = stats.norm.logpdf(x, 0.0, sigma) - stats.norm.logpdf(x, sens, sigma)
    terms = np.maximum(0.0, -np.expm1(eps - loss))
    estimate = terms.mean()
    se = terms.std(ddof=1) / math.sqrt(n)
    assert abs(estimate - gaussian_delta(sigma, eps, sens)) < 4 * se
    # the check has power: a 10% error in delta would be many standard errors away
    assert 0.1 * estimate > 8 * se


@pytest.mark.parametrize("sigma", [0.3, 1.0, 10.0, 300.0])
@pytest.mark.parametrize("delta", DELTA_GRID)
def test_gaussian_epsilon_inverts_profile(sigma: float, delta: float) -> None:
    eps = gaussian_epsilon(sigma, delta, 1.0)
    if eps == 0.0:
        assert gaussian_delta(sigma, 1e-300, 1.0) <= delta * (1 + 1e-9)
    else:
        assert gaussian_delta(sigma, eps, 1.0) == pytest.approx(delta, rel=1e-8)
    assert eps == pytest.approx(dp_accounting.get_epsilon_gaussian(sigma, delta), abs=1e-9)


def test_gaussian_epsilon_agm_round_trip() -> None:
    for eps in EPS_GRID:
        sigma = analytic_gaussian_sigma(eps, 1e-6, 2.0)
        assert gaussian_epsilon(sigma, 1e-6, 2.0) == pytest.approx(eps, rel=1e-9)


# --------------------------------------------------------------------------- bad inputs


@pytest.mark.parametrize("bad", [0.0, -1.0, math.nan])
def test_bad_epsilon(bad: float) -> None:
    for call in (
        lambda: classic_gaussian_sigma(bad, 1e-6, 1.0),
        lambda: analytic_gaussian_sigma(bad, 1e-6, 1.0),
        lambda: gaussian_delta(1.0, bad, 1.0),
    ):
        with pytest.raises(ValueError, match="epsilon"):
            call()


@pytest.mark.parametrize("bad", [0.0, 1.0, -1e-6, 2.0, math.nan])
def test_bad_delta(bad: float) -> None:
    for call in (
        lambda: classic_gaussian_sigma(1.0, bad, 1.0),
        lambda: analytic_gaussian_sigma(1.0, bad, 1.0),
        lambda: gaussian_epsilon(1.0, bad, 1.0),
    ):
        with pytest.raises(ValueError, match="delta"):
            call()


@pytest.mark.parametrize("bad", [0.0, -2.0, math.nan, math.inf])
def test_bad_sensitivity(bad: float) -> None:
    for call in (
        lambda: zcdp_gaussian_sigma(0.5, bad),
        lambda: gaussian_zcdp(1.0, bad),
        lambda: classic_gaussian_sigma(1.0, 1e-6, bad),
        lambda: analytic_gaussian_sigma(1.0, 1e-6, bad),
        lambda: gaussian_delta(1.0, 1.0, bad),
    ):
        with pytest.raises(ValueError, match="sensitivity"):
            call()


@pytest.mark.parametrize("bad", [0.0, -0.5, math.nan])
def test_bad_rho_and_sigma(bad: float) -> None:
    with pytest.raises(ValueError, match="rho"):
        zcdp_gaussian_sigma(bad, 1.0)
    with pytest.raises(ValueError, match="sigma"):
        gaussian_zcdp(bad, 1.0)
    with pytest.raises(ValueError, match="sigma"):
        gaussian_delta(bad, 1.0, 1.0)
