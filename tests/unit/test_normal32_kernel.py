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
from dpreg.estimators.normal32_kernel import normal32_fill

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
