"""DP-SGD with Poisson subsampling: the compiled step against the numpy reference (issue 18)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpreg.estimators.dpsgd_poisson import fit_dp_sgd_poisson
from dpreg.privacy.budgets import ApproxDP


def _data(n: int, d: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = X @ rng.normal(size=d) + 0.3 * rng.normal(size=n)
    return X, y


@pytest.mark.parametrize("clip", [0.2, 2.0, 1e6])  # most rows clipped .. none
@pytest.mark.parametrize("epsilon", [1.0, math.inf])
def test_numba_step_equals_the_numpy_reference(clip, epsilon):
    X, y = _data(3000, 6)
    kw = dict(budget=ApproxDP(epsilon, 1e-6), trials=5, clip=clip, eta=0.3, batch_size=150)
    kw |= dict(n_public=3000, epochs=2.0)
    fast = fit_dp_sgd_poisson(X, y, rng=np.random.default_rng(4), kernel="numba", **kw)
    ref = fit_dp_sgd_poisson(X, y, rng=np.random.default_rng(4), kernel="numpy", **kw)
    scale = 1.0 + np.abs(ref.theta).max()
    np.testing.assert_allclose(fast.theta, ref.theta, rtol=0, atol=1e-12 * scale)
    np.testing.assert_array_equal(
        fast.nonprivate_diagnostics["clip_fraction"], ref.nonprivate_diagnostics["clip_fraction"]
    )
    assert fast.budget_spent == ref.budget_spent
    assert fast.diagnostics["noise_multiplier"] == ref.diagnostics["noise_multiplier"]
    frac = ref.nonprivate_diagnostics["clip_fraction"]
    assert (frac > 0.5).all() if clip == 0.2 else (frac == 0).all() if clip == 1e6 else True


def test_bad_kernel_raises():
    X, y = _data(100, 2)
    with pytest.raises(ValueError, match="kernel"):
        fit_dp_sgd_poisson(
            X, y, budget=ApproxDP(1.0, 1e-6), rng=np.random.default_rng(0), clip=1.0, eta=0.1,
            batch_size=10, n_public=100, kernel="fast",
        )  # fmt: skip


def test_auto_kernel_is_numpy_for_small_calls_and_numba_for_large_ones():
    from dpreg.estimators.dpsgd_poisson import AUTO_MIN_ROWS

    X, y = _data(20000, 2)
    kw = dict(budget=ApproxDP(1.0, 1e-6), clip=1.0, eta=0.3, batch_size=2000, n_public=20000)
    for trials, other in ((3, "numpy"), (AUTO_MIN_ROWS // 20000 + 1, "numba")):
        auto = fit_dp_sgd_poisson(X, y, rng=np.random.default_rng(2), trials=trials, **kw)
        ref = fit_dp_sgd_poisson(
            X, y, rng=np.random.default_rng(2), trials=trials, kernel=other, **kw
        )
        np.testing.assert_array_equal(auto.theta, ref.theta)


@pytest.mark.parametrize("with_noise", [True, False])
@pytest.mark.parametrize("clip_scale", [0.05, 1.0, 1e6])  # most lanes' rows clipped .. none
def test_stream_runs_compiled_clipping_is_bit_identical(with_noise, clip_scale):
    """The lanes' residual clipping compiled: the reference's operations in its order."""
    from dpreg.estimators.dpsgd_poisson import dp_sgd_poisson_stream_runs

    X, y = _data(2000, 5, seed=3)
    noise = np.random.default_rng(8).normal(size=2000)

    def rows(pos):
        return X[pos], y[pos], noise[pos] if with_noise else None

    R = 6
    kw = dict(
        sigma=np.linspace(0.0, 1.0, R), clip=clip_scale * np.linspace(0.5, 3.0, R),
        eta=np.full(R, 0.2), noise_multiplier=np.linspace(0.0, 2.0, R), batch_size=100,
        steps=30,
    )  # fmt: skip
    fast = dp_sgd_poisson_stream_runs(
        rows, 2000, 5, rng=np.random.default_rng(1), kernel="numba", **kw
    )
    ref = dp_sgd_poisson_stream_runs(
        rows, 2000, 5, rng=np.random.default_rng(1), kernel="numpy", **kw
    )
    np.testing.assert_array_equal(fast[0], ref[0])
    np.testing.assert_array_equal(fast[1], ref[1])
    frac = ref[1]
    assert (
        (frac > 0.3).all()
        if clip_scale == 0.05
        else (frac == 0).all()
        if clip_scale == 1e6
        else True
    )


def test_kernel_reads_contiguous_rows_of_a_column_major_design(monkeypatch):
    """A prepared table's X is column-major: the kernel gets a row-major copy, same values."""
    import dpreg.estimators.dpsgd_poisson as mod

    X, y = _data(400, 3)
    X = np.asfortranarray(X)
    seen = []
    step = mod._step_kernel()

    def recording(Xk, *args):
        seen.append((Xk.flags.c_contiguous, np.array_equal(Xk, X)))
        return step(Xk, *args)

    monkeypatch.setattr(mod, "_step_kernel", lambda: recording)
    kw = dict(budget=ApproxDP(1.0, 1e-6), trials=2, clip=1.0, eta=0.3, batch_size=40)
    fast = fit_dp_sgd_poisson(
        X, y, rng=np.random.default_rng(1), n_public=400, kernel="numba", **kw
    )
    ref = fit_dp_sgd_poisson(X, y, rng=np.random.default_rng(1), n_public=400, kernel="numpy", **kw)
    assert seen and all(c and same for c, same in seen)
    np.testing.assert_allclose(fast.theta, ref.theta, rtol=0, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    n=st.integers(1, 60),
    d=st.integers(1, 9),
    trials=st.integers(1, 3),
    M=st.integers(1, 23),
    clip=st.sampled_from([0.05, 0.5, 50.0]),
)
def test_blocked_step_equals_rowwise_bit_for_bit(seed, n, d, trials, M, clip):
    """Four sampled rows at a time: the row-wise kernel's values, for any mask (not a prefix)."""
    import dpreg.estimators.dpsgd_poisson as mod

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = rng.normal(size=n)
    norms = np.sqrt(np.einsum("id,id->i", X, X))
    pos = rng.integers(0, n, size=(trials, M))
    mask = rng.random((trials, M)) < 0.7
    W = rng.normal(size=(trials, d))
    out = []
    for kernel in (mod._step_kernel(), mod._step_kernel_rowwise()):
        total, clipped, seen = np.full((trials, d), 0.25), np.zeros(trials), np.zeros(trials)
        kernel(X, y, norms, pos, mask, W, clip, total, clipped, seen)
        out.append((total, clipped, seen))
    for a, b in zip(*out, strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(out[0][2], mask.sum(axis=1))


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    M=st.integers(0, 40),
    R=st.integers(1, 70),
    noisy=st.booleans(),
    clip_scale=st.sampled_from([1e-3, 0.3, 1.0, 1e6]),
)
def test_simd_lane_clipping_equals_the_reference_bit_for_bit(seed, M, R, noisy, clip_scale):
    """``clip_lanes_simd`` (lanes in SIMD registers) against ``_clip_kernel`` (issue 18)."""
    from dpreg.estimators.dpsgd_poisson import _clip_kernel, _clip_kernel_simd

    rng = np.random.default_rng(seed)
    Rm = rng.normal(size=(M, R)) * rng.uniform(0.1, 10.0)
    base, noise, xnorm = rng.normal(size=M), rng.normal(size=M), rng.uniform(0.0, 5.0, M)
    sig, clip = rng.uniform(0.0, 1.0, R), clip_scale * rng.uniform(0.5, 2.0, R)
    got, want = Rm.copy(), Rm.copy()
    c_got = np.full(R, float(rng.integers(0, 10**6)))
    c_want = c_got.copy()
    _clip_kernel()(want, base, noise, sig, xnorm, clip, c_want, noisy)
    _clip_kernel_simd()(got, base, noise, sig, xnorm, clip, c_got, noisy, np.empty(R, np.int64))
    assert got.tobytes() == want.tobytes()
    assert c_got.tobytes() == c_want.tobytes()


@pytest.mark.parametrize("noisy", [True, False])
def test_simd_lane_clipping_with_a_zero_clip_gives_the_numpy_reference(noisy):
    """A zero divisor (clip 0 on a zero gradient): the numpy path's NaN, not an exception.

    ``clip_lanes_simd`` runs with numba's ``error_model="numpy"`` so that its divisions
    vectorise (issue 18, session 24); elsewhere its values are the scalar reference's.
    """
    from dpreg.estimators.dpsgd_poisson import _clip_kernel_simd

    rng = np.random.default_rng(4)
    M, R = 9, 6
    Rm = rng.normal(size=(M, R))
    base, noise, xnorm = rng.normal(size=M), rng.normal(size=M), rng.uniform(0.5, 2.0, M)
    xnorm[[2, 5]] = 0.0  # zero gradients
    sig, clip = rng.uniform(0.0, 1.0, R), np.array([0.0, 0.3, 0.0, 1.0, 2.0, 0.0])
    got = Rm.copy()
    clipped = np.zeros(R)
    _clip_kernel_simd()(got, base, noise, sig, xnorm, clip, clipped, noisy, np.empty(R, np.int64))
    y = base[:, None] + noise[:, None] * sig if noisy else base[:, None]
    want = Rm - y  # the numpy path of dp_sgd_poisson_stream_runs
    gnorm = np.abs(want) * xnorm[:, None]
    with np.errstate(invalid="ignore"):
        want *= clip / np.maximum(gnorm, clip)
    assert np.isnan(got).sum() == 6  # the two zero gradients in the three zero-clip lanes
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(clipped, (gnorm > clip).sum(axis=0))


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 3000),
    q=st.sampled_from([1e-3, 0.01, 0.3, 0.9, 1.0]),
)
def test_one_trial_positions_equal_the_masked_draw(seed, n, q):
    """``poisson_positions_one``: the valid entries of ``poisson_positions(n, q, 1)``."""
    from dpreg.estimators.dpsgd_poisson import poisson_positions, poisson_positions_one

    r1, r2 = np.random.default_rng(seed), np.random.default_rng(seed)
    for _ in range(3):
        pos, mask = poisson_positions(n, q, 1, r1)
        got = poisson_positions_one(n, q, r2)
        assert got.dtype == pos.dtype
        np.testing.assert_array_equal(got, pos[0][mask[0]])
    assert r1.bit_generator.state == r2.bit_generator.state


@pytest.mark.parametrize("d", [100, 200])
def test_stream_runs_at_the_study_shape_are_bit_identical(d):
    """E3's lanes (d = 100, 200; 20 lanes; ~1,000 rows a step): the compiled path, with
    its SIMD clipping and its swapped product ``(r' X_b)'``, against the numpy reference."""
    from dpreg.estimators.dpsgd_poisson import dp_sgd_poisson_stream_runs

    X, y = _data(20000, d, seed=5)
    noise = np.random.default_rng(9).normal(size=20000)

    def rows(pos):
        return X[pos], y[pos], noise[pos]

    R = 20
    kw = dict(
        sigma=np.repeat([0.01, 0.0], R // 2), clip=np.geomspace(0.5, 40.0, R),
        eta=np.full(R, 0.05), noise_multiplier=np.full(R, 0.8), batch_size=1000, steps=12,
    )  # fmt: skip
    fast = dp_sgd_poisson_stream_runs(
        rows, 20000, d, rng=np.random.default_rng(2), kernel="numba", **kw
    )
    ref = dp_sgd_poisson_stream_runs(
        rows, 20000, d, rng=np.random.default_rng(2), kernel="numpy", **kw
    )
    assert fast[0].tobytes() == ref[0].tobytes()
    assert fast[1].tobytes() == ref[1].tobytes()


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(45, 400),
    d=st.integers(1, 40),
    trials=st.integers(1, 6),
    clip=st.sampled_from([0.05, 0.5, 5.0, 1e9]),
    fortran=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_numpy_kernel_equals_the_numpy_reference_bit_for_bit(n, d, trials, clip, fortran, seed):
    # kernel="numpy" (rows taken from a row-major copy, row norms once) against the former
    # gathers of kernel="numpy_reference": the same values, the same bits
    X, y = _data(n, d, seed % 1000)
    if fortran:  # a prepared table's X is column-major
        X = np.asfortranarray(X)
    kw = dict(budget=ApproxDP(1.0, 1e-4), trials=trials, clip=clip, eta=0.2)
    kw |= dict(batch_size=max(1.0, n / 10), n_public=n, epochs=1.5)
    fast = fit_dp_sgd_poisson(X, y, rng=np.random.default_rng(seed), kernel="numpy", **kw)
    ref = fit_dp_sgd_poisson(X, y, rng=np.random.default_rng(seed), kernel="numpy_reference", **kw)
    np.testing.assert_array_equal(fast.theta, ref.theta)
    np.testing.assert_array_equal(
        fast.nonprivate_diagnostics["clip_fraction"], ref.nonprivate_diagnostics["clip_fraction"]
    )
    assert fast.budget_spent == ref.budget_spent


def test_auto_kernel_below_the_threshold_is_the_numpy_reference_bit_for_bit():
    X, y = _data(1500, 7, 3)
    X = np.asfortranarray(X)
    kw = dict(budget=ApproxDP(0.5, 1e-6), trials=20, clip=0.3, eta=0.4, batch_size=39.0)
    kw |= dict(n_public=1500)
    auto = fit_dp_sgd_poisson(X, y, rng=np.random.default_rng(8), **kw)
    ref = fit_dp_sgd_poisson(X, y, rng=np.random.default_rng(8), kernel="numpy_reference", **kw)
    np.testing.assert_array_equal(auto.theta, ref.theta)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 200_000),
    q=st.one_of(
        st.sampled_from([1e-6, 1e-3, 0.01, 0.3, 0.3333333333333333, 1 / 3, 0.5, 1.0]),
        st.floats(1e-5, 0.4),
    ),
    trials=st.integers(1, 8),
)
def test_compiled_positions_equal_numpys_bit_for_bit(seed, n, q, trials):
    """``poisson_positions(compiled=True)``: numpy's geometric gaps and sums, its state."""
    from dpreg.estimators.dpsgd_poisson import poisson_positions

    r1, r2 = np.random.default_rng(seed), np.random.default_rng(seed)
    for _ in range(2):
        want = poisson_positions(n, q, trials, r1)
        got = poisson_positions(n, q, trials, r2, compiled=True)
        for a, b in zip(got, want, strict=True):
            assert a.dtype == b.dtype and a.shape == b.shape
            np.testing.assert_array_equal(a, b)
    assert r1.bit_generator.state == r2.bit_generator.state


@pytest.mark.parametrize("p", [1e-7, 0.004, 0.05, 0.33])
def test_compiled_geometric_sums_equal_numpys_over_many_draws(p):
    """Two million draws (the exponential ziggurat's wedge and tail branches included),
    the rows too short to reach n (width -1), and the generator's state afterwards."""
    from dpreg.data import _pcg64_jit
    from dpreg.data.normal_kernel import pcg64_state, set_pcg64_state

    r1, r2 = np.random.default_rng(11), np.random.default_rng(11)
    want = np.cumsum(r1.geometric(p, size=(200, 10_000)), axis=1) - 1
    got = np.empty_like(want)
    state, s = pcg64_state(r2)
    assert _pcg64_jit.geometric_cumsum(s, math.log1p(-p), 2**62, got) == -1
    set_pcg64_state(r2, state, s)
    np.testing.assert_array_equal(got, want)
    assert r1.bit_generator.state == r2.bit_generator.state
    assert r1.random() == r2.random()


def test_compiled_positions_fall_back_to_numpy_where_they_do_not_apply():
    """Another bit generator, a Generator subclass, q >= 1/3: numpy's own draw."""
    from dpreg.estimators.dpsgd_poisson import _compiled_cumsum, poisson_positions

    class Counting(np.random.Generator):
        pass

    for make in (
        lambda: np.random.Generator(np.random.Philox(4)),
        lambda: Counting(np.random.PCG64(4)),
    ):
        assert _compiled_cumsum(500, 0.05, 3, 60, make()) == (None, -1)
        want = poisson_positions(500, 0.05, 3, make())
        got = poisson_positions(500, 0.05, 3, make(), compiled=True)
        for a, b in zip(got, want, strict=True):
            np.testing.assert_array_equal(a, b)
    assert _compiled_cumsum(500, 0.4, 3, 60, np.random.default_rng(0)) == (None, -1)


def test_fits_draw_the_positions_compiled_with_the_reference_bits(monkeypatch):
    """With numba loaded, ``kernel="numpy"`` draws the positions compiled and
    ``"numpy_reference"`` by numpy: the same fit, bit for bit."""
    import numba  # noqa: F401  (loaded, as in a benchmark job)

    import dpreg.estimators.dpsgd_poisson as mod

    seen = []
    real = mod.poisson_positions

    def spy(*args, compiled=False, **kw):
        seen.append(compiled)
        return real(*args, compiled=compiled, **kw)

    monkeypatch.setattr(mod, "poisson_positions", spy)
    X, y = _data(900, 4, 2)
    kw = dict(budget=ApproxDP(1.0, 1e-6), trials=5, clip=0.5, eta=0.3, batch_size=30.0)
    kw |= dict(n_public=900)
    fast = fit_dp_sgd_poisson(X, y, rng=np.random.default_rng(3), kernel="numpy", **kw)
    steps = len(seen)
    ref = fit_dp_sgd_poisson(X, y, rng=np.random.default_rng(3), kernel="numpy_reference", **kw)
    assert steps == 30 and all(seen[:steps]) and not any(seen[steps:])
    assert fast.theta.tobytes() == ref.theta.tobytes()
    np.testing.assert_array_equal(
        fast.nonprivate_diagnostics["clip_fraction"], ref.nonprivate_diagnostics["clip_fraction"]
    )
