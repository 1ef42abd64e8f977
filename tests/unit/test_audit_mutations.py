"""The audit catches broken mechanisms and passes the real ones (issue 13 mutation tests).

Every mutation below breaks one estimator the way a bug would (half the noise, half the
sensitivity in its calibration, or no clipping) and must make its audit case fail; the
unmutated estimators must pass at the same seeds. Level alpha = 0.01: a correct
mechanism fails a Gaussian case with probability at most 2 alpha = 2% (threshold test and
mu interval, each at most alpha) and a threshold-only case with at most 1%; the seeds are
fixed, so the outcome is reproducible. Halving the noise doubles mu (a white-box case
audits mu within a few percent of the claim, so the mu interval then lies far above it).
"""

from __future__ import annotations

import numpy as np
import pytest

import dpreg.estimators.ambssgd as ambssgd
import dpreg.estimators.ambssgd_core as ambssgd_core
import dpreg.estimators.dpgd as dpgd
import dpreg.estimators.ftrl as ftrl
import dpreg.estimators.ihm as ihm
import dpreg.estimators.iv as iv
import dpreg.estimators.sketch as sketch
from dpreg.audit import audit_cases, run_audit
from dpreg.estimators import ESTIMATORS
from dpreg.estimators.ftrl_correlations import ToeplitzCorrelation

ALPHA = 0.01
TRIALS = 4000
TRIALS_BY_ESTIMATOR = {
    "dp_ssgd": 1000,  # sequential: fewer runs
    "dp_sgd_poisson": 2000,  # subsampled
    "sheffet_sketch": 40000,  # threshold test only: needs more runs for power (0.2 s)
    "linear_mixing": 40000,
}
NON_PRIVATE = {"ols", "2s_gd", "ambssgd_sgd", "dp_ambssgd_oracleclip"}
# private library functions outside the regression registry, audited too
LIBRARY = {"dp_ftrl_logistic"}  # dpreg.estimators.ftrl_logistic.train_dp_ftrl_logistic
AUDITED = sorted((set(ESTIMATORS) - NON_PRIVATE) | LIBRARY)


def _audit(estimator: str, canary: str | None = None, *, seed: int = 2026):
    found = [c for c in audit_cases([estimator]) if canary is None or c.canary == canary]
    assert found, (estimator, canary)
    trials = TRIALS_BY_ESTIMATOR.get(estimator, TRIALS)
    return [
        run_audit(c, trials=trials, rng=np.random.default_rng(seed), alpha=ALPHA) for c in found
    ]


def test_every_private_estimator_has_an_audit_case():
    audited = {c.estimator for c in audit_cases()}
    assert audited == set(AUDITED)


@pytest.mark.parametrize("estimator", AUDITED)
def test_unmutated_estimators_pass_or_fail_as_documented(estimator):
    for result in _audit(estimator):
        expected = "expected-fail" if "paper-claim" in result.canary else "pass"
        assert result.verdict == expected, result
        if np.isfinite(result.mu) and result.verdict == "pass":
            assert result.mu_lower <= result.mu_claim


def _halve_result(module, name):
    real = getattr(module, name)
    return real, (lambda *a, **k: real(*a, **k) / 2)


MUTATIONS = {
    # estimator: {mutation: (module, attribute, replacement factory)}
    "dp_gd": {
        "halved noise": (dpgd, "dp_gd_noise_std", lambda real: lambda *a, **k: real(*a, **k) / 2),
        "halved sensitivity": (
            dpgd,
            "dp_gd_sensitivity",
            lambda real: lambda *a, **k: real(*a, **k) / 2,
        ),
        # the default gradient kernel (kernel="fast") built without clipping
        "clipping dropped": (
            dpgd,
            "ClippedGradientKernel",
            lambda real: lambda X, y, clip, **k: real(X, y, np.inf, **k),
        ),
    },
    "ihm": {
        "halved noise": (ihm, "ihm_sigma", lambda real: lambda *a, **k: real(*a, **k) / 2),
        "halved sensitivity": (
            ihm,
            "ihm_sigma",
            lambda real: (
                lambda eps, delta, T, clip, *a, **k: real(eps, delta, T, clip / 2, *a, **k)
            ),
        ),
    },
    "sheffet_sketch": {
        # gamma is the noise variance: a quarter of it is half the noise std
        "halved noise": (sketch, "sheffet_gamma", lambda real: lambda *a, **k: real(*a, **k) / 4),
        "halved sensitivity": (
            sketch,
            "_prepare",
            lambda real: lambda *a, **k: _rows_doubled(real(*a, **k)),
        ),
    },
    "dp_ftrl": {
        "halved noise": (
            ftrl,
            "ftrl_noise_multiplier",
            lambda real: lambda *a, **k: real(*a, **k) / 2,
        ),
        "halved sensitivity": (
            ToeplitzCorrelation,
            "sensitivity_sq",
            lambda real: lambda self, T: real(self, T) / 4,
        ),
        # caught by the multi-epoch case (row-in-every-epoch)
        "halved multi-epoch sensitivity": (
            ftrl,
            "multi_participation_sensitivity_sq",
            lambda real: lambda *a, **k: real(*a, **k) / 4,
        ),
        "one participation for several epochs": (
            ftrl,
            "multi_participation_sensitivity_sq",
            lambda real: lambda c, k, b, **kw: real(c, 1, b, **kw),
        ),
    },
    "dp_sgd_stream": {
        "halved noise": (
            ftrl,
            "ftrl_noise_multiplier",
            lambda real: lambda *a, **k: real(*a, **k) / 2,
        ),
        "one participation for several epochs": (
            ftrl,
            "multi_participation_sensitivity_sq",
            lambda real: lambda c, k, b, **kw: real(c, 1, b, **kw),
        ),
    },
    "dp_ftrl_logistic": {
        "halved noise": (
            ftrl,
            "ftrl_noise_multiplier",
            lambda real: lambda *a, **k: real(*a, **k) / 2,
        ),
        "one participation for several epochs": (
            ftrl,
            "multi_participation_sensitivity_sq",
            lambda real: lambda c, k, b, **kw: real(c, 1, b, **kw),
        ),
    },
    "dp_2s_gd": {
        "halved noise": (iv, "noise_scale", lambda real: lambda *a, **k: real(*a, **k) / 2),
        "halved sensitivity": (
            iv,
            "noise_scale",
            lambda real: lambda clip, n, T, rho, **k: real(clip / 2, n, T, rho, **k),
        ),
    },
    "dp_ambssgd_fixedclip": {
        "halved noise": (
            ambssgd,
            "fixed_clip_noise_multiplier",
            lambda real: lambda *a, **k: real(*a, **k) / 2,
        ),
        "halved sensitivity": (ambssgd_core, "GRADIENT_SENSITIVITY", lambda real: real / 2),
    },
}


def _rows_doubled(prepared):
    # the sketch's rows reach norm 2 while the calibration assumes norm 1
    *head, scale, A, (w, V) = prepared  # A is None for the Wishart sampler (Gram only)
    return (*head, scale, None if A is None else 2.0 * A, (4.0 * w, V))


@pytest.mark.parametrize(
    ("estimator", "mutation"),
    [(e, m) for e, muts in MUTATIONS.items() for m in muts],
)
def test_the_audit_catches_each_mutation(estimator, mutation, monkeypatch):
    module, name, make = MUTATIONS[estimator][mutation]
    monkeypatch.setattr(module, name, make(getattr(module, name)))
    results = _audit(estimator)
    assert any(r.verdict == "fail" for r in results), [
        (r.canary, r.verdict, r.mu, r.mu_claim, r.epsilon_lower, r.epsilon_claim) for r in results
    ]
