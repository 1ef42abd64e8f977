"""DP-FTRL's numpy step loop compiled with numpy's arithmetic: the numpy loop's bits.

``fit_dp_ftrl(kernel="auto")`` runs :func:`data_steps_numpy_order` below the compiled
kernel's size (issue 18, session 24): it must give the numpy loop's iterates, paths and
clip counts bit for bit, or decline (``None``) and leave the numpy loop to run.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpreg.estimators.ftrl as ftrl
from dpreg import ZCDP
from dpreg.estimators.ftrl import _data_steps, fit_dp_ftrl, fit_dp_sgd_stream
from dpreg.estimators.ftrl_numpy_order import available, data_steps_numpy_order

pytest.importorskip("numba")


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.int64)


def _problem(seed, n, d, trials, batch, epochs, spread):
    rng = np.random.default_rng(seed)
    # columns on different scales, so that the order of the sums shows in the bits
    X = rng.normal(size=(n, d)) * 10.0 ** rng.uniform(-spread, spread, size=d)
    y = rng.normal(size=n)
    steps = n // batch
    keys = np.argsort(rng.random((trials, n)), axis=1)
    order = keys[:, : steps * batch].reshape(trials, steps, batch)  # a strided view
    noise = rng.normal(size=(epochs * steps, trials, d)) * 0.01
    theta0 = rng.normal(size=(trials, d))
    return X, y, order, noise, theta0


def test_available_on_this_numpy():
    """The check at first use passes here (else every call would fall back)."""
    assert available(_data_steps)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    n=st.integers(1, 80),
    d=st.integers(1, 40),
    trials=st.integers(1, 4),
    batch=st.integers(1, 11),
    epochs=st.integers(1, 3),
    clip=st.sampled_from([0.05, 0.5, 5.0, math.inf]),
    ridge=st.sampled_from([0.0, 0.1]),
    with_noise=st.booleans(),
    with_path=st.booleans(),
    fortran=st.booleans(),
    spread=st.sampled_from([0.0, 2.0]),
)
def test_compiled_numpy_order_equals_numpy_loop_bit_for_bit(
    seed, n, d, trials, batch, epochs, clip, ridge, with_noise, with_path, fortran, spread
):
    batch = min(batch, n)
    X, y, order, noise, theta0 = _problem(seed, n, d, trials, batch, epochs, spread)
    if fortran:  # a prepared table's X is column-major
        X = np.asfortranarray(X)
    T = epochs * (n // batch)
    kwargs = dict(epochs=epochs, eta=0.3, clip=clip, ridge=ridge,
                  noise=noise if with_noise else None)  # fmt: skip
    path_c = np.empty((trials, T, d)) if with_path else None
    path_n = np.empty((trials, T, d)) if with_path else None
    got = data_steps_numpy_order(
        X, y, order, theta0.copy(), path=path_c, reference=_data_steps, **kwargs
    )
    ref = _data_steps(X, y, order, theta0.copy(), path=path_n, **kwargs)
    if d == 1:  # numpy sums the gradient in lanes there: declined
        assert got is None
        return
    assert got is not None
    np.testing.assert_array_equal(_bits(got[0]), _bits(ref[0]))
    np.testing.assert_array_equal(got[1], ref[1])
    if with_path:
        np.testing.assert_array_equal(_bits(path_c), _bits(path_n))


def test_control_sees_clipping_remainders_and_order():
    """A control: the problem clips, has batches with a remainder mod 4, and a plain
    sequential dot product would round differently (so the equality above is numpy's)."""
    X, y, order, noise, theta0 = _problem(3, 70, 19, 3, 7, 2, 2.0)
    kwargs = dict(epochs=2, eta=0.3, clip=0.5, ridge=0.0, noise=noise, path=None)
    theta, clipped = data_steps_numpy_order(
        X, y, order, theta0.copy(), reference=_data_steps, **kwargs
    )
    assert clipped.sum() > 0
    assert not np.array_equal(theta, theta0)
    rows = X[order[0, 0]]
    sequential = np.array([math.fsum([0.0]) + sum(r * theta0[0]) for r in rows])
    assert not np.array_equal(sequential, np.einsum("bd,d->b", rows, theta0[0]))


def test_declines_when_the_check_fails(monkeypatch):
    """Another numpy's arithmetic: the check fails, nothing is computed, numpy runs."""

    def other(X, y, order, theta, **kwargs):
        theta, clipped = _data_steps(X, y, order, theta, **kwargs)
        return np.nextafter(theta, np.inf), clipped

    X, y, order, noise, theta0 = _problem(1, 30, 3, 2, 3, 1, 0.0)
    path = np.full((2, 10, 3), 7.0)
    got = data_steps_numpy_order(X, y, order, theta0.copy(), epochs=1, eta=0.1, clip=1.0,
                                 ridge=0.0, noise=None, path=path, reference=other)  # fmt: skip
    assert got is None
    assert (path == 7.0).all()


@pytest.mark.parametrize("fit", [fit_dp_ftrl, fit_dp_sgd_stream])
@pytest.mark.parametrize("epochs", [1, 3])
def test_fits_equal_the_numpy_kernel_bit_for_bit(fit, epochs):
    """End to end below the compiled kernel's size: ``"auto"`` and ``"numpy_compiled"``
    give the ``"numpy"`` fit's bits (theta, path, clip fraction, certificate)."""
    rng = np.random.default_rng(7)
    X = np.asfortranarray(rng.normal(size=(300, 11)) * np.linspace(0.1, 3.0, 11))
    y = np.clip(X @ rng.normal(size=11) + 0.1 * rng.normal(size=300), -1, 1)
    kwargs = dict(budget=ZCDP(0.5), trials=5, eta=0.05, clip=0.5, batch_size=6,
                  epochs=epochs, return_path=True)  # fmt: skip
    if fit is fit_dp_ftrl:
        kwargs["nu"] = 0.05
    assert 5 * epochs * 50 * 6 < ftrl.KERNEL_AUTO_MIN_ROWS
    fits = {k: fit(X, y, rng=np.random.default_rng(3), kernel=k, **kwargs)
            for k in ("numpy", "numpy_compiled", "auto")}  # fmt: skip
    ref = fits["numpy"]
    for kernel in ("numpy_compiled", "auto"):
        np.testing.assert_array_equal(_bits(fits[kernel].theta), _bits(ref.theta))
        np.testing.assert_array_equal(_bits(fits[kernel].path), _bits(ref.path))
        np.testing.assert_array_equal(
            fits[kernel].nonprivate_diagnostics["clip_fraction"],
            ref.nonprivate_diagnostics["clip_fraction"],
        )
        assert fits[kernel].budget_spent == ref.budget_spent


def test_auto_below_the_size_runs_the_numpy_order_kernel(monkeypatch):
    calls = []

    def counted(*args, **kwargs):
        calls.append(1)
        return data_steps_numpy_order(*args, **kwargs)

    import dpreg.estimators.ftrl_numpy_order as order_module

    monkeypatch.setattr(order_module, "data_steps_numpy_order", counted)
    X = np.random.default_rng(0).normal(size=(60, 2)) / 2
    y = np.clip(X.sum(axis=1), -1, 1)
    fit_dp_ftrl(X, y, budget=ZCDP(1.0), rng=np.random.default_rng(0), trials=2, eta=0.1,
                clip=1.0, nu=0.1)  # fmt: skip
    assert calls == [1]
