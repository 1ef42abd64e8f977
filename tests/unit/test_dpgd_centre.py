"""The clipped-gradient kernel's certificate around each call's centre (``centre=True``).

Every case compares with the per-example definition (an independent loop) or numpy's
row pass: gradients to rounding, clip counts exactly; and checks which path ran.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpreg.estimators.dpgd_centre as centre_mod
from dpreg.estimators.dpgd import ClippedGradientKernel, clipped_mean_gradient
from dpreg.estimators.ihm import fit_ihm
from dpreg.privacy.budgets import ApproxDP


def _loop_gradient(X, y, theta, clip, mode):
    """Per-example loop, the definition (independent of the kernels)."""
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


def _bounded(seed=0, n=600, d=4):
    """Rows in the unit ball, responses in [-1, 1], a fifth of them at the bound (as Pol)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X /= np.linalg.norm(X, axis=1).max()
    y = X @ rng.standard_normal(d) + 0.2 * rng.standard_normal(n)
    y /= np.abs(y).max()
    y[: n // 5] = np.sign(y[: n // 5] + 1e-300)
    return X, y


def _cluster(X, y, rng, width, spread, offset=0.5):
    """Parameters clustered (spread) around a point ``offset`` away from OLS."""
    d = X.shape[1]
    ols = np.linalg.lstsq(X, y, rcond=None)[0]
    centre = ols + offset * rng.standard_normal(d) / math.sqrt(d)
    return centre[:, None] + spread * rng.standard_normal((d, width))


@pytest.fixture
def eager(monkeypatch):
    """The centred pass without its fixed costs: it runs wherever it saves pairs
    (small test problems; the default cost model is tested at a realistic size)."""
    costs = {**centre_mod.CENTRE_COSTS, "per_row": 0.0, "per_call": 0.0}
    monkeypatch.setattr(centre_mod, "CENTRE_COSTS", costs)


class _Spy:
    """Count calls of the kernel's two paths."""

    def __init__(self, kernel, monkeypatch):
        self.calls = {"centred": 0, "evaluate": 0}
        for name, key in (("_centred", "centred"), ("_evaluate", "evaluate")):
            method = getattr(kernel, name)

            def wrapped(*args, _method=method, _key=key, **kwargs):
                out = _method(*args, **kwargs)
                if _key == "evaluate" or out is not None:
                    self.calls[_key] += 1
                return out

            monkeypatch.setattr(kernel, name, wrapped)


@pytest.mark.parametrize("mode", ["residual", "gradient"])
@pytest.mark.parametrize("metric", ["design", "euclidean"])
def test_clustered_parameters_equal_the_definition(mode, metric, monkeypatch, eager):
    """A cluster away from the reference point: the fixed certificate certifies few pairs,
    the centred one most of them; both equal the per-example loop."""
    X, y = _bounded(seed=1, n=500, d=4)
    theta = _cluster(X, y, np.random.default_rng(2), width=30, spread=0.01)
    clip = 1.0 if mode == "residual" else 0.3  # ||x_i|| <= 1: gradients clip lower
    g_ref, frac_ref = _loop_gradient(X, y, theta, clip, mode)
    assert 0 < frac_ref.max() < 0.5  # some rows clip, for some parameters
    plain = ClippedGradientKernel(X, y, clip, clip_mode=mode, metric=metric)
    kernel = ClippedGradientKernel(X, y, clip, clip_mode=mode, metric=metric, centre=True)
    spy = _Spy(kernel, monkeypatch)
    for k in (plain, kernel):
        g, frac = k(theta)
        np.testing.assert_allclose(g, g_ref, rtol=0, atol=1e-13)
        np.testing.assert_array_equal(frac, frac_ref)
    assert spy.calls["centred"] == 1  # (the farthest few may take the block pass)
    assert kernel.pairs["certified"] > plain.pairs["certified"] + 0.3 * X.shape[0] * 30
    assert sum(kernel.pairs.values()) == X.shape[0] * 30


def test_far_parameters_take_the_block_pass(monkeypatch, eager):
    """A cluster plus parameters far from it: the cluster is near, the others go through
    the fixed certificate's pass; every column equals the definition."""
    X, y = _bounded(seed=3, n=500, d=3)
    rng = np.random.default_rng(4)
    theta = _cluster(X, y, rng, width=40, spread=0.005)
    theta[:, [3, 17, 31]] += 3.0 * rng.standard_normal((3, 3))  # outliers
    kernel = ClippedGradientKernel(X, y, 1.0, clip_mode="residual", centre=True)
    spy = _Spy(kernel, monkeypatch)
    g, frac = kernel(theta)
    g_ref, frac_ref = _loop_gradient(X, y, theta, 1.0, "residual")
    np.testing.assert_allclose(g, g_ref, rtol=0, atol=1e-13)
    np.testing.assert_array_equal(frac, frac_ref)
    assert spy.calls == {"centred": 1, "evaluate": 1}
    assert frac[[3, 17, 31]].min() > frac_ref[[0, 1, 2]].max()  # the outliers clip more


def test_scattered_parameters_fall_back_to_the_block_pass_bit_for_bit(monkeypatch):
    """No cluster: the cost model leaves every parameter to the block pass, whose result is
    the plain kernel's, bit for bit."""
    X, y = _bounded(seed=5, n=800, d=4)
    theta = 2.0 * np.random.default_rng(6).standard_normal((4, 25))
    plain = ClippedGradientKernel(X, y, 1.0, clip_mode="residual")
    kernel = ClippedGradientKernel(X, y, 1.0, clip_mode="residual", centre=True)
    spy = _Spy(kernel, monkeypatch)
    g, frac = kernel(theta)
    g_plain, frac_plain = plain(theta)
    np.testing.assert_array_equal(g, g_plain)
    np.testing.assert_array_equal(frac, frac_plain)
    assert spy.calls == {"centred": 0, "evaluate": 1}
    g_ref, frac_ref = clipped_mean_gradient(X, y, theta, 1.0, clip_mode="residual")
    np.testing.assert_allclose(g, g_ref, rtol=0, atol=1e-13)
    np.testing.assert_array_equal(frac, frac_ref)


def test_default_costs_choose_the_centred_pass_for_a_cluster(monkeypatch):
    """At a realistic size (many trials of one iteration, a fifth of the rows at the
    response bound, as IHM on Pol) the default cost model takes the centred pass."""
    X, y = _bounded(seed=17, n=4000, d=6)
    theta = _cluster(X, y, np.random.default_rng(18), width=300, spread=0.01, offset=2.0)
    kernel = ClippedGradientKernel(X, y, 1.0, clip_mode="residual", screen=True, centre=True)
    spy = _Spy(kernel, monkeypatch)
    g, frac = kernel(theta)
    g_ref, frac_ref = clipped_mean_gradient(X, y, theta, 1.0, clip_mode="residual")
    np.testing.assert_allclose(g, g_ref, rtol=0, atol=1e-13)
    np.testing.assert_array_equal(frac, frac_ref)
    assert spy.calls["centred"] == 1
    assert kernel.pairs["certified"] > 0.5 * 4000 * 300
    assert 0 < frac.max() < 0.5


def test_cheap_block_pass_is_not_replaced():
    """Near the reference point the fixed certificate leaves few rows: the radii around
    the centre are not even computed (the cost model's first test)."""
    X, y = _bounded(seed=7, n=2000, d=3)
    kernel = ClippedGradientKernel(X, y, 1.0, clip_mode="residual", centre=True)
    theta = kernel.theta_ref[:, None] + 1e-4 * np.random.default_rng(0).standard_normal((3, 20))
    dist = kernel._distance(theta)
    far_rows = kernel.n - np.searchsorted(kernel._neg_tau, -dist, side="right")
    assert far_rows.sum() < 0.05 * kernel.n * 20
    calls = []
    kernel.centre.radii = lambda *a: calls.append(a)  # must not be reached
    assert kernel.centre.plan(theta, far_rows) is None
    assert not calls


@pytest.mark.parametrize("mode", ["residual", "gradient"])
def test_residuals_at_the_clip_level_are_counted_exactly(mode, eager):
    """Rows whose residual at one near parameter is the clip level +- 1e-12: counted as the
    definition counts them (these rows are never certified: their margin is ~0)."""
    X, y = _bounded(seed=8, n=600, d=3)
    theta = _cluster(X, y, np.random.default_rng(9), width=20, spread=0.002)
    clip = 1.0 if mode == "residual" else 0.3
    norms = np.linalg.norm(X, axis=1)
    level = clip / norms if mode == "gradient" else np.full(len(y), clip)
    edge = np.arange(150, 600, 30)
    y = y.copy()
    y[edge] = X[edge] @ theta[:, 4] + level[edge] * (1 + np.tile([1e-12, -1e-12], 8)[: edge.size])
    kernel = ClippedGradientKernel(X, y, clip, clip_mode=mode, centre=True)
    g, frac = kernel(theta)
    g_ref, frac_ref = _loop_gradient(X, y, theta, clip, mode)
    np.testing.assert_allclose(g, g_ref, rtol=0, atol=1e-12)
    assert frac_ref[4] * 600 >= edge.size // 2  # the rows just above the level clip
    np.testing.assert_array_equal(frac, frac_ref)
    assert kernel.pairs["certified"] > 0


def test_zero_rows(eager):
    """x_i = 0: never clipped when |y_i| <= C, clipped for every parameter when |y_i| > C
    (residual clipping); the radii are +inf and -inf."""
    X, y = _bounded(seed=10, n=400, d=3)
    X[5], y[5] = 0.0, 0.5
    X[6], y[6] = 0.0, -3.0  # outside the clip: every parameter clips it (no gradient)
    theta = _cluster(X, y, np.random.default_rng(11), width=12, spread=0.003)
    kernel = ClippedGradientKernel(X, y, 1.0, clip_mode="residual", centre=True)
    g, frac = kernel(theta)
    g_ref, frac_ref = _loop_gradient(X, y, theta, 1.0, "residual")
    np.testing.assert_allclose(g, g_ref, rtol=0, atol=1e-13)
    np.testing.assert_array_equal(frac, frac_ref)
    assert np.all(frac * 400 >= 1)  # row 6
    _, tau = kernel.centre.radii(theta)
    assert kernel.centre.zero_rows.size == 2
    assert sorted(tau[kernel.centre.zero_rows].tolist()) == [-math.inf, math.inf]


@pytest.mark.parametrize("compiled", [True, False])
def test_compiled_and_numpy_clip_passes_agree(compiled, monkeypatch, eager):
    import dpreg.estimators.dpgd as mod

    X, y = _bounded(seed=12, n=700, d=5)
    theta = _cluster(X, y, np.random.default_rng(13), width=25, spread=0.01)
    monkeypatch.setattr(mod, "_use_compiled", lambda pairs: compiled)
    kernel = ClippedGradientKernel(X, y, 1.0, clip_mode="residual", centre=True)
    g, frac = kernel(theta)
    plain_g, plain_frac = ClippedGradientKernel(X, y, 1.0, clip_mode="residual")(theta)
    np.testing.assert_allclose(g, plain_g, rtol=0, atol=1e-13)
    np.testing.assert_array_equal(frac, plain_frac)


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    spread=st.floats(1e-4, 1.0),
    offset=st.floats(0.0, 2.0),
    clip=st.floats(0.3, 2.0),
    mode=st.sampled_from(["gradient", "residual"]),
    metric=st.sampled_from(["design", "euclidean"]),
    width=st.integers(2, 40),
)
def test_centred_kernel_equals_the_row_pass(seed, spread, offset, clip, mode, metric, width):
    """Any cluster, clip level and metric, with the default cost model and without its
    fixed costs (every split of near and far parameters is exercised)."""
    for fixed in (None, 0.0):
        _check_against_row_pass(seed, spread, offset, clip, mode, metric, width, fixed)


def _check_against_row_pass(seed, spread, offset, clip, mode, metric, width, fixed):
    saved = centre_mod.CENTRE_COSTS
    if fixed is not None:
        centre_mod.CENTRE_COSTS = {**saved, "per_row": fixed, "per_call": fixed}
    try:
        _row_pass_case(seed, spread, offset, clip, mode, metric, width)
    finally:
        centre_mod.CENTRE_COSTS = saved


def _row_pass_case(seed, spread, offset, clip, mode, metric, width):
    rng = np.random.default_rng(seed)
    X, y = _bounded(seed=seed % 997, n=300, d=3)
    theta = _cluster(X, y, rng, width=width, spread=spread, offset=offset)
    kernel = ClippedGradientKernel(X, y, clip, clip_mode=mode, metric=metric, centre=True)
    g, frac = kernel(theta)
    g_ref, frac_ref = clipped_mean_gradient(X, y, theta, clip, clip_mode=mode)
    scale = 1.0 + np.abs(theta).max()
    np.testing.assert_allclose(g, g_ref, rtol=0, atol=1e-13 * scale)
    np.testing.assert_array_equal(frac, frac_ref)
    assert sum(kernel.pairs.values()) == X.shape[0] * width


def test_radii_certify_only_unclipped_pairs():
    """Independent check of the certificate: wherever dist_j <= tau_i, the exact residual
    of row i at parameter j is inside the clip."""
    X, y = _bounded(seed=14, n=500, d=4)
    theta = _cluster(X, y, np.random.default_rng(15), width=30, spread=0.02)
    kernel = ClippedGradientKernel(X, y, 1.0, clip_mode="residual", centre=True)
    dist, tau = kernel.centre.radii(theta)
    U = kernel.A @ np.vstack([theta, -np.ones(30)])  # scaled residuals, sorted rows
    certified = dist[None, :] <= tau[:, None]
    assert certified.mean() > 0.5
    assert np.all(np.abs(U[certified]) < 1.0)


@pytest.mark.parametrize("forced", ["centred", "block"])
def test_ihm_fast_kernel_equals_the_row_pass_on_both_paths(forced, monkeypatch):
    """IHM's fits with every call forced through the centred pass, or through the block
    pass (the fallback), equal the reference row pass from the same draws."""
    costs = dict(centre_mod.CENTRE_COSTS)
    if forced == "centred":
        costs.update(per_row=0.0, per_call=0.0, far_pair=1e9)
    else:
        costs.update(per_row=1e18)
    monkeypatch.setattr(centre_mod, "CENTRE_COSTS", costs)
    calls = []
    near_pass = centre_mod.CentredCertificate.gradient

    def counted(self, *args):
        calls.append(args[0].shape[1])
        return near_pass(self, *args)

    monkeypatch.setattr(centre_mod.CentredCertificate, "gradient", counted)
    import dpreg.estimators.dpgd as dpgd_mod

    dpgd_mod._KERNEL_CACHE.clear()
    X, y = _bounded(seed=16, n=3000, d=4)
    kw = dict(budget=ApproxDP(0.5, 1e-6), trials=40, T=3, clip=1.0)
    rows = fit_ihm(X, y, rng=np.random.default_rng(8), kernel="rows", **kw)
    fast = fit_ihm(X, y, rng=np.random.default_rng(8), **kw)
    dpgd_mod._KERNEL_CACHE.clear()
    np.testing.assert_allclose(fast.path, rows.path, rtol=0, atol=1e-10)
    np.testing.assert_array_equal(
        fast.nonprivate_diagnostics["clip_fraction"], rows.nonprivate_diagnostics["clip_fraction"]
    )
    np.testing.assert_array_equal(fast.diagnostics["eta2"], rows.diagnostics["eta2"])
    assert fast.budget_spent == rows.budget_spent
    pairs = fast.diagnostics["kernel_pairs"]
    assert sum(pairs.values()) == X.shape[0] * 40 * 3
    clip = rows.nonprivate_diagnostics["clip_fraction"]
    assert 0 < clip.max() < 1
    # the first iteration (theta_0 = 0 everywhere) is evaluated once; the other two
    # went through the near pass with every trial, or never
    assert calls == ([40, 40] if forced == "centred" else [])


@pytest.mark.parametrize("screen", [False, True])
def test_gradient_at_zero_is_computed_once_and_identical(screen, monkeypatch):
    """theta = 0 (every run's start) is evaluated once per kernel: later calls return the
    same bits as a fresh kernel's evaluation, and the pair counts grow as if evaluated."""
    X, y = _bounded(seed=19, n=900, d=5)
    kernel = ClippedGradientKernel(X, y, 0.5, clip_mode="residual", screen=screen, centre=True)
    evaluations = []
    evaluate = kernel._evaluate

    def counted(theta, *args):
        evaluations.append(theta.shape[1])
        return evaluate(theta, *args)

    monkeypatch.setattr(kernel, "_evaluate", counted)
    zero = np.zeros((5, 7))
    first = kernel(zero)
    second = kernel(zero)
    single = kernel(np.zeros((5, 1)))
    fresh = ClippedGradientKernel(X, y, 0.5, clip_mode="residual", screen=screen)
    expected = fresh._evaluate(np.zeros((5, 1)))
    for g, frac in (first, second):
        np.testing.assert_array_equal(g, np.repeat(expected[0], 7, axis=1))
        np.testing.assert_array_equal(frac, np.repeat(expected[1], 7))
    np.testing.assert_array_equal(single[0], expected[0])
    assert evaluations == [1]
    assert sum(kernel.pairs.values()) == 900 * 15
    g_ref, frac_ref = _loop_gradient(X, y, np.zeros((5, 1)), 0.5, "residual")
    np.testing.assert_allclose(single[0], g_ref, rtol=0, atol=1e-13)
    np.testing.assert_array_equal(single[1], frac_ref)
    assert frac_ref[0] > 0
    # -0.0 entries are not served from the store (same values, but not the same bits
    # in every case): a fresh evaluation
    kernel(-np.zeros((5, 1)))
    assert evaluations == [1, 1]
