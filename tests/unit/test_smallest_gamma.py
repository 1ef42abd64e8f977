"""``smallest_gamma``'s bracketed bisection gives the reference bisection's gamma (issue 18).

The calibrations of IHM (both gamma methods), linear mixing and Sheffet's sketch are
computed by both paths over the Lev studies' epsilons and sizes and must be the same
floats; a hypothesis test does the same for decreasing functions of other shapes.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpreg.privacy.mixing as mixing
from dpreg.estimators import ihm, sketch
from dpreg.privacy.mixing import smallest_gamma

LEV_EPSILONS = [0.1, 0.25118864315095796, 0.6309573444801932, 1.584893192461114, 10.0]


def _both(monkeypatch, compute):
    """``compute()`` on the reference path and on the bracketed one, which must not
    need its fallback (a second, reference bisection after a result that does not
    certify: it would hide a wrong replay)."""
    monkeypatch.setattr(mixing, "_GAMMA_PATH", "reference")
    reference = compute()
    monkeypatch.setattr(mixing, "_GAMMA_PATH", "bracketed")
    bisections = []
    bisect = mixing._bisect
    monkeypatch.setattr(mixing, "_bisect", lambda *a: bisections.append(1) or bisect(*a))
    fast = compute()
    monkeypatch.setattr(mixing, "_bisect", bisect)
    assert len(bisections) == 1
    return reference, fast


@pytest.mark.parametrize("n, d", [(93, 5), (192, 124), (2051, 128), (57248, 27)])
@pytest.mark.parametrize("method", ["rdp", "code"])
def test_ihm_gamma_is_the_reference_bisections(monkeypatch, n, d, method):
    delta = 1.0 / n**2
    for epsilon in LEV_EPSILONS:
        reference, fast = _both(
            monkeypatch, lambda e=epsilon: ihm.ihm_gamma.__wrapped__(e, delta, 6 * d, 3, method)
        )
        assert fast == reference


@pytest.mark.parametrize("n, k", [(404, 40), (2051, 400), (57248, 90)])
def test_linear_mixing_and_sheffet_gammas_are_the_reference_bisections(monkeypatch, n, k):
    delta = 1.0 / n**2
    for epsilon in LEV_EPSILONS:
        for compute in (
            lambda e=epsilon: sketch.linear_mixing_gamma.__wrapped__(e, k, delta),
            lambda e=epsilon: sketch.sheffet_gamma.__wrapped__(e, k, delta),
        ):
            reference, fast = _both(monkeypatch, compute)
            assert fast == reference


def test_fewer_evaluations_and_the_same_early_exits(monkeypatch):
    calls = []

    def fun(g):
        calls.append(g)
        return mixing.mixing_epsilon(g, 600, 1e-8)[0]

    counts = []
    for path in ("reference", "bracketed"):
        monkeypatch.setattr(mixing, "_GAMMA_PATH", path)
        calls.clear()
        gamma = smallest_gamma(fun, 0.5, 2.5)
        counts.append(len(calls))
        assert fun(gamma) <= 0.5
    assert counts[1] < 0.7 * counts[0]
    # the doubling's early exit and its error are the reference's
    assert smallest_gamma(lambda g: 0.0, 1.0, 3.0) == 3.0 * (1.0 + 1e-12)
    with pytest.raises(ValueError, match="epsilon=.* too small"):
        smallest_gamma(lambda g: 1.0, 0.5, 2.0)


@settings(max_examples=60, deadline=None)
@given(
    scale=st.floats(1e-3, 1e3),
    power=st.floats(0.2, 3.0),
    floor=st.floats(0.0, 0.05),
    lower=st.floats(1.0, 10.0),
    epsilon=st.floats(0.06, 50.0),
)
def test_decreasing_functions_give_the_reference_gamma(scale, power, floor, lower, epsilon):
    """For decreasing functions of other shapes (powers, a floor, a log term)."""

    def fun(g):
        return scale / g**power + floor + math.log1p(1.0 / g)

    results = []
    for path in ("reference", "bracketed"):
        mixing._GAMMA_PATH = path
        try:
            try:
                results.append(smallest_gamma(fun, epsilon, lower))
            except ValueError:
                results.append("too small")
        finally:
            mixing._GAMMA_PATH = "bracketed"
    assert results[0] == results[1]
    if results[1] != "too small":
        assert fun(results[1]) <= epsilon
