"""Changing ``chunk_size`` must not change any result: seeds are per seed block (issue 8)."""

from __future__ import annotations

import copy
from pathlib import Path

import pandas as pd
import pytest
import yaml

from dpreg.config import Cell, check_chunking, study_cells
from dpreg.experiments.studies import run_chunk
from dpreg.seeds import block_seed

SMOKE = Path(__file__).resolve().parents[2] / "config" / "smoke.yaml"


def _rows(config: dict, study: str) -> pd.DataFrame:
    """Every row of ``study`` run chunk by chunk exactly as the workflow does (no data)."""
    parts = []
    for cell in study_cells(config, study):
        blocks = cell.seeded_blocks(config["seed"])  # what workflow/rules/common.smk passes
        rows = run_chunk(config["studies"][study]["kind"], cell.params(config), blocks=blocks)
        rows.insert(0, "cell", cell.path)
        parts.append(rows)
    out = pd.concat(parts, ignore_index=True)
    return out.sort_values(["cell", "trial"], kind="stable").reset_index(drop=True)


def _with_chunking(config: dict, study: str, trials: int, chunk_size: int, block: int) -> dict:
    out = copy.deepcopy(config)
    out["studies"] = {study: out["studies"][study]}
    out["studies"][study].update(trials=trials, chunk_size=chunk_size, seed_block=block)
    return out


# one synthetic study per paper whose draws depend on the seed (no dataset to prepare)
STUDIES = ["liang_fig3a", "brown_fig1", "varshney_e1_nscaling", "cc_fig2_d"]


@pytest.mark.parametrize("study", STUDIES)
def test_chunk_size_does_not_change_results(study):
    config = yaml.safe_load(SMOKE.read_text())
    if study not in config["studies"]:
        pytest.fail(f"smoke.yaml lost study {study!r}; pick another synthetic study per paper")
    one = _rows(_with_chunking(config, study, trials=4, chunk_size=4, block=2), study)
    two = _rows(_with_chunking(config, study, trials=4, chunk_size=2, block=2), study)
    pd.testing.assert_frame_equal(one, two)
    # the seed really matters: another block size draws other numbers
    other = _rows(_with_chunking(config, study, trials=4, chunk_size=4, block=4), study)
    numeric = one.select_dtypes("number").drop(columns=["trial", "seed"], errors="ignore")
    assert not numeric.equals(
        other.select_dtypes("number").drop(columns=["trial", "seed"], errors="ignore")
    )


def test_blocks_are_aligned_on_global_trials():
    cell = Cell("s", "all", (), chunk=1, first_trial=20, trials=15, seed_block=10)
    assert cell.blocks() == [(2, 20, 10), (3, 30, 5)]
    assert Cell("s", "all", (), 0, 0, 3, seed_block=10).blocks() == [(0, 0, 3)]


def test_chunks_must_hold_whole_blocks():
    check_chunking("s", {"trials": 100, "chunk_size": 50, "seed_block": 10})
    check_chunking("s", {"trials": 7, "chunk_size": 7, "seed_block": 10})  # one chunk
    with pytest.raises(ValueError, match="chunk_size 15 is not a multiple of seed_block 10"):
        check_chunking("s", {"trials": 100, "chunk_size": 15, "seed_block": 10})
    with pytest.raises(ValueError, match="seed_block"):
        check_chunking("s", {"trials": 100, "chunk_size": 10, "seed_block": 0})


def test_block_seed_depends_on_block_not_chunk():
    seeds = {block_seed(3, "s", "all", b) for b in range(100)}
    assert len(seeds) == 100
    assert block_seed(3, "s", "a~1", 0) != block_seed(3, "s", "a~2", 0)
    with pytest.raises(ValueError, match="block"):
        block_seed(3, "s", "all", -1)


def test_grid_axis_order_does_not_change_seeds():
    a = Cell("s", "n~10/eps~1", (), 0, 0, 5, seed_block=5).seeded_blocks(7)
    b = Cell("s", "eps~1/n~10", (), 0, 0, 5, seed_block=5).seeded_blocks(7)
    c = Cell("s", "eps~1/n~20", (), 0, 0, 5, seed_block=5).seeded_blocks(7)
    assert a == b and a != c
