"""``at_b``: A'B as (B'A)' has the bits of the plain product at the study's shapes (issue 18).

The equality is a property of the BLAS build (docs/scaling.md, "Varshney E1/E3, seventh
pass"): OpenBLAS accumulates each entry in the order of the shared dimension, in blocks that
depend on that dimension alone. These tests pin it at every shape the Varshney jobs hand to
:func:`dpreg.estimators.blas_order.at_b` (config/config.yaml); a failure here means this
machine's BLAS does not have that property and the swap must be switched off.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from threadpoolctl import threadpool_limits

from dpreg.estimators import blas_order
from dpreg.estimators.blas_order import at_b, swap_pays, swap_verified

# DP-AMBSSGD's batch chunks (replicates D, rows k, d, runs R) of every varshney_sim cell of
# config/config.yaml: the chunk of _WORK_ELEMENTS and the remainder of each block.
AMBSSGD_SHAPES = [
    (10, 9, 50, 34), (10, 30, 10, 4), (10, 60, 20, 4), (10, 65, 10, 4), (10, 130, 10, 4),
    (10, 130, 20, 4), (10, 130, 50, 4), (10, 171, 20, 34), (10, 228, 10, 4), (10, 228, 20, 4),
    (10, 228, 100, 4), (10, 240, 100, 4), (10, 284, 50, 4), (10, 362, 100, 4),
    (10, 383, 50, 34), (10, 404, 20, 4), (10, 483, 200, 10), (10, 505, 10, 4),
    (10, 505, 50, 4), (10, 505, 100, 4), (10, 524, 200, 10), (10, 658, 20, 5),
    (10, 706, 50, 4), (10, 771, 100, 4), (10, 910, 10, 4), (10, 910, 20, 4), (10, 910, 20, 34),
    (10, 910, 50, 4), (10, 910, 50, 34), (10, 910, 100, 4), (10, 988, 100, 4),
    (10, 1007, 100, 10), (10, 1028, 100, 4), (10, 1048, 100, 4), (10, 1048, 100, 10),
    (10, 1285, 50, 4), (10, 1285, 50, 6), (10, 1285, 50, 34), (10, 1298, 20, 5),
    (10, 1404, 50, 35), (10, 1408, 20, 34), (10, 1819, 10, 4), (10, 1819, 20, 4),
    (10, 2025, 10, 10), (10, 2025, 50, 6), (10, 2025, 50, 10), (10, 2025, 50, 34),
    (10, 2031, 20, 5), (10, 2031, 20, 10), (10, 2035, 50, 4), (10, 2066, 50, 4),
    (10, 2097, 50, 4), (10, 2097, 50, 6), (10, 2097, 50, 10), (10, 2097, 50, 34),
    (10, 2097, 50, 35), (10, 2334, 20, 4), (10, 2475, 20, 34), (10, 2480, 20, 34),
    (10, 3084, 20, 34), (10, 3306, 20, 4), (10, 4132, 10, 4), (10, 5242, 20, 4),
    (10, 5242, 20, 5), (10, 5242, 20, 10), (10, 10485, 10, 10),
]  # fmt: skip


def _same(A, B):
    # one BLAS thread, as the workflow's jobs run (threads: 1): with several threads OpenBLAS
    # may split the two forms' work differently, and the bits may differ
    with threadpool_limits(limits=1, user_api="blas"):
        _same_one_thread(A, B)


def _same_one_thread(A, B):
    plain = np.matmul(np.swapaxes(A, -1, -2), B)
    swapped = at_b(A, B, swap=True)
    # the swapped form itself, whether or not at_b uses it on this machine's BLAS
    explicit = np.swapaxes(np.matmul(np.swapaxes(B, -1, -2), A), -1, -2)
    if swap_verified():
        assert np.ascontiguousarray(explicit).tobytes() == plain.tobytes()
    assert np.ascontiguousarray(swapped).tobytes() == plain.tobytes()
    assert at_b(A, B, swap=False).tobytes() == plain.tobytes()


@pytest.mark.parametrize("shape", AMBSSGD_SHAPES, ids=str)
def test_ambssgd_gradient_shapes(shape):
    D, k, d, R = shape
    rng = np.random.default_rng(k * 1000 + d + R)
    X = rng.standard_normal((D, k, d)) * np.sqrt(np.geomspace(1.0, 0.01, d))
    Rm = rng.standard_normal((D, k, R))
    Rm[:, ::5, 0] = 0.0  # clipped-to-zero and exact entries occur in the pass
    _same(X, Rm)


@pytest.mark.parametrize("d", [100, 200])
def test_dpsgd_lane_shapes(d):
    rng = np.random.default_rng(d)
    for M in range(500, 1500, 9):  # Poisson batches of expected size 1,000 (and far beyond)
        Xb, r = rng.standard_normal((M, d)), rng.standard_normal((M, 20))
        assert swap_pays(M, d, 20, min_cols=100)
        _same(Xb, r)


@pytest.mark.parametrize("d", [10, 20, 50, 100, 200])
@pytest.mark.parametrize("m", [16384, 576, 1])  # AdaSSP's blocks; 1e6 - 61 * 16384 = 576
def test_adassp_xty_shapes(d, m):
    rng = np.random.default_rng(d + m)
    X = rng.standard_normal((m, d)) * 0.5
    Y = np.clip(rng.standard_normal((m, 2)) * [1.0, 1.1], -3.3, 3.3)
    _same(X, Y)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    k=st.integers(1, 700),
    m=st.integers(1, 60),
    n=st.integers(1, 12),
    stacked=st.booleans(),
)
def test_random_shapes(seed, k, m, n, stacked):
    rng = np.random.default_rng(seed)
    lead = (3,) if stacked else ()
    _same(rng.standard_normal((*lead, k, m)), rng.standard_normal((*lead, k, n)))


def test_swap_rule():
    assert swap_pays(524, 200, 10, min_cols=50)  # E3's chunks at d = 200
    assert not swap_pays(483, 200, 10, min_cols=50)  # below the small-matrix limit
    assert not swap_pays(2475, 20, 34, min_cols=50)  # d = 20: slower swapped


def test_unverified_blas_takes_the_plain_product(monkeypatch):
    """With a BLAS not in VERIFIED_BLAS, at_b returns the plain product (a C-ordered array)."""
    A, B = np.random.default_rng(5).standard_normal((2, 600, 60))[:, :, :30], np.ones((600, 3))
    A = A[0]
    monkeypatch.setattr(blas_order, "swap_verified", lambda: False)
    out = at_b(A, B, swap=True)
    assert out.flags.c_contiguous and out.tobytes() == (A.T @ B).tobytes()
    monkeypatch.setattr(blas_order, "swap_verified", lambda: True)
    assert not at_b(A, B, swap=True).flags.c_contiguous  # the transposed view of (B'A)


def test_this_blas_is_read():
    """numpy's BLAS is found: on this project's wheels it is OpenBLAS with an architecture."""
    from threadpoolctl import threadpool_info

    blas = [i for i in threadpool_info() if i.get("user_api") == "blas"]
    assert blas, "no BLAS found by threadpoolctl"
    assert isinstance(swap_verified(), bool)
