"""The ftrl_epochs kind: multi-epoch nu-DP-FTRL / DP-SGD on data, and its claim rows."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dpreg.data.datasets import Dataset
from dpreg.estimators.methods import PublicInputs, stream_hyperparameters
from dpreg.experiments.choquettechoo2023_claims import check
from dpreg.experiments.choquettechoo2023_epochs import (
    FtrlEpochsParams,
    run_ftrl_epochs_cell,
    summarise_ftrl_epochs,
)
from dpreg.experiments.kinds import get_kind


def _split(n: int = 300, d: int = 3, seed: int = 0) -> tuple[Dataset, Dataset]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1).max()
    y = np.clip(X @ np.array([0.6, -0.4, 0.2]) + 0.05 * rng.normal(size=n), -1, 1)
    cut = int(0.8 * n)
    return Dataset(name="toy", X=X[:cut], y=y[:cut]), Dataset(name="toy", X=X[cut:], y=y[cut:])


CELL = {"dataset": "toy", "epsilon": [1.0], "epochs": [1, 3], "methods": ["nu_dp_ftrl"]}


def test_rows_follow_the_public_rule_and_certify_the_target():
    train, test = _split()
    runs = run_ftrl_epochs_cell(CELL, trials=5, first_trial=0, seed=1, data=train, test=test)
    assert len(runs) == 10 and set(runs["epochs"]) == {1, 3}
    n = train.X.shape[0]
    public = PublicInputs(n=n, d=3, epsilon=1.0, delta=1 / n**2, bound_X=1.0, bound_y=1.0)
    for epochs, rows in runs.groupby("epochs"):
        hyper = stream_hyperparameters("nu_dp_ftrl", public, int(epochs))
        assert rows["batch_size"].eq(hyper["batch_size"]).all()
        assert rows["steps"].eq(epochs * (n // hyper["batch_size"])).all()
        assert rows["eta"].eq(hyper["eta"]).all()
        # calibrated to the target under the E-participation sensitivity: spent = target
        assert rows["spent_epsilon"].to_numpy() == pytest.approx(1.0, rel=1e-6)
    # independent streams per (method, epsilon, epochs)
    assert runs.groupby("epochs")["stream"].first().tolist() == [0, 1]
    assert runs["test_mse"].notna().all()
    assert runs["ols_test_mse"].iloc[0] == pytest.approx(
        np.mean((test.y - test.X @ np.linalg.lstsq(train.X, train.y, rcond=None)[0]) ** 2)
    )


def test_without_held_out_rows_the_score_is_the_train_mse():
    train, _ = _split()
    runs = run_ftrl_epochs_cell(CELL, trials=3, first_trial=0, seed=1, data=train, test=None)
    assert runs["test_mse"].isna().all()
    table = summarise_ftrl_epochs(runs, [])
    assert set(table["score"]) == {"train_mse"}
    np.testing.assert_allclose(table["mean"], runs.groupby("epochs")["train_mse"].mean())


def test_summary_differences_to_one_epoch_are_independent_run_differences():
    train, test = _split()
    runs = run_ftrl_epochs_cell(CELL, trials=8, first_trial=0, seed=2, data=train, test=test)
    table = summarise_ftrl_epochs(runs, []).set_index("epochs")
    g = runs.groupby("epochs")["test_mse"]
    se = g.std() / np.sqrt(g.count())
    assert table.loc[3, "diff_vs_one_epoch"] == pytest.approx(g.mean()[3] - g.mean()[1])
    assert table.loc[3, "diff_vs_one_epoch_se"] == pytest.approx(math.hypot(se[3], se[1]))
    assert table.loc[1, "diff_vs_one_epoch"] == 0.0 and math.isnan(table.loc[1, "z_vs_one_epoch"])


def test_bad_cells_and_rules_are_refused():
    get_kind("ftrl_epochs").validate_cell(CELL)
    with pytest.raises(ValueError, match="methods"):
        FtrlEpochsParams.from_cell({**CELL, "methods": ["adassp"]})
    with pytest.raises(ValueError, match="epochs"):
        FtrlEpochsParams.from_cell({**CELL, "epochs": [0, 2]})
    public = PublicInputs(n=100, d=3, epsilon=1.0, delta=1e-4, bound_X=1.0, bound_y=1.0)
    with pytest.raises(ValueError, match="method"):
        stream_hyperparameters("ihm", public, 2)
    with pytest.raises(ValueError, match="epochs"):
        stream_hyperparameters("dp_sgd_stream", public, 0)
    with pytest.raises(ValueError, match="dataset"):
        run_ftrl_epochs_cell(CELL, trials=2, first_trial=0, seed=0, data=None)


def _table(means: dict[int, float], se: float) -> pd.DataFrame:
    rows = [
        {
            "dataset": "d",
            "method": "nu_dp_ftrl",
            "epsilon": 1.0,
            "epochs": e,
            "score": "test_mse",
            "mean": m,
            "diff_vs_one_epoch": m - means[1],
            "z_vs_one_epoch": math.nan if e == 1 else (m - means[1]) / se,
        }
        for e, m in means.items()
    ]
    return pd.DataFrame(rows)


def test_epochs_claim_passes_when_more_epochs_help_and_fails_otherwise():
    good = check({"s": _table({1: 1.0, 5: 0.8, 20: 0.6}, se=0.05)})["claims"]
    assert list(good["passed"]) == ["yes"] and good["value"].iloc[0] == pytest.approx(-0.4)
    flat = check({"s": _table({1: 1.0, 5: 0.98, 20: 0.99}, se=0.05)})["claims"]
    assert list(flat["passed"]) == ["NO"]
