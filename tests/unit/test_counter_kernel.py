"""Compiled rows of ``CounterGaussianRows`` (issue 18).

Independent computation: the numpy reference (``kernel="numpy"``: SplitMix64 and
Box-Muller as uint64/float64 array passes). The compiled passes do the same operations on
the same operands, so the rows must agree to the last bit where numpy's float64 cos/sin
are libm's (this machine) and within 2 ulp anywhere.
"""

from __future__ import annotations

import types

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpreg.data import counter_kernel, streams
from dpreg.data.counter_kernel import counter_rows, counter_uniforms
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
    for a, b in zip(got, ref, strict=True):
        assert a.shape == b.shape
        np.testing.assert_array_max_ulp(a, b, maxulp=2)


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
    np.testing.assert_array_max_ulp(second[0], first[0][:1000], maxulp=2)
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
