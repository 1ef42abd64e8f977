"""The compiled elementwise pass of DP-GD's clipped-gradient kernel against numpy."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dpreg.estimators.dpgd_kernel import (
    clip_block,
    clip_block_reference,
    clipped_residual_weights,
    clipped_residual_weights_reference,
    row_clip_corrections,
    row_clip_corrections_reference,
    screen_block,
    screen_block_reference,
)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    rows=st.integers(1, 70),
    width=st.integers(1, 40),
    scale=st.sampled_from([0.1, 0.9, 1.0, 3.0]),
)
def test_clip_block_equals_the_numpy_reference(seed, rows, width, scale):
    rng = np.random.default_rng(seed)
    U = rng.standard_normal((rows, width)) * scale
    U[rng.random((rows, width)) < 0.1] = 1.0  # on the boundary: not clipped
    U[rng.random((rows, width)) < 0.05] = -1.0
    results = []
    for fn in (clip_block, clip_block_reference):
        W = np.full_like(U, np.nan)
        count = np.arange(width, dtype=np.int64)  # incremented, not overwritten
        hit = np.full(rows + 3, 7, dtype=np.uint8)
        total = fn(U, W, count, hit)
        results.append((total, W, count, hit[:rows]))
    (t1, W1, c1, h1), (t2, W2, c2, h2) = results
    assert t1 == t2 == int(np.any(np.abs(U) > 1.0, axis=1).sum())
    np.testing.assert_array_equal(W1, W2)
    np.testing.assert_array_equal(W1, np.clip(U, -1.0, 1.0))
    np.testing.assert_array_equal(c1, c2)
    np.testing.assert_array_equal(c1 - np.arange(width), np.count_nonzero(np.abs(U) > 1, axis=0))
    np.testing.assert_array_equal(h1, h2)


def test_clip_block_on_column_views():
    """The kernel is called on the trailing columns of a count vector (a view)."""
    U = np.array([[2.0, 0.0, -5.0], [0.2, 0.3, 0.4]])
    W = np.empty_like(U)
    count = np.zeros(5, dtype=np.int64)
    hit = np.zeros(2, dtype=np.uint8)
    assert clip_block(U, W, count[2:], hit) == 1
    assert count.tolist() == [0, 0, 1, 0, 1]
    assert hit.tolist() == [1, 0]


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    rows=st.integers(1, 50),
    width=st.integers(1, 30),
    threshold=st.sampled_from([0.5, 0.999999, 1.0, 1.0000001, 2.0]),
    single=st.booleans(),
)
def test_screen_block_equals_the_numpy_reference(seed, rows, width, threshold, single):
    rng = np.random.default_rng(seed)
    U = rng.standard_normal((rows, width)).astype(np.float32 if single else np.float64)
    U[rng.random((rows, width)) < 0.1] = threshold  # at the threshold: not flagged
    hits = []
    for fn in (screen_block, screen_block_reference):
        hit = np.full(rows + 2, 9, dtype=np.uint8)
        total = fn(U, threshold, hit)
        hits.append((total, hit[:rows].copy()))
    assert hits[0][0] == hits[1][0]
    np.testing.assert_array_equal(hits[0][1], hits[1][1])
    expected = np.any(np.abs(U.astype(np.float64)) > threshold, axis=1)
    np.testing.assert_array_equal(hits[0][1], expected)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    rows=st.integers(1, 70),
    width=st.integers(1, 5),
    clip=st.sampled_from([0.05, 0.5, 1.0, 4.0]),
)
def test_clipped_residual_weights_equal_the_numpy_reference(seed, rows, width, clip):
    """The same bits as numpy's elementwise sequence, also at the clip level itself."""
    rng = np.random.default_rng(seed)
    R = rng.standard_normal((rows, width))
    y = rng.standard_normal(rows)
    norms = rng.uniform(0.0, 3.0, rows)
    norms[rng.random(rows) < 0.1] = 0.0  # zero rows: weight r_i, never clipped
    edge = rng.random(rows) < 0.2  # rows whose gradient norm is exactly the clip level
    R[edge, 0] = y[edge] - 2.0
    norms[edge] = clip / 2.0
    out = []
    for fn in (clipped_residual_weights, clipped_residual_weights_reference):
        count = np.arange(width, dtype=np.int64)
        W = fn(R.copy(), y, norms, clip, count)
        out.append((W, count))
    np.testing.assert_array_equal(out[0][0], out[1][0])
    np.testing.assert_array_equal(out[0][1], out[1][1])
    r = y[:, None] - R
    g = np.abs(r) * norms[:, None]
    np.testing.assert_array_equal(out[0][1] - np.arange(width), np.count_nonzero(g > clip, axis=0))
    np.testing.assert_allclose(out[0][0], r * np.minimum(1.0, clip / np.maximum(g, 1e-300)))


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    rows=st.integers(1, 60),
    width=st.integers(1, 4),
    d=st.integers(1, 5),
    clip=st.sampled_from([0.1, 1.0, 3.0]),
    mode=st.sampled_from(["gradient", "residual"]),
)
def test_row_clip_corrections_equal_the_numpy_reference(seed, rows, width, d, clip, mode):
    rng = np.random.default_rng(seed)
    R = rng.standard_normal((rows, width)) * 2.0
    y = rng.standard_normal(rows)
    X = rng.standard_normal((rows, d))
    X[rng.random(rows) < 0.1] = 0.0  # zero rows: never clipped in gradient mode
    norms = np.linalg.norm(X, axis=1)
    start = rng.standard_normal((width, d))
    out = []
    for fn in (row_clip_corrections, row_clip_corrections_reference):
        count = np.arange(width, dtype=np.int64)
        corr = start.copy()
        fn(R, y, norms, X, clip, mode, count, corr)
        out.append((count, corr))
    np.testing.assert_array_equal(out[0][0], out[1][0])
    np.testing.assert_array_equal(out[0][1], out[1][1])  # bit for bit
    r = y[:, None] - R
    size = np.abs(r) * (norms[:, None] if mode == "gradient" else 1.0)
    np.testing.assert_array_equal(out[0][0] - np.arange(width), np.count_nonzero(size > clip, 0))
