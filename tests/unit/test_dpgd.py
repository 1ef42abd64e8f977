"""DP-GD (Brown et al. 2024, Alg. 1; Lev et al. 2026, Alg. 7): noise, clipping, limits."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpreg.estimators import get_estimator
from dpreg.estimators.dpgd import (
    clipped_mean_gradient,
    dp_gd_noise_std,
    dp_gd_path,
    dp_gd_sensitivity,
    fit_dp_gd,
)
from dpreg.privacy.budgets import ZCDP, ApproxDP
from dpreg.privacy.gaussian import gaussian_zcdp


def _data(seed: int = 0, n: int = 500, d: int = 4):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1).max()
    y = X @ rng.normal(size=d) + 0.1 * rng.normal(size=n)
    y /= np.abs(y).max()
    return X, y


# ------------------------------------------------------------------------ calibration


def test_noise_equals_eq157_and_brown_lemma21():
    n, T, C = 1000, 3, 1.0
    X, y = _data(n=n)
    eps, delta = 0.631, 1.0 / n**2
    fit = fit_dp_gd(X, y, budget=ApproxDP(eps, delta), rng=np.random.default_rng(0))
    L = math.log(1.0 / delta)
    sigma2_eq157 = 2 * T * C**2 / (n**2 * (math.sqrt(eps + L) - math.sqrt(L)) ** 2)
    assert fit.diagnostics["noise_std"] ** 2 == pytest.approx(sigma2_eq157, rel=1e-12)
    # Brown et al. Lemma 2.1: lambda^2 = 2 T gamma^2 / (rho n^2), gamma = 5 sqrt(p).
    p, rho, T2 = X.shape[1], 0.015, 20
    gamma = 5 * math.sqrt(p)
    fit = fit_dp_gd(
        X, y, budget=ZCDP(rho), rng=np.random.default_rng(0), T=T2, clip=gamma, step=0.2
    )
    assert fit.diagnostics["noise_std"] ** 2 == pytest.approx(
        2 * T2 * gamma**2 / (rho * n**2), rel=1e-12
    )


@pytest.mark.parametrize("neighbours,factor", [("replace_one", 2.0), ("zero_out", 1.0)])
@pytest.mark.parametrize("budget", [ZCDP(0.05), ApproxDP(1.0, 1e-6)])
def test_per_step_zcdp_times_T_equals_budget(neighbours, factor, budget):
    n, T, C = 400, 5, 0.7
    X, y = _data(n=n)
    fit = fit_dp_gd(
        X, y, budget=budget, rng=np.random.default_rng(1), T=T, clip=C, sensitivity=neighbours
    )
    rho = budget.rho if isinstance(budget, ZCDP) else budget.to_zcdp("simple").rho
    sens = factor * C / n
    assert fit.diagnostics["sensitivity"] == pytest.approx(sens, rel=1e-15)
    total = T * gaussian_zcdp(fit.diagnostics["noise_std"], sens)
    assert total <= rho
    assert total == pytest.approx(rho, rel=1e-12)
    assert fit.budget_spent.rho == pytest.approx(rho, rel=1e-12)
    assert fit.budget_spent.rho <= rho
    if isinstance(budget, ApproxDP):
        approx = fit.diagnostics["approx_dp"]
        assert approx.delta == budget.delta
        assert approx.epsilon <= budget.epsilon * (1 + 1e-12)
        assert approx.epsilon == pytest.approx(budget.epsilon, rel=1e-9)


def test_zero_out_variance_is_four_times_smaller_and_tight_less_noise():
    X, y = _data()
    b = ApproxDP(1.0, 1e-6)
    rep = fit_dp_gd(X, y, budget=b, rng=np.random.default_rng(0))
    zo = fit_dp_gd(X, y, budget=b, rng=np.random.default_rng(0), sensitivity="zero_out")
    ratio = rep.diagnostics["noise_std"] ** 2 / zo.diagnostics["noise_std"] ** 2
    assert ratio == pytest.approx(4.0, rel=1e-12)
    tight = fit_dp_gd(X, y, budget=b, rng=np.random.default_rng(0), conversion="tight")
    assert tight.diagnostics["noise_std"] < rep.diagnostics["noise_std"]
    assert tight.diagnostics["approx_dp"].epsilon <= 1.0 + 1e-12


def test_noise_monte_carlo_on_zero_data():
    """Zero data: every gradient is 0 and theta_{t+1} - theta_t = step * lambda * z."""
    n, d, T, step, rho, C = 50, 3, 2, 0.25, 0.02, 1.0
    X, y = np.zeros((n, d)), np.zeros(n)
    trials = 20000
    fit = fit_dp_gd(
        X,
        y,
        budget=ZCDP(rho),
        rng=np.random.default_rng(3),
        trials=trials,
        T=T,
        step=step,
        clip=C,
        return_path=True,
    )
    lam = math.sqrt(2 * T * C**2 / (rho * n**2))  # independent: Brown et al. Lemma 2.1
    inc = np.diff(fit.path, axis=1).ravel()
    m = inc.size
    ratio = np.mean(inc**2) / (step * lam) ** 2  # known mean 0: chi^2_m / m
    assert abs(ratio - 1.0) < 4.0 * math.sqrt(2.0 / m)
    assert abs(np.mean(inc)) < 4.0 * step * lam / math.sqrt(m)
    assert np.all(fit.path[:, 0, :] == 0.0)
    assert np.all(fit.nonprivate_diagnostics["clip_fraction"] == 0.0)


# ------------------------------------------------------------------------- clipping


def _loop_gradient(X, y, theta, clip, mode, bound_X=1.0):
    n, d = X.shape
    out = np.zeros((d, theta.shape[1]))
    frac = np.zeros(theta.shape[1])
    for t in range(theta.shape[1]):
        for i in range(n):
            r = y[i] - X[i] @ theta[:, t]
            if mode == "gradient":
                g = -X[i] * r
                norm = np.linalg.norm(g)
                scale = min(1.0, clip / norm) if norm > 0 else 1.0
                frac[t] += norm > clip
                out[:, t] += g * scale
            else:
                frac[t] += abs(r) > clip
                out[:, t] += -X[i] * min(max(r, -clip), clip)
    return out / n, frac / n


@pytest.mark.parametrize("mode", ["gradient", "residual"])
def test_clipping_equals_per_sample_loop(mode):
    rng = np.random.default_rng(5)
    X, y = _data(seed=5, n=40, d=3)
    theta = rng.normal(size=(3, 7)) * 2.0
    for clip in (0.05, 0.3, math.inf):
        g, frac = clipped_mean_gradient(X, y, theta, clip, clip_mode=mode)
        g_ref, frac_ref = _loop_gradient(X, y, theta, clip, mode)
        np.testing.assert_allclose(g, g_ref, rtol=0, atol=1e-12)
        np.testing.assert_array_equal(frac, frac_ref)
    assert frac_ref.sum() == 0.0  # clip = inf


def test_row_blocks_do_not_change_the_gradient(monkeypatch):
    import dpreg.estimators.dpgd as mod

    X, y = _data(n=300)
    theta = np.random.default_rng(0).normal(size=(X.shape[1], 9))
    g1, f1 = clipped_mean_gradient(X, y, theta, 0.1)
    monkeypatch.setattr(mod, "_BLOCK_ELEMENTS", 50)
    g2, f2 = clipped_mean_gradient(X, y, theta, 0.1)
    np.testing.assert_allclose(g1, g2, rtol=0, atol=1e-15)
    np.testing.assert_array_equal(f1, f2)


_floats = st.floats(-3.0, 3.0, allow_nan=False)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 12),
    clip=st.floats(0.01, 5.0),
    mode=st.sampled_from(["gradient", "residual"]),
    new_row=st.lists(_floats, min_size=4, max_size=4),
)
def test_sensitivity_replace_one_and_zero_out(seed, n, clip, mode, new_row):
    rng = np.random.default_rng(seed)
    d = 3
    X = rng.normal(size=(n, d)) * rng.uniform(0, 2)
    X /= max(1.0, np.linalg.norm(X, axis=1).max())  # rows within bound_X = 1
    y = rng.normal(size=n) * 3
    theta = rng.normal(size=(d, 4)) * 3
    i = int(rng.integers(n))
    g, _ = clipped_mean_gradient(X, y, theta, clip, clip_mode=mode)
    # replace-one: an arbitrary new row (within bound_X for residual clipping)
    X2, y2 = X.copy(), y.copy()
    x_new = np.asarray(new_row[:d])
    if mode == "residual":
        x_new = x_new / max(1.0, np.linalg.norm(x_new))
    X2[i], y2[i] = x_new, new_row[d] * 10
    g2, _ = clipped_mean_gradient(X2, y2, theta, clip, clip_mode=mode)
    bound = dp_gd_sensitivity(clip, n, neighbours="replace_one", clip_mode=mode)
    assert np.linalg.norm(g - g2, axis=0).max() <= bound * (1 + 1e-12) + 1e-15
    # zero-out
    X3, y3 = X.copy(), y.copy()
    X3[i], y3[i] = 0.0, 0.0
    g3, _ = clipped_mean_gradient(X3, y3, theta, clip, clip_mode=mode)
    bound = dp_gd_sensitivity(clip, n, neighbours="zero_out", clip_mode=mode)
    assert np.linalg.norm(g - g3, axis=0).max() <= bound * (1 + 1e-12) + 1e-15


# --------------------------------------------------------------------- noiseless limits


def test_no_clip_no_noise_is_closed_form_gd_and_converges_to_ols():
    X, y = _data(n=200, d=3)
    n = X.shape[0]
    Sigma = X.T @ X / n
    ols = np.linalg.lstsq(X, y, rcond=None)[0]
    step = 1.0 / np.linalg.eigvalsh(Sigma)[-1]
    T = 40
    fit = fit_dp_gd(
        X,
        y,
        budget=ZCDP(math.inf),
        rng=np.random.default_rng(0),
        trials=2,
        T=T,
        step=step,
        clip=math.inf,
        return_path=True,
    )
    P = np.eye(3) - step * Sigma
    for t in range(T + 1):  # theta_t = ols + (I - step Sigma)^t (0 - ols)
        expected = ols - np.linalg.matrix_power(P, t) @ ols
        np.testing.assert_allclose(fit.path[:, t, :], np.tile(expected, (2, 1)), atol=1e-10)
    long = fit_dp_gd(
        X,
        y,
        budget=ApproxDP(math.inf, 1e-6),
        rng=np.random.default_rng(0),
        T=5000,
        step=step,
        clip=math.inf,
    )
    np.testing.assert_allclose(long.theta[0], ols, atol=1e-8)
    assert long.budget_spent.rho == math.inf
    assert long.diagnostics["noise_std"] == 0.0


@pytest.mark.parametrize("kernel", ["rows", "fast"])
def test_coupling_no_clipping_equals_unclipped_run(kernel):
    X, y = _data(n=100)
    kw = dict(rng=None, trials=5, T=4, step=0.3, noise_std=0.2, kernel=kernel)
    a, fa = dp_gd_path(X, y, **{**kw, "rng": np.random.default_rng(9)}, clip=1e6)
    b, fb = dp_gd_path(X, y, **{**kw, "rng": np.random.default_rng(9)}, clip=math.inf)
    if kernel == "rows":  # the same arithmetic: bit for bit
        np.testing.assert_array_equal(a, b)
    else:  # block sums against the precomputed Gram: equal to rounding
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-13)
    assert fa.sum() == 0.0


# ---------------------------------------------------------------- reproducibility, API


def test_reproducible_and_vectorised():
    X, y = _data()
    b = ApproxDP(0.5, 1e-6)
    f1 = fit_dp_gd(X, y, budget=b, rng=np.random.default_rng(4), trials=6, return_path=True)
    f2 = fit_dp_gd(X, y, budget=b, rng=np.random.default_rng(4), trials=6, return_path=True)
    f3 = fit_dp_gd(X, y, budget=b, rng=np.random.default_rng(5), trials=6)
    np.testing.assert_array_equal(f1.theta, f2.theta)
    assert not np.array_equal(f1.theta, f3.theta)
    assert f1.path.shape == (6, 4, X.shape[1])
    np.testing.assert_array_equal(f1.path[:, -1], f1.theta)
    assert f1.nonprivate_diagnostics["clip_fraction"].shape == (6, 3)
    assert get_estimator("dp_gd") is fit_dp_gd
    theta0 = np.full(X.shape[1], 0.1)
    f4 = fit_dp_gd(X, y, budget=b, rng=np.random.default_rng(4), theta0=theta0, return_path=True)
    np.testing.assert_array_equal(f4.path[0, 0], theta0)


def test_noise_std_helper():
    assert dp_gd_noise_std(math.inf, 3, 0.1) == 0.0
    s = dp_gd_noise_std(0.1, 3, 0.01)
    assert 3 * gaussian_zcdp(s, 0.01) <= 0.1


@pytest.mark.parametrize(
    "kwargs,exc,match",
    [
        (dict(clip=math.inf), ValueError, "clip=inf"),
        (dict(T=0), ValueError, "T must be"),
        (dict(step=-1.0), ValueError, "step"),
        (dict(sensitivity="add_remove"), ValueError, "sensitivity"),
        (dict(conversion="exact"), ValueError, "conversion"),
        (dict(clip_mode="norm"), ValueError, "clip_mode"),
        (dict(theta0=np.zeros(2)), ValueError, "theta0"),
        (dict(bound_X=0.5), ValueError, "bound_X"),
        (dict(trials=0), ValueError, "trials"),
        (dict(budget=0.5), TypeError, "budget"),
        (dict(rng=1), TypeError, "rng"),
    ],
)
def test_bad_inputs(kwargs, exc, match):
    X, y = _data()
    base = dict(budget=ApproxDP(1.0, 1e-6), rng=np.random.default_rng(0))
    with pytest.raises(exc, match=match):
        fit_dp_gd(X, y, **{**base, **kwargs})


def test_bad_data():
    X, y = _data()
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        fit_dp_gd(Xn, y, budget=ZCDP(1.0), rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="rows"):
        fit_dp_gd(X, y[:-1], budget=ZCDP(1.0), rng=np.random.default_rng(0))
