"""A user's own table with a codebook of public bounds (docs/user-data.md).

Bad input is refused before any work with a message naming the file and the column or
key; the public map puts every row in the unit ball and maps fits back to original units
exactly; the counts of clipped values stay in the preprocessing record (outside the
guarantee) and never reach a result; the workflow's path (prepare_dataset) gives the
same Dataset as load_table.
"""

from __future__ import annotations

import copy
import gzip
import hashlib
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpreg.config import check_config_references
from dpreg.data import (
    DATASET_LOADERS,
    CodebookError,
    DataIntegrityError,
    Dataset,
    PublicScaling,
    TableError,
    load_table,
    load_table_split,
    read_codebook,
    table_scaling,
)
from dpreg.data.codebook import parse_codebook
from dpreg.data.examples import EXAMPLE_TABLES, example_table_csv, example_table_path
from dpreg.data.pipeline import NO_TEST_ROWS, prepare_dataset
from dpreg.data.table import check_table_options
from dpreg.estimators.intercept import with_intercept
from dpreg.estimators.ols import fit_ols
from dpreg.experiments.benchmark import run_benchmark_cell
from dpreg.experiments.references import reference_summary

ROOT = Path(__file__).resolve().parents[2]
FAIR_CODEBOOK = ROOT / "config" / "codebooks" / "fair.yaml"

CODEBOOK = """\
description: a toy table
response: y
features: [a, b]
intercept: false
columns:
  y: {range: [-2, 2]}
  a: {range: [0, 10], description: a count}
  b: {range: [-1, 1]}
"""
ROWS = "a,b,y\n1,0.5,1\n4,-0.5,-1\n5,0,0.5\n9,1,2\n"


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def files(tmp_path):
    book = tmp_path / "book.yaml"
    book.write_text(CODEBOOK)
    table = tmp_path / "t.csv"
    table.write_text(ROWS)
    return table, book


def _book(tmp_path, text: str, name: str = "book.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# --------------------------------------------------------------------------- codebook


def test_the_fair_codebook_is_valid_and_public():
    book = read_codebook(FAIR_CODEBOOK)
    assert (
        book.response == "rate_marriage" and book.intercept and book.sha256 == _sha(FAIR_CODEBOOK)
    )
    scaling = book.scaling()
    assert scaling.feature_center[0] == (17.5 + 42) / 2 and scaling.feature_scale[0] == 12.25
    assert scaling.feature_norm == math.sqrt(5) and scaling.response_scale == 2.0


RANGE_A = "range: [0, 10]"
FEATURES = "features: [a, b]"


def _edit(old: str, new: str) -> str:
    assert old in CODEBOOK
    return CODEBOOK.replace(old, new)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (CODEBOOK + "colour: red\n", r"unknown key\(s\) \['colour'\]"),
        (_edit("a count", "a count, unit: m"), r"columns.a: unknown key\(s\) \['unit'\]"),
        (_edit(RANGE_A, "range: [10, 10]"), r"columns.a.range: low 10 must be below high 10"),
        (_edit(RANGE_A, "range: [11, 10]"), r"columns.a.range: low 11 must be below"),
        (_edit(RANGE_A, "range: [0, 1e5]"), r"a.range high: '1e5' is text.*write 1.0e5"),
        (_edit(RANGE_A, "range: [0, '10']"), r"columns.a.range high: '10' is text"),
        (_edit(RANGE_A, "range: [0, ten]"), r"a.range high: must be a number; got the text 'ten'"),
        (_edit(RANGE_A, "range: [0, .inf]"), r"columns.a.range high: must be a finite number"),
        (_edit(RANGE_A, "range: [false, 10]"), r"a.range low: must be a number; got False"),
        (_edit(RANGE_A, "range: [0, 5, 10]"), r"columns.a.range: must be a list \[low, high\]"),
        (_edit("y: {range: [-2, 2]}", "y: {}"), r"columns.y: the response needs a public range"),
        (_edit("  b: {range: [-1, 1]}\n", ""), r"features \['b'\] have no public range"),
        (CODEBOOK + "  c: {range: [0, 1]}\n", r"columns.c: described but neither the response"),
        (_edit(FEATURES, "features: [a, b, a]"), r"features: \['a'\] listed twice"),
        (_edit(FEATURES, "features: [a, b, y]"), r"response 'y' is also listed"),
        (_edit(FEATURES, "features: [a, 1990]"), r"features\[1\].*quote it"),
        (_edit(FEATURES, "features: [a, is_train]"), r"'is_train' is reserved"),
        (_edit(FEATURES, "features: []"), r"features: give at least one"),
        (_edit("intercept: false", "intercept: 1"), r"intercept must be true or false"),
        (CODEBOOK + "out_of_range: wrap\n", r"out_of_range must be one of \('clip', 'refuse'\)"),
        (CODEBOOK + "missing: impute\n", r"missing must be one of \('refuse', 'drop'\)"),
        (CODEBOOK + "instruments: [b]\n", r"\['b'\] listed as both features and instruments"),
        (CODEBOOK + "instruments: [z]\n", r"columns.z: an instrument needs a public range"),
        (CODEBOOK + "feature_norm: 0.0\n", r"feature_norm must be > 0"),
        (_edit("response: y\n", ""), r"response is required"),
        ("- a\n- b\n", r"a codebook is a mapping"),
    ],
)
def test_a_bad_codebook_is_refused_naming_the_file_and_key(tmp_path, text, message):
    path = _book(tmp_path, text)
    with pytest.raises(CodebookError, match=message) as err:
        read_codebook(path)
    assert str(path) in str(err.value)


def test_a_duplicate_key_is_refused_with_both_lines(tmp_path):
    path = _book(tmp_path, CODEBOOK.replace("  b: {range: [-1, 1]}", "  a: {range: [-1, 1]}"))
    with pytest.raises(CodebookError, match=r"book.yaml: key 'a' appears twice \(lines 7 and 8\)"):
        read_codebook(path)
    top = _book(tmp_path, CODEBOOK + "response: a\n", "top.yaml")
    with pytest.raises(CodebookError, match=r"top.yaml: key 'response' appears twice"):
        read_codebook(top)


def test_invalid_yaml_is_refused_with_its_line(tmp_path):
    path = _book(tmp_path, CODEBOOK.replace("b: {range: [-1, 1]}", "b: {range: [-1, 1]"))
    with pytest.raises(CodebookError, match=r"book.yaml: not valid YAML at line \d+"):
        read_codebook(path)


def test_a_missing_or_changed_codebook_is_refused(tmp_path, files):
    with pytest.raises(FileNotFoundError, match="codebook .*nope.yaml not found"):
        read_codebook(tmp_path / "nope.yaml")
    _, book = files
    with pytest.raises(DataIntegrityError, match=r"codebook .*book.yaml has sha256 [0-9a-f]{64}"):
        read_codebook(book, sha256="0" * 64)
    table, _ = files
    with pytest.raises(DataIntegrityError, match="book.yaml"):
        load_table(table, book, codebook_sha256="0" * 64)
    assert read_codebook(book, sha256=_sha(book)).sha256 == _sha(book)


def test_a_codebook_built_in_python_is_validated_too():
    with pytest.raises(CodebookError, match="low 3 must be below high 1"):
        parse_codebook({"response": "y", "features": ["a"], "columns": {"y": {"range": [3, 1]}}})


# --------------------------------------------------------------------------- loading


def test_the_map_and_the_record(files):
    table, book = files
    ds = load_table(table, book, sha256=_sha(table), codebook_sha256=_sha(book))
    assert ds.name == "t" and ds.feature_names == ("a", "b") and ds.target_name == "y"
    # no intercept: x_j / max(|low|, |high|), then / sqrt(d)
    np.testing.assert_allclose(ds.X[0], np.array([0.1, 0.5]) / math.sqrt(2), rtol=1e-15)
    np.testing.assert_allclose(ds.y, [0.5, -0.5, 0.25, 1.0], rtol=1e-15)
    steps = {s["step"]: s for s in ds.preprocessing}
    record = steps["codebook"]
    assert record["codebook_sha256"] == _sha(book) and record["file_sha256"] == _sha(table)
    assert record["data_derived_nonprivate"] is False and record["bounds"] == "public"
    assert PublicScaling.from_dict(record["scaling"]) == read_codebook(book).scaling()
    assert steps["clip_counts"]["data_derived_nonprivate"] is True
    assert "outside the guarantee" in steps["clip_counts"]["privacy"]
    assert dict(ds.sources) == {f"table:{table}": _sha(table), f"codebook:{book}": _sha(book)}
    json.dumps(ds.metadata())


def test_a_changed_table_is_refused_before_it_is_read(tmp_path, files):
    table, book = files
    broken = tmp_path / "broken.csv"
    broken.write_bytes(b"\xff\xfe not a table at all")
    with pytest.raises(
        DataIntegrityError, match=r"table .*broken.csv has sha256 .* nothing was read"
    ):
        load_table(broken, book, sha256=_sha(table))
    with pytest.raises(FileNotFoundError, match=r"table .*gone.csv not found"):
        load_table(tmp_path / "gone.csv", book)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("a,y\n1,1\n", r"\['b'\] named by the codebook are not in the table; its columns are"),
        ("a,b,y\n1,x,1\n2,0,1\n", r"column 'b' is not numeric .*first at data row 1"),
        ("a,b,y\n1,0,1\n2,0,1\n3,True,1\n", r"column 'b' is not numeric"),
        ("a,b,y\nTrue,0,1\nFalse,0,1\n", r"column 'a' is boolean"),
        ("a,b,y\n", r"t.csv: the table has a header but no data rows"),
        ("", r"t.csv: the file is empty"),
        ("a,b,a,y\n1,2,3,4\n", r"column\(s\) \['a'\] appear more than once"),
    ],
)  # fmt: skip
def test_bad_tables_are_refused_naming_the_file_and_column(tmp_path, files, content, message):
    _, book = files
    table = tmp_path / "t.csv"
    table.write_text(content)
    with pytest.raises(TableError, match=message) as err:
        load_table(table, book)
    assert "t.csv" in str(err.value)


def test_not_utf8_and_unknown_formats_are_refused(tmp_path, files):
    _, book = files
    latin = tmp_path / "latin.csv"
    latin.write_bytes("a,b,y,caf\xe9\n1,0,1,2\n".encode("latin-1"))
    with pytest.raises(TableError, match="latin.csv: not UTF-8 text"):
        load_table(latin, book)
    xlsx = tmp_path / "t.xlsx"
    xlsx.write_bytes(b"PK")
    with pytest.raises(TableError, match=r"t.xlsx: unknown table format"):
        load_table(xlsx, book)
    bad = tmp_path / "t.parquet"
    bad.write_bytes(b"PAR1 truncated")
    with pytest.raises(TableError, match="t.parquet: not a readable parquet file"):
        load_table(bad, book)


def test_a_bom_csv_gz_and_parquet_give_the_same_dataset(tmp_path, files):
    table, book = files
    plain = load_table(table, book)
    bom = tmp_path / "bom.csv"
    bom.write_bytes(b"\xef\xbb\xbf" + table.read_bytes())
    packed = tmp_path / "t.csv.gz"
    packed.write_bytes(gzip.compress(table.read_bytes()))
    parquet = tmp_path / "t.parquet"
    pd.read_csv(table).to_parquet(parquet)
    empty = tmp_path / "empty.parquet"
    pd.read_csv(table).iloc[:0].to_parquet(empty)
    for other in (bom, packed, parquet):
        ds = load_table(other, book)
        assert ds.X.tobytes() == plain.X.tobytes() and ds.y.tobytes() == plain.y.tobytes()
    with pytest.raises(TableError, match="empty.parquet: the table has a header but no data rows"):
        load_table(empty, book)


def test_missing_values_are_refused_or_dropped_outside_the_guarantee(tmp_path, files):
    _, book = files
    table = tmp_path / "t.csv"
    table.write_text("a,b,y\n1,0.5,1\n4,,-1\n5,0,NA\n9,1,2\n")
    with pytest.raises(
        TableError, match=r"missing values in column\(s\) \['b', 'y'\].*first at data row 2"
    ):
        load_table(table, book)
    dropping = _book(tmp_path, CODEBOOK + "missing: drop\n", "drop.yaml")
    ds = load_table(table, dropping)
    complete = tmp_path / "complete.csv"
    complete.write_text("a,b,y\n1,0.5,1\n9,1,2\n")
    np.testing.assert_array_equal(ds.X, load_table(complete, dropping).X)
    (step,) = [s for s in ds.preprocessing if s["step"] == "drop_missing"]
    assert step["rows_dropped"] == 2 and step["missing_values"] == {"b": 1, "y": 1}
    assert step["data_derived_nonprivate"] is True and "outside the guarantee" in step["privacy"]
    nothing = tmp_path / "nothing.csv"
    nothing.write_text("a,b,y\n,0.5,1\n")
    with pytest.raises(TableError, match="no rows left after dropping"):
        load_table(nothing, dropping)


def test_out_of_range_values_are_clipped_and_counted_or_refused(tmp_path, files):
    _, book = files
    table = tmp_path / "t.csv"
    table.write_text("a,b,y\n12,0.5,1\n4,-0.5,-3\n-1,0,0.5\ninf,0,0\n")
    ds = load_table(table, book)
    inside = tmp_path / "inside.csv"
    inside.write_text("a,b,y\n10,0.5,1\n4,-0.5,-2\n0,0,0.5\n10,0,0\n")
    same = load_table(inside, book)
    np.testing.assert_array_equal(ds.X, same.X)
    np.testing.assert_array_equal(ds.y, same.y)
    (counts,) = [s for s in ds.preprocessing if s["step"] == "clip_counts"]
    assert counts["clipped_values"] == {"y": 1, "a": 3, "b": 0} and counts["clipped_rows"] == 4
    refusing = _book(tmp_path, CODEBOOK + "out_of_range: refuse\n", "refuse.yaml")
    with pytest.raises(
        TableError,
        match=r"'y' has 1 value\(s\) outside its public range \[-2, 2\] \(first at data row 2",
    ):
        load_table(table, refusing)
    assert not [s for s in load_table(inside, refusing).preprocessing if s["step"] == "clip_counts"]


def test_the_clip_counts_reach_no_result(tmp_path, files):
    """Two tables that clip to the same rows give the same results; the counts differ."""
    _, book = files
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_text("a,b,y\n" + "".join(f"{i % 11},{(i % 3) - 1},{(i % 5) - 2}\n" for i in range(60)))
    b.write_text(a.read_text().replace("\n10,", "\n100,"))  # clipped back to the range end 10
    outs = []
    for path in (a, b):
        train, test = load_table_split(path, book, test_fraction=0.25, seed=4)
        cell = {"dataset": "t", "epsilon": [1.0], "methods": ["ols", "adassp"]}
        runs = run_benchmark_cell(cell, trials=3, first_trial=0, seed=1, data=train, test=test)
        reference = reference_summary(train.with_(name="t").to_frame())
        outs.append((runs, reference, train))
    pd.testing.assert_frame_equal(outs[0][0], outs[1][0])
    assert outs[0][1] == outs[1][1]
    counts = [[s for s in t.preprocessing if s["step"] == "clip_counts"][0] for *_, t in outs]
    assert counts[0]["clipped_values"]["a"] == 0 < counts[1]["clipped_values"]["a"]
    for runs, reference, _ in outs:
        assert not [c for c in runs.columns if "clip" in c]
        assert "clip" not in json.dumps(reference)


def test_fewer_rows_than_features_is_refused(tmp_path):
    book = _book(
        tmp_path,
        "response: y\nfeatures: [a, b, c]\nintercept: true\ncolumns:\n"
        + "".join(f"  {c}: {{range: [0, 1]}}\n" for c in "abcy"),
    )
    table = tmp_path / "t.csv"
    table.write_text("a,b,c,y\n0,0,0,0\n1,1,1,1\n0,1,0,1\n")
    with pytest.raises(
        TableError,
        match=r"3 training row\(s\) for 3 feature\(s\) and an intercept.*n >= d \(here 4\)",
    ):
        load_table(table, book)
    table.write_text(table.read_text() + "1,0,1,0\n")
    assert load_table(table, book).n == 4
    with pytest.raises(TableError, match=r"3 training row\(s\)"):
        load_table(table, book, test_fraction=0.25)
    with pytest.raises(TableError, match="holds out no row"):
        load_table(table, book, test_fraction=0.1)
    frame = pd.DataFrame(np.tile([[0.0, 1.0, 0.5, 0.5]], (100, 1)), columns=list("abcy"))
    assert load_table_split(frame, read_codebook(book), test_fraction=0.29)[1].n == 29


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"test_fraction": 1.0}, r"test_fraction must lie in \[0, 1\)"),
        ({"test_fraction": True}, "test_fraction must be a number"),
        ({"seed": -1}, "seed must be an integer >= 0"),
        ({"sha256": "abc"}, "sha256 must be 64 lower-case hex digits"),
    ],
)
def test_bad_loader_options_are_refused(files, options, message):
    table, book = files
    with pytest.raises(ValueError, match=message):
        load_table(table, book, **options)


def test_instruments_and_a_feature_norm(tmp_path):
    book = _book(
        tmp_path,
        "response: y\nfeatures: [x1, x2]\ninstruments: [z1, z2, z3]\nfeature_norm: 5.0\n"
        "columns:\n  y: {range: [-3, 3]}\n  x1: {range: [-4, 4]}\n"
        + "".join(f"  z{k}: {{range: [0, 2]}}\n" for k in (1, 2, 3)),
    )
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        rng.uniform(-1, 6, size=(40, 6)), columns=["y", "x1", "x2", "z1", "z2", "z3"]
    )
    ds = load_table(frame, read_codebook(book))
    assert ds.q == 3 and ds.instrument_names == ("z1", "z2", "z3")
    assert np.linalg.norm(ds.Z, axis=1).max() <= 1 + 1e-12
    assert np.linalg.norm(ds.X, axis=1).max() <= 1 + 1e-12
    scaling = read_codebook(book).scaling()
    # x2 has no range: [-R, R] implied by feature_norm; K = min(sqrt 2, (5 + 0) / 4)
    assert scaling.feature_scale == (4.0, 5.0) and scaling.feature_norm == 1.25
    (counts,) = [s for s in ds.preprocessing if s["step"] == "clip_counts"]
    assert counts["rows_projected_to_the_unit_ball"] > 0
    refusing = _book(tmp_path, book.read_text() + "out_of_range: refuse\n", "r.yaml")
    inside = frame.clip(0, 2)
    inside["x1"], inside["x2"] = 4.0, 3.0  # norm 5: allowed
    assert load_table(inside, read_codebook(refusing)).n == 40
    inside.loc[7, "x2"] = 3.5
    with pytest.raises(
        TableError,
        match=r"1 row\(s\) have a feature norm above feature_norm 5 \(first at data row 8\)",
    ):
        load_table(inside, read_codebook(refusing))


def test_coefficients_map_back_to_ols_in_original_units(tmp_path):
    """OLS with an intercept on the scaled rows, mapped back, is OLS on the raw rows."""
    book = read_codebook(FAIR_CODEBOOK)
    frame = pd.read_csv(pd.io.common.StringIO(example_table_csv("fair")))
    ds = load_table(frame, book)
    fit = with_intercept(fit_ols, ds.X, ds.y, bound_X=1.0, budget=None, rng=None, trials=1)
    coef, intercept = table_scaling(ds).to_original(fit.theta[0], fit.intercept[0])
    raw = frame[list(book.features)].to_numpy()
    design = np.column_stack([raw, np.ones(len(raw))])
    expected = np.linalg.lstsq(design, frame[book.response].to_numpy(), rcond=None)[0]
    np.testing.assert_allclose(coef, expected[:-1], rtol=1e-9)
    np.testing.assert_allclose(intercept, expected[-1], rtol=1e-9)


# --------------------------------------------------------------------------- properties


@st.composite
def _codebooks(draw):
    d = draw(st.integers(1, 4))
    q = draw(st.integers(0, 2))
    bounds = st.floats(-1e4, 1e4, allow_nan=False, allow_infinity=False, width=32)
    columns = {}
    names = ["y"] + [f"x{j}" for j in range(d)] + [f"z{j}" for j in range(q)]
    for name in names:
        low = draw(bounds)
        width = draw(st.floats(0.015625, 1e4, allow_nan=False, width=32))
        columns[name] = {"range": [float(low), float(low) + float(width)]}
    data = {
        "response": "y",
        "features": names[1 : 1 + d],
        "instruments": names[1 + d :],
        "intercept": draw(st.booleans()),
        "columns": columns,
    }
    if draw(st.booleans()):
        data["feature_norm"] = draw(st.floats(0.015625, 1e5, allow_nan=False, width=32))
    return parse_codebook(data)


def _inside(book, rng, n):
    cols = {}
    for name in book.names:
        low, high = book.range(name)
        cols[name] = rng.uniform(low, high, size=n)
    return pd.DataFrame(cols)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(book=_codebooks(), seed=st.integers(0, 2**32 - 1))
def test_the_map_and_its_inverse_are_exact(book, seed):
    rng = np.random.default_rng(seed)
    scaling = book.scaling()
    x = _inside(book, rng, 7)[list(book.features)].to_numpy()
    np.testing.assert_allclose(scaling.inverse_X(scaling.transform_X(x)), x, rtol=1e-12, atol=1e-9)
    theta, theta0 = rng.normal(size=(3, book_d := len(book.features))), rng.normal(size=3)
    beta, beta0 = scaling.to_original(theta, theta0)
    assert beta.shape == (3, book_d) and beta0.shape == (3,)
    # the prediction in original units equals the scaled prediction mapped back
    scaled = scaling.transform_X(x) @ theta.T + theta0
    original = x @ beta.T + beta0
    np.testing.assert_allclose(
        scaling.inverse_y(scaled), original, rtol=1e-9, atol=1e-9 * (1 + np.abs(original).max())
    )
    none = scaling.to_original(theta, None)  # a fit without intercept (Fit.intercept None)
    np.testing.assert_array_equal(none[1], scaling.to_original(theta, 0.0)[1])
    back, back0 = scaling.to_scaled(beta, beta0)
    np.testing.assert_allclose(back, theta, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(back0, theta0, rtol=1e-9, atol=1e-9 * (1 + np.abs(beta0).max()))
    assert PublicScaling.from_dict(json.loads(json.dumps(scaling.to_dict()))) == scaling


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(book=_codebooks(), seed=st.integers(0, 2**32 - 1), spread=st.floats(0.5, 3.0))
def test_bounds_hold_after_preprocessing_and_the_map_is_row_by_row(book, seed, spread):
    """Any values (inside or far outside the ranges) end in the unit ball, row by row."""
    rng = np.random.default_rng(seed)
    n = len(book.features) + 6
    frame = _inside(book, rng, n)
    for name in book.names:
        low, high = book.range(name)
        mid, half = (low + high) / 2, (high - low) / 2
        frame[name] = mid + (frame[name] - mid) * spread + rng.normal(size=n) * half
    ds = load_table(frame, book)
    assert np.linalg.norm(ds.X, axis=1).max() <= 1 + 1e-12
    assert np.abs(ds.y).max() <= 1
    if ds.Z is not None:
        assert np.linalg.norm(ds.Z, axis=1).max() <= 1 + 1e-12
    # a neighbouring table (one row replaced) changes that row's output only
    other = frame.copy()
    other.iloc[0] = frame.iloc[-1].to_numpy() * 3 + 1
    moved = load_table(other, book)
    np.testing.assert_array_equal(moved.X[1:], ds.X[1:])
    np.testing.assert_array_equal(moved.y[1:], ds.y[1:])


# --------------------------------------------------------------------------- the workflow


def test_prepare_dataset_gives_the_same_dataset_as_load_table(tmp_path, files, monkeypatch):
    table, book = files
    table.write_text(
        "a,b,y\n" + "".join(f"{i % 11},{(i % 3) - 1},{(i % 5) - 2}\n" for i in range(50))
    )
    monkeypatch.chdir(tmp_path)  # paths relative to the working directory, as in the workflow
    options = {
        "path": "t.csv",
        "codebook": "book.yaml",
        "sha256": _sha(table),
        "test_fraction": 0.2,
    }
    spec = {"loader": "table", "options": options}
    train, test = load_table_split(
        "t.csv", "book.yaml", sha256=_sha(table), test_fraction=0.2, seed=17
    )
    for rows, expected in (("train", train), ("test", test)):
        frame, meta = prepare_dataset("mine", spec, seed=17, rows=rows)
        got = Dataset.from_frame(frame)
        assert got.X.tobytes() == expected.X.tobytes() and got.y.tobytes() == expected.y.tobytes()
        assert got.name == "mine" and got.feature_names == expected.feature_names
        assert got.preprocessing == expected.preprocessing and meta["loader"] == "table"
        assert table_scaling(got) == read_codebook(book).scaling()
    assert (train.n, test.n, meta["n_train"], meta["n_test"]) == (40, 10, 40, 10)
    whole = load_table("t.csv", "book.yaml")
    rows = np.vstack([np.column_stack([p.X, p.y]) for p in (train, test)])
    np.testing.assert_array_equal(  # the two parts are the rows of the table, each once
        np.sort(rows.view([("", rows.dtype)] * 3), axis=0),
        np.sort(np.column_stack([whole.X, whole.y]).view([("", rows.dtype)] * 3), axis=0),
    )
    # no rows held out: an empty test table, as for every dataset without a split
    spec0 = {"loader": "table", "options": {"path": "t.csv", "codebook": "book.yaml"}}
    frame, meta = prepare_dataset("mine", spec0, seed=17, rows="test")
    assert len(frame) == 0 and meta["no_test_rows"] == NO_TEST_ROWS
    with pytest.raises(
        ValueError, match="a table is prepared by its codebook .*use preprocessing: none"
    ):
        prepare_dataset("mine", {**spec, "preprocessing": "lev2026"}, seed=17)


def test_a_failing_preparation_writes_nothing(tmp_path, files, monkeypatch):
    """The job computes everything before its atomic writes: a refused table leaves no file."""
    from dpreg.io import write_json, write_parquet

    table, book = files
    monkeypatch.chdir(tmp_path)
    spec = {
        "loader": "table",
        "options": {"path": "t.csv", "codebook": "book.yaml", "sha256": "0" * 64},
    }
    out = tmp_path / "resources" / "data"
    with pytest.raises(DataIntegrityError):
        frame, meta = prepare_dataset(
            "mine", spec, seed=0
        )  # as workflow/scripts/prepare_dataset.py
        write_parquet(frame, out / "mine.parquet")
        write_json(meta, out / "mine.json")
    assert not out.exists()


def test_the_loader_is_registered_and_splits():
    loader = DATASET_LOADERS["table"]
    assert loader is load_table and loader.split is load_table_split


# --------------------------------------------------------------------------- config


@pytest.fixture
def smoke():
    with open(ROOT / "config" / "smoke.yaml", encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def test_the_smoke_table_pins_the_exported_bytes_and_the_codebook(smoke):
    options = smoke["datasets"]["fair_user"]["options"]
    text = example_table_csv("fair")
    assert hashlib.sha256(text.encode("utf-8")).hexdigest() == options["sha256"]
    assert example_table_csv("fair") == text  # deterministic
    assert options["path"] == example_table_path("fair") and "fair" in EXAMPLE_TABLES
    assert _sha(ROOT / options["codebook"]) == options["codebook_sha256"]
    with pytest.raises(ValueError, match="unknown example table 'nope'"):
        example_table_csv("nope")


def _with_table(smoke, tmp_path, monkeypatch, **options):
    monkeypatch.chdir(tmp_path)
    Path("config/codebooks").mkdir(parents=True)
    for spec in smoke["datasets"].values():  # every table's codebook (fair, mroz, ...)
        if spec["loader"] == "table":
            book = spec["options"]["codebook"]
            Path(book).write_bytes((ROOT / book).read_bytes())
    bad = copy.deepcopy(smoke)
    bad["datasets"]["fair_user"]["options"].update(options)
    return bad


def test_the_smoke_config_passes_before_and_after_the_export(smoke, tmp_path, monkeypatch):
    config = _with_table(smoke, tmp_path, monkeypatch)
    check_config_references(config)  # resources/user/fair.csv is made by a rule
    Path("resources/user").mkdir(parents=True)
    Path("resources/user/fair.csv").write_text(example_table_csv("fair"))
    check_config_references(config)
    Path("resources/user/fair.csv").write_text(example_table_csv("fair").replace("3,32", "3,33", 1))
    with pytest.raises(
        ValueError, match=r"fair_user.options.path: table resources/user/fair.csv has sha256"
    ):
        check_config_references(config)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"sha256": None}, r"fair_user.options.sha256: required: pin the sha256"),
        ({"codebook_sha256": None}, r"required: pin .* \(codebook_sha256: [0-9a-f]+"),
        ({"codebook_sha256": "0" * 64}, r"options.codebook: codebook .*fair.yaml has sha256"),
        ({"codebook": "config/codebooks/none.yaml"}, r"options.codebook: .*none.yaml not found"),
        ({"path": "resources/user/mine.csv"}, r"options.path: table .*/mine.csv not found"),
        ({"test_fraction": 1.5}, r"fair_user.options.test_fraction must lie in \[0, 1\)"),
        ({"test_fraction": True}, r"fair_user.options.test_fraction: must be a number"),
        ({"test_fraction": "0.2"}, r"fair_user.options.test_fraction: '0.2' is text"),
        ({"sha256": 12}, r"fair_user.options.sha256: must be text"),
        ({"codebok": "x.yaml"}, r"fair_user.options: unknown option\(s\) \['codebok'\] for loader"),
    ],
)  # fmt: skip
def test_bad_table_entries_stop_the_dry_run(smoke, tmp_path, monkeypatch, options, message):
    bad = _with_table(smoke, tmp_path, monkeypatch, **options)
    with pytest.raises(ValueError, match=message):
        check_config_references(bad)


def test_a_missing_column_stops_the_dry_run(smoke, tmp_path, monkeypatch):
    config = _with_table(smoke, tmp_path, monkeypatch)
    Path("resources/user").mkdir(parents=True)
    text = example_table_csv("fair").replace("religious", "religion", 1)
    Path("resources/user/fair.csv").write_text(text)
    sha = hashlib.sha256(text.encode()).hexdigest()
    config["datasets"]["fair_user"]["options"]["sha256"] = sha
    with pytest.raises(
        ValueError,
        match=r"column\(s\) \['religious'\] named by the codebook .* are not in the table",
    ):
        check_config_references(config)


def test_a_study_must_fit_the_intercept_its_table_declares(smoke, tmp_path, monkeypatch):
    config = _with_table(smoke, tmp_path, monkeypatch)
    config["studies"]["benchmark"]["params"]["intercept"] = False
    with pytest.raises(
        ValueError,
        match=r"benchmark: dataset 'fair_user' is a table whose codebook declares an intercept"
        r".*set intercept: true",
    ):
        check_config_references(config)
    config = copy.deepcopy(smoke)
    config["studies"]["adassp_uci"]["grid"]["dataset"] = ["fair_user"]
    with pytest.raises(
        ValueError, match=r"kind 'eps_grid' fits no intercept: use intercept: false in the codebook"
    ):
        check_config_references(config)
    config["datasets"]["fair_user"]["preprocessing"] = "lev2026"
    with pytest.raises(
        ValueError, match=r"fair_user.preprocessing: a table is prepared by its codebook"
    ):
        check_config_references(config)


def test_check_table_options_accepts_what_load_table_accepts(files):
    table, book = files
    options = {
        "path": str(table),
        "codebook": str(book),
        "sha256": _sha(table),
        "codebook_sha256": _sha(book),
    }
    assert check_table_options(options) == read_codebook(book)
    with pytest.raises(ValueError, match=r"table.path: required"):
        check_table_options({**options, "path": None})
