"""The fast kernels of the 2S-GD family against the reference (``kernel="rows"``).

``kernel="fast"`` (:mod:`dpreg.estimators.iv_kernel`) must give the reference's output
to rounding with the same draws, the same clip counts, noise scales and budget; its
certificate must never skip a row that the definition clips.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpreg.estimators.iv import (
    AUTO_MIN_WORK,
    _prepare,
    _stage_gradients,
    default_clip_threshold,
    fit_dp_two_stage_gd,
    fit_dp_two_stage_gd_beta,
    fit_two_stage_gd,
)
from dpreg.estimators.iv_batched import FAST_MAX_WIDTH, BatchedIVGradients
from dpreg.estimators.iv_kernel import CertifiedIVGradients, plain_recursion


def _iv_data(seed: int, n: int, q: int, p: int, trials: int | None = None):
    """Liang et al. (2025, Sec. 4.1)-style design: Theta = 5 I + E, a confounder."""
    rng = np.random.default_rng(seed)
    Theta = 5.0 * np.eye(q, p) + rng.normal(size=(q, p))
    beta = rng.normal(size=p)
    lead = () if trials is None else (trials,)
    Z = rng.normal(size=(*lead, n, q))
    u = rng.normal(size=(*lead, n, 1))
    X = Z @ Theta + u + rng.normal(size=(*lead, n, p))
    y = X @ beta + u[..., 0] + rng.normal(size=(*lead, n))
    return Z, X, y, Theta


def _assert_same_fit(fast, rows, atol=1e-11):
    """Same output to rounding; same clip counts, noise scales and budget exactly."""
    scale = 1.0 + np.abs(rows.theta).max()
    np.testing.assert_allclose(fast.theta, rows.theta, rtol=0, atol=atol * scale)
    if rows.path is not None:
        np.testing.assert_allclose(fast.path, rows.path, rtol=0, atol=atol * scale)
    th_f, th_r = fast.diagnostics["theta_final"], rows.diagnostics["theta_final"]
    np.testing.assert_allclose(th_f, th_r, rtol=0, atol=atol * (1.0 + np.abs(th_r).max()))
    for key in ("clip_fraction_theta", "clip_fraction_beta"):
        np.testing.assert_array_equal(
            fast.nonprivate_diagnostics[key], rows.nonprivate_diagnostics[key]
        )
    for key in ("lambda1", "lambda2", "n_nonfinite", "rho_certified"):
        assert fast.diagnostics[key] == rows.diagnostics[key]
    assert fast.budget_spent == rows.budget_spent


# Clip levels from "most rows clipped" to the paper's (c0 = 4, almost none clipped).
@pytest.mark.parametrize("c0", [0.05, 0.3, 1.0, 4.0])
@pytest.mark.parametrize(("q", "p"), [(1, 1), (3, 2), (5, 5)])
def test_dp_2s_gd_fast_equals_rows(c0, q, p):
    n, T, trials = 600, 30, 7
    Z, X, y, Theta = _iv_data(1, n, q, p)
    clip = default_clip_threshold(n, q, T, c0=c0)
    kw = dict(rho1=5.0, rho2=5.0, T=T, step_theta=1.0, step_beta=0.02, trials=trials)
    kw |= dict(clip_theta=clip, clip_beta=clip)
    fits = {k: fit_dp_two_stage_gd(Z, X, y, rng=np.random.default_rng(2), kernel=k, **kw)
            for k in ("fast", "rows")}  # fmt: skip
    _assert_same_fit(fits["fast"], fits["rows"])
    assert fits["fast"].diagnostics["kernel"] == "fast"


@pytest.mark.parametrize("c0", [0.05, 1.0, 4.0])
@pytest.mark.parametrize("calibration", ["exact", "paper"])
def test_dp_2s_gd_beta_fast_equals_rows(c0, calibration):
    n, q, p, T, trials = 500, 4, 3, 40, 5
    Z, X, y, _ = _iv_data(3, n, q, p)
    clip = default_clip_threshold(n, q, T, c0=c0)
    kw = dict(rho2=2.0, T=T, step_theta=0.8, step_beta=0.02, clip_beta=clip, trials=trials)
    fits = {k: fit_dp_two_stage_gd_beta(Z, X, y, rng=np.random.default_rng(4), kernel=k,
                                        calibration=calibration, **kw)
            for k in ("fast", "rows")}  # fmt: skip
    _assert_same_fit(fits["fast"], fits["rows"])


def test_one_noiseless_stage_fast_equals_rows():
    """rho1 = inf with clipping of the first stage only, and the converse."""
    Z, X, y, _ = _iv_data(5, 400, 3, 3)
    kw = dict(T=20, step_theta=1.0, step_beta=0.02, trials=4)
    for stages in (
        dict(rho1=math.inf, rho2=3.0, clip_theta=8.0, clip_beta=20.0),
        dict(rho1=3.0, rho2=math.inf, clip_theta=8.0, clip_beta=math.inf),
    ):
        fits = {k: fit_dp_two_stage_gd(Z, X, y, rng=np.random.default_rng(6), kernel=k,
                                       **stages, **kw)
                for k in ("fast", "rows")}  # fmt: skip
        _assert_same_fit(fits["fast"], fits["rows"])


def test_fast_kernel_skips_rows_at_the_papers_clip_and_visits_all_when_clipping_everything():
    """The certificate does its job (else "fast" would only be the reference, slower)."""
    n, q, T, trials = 2000, 5, 20, 4
    Z, X, y, _ = _iv_data(7, n, q, q)
    d = _prepare(Z, X, y, trials)
    Theta = np.stack([np.linalg.lstsq(Z, X, rcond=None)[0]] * trials)
    Theta += 0.01 * np.random.default_rng(8).normal(size=Theta.shape)
    beta = np.zeros((trials, q))
    paper = default_clip_threshold(n, q, T, c0=4.0)
    k = CertifiedIVGradients(
        d.Z, d.X, d.y, d.zn, d.ZtZ, d.ZtX, d.Zty, clip_theta=paper, clip_beta=paper
    )
    k1, _ = k.prefixes(Theta, (Theta @ beta[..., None])[..., 0])
    assert k1.max() < n // 10  # near the first-stage solution few rows need a look
    tiny = CertifiedIVGradients(
        d.Z, d.X, d.y, d.zn, d.ZtZ, d.ZtX, d.Zty, clip_theta=1e-3, clip_beta=1e-3
    )
    k1, k2 = tiny.prefixes(Theta, (Theta @ beta[..., None])[..., 0])
    assert (k1 == n).all() and (k2 == n).all()


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    q=st.integers(1, 4),
    clip=st.floats(0.1, 200.0),
    spread=st.floats(0.0, 3.0),
)
def test_certified_sums_equal_the_reference_at_any_iterate(seed, q, clip, spread):
    """Arbitrary (Theta, beta) around and far from the reference: sums and counts agree."""
    rng = np.random.default_rng(seed)
    p = max(1, q - 1)
    n, trials = 120, 6
    Z, X, y, Theta0 = _iv_data(seed % 1000, n, q, p)
    d = _prepare(Z, X, y, trials)
    Theta = Theta0 + spread * rng.normal(size=(trials, q, p))
    beta = spread * rng.normal(size=(trials, p))
    k = CertifiedIVGradients(
        d.Z, d.X, d.y, d.zn, d.ZtZ, d.ZtX, d.Zty, clip_theta=clip, clip_beta=clip
    )
    G1, S2, c1, c2 = k(Theta, beta)
    g1, g2, f1, f2 = _stage_gradients(d, Theta, beta, clip, clip)
    G2 = (np.swapaxes(Theta, 1, 2) @ S2[..., None])[..., 0]
    np.testing.assert_allclose(G1 / n, g1, rtol=1e-10, atol=1e-10 * (1 + np.abs(g1).max()))
    np.testing.assert_allclose(G2 / n, g2, rtol=1e-10, atol=1e-10 * (1 + np.abs(g2).max()))
    np.testing.assert_array_equal(c1 / n, f1)
    np.testing.assert_array_equal(c2 / n, f2)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    q=st.integers(1, 6),
    clip=st.floats(0.1, 200.0),
    spread=st.floats(0.0, 3.0),
)
def test_second_stage_by_columns_equals_the_row_wise_loop_bit_for_bit(seed, q, clip, spread):
    """``columns=True`` (issue 18) sums the same products in the same order as ``False``."""
    rng = np.random.default_rng(seed)
    p = int(rng.integers(1, q + 1))
    n, trials = 150, 5
    Z, X, y, Theta0 = _iv_data(seed % 1000, n, q, p)
    d = _prepare(Z, X, y, trials)
    Theta = Theta0 + spread * rng.normal(size=(trials, q, p))
    beta = spread * rng.normal(size=(trials, p))
    out = {}
    for columns in (True, False):
        k = CertifiedIVGradients(
            d.Z, d.X, d.y, d.zn, d.ZtZ, d.ZtX, d.Zty, clip_theta=clip, clip_beta=clip,
            columns=columns,
        )  # fmt: skip
        out[columns] = k(Theta, beta)
        visited = k.visited
    for a, b in zip(out[True], out[False], strict=True):
        np.testing.assert_array_equal(a, b)
    assert visited[1] > 0 or clip > 1.0  # a small threshold makes the kernel visit rows


def test_2s_gd_fast_equals_rows_with_path():
    Z, X, y, Theta = _iv_data(9, 800, 4, 2)
    kw = dict(T=60, step_theta=1.0, step_beta=0.03, trials=3)
    fast = fit_two_stage_gd(Z, X, y, kernel="fast", **kw)
    rows = fit_two_stage_gd(Z, X, y, kernel="rows", **kw)
    np.testing.assert_allclose(fast.path, rows.path, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(
        fast.diagnostics["theta_path"], rows.diagnostics["theta_path"], rtol=1e-12, atol=1e-13
    )
    assert fast.theta.shape == rows.theta.shape == (3, 2)
    assert fast.diagnostics["n_nonfinite"] == rows.diagnostics["n_nonfinite"] == 0


def test_plain_recursion_counts_divergent_runs_like_the_reference():
    Z, X, y, _ = _iv_data(21, 40, 2, 2)
    kw = dict(T=2000, step_theta=5.0, step_beta=5.0, trials=2)
    fast = fit_two_stage_gd(Z, X, y, kernel="fast", **kw)
    rows = fit_two_stage_gd(Z, X, y, kernel="rows", **kw)
    assert fast.diagnostics["n_nonfinite"] == rows.diagnostics["n_nonfinite"] == 2


def test_plain_recursion_reaches_the_fixed_point():
    """ZtZ = I, ZtX = I, Zty = 1, n = 1: Theta -> I, beta -> 1 (2SLS of the statistics)."""
    Theta, beta, _, _ = plain_recursion(
        np.eye(3), np.eye(3), np.ones(3), 1, T=80, step_theta=1.0, step_beta=0.5,
        return_path=False,
    )  # fmt: skip
    np.testing.assert_allclose(Theta, np.eye(3), atol=1e-12)
    np.testing.assert_allclose(beta, np.ones(3), atol=1e-12)


# Clip levels from "almost every row clipped" to "almost none" (both stages).
@pytest.mark.parametrize("clip", [0.3, 3.0, 30.0])
def test_batched_kernel_gives_the_reference_sums_and_counts(clip):
    """One data set per trial: the compiled pass equals _stage_gradients to rounding."""
    Z, X, y, Theta = _iv_data(11, 300, 4, 3, trials=6)
    d = _prepare(Z, X, y, 6)
    rng = np.random.default_rng(2)
    Th = Theta[None] + rng.normal(size=(6, 4, 3))
    beta = rng.normal(size=(6, 3))
    kernel = BatchedIVGradients(d.Z, d.X, d.y, d.zn, d.ZtZ, d.ZtX, d.Zty,
                                clip_theta=clip, clip_beta=2.0 * clip)  # fmt: skip
    G1, S2, c1, c2 = kernel(Th, beta)
    g1, g2, f1, f2 = _stage_gradients(d, Th, beta, clip, 2.0 * clip)
    G2 = (np.swapaxes(Th, 1, 2) @ S2[..., None])[..., 0]
    np.testing.assert_allclose(G1 / 300, g1, rtol=0, atol=1e-12 * (1 + np.abs(g1).max()))
    np.testing.assert_allclose(G2 / 300, g2, rtol=0, atol=1e-12 * (1 + np.abs(g2).max()))
    np.testing.assert_array_equal(c1 / 300, f1)
    np.testing.assert_array_equal(c2 / 300, f2)


def test_batched_kernel_one_clipped_stage_and_non_finite_trials():
    """An unclipped stage uses the sufficient statistics; a NaN/inf iterate gives the
    reference's non-finite entries in its own trial only."""
    Z, X, y, Theta = _iv_data(12, 200, 3, 1, trials=4)
    d = _prepare(Z, X, y, 4)
    Th = np.repeat(Theta[None], 4, axis=0)
    Th[1, 0, 0], Th[2, 1, 0] = np.nan, np.inf
    beta = np.ones((4, 1))
    for clips in ((2.0, math.inf), (math.inf, 2.0), (2.0, 2.0)):
        kernel = BatchedIVGradients(d.Z, d.X, d.y, d.zn, d.ZtZ, d.ZtX, d.Zty,
                                    clip_theta=clips[0], clip_beta=clips[1])  # fmt: skip
        G1, S2, c1, c2 = kernel(Th, beta)
        with np.errstate(invalid="ignore", over="ignore"):
            g1, g2, f1, f2 = _stage_gradients(d, Th, beta, *clips)
            G2 = (np.swapaxes(Th, 1, 2) @ S2[..., None])[..., 0]
        for fast, ref in ((G1 / 200, g1), (G2 / 200, g2)):
            np.testing.assert_array_equal(np.isfinite(fast), np.isfinite(ref))
            ok = np.isfinite(ref)
            tol = 1e-12 * (1 + np.abs(ref[ok]).max())
            np.testing.assert_allclose(fast[ok], ref[ok], rtol=0, atol=tol)
        np.testing.assert_array_equal(c1 / 200, f1)
        np.testing.assert_array_equal(c2 / 200, f2)


@pytest.mark.parametrize("fit", [fit_dp_two_stage_gd, fit_dp_two_stage_gd_beta])
def test_batched_data_fast_kernel_gives_the_reference_fit(fit):
    """Same draws, same output to rounding, same clip counts, scales and budget."""
    Z, X, y, _ = _iv_data(11, 200, 3, 2, trials=5)
    kw = dict(rho2=2.0, T=30, step_theta=1.0, step_beta=0.02, trials=5, clip_beta=20.0)
    if fit is fit_dp_two_stage_gd:
        kw |= dict(rho1=2.0, clip_theta=8.0)
    fast = fit(Z, X, y, rng=np.random.default_rng(1), kernel="fast", **kw)
    rows = fit(Z, X, y, rng=np.random.default_rng(1), kernel="rows", **kw)
    assert 0 < np.mean(rows.nonprivate_diagnostics["clip_fraction_beta"]) < 1
    _assert_same_fit(fast, rows)


def test_batched_data_above_the_width_use_the_reference():
    """q * p > FAST_MAX_WIDTH: the batched BLAS products of the reference run (bitwise)."""
    q = p = 9
    assert q * p > FAST_MAX_WIDTH
    Z, X, y, _ = _iv_data(11, 60, q, p, trials=2)
    kw = dict(rho1=2.0, rho2=2.0, T=4, step_theta=1.0, step_beta=0.02, trials=2)
    kw |= dict(clip_theta=50.0, clip_beta=50.0)
    fast = fit_dp_two_stage_gd(Z, X, y, rng=np.random.default_rng(1), kernel="fast", **kw)
    rows = fit_dp_two_stage_gd(Z, X, y, rng=np.random.default_rng(1), kernel="rows", **kw)
    np.testing.assert_array_equal(fast.theta, rows.theta)


@pytest.mark.parametrize("fit", [fit_two_stage_gd, fit_dp_two_stage_gd, fit_dp_two_stage_gd_beta])
def test_bad_kernel_raises(fit):
    Z, X, y, _ = _iv_data(12, 50, 2, 2)
    kw = dict(T=3, step_theta=1.0, step_beta=0.1, kernel="numba")
    if fit is not fit_two_stage_gd:
        kw |= dict(rho2=1.0, clip_beta=3.0, rng=np.random.default_rng(0))
    if fit is fit_dp_two_stage_gd:
        kw |= dict(rho1=1.0, clip_theta=3.0)
    with pytest.raises(ValueError, match="kernel"):
        fit(Z, X, y, **kw)


def test_auto_kernel_is_rows_for_small_calls_and_fast_for_large_ones():
    """The default picks by n * trials * T (a deterministic function of the shapes)."""
    kw = dict(rho1=5.0, rho2=5.0, step_theta=1.0, step_beta=0.02, clip_theta=30.0)
    kw |= dict(clip_beta=30.0)
    Z, X, y, _ = _iv_data(13, 200, 2, 2)
    assert 200 * 3 * 5 < AUTO_MIN_WORK
    small = {k: fit_dp_two_stage_gd(Z, X, y, rng=np.random.default_rng(1), T=5, trials=3,
                                    kernel=k, **kw)
             for k in ("auto", "rows")}  # fmt: skip
    np.testing.assert_array_equal(small["auto"].theta, small["rows"].theta)
    Z, X, y, _ = _iv_data(14, 2048, 2, 2)
    assert 2048 * 64 * 32 >= AUTO_MIN_WORK
    large = {k: fit_dp_two_stage_gd(Z, X, y, rng=np.random.default_rng(1), T=32, trials=64,
                                    kernel=k, return_path=False, **kw)
             for k in ("auto", "fast")}  # fmt: skip
    np.testing.assert_array_equal(large["auto"].theta, large["fast"].theta)
