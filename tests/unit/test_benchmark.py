"""The benchmark study kind: runs, summary, views and claims."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpreg.data.regimes import load_regime_split
from dpreg.experiments.benchmark import (
    BENCHMARK,
    leaderboard,
    performance_profile,
    recommendation_map,
    run_benchmark_cell,
    summarise_benchmark,
)
from dpreg.experiments.dpreg_claims import check

METHODS = ["ols", "adassp", "ihm", "linear_mixing", "dp_gd_brown", "dp_ssgd", "nu_dp_ftrl",
           "dp_sgd_stream"]  # fmt: skip


@pytest.fixture(scope="module")
def runs():
    frames = []
    for seed, (n, d) in enumerate([(3000, 4), (600, 8), (20000, 3)]):
        train, test = load_regime_split(n=n, d=d, seed=seed, sigma=0.3)
        cell = {"dataset": f"r{seed}", "epsilon": [0.3, 3.0], "methods": METHODS}
        frames.append(
            run_benchmark_cell(cell, trials=6, first_trial=0, seed=11 + seed, data=train, test=test)
        )
    return pd.concat(frames, ignore_index=True)


@pytest.fixture(scope="module")
def table(runs):
    return summarise_benchmark(runs, [])


def test_one_row_per_trial_and_pair_with_budgets_and_status(runs):
    assert len(runs) == 3 * len(METHODS) * 2 * 6
    ok = runs[runs["status"] == "ok"]
    assert ok["test_mse"].notna().all() and ok["train_mse"].notna().all()
    skipped = runs[runs["status"] == "not_run"]
    assert set(skipped["method"]) == {"dp_ssgd"}  # eps = 3 is outside its regime
    assert (skipped["reason"].str.contains("shuffling regime")).all()
    assert skipped["test_mse"].isna().all()
    private = ok[ok["private"]]
    assert (private["spent_epsilon"] <= private["epsilon"] * (1 + 1e-9)).all()
    assert ok[~ok["private"]]["spent_epsilon"].isna().all()


def test_the_run_is_a_function_of_the_seed_block(runs):
    train, test = load_regime_split(n=3000, d=4, seed=0, sigma=0.3)
    cell = {"dataset": "r0", "epsilon": [0.3, 3.0], "methods": METHODS}
    again = run_benchmark_cell(cell, trials=6, first_trial=0, seed=11, data=train, test=test)
    pd.testing.assert_frame_equal(again, runs[runs["dataset"] == "r0"].reset_index(drop=True))


def test_adding_or_reordering_methods_leaves_the_others_draws_unchanged(runs):
    # Each (method, epsilon) pair has a stream named by it (dpreg.seeds.stream_key), so
    # the documented way of adding a method (one config line) cannot reshuffle the others.
    train, test = load_regime_split(n=3000, d=4, seed=0, sigma=0.3)
    cell = {"dataset": "r0", "epsilon": [3.0, 0.3], "methods": ["nu_dp_ftrl", "ihm"]}
    alone = run_benchmark_cell(cell, trials=6, first_trial=0, seed=11, data=train, test=test)
    first = runs[(runs["dataset"] == "r0") & runs["method"].isin(["nu_dp_ftrl", "ihm"])]
    key = ["method", "epsilon", "trial"]
    alone = alone.sort_values(key).reset_index(drop=True)
    first = first.sort_values(key).reset_index(drop=True)
    pd.testing.assert_frame_equal(alone, first)


def test_ols_is_the_reference_and_never_ranked(table):
    ols = table[table["method"] == "ols"]
    np.testing.assert_allclose(ols["ratio"], 1.0, rtol=1e-12)
    assert ols["rank"].isna().all()


def test_ranks_are_a_permutation_on_each_dataset_and_epsilon(table):
    for _, group in table.dropna(subset=["rank"]).groupby(["dataset", "epsilon"]):
        assert sorted(group["rank"]) == pytest.approx(list(range(1, len(group) + 1)))
        assert group.loc[group["rank"] == 1.0, "ratio_to_best"].iloc[0] == pytest.approx(1.0)
        assert (group["ratio_to_best"] >= 1 - 1e-12).all()


def test_profile_is_monotone_and_starts_at_the_share_of_wins(table):
    profile = performance_profile(table)
    board = leaderboard(table)
    for (eps, method), curve in profile.groupby(["epsilon", "method"]):
        shares = curve.sort_values("tau")["share"].to_numpy()
        assert (np.diff(shares) >= 0).all() and shares[-1] <= 1
        wins = board[(board["epsilon"] == eps) & (board["method"] == method)]["wins"].iloc[0]
        datasets = table[table["epsilon"] == eps]["dataset"].nunique()
        assert shares[0] == pytest.approx(wins / datasets)


def test_leaderboard_uncertainty_and_recommendation_evidence(table):
    board = leaderboard(table)
    assert (board["geo_mean_ratio_low"] <= board["geo_mean_ratio"]).all()
    assert (board["geo_mean_ratio"] <= board["geo_mean_ratio_high"]).all()
    assert set(board["method"]) <= set(METHODS) - {"ols"}
    rec = recommendation_map(table)
    assert rec["datasets"].sum() == 3 * 2  # every dataset in exactly one region per epsilon
    for _, row in rec.iterrows():
        assert row["mean_rank"] <= row["runner_up_mean_rank"]


def test_views_and_figures_are_registered(table):
    assert set(BENCHMARK.views) == {"leaderboard", "profile", "recommendation"}
    for name, draw in {"figure": BENCHMARK.figure, **BENCHMARK.view_figures}.items():
        fig = draw(table, title=name)
        assert fig.axes


def test_claims_pass_and_fail_on_synthetic_tables(table):
    out = check({"benchmark": table})["benchmark"]
    budget = out[out["claim"].str.startswith("every private method certifies")]
    assert (budget["passed"] == "yes").all()
    # make IHM the best everywhere, then the worst: the Lev et al. claim follows
    best = table.copy()
    best.loc[best["method"] == "ihm", "score"] = 1e-9
    worst = table.copy()
    worst.loc[worst["method"] == "ihm", "score"] = 1e9
    lev = "IHM is the best of Lev et al.'s methods"
    passed = check({"benchmark": best})["benchmark"]
    failed = check({"benchmark": worst})["benchmark"]
    passed, failed = (
        passed[passed["claim"].str.contains(lev)],
        failed[failed["claim"].str.contains(lev)],
    )
    assert len(passed) == len(failed) == 2  # one row per epsilon
    assert (passed["passed"] == "yes").all() and (failed["passed"] == "NO").all()
    # an overspent budget is caught
    over = table.copy()
    over.loc[over["method"] == "adassp", "spent_epsilon"] *= 1.01
    row = check({"benchmark": over})["benchmark"].iloc[0]
    assert row["passed"] == "NO" and math.isclose(row["value"], 1.01, rel_tol=1e-9)


def test_bad_cells_are_refused_before_any_work():
    with pytest.raises(ValueError, match="benchmark: methods: unknown method 'ihmm'"):
        BENCHMARK.validate_cell({"dataset": "d", "epsilon": 1.0, "methods": ["ihmm"]})
    with pytest.raises(ValueError, match="benchmark: epsilon must be > 0 and finite"):
        BENCHMARK.validate_cell({"dataset": "d", "epsilon": [1.0, math.inf], "methods": "ihm"})
    with pytest.raises(ValueError, match="twice"):
        BENCHMARK.validate_cell({"dataset": "d", "epsilon": 1.0, "methods": ["ihm", "ihm"]})
    with pytest.raises(ValueError, match="benchmark: intercept must be bool"):
        BENCHMARK.validate_cell(
            {"dataset": "d", "epsilon": 1.0, "methods": "ihm", "intercept": "yes"}
        )


def test_cost_is_measured_per_dataset_and_set_beside_accuracy(table):
    from dpreg.experiments.benchmark import cost_beside_accuracy, measure_cost

    train, _ = load_regime_split(n=600, d=8, seed=1, sigma=0.3)
    cost = measure_cost({"r1": train}, ["adassp", "dp_ssgd"], epsilon=3.0, repeats=2)
    ok = cost[cost["status"] == "ok"]
    assert list(ok["method"]) == ["adassp"] and (ok["seconds_per_fit"] > 0).all()
    assert (ok["repeats"] == 2).all()
    skipped = cost[cost["status"] == "not_run"]  # outside DP-SSGD's regime: never timed
    assert skipped["seconds_per_fit"].isna().all() and (skipped["repeats"] == 0).all()
    summary = cost_beside_accuracy(cost, table)
    row = summary.set_index("method").loc["adassp"]
    board = leaderboard(table)
    expected = board[(board["epsilon"] == 3.0) & (board["method"] == "adassp")]
    assert row["mean_rank"] == pytest.approx(expected["mean_rank"].iloc[0])


def test_mse_in_place_equals_the_fresh_residuals_bit_for_bit():
    # _mse overwrites the predictions with the residuals (issue 18): the same numbers.
    from dpreg.experiments.benchmark import _mse

    rng = np.random.default_rng(3)
    y = rng.standard_normal(1001)
    for predictions in (rng.standard_normal((7, 1001)), np.asfortranarray(rng.random((5, 1001)))):
        resid = y[None, :] - predictions
        expected = np.einsum("ij,ij->i", resid, resid) / y.shape[0]
        np.testing.assert_array_equal(_mse(y, predictions.copy(order="K")), expected)


@pytest.mark.parametrize("intercept", [False, True])
def test_rows_from_columns_equal_the_per_pair_frames(intercept):
    # run_benchmark_cell builds one frame from the cell's columns (issue 18); the
    # reference builds one frame per (method, epsilon) pair and concatenates them. The
    # same columns, dtypes and values, with rows not run (dp_ssgd at epsilon 3), a peer,
    # and with and without held-out rows.
    train, test = load_regime_split(n=900, d=3, seed=4, sigma=0.3)
    methods = ["ols", "adassp", "dp_ssgd", "nu_dp_ftrl", "diffprivlib"]
    if intercept:
        methods = ["ols", "adassp", "nu_dp_ftrl"]
    cell = {"dataset": "r4", "epsilon": [0.3, 3.0], "methods": methods, "intercept": intercept}
    for held_out in (test, None):
        runs = {
            build: run_benchmark_cell(
                cell, trials=3, first_trial=5, seed=2, data=train, test=held_out, rows=build
            )
            for build in ("columns", "per_pair")
        }
        pd.testing.assert_frame_equal(runs["columns"], runs["per_pair"], check_exact=True)
        assert runs["columns"].dtypes.equals(runs["per_pair"].dtypes)
        assert bool((runs["columns"]["status"] == "not_run").any()) == (not intercept)
    with pytest.raises(ValueError, match="rows"):
        run_benchmark_cell(cell, trials=3, first_trial=0, seed=2, data=train, rows="frames")


@settings(max_examples=40, deadline=None)
@given(
    rows=st.integers(1, 3000),
    d=st.integers(1, 130),
    trials=st.integers(1, 101),
    intercept=st.booleans(),
    fortran=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_predict_into_a_buffer_equals_a_fresh_prediction_bit_for_bit(
    rows, d, trials, intercept, fortran, seed
):
    # The benchmark reuses one prediction buffer per row set (issue 18): Fit.predict(out=)
    # is the same product and the same intercept addition as a fresh array.
    from dpreg.results import Fit

    rng = np.random.default_rng(seed)
    X = rng.standard_normal((rows, d))
    X = np.asfortranarray(X) if fortran else X
    theta = rng.standard_normal((trials, d))
    b = rng.standard_normal(trials) if intercept else None
    fit = Fit(theta, None, "toy", intercept=b)
    fresh = theta @ X.T if b is None else theta @ X.T + b[:, None]
    out = np.full((trials, rows), np.nan)
    assert fit.predict(X, out=out) is out
    np.testing.assert_array_equal(out, fresh)
    np.testing.assert_array_equal(fit.predict(X), fresh)


def test_predict_refuses_a_bad_buffer():
    from dpreg.results import Fit

    fit = Fit(np.zeros((2, 3)), None, "toy")
    bad_buffers = (
        np.empty((2, 5)),
        np.empty((4, 2)).T,
        np.empty((2, 4), np.float32),
        [[0.0] * 4] * 2,
    )
    for bad in bad_buffers:
        with pytest.raises(ValueError, match="out must be"):
            fit.predict(np.ones((4, 3)), out=bad)
