"""IV on a user's table: the mroz example table and its codebook of public ranges."""

from __future__ import annotations

import hashlib
import re

import numpy as np
import pytest

from dpreg.data import load_table, read_codebook, table_scaling
from dpreg.data.examples import EXAMPLE_TABLES, example_table, example_table_csv

#: sha256 of the exported CSV (a change of linearmodels' data would change it).
MROZ_SHA256 = "58df06a2ff0220d01837d71609bf11daacc46c6b1daca4cbb000ffa7d4bffa94"


@pytest.fixture(scope="module")
def mroz(repo_root):
    book = read_codebook(repo_root / "config" / "codebooks" / "mroz.yaml")
    return load_table(example_table("mroz"), book), book


def test_the_mroz_export_is_deterministic_and_pinned():
    text = example_table_csv("mroz")
    assert text == example_table_csv("mroz")
    assert text.splitlines()[0] == "lwage,educ,fatheduc,motheduc"
    assert text.splitlines()[1] == "1.210154,12,7,12"
    assert len(text.splitlines()) == 1 + EXAMPLE_TABLES["mroz"].n_rows == 429
    assert hashlib.sha256(text.encode("utf-8")).hexdigest() == MROZ_SHA256


def test_the_mroz_file_read_equals_linearmodels_load(monkeypatch):
    # export_example_table reads linearmodels' data file without importing the package;
    # linearmodels.datasets.mroz.load() (the reference) gives the same frame and text.
    from dpreg.data import examples

    fast = examples._mroz()
    fast_text = example_table_csv("mroz")
    monkeypatch.setattr(examples, "_MROZ_LOAD", "package")
    reference = examples._mroz()
    assert fast.equals(reference) and (fast.dtypes == reference.dtypes).all()
    assert list(fast.columns) == list(reference.columns)
    assert example_table_csv("mroz") == fast_text
    # no such file where the package would keep it: the package is imported instead
    monkeypatch.setattr(examples, "_MROZ_LOAD", "file")
    monkeypatch.setattr(examples, "_MROZ_FILE", ("datasets", "mroz", "missing.csv.bz2"))
    assert examples._mroz_file() is None
    assert examples._mroz().equals(reference)


def test_the_mroz_codebook_maps_every_block_into_its_unit_ball(mroz):
    data, book = mroz
    assert book.instruments == ("fatheduc", "motheduc") and book.features == ("educ",)
    assert data.n == 428 and data.X.shape == (428, 1) and data.Z.shape == (428, 2)
    assert np.linalg.norm(data.Z, axis=1).max() <= 1 + 1e-12
    assert np.linalg.norm(data.X, axis=1).max() <= 1 + 1e-12
    assert np.abs(data.y).max() <= 1
    assert data.instrument_names == ("fatheduc", "motheduc")
    scaling = table_scaling(data)
    assert scaling.intercept and scaling.instrument_norm == pytest.approx(np.sqrt(2))


def test_the_iv_example_of_the_user_data_page_runs(repo_root, monkeypatch, capsys):
    text = (repo_root / "docs" / "user-data.md").read_text(encoding="utf-8")
    section = text[text.index("## Instrumental variables on your table") :]
    block = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    monkeypatch.chdir(repo_root)
    namespace: dict = {}
    exec(compile(block, "docs/user-data.md", "exec"), namespace)  # noqa: S102
    assert "budget split:  rho1 =" in capsys.readouterr().out
    split = namespace["model"].budget_split_
    assert split["rho1"] + split["rho2"] == pytest.approx(namespace["model"].budget_spent_["rho"])
