"""2S-GD, DP-2S-GD and DP-2S-GD-beta (Liang et al. 2025, Algorithms 1-3).

Accounting is checked against the Gaussian-mechanism accountant
(:func:`dpreg.privacy.gaussian.gaussian_zcdp`, Bun & Steinke 2016, Prop. 1.6) with the
sensitivities derived here, independently of the calibration formula in the module;
Monte Carlo tolerances are k standard errors of the simulated statistic.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpreg.estimators import get_estimator
from dpreg.estimators.iv import (
    clipped_gradient_means,
    default_clip_threshold,
    fit_dp_two_stage_gd,
    fit_dp_two_stage_gd_beta,
    fit_two_stage_gd,
    noise_scale,
    population_step_sizes,
)
from dpreg.estimators.ols import two_sls
from dpreg.privacy.budgets import ZCDP
from dpreg.privacy.gaussian import gaussian_zcdp

# ---------------------------------------------------------------------------- helpers


def _iv_data(seed: int, n: int, q: int, p: int, trials: int | None = None):
    """Liang et al. (2025, §4.1)-style DGP: Theta = 2 I + E, confounder u (r = p)."""
    rng = np.random.default_rng(seed)
    Theta = 2.0 * np.eye(q, p) + 0.5 * rng.normal(size=(q, p))
    beta = rng.normal(size=p)
    lead = () if trials is None else (trials,)
    Z = rng.normal(size=(*lead, n, q))
    u = rng.normal(size=(*lead, n, p))
    X = Z @ Theta + u + rng.normal(size=(*lead, n, p))
    y = X @ beta + u.sum(axis=-1) + rng.normal(size=(*lead, n))
    return Z, X, y, Theta


def _explicit_means(Z, X, y, Theta, beta, clip_theta, clip_beta):
    """Per-sample gradients materialised one by one (the definition; slow, for tests)."""
    n = Z.shape[0]
    g1_sum = np.zeros_like(Theta)
    g2_sum = np.zeros_like(beta)
    n1 = n2 = 0
    for i in range(n):
        z, x = Z[i], X[i]
        g1 = np.outer(z, z @ Theta - x)  # z_i (z_i' Theta - x_i')
        norm1 = np.linalg.norm(g1)  # Frobenius
        if norm1 > clip_theta:
            g1 = g1 * (clip_theta / norm1)
            n1 += 1
        g2 = Theta.T @ z * (z @ Theta @ beta - y[i])  # Theta' z_i (z_i' Theta beta - y_i)
        norm2 = np.linalg.norm(g2)
        if norm2 > clip_beta:
            g2 = g2 * (clip_beta / norm2)
            n2 += 1
        g1_sum += g1
        g2_sum += g2
    return g1_sum / n, g2_sum / n, n1 / n, n2 / n


def _explicit_grad_tensors(Z, X, y, Theta, beta, clip_theta, clip_beta):
    """Vectorised explicit per-sample gradients (n x q x p tensor; fine in tests)."""
    g1 = Z[:, :, None] * (Z @ Theta - X)[:, None, :]  # (n, q, p)
    norm1 = np.sqrt((g1**2).sum(axis=(1, 2)))
    f1 = np.minimum(1.0, clip_theta / np.where(norm1 > 0, norm1, 1.0))
    w = Z @ Theta
    g2 = w * (w @ beta - y)[:, None]
    norm2 = np.linalg.norm(g2, axis=1)
    f2 = np.minimum(1.0, clip_beta / np.where(norm2 > 0, norm2, 1.0))
    return (
        (g1 * f1[:, None, None]).mean(axis=0),
        (g2 * f2[:, None]).mean(axis=0),
        np.mean(norm1 > clip_theta),
        np.mean(norm2 > clip_beta),
    )


def _kse(m: int, k: float = 4.0) -> float:
    """k standard errors of s^2 / sigma^2 for m iid normal draws: k sqrt(2 / (m - 1))."""
    return k * math.sqrt(2.0 / (m - 1))


DP_KW = dict(T=5, step_theta=0.5, step_beta=0.1, clip_theta=3.0, clip_beta=4.0)


# ---------------------------------------------------------------------------- registry, defaults


def test_registered_names():
    assert get_estimator("2s_gd") is fit_two_stage_gd
    assert get_estimator("dp_2s_gd") is fit_dp_two_stage_gd
    assert get_estimator("dp_2s_gd_beta") is fit_dp_two_stage_gd_beta


@pytest.mark.parametrize(
    ("n", "q", "T", "expected"),
    # values quoted in docs/notes/liang2025.md P2 for c0 = tau = 1
    [(1000, 5, 20, 30.7), (1000, 50, 20, 107.6), (1000, 20, 20, 60.4)],
)
def test_default_clip_threshold_matches_eq4(n, q, T, expected):
    gamma = default_clip_threshold(n, q, T)
    assert gamma == pytest.approx(expected, abs=0.05)
    assert gamma == pytest.approx((math.sqrt(q) + math.sqrt(1.0 + math.log(n * T))) ** 2)
    assert default_clip_threshold(n, q, T, c0=2.5, tau=3.0) == pytest.approx(
        2.5 * (math.sqrt(q) + math.sqrt(3.0 + math.log(n * T))) ** 2
    )


def test_population_step_sizes():
    eta, alpha = population_step_sizes(np.array([[3.0, 0.0], [0.0, 1.0], [0.0, 0.0]]))
    assert eta == 1.0
    assert alpha == pytest.approx(2.0 / (9.0 + 1.0))
    with pytest.raises(ValueError, match="q >= p"):
        population_step_sizes(np.ones((1, 2)))


# ---------------------------------------------------------------------------- accounting


@pytest.mark.parametrize("gamma", [0.5, 30.67])
@pytest.mark.parametrize("n", [100, 8065])
@pytest.mark.parametrize("T", [1, 20, 1000])
@pytest.mark.parametrize("rho", [0.01, 1.0, 10.0])
def test_calibrations_certify_rho_and_half_rho(gamma, n, T, rho):
    """Accountant: T-fold Gaussian mechanism with replace-one sensitivity 2 gamma / n."""
    sensitivity = 2.0 * gamma / n
    lam_exact = noise_scale(gamma, n, T, rho, calibration="exact")
    lam_paper = noise_scale(gamma, n, T, rho, calibration="paper")
    assert lam_paper == pytest.approx(2.0 * gamma / n * math.sqrt(T / rho), rel=1e-14)
    assert lam_exact == pytest.approx(gamma / n * math.sqrt(2.0 * T / rho), rel=1e-14)
    assert T * gaussian_zcdp(lam_exact, sensitivity) == pytest.approx(rho, rel=1e-12)
    assert T * gaussian_zcdp(lam_paper, sensitivity) == pytest.approx(rho / 2.0, rel=1e-12)
    assert noise_scale(gamma, n, T, math.inf) == 0.0


@pytest.mark.parametrize(("calibration", "factor"), [("exact", 1.0), ("paper", 0.5)])
def test_alg1_budget_spent_is_what_the_accountant_certifies(calibration, factor):
    Z, X, y, _ = _iv_data(0, n=200, q=3, p=2)
    rho1, rho2 = 1.5, 4.0
    fit = fit_dp_two_stage_gd(
        Z,
        X,
        y,
        rho1=rho1,
        rho2=rho2,
        rng=np.random.default_rng(0),
        calibration=calibration,
        **DP_KW,
    )
    dg, n, T = fit.diagnostics, 200, DP_KW["T"]
    rho_theta = T * gaussian_zcdp(dg["lambda1"], 2.0 * DP_KW["clip_theta"] / n)
    rho_beta = T * gaussian_zcdp(dg["lambda2"], 2.0 * DP_KW["clip_beta"] / n)
    assert rho_theta == pytest.approx(factor * rho1, rel=1e-12)
    assert rho_beta == pytest.approx(factor * rho2, rel=1e-12)
    assert isinstance(fit.budget_spent, ZCDP)
    assert fit.budget_spent.rho == pytest.approx(factor * (rho1 + rho2), rel=1e-12)
    assert dg["rho_certified"] == fit.budget_spent.rho
    assert dg["rho_claimed"] == rho1 + rho2
    assert dg["rho_claimed_beta_path"] == rho2
    assert dg["rho_certified_theta_path"] == pytest.approx(factor * rho1, rel=1e-12)
    # the beta path alone is certified only for the total (it reads the noisy Theta)
    assert dg["rho_certified_beta_path"] == pytest.approx(factor * (rho1 + rho2), rel=1e-12)
    assert dg["calibration"] == calibration
    assert "replace-one" in dg["neighbouring"]


@pytest.mark.parametrize(("calibration", "factor"), [("exact", 1.0), ("paper", 0.5)])
def test_alg3_budget_spent_is_n_squared_rho2(calibration, factor):
    n, rho2 = 150, 2.0
    Z, X, y, _ = _iv_data(1, n=n, q=2, p=2)
    fit = fit_dp_two_stage_gd_beta(
        Z,
        X,
        y,
        rho2=rho2,
        rng=np.random.default_rng(1),
        T=7,
        step_theta=0.5,
        step_beta=0.1,
        clip_beta=2.0,
        calibration=calibration,
    )
    dg = fit.diagnostics
    # Theta^(t) is non-private: one record moves all n clipped terms, sensitivity 2 gamma2
    certified = 7 * gaussian_zcdp(dg["lambda2"], 2.0 * 2.0)
    assert certified == pytest.approx(factor * n**2 * rho2, rel=1e-12)
    assert fit.budget_spent.rho == pytest.approx(certified, rel=1e-12)
    assert dg["rho_claimed"] == rho2
    # the paper's rho2 is only the guarantee *given* a public Theta (sensitivity 2 gamma2 / n)
    assert dg["rho_if_theta_public"] == pytest.approx(factor * rho2, rel=1e-12)
    assert "public" in dg["privacy_note"] and "Lemma F.1" in dg["privacy_note"]
    assert dg["rho_certified_theta_path"] == math.inf
    assert np.all(fit.nonprivate_diagnostics["clip_fraction_theta"] == 0.0)


def test_alg3_step_sensitivity_exceeds_the_paper_2_gamma_over_n():
    """The caveat is real: with a non-private Theta^(1) a neighbour moves the beta query
    by more than 2 gamma2 / n (but never more than 2 gamma2)."""
    n, gamma = 20, 1.0
    Z, X, y, _ = _iv_data(2, n=n, q=1, p=1)
    Z2, X2 = Z.copy(), X.copy()
    X2[0] = 500.0  # replace one record's x
    kw = dict(T=1, step_theta=1.0, step_beta=1.0)
    theta_1 = fit_two_stage_gd(Z, X, y, **kw).diagnostics["theta_final"]  # Alg. 3's Theta^(1)
    theta_1b = fit_two_stage_gd(Z2, X2, y, **kw).diagnostics["theta_final"]
    beta = np.zeros((1, 1))
    g = clipped_gradient_means(Z, X, y, theta_1, beta, clip_beta=gamma)[1]
    g2 = clipped_gradient_means(Z2, X2, y, theta_1b, beta, clip_beta=gamma)[1]
    change = np.linalg.norm(g - g2)
    assert change > 2.0 * gamma / n * 5  # far beyond the paper's sensitivity
    assert change <= 2.0 * gamma * (1 + 1e-12)


def test_alg1_with_a_noiseless_stage_is_not_certified():
    n = 120
    Z, X, y, _ = _iv_data(3, n=n, q=2, p=1)
    kw = dict(T=4, step_theta=0.5, step_beta=0.1, clip_theta=2.0, clip_beta=3.0)
    fit = fit_dp_two_stage_gd(Z, X, y, rho1=math.inf, rho2=1.0, rng=np.random.default_rng(0), **kw)
    dg = fit.diagnostics
    assert fit.budget_spent.rho == math.inf and dg["lambda1"] == 0.0
    assert dg["rho_certified_beta_path"] == pytest.approx(n**2 * 1.0, rel=1e-12)
    assert "rho1=inf" in dg["privacy_note"]
    fit = fit_dp_two_stage_gd(Z, X, y, rho1=2.0, rho2=math.inf, rng=np.random.default_rng(0), **kw)
    assert fit.budget_spent.rho == math.inf and fit.diagnostics["lambda2"] == 0.0
    assert fit.diagnostics["rho_certified_theta_path"] == pytest.approx(2.0, rel=1e-12)


# ---------------------------------------------------------------------------- noise


@pytest.mark.parametrize("calibration", ["exact", "paper"])
def test_noise_recovered_from_the_path_has_the_stated_scale(calibration):
    """Xi^(t) = (Theta^(t+1) - Theta^(t) + eta * mean clipped grad) / eta, likewise nu^(t):
    their sample variance is lambda^2 within chi-square standard errors."""
    n, q, p, T, trials = 40, 2, 2, 4, 150
    rho1, rho2 = 0.7, 3.0
    g1, g2, eta, alpha = 2.0, 3.0, 0.5, 0.2
    Z, X, y, _ = _iv_data(4, n=n, q=q, p=p)
    fit = fit_dp_two_stage_gd(
        Z,
        X,
        y,
        rho1=rho1,
        rho2=rho2,
        rng=np.random.default_rng(5),
        T=T,
        step_theta=eta,
        step_beta=alpha,
        clip_theta=g1,
        clip_beta=g2,
        trials=trials,
        calibration=calibration,
    )
    thetas = np.concatenate([np.zeros((trials, 1, q, p)), fit.diagnostics["theta_path"]], axis=1)
    betas = np.concatenate([np.zeros((trials, 1, p)), fit.path], axis=1)
    xi, nu = [], []
    for k in range(trials):
        for t in range(T):
            m1, m2, _, _ = _explicit_grad_tensors(Z, X, y, thetas[k, t], betas[k, t], g1, g2)
            xi.append((thetas[k, t + 1] - thetas[k, t] + eta * m1) / eta)
            nu.append((betas[k, t + 1] - betas[k, t] + alpha * m2) / alpha)
    xi, nu = np.ravel(xi), np.ravel(nu)
    c = 2.0 if calibration == "paper" else math.sqrt(2.0)  # lambda = c gamma/n sqrt(T/rho)
    lam1, lam2 = c * g1 / n * math.sqrt(T / rho1), c * g2 / n * math.sqrt(T / rho2)
    for draws, lam in [(xi, lam1), (nu, lam2)]:
        m = draws.size
        assert abs(draws.mean()) < 4.0 * lam / math.sqrt(m)
        assert abs(draws.var() / lam**2 - 1.0) < _kse(m)


def test_beta_1_is_pure_noise_alpha_nu0():
    """Simultaneous update (docs/notes/liang2025.md P14): beta^(1) = alpha nu^(0), any data."""
    trials, q, p = 64, 3, 2
    kw = dict(
        rho1=1.0,
        rho2=2.0,
        T=3,
        step_theta=0.5,
        step_beta=0.3,
        clip_theta=2.0,
        clip_beta=2.0,
        trials=trials,
    )
    fits = [
        fit_dp_two_stage_gd(*_iv_data(s, n=80, q=q, p=p)[:3], rng=np.random.default_rng(9), **kw)
        for s in (10, 11)
    ]
    np.testing.assert_array_equal(fits[0].path[:, 0], fits[1].path[:, 0])
    replay = np.random.default_rng(9)  # documented draw order: Xi^(0), then nu^(0)
    replay.standard_normal((trials, q, p))
    nu0 = replay.standard_normal((trials, p))
    lam2 = fits[0].diagnostics["lambda2"]
    np.testing.assert_allclose(fits[0].path[:, 0], 0.3 * lam2 * nu0, rtol=1e-14, atol=0)


def test_alg3_theta_path_is_2sgd_and_beta_noise_scale():
    n, q, p, T, trials = 60, 2, 1, 6, 400
    Z, X, y, _ = _iv_data(6, n=n, q=q, p=p)
    fit = fit_dp_two_stage_gd_beta(
        Z,
        X,
        y,
        rho2=0.5,
        rng=np.random.default_rng(2),
        T=T,
        step_theta=0.5,
        step_beta=0.2,
        clip_beta=1.0,
        trials=trials,
    )
    ref = fit_two_stage_gd(Z, X, y, T=T, step_theta=0.5, step_beta=0.2, trials=trials)
    np.testing.assert_array_equal(fit.diagnostics["theta_path"], ref.diagnostics["theta_path"])
    lam = 1.0 / n * math.sqrt(2.0 * T / 0.5)
    nu0 = fit.path[:, 0, 0] / 0.2
    assert abs(nu0.var() / lam**2 - 1.0) < _kse(trials)


# ---------------------------------------------------------------------------- clipping


@pytest.mark.parametrize(("q", "p"), [(1, 1), (3, 1), (3, 2), (4, 4)])
@pytest.mark.parametrize("batched", [False, True])
def test_rank_one_clipped_means_match_explicit_per_sample_gradients(q, p, batched):
    n, trials = 37, 3
    Z, X, y, Theta0 = _iv_data(7, n=n, q=q, p=p, trials=trials if batched else None)
    rng = np.random.default_rng(8)
    Theta = Theta0 + rng.normal(size=(trials, q, p))
    beta = rng.normal(size=(trials, p))
    # thresholds halfway between the middle per-sample norms of trial 0 (about half are
    # clipped, and no norm ties with a threshold)
    Z0, X0, y0 = (Z[0], X[0], y[0]) if batched else (Z, X, y)
    w = Z0 @ Theta[0]
    norms1 = np.sort(np.linalg.norm(Z0, axis=1) * np.linalg.norm(w - X0, axis=1))
    norms2 = np.sort(np.linalg.norm(w, axis=1) * np.abs(w @ beta[0] - y0))
    m1 = float(norms1[n // 2] + norms1[n // 2 + 1]) / 2
    m2 = float(norms2[n // 2] + norms2[n // 2 + 1]) / 2
    for clip_theta, clip_beta in [(m1, m2), (math.inf, math.inf), (0.5 * m1, math.inf)]:
        g1, g2, f1, f2 = clipped_gradient_means(
            Z, X, y, Theta, beta, clip_theta=clip_theta, clip_beta=clip_beta
        )
        assert g1.shape == (trials, q, p) and g2.shape == (trials, p)
        for k in range(trials):
            data = (Z[k], X[k], y[k]) if batched else (Z, X, y)
            e1, e2, c1, c2 = _explicit_means(*data, Theta[k], beta[k], clip_theta, clip_beta)
            np.testing.assert_allclose(g1[k], e1, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(g2[k], e2, rtol=1e-12, atol=1e-12)
            assert f1[k] == c1 and f2[k] == c2
        if math.isfinite(clip_theta):
            assert 0 < f1.mean() < 1  # the thresholds actually bite
        if math.isfinite(clip_beta):
            assert 0 < f2.mean() < 1


def test_clip_fractions_of_a_fit_match_explicit_counts():
    n, q, p, T, trials = 50, 3, 2, 6, 4
    Z, X, y, _ = _iv_data(12, n=n, q=q, p=p)
    gamma1, gamma2 = 4.0, 6.0
    fit = fit_dp_two_stage_gd(
        Z,
        X,
        y,
        rho1=2.0,
        rho2=2.0,
        rng=np.random.default_rng(3),
        T=T,
        step_theta=0.5,
        step_beta=0.05,
        clip_theta=gamma1,
        clip_beta=gamma2,
        trials=trials,
    )
    thetas = np.concatenate([np.zeros((trials, 1, q, p)), fit.diagnostics["theta_path"]], axis=1)
    betas = np.concatenate([np.zeros((trials, 1, p)), fit.path], axis=1)
    frac1, frac2 = (
        fit.nonprivate_diagnostics["clip_fraction_theta"],
        fit.nonprivate_diagnostics["clip_fraction_beta"],
    )
    assert frac1.shape == frac2.shape == (trials, T)
    for k in range(trials):
        for t in range(T):
            _, _, c1, c2 = _explicit_means(Z, X, y, thetas[k, t], betas[k, t], gamma1, gamma2)
            assert frac1[k, t] == c1 and frac2[k, t] == c2
    assert frac1.max() > 0 and frac2.max() > 0
    assert np.all(frac2[:, 0] == 0)  # Theta^(0) = 0: every beta-gradient is zero


@settings(max_examples=150, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 6),
    q=st.integers(1, 3),
    p_off=st.integers(0, 2),
    log_gamma=st.floats(-3, 3),
    log_scale=st.floats(-2, 4),
)
def test_replace_one_sensitivity_of_the_clipped_mean_is_2_gamma_over_n(
    seed, n, q, p_off, log_gamma, log_scale
):
    """Fixed (released) iterates: one replaced record moves each stage's averaged clipped
    gradient by at most 2 gamma / n (Prop. 3.1's sensitivity)."""
    p = max(1, q - p_off)
    n = max(n, q)
    rng = np.random.default_rng(seed)
    scale = 10.0**log_scale
    gamma = 10.0**log_gamma
    Z = scale * rng.standard_cauchy(size=(n, q))
    X = scale * rng.standard_cauchy(size=(n, p))
    y = scale * rng.standard_cauchy(size=n)
    Theta = rng.normal(size=(q, p)) * 3.0
    beta = rng.normal(size=p) * 3.0
    j = int(rng.integers(n))
    Z2, X2, y2 = Z.copy(), X.copy(), y.copy()
    Z2[j] = scale * rng.standard_cauchy(size=q)
    X2[j] = scale * rng.standard_cauchy(size=p)
    y2[j] = scale * rng.standard_cauchy()
    a = clipped_gradient_means(Z, X, y, Theta, beta, clip_theta=gamma, clip_beta=gamma)
    b = clipped_gradient_means(Z2, X2, y2, Theta, beta, clip_theta=gamma, clip_beta=gamma)
    bound = 2.0 * gamma / n * (1 + 1e-9)
    assert np.linalg.norm(a[0] - b[0]) <= bound
    assert np.linalg.norm(a[1] - b[1]) <= bound


# ---------------------------------------------------------------------------- limits


@pytest.mark.parametrize("batched", [False, True])
def test_dp_with_infinite_budgets_and_no_clipping_is_2sgd_bit_for_bit(batched):
    trials = 5
    Z, X, y, _ = _iv_data(13, n=90, q=3, p=2, trials=trials if batched else None)
    kw = dict(T=25, step_theta=0.7, step_beta=0.05, trials=trials)
    ref = fit_two_stage_gd(Z, X, y, **kw)
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    dp = fit_dp_two_stage_gd(
        Z,
        X,
        y,
        rho1=math.inf,
        rho2=math.inf,
        rng=rng,
        clip_theta=math.inf,
        clip_beta=math.inf,
        **kw,
    )
    assert rng.bit_generator.state == state  # no noise drawn
    np.testing.assert_array_equal(dp.theta, ref.theta)
    np.testing.assert_array_equal(dp.path, ref.path)
    np.testing.assert_array_equal(dp.diagnostics["theta_path"], ref.diagnostics["theta_path"])
    assert ref.budget_spent is None and dp.budget_spent.rho == math.inf
    assert np.all(ref.nonprivate_diagnostics["clip_fraction_beta"] == 0)


def _gd_rates(Z, X, y, eta, alpha):
    """Empirical contraction factors of the two stages at the fixed point."""
    n = Z.shape[0]
    S = Z.T @ Z / n
    Theta_hat = np.linalg.solve(Z.T @ Z, Z.T @ X)
    H = Theta_hat.T @ S @ Theta_hat
    ls, lh = np.linalg.eigvalsh(S), np.linalg.eigvalsh(H)
    kappa_theta = max(abs(1 - eta * ls[0]), abs(1 - eta * ls[-1]))
    kappa_beta = max(abs(1 - alpha * lh[0]), abs(1 - alpha * lh[-1]))
    return kappa_theta, kappa_beta


def test_2sgd_converges_to_closed_form_2sls_at_the_contraction_rate():
    Z, X, y, _ = _iv_data(14, n=400, q=3, p=2)
    n = 400
    S = Z.T @ Z / n
    eta = 1.0 / np.linalg.eigvalsh(S)[-1]
    Theta_hat = np.linalg.solve(Z.T @ Z, Z.T @ X)
    alpha = 1.0 / np.linalg.eigvalsh(Theta_hat.T @ S @ Theta_hat)[-1]
    kappa = max(_gd_rates(Z, X, y, eta, alpha))
    assert kappa < 1
    beta_hat = two_sls(y=y, X=X, Z=Z)
    scale = 1.0 + np.linalg.norm(beta_hat)
    for T in (40, 400):
        fit = fit_two_stage_gd(Z, X, y, T=T, step_theta=eta, step_beta=alpha)
        err = np.linalg.norm(fit.theta[0] - beta_hat)
        # perturbed contraction: e_T <= C (1 + T) kappa^T, plus rounding
        assert err <= 10.0 * (1 + T) * kappa**T * scale + 1e-11 * scale
    assert err < 1e-10  # T = 400: at the 2SLS solution to rounding
    first = fit_two_stage_gd(Z, X, y, T=5, step_theta=eta, step_beta=alpha)
    assert np.linalg.norm(first.theta[0] - beta_hat) > 1e-3  # not trivially converged


def test_2sgd_matches_a_direct_transcription_of_algorithm_2():
    Z, X, y, _ = _iv_data(15, n=120, q=3, p=2)
    n, eta, alpha, T = 120, 0.8, 0.04, 30
    Theta, beta = np.zeros((3, 2)), np.zeros(2)
    betas, thetas = [], []
    for _ in range(T):
        Theta, beta = (
            Theta - eta / n * Z.T @ (Z @ Theta - X),
            beta - alpha / n * Theta.T @ Z.T @ (Z @ Theta @ beta - y),
        )
        betas.append(beta)
        thetas.append(Theta)
    fit = fit_two_stage_gd(Z, X, y, T=T, step_theta=eta, step_beta=alpha, trials=2)
    np.testing.assert_allclose(fit.path[0], betas, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(fit.diagnostics["theta_path"][1], thetas, rtol=1e-12, atol=1e-13)


def test_2sgd_on_batched_data_reaches_each_data_sets_2sls():
    trials = 3
    Z, X, y, Theta = _iv_data(16, n=300, q=2, p=2, trials=trials)
    eta, alpha = population_step_sizes(Theta)
    fit = fit_two_stage_gd(Z, X, y, T=300, step_theta=eta, step_beta=alpha, trials=trials)
    for k in range(trials):
        np.testing.assert_allclose(fit.theta[k], two_sls(y=y[k], X=X[k], Z=Z[k]), atol=1e-9)
    assert not np.allclose(fit.theta[0], fit.theta[1], atol=1e-3)


# ---------------------------------------------------------------------------- batching, seeds


def test_batched_identical_copies_equal_shared_data():
    trials = 6
    Z, X, y, _ = _iv_data(17, n=70, q=2, p=2)
    kw = dict(
        rho1=1.0,
        rho2=1.0,
        T=8,
        step_theta=0.5,
        step_beta=0.1,
        clip_theta=2.0,
        clip_beta=3.0,
        trials=trials,
    )
    shared = fit_dp_two_stage_gd(Z, X, y, rng=np.random.default_rng(4), **kw)
    tile = (np.repeat(a[None], trials, axis=0) for a in (Z, X, y))
    batched = fit_dp_two_stage_gd(*tile, rng=np.random.default_rng(4), **kw)
    mixed = fit_dp_two_stage_gd(  # Z shared, X and y batched
        Z,
        np.repeat(X[None], trials, 0),
        np.repeat(y[None], trials, 0),
        rng=np.random.default_rng(4),
        **kw,
    )
    assert shared.diagnostics["shared_data"] and not batched.diagnostics["shared_data"]
    for other in (batched, mixed):
        np.testing.assert_allclose(other.path, shared.path, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(
            other.diagnostics["theta_path"],
            shared.diagnostics["theta_path"],
            rtol=1e-10,
            atol=1e-12,
        )
        np.testing.assert_array_equal(
            other.nonprivate_diagnostics["clip_fraction_beta"],
            shared.nonprivate_diagnostics["clip_fraction_beta"],
        )


def test_batched_trials_use_their_own_data_with_clipping():
    trials = 3
    Z, X, y, _ = _iv_data(18, n=60, q=2, p=1, trials=trials)
    kw = dict(
        rho1=math.inf,
        rho2=math.inf,
        T=10,
        step_theta=0.5,
        step_beta=0.2,
        clip_theta=1.0,
        clip_beta=1.0,
    )  # clipping without noise
    batched = fit_dp_two_stage_gd(Z, X, y, rng=np.random.default_rng(0), trials=trials, **kw)
    assert batched.nonprivate_diagnostics["clip_fraction_theta"].mean() > 0
    for k in range(trials):
        single = fit_dp_two_stage_gd(Z[k], X[k], y[k], rng=np.random.default_rng(0), **kw)
        np.testing.assert_allclose(batched.path[k], single.path[0], rtol=1e-11, atol=1e-13)


def test_reproducible_by_seed():
    Z, X, y, _ = _iv_data(19, n=50, q=2, p=2)
    kw = dict(rho1=1.0, rho2=1.0, trials=4, **DP_KW)
    a = fit_dp_two_stage_gd(Z, X, y, rng=np.random.default_rng(123), **kw)
    b = fit_dp_two_stage_gd(Z, X, y, rng=np.random.default_rng(123), **kw)
    c = fit_dp_two_stage_gd(Z, X, y, rng=np.random.default_rng(124), **kw)
    np.testing.assert_array_equal(a.path, b.path)
    np.testing.assert_array_equal(a.diagnostics["theta_path"], b.diagnostics["theta_path"])
    assert not np.allclose(a.path, c.path)
    assert not np.allclose(a.theta[0], a.theta[1])  # trials get independent noise


def test_fit_shapes_and_return_path_false():
    trials, T, q, p = 3, DP_KW["T"], 3, 2
    Z, X, y, _ = _iv_data(20, n=40, q=q, p=p)
    kw = dict(rho1=1.0, rho2=1.0, rng=np.random.default_rng(0), trials=trials, **DP_KW)
    fit = fit_dp_two_stage_gd(Z, X, y, **kw)
    assert fit.theta.shape == (trials, p) and fit.path.shape == (trials, T, p)
    assert fit.diagnostics["theta_path"].shape == (trials, T, q, p)
    np.testing.assert_array_equal(fit.path[:, -1], fit.theta)
    dg = fit.diagnostics
    np.testing.assert_array_equal(dg["theta_path"][:, -1], dg["theta_final"])
    kw["rng"] = np.random.default_rng(0)
    short = fit_dp_two_stage_gd(Z, X, y, return_path=False, **kw)
    assert short.path is None and short.diagnostics["theta_path"] is None
    np.testing.assert_array_equal(short.theta, fit.theta)
    assert short.n_trials == trials and short.estimator == "dp_2s_gd"


def test_divergent_runs_are_reported_not_raised():
    Z, X, y, _ = _iv_data(21, n=40, q=2, p=2)
    fit = fit_two_stage_gd(Z, X, y, T=2000, step_theta=5.0, step_beta=5.0, trials=2)
    assert fit.diagnostics["n_nonfinite"] == 2


# ---------------------------------------------------------------------------- validation


def _good():
    Z, X, y, _ = _iv_data(22, n=30, q=2, p=2)
    return Z, X, y


@pytest.mark.parametrize(
    ("mutate", "match"),
    [
        (lambda Z, X, y: (Z[:, :1], X, y), "q >= p"),
        (lambda Z, X, y: (Z, X[:-1], y), "X has 29 rows"),
        (lambda Z, X, y: (Z, X, y[:-1]), "y has 29"),
        (lambda Z, X, y: (np.where(Z == Z[0, 0], np.nan, Z), X, y), "Z contains NaN"),
        (lambda Z, X, y: (Z, np.where(X == X[3, 1], np.inf, X), y), "X contains NaN"),
        (lambda Z, X, y: (Z, X, np.where(y == y[0], np.nan, y)), "y contains NaN"),
        (lambda Z, X, y: (Z[:1], X[:1], y[:1]), "n=1 < q=2"),
        (lambda Z, X, y: (Z[None, None], X, y), "Z must have shape"),
        (lambda Z, X, y: (np.repeat(Z[None], 2, 0), X, y), "trials=1"),
    ],
)
def test_bad_data_raise(mutate, match):
    Z, X, y = mutate(*_good())
    with pytest.raises(ValueError, match=match):
        fit_dp_two_stage_gd(Z, X, y, rho1=1.0, rho2=1.0, rng=np.random.default_rng(0), **DP_KW)
    with pytest.raises(ValueError, match=match):
        fit_two_stage_gd(Z, X, y, T=3, step_theta=1.0, step_beta=1.0)


@pytest.mark.parametrize(
    ("override", "match"),
    [
        ({"rho1": 0.0}, "rho1"),
        ({"rho2": -1.0}, "rho2"),
        ({"rho1": float("nan")}, "rho1"),
        ({"calibration": "tight"}, "calibration"),
        ({"clip_theta": math.inf}, "clip_theta=inf"),
        ({"clip_beta": 0.0}, "clip_beta"),
        ({"T": 0}, "T must be"),
        ({"step_beta": 0.0}, "step_beta"),
        ({"trials": 0}, "trials"),
    ],
)
def test_bad_parameters_raise(override, match):
    kw = dict(rho1=1.0, rho2=1.0, rng=np.random.default_rng(0), **DP_KW)
    kw.update(override)
    with pytest.raises(ValueError, match=match):
        fit_dp_two_stage_gd(*_good(), **kw)


def test_bad_rng_and_alg3_parameters_raise():
    with pytest.raises(TypeError, match="rng"):
        fit_dp_two_stage_gd(*_good(), rho1=1.0, rho2=1.0, rng=0, **DP_KW)
    kw = dict(rng=np.random.default_rng(0), T=3, step_theta=1.0, step_beta=1.0)
    with pytest.raises(ValueError, match="rho2"):
        fit_dp_two_stage_gd_beta(*_good(), rho2=0.0, clip_beta=1.0, **kw)
    with pytest.raises(ValueError, match="calibration"):
        fit_dp_two_stage_gd_beta(*_good(), rho2=1.0, clip_beta=1.0, calibration="x", **kw)
    with pytest.raises(ValueError, match="clip_beta=inf"):
        fit_dp_two_stage_gd_beta(*_good(), rho2=1.0, clip_beta=math.inf, **kw)


def test_2sgd_on_shared_data_runs_once_and_equals_a_batched_run():
    """Shared data: one run repeated along the trials axis, the same values as every row
    of the batched recursion (run here through the private loop with trials = 4)."""
    from dpreg.estimators.iv import _iterate, _prepare

    Z, X, y, Theta = _iv_data(21, n=200, q=3, p=2)
    eta, alpha = population_step_sizes(Theta)
    fit = fit_two_stage_gd(Z, X, y, T=40, step_theta=eta, step_beta=alpha, trials=4)
    batched = _iterate(
        _prepare(Z, X, y, 4), trials=4, T=40, step_theta=eta, step_beta=alpha,
        clip_theta=math.inf, clip_beta=math.inf, lambda1=0.0, lambda2=0.0, rng=None,
        return_path=True,
    )  # fmt: skip
    np.testing.assert_allclose(fit.theta, batched["beta"], rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(fit.path, batched["beta_path"], rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(
        fit.diagnostics["theta_path"], batched["theta_path"], rtol=1e-13, atol=1e-15
    )
    assert fit.theta.shape == (4, 2) and fit.diagnostics["n_nonfinite"] == 0
    np.testing.assert_array_equal(fit.theta[0], fit.theta[3])
    short = fit_two_stage_gd(Z, X, y, T=40, step_theta=eta, step_beta=alpha, trials=3,
                             return_path=False)  # fmt: skip
    assert short.path is None and short.theta.shape == (3, 2)
