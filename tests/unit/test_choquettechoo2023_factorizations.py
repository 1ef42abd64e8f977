"""Table 3 factorizations: tree aggregation, Full Honaker, optimal (ME, one participation)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpreg.estimators.ftrl_correlations import independent, nu_ftrl, optimal_cc
from dpreg.estimators.ftrl_factorizations import (
    MatrixFactorization,
    optimal_factorization,
    prefix_matrix,
    table3,
    toeplitz_factorization,
    tree_aggregation,
)


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
    assert np.isnan(t.set_index("variant").loc["FFT", "total_error"])
    assert t["relative_to_optimal"].min() == pytest.approx(1.0)
    with pytest.raises(ValueError, match="identity"):
        MatrixFactorization("bad", np.eye(3), 2 * np.eye(3), anytime=True)
    with pytest.raises(ValueError, match="T"):
        tree_aggregation(0)
