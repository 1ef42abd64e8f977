"""``same_bits``: the comparison of the fast paths' first-use checks (session 26).

It replaced four spellings of "bit for bit" in those checks (``tobytes()``, and
``np.array_equal`` of ``int64``, ``uint64`` or ``uint8`` views after a shape or dtype
test); on arrays of one shape and dtype it must agree with each.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from dpreg.estimators._bits import same_bits

_SPECIAL = st.sampled_from([0.0, -0.0, np.nan, -np.nan, np.inf, -np.inf, 1.0, 5e-324])
_FLOATS = st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=64), _SPECIAL)


@settings(max_examples=200, deadline=None)
@given(
    a=hnp.arrays(
        np.float64, hnp.array_shapes(min_dims=0, max_dims=3, max_side=4), elements=_FLOATS
    ),
    data=st.data(),
)
def test_same_bits_agrees_with_the_former_comparisons(a, data):
    """Equal to every former spelling on float64 arrays of one shape (b a copy of a with
    some entries replaced: signed zeros, NaN payloads, infinities, subnormals)."""
    b = a.copy()
    if b.size:
        flat = b.reshape(-1)
        for i in data.draw(st.lists(st.integers(0, b.size - 1), max_size=3)):
            flat[i] = data.draw(_FLOATS)
    got = same_bits(a, b)
    assert got == (a.tobytes() == b.tobytes())
    assert got == bool(np.array_equal(a.view(np.int64), b.view(np.int64)))
    assert got == bool(np.array_equal(a.view(np.uint64), b.view(np.uint64)))
    flat_a, flat_b = a.reshape(-1), b.reshape(-1)  # a 0-d array has no uint8 view
    assert got == bool(np.array_equal(flat_a.view(np.uint8), flat_b.view(np.uint8)))


def test_same_bits_shape_dtype_and_scalars():
    """Another shape or dtype is never the same bits; scalars compare as 0-d arrays."""
    a = np.arange(6.0)
    assert same_bits(a, a.copy()) and same_bits(a[::2], a[::2].copy())
    assert not same_bits(a, a.reshape(2, 3))
    assert not same_bits(a, a.astype(np.float32))
    assert not same_bits(np.zeros(2, np.int64), np.zeros(2))  # the same bytes, not dtype
    assert same_bits(np.float64(2.5), 2.5) and not same_bits(np.float64(0.0), -0.0)
    assert same_bits(np.array(np.nan), np.float64(np.nan))
