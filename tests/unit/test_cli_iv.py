"""``dpreg fit`` with an IV method on the mroz example table (instruments, budget split)."""

from __future__ import annotations

import io
import json
import shutil

import pytest

from dpreg.cli import main
from dpreg.data.examples import example_table_csv


@pytest.fixture(scope="module")
def table(tmp_path_factory, repo_root):
    folder = tmp_path_factory.mktemp("user")
    (folder / "mroz.csv").write_text(example_table_csv("mroz"))
    (folder / "fair.csv").write_text(example_table_csv("fair"))
    for name in ("mroz", "fair"):
        shutil.copy(repo_root / "config" / "codebooks" / f"{name}.yaml", folder / f"{name}.yaml")
    return folder


def _run(*argv):
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def _mroz(table, *extra):
    return ("fit", str(table / "mroz.csv"), "--codebook", str(table / "mroz.yaml"), *extra)


def test_an_iv_fit_prints_the_split_and_writes_it_to_json(table, tmp_path):
    target = tmp_path / "iv.json"
    argv = _mroz(table, "--method", "dp_2s_gd", "--epsilon", "1", "--seed", "3")
    code, out, err = _run(*argv, "--json", str(target))
    assert code == 0, err
    for piece in ("DP instrumental-variable regression", "budget split:  rho1 =",
                  "instruments:   fatheduc, motheduc", "educ", "original units", "n/a",
                  "Intervals: no confidence interval with checked coverage"):  # fmt: skip
        assert piece in out, piece
    result = json.loads(target.read_text())
    assert result["instruments"] == ["fatheduc", "motheduc"] and result["n"] == 428
    split, spent = result["budget_split"], result["budget_spent"]
    assert split["rho1"] + split["rho2"] == pytest.approx(spent["rho"], rel=1e-9)
    assert split["theta_share"] == 0.5 and spent["epsilon"] <= 1 + 1e-9
    assert spent["delta"] == pytest.approx(1 / 428**2)
    assert result["hyperparameters"]["T"] == 20
    code2, out2, _ = _run(*argv)
    assert code2 == 0 and out2 == out  # the same seed, the same release


def test_instruments_and_the_split_can_be_chosen(table, tmp_path):
    target = tmp_path / "one.json"
    code, out, err = _run(
        *_mroz(table, "--method", "dp_2s_gd", "--instruments", "motheduc", "--theta-share",
               "0.25", "--rho", "0.5", "--seed", "0", "--json", str(target)),
    )  # fmt: skip
    assert code == 0, err
    result = json.loads(target.read_text())
    assert result["instruments"] == ["motheduc"]
    assert result["budget_split"]["rho1"] == pytest.approx(0.125)
    assert result["budget_spent"]["rho"] == pytest.approx(0.5)


def test_a_linear_method_on_a_table_with_instruments_ignores_them(table):
    code, out, err = _run(*_mroz(table, "--method", "adassp", "--seed", "0"))
    assert code == 0, err
    assert "DP linear regression" in out and "fatheduc" not in out


@pytest.mark.parametrize(
    "argv, code, message",
    [
        (["--method", "ihm", "--instruments", "fatheduc"], 1, "--instruments is for an IV"),
        (["--method", "adassp", "--theta-share", "0.3"], 1, "--theta-share is for an IV"),
        (["--method", "dp_2s_gd", "--instruments", "exper"], 1, "--instruments: column 'exper'"),
        (["--method", "dp_2s_gd", "--instruments", "educ"], 1, "--instruments: column 'educ'"),
        (["--method", "dp_2s_gd", "--theta-share", "1.5"], 1, "theta_share must lie in (0, 1)"),
        (["--method", "dp_2s_gd", "--epsilon", "inf"], 1, "epsilon must be a finite"),
        (["--method", "dp_2s_gd", "--epsilon", "0"], 1, "epsilon must be a finite"),
        (["--method", "dp_2s_gd", "--delta", "1"], 1, "delta must lie in (0, 1)"),
        (["--method", "dp_2s_gd", "--rho", "-1"], 1, "--rho must be a finite"),
        (["--method", "2sls"], 1, "unknown method '2sls'"),
        (["--method", "dp_2s_gd", "--instruments"], 2, ""),  # usage: the option needs a value
    ],
)
def test_bad_iv_input_exits_with_one_line_naming_it_and_writes_nothing(
    table, tmp_path, argv, code, message
):
    target = tmp_path / "never.json"
    got, out, err = _run(*_mroz(table, *argv), "--json", str(target))
    assert got == code, (out, err)
    assert message in err
    if code == 1:
        assert err.startswith("dpreg: error:") and err.count("\n") == 1
    assert not target.exists()


def test_an_iv_method_without_instruments_is_refused_naming_the_option(table, tmp_path):
    target = tmp_path / "never.json"
    code, _, err = _run(
        "fit", str(table / "fair.csv"), "--codebook", str(table / "fair.yaml"), "--method",
        "dp_2s_gd", "--json", str(target),
    )  # fmt: skip
    assert code == 1 and err.startswith("dpreg: error:") and err.count("\n") == 1
    assert "needs instruments" in err and "--instruments" in err
    assert not target.exists()


def test_compare_takes_no_instruments(capsys):
    code, _, _ = _run("compare", "t.csv", "--codebook", "c.yaml", "--instruments", "z")
    assert code == 2 and "--instruments" in capsys.readouterr().err  # argparse's usage line


def test_methods_lists_the_iv_method():
    code, out, _ = _run("methods")
    assert code == 0 and "dp_2s_gd" in out and "IV (needs instruments)" in out
