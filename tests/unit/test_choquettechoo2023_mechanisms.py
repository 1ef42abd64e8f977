"""Correlations, FFT noise, streaming simulation and DP-FTRL (Choquette-Choo et al. 2023)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, special

from dpreg.estimators import get_estimator
from dpreg.estimators.ftrl import (
    correlated_noise,
    fit_dp_ftrl,
    fit_dp_sgd_stream,
    simulate_streaming_regression,
)
from dpreg.estimators.ftrl_correlations import (
    anti_pgd,
    correlation_from_name,
    damped_anti_pgd,
    finite_toeplitz,
    independent,
    nu_ftrl,
    optimal_cc,
    optimal_mean_estimation,
)
from dpreg.privacy.budgets import ZCDP, ApproxDP
from dpreg.theory import ftrl as theory

ALL = [
    independent(),
    nu_ftrl(0.05),
    optimal_cc(),
    optimal_mean_estimation(0.3),
    anti_pgd(),
    damped_anti_pgd(0.2),
    finite_toeplitz([1.0, -0.4, 0.1]),
]


# ------------------------------------------------------------------ coefficients (Eq. 7)


@pytest.mark.parametrize("nu", [0.0, 0.01, 0.3])
def test_nu_ftrl_coefficients_are_binomial_half(nu):
    corr = nu_ftrl(nu) if nu > 0 else optimal_cc()
    t = np.arange(40)
    expected = (-1.0) ** t * special.binom(0.5, t) * (1 - nu) ** t
    np.testing.assert_allclose(corr.coefficients(40), expected, rtol=1e-13, atol=1e-300)
    beta = corr.coefficients(5)
    np.testing.assert_allclose(
        beta,
        [
            1,
            -0.5 * (1 - nu),
            -0.125 * (1 - nu) ** 2,
            -0.0625 * (1 - nu) ** 3,
            -0.0390625 * (1 - nu) ** 4,
        ],
        rtol=1e-14,
    )
    assert np.all(corr.coefficients(200)[1:] < 0)


@pytest.mark.parametrize("corr", ALL, ids=lambda c: c.label())
def test_encoder_inverts_decoder(corr):
    T = 300
    product = np.convolve(corr.coefficients(T), corr.encoder(T))[:T]
    expected = np.zeros(T)
    expected[0] = 1.0
    np.testing.assert_allclose(product, expected, atol=1e-12)


def test_nu_ftrl_encoder_closed_form():
    t = np.arange(60)
    expected = special.comb(2 * t, t) / 4.0**t * 0.9**t
    np.testing.assert_allclose(nu_ftrl(0.1).encoder(60), expected, rtol=1e-12)


# ------------------------------------------------------------------ sensitivities


def test_gamma_inf_of_nu_ftrl_matches_notes_and_series():
    corr = nu_ftrl(0.01)
    # reference value: docs/notes/choquettechoo2023.md §2.1
    assert corr.gamma_inf_sq == pytest.approx(2.136878, abs=1e-6)
    assert corr.sensitivity_sq(20000) == pytest.approx(corr.gamma_inf_sq, rel=1e-12)
    assert corr.sensitivity_sq(100) < corr.sensitivity_sq(1000) < corr.gamma_inf_sq


@pytest.mark.parametrize(
    "corr",
    [nu_ftrl(0.05), damped_anti_pgd(0.2), independent(), finite_toeplitz([1.0, -0.4, 0.1])],
    ids=lambda c: c.label(),
)
def test_gamma_inf_equals_parseval_integral(corr):
    # Eq. 5: gamma_inf^2 = (1/2pi) int |B|^{-2}, an independent computation.
    value = integrate.quad(
        lambda w: 1.0 / float(corr.spectrum(w)),
        -np.pi,
        np.pi,
        epsabs=0,
        epsrel=1e-12,
        limit=500,
        points=[0.0],
    )[0]
    assert corr.gamma_inf_sq == pytest.approx(value / (2 * np.pi), rel=1e-9)


def test_gamma_inf_tiny_nu_uses_ellipkm1():
    nu = 1e-9
    # K(k) ~ log(4 / sqrt(1 - k^2)) + O((1-k^2) log) as k -> 1 (F.10)
    expected = 2 / np.pi * np.log(4 / np.sqrt(nu * (2 - nu)))
    assert nu_ftrl(nu).gamma_inf_sq == pytest.approx(expected, rel=1e-8)


def test_closed_form_sensitivities():
    assert damped_anti_pgd(0.1).sensitivity_sq(50) == pytest.approx(
        np.sum(0.9 ** (2 * np.arange(50))), rel=1e-13
    )
    assert damped_anti_pgd(0.1).gamma_inf_sq == pytest.approx(1 / (0.1 * 1.9))
    assert anti_pgd().sensitivity_sq(77) == 77.0
    assert math.isinf(anti_pgd().gamma_inf_sq) and math.isinf(optimal_cc().gamma_inf_sq)
    assert independent().sensitivity_sq(10) == 1.0
    # Optimal CC: gamma_T^2 ~ (1/pi) log T (Table 2)
    growth = optimal_cc().sensitivity_sq(40000) - optimal_cc().sensitivity_sq(20000)
    assert growth == pytest.approx(np.log(2) / np.pi, rel=1e-3)
    assert math.isinf(finite_toeplitz([1.0, -1.0]).gamma_inf_sq)


def test_sensitivity_is_max_column_norm_of_encoder_matrix():
    # Theorem 1.1: the zero-out sensitivity is max_t ||C[:, t]||; Toeplitz -> column 0.
    T = 40
    for corr in ALL:
        c = corr.encoder(T)
        C = np.zeros((T, T))
        for t in range(T):
            C[t:, t] = c[: T - t]
        rng = np.random.default_rng(0)
        worst = 0.0
        for pos in range(T):
            g = rng.standard_normal(T)
            g /= abs(g[pos])  # unit-norm gradient at position pos
            g_prime = g.copy()
            g_prime[pos] = 0.0
            worst = max(worst, np.linalg.norm(C @ (g - g_prime)))
        assert worst == pytest.approx(np.sqrt(corr.sensitivity_sq(T)), rel=1e-12)


def test_spectrum_matches_dtft_of_coefficients():
    omega = np.linspace(-np.pi, np.pi, 9)
    for corr in (nu_ftrl(0.2), damped_anti_pgd(0.3), finite_toeplitz([1, 0.5])):
        beta = corr.coefficients(4000)
        dtft = np.abs(np.exp(-1j * np.outer(omega, np.arange(beta.size))) @ beta) ** 2
        np.testing.assert_allclose(corr.spectrum(omega), dtft, rtol=1e-9)


def test_bad_correlation_inputs():
    with pytest.raises(ValueError, match="nu must lie"):
        nu_ftrl(0.0)
    with pytest.raises(ValueError, match="nu must lie"):
        nu_ftrl(1.2)
    with pytest.raises(ValueError, match="beta\\[0\\]"):
        finite_toeplitz([0.0, 1.0])
    with pytest.raises(ValueError, match="correlation must be one of"):
        correlation_from_name("tree")
    with pytest.raises(ValueError, match="needs nu"):
        correlation_from_name("nu_ftrl")
    with pytest.raises(ValueError, match="T"):
        nu_ftrl(0.1).coefficients(0)


# ------------------------------------------------------------------ FFT noise


@pytest.mark.parametrize("T", [1, 7, 256, 1001])
def test_fft_convolution_equals_direct_convolution(T):
    rng = np.random.default_rng(T)
    beta = nu_ftrl(0.01).coefficients(T)
    w = rng.standard_normal((T, 3, 2))
    fast = correlated_noise(beta, w)
    direct = np.empty_like(w)
    for i in range(3):
        for j in range(2):
            direct[:, i, j] = np.convolve(beta, w[:, i, j])[:T]
    np.testing.assert_allclose(fast, direct, rtol=0, atol=1e-12 * np.abs(direct).max())
    single = correlated_noise(beta, w, precision="single")
    assert single.dtype == np.float32
    np.testing.assert_allclose(single, direct, rtol=0, atol=1e-5 * np.abs(direct).max())


def test_short_support_convolution_path():
    rng = np.random.default_rng(3)
    w = rng.standard_normal((50, 4))
    beta = damped_anti_pgd(0.1).coefficients(50)
    direct = np.stack([np.convolve(beta, w[:, j])[:50] for j in range(4)], axis=1)
    np.testing.assert_allclose(correlated_noise(beta, w), direct, atol=1e-14)


# ------------------------------------------------------------------ streaming simulation


def test_streaming_simulation_between_lti_lower_bound_and_c15_upper_bound():
    lam = 1.0 / np.arange(1, 9)
    eta, T, trials = 0.02, 24000, 6
    for corr in (independent(), nu_ftrl(eta * lam.min())):
        res = simulate_streaming_regression(
            lam, correlation=corr, eta=eta, T=T, rng=np.random.default_rng(11), trials=trials
        )
        mean = res.suboptimality.mean()
        se = res.suboptimality.std(ddof=1) / np.sqrt(trials)
        lti = theory.lti_suboptimality(corr, lam, eta)
        # random design >= LTI surrogate (C.18); eta Tr H ~ 0.05 keeps it within ~10%
        assert mean > lti - 4 * se
        assert mean < 1.15 * lti + 4 * se
        assert mean < theory.theorem_c15_upper(corr, lam, eta)
        assert res.noise_multiplier == pytest.approx(np.sqrt(corr.gamma_inf_sq / 2))
        assert res.trace.shape == (trials, res.record_steps.size)


def test_streaming_simulation_is_reproducible_and_grouping_independent_of_results_shape():
    lam = np.array([1.0, 0.5])
    kw = {"correlation": nu_ftrl(0.01), "eta": 0.05, "T": 500, "trials": 3}
    a = simulate_streaming_regression(lam, rng=np.random.default_rng(5), **kw)
    b = simulate_streaming_regression(lam, rng=np.random.default_rng(5), **kw)
    c = simulate_streaming_regression(lam, rng=np.random.default_rng(6), **kw)
    np.testing.assert_array_equal(a.suboptimality, b.suboptimality)
    assert not np.allclose(a.suboptimality, c.suboptimality)
    small = simulate_streaming_regression(
        lam, rng=np.random.default_rng(5), max_noise_bytes=1, **kw
    )
    assert small.suboptimality.shape == (3,)


def test_streaming_simulation_label_noise_term():
    # sigma_dp -> 0 (rho huge): F_inf = eta sigma^2 / 2 * sum lam/(2 - eta lam) (LTI) up to
    # the multiplicative-noise excess, small at eta Tr H = 0.03.
    lam = np.array([1.0, 0.5])
    res = simulate_streaming_regression(
        lam,
        correlation=independent(),
        eta=0.01,
        T=40000,
        rng=np.random.default_rng(2),
        trials=4,
        rho=1e12,
        sigma_sgd=1.0,
    )
    lti = theory.lti_suboptimality(independent(), lam, 0.01, rho=1e12, sigma_sgd=1.0)
    se = res.suboptimality.std(ddof=1) / 2
    assert abs(res.suboptimality.mean() - lti) < 0.05 * lti + 4 * se


def test_streaming_simulation_rejects_bad_input():
    with pytest.raises(ValueError, match="eigenvalues"):
        simulate_streaming_regression(
            [1.0, np.nan], correlation=independent(), eta=0.1, T=10, rng=np.random.default_rng(0)
        )
    with pytest.raises(ValueError, match="gamma_inf = inf"):
        simulate_streaming_regression(
            [1.0], correlation=optimal_cc(), eta=0.1, T=10, rng=np.random.default_rng(0)
        )
    with pytest.raises(TypeError, match="Generator"):
        simulate_streaming_regression([1.0], correlation=independent(), eta=0.1, T=10, rng=3)


# ------------------------------------------------------------------ DP-FTRL on a dataset


def _data(n=600, d=3, seed=0, noise=0.0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) / np.sqrt(d)
    theta = np.array([0.5, -0.25, 0.1])[:d]
    y = X @ theta + noise * rng.standard_normal(n)
    return X, y, theta


def test_dp_ftrl_noiseless_full_batch_step_is_gradient_step():
    X, y, _ = _data()
    fit = fit_dp_ftrl(
        X,
        y,
        budget=ZCDP(math.inf),
        rng=np.random.default_rng(0),
        eta=0.3,
        clip=math.inf,
        batch_size=X.shape[0],
        correlation="sgd",
    )
    np.testing.assert_allclose(fit.theta[0], 0.3 * X.T @ y / X.shape[0], rtol=1e-12)
    assert fit.budget_spent is None


def test_dp_ftrl_noiseless_pass_converges_to_truth():
    X, y, theta = _data(n=5000)
    fit = fit_dp_ftrl(
        X,
        y,
        budget=ZCDP(math.inf),
        rng=np.random.default_rng(1),
        trials=2,
        eta=0.5,
        clip=math.inf,
        nu=0.01,
    )
    np.testing.assert_allclose(fit.theta, np.tile(theta, (2, 1)), atol=1e-6)


def test_dp_ftrl_privacy_calibration_and_diagnostics():
    X, y, _ = _data(n=400)
    X = X / np.linalg.norm(X, axis=1, keepdims=True)
    fit = fit_dp_ftrl(
        X,
        y,
        budget=ZCDP(0.5),
        rng=np.random.default_rng(2),
        trials=4,
        eta=0.1,
        clip=0.5,
        nu=0.05,
        batch_size=4,
    )
    gamma_sq = nu_ftrl(0.05).sensitivity_sq(100)
    assert fit.diagnostics["steps"] == 100
    assert fit.diagnostics["noise_multiplier"] == pytest.approx(np.sqrt(gamma_sq / 1.0))
    assert fit.diagnostics["rho_certified"] == pytest.approx(0.5)
    assert fit.budget_spent == ZCDP(0.5)
    assert fit.theta.shape == (4, 3)
    assert np.all(
        (fit.nonprivate_diagnostics["clip_fraction"] >= 0)
        & (fit.nonprivate_diagnostics["clip_fraction"] <= 1)
    )
    dp = fit_dp_ftrl(
        X, y, budget=ApproxDP(1.0, 1e-5), rng=np.random.default_rng(2), eta=0.1, clip=0.5, nu=0.05
    )
    assert dp.diagnostics["epsilon_certified"] <= 1.0 + 1e-9
    sgd = fit_dp_sgd_stream(X, y, budget=ZCDP(0.5), rng=np.random.default_rng(2), eta=0.1, clip=0.5)
    assert sgd.diagnostics["sensitivity_sq"] == 1.0
    assert get_estimator("dp_ftrl") is fit_dp_ftrl


def test_dp_ftrl_noise_is_correlated_as_designed():
    # With X = 0 the iterates are -eta * cumsum(noise): check the noise covariance of the
    # first two steps against beta (Monte Carlo, 4 SE).
    n, trials = 2, 20000
    X = np.zeros((n, 1))
    y = np.zeros(n)
    fit = fit_dp_ftrl(
        X,
        y,
        budget=None,
        noise_multiplier=1.0,
        rng=np.random.default_rng(4),
        trials=trials,
        eta=1.0,
        clip=1.0,
        nu=0.2,
        return_path=True,
    )
    steps = -np.diff(np.concatenate([np.zeros((trials, 1, 1)), fit.path], axis=1), axis=1)
    w0, w1 = steps[:, 0, 0], steps[:, 1, 0]
    beta1 = nu_ftrl(0.2).coefficients(2)[1]
    cov = np.mean(w0 * w1)
    assert abs(cov - beta1) < 4 * np.sqrt((1 + beta1**2 + beta1**2) / trials)


def test_dp_ftrl_rejects_bad_input():
    X, y, _ = _data(n=50)
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="NaN"):
        fit_dp_ftrl(
            np.full((5, 2), np.nan), np.zeros(5), budget=ZCDP(1), rng=rng, eta=0.1, clip=1, nu=0.1
        )
    with pytest.raises(ValueError, match="needs nu"):
        fit_dp_ftrl(X, y, budget=ZCDP(1), rng=rng, eta=0.1, clip=1)
    with pytest.raises(ValueError, match="correlation must be"):
        fit_dp_ftrl(X, y, budget=ZCDP(1), rng=rng, eta=0.1, clip=1, correlation="tree")
    with pytest.raises(ValueError, match="batch_size"):
        fit_dp_ftrl(X, y, budget=ZCDP(1), rng=rng, eta=0.1, clip=1, nu=0.1, batch_size=51)
    with pytest.raises(ValueError, match="epsilon"):
        fit_dp_ftrl(X, y, budget=ApproxDP(0.0, 1e-5), rng=rng, eta=0.1, clip=1, nu=0.1)
    with pytest.raises(ValueError, match="infinite gamma_inf"):
        fit_dp_ftrl(
            X,
            y,
            budget=ZCDP(1),
            rng=rng,
            eta=0.1,
            clip=1,
            correlation="anti_pgd",
            sensitivity="infinite",
        )
    with pytest.raises(ValueError, match="rows"):
        fit_dp_ftrl(X[:2], y[:2], budget=ZCDP(1), rng=rng, eta=0.1, clip=1, nu=0.1)


def test_dp_ftrl_accepts_matrix_factorizations():
    from dpreg.estimators.ftrl_factorizations import tree_aggregation

    X, y, _ = _data(n=64)
    tree = tree_aggregation(16)
    fit = fit_dp_ftrl(
        X,
        y,
        budget=ZCDP(1.0),
        rng=np.random.default_rng(0),
        trials=3,
        eta=0.1,
        clip=1.0,
        correlation=tree,
        batch_size=4,
    )
    assert fit.diagnostics["sensitivity_sq"] == tree.sensitivity_sq == 5.0
    assert fit.diagnostics["noise_multiplier"] == pytest.approx(np.sqrt(5.0 / 2.0))
    with pytest.raises(ValueError, match="horizon"):
        fit_dp_ftrl(
            X,
            y,
            budget=ZCDP(1.0),
            rng=np.random.default_rng(0),
            eta=0.1,
            clip=1.0,
            correlation=tree,
            batch_size=2,
        )
    # noiseless limit: the decoder satisfies B C = I, so the noise vanishes with sigma
    a = fit_dp_ftrl(
        X,
        y,
        budget=ZCDP(math.inf),
        rng=np.random.default_rng(1),
        eta=0.1,
        clip=1.0,
        correlation=tree,
        batch_size=4,
    )
    b = fit_dp_ftrl(
        X,
        y,
        budget=ZCDP(math.inf),
        rng=np.random.default_rng(1),
        eta=0.1,
        clip=1.0,
        correlation="sgd",
        batch_size=4,
    )
    np.testing.assert_allclose(a.theta, b.theta)


# ------------------------------------------------------------------ property and reference tests

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=30, deadline=None)
@given(
    T=st.integers(1, 300),
    nu=st.floats(1e-4, 0.99),
    cols=st.integers(1, 3),
    seed=st.integers(0, 2**31),
)
def test_property_fft_noise_is_the_causal_convolution(T, nu, cols, seed):
    w = np.random.default_rng(seed).standard_normal((T, cols))
    beta = nu_ftrl(nu).coefficients(T)
    direct = np.stack([np.convolve(beta, w[:, j])[:T] for j in range(cols)], axis=1)
    np.testing.assert_allclose(
        correlated_noise(beta, w), direct, rtol=0, atol=1e-12 * max(1.0, np.abs(direct).max())
    )


@settings(max_examples=30, deadline=None)
@given(
    T=st.integers(2, 40), nu=st.floats(0.0, 0.9), pos=st.integers(0, 39), seed=st.integers(0, 2**31)
)
def test_property_zero_out_neighbours_move_the_release_by_at_most_gamma(T, nu, pos, seed):
    # ||C (G - G')||_F <= gamma_T * G for streams differing in one zeroed gradient
    pos = pos % T
    corr = nu_ftrl(nu) if nu > 0 else optimal_cc()
    c = corr.encoder(T)
    rng = np.random.default_rng(seed)
    G = rng.standard_normal((T, 3))
    G /= np.maximum(np.linalg.norm(G, axis=1, keepdims=True), 1.0)  # clipped to norm 1
    diff = np.zeros_like(G)
    diff[pos] = G[pos]
    moved = np.stack([np.convolve(c, diff[:, j])[:T] for j in range(3)], axis=1)
    assert np.linalg.norm(moved) <= np.sqrt(corr.sensitivity_sq(T)) * (1 + 1e-12)


def test_eigenbasis_simulation_matches_a_direct_rotated_simulation():
    # Independent reference: full (rotated) H, x = L z with H = L L', noise by direct
    # convolution, O(T^2)-free but naive; compare the mean tail suboptimality (4 SE).
    lam = np.array([1.0, 0.4, 0.1])
    eta, T, trials, nu = 0.1, 3000, 300, 0.05
    rng = np.random.default_rng(123)
    Q, _ = np.linalg.qr(rng.standard_normal((3, 3)))
    H = Q @ np.diag(lam) @ Q.T
    L = np.linalg.cholesky(H)
    corr = nu_ftrl(nu)
    sigma = np.sqrt(corr.gamma_inf_sq / 2.0)
    beta = corr.coefficients(T)
    w = rng.standard_normal((T, trials, 3)) * sigma
    noise = np.zeros_like(w)
    for k in range(T):  # direct causal convolution, tap by tap (taps < 1e-12 dropped)
        noise[k:] += beta[k] * w[: T - k]
        if abs(beta[k]) < 1e-12:
            break
    theta = np.zeros((trials, 3))
    acc = np.zeros(trials)
    for t in range(T):
        x = rng.standard_normal((trials, 3)) @ L.T
        theta = theta - eta * (x * np.sum(x * theta, axis=1, keepdims=True) + noise[t])
        if t >= T // 2:
            acc += 0.5 * np.einsum("ti,ij,tj->t", theta, H, theta)
    reference = acc / (T - T // 2)
    fast = simulate_streaming_regression(
        lam, correlation=corr, eta=eta, T=T, rng=np.random.default_rng(7), trials=trials
    )
    a, b = reference.mean(), fast.suboptimality.mean()
    se = np.sqrt(reference.var(ddof=1) / trials + fast.suboptimality.var(ddof=1) / trials)
    assert abs(a - b) < 4 * se
