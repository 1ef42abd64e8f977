"""Diagnostics computed from the data without noise are kept apart from the release."""

from __future__ import annotations

import numpy as np
import pytest

from dpreg.estimators import get_estimator
from dpreg.privacy import ZCDP, ApproxDP
from dpreg.results import NONPRIVATE_DIAGNOSTICS, Fit


def test_fit_moves_nonprivate_keys_out_of_the_release():
    fit = Fit(
        np.zeros((1, 2)),
        ZCDP(1.0),
        "toy",
        diagnostics={"clip_fraction": np.ones(1), "noise_std": 0.5},
        nonprivate_diagnostics={"other": 1},
    )
    assert set(fit.diagnostics) == {"noise_std"}
    assert set(fit.nonprivate_diagnostics) == {"clip_fraction", "other"}


def _canary_pair(n: int = 200, d: int = 3):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(n, d))
    X /= 2 * np.linalg.norm(X, axis=1, keepdims=True)
    y = 0.02 * np.clip(X @ np.ones(d) + 0.05 * rng.normal(size=n), -1, 1)  # never clipped
    X1, y1 = X.copy(), y.copy()
    X1[0], y1[0] = np.eye(d)[0], 1.0  # a canary at the bounds whose residual is clipped
    return (X, y), (X1, y1)


CALLS = {
    "dp_gd": {"budget": ZCDP(0.5), "T": 3, "clip": 0.1},
    "ihm": {"budget": ApproxDP(1.0, 1e-6), "clip": 0.1},
    "adassp": {"budget": ApproxDP(1.0, 1e-6), "bound_X": 1.0, "bound_y": 1.0},
    "linear_mixing": {"budget": ApproxDP(1.0, 1e-6)},
    "dp_ftrl": {"budget": ZCDP(0.5), "eta": 0.1, "clip": 0.1, "nu": 0.05},
    "dp_sgd_poisson": {
        "budget": ApproxDP(1.0, 1e-5),
        "clip": 0.1,
        "eta": 0.5,
        "batch_size": 50,
        "n_public": 200,
    },
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_a_canary_moves_no_public_scalar_and_shows_in_the_nonprivate_ones(name):
    # Same seed on neighbours D and D' (zero-out/replace of row 0 by a clipped canary):
    # every scalar in the released diagnostics is a function of public inputs, so it is
    # identical; the clip fraction, computed without noise, tells D from D' exactly.
    (X, y), (X1, y1) = _canary_pair()
    fits = [
        get_estimator(name)(A, b, rng=np.random.default_rng(0), trials=3, **CALLS[name])
        for A, b in ((X, y), (X1, y1))
    ]
    for key, value in fits[0].diagnostics.items():
        if np.ndim(value) == 0 and isinstance(value, int | float | np.number):
            assert fits[1].diagnostics[key] == value, key
    assert not NONPRIVATE_DIAGNOSTICS & set(fits[0].diagnostics)
    if "clip_fraction" not in fits[0].nonprivate_diagnostics:
        return  # no clipping: nothing non-private to report (AdaSSP, linear mixing)
    clip0 = np.asarray(fits[0].nonprivate_diagnostics["clip_fraction"])
    clip1 = np.asarray(fits[1].nonprivate_diagnostics["clip_fraction"])
    assert not np.array_equal(clip0, clip1)  # why they must not be released


def test_trial_files_and_tables_name_the_columns_outside_the_guarantee(tmp_path):
    import json

    import pandas as pd
    import pyarrow.parquet as pq

    from dpreg.io import write_markdown, write_trial_rows
    from dpreg.results import nonprivate_columns

    frame = pd.DataFrame(
        {
            "theta_err": [0.1],
            "clip_fraction": [0.2],
            "clip_frac_beta_mean": [0.0],
            "lambda_min_noisy": [1.0],
            "step_residual_scale": [3.0],
        }
    )
    assert nonprivate_columns(frame.columns) == [
        "clip_fraction",
        "clip_frac_beta_mean",
        "step_residual_scale",
    ]
    write_trial_rows(frame, tmp_path / "t.parquet")
    meta = pq.read_schema(tmp_path / "t.parquet").metadata[b"dpreg.nonprivate_columns"]
    assert json.loads(meta) == nonprivate_columns(frame.columns)
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "t.parquet"), frame)
    write_markdown(frame, tmp_path / "t.md", title="t")
    text = (tmp_path / "t.md").read_text()
    assert "outside the privacy guarantee: `clip_fraction`" in text
    write_markdown(frame[["theta_err"]], tmp_path / "u.md", title="u")
    assert "guarantee" not in (tmp_path / "u.md").read_text()
