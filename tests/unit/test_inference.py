"""Confidence intervals from DP-GD (Brown et al. 2024, Sec. 3, eq. 12, Theorem 3.1)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import stats

from dpreg.inference import (
    dp_gd_confidence_intervals,
    intervals_from_path,
    ols_interval_half_width,
    t_interval,
)
from dpreg.inference.constructions import (
    batch_windows,
    batched_means_estimates,
    checkpoint_indices,
    independent_runs_estimates,
)
from dpreg.inference.coverage import coverage_summary
from dpreg.privacy.budgets import ZCDP
from dpreg.theory.dpgd import huber_target


def test_t_interval_equals_scipy():
    est = np.random.default_rng(0).normal(size=(4, 10, 3))
    center, half = t_interval(est, 0.1)
    for k in range(4):
        for j in range(3):
            x = est[k, :, j]
            lo, hi = stats.t.interval(0.9, 9, loc=x.mean(), scale=stats.sem(x))
            assert center[k, j] - half[k, j] == pytest.approx(lo)
            assert center[k, j] + half[k, j] == pytest.approx(hi)


def test_t_interval_is_exact_for_iid_gaussian_estimates():
    """Claim C.9: eq. (12) has coverage exactly 1 - alpha for iid Gaussian estimates."""
    rng = np.random.default_rng(1)
    R, alpha = 40000, 0.05
    est = 3.0 + 2.0 * rng.standard_normal((R, 10, 1))
    center, half = t_interval(est, alpha)
    covered = np.abs(center - 3.0) <= half
    assert abs(covered.mean() - (1 - alpha)) < 4 * math.sqrt(alpha * (1 - alpha) / R)


def test_estimate_indices():
    # theorem setting: N = m T, no burn-in -> theta_{l T}
    np.testing.assert_array_equal(checkpoint_indices(100, 10, 0), np.arange(10, 101, 10))
    idx = checkpoint_indices(107, 10, 20)  # remainder 7 dropped after the burn-in
    assert idx[-1] == 107 and np.all(np.diff(idx) == 8) and idx[0] == 20 + 7 + 8
    first, L = batch_windows(107, 10, 20)
    assert (first, L) == (28, 8) and first + 10 * L - 1 == 107
    path = np.arange(108, dtype=float)[None, :, None] * np.ones((2, 1, 3))
    bm = batched_means_estimates(path, 10, 20)
    np.testing.assert_allclose(
        bm[0, :, 0], [np.mean(np.arange(28 + 8 * k, 36 + 8 * k)) for k in range(10)]
    )
    runs = np.arange(31, dtype=float)[None, None, :, None] * np.ones((2, 10, 1, 3))
    np.testing.assert_allclose(independent_runs_estimates(runs, 20, "final"), 30.0)
    np.testing.assert_allclose(independent_runs_estimates(runs, 20, "post_burn_in_mean"), 25.5)
    with pytest.raises(ValueError, match="burn_in"):
        independent_runs_estimates(runs[:, :, :15], 20, "post_burn_in_mean")
    with pytest.raises(ValueError, match="at least m"):
        checkpoint_indices(25, 10, 20)


@pytest.fixture(scope="module")
def gaussian_data():
    rng = np.random.default_rng(7)
    n, p = 2000, 3
    X = rng.standard_normal((n, p))
    theta = rng.standard_normal(p)
    theta /= np.linalg.norm(theta)
    y = X @ theta + rng.standard_normal(n)
    return X, y


@pytest.mark.parametrize("method", ["independent_runs", "checkpoints", "batched_means"])
def test_whole_construction_is_rho_zcdp(gaussian_data, method):
    X, y = gaussian_data
    n, p = X.shape
    rho, gamma, N = 0.015, 5 * math.sqrt(p), 300
    ci = dp_gd_confidence_intervals(
        X,
        y,
        budget=ZCDP(rho),
        rng=np.random.default_rng(0),
        method=method,
        total_steps=N,
        clip=gamma,
        step=0.25,
        trials=3,
        run_estimate="post_burn_in_mean",
    )
    meta = ci.metadata
    assert meta["budget_spent"].rho == pytest.approx(rho, rel=1e-12)
    assert meta["budget_spent"].rho <= rho * (1 + 1e-12)
    assert meta["noise_std"] ** 2 == pytest.approx(2 * N * gamma**2 / (rho * n**2), rel=1e-12)
    assert meta["df"] == 9 and meta["t_quantile"] == pytest.approx(stats.t.ppf(0.975, 9))
    assert ci.lower.shape == (3, p) and ci.estimates.shape == (3, 10, p)
    assert meta["steps_per_run"] == (30 if method == "independent_runs" else 300)
    np.testing.assert_allclose(ci.upper - ci.lower, 2 * ci.half_width)


@pytest.mark.parametrize("method", ["independent_runs", "checkpoints"])
def test_theorem31_coverage_without_clipping(gaussian_data, method):
    """Final iterates, no burn-in, T = 30 >> 1/(eta lambda_min): coverage of theta_hat_j."""
    X, y = gaussian_data
    p = X.shape[1]
    ci = dp_gd_confidence_intervals(
        X,
        y,
        budget=ZCDP(0.05),
        rng=np.random.default_rng(11),
        method=method,
        total_steps=300,
        clip=5 * math.sqrt(p),
        step=0.25,
        burn_in=0,
        trials=400,
    )
    assert ci.metadata["proven"] is True
    assert ci.metadata["clip_fraction"].mean() < 5e-3  # (almost) the no-clipping regime
    ols = np.linalg.lstsq(X, y, rcond=None)[0]
    summary = coverage_summary(ci.covers(ols))
    se = max(summary["se"], summary["se_nominal"])
    assert abs(summary["mean"] - 0.95) < 4 * se


def test_huber_target_is_covered_under_clipping():
    """Skewed errors and heavy clipping: the intervals track theta_hat_gamma, not OLS."""
    rng = np.random.default_rng(5)
    n = 4000
    X = np.column_stack([np.ones(n), rng.standard_normal(n)])
    y = X @ np.array([0.0, 1.0]) + rng.exponential(size=n) - 1.0
    gamma = 0.7
    ci = dp_gd_confidence_intervals(
        X,
        y,
        budget=ZCDP(5.0),
        rng=np.random.default_rng(2),
        method="batched_means",
        total_steps=2000,
        clip=gamma,
        step=0.5,
        trials=60,
    )
    assert ci.metadata["clip_fraction"].mean() > 0.3
    huber = huber_target(X, y, gamma)
    ols = np.linalg.lstsq(X, y, rcond=None)[0]
    assert ci.covers(huber)[:, 0].mean() >= 0.85
    assert ci.covers(ols)[:, 0].mean() <= 0.1


def test_intervals_from_path_and_ols_width(gaussian_data):
    X, y = gaussian_data
    path = np.random.default_rng(0).normal(size=(5, 121, 3))
    ci = intervals_from_path(path, method="batched_means", m=10, burn_in=20)
    assert ci.metadata["iterates"] == {"batch_first": 21, "batch_length": 10}
    with pytest.raises(ValueError, match="method"):
        intervals_from_path(path, method="independent_runs")
    half = ols_interval_half_width(X, y, 0.05)
    ref = sm.OLS(y, X).fit().conf_int(0.05)
    np.testing.assert_allclose(half, (ref[:, 1] - ref[:, 0]) / 2, rtol=1e-10)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(method="bootstrap"), "method"),
        (dict(m=1), "m must"),
        (dict(alpha=1.5), "alpha"),
        (dict(total_steps=25), "at least m"),
        (
            dict(method="independent_runs", total_steps=150, run_estimate="post_burn_in_mean"),
            "burn_in",
        ),
        (dict(run_estimate="median"), "run_estimate"),
        (dict(total_steps=0), "total_steps"),
    ],
)
def test_bad_inputs(gaussian_data, kwargs, match):
    X, y = gaussian_data
    base = dict(
        budget=ZCDP(0.1),
        rng=np.random.default_rng(0),
        method="checkpoints",
        total_steps=200,
        clip=5.0,
        step=0.25,
    )
    with pytest.raises(ValueError, match=match):
        dp_gd_confidence_intervals(X, y, **{**base, **kwargs})
