"""The fused kernel's compiled bookkeeping gives the numpy path's bits (issue 18)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpreg.estimators.dpgd as mod
from dpreg.estimators._dpgd_fused_step import fused_evaluate
from dpreg.estimators.dpgd import ClippedGradientKernel, dp_gd_path


def _data(seed, n, p, design="anisotropic"):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    if design == "anisotropic":
        X *= rng.uniform(0.2, 3.0, p)
    theta = rng.standard_normal(p)
    return X, X @ theta + rng.standard_normal(n)


def _pair(X, y, clip, **kw):
    fast = ClippedGradientKernel(X, y, clip, fused=True, **kw)
    ref = ClippedGradientKernel(X, y, clip, fused=True, **kw)
    ref.compiled_step = False
    assert fast.fused and fast.compiled_step
    return fast, ref


def _same(a, b):
    assert a[0].tobytes() == b[0].tobytes()
    assert a[1].tobytes() == b[1].tobytes()


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(12, 700),
    p=st.integers(1, 11),
    trials=st.integers(1, 40),
    spread=st.sampled_from([0.0, 1e-3, 0.05, 0.5, 3.0, 50.0]),
    clip=st.sampled_from([0.3, 2.0, 8.0]),
    metric=st.sampled_from(["design", "euclidean"]),
    mode=st.sampled_from(["gradient", "residual"]),
    small_blocks=st.booleans(),
)
def test_compiled_step_is_the_numpy_path_bit_for_bit(
    seed, n, p, trials, spread, clip, metric, mode, small_blocks
):
    """Gradients, clip fractions and pair counts equal (bytes), in one row block or many,
    near the reference point (rows certified) and far from it (rows clipped)."""
    with pytest.MonkeyPatch.context() as patch:
        if small_blocks:
            patch.setattr(mod, "_FAST_BLOCK_ELEMENTS", 64)
            patch.setattr(mod, "_FAST_MIN_ROWS", 1)
        _check_one(seed, n, p, trials, spread, clip, metric, mode)


def _check_one(seed, n, p, trials, spread, clip, metric, mode):
    X, y = _data(seed, n, p)
    fast, ref = _pair(X, y, clip, clip_mode=mode, metric=metric)
    rng = np.random.default_rng(seed + 1)
    theta = fast.theta_ref[:, None] + spread * rng.standard_normal((p, trials))
    if trials > 2:
        theta[:, 1] = theta[:, 0]  # ties in the distances: the stable order
    _same(fast(theta), ref(theta))
    assert fast.pairs == ref.pairs
    lay = fast._layout(trials)
    out = fused_evaluate(fast, theta, lay, mod._CERTIFY_SLACK, mod._METRIC_SLACK)
    if trials == 1:
        assert out is None  # one column: numpy's einsum sums in SIMD lanes there
    else:
        _same(out, ref._evaluate(theta))


@pytest.mark.parametrize("design", ["isotropic", "anisotropic"])
@pytest.mark.parametrize("p", [10, 11])
def test_compiled_step_runs_the_same_dp_gd_path(design, p, monkeypatch):
    """Brown et al.'s CI chains (p = 10: the narrow pass; p = 11: the wide one): the same
    path and clip fractions, byte for byte, with or without the compiled bookkeeping."""
    calls = []
    real = mod.fused_evaluate
    monkeypatch.setattr(mod, "fused_evaluate", lambda *a: calls.append(1) or real(*a))
    X, y = _data(7, 3000, p, design)
    clip = 5 * math.sqrt(p)
    kernel = mod.clipped_gradient_kernel(X, y, clip, fused=True)  # dp_gd_path's, cached
    runs = {}
    for compiled in (True, False):
        kernel.compiled_step = compiled
        calls.clear()
        streams = [np.random.default_rng([1, k]) for k in range(30)]
        runs[compiled] = dp_gd_path(
            X, y, rng=streams, trials=30, T=60, step=0.25, clip=clip, noise_std=0.05,
            kernel="fused",
        )  # fmt: skip
        assert bool(calls) == compiled
    kernel.compiled_step = True
    (path, frac), (path_ref, frac_ref) = runs[True], runs[False]
    assert path.tobytes() == path_ref.tobytes()
    assert frac.tobytes() == frac_ref.tobytes()
    assert frac.max() > 0  # clipping exercised


def test_compiled_step_leaves_nan_to_the_numpy_path():
    X, y = _data(3, 200, 4)
    fast, ref = _pair(X, y, 2.0)
    theta = np.ones((4, 5))
    theta[2, 3] = np.nan
    lay = fast._layout(5)
    assert fused_evaluate(fast, theta, lay, mod._CERTIFY_SLACK, mod._METRIC_SLACK) is None
    a, b = fast(theta), ref(theta)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
