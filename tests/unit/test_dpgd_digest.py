"""The data caches' key: ``dpgd._digest`` with its memo of the last arrays hashed (issue 18).

The memo must return the sha256 of the bytes it is given, whatever the array's history:
checked against ``hashlib`` directly (an independent computation) and against the
reference path that hashes every call.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import dpreg.estimators.dpgd as dpgd
from dpreg.estimators.dpgd import _digest


def _sha(a) -> bytes:
    """The sha256 of the float64 values in C order, computed without dpreg."""
    return hashlib.sha256(np.ascontiguousarray(a, dtype=np.float64).tobytes()).digest()


@pytest.fixture(autouse=True)
def _empty_memo():
    dpgd._DIGEST_MEMO.clear()
    yield
    dpgd._DIGEST_MEMO.clear()


def test_repeated_and_copied_arrays_get_the_hash_of_their_bytes():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 7))
    first = _digest(X)
    assert first == _sha(X)
    assert _digest(X) == first  # served by the memo
    assert _digest(X.copy()) == first  # equal bits, another object
    assert _digest(np.asfortranarray(X)) == first  # the C-order values are keyed
    assert len(dpgd._DIGEST_MEMO) == 1


def test_an_array_changed_in_place_is_hashed_again():
    """The memo keeps a copy: an array mutated after hashing must not match itself."""
    X = np.random.default_rng(1).normal(size=(50, 3))
    before = _digest(X)
    X[17, 2] = np.nextafter(X[17, 2], np.inf)  # one ulp
    assert _digest(X) == _sha(X) != before


def test_signed_zeros_and_nan_payloads_are_told_apart_as_bytes_are():
    """Bits, not float equality: -0.0 == 0.0 and NaN != NaN must not decide the key."""
    zeros = np.zeros((4, 2))
    assert _digest(zeros) == _sha(zeros)
    negative = -zeros
    assert _digest(negative) == _sha(negative) != _sha(zeros)
    quiet = np.full(3, np.nan)
    other = quiet.view(np.uint64).copy()
    other[1] ^= 1  # another NaN payload
    other = other.view(np.float64)
    assert _digest(quiet) == _sha(quiet)
    assert _digest(quiet) == _sha(quiet)  # a NaN array is found again (bitwise equal)
    assert _digest(other) == _sha(other) != _sha(quiet)


def test_the_memo_is_bounded_and_keeps_the_newest():
    arrays = [np.full((5, 2), float(i)) for i in range(dpgd._DIGEST_MEMO_SIZE + 3)]
    for a in arrays:
        _digest(a)
    assert len(dpgd._DIGEST_MEMO) == dpgd._DIGEST_MEMO_SIZE
    kept = [np.asarray(bits).view(np.float64)[0, 0] for bits, _ in dpgd._DIGEST_MEMO]
    assert kept == [float(i) for i in range(len(arrays) - 1, 2, -1)]
    for a in arrays:  # evicted or kept, every digest is the hash of its bytes
        assert _digest(a) == _sha(a)


_floats = st.floats(allow_nan=True, allow_infinity=True, width=64)


@settings(max_examples=60, deadline=None)
@given(
    pool=st.lists(
        hnp.arrays(
            np.float64, hnp.array_shapes(min_dims=1, max_dims=2, max_side=6), elements=_floats
        ),
        min_size=1,
        max_size=7,
    ),
    order=st.lists(st.integers(0, 6), min_size=1, max_size=25),
    mutate=st.lists(st.booleans(), min_size=25, max_size=25),
)
def test_memo_equals_reference_over_call_sequences(pool, order, mutate):
    """Any sequence of calls, with in-place changes between them, gives what the
    reference path (a hash per call) and hashlib give."""
    dpgd._DIGEST_MEMO.clear()
    for step, i in enumerate(order):
        a = pool[i % len(pool)]
        if mutate[step] and a.size:
            a.flat[step % a.size] = step + 0.5  # an in-place change of a hashed array
        got = _digest(a)
        dpgd._DIGEST_PATH = "reference"
        try:
            reference = _digest(a)
        finally:
            dpgd._DIGEST_PATH = "memo"
        assert got == reference == _sha(a)


def test_arrays_above_the_size_cap_are_hashed_and_never_copied(monkeypatch):
    monkeypatch.setattr(dpgd, "_DIGEST_MEMO_MAX_BYTES", 800)
    small = np.arange(100.0)  # 800 bytes: memoised
    large = np.arange(101.0)  # 808 bytes: hashed, not kept
    assert _digest(small) == _sha(small)
    assert _digest(large) == _sha(large)
    assert _digest(large) == _sha(large)
    assert [kept.nbytes for kept, _ in dpgd._DIGEST_MEMO] == [800]
