"""Rows of a claims table: the columns, one row per claim, and a log-log slope helper.

Each paper's claims module (``dpreg.experiments.<paper>_claims``) builds its rows with
:func:`claim_row`; the registry of claim checks is :mod:`dpreg.experiments.claims`.
"""

from __future__ import annotations

import numpy as np

__all__ = ["CLAIM_COLUMNS", "claim_row", "loglog_slope"]

CLAIM_COLUMNS = ["claim", "source", "study", "statistic", "value", "criterion", "passed"]


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
