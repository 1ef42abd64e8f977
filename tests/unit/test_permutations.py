"""The compiled uniform-key permutations are numpy's argsort, values and generator state."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpreg.estimators import permutations
from dpreg.estimators.permutations import _argsort_rows, uniform_key_permutations


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    trials=st.integers(0, 40),
    n=st.integers(0, 300),
    chunk_keys=st.sampled_from([1, 7, 64, 1 << 18]),
)
def test_fast_permutations_are_numpys_argsort_with_the_same_state(seed, trials, n, chunk_keys):
    """Same permutations and generator state, over shapes and draw chunks."""
    old = permutations._CHUNK_KEYS
    permutations._CHUNK_KEYS = chunk_keys
    try:
        rng = np.random.default_rng(seed)
        got = uniform_key_permutations(rng, trials, n, method="fast")
    finally:
        permutations._CHUNK_KEYS = old
    ref_rng = np.random.default_rng(seed)
    want = np.argsort(ref_rng.random((trials, n)), axis=1)
    assert got.dtype == np.int64 and got.shape == (trials, n)
    np.testing.assert_array_equal(got, want)
    assert rng.bit_generator.state == ref_rng.bit_generator.state


def test_paper_size_is_numpys_argsort():
    """The audit's DP-SSGD size (n = 1000), through "auto" (compiled there)."""
    got = uniform_key_permutations(np.random.default_rng(5), 300, 1000)
    want = np.argsort(np.random.default_rng(5).random((300, 1000)), axis=1)
    np.testing.assert_array_equal(got, want)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), m=st.integers(1, 8), n=st.integers(1, 200))
def test_rows_with_equal_keys_get_numpys_order(seed, m, n):
    """Ties (and keys outside [0, 1), clamped to the end buckets) sort as numpy sorts them."""
    rng = np.random.default_rng(seed)
    keys = rng.random((m, n))
    keys[:, rng.integers(0, n, size=n // 2)] = keys[:, rng.integers(0, n, size=n // 2)]
    keys[0, : n // 3] = np.round(keys[0, : n // 3], 1)  # many ties
    keys[-1] = keys[-1] * 4.0 - 2.0
    out = np.empty((m, n), dtype=np.int64)
    _argsort_rows(keys, out, np.empty(m, dtype=np.bool_))
    np.testing.assert_array_equal(out, np.argsort(keys, axis=1))


def test_tie_detection_flags_exactly_the_rows_with_equal_keys():
    keys = np.random.default_rng(3).random((4, 50))
    keys[1, 7] = keys[1, 30]
    keys[3, 0] = keys[3, 49]
    ties = np.empty(4, dtype=np.bool_)
    permutations._kernel()(keys, np.empty((4, 50), dtype=np.int64), ties)
    np.testing.assert_array_equal(ties, [False, True, False, True])


def test_bad_arguments_are_refused():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="method"):
        uniform_key_permutations(rng, 2, 3, method="radix")
    with pytest.raises(ValueError, match="trials"):
        uniform_key_permutations(rng, -1, 3)
    with pytest.raises(ValueError, match="n must"):
        uniform_key_permutations(rng, 2, 2.5)
    with pytest.raises(TypeError):
        uniform_key_permutations(np.random.RandomState(0), 2, 3)


@pytest.mark.parametrize("method", ["fast", "reference"])
def test_int32_indices_are_the_same_permutations(method):
    """``dtype=numpy.int32`` (DP-AMBSSGD's stored permutations): same values and state."""
    rng, ref_rng = np.random.default_rng(9), np.random.default_rng(9)
    got = uniform_key_permutations(rng, 7, 333, method=method, dtype=np.int32)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, np.argsort(ref_rng.random((7, 333)), axis=1))
    assert rng.bit_generator.state == ref_rng.bit_generator.state


def test_bad_dtype_is_refused():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="dtype"):
        uniform_key_permutations(rng, 2, 3, dtype=np.float64)
    with pytest.raises(ValueError, match="dtype"):
        uniform_key_permutations(rng, 2, 3, dtype=np.int16)
