"""Linear Mixing (Lev et al. 2025/2026, Algs. 4-5) and Sheffet's noisy sketch (eq. (7))."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from dpreg.estimators import get_estimator
from dpreg.estimators.sketch import (
    default_sketch_size,
    fit_linear_mixing,
    fit_sheffet_sketch,
    linear_mixing_epsilon,
    linear_mixing_gamma,
    sheffet_gamma,
    sketch_gram,
)
from dpreg.privacy.budgets import ZCDP, ApproxDP
from dpreg.privacy.mixing import mixing_epsilon, mixing_rdp


def _data(seed: int = 0, n: int = 2000, d: int = 4, noise: float = 0.1):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1).max()
    y = X @ rng.normal(size=d) + noise * rng.normal(size=n)
    y /= np.abs(y).max()
    return X, y


def _renyi_1d(alpha: float, var_p: float, var_q: float) -> float:
    """D_alpha(N(0, var_p) || N(0, var_q)) by numerical integration (independent)."""
    sp, sq = math.sqrt(var_p), math.sqrt(var_q)

    def integrand(x):
        return math.exp(
            alpha * stats.norm.logpdf(x, scale=sp) + (1 - alpha) * stats.norm.logpdf(x, scale=sq)
        )

    lim = 40 / math.sqrt(alpha / var_p + (1 - alpha) / var_q)  # width of p^a q^(1-a)
    val, _ = integrate.quad(integrand, -lim, lim, limit=200, points=[0.0])
    return math.log(val) / (alpha - 1)


def _independent_eq17(gamma: float, k: int, delta: float, eta: float) -> float:
    """eq. (17) by brute force: closed-form 1-D Renyi (log form), dense alpha grid."""
    alpha = 1 + (gamma - 1) * np.linspace(1e-6, 1 - 1e-6, 400001)
    vp, vq = gamma, gamma - 1.0
    renyi = np.log(math.sqrt(vq / vp)) + np.log(vq / (alpha * vq + (1 - alpha) * vp)) / (
        2 * (alpha - 1)
    )
    conv = (np.log(3 / delta) + (alpha - 1) * np.log(1 - 1 / alpha) - np.log(alpha)) / (alpha - 1)
    return math.sqrt(2 * math.log(1.25 / (delta / 3))) / eta + float(np.min(k * renyi + conv))


# ------------------------------------------------------------------------ accounting


@pytest.mark.parametrize("alpha", [1.001, 1.5, 4.0, 9.9])
def test_mixing_rdp_is_k_times_gaussian_renyi(alpha):
    k, gamma = 7, 10.0
    ref = k * _renyi_1d(alpha, gamma, gamma - 1.0)
    assert float(mixing_rdp(alpha, k, gamma)) == pytest.approx(ref, rel=1e-7)


@pytest.mark.parametrize("epsilon,k,n", [(0.631, 65, 13500), (0.1, 30, 92), (10.0, 25, 1000)])
def test_linear_mixing_gamma_against_independent_accounting(epsilon, k, n):
    delta = 1.0 / n**2
    gamma = linear_mixing_gamma(epsilon, k, delta)
    assert gamma > 2.5
    eps_here = linear_mixing_epsilon(gamma, k, delta)
    eps_ref = _independent_eq17(gamma, k, delta, gamma / math.sqrt(k))
    assert eps_here <= epsilon * (1 + 1e-12)
    assert eps_ref == pytest.approx(epsilon, rel=1e-6)
    # smallest: a slightly smaller gamma exceeds the budget
    assert linear_mixing_epsilon(gamma * (1 - 1e-6), k, delta) > epsilon
    # eq. (18): eps <= k / (2 gamma^2) + 2 sqrt(2 k log(4/delta)) / gamma. (Checked for
    # eps <= 1 only: at eps = 10, gamma ~ 6 and the closed form falls below eq. (17).)
    if epsilon <= 1.0:
        bound18 = k / (2 * gamma**2) + 2 * math.sqrt(2 * k * math.log(4 / delta)) / gamma
        assert epsilon <= bound18


def test_code_scaling_reference_values_from_notes():
    """docs/notes/lev2026.md §7: gamma_LinMix (code units) ~ 216.2 on Pol, ~ 96.6 on
    Concrete Slump."""
    for eps, k, n, ref in [(0.631, 65, 13500, 216.2), (0.631, 30, 92, 96.6)]:
        g = linear_mixing_gamma(eps, k, 1.0 / n**2, eig_sensitivity=0.5)
        assert 2 * g == pytest.approx(ref, rel=3e-3)


def test_sheffet_gamma_against_independent_accounting():
    epsilon, k, delta = 1.0, 40, 1e-8
    gamma = sheffet_gamma(epsilon, k, delta)
    eps, alpha = mixing_epsilon(gamma, k, delta)
    assert eps <= epsilon * (1 + 1e-12) and eps == pytest.approx(epsilon, rel=1e-9)
    a = 1 + (gamma - 1) * np.linspace(1e-6, 1 - 1e-6, 200001)
    ref = k * (
        0.5 * np.log(1 - 1 / gamma)
        + np.log((gamma - 1) / (a * (gamma - 1) + (1 - a) * gamma)) / (2 * (a - 1))
    ) + (np.log(1 / delta) + (a - 1) * np.log(1 - 1 / a) - np.log(a)) / (a - 1)
    assert float(ref.min()) == pytest.approx(epsilon, rel=1e-6)


def test_default_sketch_size_matches_code_rule():
    # Pol: d = 26, delta = 1/13500^2, varrho = delta / 10 -> k = 65 (docs/notes/lev2026.md §7)
    assert default_sketch_size(26, 1.0 / 13500**2 / 10) == 65
    assert default_sketch_size(7, 1.0 / 92**2 / 10) == 30


# -------------------------------------------------------------------- linear mixing


def _big_lambda_data(seed=0, n=20000, d=3):
    """Orthogonal-ish design with a large lambda_min of [X, y]'[X, y] / 2."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, d)) / math.sqrt(d)
    y = rng.uniform(-1, 1, size=n)
    return X, y


def test_eigenvalue_test_and_mixing_noise_monte_carlo():
    X, y = _big_lambda_data()
    n, d = X.shape
    b = ApproxDP(1.0, 1e-8)
    trials = 4000
    fit = fit_linear_mixing(X, y, budget=b, rng=np.random.default_rng(2), trials=trials)
    dg = fit.diagnostics
    A = np.column_stack([X, y]) / math.sqrt(2.0)
    lam = np.linalg.eigvalsh(A.T @ A)[0]
    k = default_sketch_size(d, 1e-9)
    gamma = linear_mixing_gamma(1.0, k, 1e-8)
    eta = gamma / math.sqrt(k)
    tau = math.sqrt(2 * math.log(max(3 / 1e-8, 2 / 1e-9)))
    assert (dg["k"], dg["gamma"], dg["eig_noise_std"], dg["tau"]) == pytest.approx(
        (k, gamma, eta, tau), rel=1e-12
    )
    lt = dg["lambda_tilde"]
    assert lam - eta * tau > 10 * eta  # the clamp at 0 never binds here
    assert abs(lt.mean() - (lam - eta * tau)) < 4 * eta / math.sqrt(trials)
    assert abs(lt.var(ddof=1) / eta**2 - 1) < 4 * math.sqrt(2 / (trials - 1))
    np.testing.assert_allclose(dg["eta_tilde"], np.sqrt(np.maximum(gamma - lt, 0)))
    assert fit.budget_spent.epsilon <= 1.0 and fit.budget_spent.delta == 1e-8


@pytest.mark.parametrize("sampler", ["wishart", "direct"])
def test_sketch_gram_mean(sampler):
    rng = np.random.default_rng(0)
    A = rng.normal(size=(60, 3)) / 3
    G = A.T @ A
    w, V = np.linalg.eigh(G)
    trials, k = 3000 if sampler == "wishart" else 600, 8
    eta = np.full(trials, 0.7)
    M = sketch_gram(A, (w, V), eta, np.full(trials, k), rng=rng, sampler=sampler)
    Sigma = G + 0.49 * np.eye(3)
    mean = M.mean(axis=0)
    # Var of M_ij for Wishart(k, Sigma): k (Sigma_ij^2 + Sigma_ii Sigma_jj)
    se = np.sqrt(k * (Sigma**2 + np.outer(np.diag(Sigma), np.diag(Sigma))) / trials)
    assert np.all(np.abs(mean - k * Sigma) < 4.5 * se)


def test_samplers_agree_in_distribution():
    X, y = _data(n=150, d=2)
    b = ApproxDP(2.0, 1e-5)
    fw = fit_linear_mixing(X, y, budget=b, rng=np.random.default_rng(0), trials=1500)
    fd = fit_linear_mixing(
        X, y, budget=b, rng=np.random.default_rng(1), trials=400, sampler="direct"
    )
    for j in range(2):
        assert stats.ks_2samp(fw.theta[:, j], fd.theta[:, j]).pvalue > 1e-3


def test_mse_decreases_to_ols_as_epsilon_grows():
    X, y = _data(n=5000, d=4)
    ols_mse = np.mean((y - X @ np.linalg.lstsq(X, y, rcond=None)[0]) ** 2)
    mses = []
    for eps in (0.1, 1.0, 10.0, 1e3, math.inf):
        fit = fit_linear_mixing(
            X,
            y,
            budget=ApproxDP(eps, 1e-8),
            rng=np.random.default_rng(0),
            trials=200,
            k=2000,
        )
        mses.append(np.mean((y[:, None] - X @ fit.theta.T) ** 2))
    assert all(a > b * 0.98 for a, b in zip(mses, mses[1:], strict=False))
    assert mses[-2] / ols_mse < 1.01 and mses[-1] / ols_mse < 1.01
    assert mses[0] / ols_mse > 2


def test_code_faithful_sqrt2_gap():
    X, y = _data()
    b = ApproxDP(1.0, 1e-6)
    best = fit_linear_mixing(X, y, budget=b, rng=np.random.default_rng(0))
    code = fit_linear_mixing(X, y, budget=b, rng=np.random.default_rng(0), faithful="code")
    dc = code.diagnostics
    k, gamma = dc["k"], dc["gamma"]
    assert dc["epsilon_accounted"] == pytest.approx(1.0, rel=1e-9)
    assert dc["eig_noise_std"] == pytest.approx(math.sqrt(2) * gamma / math.sqrt(k), rel=1e-12)
    eig_accounted = math.sqrt(2 * math.log(3.75 / 1e-6)) * math.sqrt(k) / (2 * gamma)
    gap = code.budget_spent.epsilon - dc["epsilon_accounted"]
    assert gap == pytest.approx(eig_accounted * (math.sqrt(2) - 1), rel=1e-9)
    assert best.budget_spent.epsilon <= 1.0 < code.budget_spent.epsilon
    assert code.diagnostics["gamma"] < best.diagnostics["gamma"]


def test_dynamic_k_branches():
    b = ApproxDP(1.0, 1e-8)
    X, y = _big_lambda_data()
    fit = fit_linear_mixing(X, y, budget=b, rng=np.random.default_rng(0), trials=5, dynamic_k=True)
    dg = fit.diagnostics
    assert dg["dynamic"].all() and np.all(dg["eta_tilde"] == 0)
    k0 = default_sketch_size(X.shape[1], 1e-9)
    assert np.all(dg["k"] > k0)
    assert dg["tau"] == pytest.approx(math.sqrt(8 * math.log(max(3e8, 4e9))))
    for lt, kt in zip(dg["lambda_tilde"], dg["k"], strict=True):
        eta = dg["gamma"] / math.sqrt(kt)
        assert linear_mixing_epsilon(lt, kt, 1e-8, eta=eta, refine=False) < 1.0
        eta1 = dg["gamma"] / math.sqrt(kt + 1)
        assert linear_mixing_epsilon(lt, kt + 1, 1e-8, eta=eta1, refine=False) >= 1.0
    # small lambda_min: the noisy branch, which is Algorithm 4 with the larger tau
    Xs, ys = _data(n=300)
    fs = fit_linear_mixing(Xs, ys, budget=b, rng=np.random.default_rng(0), trials=5, dynamic_k=True)
    assert not fs.diagnostics["dynamic"].any()
    assert np.all(fs.diagnostics["k"] == default_sketch_size(4, 1e-9))


def test_scale_invariance_and_reproducibility():
    X, y = _data()
    b = ApproxDP(1.0, 1e-6)
    f1 = fit_linear_mixing(X, y, budget=b, rng=np.random.default_rng(3), trials=4)
    f2 = fit_linear_mixing(X, y, budget=b, rng=np.random.default_rng(3), trials=4)
    f3 = fit_linear_mixing(
        3 * X, 3 * y, budget=b, rng=np.random.default_rng(3), trials=4, bound_X=3.0, bound_y=3.0
    )
    np.testing.assert_array_equal(f1.theta, f2.theta)
    np.testing.assert_allclose(f3.theta, f1.theta, rtol=1e-9, atol=1e-12)  # [X, y] / s
    f4 = fit_linear_mixing(X, y, budget=b, rng=np.random.default_rng(4), trials=4)
    assert not np.array_equal(f1.theta, f4.theta)
    assert get_estimator("linear_mixing") is fit_linear_mixing
    assert get_estimator("sheffet_sketch") is fit_sheffet_sketch


# ---------------------------------------------------------------------------- Sheffet


def test_sheffet_calibrations_and_noise():
    X, y = _data()
    k, delta = 40, 1e-6
    fit = fit_sheffet_sketch(X, y, budget=ApproxDP(1.0, delta), rng=np.random.default_rng(0), k=k)
    dg = fit.diagnostics
    assert dg["gamma"] == pytest.approx(sheffet_gamma(1.0, k, delta), rel=1e-12)
    assert dg["noise_std"] ** 2 == pytest.approx(dg["gamma"], rel=1e-12)
    assert fit.budget_spent.epsilon <= 1.0
    seed = fit_sheffet_sketch(
        X, y, budget=ApproxDP(1.0, delta), rng=np.random.default_rng(0), k=k, calibration="seed"
    )
    L8 = math.log(8 / delta)
    W2 = 4.0 * (math.sqrt(2 * k * L8) + L8)
    assert seed.diagnostics["gamma"] == pytest.approx(W2, rel=1e-12)
    assert seed.budget_spent.epsilon == pytest.approx(mixing_epsilon(W2, k, delta)[0])
    assert seed.budget_spent.epsilon < 1.0  # the seed's noise is more conservative


def test_sheffet_mse_to_ols_as_epsilon_grows():
    X, y = _data(n=5000, d=4)
    ols_mse = np.mean((y - X @ np.linalg.lstsq(X, y, rcond=None)[0]) ** 2)
    mses = []
    for eps in (0.1, 1.0, 10.0, 1e3, math.inf):
        fit = fit_sheffet_sketch(
            X, y, budget=ApproxDP(eps, 1e-8), rng=np.random.default_rng(0), trials=200, k=2000
        )
        mses.append(np.mean((y[:, None] - X @ fit.theta.T) ** 2))
    assert all(a > b * 0.98 for a, b in zip(mses, mses[1:], strict=False))
    assert mses[-2] / ols_mse < 1.01 and mses[-1] / ols_mse < 1.01


# ------------------------------------------------------------------------ bad inputs


@pytest.mark.parametrize("fit", [fit_linear_mixing, fit_sheffet_sketch])
@pytest.mark.parametrize(
    "kwargs,exc,match",
    [
        (dict(k=3), ValueError, "k must be"),
        (dict(k=10.5), ValueError, "k must be"),
        (dict(sampler="fast"), ValueError, "sampler"),
        (dict(bound_y=0.1), ValueError, "bound_y"),
        (dict(failure_prob=2.0), ValueError, "failure_prob"),
        (dict(budget=ZCDP(1.0)), TypeError, "budget"),
        (dict(rng=None), TypeError, "rng"),
        (dict(trials=-1), ValueError, "trials"),
    ],
)
def test_bad_inputs(fit, kwargs, exc, match):
    X, y = _data(n=200)
    base = dict(budget=ApproxDP(1.0, 1e-6), rng=np.random.default_rng(0))
    with pytest.raises(exc, match=match):
        fit(X, y, **{**base, **kwargs})


def test_bad_options():
    X, y = _data(n=200)
    base = dict(budget=ApproxDP(1.0, 1e-6), rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="faithful"):
        fit_linear_mixing(X, y, **base, faithful="paper")
    with pytest.raises(ValueError, match="Algorithm 4 only"):
        fit_linear_mixing(X, y, **base, faithful="code", dynamic_k=True)
    with pytest.raises(ValueError, match="calibration"):
        fit_sheffet_sketch(X, y, **base, calibration="exact")
    with pytest.raises(ValueError, match="at least as many rows"):
        fit_linear_mixing(X[:3], y[:3], **base)


@pytest.mark.parametrize("name", ["linear_mixing", "sheffet_sketch"])
def test_released_sketch_gram_gives_theta(name):
    # theta is a function of the released Gram of the sketch of [X, y] / s only.
    X, y = _data(2, n=500, d=3)
    fit = get_estimator(name)(X, y, budget=ApproxDP(1.0, 1e-6), rng=np.random.default_rng(0),
                              trials=4)  # fmt: skip
    M = fit.diagnostics["sketch_gram"]
    assert M.shape == (4, 4, 4)
    theta = np.linalg.solve(M[:, :3, :3], M[:, :3, 3:])[..., 0]
    np.testing.assert_allclose(theta, fit.theta, rtol=1e-8, atol=1e-12)


def test_unstacked_gram_equals_the_stacked_reference():
    """Both Gram paths of _prepare (compiled pass, BLAS blocks) equal the stacked reference."""
    from dpreg._validation import check_bounded_design_gram
    from dpreg.estimators.sketch import _stacked_gram

    for seed, (n, d) in enumerate([(1, 1), (7, 3), (2000, 4), (5000, 20), (300, 8)]):
        rng = np.random.default_rng(seed)
        X, y = rng.normal(size=(n, d)), rng.normal(size=n)
        scale = math.sqrt(2.0) * (1 + seed)
        ref = _stacked_gram(X, y, scale)
        # each entry is a sum of n products: |fast - ref| <= 2 gamma_n sum |a_i||b_i|
        absolute = np.abs(np.column_stack([X, y])) / scale
        tol = 4 * (n + 2) * np.finfo(float).eps * (absolute.T @ absolute)
        for method in ("compiled", "reference"):
            gram = check_bounded_design_gram(
                X, y, bound_X=1e3, bound_y=1e3, trials=1, rng=rng, method=method
            )[4] / (scale * scale)
            assert np.all(np.abs(gram - ref) <= tol), method
            np.testing.assert_array_equal(gram, gram.T)


@pytest.mark.parametrize("fit", [fit_linear_mixing, fit_sheffet_sketch])
@pytest.mark.parametrize("sampler", ["wishart", "direct"])
def test_compiled_gram_gives_the_reference_fits_to_round_off(fit, sampler, monkeypatch):
    """Same seed, same draws: the fits of the compiled and BLAS Gram agree to round-off."""
    import functools

    import dpreg.estimators._gram_cache as gram_cache

    X, y = _data(seed=5, n=6000, d=5)  # n (d + 1) >= COMPILED_MIN_ELEMENTS
    kwargs = dict(budget=ApproxDP(1.0, 1e-6), trials=64, sampler=sampler)
    fast = fit(X, y, rng=np.random.default_rng(11), **kwargs)  # 64 trials: compiled pass
    real = gram_cache.check_bounded_design_gram
    monkeypatch.setattr(
        gram_cache, "check_bounded_design_gram", functools.partial(real, method="reference")
    )
    monkeypatch.setattr(gram_cache, "_GRAM_CACHE_PATH", "reference")  # no cached Gram
    ref = fit(X, y, rng=np.random.default_rng(11), **kwargs)
    if sampler == "wishart":  # the sketch is drawn from the Gram: the two paths did run
        assert not np.array_equal(fast.theta, ref.theta)
    np.testing.assert_allclose(fast.theta, ref.theta, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(
        fast.diagnostics["sketch_gram"], ref.diagnostics["sketch_gram"], rtol=1e-9, atol=1e-12
    )
    assert fast.budget_spent == ref.budget_spent  # the noise scale does not see the data
    for key in ("gamma", "epsilon_certified"):
        assert fast.diagnostics[key] == ref.diagnostics[key]


def test_memoised_certificates_equal_the_accountant():
    from dpreg.estimators.sketch import _linear_mixing_epsilon_cached, _mixing_epsilon_cached

    for gamma, k in [(30.0, 40), (80.0, 100)]:
        assert _linear_mixing_epsilon_cached(gamma, k, 1e-6, None, 1.0) == linear_mixing_epsilon(
            gamma, k, 1e-6
        )
        assert _linear_mixing_epsilon_cached(gamma, k, 1e-6, 2.0, 0.5) == linear_mixing_epsilon(
            gamma, k, 1e-6, eta=2.0, eig_sensitivity=0.5
        )
        assert _mixing_epsilon_cached(gamma, k, 1e-6) == mixing_epsilon(gamma, k, 1e-6)
