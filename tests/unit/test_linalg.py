"""One rule for singular systems across AdaSSP, linear mixing / Sheffet and IHM (issue 14)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpreg.estimators import adassp, ihm, sketch
from dpreg.estimators._linalg import (
    COMPILED_MIN_BATCH,
    solve_symmetric_batch,
    solve_symmetric_shared,
    symmetric_from_upper,
)
from dpreg.privacy.budgets import ApproxDP


def _batch(seed: int, d: int, rank: int, trials: int = 3) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    F = rng.normal(size=(trials, d, rank))
    return F @ np.swapaxes(F, 1, 2), rng.normal(size=(trials, d))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), d=st.integers(1, 6), deficit=st.integers(0, 3))
def test_regular_systems_are_solved_and_singular_ones_get_the_minimum_norm_solution(
    seed, d, deficit
):
    rank = max(d - deficit, 0)
    A, b = _batch(seed, d, rank)
    theta, singular, eig = solve_symmetric_batch(A, b, method="reference")
    assert np.all(np.diff(eig, axis=1) >= -1e-12)
    fast, fast_singular, _ = solve_symmetric_batch(A, b, method="fast")
    np.testing.assert_array_equal(fast_singular, singular)
    np.testing.assert_allclose(fast, theta, rtol=1e-6, atol=1e-8)
    for t in range(A.shape[0]):
        if singular[t]:
            np.testing.assert_allclose(theta[t], np.linalg.pinv(A[t]) @ b[t], atol=1e-8)
        else:
            np.testing.assert_allclose(A[t] @ theta[t], b[t], rtol=1e-6, atol=1e-8)
    if rank < d:
        assert singular.all()


def test_the_three_estimators_flag_the_same_systems():
    A, b = np.concatenate([_batch(1, 4, 4)[0], _batch(2, 4, 2)[0]]), _batch(3, 4, 4, trials=6)[1]
    _, flags, _ = solve_symmetric_batch(A, b)
    assert flags.tolist() == [False] * 3 + [True] * 3
    _, adassp_flags, _ = adassp._solve_batch(A, b)
    M = np.concatenate([np.concatenate([A, b[..., None]], axis=2), np.zeros((6, 1, 5))], axis=1)
    _, sketch_flags = sketch._solve_from_gram(M)
    _, ihm_count = ihm._solve(A, b)
    assert adassp_flags.tolist() == flags.tolist() == sketch_flags.tolist()
    assert ihm_count == int(flags.sum())


# ------------------------------------------------------- the Cholesky certificate (issue 18)


def _spectrum_batch(seed: int, d: int, trials: int) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric systems of every kind: condition numbers 1 to 1e18 (across the rule's
    cut-off d * eps), negative and zero eigenvalues, huge and tiny scales."""
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.normal(size=(trials, d, d)))
    log_cond = rng.uniform(0.0, 18.0, size=trials)
    lam = np.exp(-np.log(10.0) * log_cond[:, None] * rng.uniform(0, 1, size=(trials, d)))
    lam[:, 0] = 1.0
    lam[:, -1] = 10.0**-log_cond
    kind = rng.integers(0, 8, size=trials)
    lam[kind == 1, -1] = 0.0  # exactly rank deficient
    lam[kind == 2, -1] *= -1.0  # indefinite
    lam[kind == 3] *= -1.0  # negative definite
    lam *= (10.0 ** rng.uniform(-60, 60, size=trials))[:, None]  # scale-free rule
    A = (Q * lam[:, None, :]) @ np.swapaxes(Q, 1, 2)
    A = 0.5 * (A + np.swapaxes(A, 1, 2))
    b = rng.normal(size=(trials, d)) * (10.0 ** rng.uniform(-5, 5, size=trials))[:, None]
    return A, b


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 100_000), d=st.integers(1, 30))
def test_fast_path_takes_the_reference_branch_and_agrees_to_round_off(seed, d):
    A, b = _spectrum_batch(seed, d, trials=40)
    theta_ref, singular_ref, eig_ref = solve_symmetric_batch(A, b, method="reference")
    theta, singular, eig = solve_symmetric_batch(A, b, method="fast")
    np.testing.assert_array_equal(singular, singular_ref)  # identical branch decisions
    decided = np.isnan(eig).all(axis=1)
    # the reference path's eigenvalues are returned unchanged where it ran
    np.testing.assert_array_equal(eig[~decided], eig_ref[~decided])
    # certified systems: positive definite, condition number below 1 / (1024 d eps)
    eps = np.finfo(np.float64).eps
    assert np.all(eig_ref[decided, 0] > 0)
    assert np.all(eig_ref[decided, 0] > 1024 * d * eps * eig_ref[decided, -1] * 0.5)
    # solutions: equal to round-off (kappa * eps relative) where regular, identical where not
    finite = np.isfinite(theta_ref).all(axis=1)
    regular = ~singular_ref & finite
    cond = np.abs(eig_ref[regular]).max(axis=1) / np.abs(eig_ref[regular]).min(axis=1)
    err = np.linalg.norm(theta[regular] - theta_ref[regular], axis=1)
    scale = np.linalg.norm(theta_ref[regular], axis=1)
    assert np.all(err <= 50 * d * cond * eps * scale)
    np.testing.assert_array_equal(theta[singular_ref], theta_ref[singular_ref])
    # strided views (the sketch estimators pass blocks of [X, y]'s Gram) are read in place
    M = np.zeros((A.shape[0], d + 1, d + 1))
    M[:, :d, :d], M[:, :d, d] = A, b
    theta_view, singular_view, _ = solve_symmetric_batch(M[:, :d, :d], M[:, :d, d], method="fast")
    np.testing.assert_array_equal(theta_view, theta)
    np.testing.assert_array_equal(singular_view, singular)


def test_well_conditioned_systems_are_decided_by_the_certificate():
    A, b = _batch(5, 8, 8, trials=50)
    theta, singular, eig = solve_symmetric_batch(A + np.eye(8), b, method="fast")
    assert not singular.any() and np.isnan(eig).all()  # no eigenvalue problem solved
    np.testing.assert_allclose(
        theta, np.linalg.solve(A + np.eye(8), b[..., None])[..., 0], rtol=1e-12, atol=1e-14
    )
    _, _, eig = solve_symmetric_batch(A + np.eye(8), b, method="reference")
    assert np.isfinite(eig).all()


def test_systems_near_the_cut_off_go_through_the_reference():
    d, eps = 5, np.finfo(np.float64).eps
    ratios = [1e-4, 1e-10, 1e-12, 1e3 * d * eps, 2 * d * eps, d * eps, 0.5 * d * eps, 0.0]
    A = np.stack([np.diag([1.0, 1.0, 1.0, 1.0, r]) for r in ratios])
    b = np.ones((len(ratios), d))
    theta, singular, eig = solve_symmetric_batch(A, b, method="fast")
    assert singular.tolist() == [False] * 5 + [True] * 3
    # certified: the two best conditioned (1e-12 is below 2 * 1024 d eps, the certificate's
    # cut-off with its factor 2); the rest needed eigvalsh
    assert np.isnan(eig[:, 0]).tolist() == [True, True] + [False] * 6
    np.testing.assert_allclose(theta[:5, 4], 1 / np.array(ratios[:5]), rtol=1e-12)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 100_000), d=st.integers(1, 12))
def test_a_diagonal_shift_is_the_shifted_system(seed, d):
    A, b = _spectrum_batch(seed, d, trials=30)
    scale = np.abs(A).max(axis=(1, 2))
    shift = scale * np.random.default_rng(seed).choice([0.0, 1e-14, 1e-3, 1.0, -1.0], size=30)
    shifted = A + shift[:, None, None] * np.eye(d)
    theta_ref, singular_ref, eig_ref = solve_symmetric_batch(shifted, b, method="reference")
    for method in ("fast", "reference"):
        theta, singular, eig = solve_symmetric_batch(A, b, shift=shift, method=method)
        np.testing.assert_array_equal(singular, singular_ref)
        ran = ~np.isnan(eig).all(axis=1)
        np.testing.assert_array_equal(eig[ran], eig_ref[ran])
        np.testing.assert_array_equal(theta[singular], theta_ref[singular])
        regular = ~singular
        cond = np.abs(eig_ref[regular]).max(axis=1) / np.abs(eig_ref[regular]).min(axis=1)
        err = np.linalg.norm(theta[regular] - theta_ref[regular], axis=1)
        eps = np.finfo(np.float64).eps
        assert np.all(err <= 50 * d * cond * eps * np.linalg.norm(theta_ref[regular], axis=1))


def test_a_loose_comparison_bound_falls_back_to_the_inverse():
    # L = tril(ones): M(L)^{-1} e grows like 2^d, yet L^{-1} is bidiagonal (1, -1) and
    # A = L L' has condition number ~ 1e3, so the second bound certifies it
    d = 40
    L = np.tril(np.ones((d, d)))
    A = (L @ L.T)[None]
    b = np.ones((1, d))
    theta, singular, eig = solve_symmetric_batch(A, b, method="fast")
    assert not singular[0] and np.isnan(eig).all()
    np.testing.assert_allclose(theta[0], np.linalg.solve(A[0], b[0]), rtol=1e-10)


def test_unknown_method_and_bad_shift_are_refused():
    with pytest.raises(ValueError, match="method"):
        solve_symmetric_batch(np.eye(2)[None], np.ones((1, 2)), method="cholesky")
    with pytest.raises(ValueError, match="shift"):
        solve_symmetric_batch(np.eye(2)[None], np.ones((1, 2)), shift=np.ones(2))


def test_empty_batch():
    theta, singular, eig = solve_symmetric_batch(np.empty((0, 3, 3)), np.empty((0, 3)))
    assert theta.shape == (0, 3) and singular.shape == (0,) and eig.shape == (0, 3)


def test_adassp_counts_indefinite_systems_exactly():
    # statistics whose regularised noisy Gram is indefinite in about half of the trials:
    # an eigenvalue -R of X'X, R the ridge AdaSSP then adds (not a real Gram matrix:
    # adassp_release takes the statistics as given)
    budget = ApproxDP(1.0, 1e-6)
    opts = adassp.check_adassp_options(budget, None, "analytic", "paper", None)
    kw = {"budget": budget, "trials": 400, "bound_X": 1.0, "bound_y": 1.0, **opts}
    xty = np.ones(3)
    probe = adassp.adassp_release(np.eye(3), xty, None, rng=np.random.default_rng(0), **kw)
    xtx = np.diag([1e6, 1e6, -probe.diagnostics["ridge_scale"]])
    fit = adassp.adassp_release(xtx, xty, None, rng=np.random.default_rng(1), **kw)
    D = fit.diagnostics
    A = D["xtx_noisy"] + D["ridge"][:, None, None] * np.eye(3)
    expected = int(np.sum(np.linalg.eigvalsh(A)[:, 0] <= 0))
    assert 50 < expected < 350  # both kinds of system occur
    assert D["n_indefinite"] == expected


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), d=st.integers(1, 30), trials=st.integers(0, 5))
def test_symmetric_from_upper_is_identical_to_the_numpy_reference(seed, d, trials):
    rng = np.random.default_rng(seed)
    base = rng.normal(size=(d, d)) * 10.0 ** rng.uniform(-5, 5)
    base = base + base.T
    upper = rng.normal(size=(trials, d * (d + 1) // 2))
    scale = 10.0 ** rng.uniform(-3, 3)
    fast = symmetric_from_upper(base, scale, upper, method="fast")
    np.testing.assert_array_equal(
        fast, symmetric_from_upper(base, scale, upper, method="reference")
    )
    np.testing.assert_array_equal(fast, np.swapaxes(fast, 1, 2))
    rows, cols = np.triu_indices(d)
    np.testing.assert_array_equal(fast[:, rows, cols], base[rows, cols] + scale * upper)


def test_auto_compiles_large_batches_only():
    for trials, compiled in ((COMPILED_MIN_BATCH - 1, False), (COMPILED_MIN_BATCH, True)):
        A, b = _batch(7, 4, 4, trials=trials)
        theta, _, eig = solve_symmetric_batch(A + np.eye(4), b)
        assert np.isnan(eig).all() == compiled and np.isfinite(eig).all() != compiled


@pytest.mark.parametrize("name", ["adassp", "ihm", "linear_mixing", "sheffet_sketch"])
def test_estimators_equal_their_reference_path(name, monkeypatch):
    # The compiled paths (certified solves, Bartlett products, AdaSSP's mirrored noise)
    # against the reference paths forced by an unreachable batch threshold: the same
    # draws, the same singular-system decisions, estimates equal to round-off.
    from dpreg.estimators import _linalg, get_estimator, gram_sketch

    rng = np.random.default_rng(4)
    X = rng.uniform(-1, 1, size=(3000, 12)) / np.sqrt(12)
    X[:, 11] = X[:, 10] + 1e-6 * X[:, 0]  # nearly collinear, as the Elevators design
    y = np.clip(X @ np.linspace(-1, 1, 12) + 0.1 * rng.normal(size=3000), -1, 1)
    kw = {"budget": ApproxDP(1.0, 1e-6), "trials": 80, "bound_X": 1.0, "bound_y": 1.0}
    fast = get_estimator(name)(X, y, rng=np.random.default_rng(5), **kw)
    monkeypatch.setattr(_linalg, "COMPILED_MIN_BATCH", 10**9)
    monkeypatch.setattr(gram_sketch, "COMPILED_MIN_BATCH", 10**9)
    ref = get_estimator(name)(X, y, rng=np.random.default_rng(5), **kw)
    scale = np.abs(ref.theta).max()
    np.testing.assert_allclose(fast.theta, ref.theta, rtol=0, atol=1e-12 * scale)
    assert fast.budget_spent == ref.budget_spent
    assert fast.diagnostics["n_robust_solves"] == ref.diagnostics["n_robust_solves"]
    for key in ("xtx_noisy", "ridge", "eta2", "lambda_min_noisy"):
        if key in ref.diagnostics:
            np.testing.assert_array_equal(fast.diagnostics[key], ref.diagnostics[key])


@pytest.mark.parametrize("d", [1, 3, 4, 5, 8, 9, 26, 40])
def test_interleaved_cholesky_has_the_bits_of_the_row_by_row_loop(d):
    """Four rows in flight in the compiled factorisation change no bit of any result."""
    from dpreg.estimators._linalg import _kernel

    rng = np.random.default_rng(d)
    m = 200
    B = rng.normal(size=(m, d + 4, d))
    A = np.swapaxes(B, 1, 2) @ B
    A[::9] -= 2.0 * np.eye(d)  # some indefinite systems: not certified by either loop
    b = rng.normal(size=(m, d))
    shift = rng.uniform(0.0, 2.0, size=m)
    out = []
    for interleave in (True, False):
        theta, certified = np.full((m, 1, d), np.nan), np.zeros((m, 1), dtype=bool)
        _kernel()(A, shift, b[:, None], theta, certified, 1024.0, interleave)
        out.append((theta, certified))
    assert out[0][1].any()
    np.testing.assert_array_equal(out[0][1], out[1][1])
    np.testing.assert_array_equal(out[0][0][out[0][1]], out[1][0][out[1][1]])


def _shared_batch(seed: int, m: int, R: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    """Systems of every kind the rule meets: regular, indefinite, singular, overflowing."""
    rng = np.random.default_rng(seed)
    F = rng.normal(size=(m, d, d + 2))
    A = F @ np.swapaxes(F, 1, 2)
    kind = rng.integers(0, 5, size=m)
    A[kind == 1] -= 3.0 * d * np.eye(d)  # indefinite: the factor fails
    low = F[kind == 2, :, : d - 1]  # rank d - 1: singular, pseudo-inverse
    A[kind == 2] = low @ np.swapaxes(low, 1, 2)
    A[kind == 3] *= 1e300  # overflowing substitutions for some right-hand sides
    b = rng.normal(size=(m, R, d))
    b[kind == 3] *= 1e300
    return A, b


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    m=st.integers(1, 6),
    R=st.integers(1, 40),
    d=st.integers(1, 12),
    method=st.sampled_from(["auto", "fast", "reference"]),
    rest=st.sampled_from(["per_matrix", "stacked"]),
)
def test_shared_matrix_solve_has_the_bits_of_the_repeated_systems(seed, m, R, d, method, rest):
    """One factor per matrix: bit for bit the per-system solve of the repeated matrices,
    with the uncertified right-hand sides sent to the reference either way."""
    import dpreg.estimators._linalg as linalg

    A, b = _shared_batch(seed, m, R, d)
    linalg._SHARED_REST = rest
    try:
        with np.errstate(all="ignore"):
            got = solve_symmetric_shared(A, b, method=method)
            repeated = np.broadcast_to(A[:, None], (m, R, d, d)).reshape(-1, d, d)
            want = solve_symmetric_batch(repeated, b.reshape(-1, d), method=method)
    finally:
        linalg._SHARED_REST = "per_matrix"
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g.reshape(w.shape), w)


@pytest.mark.parametrize("d", [1, 3, 10])
def test_shared_solve_of_a_clamped_plug_in_pseudo_inverts_once(monkeypatch, d):
    """The bootstrap's singular plug-in Gram (eigenvalues clamped at 0) at 500 right-hand
    sides: per matrix, the stacked reference's bits, with one pinv call per matrix."""
    import dpreg.estimators._linalg as linalg

    rng = np.random.default_rng(d)
    V = np.linalg.qr(rng.normal(size=(3, d, d)))[0]
    w = np.maximum(rng.normal(size=(3, d)), 0.0)
    w[:, 0] = 0.0
    A = (V * w[:, None, :]) @ np.swapaxes(V, 1, 2)
    A[1] = np.eye(d) + 0.1  # certified: never reaches the reference
    b = rng.normal(size=(3, 500, d))
    calls = []
    pinv = np.linalg.pinv
    monkeypatch.setattr(np.linalg, "pinv", lambda *a, **k: calls.append(1) or pinv(*a, **k))
    got = solve_symmetric_shared(A, b)
    assert len(calls) == 2 and got[1][0].all() and not got[1][1].any()
    monkeypatch.setattr(linalg, "_SHARED_REST", "stacked")
    want = solve_symmetric_shared(A, b)
    for g, w_ in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w_)


def test_shared_matrix_solve_at_the_bootstrap_size_uses_the_certificate():
    """m R >= COMPILED_MIN_BATCH under "auto": certified, so no eigenvalues computed."""
    A, b = _shared_batch(3, 2, 500, 10)
    A[:] = np.eye(10) + 0.1  # well conditioned
    theta, singular, eig = solve_symmetric_shared(A, b)
    assert not singular.any() and np.isnan(eig).all()
    np.testing.assert_allclose(theta[1, 7], np.linalg.solve(A[1], b[1, 7]), rtol=1e-12)


def test_shared_matrix_solve_refuses_bad_shapes_and_methods():
    with pytest.raises(ValueError, match="method"):
        solve_symmetric_shared(np.eye(2)[None], np.ones((1, 3, 2)), method="lu")
    with pytest.raises(ValueError, match="b shape"):
        solve_symmetric_shared(np.eye(2)[None], np.ones((1, 2)))
    with pytest.raises(ValueError, match="b shape"):
        solve_symmetric_shared(np.eye(2)[None], np.ones((1, 3, 3)))


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    d=st.integers(1, 12),
    kind=st.sampled_from(["regular", "indefinite", "singular", "overflow", "nan", "tiny"]),
    method=st.sampled_from(["auto", "reference"]),
    shifted=st.booleans(),
)
def test_one_system_lean_reference_has_the_batch_codes_bits(seed, d, kind, method, shifted):
    """A batch of one system (the estimators' per-trial fits) through the lean regular
    branch: theta, singular and eigenvalues bit for bit the batch code's, for every kind
    of system the rule meets (the singular and non-finite ones fall back to it)."""
    import dpreg.estimators._linalg as linalg

    rng = np.random.default_rng(seed)
    F = rng.normal(size=(1, d, d + 2))
    A = F @ np.swapaxes(F, 1, 2)
    b = rng.normal(size=(1, d))
    if kind == "indefinite":
        A -= 3.0 * d * np.eye(d)
    elif kind == "singular":
        low = F[:, :, : d - 1]
        A = low @ np.swapaxes(low, 1, 2)
    elif kind == "overflow":
        A *= 1e-300
        b *= 1e300
    elif kind == "nan":
        b[0, 0] = np.nan
    elif kind == "tiny":
        A *= 1e-310  # subnormal entries
    shift = rng.uniform(0.0, 1.0, size=1) if shifted else None
    out = {}
    try:
        for mode in ("lean", "stacked"):
            linalg._ONE_SYSTEM = mode
            with np.errstate(all="ignore"):
                out[mode] = solve_symmetric_batch(A, b, shift=shift, method=method)
    finally:
        linalg._ONE_SYSTEM = "lean"
    for g, w in zip(out["lean"], out["stacked"], strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)
