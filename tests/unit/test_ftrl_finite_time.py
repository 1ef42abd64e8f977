"""Finite-time bounds of Choquette-Choo et al. (2023), App. D (Theorems D.11-D.15)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpreg.estimators.ftrl import simulate_streaming_regression
from dpreg.estimators.ftrl_correlations import independent, nu_ftrl
from dpreg.theory import ftrl as theory
from dpreg.theory import ftrl_finite_time as ft


def _design(d: int, alpha: float, eta_frac: float):
    lam = np.arange(1, d + 1, dtype=float) ** -alpha
    r2, _ = theory.gaussian_kurtosis_constants(lam)
    return lam, eta_frac / r2


def _corr(mech: str, lam: np.ndarray, eta: float):
    return independent() if mech == "sgd" else nu_ftrl(eta * float(lam.min()))


# ----------------------------------------------------------- the exact finite-t error


def test_exact_small_case_by_hand():
    # t = 1: delta_1 = A delta_0 - eta w_0; E A^T H A diagonal by Isserlis (hand algebra)
    lam, eta = np.array([1.0, 0.5]), 0.1
    m1 = (1 - 2 * eta * lam + 2 * eta**2 * lam**2) * lam + eta**2 * lam * (lam @ lam)
    sigma_sq = 0.5  # gamma_inf^2 = 1, rho = 1
    expected = 0.5 * (0.5 * m1.sum() + eta**2 * sigma_sq * lam.sum())
    got = ft.exact_suboptimality(independent(), lam, eta, [1], initial_distance=1.0)
    assert got[0] == pytest.approx(expected, rel=1e-14)


@pytest.mark.parametrize("mech", ["sgd", "nu_ftrl"])
def test_exact_matches_monte_carlo(mech):
    lam, eta = _design(6, 1.0, 0.3)
    corr = _corr(mech, lam, eta)
    trials, steps = 1500, np.array([0, 3, 30, 150, 600])
    res = simulate_streaming_regression(
        lam,
        correlation=corr,
        eta=eta,
        T=int(steps.max()) + 1,
        rng=np.random.default_rng(20231),
        trials=trials,
        record_every=1,
        initial_distance=1.0,
        sigma_sgd=0.5,
    )
    # the simulator records F after update t, i.e. F(theta_{t+1})
    mc = res.trace[:, steps]
    exact = ft.exact_suboptimality(corr, lam, eta, steps + 1, initial_distance=1.0, sigma_sgd=0.5)
    se = mc.std(axis=0, ddof=1) / math.sqrt(trials)
    assert np.all(np.abs(mc.mean(axis=0) - exact) <= 4.0 * se)


@pytest.mark.parametrize("mech", ["sgd", "nu_ftrl"])
def test_exact_stationary_between_lti_and_c15(mech):
    lam, eta = _design(4, 1.0, 0.5)
    corr = _corr(mech, lam, eta)
    tau = 1.0 / (eta * lam.min())
    late = ft.exact_suboptimality(corr, lam, eta, [int(25 * tau), int(30 * tau)])
    assert late[1] == pytest.approx(late[0], rel=1e-6)  # converged
    assert theory.lti_suboptimality(corr, lam, eta) < late[1]
    assert late[1] < theory.theorem_c15_upper(corr, lam, eta)


# ------------------------------------------------------------------- Theorem D.11


@settings(max_examples=25, deadline=None)
@given(
    d=st.integers(1, 5),
    alpha=st.floats(0.0, 1.5),
    eta_frac=st.floats(0.2, 0.9),
    r=st.floats(0.0, 3.0),
    sigma_sgd=st.floats(0.0, 2.0),
    mech=st.sampled_from(["sgd", "nu_ftrl"]),
)
def test_d11_bounds_the_exact_error(d, alpha, eta_frac, r, sigma_sgd, mech):
    lam, eta = _design(d, alpha, eta_frac)
    corr = _corr(mech, lam, eta)
    tau = 1.0 / (eta * lam.min())
    steps = np.unique(np.linspace(0, 3 * tau, 7).astype(int))
    kw = {"initial_distance": r, "sigma_sgd": sigma_sgd}
    exact = ft.exact_suboptimality(corr, lam, eta, steps, **kw)
    # the printed F_inf: the exact stationary value (converged: 30 time constants)
    f_inf = float(ft.exact_suboptimality(corr, lam, eta, [int(30 * tau)], sigma_sgd=sigma_sgd)[0])
    sharp = ft.theorem_d11_for(corr, lam, eta, steps, f_inf=f_inf, **kw)
    c15 = ft.theorem_d11_for(corr, lam, eta, steps, **kw)
    d13 = ft.theorem_d11_for(corr, lam, eta, steps, form="d13", **kw)
    assert np.all(exact <= sharp * (1 + 1e-9))
    assert np.all(sharp <= c15) and np.all(c15 <= d13 * (1 + 1e-12))


def test_d11_tends_to_f_inf_and_decreases():
    t = np.array([0.0, 10.0, 1e2, 1e3, 1e6])
    b = ft.theorem_d11_bound(t, L=10.0, mu=0.1, eta=0.5, initial_suboptimality=2.0, f_inf=0.3)
    assert np.all(np.diff(b) < 0)
    assert b[-1] == pytest.approx(0.3, rel=1e-12)
    assert b[0] == pytest.approx((math.sqrt(100 * 2.0) + math.sqrt(0.3)) ** 2)


def test_d11_from_optimum_is_the_asymptotic_value():
    lam, eta = _design(8, 1.0, 0.5)
    corr = nu_ftrl(eta * lam.min())
    b = ft.theorem_d11_for(corr, lam, eta, [0, 10, 1000])
    assert np.allclose(b, theory.theorem_c15_upper(corr, lam, eta), rtol=1e-14)


@settings(max_examples=30, deadline=None)
@given(d=st.integers(2, 64), alpha=st.floats(0.3, 1.5), r=st.floats(0.0, 5.0))
def test_d11_nu_ftrl_below_sgd(d, alpha, r):
    lam, eta = _design(d, alpha, 0.5)
    t = [0, 100, 10_000]
    sgd = ft.theorem_d11_for(independent(), lam, eta, t, initial_distance=r)
    ftrl = ft.theorem_d11_for(nu_ftrl(eta * lam.min()), lam, eta, t, initial_distance=r)
    assert np.all(ftrl < sgd)


# ------------------------------------------------------------ D.3, D.13, D.14, D.15


def test_half_expo_decay_of_nu_ftrl():
    # Def. D.3 for beta^nu (Eq. 7) with parameter nu: C = sum_k |binom(1/2, k)| (1-nu)^{k/2}
    # <= sum_k |binom(1/2, k)| = 2 (sqrt(1 - z) at z = 1), uniformly in nu
    for nu in (0.1, 0.01, 0.001):
        beta = nu_ftrl(nu).coefficients(int(40 / nu))
        c = ft.half_expo_decay_constant(beta, nu)
        assert 1.0 < c <= 2.0
    # anti-PGD (1, -1): C = 1 + (1-nu)^{-1/2}
    assert ft.half_expo_decay_constant([1.0, -1.0], 0.19) == pytest.approx(1 + 1 / 0.9)


def test_d13_clip_norm_and_learning_rate_scale():
    lam = np.ones(3)  # R^2 = 5, mu = 1
    g = ft.theorem_d13_clip_norm(
        lam, initial_distance=0.0, eta=0.1, sigma_sgd=2.0, T=50, p=0.5, c=2.0
    )
    scale = max(math.sqrt(0.1 * 5 * 4 / 1), 2.0 / math.sqrt(5))
    assert g == pytest.approx(2.0 * 5 * scale * math.log(100) ** 2.5)
    lr = ft.theorem_d13_max_learning_rate(
        lam, nu_tilde=0.01, rho=1.0, gamma_sq=2.0, beta_l1=2.0, T=50, p=0.5
    )
    assert lr == pytest.approx(0.01 / (8 * 25 * 3 * 2.0 * 4.0 * math.log(100) ** 5))


@settings(max_examples=30, deadline=None)
@given(
    d=st.integers(1, 64),
    alpha=st.floats(0.0, 1.5),
    r=st.floats(0.1, 5.0),
    sigma=st.floats(0.0, 2.0),
    logT=st.floats(6.0, 30.0),
)
def test_d15_private_terms_replace_d_by_kappa_deff_over_T(d, alpha, r, sigma, logT):
    lam = np.arange(1, d + 1, dtype=float) ** -alpha
    T = int(10**logT)
    kw = {"rho": 1.0, "initial_distance": r, "sigma_sgd": sigma, "c": 1e-30}  # no transient
    kappa, deff = lam.max() / lam.min(), theory.effective_dimension(lam)
    d14 = ft.corollary_d14_rate(lam, T=T, **kw)  # c -> 0: the transient exp(-...) = 0
    d15 = ft.corollary_d15_rate(lam, T=T, **kw)
    floor = kappa * deff * sigma**2 / T
    ratio = (d15 - floor) / (d14 - floor)
    assert ratio == pytest.approx(kappa * deff / (T * d), rel=1e-6)


# -------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"L": -1.0}, "L"),
        ({"mu": 0.0}, "mu"),
        ({"mu": 5.0}, "mu"),
        ({"eta": math.nan}, "eta"),
        ({"initial_suboptimality": -1.0}, "initial_suboptimality"),
        ({"f_inf": math.inf}, "f_inf"),
        ({"t": -1.0}, "t"),
    ],
)
def test_d11_refuses_bad_input(kwargs, name):
    args = {"t": 1.0, "L": 1.0, "mu": 1.0, "eta": 0.1, "initial_suboptimality": 1.0}
    args |= {"f_inf": 1.0} | kwargs
    with pytest.raises(ValueError, match=name):
        ft.theorem_d11_bound(args.pop("t"), **args)


def test_other_functions_refuse_bad_input():
    lam = np.ones(2)
    with pytest.raises(ValueError, match="f_inf"):
        ft.theorem_d11_for(independent(), lam, 0.1, 1, f_inf="lti")
    with pytest.raises(ValueError, match="form"):
        ft.theorem_d11_for(independent(), lam, 0.1, 1, form="d12")
    with pytest.raises(ValueError, match="f_inf='c15' is infinite"):
        ft.theorem_d11_for(independent(), lam, 1.0, 1)
    with pytest.raises(ValueError, match="t must"):
        ft.exact_suboptimality(independent(), lam, 0.1, [1.5])
    with pytest.raises(ValueError, match="initial_distance"):
        ft.exact_suboptimality(independent(), lam, 0.1, [1], initial_distance=-1.0)
    with pytest.raises(TypeError, match="correlation"):
        ft.exact_suboptimality("sgd", lam, 0.1, [1])
    with pytest.raises(ValueError, match="nu"):
        ft.half_expo_decay_constant([1.0], 1.0)
    with pytest.raises(ValueError, match="p must"):
        ft.theorem_d13_clip_norm(lam, initial_distance=1, eta=0.1, sigma_sgd=0, T=5, p=0)
    with pytest.raises(ValueError, match="T must"):
        ft.corollary_d14_rate(lam, T=1, rho=1.0, initial_distance=1.0, sigma_sgd=0.0)
    with pytest.raises(ValueError, match="rho"):
        ft.corollary_d15_rate(lam, T=10, rho=0.0, initial_distance=1.0, sigma_sgd=0.0)
