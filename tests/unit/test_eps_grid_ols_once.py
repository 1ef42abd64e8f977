"""The OLS reference of an ``eps_grid`` block is fitted once and shared by every pair.

``run_eps_cell`` fitted it once per (estimator, epsilon) pair on the same rows (issue 18);
passing the shared fit must give the same rows byte for byte as the per-pair fit.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dpreg.experiments.regression as regression
from dpreg.data.datasets import Dataset
from dpreg.experiments.regression import ols_fit, run_eps_cell, run_eps_grid_cell


def _data() -> Dataset:
    rng = np.random.default_rng(11)
    X = rng.normal(size=(400, 3))
    X /= np.linalg.norm(X, axis=1, keepdims=True).max()
    y = np.clip(X @ np.array([0.4, -0.2, 0.3]) + 0.1 * rng.normal(size=400), -1, 1)
    return Dataset(name="toy", X=X, y=y)


CELL = {
    "dataset": "toy",
    "estimator": ["adassp", "linear_mixing", "ihm"],
    "epsilon": [0.5, 2.0],
    "delta_rule": "inverse_n_squared",
    "hyper": {"ihm": {"T": 3}, "adassp": {}, "linear_mixing": {}},
    "conversion": "tight",
}


@pytest.mark.parametrize("estimator", ["adassp", "ihm"])
def test_shared_ols_fit_gives_the_same_rows(estimator):
    data = _data()
    kwargs = dict(
        estimator=estimator, epsilon=1.0, delta=1e-5, trials=7, seed=3, stream=2,
        hyper={"T": 3} if estimator == "ihm" else {},
    )  # fmt: skip
    alone = run_eps_cell(data.X, data.y, **kwargs)
    shared = run_eps_cell(data.X, data.y, theta_ols=ols_fit(data.X, data.y), **kwargs)
    pd.testing.assert_frame_equal(alone, shared, check_exact=True)
    # a control: another reference does change the scored columns
    other = run_eps_cell(data.X, data.y, theta_ols=np.zeros(3), **kwargs)
    assert not np.array_equal(other["param_error"], alone["param_error"])


def test_grid_block_fits_ols_once_with_the_per_pair_values(monkeypatch):
    data = _data()
    calls = []

    def counting(X, y):
        calls.append(1)
        return np.linalg.lstsq(X, y, rcond=None)[0]

    monkeypatch.setattr(regression, "ols_fit", counting)
    runs = run_eps_grid_cell(CELL, trials=5, first_trial=0, seed=9, data=data)
    assert len(calls) == 1
    monkeypatch.undo()
    # the reference: every pair with its own OLS fit (the former code path)
    pairs = [(e, eps) for e in CELL["estimator"] for eps in CELL["epsilon"]]
    frames = [
        run_eps_cell(
            data.X,
            data.y,
            estimator=e,
            epsilon=eps,
            delta=1.0 / 400**2,
            trials=5,
            seed=9,
            stream=j,
            hyper=CELL["hyper"][e],
            conversion="tight",
            label=e,
        )  # fmt: skip
        for j, (e, eps) in enumerate(pairs)
    ]
    expected = pd.concat(frames, ignore_index=True)
    expected.insert(0, "dataset", "toy")
    pd.testing.assert_frame_equal(runs, expected, check_exact=True)


def test_scores_equal_the_former_expressions():
    """The residuals made in place (``scoring="rows"``, the reference of the Gram score,
    ``tests/unit/test_eps_grid_scoring.py``) give the former ``y - theta X'`` scores bit
    for bit."""
    from dpreg.estimators import get_estimator
    from dpreg.privacy.budgets import ApproxDP

    data = _data()
    runs = run_eps_cell(
        data.X, data.y, estimator="adassp", epsilon=1.0, delta=1e-5, trials=6, seed=4,
        scoring="rows",
    )  # fmt: skip
    fit = get_estimator("adassp")(
        data.X, data.y, budget=ApproxDP(1.0, 1e-5), rng=np.random.default_rng([4, 0]), trials=6,
        bound_X=1.0, bound_y=1.0,
    )  # fmt: skip
    residuals = data.y[None, :] - fit.theta @ data.X.T
    mse = np.einsum("ij,ij->i", residuals, residuals) / data.X.shape[0]
    np.testing.assert_array_equal(runs["mse"].to_numpy(), mse)


@pytest.mark.parametrize("trials", [1, 6])
def test_one_frame_per_cell_equals_the_per_pair_frames(monkeypatch, trials):
    """The cell's frame built from the pairs' columns (issue 18) equals the per-pair
    frames concatenated (the reference): values, dtypes, column order and index."""
    data = _data()
    cell = {
        **CELL,
        "estimator": ["adassp", "ihm_code", "linear_mixing"],
        "variants": {"ihm_code": "ihm"},
        "hyper": {"ihm_code": {"T": 2, "gamma_method": "code"}, "adassp": {}},
    }
    fast = run_eps_grid_cell(cell, trials=trials, first_trial=4, seed=9, data=data)
    monkeypatch.setattr(regression, "_FRAME_PATH", "per_pair")
    reference = run_eps_grid_cell(cell, trials=trials, first_trial=4, seed=9, data=data)
    pd.testing.assert_frame_equal(fast, reference, check_exact=True)
    assert fast.equals(reference) and list(fast.dtypes) == list(reference.dtypes)
    assert len(fast) == 6 * trials and fast["estimator"].iloc[-1] == "linear_mixing"
    assert (fast["stream"].to_numpy() == np.repeat(np.arange(6), trials)).all()
