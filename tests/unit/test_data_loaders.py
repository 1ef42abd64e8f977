from __future__ import annotations

import functools
import gzip
import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpreg.data import (
    DATASET_LOADERS,
    UCI_NAMES,
    Dataset,
    DataUnavailableError,
    dataset_names,
    fetch,
    load_angev98,
    load_angrist_fertility,
    load_dataset,
    load_manifest,
    load_uci,
)

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def mirror_fetcher(tmp_path_factory):
    env = os.environ.get("DPREG_DATA_MIRROR")
    mirror = Path(env) if env else REPO_ROOT.parent / "shared" / "data" / "mirror"
    if not mirror.is_dir():
        pytest.skip("no data mirror (set DPREG_DATA_MIRROR to shared/data/mirror)")
    dest = tmp_path_factory.mktemp("downloads")
    return functools.partial(fetch, dest_dir=dest, mirror=mirror, allow_download=False)


@pytest.fixture(scope="module")
def fertility():
    return load_angrist_fertility()


def _sig3(x: float) -> str:
    return f"{x:.3g}"


# --------------------------------------------------------------------------- UCI


def test_airfoil_from_mirror(mirror_fetcher):
    ds = load_uci("airfoil", fetcher=mirror_fetcher)
    assert (ds.n, ds.d) == (1503, 5)
    assert ds.X.dtype == np.float64 and ds.y.shape == (1503,)
    assert ds.train_mask is None and ds.split is None
    entries = load_manifest()
    assert ds.sources == (
        ("uci/airfoil/data", entries["uci/airfoil/data"].sha256),
        ("uci/airfoil/test_mask", entries["uci/airfoil/test_mask"].sha256),
    )
    meta = json.loads(json.dumps(ds.metadata()))
    assert meta["n"] == 1503 and meta["d"] == 5
    assert [s["id"] for s in meta["sources"]] == ["uci/airfoil/data", "uci/airfoil/test_mask"]


def test_airfoil_split_uses_mask_column(mirror_fetcher):
    ds = load_dataset("airfoil", fetcher=mirror_fetcher, split=3)
    mask_path = mirror_fetcher("uci/airfoil/test_mask")
    test = pd.read_csv(mask_path, header=None).to_numpy()[:, 3] == 1
    np.testing.assert_array_equal(ds.train_mask, ~test)
    assert 0 < (~ds.train_mask).sum() < ds.n / 5
    assert "column 3" in ds.split


@pytest.mark.parametrize("split", [-1, 10, 1.5, True])
def test_bad_split(mirror_fetcher, split):
    with pytest.raises(ValueError, match="split"):
        load_uci("airfoil", fetcher=mirror_fetcher, split=split)


def _fake_fetcher(tmp_path, data_rows: int, mask_rows: int, mask_value: int = 1):
    data = tmp_path / "data.csv.gz"
    mask = tmp_path / "test_mask.csv.gz"
    with gzip.open(data, "wt") as fh:
        fh.writelines(f"{i},{i % 3},{2 * i}\n" for i in range(data_rows))
    with gzip.open(mask, "wt") as fh:
        fh.writelines(f"{mask_value if i % 4 == 0 else 0},0\n" for i in range(mask_rows))
    return lambda eid: data if eid.endswith("/data") else mask


def test_row_count_mismatch_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="has 20 rows but .* has 19"):
        load_uci("yacht", fetcher=_fake_fetcher(tmp_path, 20, 19))


def test_non_binary_mask_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="only 0 and 1"):
        load_uci("yacht", fetcher=_fake_fetcher(tmp_path, 20, 20, mask_value=2))


def test_fake_uci_layout(tmp_path):
    ds = load_uci("yacht", fetcher=_fake_fetcher(tmp_path, 20, 20), split=0)
    assert (ds.n, ds.d) == (20, 2)
    np.testing.assert_array_equal(ds.y, 2 * np.arange(20))
    assert ds.train_mask.sum() == 15


def test_registry_names_and_unknown():
    names = dataset_names()
    assert {"airfoil", "autompg", "angrist_fertility", "angev98"} <= set(names)
    assert set(UCI_NAMES) <= set(DATASET_LOADERS)
    with pytest.raises(ValueError, match=r"unknown dataset 'nope'; known datasets: .*airfoil"):
        load_dataset("nope")
    with pytest.raises(ValueError, match="unknown uci_datasets name"):
        load_uci("nope")


def test_uci_names_match_manifest():
    entries = load_manifest()
    with_data = {e.split("/")[1] for e in entries if e.startswith("uci/") and e.endswith("/data")}
    assert set(UCI_NAMES) == with_data


# --------------------------------------------------------------------------- Angrist-Evans


def test_fertility_shape_and_sanity_values(fertility):
    ds = fertility
    assert (ds.n, ds.d, ds.q) == (254654, 1, 1)
    assert ds.feature_names == ("morekids",) and ds.instrument_names == ("samesex",)
    assert ds.target_name == "work"
    x, z, y = ds.X[:, 0], ds.Z[:, 0], ds.y
    assert set(np.unique(x)) == {0.0, 1.0} and set(np.unique(z)) == {0.0, 1.0}
    zc = z - z.mean()
    first_stage = zc @ (x - x.mean()) / (zc @ zc)
    wald = (zc @ (y - y.mean())) / (zc @ (x - x.mean()))
    # data/README.md sanity values (computed on AER::Fertility)
    assert _sig3(first_stage) == "0.0675"
    assert _sig3(wald) == "-6.31"
    assert ds.sources[0][0].endswith("AER/Fertility") and len(ds.sources[0][1]) == 64


def test_fertility_controls_and_intercept():
    ds = load_dataset("angrist_fertility", controls=["age"], add_intercept=True)
    assert ds.feature_names == ("morekids", "age", "const")
    assert ds.instrument_names == ("samesex", "age", "const")
    beta = np.linalg.solve(ds.Z.T @ ds.X, ds.Z.T @ ds.y)
    assert _sig3(beta[0]) == "-6.06"  # data/README.md: IV2SLS with an age control
    full = load_angrist_fertility(controls=True)
    assert full.feature_names == ("morekids", "age", "afam", "hispanic", "other")
    frame = full.to_frame()
    assert list(frame.columns) == [*full.feature_names, "samesex", "work"]


@pytest.mark.parametrize("controls", [["income"], ["age", "age"]])
def test_fertility_bad_controls(controls):
    with pytest.raises(ValueError, match="controls"):
        load_angrist_fertility(controls=controls)


def test_angev98_unavailable_explains_how_to_enable(tmp_path, monkeypatch):
    monkeypatch.delenv("DPREG_DATA_MIRROR", raising=False)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(DataUnavailableError, match=r"download=True.*DPREG_DATA_MIRROR"):
        load_angev98()
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------- Dataset


def _toy(**kw):
    rng = np.random.default_rng(0)
    base = {
        "name": "toy",
        "X": rng.standard_normal((6, 2)),
        "y": rng.standard_normal(6),
        "train_mask": np.array([1, 1, 1, 1, 0, 0], dtype=bool),
        "sources": (("toy/file", "0" * 64),),
    }
    base.update(kw)
    return Dataset(**base)


def test_frame_roundtrip_through_parquet(tmp_path):
    ds = _toy(Z=np.arange(12.0).reshape(6, 2), instrument_names=("z_a", "z_b"))
    frame = ds.to_frame()
    assert list(frame.columns) == ["x0", "x1", "z_a", "z_b", "y", "is_train"]
    frame.to_parquet(tmp_path / "t.parquet", index=False)
    back = Dataset.from_frame(pd.read_parquet(tmp_path / "t.parquet"))
    np.testing.assert_array_equal(back.X, ds.X)
    np.testing.assert_array_equal(back.Z, ds.Z)
    np.testing.assert_array_equal(back.y, ds.y)
    np.testing.assert_array_equal(back.train_mask, ds.train_mask)
    assert back.metadata() == ds.metadata()


def test_from_frame_without_metadata():
    frame = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [0.0, 1.0, 0.0], "t": [1.0, 2.0, 2.0]})
    ds = Dataset.from_frame(frame, name="plain", target="t")
    assert ds.feature_names == ("a", "b") and ds.Z is None and ds.train_mask is None
    with pytest.raises(ValueError, match="name= and target="):
        Dataset.from_frame(frame)
    with pytest.raises(ValueError, match=r"\['c'\]"):
        Dataset.from_frame(frame, name="p", target="t", features=["a", "c"])


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"y": np.zeros(5)}, "y has 5 rows"),
        ({"X": np.full((6, 2), np.nan)}, "NaN"),
        ({"feature_names": ("a",)}, "feature_names has 1"),
        ({"feature_names": ("a", "a")}, "unique"),
        ({"feature_names": ("y", "b")}, "target_name"),
        ({"train_mask": np.ones(5, dtype=bool)}, "train_mask must have shape"),
        ({"Z": np.zeros((5, 1))}, "Z has 5 rows"),
        ({"instrument_names": ("z",)}, "Z is None"),
        ({"Z": np.zeros((6, 1)), "instrument_names": ("x0",)}, "different values"),
    ],
)
def test_dataset_validation(kw, match):
    with pytest.raises(ValueError, match=match):
        _toy(**kw)
