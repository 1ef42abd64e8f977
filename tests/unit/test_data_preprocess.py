from __future__ import annotations

import functools
import json
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from dpreg.data import (
    Dataset,
    center,
    clip_to_public_bounds,
    fetch,
    load_uci,
    preprocess_lev2026,
    rms_scale,
    scale_by_data_derived_bounds,
    scale_by_public_bounds,
    split_by_mask,
    zscore,
)

REPO_ROOT = Path(__file__).resolve().parents[2]


def _ds(n=50, d=3, seed=0, **kw):
    rng = np.random.default_rng(seed)
    X = rng.normal(3.0, 2.0, size=(n, d))
    X[:, -1] = 7.0  # a constant column
    mask = np.ones(n, dtype=bool)
    mask[-10:] = False
    X[-10:] *= 100.0  # test rows are wild: must not influence any statistic
    base = {"name": "toy", "X": X, "y": rng.normal(1.0, 5.0, n), "train_mask": mask}
    base.update(kw)
    return Dataset(**base)


def test_zscore_uses_training_statistics_only():
    ds = _ds()
    out = zscore(ds)
    tr = ds.train_mask
    mean = ds.X[tr].mean(axis=0)
    std = ds.X[tr].std(axis=0, ddof=0)
    std[std == 0] = 1.0
    np.testing.assert_allclose(out.X, (ds.X - mean) / std)
    np.testing.assert_allclose(out.X[tr][:, :-1].mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(out.X[tr][:, :-1].std(axis=0), 1.0)
    assert np.all(out.X[tr][:, -1] == 0.0)  # std 0 -> divided by 1
    assert np.abs(out.X[~tr]).max() > 10  # test rows keep their scale relative to train
    np.testing.assert_array_equal(out.y, ds.y)
    step = out.preprocessing[-1]
    assert step["step"] == "zscore" and step["stats_from"] == "training rows"
    assert step["zero_std_columns"] == 1
    assert ds.X[0, 0] != out.X[0, 0]  # input untouched (new object)


def test_data_derived_bounds_hold_on_train_rows():
    ds = _ds()
    out = scale_by_data_derived_bounds(ds)
    tr = ds.train_mask
    assert np.isclose(np.linalg.norm(out.X[tr], axis=1).max(), 1.0)
    assert np.isclose(np.abs(out.y[tr]).max(), 1.0)
    step = out.preprocessing[-1]
    assert step["bounds"] == "data_derived" and step["data_derived_nonprivate"] is True
    np.testing.assert_allclose(out.X * step["scale_X"], ds.X)  # same factor for test rows
    np.testing.assert_allclose(out.y * step["scale_y"], ds.y)
    json.dumps(out.metadata())


def test_public_bounds_checked_and_applied():
    ds = _ds(train_mask=None)
    bx = float(np.linalg.norm(ds.X, axis=1).max())
    by = float(np.abs(ds.y).max())
    out = scale_by_public_bounds(ds, bound_X=2 * bx, bound_y=by)
    assert np.linalg.norm(out.X, axis=1).max() <= 0.5 + 1e-12
    assert np.abs(out.y).max() <= 1.0
    assert out.preprocessing[-1]["data_derived_nonprivate"] is False
    with pytest.raises(ValueError, match="bound_X"):
        scale_by_public_bounds(ds, bound_X=bx / 2, bound_y=by)
    with pytest.raises(ValueError, match="bound_y"):
        scale_by_public_bounds(ds, bound_X=bx, bound_y=by / 2)
    with pytest.raises(ValueError, match="bound_X"):
        scale_by_public_bounds(ds, bound_X=-1.0, bound_y=by)
    with pytest.raises(ValueError, match="bound_Z"):
        scale_by_public_bounds(ds, bound_X=bx, bound_y=by, bound_Z=1.0)


def test_split_and_center():
    ds = _ds()
    train, test = split_by_mask(ds)
    assert (train.n, test.n) == (40, 10)
    assert train.train_mask is None and test.train_mask is None
    np.testing.assert_array_equal(train.X, ds.X[:40])
    assert train.preprocessing[-1] == {"step": "split", "part": "train", "split": None}
    with pytest.raises(ValueError, match="no train_mask"):
        split_by_mask(_ds(train_mask=None))
    c = center(ds)
    np.testing.assert_allclose(c.X[ds.train_mask].mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(c.y[ds.train_mask].mean(), 0.0, atol=1e-12)


def test_scaling_keeps_shared_columns_consistent():
    rng = np.random.default_rng(1)
    age = rng.uniform(20, 40, 30)
    ds = Dataset(
        name="iv",
        X=np.c_[rng.integers(0, 2, 30), age],
        y=rng.normal(size=30),
        Z=np.c_[rng.integers(0, 2, 30), age],
        feature_names=("x", "age"),
        instrument_names=("z", "age"),
    )
    with pytest.raises(ValueError, match="share columns"):
        scale_by_data_derived_bounds(ds, instruments=False)
    out = scale_by_data_derived_bounds(ds)
    nx, nz = np.linalg.norm(out.X, axis=1).max(), np.linalg.norm(out.Z, axis=1).max()
    assert max(nx, nz) == pytest.approx(1.0) and min(nx, nz) <= 1.0
    np.testing.assert_array_equal(out.X[:, 1], out.Z[:, 1])
    assert out.preprocessing[-1]["joint_XZ"] is True
    out = zscore(ds)  # same statistics for the shared column: stays consistent
    np.testing.assert_allclose(out.X[:, 1], out.Z[:, 1])


def test_lev2026_pipeline_on_airfoil(tmp_path):
    env = os.environ.get("DPREG_DATA_MIRROR")
    mirror = Path(env) if env else REPO_ROOT.parent / "shared" / "data" / "mirror"
    if not mirror.is_dir():
        pytest.skip("no data mirror (set DPREG_DATA_MIRROR to shared/data/mirror)")
    fetcher = functools.partial(fetch, mirror=mirror, dest_dir=tmp_path, allow_download=False)
    raw = load_uci("airfoil", fetcher=fetcher, split=0)
    train, test = preprocess_lev2026(raw, standardise=True)
    assert train.n + test.n == 1503 and train.n == int(raw.train_mask.sum())
    assert np.isclose(np.linalg.norm(train.X, axis=1).max(), 1.0)
    assert np.isclose(np.abs(train.y).max(), 1.0)
    steps = [s["step"] for s in train.preprocessing]
    assert steps == ["zscore", "scale", "split"]
    with pytest.raises(ValueError, match="needs a split"):
        preprocess_lev2026(load_uci("airfoil", fetcher=fetcher), standardise=False)


@settings(max_examples=40, deadline=None)
@given(
    X=arrays(np.float64, (12, 3), elements=st.floats(-1e6, 1e6, allow_subnormal=False)),
    y=arrays(np.float64, 12, elements=st.floats(-1e6, 1e6, allow_subnormal=False)),
)
def test_data_derived_bounds_property(X, y):
    norms = np.linalg.norm(X, axis=1)
    if norms.max() < 1e-6 or np.abs(y).max() < 1e-6:
        return
    out = scale_by_data_derived_bounds(Dataset(name="h", X=X, y=y))
    assert np.linalg.norm(out.X, axis=1).max() <= 1.0 + 1e-12
    assert np.abs(out.y).max() <= 1.0 + 1e-12
    assert np.isclose(np.abs(out.y).max(), 1.0)


def test_rms_scale_keeps_the_column_space():
    ds = _ds()
    out = rms_scale(ds)
    tr = ds.train_mask
    rms = np.sqrt(np.mean(ds.X[tr] ** 2, axis=0))
    np.testing.assert_allclose(out.X, ds.X / rms)
    np.testing.assert_allclose(np.mean(out.X[tr] ** 2, axis=0), 1.0)
    np.testing.assert_allclose(np.mean(out.y[tr] ** 2), 1.0)
    step = out.preprocessing[-1]
    assert step["step"] == "rms_scale" and step["data_derived_nonprivate"] is True
    only_y = rms_scale(ds, columns=False)
    np.testing.assert_array_equal(only_y.X, ds.X)
    with pytest.raises(ValueError, match="all zero"):
        rms_scale(_ds(y=np.zeros(50)))


def test_clip_to_public_bounds_maps_each_row_on_its_own():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(40, 4)) * rng.uniform(0.1, 3.0, size=(40, 1))
    y = rng.normal(size=40) * 2.0
    ds = Dataset(name="toy", X=X, y=y)
    out = clip_to_public_bounds(ds, bound_X=2.0, bound_y=1.5)
    norms = np.linalg.norm(X, axis=1)
    # Independent computation, row by row.
    for i in range(40):
        expect = X[i] / 2.0 if norms[i] <= 2.0 else X[i] / norms[i]
        np.testing.assert_allclose(out.X[i], expect)
        assert out.y[i] == pytest.approx(min(1.0, max(-1.0, y[i] / 1.5)))
    step = out.preprocessing[-1]
    assert step["clipped_rows_X"] == int((norms > 2.0).sum()) > 0
    assert step["clipped_rows_y"] == int((np.abs(y) > 1.5).sum()) > 0
    assert step["bounds"] == "public" and step["data_derived_nonprivate"] is False
    # Neighbouring datasets (one row replaced) differ in that row only.
    X2 = X.copy()
    X2[7] = 100.0
    out2 = clip_to_public_bounds(Dataset(name="toy", X=X2, y=y), bound_X=2.0, bound_y=1.5)
    same = np.arange(40) != 7
    np.testing.assert_array_equal(out2.X[same], out.X[same])
    assert np.linalg.norm(out2.X[7]) == pytest.approx(1.0)
    for bad in (0.0, -2.0, float("inf")):
        with pytest.raises(ValueError, match="bound_X"):
            clip_to_public_bounds(ds, bound_X=bad, bound_y=1.0)
