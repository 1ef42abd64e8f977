"""Banded factorizations for min_sep participation (an upper bound on ME at large T)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpreg.estimators.ftrl_banded import (
    _band_of_gradient,
    _band_of_gram_product,
    _band_of_product,
    _band_of_product_reference,
    _banded_lower_inverse,
    _lower_inverse,
    _prefix_rows,
    banded_sensitivity_sq,
    max_separated_participations,
    solve_banded_me,
)
from dpreg.estimators.ftrl_factorizations import (
    optimal_multi_participation_factorization,
    prefix_matrix,
)
from dpreg.estimators.ftrl_me import solve_me
from dpreg.privacy.correlated import multi_participation_sensitivity_sq
from dpreg.theory.ftrl_table3 import BANDED_VARIANT, table3


def _random_banded(rng, T, p):
    C = np.tril(rng.standard_normal((T, T)))
    lag = np.subtract.outer(np.arange(T), np.arange(T))
    C[lag >= p] = 0.0
    return C


@settings(max_examples=30, deadline=None)
@given(
    T=st.integers(2, 12),
    k=st.integers(1, 4),
    b=st.integers(1, 5),
    p=st.integers(1, 5),
    seed=st.integers(0, 2**32 - 1),
)
def test_sensitivity_equals_the_brute_force(T, k, b, p, seed):
    # any signs: the brute force maximises over unit gradient directions exactly
    p = min(p, b)
    C = _random_banded(np.random.default_rng(seed), T, p)
    exact = multi_participation_sensitivity_sq(C, k, b, schema="min_sep")
    assert banded_sensitivity_sq(C, k, b) == pytest.approx(exact, rel=1e-9, abs=1e-12)


def test_sensitivity_refuses_more_bands_than_the_separation():
    C = _random_banded(np.random.default_rng(0), 8, 3)
    with pytest.raises(ValueError, match="bands"):
        banded_sensitivity_sq(C, 2, 2)
    with pytest.raises(ValueError, match="lower triangular"):
        banded_sensitivity_sq(C.T, 2, 4)
    with pytest.raises(ValueError, match="encoder"):
        banded_sensitivity_sq(np.ones(4), 2, 2)


@pytest.mark.parametrize(("T", "k", "b"), [(12, 3, 4), (16, 2, 8)])
def test_banded_optimum_bounds_the_sdp_from_above(T, k, b):
    sol = solve_banded_me(T, k, b)
    f = sol.factorization()
    # independent sensitivity: brute force over all min_sep patterns, any signs
    sens = multi_participation_sensitivity_sq(f.encoder, k, b, schema="min_sep")
    assert sens == pytest.approx(sol.sensitivity_sq, rel=1e-9)
    assert sol.sensitivity_sq == pytest.approx(max_separated_participations(T, k, b))
    # independent objective: ||A C^-1||_F^2 with a generic solve
    A = prefix_matrix(T)
    assert sol.objective == pytest.approx(np.sum((A @ np.linalg.inv(sol.encoder)) ** 2), rel=1e-9)
    # banded structure, unit columns
    lag = np.subtract.outer(np.arange(T), np.arange(T))
    assert np.all(sol.encoder[(lag < 0) | (lag >= sol.bands)] == 0)
    np.testing.assert_allclose(np.sum(sol.encoder**2, axis=0), 1.0, rtol=1e-12)
    exact = optimal_multi_participation_factorization(T, k, b, schema="min_sep")
    exact_error = exact.prefix_error * multi_participation_sensitivity_sq(
        exact.encoder, k, b, schema="min_sep"
    )
    # a feasible point: never below the exact optimum (SDP accuracy 1e-6), and not far
    assert sol.total_error >= exact_error * (1 - 1e-6)
    assert sol.total_error <= 1.1 * exact_error
    # the Toeplitz restriction (also the warm start) is never better than the general solve
    toe = solve_banded_me(T, k, b, toeplitz=True)
    assert toe.total_error >= sol.total_error * (1 - 1e-9)
    assert sol.warm_start_error == pytest.approx(toe.total_error, rel=1e-6)
    assert toe.sensitivity_sq == pytest.approx(
        multi_participation_sensitivity_sq(toe.encoder, k, b, schema="min_sep"), rel=1e-9
    )


def test_fixed_epoch_dual_bound_is_a_lower_bound_on_min_sep():
    # fixed-epoch patterns are min_sep patterns: the certified dual bound of the
    # fixed-epoch ME bounds every min_sep-feasible factorization from below
    T, k, b = 24, 3, 8
    lower = solve_me(T, k, b, tol=1e-8).dual_bound
    sol = solve_banded_me(T, k, b)
    assert lower <= sol.total_error


def test_optimisation_improves_on_the_start():
    T, k, b = 20, 2, 5
    start = solve_banded_me(T, k, b, toeplitz=True, max_iter=1)
    better = solve_banded_me(T, k, b, toeplitz=True)
    assert better.total_error < start.total_error
    assert better.iterations > 1


def test_any_workload():
    rng = np.random.default_rng(3)
    T, k, b = 10, 2, 5
    A = rng.standard_normal((T, T)) + 3 * np.eye(T)
    sol = solve_banded_me(T, k, b, workload=A)
    assert sol.objective == pytest.approx(np.sum((A @ np.linalg.inv(sol.encoder)) ** 2))
    with pytest.raises(ValueError, match="toeplitz"):
        solve_banded_me(T, k, b, workload=A, toeplitz=True)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"bands": 6}, "bands"),
        ({"bands": 0}, "bands"),
        ({"max_iter": 0}, "max_iter"),
        ({"tol": 0.0}, "tol"),
        ({"workload": np.eye(3)}, "workload"),
    ],
)
def test_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        solve_banded_me(10, 2, 5, **kwargs)


def test_table3_banded_row():
    t = table3(12, participations=3, separation=4, schema="min_sep", me_solver="banded")
    t = t.set_index("variant")
    assert BANDED_VARIANT in t.index and "Multi-Epoch (ME)" not in t.index
    row = t.loc[BANDED_VARIANT]
    assert row["sensitivity_sq"] == pytest.approx(3.0)
    assert row["me_solver"] == "banded" and row["me_bands"] == 4
    # the exact SDP row (me_solver='sdp') is below the banded upper bound
    sdp = table3(12, participations=3, separation=4, schema="min_sep", me_solver="sdp")
    exact = sdp.set_index("variant").loc["Multi-Epoch (ME)", "total_error"]
    assert exact <= row["total_error"] * (1 + 1e-6)
    with pytest.raises(ValueError, match="min_sep"):
        table3(12, participations=3, separation=4, schema="fixed_epoch", me_solver="banded")
    with pytest.raises(ValueError, match="me_bands"):
        table3(12, me_bands=2)


def test_table3_banded_skips_brute_force_rows_at_large_T():
    t = table3(
        80, nu=0.05, participations=2, separation=40, schema="min_sep", me_solver="banded"
    ).set_index("variant")
    for v in ("Honaker/TreeAgg", "FFT", "Full Honaker"):
        assert not bool(t.loc[v, "built"]) and np.isnan(t.loc[v, "total_error"])
    assert bool(t.loc[BANDED_VARIANT, "built"])
    assert t.loc[BANDED_VARIANT, "sensitivity_sq"] == pytest.approx(2.0)


def test_kind_and_claims_with_the_banded_row():
    from dpreg.experiments.claims import check_claims
    from dpreg.experiments.kinds import get_kind

    kind = get_kind("ftrl_theory_table")
    cell = {
        "table": "table3",
        "T": 12,
        "nu": 0.05,
        "participations": 3,
        "separation": 4,
        "schema": "min_sep",
        "me_solver": "banded",
    }
    kind.validate_cell(cell)
    t = kind.summarise(kind.run(cell, trials=1, first_trial=0, seed=7, data=None), [])
    claims = check_claims("choquettechoo2023", {"t": t})["claims"]
    banded = claims[claims["claim"].str.startswith("banded ME")]
    assert list(banded["passed"]) == ["yes"]
    with pytest.raises(ValueError, match="me_bands"):
        kind.validate_cell({**cell, "me_bands": 5})
    with pytest.raises(ValueError, match="min_sep"):
        kind.validate_cell({**cell, "schema": "fixed_epoch"})


def test_banded_claim_fails_on_a_synthetic_table():
    from dpreg.experiments.claims import check_claims

    t = table3(8, nu=0.05, participations=2, separation=4, schema="min_sep", me_solver="banded")
    t.insert(0, "table", "table3")  # as the kind writes it
    bad = t.copy()
    # a banded row worse than DP-SGD: the claim must say so
    sgd = float(bad.loc[bad["variant"] == "DP-SGD", "total_error"].iloc[0])
    bad.loc[bad["variant"] == BANDED_VARIANT, "total_error"] = 2 * sgd
    out = check_claims("choquettechoo2023", {"t": bad})["claims"]
    assert list(out[out["claim"].str.startswith("banded ME")]["passed"]) == ["NO"]
    out = check_claims("choquettechoo2023", {"t": t})["claims"]
    assert list(out[out["claim"].str.startswith("banded ME")]["passed"]) == ["yes"]


@settings(max_examples=30, deadline=None)
@given(
    T=st.integers(1, 40),
    p=st.integers(1, 12),
    block=st.integers(1, 16),
    seed=st.integers(0, 2**32 - 1),
)
def test_blocked_band_of_product_equals_the_per_lag_loop(T, p, block, seed):
    rng = np.random.default_rng(seed)
    p = min(p, T)
    M = rng.standard_normal((T, T))
    B = np.tril(rng.standard_normal((T, T)))
    fast = _band_of_product(M, B, p, block=block)
    np.testing.assert_allclose(fast, _band_of_product_reference(M, B, p), rtol=1e-12, atol=1e-12)
    # and the definition: entry [j, l] is (M B^T)[j + l, j], zero past the last row
    full = M @ B.T
    for j in range(T):
        for lag in range(p):
            expected = full[j + lag, j] if j + lag < T else 0.0
            assert fast[j, lag] == pytest.approx(expected, rel=1e-12, abs=1e-12)


@settings(max_examples=30, deadline=None)
@given(
    T=st.integers(1, 40),
    p=st.integers(1, 12),
    block=st.integers(1, 16),
    seed=st.integers(0, 2**32 - 1),
)
def test_band_of_gram_product_equals_the_band_of_the_gram(T, p, block, seed):
    """The triangular path equals the band of (G^T G) B^T to round-off."""
    rng = np.random.default_rng(seed)
    p = min(p, T)
    G = np.tril(rng.standard_normal((T, T)))
    B = np.tril(rng.standard_normal((T, T)))
    fast = _band_of_gram_product(G, B, p, block=block)
    ref = _band_of_product(G.T @ G, B, p)
    scale = np.abs(G).max() ** 2 * np.abs(B).max() * T
    np.testing.assert_allclose(fast, ref, rtol=0, atol=1e-13 * scale)
    np.testing.assert_allclose(fast, _band_of_product_reference(G.T @ G, B, p), atol=1e-13 * scale)


@settings(max_examples=40, deadline=None)
@given(
    T=st.integers(1, 50),
    p=st.integers(1, 12),
    block=st.integers(1, 16),
    seed=st.integers(0, 2**32 - 1),
)
def test_band_of_gradient_by_banded_solves_equals_the_product_path(T, p, block, seed):
    rng = np.random.default_rng(seed)
    p = min(p, T)
    C = _random_banded(rng, T, p) + 3.0 * np.eye(T)
    B = _lower_inverse(C)
    G = np.tril(rng.standard_normal((T, T)))
    fast = _band_of_gradient(G, C, p, block=block)
    ref = _band_of_gram_product(G, B, p)
    np.testing.assert_allclose(fast, ref, rtol=0, atol=1e-12 * max(np.abs(ref).max(), 1.0))


@settings(max_examples=40, deadline=None)
@given(
    T=st.integers(1, 50),
    p=st.integers(1, 12),
    block=st.integers(1, 16),
    seed=st.integers(0, 2**32 - 1),
)
def test_banded_inverse_equals_trtri(T, p, block, seed):
    rng = np.random.default_rng(seed)
    p = min(p, T)
    C = _random_banded(rng, T, p) + 2.0 * np.eye(T)
    B = _banded_lower_inverse(C, p, block=block)
    ref = _lower_inverse(C)
    np.testing.assert_allclose(B, ref, rtol=0, atol=1e-12 * np.abs(ref).max())
    assert np.all(np.triu(B, 1) == 0.0)


@settings(max_examples=40, deadline=None)
@given(
    rows=st.integers(0, 40),
    cols=st.integers(0, 40),
    seed=st.integers(0, 2**32 - 1),
    fortran=st.booleans(),
)
def test_prefix_rows_is_cumsum_bit_for_bit(rows, cols, seed, fortran):
    rng = np.random.default_rng(seed)
    B = rng.normal(size=(rows, cols)) * np.exp(rng.normal(size=(rows, cols)) * 5)
    B = np.asfortranarray(B) if fortran else B
    assert np.array_equal(_prefix_rows(B), np.cumsum(B, axis=0))
    if rows:  # a lower-triangular inverse, as the solver's (exact zeros above)
        L = _lower_inverse(np.tril(rng.normal(size=(rows, rows))) + 3 * rows * np.eye(rows))
        assert np.array_equal(_prefix_rows(L), np.cumsum(L, axis=0))


def test_banded_inverse_refuses_a_singular_encoder():
    C = np.tril(np.ones((5, 5)))
    C[2, 2] = 0.0
    with pytest.raises(np.linalg.LinAlgError, match="singular encoder"):
        _banded_lower_inverse(C, 5)


def test_solver_takes_the_triangular_path_for_lower_workloads(monkeypatch):
    import dpreg.estimators.ftrl_banded as banded

    calls = []
    original = banded._band_of_gradient

    def spy(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(banded, "_band_of_gradient", spy)
    T, k, b = 24, 2, 8
    rng = np.random.default_rng(2)
    sol = solve_banded_me(T, k, b, max_iter=5)  # prefix sum
    assert calls
    calls.clear()
    solve_banded_me(T, k, b, workload=rng.standard_normal((T, T)), max_iter=5)  # dense A
    assert calls == []

    # the path does not change the iterates beyond round-off
    def reference(G, C, p, work=None):  # the former path: trtri and the product G^T G
        return banded._band_of_product(G.T @ G, banded._lower_inverse(C), p)

    monkeypatch.setattr(banded, "_band_of_gradient", reference)
    monkeypatch.setattr(
        banded, "_banded_lower_inverse", lambda C, p, out=None: banded._lower_inverse(C)
    )
    ref = solve_banded_me(T, k, b, max_iter=5)
    assert sol.objective == pytest.approx(ref.objective, rel=1e-10)


@pytest.mark.parametrize("workload", ["prefix", "random"])
def test_gradient_of_the_band_entries(workload):
    # the solver's gradient -2 (B^T W B B^T)[band], with M = G^T G (G = A B), against a
    # central finite difference of ||A C^-1||_F^2 in each band entry
    rng = np.random.default_rng(5)
    T, p = 9, 3
    A = prefix_matrix(T) if workload == "prefix" else rng.standard_normal((T, T))
    C = _random_banded(rng, T, p) + 4 * np.eye(T)
    B = _lower_inverse(C)
    np.testing.assert_allclose(B, np.linalg.inv(C), rtol=1e-12, atol=1e-12)
    G = A @ B
    grad = -2.0 * _band_of_product(G.T @ G, B, p)
    h = 1e-6
    for j in range(T):
        for lag in range(min(p, T - j)):
            E = np.zeros((T, T))
            E[j + lag, j] = h
            up = np.sum((A @ np.linalg.inv(C + E)) ** 2)
            down = np.sum((A @ np.linalg.inv(C - E)) ** 2)
            assert grad[j, lag] == pytest.approx((up - down) / (2 * h), rel=1e-5, abs=1e-6)


def test_singular_encoder_is_refused():
    with pytest.raises(np.linalg.LinAlgError, match="singular"):
        _lower_inverse(np.tril(np.ones((3, 3))) - np.eye(3))
