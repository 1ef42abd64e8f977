"""IHM's memoised mixing term gives the reference's gammas and certificates, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

import dpreg.estimators.ihm as ihm

# Lev et al.'s epsilon grid (config/config.yaml, lev_epsilons) and data-set sizes (n, d)
_EPSILONS = [float(e) for e in np.logspace(-1, 1, 6)]
_SIZES = [(506, 13), (17379, 16), (40768, 19)]


def _calibrations():
    out = []
    for n, d in _SIZES:
        delta = 1.0 / n**2
        for T in (2, 3):
            k = ihm.ihm_sketch_size(d, T, delta / 10.0)
            for method in ("rdp", "code"):
                for epsilon in _EPSILONS:
                    gamma = ihm.ihm_gamma.__wrapped__(epsilon, delta, k, T, method)
                    pieces = ihm._privacy_pieces.__wrapped__(gamma, 1.3, k, T, 1.0, delta)
                    code = ihm.ihm_code_half_epsilon(gamma, delta, k, T)
                    out.append((gamma, pieces, code))
    return out


def test_memo_is_the_reference_bitwise(monkeypatch):
    calls = {"n": 0}
    real = ihm.mixing_epsilon

    def counted(*args, **kwargs):
        calls["n"] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(ihm, "mixing_epsilon", counted)
    ihm._mixing_term_cached.cache_clear()
    fast = _calibrations()
    memo_calls = calls["n"]
    monkeypatch.setattr(ihm, "_MIXING_PATH", "reference")
    calls["n"] = 0
    ref = _calibrations()
    assert fast == ref  # floats compared exactly (== on tuples and dicts of floats)
    assert memo_calls < 0.8 * calls["n"]  # the shared doubling points are served
    ihm._mixing_term_cached.cache_clear()


@pytest.mark.parametrize("kT", [468, 468.0])
def test_memo_keys_by_value(kT):
    ihm._mixing_term_cached.cache_clear()
    assert ihm._mixing_term(50.0, kT, 1e-7) == ihm.mixing_epsilon(50.0, 468, 1e-7)
    assert ihm._mixing_term(50.0, 468, 1e-7) == ihm.mixing_epsilon(50.0, 468.0, 1e-7)
    assert ihm._mixing_term(51.0, kT, 1e-7) == ihm.mixing_epsilon(51.0, kT, 1e-7)
    # every argument is in the key: another delta or k at the same gamma is computed
    assert ihm._mixing_term(50.0, kT, 1e-9) == ihm.mixing_epsilon(50.0, kT, 1e-9)
    assert ihm._mixing_term(50.0, 2 * kT, 1e-7) == ihm.mixing_epsilon(50.0, 2 * kT, 1e-7)
