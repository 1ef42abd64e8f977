"""The held-out (test) rows: ``load_lev2026_split`` and ``prepare_dataset(rows="test")``.

The test rows must be transformed exactly as the training rows: z-scored with the
training mean and standard deviation, scaled by the training root mean squares or
data-derived maxima, and (public bounds) clipped to the same public bounds
(docs/lev2026-data.md, "Held-out rows"). The training part must be bit for bit what the
loaders returned before the split function existed.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from dpreg.data import fetch, load_dataset, load_uci, preprocess_lev2026
from dpreg.data.lev2026 import (
    LARGE_OFFLINE_UNAVAILABLE,
    LEV2026_DATASETS,
    BoundsSpec,
    LevDatasetInfo,
    _finish,
    _Raw,
    held_out_rows,
    lev2026_kind,
    load_lev2026,
    load_lev2026_split,
)
from dpreg.data.pipeline import NO_TEST_ROWS, prepare_dataset
from dpreg.io import read_prepared_table, sha256_file, write_json, write_parquet

OFFLINE = sorted(set(LEV2026_DATASETS) - set(LARGE_OFFLINE_UNAVAILABLE))
BOUNDS = ("public", "data_derived")
# Datasets whose raw rows are distinct across the split, so "no test row equals a
# training row" is a check of disjointness (mask and permutation kinds, both z-scored
# and not, Crime's full-data z-score).
DISTINCT = [
    "lev_concreteslump", "lev_machine", "lev_servo", "lev_yacht", "lev_pendulum",
    "lev_housing", "lev_crime", "lev_tamielectric", "lev_wine", "lev_energy",
]  # fmt: skip


@pytest.fixture(scope="module")
def fetcher(data_mirror, tmp_path_factory):
    dest = tmp_path_factory.mktemp("test_rows_downloads")
    return functools.partial(fetch, dest_dir=dest, mirror=data_mirror, allow_download=False)


def _draw(name: str, draw: int) -> dict[str, int]:
    return {"split" if lev2026_kind(name) == "mask" else "seed": draw}


def _step(ds, name):
    return [s for s in ds.preprocessing if s.get("step") == name]


def _rows(ds) -> np.ndarray:
    return np.column_stack([ds.X, ds.y])


def _by_hand(X, y, train, *, standardise, bounds, bound_X_per_sqrt_d=2.0, bound_y=3.0):
    """The lev2026 transformation written out: statistics of the training rows only."""
    Xtr, ytr = X[train], y[train]
    if standardise:
        std = Xtr.std(axis=0, ddof=0)
        X = (X - Xtr.mean(axis=0)) / np.where(std == 0, 1.0, std)
        Xtr = X[train]
    if bounds == "data_derived":
        X = X / np.linalg.norm(Xtr, axis=1).max()
        y = y / np.abs(ytr).max()
    else:
        if not standardise:
            rms = np.sqrt(np.mean(Xtr**2, axis=0))
            X = X / np.where(rms == 0, 1.0, rms)
        y = y / np.sqrt(np.mean(ytr**2))
        c_x = bound_X_per_sqrt_d * math.sqrt(X.shape[1])
        X = X / np.maximum(c_x, np.linalg.norm(X, axis=1))[:, None]
        y = np.clip(y / bound_y, -1.0, 1.0)
    return (X[train], y[train]), (X[~train], y[~train])


def _assert_rows(ds, X, y):
    np.testing.assert_allclose(ds.X, X, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(ds.y, y, rtol=1e-13, atol=1e-15)


# --------------------------------------------------------------------------- the loaders


@pytest.mark.parametrize("bounds", BOUNDS)
@pytest.mark.parametrize(
    ("name", "draw"),
    [("lev_concreteslump", 0), ("lev_pol", 4), ("lev_machine", 9),
     ("lev_housing", 0), ("lev_crime", 3), ("lev_tamielectric", 7), ("lev_energy", 1)],
)  # fmt: skip
def test_train_part_is_the_loader_output_byte_for_byte(name, draw, bounds, fetcher):
    options = {**_draw(name, draw), "bounds": bounds}
    old = load_dataset(name, fetcher=fetcher, **options)
    train, test = load_lev2026_split(name, fetcher=fetcher, **options)
    assert train.X.tobytes() == old.X.tobytes() and train.y.tobytes() == old.y.tobytes()
    assert train.X.dtype == old.X.dtype and train.X.shape == old.X.shape
    for field in ("name", "feature_names", "target_name", "split", "sources", "description"):
        assert getattr(train, field) == getattr(old, field), field
    assert train.preprocessing == old.preprocessing and train.train_mask is None
    assert load_lev2026(name, fetcher=fetcher, **options).X.tobytes() == old.X.tobytes()
    # The test part: same columns and provenance, its own description and split step.
    assert test.feature_names == train.feature_names and test.sources == train.sources
    assert test.split == train.split and test.train_mask is None
    assert "held-out test rows" in test.description
    assert _step(test, "split")[-1]["part"] == "test"
    assert _step(test, "lev2026") == _step(train, "lev2026")


@pytest.mark.parametrize("name", OFFLINE)
def test_train_and_test_together_have_every_row(name, fetcher):
    train, test = load_lev2026_split(name, fetcher=fetcher, **_draw(name, 2))
    (step,) = _step(train, "lev2026")
    assert train.n + test.n == step["n_total"]
    assert test.n == held_out_rows(train) == step["held_out_rows"] > 0
    assert train.n == step["n_train"] and train.d == test.d


@pytest.mark.parametrize("bounds", BOUNDS)
@pytest.mark.parametrize("name", DISTINCT)
def test_train_and_test_are_disjoint(name, bounds, fetcher):
    train, test = load_lev2026_split(name, fetcher=fetcher, bounds=bounds, **_draw(name, 5))
    A, B = _rows(train), _rows(test)
    n_a, n_b = len(np.unique(A, axis=0)), len(np.unique(B, axis=0))
    # no row of the test part equals a training row (the raw rows are distinct)
    assert len(np.unique(np.vstack([A, B]), axis=0)) == n_a + n_b
    assert len(A) + len(B) == _step(train, "lev2026")[0]["n_total"]


@pytest.mark.parametrize("name", OFFLINE)
def test_public_bounds_hold_for_the_test_rows(name, fetcher):
    """Test rows are clipped to the public bounds like the training rows."""
    train, test = load_lev2026_split(name, fetcher=fetcher, **_draw(name, 1))
    for part in (train, test):
        assert np.linalg.norm(part.X, axis=1).max() <= 1 + 1e-12
        assert np.abs(part.y).max() <= 1
    (clip,) = _step(test, "clip_scale")
    assert clip["scale_X"] == pytest.approx(2.0 * math.sqrt(test.d)) and clip["scale_y"] == 3.0
    assert clip == _step(train, "clip_scale")[0]  # one map, counted on the training rows


@pytest.mark.parametrize("name", ["lev_pol", "lev_pendulum", "lev_machine", "lev_yacht"])
def test_data_derived_test_rows_use_the_training_factors(name, fetcher):
    """The training maxima scale the test rows, which may then exceed 1 (documented)."""
    train, test = load_lev2026_split(name, fetcher=fetcher, bounds="data_derived")
    assert np.linalg.norm(train.X, axis=1).max() == pytest.approx(1.0, rel=1e-12)
    assert np.abs(train.y).max() == pytest.approx(1.0, rel=1e-12)
    beyond = max(np.linalg.norm(test.X, axis=1).max(), np.abs(test.y).max())
    assert beyond > 1  # these four datasets have a test row beyond the training maxima
    assert _step(test, "scale") == _step(train, "scale")


def _read_concreteslump(fetcher):
    data = pd.read_csv(fetcher("hessianmix/concreteslump_train"), header=None).to_numpy(float)
    masks = pd.read_csv(fetcher("hessianmix/concreteslump_mask"), header=None).to_numpy()
    return data[:, :-1], data[:, -1], masks


@pytest.mark.parametrize("bounds", BOUNDS)
@pytest.mark.parametrize("split", [0, 6])
def test_mask_test_rows_recomputed_by_hand(split, bounds, fetcher):
    """Concrete Slump: z-score with the training mean/std, then scale (and clip)."""
    X, y, masks = _read_concreteslump(fetcher)
    train_rows = masks[:, split] == 0
    (Xtr, ytr), (Xte, yte) = _by_hand(X, y, train_rows, standardise=True, bounds=bounds)
    train, test = load_lev2026_split(
        "lev_concreteslump", fetcher=fetcher, split=split, bounds=bounds
    )
    _assert_rows(train, Xtr, ytr)
    _assert_rows(test, Xte, yte)
    # Statistics of all rows (the wrong thing) would give other test rows.
    everything = np.ones(len(y), dtype=bool)
    (Xall, _), _ = _by_hand(X, y, everything, standardise=True, bounds=bounds)
    assert not np.allclose(test.X, Xall[~train_rows], rtol=1e-6)


@pytest.mark.parametrize("bounds", BOUNDS)
def test_permutation_test_rows_recomputed_by_hand(bounds, fetcher):
    """Housing: the rows after int(0.8 m) of default_rng(seed).permutation(m) are the test rows."""
    data = pd.read_csv(fetcher("hessianmix/housing"), header=None, sep=r"\s+").to_numpy(float)
    perm = np.random.default_rng(11).permutation(len(data))
    data = data[perm]
    train_rows = np.arange(len(data)) < int(0.8 * len(data))
    X, y = data[:, :-1], data[:, -1]
    (Xtr, ytr), (Xte, yte) = _by_hand(X, y, train_rows, standardise=False, bounds=bounds)
    train, test = load_lev2026_split("lev_housing", fetcher=fetcher, seed=11, bounds=bounds)
    _assert_rows(train, Xtr, ytr)
    _assert_rows(test, Xte, yte)


@settings(max_examples=60, deadline=None)
@given(
    data=st.data(),
    n=st.integers(4, 30),
    d=st.integers(1, 4),
    standardise=st.booleans(),
    bounds=st.sampled_from(BOUNDS),
    bound_X_per_sqrt_d=st.sampled_from([0.5, 1.0, 2.0]),
    bound_y=st.sampled_from([0.5, 3.0]),
)
def test_split_transform_property(data, n, d, standardise, bounds, bound_X_per_sqrt_d, bound_y):
    """Any data and split: the parts are the hand-computed transform of the right rows."""
    values = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)
    X = data.draw(arrays(np.float64, (n, d), elements=values))
    y = data.draw(arrays(np.float64, (n,), elements=values))
    train = data.draw(arrays(np.bool_, (n,)))
    assume(0 < train.sum() < n)
    assume(np.abs(y[train]).max() > 1e-3 and np.abs(X[train]).max() > 1e-3)
    raw = _Raw(X.copy(), y.copy(), tuple(f"x{j}" for j in range(d)), "y", [], [], "toy")
    info = LevDatasetInfo("toy", "Toy", "mask")
    if standardise and bounds == "data_derived":
        spread = X[train].std(axis=0)
        assume(np.any(spread > 0))  # z-scoring a constant column zeroes it
    spec = BoundsSpec(bounds, bound_X_per_sqrt_d, bound_y)
    tr, te = _finish(
        info, raw, train, standardise=standardise, split_desc="toy", summary={}, bounds=spec
    )
    (Xtr, ytr), (Xte, yte) = _by_hand(
        X, y, train, standardise=standardise, bounds=bounds,
        bound_X_per_sqrt_d=bound_X_per_sqrt_d, bound_y=bound_y,
    )  # fmt: skip
    _assert_rows(tr, Xtr, ytr)
    _assert_rows(te, Xte, yte)
    assert tr.n + te.n == n == _step(te, "lev2026")[0]["n_total"]
    if bounds == "public":
        assert np.linalg.norm(te.X, axis=1).max() <= 1 + 1e-12 and np.abs(te.y).max() <= 1


# --------------------------------------------------------------------------- the pipeline


def _prepare(name, spec, data_mirror, tmp_path, rows, seed=4):
    return prepare_dataset(
        name, spec, mirror=data_mirror, allow_download=False,
        download_dir=tmp_path / "dl", seed=seed, rows=rows,
    )  # fmt: skip


@pytest.mark.parametrize(
    "spec",
    [{"loader": "lev_solar", "options": {"bounds": "data_derived"}},
     {"loader": "lev_solar", "split": 3},
     {"loader": "lev_autompg"}],
)  # fmt: skip
def test_prepare_test_rows_of_a_lev_loader(spec, data_mirror, tmp_path):
    frame, meta = _prepare("mine", spec, data_mirror, tmp_path, "train")
    test_frame, test_meta = _prepare("mine", spec, data_mirror, tmp_path, "test")
    options = dict(spec.get("options") or {})
    options.update({"split": spec.get("split", 0)} if "solar" in spec["loader"] else {"seed": 4})
    fetcher = functools.partial(
        fetch, dest_dir=tmp_path / "dl", mirror=data_mirror, allow_download=False
    )
    train, test = load_lev2026_split(spec["loader"], fetcher=fetcher, **options)
    pd.testing.assert_frame_equal(frame, train.with_(name="mine").to_frame())
    pd.testing.assert_frame_equal(test_frame, test.with_(name="mine").to_frame())
    assert list(test_frame.columns) == list(frame.columns)
    assert test_meta["rows"] == "test" and test_meta["n"] == test_meta["n_test"] == test.n
    assert test_meta["n_train"] == meta["n"] == train.n
    for key in ("held_out_rows", "config_name", "loader", "sources", "d", "feature_names"):
        assert test_meta[key] == meta[key], key
    assert "rows" not in meta and "no_test_rows" not in test_meta


def test_prepare_test_rows_of_uci_lev2026_preprocessing(data_mirror, tmp_path):
    """`preprocessing: lev2026` on a UCI set: the factors of the training rows, test > 1 allowed."""
    spec = {"loader": "airfoil", "split": 2, "preprocessing": "lev2026"}
    frame, meta = _prepare("airfoil", spec, data_mirror, tmp_path, "train")
    test_frame, test_meta = _prepare("airfoil", spec, data_mirror, tmp_path, "test")
    fetcher = functools.partial(
        fetch, dest_dir=tmp_path / "dl", mirror=data_mirror, allow_download=False
    )
    raw = load_uci("airfoil", fetcher=fetcher, split=2)
    (Xtr, ytr), (Xte, yte) = _by_hand(
        raw.X, raw.y, raw.train_mask, standardise=True, bounds="data_derived"
    )
    _assert_rows(preprocess_lev2026(raw, standardise=True)[1], Xte, yte)
    y_name = meta["target_name"]
    np.testing.assert_allclose(test_frame.drop(columns=y_name).to_numpy(), Xte, rtol=1e-13)
    np.testing.assert_allclose(test_frame[y_name].to_numpy(), yte, rtol=1e-13)
    np.testing.assert_allclose(frame.drop(columns=y_name).to_numpy(), Xtr, rtol=1e-13)
    assert len(frame) + len(test_frame) == raw.n
    assert test_meta["n_test"] == meta["held_out_rows"] == int((~raw.train_mask).sum())


@pytest.mark.parametrize(
    "spec",
    [{"loader": "airfoil", "split": 0, "preprocessing": "none"},
     {"loader": "airfoil", "preprocessing": "none"}],
)  # fmt: skip
def test_no_held_out_rows_give_an_empty_table(spec, data_mirror, tmp_path):
    frame, meta = _prepare("air", spec, data_mirror, tmp_path, "train")
    test_frame, test_meta = _prepare("air", spec, data_mirror, tmp_path, "test")
    assert len(test_frame) == 0 and list(test_frame.columns) == list(frame.columns)
    assert (test_frame.dtypes == frame.dtypes).all()
    assert test_meta["n"] == test_meta["n_test"] == 0 and test_meta["n_train"] == len(frame)
    assert test_meta["no_test_rows"] == NO_TEST_ROWS and test_meta["rows"] == "test"
    assert test_frame.attrs["dpreg"]["n_test"] == 0


def test_rows_option_is_checked(data_mirror, tmp_path):
    with pytest.raises(ValueError, match="rows must be one of"):
        _prepare("air", {"loader": "airfoil"}, data_mirror, tmp_path, "validation")


def test_test_table_round_trip_and_damage(data_mirror, tmp_path):
    """x.test.parquet is verified against x.test.json, as the workflow writes them."""
    spec = {"loader": "lev_servo"}
    for attempt in ("a", "b"):
        frame, meta = _prepare("servo", spec, data_mirror, tmp_path, "test")
        table = write_parquet(frame, tmp_path / attempt / "servo.test.parquet")
        meta["table_sha256"] = sha256_file(table)
        write_json(meta, tmp_path / attempt / "servo.test.json")
    a, b = tmp_path / "a" / "servo.test.parquet", tmp_path / "b" / "servo.test.parquet"
    assert a.read_bytes() == b.read_bytes()  # deterministic
    assert table.with_suffix(".json").name == "servo.test.json"
    back = read_prepared_table(a)
    pd.testing.assert_frame_equal(back, frame)
    damaged = bytearray(a.read_bytes())
    damaged[len(damaged) // 2] ^= 0xFF
    a.write_bytes(bytes(damaged))
    with pytest.raises(
        ValueError, match=r"servo.test.parquet is damaged.*prepare_dataset_with_test_rows"
    ):
        read_prepared_table(a)
    # An empty test table round-trips too.
    empty, meta = _prepare("air", {"loader": "airfoil"}, data_mirror, tmp_path, "test")
    path = write_parquet(empty, tmp_path / "air.test.parquet")
    write_json({**meta, "table_sha256": sha256_file(path)}, tmp_path / "air.test.json")
    assert len(read_prepared_table(path)) == 0
