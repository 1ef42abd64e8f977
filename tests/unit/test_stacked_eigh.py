"""Eigenproblems of stacks once per distinct matrix (dpreg.estimators._stacked): bitwise numpy.

The bootstrap's simulated releases must not change by a bit when the decomposition of a
repeated matrix is shared, so every comparison here is exact (``assert_array_equal`` on
the values and on the sign bits).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpreg.estimators import _linalg, get_estimator
from dpreg.estimators._stacked import distinct_matrices, eigh_stacked, eigvalsh_stacked
from dpreg.estimators.methods import PublicInputs
from dpreg.inference import bootstrap as boot
from dpreg.privacy.budgets import ApproxDP


def _bitwise_equal(a: np.ndarray, b: np.ndarray) -> None:
    assert a.shape == b.shape
    np.testing.assert_array_equal(a.view(np.uint64), b.view(np.uint64))


def _stack(seed: int, distinct: int, lead: tuple[int, ...], p: int) -> np.ndarray:
    """A stack of ``lead`` matrices drawn from ``distinct`` symmetric ones (with +-0.0)."""
    rng = np.random.default_rng(seed)
    base = rng.normal(size=(distinct, p, p))
    base = base + np.swapaxes(base, 1, 2)
    base[:, 0, 0] = 0.0
    if distinct > 1:
        base[1, 0, 0] = -0.0  # equal in value to 0.0, different in bits
        base[1, 1:, 1:] = base[0, 1:, 1:]
        base[1, 0, 1:] = base[1, 1:, 0] = base[0, 0, 1:]
    pick = rng.integers(distinct, size=math.prod(lead))
    return base[pick].reshape(*lead, p, p)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    distinct=st.integers(1, 6),
    lead=st.sampled_from([(1,), (7,), (2, 5), (3, 1, 4)]),
    p=st.integers(1, 6),
)
def test_stacked_decompositions_are_numpys_bit_for_bit(seed, distinct, lead, p):
    S = _stack(seed, distinct, lead, p)
    w, V = eigh_stacked(S)
    w_ref, V_ref = np.linalg.eigh(S)
    _bitwise_equal(w, w_ref)
    _bitwise_equal(V, V_ref)
    _bitwise_equal(eigvalsh_stacked(S), np.linalg.eigvalsh(S))
    unique, index = distinct_matrices(S)
    _bitwise_equal(unique[index], S.reshape(-1, p, p))
    assert unique.shape[0] <= distinct


def test_signed_zeros_are_distinct_and_broadcasts_collapse():
    S = _stack(3, 2, (2,), 3)
    S[1] = S[0]
    S[0, 0, 0], S[1, 0, 0] = 0.0, -0.0
    assert distinct_matrices(S)[0].shape[0] == 2
    one = np.broadcast_to(S[0], (4, 50, 3, 3))
    unique, index = distinct_matrices(one)
    assert unique.shape[0] == 1 and index.shape == (200,) and not index.any()


def test_distinct_matrices_refuses_non_square_input():
    with pytest.raises(ValueError, match="S must be a stack of square matrices"):
        distinct_matrices(np.zeros((3, 2, 4)))


@pytest.mark.parametrize("estimator", ["linear_mixing", "sheffet_sketch"])
@pytest.mark.parametrize("target", ["empirical", "population"])
def test_bootstrap_intervals_unchanged_by_the_shared_decompositions(estimator, target, monkeypatch):
    """The simulators' estimates with eigh/eigvalsh per replicate (numpy) are the same bits."""
    monkeypatch.setattr(boot, "_PATH", "reference")  # the path that decomposes per replicate
    rng = np.random.default_rng(0)
    n, d = 2000, 3
    X = rng.uniform(-1, 1, size=(n, d)) / math.sqrt(d)
    y = np.clip(X @ np.array([0.4, -0.2, 0.1]) + 0.1 * rng.normal(size=n), -1, 1)
    kw = {"dynamic_k": False} if estimator == "linear_mixing" else {}
    fit = get_estimator(estimator)(
        X, y, budget=ApproxDP(1.0, 1e-6), rng=np.random.default_rng(1), trials=3,
        bound_X=1.0, bound_y=1.0, **kw,
    )  # fmt: skip
    public = PublicInputs(n=n, d=d, epsilon=1.0, delta=1e-6, bound_X=1.0, bound_y=1.0)

    def run():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", boot.UncheckedRegimeWarning)
            return boot.bootstrap_intervals(
                fit, public=public, rng=np.random.default_rng(2), replicates=200,
                target=target, require_checked=False,
            )  # fmt: skip

    def per_replicate_factor(base, shift):  # the shifted Gram of every replicate
        stack = np.broadcast_to(base[:, None], (*shift.shape, *base.shape[1:]))
        return boot._eigen_factor(stack + shift[..., None, None] * np.eye(base.shape[-1]))

    fast = run()
    monkeypatch.setattr(boot, "eigh_stacked", np.linalg.eigh)
    monkeypatch.setattr(boot, "_eigvalsh_shared", np.linalg.eigvalsh)
    monkeypatch.setattr(boot, "_shifted_factor", per_replicate_factor)
    reference = run()
    _bitwise_equal(fast.estimates, reference.estimates)
    _bitwise_equal(fast.lower, reference.lower)
    _bitwise_equal(fast.upper, reference.upper)


def _per_system_reference(A: np.ndarray, b: np.ndarray):
    """The rule of dpreg.estimators._linalg._reference with every system decomposed alone."""
    d = A.shape[-1]
    eig = np.stack([np.linalg.eigvalsh(a) for a in A])
    magnitude = np.abs(eig)
    rcond = d * np.finfo(np.float64).eps
    singular = magnitude.min(axis=1) <= rcond * magnitude.max(axis=1)
    theta = np.empty_like(b)
    regular = ~singular
    if regular.any():
        theta[regular] = np.linalg.solve(A[regular], b[regular][..., None])[..., 0]
    if singular.any():
        pinv = np.stack([np.linalg.pinv(a, rcond=rcond, hermitian=True) for a in A[singular]])
        theta[singular] = np.einsum("tij,tj->ti", pinv, b[singular])
    return theta, singular, eig


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), d=st.integers(1, 5), copies=st.integers(1, 40))
def test_reference_solve_of_repeated_matrices_is_bitwise_the_per_system_rule(seed, d, copies):
    """Singular (rank-deficient) and regular matrices repeated over many right-hand sides."""
    rng = np.random.default_rng(seed)
    F = rng.normal(size=(3, d, d))
    F[0, :, -1] = 0.0  # rank d - 1: the pseudo-inverse branch
    base = F @ np.swapaxes(F, 1, 2)
    A = base[rng.integers(3, size=copies)]
    b = rng.normal(size=(copies, d))
    for got, want in zip(_linalg._reference(A, b), _per_system_reference(A, b), strict=True):
        _bitwise_equal(np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64))
