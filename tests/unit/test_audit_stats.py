"""The audit's statistics against independent computations, and their error rates."""

from __future__ import annotations

import doctest
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import dpreg.audit.core
import dpreg.audit.stats
from dpreg.audit import AuditCase, judge_scores, run_audit
from dpreg.audit.stats import (
    clopper_pearson,
    epsilon_from_rates,
    estimate_gdp_mu,
    gdp_delta,
    gdp_epsilon,
    gdp_mu_from_approx_dp,
    threshold_test,
)
from dpreg.privacy import ZCDP, ApproxDP, analytic_gaussian_sigma, gaussian_epsilon


@pytest.mark.parametrize("module", [dpreg.audit.stats, dpreg.audit.core])
def test_docstring_examples_run(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


@pytest.mark.parametrize(("k", "n"), [(0, 10), (3, 10), (10, 10), (57, 1000), (1, 20000)])
def test_clopper_pearson_matches_scipy_exact_interval(k, n):
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    lo, hi = clopper_pearson(k, n, 0.05)
    assert lo == pytest.approx(ci.low, abs=1e-12)
    assert hi == pytest.approx(ci.high, abs=1e-12)


@pytest.mark.parametrize(("eps", "delta"), [(0.1, 1e-5), (1.0, 1e-5), (8.0, 1e-6), (30.0, 1e-9)])
def test_gdp_claims_agree_with_the_analytic_gaussian_mechanism(eps, delta):
    # The AGM's sigma for sensitivity 1 is 1/mu of the largest (eps, delta)-DP mu-GDP.
    assert gdp_mu_from_approx_dp(eps, delta) == pytest.approx(
        1.0 / analytic_gaussian_sigma(eps, delta, 1.0), rel=1e-7
    )
    mu = gdp_mu_from_approx_dp(eps, delta)
    assert gdp_epsilon(mu, delta) == pytest.approx(eps, rel=1e-7)
    assert gaussian_epsilon(1.0 / mu, delta, 1.0) == pytest.approx(eps, rel=1e-7)


@given(
    mu=st.floats(0.01, 20.0),
    eps=st.floats(0.0, 50.0),
    bump=st.floats(1.01, 3.0),
)
@settings(max_examples=200, deadline=None)
def test_gdp_delta_is_a_privacy_profile(mu, eps, bump):
    d = gdp_delta(mu, eps)
    assert 0.0 <= d <= 1.0
    assert gdp_delta(mu * bump, eps) >= d - 1e-15  # more distinguishable, larger delta
    assert gdp_delta(mu, eps + 0.5) <= d + 1e-15  # larger epsilon, smaller delta


def test_epsilon_from_rates_inverts_the_dp_inequalities():
    # An (eps, delta)-DP test satisfies fpr + e^eps fnr >= 1 - delta and the same with the
    # rates swapped; the symmetric test meeting both with equality gives eps back.
    eps, delta = 1.3, 1e-3
    rate = (1 - delta) / (1 + math.exp(eps))
    assert epsilon_from_rates(rate, rate, delta) == pytest.approx(eps)
    # a test with fpr = 0.01 and that fnr needs the larger epsilon of the two inequalities
    fnr = (1 - delta - 0.01) / math.exp(eps)
    assert epsilon_from_rates(0.01, fnr, delta) == pytest.approx(math.log((1 - delta - fnr) / 0.01))
    assert epsilon_from_rates(0.5, 0.5, 0.0) == 0.0


def test_threshold_test_false_alarm_rate_is_at_most_alpha():
    # 300 audits of a mu = 1 Gaussian pair, whose exact epsilon at delta is known: the
    # lower bound may exceed it in at most alpha of the audits. With alpha = 0.1 and 300
    # audits the count of exceedances is at most Binomial(300, 0.1); its 0.999 quantile
    # (45) bounds a correct implementation's count; a bound that ignored the confidence
    # correction exceeds in about half of them (checked below via epsilon_point).
    rng = np.random.default_rng(20261124)
    delta, alpha, reps, n = 1e-2, 0.1, 300, 2000
    true_eps = gdp_epsilon(1.0, delta)
    lower = np.empty(reps)
    point = np.empty(reps)
    for i in range(reps):
        t = threshold_test(rng.normal(0, 1, n), rng.normal(1, 1, n), delta=delta, alpha=alpha)
        lower[i], point[i] = t.epsilon_lower, t.epsilon_point
    assert np.sum(lower > true_eps) <= stats.binom.ppf(0.999, reps, alpha)
    assert np.mean(lower) > 0.4 * true_eps  # and it has power
    assert np.sum(point > true_eps) > stats.binom.ppf(0.999, reps, alpha)


def test_gdp_interval_covers_at_its_level():
    rng = np.random.default_rng(7)
    reps, n, mu, alpha = 400, 3000, 0.8, 0.05
    cover = 0
    for _ in range(reps):
        est = estimate_gdp_mu(rng.normal(0, 2, n), rng.normal(2 * mu, 2, n), alpha=alpha)
        cover += est.lower <= mu <= est.upper
    # coverage 0.95: the count of misses is Binomial(400, 0.05), mean 20, sd 4.4
    assert abs((reps - cover) - reps * alpha) <= 4.5 * math.sqrt(reps * alpha * (1 - alpha))


def _gaussian_case(mean1: float, claim, expected_fail=None) -> AuditCase:
    return AuditCase(
        estimator="toy",
        canary="unit",
        relation="add_remove",
        claim=claim,
        delta=1e-5,
        gaussian=True,
        scores=lambda t, rng, side: rng.normal(mean1 * side, 1.0, t),
        expected_fail=expected_fail,
    )


def test_verdicts_pass_fail_and_expected_fail():
    rng = np.random.default_rng(3)
    rho = 0.5  # claims mu = 1
    assert run_audit(_gaussian_case(1.0, ZCDP(rho)), trials=20000, rng=rng).verdict == "pass"
    bad = run_audit(_gaussian_case(2.0, ZCDP(rho)), trials=20000, rng=rng)  # half the noise
    assert bad.verdict == "fail" and bad.mu_lower > 1.0 and "mu interval" in bad.reason
    exp = run_audit(_gaussian_case(2.0, ZCDP(rho), "disclaimed"), trials=20000, rng=rng)
    assert exp.verdict == "expected-fail" and exp.reason.startswith("disclaimed")
    # an (eps, delta) claim: the AGM's mu passes, twice it fails
    claim = ApproxDP(1.0, 1e-5)
    mu = gdp_mu_from_approx_dp(1.0, 1e-5)
    assert run_audit(_gaussian_case(mu, claim), trials=20000, rng=rng).verdict == "pass"
    assert run_audit(_gaussian_case(4 * mu, claim), trials=20000, rng=rng).verdict == "fail"


def test_threshold_evidence_alone_catches_a_large_leak():
    case = _gaussian_case(8.0, ZCDP(0.5))
    case = AuditCase(**{**case.__dict__, "gaussian": False})
    s = np.random.default_rng(4)
    result = judge_scores(case, s.normal(0, 1, 20000), s.normal(8, 1, 20000))
    assert result.verdict == "fail" and result.epsilon_lower > result.epsilon_claim
    assert math.isnan(result.mu)


def test_run_audit_rejects_wrong_score_shapes():
    case = AuditCase(
        estimator="toy",
        canary="unit",
        relation="add_remove",
        claim=ZCDP(0.5),
        delta=1e-5,
        gaussian=True,
        scores=lambda t, rng, side: rng.normal(0, 1, t + 1),
    )
    with pytest.raises(ValueError, match="shape"):
        run_audit(case, trials=100, rng=np.random.default_rng(0))
