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
