"""The fused narrow pass over row tiles gives the reference pass's bits (issue 18)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpreg.estimators._dpgd_tiled as tiled_mod
import dpreg.estimators.dpgd as dpgd
from dpreg.estimators._dpgd_tiled import tiled_pass
from dpreg.estimators.dpgd import dp_gd_path
from dpreg.estimators.dpgd_kernel import _fused_kernel

pytest.importorskip("numba")


def _tiled_kernel():
    if tiled_pass() is None:
        pytest.skip("the reference pass is not compiled into eight lanes on this machine")
    from dpreg.estimators._dpgd_tiled_jit import fused_narrow_tiled

    return fused_narrow_tiled


def _bits(a):
    return np.ascontiguousarray(a).view(np.uint64)


@settings(max_examples=200, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.one_of(st.integers(0, 70), st.integers(70, 3000)),
    width=st.integers(1, 40),
    d=st.integers(1, 10),
    scale=st.sampled_from([1e-3, 0.1, 0.5, 2.0, 50.0]),
    tile=st.sampled_from([8, 16, 40, 256, 2048, 8192]),
    special=st.sampled_from(["none", "zeros", "nan", "inf", "ones"]),
    shared=st.sampled_from(["", "any", "sorted"]),
)
def test_tiled_pass_is_the_narrow_pass_bit_for_bit(seed, n, width, d, scale, tile, special, shared):
    """Sums (bytes, signed zeros and NaN payloads included) and counts equal for any
    row count, chain starts (negative, inside, at and past the end; distinct or shared
    by neighbours, which then run as a pair), zero padding
    (d < 10), tile and residuals clipped or not, exactly at the clip level or NaN."""
    run = _tiled_kernel()
    rng = np.random.default_rng(seed)
    AT = np.zeros((11, n))
    XBT = np.zeros((10, n))
    AT[:d] = rng.standard_normal((d, n)) * scale
    AT[10] = rng.standard_normal(n) * scale  # y / B in the last entry
    XBT[:d] = rng.standard_normal((d, n))
    E = np.zeros((width, 11))
    E[:, :d] = rng.standard_normal((width, d))
    E[:, 10] = -1.0
    if n and special != "none":
        rows = rng.integers(0, n, size=max(1, n // 10))
        value = {"zeros": 0.0, "nan": np.nan, "inf": np.inf, "ones": 1.0}[special]
        if special == "ones":  # residual u = 1 exactly: clip level, not clipped
            AT[:, rows] = 0.0
            AT[10, rows] = -1.0
        else:
            AT[0, rows] = value
            XBT[0, rows] = value if special != "inf" else 1.0
    # chains starting anywhere, or on a few shared rows (neighbours run together)
    row_start = rng.integers(-3, n + 4, size=width)
    if shared:
        row_start = rng.choice(row_start[:3], size=width)
        if shared == "sorted":
            row_start = np.sort(row_start)[::-1].copy()
    G_ref, c_ref = np.full((width, 10), 7.0), np.full(width, -1, dtype=np.int64)
    G, c = np.full((width, 10), 9.0), np.full(width, -2, dtype=np.int64)
    _fused_kernel()[1](AT, XBT, E, row_start, G_ref, c_ref)
    with np.errstate(all="ignore"):
        run(AT, XBT, E, row_start, G, c, tile)
    np.testing.assert_array_equal(_bits(G), _bits(G_ref))
    np.testing.assert_array_equal(c, c_ref)


def test_reference_path_declines_and_check_accepts():
    """``_TILED_PATH = "reference"`` gives None (the caller runs ``fused_narrow``); the
    check compares the passes on problems with remainders of every length."""
    lengths = {AT.shape[1] % 8 for AT, _, _, _ in tiled_mod._check_problem()}
    assert lengths == set(range(8))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tiled_mod, "_TILED_PATH", "reference")
        assert tiled_pass() is None


@pytest.mark.parametrize("p", [3, 10])
def test_fused_kernel_paths_with_tiles_equal_the_reference(p):
    """Whole DP-GD paths of 60 chains (``kernel="fused"``, compiled bookkeeping) with the
    tiled pass equal those with the reference pass, byte for byte, clip fractions too."""
    _tiled_kernel()
    rng = np.random.default_rng(5)
    X = rng.standard_normal((3000, p)) * rng.uniform(0.3, 2.0, p)
    y = X @ rng.standard_normal(p) + rng.standard_normal(3000)
    clip = 3.0 * np.sqrt(p)
    kernel = dpgd.clipped_gradient_kernel(X, y, clip, fused=True)  # dp_gd_path's, cached
    runs, passes = {}, {}
    for path in ("tiled", "reference"):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(tiled_mod, "_TILED_PATH", path)
            kernel._layouts.clear()  # the pass is chosen once per layout
            streams = [np.random.default_rng([9, k]) for k in range(60)]
            runs[path] = dp_gd_path(
                X, y, rng=streams, trials=60, T=80, step=0.25, clip=clip, noise_std=0.05,
                kernel="fused",
            )  # fmt: skip
            passes[path] = kernel._layout(60).fused_step[3]
    kernel._layouts.clear()
    assert passes["reference"] is _fused_kernel()[1] and passes["tiled"] is tiled_pass()
    (path, frac), (path_ref, frac_ref) = runs["tiled"], runs["reference"]
    assert path.tobytes() == path_ref.tobytes()
    assert frac.tobytes() == frac_ref.tobytes()
    assert frac.max() > 0  # clipping exercised
