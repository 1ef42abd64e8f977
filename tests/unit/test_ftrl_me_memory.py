"""The L-BFGS memory of the fixed-epoch ME dual changes the iterates, not the certified answer."""

from __future__ import annotations

import numpy as np
import pytest

import dpreg.estimators.ftrl_me_dual as me_dual
from dpreg.estimators.ftrl_me import solve_me
from dpreg.estimators.ftrl_workloads import momentum_cooldown_workload


@pytest.mark.parametrize("workload", ["prefix", "momentum"])
def test_block_dual_memory_keeps_the_certified_optimum(monkeypatch, workload):
    T, k, b, tol = 60, 3, 20, 1e-6
    A = None if workload == "prefix" else momentum_cooldown_workload(T)
    solutions = {}
    for memory in (10, me_dual.BLOCK_LBFGS_MEMORY):
        monkeypatch.setattr(me_dual, "BLOCK_LBFGS_MEMORY", memory)
        sol = solve_me(T, k, b, workload=A, tol=tol, max_iter=2000)  # certificate checked
        assert sol.relative_gap <= tol
        solutions[memory] = sol
    short, long = solutions[10], solutions[me_dual.BLOCK_LBFGS_MEMORY]
    if workload == "momentum":  # the memory is used: other iterates (240 -> 79 evaluations)
        assert long.iterations < short.iterations
    # both objectives lie within their certified gaps above the larger dual bound
    lower = max(short.dual_bound, long.dual_bound)
    for sol in (short, long):
        assert lower <= sol.objective * (1 + 1e-12)
        assert sol.objective - lower <= tol * sol.objective


@pytest.mark.parametrize("workload", ["prefix", "momentum"])
def test_block_dual_start_keeps_the_certified_optimum(workload):
    """Both starts of the block dual are certified and agree within their gaps."""
    T, k, b, tol = 60, 3, 20, 1e-6
    A = None if workload == "prefix" else momentum_cooldown_workload(T)
    sols = {
        start: solve_me(T, k, b, workload=A, tol=tol, max_iter=2000, block_start=start)
        for start in me_dual.BLOCK_STARTS
    }
    lower = max(s.dual_bound for s in sols.values())
    for sol in sols.values():
        assert sol.relative_gap <= tol
        assert lower <= sol.objective * (1 + 1e-12)
        assert sol.objective - lower <= tol * sol.objective
    # the start is used: another first point after H = I, hence other iterates
    assert sols["scaled"].objective != sols["uniform"].objective


def test_block_start_is_validated():
    with pytest.raises(ValueError, match="block_start"):
        solve_me(8, 2, 4, block_start="identity")
    with pytest.raises(ValueError, match="start"):
        me_dual.solve_block_dual(np.eye(4), 2, 2, 1e-6, 10, start="zero")


@pytest.mark.parametrize("n, p, seed", [(1, 1, 0), (3, 4, 1), (6, 5, 2), (10, 3, 3)])
def test_block_primal_equals_the_product_path(n, p, seed):
    """tr(M J S^-1 J^T) by S^-1 and block products equals sum Q^2 sigma_j^2 / sigma_k."""
    rng = np.random.default_rng(seed)
    T = n * p
    X = rng.standard_normal((T, T))
    M = X @ X.T + 0.1 * np.eye(T)
    ev, V = np.linalg.eigh(M)
    sig = np.sqrt(ev)
    J = rng.standard_normal((n, p, p)) + 2.0 * np.eye(p)
    fast = me_dual._block_primal(M, V, sig, J)
    ref = me_dual._block_primal_reference(V, ev, sig, J)
    assert fast == pytest.approx(ref, rel=1e-10)
    # and the definition, with dense matrices
    Jd = np.zeros((T, T))
    for g in range(n):
        Jd[g * p : (g + 1) * p, g * p : (g + 1) * p] = J[g]
    S_inv = (V / sig) @ V.T
    assert fast == pytest.approx(float(np.trace(M @ Jd @ S_inv @ Jd.T)), rel=1e-10)


def test_block_primal_paths_give_the_same_solve(monkeypatch):
    T, k, b, tol = 60, 3, 20, 1e-6
    fast = solve_me(T, k, b, tol=tol, max_iter=2000, block_start="uniform")

    def reference(M, V, sig, J, work=None):
        return me_dual._block_primal_reference(V, sig * sig, sig, J)

    monkeypatch.setattr(me_dual, "_block_primal", reference)
    ref = solve_me(T, k, b, tol=tol, max_iter=2000, block_start="uniform")
    assert fast.iterations == ref.iterations
    assert fast.objective == pytest.approx(ref.objective, rel=1e-12)
    assert fast.dual_bound == ref.dual_bound
