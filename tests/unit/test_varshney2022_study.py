"""Study additions of Varshney et al. (2022): DP-SSGD and tuned DP-SGD lanes, N*(d), claims.

Independent computations: the single-run estimators (``dp_ssgd_path``,
``fit_dp_sgd_poisson``) for the vectorised lanes, Monte Carlo noise scales with
tolerances from the standard error of a sample standard deviation, hand-built tables for
the cross-fitted selection, N*(d) and the comparison claims.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

from dpreg.estimators import get_estimator
from dpreg.estimators.ambssgd_core import PermutedRows
from dpreg.estimators.ambssgd_privacy import ShufflingRegimeWarning, calibrate_dp_ssgd
from dpreg.estimators.dp_ssgd import dp_ssgd_hyperparameters, dp_ssgd_path, dp_ssgd_stream_pass
from dpreg.estimators.dpsgd_poisson import dp_sgd_poisson_runs
from dpreg.experiments import varshney2022 as study
from dpreg.experiments.varshney2022_claims import check
from dpreg.plotting.varshney2022 import plot_sim
from dpreg.privacy.budgets import ApproxDP


def _rows(n=3000, d=4, seed=3):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    base = X @ np.ones(d) / math.sqrt(d)
    return X, base, rng.standard_normal(n)


# ----------------------------------------------------------------------------- DP-SSGD


def test_dp_ssgd_stream_pass_equals_single_run_path():
    X, base, z = _rows()
    y = base + 0.3 * z
    expected, frac = dp_ssgd_path(
        X, y, np.arange(3000)[None, :], eta=0.05, clip=1.0, noise_multiplier=0.7,
        rng=np.random.default_rng(9), chunk=1024,
    )  # fmt: skip
    got, got_frac = dp_ssgd_stream_pass(
        PermutedRows(X, y, 1, np.random.default_rng(0), shuffle=False), 3000,
        eta=np.array([0.05]), clip=np.array([1.0]), noise_multiplier=np.array([0.7]),
        sigma=np.array([0.0]), rng=np.random.default_rng(9),
    )  # fmt: skip
    np.testing.assert_allclose(got[0, :, 0], expected[0], rtol=1e-12, atol=1e-15)
    assert got_frac[0, 0] == pytest.approx(frac[0]) and 0 < frac[0] < 1


class _Stream:
    """Rows with base and noise kept apart, as the study's GaussianStream."""

    def __init__(self, X, base, z):
        self.X, self.base, self.z, self.pos = X, base, z, 0
        self.n_replicates, self.d = 1, X.shape[1]

    def take(self, k):
        sl = slice(self.pos, self.pos + k)
        self.pos += k
        return self.X[None, sl], self.base[None, sl], self.z[None, sl]


def test_noiseless_dp_ssgd_lanes_are_independent_runs():
    """Lanes differ in eta, clip and sigma; each equals its own single run."""
    X, base, z = _rows()
    eta, clip, sig = np.array([0.05, 0.02, 0.05]), np.array([1.0, 0.2, 5.0]), np.array([0.3, 1, 0])
    got, _ = dp_ssgd_stream_pass(
        _Stream(X, base, z), 3000, eta=eta, clip=clip, noise_multiplier=np.zeros(3), sigma=sig,
        rng=np.random.default_rng(0),
    )  # fmt: skip
    for r in range(3):
        one, _ = dp_ssgd_path(
            X, base + sig[r] * z, np.arange(3000)[None, :], eta=eta[r], clip=clip[r],
            noise_multiplier=0.0, rng=np.random.default_rng(1),
        )  # fmt: skip
        np.testing.assert_allclose(got[0, :, r], one[0], rtol=1e-12, atol=1e-15)


def test_dp_ssgd_lane_noise_std_is_two_eta_zeta_alpha():
    """X = 0, y = 0, one step: w_1 = -eta 2 zeta alpha g per lane (Algorithm 1, line 5)."""
    D, d = 2000, 3
    src = PermutedRows(np.zeros((1, d)), np.zeros(1), D, np.random.default_rng(0), shuffle=False)
    eta, clip, alpha = np.array([0.1, 0.5]), np.array([2.0, 0.3]), np.array([1.5, 4.0])
    w, _ = dp_ssgd_stream_pass(
        src, 1, eta=eta, clip=clip, noise_multiplier=alpha, sigma=np.zeros(2),
        rng=np.random.default_rng(4),
    )  # fmt: skip
    m = D * d
    for r in range(2):
        sd = w[:, :, r].std()
        assert abs(sd / (eta[r] * 2 * clip[r] * alpha[r]) - 1) < 4 / math.sqrt(2 * m)


def test_dp_ssgd_hyperparameter_rules():
    kw = dict(x_norm_sq=12.0, H_norm=1.0, kappa=1.0, w_star_norm=1.0, sigma=0.1)
    eta_t, zeta_t = dp_ssgd_hyperparameters(10_000, 10, noise_multiplier=7.0, **kw)
    eta_l, zeta_l = dp_ssgd_hyperparameters(10_000, 10, noise_multiplier=7.0, rule="lemma", **kw)
    assert eta_l == pytest.approx(1 / 24) and zeta_l == zeta_t
    assert eta_t < 1e-9  # eq. (30)'s constants: the iterate barely moves
    with pytest.raises(ValueError, match="rule"):
        dp_ssgd_hyperparameters(10_000, 10, noise_multiplier=7.0, rule="nope", **kw)


# ----------------------------------------------------------------------------- DP-SGD


def test_dp_sgd_poisson_runs_equals_registered_estimator():
    X, base, z = _rows(n=5000)
    fit = get_estimator("dp_sgd_poisson")(
        X, base + 0.3 * z, budget=ApproxDP(1.0, 1e-6), rng=np.random.default_rng(4), clip=0.8,
        eta=0.5, batch_size=250, n_public=5000, epochs=2.0,
    )  # fmt: skip
    theta, frac = dp_sgd_poisson_runs(
        X, base, z, sigma=np.array([0.3]), clip=np.array([0.8]), eta=np.array([0.5]),
        noise_multiplier=np.array([fit.diagnostics["noise_multiplier"]]), batch_size=250,
        steps=fit.diagnostics["steps"], rng=np.random.default_rng(4),
    )  # fmt: skip
    np.testing.assert_allclose(theta[0], fit.theta[0], rtol=1e-12, atol=1e-15)
    assert frac[0] == pytest.approx(fit.nonprivate_diagnostics["clip_fraction"][0])


def test_dp_sgd_lane_noise_std_is_multiplier_times_clip():
    """X = 0: one step moves w by -eta * sigma_DP * C * g / L in each lane."""
    n, d, R = 50, 4, 1000
    clip = np.repeat([0.5, 2.0], R // 2)
    mult = np.repeat([3.0, 0.7], R // 2)
    theta, _ = dp_sgd_poisson_runs(
        np.zeros((n, d)), np.zeros(n), None, sigma=np.zeros(R), clip=clip,
        eta=np.full(R, 0.4), noise_multiplier=mult, batch_size=10.0, steps=1,
        rng=np.random.default_rng(2),
    )  # fmt: skip
    for group in (slice(0, R // 2), slice(R // 2, R)):
        expected = 0.4 * mult[group][0] * clip[group][0] / 10.0
        m = theta[group].size
        assert abs(theta[group].std() / expected - 1) < 4 / math.sqrt(2 * m)


def _grid_runs(values: dict[tuple[float, float], list[float]]) -> pd.DataFrame:
    rows = []
    for (c, e), risks in values.items():
        for trial, risk in enumerate(risks):
            rows.append(
                {
                    "n": 1000,
                    "d": 5,
                    "kappa": 1.0,
                    "sigma": 0.1,
                    "epsilon": 1.0,
                    "method": study.GRID_METHOD,
                    "trial": trial,
                    "excess_risk": risk,
                    "clip_fraction": 0.0,
                    "clip_scale": c,
                    "eta_scale": e,
                    "T": 7,
                    "b": 130,
                    "delta": 1e-6,
                }  # fmt: skip
            )
    return pd.DataFrame(rows)


def test_tuned_dp_sgd_is_cross_fitted_on_trial_parity():
    # point A wins on the even trials, point B on the odd trials
    runs = _grid_runs({(0.1, 1.0): [1, 50, 2, 60, 3, 70], (1.0, 1.0): [10, 5, 20, 6, 30, 7]})
    (row,) = study.tuned_dp_sgd(runs)
    # even -> A, evaluated on odd trials of A: 50, 60, 70; odd -> B, on even trials: 10, 20, 30
    assert row["selected"] == "C x0.1, eta x1 | C x1, eta x1"
    assert row["trials"] == 6
    assert row["median"] == pytest.approx(np.median([50, 60, 70, 10, 20, 30]))
    one_parity = runs[runs["trial"] % 2 == 0]
    (row,) = study.tuned_dp_sgd(one_parity)
    assert row["trials"] == 0 and math.isnan(row["median"]) and row["selected"].startswith("n/a")


def test_summary_reports_tuned_dp_sgd_and_no_grid_rows():
    cell = {"n": 3000, "d": 3, "sigma": [0.1], "epsilon": [1.0], "methods": ["sgd", "dp_sgd_tuned"],
            "dpsgd_batch_size": 300, "dpsgd_grid_clip_scales": [0.1, 1.0],
            "dpsgd_grid_eta_scales": [1.0]}  # fmt: skip
    both = study.run_sim_cell(cell, trials=2, first_trial=0, seed=5)
    alone = study.run_sim_cell(cell, trials=1, first_trial=1, seed=5)
    grid = both[both["method"] == study.GRID_METHOD]
    assert len(grid) == 2 * 2  # trials x grid points
    # grid rows of a trial depend on (seed, trial) only, not on the block's other trials
    key = ["clip_scale", "eta_scale"]
    a = grid[grid["trial"] == 1].sort_values(key)["excess_risk"].to_numpy()
    b = alone[alone["method"] == study.GRID_METHOD].sort_values(key)["excess_risk"].to_numpy()
    np.testing.assert_array_equal(a, b)
    table = study.summarise_sim(both)
    assert study.GRID_METHOD not in set(table["method"])
    tuned = table[table["method"] == "dp_sgd_tuned"].iloc[0]
    assert tuned["trials"] == 2 and np.isfinite(tuned["median"])


# ---------------------------------------------------------------- DP-SSGD in the study


def test_dp_ssgd_rows_state_regime_refusal_and_skips():
    cell = {"n": 4000, "d": 3, "sigma": [0.1], "epsilon": [0.1, 2.0], "methods": ["dp_ssgd"]}
    rows = study.run_sim_cell(cell, trials=2, first_trial=0, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ShufflingRegimeWarning)
        big = calibrate_dp_ssgd(2.0, 1e-6, 4000)
    small = calibrate_dp_ssgd(0.1, 1e-6, 4000)
    ok = rows[rows["epsilon"] == 0.1]
    over = rows[rows["epsilon"] == 2.0]
    assert set(ok["status"]) == {"ok"} and set(over["status"]) == {"over_noised"}
    assert over["epsilon_certified"].iloc[0] == pytest.approx(big.epsilon) and big.epsilon < 2.0
    assert ok["epsilon_certified"].iloc[0] == pytest.approx(small.epsilon)
    assert small.epsilon <= 0.1 * (1 + 1e-9)
    assert rows["excess_risk"].notna().all()
    skipped = study.run_sim_cell({**cell, "dpssgd_max_n": 1000}, trials=1, first_trial=0, seed=1)
    assert set(skipped["status"]) == {"not_run"} and skipped["excess_risk"].isna().all()
    tiny = {"n": 200, "d": 2, "sigma": [0.1], "epsilon": [1.0], "methods": ["dp_ssgd"]}
    refused = study.run_sim_cell(tiny, trials=1, first_trial=0, seed=1)
    assert set(refused["status"]) == {"refused"} and refused["excess_risk"].isna().all()
    table = study.summarise_sim(pd.concat([rows, refused]))
    assert set(table["status"]) == {"ok", "over_noised", "refused"}


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"dpssgd_eta_rule": "fast"}, "dpssgd_eta_rule"),
        ({"dpssgd_max_n": 0}, "dpssgd_max_n"),
        ({"dpsgd_grid_clip_scales": [0.1, -1.0]}, "dpsgd_grid_clip_scales"),
        ({"dpsgd_grid_eta_scales": [1.0, 1.0]}, "dpsgd_grid_eta_scales"),
        ({"methods": ["dp_sgd_tuned"], "dpsgd_batch_size": 5000}, "dpsgd_batch_size"),
    ],
)
def test_new_cell_keys_are_validated(change, match):
    cell = {"n": 4000, "d": 3, "methods": ["dp_ssgd"], **change}
    with pytest.raises(ValueError, match=match):
        study.check_sim_cell(cell)


# ----------------------------------------------------------------------- E5 and claims


def test_sample_complexity_reports_unreached_as_na_and_the_figure_says_so():
    cells = [{"d": d, "n_per_d": k, "sigma": [0.1], "epsilon": [1.0],
              "methods": ["ambssgd_margin", "sgd"]}
             for d in (3, 6) for k in (300, 1000)]  # fmt: skip
    runs = pd.concat(
        [study.run_sim_cell(c, trials=2, first_trial=0, seed=7 + i) for i, c in enumerate(cells)]
    )
    table = study.summarise_sim(runs)
    stars = study.sample_complexity(table)
    assert set(stars["method"]) == {"ambssgd_margin"} and len(stars) == 2
    for _, s in stars.iterrows():
        g = table[(table["d"] == s["d"]) & (table["method"] == "ambssgd_margin")]
        ok = g[g["median"] <= 2 * g["sgd_median"]]
        assert s["n_star_reached"] == bool(len(ok))
        assert (math.isnan(s["n_star"]) and not len(ok)) or s["n_star"] == ok["n"].min()
    merged = table[table["method"] == "ambssgd_margin"]
    assert {"n_star", "n_star_reached"} <= set(merged.columns)
    fig = plot_sim(table, title="E5")
    titles = [ax.get_title() for ax in fig.axes]
    assert any(t.startswith("N*(d)") for t in titles)
    texts = " ".join(t.get_text() for ax in fig.axes for t in ax.texts)
    assert not stars["n_star_reached"].any()  # N <= 6000 is far too small for the criterion
    assert "n/a at d = 3, 6" in texts
    # hand-built table: one method reaches N* at both d, one never does
    hand = pd.DataFrame(
        {
            "n": [100, 1000, 200, 2000] * 2,
            "d": [1, 1, 2, 2] * 2,
            "kappa": 1.0,
            "sigma": 0.1,
            "epsilon": 1.0,
            "method": ["a"] * 4 + ["b"] * 4,
            "median": [5, 1, 5, 1, 9, 9, 9, 9],
            "sgd_median": 1.0,
        }  # fmt: skip
    )
    s = study.sample_complexity(hand).set_index(["method", "d"])
    assert s.loc[("a", 1), "n_star"] == 1000 and s.loc[("a", 2), "n_star"] == 2000
    assert not s.loc[("b", 1), "n_star_reached"] and math.isnan(s.loc[("b", 2), "n_star"])


def test_e1_comparison_claims_use_the_largest_common_n():
    rows = []
    for n, mine, tuned, ssgd in [(1e4, 10.0, 1.0, 0.5), (1e5, 0.1, 0.01, math.nan)]:
        for method, med in (("ambssgd", mine), ("dp_sgd_tuned", tuned), ("dp_ssgd", ssgd)):
            rows.append({"n": n, "d": 5, "sigma": 0.1, "epsilon": 1.0, "method": method,
                         "median": med, "sigma2_d_over_n": 0.05 / n})  # fmt: skip
    claims = check({"varshney_e1_nscaling": pd.DataFrame(rows)})["claims"]
    tuned = claims[claims["claim"] == "ambssgd beats grid-tuned DP-SGD at the largest N"].iloc[0]
    assert tuned["value"] == pytest.approx(0.1) and tuned["passed"] == "NO"
    assert "N=100000" in tuned["statistic"]
    ssgd = claims[claims["claim"] == "ambssgd beats DP-SSGD at the largest N"].iloc[0]
    assert ssgd["value"] == pytest.approx(0.05) and "N=10000" in ssgd["statistic"]


def test_e1_lemma_claim_only_where_the_batch_condition_holds():
    table = pd.DataFrame(
        {
            "n": [1e4, 1e5, 1e6],
            "d": 5,
            "sigma": 0.1,
            "epsilon": 1.0,
            "method": "ambssgd",
            "median": [100.0, 0.5, 0.2],
            "lemma_3_11_bound": [1.0, 1.0, 0.1],
            "lemma_3_11_batch_ratio": [0.5, 2.0, 3.0],
            "sigma2_d_over_n": 1e-6,
        }  # fmt: skip
    )
    claims = check({"varshney_e1_nscaling": table})["claims"]
    row = claims[claims["claim"].str.startswith("risk below Lemma 3.11")].iloc[0]
    assert row["value"] == pytest.approx(2.0) and row["passed"] == "NO"  # 0.2/0.1 at N = 1e6
    ok = check({"varshney_e1_nscaling": table.assign(lemma_3_11_bound=[1.0, 1.0, 1.0])})
    row = ok["claims"][ok["claims"]["claim"].str.startswith("risk below Lemma 3.11")].iloc[0]
    assert row["value"] == pytest.approx(0.5) and row["passed"] == "yes"  # N = 1e4 excluded
