"""Lemma D.12 of Choquette-Choo et al. (2023): covariance of the Noisy-FTRL noise process."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpreg.estimators.ftrl import correlated_noise
from dpreg.estimators.ftrl_correlations import independent, nu_ftrl
from dpreg.theory import ftrl_finite_time as ft
from dpreg.theory.ftrl import gaussian_kurtosis_constants
from dpreg.theory.ftrl_noise_covariance import lemma_d12_covariance, lemma_d12_trace_bound


def _noise_process(lam, beta, eta, sigma, sigma_sgd, steps, n, seed):
    """theta_t - theta* of Noisy-FTRL from theta* (80), at ``steps``; shape (len, n, d)."""
    rng = np.random.default_rng(seed)
    t_max = int(max(steps))
    d = lam.size
    b = np.zeros(t_max)
    m = min(len(beta), t_max)
    b[:m] = beta[:m]
    z = correlated_noise(b, sigma * rng.standard_normal((t_max, n, d)))
    theta = np.zeros((n, d))
    out = {}
    for t in range(t_max + 1):
        if t in steps:
            out[t] = theta.copy()
        if t == t_max:
            break
        x = np.sqrt(lam) * rng.standard_normal((n, d))
        xi = sigma_sgd * rng.standard_normal(n)
        theta = theta - eta * x * ((x * theta).sum(1) - xi)[:, None] - eta * z[t]
    return np.stack([out[t] for t in steps])


@pytest.mark.parametrize("mech", ["sgd", "nu_ftrl"])
def test_exact_covariance_matches_monte_carlo(mech):
    lam = np.array([1.0, 0.5, 0.2])
    r2, _ = gaussian_kurtosis_constants(lam)
    eta, n, steps = 0.5 / r2, 6000, [1, 5, 40, 150]
    beta = (independent() if mech == "sgd" else nu_ftrl(eta * lam.min())).coefficients(200)
    sim = _noise_process(lam, beta, eta, 1.0, 0.7, steps, n, 1212) ** 2
    mean, se = sim.mean(1), sim.std(1, ddof=1) / math.sqrt(n)
    exact = lemma_d12_covariance(beta, lam, eta, steps, sigma=1.0, sigma_sgd=0.7)
    assert np.all(np.abs(mean - exact) <= 4 * se)
    # the trace bound: Monte Carlo mean + 4 SE below it
    tr, tr_se = sim.sum(2).mean(1), sim.sum(2).std(1, ddof=1) / math.sqrt(n)
    bound = lemma_d12_trace_bound(beta, lam, eta, steps, sigma=1.0, sigma_sgd=0.7)
    assert np.all(tr + 4 * tr_se <= bound)


@pytest.mark.parametrize("mech", ["sgd", "nu_ftrl"])
def test_exact_covariance_agrees_with_exact_suboptimality(mech):
    # two independent exact computations: (83) here, the lag expansion in ftrl_finite_time
    lam = 1.0 / np.arange(1, 6)
    r2, _ = gaussian_kurtosis_constants(lam)
    eta = 0.6 / r2
    corr = independent() if mech == "sgd" else nu_ftrl(eta * lam.min())
    steps = [0, 1, 7, 60]
    sigma = math.sqrt(corr.gamma_inf_sq / 2.0)  # rho = 1, G = 1
    cov = lemma_d12_covariance(corr.coefficients(61), lam, eta, steps, sigma=sigma, sigma_sgd=0.3)
    exact = ft.exact_suboptimality(corr, lam, eta, steps, sigma_sgd=0.3)
    assert np.allclose(0.5 * cov @ lam, exact, rtol=1e-10, atol=1e-15)


def test_trace_bound_tight_regime():
    # d = 1, eta = 1/R^2: the contraction Tr P S <= (1 - eta mu) Tr S is exact, and for a
    # long constant beta the noise term approaches F.17's (1 + a)/(1 - a) per ||beta||^2;
    # the only slack left is (2 - eta lam) / (eta lam) <= 2 / (eta lam): ratio -> 5/6
    lam = np.array([1.0])
    eta = 1.0 / 3.0
    beta = np.ones(400)
    cov = lemma_d12_covariance(beta, lam, eta, [400], sigma=1.0)
    bound = lemma_d12_trace_bound(beta, lam, eta, [400], sigma=1.0)
    ratio = float(cov.sum() / bound[0])
    assert 0.8 < ratio <= 5.0 / 6.0 + 1e-12  # measured 0.823
    # and the simulation agrees: Monte Carlo within 4 SE of the exact value
    n = 4000
    sim = _noise_process(lam, beta, eta, 1.0, 0.0, [400], n, 31) ** 2
    assert abs(sim.mean() - cov.sum()) <= 4 * sim.std(ddof=1) / math.sqrt(n)


@settings(max_examples=30, deadline=None)
@given(
    d=st.integers(1, 5),
    alpha=st.floats(0.0, 1.5),
    eta_frac=st.floats(0.05, 1.0),
    sigma=st.floats(0.0, 3.0),
    sigma_sgd=st.floats(0.0, 3.0),
    mech=st.sampled_from(["sgd", "nu_ftrl", "anti", "constant"]),
)
def test_monotone_and_bounded(d, alpha, eta_frac, sigma, sigma_sgd, mech):
    # Lemma D.12 (a): S_t <= S_{t+1} (diagonal, so entrywise); (b) with the proof's bound:
    # Tr S_t <= U_t <= U_inf (the uniform bound), U_t non-decreasing
    lam = np.arange(1, d + 1, dtype=float) ** -alpha
    r2, _ = gaussian_kurtosis_constants(lam)
    eta = eta_frac / r2
    t_max = 120
    beta = {
        "sgd": independent().coefficients(t_max),
        "nu_ftrl": nu_ftrl(eta * lam.min()).coefficients(t_max),
        "anti": np.array([1.0, -1.0]),
        "constant": np.ones(30),
    }[mech]
    steps = np.arange(t_max + 1)
    cov = lemma_d12_covariance(beta, lam, eta, steps, sigma=sigma, sigma_sgd=sigma_sgd)
    assert np.all(np.diff(cov, axis=0) >= -1e-13 * (1 + cov[1:]))
    bound = lemma_d12_trace_bound(beta, lam, eta, steps, sigma=sigma, sigma_sgd=sigma_sgd)
    uniform = lemma_d12_trace_bound(beta, lam, eta, math.inf, sigma=sigma, sigma_sgd=sigma_sgd)
    assert np.all(cov.sum(1) <= bound * (1 + 1e-12) + 1e-300)
    assert np.all(bound <= uniform[0] * (1 + 1e-12))
    assert np.all(np.diff(bound) >= 0)


def test_input_errors():
    with pytest.raises(ValueError, match="eta must be <= 1/R"):
        lemma_d12_covariance([1.0], [1.0], 0.5, [1], sigma=1.0)
    with pytest.raises(ValueError, match="sigma must"):
        lemma_d12_covariance([1.0], [1.0], 0.1, [1], sigma=-1.0)
    with pytest.raises(ValueError, match="sigma_sgd must"):
        lemma_d12_trace_bound([1.0], [1.0], 0.1, [1], sigma=1.0, sigma_sgd=math.nan)
    with pytest.raises(ValueError, match="t must"):
        lemma_d12_covariance([1.0], [1.0], 0.1, [-1], sigma=1.0)
    with pytest.raises(ValueError, match="t must"):
        lemma_d12_trace_bound([1.0], [1.0], 0.1, [1.5], sigma=1.0)
    with pytest.raises(ValueError, match="beta"):
        lemma_d12_covariance([math.inf], [1.0], 0.1, [1], sigma=1.0)
