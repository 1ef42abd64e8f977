"""Empirical privacy audit of every private estimator (``docs/privacy.md``, "Audit").

:mod:`dpreg.audit.stats` holds the statistics (Clopper--Pearson threshold test, Gaussian-DP
estimate, claims in GDP units), :mod:`dpreg.audit.core` the case/verdict contract, and the
``cases_*`` modules one :class:`AuditCase` factory per family of estimators, listed in
:data:`CASE_FACTORIES` (an explicit table: a new family is one line here).
"""

from __future__ import annotations

from collections.abc import Callable

from dpreg.audit import cases_classifier, cases_iterative, cases_statistics
from dpreg.audit.core import (
    AuditCase,
    AuditResult,
    claimed_epsilon,
    claimed_mu,
    judge_scores,
    run_audit,
)

__all__ = [
    "CASE_FACTORIES",
    "AuditCase",
    "AuditResult",
    "audit_cases",
    "claimed_epsilon",
    "claimed_mu",
    "judge_scores",
    "run_audit",
]

CASE_FACTORIES: dict[str, Callable[..., list[AuditCase]]] = {
    "statistics": cases_statistics.cases,
    "iterative": cases_iterative.cases,
    "classifier": cases_classifier.cases,
}


def audit_cases(
    estimators: list[str] | None = None, *, epsilon: float = 1.0, delta: float = 1e-5
) -> list[AuditCase]:
    """Every audit case at the claim (epsilon, delta), optionally only for ``estimators``.

    Raises ``ValueError`` naming any requested estimator that has no audit case.
    """
    found = [c for f in CASE_FACTORIES.values() for c in f(epsilon=epsilon, delta=delta)]
    if estimators is None:
        return found
    known = {c.estimator for c in found}
    missing = sorted(set(estimators) - known)
    if missing:
        raise ValueError(f"no audit case for estimators {missing}; audited: {sorted(known)}")
    return [c for c in found if c.estimator in estimators]
