"""The workflow's entry points: run, summarise and draw any study through its kind."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from dpreg.data.datasets import Dataset
from dpreg.experiments.kinds import get_kind

TIMING_COLUMN = re.compile(r"wall|elapsed|_time_s$|_seconds$")
"""Column names that would hold a measured time, refused in per-trial rows.

Per-trial rows are promised byte-identical across reruns (README, "What you get"); a
timing measures the machine, not the method, so it lives in Snakemake's per-job benchmark
files instead.
"""


def run_cell(
    kind: str,
    cell: Mapping[str, Any],
    *,
    trials: int,
    first_trial: int,
    seed: int,
    frame: pd.DataFrame | None = None,
    test_frame: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Run one chunk of one study cell; ``frame`` is the prepared dataset, if any.

    ``test_frame`` is the dataset's held-out rows (its test table), read only by a kind
    with ``uses_test_rows``: its ``run`` gets ``test=`` (a Dataset, or ``None`` without a
    test table or for an empty one). Other kinds are called without ``test`` and refuse a
    ``test_frame``.
    """
    study_kind = get_kind(kind)
    data = Dataset.from_frame(frame) if frame is not None else None
    extra: dict[str, Any] = {}
    if study_kind.uses_test_rows:
        has_rows = test_frame is not None and len(test_frame) > 0
        extra["test"] = Dataset.from_frame(test_frame) if has_rows else None
    elif test_frame is not None:
        raise ValueError(
            f"study kind {kind!r} does not use test rows (uses_test_rows is False) but a"
            " test table was given"
        )
    runs = study_kind.run(
        cell, trials=trials, first_trial=first_trial, seed=seed, data=data, **extra
    )
    missing = {"trial", "seed"} - set(runs.columns)
    if missing:
        raise ValueError(f"study kind {kind!r} returned rows without {sorted(missing)}")
    timings = [c for c in runs.columns if TIMING_COLUMN.search(str(c))]
    if timings:
        raise ValueError(
            f"study kind {kind!r} returned timing column(s) {timings}: per-trial rows must be"
            " deterministic (reruns are byte-identical); job timings are in the benchmark"
            " files (benchmarks/runs/..., results/benchmarks/jobs.csv)"
        )
    if len(runs) == 0 or len(runs) % trials:
        raise ValueError(
            f"study kind {kind!r} returned {len(runs)} rows for {trials} trials"
            " (expected a positive multiple)"
        )
    return runs


def run_chunk(
    kind: str,
    cell: Mapping[str, Any],
    *,
    blocks: Sequence[Mapping[str, int]],
    frame: pd.DataFrame | None = None,
    test_frame: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Run one chunk as consecutive seed blocks (see :mod:`dpreg.config`).

    Parameters
    ----------
    kind : str
        The study kind.
    cell : mapping
        The cell's parameters.
    blocks : sequence of mappings
        ``{"first_trial", "trials", "seed"}`` per seed block, in trial order; each block
        is one call of the kind's ``run`` with its own seed, so a trial's draws depend on
        its block only, never on how blocks are grouped into chunks.
    frame : DataFrame, optional
        The prepared dataset.
    test_frame : DataFrame, optional
        The dataset's held-out rows, for a kind with ``uses_test_rows`` (:func:`run_cell`).

    Returns
    -------
    DataFrame
        The blocks' rows, concatenated in order.
    """
    if not blocks:
        raise ValueError("run_chunk needs at least one seed block")
    parts = [
        run_cell(
            kind,
            cell,
            trials=int(b["trials"]),
            first_trial=int(b["first_trial"]),
            seed=int(b["seed"]),
            frame=frame,
            test_frame=test_frame,
        )
        for b in blocks
    ]
    return parts[0] if len(parts) == 1 else pd.concat(parts, ignore_index=True)


def summarise_study(
    kind: str, runs: pd.DataFrame, references: Sequence[Mapping[str, Any]]
) -> pd.DataFrame:
    """Aggregate a study's trials with its kind's summary."""
    return get_kind(kind).summarise(runs, references)


def draw_study_figure(kind: str, table: pd.DataFrame, *, title: str | None = None) -> Any:
    """Draw a study's figure from its aggregated table."""
    return get_kind(kind).figure(table, title=title)


def study_view(kind: str, view: str, table: pd.DataFrame) -> pd.DataFrame:
    """Compute an extra table of a study from its table (``StudyKind.views``)."""
    views = get_kind(kind).views
    if view not in views:
        raise ValueError(f"study kind {kind!r} has no view {view!r}; views: {sorted(views)}")
    return views[view](table)


def draw_study_view_figure(
    kind: str, view: str, table: pd.DataFrame, *, title: str | None = None
) -> Any:
    """Draw an extra figure of a study from its table (``StudyKind.view_figures``)."""
    figures = get_kind(kind).view_figures
    if view not in figures:
        raise ValueError(
            f"study kind {kind!r} has no view figure {view!r}; view figures: {sorted(figures)}"
        )
    return figures[view](table, title=title)
