"""DP-GD options added for Brown et al. (2024): fast kernel, unbounded data, budget spread."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from dpreg.estimators.dpgd import (
    ClippedGradientKernel,
    clipped_mean_gradient,
    dp_gd_path,
    fit_dp_gd,
)
from dpreg.privacy.budgets import ZCDP
from dpreg.privacy.rdp import gaussian_pld_epsilon


def _gaussian(seed=0, n=600, p=4, intercept=False):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    if intercept:
        X[:, 0] = 1.0
    theta = rng.standard_normal(p)
    return X, X @ theta + rng.standard_normal(n)


def _loop_gradient(X, y, theta, clip, mode):
    """Per-example loop, the definition of Algorithm 1 line 3 (independent of the kernel)."""
    n, d = X.shape
    out = np.zeros((d, theta.shape[1]))
    count = np.zeros(theta.shape[1])
    for k in range(theta.shape[1]):
        for i in range(n):
            r = y[i] - X[i] @ theta[:, k]
            g = -X[i] * r
            if mode == "gradient":
                norm = np.linalg.norm(g)
                if norm > clip:
                    g, count[k] = g * clip / norm, count[k] + 1
            elif abs(r) > clip:
                g, count[k] = -X[i] * math.copysign(clip, r), count[k] + 1
            out[:, k] += g
    return out / n, count / n


@pytest.mark.parametrize("mode", ["gradient", "residual"])
@pytest.mark.parametrize("clip", [0.3, 2.0, math.inf])
def test_fast_kernel_equals_per_example_loop(mode, clip):
    X, y = _gaussian(n=60, p=3)
    X[5] = 0.0  # a zero row: zero gradient, never clipped
    theta = np.random.default_rng(1).normal(size=(3, 5)) * 2
    g, frac = ClippedGradientKernel(X, y, clip, clip_mode=mode)(theta)
    g_ref, frac_ref = _loop_gradient(X, y, theta, clip, mode)
    np.testing.assert_allclose(g, g_ref, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(frac, frac_ref)
    if math.isfinite(clip) and clip < 1:
        assert frac.min() > 0  # the test exercises clipping


@pytest.mark.parametrize("clip", [1.0, 6.0, math.inf])
def test_fast_and_rows_kernels_give_the_same_path(clip, monkeypatch):
    import dpreg.estimators.dpgd as mod

    monkeypatch.setattr(mod, "_FAST_BLOCK_ELEMENTS", 300)  # several row blocks
    monkeypatch.setattr(mod, "_FAST_MIN_ROWS", 1)
    X, y = _gaussian(n=500)
    kw = dict(trials=6, T=25, step=0.25, clip=clip, noise_std=0.4)
    a, fa = dp_gd_path(X, y, rng=np.random.default_rng(3), **kw)
    b, fb = dp_gd_path(X, y, rng=np.random.default_rng(3), kernel="fast", **kw)
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-11)
    np.testing.assert_array_equal(fa, fb)


def test_unbounded_gaussian_data_need_no_bound_for_gradient_clipping():
    X, y = _gaussian()
    gamma = 5 * math.sqrt(X.shape[1])
    fit = fit_dp_gd(
        X,
        y,
        budget=ZCDP(0.015),
        rng=np.random.default_rng(0),
        T=20,
        step=0.2,
        clip=gamma,
        bound_X=None,
        bound_y=None,
    )
    assert fit.theta.shape == (1, X.shape[1])
    with pytest.raises(ValueError, match="bound_X"):  # the default bound 1 still applies
        fit_dp_gd(X, y, budget=ZCDP(0.015), rng=np.random.default_rng(0), clip=gamma)
    with pytest.raises(ValueError, match="residual"):
        fit_dp_gd(
            X,
            y,
            budget=ZCDP(0.1),
            rng=np.random.default_rng(0),
            clip_mode="residual",
            bound_X=None,
            bound_y=None,
        )


@pytest.mark.parametrize("T,total", [(20, 20), (100, 1000), (7, 70)])
def test_budget_spread_over_all_steps_matches_lemma21_and_pld(T, total):
    """lambda^2 = 2 N gamma^2 / (rho n^2) for N total steps; dp-accounting agrees."""
    X, y = _gaussian()
    n, p = X.shape
    rho, gamma = 0.015, 5 * math.sqrt(p)
    fit = fit_dp_gd(
        X,
        y,
        budget=ZCDP(rho),
        rng=np.random.default_rng(0),
        T=T,
        step=0.25,
        clip=gamma,
        accounting_steps=total,
        bound_X=None,
        bound_y=None,
        kernel="fast",
    )
    lam = fit.diagnostics["noise_std"]
    assert lam**2 == pytest.approx(2 * total * gamma**2 / (rho * n**2), rel=1e-12)
    assert fit.budget_spent.rho == pytest.approx(rho * T / total, rel=1e-12)
    assert fit.budget_spent.rho <= rho * T / total * (1 + 1e-15)
    # Independent accountant: dp-accounting's PLD for `total` Gaussian steps of noise
    # multiplier lambda / Delta (Delta = 2 gamma / n) against the exact epsilon of the
    # equivalent single Gaussian, mu = sqrt(total) Delta / lambda = sqrt(2 rho).
    delta = 1e-6
    eps_pld = gaussian_pld_epsilon(lam / (2 * gamma / n), total, delta)
    mu = math.sqrt(2 * rho)

    def exact_delta(eps):
        return stats.norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * stats.norm.cdf(
            -eps / mu - mu / 2
        )

    lo, hi = 0.0, 20.0
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if exact_delta(mid) > delta else (lo, mid)
    assert eps_pld == pytest.approx(hi, abs=2e-3)
    assert eps_pld >= hi - 1e-9  # pessimistic PLD never under-reports


def test_bad_new_options():
    X, y = _gaussian()
    base = dict(budget=ZCDP(0.1), rng=np.random.default_rng(0), bound_X=None, bound_y=None)
    with pytest.raises(ValueError, match="accounting_steps"):
        fit_dp_gd(X, y, T=10, accounting_steps=5, **base)
    with pytest.raises(ValueError, match="accounting_steps"):
        fit_dp_gd(X, y, T=10, accounting_steps=2.5, **base)
    with pytest.raises(ValueError, match="kernel"):
        fit_dp_gd(X, y, kernel="gpu", **base)
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        fit_dp_gd(Xn, y, **base)


@pytest.mark.parametrize("mode", ["gradient", "residual"])
def test_certified_and_clean_blocks_equal_the_definition(mode, monkeypatch):
    """Parameters near OLS: most pairs certified or in clean blocks, results unchanged."""
    import dpreg.estimators.dpgd as mod

    monkeypatch.setattr(mod, "_FAST_BLOCK_ELEMENTS", 64)  # many small row blocks
    monkeypatch.setattr(mod, "_FAST_MIN_ROWS", 1)
    X, y = _gaussian(n=400, p=3, seed=4)
    X[7] = 0.0
    y[7] = 9.0  # a zero row whose residual exceeds the residual clip
    ols = np.linalg.lstsq(X, y, rcond=None)[0]
    rng = np.random.default_rng(2)
    spread = np.array([0.0, 0.01, 0.1, 0.3, 1.0, 3.0, 10.0, 0.05, 0.2, 2.0, 0.5])
    kernel = ClippedGradientKernel(X, y, 4.0, clip_mode=mode)
    for scale in (1.0, 0.3):
        theta = ols[:, None] + rng.standard_normal((3, spread.size)) * spread * scale
        g, frac = kernel(theta)
        g_ref, frac_ref = _loop_gradient(X, y, theta, 4.0, mode)
        np.testing.assert_allclose(g, g_ref, rtol=0, atol=1e-12)
        np.testing.assert_array_equal(frac, frac_ref)
        assert frac.min() < frac.max()
    # one parameter repeated in every column: evaluated once, the same values
    theta = np.repeat(ols[:, None] + 0.5, spread.size, axis=1)
    g, frac = kernel(theta)
    g_ref, frac_ref = _loop_gradient(X, y, theta, 4.0, mode)
    np.testing.assert_allclose(g, g_ref, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(frac, frac_ref)
    pairs = kernel.pairs
    assert sum(pairs.values()) == 3 * X.shape[0] * spread.size
    assert min(pairs.values()) > 0  # every branch exercised


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    clip=st.floats(0.2, 3.0),
    spread=st.floats(0.01, 2.0),
    mode=st.sampled_from(["gradient", "residual"]),
)
def test_split_off_clipped_rows_equal_the_row_pass(seed, clip, spread, mode):
    """Many parameters, few clipped rows per block: the block's Gram product minus the
    clipped rows' part equals the row-by-row pass (clip counts exactly)."""
    rng = np.random.default_rng(seed)
    X, y = _gaussian(n=700, p=3, seed=seed % 1000)
    theta = np.linalg.lstsq(X, y, rcond=None)[0][:, None] + spread * rng.standard_normal((3, 40))
    kernel = ClippedGradientKernel(X, y, clip, clip_mode=mode)
    g, frac = kernel(theta)
    g_ref, frac_ref = clipped_mean_gradient(X, y, theta, clip, clip_mode=mode)
    scale = np.abs(X).max() * (np.abs(y).max() + np.abs(X).max() * np.abs(theta).max())
    np.testing.assert_allclose(g, g_ref, rtol=0, atol=1e-12 * scale)
    np.testing.assert_array_equal(frac, frac_ref)


def test_split_off_clipped_rows_is_used_where_few_rows_clip():
    X, y = _gaussian(n=4000, p=3, seed=3)
    theta = np.linalg.lstsq(X, y, rcond=None)[0][:, None] + 0.3 * np.random.default_rng(
        0
    ).standard_normal((3, 64))
    kernel = ClippedGradientKernel(X, y, 2.5, clip_mode="residual", metric="euclidean")
    g, frac = kernel(theta)
    g_ref, frac_ref = clipped_mean_gradient(X, y, theta, 2.5, clip_mode="residual")
    np.testing.assert_allclose(g, g_ref, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(frac, frac_ref)
    assert 0 < frac.max() < 0.1
    assert kernel.pairs["sparse"] > kernel.pairs["dense"]


def test_per_trial_streams_do_not_depend_on_batching():
    X, y = _gaussian(n=300)
    kw = dict(
        budget=ZCDP(0.05), T=30, step=0.25, clip=2.0, bound_X=None, bound_y=None,
        return_path=True,
    )  # fmt: skip
    seeds = [[7, k] for k in range(5)]

    def streams(ks):
        return [np.random.default_rng(seeds[k]) for k in ks]

    both = fit_dp_gd(X, y, rng=streams(range(5)), trials=5, kernel="fast", **kw)
    first = fit_dp_gd(X, y, rng=streams(range(2)), trials=2, kernel="fast", **kw)
    rest = fit_dp_gd(X, y, rng=streams(range(2, 5)), trials=3, kernel="rows", **kw)
    np.testing.assert_allclose(both.path, np.concatenate([first.path, rest.path]), atol=1e-12)
    clip = both.nonprivate_diagnostics["clip_fraction"]
    parts = [
        first.nonprivate_diagnostics["clip_fraction"],
        rest.nonprivate_diagnostics["clip_fraction"],
    ]
    np.testing.assert_array_equal(clip, np.concatenate(parts))
    assert clip.max() > 0
    # a run's noise is its stream read in order: the first step uses rng.standard_normal(d)
    lam = both.diagnostics["noise_std"]
    z0 = np.random.default_rng(seeds[3]).standard_normal(X.shape[1])
    g0, _ = ClippedGradientKernel(X, y, 2.0)(np.zeros((X.shape[1], 1)))
    np.testing.assert_allclose(both.path[3, 1], 0.25 * (lam * z0 - g0[:, 0]), atol=1e-13)


def test_bad_streams():
    X, y = _gaussian()
    base = dict(budget=ZCDP(0.1), bound_X=None, bound_y=None)
    gens = [np.random.default_rng(k) for k in range(3)]
    with pytest.raises(ValueError, match="one Generator per trial"):
        fit_dp_gd(X, y, rng=gens, trials=2, **base)
    with pytest.raises(TypeError, match="Generator"):
        fit_dp_gd(X, y, rng=[gens[0], 3], trials=2, **base)
    with pytest.raises(TypeError, match="Generator"):
        fit_dp_gd(X, y, rng=[], trials=1, **base)


@pytest.mark.parametrize("mode", ["gradient", "residual"])
def test_design_metric_certificate_is_exact_and_certifies_more(mode, monkeypatch):
    """A badly conditioned design: ||theta - ols||_2 is large where the fitted values are
    close, so the design metric certifies pairs the Euclidean one cannot; the gradients
    and the clip counts equal the definition under both metrics."""
    import dpreg.estimators.dpgd as mod

    monkeypatch.setattr(mod, "_FAST_BLOCK_ELEMENTS", 64)
    monkeypatch.setattr(mod, "_FAST_MIN_ROWS", 1)
    rng = np.random.default_rng(11)
    n = 300
    base = rng.standard_normal((n, 2))
    X = np.column_stack([base, base[:, 0] + 1e-4 * rng.standard_normal(n)])  # collinear
    X /= np.linalg.norm(X, axis=1).max()
    y = np.clip(X @ np.array([0.5, -0.2, 0.1]) + 0.1 * rng.standard_normal(n), -1, 1)
    ols = np.linalg.lstsq(X, y, rcond=None)[0]
    # moves along the near-null direction (large in norm, tiny in fitted values) and
    # ordinary moves of growing size
    null_dir = np.array([1.0, 0.0, -1.0]) / math.sqrt(2)
    moves = np.column_stack(
        [null_dir * s for s in (5.0, 50.0, 500.0)]
        + [rng.standard_normal(3) * s for s in (0.01, 0.3, 3.0)]
    )
    theta = ols[:, None] + moves
    g_ref, frac_ref = _loop_gradient(X, y, theta, 0.5, mode)
    certified = {}
    for metric in ("design", "euclidean"):
        kernel = ClippedGradientKernel(X, y, 0.5, clip_mode=mode, metric=metric)
        g, frac = kernel(theta)
        np.testing.assert_allclose(g, g_ref, rtol=0, atol=1e-12)
        np.testing.assert_array_equal(frac, frac_ref)
        certified[metric] = kernel.pairs["certified"]
    assert frac_ref.max() > 0  # clipping happens
    assert certified["design"] > 1.5 * certified["euclidean"]


def test_certificate_metric_is_validated():
    X, y = _gaussian(n=20)
    with pytest.raises(ValueError, match="metric"):
        ClippedGradientKernel(X, y, 1.0, metric="mahalanobis")


def test_kernel_cache_is_keyed_by_the_data_values():
    from dpreg.estimators.dpgd import clipped_gradient_kernel

    X, y = _gaussian(n=200, p=3, seed=9)
    kernel = clipped_gradient_kernel(X, y, 1.5, clip_mode="residual")
    assert clipped_gradient_kernel(X.copy(), y.copy(), 1.5, clip_mode="residual") is kernel
    X2 = X.copy()
    X2[17, 1] += 1e-12  # any change of value is a different data set
    other = clipped_gradient_kernel(X2, y, 1.5, clip_mode="residual")
    assert other is not kernel
    assert clipped_gradient_kernel(X, y, 1.5, clip_mode="gradient") is not kernel
    theta = np.random.default_rng(0).standard_normal((3, 6))
    g, frac = other(theta)
    g_ref, frac_ref = clipped_mean_gradient(X2, y, theta, 1.5, clip_mode="residual")
    np.testing.assert_allclose(g, g_ref, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(frac, frac_ref)


@pytest.mark.parametrize("mode", ["gradient", "residual"])
def test_single_precision_screen_is_exact_at_the_clip_boundary(mode, monkeypatch):
    """screen=True: residuals within float32 rounding of the clip level are recomputed in
    double precision, so the clip counts equal the definition exactly; gradients to
    rounding. Blocks with many clipped rows fall back to the double-precision pass."""
    import dpreg.estimators.dpgd as mod

    monkeypatch.setattr(mod, "_FAST_BLOCK_ELEMENTS", 2000)
    X, y = _gaussian(n=3000, p=3, seed=12)
    clip = 2.0
    theta = np.linalg.lstsq(X, y, rcond=None)[0][:, None] + 0.05 * np.random.default_rng(
        1
    ).standard_normal((3, 50))
    # rows whose residual at parameter 7 is the clip level (per row threshold) +- 1e-12
    norms = np.linalg.norm(X, axis=1)
    level = clip / norms if mode == "gradient" else np.full(len(y), clip)
    edge = np.arange(0, 3000, 100)
    y[edge] = X[edge] @ theta[:, 7] + level[edge] * (1 + np.tile([1e-12, -1e-12], 15))
    results = {}
    for screen in (False, True):
        kernel = ClippedGradientKernel(X, y, clip, clip_mode=mode, screen=screen)
        results[screen] = kernel(theta), dict(kernel.pairs)
    g_ref, frac_ref = clipped_mean_gradient(X, y, theta, clip, clip_mode=mode)
    for (g, frac), _ in results.values():
        np.testing.assert_allclose(g, g_ref, rtol=0, atol=1e-12)
        np.testing.assert_array_equal(frac, frac_ref)
    assert frac_ref[7] * 3000 >= 15  # the rows just above the level are clipped
    assert results[True][1]["sparse"] > 0
    # far from the data: many rows clip, the screen falls back to the dense pass
    kernel = ClippedGradientKernel(X, y, clip, clip_mode=mode, screen=True)
    g, frac = kernel(theta + 5.0)
    g_ref, frac_ref = clipped_mean_gradient(X, y, theta + 5.0, clip, clip_mode=mode)
    np.testing.assert_allclose(g, g_ref, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(frac, frac_ref)
    assert kernel.pairs["dense"] > 0


@pytest.mark.parametrize("screen", [False, True])
def test_compiled_and_numpy_elementwise_passes_give_identical_gradients(screen, monkeypatch):
    import dpreg.estimators.dpgd as mod

    X, y = _gaussian(n=2500, p=3, seed=21)
    theta = np.linalg.lstsq(X, y, rcond=None)[0][:, None] + np.random.default_rng(
        3
    ).standard_normal((3, 30)) * np.linspace(0.01, 3.0, 30)
    out = []
    for compiled in (True, False):
        monkeypatch.setattr(mod, "_use_compiled", lambda pairs, c=compiled: c)
        kernel = ClippedGradientKernel(X, y, 1.5, clip_mode="residual", screen=screen)
        out.append(kernel(theta))
    np.testing.assert_array_equal(out[0][0], out[1][0])
    np.testing.assert_array_equal(out[0][1], out[1][1])
    assert 0 < out[0][1].max()


def test_row_pass_weights_compiled_or_numpy_give_identical_gradients(monkeypatch):
    """clipped_mean_gradient (the "rows" kernel) takes the compiled weight pass for large
    blocks; it must give numpy's gradients and clip fractions bit for bit."""
    import dpreg.estimators.dpgd as mod

    X, y = _gaussian(n=3000, p=4, seed=8)
    theta = np.random.default_rng(2).standard_normal((4, 3)) * np.array([0.1, 1.0, 5.0])
    out = []
    for compiled in (True, False):
        monkeypatch.setattr(mod, "_use_compiled", lambda pairs, c=compiled: c)
        out.append(clipped_mean_gradient(X, y, theta, 1.5))
    np.testing.assert_array_equal(out[0][0], out[1][0])
    np.testing.assert_array_equal(out[0][1], out[1][1])
    assert 0 < out[0][1].min() < out[0][1].max() < 1


@pytest.mark.parametrize("mode", ["gradient", "residual"])
def test_gram_row_gradient_equals_the_row_pass(mode, monkeypatch):
    """kernel="gram": the Gram product minus the clipped pairs' corrections equals the
    row pass to rounding, with identical clip counts, in one block or many, compiled or
    not (the two passes agree bit for bit)."""
    import dpreg.estimators.dpgd as mod
    from dpreg.estimators.dpgd import GramRowGradient

    X, y = _gaussian(n=2000, p=5, seed=17)
    X[3] = 0.0
    theta = np.random.default_rng(4).standard_normal((5, 3)) * np.array([0.05, 1.0, 4.0])
    g_ref, frac_ref = clipped_mean_gradient(X, y, theta, 1.2, clip_mode=mode)
    results = []
    for block, compiled in ((2**19, True), (256, True), (256, False)):
        monkeypatch.setattr(mod, "_BLOCK_ELEMENTS", block)
        monkeypatch.setattr(mod, "_use_compiled", lambda pairs, c=compiled: c)
        g, frac = GramRowGradient(X, y, 1.2, mode)(theta)
        scale = np.abs(X).max() * (np.abs(y).max() + np.abs(X).max() * np.abs(theta).max())
        np.testing.assert_allclose(g, g_ref, rtol=0, atol=1e-13 * scale)
        np.testing.assert_array_equal(frac, frac_ref)
        results.append(g)
    np.testing.assert_array_equal(results[1], results[2])
    assert 0 < frac_ref.min() < frac_ref.max() < 1


def test_gram_kernel_runs_the_same_dp_gd_as_rows():
    X, y = _gaussian(n=3000, p=4, seed=5)
    kw = dict(budget=ZCDP(0.05), T=20, step=0.2, clip=2.0, bound_X=None, bound_y=None)
    fits = {
        k: fit_dp_gd(X, y, rng=np.random.default_rng(3), kernel=k, **kw) for k in ("rows", "gram")
    }
    np.testing.assert_allclose(fits["gram"].theta, fits["rows"].theta, rtol=0, atol=1e-12)
    for key in ("noise_std", "rho_total", "T"):
        assert fits["gram"].diagnostics[key] == fits["rows"].diagnostics[key]
    assert fits["gram"].budget_spent == fits["rows"].budget_spent
    clip = [f.nonprivate_diagnostics["clip_fraction"] for f in fits.values()]
    np.testing.assert_array_equal(clip[0], clip[1])
    assert clip[0].max() > 0
    with pytest.raises(ValueError, match="kernel"):
        fit_dp_gd(X, y, rng=np.random.default_rng(3), kernel="gramm", **kw)
