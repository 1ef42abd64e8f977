"""Dispatch of study cells to experiment functions, and study summaries.

A study's ``kind`` (config) names the experiment function that runs one cell; adding
a study of an existing kind is a config entry only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from dpreg.data.datasets import Dataset
from dpreg.experiments.regression import aggregate_trials, run_eps_cell, study_delta

STUDY_KINDS = ("eps_grid",)


def run_cell(frame: pd.DataFrame, cell: Mapping[str, Any], *, seed: int) -> pd.DataFrame:
    """Run one chunk of one study cell on a prepared dataset table.

    Parameters
    ----------
    frame : DataFrame
        The prepared dataset (``Dataset.to_frame()`` layout).
    cell : mapping
        The job's parameters as built by the workflow's ``chunk_params``: ``study``,
        ``kind``, ``dataset``, ``estimator``, ``hyper``, ``epsilon``, ``delta`` (rule),
        ``trials``, ``first_trial``, ``bound_X``, ``bound_y``, ``conversion``.
    seed : int
        The job's seed.
    """
    kind = cell["kind"]
    if kind != "eps_grid":
        raise ValueError(f"unknown study kind {kind!r}; known kinds: {STUDY_KINDS}")
    data = Dataset.from_frame(frame)
    delta = study_delta(data.X.shape[0], cell["delta"]["rule"], cell["delta"].get("value"))
    runs = run_eps_cell(
        data.X,
        data.y,
        estimator=cell["estimator"],
        epsilon=cell["epsilon"],
        delta=delta,
        trials=cell["trials"],
        seed=seed,
        first_trial=cell["first_trial"],
        hyper=cell["hyper"],
        bound_X=cell["bound_X"],
        bound_y=cell["bound_y"],
        conversion=cell["conversion"],
    )
    runs.insert(0, "study", cell["study"])
    runs.insert(1, "dataset", cell["dataset"])
    return runs


def summarise_study(runs: pd.DataFrame, references: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """Aggregate a study's trials per (dataset, estimator, epsilon) with the OLS reference.

    The summary holds only deterministic columns (no wall times), so reruns with the
    same seed produce byte-identical tables.
    """
    keys = ["study", "dataset", "estimator", "epsilon", "delta", "rho", "conversion"]
    table = aggregate_trials(runs, keys, value="mse")
    ols = {ref["dataset"]: ref["ols"]["mse"] for ref in references}
    missing = set(table["dataset"]) - set(ols)
    if missing:
        raise ValueError(f"no OLS reference for datasets {sorted(missing)}")
    table["mse_ols"] = table["dataset"].map(ols)
    table["relative_excess"] = table["mean"] / table["mse_ols"] - 1.0
    return table
