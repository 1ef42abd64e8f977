"""Four trials in SIMD lanes: the same bits as the one-trial kernels (issue 18).

:mod:`dpreg.estimators._lanes_jit` runs the Bartlett products and the certified Cholesky
solves of linear mixing and the Sheffet sketch (Lev et al. 2026, Algorithms 4 and 5) four
trials per vector instruction; every entry must be the same IEEE operations in the same
order as in the one-trial kernels kept as references, so the comparisons here are of
bytes, not tolerances.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("numba")

from dpreg.estimators import _linalg, gram_sketch, sketch  # noqa: E402
from dpreg.estimators._linalg import _certified_solve, solve_symmetric_batch  # noqa: E402
from dpreg.privacy.budgets import ApproxDP  # noqa: E402


def _bartlett_inputs(seed: int, p: int, trials: int, rank: int, log_eta: float):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(p + 3, p)) * (rng.uniform(size=p) < 0.8)
    A[:, min(rank, p) :] = 0.0
    f = gram_sketch.gram_factor(A)
    var = (10.0 ** (log_eta + rng.uniform(-1, 1, size=trials))) ** 2
    var[rng.uniform(size=trials) < 0.2] = 0.0  # epsilon = inf: no mixing noise
    diagonal = np.sqrt(rng.chisquare(rng.integers(p, 6 * p + 2) - np.arange(p), (trials, p)))
    below = rng.standard_normal((trials, p * (p - 1) // 2))
    return f.eigenvectors, f.eigenvalues, var, diagonal, below


@settings(max_examples=80, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    p=st.integers(1, 41),
    trials=st.integers(1, 13),
    rank=st.integers(0, 41),
    log_eta=st.floats(-8.0, 2.0),
)
def test_bartlett_lanes_have_the_bits_of_the_one_trial_kernel(seed, p, trials, rank, log_eta):
    """Every p mod 4, every trial count mod 4 (padding lanes), singular Grams, eta = 0."""
    from dpreg.estimators._lanes_jit import bartlett_lanes

    inputs = _bartlett_inputs(seed, p, trials, rank, log_eta)
    outs = []
    for kernel in (bartlett_lanes, gram_sketch._bartlett_kernel()):
        out = np.full((trials, p, p), np.nan)
        kernel(*inputs, out)
        outs.append(out.tobytes())
    assert outs[0] == outs[1]


def _mixed_batch(seed: int, d: int, m: int):
    """Systems of every kind the certificate meets, in random order.

    0: well conditioned; 1: indefinite (factorisation fails); 2: L L' with L = tril(ones)
    (comparison bound loose, the Frobenius bound certifies it: deferred, then certified);
    3: condition number about 1e14 (certified by neither); 4: a NaN entry; 5: a right-hand
    side that makes the solution infinite (certified factor, uncertified solve).
    """
    rng = np.random.default_rng(seed)
    kinds = rng.integers(0, 6, size=m)
    B = rng.normal(size=(m, d + 4, d))
    A = np.swapaxes(B, 1, 2) @ B
    b = rng.normal(size=(m, d))
    T = np.tril(np.ones((d, d)))
    for t in range(m):
        if kinds[t] == 1:
            A[t] -= 3.0 * np.abs(A[t]).sum(axis=1).max() * np.eye(d)
        elif kinds[t] == 2:
            A[t] = T @ T.T
        elif kinds[t] == 3:
            Q, _ = np.linalg.qr(rng.normal(size=(d, d)))
            A[t] = (Q * np.logspace(0, -14, d)) @ Q.T
        elif kinds[t] == 4:
            i, j = rng.integers(0, d, size=2)
            A[t, max(i, j), min(i, j)] = np.nan
        elif kinds[t] == 5:
            b[t, rng.integers(0, d)] = np.inf
    shift = rng.uniform(0.0, 2.0, size=m) * (rng.uniform(size=m) < 0.5)
    return A, b, shift, kinds


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), d=st.integers(1, 26), m=st.integers(1, 23))
def test_certified_lanes_have_the_bits_of_the_one_trial_kernel(seed, d, m):
    """Mixed batches: deferred lanes go through the one-trial kernel, the others match it."""
    A, b, shift, _ = _mixed_batch(seed, d, m)
    theta, certified = _certified_solve(A, shift, b, lanes=True)
    ref_theta, ref_certified = _certified_solve(A, shift, b, lanes=False)
    np.testing.assert_array_equal(certified, ref_certified)
    assert theta[certified].tobytes() == ref_theta[ref_certified].tobytes()


def test_a_mixed_batch_defers_exactly_the_undecided_lanes():
    """Each kind of system is met, and only failed or loose-bound lanes are deferred."""
    from dpreg.estimators._lanes_jit import certified_lanes

    d, m = 20, 41
    A, b, shift, kinds = _mixed_batch(7, d, m)
    assert set(kinds.tolist()) == set(range(6))
    theta, certified = np.empty((m, d)), np.zeros(m, dtype=bool)
    deferred = np.zeros(m, dtype=bool)
    certified_lanes(A, shift, b, theta, certified, deferred, 1024.0)
    unshifted = shift == 0  # a shift makes kinds 2 and 3 well conditioned
    np.testing.assert_array_equal(deferred[kinds == 0], False)
    np.testing.assert_array_equal(deferred[(kinds == 1) | (kinds == 4)], True)
    np.testing.assert_array_equal(deferred[((kinds == 2) | (kinds == 3)) & unshifted], True)
    kept = ~deferred
    np.testing.assert_array_equal(certified[kept], np.isfinite(b[kept]).all(axis=1))
    ref_theta, ref_certified = _certified_solve(A, shift, b, lanes=False)
    assert ref_certified[(kinds == 2) & unshifted].all()  # the Frobenius bound
    assert not ref_certified[(kinds == 1) | ((kinds == 3) & unshifted) | (kinds == 4)].any()
    assert theta[certified].tobytes() == ref_theta[ref_certified & kept].tobytes()


@pytest.mark.parametrize("m", [1, 3, 4, 5, 64, 67])
def test_the_solve_reads_strided_views_and_matches_the_reference(m, monkeypatch):
    """solve_symmetric_batch on the sketch's views M[:, :d, :d], M[:, :d, d]: all outputs."""
    d = 9
    A, b, shift, _ = _mixed_batch(m, d, m)
    M = np.zeros((m, d + 1, d + 1))
    M[:, :d, :d] = np.where(np.isfinite(A), A, 0.0)  # eigvalsh refuses NaN
    M[:, :d, d] = np.where(np.isfinite(b), b, 1.0)
    got = solve_symmetric_batch(M[:, :d, :d], M[:, :d, d], method="fast")
    monkeypatch.setattr(
        _linalg, "_certified_solve", functools.partial(_certified_solve, lanes=False)
    )
    ref = solve_symmetric_batch(M[:, :d, :d], M[:, :d, d], method="fast")
    for x, y in zip(got, ref, strict=True):
        assert x.tobytes() == y.tobytes()


def _reference_kernels(monkeypatch) -> None:
    """Route the estimators through the one-trial kernels."""
    import dpreg.estimators._lanes_jit as lanes

    monkeypatch.setattr(lanes, "bartlett_lanes", lambda *a: gram_sketch._bartlett_kernel()(*a))
    monkeypatch.setattr(
        _linalg, "_certified_solve", functools.partial(_certified_solve, lanes=False)
    )


def _fits_equal(a, b) -> None:
    assert a.theta.tobytes() == b.theta.tobytes()
    assert a.budget_spent == b.budget_spent
    assert a.diagnostics.keys() == b.diagnostics.keys()
    for key, value in a.diagnostics.items():
        x, y = np.asarray(value), np.asarray(b.diagnostics[key])
        assert x.dtype == y.dtype and x.shape == y.shape, key
        if x.dtype == object:
            assert x.tolist() == y.tolist(), key
        else:
            assert x.tobytes() == y.tobytes(), key


def _data(seed: int, n: int, d: int):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1).max()
    y = np.clip(X @ rng.normal(size=d) + 0.1 * rng.normal(size=n), -1.0, 1.0)
    return X, y


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    d=st.integers(1, 12),
    trials=st.integers(1, 13),
    epsilon=st.sampled_from([0.1, 1.0, np.inf]),
    variant=st.sampled_from(["alg4", "alg5", "code", "rdp", "seed"]),
)
def test_estimators_give_the_same_bytes_with_lanes(seed, d, trials, epsilon, variant):
    """Linear mixing (Algorithms 4 and 5, faithful="code") and the Sheffet sketch (both
    calibrations): coefficients, budget and every diagnostic, lanes against references
    (compiled kernels forced from one trial on)."""
    X, y = _data(seed, 60 * d + 50, d)
    budget = ApproxDP(epsilon, 1e-5)
    if variant in ("rdp", "seed"):
        fit = functools.partial(sketch.fit_sheffet_sketch, calibration=variant)
    else:
        fit = functools.partial(
            sketch.fit_linear_mixing,
            dynamic_k=variant == "alg5",
            faithful="code" if variant == "code" else "best",
        )
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_linalg, "COMPILED_MIN_BATCH", 1)
        mp.setattr(gram_sketch, "COMPILED_MIN_BATCH", 1)
        got = fit(X, y, budget=budget, rng=np.random.default_rng(seed), trials=trials)
        _reference_kernels(mp)
        ref = fit(X, y, budget=budget, rng=np.random.default_rng(seed), trials=trials)
    _fits_equal(got, ref)


def test_a_benchmark_sized_batch_gives_the_same_bytes(monkeypatch):
    """The default ``"auto"`` path at 67 trials (16 groups and three padding lanes)."""
    X, y = _data(3, 2000, 20)
    budget = ApproxDP(1.0, 1.0 / 2000**2)
    got = [
        sketch.fit_linear_mixing(X, y, budget=budget, rng=np.random.default_rng(1), trials=67),
        sketch.fit_sheffet_sketch(X, y, budget=budget, rng=np.random.default_rng(1), trials=67),
    ]
    _reference_kernels(monkeypatch)
    ref = [
        sketch.fit_linear_mixing(X, y, budget=budget, rng=np.random.default_rng(1), trials=67),
        sketch.fit_sheffet_sketch(X, y, budget=budget, rng=np.random.default_rng(1), trials=67),
    ]
    for a, b in zip(got, ref, strict=True):
        _fits_equal(a, b)
