"""Table 3 factorizations: tree aggregation, Full Honaker, optimal (ME, one participation)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpreg.estimators.ftrl_correlations import independent, nu_ftrl, optimal_cc
from dpreg.estimators.ftrl_factorizations import (
    MatrixFactorization,
    causal_equivalent,
    fft_factorization,
    optimal_factorization,
    prefix_matrix,
    toeplitz_factorization,
    tree_aggregation,
)
from dpreg.theory.ftrl_table3 import table3


@pytest.mark.parametrize("T", [1, 5, 8, 13])
def test_tree_aggregation_is_unbiased_online_and_log_sensitive(T):
    tree = tree_aggregation(T)
    np.testing.assert_allclose(tree.decoder @ tree.encoder, np.eye(T), atol=1e-12)
    assert tree.sensitivity_sq == math.floor(math.log2(T)) + 1
    # online: prefix sum t uses only nodes that end at or before t
    prefix = prefix_matrix(T) @ tree.decoder
    ends = np.array([np.flatnonzero(row).max() for row in tree.encoder])
    for t in range(T):
        used = np.flatnonzero(np.abs(prefix[t]) > 1e-12)
        assert np.all(ends[used] <= t)
        assert used.size <= math.floor(math.log2(t + 1)) + 1
    honaker = tree_aggregation(T, full_honaker=True)
    assert honaker.prefix_error <= tree.prefix_error + 1e-9


def test_sgd_prefix_error_is_frobenius_norm_of_prefix_matrix():
    f = toeplitz_factorization(independent(), 10)
    assert f.total_error == pytest.approx(55.0)  # ||A||_F^2 = T (T + 1) / 2
    g = toeplitz_factorization(nu_ftrl(0.1), 10)
    assert g.sensitivity_sq == pytest.approx(nu_ftrl(0.1).sensitivity_sq(10))


def test_optimal_factorization_beats_every_other_factorization():
    T = 12
    opt = optimal_factorization(T)
    np.testing.assert_allclose(opt.decoder @ opt.encoder, np.eye(T), atol=1e-8)
    assert np.allclose(opt.encoder, np.tril(opt.encoder))  # causal (lower triangular)
    assert opt.sensitivity_sq <= 1 + 1e-6
    others = [toeplitz_factorization(c, T) for c in (independent(), optimal_cc(), nu_ftrl(0.05))]
    others += [tree_aggregation(T), tree_aggregation(T, full_honaker=True)]
    for f in others:
        assert opt.total_error <= f.total_error * (1 + 1e-5)
    # Optimal CC is known to be within a few percent of the optimum (Fichtenberger 2023)
    assert others[1].total_error / opt.total_error < 1.2


def test_table3_rows_and_validation():
    t = table3(8)
    assert list(t["variant"])[0] == "DP-SGD" and len(t) == 7
    assert t["relative_to_optimal"].min() == pytest.approx(1.0)
    with pytest.raises(ValueError, match="identity"):
        MatrixFactorization("bad", np.eye(3), 2 * np.eye(3), anytime=True)
    with pytest.raises(ValueError, match="T"):
        tree_aggregation(0)


# ------------------------------------------------------------------ FFT mechanism (Table 3)


def _dirichlet_mean(T: int, N: int) -> float:
    # |lambda_k| of the circulant with T leading ones: |sin(pi k T / N) / sin(pi k / N)|
    k = np.arange(1, N)
    return (T + np.sum(np.abs(np.sin(np.pi * k * T / N) / np.sin(np.pi * k / N)))) / N


@pytest.mark.parametrize("T,N", [(1, 2), (5, 10), (16, 32), (16, 31), (13, 40)])
def test_fft_factorization_is_valid_with_closed_form_sensitivity(T, N):
    f = fft_factorization(T, n_fft=N)
    m = f.as_matrix()  # validates decoder @ encoder = I
    R_prefix = np.cumsum(m.decoder, axis=0)  # A B: the prefix-sum decoder R[:T, :]
    np.testing.assert_allclose(R_prefix @ m.encoder, prefix_matrix(T), atol=1e-10)
    # wrapped Toeplitz: entry (i, j) depends on (i - j) mod N only
    lag = (np.arange(T)[:, None] - np.arange(N)[None, :]) % N
    np.testing.assert_allclose(R_prefix, f.root_column[lag], atol=1e-14)
    # sensitivity = max column norm of the explicit encoder = Dirichlet-kernel closed form
    col_sq = np.sum(m.encoder**2, axis=0)
    assert m.sensitivity_sq == pytest.approx(_dirichlet_mean(T, N), rel=1e-12)
    assert f.sensitivity_sq == pytest.approx(m.sensitivity_sq, rel=1e-12)
    np.testing.assert_allclose(col_sq, col_sq[0], rtol=1e-12)  # all columns alike
    assert f.prefix_error == pytest.approx(m.prefix_error, rel=1e-12)
    assert f.total_error == pytest.approx(m.total_error, rel=1e-12)


def test_fft_noise_equals_decoder_times_the_same_gaussians():
    f = fft_factorization(20)
    fast = f.noise(np.random.default_rng(3), 4)
    z = np.random.default_rng(3).standard_normal((f.n_fft, 4))
    np.testing.assert_allclose(fast, f.decoder @ z, atol=1e-12)


def test_fft_error_lies_between_optimal_and_sgd():
    for T in (8, 16):
        fft = fft_factorization(T).total_error
        opt = optimal_factorization(T).total_error
        sgd = toeplitz_factorization(independent(), T).total_error
        assert opt < fft < sgd
    # 2T is the best circulant size among 2T-1, 2T, 3T, 4T (half of its eigenvalues vanish)
    errs = {N: fft_factorization(32, n_fft=N).total_error for N in (63, 64, 96, 128)}
    assert min(errs, key=errs.get) == 64
    # gamma^2 = (1/2T)(T + sum_{k odd} 1/sin(pi k / 2T)) grows like (1/pi) log T, as
    # Optimal CC's gamma_T^2 (Table 2)
    g = [fft_factorization(T).sensitivity_sq for T in (2**10, 2**12)]
    assert g[1] - g[0] == pytest.approx(np.log(4) / np.pi, rel=1e-4)


def test_fft_factorization_rejects_bad_input():
    with pytest.raises(ValueError, match="n_fft"):
        fft_factorization(8, n_fft=14)
    with pytest.raises(ValueError, match="T must"):
        fft_factorization(0)


@pytest.mark.parametrize(
    "f", [fft_factorization(12).as_matrix(), tree_aggregation(12, full_honaker=True)]
)
def test_causal_equivalent_has_same_noise_law_and_no_larger_sensitivity(f):
    g = causal_equivalent(f)
    np.testing.assert_allclose(g.decoder, np.tril(g.decoder), atol=1e-14)
    np.testing.assert_allclose(g.decoder @ g.decoder.T, f.decoder @ f.decoder.T, atol=1e-10)
    assert g.prefix_error == pytest.approx(f.prefix_error, rel=1e-10)
    assert g.sensitivity_sq <= f.sensitivity_sq * (1 + 1e-10)
    for schema in ("min_sep", "fixed_epoch"):
        assert g.multi_participation_sensitivity_sq(
            3, 4, schema=schema
        ) <= f.multi_participation_sensitivity_sq(3, 4, schema=schema) * (1 + 1e-7)


def test_table3_fft_row_and_multi_participation_table():
    t = table3(12, nu=0.05).set_index("variant")
    assert t["built"].all()
    assert t.loc["FFT", "total_error"] == pytest.approx(fft_factorization(12).total_error)
    assert t.loc["FFT", "relative_to_optimal"] > 1
    m = table3(12, participations=3, separation=4, schema="fixed_epoch").set_index("variant")
    assert m.loc["DP-SGD", "sensitivity_sq"] == 3.0  # k orthogonal columns
    assert m["relative_to_optimal"].min() == pytest.approx(1.0)
    assert m.loc["Multi-Epoch (ME)", "relative_to_optimal"] == 1.0
    with pytest.raises(ValueError, match="separation"):
        table3(12, participations=2)


# ------------------------------------------------------------------ restarts ("×S")


@settings(max_examples=30, deadline=None)
@given(T=st.integers(2, 40), L=st.integers(1, 40), fft=st.booleans())
def test_stamped_factorization_is_block_diagonal_and_unbiased(T, L, fft):
    from dpreg.estimators.ftrl_factorizations import stamped_factorization

    L = min(L, T)
    base = fft_factorization(L).as_matrix() if fft else tree_aggregation(L)
    f = stamped_factorization(base, T)
    S = -(-T // L)
    assert f.T == T and f.name.endswith(f"×{S}")
    np.testing.assert_allclose(f.decoder @ f.encoder, np.eye(T), atol=1e-9)
    # steps of different restarts share no encoder row and no decoder column
    for s in range(S):
        block = slice(s * L, min(T, (s + 1) * L))
        outside = np.ones(T, bool)
        outside[block] = False
        rows = np.any(f.encoder[:, block] != 0, axis=1)
        assert not np.any(f.encoder[np.ix_(rows, outside)])
        cols = min(L, T - s * L)
        # each restart's columns are the base encoder's first columns
        np.testing.assert_allclose(
            np.sort(np.linalg.norm(f.encoder[:, block], axis=0)),
            np.sort(np.linalg.norm(base.encoder[:, :cols], axis=0)),
        )
    # one participation: the base's sensitivity over the columns used
    assert f.sensitivity_sq == pytest.approx(
        float(np.max(np.sum(base.encoder[:, : min(L, T)] ** 2, axis=0)))
    )


def test_tune_restarts_picks_the_smallest_error_over_s():
    from dpreg.estimators.ftrl_factorizations import stamped_factorization, tune_restarts

    T, k, b = 60, 3, 20
    f, S = tune_restarts(tree_aggregation, T, k, b, max_restarts=8)
    scores = {}
    for s in range(1, 9):
        g = stamped_factorization(tree_aggregation(-(-T // s)), T)
        scores[s] = (
            g.multi_participation_sensitivity_sq(k, b, schema="fixed_epoch") * g.prefix_error
        )
    assert scores[S] == pytest.approx(min(scores.values()))
    got = f.multi_participation_sensitivity_sq(k, b, schema="fixed_epoch") * f.prefix_error
    assert got == pytest.approx(scores[S])
    # S = 1 is the unstamped mechanism
    one = stamped_factorization(tree_aggregation(T), T)
    np.testing.assert_array_equal(one.encoder, tree_aggregation(T).encoder)
    with pytest.raises(ValueError, match="restart period"):
        stamped_factorization(tree_aggregation(10), 5)
