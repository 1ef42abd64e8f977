"""Noise multipliers of DP-FTRL, checked against dp-accounting (Theorem 1.1)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from dpreg.estimators.ftrl_correlations import nu_ftrl
from dpreg.privacy.budgets import ZCDP, ApproxDP
from dpreg.privacy.correlated import (
    ftrl_epsilon,
    ftrl_noise_multiplier,
    ftrl_zcdp,
    matrix_sensitivity,
    multi_participation_sensitivity_sq,
)


def _rdp_epsilon(noise_multiplier: float, delta: float) -> float:
    import dp_accounting
    from dp_accounting.rdp import RdpAccountant

    orders = np.concatenate([1 + np.logspace(-3, 3, 3000)])
    acc = RdpAccountant(orders=orders)
    acc.compose(dp_accounting.GaussianDpEvent(noise_multiplier=noise_multiplier))
    return float(acc.get_epsilon(delta))


def _pld_epsilon(noise_multiplier: float, delta: float) -> float:
    import dp_accounting
    from dp_accounting.pld import PLDAccountant

    acc = PLDAccountant(value_discretization_interval=1e-4)
    acc.compose(dp_accounting.GaussianDpEvent(noise_multiplier=noise_multiplier))
    return float(acc.get_epsilon(delta))


def test_zcdp_noise_multiplier_is_gamma_over_sqrt_2rho():
    gamma = math.sqrt(nu_ftrl(0.01).gamma_inf_sq)
    sigma = ftrl_noise_multiplier(ZCDP(0.3), gamma)
    assert sigma == pytest.approx(gamma / math.sqrt(0.6), rel=1e-15)
    assert ftrl_zcdp(sigma, gamma).rho == pytest.approx(0.3, rel=1e-14)
    # the whole release is one Gaussian mechanism with sensitivity gamma: its RDP at
    # order alpha is alpha / (2 (sigma/gamma)^2) = alpha * rho (dp-accounting's unit)
    from dp_accounting.rdp import rdp_privacy_accountant as rdp

    orders = np.array([2.0, 8.0, 32.0])
    values = rdp._compute_rdp_poisson_subsampled_gaussian(1.0, sigma / gamma, orders)
    np.testing.assert_allclose(values, 0.3 * orders, rtol=1e-12)


@pytest.mark.parametrize("epsilon,delta", [(1.0, 1e-5), (8.0, 1e-6), (0.3, 1e-3)])
def test_approx_dp_via_zcdp_against_rdp_accountant(epsilon, delta):
    gamma = math.sqrt(nu_ftrl(0.05).sensitivity_sq(500))
    sigma = ftrl_noise_multiplier(ApproxDP(epsilon, delta), gamma, method="zcdp")
    eps_rdp = _rdp_epsilon(sigma / gamma, delta)
    # dp-accounting minimises the same conversion over a finite order grid: never below ours
    assert eps_rdp == pytest.approx(epsilon, rel=2e-3)
    assert eps_rdp >= epsilon * (1 - 1e-9)
    assert ftrl_epsilon(sigma, gamma, delta).epsilon == pytest.approx(epsilon, rel=1e-9)


@pytest.mark.parametrize("epsilon,delta", [(1.0, 1e-5), (4.0, 1e-6)])
def test_approx_dp_analytic_against_pld_accountant(epsilon, delta):
    gamma = 1.7
    sigma = ftrl_noise_multiplier(ApproxDP(epsilon, delta), gamma, method="analytic")
    assert sigma < ftrl_noise_multiplier(ApproxDP(epsilon, delta), gamma, method="zcdp")
    eps_pld = _pld_epsilon(sigma / gamma, delta)
    assert eps_pld == pytest.approx(epsilon, rel=2e-3)
    assert ftrl_epsilon(sigma, gamma, delta, method="analytic").epsilon == pytest.approx(
        epsilon, rel=1e-6
    )


def test_replace_one_doubles_sensitivity_and_infinite_budget():
    assert ftrl_noise_multiplier(ZCDP(1.0), 1.5, neighbours="replace_one") == pytest.approx(
        2 * ftrl_noise_multiplier(ZCDP(1.0), 1.5)
    )
    assert ftrl_noise_multiplier(ZCDP(math.inf), 1.5) == 0.0
    with pytest.raises(ValueError, match="sensitivity"):
        ftrl_noise_multiplier(ZCDP(1.0), 0.0)
    with pytest.raises(TypeError, match="budget"):
        ftrl_noise_multiplier(1.0, 1.0)
    with pytest.raises(ValueError, match="method"):
        ftrl_noise_multiplier(ApproxDP(1, 1e-5), 1.0, method="pld")


def test_matrix_sensitivity_of_toeplitz_encoder():
    T = 64
    c = nu_ftrl(0.1).encoder(T)
    C = np.zeros((T, T))
    for t in range(T):
        C[t:, t] = c[: T - t]
    assert matrix_sensitivity(C) == pytest.approx(math.sqrt(nu_ftrl(0.1).sensitivity_sq(T)))


def test_multi_participation_worst_case_is_evenly_spaced_from_zero():
    T, k, b = 14, 3, 4
    c = nu_ftrl(0.2).encoder(T)
    C = np.zeros((T, T))
    for t in range(T):
        C[t:, t] = c[: T - t]
    brute = 0.0
    for pos in itertools.combinations(range(T), k):
        if np.all(np.diff(pos) >= b):
            brute = max(brute, float(np.sum(C[:, list(pos)].sum(axis=1) ** 2)))
    assert multi_participation_sensitivity_sq(c, k, b) == pytest.approx(brute, rel=1e-13)
    assert multi_participation_sensitivity_sq(c, 1, b) == pytest.approx(np.dot(c, c))
    with pytest.raises(ValueError, match="participations"):
        multi_participation_sensitivity_sq(c, 0, 4)
