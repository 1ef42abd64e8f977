"""The lev_gamma_sweep kind: IHM's MSE against its mixing level, and its claim rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpreg.data.datasets import Dataset
from dpreg.estimators.ihm import ihm_gamma, ihm_sketch_size
from dpreg.experiments.kinds import get_kind
from dpreg.experiments.lev2026_claims import lev2026_claims
from dpreg.experiments.lev2026_gamma import (
    GammaSweepParams,
    gamma_points,
    run_gamma_sweep_cell,
    summarise_gamma_sweep,
)


def _dataset(n: int = 120, d: int = 4, seed: int = 0) -> Dataset:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1).max()
    y = X @ rng.normal(size=d) + 0.1 * rng.normal(size=n)
    y /= np.abs(y).max()
    return Dataset(name="toy", X=X, y=y)


CELL = {"dataset": "toy", "epsilon": 0.1, "gamma_factor": [1.5, 3.0], "T": 3}


def test_points_are_sorted_and_anchored_at_the_exact_and_code_gammas():
    n, d, T, eps = 120, 4, 3, 0.1
    delta = 1 / n**2
    k = ihm_sketch_size(d, T, delta / 10)
    pts = gamma_points(eps, n, d, T, [1.0, 1.5, 3.0])
    gammas = [g for _, g, _ in pts]
    assert gammas == sorted(gammas)
    assert [p for p, _, _ in pts].count("exact") == 1  # factor 1 is the exact point
    named = {p: g for p, g, _ in pts if p != "factor"}
    assert named["exact"] == ihm_gamma(eps, delta, k, T, "rdp")
    assert named["code"] == ihm_gamma(eps, delta, k, T, "code")
    assert [f for p, _, f in pts if p != "code"] == [1.0, 1.5, 3.0]


def test_run_uses_common_random_numbers_and_spends_at_most_the_target():
    data = _dataset()
    runs = run_gamma_sweep_cell(CELL, trials=40, first_trial=0, seed=7, data=data)
    assert set(runs["point"]) == {"exact", "code", "factor"}
    assert runs.groupby("gamma").size().eq(40).all()
    assert (runs["spent_epsilon"] <= 0.1 * (1 + 1e-9)).all()
    exact = runs[runs["point"] == "exact"]
    assert exact["spent_epsilon"].iloc[0] == pytest.approx(0.1, rel=1e-6)
    big = runs[runs["gamma_factor"] == 3.0]
    assert (big["spent_epsilon"] < 0.09).all()  # more noise than needed: less spent
    table = summarise_gamma_sweep(runs, [])
    assert list(table["gamma"]) == sorted(table["gamma"])
    top = table.iloc[-1]
    # common random numbers: per-trial MSEs at neighbouring gammas are strongly correlated
    # (independent streams would give a correlation of 0 +- 0.16 at 40 trials)
    wide = runs.pivot_table(index="trial", columns="gamma", values="mse")
    assert np.corrcoef(wide.iloc[:, 0], wide.iloc[:, 1])[0, 1] > 0.8
    assert top["se_diff_exact"] < np.hypot(top["se"], table.iloc[0]["se"])
    # an independent recomputation of the paired SE
    diff = wide[wide.columns.max()] - wide[wide.columns.min()]
    assert top["se_diff_exact"] == pytest.approx(diff.std(ddof=1) / np.sqrt(40))
    assert top["diff_exact"] == pytest.approx(diff.mean())


def test_a_larger_gamma_shrinks_ihm_towards_zero():
    # gamma -> infinity: the mixing noise dominates the sketched Hessian, the steps vanish,
    # and the train MSE tends to that of theta = 0, mean(y^2) (docs/lev2026.md)
    data = _dataset()
    cell = {**CELL, "gamma_factor": [1e6]}
    table = summarise_gamma_sweep(
        run_gamma_sweep_cell(cell, trials=20, first_trial=0, seed=3, data=data), []
    )
    assert table.iloc[-1]["mean"] == pytest.approx(float(np.mean(data.y**2)), rel=1e-3)
    assert table["mse_zero"].eq(float(np.mean(data.y**2))).all()


def test_bad_cells_are_refused():
    kind = get_kind("lev_gamma_sweep")
    kind.validate_cell(CELL)
    with pytest.raises(ValueError, match="gamma_factor"):
        GammaSweepParams.from_cell({**CELL, "gamma_factor": [0.9]})
    with pytest.raises(ValueError, match="epsilon"):
        GammaSweepParams.from_cell({**CELL, "epsilon": float("inf")})
    with pytest.raises(ValueError, match="dataset"):
        run_gamma_sweep_cell(CELL, trials=2, first_trial=0, seed=0, data=None)


def _sweep_table(means_by_factor: dict[float, float], se_step: float) -> pd.DataFrame:
    rows = []
    factors = sorted(means_by_factor)
    for i, f in enumerate(factors):
        prev = means_by_factor[factors[i - 1]] if i else means_by_factor[f]
        rows.append(
            {
                "dataset": "lev_x",
                "epsilon": 0.1,
                "point": "exact" if f == 1.0 else ("code" if f == 1.3 else "factor"),
                "gamma": 100.0 * f,
                "gamma_factor": f,
                "diff_exact": means_by_factor[f] - means_by_factor[1.0],
                "se_diff_exact": 0.0 if f == 1.0 else se_step,
                "diff_previous": means_by_factor[f] - prev,
                "se_diff_previous": 0.0 if i == 0 else se_step,
            }
        )
    return pd.DataFrame(rows)


def test_claims_pass_for_a_decreasing_curve_and_fail_otherwise():
    down = _sweep_table({1.0: 1.0, 1.3: 0.9, 2.0: 0.8, 3.0: 0.7}, se_step=0.01)
    claims = lev2026_claims({"lev_gamma_sweep": down})["claims"]
    assert list(claims["passed"]) == ["yes", "yes"]
    # a step up of 5 SEs in the middle: the curve does not decrease over the range
    bump = _sweep_table({1.0: 1.0, 1.3: 0.9, 2.0: 0.95, 3.0: 0.7}, se_step=0.01)
    claims = lev2026_claims({"lev_gamma_sweep": bump})["claims"].set_index("claim")
    assert (
        claims.loc["lev_x: IHM's train MSE decreases with gamma over the swept range"]["passed"]
        == "NO"
    )
    # the code's gamma worse than the exact one
    up = _sweep_table({1.0: 1.0, 1.3: 1.1, 2.0: 1.2, 3.0: 1.3}, se_step=0.01)
    claims = lev2026_claims({"lev_gamma_sweep": up})["claims"]
    assert list(claims["passed"]) == ["NO", "NO"]
