"""The compiled passes of ``clipped_gradient_sum`` have the bits of the numpy reference.

``dpreg.estimators._logistic_grad_jit`` does the row maximum, the softmax normaliser,
the residual, the norms and the clipping of the logistic DP-FTRL / DP-SGD gradient in
two compiled passes (issue 18, docs/scaling.md): gradients and clip counts equal to
``clipped_gradient_sum_reference`` bit for bit (hypothesis over shapes, scales, masks,
clips, overflowing logits and every pairwise-sum length up to 128 classes), the
dispatch's fallbacks, and whole training runs of both trainers equal with either path.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpreg.estimators.ftrl_logistic as fl
from dpreg import ApproxDP
from dpreg.estimators.dpsgd_poisson_logistic import train_dp_sgd_poisson_logistic
from dpreg.estimators.ftrl_logistic import (
    _clipped_gradient_sum_compiled,
    clipped_gradient_sum,
    clipped_gradient_sum_reference,
)


def _case(seed, n, d, K, trials, b, scale, one_hot=True, masked=False):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, d))
    if one_hot:
        onehot = np.eye(K)[rng.integers(0, K, size=n)]
    else:
        onehot = rng.normal(size=(n, K))
    x_norm = np.linalg.norm(X, axis=1)
    idx = rng.integers(0, n, size=(trials, b))
    W = rng.normal(size=(trials, d, K)) * scale
    mask = rng.random((trials, b)) < 0.7 if masked else None
    return X, onehot, x_norm, idx, W, mask


def _same(a, b):
    assert a[0].shape == b[0].shape and a[0].dtype == b[0].dtype
    assert a[0].tobytes() == b[0].tobytes()
    assert a[1].dtype == b[1].dtype and np.array_equal(a[1], b[1])


@settings(max_examples=80, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 40),
    d=st.integers(1, 9),
    K=st.integers(1, 128),
    trials=st.integers(1, 4),
    b=st.integers(1, 12),
    scale=st.sampled_from([0.0, 1e-3, 1.0, 30.0, 1e3, 1e300]),
    one_hot=st.booleans(),
    masked=st.booleans(),
    clip=st.sampled_from([1e-3, 0.5, 1.0, 4.0, math.inf]),
)
def test_compiled_is_the_reference_bitwise(seed, n, d, K, trials, b, scale, one_hot, masked, clip):
    X, onehot, x_norm, idx, W, mask = _case(seed, n, d, K, trials, b, scale, one_hot, masked)
    with np.errstate(all="ignore"):  # 1e300: overflowing logits, NaN residuals alike
        ref = clipped_gradient_sum_reference(X, onehot, x_norm, idx, W, clip, mask)
        new = _clipped_gradient_sum_compiled(X, onehot, x_norm, idx, W, clip, mask)
    _same(new, ref)


@pytest.mark.parametrize("K", [1, 7, 8, 9, 10, 15, 16, 17, 64, 127, 128])
def test_every_pairwise_length(K):
    """Around numpy's 8-accumulator boundaries and the 128-term block."""
    for clip in (0.3, math.inf):
        args = _case(K, 50, 6, K, 3, 20, 2.0, masked=True)
        _same(
            _clipped_gradient_sum_compiled(*args[:5], clip, args[5]),
            clipped_gradient_sum_reference(*args[:5], clip, args[5]),
        )


def test_nan_and_strided_inputs():
    X, onehot, x_norm, idx, W, mask = _case(3, 30, 5, 10, 4, 16, 1.0, masked=True)
    W[1, 2, 3] = np.nan  # a NaN logit: np.max propagates it through the row
    W[2, 0, :] = np.inf
    order = np.stack([np.arange(30)] * 4)[:, ::2][:, :15]  # a strided index view
    x_norm2 = np.repeat(x_norm, 2)[::2]  # a strided view
    for ix in (idx, order, idx.astype(np.int32)):
        with np.errstate(all="ignore"):
            ref = clipped_gradient_sum_reference(X, onehot, x_norm2, ix, W, 0.7, None)
            new = _clipped_gradient_sum_compiled(X, onehot, x_norm2, ix, W, 0.7, None)
        _same(new, ref)


def test_dispatch(monkeypatch):
    """Above the threshold the compiled path, below it and for float32 the reference."""
    args = _case(5, 200, 8, 10, 20, 32, 1.0)
    assert args[3].size * 10 >= fl._GRADIENT_COMPILED_MIN
    _same(clipped_gradient_sum(*args[:5], 1.0), clipped_gradient_sum_reference(*args[:5], 1.0))
    X, onehot, x_norm, idx, W, _ = args
    f32 = (X.astype(np.float32), onehot, x_norm, idx, W.astype(np.float32))
    _same(clipped_gradient_sum(*f32, 1.0), clipped_gradient_sum_reference(*f32, 1.0))
    calls = []
    monkeypatch.setattr(fl, "_clipped_gradient_sum_compiled", lambda *a: calls.append(a))
    clipped_gradient_sum(*_case(5, 20, 3, 4, 2, 3, 1.0)[:5], 1.0)  # 24 entries
    assert calls == []
    monkeypatch.setattr(fl, "_GRADIENT_PATH", "reference")
    clipped_gradient_sum(*args[:5], 1.0)
    assert calls == []


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    shape=st.tuples(st.integers(1, 5), st.integers(1, 30), st.integers(1, 12)),
    momentum=st.sampled_from([0.0, 0.5, 0.9, 0.95]),
    noisy=st.booleans(),
    batch_size=st.integers(1, 300),
    lr=st.floats(1e-6, 10.0),
    scale=st.sampled_from([1e-300, 1.0, 1e300]),
)
def test_noisy_step_is_the_reference_bitwise(seed, shape, momentum, noisy, batch_size, lr, scale):
    rng = np.random.default_rng(seed)
    W, grad, z, v = (rng.normal(size=shape) * scale for _ in range(4))
    states = []
    for path in ("compiled", "reference"):
        w, g, vel = W.copy(), grad.copy(), v.copy() if momentum > 0 else None
        with pytest.MonkeyPatch.context() as mp, np.errstate(all="ignore"):
            mp.setattr(fl, "_GRADIENT_COMPILED_MIN", 1)
            mp.setattr(fl, "_GRADIENT_PATH", path)
            fl._noisy_step(w, g, z if noisy else None, vel, momentum, batch_size, np.float64(lr))
        states.append([a.tobytes() for a in (w, g) + ((vel,) if vel is not None else ())])
    assert states[0] == states[1]


def _digits_like(seed=0, n=400, d=12, K=10):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 1, size=(n, d)) / math.sqrt(d)
    return X, rng.integers(0, K, size=n)


@pytest.mark.parametrize("correlation", ["nu_ftrl", "sgd"])
def test_dp_ftrl_training_is_the_reference(monkeypatch, correlation):
    X, labels = _digits_like()
    kw = dict(
        n_classes=10, budget=ApproxDP(2.0, 1e-5), trials=12, eta=0.5, clip=0.2,
        correlation=correlation, nu=0.05, batch_size=20, epochs=2, momentum=0.9,
    )  # fmt: skip
    assert kw["trials"] * 12 * 10 >= fl._GRADIENT_COMPILED_MIN  # both compiled passes
    fast = fl.train_dp_ftrl_logistic(X, labels, rng=np.random.default_rng(1), **kw)
    monkeypatch.setattr(fl, "_GRADIENT_PATH", "reference")
    ref = fl.train_dp_ftrl_logistic(X, labels, rng=np.random.default_rng(1), **kw)
    assert fast.weights.tobytes() == ref.weights.tobytes()
    assert np.array_equal(
        fast.nonprivate_diagnostics["clip_fraction"], ref.nonprivate_diagnostics["clip_fraction"]
    )


def test_dp_sgd_poisson_training_is_the_reference(monkeypatch):
    X, labels = _digits_like(2)
    kw = dict(
        n_classes=10, budget=ApproxDP(2.0, 1e-5), trials=8, eta=0.5, clip=0.2,
        batch_size=20, epochs=2, n_public=400, accountant="rdp",
    )  # fmt: skip
    fast = train_dp_sgd_poisson_logistic(X, labels, rng=np.random.default_rng(3), **kw)
    monkeypatch.setattr(fl, "_GRADIENT_PATH", "reference")
    ref = train_dp_sgd_poisson_logistic(X, labels, rng=np.random.default_rng(3), **kw)
    assert fast.weights.tobytes() == ref.weights.tobytes()
    for key, value in ref.nonprivate_diagnostics.items():
        assert np.array_equal(fast.nonprivate_diagnostics[key], value), key
