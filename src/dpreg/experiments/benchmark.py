r"""The ``benchmark`` study kind: every private regression on common ground.

One cell is one dataset; the cell runs every method of :data:`dpreg.estimators.methods.
METHODS` named in ``methods`` at every ``epsilon``, with :math:`\delta = 1/n^2`,
hyperparameters from public inputs only (:mod:`dpreg.estimators.methods`) and the
declared bounds ``bound_X``, ``bound_y`` (the ``lev_*`` loaders' public bounds make
them 1). The pair (method, epsilon) draws from ``default_rng([seed, stream])`` with
``stream = stream_key(method, epsilon)`` (:func:`dpreg.seeds.stream_key`): adding a
method to the config never changes the draws of the others. Each trial is scored on the
training rows (``train_mse``) and, when the dataset has a split, on its held-out rows
(``test_mse``), beside the non-private OLS fit of the same rows (``ols_train_mse``,
``ols_test_mse``, with an intercept when the cell has one). A method that cannot run at
a cell's public inputs (e.g. DP-SSGD outside its shuffling regime) gives rows with
``status = "not_run"`` and the reason, never a silent gap.

The summary (:func:`summarise_benchmark`) has one row per (dataset, method, epsilon);
the views of ``docs/benchmark.md`` are computed from it: the leaderboard per epsilon
(:func:`leaderboard`), the Dolan--Moré performance profile (:func:`performance_profile`)
and the recommendation map over (n/d, epsilon) (:func:`recommendation_map`).
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dpreg._validation import check_choice
from dpreg.data.datasets import Dataset
from dpreg.estimators.intercept import add_intercept_column
from dpreg.estimators.methods import PublicInputs, fit_method, get_method
from dpreg.experiments.budgets import budget_columns, spent_columns
from dpreg.experiments.params import KindParams, param, positive, positive_finite
from dpreg.experiments.study_kind import StudyKind
from dpreg.seeds import stream_key

__all__ = [
    "BENCHMARK",
    "BenchmarkParams",
    "NDRATIO_BINS",
    "PROFILE_TAUS",
    "cost_beside_accuracy",
    "leaderboard",
    "measure_cost",
    "performance_profile",
    "recommendation_map",
    "run_benchmark_cell",
    "summarise_benchmark",
]

#: Factors tau of the performance profile (ratio to the best method on a dataset).
PROFILE_TAUS: tuple[float, ...] = tuple(
    float(t) for t in np.round(np.logspace(0, 2, 41), 6)
)  # 1 .. 100
#: Edges of the n/d regions of the recommendation map.
NDRATIO_BINS: tuple[float, ...] = (0.0, 100.0, 1000.0, math.inf)


@dataclass(frozen=True)
class BenchmarkParams(KindParams):
    """Cell keys of the ``benchmark`` kind."""

    kind = "benchmark"
    dataset: str = param(doc="a dataset declared under `datasets` (rows within the bounds)")
    epsilon: float | list[float] = param(
        doc="the epsilon(s) of one release; delta = 1/n^2", check=positive_finite
    )
    methods: str | list[str] = param(
        doc="method names of `dpreg.estimators.methods.METHODS` (each an estimator with a"
        " public hyperparameter rule); `ols` is the non-private reference, never ranked"
    )
    intercept: bool = param(
        False, doc="fit an intercept (a public constant column inside the row bound)"
    )
    intercept_scale: float = param(
        1.0, doc="scale s of the constant column (`dpreg.estimators.intercept`)", check=positive
    )
    bound_X: float = param(1.0, doc="public bound on the row norms", check=positive)
    bound_y: float = param(1.0, doc="public bound on abs(y)", check=positive)


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else [value]


def _params(cell: Mapping[str, Any]) -> BenchmarkParams:
    return BenchmarkParams.from_cell(cell)


def check_benchmark_cell(cell: Mapping[str, Any]) -> None:
    """Check a cell's method names (after its typed spec), before any job runs."""
    P = _params(cell)
    names = _as_list(P.methods)
    for name in names:
        try:
            get_method(str(name))
        except ValueError as err:
            raise ValueError(f"benchmark: methods: {err}") from None
    if len(set(names)) != len(names):
        raise ValueError(f"benchmark: methods lists a name twice: {names}")


def _mse(y: np.ndarray, predictions: np.ndarray) -> np.ndarray:
    """Per-trial mean squared error; **overwrites** ``predictions`` with the residuals.

    The same arithmetic as ``y - predictions`` into a new array, without allocating one
    (issue 18: 15 -> 6 ms per call at n = 57,248 and 100 trials); every caller passes
    a fresh ``Fit.predict`` array.
    """
    resid = np.subtract(y[None, :], predictions, out=predictions)
    return np.einsum("ij,ij->i", resid, resid) / y.shape[0]


def _ols_mse(
    train: Dataset, test: Dataset | None, *, intercept: bool, scale: float, bound_X: float
) -> tuple[float, float]:
    def design(X: np.ndarray) -> np.ndarray:
        return add_intercept_column(X, bound_X, scale=scale) if intercept else X

    theta = np.linalg.lstsq(design(train.X), train.y, rcond=None)[0]
    train_mse = float(np.mean((train.y - design(train.X) @ theta) ** 2))
    if test is None or test.n == 0:
        return train_mse, math.nan
    return train_mse, float(np.mean((test.y - design(test.X) @ theta) ** 2))


#: Ways :func:`run_benchmark_cell` builds its rows (the same frame, tested equal):
#: ``"columns"`` one frame from the cell's columns, ``"per_pair"`` one frame per
#: (method, epsilon) pair, concatenated (the reference).
ROW_BUILDS: tuple[str, ...] = ("columns", "per_pair")


@dataclass
class _Pair:
    """What one (method, epsilon) pair of a cell contributes to the rows."""

    name: str
    epsilon: float
    stream: int
    method: Any
    reason: str | None
    hyper: str
    train_mse: np.ndarray
    test_mse: np.ndarray
    budget: dict[str, object]
    spent: dict[str, float]


def _pair_frame(
    pair: _Pair, P: BenchmarkParams, *, n: int, d: int, trials: int, first_trial: int,
    seed: int, ols_train: float, ols_test: float,
) -> pd.DataFrame:  # fmt: skip
    """Build the rows of one pair as their own frame (the reference row build)."""
    method = pair.method
    frame = pd.DataFrame(
        {
            "trial": np.arange(first_trial, first_trial + trials, dtype=np.int64),
            "seed": np.full(trials, seed, dtype=np.uint64),
            "stream": np.full(trials, pair.stream, dtype=np.int64),
            "dataset": P.dataset,
            "method": pair.name,
            "estimator": method.estimator,
            "paper": method.paper,
            "private": method.private,
            "peer": method.peer,
            "guarantee": method.guarantee,
            "intercept": bool(P.intercept),
            "n": n,
            "d": d,
            "train_mse": pair.train_mse,
            "test_mse": pair.test_mse,
            "ols_train_mse": ols_train,
            "ols_test_mse": ols_test,
            "status": "not_run" if pair.reason else "ok",
            "reason": pair.reason or "",
            "hyper": pair.hyper,
        }
    )
    for key, value in pair.budget.items():
        frame[key] = value
    for key, value in pair.spent.items():
        frame[key] = value
    return frame


def _cell_frame(
    pairs: Sequence[_Pair], P: BenchmarkParams, *, n: int, d: int, trials: int,
    first_trial: int, seed: int, ols_train: float, ols_test: float,
) -> pd.DataFrame:  # fmt: skip
    """Build the rows of every pair as one frame from the cell's columns.

    The frame of :func:`_pair_frame` for each pair, concatenated, with the same
    columns, dtypes and values (tested equal), without one DataFrame per pair (issue
    18: a pair's frame and its eight inserted columns cost about 3 ms, 75 pairs a
    dataset in the ``benchmark`` study).
    """

    def per_pair(values: Sequence[Any], dtype: Any = None) -> np.ndarray:
        return np.repeat(np.asarray(values, dtype=dtype), trials)

    methods = [p.method for p in pairs]
    columns: dict[str, Any] = {
        "trial": np.tile(np.arange(first_trial, first_trial + trials, dtype=np.int64), len(pairs)),
        "seed": np.full(trials * len(pairs), seed, dtype=np.uint64),
        "stream": per_pair([p.stream for p in pairs], np.int64),
        "dataset": P.dataset,
        "method": per_pair([p.name for p in pairs], object),
        "estimator": per_pair([m.estimator for m in methods], object),
        "paper": per_pair([m.paper for m in methods], object),
        "private": per_pair([m.private for m in methods], bool),
        "peer": per_pair([m.peer for m in methods], bool),
        "guarantee": per_pair([m.guarantee for m in methods], object),
        "intercept": bool(P.intercept),
        "n": n,
        "d": d,
        "train_mse": np.concatenate([p.train_mse for p in pairs]),
        "test_mse": np.concatenate([p.test_mse for p in pairs]),
        "ols_train_mse": ols_train,
        "ols_test_mse": ols_test,
        "status": per_pair(["not_run" if p.reason else "ok" for p in pairs], object),
        "reason": per_pair([p.reason or "" for p in pairs], object),
        "hyper": per_pair([p.hyper for p in pairs], object),
    }
    for part in ("budget", "spent"):
        for key in getattr(pairs[0], part):
            values = [getattr(p, part)[key] for p in pairs]
            kind = float if all(isinstance(v, float) for v in values) else object
            columns[key] = per_pair(values, kind)
    return pd.DataFrame(columns)


def run_benchmark_cell(
    cell: Mapping[str, Any],
    *,
    trials: int,
    first_trial: int,
    seed: int,
    data: Dataset | None,
    test: Dataset | None = None,
    rows: str = "columns",
) -> pd.DataFrame:
    """Run one seed block of a ``benchmark`` cell: every (method, epsilon) pair.

    Parameters
    ----------
    cell : mapping
        The cell (:class:`BenchmarkParams`).
    trials, first_trial, seed : int
        The seed block: ``trials`` repetitions from global index ``first_trial``.
    data : Dataset
        The training rows (the only rows any estimator sees).
    test : Dataset, optional
        The held-out rows, transformed as the training rows (scored only).
    rows : {"columns", "per_pair"}, default "columns"
        How the rows are built (:data:`ROW_BUILDS`): the same frame either way.

    Returns
    -------
    DataFrame
        One row per (pair, trial): ``method``, ``estimator``, ``paper``, ``epsilon``,
        ``delta``, ``n``, ``d``, ``train_mse``, ``test_mse``, the OLS references,
        ``status`` / ``reason``, ``hyper`` (JSON of the rule's values) and the budget
        columns (target and ``spent_*``, both units).

    Examples
    --------
    >>> from dpreg.data.regimes import load_regime_split
    >>> train, test = load_regime_split(n=400, d=3, seed=0, sigma=0.3)
    >>> cell = {"dataset": "toy", "epsilon": [1.0], "methods": ["ols", "adassp"]}
    >>> runs = run_benchmark_cell(cell, trials=2, first_trial=0, seed=1, data=train, test=test)
    >>> runs[["method", "trial", "status"]].values.tolist()
    [['ols', 0, 'ok'], ['ols', 1, 'ok'], ['adassp', 0, 'ok'], ['adassp', 1, 'ok']]
    """
    if data is None:
        raise ValueError("a benchmark cell needs a dataset")
    check_choice(rows, "rows", ROW_BUILDS)
    P = _params(cell)
    n, d = data.X.shape
    delta = 1.0 / float(n) ** 2
    ols_train, ols_test = _ols_mse(
        data, test, intercept=P.intercept, scale=P.intercept_scale, bound_X=P.bound_X
    )
    has_test = test is not None and test.n > 0
    # one (trials, m) prediction buffer per row set, reused by every pair (issue 18: a
    # fresh 45 MB array per call at n = 57,248 was faulted in and zeroed every time)
    buffers: dict[int, np.ndarray] = {}
    budgets: dict[float, dict[str, object]] = {}  # public: epsilon and delta only
    pairs: list[_Pair] = []
    for name, epsilon in [(m, float(e)) for m in _as_list(P.methods) for e in _as_list(P.epsilon)]:
        stream = stream_key(name, epsilon)
        method = get_method(name)
        public = PublicInputs(
            n=n, d=d + int(P.intercept), epsilon=epsilon, delta=delta, bound_X=P.bound_X,
            bound_y=P.bound_y,
        )  # fmt: skip
        reason = method.reason_not_run(public)
        hyper = {} if reason else method.hyperparameters(public)
        train_mse = test_mse = np.full(trials, math.nan)
        spent = spent_columns(None, delta=delta)
        if reason is None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # regime warnings: the reason column says
                fit = fit_method(
                    name, data.X, data.y, epsilon=epsilon, delta=delta, bound_X=P.bound_X,
                    bound_y=P.bound_y, rng=np.random.default_rng([seed, stream]),
                    trials=trials, intercept=P.intercept, intercept_scale=P.intercept_scale,
                )  # fmt: skip
            train_mse = _mse(data.y, _predict(fit, data.X, buffers, 0))
            if has_test:
                test_mse = _mse(test.y, _predict(fit, test.X, buffers, 1))
            spent = spent_columns(fit.budget_spent, delta=delta)
        if epsilon not in budgets:
            budgets[epsilon] = budget_columns(epsilon=epsilon, delta=delta, conversion="tight")
        pairs.append(
            _Pair(
                name=name,
                epsilon=epsilon,
                stream=stream,
                method=method,
                reason=reason,
                hyper=json.dumps(hyper, sort_keys=True, default=str),
                train_mse=train_mse,
                test_mse=test_mse,
                budget=budgets[epsilon],
                spent=spent,
            )
        )
    common = dict(
        n=n, d=d, trials=trials, first_trial=first_trial, seed=seed, ols_train=ols_train,
        ols_test=ols_test,
    )  # fmt: skip
    if rows == "columns":
        return _cell_frame(pairs, P, **common)
    return pd.concat([_pair_frame(p, P, **common) for p in pairs], ignore_index=True)


def _predict(fit: Any, X: np.ndarray, buffers: dict[int, np.ndarray], slot: int) -> np.ndarray:
    """``fit.predict(X)`` written into the cell's buffer ``slot`` (the same values)."""
    shape = (fit.theta.shape[0], X.shape[0])
    buf = buffers.get(slot)
    if buf is None or buf.shape != shape:
        buf = buffers[slot] = np.empty(shape)
    return fit.predict(X, out=buf)


# ----------------------------------------------------------------------------- summary


def summarise_benchmark(
    runs: pd.DataFrame, references: Sequence[Mapping[str, Any]]
) -> pd.DataFrame:
    """One row per (dataset, method, epsilon): errors with standard errors and ranks.

    ``score`` is the mean test MSE where the dataset has held-out rows, else the mean
    train MSE (``score_on`` says which); ``ratio`` is ``score`` over the OLS fit's on
    the same rows, with its standard error ``ratio_se``; ``rank`` ranks the private
    methods that ran on each (dataset, epsilon) by ``score`` (1 = best, ties averaged),
    ``ratio_to_best`` divides by the best such score. Deterministic columns only.
    """
    del references  # the OLS references are computed in the job on the same rows
    keys = ["dataset", "method", "epsilon"]
    first = ["estimator", "paper", "private", "peer", "guarantee", "intercept", "n", "d"]
    first += ["delta", "status"]
    first += ["reason", "hyper", "ols_train_mse", "ols_test_mse", "rho"]
    grouped = runs.groupby(keys, sort=True, observed=True)
    table = grouped[first].first()
    for metric in ("train_mse", "test_mse"):
        table[f"{metric}_mean"] = grouped[metric].mean()
        table[f"{metric}_se"] = grouped[metric].std() / np.sqrt(grouped[metric].count())
    table["trials"] = grouped["trial"].count()
    for key in ("spent_epsilon", "spent_delta", "spent_rho"):
        table[key] = grouped[key].max()
    table = table.reset_index()
    on_test = table["test_mse_mean"].notna() | (table["status"] != "ok")
    on_test &= table["ols_test_mse"].notna()
    table["score_on"] = np.where(on_test, "test", "train")
    table["score"] = np.where(on_test, table["test_mse_mean"], table["train_mse_mean"])
    score_se = np.where(on_test, table["test_mse_se"], table["train_mse_se"])
    ols = np.where(on_test, table["ols_test_mse"], table["ols_train_mse"])
    table["ratio"] = table["score"] / ols
    table["ratio_se"] = score_se / ols
    ranked = table["private"].astype(bool) & (table["status"] == "ok")
    table["rank"] = np.nan
    table.loc[ranked, "rank"] = (
        table[ranked].groupby(["dataset", "epsilon"])["score"].rank(method="average")
    )
    best = table[ranked].groupby(["dataset", "epsilon"])["score"].min()
    table["ratio_to_best"] = table["score"] / pd.MultiIndex.from_frame(
        table[["dataset", "epsilon"]]
    ).map(lambda k: best.get(k, math.nan))
    table.loc[~ranked, "ratio_to_best"] = np.nan
    return table


def _ranked(table: pd.DataFrame) -> pd.DataFrame:
    return table[table["private"].astype(bool) & (table["status"] == "ok")]


def leaderboard(table: pd.DataFrame) -> pd.DataFrame:
    r"""Per (epsilon, method): mean rank, wins and geometric mean of the OLS ratio.

    Uncertainty is across datasets: ``mean_rank_se`` is the standard error of the mean
    rank, and the geometric mean's 95% band is
    :math:`\exp(\overline{\log r} \pm 1.96\,\mathrm{SE})`. ``datasets`` counts the
    datasets on which the method ran; ``not_run`` those where its regime excluded it.
    """
    rows = []
    for (epsilon, method), group in _ranked(table).groupby(["epsilon", "method"], sort=True):
        k = len(group)
        log_ratio = np.log(group["ratio"].to_numpy())
        se_rank = group["rank"].std(ddof=1) / math.sqrt(k) if k > 1 else math.nan
        se_log = log_ratio.std(ddof=1) / math.sqrt(k) if k > 1 else math.nan
        everywhere = table[(table["epsilon"] == epsilon) & (table["method"] == method)]
        rows.append(
            {
                "epsilon": epsilon,
                "method": method,
                "paper": group["paper"].iloc[0],
                "guarantee": group["guarantee"].iloc[0],
                "datasets": k,
                "not_run": int((everywhere["status"] != "ok").sum()),
                "mean_rank": group["rank"].mean(),
                "mean_rank_se": se_rank,
                "wins": int((group["rank"] == 1.0).sum()),
                "geo_mean_ratio": float(np.exp(log_ratio.mean())),
                "geo_mean_ratio_low": float(np.exp(log_ratio.mean() - 1.96 * se_log)),
                "geo_mean_ratio_high": float(np.exp(log_ratio.mean() + 1.96 * se_log)),
            }
        )
    board = pd.DataFrame(rows)
    if board.empty:
        return board
    return board.sort_values(["epsilon", "mean_rank", "method"], ignore_index=True)


def performance_profile(table: pd.DataFrame, taus: Sequence[float] = PROFILE_TAUS) -> pd.DataFrame:
    r"""Dolan--Moré profile: per (epsilon, method, tau), the share of datasets within tau.

    :math:`\rho_m(\tau) = |\{\text{datasets}: s_m / \min_{m'} s_{m'} \le \tau\}|
    / |\text{datasets}|`, over every dataset of the epsilon (a method that did not run
    on a dataset counts as never within tau there), so curves of different methods are
    comparable; ``rho(1)`` is the share of wins (ties count for both).
    """
    ranked = _ranked(table)
    rows = []
    for epsilon, at_eps in ranked.groupby("epsilon", sort=True):
        datasets = at_eps["dataset"].nunique()
        for method, group in at_eps.groupby("method", sort=True):
            r = group["ratio_to_best"].to_numpy()
            for tau in taus:
                share = float(np.count_nonzero(r <= tau * (1 + 1e-12))) / datasets
                rows.append({"epsilon": epsilon, "method": method, "tau": tau, "share": share})
    return pd.DataFrame(rows)


def recommendation_map(table: pd.DataFrame, bins: Sequence[float] = NDRATIO_BINS) -> pd.DataFrame:
    """Which method to use in each (n/d region, epsilon): the best mean rank there.

    For each region of n/d (edges ``bins``) and epsilon: the method with the lowest
    mean rank over the region's datasets, its mean rank and wins, the runner-up and its
    mean rank, and the number of datasets (the evidence).
    """
    ranked = _ranked(table).copy()
    ranked["n_per_d"] = ranked["n"] / ranked["d"]
    labels = [
        f"[{lo:g}, {hi:g})" if math.isfinite(hi) else f">= {lo:g}"
        for lo, hi in zip(bins[:-1], bins[1:], strict=True)
    ]
    ranked["region"] = pd.cut(ranked["n_per_d"], list(bins), right=False, labels=labels)
    rows = []
    for (region, epsilon), group in ranked.groupby(["region", "epsilon"], observed=True):
        stats = (
            group.groupby("method")
            .agg(mean_rank=("rank", "mean"), wins=("rank", lambda r: int((r == 1.0).sum())))
            .sort_values(["mean_rank"], kind="stable")
        )
        best, second = stats.index[0], stats.index[1] if len(stats) > 1 else ""
        rows.append(
            {
                "region_n_per_d": str(region),
                "epsilon": epsilon,
                "datasets": group["dataset"].nunique(),
                "recommended": best,
                "mean_rank": stats.loc[best, "mean_rank"],
                "wins": int(stats.loc[best, "wins"]),
                "runner_up": second,
                "runner_up_mean_rank": stats.loc[second, "mean_rank"] if second else math.nan,
            }
        )
    return pd.DataFrame(rows)


def measure_cost(
    datasets: Mapping[str, Dataset],
    methods: Sequence[str],
    *,
    epsilon: float = 1.0,
    repeats: int = 3,
    seed: int = 0,
) -> pd.DataFrame:
    r"""Seconds per fit of every method on every dataset, one thread (a measurement).

    Each (dataset, method) is fitted ``repeats`` times with one trial at ``epsilon`` and
    :math:`\delta = 1/n^2` after one warm-up fit; ``seconds_per_fit`` is the minimum
    wall time (the least disturbed by other processes), ``cpu_seconds_per_fit`` the
    minimum process CPU time. BLAS and OpenMP pools are limited to one thread while
    timing. Timings describe the machine, so they never enter a result table: the
    workflow writes them to ``results/benchmarks/`` beside the job timings.
    """
    import time

    from threadpoolctl import threadpool_limits

    rows = []
    with threadpool_limits(limits=1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, data in datasets.items():
            n, d = data.X.shape
            delta = 1.0 / float(n) ** 2
            for method in methods:
                public = PublicInputs(
                    n=n, d=d, epsilon=epsilon, delta=delta, bound_X=1.0, bound_y=1.0
                )
                reason = get_method(method).reason_not_run(public)
                wall, cpu = [], []
                for k in range(repeats + 1 if reason is None else 0):
                    t0, c0 = time.perf_counter(), time.process_time()
                    fit_method(
                        method, data.X, data.y, epsilon=epsilon, delta=delta, bound_X=1.0,
                        bound_y=1.0, rng=np.random.default_rng([seed, k]), trials=1,
                    )  # fmt: skip
                    if k > 0:  # k = 0 is the warm-up
                        wall.append(time.perf_counter() - t0)
                        cpu.append(time.process_time() - c0)
                rows.append(
                    {
                        "dataset": name,
                        "n": n,
                        "d": d,
                        "method": method,
                        "epsilon": epsilon,
                        "seconds_per_fit": min(wall) if wall else math.nan,
                        "cpu_seconds_per_fit": min(cpu) if cpu else math.nan,
                        "repeats": len(wall),
                        "status": "not_run" if reason else "ok",
                    }
                )
    return pd.DataFrame(rows)


def cost_beside_accuracy(cost: pd.DataFrame, table: pd.DataFrame) -> pd.DataFrame:
    """Per method: median seconds per fit over datasets beside its accuracy at that epsilon.

    ``cost`` is :func:`measure_cost`'s table; ``table`` the benchmark summary. The
    accuracy columns are the leaderboard's (:func:`leaderboard`) at the cost's epsilon.
    """
    ok = cost[cost["status"] == "ok"]
    summary = ok.groupby("method").agg(
        datasets_timed=("dataset", "nunique"),
        median_seconds_per_fit=("seconds_per_fit", "median"),
        max_seconds_per_fit=("seconds_per_fit", "max"),
    )
    epsilon = float(cost["epsilon"].iloc[0])
    board = leaderboard(table)
    board = board[np.isclose(board["epsilon"], epsilon)].set_index("method")
    summary = summary.join(board[["mean_rank", "wins", "geo_mean_ratio"]], how="left")
    return summary.reset_index().sort_values(["mean_rank", "method"], ignore_index=True)


def figure_profile(table: pd.DataFrame, *, title: str | None = None) -> Any:
    """Draw the performance profile (:func:`dpreg.plotting.benchmark.plot_performance_profile`)."""
    from dpreg.plotting.benchmark import plot_performance_profile

    return plot_performance_profile(performance_profile(table), title=title)


def figure_heatmap(table: pd.DataFrame, *, title: str | None = None) -> Any:
    """Draw the dataset x method heatmap (:func:`dpreg.plotting.benchmark.plot_heatmap`)."""
    from dpreg.plotting.benchmark import plot_heatmap

    return plot_heatmap(table, title=title)


def figure_recommendation(table: pd.DataFrame, *, title: str | None = None) -> Any:
    """Draw the recommendation map (:func:`dpreg.plotting.benchmark.plot_recommendation_map`)."""
    from dpreg.plotting.benchmark import plot_recommendation_map

    return plot_recommendation_map(recommendation_map(table), title=title)


BENCHMARK = StudyKind(
    name="benchmark",
    run=run_benchmark_cell,
    summarise=summarise_benchmark,
    figure=figure_profile,
    params=BenchmarkParams,
    check_cell=check_benchmark_cell,
    uses_test_rows=True,
    views={
        "leaderboard": leaderboard,
        "profile": performance_profile,
        "recommendation": recommendation_map,
    },
    view_figures={"heatmap": figure_heatmap, "recommendation": figure_recommendation},
)
