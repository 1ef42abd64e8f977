"""Compiled standard normals (issue 18): numpy's values and generator state, bit for bit.

Independent computation: ``Generator.standard_normal`` itself on a generator seeded alike.
Every consumer (the Varshney stream, DP-SSGD's noise) must then give the same rows and
the same results as with numpy's draws.
"""

from __future__ import annotations

import types

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpreg.data import streams
from dpreg.data.normal_kernel import scaled_normal_fill, standard_normal_fill
from dpreg.data.streams import GaussianStream
from dpreg.estimators.dp_ssgd import DpSsgdFeed, dp_ssgd_path

_BIT_GENERATORS = (np.random.PCG64, np.random.PCG64DXSM, np.random.Philox, np.random.SFC64)


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**63),
    shape=st.lists(st.integers(0, 40), min_size=0, max_size=3),
    bit_generator=st.sampled_from(_BIT_GENERATORS),
    before=st.integers(0, 5),
)
def test_fill_equals_numpy_values_and_state(seed, shape, bit_generator, before):
    ours, ref = np.random.Generator(bit_generator(seed)), np.random.Generator(bit_generator(seed))
    ours.standard_normal(before)  # a generator already in use
    ref.standard_normal(before)
    got = standard_normal_fill(ours, np.empty(shape))
    np.testing.assert_array_equal(got, ref.standard_normal(shape))
    np.testing.assert_equal(ours.bit_generator.state, ref.bit_generator.state)
    np.testing.assert_array_equal(ours.standard_normal(7), ref.standard_normal(7))


def test_fill_equals_numpy_on_a_large_draw():
    # about 10^6 draws: the ziggurat's rare tail and wedge branches are taken
    got = standard_normal_fill(np.random.default_rng(11), np.empty((1000, 1001)))
    ref = np.random.default_rng(11).standard_normal((1000, 1001))
    np.testing.assert_array_equal(got, ref)
    assert np.abs(ref).max() > 4.5  # the tail branch was exercised


def test_fill_rejects_bad_arguments():
    rng = np.random.default_rng(0)
    with pytest.raises(TypeError, match="rng"):
        standard_normal_fill(np.random.RandomState(0), np.empty(3))
    with pytest.raises(ValueError, match="out"):
        standard_normal_fill(rng, np.empty((4, 4))[:, ::2])
    with pytest.raises(ValueError, match="out"):
        standard_normal_fill(rng, np.empty(3, dtype=np.float32))


@pytest.mark.parametrize("kernel", ["numba", "auto"])
def test_stream_rows_do_not_depend_on_the_draw_kernel(kernel, monkeypatch):
    monkeypatch.setattr(streams, "AUTO_MIN_NORMALS", 300)  # auto: numpy first, then numba
    monkeypatch.setattr(streams, "sys", types.SimpleNamespace(modules={}))
    lam, w = np.array([1.0, 0.5, 0.25]), np.array([0.3, -1.0, 2.0])
    ref = GaussianStream(4, [0, 7], lam, w, chunk_rows=50, kernel="numpy").take(180)
    src = GaussianStream(4, [0, 7], lam, w, chunk_rows=50, kernel=kernel)
    fills = []
    original = src._normal_fill
    src._normal_fill = lambda count: fills.append(original(count)) or fills[-1]
    got = src.take(180)
    for a, b in zip(got, ref, strict=True):
        np.testing.assert_array_equal(a, b)
    assert fills[-1] == (standard_normal_fill, scaled_normal_fill)
    if kernel == "auto":
        assert fills[0] == (streams._numpy_fill, streams._numpy_scaled_fill)


def test_stream_rejects_an_unknown_kernel():
    with pytest.raises(ValueError, match="kernel"):
        GaussianStream(0, [0], np.ones(2), np.ones(2), kernel="fast")


def _feed(kernel, chunk, rows):
    feed = DpSsgdFeed(
        2, 3, 300, eta=np.array([0.05, 0.1]), clip=np.array([1.0, 0.5]),
        noise_multiplier=np.array([0.7, 1.3]), sigma=np.array([0.1, 0.0]),
        rng=np.random.default_rng(9), chunk=chunk, kernel=kernel,
    )  # fmt: skip
    for start in range(0, 300, 64):
        feed(*(a[:, start : start + 64] for a in rows))
    return feed.result


def test_dp_ssgd_stream_noise_is_numpys_draw():
    """The compiled kernel with compiled draws against the numpy loop with numpy's draws."""
    rows = GaussianStream(2, [0, 1], np.ones(3), np.array([1.0, 0.0, -1.0]), kernel="numpy")
    rows = rows.take(300)
    for chunk in (32, 100):
        got, ref = _feed("numba", chunk, rows), _feed("numpy", chunk, rows)
        np.testing.assert_allclose(got[0], ref[0], rtol=1e-12, atol=1e-14)
        np.testing.assert_array_equal(got[1], ref[1])


def test_dp_ssgd_path_noise_is_numpys_draw():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(500, 3)) / 2
    y = X @ np.ones(3) + 0.1 * rng.normal(size=500)
    perm = np.argsort(rng.random((4, 500)), axis=1)
    kw = {"eta": 0.05, "clip": 0.5, "noise_multiplier": 0.8, "chunk": 128}
    got = dp_ssgd_path(X, y, perm, rng=np.random.default_rng(3), kernel="numba", **kw)
    ref = dp_ssgd_path(X, y, perm, rng=np.random.default_rng(3), kernel="numpy", **kw)
    np.testing.assert_allclose(got[0], ref[0], rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(got[1], ref[1])


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**63),
    m=st.integers(0, 30),
    d=st.integers(1, 9),
    bit_generator=st.sampled_from(_BIT_GENERATORS),
)
def test_scaled_fill_equals_numpy_draw_then_product(seed, m, d, bit_generator):
    scale = np.random.default_rng(seed % 1000).random(d) * 3
    ours, ref = np.random.Generator(bit_generator(seed)), np.random.Generator(bit_generator(seed))
    got = scaled_normal_fill(ours, np.empty((m, d)), scale)
    np.testing.assert_array_equal(got, ref.standard_normal((m, d)) * scale)
    np.testing.assert_equal(ours.bit_generator.state, ref.bit_generator.state)


def test_scaled_fill_rejects_bad_arguments():
    rng = np.random.default_rng(0)
    with pytest.raises(TypeError, match="rng"):
        scaled_normal_fill(np.random.RandomState(0), np.empty((2, 2)), np.ones(2))
    with pytest.raises(ValueError, match="out"):
        scaled_normal_fill(rng, np.empty(3), np.ones(3))
    with pytest.raises(ValueError, match="scale"):
        scaled_normal_fill(rng, np.empty((2, 3)), np.ones(2))


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(1, 260),
    D=st.integers(1, 3),
    d=st.integers(1, 5),
    chunk=st.integers(1, 70),
    kernel=st.sampled_from(["numba", "numpy"]),
    noise=st.sampled_from(["gaussian", "laplace"]),
)
def test_materialise_equals_take(n, D, d, chunk, kernel, noise):
    """The rows drawn in place are those take() returns (numpy's reference stream)."""
    lam, w = np.linspace(1.0, 0.3, d), np.linspace(-1.0, 2.0, d)
    ids = list(range(3, 3 + D))
    seen = []
    src = GaussianStream(5, ids, lam, w, chunk_rows=chunk, kernel=kernel, noise=noise,
                         observers=[lambda X, b, z: seen.append(X.shape[1])])  # fmt: skip
    got = src.materialise(n)
    ref = GaussianStream(5, ids, lam, w, chunk_rows=chunk, kernel="numpy", noise=noise).take(n)
    for a, b in zip(got, ref, strict=True):
        np.testing.assert_array_equal(a, b)
    assert seen == [chunk] * -(-n // chunk)
    with pytest.raises(ValueError, match="fresh"):
        src.materialise(1)


@settings(max_examples=20, deadline=None)
@given(
    n=st.integers(1, 200),
    D=st.integers(1, 3),
    d=st.integers(1, 5),
    chunk=st.integers(1, 70),
    kernel=st.sampled_from(["numba", "numpy"]),
)
def test_materialise_into_reused_arrays_draws_the_same_rows(n, D, d, chunk, kernel):
    """Drawing into out= (a previous stream's arrays, stale values) gives the fresh rows."""
    lam, w = np.linspace(1.0, 0.3, d), np.linspace(-1.0, 2.0, d)
    ids = list(range(D))
    out = tuple(np.full(a.shape, np.nan) for a in GaussianStream(9, ids, lam, w).take(n))
    for seed in (5, 6):  # the second stream overwrites the first's rows
        got = GaussianStream(seed, ids, lam, w, chunk_rows=chunk, kernel=kernel).materialise(
            n, out=out
        )
        ref = GaussianStream(seed, ids, lam, w, chunk_rows=chunk, kernel=kernel).materialise(n)
        for a, b, o in zip(got, ref, out, strict=True):
            assert a is o
            np.testing.assert_array_equal(a, b)


def test_materialise_rejects_bad_out():
    lam, w = np.ones(2), np.ones(2)
    good = (np.empty((1, 4, 2)), np.empty((1, 4)), np.empty((1, 4)))
    bad = {
        "X": (np.empty((1, 5, 2)), good[1], good[2]),
        "base": (good[0], np.empty((1, 4), dtype=np.float32), good[2]),
        "z": (good[0], good[1], np.empty((1, 8))[:, ::2]),
    }
    for name, out in bad.items():
        with pytest.raises(ValueError, match=f"out's {name} "):
            GaussianStream(0, [0], lam, w).materialise(4, out=out)
    with pytest.raises(ValueError, match="out must be a tuple"):
        GaussianStream(0, [0], lam, w).materialise(4, out=list(good))
    GaussianStream(0, [0], lam, w).materialise(4, out=good)


@pytest.mark.parametrize("correlation", ["sgd", "nu_ftrl"])
def test_ftrl_stream_noise_compiled_fill_is_numpys_draw(monkeypatch, correlation):
    """DP-FTRL's stream noise: the compiled fill gives numpy's values and generator state."""
    import dpreg.estimators.ftrl as ftrl
    import dpreg.estimators.ftrl_noise as ftrl_noise

    corr = ftrl._resolve_correlation(correlation, 0.05, 0.1)
    monkeypatch.setattr(ftrl_noise, "_COMPILED_DRAWS_AFTER", 0)  # the compiled fill
    rng = np.random.default_rng(11)
    noise = ftrl.stream_noise(corr, 37, 6, rng)
    after = rng.random(3)
    ref_rng = np.random.default_rng(11)
    w = ref_rng.standard_normal((37, 6))
    ref = ftrl.correlated_noise(corr.coefficients(37), w, out=w)
    np.testing.assert_array_equal(noise, ref)
    np.testing.assert_array_equal(after, ref_rng.random(3))
    assert noise.shape == (37, 6) and np.std(noise) > 0.5
