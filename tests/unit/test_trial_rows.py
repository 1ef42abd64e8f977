"""Per-trial files are byte-identical across reruns: no timings in the rows (issue 13)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from dpreg.config import study_cells
from dpreg.data.datasets import Dataset
from dpreg.experiments import kinds
from dpreg.experiments.studies import run_cell, run_chunk
from dpreg.io import write_trial_rows

SMOKE = Path(__file__).resolve().parents[2] / "config" / "smoke.yaml"

# one smoke study of every kind that used to write a wall-time column, none needing data
STUDIES = ["liang_fig3a", "brown_fig1", "brown_fig5_6", "varshney_e1_nscaling", "lev_fig7"]


def _first_chunk(config: dict, study: str, trials: int):
    spec = config["studies"][study]
    spec.update(trials=trials, chunk_size=trials, seed_block=trials)
    cell = next(study_cells(config, study))
    return spec["kind"], cell.params(config), cell.seeded_blocks(config["seed"])


def _bytes(tmp_path: Path, name: str, rows: pd.DataFrame) -> bytes:
    return write_trial_rows(rows, tmp_path / f"{name}.parquet").read_bytes()


@pytest.mark.parametrize("study", STUDIES)
def test_a_rerun_writes_the_same_bytes(study, tmp_path):
    config = yaml.safe_load(SMOKE.read_text())
    kind, cell, blocks = _first_chunk(config, study, trials=2)
    if study == "lev_fig7":
        cell["n_rows"] = 256  # the smallest design that keeps every estimator well-posed
    first = _bytes(tmp_path, "a", run_chunk(kind, cell, blocks=blocks))
    second = _bytes(tmp_path, "b", run_chunk(kind, cell, blocks=blocks))
    assert first == second


def _synthetic_frame(n: int = 200, d: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(5)
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.clip(X @ np.array([0.5, -0.2, 0.1]) + 0.1 * rng.normal(size=n), -1, 1)
    return Dataset(name="toy", X=X, y=y).to_frame()


EPS_CELL = {
    "dataset": "toy",
    "estimator": ["adassp", "dp_gd"],
    "epsilon": [0.5, 2.0],
    "delta_rule": "fixed",
    "delta": 1e-6,
    "hyper": {"dp_gd": {"T": 4, "clip": 0.5}, "adassp": {"mechanism": "classic"}},
    "conversion": "tight",
}


def test_eps_grid_rows_are_identical_and_record_the_hyperparameters(tmp_path):
    frame = _synthetic_frame()
    blocks = [{"first_trial": 0, "trials": 3, "seed": 17}]
    runs = run_chunk("eps_grid", EPS_CELL, blocks=blocks, frame=frame)
    again = run_chunk("eps_grid", EPS_CELL, blocks=blocks, frame=frame)
    assert _bytes(tmp_path, "a", runs) == _bytes(tmp_path, "b", again)
    used = {e: json.loads(h) for e, h in runs.groupby("estimator")["hyper"].first().items()}
    assert used == {
        "adassp": {"mechanism": "classic", "bound_X": 1.0, "bound_y": 1.0},
        "dp_gd": {"T": 4, "clip": 0.5, "bound_X": 1.0, "bound_y": 1.0},
    }


def test_lev_clipping_rows_record_the_hyperparameters():
    config = yaml.safe_load(SMOKE.read_text())
    kind, cell, blocks = _first_chunk(config, "lev_fig7", trials=2)
    cell.update(n_rows=256, estimator=["ihm", "adassp"], epsilon=[1.0])
    cell["hyper"] = {"ihm": {"T": 2}}
    runs = run_chunk(kind, cell, blocks=blocks)
    used = {e: json.loads(h) for e, h in runs.groupby("estimator")["hyper"].first().items()}
    assert used["ihm"] == {"T": 2, "bound_X": 1.0, "bound_y": 1.0}
    assert used["adassp"]["bound_X"] == 1.0


def test_a_kind_returning_a_timing_column_is_refused(monkeypatch):
    base = kinds.get_kind("ftrl_quoted")

    def timed(cell, **kw):
        rows = base.run(cell, **kw)
        return rows.assign(wall_time_s=0.1)

    monkeypatch.setitem(kinds._ADDED, "timed", dataclasses.replace(base, name="timed", run=timed))
    config = yaml.safe_load(SMOKE.read_text())
    _, cell, _ = _first_chunk(config, "cc_fig4_quoted", trials=1)
    run_cell("ftrl_quoted", cell, trials=1, first_trial=0, seed=1)  # the real kind passes
    with pytest.raises(ValueError, match=r"timing column\(s\) \['wall_time_s'\]"):
        run_cell("timed", cell, trials=1, first_trial=0, seed=1)
