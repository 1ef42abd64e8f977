"""Exact expected CI widths of DP-GD without clipping (dpreg.theory.dpgd_ci)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from scipy.special import gammaln

from dpreg.estimators.dpgd import dp_gd_path
from dpreg.inference.constructions import (
    batched_means_estimates,
    checkpoint_estimates,
    independent_runs_estimates,
)
from dpreg.theory import dpgd as th
from dpreg.theory import dpgd_ci as ci

STEP, LAM, M, BURN, N = 0.25, 0.5, 10, 20, 120


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    n, p = 200, 3
    X = rng.standard_normal((n, p)) * np.array([1.0, 1.3, 0.8])
    return X, X @ np.array([0.5, -0.3, 0.8]) + rng.standard_normal(n)


def _c4(m):
    return math.sqrt(2 / (m - 1)) * math.exp(gammaln(m / 2) - gammaln((m - 1) / 2))


@pytest.mark.parametrize("m", [2, 5, 10, 30])
def test_iid_estimates_give_c4(m):
    """E[s] = c4(m) sigma for iid N(mu, sigma^2) estimates, whatever their common mean."""
    q = stats.t.ppf(0.975, m - 1)
    h = ci.expected_t_half_width(np.full(m, 3.0), 2.0 * np.eye(m), alpha=0.05)
    assert h.rms == pytest.approx(q * math.sqrt(2.0 / m), rel=1e-13)
    assert h.expected == pytest.approx(q * _c4(m) * math.sqrt(2.0 / m), rel=1e-9)


@pytest.mark.parametrize("gap", [0.0, 0.3, 2.0, 10.0])
def test_two_estimates_give_the_folded_normal_mean(gap):
    """m = 2: s = |b1 - b2| / sqrt(2), a folded normal with a closed-form mean."""
    C = np.array([[1.0, 0.4], [0.4, 2.0]])
    v = C[0, 0] + C[1, 1] - 2 * C[0, 1]
    folded = math.sqrt(2 * v / math.pi) * math.exp(-(gap**2) / (2 * v)) + gap * (
        1 - 2 * stats.norm.cdf(-gap / math.sqrt(v))
    )
    q = stats.t.ppf(0.975, 1)
    h = ci.expected_t_half_width(np.array([gap, 0.0]), C, alpha=0.05)
    assert h.expected == pytest.approx(q * folded / 2, rel=1e-10)  # q s / sqrt(2)
    assert h.rms == pytest.approx(q * math.sqrt((v + gap**2) / 2) / math.sqrt(2), rel=1e-12)


def test_correlated_noncentral_estimates_against_monte_carlo():
    """A random covariance and unequal means: both moments within 4.5 SE of 400k draws."""
    rng = np.random.default_rng(3)
    m = 6
    L = rng.standard_normal((m, m))
    C = L @ L.T / m + 0.1 * np.eye(m)
    mu = rng.standard_normal(m)
    h = ci.expected_t_half_width(mu, C, alpha=0.1)
    b = rng.multivariate_normal(mu, C, size=400_000)
    half = stats.t.ppf(0.95, m - 1) * b.std(axis=1, ddof=1) / math.sqrt(m)
    se = half.std() / math.sqrt(half.size)
    assert abs(half.mean() - h.expected) < 4.5 * se
    sq = half**2
    assert abs(sq.mean() - h.rms**2) < 4.5 * sq.std() / math.sqrt(sq.size)
    assert h.expected < h.rms


def test_window_moments_equal_lemma23_closed_forms(data):
    X, y = data
    theta0 = np.array([0.3, 0.0, -1.0])
    windows = [(4, 12), (3, 3), (7, 7), (1, 30)]
    mean, cov = ci.window_means_moments(
        X, y, step=STEP, noise_std=LAM, windows=windows, theta0=theta0
    )
    kw = dict(step=STEP, noise_std=LAM)
    np.testing.assert_allclose(
        cov[0, :, 0, :], th.mean_of_iterates_covariance(X, start=4, stop=12, **kw), atol=1e-15
    )
    np.testing.assert_allclose(
        cov[2, :, 1, :], th.iterate_cross_covariance(X, t=3, tau=7, **kw), atol=1e-15
    )
    np.testing.assert_allclose(cov[1, :, 1, :], th.iterate_covariance(X, t=3, **kw), atol=1e-15)
    np.testing.assert_allclose(cov[1, :, 2, :], cov[2, :, 1, :].T, atol=1e-15)
    np.testing.assert_allclose(
        mean[1], th.iterate_mean(X, y, step=STEP, t=3, theta0=theta0), atol=1e-14
    )
    window = np.mean(
        [th.iterate_mean(X, y, step=STEP, t=t, theta0=theta0) for t in range(1, 31)], 0
    )
    np.testing.assert_allclose(mean[3], window, atol=1e-14)


@pytest.fixture(scope="module")
def single_runs(data):
    X, y = data
    path, _ = dp_gd_path(
        X, y, rng=np.random.default_rng(11), trials=20000, T=N, step=STEP, clip=math.inf,
        noise_std=LAM, kernel="fast",
    )  # fmt: skip
    return path


@pytest.mark.parametrize("method", ["batched_means", "checkpoints"])
def test_single_run_widths_match_monte_carlo(data, single_runs, method):
    """E[s^2] and E[half-width] per coordinate within 4.5 SE of 20 000 noisy-GD runs."""
    X, y = data
    theory = ci.ci_half_width_theory(
        X, y, method=method, total_steps=N, step=STEP, noise_std=LAM, m=M, burn_in=BURN
    )
    build = batched_means_estimates if method == "batched_means" else checkpoint_estimates
    est = build(single_runs, M, BURN)
    half = stats.t.ppf(0.975, M - 1) * est.std(axis=1, ddof=1) / math.sqrt(M)  # (runs, d)
    se = half.std(axis=0) / math.sqrt(half.shape[0])
    assert np.all(np.abs(half.mean(axis=0) - theory.expected) < 4.5 * se)
    sq = half**2
    se_sq = sq.std(axis=0) / math.sqrt(sq.shape[0])
    assert np.all(np.abs(sq.mean(axis=0) - theory.rms**2) < 4.5 * se_sq)


@pytest.mark.parametrize("run_estimate,burn_in", [("final", 0), ("post_burn_in_mean", 4)])
def test_independent_runs_widths_match_monte_carlo(data, run_estimate, burn_in):
    X, y = data
    T, trials = 12, 8000
    path, _ = dp_gd_path(
        X, y, rng=np.random.default_rng(12), trials=trials * M, T=T, step=STEP,
        clip=math.inf, noise_std=LAM, kernel="fast",
    )  # fmt: skip
    est = independent_runs_estimates(path.reshape(trials, M, T + 1, -1), burn_in, run_estimate)
    half = stats.t.ppf(0.975, M - 1) * est.std(axis=1, ddof=1) / math.sqrt(M)
    theory = ci.ci_half_width_theory(
        X, y, method="independent_runs", total_steps=M * T, step=STEP, noise_std=LAM,
        m=M, burn_in=burn_in, run_estimate=run_estimate,
    )  # fmt: skip
    se = half.std(axis=0) / math.sqrt(trials)
    assert np.all(np.abs(half.mean(axis=0) - theory.expected) < 4.5 * se)
    # iid runs: expected / rms is exactly c4(m)
    np.testing.assert_allclose(theory.expected / theory.rms, _c4(M), rtol=1e-9)


def test_construction_windows():
    assert ci.construction_windows("batched_means", 120, m=10, burn_in=20) == [
        (21 + 10 * k, 30 + 10 * k) for k in range(10)
    ]
    assert ci.construction_windows("checkpoints", 125, m=10, burn_in=20)[-1] == (125, 125)
    assert ci.construction_windows("independent_runs", 300, m=10, burn_in=20) == [(30, 30)]
    assert ci.construction_windows(
        "independent_runs", 300, m=10, burn_in=20, run_estimate="post_burn_in_mean"
    ) == [(21, 30)]


@pytest.mark.parametrize(
    "call,error,match",
    [
        (lambda X, y: ci.construction_windows("bootstrap", 100), ValueError, "method"),
        (
            lambda X, y: ci.construction_windows(
                "independent_runs", 100, run_estimate="post_burn_in_mean"
            ),
            ValueError,
            "burn_in",
        ),
        (
            lambda X, y: ci.window_means_moments(X, y, step=0.1, noise_std=1, windows=[(0, 3)]),
            ValueError,
            "first",
        ),
        (
            lambda X, y: ci.window_means_moments(X, y, step=0.1, noise_std=1, windows=[(5, 3)]),
            ValueError,
            "first",
        ),
        (
            lambda X, y: ci.expected_t_half_width(np.zeros(3), np.eye(2), alpha=0.05),
            ValueError,
            "shape",
        ),
        (
            lambda X, y: ci.expected_t_half_width(np.zeros(2), np.eye(2) * np.nan, alpha=0.05),
            ValueError,
            "finite",
        ),
        (
            lambda X, y: ci.expected_t_half_width(np.zeros(2), np.eye(2), alpha=1.5),
            ValueError,
            "alpha",
        ),
    ],
)
def test_bad_inputs(data, call, error, match):
    with pytest.raises(error, match=match):
        call(*data)


def test_batched_means_length_tends_to_the_closed_form_limit():
    """Exact expected length at N = 10^5 against the N -> infinity closed form."""
    from dpreg.estimators.dpgd import dp_gd_noise_std, dp_gd_sensitivity

    rng = np.random.default_rng(5)
    n, p, clip, rho = 2000, 3, 5 * math.sqrt(3), 0.05
    X = rng.standard_normal((n, p)) @ np.diag([1.0, 1.2, 0.7])
    y = X @ np.ones(p) + rng.standard_normal(n)
    limit = ci.batched_means_length_limit(X, clip=clip, rho=rho)
    for N, rel in ((10_000, 1e-2), (40_000, 2.5e-3)):  # error of order 1 / (L eta s)
        lam = dp_gd_noise_std(rho, N, dp_gd_sensitivity(clip, n))
        exact = ci.ci_half_width_theory(
            X, y, method="batched_means", total_steps=N, step=0.25, noise_std=lam
        )
        np.testing.assert_allclose(2 * exact.expected, limit, rtol=rel)
        assert np.all(2 * exact.expected < limit)  # correlated batches: from below
    with pytest.raises(ValueError, match="singular"):
        ci.batched_means_length_limit(np.zeros((5, 2)), clip=1.0, rho=1.0)
