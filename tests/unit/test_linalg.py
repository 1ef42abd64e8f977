"""One rule for singular systems across AdaSSP, linear mixing / Sheffet and IHM (issue 14)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dpreg.estimators import adassp, ihm, sketch
from dpreg.estimators._linalg import solve_symmetric_batch


def _batch(seed: int, d: int, rank: int, trials: int = 3) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    F = rng.normal(size=(trials, d, rank))
    return F @ np.swapaxes(F, 1, 2), rng.normal(size=(trials, d))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), d=st.integers(1, 6), deficit=st.integers(0, 3))
def test_regular_systems_are_solved_and_singular_ones_get_the_minimum_norm_solution(
    seed, d, deficit
):
    rank = max(d - deficit, 0)
    A, b = _batch(seed, d, rank)
    theta, singular, eig = solve_symmetric_batch(A, b)
    assert np.all(np.diff(eig, axis=1) >= -1e-12)
    for t in range(A.shape[0]):
        if singular[t]:
            np.testing.assert_allclose(theta[t], np.linalg.pinv(A[t]) @ b[t], atol=1e-8)
        else:
            np.testing.assert_allclose(A[t] @ theta[t], b[t], rtol=1e-6, atol=1e-8)
    if rank < d:
        assert singular.all()


def test_the_three_estimators_flag_the_same_systems():
    A, b = np.concatenate([_batch(1, 4, 4)[0], _batch(2, 4, 2)[0]]), _batch(3, 4, 4, trials=6)[1]
    _, flags, _ = solve_symmetric_batch(A, b)
    assert flags.tolist() == [False] * 3 + [True] * 3
    _, adassp_flags, _ = adassp._solve_batch(A, b)
    M = np.concatenate([np.concatenate([A, b[..., None]], axis=2), np.zeros((6, 1, 5))], axis=1)
    _, sketch_flags = sketch._solve_from_gram(M)
    _, ihm_count = ihm._solve(A, b)
    assert adassp_flags.tolist() == flags.tolist() == sketch_flags.tolist()
    assert ihm_count == int(flags.sum())
