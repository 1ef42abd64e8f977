"""The compiled step loop of ``fit_dp_ftrl`` against the numpy reference (issue 18).

The kernel reads the same order and the same noise (it draws nothing), so the two
loops differ only in the order of the floating-point additions of the dot products and
batch sums: equal to round-off, compared with a tolerance of a few hundred ulps of the
iterates' scale.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_ftrl_data_steps import _problem  # the same random problem as the reference tests

from dpreg import ZCDP, ApproxDP
from dpreg.estimators.ftrl import (
    FTRL_KERNELS,
    KERNEL_AUTO_MIN_ROWS,
    KERNEL_AUTO_MIN_STEPS,
    _data_steps,
    _data_steps_reference,
    fit_dp_ftrl,
    fit_dp_sgd_stream,
)
from dpreg.estimators.ftrl_kernel import COMPILED_VARIANTS, data_steps_compiled

RTOL = 1e-10


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    n=st.integers(1, 60),
    d=st.integers(1, 12),
    trials=st.integers(1, 4),
    batch=st.integers(1, 5),
    epochs=st.integers(1, 3),
    clip=st.sampled_from([0.05, 0.5, math.inf]),
    ridge=st.sampled_from([0.0, 0.1]),
    with_noise=st.booleans(),
    fortran=st.booleans(),
)
def test_compiled_steps_equal_reference_to_round_off(
    seed, n, d, trials, batch, epochs, clip, ridge, with_noise, fortran
):
    batch = min(batch, n)
    X, y, order, noise, theta0 = _problem(seed, n, d, trials, batch, epochs)
    if fortran:
        X = np.asfortranarray(X)
    noise = noise if with_noise else None
    T = epochs * (n // batch)
    kwargs = dict(epochs=epochs, eta=0.3, clip=clip, ridge=ridge, noise=noise)
    path_c, path_r = np.empty((trials, T, d)), np.empty((trials, T, d))
    theta_c, clipped_c = data_steps_compiled(X, y, order, theta0.copy(), path=path_c, **kwargs)
    theta_r, clipped_r = _data_steps(X, y, order, theta0.copy(), path=path_r, **kwargs)
    np.testing.assert_allclose(theta_c, theta_r, rtol=RTOL, atol=RTOL * np.abs(theta_r).max())
    np.testing.assert_allclose(path_c, path_r, rtol=RTOL, atol=RTOL * np.abs(path_r).max())
    np.testing.assert_array_equal(clipped_c, clipped_r)


def test_compiled_steps_clip_and_move():
    """A control: the comparison above sees the clipping, the noise and the steps."""
    X, y, order, noise, theta0 = _problem(1, 40, 3, 2, 2, 2)
    kwargs = dict(epochs=2, eta=0.3, ridge=0.0, path=None)
    theta, clipped = data_steps_compiled(X, y, order, theta0, clip=0.05, noise=noise, **kwargs)
    assert clipped.sum() > 0 and not np.array_equal(theta, theta0)
    loose, _ = data_steps_compiled(X, y, order, theta0, clip=math.inf, noise=noise, **kwargs)
    quiet, _ = data_steps_compiled(X, y, order, theta0, clip=0.05, noise=None, **kwargs)
    assert not np.array_equal(theta, loose) and not np.array_equal(theta, quiet)


@pytest.mark.parametrize("epochs", [1, 3])
@pytest.mark.parametrize("fit", [fit_dp_ftrl, fit_dp_sgd_stream])
def test_fit_same_draws_same_certificate_either_kernel(fit, epochs):
    rng = np.random.default_rng(7)
    X = rng.normal(size=(300, 4)) / 2
    y = np.clip(X @ np.array([0.5, -0.3, 0.2, 0.1]) + 0.1 * rng.normal(size=300), -1, 1)
    kwargs = dict(budget=ApproxDP(1.0, 1e-5), trials=5, eta=0.2, clip=0.5, batch_size=3,
                  epochs=epochs, return_path=True)  # fmt: skip
    if fit is fit_dp_ftrl:
        kwargs["nu"] = 0.05
    fits = {k: fit(X, y, rng=np.random.default_rng(3), kernel=k, **kwargs) for k in FTRL_KERNELS}
    ref = fits["numpy"]
    for kernel in ("numba", "auto"):
        np.testing.assert_allclose(fits[kernel].theta, ref.theta, rtol=RTOL, atol=1e-13)
        np.testing.assert_allclose(fits[kernel].path, ref.path, rtol=RTOL, atol=1e-13)
        assert fits[kernel].budget_spent == ref.budget_spent
        assert fits[kernel].diagnostics["noise_multiplier"] == ref.diagnostics["noise_multiplier"]
    # at this size "auto" is the reference itself, bit for bit
    assert 5 * 300 * epochs < KERNEL_AUTO_MIN_ROWS and 100 * epochs < KERNEL_AUTO_MIN_STEPS
    np.testing.assert_array_equal(fits["auto"].theta, ref.theta)


def test_auto_compiles_at_size(monkeypatch):
    import dpreg.estimators.ftrl as ftrl

    calls = []

    def counted(*args, **kwargs):
        calls.append(1)
        return data_steps_compiled(*args, **kwargs)

    monkeypatch.setattr(ftrl, "KERNEL_AUTO_MIN_ROWS", 100)
    monkeypatch.setattr(ftrl, "data_steps_compiled", counted)
    X = np.random.default_rng(0).normal(size=(60, 2)) / 2
    y = np.clip(X.sum(axis=1), -1, 1)
    fit_dp_ftrl(X, y, budget=ZCDP(1.0), rng=np.random.default_rng(0), trials=2, eta=0.1,
                clip=1.0, nu=0.1)  # fmt: skip
    assert calls == [1]


@pytest.mark.parametrize(("min_steps", "compiled"), [(60, True), (61, False)])
def test_auto_compiles_from_many_steps_whatever_the_trials(monkeypatch, min_steps, compiled):
    """Few trials of batch 1 over many steps: the step count alone picks the kernel."""
    import dpreg.estimators.ftrl as ftrl

    calls = []

    def counted(*args, **kwargs):
        calls.append(1)
        return data_steps_compiled(*args, **kwargs)

    monkeypatch.setattr(ftrl, "KERNEL_AUTO_MIN_STEPS", min_steps)
    monkeypatch.setattr(ftrl, "data_steps_compiled", counted)
    X = np.random.default_rng(0).normal(size=(60, 2)) / 2
    y = np.clip(X.sum(axis=1), -1, 1)
    assert 60 < KERNEL_AUTO_MIN_ROWS  # one trial, T = 60 steps of one row
    fit_dp_ftrl(X, y, budget=ZCDP(1.0), rng=np.random.default_rng(0), trials=1, eta=0.1,
                clip=1.0, nu=0.1)  # fmt: skip
    assert calls == ([1] if compiled else [])


def test_bad_kernel_is_named():
    X = np.eye(3)
    with pytest.raises(ValueError, match="kernel"):
        fit_dp_ftrl(X, np.zeros(3), budget=ZCDP(1.0), rng=np.random.default_rng(0), eta=0.1,
                    clip=1.0, nu=0.1, kernel="fast")  # fmt: skip


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    n=st.integers(1, 80),
    d=st.integers(1, 9),
    trials=st.integers(1, 3),
    batch=st.integers(1, 11),
    epochs=st.integers(1, 3),
    clip=st.sampled_from([0.05, 0.5, math.inf]),
    ridge=st.sampled_from([0.0, 0.1]),
    with_noise=st.booleans(),
    with_path=st.booleans(),
)
def test_blocked_kernel_equals_rowwise_bit_for_bit(
    seed, n, d, trials, batch, epochs, clip, ridge, with_noise, with_path
):
    """Four rows at a time (and the gathered rows of several epochs): the same values."""
    batch = min(batch, n)
    X, y, order, noise, theta0 = _problem(seed, n, d, trials, batch, epochs)
    T = epochs * (n // batch)
    out = {}
    for variant in COMPILED_VARIANTS:
        path = np.empty((trials, T, d)) if with_path else None
        theta, clipped = data_steps_compiled(
            X, y, order, theta0.copy(), epochs=epochs, eta=0.3, clip=clip, ridge=ridge,
            noise=noise if with_noise else None, path=path, variant=variant,
        )  # fmt: skip
        out[variant] = (theta, clipped, path)
    for a, b in zip(out["blocked"], out["rowwise"], strict=True):
        np.testing.assert_array_equal(a, b)


def test_blocked_kernel_control_sees_blocks_remainder_and_clipping():
    """A control: batches of 6 (one block of four, two rows left), clipped rows, 2 epochs."""
    X, y, order, noise, theta0 = _problem(5, 48, 3, 2, 6, 2)
    kwargs = dict(epochs=2, eta=0.3, clip=0.05, ridge=0.0, noise=noise, path=None)
    theta, clipped = data_steps_compiled(X, y, order, theta0.copy(), **kwargs)
    assert clipped.sum() > 0 and not np.array_equal(theta, theta0)
    # moving one row of a block changes the iterate (the block's rows are all read)
    swapped = order.copy()
    swapped[0, 0, 1], swapped[0, 1, 1] = order[0, 1, 1], order[0, 0, 1]
    moved, _ = data_steps_compiled(X, y, swapped, theta0.copy(), **kwargs)
    assert not np.array_equal(moved[0], theta[0]) and np.array_equal(moved[1], theta[1])


def test_bad_variant_is_named():
    X, y, order, noise, theta0 = _problem(0, 6, 2, 1, 2, 1)
    with pytest.raises(ValueError, match="variant"):
        data_steps_compiled(X, y, order, theta0, epochs=1, eta=0.1, clip=1.0, ridge=0.0,
                            noise=None, path=None, variant="fast")  # fmt: skip


@pytest.mark.parametrize("variant", COMPILED_VARIANTS)
@pytest.mark.parametrize("epochs", [1, 2])
def test_strided_order_view_is_read_in_place_with_the_same_values(variant, epochs):
    """fit_dp_ftrl passes a view of the permutations' first S b columns (issue 18: no
    transposed copy): the kernel reads it through its strides, as a contiguous copy."""
    rng = np.random.default_rng(11)
    n, d, trials, batch = 53, 4, 3, 5
    X, y = rng.normal(size=(n, d)), rng.normal(size=n)
    S = n // batch
    full = np.argsort(rng.random((trials, n)), axis=1)
    view = full[:, : S * batch].reshape(trials, S, batch)
    assert not view.flags.c_contiguous and np.shares_memory(view, full)
    noise = 0.01 * rng.normal(size=(epochs * S, trials, d))
    kwargs = dict(epochs=epochs, eta=0.3, clip=0.5, ridge=0.0, noise=noise, path=None)
    a = data_steps_compiled(X, y, view, np.zeros((trials, d)), variant=variant, **kwargs)
    b = data_steps_compiled(
        X, y, np.ascontiguousarray(view), np.zeros((trials, d)), variant=variant, **kwargs
    )
    ref = _data_steps_reference(X, y, np.ascontiguousarray(view), np.zeros((trials, d)), **kwargs)
    for u, v in zip(a, b, strict=True):
        np.testing.assert_array_equal(u, v)
    np.testing.assert_allclose(a[0], ref[0], rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(a[1], ref[1])
