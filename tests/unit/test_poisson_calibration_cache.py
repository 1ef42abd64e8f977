"""DP-SGD (Poisson) calibration: repeated accountant calls are served from a cache.

The accountant's epsilon is a pure function of its public arguments; caching it must
give the same noise multiplier and the same certified epsilon as computing every call
afresh (issue 18), while ``brentq``'s re-evaluation of the bracket ends and a fit's
certificate of the calibrated noise cost no new accountant.
"""

from __future__ import annotations

import dpreg.estimators.ambssgd_privacy as privacy
from dpreg.estimators.ambssgd_privacy import calibrate_poisson_dpsgd, poisson_dpsgd_epsilon
from dpreg.privacy.poisson_rdp import poisson_rdp_epsilon_full

ARGS = (1.0, 1e-6, 0.01, 300, "rdp")  # epsilon, delta, sampling rate, steps, accountant


def _fresh(monkeypatch):
    calibrate_poisson_dpsgd.cache_clear()
    privacy._accountant_epsilon.cache_clear()
    built = []
    real = privacy.poisson_rdp_epsilon  # what an RDP accountant call runs

    def counting(*args):
        built.append(args)
        return real(*args)

    monkeypatch.setattr(privacy, "poisson_rdp_epsilon", counting)
    return built


def test_cached_calibration_equals_uncached(monkeypatch):
    built = _fresh(monkeypatch)
    sigma = calibrate_poisson_dpsgd(*ARGS)
    calls = len(built)
    eps, delta, q, steps, accountant = ARGS
    certified = poisson_dpsgd_epsilon(sigma, q, steps, delta, accountant)
    assert len(built) == calls  # the certificate of the calibrated sigma: a cache hit

    # the same bisection with every accountant call made afresh
    uncached = privacy._accountant_epsilon.__wrapped__
    monkeypatch.setattr(privacy, "_accountant_epsilon", uncached)
    calibrate_poisson_dpsgd.cache_clear()
    built.clear()
    assert calibrate_poisson_dpsgd(*ARGS) == sigma
    assert len(built) > calls  # brentq re-evaluates the bracket ends: cached above
    assert uncached(sigma, q, steps, delta, accountant) == certified
    assert certified <= eps


def test_calibration_with_skipped_orders_equals_the_full_accountant(monkeypatch):
    # dpreg.privacy.poisson_rdp skips orders that cannot attain the minimum: the same
    # calibrated sigma (bit for bit), hence the same draws, as the full RdpAccountant.
    calibrate_poisson_dpsgd.cache_clear()
    privacy._accountant_epsilon.cache_clear()
    fast = [calibrate_poisson_dpsgd(e, 1e-6, 0.01, 300) for e in (0.1, 1.0, 10.0)]
    monkeypatch.setattr(privacy, "poisson_rdp_epsilon", poisson_rdp_epsilon_full)
    calibrate_poisson_dpsgd.cache_clear()
    privacy._accountant_epsilon.cache_clear()
    assert [calibrate_poisson_dpsgd(e, 1e-6, 0.01, 300) for e in (0.1, 1.0, 10.0)] == fast
    calibrate_poisson_dpsgd.cache_clear()
    privacy._accountant_epsilon.cache_clear()


def test_cache_keys_on_every_argument(monkeypatch):
    _fresh(monkeypatch)
    base = poisson_dpsgd_epsilon(1.0, 0.01, 300, 1e-6)
    assert poisson_dpsgd_epsilon(1.1, 0.01, 300, 1e-6) < base
    assert poisson_dpsgd_epsilon(1.0, 0.02, 300, 1e-6) > base
    assert poisson_dpsgd_epsilon(1.0, 0.01, 600, 1e-6) > base
    assert poisson_dpsgd_epsilon(1.0, 0.01, 300, 1e-8) > base
    assert poisson_dpsgd_epsilon(1.0, 0.01, 300, 1e-6, "pld") < base  # PLD is tighter
