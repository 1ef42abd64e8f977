"""GaussianStream reuses retired chunk arrays (issue 18, docs/scaling.md, fifth pass).

Independent computation: the same stream with reuse switched off
(``MAX_SPARE_CHUNKS = 0``: a fresh array per chunk, as before) on the same seeds and read
sizes; every row read, every chunk an observer sees and every view a consumer still holds
must be bit-identical, whatever the read sizes.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpreg.data.streams as streams
from dpreg.data.streams import GaussianStream

LAM, W = np.array([1.0, 0.5, 0.25]), np.array([0.3, -0.2, 0.5])


def _read(reads, chunk_rows, hold, n_drain):
    """Rows read, chunks observed, and the views held (copied at read and at the end)."""
    seen = []
    src = GaussianStream(
        7, [0, 2], LAM, W, chunk_rows=chunk_rows,
        observers=[lambda X, b, z: seen.append((X.copy(), b.copy(), z.copy()))],
    )  # fmt: skip
    out, held = [], []
    for k in reads:
        X, base, z = src.take(k)
        out.append((X.copy(), base.copy(), z.copy()))
        held.append((X, X.copy()))
        if len(held) > hold:
            held.pop(0)
    src.drain(n_drain + sum(reads))
    return out, seen, held, src


@settings(max_examples=25, deadline=None)
@given(
    reads=st.lists(st.integers(1, 60), min_size=1, max_size=12),
    chunk_rows=st.integers(1, 25),
    hold=st.integers(0, 3),
    n_drain=st.integers(0, 80),
)
def test_reused_chunks_give_the_fresh_arrays_rows_bit_for_bit(reads, chunk_rows, hold, n_drain):
    got, got_seen, held, _ = _read(reads, chunk_rows, hold, n_drain)
    for view, at_read in held:  # a view still held was never overwritten by a later chunk
        np.testing.assert_array_equal(view, at_read)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(streams, "MAX_SPARE_CHUNKS", 0)
        want, want_seen, _, src = _read(reads, chunk_rows, hold, n_drain)
        assert src._spare == []
    assert len(got) == len(want) and len(got_seen) == len(want_seen)
    for a, b in zip(got + got_seen, want + want_seen, strict=True):
        for x, y in zip(a, b, strict=True):
            np.testing.assert_array_equal(x, y)


def test_a_retired_chunk_is_reused_once_unreferenced_and_not_while_viewed():
    def address(a):
        return a.__array_interface__["data"][0]

    src = GaussianStream(1, [0], LAM, W, chunk_rows=4)
    first = src.take(4)[0]  # chunk 0, read whole: retired, but `first` still refers to it
    where = address(first)
    snapshot = first.copy()
    second = src.take(4)[0]  # chunk 1: chunk 0 is still referenced, so a fresh array
    assert address(second) != where
    del second  # chunk 1's array is free: chunk 2 reuses it
    third = src.take(4)[0]
    np.testing.assert_array_equal(first, snapshot)
    assert address(third) != where
    del first  # now chunk 0's array is free as well: chunk 3 takes the first free spare
    fourth = src.take(4)[0]
    assert address(fourth) == where
    assert len(src._spare) <= streams.MAX_SPARE_CHUNKS
