"""The Gram cache of linear mixing and AdaSSP equals the uncached validation bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpreg.estimators._gram_cache as gram_cache
from dpreg import ApproxDP
from dpreg._validation import check_bounded_design_gram
from dpreg.estimators.adassp import fit_adassp
from dpreg.estimators.sketch import fit_linear_mixing


def _data(seed: int, n: int = 700, d: int = 4) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, d)) / np.sqrt(d)
    return X, np.clip(X @ rng.normal(size=d) + 0.1 * rng.normal(size=n), -1, 1)


@pytest.fixture(autouse=True)
def _empty_cache():
    gram_cache.reset()
    yield
    gram_cache.reset()


# each step: (dataset 0-3 (3: column-major), bound_X, trials, change X in place before the call)
_STEPS = st.lists(
    st.tuples(
        st.integers(0, 3),
        st.sampled_from([1.0, 2.0]),
        st.sampled_from([1, 3, 64, 70]),
        st.booleans(),
    ),
    min_size=1,
    max_size=12,
)


@settings(max_examples=30, deadline=None)
@given(_STEPS)
def test_cached_gram_is_the_reference_over_call_sequences(steps):
    """Same arrays, same Gram bits (compiled pass from 64 trials, BLAS below), fresh copies."""
    gram_cache.reset()
    datasets = [_data(s) for s in range(3)]
    datasets[2] = (datasets[0][0].copy(), datasets[1][1].copy())  # X of 0 with y of 1
    datasets.append((np.asfortranarray(datasets[0][0]), datasets[0][1].copy()))  # column-major
    for which, bound_X, trials, change in steps:
        X, y = datasets[which]
        if change:
            X[0, 0] = -X[0, 0] if X[0, 0] != 0.0 else 0.01
        got = gram_cache.bounded_design_gram(
            X, y, bound_X=bound_X, bound_y=1.0, trials=trials, rng=np.random.default_rng(0)
        )
        ref = check_bounded_design_gram(
            X, y, bound_X=bound_X, bound_y=1.0, trials=trials, rng=np.random.default_rng(0)
        )
        assert got[2] == ref[2]
        assert got[0] is ref[0] and got[1] is ref[1]  # the caller's float64 arrays
        assert got[4].tobytes() == ref[4].tobytes()
        got[4][:] = np.nan  # the caller's copy; the cache is not changed


def test_the_cache_is_used_and_keyed_by_the_data_and_bounds():
    X, y = _data(1)
    kw = dict(bound_y=1.0, trials=64, rng=np.random.default_rng(0))
    gram_cache.bounded_design_gram(X, y, bound_X=1.0, **kw)
    gram_cache.bounded_design_gram(X.copy(), y.copy(), bound_X=1.0, **kw)
    assert len(gram_cache._GRAM_CACHE) == 1  # equal values: one entry, served
    gram_cache.bounded_design_gram(X, y, bound_X=2.0, **kw)
    gram_cache.bounded_design_gram(X, y, bound_X=1.0, bound_y=1.0, trials=3, rng=kw["rng"])
    assert len(gram_cache._GRAM_CACHE) == 3  # another bound, another pass: other keys
    # numpy scalars are keyed by value: served
    rng = kw["rng"]
    gram_cache.bounded_design_gram(X, y, bound_X=np.float64(1.0), bound_y=1.0, trials=64, rng=rng)
    gram_cache.bounded_design_gram(X, y, bound_X=1.0, bound_y=1.0, trials=np.int64(3), rng=rng)
    assert len(gram_cache._GRAM_CACHE) == 3
    # integer bounds: not cached (the reference)
    gram_cache.bounded_design_gram(X, y, bound_X=1, bound_y=1.0, trials=3, rng=rng)
    gram_cache.bounded_design_gram(X, y, bound_X=1.0, bound_y=1, trials=3, rng=rng)
    assert len(gram_cache._GRAM_CACHE) == 3


_RNG = np.random.default_rng(0)


def test_errors_after_a_hit_are_the_reference_errors():
    X, y = _data(2)
    gram_cache.bounded_design_gram(X, y, bound_X=1.0, bound_y=1.0, trials=2, rng=_RNG)
    with pytest.raises(ValueError, match="trials"):
        gram_cache.bounded_design_gram(X, y, bound_X=1.0, bound_y=1.0, trials=0, rng=_RNG)
    with pytest.raises(TypeError, match="rng"):
        gram_cache.bounded_design_gram(X, y, bound_X=1.0, bound_y=1.0, trials=2, rng=3)
    with pytest.raises(ValueError, match="bound_X"):  # a violated bound is never served
        gram_cache.bounded_design_gram(X, y, bound_X=0.01, bound_y=1.0, trials=2, rng=_RNG)
    X[0] = 5.0  # the cached values changed in place: validated again
    with pytest.raises(ValueError, match="bound_X"):
        gram_cache.bounded_design_gram(X, y, bound_X=1.0, bound_y=1.0, trials=2, rng=_RNG)


@pytest.mark.parametrize("trials", [3, 64])
def test_fits_are_the_uncached_fits_bit_for_bit(monkeypatch, trials):
    """Linear mixing and AdaSSP: same draws, theta, diagnostics and budget as uncached."""
    X, y = _data(3, n=2000)
    budget = ApproxDP(1.0, 1e-6)

    def fits():
        out = []
        for _ in range(2):  # the second fit of each is served from the cache
            for fit in (fit_linear_mixing, fit_adassp):
                out.append(
                    fit(X, y, budget=budget, rng=np.random.default_rng(5), trials=trials,
                        bound_X=1.0, bound_y=1.0)
                )  # fmt: skip
        return out

    fast = fits()
    monkeypatch.setattr(gram_cache, "_GRAM_CACHE_PATH", "reference")
    ref = fits()
    for a, b in zip(fast, ref, strict=True):
        assert a.theta.tobytes() == b.theta.tobytes()
        assert a.budget_spent == b.budget_spent
        for key, value in b.diagnostics.items():
            np.testing.assert_array_equal(a.diagnostics[key], value, err_msg=key)


@pytest.mark.parametrize("shape_X, n_y", [((0, 3), 0), ((5, 0), 5), ((5, 3), 0)])
def test_empty_data_get_the_reference_error_naming_them(shape_X, n_y):
    X, y = np.zeros(shape_X), np.zeros(n_y)
    with pytest.raises(ValueError) as cached:
        gram_cache.bounded_design_gram(X, y, bound_X=1.0, bound_y=1.0, trials=2, rng=_RNG)
    with pytest.raises(ValueError) as reference:
        check_bounded_design_gram(X, y, bound_X=1.0, bound_y=1.0, trials=2, rng=_RNG)
    assert str(cached.value) == str(reference.value)
    assert not gram_cache._GRAM_CACHE


@settings(max_examples=20, deadline=None)
@given(
    fresh=st.integers(0, 60),
    repeats=st.integers(1, 40),
    trials=st.sampled_from([3, 64]),
)
def test_fresh_data_bypass_the_keys_and_a_hit_resumes_them(fresh, repeats, trials):
    """Fresh data at every call (no hit possible): after the streak most calls are not
    keyed; the same data again is found at a probe and cached again; every result is the
    reference's, bit for bit."""
    gram_cache.reset()
    keyed = []
    real_key = gram_cache._key

    def counting_key(*a):
        keyed.append(1)
        return real_key(*a)

    kw = dict(bound_X=1.0, bound_y=1.0, trials=trials)
    calls = [_data(100 + i, n=50) for i in range(fresh)] + [_data(7, n=50)] * repeats
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(gram_cache, "_key", counting_key)
        per_call = []
        for X, y in calls:
            before = len(keyed)
            got = gram_cache.bounded_design_gram(X, y, rng=np.random.default_rng(0), **kw)
            per_call.append(len(keyed) - before)
            ref = check_bounded_design_gram(X, y, rng=np.random.default_rng(0), **kw)
            assert got[4].tobytes() == ref[4].tobytes() and got[2] == ref[2]
    bypass, probe = gram_cache._BYPASS_AFTER, gram_cache._PROBE_EVERY
    if fresh + 1 < bypass:
        assert len(keyed) == len(calls)  # below the streak: every call keyed
    if fresh >= 4 * bypass:
        assert len(keyed) < bypass + (fresh - bypass) // probe + 1 + repeats
    if repeats >= 2 * probe + 2:  # a probe found the repeated data: keyed (and served) again
        assert gram_cache._STREAK["misses"] == 0
        assert per_call[-1] == 1 and sum(per_call[-repeats:]) >= repeats - 2 * probe
