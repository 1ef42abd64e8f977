"""DP-GD's fused compiled pass, exact row norms and a shared Gram kernel (issue 18)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpreg.estimators.dpgd import (
    ClippedGradientKernel,
    GramRowGradient,
    clipped_mean_gradient,
    dp_gd_path,
    fit_dp_gd,
)
from dpreg.estimators.dpgd_kernel import (
    FUSED_MAX_D,
    FUSED_NARROW_D,
    clipped_rows_fused,
    clipped_rows_fused_reference,
    fused_entries,
    row_norms,
    row_norms_reference,
)
from dpreg.privacy.budgets import ZCDP


def _gaussian(seed=0, n=600, p=4):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p)) * rng.uniform(0.5, 2.0, p)
    theta = rng.standard_normal(p)
    return X, X @ theta + rng.standard_normal(n)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(0, 40),
    d=st.integers(1, 140),
    scale=st.sampled_from([1e-150, 1e-3, 1.0, 1e100]),
)
def test_row_norms_are_numpys_bit_for_bit(seed, n, d, scale):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * scale * rng.uniform(0.1, 10.0, (n, 1))
    if n:
        X[rng.integers(n)] = 0.0
    ref = np.linalg.norm(X, axis=1)
    np.testing.assert_array_equal(row_norms(X), ref)
    np.testing.assert_array_equal(row_norms_reference(X), ref)
    # a column-major X goes to numpy (whose sums then run in another order)
    F = np.asfortranarray(X)
    np.testing.assert_array_equal(row_norms(F), np.linalg.norm(F, axis=1))


def test_row_norms_compiled_pass_is_taken_for_d_up_to_its_limit():
    X, _ = _gaussian(n=50, p=FUSED_MAX_D)
    wide = np.random.default_rng(1).standard_normal((5, 128))
    for A in (X, wide):
        out = np.empty(A.shape[0])
        from dpreg.estimators.dpgd_kernel import _norms_kernel

        _norms_kernel()(A, out)  # the compiled loop itself, not the fallback
        np.testing.assert_array_equal(out, np.linalg.norm(A, axis=1))


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 90),
    d=st.integers(1, FUSED_MAX_D),
    width=st.integers(1, 12),
    scale=st.sampled_from([0.2, 1.0, 5.0]),
)
def test_fused_pass_equals_the_numpy_reference(seed, n, d, width, scale):
    rng = np.random.default_rng(seed)
    AT = np.zeros((FUSED_MAX_D + 1, n))
    AT[: d + 1] = rng.standard_normal((d + 1, n))
    XBT = np.zeros((FUSED_MAX_D, n))
    XBT[:d] = rng.standard_normal((d, n))
    E = np.zeros((width, FUSED_MAX_D + 1))
    E[:, : d + 1] = rng.standard_normal((width, d + 1)) * scale
    row_start = rng.integers(0, n + 1, width)
    out = []
    for fn in (clipped_rows_fused, clipped_rows_fused_reference):
        G = np.full((width, FUSED_MAX_D), np.nan)
        count = np.full(width, -1, dtype=np.int64)
        fn(AT, XBT, E, row_start, G, count)
        out.append((G, count))
    (G1, c1), (G2, c2) = out
    bound = 1e-14 * np.abs(XBT).sum() + 1e-300
    np.testing.assert_allclose(G1, G2, rtol=0, atol=bound)
    np.testing.assert_array_equal(c1, c2)  # generic values: no residual at the boundary
    assert np.all(G1[:, d:] == 0.0)


@pytest.mark.parametrize("mode", ["gradient", "residual"])
@pytest.mark.parametrize("spread", [0.05, 1.0, 4.0])
def test_fused_kernel_equals_the_row_pass(mode, spread, monkeypatch):
    """fused=True: certified prefixes plus the compiled pass equal the definition to
    rounding, with identical clip counts, in one row block or many."""
    import dpreg.estimators.dpgd as mod

    X, y = _gaussian(n=3000, p=6, seed=3)
    X[7] = 0.0
    theta = np.linalg.lstsq(X, y, rcond=None)[0][:, None] + spread * np.random.default_rng(
        5
    ).standard_normal((6, 40))
    g_ref, frac_ref = clipped_mean_gradient(X, y, theta, 6.0, clip_mode=mode)
    for block in (2**17, 500):
        monkeypatch.setattr(mod, "_FAST_BLOCK_ELEMENTS", block)
        monkeypatch.setattr(mod, "_FAST_MIN_ROWS", 1)
        kernel = ClippedGradientKernel(X, y, 6.0, clip_mode=mode, fused=True)
        assert kernel.fused
        g, frac = kernel(theta)
        np.testing.assert_allclose(g, g_ref, rtol=0, atol=1e-13 * np.abs(g_ref).max())
        np.testing.assert_array_equal(frac, frac_ref)
        pairs = kernel.pairs
        assert pairs["certified"] + pairs["dense"] == 3000 * 40
        if spread == 0.05 and block == 500:
            assert pairs["certified"] > 0  # the certificate still skips rows
    if spread > 1.0:
        assert frac_ref.max() > 0  # the test exercises clipping


def test_fused_kernel_falls_back_above_its_d():
    X, y = _gaussian(n=400, p=FUSED_MAX_D + 1)
    kernel = ClippedGradientKernel(X, y, 2.0, fused=True)
    assert not kernel.fused
    theta = np.random.default_rng(2).standard_normal((FUSED_MAX_D + 1, 3))
    g, frac = kernel(theta)
    g_ref, frac_ref = clipped_mean_gradient(X, y, theta, 2.0)
    np.testing.assert_allclose(g, g_ref, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(frac, frac_ref)


@pytest.mark.parametrize("clip", [1.5, math.inf])
def test_fused_kernel_runs_the_same_dp_gd(clip):
    """kernel="fused": same noise draws, same noise scale and budget; paths to rounding."""
    X, y = _gaussian(n=2000, p=5, seed=11)
    budget = ZCDP(0.02) if math.isfinite(clip) else ZCDP(math.inf)
    kw = dict(budget=budget, trials=30, T=40, step=0.25, clip=clip, bound_X=None, bound_y=None)
    kw["return_path"] = True
    fits = {
        k: fit_dp_gd(X, y, rng=np.random.default_rng(9), kernel=k, **kw)
        for k in ("rows", "fast", "fused")
    }
    ref = fits["rows"]
    for k in ("fast", "fused"):
        np.testing.assert_allclose(fits[k].path, ref.path, rtol=0, atol=1e-11)
        np.testing.assert_array_equal(
            fits[k].nonprivate_diagnostics["clip_fraction"],
            ref.nonprivate_diagnostics["clip_fraction"],
        )
        assert fits[k].budget_spent == ref.budget_spent
        assert fits[k].diagnostics["noise_std"] == ref.diagnostics["noise_std"]
    assert fits["fused"].diagnostics["kernel"] == "fused"
    if math.isfinite(clip):
        assert ref.nonprivate_diagnostics["clip_fraction"].max() > 0


def test_gram_kernel_instance_is_the_gram_kernel_bit_for_bit():
    """A GramRowGradient built by the caller (its X'X then reused, Brown Figs. 2/8) runs
    exactly the DP-GD of kernel="gram": same path, bits, budget and noise."""
    X, y = _gaussian(n=3000, p=4, seed=5)
    kw = dict(budget=ZCDP(0.05), T=20, step=0.2, clip=2.0, bound_X=None, bound_y=None)
    a = fit_dp_gd(X, y, rng=np.random.default_rng(3), kernel="gram", **kw)
    kernel = GramRowGradient(X, y, 2.0)
    np.testing.assert_array_equal(kernel.gram, X.T @ X)
    b = fit_dp_gd(X, y, rng=np.random.default_rng(3), kernel=kernel, **kw)
    np.testing.assert_array_equal(a.theta, b.theta)
    np.testing.assert_array_equal(
        a.nonprivate_diagnostics["clip_fraction"], b.nonprivate_diagnostics["clip_fraction"]
    )
    assert a.budget_spent == b.budget_spent and b.diagnostics["kernel"] == "gram"
    assert a.diagnostics["noise_std"] == b.diagnostics["noise_std"]
    path, _ = dp_gd_path(
        X, y, rng=np.random.default_rng(3), trials=1, T=3, step=0.2, clip=2.0,
        noise_std=0.1, kernel=kernel,
    )  # fmt: skip
    assert path.shape == (1, 4, 4)


def test_gram_kernel_instance_built_on_other_data_is_refused():
    X, y = _gaussian(n=300, p=3, seed=1)
    kw = dict(budget=ZCDP(0.05), T=5, step=0.2, bound_X=None, bound_y=None)
    rng = np.random.default_rng(0)
    for kernel, clip in (
        (GramRowGradient(X.copy(), y, 2.0), 2.0),  # equal values, another array
        (GramRowGradient(X, y, 3.0), 2.0),  # another clip
        (GramRowGradient(X, y, 2.0, "residual"), 2.0),  # another clip mode
    ):
        with pytest.raises(ValueError, match="kernel"):
            fit_dp_gd(X, y, rng=rng, kernel=kernel, clip=clip, **kw)


@pytest.mark.parametrize("mode", ["gradient", "residual"])
@pytest.mark.parametrize("spread", [0.0, 0.02, 0.3, 3.0])
def test_gram_kernel_certificate_skips_rows_with_the_same_bits(mode, spread, monkeypatch):
    """Rows certified near OLS are skipped; the gradient and counts are those of the full
    pass (certified rows add nothing; the others in the same order: the same bits unless
    BLAS rounds a gathered row's residual differently, so to one ulp of the terms)."""
    import dpreg.estimators.dpgd as mod

    X, y = _gaussian(n=4000, p=5, seed=21)
    X[[2, 9]] = 0.0
    y[9] = 50.0  # a zero row clipped for every theta in residual mode
    kernel = GramRowGradient(X, y, 3.0, mode)
    ols = np.linalg.solve(X.T @ X, X.T @ y)
    theta = ols[:, None] + spread * np.random.default_rng(8).standard_normal((5, 3))
    before = kernel.rows_computed
    g, frac = kernel(theta)
    computed = kernel.rows_computed - before
    full = (math.inf, 4000)  # no row certified: the full pass
    monkeypatch.setattr(mod.GramRowGradient, "_uncertified", lambda self, theta: full)
    g_full, frac_full = kernel(theta)
    scale = np.abs(X).max() * (np.abs(y).max() + np.abs(X).max() * np.abs(theta).max())
    np.testing.assert_allclose(g, g_full, rtol=0, atol=4e-16 * scale)
    np.testing.assert_array_equal(frac, frac_full)
    g_ref, frac_ref = clipped_mean_gradient(X, y, theta, 3.0, clip_mode=mode)
    np.testing.assert_allclose(g, g_ref, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(frac, frac_ref)
    if spread <= 0.02:
        assert computed < 4000 // 2  # most rows certified
    if spread == 3.0:
        assert computed == 4000 and frac.min() > 0
    if mode == "residual":
        assert frac.min() >= 1 / 4000  # the zero row with |y| > C is counted


def test_gram_kernel_certificate_is_off_for_a_singular_design():
    X, y = _gaussian(n=200, p=3, seed=2)
    X[:, 2] = X[:, 1]  # X'X singular: no reference fit, every row computed
    kernel = GramRowGradient(X, y, 1.0)
    theta = np.zeros((3, 2))
    g, frac = kernel(theta)
    g_ref, frac_ref = clipped_mean_gradient(X, y, theta, 1.0)
    np.testing.assert_allclose(g, g_ref, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(frac, frac_ref)
    assert kernel.rows_computed == 200


@pytest.mark.parametrize("mode", ["gradient", "residual"])
def test_gram_kernel_at_zero_skips_the_product_with_the_same_bits(mode):
    """At theta = 0 the fitted values are taken as zeros: the same bits as the product."""
    from dpreg.estimators.dpgd_kernel import row_clip_corrections_reference

    X, y = _gaussian(n=1500, p=4, seed=30)
    X[:, 0] = -np.abs(X[:, 0])  # products with +0.0 give -0.0 here
    kernel = GramRowGradient(X, y, 0.8, mode)
    theta = np.zeros((4, 2))
    g, frac = kernel(theta)
    count, corr = np.zeros(2, dtype=np.int64), np.zeros((2, 4))
    row_clip_corrections_reference(
        X @ theta, y, kernel.norms, X, 0.8, mode, count, corr
    )  # the product the kernel skips
    expected = (kernel.gram @ theta - kernel.moment[:, None] - corr.T) / 1500
    np.testing.assert_array_equal(g, expected)
    np.testing.assert_array_equal(frac, count / 1500)
    assert frac.min() > 0


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 300),
    d=st.integers(1, FUSED_NARROW_D),
    width=st.integers(1, 12),
    scale=st.sampled_from([0.2, 1.0, 5.0]),
)
def test_narrow_fused_pass_gives_the_wide_pass_bits(seed, n, d, width, scale):
    """d <= 10: the 11-entry pass equals the 12-entry one on the zero-padded arrays bit
    for bit (same sums in the same order, the padding's products dropped), and the
    numpy reference to rounding."""
    rng = np.random.default_rng(seed)
    AT = np.zeros((FUSED_MAX_D + 1, n))
    AT[: d + 1] = rng.standard_normal((d + 1, n))
    XBT = np.zeros((FUSED_MAX_D, n))
    XBT[:d] = rng.standard_normal((d, n))
    E = np.zeros((width, FUSED_MAX_D + 1))
    E[:, : d + 1] = rng.standard_normal((width, d + 1)) * scale
    row_start = rng.integers(0, n + 1, width)
    k = fused_entries(d)
    assert k == FUSED_NARROW_D + 1
    out = []
    for AT_, XBT_, E_ in ((AT, XBT, E), (AT[:k].copy(), XBT[: k - 1].copy(), E[:, :k].copy())):
        G = np.full((width, AT_.shape[0] - 1), np.nan)
        count = np.full(width, -1, dtype=np.int64)
        clipped_rows_fused(AT_, XBT_, E_, row_start, G, count)
        out.append((G, count))
    (G_wide, c_wide), (G_narrow, c_narrow) = out
    assert np.all(G_wide[:, k - 1 :] == 0.0)
    np.testing.assert_array_equal(G_narrow.view(np.int64), G_wide[:, : k - 1].view(np.int64))
    np.testing.assert_array_equal(c_narrow, c_wide)
    G_ref = np.empty((width, k - 1))
    c_ref = np.empty(width, dtype=np.int64)
    clipped_rows_fused_reference(AT[:k], XBT[: k - 1], E[:, :k], row_start, G_ref, c_ref)
    np.testing.assert_allclose(G_narrow, G_ref, rtol=0, atol=1e-14 * np.abs(XBT).sum() + 1e-300)
    np.testing.assert_array_equal(c_narrow, c_ref)


def test_fused_entries_and_shape_errors():
    assert [fused_entries(d) for d in (1, FUSED_NARROW_D, FUSED_MAX_D)] == [11, 11, 12]
    with pytest.raises(ValueError, match="d must be"):
        fused_entries(FUSED_MAX_D + 1)
    AT, XBT, E = np.zeros((11, 4)), np.zeros((10, 4)), np.zeros((2, 11))
    G, count, start = np.empty((2, 10)), np.empty(2, dtype=np.int64), np.zeros(2, dtype=np.int64)
    with pytest.raises(ValueError, match="AT must have"):
        clipped_rows_fused(np.zeros((10, 4)), XBT, E, start, G, count)
    with pytest.raises(ValueError, match="XBT must have"):
        clipped_rows_fused(AT, np.zeros((11, 4)), E, start, G, count)
    with pytest.raises(ValueError, match="E must have"):
        clipped_rows_fused(AT, XBT, np.zeros((2, 12)), start, G, count)
    with pytest.raises(ValueError, match="G must have"):
        clipped_rows_fused(AT, XBT, E, start, np.empty((2, 11)), count)


def test_kernel_takes_the_narrow_pass_for_d_up_to_10():
    for p, k in ((FUSED_NARROW_D, 11), (FUSED_MAX_D, 12)):
        X, y = _gaussian(n=200, p=p)
        kernel = ClippedGradientKernel(X, y, 2.0, fused=True)
        assert kernel.AT.shape == (k, 200) and kernel.XBT.shape == (k - 1, 200)
        theta = np.random.default_rng(4).standard_normal((p, 3))
        g, frac = kernel(theta)
        g_ref, frac_ref = clipped_mean_gradient(X, y, theta, 2.0)
        np.testing.assert_allclose(g, g_ref, rtol=0, atol=1e-13 * np.abs(g_ref).max())
        np.testing.assert_array_equal(frac, frac_ref)
