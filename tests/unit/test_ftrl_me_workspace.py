"""The fixed-epoch ME dual's evaluations into kept arrays equal the fresh ones bit for bit.

:class:`dpreg.estimators.ftrl_me_dual._BlockWorkspace` (issue 18, docs/scaling.md).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpreg.estimators.ftrl_me_dual as me_dual
from dpreg.estimators.ftrl_factorizations import prefix_matrix
from dpreg.estimators.ftrl_me import fixed_epoch_groups
from dpreg.estimators.ftrl_workloads import momentum_cooldown_workload


def _grouped_gram(n, p, workload):
    T = n * p
    A = prefix_matrix(T) if workload == "prefix" else momentum_cooldown_workload(T, 0.9, 0.25, 0.1)
    order = np.concatenate(fixed_epoch_groups(T, n, p))
    return (A.T @ A)[np.ix_(order, order)]


def _duals(monkeypatch, Wp, n, p):
    monkeypatch.setattr(me_dual, "_BLOCK_WORKSPACE", True)
    kept = me_dual._BlockDual(Wp, n, p, 1e-15, 1000)
    monkeypatch.setattr(me_dual, "_BLOCK_WORKSPACE", False)
    fresh = me_dual._BlockDual(Wp, n, p, 1e-15, 1000)
    assert (kept.work is not None) == (p > 1) and fresh.work is None
    return kept, fresh


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, 5),
    p=st.integers(1, 24),
    workload=st.sampled_from(["prefix", "momentum"]),
    seed=st.integers(0, 2**32 - 1),
)
def test_block_dual_evaluations_equal_fresh_arrays(n, p, workload, seed):
    with pytest.MonkeyPatch.context() as monkeypatch:
        Wp = _grouped_gram(n, p, workload)
        kept, fresh = _duals(monkeypatch, Wp, n, p)
    rng = np.random.default_rng(seed)
    eye = np.broadcast_to(np.eye(p), (n, p, p)).ravel()
    for step in range(4):  # one workspace across evaluations, as in the solver
        x = np.concatenate([0.3 * rng.standard_normal(n), eye + 0.05 * step * rng.random(eye.size)])
        value, grad = kept(x)
        value_ref, grad_ref = fresh(x)
        assert value == value_ref
        assert np.array_equal(grad, grad_ref)
        assert kept.best_primal == fresh.best_primal and kept.best_dual == fresh.best_dual
        for a, b in zip(kept.best, fresh.best, strict=True):
            assert np.array_equal(a, b)
            assert a.flags.c_contiguous == b.flags.c_contiguous


@pytest.mark.parametrize(("n", "p", "workload"), [(4, 8, "momentum"), (5, 16, "prefix")])
def test_solve_block_dual_with_and_without_the_workspace(monkeypatch, n, p, workload):
    Wp = _grouped_gram(n, p, workload)
    out = []
    for flag in (True, False):  # certified or not within 40 evaluations: the same point
        monkeypatch.setattr(me_dual, "_BLOCK_WORKSPACE", flag)
        out.append(me_dual.solve_block_dual(Wp, n, p, 1e-6, 40, start="uniform"))
    (g1, d1, b1, i1, ok1), (g2, d2, b2, i2, ok2) = out
    assert np.array_equal(g1, g2) and np.array_equal(d1, d2)
    assert (b1, i1, ok1) == (b2, i2, ok2)


@settings(max_examples=20, deadline=None)
@given(n=st.integers(1, 5), p=st.integers(2, 25), seed=st.integers(0, 2**32 - 1))
def test_block_primal_into_used_arrays(n, p, seed):
    from scipy.linalg import eigh

    rng = np.random.default_rng(seed)
    T = n * p
    X = rng.standard_normal((T, T))
    M = X @ X.T + T * np.eye(T)
    ev, V = eigh(M, driver="evd")
    sig = np.sqrt(ev)
    J = np.eye(p)[None] + 0.1 * rng.standard_normal((n, p, p))
    work = me_dual._BlockWorkspace(T)
    for buf in (work.WL, work.X, work.Y):
        buf.fill(np.nan)  # whatever an earlier evaluation left
    assert V.flags.f_contiguous
    assert me_dual._block_primal(M, V, sig, J, work) == me_dual._block_primal(M, V, sig, J)
