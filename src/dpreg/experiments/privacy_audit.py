"""The ``privacy_audit`` study kind: the empirical audit of :mod:`dpreg.audit` in the workflow.

A cell is one estimator (or a list of estimators run in one job) at one claimed epsilon
(``estimator`` and ``epsilon`` in ``grid`` or ``params``; ``delta`` and ``alpha`` in
``params``). :func:`run_audit_cell` draws, for every audit case
of the estimator (canary designs, :func:`dpreg.audit.audit_cases`), one score per trial on
each side of the neighbouring pair; one call per side and case, vectorised over the seed
block's trials. :func:`summarise_audit` judges every (estimator, canary, epsilon) from all
its scores at once (:func:`dpreg.audit.judge_scores`), so the evidence uses every trial of
the study whatever the chunking. See ``docs/privacy.md`` ("Empirical privacy audit").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dpreg.audit import AuditCase, audit_cases, judge_scores
from dpreg.data.datasets import Dataset
from dpreg.experiments.params import KindParams, open_interval, param, positive
from dpreg.experiments.study_kind import StudyKind
from dpreg.privacy.budgets import ZCDP, ApproxDP
from dpreg.seeds import stream_key

__all__ = ["AUDIT_KEYS", "AuditParams", "check_audit_cell", "run_audit_cell", "summarise_audit"]

AUDIT_KEYS = frozenset({"estimator", "epsilon", "delta", "alpha"})

_CASE_COLUMNS = ("estimator", "canary", "relation", "claim_unit", "claim_value", "delta")


def _claim_columns(case: AuditCase) -> dict[str, Any]:
    claim = case.claim
    if isinstance(claim, ZCDP):
        return {"claim_unit": "zcdp", "claim_value": claim.rho}
    return {"claim_unit": "approx_dp", "claim_value": claim.epsilon}


def _keys(cell: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in cell.items() if k != "conversion"}


def _cases(cell: Mapping[str, Any]) -> list[AuditCase]:
    names = cell["estimator"]
    names = [str(n) for n in names] if isinstance(names, list | tuple) else [str(names)]
    return audit_cases(names, epsilon=float(cell["epsilon"]), delta=float(cell["delta"]))


@dataclass(frozen=True)
class AuditParams(KindParams):
    """Cell keys of the ``privacy_audit`` kind."""

    kind = "privacy_audit"
    estimator: str | list[str] = param(
        doc="a private estimator with audit cases (`dpreg.audit.audit_cases`), or a list of"
        " them run in one job; others stop the dry run"
    )
    epsilon: float = param(
        doc="the claim's epsilon: each case asks its estimator for this budget", check=positive
    )
    delta: float = param(doc="the claim's delta", check=open_interval(0, 1))
    alpha: float = param(
        0.05,
        doc="level of the audit's confidence bounds: a correct estimator fails a case with"
        " probability at most alpha per piece of evidence",
        check=open_interval(0, 0.5),
    )


def check_audit_cell(cell: Mapping[str, Any]) -> None:
    """Raise ``ValueError`` for a cell the audit cannot run (checked before any job)."""
    AuditParams.from_cell(_keys(cell))
    _cases(cell)  # names the estimator if it has no audit case


def run_audit_cell(
    cell: Mapping[str, Any],
    *,
    trials: int,
    first_trial: int,
    seed: int,
    data: Dataset | None = None,
) -> pd.DataFrame:
    """Scores of one seed block: ``2 * trials`` rows per audit case of the cell's estimator.

    Each case draws from ``default_rng([seed, stream_key(estimator, canary)])``
    (:func:`dpreg.seeds.stream_key`), side 0 (D) before side 1 (D'): adding a case never
    changes the draws of the others.
    Columns: ``trial``, ``seed``, ``estimator``, ``canary``, ``relation``, ``claim_unit``
    (``zcdp``/``approx_dp``), ``claim_value`` (rho or epsilon), ``delta``, ``gaussian``,
    ``expected_fail``, ``side`` and ``score``. The scores are the mechanism's outputs on
    designed data (no private data is read): every column is public.
    """
    frames = []
    trial = np.arange(first_trial, first_trial + trials)
    for case in _cases(cell):
        rng = np.random.default_rng([seed, stream_key(case.estimator, case.canary)])
        for side in (0, 1):
            scores = np.asarray(case.scores(trials, rng, side), dtype=np.float64).ravel()
            if scores.shape != (trials,):
                raise ValueError(
                    f"audit case {case.estimator}/{case.canary} returned {scores.shape} scores"
                    f" for {trials} trials"
                )
            frames.append(
                pd.DataFrame(
                    {
                        "trial": trial,
                        "seed": seed,
                        "estimator": case.estimator,
                        "canary": case.canary,
                        "relation": case.relation,
                        **_claim_columns(case),
                        "delta": case.delta,
                        "gaussian": case.gaussian,
                        "expected_fail": case.expected_fail or "",
                        "description": case.description,
                        "side": side,
                        "score": scores,
                    }
                )
            )
    frame = pd.concat(frames, ignore_index=True)
    frame["alpha"] = float(AuditParams.from_cell(_keys(cell)).alpha)
    return frame


def _case_from_rows(first: pd.Series) -> AuditCase:
    claim: ZCDP | ApproxDP
    if first["claim_unit"] == "zcdp":
        claim = ZCDP(float(first["claim_value"]))
    else:
        claim = ApproxDP(float(first["claim_value"]), float(first["delta"]))
    return AuditCase(
        estimator=str(first["estimator"]),
        canary=str(first["canary"]),
        relation=str(first["relation"]),
        claim=claim,
        delta=float(first["delta"]),
        scores=lambda *_: np.empty(0),
        gaussian=bool(first["gaussian"]),
        description=str(first.get("description", "")),
        expected_fail=str(first["expected_fail"]) or None,
    )


def summarise_audit(runs: pd.DataFrame, references: Sequence[Any] = ()) -> pd.DataFrame:
    """One row per (estimator, canary, claim): evidence and verdict over all trials.

    ``alpha`` (the cell's) is a family-wise level: it is split equally over the study's
    tests (Bonferroni, column ``alpha_case``; a Gaussian case holds two tests, the
    threshold test and the mu interval), so that a correct implementation shows no
    ``fail`` anywhere in the table with probability at least ``1 - alpha``
    (docs/privacy.md). Scores are ordered by trial before judging,
    so the threshold test's selection half (the first half of the trials) does not
    depend on how trials were chunked.
    """
    rows = []
    keys = ["estimator", "canary", "claim_unit", "claim_value", "delta"]
    # Row positions of each group (groups in sorted key order, rows in frame order, as
    # iterating the groupby gives them). Iterating the groupby itself copies the whole
    # frame at once (2 GB for the paper's 2.16 million rows), and copying a group's rows
    # (its string columns by pyarrow's take) cost ~5 s: only the group's scores are
    # gathered, ordered by (side, trial) as a stable sort of its rows orders them, and
    # only its first row in that order is read whole.
    by = runs.groupby(keys, sort=True)
    codes = by.ngroup().to_numpy()
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(by.ngroups + 1))
    members = [order[bounds[g] : bounds[g + 1]] for g in range(by.ngroups)]
    gaussian = runs["gaussian"].to_numpy()
    side, trial = runs["side"].to_numpy(), runs["trial"].to_numpy()
    score = runs["score"].to_numpy()
    tests = sum(2 if bool(gaussian[rows_of[0]]) else 1 for rows_of in members)
    for rows_of in members:
        rows_of = rows_of[np.lexsort((trial[rows_of], side[rows_of]))]  # stable
        first = runs.iloc[rows_of[0]]
        case = _case_from_rows(first)
        s0 = score[rows_of[side[rows_of] == 0]]
        s1 = score[rows_of[side[rows_of] == 1]]
        family = float(first["alpha"])
        alpha_case = family / tests  # a Gaussian case spends it twice (two tests)
        result = judge_scores(case, s0, s1, alpha=alpha_case)
        row = result.as_row()
        row["claim_unit"] = first["claim_unit"]
        row["claim_value"] = float(first["claim_value"])
        row["gaussian"] = bool(first["gaussian"])
        row["alpha"] = family
        row["alpha_case"] = alpha_case
        row["description"] = case.description
        rows.append(row)
    table = pd.DataFrame(rows)
    order = ["estimator", "canary", "relation", "claim", "claim_unit", "claim_value", "delta"]
    return table[order + [c for c in table.columns if c not in order]]


def _figure(table: pd.DataFrame, *, title: str | None = None) -> Any:
    from dpreg.plotting.audit import plot_audit

    return plot_audit(table, title=title)


PRIVACY_AUDIT = StudyKind(
    name="privacy_audit",
    run=run_audit_cell,
    summarise=summarise_audit,
    figure=_figure,
    params=AuditParams,
    check_cell=check_audit_cell,
)
