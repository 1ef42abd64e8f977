"""The compiled step loop of App. D's simulation against the numpy loop: bit for bit (issue 18)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpreg.experiments.choquettechoo2023_iterates import (
    FtrlIterateBoundsParams,
    _setup,
    _simulate,
    run_iterate_bounds,
)


def _both(cell, mechanism, trials, seed):
    P = FtrlIterateBoundsParams.from_cell(cell)
    s = _setup(P, mechanism)
    rng_a, rng_b = np.random.default_rng([seed, 1]), np.random.default_rng([seed, 1])
    ref = _simulate(P, s, trials, rng_a, kernel="numpy")
    fast = _simulate(P, s, trials, rng_b, kernel="numba")
    assert rng_a.bit_generator.state == rng_b.bit_generator.state  # the same draws
    return ref, fast


@settings(max_examples=25, deadline=None)
@given(
    d=st.integers(1, 40),
    T=st.integers(2, 30),
    trials=st.integers(1, 6),
    mechanism=st.sampled_from(["sgd", "nu_ftrl"]),
    alpha=st.floats(0.0, 2.0),
    sigma_sgd=st.floats(0.0, 2.0),
    seed=st.integers(0, 2**31 - 1),
)
def test_compiled_loop_equals_the_numpy_loop_bit_for_bit(
    d, T, trials, mechanism, alpha, sigma_sgd, seed
):
    cell = {"d": d, "T": T, "alpha": alpha, "sigma_sgd": sigma_sgd, "mechanisms": [mechanism]}
    ref, fast = _both(cell, mechanism, trials, seed)
    assert set(ref) == set(fast)
    for key in ref:
        assert np.array_equal(ref[key], fast[key]), key


@pytest.mark.parametrize("d", [7, 8, 9, 16, 31, 32, 128])
def test_block_boundaries_of_numpy_pairwise_sum(d):
    ref, fast = _both({"d": d, "T": 40}, "nu_ftrl", 3, d)
    for key in ref:
        assert np.array_equal(ref[key], fast[key]), key


def test_many_draw_blocks_and_whole_rows(monkeypatch):
    import dpreg.experiments.choquettechoo2023_iterates as it

    monkeypatch.setattr(it, "_DRAW_BLOCK", 50)  # one step per block: many blocks
    ref, fast = _both({"d": 4, "T": 25}, "sgd", 9, 4)
    for key in ref:
        assert np.array_equal(ref[key], fast[key]), key
    cell = {"d": 5, "T": 30, "mechanisms": ["sgd", "nu_ftrl"]}
    # whole cells: the kind's rows whichever loop "auto" picks (numba once it is loaded)
    a = run_iterate_bounds(cell, trials=4, first_trial=0, seed=11)
    monkeypatch.setattr(it, "_simulate", lambda *args: it._simulate_reference(*args))
    b = run_iterate_bounds(cell, trials=4, first_trial=0, seed=11)
    assert a.equals(b)


def test_bad_kernel_and_wide_d_are_refused():
    P = FtrlIterateBoundsParams.from_cell({"d": 129, "T": 3})
    s = _setup(P, "sgd")
    with pytest.raises(ValueError, match="kernel must be one of"):
        _simulate(P, s, 1, np.random.default_rng(0), kernel="fast")
    with pytest.raises(ValueError, match="d <= 128"):
        _simulate(P, s, 1, np.random.default_rng(0), kernel="numba")
    # auto keeps the numpy loop there
    out = _simulate(P, s, 1, np.random.default_rng(0))
    assert out["d6"].shape == (3, 1)


def test_setup_is_cached_on_public_keys_and_equals_the_uncached_one():
    from dpreg.experiments.choquettechoo2023_iterates import _setup_uncached

    P = FtrlIterateBoundsParams.from_cell({"d": 6, "T": 50, "alpha": 0.7})
    for mech in ("sgd", "nu_ftrl"):
        cached, fresh = _setup(P, mech), _setup_uncached(P, mech)
        assert _setup(P, mech) is cached  # once per process
        assert set(cached) == set(fresh)
        for key, value in fresh.items():
            if key == "bounds":
                for name, bound in value.items():
                    assert np.array_equal(cached["bounds"][name], bound)
                    assert not cached["bounds"][name].flags.writeable
            else:
                np.testing.assert_array_equal(cached[key], value)
    other = FtrlIterateBoundsParams.from_cell({"d": 6, "T": 50, "alpha": 0.8})
    assert not np.array_equal(_setup(other, "sgd")["lam"], _setup(P, "sgd")["lam"])
    with pytest.raises(ValueError, match="read-only"):
        _setup(P, "sgd")["beta"][0] = 1.0
