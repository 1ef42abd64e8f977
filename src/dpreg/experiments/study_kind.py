"""What a study kind is: how the workflow runs, summarises and draws a study.

A study in ``config/config.yaml`` names a ``kind``, a ``grid`` (axes whose cartesian
product gives the cells) and fixed ``params``. The workflow runs every cell in chunks of
trials with :attr:`StudyKind.run`, concatenates the chunks, aggregates them with
:attr:`StudyKind.summarise` and draws the figure with :attr:`StudyKind.figure`.
Adding a study of an existing kind is a config entry; a new kind is one module that
defines a :class:`StudyKind` and one entry in :data:`dpreg.experiments.kinds.STUDY_KINDS`
(``CONTRIBUTING.md``, "Add a study kind").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from dpreg.data.datasets import Dataset
from dpreg.experiments.params import KindParams

RunFn = Callable[..., pd.DataFrame]
"""``run(cell, *, trials, first_trial, seed, data) -> DataFrame`` (one row per trial).

``cell`` merges the study's ``params`` with the cell's grid values; ``data`` is the
prepared :class:`~dpreg.data.datasets.Dataset` named by ``cell["dataset"]`` or ``None``.
Rows must carry ``trial`` (global index) and ``seed``; the workflow adds ``study``.

A kind with :attr:`StudyKind.uses_test_rows` is called with one more keyword,
``run(cell, *, trials, first_trial, seed, data, test)``: ``test`` is the dataset's
held-out rows (``resources/data/{dataset}.test.parquet``) as a
:class:`~dpreg.data.datasets.Dataset`, transformed exactly as ``data`` (training
statistics and scale factors; with public bounds clipped like it, with data-derived
bounds possibly beyond norm 1), or ``None`` when the cell has no dataset or the dataset
holds no rows out (an empty test table, ``n_test: 0``). Test rows are for evaluating
the released estimate only; nothing private may be computed from them. Kinds without
the flag never receive ``test``."""

SummariseFn = Callable[[pd.DataFrame, Sequence[Mapping[str, Any]]], pd.DataFrame]
"""``summarise(runs, references) -> table``: deterministic columns only (no timings)."""

FigureFn = Callable[..., Any]
"""``figure(table, *, title) -> matplotlib.figure.Figure`` drawn from the table only."""


@dataclass(frozen=True)
class StudyKind:
    """How one kind of study is run, summarised and drawn.

    Attributes
    ----------
    name : str
        The config's ``kind``.
    run, summarise, figure : callable
        See :data:`RunFn`, :data:`SummariseFn`, :data:`FigureFn`.
    check_cell : callable, optional
        ``check_cell(cell)`` raises ``ValueError`` for a bad value across keys (checked
        before any job runs, so a bad config stops the workflow at once).
    params : type of KindParams, optional
        The kind's typed parameter spec (:mod:`dpreg.experiments.params`): the one place
        its keys are declared. :attr:`required` and :attr:`optional` are derived from it
        and :meth:`validate_cell` checks every value's type and range before
        ``check_cell``. Without a spec the kind takes no keys.
    uses_test_rows : bool, default False
        The kind evaluates on the held-out rows: the workflow also prepares and reads
        the dataset's test table and ``run`` gets the keyword ``test`` (see
        :data:`RunFn`).
    views : mapping of str to callable, optional
        Further tables computed from the study's table, ``view(table) -> DataFrame``
        (deterministic), written by the workflow to
        ``results/tables/{paper}/{study}/{name}.csv|md``.
    view_figures : mapping of str to callable, optional
        Further figures drawn from the study's table, ``figure(table, *, title)``,
        written to ``results/figures/{paper}/{study}/{name}.png|pdf``.
    """

    name: str
    run: RunFn
    summarise: SummariseFn
    figure: FigureFn
    check_cell: Callable[[Mapping[str, Any]], None] | None = None
    params: type[KindParams] | None = None
    uses_test_rows: bool = False
    views: Mapping[str, Callable[[pd.DataFrame], pd.DataFrame]] = field(default_factory=dict)
    view_figures: Mapping[str, FigureFn] = field(default_factory=dict)

    @property
    def required(self) -> frozenset[str]:
        """Keys every cell must have (from ``params`` or ``grid``): the spec's, no default."""
        return frozenset() if self.params is None else self.params.required_keys()

    @property
    def optional(self) -> frozenset[str]:
        """Further allowed keys (the spec's, with a default); others are config errors."""
        return frozenset() if self.params is None else self.params.optional_keys()

    def validate_cell(self, cell: Mapping[str, Any]) -> None:
        """Check a cell's values (the typed spec, then ``check_cell``); ``ValueError``."""
        if self.params is not None:
            self.params.from_cell(cell)
        if self.check_cell is not None:
            self.check_cell(cell)

    def check_keys(self, study: str, keys: set[str]) -> None:
        """Raise ``ValueError`` naming unknown or missing keys of a study's cells."""
        keys = set(keys) - {"conversion"}
        unknown = keys - self.required - self.optional
        if unknown:
            allowed = ", ".join(sorted(self.required | self.optional))
            raise ValueError(
                f"config studies.{study}: unknown key(s) {sorted(unknown)} for kind"
                f" {self.name!r}; allowed: {allowed}"
            )
        missing = self.required - keys
        if missing:
            raise ValueError(
                f"config studies.{study}: kind {self.name!r} needs key(s) {sorted(missing)}"
                " in params or grid"
            )


def dataset_of(cell: Mapping[str, Any]) -> str | None:
    """Return the dataset a cell reads, if any (its ``dataset`` key)."""
    name = cell.get("dataset")
    return None if name is None else str(name)


__all__ = ["Dataset", "FigureFn", "RunFn", "StudyKind", "SummariseFn", "dataset_of"]
