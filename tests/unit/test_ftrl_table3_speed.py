"""Fast paths of Table 3 (issue 18) against their references: equal bit for bit or to round-off."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpreg.estimators.ftrl_correlations import independent, nu_ftrl, optimal_cc
from dpreg.estimators.ftrl_factorizations import (
    _factor_gram,
    _least_squares_decoder,
    tree_aggregation,
)
from dpreg.estimators.ftrl_workloads import momentum_cooldown_workload
from dpreg.privacy.correlated import multi_participation_sensitivity_sq
from dpreg.theory.ftrl_table3 import (
    _workload_error,
    toeplitz_workload_error,
    toeplitz_workload_error_from_sums,
    toeplitz_workload_error_reference,
    tuned_nu,
    workload_diagonal_sums,
    workload_spectrum,
)


@settings(max_examples=25, deadline=None)
@given(
    T=st.integers(2, 60),
    nu=st.floats(1e-4, 0.9),
    momentum=st.floats(0.0, 0.99),
    cooldown=st.floats(0.0, 1.0),
)
def test_shared_spectrum_workload_error_is_fftconvolve_bit_for_bit(T, nu, momentum, cooldown):
    A = momentum_cooldown_workload(T, momentum, cooldown, 0.05)
    corr = nu_ftrl(nu)
    ref = toeplitz_workload_error_reference(corr, A)
    assert toeplitz_workload_error(corr, A) == ref
    assert toeplitz_workload_error(corr, A, spectrum=workload_spectrum(A)) == ref


def test_tuned_nu_is_the_argmin_of_the_reference_errors():
    T, k, b = 40, 4, 10
    A = momentum_cooldown_workload(T)
    grid = np.geomspace(1e-3, 0.5, 12)
    errors = [
        multi_participation_sensitivity_sq(nu_ftrl(v).encoder(T), k, b, schema="fixed_epoch")
        * toeplitz_workload_error_reference(nu_ftrl(v), A)
        for v in grid
    ]
    got = tuned_nu(T, grid, participations=k, separation=b, schema="fixed_epoch", workload=A)
    assert got == grid[int(np.argmin(errors))]


def _dense_error(corr, A):
    """||A B||_F^2 with the dense lower-triangular Toeplitz decoder B (independent path)."""
    T = A.shape[1]
    beta = corr.coefficients(T)
    lag = np.subtract.outer(np.arange(T), np.arange(T))
    B = np.where(lag >= 0, beta[np.clip(lag, 0, None)], 0.0)
    return float(np.sum((A @ B) ** 2))


@settings(max_examples=30, deadline=None)
@given(
    T=st.integers(1, 60),
    nu=st.floats(1e-4, 0.9),
    momentum=st.floats(0.0, 0.99),
    cooldown=st.floats(0.0, 1.0),
    seed=st.integers(0, 2**31 - 1),
)
def test_diagonal_sums_error_equals_the_fft_and_dense_paths_to_round_off(
    T, nu, momentum, cooldown, seed
):
    rng = np.random.default_rng(seed)
    for A in (momentum_cooldown_workload(T, momentum, cooldown, 0.05), rng.normal(size=(T, T))):
        sums = workload_diagonal_sums(A)
        for corr in (nu_ftrl(nu), optimal_cc(), independent()):
            beta = corr.coefficients(T)
            # round-off of either path is amplified by |beta|' K |beta| / beta' K beta
            scale = float(np.abs(beta) @ np.abs(sums) @ np.abs(beta))
            fast = toeplitz_workload_error_from_sums(corr, sums)
            assert fast == pytest.approx(toeplitz_workload_error(corr, A), abs=1e-13 * scale)
            assert fast == pytest.approx(_dense_error(corr, A), abs=1e-13 * scale)
            assert _workload_error(corr, T, A) == fast  # sums computed inside: same value


def test_diagonal_sums_are_the_tail_sums_of_the_gram_diagonals():
    rng = np.random.default_rng(3)
    A = rng.normal(size=(9, 7))
    W = A.T @ A
    K = workload_diagonal_sums(A)
    for a in range(7):
        for b in range(7):
            tail = [W[a + t, b + t] for t in range(7 - max(a, b))]
            assert K[a, b] == pytest.approx(sum(tail), rel=1e-14)
    with pytest.raises(ValueError, match="sums must be a square"):
        toeplitz_workload_error_from_sums(nu_ftrl(0.1), K[:, :3])


def test_tuned_nu_at_paper_scale_keeps_its_grid_point():
    # the quadratic form and the FFTs of every row choose the same nu (T = 2000, App. G.1)
    T = 2000
    A = momentum_cooldown_workload(T)
    grid = np.geomspace(1e-4, 0.5, 60)[::6]
    spectrum = workload_spectrum(A)
    errors = [
        nu_ftrl(v).sensitivity_sq(T) * toeplitz_workload_error(nu_ftrl(v), A, spectrum=spectrum)
        for v in grid
    ]
    assert tuned_nu(T, grid, workload=A) == grid[int(np.argmin(errors))]


def test_a_spectrum_of_another_workload_is_refused():
    with pytest.raises(ValueError, match="spectrum"):
        toeplitz_workload_error(nu_ftrl(0.1), np.eye(5), spectrum=workload_spectrum(np.eye(6)))


@pytest.mark.parametrize("T", [1, 5, 64, 150])
def test_factor_gram_equals_the_permutation_product_path_bit_for_bit(T):
    rng = np.random.default_rng(T)
    G = rng.normal(size=(T, T))
    X = G.T @ G + T * np.eye(T)
    f = _factor_gram(X, "x")
    J = np.eye(T)[::-1]
    L = np.linalg.cholesky(J @ (0.5 * (X + X.T) + 1e-12 * np.eye(T)) @ J)
    C = (J @ L @ J).T  # the former path
    assert np.array_equal(f.encoder, C) and np.array_equal(f.decoder, np.linalg.inv(C))
    assert f.encoder.flags.f_contiguous == C.flags.f_contiguous  # same reduction order
    assert f.sensitivity_sq == float(np.max(np.sum(C**2, axis=0)))


@pytest.mark.parametrize("T", [1, 2, 7, 33, 128])
def test_full_honaker_decoder_by_cholesky_equals_pinv_to_round_off(T):
    f = tree_aggregation(T, full_honaker=True)
    ref = _least_squares_decoder(f.encoder, method="pinv")
    scale = np.max(np.abs(ref))
    assert np.max(np.abs(f.decoder - ref)) <= 1e-12 * scale
    assert f.prefix_error == pytest.approx(float(np.sum(np.cumsum(ref, axis=0) ** 2)), rel=1e-12)
    with pytest.raises(ValueError, match="method"):
        _least_squares_decoder(f.encoder, method="qr")


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 12),
    seed=st.integers(0, 2**32 - 1),
    log_scale=st.floats(-10.0, -3.0),
    special=st.sampled_from([None, np.nan, np.inf, -np.inf]),
)
def test_identity_check_is_allclose(n, seed, log_scale, special):
    from dpreg.estimators._ftrl_checks import is_identity as _is_identity

    rng = np.random.default_rng(seed)
    P = np.eye(n) + 10.0**log_scale * rng.uniform(-3.0, 3.0, (n, n))
    if special is not None and rng.random() < 0.5:
        P[rng.integers(n), rng.integers(n)] = special
    expected = np.allclose(P, np.eye(n), atol=1e-8)
    assert _is_identity(P.copy(), atol=1e-8) == expected


def test_a_decoder_that_is_not_the_inverse_is_refused():
    from dpreg.estimators.ftrl_factorizations import MatrixFactorization

    C = np.tril(np.ones((5, 5)))
    B = np.linalg.inv(C)
    MatrixFactorization("ok", C, B, anytime=True)
    B[3, 1] += 2e-8
    with pytest.raises(ValueError, match="decoder @ encoder must be the identity"):
        MatrixFactorization("bad", C, B, anytime=True)


def test_me_objective_by_triangular_solve_and_rank_check():
    from dpreg.estimators.ftrl_factorizations import prefix_matrix
    from dpreg.estimators.ftrl_me import solve_me

    T = 40
    for A in (None, momentum_cooldown_workload(T)):
        sol = solve_me(T, workload=A, tol=1e-7)
        workload = prefix_matrix(T) if A is None else A
        W = workload.T @ workload
        direct = float(np.trace(W @ np.linalg.inv(sol.gram)))
        assert sol.objective == pytest.approx(direct, rel=1e-11)
    A = momentum_cooldown_workload(T)
    A[:, 3] = A[:, 2]  # rank deficient
    with pytest.raises(ValueError, match="workload must have full column rank"):
        solve_me(T, workload=A)
