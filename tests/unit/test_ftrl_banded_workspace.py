"""The banded ME solver's evaluations into kept arrays equal the fresh ones bit for bit.

:class:`dpreg.estimators.ftrl_banded._Workspace` (issue 18, docs/scaling.md): the same
numbers as fresh arrays at every evaluation, whatever the arrays held before.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpreg.estimators.ftrl_banded as banded
from dpreg.estimators.ftrl_banded import (
    _assemble,
    _band_index,
    _band_of_gradient,
    _banded_lower_inverse,
    _banded_objective,
    _prefix_rows,
    _Workspace,
    solve_banded_me,
)


def _band_entries(rng, T, p):
    """Band entries near an Optimal CC-like start (a well-conditioned encoder)."""
    base = 0.5 ** np.arange(p)
    return (base[None, :] * (1.0 + 0.3 * rng.standard_normal((T, p)))).ravel()


def _workload(kind, rng, T):
    if kind == "prefix":
        return None, True
    if kind == "lower":
        return np.tril(rng.standard_normal((T, T))), True
    return rng.standard_normal((T, T)), False


@settings(max_examples=25, deadline=None)
@given(
    T=st.integers(1, 300),
    p=st.integers(1, 40),
    kind=st.sampled_from(["prefix", "lower", "dense"]),
    seed=st.integers(0, 2**32 - 1),
)
def test_objective_into_a_workspace_equals_fresh_arrays(T, p, kind, seed):
    rng = np.random.default_rng(seed)
    p = min(p, T)
    index = _band_index(T, p)
    A, lower = _workload(kind, rng, T)
    work = _Workspace(T)
    for _ in range(3):  # the same workspace across evaluations, as in the solver
        x = _band_entries(rng, T, p)
        f_ref, g_ref = _banded_objective(x, T, p, index, A, lower)
        f, g = _banded_objective(x, T, p, index, A, lower, work)
        assert f == f_ref
        assert np.array_equal(g, g_ref)


@settings(max_examples=25, deadline=None)
@given(T=st.integers(1, 300), p=st.integers(1, 40), seed=st.integers(0, 2**32 - 1))
def test_helpers_into_used_arrays_equal_fresh_ones(T, p, seed):
    rng = np.random.default_rng(seed)
    p = min(p, T)
    index = _band_index(T, p)
    C_used, _ = _assemble(_band_entries(rng, T, p), T, p, index)  # an earlier call's C
    B_used = _banded_lower_inverse(C_used, p)  # and B
    x = _band_entries(rng, T, p)
    C, Cb = _assemble(x, T, p, index)
    C2, Cb2 = _assemble(x, T, p, index, out=C_used)
    assert C2 is C_used and np.array_equal(C2, C) and np.array_equal(Cb2, Cb)
    B = _banded_lower_inverse(C, p)
    assert np.array_equal(_banded_lower_inverse(C, p, out=B_used), B)
    G = _prefix_rows(B)
    assert np.array_equal(_prefix_rows(B, out=np.full((T, T), np.nan)), G)
    assert np.array_equal(np.square(G, out=np.empty((T, T))), G**2)
    garbage = np.full((T, T), np.nan)  # Z^T: every entry read is written first
    assert np.array_equal(_band_of_gradient(G, C, p, work=garbage), _band_of_gradient(G, C, p))


@pytest.mark.parametrize("workload", ["prefix", "lower"])
def test_solver_with_and_without_the_workspace(monkeypatch, workload):
    T, k, b = 150, 3, 30
    A = None if workload == "prefix" else np.tril(np.random.default_rng(3).random((T, T)))
    kept = solve_banded_me(T, k, b, workload=A, max_iter=15)
    monkeypatch.setattr(banded, "_WORKSPACE", False)
    fresh = solve_banded_me(T, k, b, workload=A, max_iter=15)
    assert np.array_equal(kept.encoder, fresh.encoder)
    assert kept.objective == fresh.objective
    assert kept.iterations == fresh.iterations
