"""Audit cases and their verdicts: run a mechanism on neighbouring datasets, score, compare.

An :class:`AuditCase` is one estimator, one neighbouring pair (D, D') under the relation
the estimator documents, one canary design and the claim being tested. Its ``scores``
callable runs the estimator ``trials`` times (vectorised, one call) on D (``side=0``) or
D' (``side=1``) and maps each output to one real score. :func:`run_audit` turns the scores
into the evidence of :mod:`dpreg.audit.stats` and a verdict.

Verdicts: ``pass`` (no evidence against the claim), ``fail`` (the audited lower bound
exceeds the claim: the estimator leaks more than it says), ``expected-fail`` (it fails and
the estimator's documentation disclaims this claim, with the reason in ``expected_fail``).
See ``docs/privacy.md`` ("Empirical privacy audit") for what an audit can and cannot show.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dpreg.audit.stats import (
    estimate_gdp_mu,
    gdp_epsilon,
    gdp_mu_from_approx_dp,
    gdp_mu_from_zcdp,
    threshold_test,
)
from dpreg.privacy.budgets import ZCDP, ApproxDP

__all__ = [
    "AuditCase",
    "AuditResult",
    "claimed_epsilon",
    "claimed_mu",
    "judge_scores",
    "run_audit",
]

ScoreFn = Callable[[int, np.random.Generator, int], np.ndarray]


def claimed_mu(claim: ZCDP | ApproxDP) -> float:
    """Largest Gaussian-DP mu compatible with ``claim`` (computed in :mod:`dpreg.audit.stats`).

    rho-zCDP: ``sqrt(2 rho)`` (exact for a Gaussian release); (epsilon, delta): the
    largest mu whose privacy profile stays below delta at epsilon.
    """
    if isinstance(claim, ZCDP):
        return gdp_mu_from_zcdp(claim.rho)
    return gdp_mu_from_approx_dp(claim.epsilon, claim.delta)


def claimed_epsilon(claim: ZCDP | ApproxDP, delta: float) -> float:
    """Return the epsilon the claim allows at ``delta``.

    (epsilon, delta) claims: epsilon itself (the threshold test uses the claim's delta).
    rho-zCDP claims: the epsilon of the sqrt(2 rho)-GDP profile at ``delta``, which is
    the exact epsilon of a Gaussian release with that rho and a valid upper bound on what
    a threshold test on a Gaussian release can show. (For a non-Gaussian rho-zCDP
    release this is not an upper bound; such cases use an (epsilon, delta) claim.)
    """
    if isinstance(claim, ApproxDP):
        return claim.epsilon
    return gdp_epsilon(gdp_mu_from_zcdp(claim.rho), delta)


@dataclass(frozen=True)
class AuditCase:
    """One estimator on one neighbouring pair with one canary.

    Attributes
    ----------
    estimator : str
        Registry name (:data:`dpreg.estimators.ESTIMATORS`).
    canary : str
        Short name of the canary design (e.g. ``"orthogonal-row"``).
    relation : str
        The estimator's documented neighbouring relation (``"add_remove"``,
        ``"replace_one"``, ``"zero_out"``).
    claim : ZCDP or ApproxDP
        The guarantee the estimator documents for this call (what the caller asked for).
    delta : float
        The delta at which the threshold test is evaluated.
    scores : callable
        ``scores(trials, rng, side) -> ndarray (trials,)``; side 0 runs on D, side 1 on D'.
    gaussian : bool
        True when the scores are exactly Gaussian with equal variance on both sides (the
        release is Gaussian given the data and the statistic is linear in it): then the
        audit also estimates mu.
    description : str
        What D, D' and the score are, in one sentence (goes into the report).
    expected_fail : str or None
        Why this case is expected to fail (the estimator disclaims the claim), if so.
    """

    estimator: str
    canary: str
    relation: str
    claim: ZCDP | ApproxDP
    delta: float
    scores: ScoreFn
    gaussian: bool
    description: str = ""
    expected_fail: str | None = None


@dataclass(frozen=True)
class AuditResult:
    """Evidence and verdict of one :class:`AuditCase` (one row of the audit table).

    ``epsilon_lower``/``epsilon_point``: the held-out threshold test's bound and point
    value; ``mu``, ``mu_lower``, ``mu_upper``: the Gaussian-DP estimate (NaN for
    non-Gaussian cases) and ``epsilon_gdp_lower`` the epsilon at ``delta`` of
    ``mu_lower``-GDP (a lower bound on epsilon valid under the Gaussian model);
    ``ratio``: audited over claimed (mu for Gaussian cases, else epsilon).
    """

    estimator: str
    canary: str
    relation: str
    claim: str
    delta: float
    trials: int
    epsilon_claim: float
    epsilon_lower: float
    epsilon_point: float
    mu_claim: float
    mu: float
    mu_lower: float
    mu_upper: float
    epsilon_gdp_lower: float
    sd_ratio: float
    ratio: float
    verdict: str
    reason: str

    def as_row(self) -> dict[str, object]:
        """Return the result as a flat dict (one table row)."""
        return dict(self.__dict__)


def _describe(claim: ZCDP | ApproxDP) -> str:
    if isinstance(claim, ZCDP):
        return f"rho={claim.rho:.6g}-zCDP"
    return f"({claim.epsilon:.6g}, {claim.delta:.3g})-DP"


def run_audit(
    case: AuditCase, *, trials: int, rng: np.random.Generator, alpha: float = 0.05
) -> AuditResult:
    """Run ``case`` ``trials`` times on each side and judge it.

    The threshold test (:func:`dpreg.audit.stats.threshold_test`) gives an epsilon lower
    bound at ``case.delta`` valid with probability ``1 - alpha``; for Gaussian cases the
    mu interval (:func:`dpreg.audit.stats.estimate_gdp_mu`) at level ``1 - alpha`` is
    compared with :func:`claimed_mu`. The case fails if either piece of evidence exceeds
    the claim; with both tests the false-alarm rate of a correct mechanism is at most
    ``2 alpha`` (at most ``alpha`` for non-Gaussian cases).

    Examples
    --------
    >>> from dpreg.privacy import ZCDP
    >>> case = AuditCase(
    ...     estimator="toy", canary="unit", relation="add_remove", claim=ZCDP(0.5),
    ...     delta=1e-5, gaussian=True,
    ...     scores=lambda t, rng, side: rng.normal(float(side), 1.0, t),
    ... )
    >>> run_audit(case, trials=20000, rng=np.random.default_rng(0)).verdict
    'pass'
    """
    if trials < 8:
        raise ValueError(f"trials must be >= 8 for an audit; got {trials}")
    s0 = np.asarray(case.scores(trials, rng, 0), dtype=np.float64).ravel()
    s1 = np.asarray(case.scores(trials, rng, 1), dtype=np.float64).ravel()
    if s0.shape != (trials,) or s1.shape != (trials,):
        raise ValueError(f"{case.estimator}/{case.canary}: scores must have shape ({trials},)")
    return judge_scores(case, s0, s1, alpha=alpha)


def judge_scores(
    case: AuditCase, scores0: np.ndarray, scores1: np.ndarray, *, alpha: float = 0.05
) -> AuditResult:
    """Judge ``case`` from scores already drawn on D (``scores0``) and D' (``scores1``).

    The evidence and verdict of :func:`run_audit`; the workflow's ``privacy_audit`` kind
    draws scores in seed blocks and judges them all at once here.
    """
    s0 = np.asarray(scores0, dtype=np.float64).ravel()
    s1 = np.asarray(scores1, dtype=np.float64).ravel()
    trials = int(min(s0.size, s1.size))
    test = threshold_test(s0, s1, delta=case.delta, alpha=alpha)
    eps_claim = claimed_epsilon(case.claim, case.delta)
    mu_claim = claimed_mu(case.claim)
    mu = mu_lo = mu_hi = sd_ratio = math.nan
    failed = []
    if test.epsilon_lower > eps_claim:
        failed.append(f"epsilon lower bound {test.epsilon_lower:.3g} > claim {eps_claim:.3g}")
    if case.gaussian:
        est = estimate_gdp_mu(s0, s1, alpha=alpha)
        mu, mu_lo, mu_hi, sd_ratio = est.mu, est.lower, est.upper, est.sd_ratio
        if mu_lo > mu_claim:
            failed.append(f"mu interval [{mu_lo:.3g}, {mu_hi:.3g}] above claim {mu_claim:.3g}")
        ratio = mu / mu_claim if mu_claim > 0 else math.inf
    else:
        ratio = test.epsilon_lower / eps_claim if eps_claim > 0 else math.inf
    if not failed:
        verdict, reason = "pass", ""
    elif case.expected_fail:
        verdict, reason = "expected-fail", f"{case.expected_fail}; {'; '.join(failed)}"
    else:
        verdict, reason = "fail", "; ".join(failed)
    return AuditResult(
        estimator=case.estimator,
        canary=case.canary,
        relation=case.relation,
        claim=_describe(case.claim),
        delta=case.delta,
        trials=trials,
        epsilon_claim=eps_claim,
        epsilon_lower=test.epsilon_lower,
        epsilon_point=test.epsilon_point,
        mu_claim=mu_claim,
        mu=mu,
        mu_lower=mu_lo,
        mu_upper=mu_hi,
        epsilon_gdp_lower=gdp_epsilon(mu_lo, case.delta) if case.gaussian else math.nan,
        sd_ratio=sd_ratio,
        ratio=ratio,
        verdict=verdict,
        reason=reason,
    )
