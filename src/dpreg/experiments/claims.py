"""The claims registry: each paper's claim checks, evaluated on the pipeline's own tables.

A paper's check ``check(tables) -> {name: DataFrame}`` takes the aggregated table of each
of its studies (by study name). The ``claims`` table has one row per claim: what the
paper says, the statistic we computed, the criterion and whether it passed (rows built
with :func:`dpreg.experiments.claim_rows.claim_row`). A failed claim is a finding to
report, not an error. Adding a paper's checks is one entry in ``_CLAIM_SOURCES``, the
table behind :data:`CLAIM_CHECKS` (``CONTRIBUTING.md``, "Add a claim").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import pandas as pd

from dpreg._lazy import LazyTable
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

#: Paper key (the config's ``paper``) -> where its claim checks are defined (module of
#: ``dpreg.experiments``, function). A module is imported when its paper is first looked
#: up, so the claims job of one paper (and the workflow's DAG, which only lists the
#: papers) does not import the others' kinds and statistics (``docs/scaling.md``,
#: "Start-up of a job").
_CLAIM_SOURCES: dict[str, tuple[str, str]] = {
    "brown2024": ("brown2024_claims", "check"),
    "choquettechoo2023": ("choquettechoo2023_claims", "check"),
    "dpreg": ("dpreg_claims", "check"),
    "lev2026": ("lev2026_claims", "lev2026_claims"),
    "liang2025": ("liang2025_claims", "liang2025_claims"),
    "varshney2022": ("varshney2022_claims", "check"),
}


#: Paper key (the config's ``paper``) -> its claim checks (read-only; imported on lookup).
CLAIM_CHECKS: Mapping[str, ClaimsFn] = LazyTable("dpreg.experiments", _CLAIM_SOURCES)


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
