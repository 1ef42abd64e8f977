"""Theory of DP-GD iterates (Brown et al. 2024, Lemma 2.3, Condition 2.4, Sec. 2.5, 4.6)."""

from __future__ import annotations

import math

import cvxpy as cp
import numpy as np
import pytest

from dpreg.estimators.dpgd import clipped_mean_gradient, dp_gd_path, fit_dp_gd
from dpreg.privacy.budgets import ZCDP
from dpreg.theory import dpgd as th

STEP, LAM = 0.25, 0.5


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    n, p = 200, 3
    X = rng.standard_normal((n, p)) * np.array([1.0, 1.3, 0.8])
    theta = np.array([0.5, -0.3, 0.8])
    return X, X @ theta + rng.standard_normal(n), theta


@pytest.fixture(scope="module")
def chains(data):
    X, y, _ = data
    path, _ = dp_gd_path(
        X,
        y,
        rng=np.random.default_rng(1),
        trials=20000,
        T=15,
        step=STEP,
        clip=math.inf,
        noise_std=LAM,
    )
    return path


def _recursion(X, y, T, theta0):
    """Brute-force moments of theta_{t+1} = theta_t - eta (Sigma theta_t - X'y/n) + eta lam z."""
    n, d = X.shape
    S, c = X.T @ X / n, X.T @ y / n
    P = np.eye(d) - STEP * S
    means, covs = [theta0], [np.zeros((d, d))]
    for _ in range(T):
        means.append(P @ means[-1] + STEP * c)
        covs.append(P @ covs[-1] @ P.T + (STEP * LAM) ** 2 * np.eye(d))
    return means, covs, P


def test_closed_forms_equal_the_recursion(data):
    X, y, _ = data
    theta0 = np.array([0.3, 0.0, -1.0])
    means, covs, P = _recursion(X, y, 12, theta0)
    for t in (0, 1, 5, 12):
        np.testing.assert_allclose(
            th.iterate_mean(X, y, step=STEP, t=t, theta0=theta0), means[t], atol=1e-12
        )
        np.testing.assert_allclose(
            th.iterate_covariance(X, step=STEP, noise_std=LAM, t=t), covs[t], atol=1e-14
        )
    cross = np.linalg.matrix_power(P, 7) @ covs[5]  # Cov(theta_12, theta_5)
    np.testing.assert_allclose(
        th.iterate_cross_covariance(X, step=STEP, noise_std=LAM, t=5, tau=12), cross, atol=1e-14
    )
    # exact covariance of the window mean, by summing the blocks
    lo, hi = 4, 12
    total = np.zeros((3, 3))
    for s in range(lo, hi + 1):
        for t in range(lo, hi + 1):
            a, b = max(s, t), min(s, t)
            total += np.linalg.matrix_power(P, a - b) @ covs[b]
    np.testing.assert_allclose(
        th.mean_of_iterates_covariance(X, step=STEP, noise_std=LAM, start=lo, stop=hi),
        total / (hi - lo + 1) ** 2,
        atol=1e-14,
    )
    # stationary law: Var -> eta lam^2 (2 Sigma - eta Sigma^2)^{-1}
    S = X.T @ X / X.shape[0]
    np.testing.assert_allclose(
        th.stationary_covariance(X, step=STEP, noise_std=LAM),
        STEP * LAM**2 * np.linalg.inv(2 * S - STEP * S @ S),
        rtol=1e-10,
    )
    np.testing.assert_allclose(th._geometric(np.array([1.0, 0.5]), 4), [4.0, 1.875])


def _z(emp, theory, var):
    return np.abs(emp - theory) / np.sqrt(var)


def test_lemma23_moments_match_monte_carlo(data, chains):
    """Mean, covariance and cross-covariance of dp_gd iterates (gamma = inf), 20000 chains."""
    X, y, _ = data
    R = chains.shape[0]
    for t in (1, 5, 15):
        mean = th.iterate_mean(X, y, step=STEP, t=t)
        cov = th.iterate_covariance(X, step=STEP, noise_std=LAM, t=t)
        v = np.diag(cov)
        assert _z(chains[:, t].mean(axis=0), mean, v / R).max() < 4.5
        se = np.sqrt((np.outer(v, v) + cov**2) / R)  # SE of a Gaussian sample covariance
        assert (np.abs(np.cov(chains[:, t].T) - cov) / se).max() < 4.5
    cross = th.iterate_cross_covariance(X, step=STEP, noise_std=LAM, t=5, tau=15)
    a = chains[:, 15] - chains[:, 15].mean(axis=0)
    b = chains[:, 5] - chains[:, 5].mean(axis=0)
    v15 = np.diag(th.iterate_covariance(X, step=STEP, noise_std=LAM, t=15))
    v5 = np.diag(th.iterate_covariance(X, step=STEP, noise_std=LAM, t=5))
    se = np.sqrt((np.outer(v15, v5) + cross**2) / R)
    assert (np.abs(a.T @ b / (R - 1) - cross) / se).max() < 4.5
    window = th.mean_of_iterates_covariance(X, step=STEP, noise_std=LAM, start=6, stop=15)
    w = np.diag(window)
    se = np.sqrt((np.outer(w, w) + window**2) / R)
    assert (np.abs(np.cov(chains[:, 6:16].mean(axis=1).T) - window) / se).max() < 4.5
    # E||theta_T - theta_hat||^2 (privacy error of Fig. 1/2)
    err2 = np.sum((chains[:, 15] - np.linalg.lstsq(X, y, rcond=None)[0]) ** 2, axis=1)
    expected = th.expected_squared_error(X, y, step=STEP, noise_std=LAM, T=15)
    assert abs(err2.mean() - expected) < 4.5 * err2.std(ddof=1) / math.sqrt(R)


def test_isotropic_privacy_error_and_crossover():
    rng = np.random.default_rng(2)
    n, p, T, rho, eta = 20000, 10, 20, 0.015, 0.2
    gamma = 5 * math.sqrt(p)
    X = rng.standard_normal((n, p))
    y = X @ (np.ones(p) / math.sqrt(p)) + rng.standard_normal(n)
    lam = math.sqrt(2 * T * gamma**2 / (rho * n**2))
    exact = th.expected_squared_error(X, y, step=eta, noise_std=lam, T=T)
    theta_norm = np.linalg.norm(np.linalg.lstsq(X, y, rcond=None)[0])
    approx = th.isotropic_privacy_mse(
        n, p, T=T, clip=gamma, rho=rho, step=eta, theta_norm=theta_norm
    )
    assert approx == pytest.approx(exact, rel=0.03)  # Sigma_hat = I + O(sqrt(p/n))
    n_star = th.crossover_n(T=T, clip=gamma, rho=rho, step=eta)
    assert th.isotropic_privacy_mse(n_star, p, T=T, clip=gamma, rho=rho, step=eta) == pytest.approx(
        p / n_star, rel=1e-12
    )
    # docs/notes/brown2024.md §4.6: about 7.4e5 at gamma = 5 sqrt(100), T = 20, eta = 1/5,
    # rho = 0.015
    assert th.crossover_n(T=20, clip=50.0, rho=0.015, step=0.2, finite_T=False) == pytest.approx(
        7.41e5, rel=0.01
    )
    assert th.ols_sampling_mse(1000, 10) == pytest.approx(10 / 989)


def test_no_clipping_condition_against_explicit_sums(data):
    X, y, theta = data
    n, p = X.shape
    T, sigma = 4, 1.3
    chk = th.no_clipping_condition(X, y, theta, step=STEP, T=T, sigma=sigma)
    S = X.T @ X / n
    P = np.eye(p) - STEP * S
    r = y - X @ theta
    iv = v = 0.0
    for t in range(1, T + 1):
        Pt = np.linalg.matrix_power(P, t)
        At = (np.eye(p) - Pt) @ np.linalg.inv(S)
        for i in range(n):
            iv = max(iv, abs(X[i] @ Pt @ theta))
            v = max(v, abs(sum(r[j] * X[i] @ At @ X[j] for j in range(0, n, 1))))
    assert chk.c0_ii == pytest.approx(np.linalg.norm(X, axis=1).max() / math.sqrt(p))
    assert chk.c0_iii == pytest.approx(np.abs(r).max() / sigma)
    assert chk.c0_iv == pytest.approx(iv, rel=1e-10)
    assert chk.c0_v == pytest.approx(v / (sigma * math.sqrt(n * p)), rel=1e-10)
    eig = np.linalg.eigvalsh(S)
    assert chk.condition_i == bool(
        eig.min() >= 0.5 and eig.max() <= 2 and np.abs(1 - STEP * eig).max() <= 7 / 8
    )
    assert chk.c0 == max(chk.c0_ii, chk.c0_iii, chk.c0_iv, chk.c0_v)
    # Lemma 2.6's constant (docs/notes/brown2024.md §4.3: n = 1000, T = 10, beta = 0.05 gives
    # about 616)
    assert th.lemma26_c0(1000, 10, 0.05) == pytest.approx(616.2, abs=0.5)
    cond = th.lemma25_conditions(
        c0=chk.c0, sigma=1.0, clip=1e9, step=STEP, noise_std=1e-3, n=n, p=p, T=T, beta=0.1
    )
    assert cond["clip_required"] == pytest.approx(4 * chk.c0**2 * math.sqrt(p))
    assert cond["holds"] is True


def test_huber_target_matches_cvxpy_and_zeroes_the_clipped_gradient():
    rng = np.random.default_rng(4)
    n, p = 300, 3
    X = np.column_stack([np.ones(n), rng.standard_normal((n, p - 1))])
    y = X @ np.array([0.2, 1.0, -0.5]) + rng.exponential(size=n) - 1.0
    gamma = 1.0
    target = th.huber_target(X, y, gamma)
    g, frac = clipped_mean_gradient(X, y, target[:, None], gamma)
    assert np.abs(g).max() < 1e-10 and frac[0] > 0.2  # heavy clipping, stationary point
    B = gamma / np.linalg.norm(X, axis=1)
    v = cp.Variable(p)
    objective = cp.sum(cp.multiply(B**2 / 2, cp.huber(cp.multiply(1 / B, y - X @ v), 1))) / n
    cp.Problem(cp.Minimize(objective)).solve(solver=cp.CLARABEL)
    np.testing.assert_allclose(target, v.value, atol=2e-5)  # interior-point accuracy
    assert th.huber_objective(X, y, target, gamma) == pytest.approx(objective.value, rel=1e-7)
    ols = np.linalg.lstsq(X, y, rcond=None)[0]
    assert abs(target[0] - ols[0]) > 0.1  # skewed errors: the targets differ (intercept)
    np.testing.assert_array_equal(th.huber_target(X, y, math.inf), ols)
    # noiseless clipped GD (Algorithm 1 with rho = inf) converges to it
    fit = fit_dp_gd(
        X,
        y,
        budget=ZCDP(math.inf),
        rng=np.random.default_rng(0),
        T=3000,
        step=0.5,
        clip=gamma,
        bound_X=None,
        bound_y=None,
        kernel="fast",
    )
    np.testing.assert_allclose(fit.theta[0], target, atol=1e-8)


def test_bad_inputs(data):
    X, y, theta = data
    with pytest.raises(ValueError, match="tau"):
        th.iterate_cross_covariance(X, step=STEP, noise_std=1.0, t=5, tau=2)
    with pytest.raises(ValueError, match="non-negative"):
        th.iterate_mean(X, y, step=STEP, t=-1)
    with pytest.raises(ValueError, match="stationary"):
        th.stationary_covariance(X, step=5.0, noise_std=1.0)
    with pytest.raises(ValueError, match="stop"):
        th.mean_of_iterates_covariance(X, step=STEP, noise_std=1.0, start=5, stop=2)
    with pytest.raises(ValueError, match="n > p"):
        th.ols_sampling_mse(5, 10)
