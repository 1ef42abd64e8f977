"""The clipped-gradient kernel built a block of rows at a time, IHM on X itself at bound_X = 1.

Memory changes (docs/scaling.md, session 24; ``lev_fig7``'s peak): the kernel's sorted,
scaled copies of the rows are filled block by block (``dpgd._BUILD_PATH = "blocks"``)
instead of from whole-array expressions (``"reference"``); ``fit_ihm`` with
``bound_X = 1`` reads ``X`` instead of the copy ``X / 1.0`` (``ihm._UNIT_SCALE_PATH``);
Figure 7's scoring forms its residuals in place (``lev2026_clipping._SCORING_PATH``).
Each must give the reference's bits.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpreg.estimators.dpgd as dpgd
import dpreg.estimators.ihm as ihm
import dpreg.experiments.lev2026_clipping as clipping
from dpreg import ApproxDP
from dpreg.experiments.kinds import get_kind

_ATTRIBUTES = ("tau", "A", "XB_T", "A32", "a1", "AT", "XBT", "theta_ref", "metric_factor")


def _data(seed: int, n: int, d: int, zero_rows: int, fortran: bool, scale: float):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * scale
    X[rng.permutation(n)[: min(zero_rows, n)]] = 0.0
    if n > 2:
        X[1, 0] = -0.0  # a signed zero must keep its sign
    y = rng.normal(size=n)
    return (np.asfortranarray(X) if fortran else X), y


def _kernel(monkeypatch, path, X, y, clip, **kw):
    monkeypatch.setattr(dpgd, "_BUILD_PATH", path)
    return dpgd.ClippedGradientKernel(X, y, clip, **kw)


def _assert_same_kernel(a, b, theta):
    for name in _ATTRIBUTES:
        va, vb = getattr(a, name, None), getattr(b, name, None)
        assert (va is None) == (vb is None), name
        if va is not None:
            assert va.dtype == vb.dtype and va.shape == vb.shape, name
            assert va.tobytes() == vb.tobytes(), name
    if a.centre is not None:
        for name in ("q", "s1", "one_minus_s0", "zero_rows"):
            assert getattr(a.centre, name).tobytes() == getattr(b.centre, name).tobytes()
    ga, fa = a(theta)
    gb, fb = b(theta)
    assert ga.tobytes() == gb.tobytes() and fa.tobytes() == fb.tobytes()


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 400),
    d=st.integers(1, 12),
    zero_rows=st.integers(0, 5),
    fortran=st.booleans(),
    scale=st.sampled_from([1e-3, 0.3, 1.0, 40.0]),
    clip=st.sampled_from([0.05, 0.5, 1.0, 3.0]),
    clip_mode=st.sampled_from(["gradient", "residual"]),
    metric=st.sampled_from(["design", "euclidean"]),
    option=st.sampled_from(["screen_centre", "fused", "plain"]),
    block=st.sampled_from([1, 7, 64, 2**18]),
)
def test_blocks_build_the_reference_kernel_bitwise(
    seed, n, d, zero_rows, fortran, scale, clip, clip_mode, metric, option, block
):
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(dpgd, "_BUILD_BLOCK_ELEMENTS", block)  # entries per block: 1 row ... all
        X, y = _data(seed, n, d, zero_rows, fortran, scale)
        kw = dict(
            clip_mode=clip_mode,
            metric=metric,
            screen=option == "screen_centre",
            centre=option == "screen_centre",
            fused=option == "fused",
        )
        fast = _kernel(mp, "blocks", X, y, clip, **kw)
        ref = _kernel(mp, "reference", X, y, clip, **kw)
        theta = np.random.default_rng(seed + 1).normal(size=(d, 3)) * 0.5
        _assert_same_kernel(fast, ref, theta)


def test_float32_rows_take_the_reference(monkeypatch):
    X, y = _data(3, 50, 4, 1, False, 1.0)
    X32 = X.astype(np.float32)
    fast = _kernel(monkeypatch, "blocks", X32, y, 0.5)
    ref = _kernel(monkeypatch, "reference", X32, y, 0.5)
    _assert_same_kernel(fast, ref, np.zeros((4, 2)))


def _fit(monkeypatch, path, X, y, bound_X, **kw):
    monkeypatch.setattr(ihm, "_UNIT_SCALE_PATH", path)
    monkeypatch.setattr(dpgd, "_KERNEL_CACHE", OrderedDict())  # build the kernel again
    monkeypatch.setattr(ihm, "_DATA_CACHE", OrderedDict())
    return ihm.fit_ihm(X, y, rng=np.random.default_rng(11), bound_X=bound_X, **kw)


@pytest.mark.parametrize("layout", ["C", "F", "strided"])
@pytest.mark.parametrize("bound_X", [1.0, 2.0])
@pytest.mark.parametrize("kernel", ["fast", "rows"])
def test_fit_ihm_on_x_itself_is_the_reference_fit(monkeypatch, layout, bound_X, kernel):
    rng = np.random.default_rng(5)
    n, d = 1500, 6
    X = rng.uniform(-1, 1, size=(n, 2 * d)) / np.sqrt(d)
    X[0, 0] = -0.0
    X = {"C": X[:, :d].copy(), "F": np.asfortranarray(X[:, :d]), "strided": X[:, ::2]}[layout]
    y = np.clip(X @ rng.normal(size=d) / np.sqrt(d) + 0.1 * rng.normal(size=n), -1, 1)
    kw = dict(budget=ApproxDP(1.0, 1e-6), trials=8, T=3, kernel=kernel, sampler="gram")
    fast = _fit(monkeypatch, "same", X, y, bound_X, **kw)
    ref = _fit(monkeypatch, "reference", X, y, bound_X, **kw)
    assert fast.theta.tobytes() == ref.theta.tobytes()
    assert fast.path.tobytes() == ref.path.tobytes()
    assert fast.budget_spent == ref.budget_spent
    for key, value in ref.diagnostics.items():
        np.testing.assert_array_equal(fast.diagnostics[key], value, err_msg=key)
    for key, value in ref.nonprivate_diagnostics.items():
        np.testing.assert_array_equal(fast.nonprivate_diagnostics[key], value, err_msg=key)


_SCORE_FLOATS = st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True, width=64)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    trials=st.integers(1, 5),
    n=st.integers(1, 40),
    d=st.integers(1, 6),
    clip=st.sampled_from([0.0, 1e-300, 0.5, 1.0, np.inf]),
    special=st.lists(_SCORE_FLOATS, max_size=4),
)
def test_in_place_scoring_is_the_reference_bitwise(seed, trials, n, d, clip, special):
    """Figure 7's residuals and clip counts (``_SCORING_PATH``): the same bits."""
    rng = np.random.default_rng(seed)
    X, y, theta = rng.normal(size=(n, d)), rng.normal(size=n), rng.normal(size=(trials, d))
    y[: len(special)] = special[:n]  # NaN, inf, signed zeros, subnormals in the residuals
    with pytest.MonkeyPatch.context() as mp:
        r_fast = clipping._residuals(X, y, theta)
        c_fast = clipping._count_beyond(r_fast, clip)
        mp.setattr(clipping, "_SCORING_PATH", "reference")
        r_ref = clipping._residuals(X, y, theta)
        c_ref = clipping._count_beyond(r_ref, clip)
    assert r_fast.tobytes() == r_ref.tobytes()
    assert c_fast.dtype == c_ref.dtype and c_fast.tobytes() == c_ref.tobytes()


def test_clipping_rows_are_the_reference_rows(monkeypatch):
    """A small Figure 7 cell: every path of this file against every reference, rows equal."""
    cell = {"epsilon": [0.1, 10.0], "n_rows": 2**11, "conversion": "tight"}
    run = get_kind("lev_clipping").run
    fast = run(cell, trials=4, first_trial=0, seed=7, data=None)
    monkeypatch.setattr(clipping, "_SCORING_PATH", "reference")
    monkeypatch.setattr(dpgd, "_BUILD_PATH", "reference")
    monkeypatch.setattr(ihm, "_UNIT_SCALE_PATH", "reference")
    monkeypatch.setattr(dpgd, "_KERNEL_CACHE", OrderedDict())
    monkeypatch.setattr(ihm, "_DATA_CACHE", OrderedDict())
    ref = run(cell, trials=4, first_trial=0, seed=7, data=None)
    assert fast.equals(ref)
