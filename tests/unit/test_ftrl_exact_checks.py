"""The cheap checks and exact products of explicit factorizations equal their references.

Issue 18, session 24 (docs/scaling.md): the ``BC = I`` check decided from a cheaper
product and a rigorous margin, TreeAgg's prefix error and Gram matrix by exact integer
arithmetic, TreeAgg's decoder without its copies, the banded solver's decoder reused, and
the workload's diagonal sums shared by ``tuned_nu`` and ``table3``: the same decisions and
the same bits as the code they replace.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpreg.estimators._ftrl_checks import (
    _cheap_product,
    certified_identity,
    exact_prefix_rows,
    is_identity,
)
from dpreg.estimators.ftrl_factorizations import (
    _least_squares_decoder,
    prefix_matrix,
    tree_aggregation,
)
from dpreg.privacy._integer_gram import encoder_gram, small_integer_matrix


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def _reference_check(B: np.ndarray, C: np.ndarray) -> bool:
    return is_identity(np.asarray(B, float) @ np.asarray(C, float), atol=1e-8)


@settings(max_examples=80, deadline=None)
@given(
    T=st.one_of(st.integers(1, 70), st.integers(500, 800)),  # sparse tree factors from ~500
    seed=st.integers(0, 2**32 - 1),
    log_scale=st.floats(-14.0, -2.0),
    kind=st.sampled_from(["tree", "honaker", "triangular", "dense", "banded"]),
    special=st.sampled_from([None, np.nan, np.inf]),
)
def test_certified_identity_decides_as_the_dense_product(T, seed, log_scale, kind, special):
    rng = np.random.default_rng(seed)
    if kind in ("tree", "honaker"):
        f = tree_aggregation(T, full_honaker=kind == "honaker")
        B, C = f.decoder.copy(), f.encoder.copy()
    elif kind == "triangular":
        C = np.tril(rng.uniform(-1.0, 1.0, (T, T))) + 2.0 * np.eye(T)
        B = np.linalg.inv(C)
    elif kind == "banded":
        p = int(rng.integers(1, T + 1))
        C = np.tril(rng.uniform(0.1, 1.0, (T, T))) * (
            np.subtract.outer(np.arange(T), np.arange(T)) < p
        )
        C += np.eye(T)
        B = np.linalg.inv(C)
        B = np.tril(B)
    else:
        C = rng.uniform(-1.0, 1.0, (T, T)) + T * np.eye(T)
        B = np.linalg.inv(C)
    # perturb one entry of B around the tolerance (either side), sometimes not at all
    if rng.random() < 0.7:
        i, j = rng.integers(B.shape[0]), rng.integers(B.shape[1])
        B[i, j] += 10.0**log_scale * rng.choice([-1.0, 1.0])
    if special is not None and rng.random() < 0.3:
        B[rng.integers(B.shape[0]), rng.integers(B.shape[1])] = special
    with np.errstate(invalid="ignore", over="ignore"):
        assert certified_identity(B, C, atol=1e-8) == _reference_check(B, C)


def test_certified_identity_falls_back_near_the_tolerance():
    # a deviation of 0.9 atol: not certified by the cheap product, so the dense one decides
    T = 600
    f = tree_aggregation(T)
    B = f.decoder.copy()
    B[3, 5] += 0.9e-8
    assert certified_identity(B, f.encoder, atol=1e-8) is True
    B[3, 5] += 0.2e-8
    assert certified_identity(B, f.encoder, atol=1e-8) is False


@pytest.mark.parametrize("T", [600, 1100])
def test_sparse_product_of_tree_factors_is_exact(T):
    f = tree_aggregation(T)  # about log2(T) / (2 T) non-zeros: below 1% from T ~ 500
    assert _same_bits(_cheap_product(f.decoder, f.encoder), f.decoder @ f.encoder)
    g = tree_aggregation(T, full_honaker=True)  # dense B, sparse C
    P = _cheap_product(g.decoder, g.encoder)
    assert P.flags.c_contiguous
    assert np.allclose(P, g.decoder @ g.encoder, rtol=0, atol=1e-12)


@pytest.mark.parametrize("T", [1, 2, 5, 64, 333])
def test_triangular_products_agree_with_the_dense_product(T):
    rng = np.random.default_rng(T)
    C = np.tril(rng.uniform(0.5, 1.0, (T, T)))
    B = np.linalg.inv(C)
    B = np.tril(B)
    P = _cheap_product(B, C)
    assert np.allclose(P, B @ C, rtol=0, atol=1e-10 * max(1.0, float(np.abs(B).max())))
    assert not np.any(np.triu(P, 1))


@settings(max_examples=60, deadline=None)
@given(
    T=st.integers(1, 60),
    m=st.integers(1, 40),
    seed=st.integers(0, 2**32 - 1),
    top=st.integers(1, 5),
    fortran=st.booleans(),
)
def test_exact_prefix_rows_is_the_product_bit_for_bit(T, m, seed, top, fortran):
    rng = np.random.default_rng(seed)
    B = rng.integers(-top, top + 1, (T, m)).astype(np.float64)
    if fortran:
        B = np.asfortranarray(B)
    G = exact_prefix_rows(B)
    ref = prefix_matrix(T) @ B
    assert G.flags.c_contiguous
    assert np.array_equal(G, ref)
    assert float(np.sum(G**2)) == float(np.sum(ref**2))
    assert exact_prefix_rows(B + 0.5) is None
    assert exact_prefix_rows(B.astype(np.float32)) is None


@pytest.mark.parametrize("T", [1, 3, 16, 100, 257, 1000])
def test_tree_prefix_errors_and_grams_are_bit_for_bit(T):
    from scipy.linalg import cho_factor, cho_solve

    f = tree_aggregation(T)
    C = f.encoder
    assert f.prefix_error == float(np.sum((prefix_matrix(T) @ f.decoder) ** 2))
    assert _same_bits(encoder_gram(C), C.T @ C)
    # the decoder's first differences, as np.diff(vstack([0, prefix])) made them
    prefix = np.cumsum(f.decoder, axis=0)
    ref_B = np.diff(np.vstack([np.zeros((1, C.shape[0])), prefix]), axis=0)
    assert _same_bits(f.decoder, ref_B)
    # Full Honaker: the Cholesky decoder from the exact Gram, bit for bit
    g = tree_aggregation(T, full_honaker=True)
    assert _same_bits(g.decoder, cho_solve(cho_factor(C.T @ C, lower=True), C.T))
    assert _same_bits(_least_squares_decoder(C), g.decoder)
    assert g.prefix_error == float(np.sum((prefix_matrix(T) @ g.decoder) ** 2))


@settings(max_examples=60, deadline=None)
@given(
    m=st.integers(1, 80),
    T=st.integers(1, 60),
    seed=st.integers(0, 2**32 - 1),
    density=st.floats(0.0, 0.05),
    top=st.integers(1, 3),
)
def test_encoder_gram_is_the_dense_gram_bit_for_bit(m, T, seed, density, top):
    rng = np.random.default_rng(seed)
    C = rng.integers(-top, top + 1, (m, T)).astype(np.float64) * (rng.random((m, T)) < density)
    assert _same_bits(encoder_gram(C), C.T @ C)
    D = C + rng.uniform(0, 1e-3, (m, T)) * (C != 0)
    assert _same_bits(encoder_gram(D), D.T @ D)  # not integer: the dense product itself


def test_small_integer_matrix():
    assert small_integer_matrix(np.zeros((2, 2)), 10)
    assert not small_integer_matrix(np.array([[2.0**50]]), 8)
    assert not small_integer_matrix(np.array([[np.inf]]), 1)
    assert not small_integer_matrix(np.array([[1]]), 1)  # int64, not float64


def test_multi_participation_sensitivity_of_tree_encoders_is_unchanged():
    from dpreg.privacy.correlated import _pattern_values, participation_patterns

    T, k, b = 200, 20, 10
    C = tree_aggregation(T).encoder
    from dpreg.privacy.correlated import multi_participation_sensitivity_sq

    X = C.T @ C
    best = 0.0
    patterns = participation_patterns(T, k, b, schema="fixed_epoch")
    for size in sorted({len(p) for p in patterns}):
        idx = np.array([p for p in patterns if len(p) == size], dtype=np.intp)
        best = max(best, float(np.max(_pattern_values(X[idx[:, :, None], idx[:, None, :]]))))
    assert multi_participation_sensitivity_sq(C, k, b, schema="fixed_epoch") == best


def test_banded_factorization_reuses_the_solvers_decoder():
    from scipy.linalg import solve_triangular

    from dpreg.estimators.ftrl_banded import solve_banded_me

    sol = solve_banded_me(48, 3, 8, bands=4, max_iter=20)
    f = sol.factorization()
    ref = solve_triangular(sol.encoder, np.eye(48), lower=True)
    assert _same_bits(f.decoder, ref)
    assert f.decoder.flags.f_contiguous == ref.flags.f_contiguous  # the layout too
    assert f.decoder is not sol.decoder  # a copy: the solution stays as it was


def test_tuned_nu_with_shared_sums_is_unchanged():
    from dpreg.theory.ftrl_table3 import tuned_nu, workload_diagonal_sums, workload_matrix

    A = workload_matrix("momentum_cooldown", 120)
    sums = workload_diagonal_sums(A)
    assert tuned_nu(120, workload=A) == tuned_nu(120, workload=A, sums=sums)


@settings(max_examples=80, deadline=None)
@given(
    rows=st.integers(1, 50),
    T=st.integers(1, 40),
    m=st.integers(1, 60),
    seed=st.integers(0, 2**32 - 1),
    fortran=st.booleans(),
)
def test_signed_pair_product_is_the_blas_product(rows, T, m, seed, fortran):
    from dpreg.estimators._ftrl_checks import signed_pair_product

    rng = np.random.default_rng(seed)
    A = rng.standard_normal((rows, T)) * 10.0 ** rng.integers(-3, 4, (rows, T))
    A[:, rng.integers(T)] = A[:, rng.integers(T)]  # equal columns: exact cancellations
    B = np.zeros((T, m))
    for j in range(m):
        k = rng.choice(T, size=min(int(rng.integers(0, 3)), T), replace=False)
        B[k, j] = rng.choice([-1.0, 1.0], size=k.size)
    if fortran:
        B = np.asfortranarray(B)
    G = signed_pair_product(A, B)
    ref = A @ B
    assert G.flags.c_contiguous and G.shape == ref.shape
    assert np.array_equal(G, ref)
    assert _same_bits(G**2, ref**2)
    assert float(np.sum(G**2)) == float(np.sum(ref**2))
    if T >= 3:
        B3 = B.copy()
        B3[:3, 0] = 1.0  # three non-zeros in a column
        assert signed_pair_product(A, B3) is None
    B2 = B.copy()
    B2[0, 0] = 0.5
    assert signed_pair_product(A, B2) is None
    A2 = A.copy()
    A2[0, 0] = np.nan
    assert signed_pair_product(A2, B) is None


@pytest.mark.parametrize("T", [7, 64, 300])
def test_tree_error_under_the_momentum_workload_is_bit_for_bit(T):
    from dpreg.estimators._ftrl_checks import signed_pair_product
    from dpreg.theory.ftrl_table3 import _workload_error, workload_matrix

    A = workload_matrix("momentum_cooldown", T)
    f = tree_aggregation(T)
    assert signed_pair_product(A, f.decoder) is not None
    assert _workload_error(f, T, A) == float(np.sum((A @ f.decoder) ** 2))


@pytest.mark.parametrize("T", [1, 2, 7, 100, 513])
def test_fft_decoder_from_its_first_rows_is_bit_for_bit(T):
    from dpreg.estimators.ftrl_factorizations import fft_factorization

    f = fft_factorization(T)
    N = int(f.n_fft)
    lag = (np.arange(N)[:, None] - np.arange(N)[None, :]) % N
    full = f.root_column[lag]  # the N x N circulant, as the decoder built it before
    ref = np.diff(full[:T], axis=0, prepend=0.0)
    assert _same_bits(f.decoder, ref)
    assert f.decoder.flags.c_contiguous == ref.flags.c_contiguous
    assert _same_bits(f._circulant(), full)
