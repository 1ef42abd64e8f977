"""GramRowGradient's certificate around each row's last computed point (issue 18)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpreg.estimators._dpgd_recent import RecentCertificate
from dpreg.estimators.dpgd import GramRowGradient, clipped_mean_gradient, fit_dp_gd
from dpreg.privacy.budgets import ZCDP


def _data(seed, n, p, zero_rows=True):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p)) * rng.uniform(0.5, 2.0, p)
    theta = rng.standard_normal(p)
    y = X @ theta + rng.standard_normal(n)
    if zero_rows and n > 3:
        X[[1, 3]] = 0.0
        y[3] = 40.0  # a zero row clipped for every theta in residual mode
    return X, y, theta


def _clipped_rows(X, y, theta, clip, mode):
    """Rows clipped at theta (vector), by the definition, with their residuals."""
    r = y - X @ theta
    if mode == "residual":
        return np.abs(r) > clip
    return np.abs(r) * np.linalg.norm(X, axis=1) > clip


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(5, 400),
    p=st.integers(1, 6),
    clip=st.sampled_from([0.3, 1.0, 3.0, 10.0]),
    mode=st.sampled_from(["gradient", "residual"]),
    moves=st.lists(st.sampled_from([0.0, 1e-3, 0.05, 0.5, 3.0]), min_size=1, max_size=6),
    compiled=st.booleans(),
)
def test_recent_certificate_skips_only_unclipped_rows(seed, n, p, clip, mode, moves, compiled):
    """Along a walk from theta = 0, the rows the certificate skips are never clipped,
    and the counts and corrections equal those of every row computed (the reference
    row pass: counts exactly, corrections to rounding)."""
    X, y, truth = _data(seed, n, p)
    norms = np.linalg.norm(X, axis=1)
    cert = RecentCertificate(X, y, norms, clip, mode)
    no_fixed = np.full(n, -math.inf)
    rng = np.random.default_rng(seed ^ 0x5EED)
    theta = np.zeros(p)
    for step, scale in enumerate([0.0, *moves]):
        theta = theta + scale * rng.standard_normal(p) + (0.3 * (truth - theta) if step else 0)
        count, corr = np.zeros(1, dtype=np.int64), np.zeros((1, p))
        computed = cert.corrections(theta, no_fixed, math.inf, count, corr, compiled=compiled)
        visited = cert.point == cert.stored - 1  # rows computed at this point
        assert computed == np.count_nonzero(visited)
        assert not np.any(_clipped_rows(X, y, theta, clip, mode) & ~visited)
        g_ref, frac_ref = clipped_mean_gradient(X, y, theta[:, None], clip, clip_mode=mode)
        assert count[0] == round(frac_ref[0] * n)
        g = (X.T @ X @ theta - X.T @ y - corr[0]) / n
        scale_ = np.abs(X).max() * (np.abs(y).max() + np.abs(X).max() * np.abs(theta).sum())
        np.testing.assert_allclose(g, g_ref[:, 0], rtol=0, atol=1e-13 * scale_ + 1e-300)


@pytest.mark.parametrize("mode", ["gradient", "residual"])
def test_recent_certificate_compiled_pass_equals_its_numpy_reference(mode):
    """The compiled pass visits the same rows, counts the same pairs and stores the same
    radii (to rounding: its dot products are reassociated) as the numpy reference."""
    X, y, truth = _data(7, 3000, 5)
    norms = np.linalg.norm(X, axis=1)
    a, b = (RecentCertificate(X, y, norms, 2.5, mode) for _ in range(2))
    fixed = np.full(3000, -math.inf)
    fixed[::7] = math.inf  # rows the fixed certificate covers are skipped by both
    rng = np.random.default_rng(1)
    theta = np.zeros(5)
    for _ in range(8):
        out = []
        for cert, compiled in ((a, True), (b, False)):
            count, corr = np.zeros(1, dtype=np.int64), np.zeros((1, 5))
            computed = cert.corrections(theta, fixed, 1.0, count, corr, compiled=compiled)
            out.append((computed, count, corr))
        (ca, na, ga), (cb, nb, gb) = out
        assert ca == cb and np.array_equal(na, nb) and ca <= np.count_nonzero(fixed < 1.0)
        np.testing.assert_allclose(ga, gb, rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(a.point, b.point)
        np.testing.assert_allclose(a.tau, b.tau, rtol=1e-12, atol=1e-12)
        theta = theta + 0.4 * (truth - theta) + 0.05 * rng.standard_normal(5)
    assert np.count_nonzero(a.point) > 0  # some rows were certified and some recomputed


@pytest.mark.parametrize("mode", ["gradient", "residual"])
def test_gram_kernel_with_recent_certificate_is_the_same_dp_gd(mode, monkeypatch):
    """DP-GD with the recent certificate (the default) and without it: the same draws,
    noise and budget, the iterates to rounding and the clip fractions exactly, with fewer
    rows computed (Brown et al. 2024's runs from theta_0 = 0, Figs. 2 and 8)."""
    import dpreg.estimators.dpgd as mod

    monkeypatch.setattr(mod, "_use_compiled", lambda pairs: True)  # numba loaded
    X, y, _ = _data(3, 20000, 8, zero_rows=False)
    kw = dict(budget=ZCDP(0.015), T=20, step=0.2, bound_X=None, bound_y=None, clip=3 * math.sqrt(8))
    if mode == "residual":
        kw["clip"], kw["clip_mode"] = 2.0, mode
        kw["bound_X"] = float(np.linalg.norm(X, axis=1).max())  # its sensitivity needs one
    fits, rows = [], []
    for recent in (True, False):
        kernel = GramRowGradient(X, y, kw["clip"], mode, recent=recent)
        fits.append(fit_dp_gd(X, y, rng=np.random.default_rng(11), kernel=kernel, **kw))
        rows.append(kernel.rows_computed)
    a, b = fits
    np.testing.assert_allclose(a.theta, b.theta, rtol=1e-13, atol=1e-15)
    clip_a = a.nonprivate_diagnostics["clip_fraction"]
    np.testing.assert_array_equal(clip_a, b.nonprivate_diagnostics["clip_fraction"])
    assert clip_a.max() > 0  # clipping happens
    assert a.budget_spent == b.budget_spent
    assert a.diagnostics["noise_std"] == b.diagnostics["noise_std"]
    assert rows[0] < rows[1]
    ref = fit_dp_gd(X, y, rng=np.random.default_rng(11), kernel="rows", **kw)
    np.testing.assert_allclose(a.theta, ref.theta, rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(clip_a, ref.nonprivate_diagnostics["clip_fraction"])


def test_gram_kernel_recent_certificate_only_for_one_column_and_singular_designs(monkeypatch):
    """Several columns take the fixed certificate's pass (bit for bit the kernel without
    the recent one); a singular X'X (no fixed certificate) still gives the gradient."""
    import dpreg.estimators.dpgd as mod

    monkeypatch.setattr(mod, "_use_compiled", lambda pairs: True)
    monkeypatch.setattr(mod, "_RECENT_MIN_WORK", 0)  # small data: the recent pass too
    X, y, _ = _data(5, 2000, 4)
    theta = np.random.default_rng(2).standard_normal((4, 3))
    g, frac = GramRowGradient(X, y, 2.0)(theta)
    g0, frac0 = GramRowGradient(X, y, 2.0, recent=False)(theta)
    np.testing.assert_array_equal(g, g0)
    np.testing.assert_array_equal(frac, frac0)
    X[:, 3] = X[:, 2]  # singular
    kernel = GramRowGradient(X, y, 2.0)
    assert kernel.tau is None
    for t in (np.zeros(4), theta[:, 0], theta[:, 0] + 1e-4):
        g, frac = kernel(t[:, None])
        g_ref, frac_ref = clipped_mean_gradient(X, y, t[:, None], 2.0)
        np.testing.assert_allclose(g, g_ref, rtol=0, atol=1e-12)
        np.testing.assert_array_equal(frac, frac_ref)
    assert kernel.rows_computed < 3 * 2000  # the last point: most rows certified
