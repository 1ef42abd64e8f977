"""The inlined-PCG64 normals (issue 18): numpy's values and generator state, bit for bit.

Independent computation: ``Generator.standard_normal(out=...)`` itself on a generator in
the same state, and numba's ``rng.standard_normal()`` (``inline_pcg64=False``, the
reference path). Generators are taken in any state: advanced by other draws, with
PCG64's buffered 32-bit half set (``has_uint32``), drawn from in many small calls.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dpreg.data.normal_kernel import (
    pcg64_state,
    scaled_normal_fill,
    set_pcg64_state,
    standard_normal_fill,
)
from dpreg.estimators.dp_ssgd_kernel import stream_chunk


def _pair(seed, before, half):
    """Two PCG64 generators in the same state, used before (``half``: an odd uint32 draw)."""
    gens = [np.random.default_rng(seed) for _ in range(2)]
    for g in gens:
        g.random(before)
        if half:
            g.integers(0, 2**32, dtype=np.uint32)  # leaves has_uint32 = 1
    return gens


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**128 - 1),
    sizes=st.lists(st.integers(0, 300), min_size=1, max_size=6),
    before=st.integers(0, 5),
    half=st.booleans(),
)
def test_fill_equals_numpy_in_many_calls(seed, sizes, before, half):
    ours, ref = _pair(seed, before, half)
    assert ours.bit_generator.state["has_uint32"] == int(half)
    for n in sizes:
        got = standard_normal_fill(ours, np.empty(n))
        np.testing.assert_array_equal(got, ref.standard_normal(out=np.empty(n)))
        assert ours.bit_generator.state == ref.bit_generator.state
    # the buffered 32-bit half and the stream after it are untouched
    assert ours.integers(0, 2**32, dtype=np.uint32) == ref.integers(0, 2**32, dtype=np.uint32)
    assert ours.random() == ref.random()


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**63), m=st.integers(0, 40), d=st.integers(1, 9), half=st.booleans())
def test_scaled_fill_equals_numpy(seed, m, d, half):
    ours, ref = _pair(seed, 1, half)
    scale = np.random.default_rng(seed + 1).random(d) * 3.0
    got = scaled_normal_fill(ours, np.empty((m, d)), scale)
    want = ref.standard_normal(out=np.empty((m, d)))
    want *= scale
    np.testing.assert_array_equal(got, want)
    assert ours.bit_generator.state == ref.bit_generator.state


def test_large_fill_takes_the_tail_and_wedge_and_equals_the_reference():
    # 2 10^6 draws: about 1% leave the ziggurat's fast path (tail idx 0 and the wedges)
    ours, ref, numba_ref = (np.random.default_rng(2024) for _ in range(3))
    got = standard_normal_fill(ours, np.empty(2_000_000))
    want = ref.standard_normal(2_000_000)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(
        standard_normal_fill(numba_ref, np.empty(2_000_000), inline_pcg64=False), want
    )
    assert ours.bit_generator.state == ref.bit_generator.state == numba_ref.bit_generator.state
    assert np.abs(want).max() > 3.9  # beyond the ziggurat's last layer: the tail was drawn


def test_other_bit_generators_take_the_reference_path():
    for bg in (np.random.PCG64DXSM, np.random.Philox, np.random.SFC64, np.random.MT19937):
        assert pcg64_state(np.random.Generator(bg(5))) is None
        got = standard_normal_fill(np.random.Generator(bg(5)), np.empty(50))
        np.testing.assert_array_equal(got, np.random.Generator(bg(5)).standard_normal(50))


def test_state_round_trip_keeps_the_buffered_half():
    rng = np.random.default_rng(9)
    rng.integers(0, 2**32, dtype=np.uint32)
    before = rng.bit_generator.state
    state, st_ = pcg64_state(rng)
    assert (int(st_[0]) << 64 | int(st_[1])) == before["state"]["state"]
    assert (int(st_[2]) << 64 | int(st_[3])) == before["state"]["inc"]
    set_pcg64_state(rng, state, st_)
    assert rng.bit_generator.state == before


@settings(max_examples=20, deadline=None)
@given(
    k=st.integers(1, 40),
    d=st.integers(1, 6),
    D=st.integers(1, 3),
    R=st.integers(1, 3),
    seed=st.integers(0, 2**32),
    half=st.booleans(),
    with_z=st.booleans(),
)
def test_stream_chunk_inlined_equals_the_reference_bit_for_bit(k, d, D, R, seed, half, with_z):
    g = np.random.default_rng(seed)
    X = g.standard_normal((D, k, d))
    base, z = g.standard_normal((D, k)), (g.standard_normal((D, k)) if with_z else None)
    sig, scale = g.random(R), g.random(R)
    eta_clip, clip = 0.05 * g.random(R), 0.2 + g.random(R)
    norms = np.sqrt(np.einsum("kcd,kcd->kc", X, X))
    out = {}
    for inline, rng in zip((True, False), _pair(seed + 1, 2, half), strict=True):
        W = np.random.default_rng(seed + 2).standard_normal((D, 1, d, R))
        S, c = np.zeros((D, 1, d, R)), np.zeros((D, R))
        for first in range(0, k, 7):  # several chunks: the state carries over
            stream_chunk(
                X[:, first : first + 7], base[:, first : first + 7],
                None if z is None else z[:, first : first + 7], sig,
                np.ascontiguousarray(norms[:, first : first + 7]), rng, W, S, c,
                noise_scale=scale, eta_clip=eta_clip, clip=clip, first_step=first,
                tail_start=k // 2 + 1, inline_pcg64=inline,
            )  # fmt: skip
        out[inline] = (W, S, c, rng.bit_generator.state)
    for a, b in zip(out[True][:3], out[False][:3], strict=True):
        np.testing.assert_array_equal(a, b)
    assert out[True][3] == out[False][3]
