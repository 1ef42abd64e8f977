"""Compiled float32 standard normals (issue 18): numpy's values and state, bit for bit.

Independent computation: ``Generator.standard_normal(dtype=np.float32)`` itself on a
generator seeded alike (the compiled path re-implements PCG64 and numpy's float32
ziggurat, so any slip in the 128-bit step, the buffered 32-bit halves, the tables, the
tail or the wedge test shows as a different value or state). The Fig. 2 simulation must
then give the same rows as with numpy's draws.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpreg.estimators.ftrl import simulate_streaming_regression
from dpreg.estimators.ftrl_correlations import independent, nu_ftrl
from dpreg.estimators.ftrl_noise import correlated_noise, correlated_noise_rows
from dpreg.estimators.normal32_kernel import normal32_fill, normal32_fill_columns

_OTHER = (np.random.PCG64DXSM, np.random.Philox, np.random.SFC64)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**63),
    shape=st.lists(st.integers(0, 40), min_size=0, max_size=3),
    before32=st.integers(0, 5),
    before64=st.integers(0, 2),
    scale=st.one_of(st.none(), st.floats(-1e3, 1e3, allow_nan=False)),
)
def test_fill_equals_numpy_values_and_state(seed, shape, before32, before64, scale):
    ours, ref = np.random.default_rng(seed), np.random.default_rng(seed)
    for rng in (ours, ref):  # a generator in use, possibly holding a buffered half
        rng.standard_normal(before32, dtype=np.float32)
        rng.standard_normal(before64)
    got = normal32_fill(ours, np.empty(shape, np.float32), scale)
    want = ref.standard_normal(shape, dtype=np.float32)
    if scale is not None:
        want *= np.float32(scale)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    np.testing.assert_equal(ours.bit_generator.state, ref.bit_generator.state)
    np.testing.assert_array_equal(
        ours.standard_normal(7, dtype=np.float32), ref.standard_normal(7, dtype=np.float32)
    )


def test_fill_equals_numpy_on_a_large_draw():
    # 4 x 10^6 draws: the ziggurat's tail (about 1 in 4,000) and wedge branches are taken
    got = normal32_fill(np.random.default_rng(11), np.empty((2000, 2001), np.float32))
    ref = np.random.default_rng(11).standard_normal((2000, 2001), dtype=np.float32)
    np.testing.assert_array_equal(got.view(np.uint32), ref.view(np.uint32))
    assert np.sum(np.abs(ref) > 3.6541529) > 100  # the tail branch was exercised


@pytest.mark.parametrize("bit_generator", _OTHER)
def test_other_bit_generators_are_served_by_numpy(bit_generator):
    ours, ref = np.random.Generator(bit_generator(3)), np.random.Generator(bit_generator(3))
    got = normal32_fill(ours, np.empty(50, np.float32), 2.5)
    want = ref.standard_normal(50, dtype=np.float32) * np.float32(2.5)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_equal(ours.bit_generator.state, ref.bit_generator.state)


def test_fill_rejects_bad_arguments():
    rng = np.random.default_rng(0)
    with pytest.raises(TypeError, match="rng"):
        normal32_fill(np.random.RandomState(0), np.empty(3, np.float32))
    with pytest.raises(ValueError, match="out"):
        normal32_fill(rng, np.empty((4, 4), np.float32)[:, ::2])
    with pytest.raises(ValueError, match="out"):
        normal32_fill(rng, np.empty(3))


@pytest.mark.parametrize("corr", [independent(), nu_ftrl(0.01)], ids=["sgd", "nu_ftrl"])
def test_simulation_same_draws_as_numpy(corr):
    # the compiled path (its draws and its step loop) against the numpy reference
    # (numpy's draws and loop): equal to round-off, i.e. the same draws
    kw = dict(correlation=corr, eta=0.05, T=3000, trials=3, record_every=50, sigma_sgd=0.3)
    lam = 1.0 / np.arange(1, 9)
    fast = simulate_streaming_regression(lam, rng=np.random.default_rng(4), **kw)
    ref = simulate_streaming_regression(lam, rng=np.random.default_rng(4), kernel="numpy", **kw)
    np.testing.assert_allclose(fast.suboptimality, ref.suboptimality, rtol=1e-12)
    np.testing.assert_allclose(fast.trace, ref.trace, rtol=1e-12, atol=1e-300)


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**63),
    cols=st.integers(1, 9),
    T=st.integers(0, 200),
    before=st.integers(0, 3),
    scale=st.one_of(st.none(), st.floats(-1e3, 1e3, allow_nan=False)),
)
def test_fill_columns_is_the_transpose_of_numpy(seed, cols, T, before, scale):
    # blocks of 64 steps: T around and across the block edge, one column or several
    ours, ref = np.random.default_rng(seed), np.random.default_rng(seed)
    ours.standard_normal(before, dtype=np.float32)
    ref.standard_normal(before, dtype=np.float32)
    got = normal32_fill_columns(ours, np.empty((cols, T), np.float32), scale)
    want = ref.standard_normal((T, cols), dtype=np.float32)
    if scale is not None:
        want *= np.float32(scale)
    np.testing.assert_array_equal(got.view(np.uint32), want.T.view(np.uint32))
    np.testing.assert_equal(ours.bit_generator.state, ref.bit_generator.state)


def test_fill_columns_equals_numpy_on_a_large_draw():
    # 4.2 x 10^6 draws stored transposed: the tail and wedge branches, with the buffered
    # 32-bit half both held and spent when they start (the state carried in registers)
    ours, ref = np.random.default_rng(12), np.random.default_rng(12)
    ours.standard_normal(1, dtype=np.float32)  # has_uint32 set
    ref.standard_normal(1, dtype=np.float32)
    got = normal32_fill_columns(ours, np.empty((7, 600_001), np.float32), 0.25)
    want = ref.standard_normal((600_001, 7), dtype=np.float32) * np.float32(0.25)
    np.testing.assert_array_equal(got.view(np.uint32), want.T.view(np.uint32))
    np.testing.assert_equal(ours.bit_generator.state, ref.bit_generator.state)
    assert np.sum(np.abs(want) > np.float32(0.25 * 3.6541529)) > 100  # the tail was drawn


def test_fill_columns_rejects_bad_arguments():
    with pytest.raises(TypeError, match="rng"):
        normal32_fill_columns(np.random.RandomState(0), np.empty((2, 3), np.float32))
    with pytest.raises(ValueError, match="out_t"):
        normal32_fill_columns(np.random.default_rng(0), np.empty((2, 3, 1), np.float32))
    with pytest.raises(ValueError, match="out_t"):
        normal32_fill_columns(np.random.default_rng(0), np.empty((3, 2), np.float32).T)


@settings(max_examples=30, deadline=None)
@given(
    T=st.integers(1, 300),
    cols=st.integers(1, 40),
    taps=st.integers(1, 300),
    seed=st.integers(0, 2**32 - 1),
    precision=st.sampled_from(["single", "double"]),
    in_place=st.booleans(),
)
def test_rows_layout_equals_correlated_noise_bit_for_bit(T, cols, taps, seed, precision, in_place):
    # time last (the simulation's layout) against time first (correlated_noise): the
    # same transforms of the same series, so the same bits, on both the FFT and the
    # direct path (taps <= DIRECT_TAPS)
    rng = np.random.default_rng(seed)
    beta = rng.standard_normal(taps)
    dtype = np.float32 if precision == "single" else np.float64
    w = rng.standard_normal((T, cols)).astype(dtype)
    want = correlated_noise(beta, w, precision=precision)
    w_t = np.ascontiguousarray(w.T)
    got = correlated_noise_rows(beta, w_t, precision=precision, out=w_t if in_place else None)
    assert (got is w_t) == in_place
    np.testing.assert_array_equal(got.T, want)


def test_rows_layout_rejects_bad_out():
    with pytest.raises(ValueError, match="out"):
        correlated_noise_rows([1.0, 0.5], np.ones((2, 4)), out=np.empty((4, 2)))
    with pytest.raises(ValueError, match="w_t"):
        correlated_noise_rows([1.0], np.float64(1.0))


@pytest.mark.parametrize("compiled", [False, True])
def test_unit_normals_are_numpys_draws(monkeypatch, compiled):
    # both sides of the switch to the compiled fill: numpy's values and state
    from dpreg.estimators import ftrl_noise

    monkeypatch.setattr(ftrl_noise, "_COMPILED_DRAWS_AFTER", 0 if compiled else 1 << 62)
    if not compiled:
        monkeypatch.delitem(__import__("sys").modules, "numba", raising=False)
    ours, ref = np.random.default_rng(8), np.random.default_rng(8)
    got = ftrl_noise.unit_normals(ours, (300, 7))
    np.testing.assert_array_equal(got, ref.standard_normal((300, 7)))
    np.testing.assert_equal(ours.bit_generator.state, ref.bit_generator.state)
