"""IHM's fused Hessian pass has the bits of the numpy reference (H /= k; M += H / T)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import dpreg.estimators.ihm as ihm
from dpreg import ApproxDP
from dpreg.estimators._ihm_jit import scale_and_accumulate

_FLOATS = st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True, width=64)


@settings(max_examples=60, deadline=None)
@given(
    H=arrays(np.float64, st.tuples(st.integers(1, 3), st.integers(1, 5), st.integers(1, 5)),
             elements=_FLOATS),
    k=st.integers(1, 10**6),
    T=st.integers(1, 50),
    seed=st.integers(0, 2**32 - 1),
)  # fmt: skip
def test_kernel_is_the_numpy_reference_bitwise(H, k, T, seed):
    M = np.random.default_rng(seed).normal(size=H.shape) * 10.0 ** np.random.default_rng(
        seed
    ).integers(-300, 300, size=H.shape)
    H_ref, M_ref = H.copy(), M.copy()
    H_ref /= k
    M_ref += H_ref / T
    scale_and_accumulate(H, M, k, T)
    assert H.tobytes() == H_ref.tobytes()
    assert M.tobytes() == M_ref.tobytes()


@pytest.mark.parametrize("size", [2**10, 2**17])  # below and above _HESSIAN_FUSED_MIN
def test_dispatch_is_the_reference_bitwise(monkeypatch, size):
    rng = np.random.default_rng(size)
    d = int(np.sqrt(size // 4))
    H, M = rng.normal(size=(4, d, d)), rng.normal(size=(4, d, d))
    H1, M1 = H.copy(), M.copy()
    ihm._scale_and_accumulate(H1, M1, 817, 7)
    monkeypatch.setattr(ihm, "_HESSIAN_PATH", "reference")
    ihm._scale_and_accumulate(H, M, 817, 7)
    assert H1.tobytes() == H.tobytes() and M1.tobytes() == M.tobytes()


@pytest.mark.parametrize("variant", ["experiments", "paper"])
def test_fit_ihm_fused_is_the_reference_fit(monkeypatch, variant):
    """Above the threshold (64 trials x 33^2 entries): same theta, path, diagnostics bits."""
    rng = np.random.default_rng(4)
    n, d = 3000, 33
    X = rng.uniform(-1, 1, size=(n, d)) / np.sqrt(d)
    y = np.clip(X @ rng.normal(size=d) / np.sqrt(d) + 0.1 * rng.normal(size=n), -1, 1)
    kw = dict(budget=ApproxDP(2.0, 1e-6), trials=64, T=3, variant=variant)
    assert kw["trials"] * d * d >= ihm._HESSIAN_FUSED_MIN
    fast = ihm.fit_ihm(X, y, rng=np.random.default_rng(9), **kw)
    monkeypatch.setattr(ihm, "_HESSIAN_PATH", "reference")
    ref = ihm.fit_ihm(X, y, rng=np.random.default_rng(9), **kw)
    assert fast.theta.tobytes() == ref.theta.tobytes()
    assert fast.path.tobytes() == ref.path.tobytes()
    assert fast.budget_spent == ref.budget_spent
    for key, value in ref.diagnostics.items():
        np.testing.assert_array_equal(fast.diagnostics[key], value, err_msg=key)
