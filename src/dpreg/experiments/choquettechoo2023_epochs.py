r"""Multi-epoch DP-FTRL on data: test error against the number of epochs at a fixed budget.

Study kind ``ftrl_epochs`` (Choquette-Choo et al. 2023, multi-participation setting of
App. G.1; deviation 16 of docs/choquettechoo2023.md). For every (method, epsilon,
epochs) the run fits :math:`\nu`-DP-FTRL (``nu_dp_ftrl``, registry ``dp_ftrl``) or
DP-SGD with independent noise (``dp_sgd_stream``) on the training rows with the public
rule of :func:`dpreg.estimators.methods.stream_hyperparameters`: E passes in one fixed
order, batch ``ceil(E n / 1000)`` (so about 1000 steps whatever E), the fixed-epoch
multi-participation sensitivity (each row in E steps, ``floor(n/b)`` apart), the
noise-capped step; delta = 1/n^2. The released estimate is scored on the held-out rows
(test MSE) and on the training rows. Each (method, epsilon, epochs) draws from its own
stream ``default_rng([seed, j])`` (j its index in config order, methods outer, epochs
inner), so the differences between epochs are between independent runs.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dpreg.data.datasets import Dataset
from dpreg.estimators import get_estimator
from dpreg.estimators.methods import (
    STREAM_METHODS,
    PublicInputs,
    get_method,
    stream_hyperparameters,
)
from dpreg.experiments.budgets import budget_columns, spent_columns
from dpreg.experiments.params import (
    KindParams,
    cell_conversion,
    param,
    positive_finite,
    positive_integer,
)
from dpreg.experiments.study_kind import StudyKind
from dpreg.privacy.budgets import ApproxDP

__all__ = ["FTRL_EPOCHS", "FtrlEpochsParams", "run_ftrl_epochs_cell", "summarise_ftrl_epochs"]


def _methods_check(value: Any) -> str | None:
    values = value if isinstance(value, list) else [value]
    bad = [v for v in values if v not in STREAM_METHODS]
    return f"must be among {list(STREAM_METHODS)}; got {bad}" if bad else None


_methods_check.text = "among " + ", ".join(f"`{m}`" for m in STREAM_METHODS)  # type: ignore[attr-defined]


@dataclass(frozen=True)
class FtrlEpochsParams(KindParams):
    """Cell keys of the ``ftrl_epochs`` kind (test MSE against epochs at fixed epsilon)."""

    kind = "ftrl_epochs"
    dataset: str = param(doc="a dataset declared under `datasets` (rows within the bounds)")
    epsilon: float | list[float] = param(
        doc="the epsilon(s) of one release; delta = 1/n^2", check=positive_finite
    )
    epochs: int | list[int] = param(
        doc="numbers of passes E over the training rows (one fixed order)",
        check=positive_integer,
    )
    methods: str | list[str] = param(
        ["nu_dp_ftrl", "dp_sgd_stream"],
        doc="streaming methods of `dpreg.estimators.methods` (their public rules)",
        check=_methods_check,
    )
    bound_X: float = param(1.0, doc="public bound on the row norms", check=positive_finite)
    bound_y: float = param(1.0, doc="public bound on abs(y)", check=positive_finite)


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else [value]


def _mse(y: np.ndarray, predictions: np.ndarray) -> np.ndarray:
    resid = y[None, :] - predictions
    return np.einsum("ij,ij->i", resid, resid) / y.shape[0]


def run_ftrl_epochs_cell(
    cell: Mapping[str, Any],
    *,
    trials: int,
    first_trial: int,
    seed: int,
    data: Dataset | None,
    test: Dataset | None = None,
) -> pd.DataFrame:
    """Every (method, epsilon, epochs) of one dataset, one row per trial.

    Columns: ``dataset``, ``method``, ``epsilon``, ``delta``, ``epochs``, ``batch_size``,
    ``steps``, ``eta``, ``train_mse``, ``test_mse`` (NaN without held-out rows),
    ``ols_train_mse``, ``ols_test_mse``, ``hyper`` (JSON), the budget columns (target
    and ``spent_*``), ``trial``, ``seed``, ``stream``.
    """
    if data is None:
        raise ValueError("an ftrl_epochs cell needs a dataset")
    P = FtrlEpochsParams.from_cell(cell)
    n, d = data.X.shape
    delta = 1.0 / float(n) ** 2
    theta_ols = np.linalg.lstsq(data.X, data.y, rcond=None)[0]
    has_test = test is not None and test.n > 0
    ols_train = float(np.mean((data.y - data.X @ theta_ols) ** 2))
    ols_test = float(np.mean((test.y - test.X @ theta_ols) ** 2)) if has_test else math.nan
    triples = [
        (str(m), float(e), int(k))
        for m in _as_list(P.methods)
        for e in _as_list(P.epsilon)
        for k in _as_list(P.epochs)
    ]
    frames = []
    for stream, (name, epsilon, epochs) in enumerate(triples):
        public = PublicInputs(
            n=n, d=d, epsilon=epsilon, delta=delta, bound_X=P.bound_X, bound_y=P.bound_y
        )
        hyper = stream_hyperparameters(name, public, epochs)
        fit = get_estimator(get_method(name).estimator)(
            data.X,
            data.y,
            budget=ApproxDP(epsilon, delta),
            rng=np.random.default_rng([seed, stream]),
            trials=trials,
            bound_X=P.bound_X,
            bound_y=P.bound_y,
            **hyper,
        )
        b = int(hyper["batch_size"])
        frame = pd.DataFrame(
            {
                "trial": np.arange(first_trial, first_trial + trials, dtype=np.int64),
                "seed": np.full(trials, seed, dtype=np.uint64),
                "stream": np.full(trials, stream, dtype=np.int64),
                "dataset": P.dataset,
                "method": name,
                "epochs": epochs,
                "batch_size": b,
                "steps": epochs * (n // b),
                "eta": float(hyper["eta"]),
                "train_mse": _mse(data.y, fit.theta @ data.X.T),
                "test_mse": _mse(test.y, fit.theta @ test.X.T)
                if has_test
                else np.full(trials, math.nan),
                "ols_train_mse": ols_train,
                "ols_test_mse": ols_test,
                "hyper": json.dumps(hyper, sort_keys=True, default=str),
            }
        )
        conversion = cell_conversion(cell)
        budget = budget_columns(epsilon=epsilon, delta=delta, conversion=conversion)
        for key, value in budget.items():
            frame[key] = value
        for key, value in spent_columns(fit.budget_spent, delta=delta).items():
            frame[key] = value
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def summarise_ftrl_epochs(
    runs: pd.DataFrame, references: Sequence[Mapping[str, Any]]
) -> pd.DataFrame:
    """Per (dataset, method, epsilon, epochs): test and train MSE +- SE, against one epoch.

    ``score`` is the test MSE where the dataset holds rows out, else the train MSE;
    ``diff_vs_one_epoch`` / ``diff_vs_one_epoch_se`` / ``z_vs_one_epoch``: mean score
    minus the same method's at ``epochs = 1`` (independent runs: SEs add in quadrature;
    NaN without a one-epoch row).

    Examples
    --------
    >>> runs = pd.DataFrame({"dataset": "a", "method": "m", "epsilon": 1.0,
    ...     "epochs": [1, 1, 5, 5], "batch_size": [1, 1, 5, 5], "steps": 100, "eta": 0.1,
    ...     "train_mse": [1.0, 1.2, 0.8, 0.8], "test_mse": [1.0, 1.2, 0.8, 0.8],
    ...     "ols_test_mse": 0.5, "ols_train_mse": 0.5, "spent_epsilon": 1.0})
    >>> t = summarise_ftrl_epochs(runs, [])
    >>> t["diff_vs_one_epoch"].round(3).tolist(), t["diff_vs_one_epoch_se"].round(3).tolist()
    ([0.0, -0.3], [0.0, 0.1])
    """
    keys = ["dataset", "method", "epsilon", "epochs"]
    score = "test_mse" if runs["test_mse"].notna().all() else "train_mse"
    g = runs.groupby(keys, sort=True)
    table = g.agg(
        trials=(score, "count"),
        mean=(score, "mean"),
        std=(score, "std"),
        train_mean=("train_mse", "mean"),
        train_std=("train_mse", "std"),
        batch_size=("batch_size", "first"),
        steps=("steps", "first"),
        eta=("eta", "first"),
        ols_test_mse=("ols_test_mse", "first"),
        ols_train_mse=("ols_train_mse", "first"),
        spent_epsilon=("spent_epsilon", "max"),
    ).reset_index()
    table.insert(4, "score", score)
    table["se"] = table["std"] / np.sqrt(table["trials"])
    table["train_se"] = table["train_std"] / np.sqrt(table["trials"])
    table["ci_low"] = table["mean"] - 1.96 * table["se"]
    table["ci_high"] = table["mean"] + 1.96 * table["se"]
    one = table[table["epochs"] == 1].set_index(["dataset", "method", "epsilon"])
    idx = pd.MultiIndex.from_frame(table[["dataset", "method", "epsilon"]])
    base_mean = one["mean"].reindex(idx).to_numpy()
    base_se = one["se"].reindex(idx).to_numpy()
    table["diff_vs_one_epoch"] = table["mean"].to_numpy() - base_mean
    table["diff_vs_one_epoch_se"] = np.hypot(table["se"].to_numpy(), base_se)
    first = table["epochs"] == 1
    table.loc[first, "diff_vs_one_epoch_se"] = 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        table["z_vs_one_epoch"] = table["diff_vs_one_epoch"] / table["diff_vs_one_epoch_se"]
    table.loc[first, "z_vs_one_epoch"] = np.nan
    return table


def _figure(table: pd.DataFrame, *, title: str | None = None) -> Any:
    from dpreg.plotting.choquettechoo2023 import figure_epochs

    return figure_epochs(table, title=title)


FTRL_EPOCHS = StudyKind(
    name="ftrl_epochs",
    run=run_ftrl_epochs_cell,
    summarise=summarise_ftrl_epochs,
    figure=_figure,
    params=FtrlEpochsParams,
    uses_test_rows=True,
)
