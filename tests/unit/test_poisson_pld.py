"""The PLD epsilon with the grid inverted as arrays equals dp-accounting's PLDAccountant.

Equality is exact (``==`` on floats): the calibrated noise of DP-SGD (Poisson, PLD
accounting; ``cc_fig4_digits``) and so its draws must not move (issue 18).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpreg.estimators.ambssgd_privacy as privacy
import dpreg.privacy.poisson_pld as module
from dpreg.privacy.poisson_pld import poisson_pld_epsilon, poisson_pld_epsilon_full

# cc_fig4_digits: batch 32 of 1,150 training rows, 5 epochs
DIGITS_Q, DIGITS_STEPS, DIGITS_DELTA = 32 / 1150, 180, 1e-5


@pytest.mark.parametrize("delta", [DIGITS_DELTA, 1e-9])
def test_equal_to_the_accountant_on_the_digits_rules(delta):
    for sigma in [0.45, 0.51299, 0.6, 0.6000001, 0.8, 1.0, 1.84, 3.0, 8.0]:
        args = (sigma, DIGITS_Q, DIGITS_STEPS, delta, 1e-3)
        assert poisson_pld_epsilon(*args) == poisson_pld_epsilon_full(*args), sigma


@settings(max_examples=40, deadline=None)
@given(
    log_sigma=st.floats(math.log(0.4), math.log(30.0)),
    q=st.one_of(st.floats(1e-3, 0.6), st.just(1.0)),
    steps=st.integers(1, 300),
    log_delta=st.floats(math.log(1e-10), math.log(1e-3)),
    interval=st.sampled_from([1e-2, 3e-3, 1e-3]),
)
def test_equal_to_the_accountant_on_random_inputs(log_sigma, q, steps, log_delta, interval):
    args = (math.exp(log_sigma), q, steps, math.exp(log_delta), interval)
    assert poisson_pld_epsilon(*args) == poisson_pld_epsilon_full(*args)


@settings(max_examples=150, deadline=None)
@given(
    sigma=st.floats(0.05, 50.0),
    q=st.one_of(st.floats(1e-6, 0.999), st.just(1.0)),
    add=st.booleans(),
    epsilons=st.lists(st.floats(-30.0, 30.0), min_size=1, max_size=20),
    sensitivity=st.sampled_from([1, 0.5, 2.0]),
)
def test_delta_for_epsilon_equals_the_parent_class(sigma, q, add, epsilons, sensitivity):
    # Every grid point the override inverts (arrays, scalars, the boundary -log(1 - q) or
    # log(1 - q) where dp-accounting inverts +-inf) gives the parent's delta bit for bit.
    from dp_accounting.pld import privacy_loss_mechanism as plm

    adjacency = plm.AdjacencyType.ADD if add else plm.AdjacencyType.REMOVE
    kw = {"sensitivity": sensitivity, "sampling_prob": q, "adjacency_type": adjacency}
    ours = module._array_gaussian_loss_class()(sigma, **kw)
    parent = plm.GaussianPrivacyLoss(sigma, **kw)
    if q < 1.0:
        epsilons = [*epsilons, -math.log(1 - q), math.log(1 - q), 0.0]
    grid = np.asarray(epsilons, dtype=np.float64)
    np.testing.assert_array_equal(_outcome(ours, grid), _outcome(parent, grid))
    for eps in epsilons[:3]:
        got, want = _outcome(ours, eps), _outcome(parent, eps)
        assert type(got) is type(want) and (got == want or (math.isnan(got) and math.isnan(want)))


def _outcome(loss, epsilon):
    """``get_delta_for_epsilon``, or the exception's type where it refuses the loss."""
    try:
        return loss.get_delta_for_epsilon(epsilon)
    except ValueError:  # a loss between -log1p(-q) and -log(1 - q): refused by both
        return "ValueError"


@settings(max_examples=200, deadline=None)
@given(
    q=st.one_of(st.floats(1e-9, 0.9999999), st.sampled_from([0.5, 1 / 3, 1e-3, 1.0])),
    add=st.booleans(),
    scale=st.sampled_from([1e-3, 1e-2, 0.37, 1.0]),
    start=st.integers(-40_000, 40_000),
    size=st.integers(1, 300),
)
def test_losses_as_arrays_equal_the_scalar_reference(q, add, scale, start, size):
    # The accountant's grid (integers times the interval), plus the boundary loss, zero
    # and its neighbours; refused losses raise on both paths.
    grid = np.arange(start, start + size) * scale
    bound = -math.log(1 - q) if (add and q < 1) else (math.log(1 - q) if q < 1 else 0.0)
    extra = [bound, 0.0, math.nextafter(bound, 0.0), bound * (1 + 5e-10), 5e-324]
    for values in (grid, np.asarray(extra, dtype=np.float64)):
        kept = values[values < bound] if add and q < 1 else values
        kept = kept[kept > bound] if (not add and q < 1) else kept
        kept = np.concatenate([kept, values[module._isclose(values, bound)]])
        want = [module._loss_without_subsampling(e, q, add) for e in kept.tolist()]
        np.testing.assert_array_equal(
            module.losses_without_subsampling(kept, q, add), np.asarray(want, dtype=float)
        )
    if q < 1:  # a loss beyond the range: both refuse
        beyond = np.array([bound + (1.0 if add else -1.0)])
        with pytest.raises(ValueError):
            module._loss_without_subsampling(float(beyond[0]), q, add)
        with pytest.raises(ValueError):
            module.losses_without_subsampling(beyond, q, add)


def test_outside_the_domain_is_the_accountant(monkeypatch):
    calls = []
    real = module.poisson_pld_epsilon_full
    monkeypatch.setattr(module, "poisson_pld_epsilon_full", lambda *a: calls.append(a) or real(*a))
    assert poisson_pld_epsilon(1.0, 0.0, 10, 1e-5, 1e-3) == real(1.0, 0.0, 10, 1e-5, 1e-3)
    assert len(calls) == 1


def test_calibration_equals_the_accountants(monkeypatch):
    # The calibrated noise multiplier and its certified epsilon: the same floats with the
    # fresh PLDAccountant for every evaluation (the reference path).
    def calibrate():
        privacy.calibrate_poisson_dpsgd.cache_clear()
        privacy._accountant_epsilon.cache_clear()
        sigmas = [
            privacy.calibrate_poisson_dpsgd(e, DIGITS_DELTA, DIGITS_Q, DIGITS_STEPS, "pld")
            for e in (1.0, 8.0)
        ]
        eps = [
            privacy.poisson_dpsgd_epsilon(s, DIGITS_Q, DIGITS_STEPS, DIGITS_DELTA, "pld")
            for s in sigmas
        ]
        return sigmas, eps

    fast = calibrate()
    monkeypatch.setattr(privacy, "_PLD_PATH", "accountant")
    assert calibrate() == fast
    privacy.calibrate_poisson_dpsgd.cache_clear()
    privacy._accountant_epsilon.cache_clear()
