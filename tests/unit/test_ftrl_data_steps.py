"""The blocked step loop of ``fit_dp_ftrl`` against its one-step-at-a-time reference.

The fast path (``_data_steps``) gathers the batches of many steps at once and computes
the row norms once per row (issue 18); it must give the same iterates bit for bit.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpreg.estimators.ftrl as ftrl
from dpreg import ZCDP
from dpreg.estimators.ftrl import _data_steps, _data_steps_reference, fit_dp_ftrl


def _problem(seed: int, n: int, d: int, trials: int, batch: int, epochs: int):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / math.sqrt(d)
    y = np.clip(X @ rng.normal(size=d) + 0.3 * rng.normal(size=n), -1, 1)
    steps = n // batch
    order = np.argsort(rng.random((trials, n)), axis=1)[:, : steps * batch]
    order = order.reshape(trials, steps, batch)
    noise = rng.normal(size=(epochs * steps, trials, d)) * 0.01
    theta0 = rng.normal(size=(trials, d)) * 0.1
    return X, y, order, noise, theta0


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    n=st.integers(1, 60),
    d=st.integers(1, 12),
    trials=st.integers(1, 4),
    batch=st.integers(1, 4),
    epochs=st.integers(1, 3),
    clip=st.sampled_from([0.05, 0.5, math.inf]),
    ridge=st.sampled_from([0.0, 0.1]),
    with_noise=st.booleans(),
    block=st.integers(1, 7),
    fortran=st.booleans(),
)
def test_blocked_steps_equal_reference_bit_for_bit(
    seed, n, d, trials, batch, epochs, clip, ridge, with_noise, block, fortran
):
    batch = min(batch, n)
    X, y, order, noise, theta0 = _problem(seed, n, d, trials, batch, epochs)
    if fortran:  # a prepared table's X is column-major: its row norms round otherwise
        X = np.asfortranarray(X)
    noise = noise if with_noise else None
    T = epochs * (n // batch)
    # blocks of `block` steps (and a partial last block), whatever the problem's size
    kwargs = dict(epochs=epochs, eta=0.3, clip=clip, ridge=ridge, noise=noise)
    path_fast, path_ref = np.empty((trials, T, d)), np.empty((trials, T, d))
    gather = block * trials * batch * d
    fast = _data_steps(X, y, order, theta0.copy(), path=path_fast, gather_elements=gather, **kwargs)
    ref = _data_steps_reference(X, y, order, theta0.copy(), path=path_ref, **kwargs)
    np.testing.assert_array_equal(fast[0], ref[0])
    np.testing.assert_array_equal(fast[1], ref[1])
    np.testing.assert_array_equal(path_fast, path_ref)


def test_blocked_steps_clip_and_move():
    """A control: the comparison above sees the clipping and the steps."""
    X, y, order, noise, theta0 = _problem(1, 40, 3, 2, 2, 2)
    kwargs = dict(epochs=2, eta=0.3, ridge=0.0, noise=noise, path=None)
    theta, clipped = _data_steps(X, y, order, theta0.copy(), clip=0.05, **kwargs)
    assert clipped.sum() > 0
    assert not np.array_equal(theta, theta0)
    loose, _ = _data_steps(X, y, order, theta0.copy(), clip=math.inf, **kwargs)
    assert not np.array_equal(theta, loose)


@pytest.mark.parametrize("epochs", [1, 3])
@pytest.mark.parametrize("correlation", ["nu_ftrl", "sgd"])
def test_fit_equals_the_reference_loop(monkeypatch, epochs, correlation):
    """End to end: the same seed gives the same fit through either loop."""
    rng = np.random.default_rng(7)
    X = rng.normal(size=(300, 4)) / 2
    y = np.clip(X @ np.array([0.5, -0.3, 0.2, 0.1]) + 0.1 * rng.normal(size=300), -1, 1)
    kwargs = dict(
        budget=ZCDP(0.5), trials=5, eta=0.2, clip=0.5, nu=0.05, batch_size=3,
        correlation=correlation, epochs=epochs, return_path=True,
    )  # fmt: skip
    fast = fit_dp_ftrl(X, y, rng=np.random.default_rng(3), **kwargs)
    monkeypatch.setattr(ftrl, "_data_steps", _data_steps_reference)
    ref = fit_dp_ftrl(X, y, rng=np.random.default_rng(3), **kwargs)
    np.testing.assert_array_equal(fast.theta, ref.theta)
    np.testing.assert_array_equal(fast.path, ref.path)
    np.testing.assert_array_equal(
        fast.nonprivate_diagnostics["clip_fraction"], ref.nonprivate_diagnostics["clip_fraction"]
    )
    assert fast.budget_spent == ref.budget_spent
    assert fast.diagnostics["noise_multiplier"] == ref.diagnostics["noise_multiplier"]


@pytest.mark.parametrize("d", [9, 27])
def test_column_major_rows_equal_reference(d):
    """A prepared table's X is column-major (caught at paper scale on lev_protein_public)."""
    X, y, order, noise, theta0 = _problem(5, 400, d, 6, 7, 2)
    X = np.asfortranarray(X)
    kwargs = dict(epochs=2, eta=0.3, clip=0.05, ridge=0.0, noise=noise, path=None)
    fast = _data_steps(X, y, order, theta0.copy(), gather_elements=3 * 6 * 7 * d, **kwargs)
    ref = _data_steps_reference(X, y, order, theta0.copy(), **kwargs)
    np.testing.assert_array_equal(fast[0], ref[0])
    np.testing.assert_array_equal(fast[1], ref[1])
