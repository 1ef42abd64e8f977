"""Checks of each paper's claims, evaluated on the pipeline's own tables.

A paper registers a function ``check(tables) -> {name: DataFrame}`` taking the
aggregated table of each of its studies (by study name). The ``claims`` table has one
row per claim: what the paper says, the statistic we computed, the criterion and
whether it passed. A failed claim is a finding to report, not an error.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd

ClaimsFn = Callable[[Mapping[str, pd.DataFrame]], dict[str, pd.DataFrame]]

CLAIM_CHECKS: dict[str, ClaimsFn] = {}

CLAIM_COLUMNS = ["claim", "source", "study", "statistic", "value", "criterion", "passed"]


def register_claims(paper: str) -> Callable[[ClaimsFn], ClaimsFn]:
    """Register the claim checks of ``paper`` (decorator)."""

    def decorator(func: ClaimsFn) -> ClaimsFn:
        CLAIM_CHECKS[paper] = func
        return func

    return decorator


def papers_with_claims() -> list[str]:
    """Return the papers that have claim checks (importing the built-in ones first)."""
    import dpreg.experiments.brown2024_claims  # noqa: F401
    import dpreg.experiments.choquettechoo2023_claims  # noqa: F401
    import dpreg.experiments.dpreg_claims  # noqa: F401
    import dpreg.experiments.lev2026_claims  # noqa: F401
    import dpreg.experiments.liang2025_claims  # noqa: F401
    import dpreg.experiments.varshney2022_claims  # noqa: F401

    return sorted(CLAIM_CHECKS)


def check_claims(paper: str, tables: Mapping[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Evaluate the claims of ``paper`` on its study tables."""
    papers_with_claims()
    if paper not in CLAIM_CHECKS:
        raise ValueError(f"no claim checks for paper {paper!r}")
    return CLAIM_CHECKS[paper](tables)


def claim_row(
    claim: str,
    source: str,
    study: str,
    statistic: str,
    value: float,
    criterion: str,
    passed: bool | None,
) -> dict[str, object]:
    """One row of a claims table (``passed`` None: not evaluable at this scale)."""
    return {
        "claim": claim,
        "source": source,
        "study": study,
        "statistic": statistic,
        "value": float(value),
        "criterion": criterion,
        "passed": "n/a" if passed is None else ("yes" if passed else "NO"),
    }


def loglog_slope(x: np.ndarray, y: np.ndarray) -> float:
    """Least-squares slope of log(y) on log(x)."""
    x, y = np.log(np.asarray(x, float)), np.log(np.asarray(y, float))
    if x.size < 2:
        return float("nan")
    return float(np.polyfit(x, y, 1)[0])
