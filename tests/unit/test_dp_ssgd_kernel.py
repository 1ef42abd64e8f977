"""DP-SSGD's compiled kernel against the numpy reference loop (same seeds, same draws).

Independent computation: the numpy loops of ``dp_ssgd_path`` / ``dp_ssgd_stream_pass``
(``kernel="numpy"``), themselves tested against a hand-written loop and against each
other in test_varshney2022_estimators.py and test_varshney2022_study.py. Equality is to
round-off (the kernels only add the inner products in another order); the clipped counts
and the generator's state after the call are equal exactly (same noise draws).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpreg.data.streams import GaussianStream
from dpreg.estimators import get_estimator
from dpreg.estimators.dp_ssgd import dp_ssgd_path, dp_ssgd_stream_pass
from dpreg.estimators.dp_ssgd_kernel import path_chunk
from dpreg.privacy.budgets import ApproxDP


def _data(n, d, seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    return X, X @ np.ones(d) / math.sqrt(d) + 0.5 * rng.standard_normal(n)


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(2, 400),
    d=st.integers(1, 6),
    trials=st.integers(1, 4),
    chunk=st.integers(1, 150),
    clip=st.floats(0.05, 20.0),
    alpha=st.floats(0.0, 3.0),
    seed=st.integers(0, 2**16),
)
def test_path_kernel_equals_numpy_reference(n, d, trials, chunk, clip, alpha, seed):
    X, y = _data(n, d, seed)
    perm = np.argsort(np.random.default_rng(seed + 1).random((trials, n)), axis=1)
    out, states = {}, {}
    for kernel in ("numba", "numpy"):
        rng = np.random.default_rng(seed + 2)
        out[kernel] = dp_ssgd_path(
            X, y, perm, eta=0.05, clip=clip, noise_multiplier=alpha, rng=rng, chunk=chunk,
            kernel=kernel,
        )  # fmt: skip
        states[kernel] = rng.random()  # same number of draws consumed
    (a, fa), (b, fb) = out["numba"], out["numpy"]
    np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12 * (1 + np.abs(b).max()))
    np.testing.assert_array_equal(fa, fb)
    assert states["numba"] == states["numpy"]


@settings(max_examples=20, deadline=None)
@given(
    n=st.integers(1, 300),
    d=st.integers(1, 5),
    D=st.integers(1, 3),
    chunk=st.integers(1, 120),
    seed=st.integers(0, 2**16),
)
def test_stream_kernel_equals_numpy_reference(n, d, D, chunk, seed):
    lam = np.linspace(1.0, 0.2, d)
    w = np.ones(d)
    kw = {
        "eta": np.array([0.05, 0.02, 0.1]),
        "clip": np.array([1.0, 0.3, 5.0]),  # clipping active in some lanes, not in others
        "noise_multiplier": np.array([0.5, 2.0, 0.0]),
        "sigma": np.array([0.1, 1.0, 0.0]),
        "chunk": chunk,
    }
    out, states = {}, {}
    for kernel in ("numba", "numpy"):
        rng = np.random.default_rng(seed)
        src = GaussianStream(seed, list(range(D)), lam, w, chunk_rows=64)
        out[kernel] = dp_ssgd_stream_pass(src, n, rng=rng, kernel=kernel, **kw)
        states[kernel] = rng.random()
    (a, fa), (b, fb) = out["numba"], out["numpy"]
    np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12 * (1 + np.abs(b).max()))
    np.testing.assert_array_equal(fa, fb)
    assert states["numba"] == states["numpy"]


def test_long_clipped_noisy_paths_agree_and_clip():
    """5000 steps with clipping and noise: still equal to round-off, clipping really active."""
    X, y = _data(5000, 8, 0)
    perm = np.argsort(np.random.default_rng(1).random((3, 5000)), axis=1)
    a, fa = dp_ssgd_path(X, y, perm, eta=0.02, clip=0.5, noise_multiplier=1.5,
                         rng=np.random.default_rng(2), kernel="numba")  # fmt: skip
    b, fb = dp_ssgd_path(X, y, perm, eta=0.02, clip=0.5, noise_multiplier=1.5,
                         rng=np.random.default_rng(2), kernel="numpy")  # fmt: skip
    np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(fa, fb)
    assert 0.2 < fa.min() and fa.max() < 1


def test_fit_dp_ssgd_kernel_option():
    X, y = _data(800, 3, 4)
    X /= 2 * np.linalg.norm(X, axis=1, keepdims=True)
    y = np.clip(y, -1, 1)
    fits = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # outside Theorem 3.1's regime at this n
        for kernel in ("numba", "numpy"):
            fits[kernel] = get_estimator("dp_ssgd")(
                X, y, budget=ApproxDP(1.0, 1e-5), rng=np.random.default_rng(3), trials=5,
                clip=0.3, eta=0.1, kernel=kernel,
            )  # fmt: skip
        np.testing.assert_allclose(fits["numba"].theta, fits["numpy"].theta, rtol=1e-10)
        assert fits["numba"].budget_spent == fits["numpy"].budget_spent
        with pytest.raises(ValueError, match="kernel"):
            get_estimator("dp_ssgd")(
                X, y, budget=ApproxDP(1.0, 1e-5), rng=np.random.default_rng(3), clip=0.3,
                eta=0.1, kernel="fortran",
            )  # fmt: skip


@settings(max_examples=15, deadline=None)
@given(n=st.integers(1, 400), d=st.integers(1, 9), D=st.integers(1, 3), seed=st.integers(0, 99))
def test_stream_results_do_not_depend_on_the_chunk_size(n, d, D, seed):
    """Chunks' noise draws concatenate to one sequence: any chunk size, the same bits."""
    lam, w = np.linspace(1.0, 0.2, d), np.ones(d)
    kw = {
        "eta": np.array([0.05, 0.1]),
        "clip": np.array([1.0, 0.3]),
        "noise_multiplier": np.array([0.5, 2.0]),
        "sigma": np.array([0.1, 0.0]),
    }
    out = []
    for chunk in (None, 1, 37, 1024):
        src = GaussianStream(seed, list(range(D)), lam, w, chunk_rows=50)
        out.append(dp_ssgd_stream_pass(src, n, rng=np.random.default_rng(seed), chunk=chunk, **kw))
    for w_bar, frac in out[1:]:
        np.testing.assert_array_equal(w_bar, out[0][0])
        np.testing.assert_array_equal(frac, out[0][1])


def test_stream_kernel_reads_strided_rows_and_y_without_noise():
    """Rows as non-contiguous views and ``z = None`` (y = base) give the contiguous result."""
    from dpreg.estimators.dp_ssgd_kernel import stream_chunk

    rng = np.random.default_rng(3)
    big = rng.standard_normal((2, 40, 3))
    X = big[:, ::2]  # strided view, (2, 20, 3)
    base = rng.standard_normal((2, 40))[:, ::2]
    norms = np.sqrt(np.einsum("kcd,kcd->kc", X, X))
    res = []
    for Xa, ba in ((X, base), (np.ascontiguousarray(X), np.ascontiguousarray(base))):
        W, S, c = np.zeros((2, 1, 3, 2)), np.zeros((2, 1, 3, 2)), np.zeros((2, 2))
        stream_chunk(
            Xa, ba, None, np.array([0.3, 0.0]), norms, np.random.default_rng(4), W, S, c,
            noise_scale=np.array([0.01, 0.02]), eta_clip=np.array([0.1, 0.05]),
            clip=np.array([1.0, 0.5]), first_step=0, tail_start=5,
        )  # fmt: skip
        res.append((W, S, c))
    for a, b in zip(*res, strict=True):
        np.testing.assert_array_equal(a, b)
    assert res[0][2].sum() > 0  # some steps clipped


@settings(max_examples=20, deadline=None)
@given(
    k=st.integers(1, 60),
    d=st.integers(1, 7),
    D=st.integers(1, 3),
    R=st.integers(1, 4),
    seed=st.integers(0, 2**16),
)
def test_stream_kernel_draws_the_reference_buffer_in_place(k, d, D, R, seed):
    """The kernel's in-place draws are ``rng.standard_normal((k, D, 1, d, R))``, in C order.

    Independent computation: the chunk run as numpy's reference loop does it (one buffer
    drawn first, then the steps, operation by operation as ``kernel="numpy"`` does), on
    the same rows; the iterates agree to round-off (the kernel adds the inner products in
    another order), the clipped counts exactly, and the generator ends in the same state.
    """
    from dpreg.estimators.dp_ssgd_kernel import stream_chunk

    g = np.random.default_rng(seed)
    X = g.standard_normal((D, k, d))
    base, z = g.standard_normal((D, k)), g.standard_normal((D, k))
    sig, scale = g.random(R), g.random(R)
    eta_clip, clip = 0.05 * g.random(R), 0.2 + g.random(R)
    norms = np.sqrt(np.einsum("kcd,kcd->kc", X, X))
    W, S, c = np.zeros((D, 1, d, R)), np.zeros((D, 1, d, R)), np.zeros((D, R))
    rng = np.random.default_rng(seed + 1)
    stream_chunk(
        X, base, z, sig, norms, rng, W, S, c, noise_scale=scale, eta_clip=eta_clip,
        clip=clip, first_step=0, tail_start=k // 2 + 1,
    )  # fmt: skip
    ref = np.random.default_rng(seed + 1)
    G = ref.standard_normal((k, D, 1, d, R)) * scale
    Wr, Sr, cr = np.zeros((D, 1, d, R)), np.zeros((D, 1, d, R)), np.zeros((D, R))
    Y = base[:, :, None] + z[:, :, None] * sig
    for j in range(k):
        r = np.matmul(X[:, j, None, None, :], Wr)[:, 0, 0] - Y[:, j]
        cr += np.abs(r) * norms[:, j, None] > clip
        r *= eta_clip / np.maximum(np.abs(r) * norms[:, j, None], clip)
        Wr -= X[:, j, None, :, None] * r[:, None, None, :]
        Wr -= G[j]
        if j + 1 >= k // 2 + 1:
            Sr += Wr
    np.testing.assert_allclose(W, Wr, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(S, Sr, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(c, cr)
    assert rng.bit_generator.state == ref.bit_generator.state


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, 40),
    d=st.integers(1, 9),
    trials=st.integers(1, 11),
    seed=st.integers(0, 2**32 - 1),
    clip=st.sampled_from([0.05, 1.0, np.inf]),
)
def test_blocked_path_kernel_equals_the_rowwise_bit_for_bit(n, d, trials, seed, clip):
    """Four trials of a step side by side (issue 18): every sum in the row-wise order."""
    rng = np.random.default_rng(seed)
    X, y = rng.normal(size=(n, d)), rng.normal(size=n)
    perm = np.argsort(rng.random((trials, n)), axis=1).astype(np.int64)
    G = rng.standard_normal((n, trials, d))
    out = {}
    for variant in ("rowwise", "blocked"):
        W, S, c = np.zeros((trials, d)), np.zeros((trials, d)), np.zeros(trials)
        path_chunk(
            X, y, perm, G, W, S, c, noise_scale=0.1, start=0, stop=n, eta=0.4, clip=clip,
            tail_start=n // 2 + 1, variant=variant,
        )  # fmt: skip
        out[variant] = (W, S, c)
    for a, b in zip(out["rowwise"], out["blocked"], strict=True):
        np.testing.assert_array_equal(a, b)


def test_path_chunk_rejects_an_unknown_variant():
    W, S, c = np.zeros((1, 2)), np.zeros((1, 2)), np.zeros(1)
    X, y, perm = np.ones((1, 2)), np.ones(1), np.zeros((1, 1), dtype=np.int64)
    with pytest.raises(ValueError, match="variant"):
        path_chunk(
            X, y, perm, np.zeros((1, 1, 2)), W, S, c, noise_scale=1.0, start=0, stop=1,
            eta=0.5, clip=1.0, tail_start=1, variant="fast",
        )  # fmt: skip
