"""The ``dpreg`` command line: output, JSON, exit codes and messages."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dpreg.cli import main
from dpreg.data.examples import example_table_csv


@pytest.fixture(scope="module")
def table(tmp_path_factory, repo_root):
    folder = tmp_path_factory.mktemp("user")
    (folder / "fair.csv").write_text(example_table_csv("fair"))
    shutil.copy(repo_root / "config" / "codebooks" / "fair.yaml", folder / "fair.yaml")
    return folder


def _run(*argv):
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_fit_prints_the_summary_and_writes_json(table, tmp_path):
    target = tmp_path / "out.json"
    code, out, err = _run(
        "fit", str(table / "fair.csv"), "--codebook", str(table / "fair.yaml"), "--method",
        "ihm", "--epsilon", "1", "--seed", "3", "--json", str(target),
    )  # fmt: skip
    assert code == 0, err
    assert "DP linear regression" in out and "religious" in out and "original units" in out
    result = json.loads(target.read_text())
    assert result["method"] == "ihm" and len(result["coef"]) == 5
    assert result["budget_spent"]["epsilon"] <= 1 + 1e-9
    code2, out2, _ = _run(
        "fit", str(table / "fair.csv"), "--codebook", str(table / "fair.yaml"), "--method",
        "ihm", "--epsilon", "1", "--seed", "3",
    )  # fmt: skip
    assert code2 == 0 and out2 == out  # the same seed, the same release


def test_y_and_x_choose_columns_declared_in_the_codebook(table):
    code, out, err = _run(
        "fit", str(table / "fair.csv"), "--codebook", str(table / "fair.yaml"), "--x",
        "age,educ", "--seed", "0",
    )  # fmt: skip
    assert code == 0, err
    assert "age" in out and "educ" in out and "religious" not in out
    code, _, err = _run(
        "fit", str(table / "fair.csv"), "--codebook", str(table / "fair.yaml"), "--x", "income"
    )
    assert code == 1 and "dpreg: error:" in err and "'income'" in err


def test_compare_ranks_every_method_and_shows_progress(table, tmp_path):
    target = tmp_path / "compare.json"
    code, out, err = _run(
        "compare", str(table / "fair.csv"), "--codebook", str(table / "fair.yaml"),
        "--epsilon", "1", "--trials", "3", "--methods", "adassp,ihm,dp_ssgd", "--seed", "0",
        "--json", str(target),
    )  # fmt: skip
    assert code == 0, err
    assert "[1/3] adassp" in err and "[3/3] dp_ssgd" in err  # progress on stderr
    assert "ols (non-private)" in out and "not run: outside the shuffling regime" in out
    rows = json.loads(target.read_text())["methods"]
    assert [r["method"] for r in rows][-1] == "dp_ssgd" and rows[-1]["test_mse"] is None


@pytest.mark.parametrize(
    "argv, code, message",
    [
        (["fit"], 2, ""),  # usage: no table, no codebook
        (["fit", "{csv}"], 2, ""),  # usage: --codebook is required
        (["fit", "{dir}/missing.csv", "--codebook", "{yaml}"], 1, "missing.csv"),
        (["fit", "{csv}", "--codebook", "{dir}/missing.yaml"], 1, "missing.yaml"),
        (["fit", "{csv}", "--codebook", "{yaml}", "--epsilon", "-1"], 1, "epsilon"),
        (["fit", "{csv}", "--codebook", "{yaml}", "--delta", "2"], 1, "delta"),
        (["fit", "{csv}", "--codebook", "{yaml}", "--method", "ols"], 1, "not private"),
        (["fit", "{csv}", "--codebook", "{yaml}", "--method", "nope"], 1, "unknown method"),
        (["fit", "{csv}", "--codebook", "{yaml}", "--epsilon", "1", "--rho", "1"], 1, "--rho"),
        (["fit", "{csv}", "--codebook", "{yaml}", "--sha256", "0" * 64], 1, "sha256"),
        (
            ["compare", "{csv}", "--codebook", "{yaml}", "--test-fraction", "1.5"],
            1,
            "test-fraction",
        ),
        (["compare", "{csv}", "--codebook", "{yaml}", "--trials", "0"], 1, "trials"),
    ],
)
def test_bad_input_gets_the_exit_status_and_a_message_naming_it(
    table, tmp_path, argv, code, message
):
    argv = [a.format(csv=table / "fair.csv", yaml=table / "fair.yaml", dir=tmp_path) for a in argv]
    target = tmp_path / "never.json"
    got, out, err = _run(*argv, "--json", str(target)) if argv[1:] else _run(*argv)
    assert got == code, (out, err)
    assert message in err
    if code == 1:
        assert err.startswith("dpreg: error:") and err.count("\n") == 1
    assert not target.exists()  # nothing written when the command fails


def test_the_installed_command_runs(table):
    exe = Path(sys.executable).parent / "dpreg"
    proc = subprocess.run([str(exe), "methods"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "ihm" in proc.stdout
