"""The compiled BFGS of the diffprivlib peer returns scipy's point bit for bit (issue 18)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize

from dpreg.estimators import peer_bfgs_kernel as kern
from dpreg.estimators import peer_diffprivlib as peer
from dpreg.privacy.budgets import ApproxDP

pytestmark = pytest.mark.skipif(not kern.kernel_available(), reason="numpy's BLAS not reachable")


def _scipy(c0, c1, c2):
    """The reference's point and scipy's status (0 converged, 2 precision loss)."""

    def objective(omega):
        value = c0
        value -= 2 * np.dot(c1, omega)
        value += np.multiply(c2, np.multiply.outer(omega, omega)).sum()
        value += 0 * (omega**2).sum()
        return value, -2 * c1 + 2 * np.matmul(c2, omega) + 2 * omega * 0

    result = minimize(objective, np.zeros(c1.size), jac=True)
    np.testing.assert_array_equal(result.x, peer._minimise_noisy_objective(c0, c1, c2))
    return result.x, result.status


def _problem(d, seed, kind, scale):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(d, d))
    if kind == "convex":
        c2 = A @ A.T + 0.1 * np.eye(d)
    else:
        c2 = (A + A.T) * scale
    return abs(rng.normal()) * 10.0, rng.normal(size=d) * scale, c2


@settings(max_examples=60, deadline=None)
@given(
    d=st.integers(2, 12),
    seed=st.integers(0, 2**32 - 1),
    kind=st.sampled_from(["convex", "indefinite"]),
    scale=st.floats(1e-2, 1e3),
)
def test_compiled_equals_scipy_bit_for_bit(d, seed, kind, scale):
    c0, c1, c2 = _problem(d, seed, kind, scale)
    want, _ = _scipy(c0, c1, c2)
    got = kern.minimise_compiled(c0, c1, c2)
    assert got is not None  # finite problems stay inside the replica
    assert got.tobytes() == want.tobytes()


def _design(n, d, seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, size=(n, d)) / np.sqrt(d)
    y = np.clip(X @ np.linspace(-1.0, 1.0, d) + 0.2 * rng.normal(size=n), -1.0, 1.0)
    return X, y


@pytest.mark.parametrize(("d", "epsilon"), [(3, 0.1), (9, 1.0), (40, 3.0), (40, 1e5), (130, 1.0)])
def test_the_peers_noisy_objectives_status_2_stops_and_convex_ones(d, epsilon):
    """The mechanism's own coefficients: scipy stops with status 2 (no minimum) or converges."""
    X, y = _design(1500, d, d)
    values = peer._monomial_coefficients(X, y)
    scales, folded = peer.functional_mechanism_scales(d, epsilon, 1.0, 1.0)
    statuses = set()
    for seed in range(6):
        c0, c1, c2 = peer._noisy_coefficients(values, d, 1000 + seed, scales, folded)
        want, status = _scipy(c0, c1, c2)
        statuses.add(status)
        got = kern.minimise_compiled(c0, c1, c2)
        assert got is not None and got.tobytes() == want.tobytes()
    assert statuses == {0} if epsilon > 1e4 else 2 in statuses


def test_run_level_the_two_kernels_give_the_same_fits():
    X, y = _design(800, 6, 1)
    fits = [
        peer.run_diffprivlib_linear_regression(
            X,
            y,
            budget=ApproxDP(eps, 1e-6),
            rng=np.random.default_rng(8),
            trials=30,
            bound_X=1.0,
            bound_y=1.0,
            kernel=kernel,
        ).theta  # fmt: skip
        for eps in (0.3, 30.0)
        for kernel in ("auto", "scipy")
    ]
    assert fits[0].tobytes() == fits[1].tobytes() and fits[2].tobytes() == fits[3].tobytes()
    with pytest.raises(ValueError, match="kernel"):
        peer.run_diffprivlib_linear_regression(
            X, y, budget=ApproxDP(1.0, 1e-6), rng=np.random.default_rng(0), bound_X=1.0,
            bound_y=1.0, kernel="numba",
        )  # fmt: skip


@settings(max_examples=30, deadline=None)
@given(n=st.integers(0, 40_000), seed=st.integers(0, 2**32 - 1))
def test_the_pairwise_sum_is_numpys(n, seed):
    kern._kernel()
    a = np.random.default_rng(seed).normal(size=n) * 10.0 ** np.random.default_rng(seed).uniform(
        -6, 6, size=n
    )
    assert np.float64(kern.np_sum(a)).tobytes() == np.float64(a.sum()).tobytes()


def test_outside_the_replica_scipy_runs():
    """Non-finite values, d = 1 and non-contiguous operands are left to scipy."""
    c0, c1, c2 = _problem(4, 0, "indefinite", 1e300)  # the objective overflows
    assert kern.minimise_compiled(c0, c1, c2) is None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = peer._minimise_noisy_objective(c0, c1, c2)
        got = peer._minimise(c0, c1, c2, "auto")
    assert got.tobytes() == want.tobytes()
    c0, c1, c2 = _problem(1, 0, "convex", 1.0)
    assert kern.minimise_compiled(c0, c1, c2) is None
    assert peer._minimise(c0, c1, c2, "auto").tobytes() == _scipy(c0, c1, c2)[0].tobytes()
    c0, c1, c2 = _problem(5, 0, "indefinite", 1.0)
    assert kern.minimise_compiled(c0, c1, np.asfortranarray(c2)) is None
    assert kern.minimise_compiled(c0, c1[::-1], c2) is None


def test_another_scipy_release_is_left_to_scipy(monkeypatch):
    import scipy

    monkeypatch.setattr(scipy, "__version__", "1.18.0")
    kern.kernel_available.cache_clear()
    try:
        assert not kern.kernel_available()
        c0, c1, c2 = _problem(4, 1, "indefinite", 1.0)
        assert kern.minimise_compiled(c0, c1, c2) is None
    finally:
        monkeypatch.undo()
        kern.kernel_available.cache_clear()
    assert kern.kernel_available()
