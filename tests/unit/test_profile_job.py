"""``benchmarks/profile_job.py``: one workflow job in one process, the workflow's rows."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pandas as pd
import pytest
import yaml

from dpreg.config import find_job
from dpreg.experiments.studies import run_chunk

ROOT = Path(__file__).resolve().parents[2]
SMOKE = ROOT / "config" / "smoke.yaml"


@pytest.fixture(scope="module")
def tool():
    spec = importlib.util.spec_from_file_location(
        "profile_job", ROOT / "benchmarks" / "profile_job.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_rows_are_the_run_chunk_rows_of_the_job(tool, tmp_path, capsys):
    out = tmp_path / "rows.parquet"
    assert tool.main(["liang_fig3a", "0", "--config", str(SMOKE), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("liang_fig3a job 0: CPU ") and "peak RSS" in printed
    config = yaml.safe_load(SMOKE.read_text())
    frames = [
        run_chunk("iv_synthetic", cell.params(config), blocks=cell.seeded_blocks(config["seed"]))
        for cell in find_job(config, "liang_fig3a", 0)
    ]
    want = pd.concat(frames, ignore_index=True)
    got = pd.read_parquet(out)
    assert f"rows {len(want)}" in printed
    pd.testing.assert_frame_equal(got, want)


def test_profile_is_written(tool, tmp_path):
    import pstats

    prof = tmp_path / "job.prof"
    assert tool.main(["liang_fig2_bound", "0", "--config", str(SMOKE), "--profile", str(prof)]) == 0
    assert pstats.Stats(str(prof)).total_calls > 0


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["no_such_study", "0"], "no_such_study"),
        (["liang_fig3a", "99"], "job"),
        (["liang_fig3a", "0", "--config", "missing.yaml"], "--config"),
    ],
)
def test_bad_arguments_name_the_problem(tool, capsys, argv, message):
    if "--config" not in argv:
        argv = [*argv, "--config", str(SMOKE)]
    with pytest.raises(SystemExit) as exit_info:
        tool.main(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_a_missing_data_table_is_named(tool, tmp_path, capsys):
    config = yaml.safe_load(SMOKE.read_text())
    study = next(
        name for name, spec in config["studies"].items() if "dataset" in spec.get("grid", {})
    )
    with pytest.raises(SystemExit):
        tool.main([study, "0", "--config", str(SMOKE), "--data-root", str(tmp_path)])
    assert "is missing: run the workflow's data jobs first" in capsys.readouterr().err
