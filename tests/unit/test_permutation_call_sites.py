"""Each caller of ``uniform_key_permutations`` gives the output of its former numpy code.

DP-FTRL on data (``fit_dp_ftrl``), the logistic DP-FTRL (``train_dp_ftrl_logistic``) and
DP-AMBSSGD's replicate permutations (``PermutedRows``) drew their orders as
``numpy.argsort(rng.random((trials, n)), axis=1)``. Each fit is run twice from the same
seed: as it is (the compiled sort forced for every size) and with the call site's
``uniform_key_permutations`` replaced by that former expression. Everything the fit
returns, and the generator's state after it, must be the same bits. (How each call site
uses the order is tested against frozen references elsewhere, where a reversed order
fails: ``test_ftrl_epochs.py``'s single pass, ``test_ftrl_logistic.py``'s loop of single
trials, ``test_ambssgd_kernel.py``'s numpy kernel, which still sorts by numpy.)
"""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpreg.estimators.ambssgd as ambssgd
import dpreg.estimators.ambssgd_core as ambssgd_core
import dpreg.estimators.ftrl as ftrl
import dpreg.estimators.ftrl_logistic as ftrl_logistic
from dpreg.estimators import permutations
from dpreg.estimators.ambssgd_core import PermutedRows
from dpreg.privacy.budgets import ZCDP, ApproxDP


def _former(rng, trials, n, *, dtype=np.int64):
    """The call sites' former code (DP-AMBSSGD cast its int64 argsort to int32)."""
    return np.argsort(rng.random((trials, n)), axis=1).astype(dtype)


def _run_both(module, fit):
    """``fit(rng)`` with the compiled sort at every size, then with the former code."""
    rng_new, rng_old = np.random.default_rng(0), np.random.default_rng(0)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(permutations, "COMPILED_MIN_KEYS", 1)
        calls = []
        orig = module.uniform_key_permutations

        def spy(*a, **k):
            calls.append(a[1:3])
            return orig(*a, **k)

        mp.setattr(module, "uniform_key_permutations", spy)
        new = fit(rng_new)
    assert calls, "the call site no longer draws through uniform_key_permutations"
    assert len(set(calls)) == 1, calls
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(module, "uniform_key_permutations", _former)
        old = fit(rng_old)
    assert rng_new.bit_generator.state == rng_old.bit_generator.state
    return new, old


def _dataset(n, d, seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) / np.sqrt(d)
    return X, X @ np.linspace(0.5, -0.5, d) + 0.1 * rng.standard_normal(n)


def _reseed(seed):
    """A fit's rng argument: the test's generator, advanced by ``seed`` draws."""

    def wrap(fit):
        def run(rng):
            rng.random(seed)
            return fit(rng)

        return run

    return wrap


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 50),
    trials=st.integers(1, 6),
    n=st.integers(8, 120),
    batch=st.integers(1, 4),
    epochs=st.integers(1, 3),
)
def test_dp_ftrl_on_data_is_the_former_code(seed, trials, n, batch, epochs):
    X, y = _dataset(n, 3, seed)

    @_reseed(seed)
    def fit(rng):
        return ftrl.fit_dp_ftrl(
            X, y, budget=ZCDP(0.5), rng=rng, trials=trials, eta=0.2, clip=0.5, nu=0.1,
            batch_size=batch, epochs=epochs, return_path=True,
        )  # fmt: skip

    new, old = _run_both(ftrl, fit)
    np.testing.assert_array_equal(new.theta, old.theta)
    np.testing.assert_array_equal(new.path, old.path)
    assert new.budget_spent == old.budget_spent
    assert new.diagnostics.keys() == old.diagnostics.keys()


@settings(max_examples=15, deadline=None)
@given(
    seed=st.integers(0, 50),
    trials=st.integers(1, 4),
    n=st.integers(12, 80),
    epochs=st.integers(1, 3),
)
def test_logistic_dp_ftrl_is_the_former_code(seed, trials, n, epochs):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 1, size=(n, 3)) / np.sqrt(3)
    labels = rng.integers(0, 3, size=n)

    @_reseed(seed)
    def fit(r):
        return ftrl_logistic.train_dp_ftrl_logistic(
            X, labels, n_classes=3, budget=ZCDP(0.5), rng=r, trials=trials, eta=0.5,
            clip=0.7, nu=0.1, batch_size=4, epochs=epochs, return_path=True,
        )  # fmt: skip

    new, old = _run_both(ftrl_logistic, fit)
    np.testing.assert_array_equal(new.weights, old.weights)
    np.testing.assert_array_equal(new.path, old.path)
    assert new.budget_spent == old.budget_spent


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), replicates=st.integers(1, 9), n=st.integers(1, 400))
def test_ambssgd_replicate_permutations_are_the_former_code(seed, replicates, n):
    X, y = np.zeros((n, 2)), np.zeros(n)

    def make(rng):
        return PermutedRows(X, y, replicates, rng, kernel="numba")

    new, old = _run_both(ambssgd_core, make)
    assert new.perm.dtype == old.perm.dtype == np.int32
    np.testing.assert_array_equal(new.perm, old.perm)


def test_ambssgd_fit_is_the_former_code():
    """A whole DP-AMBSSGD fit (fixed clip) through the compiled pass, shuffled rows."""
    X, y = _dataset(4000, 5, 4)

    def fit(rng):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(ambssgd, "PermutedRows", partial(PermutedRows, kernel="numba"))
            return ambssgd.fit_dp_ambssgd_fixedclip(
                X, y, budget=ApproxDP(1.0, 1e-6), rng=rng, trials=6, x_norm_sq=5.0,
                H_norm=1.0, fixed_clip=0.5,
            )  # fmt: skip

    new, old = _run_both(ambssgd_core, fit)
    np.testing.assert_array_equal(new.theta, old.theta)
    assert new.budget_spent == old.budget_spent
