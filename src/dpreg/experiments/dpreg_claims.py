"""Checks of dpreg's own claims (paper key ``dpreg``), evaluated on its studies' tables.

* ``privacy_audit``: for every audited estimator, no audit case contradicts the privacy
  claim (verdict ``fail``); ``expected-fail`` cases are disclaimed in the estimator's
  documentation and reported with their reason, not counted as passes or failures.
* Coverage: every estimator with an audit case (:func:`dpreg.audit.audit_cases`) appears
  in some audit table of the run.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from dpreg.experiments.claim_rows import CLAIM_COLUMNS, claim_row

_SOURCE = "docs/privacy.md, Empirical privacy audit"


def _audit_tables(tables: Mapping[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    return {
        name: t
        for name, t in tables.items()
        if {"verdict", "canary", "epsilon_lower"} <= set(t.columns)
    }


def check(tables: Mapping[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """One claim row per (audit study, estimator) and one for audit coverage."""
    from dpreg.audit import audit_cases

    rows = []
    seen: set[str] = set()
    for study, table in sorted(_audit_tables(tables).items()):
        for estimator, group in table.groupby("estimator", sort=True):
            seen.add(str(estimator))
            fails = int((group["verdict"] == "fail").sum())
            expected = int((group["verdict"] == "expected-fail").sum())
            rows.append(
                claim_row(
                    f"{estimator}: the audit finds no leak beyond the documented claim",
                    _SOURCE,
                    study,
                    f"cases failing (of {len(group)}; {expected} expected-fail)",
                    fails,
                    "0 cases with verdict fail",
                    fails == 0,
                )
            )
    if rows:
        audited = {c.estimator for c in audit_cases()}
        missing = sorted(audited - seen)
        rows.append(
            claim_row(
                "every estimator with an audit case is audited in this run",
                _SOURCE,
                ",".join(sorted(_audit_tables(tables))),
                "estimators not audited" + (f" ({', '.join(missing)})" if missing else ""),
                len(missing),
                "0",
                not missing,
            )
        )
    return {"claims": pd.DataFrame(rows, columns=CLAIM_COLUMNS)}
