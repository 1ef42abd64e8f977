"""The claims registry: each paper's claim checks, evaluated on the pipeline's own tables.

A paper's check ``check(tables) -> {name: DataFrame}`` takes the aggregated table of each
of its studies (by study name). The ``claims`` table has one row per claim: what the
paper says, the statistic we computed, the criterion and whether it passed (rows built
with :func:`dpreg.experiments.claim_rows.claim_row`). A failed claim is a finding to
report, not an error. Adding a paper's checks is one entry in :data:`CLAIM_CHECKS`
(``CONTRIBUTING.md``, "Add a claim").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

import pandas as pd

from dpreg.experiments import (
    brown2024_claims,
    choquettechoo2023_claims,
    dpreg_claims,
    lev2026_claims,
    liang2025_claims,
    varshney2022_claims,
)
from dpreg.experiments.claim_rows import CLAIM_COLUMNS, claim_row, loglog_slope

__all__ = [
    "CLAIM_CHECKS",
    "CLAIM_COLUMNS",
    "ClaimsFn",
    "check_claims",
    "claim_row",
    "loglog_slope",
    "papers_with_claims",
]

ClaimsFn = Callable[[Mapping[str, pd.DataFrame]], dict[str, pd.DataFrame]]

#: Paper key (the config's ``paper``) -> its claim checks.
CLAIM_CHECKS: Mapping[str, ClaimsFn] = MappingProxyType(
    {
        "brown2024": brown2024_claims.check,
        "choquettechoo2023": choquettechoo2023_claims.check,
        "dpreg": dpreg_claims.check,
        "lev2026": lev2026_claims.lev2026_claims,
        "liang2025": liang2025_claims.liang2025_claims,
        "varshney2022": varshney2022_claims.check,
    }
)


def papers_with_claims() -> list[str]:
    """Return the papers that have claim checks, sorted.

    Examples
    --------
    >>> papers_with_claims()[:2]
    ['brown2024', 'choquettechoo2023']
    """
    return sorted(CLAIM_CHECKS)


def check_claims(paper: str, tables: Mapping[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Evaluate the claims of ``paper`` on its study tables."""
    if paper not in CLAIM_CHECKS:
        raise ValueError(f"no claim checks for paper {paper!r}; known: {papers_with_claims()}")
    return CLAIM_CHECKS[paper](tables)
