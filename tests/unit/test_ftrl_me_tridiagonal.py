"""The one-participation ME dual on the prefix sum: tridiagonal M^-1 path vs the dense eigh."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.linalg import eigh

import dpreg.estimators.ftrl_me_dual as me_dual
from dpreg.estimators.ftrl_factorizations import prefix_matrix
from dpreg.estimators.ftrl_me import solve_me
from dpreg.estimators.ftrl_me_dual import eigh_from_inverse_factor, solve_single_dual


def _dense(lam, W):
    s = np.sqrt(lam)
    return eigh(s[:, None] * W * s[None, :])


@settings(max_examples=40, deadline=None)
@given(
    T=st.integers(1, 60),
    seed=st.integers(0, 2**32 - 1),
    spread=st.floats(0.0, 4.0),
    prefix=st.booleans(),
)
def test_eigenpairs_equal_the_dense_eigh(T, seed, spread, prefix):
    rng = np.random.default_rng(seed)
    lam = np.exp(spread * rng.standard_normal(T))
    if prefix:
        f, h = np.ones(T), -np.ones(T - 1)
    else:  # a well-conditioned lower-bidiagonal factor (so that inv(F F^T) is accurate)
        f = rng.uniform(1.0, 2.0, T) * rng.choice([-1.0, 1.0], T)
        h = rng.uniform(-0.5, 0.5, T - 1)
    F = np.diag(f) + np.diag(h, -1)
    W = np.linalg.inv(F @ F.T)
    W = 0.5 * (W + W.T)
    if prefix:  # W = A^T A for the prefix-sum workload A
        A = prefix_matrix(T)
        np.testing.assert_allclose(W, A.T @ A, rtol=0, atol=1e-9 * T * T)
        W = A.T @ A
    ev, V = eigh_from_inverse_factor(lam, f, h)
    ev_ref, _ = _dense(lam, W)
    # the dense eigh is accurate to eps ||M|| absolutely; ours agrees within that
    scale = ev_ref.max()
    np.testing.assert_allclose(ev, ev_ref, rtol=0, atol=1e-11 * scale * T)
    np.testing.assert_allclose(V.T @ V, np.eye(T), rtol=0, atol=1e-12 * T)
    s = np.sqrt(lam)
    M = s[:, None] * W * s[None, :]
    # M is rebuilt from eigenvectors of M^-1, exact for M^-1 + E, |E| ~ eps |M^-1|:
    # so to eps cond(M) |M| (Hypothesis found spreads where that exceeds 1e-11 |M| T)
    cond = scale / max(ev_ref.min(), np.finfo(float).tiny)
    tol = max(1e-11 * T, 64 * T * np.finfo(float).eps * cond) * scale
    np.testing.assert_allclose((V * ev) @ V.T, M, rtol=0, atol=tol)


def test_largest_eigenvalues_are_relatively_accurate():
    """The Rayleigh quotient through the factor fixes stevd's absolute error in 1/ev."""
    T = 400
    rng = np.random.default_rng(3)
    lam = np.exp(rng.standard_normal(T))
    A = prefix_matrix(T)
    ev, V = eigh_from_inverse_factor(lam, np.ones(T), -np.ones(T - 1))
    s = np.sqrt(lam)
    M = s[:, None] * (A.T @ A) * s[None, :]
    top = V[:, -5:]
    rayleigh = np.einsum("ij,ij->j", top, M @ top)  # accurate for the largest eigenvalues
    np.testing.assert_allclose(ev[-5:], rayleigh, rtol=1e-13)


@pytest.mark.parametrize("T, tol", [(1, 1e-8), (2, 1e-8), (64, 1e-8), (200, 1e-6)])
def test_solve_single_dual_paths_agree(T, tol):
    A = prefix_matrix(T)
    W = A.T @ A
    factor = (np.ones(T), -np.ones(T - 1))
    dense = solve_single_dual(W, tol, 300)
    fast = solve_single_dual(W, tol, 300, inverse_factor=factor)
    assert dense[3] and fast[3]  # both certified
    assert dense[2] == fast[2]  # same iterations: the iterates agree to round-off
    np.testing.assert_allclose(fast[0], dense[0], rtol=0, atol=1e-9)
    assert fast[1] == pytest.approx(dense[1], rel=1e-11)


def test_solve_me_uses_the_factor_on_the_prefix_sum_only(monkeypatch):
    calls = []
    original = me_dual.eigh_from_inverse_factor

    def spy(*args):
        calls.append(1)
        return original(*args)

    monkeypatch.setattr(me_dual, "eigh_from_inverse_factor", spy)
    T = 48
    sol = solve_me(T, tol=1e-8)
    assert len(calls) == sol.iterations
    W = prefix_matrix(T).T @ prefix_matrix(T)
    gram, dual, its, ok = solve_single_dual(W, 1e-8, 500)  # the dense reference
    assert ok and its == sol.iterations
    assert sol.objective == pytest.approx(float(np.trace(W @ np.linalg.inv(gram))), rel=1e-10)
    assert sol.dual_bound == pytest.approx(dual, rel=1e-11)
    calls.clear()
    solve_me(T, workload=2.0 * prefix_matrix(T), tol=1e-8)  # a workload given: dense
    assert calls == []
