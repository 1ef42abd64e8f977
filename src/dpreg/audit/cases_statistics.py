"""Audit cases for the statistics estimators (filled in by the audit work of issue 13)."""

from __future__ import annotations

from dpreg.audit.core import AuditCase

__all__ = ["cases"]


def cases(*, epsilon: float = 1.0, delta: float = 1e-5) -> list[AuditCase]:
    """Audit cases at the claim (epsilon, delta); see :mod:`dpreg.audit`."""
    return []
