"""Compiled rows of ``CounterGaussianRows`` (issue 18).

Independent computation: the numpy reference (``kernel="numpy"``: SplitMix64 and
Box-Muller as uint64/float64 array passes). The compiled passes do the same operations on
the same operands except the cosine and sine (``counter_sincos``, within one ulp of
libm's), so the rows agree with the reference to round-off: relative difference at most
1e-15 (the sum ``base`` relative to the sum of its terms' magnitudes).
"""

from __future__ import annotations

import types

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpreg.data import counter_kernel, streams
from dpreg.data.counter_kernel import counter_rows, counter_sincos, counter_uniforms
from dpreg.data.streams import AUTO_MIN_NORMALS, CounterGaussianRows, _counter_normal_pairs


@settings(max_examples=25, deadline=None)
@given(
    d=st.integers(1, 60),
    seed=st.integers(0, 2**32),
    replicate=st.integers(0, 1000),
    positions=st.lists(st.integers(0, 2**40), min_size=0, max_size=50),
)
def test_compiled_rows_equal_the_reference(d, seed, replicate, positions):
    rng = np.random.default_rng(d)
    lam, w = rng.uniform(0.1, 2.0, d), rng.normal(size=d)
    pos = np.array(positions, dtype=np.int64)
    ref = CounterGaussianRows(seed, replicate, lam, w, kernel="numpy").rows(pos)
    got = CounterGaussianRows(seed, replicate, lam, w, kernel="numba").rows(pos)
    _assert_rows_equal_to_round_off(got, ref, w)


def _assert_rows_equal_to_round_off(got, ref, w, rel=1e-15):
    """(X, base, z) against the reference's: X, z elementwise, base against sum |x_i w_i|."""
    (X, base, z), (Xr, base_r, zr) = got, ref
    assert X.shape == Xr.shape and base.shape == base_r.shape and z.shape == zr.shape
    assert np.all(np.abs(X - Xr) <= rel * np.abs(Xr))
    assert np.all(np.abs(z - zr) <= rel * np.abs(zr))
    scale = np.abs(Xr * w).sum(axis=1)
    assert np.all(np.abs(base - base_r) <= rel * scale)


def _max_ulp(got, ref):
    return float(np.max(np.abs(got - ref) / np.spacing(np.abs(ref)), initial=0.0))


def test_sincos_is_within_one_ulp_of_libm_over_many_counters():
    """The angles of 4e6 counters (the reference's construction) and the hard cases.

    numpy's float64 sin/cos are libm's here; the compiled pair differs from them in the
    last bit of a few percent of the values and never by more than one ulp, hence a
    relative difference <= 2^-52 (checked <= 1e-15 below, with the ulp count).
    """
    _, angle = counter_uniforms(2026, np.arange(20_000), 200)
    angle = angle.ravel()
    quarter = np.pi / 2  # doubles next to k pi / 2, where the reduction cancels most
    near = [np.nextafter(k * quarter, t) for k in range(1, 5) for t in (0.0, 10.0)]
    near = np.concatenate([np.array(near) + np.spacing(np.array(near)) * j for j in range(-64, 65)])
    edges = np.array([0.0, 2.0**-1074, 1e-300, 1e-8, np.pi / 4, np.nextafter(2 * np.pi, 0)])
    for a in (angle, near[(near >= 0) & (near < 2 * np.pi)], edges):
        s, c = counter_sincos(a)
        assert _max_ulp(s, np.sin(a)) <= 1.0 and _max_ulp(c, np.cos(a)) <= 1.0
        assert np.all(np.abs(s - np.sin(a)) <= 1e-15 * np.abs(np.sin(a)))
        assert np.all(np.abs(c - np.cos(a)) <= 1e-15 * np.abs(np.cos(a)))
    s, c = counter_sincos(angle)
    assert 0.0 < np.mean(s != np.sin(angle)) < 0.1  # not libm's bits: the test can fail


@settings(max_examples=200, deadline=None)
@given(st.floats(0.0, 2 * np.pi, exclude_max=True))
def test_sincos_within_one_ulp_of_libm_anywhere_in_the_range(a):
    s, c = counter_sincos(np.array([a]))
    assert _max_ulp(s, np.sin([a])) <= 1.0 and _max_ulp(c, np.cos([a])) <= 1.0


def test_sincos_rejects_a_2d_angle():
    with pytest.raises(ValueError, match="angle"):
        counter_sincos(np.zeros((2, 2)))


def test_uniforms_are_the_reference_box_muller_inputs_bit_for_bit():
    pos = np.array([0, 1, 17, 2**35 + 3])
    u, angle = counter_uniforms(12345, pos, 3)
    g = _counter_normal_pairs(12345, pos[:, None] * 3 + np.arange(3))
    r = np.sqrt(-2.0 * np.log(u))
    np.testing.assert_array_equal(r * np.cos(angle), g[..., 0])
    np.testing.assert_array_equal(r * np.sin(angle), g[..., 1])


@pytest.mark.parametrize("numba_loaded", [False, True])
def test_auto_switches_after_the_threshold_with_the_same_rows(monkeypatch, numba_loaded):
    assert AUTO_MIN_NORMALS == 1 << 23
    monkeypatch.setattr(streams, "AUTO_MIN_NORMALS", 4000)
    modules = {"numba": None} if numba_loaded else {}
    monkeypatch.setattr(streams, "sys", types.SimpleNamespace(modules=modules))
    calls = []

    def counting(*args):
        calls.append(args[1].size)
        return counter_rows(*args)

    monkeypatch.setattr(counter_kernel, "counter_rows", counting)
    d = 7
    lam, w = np.ones(d), np.arange(d) / d
    pos = np.arange(0, 8000, 4)
    auto = CounterGaussianRows(3, 1, lam, w)
    first = auto.rows(pos)  # numpy unless numba is loaded: the threshold is not reached
    assert calls == ([pos.size] if numba_loaded else [])
    assert auto._normals >= 4000
    second = auto.rows(pos[:1000])  # compiled from here on
    assert calls[-1] == 1000
    _assert_rows_equal_to_round_off(second, tuple(a[:1000] for a in first), w)
    X, z = counter_rows(auto._key, pos[:1000], np.sqrt(lam))
    np.testing.assert_array_equal(second[0], X)
    np.testing.assert_array_equal(second[2], z)


def test_bad_kernel_is_named():
    with pytest.raises(ValueError, match="kernel"):
        CounterGaussianRows(0, 0, np.ones(2), np.ones(2), kernel="fast")


@settings(max_examples=25, deadline=None)
@given(
    d=st.integers(1, 300),
    m=st.integers(0, 20),
    seed=st.integers(0, 2**32),
)
def test_compiled_base_is_numpys_pairwise_sum_bit_for_bit(d, m, seed):
    """``base`` summed in the kernel: the bits of ``(X * w).sum(axis=1)`` on its rows.

    d up to 300 exercises numpy's pairwise blocks (8 accumulators, halves above 128).
    """
    rng = np.random.default_rng(seed)
    w = rng.normal(size=d) * np.exp(rng.normal(size=d) * 3)  # magnitudes that round
    pos = rng.integers(0, 2**40, m)
    X, z, base = counter_rows(seed, pos, rng.uniform(0.1, 2.0, d), w)
    np.testing.assert_array_equal(base, (X * w).sum(axis=1))
    src = CounterGaussianRows(seed % 2**31, 3, np.ones(d), w, kernel="numba")
    Xs, bs, _ = src.rows(pos)
    np.testing.assert_array_equal(bs, (Xs * w).sum(axis=1))
    with pytest.raises(ValueError, match="w must"):
        counter_rows(seed, pos, np.ones(d), np.ones(d + 1))


@pytest.mark.parametrize("scratch_pairs", [1, 19 * 5, 19 * 64])
def test_rows_in_blocks_are_the_rows_of_one_block_bit_for_bit(monkeypatch, scratch_pairs):
    """``counter_rows`` works through blocks of rows; any block size gives the same bits."""
    d, rng = 37, np.random.default_rng(4)  # 19 pairs per row
    pos = rng.integers(0, 2**40, 257)
    sqrt_h, w = rng.uniform(0.1, 2.0, d), rng.normal(size=d)
    one = counter_rows(9, pos, sqrt_h, w)  # default scratch: 431 rows, one block
    monkeypatch.setattr(counter_kernel, "_SCRATCH_PAIRS", scratch_pairs)
    many = counter_rows(9, pos, sqrt_h, w)
    for a, b in zip(many, one, strict=True):
        np.testing.assert_array_equal(a, b)
    X, z = counter_rows(9, pos, sqrt_h)
    np.testing.assert_array_equal(X, one[0])
    np.testing.assert_array_equal(z, one[1])
    assert counter_rows(9, pos[:0], sqrt_h, w)[0].shape == (0, d)


@pytest.mark.parametrize("d", [129, 200, 257, 300, 1000, 1031])
def test_base_above_one_pairwise_block_is_numpys_sum(d):
    """Above 128 terms numpy's pairwise sum splits (the kernel's explicit stack)."""
    w = np.random.default_rng(d).standard_normal(d)
    X, _, base = counter_rows(11, np.arange(40), np.linspace(0.5, 2.0, d), w)
    np.testing.assert_array_equal(base, (X * w).sum(axis=1))
