"""Study kinds, summaries, figures and claims of Choquette-Choo et al. (2023)."""

from __future__ import annotations

import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from dpreg.estimators.ftrl_correlations import independent
from dpreg.experiments.choquettechoo2023_claims import check, fig2_slope_table
from dpreg.experiments.claims import check_claims
from dpreg.experiments.kinds import get_kind
from dpreg.theory.ftrl_finite_time import theorem_d11_for

SIM_CELL = {
    "panel": "d",
    "mechanism": ["sgd", "nu_ftrl"],
    "d": [4, 8],
    "alpha": 1.0,
    "eta": 0.05,
    "T": 2000,
    "record_every": 50,
}


def _study(kind: str, cell: dict, trials: int = 1) -> pd.DataFrame:
    k = get_kind(kind)
    k.validate_cell(cell)
    runs = k.run(cell, trials=trials, first_trial=0, seed=7, data=None)
    assert {"trial", "seed"} <= set(runs.columns)
    assert len(runs) % trials == 0
    table = k.summarise(runs, [])
    fig = k.figure(table, title="t")
    plt.close(fig)
    return table


def test_linreg_sim_kind_summary_and_slopes():
    table = _study("ftrl_linreg_sim", SIM_CELL, trials=3)
    assert len(table) == 4
    assert set(table["runs"]) == {3}
    sgd = table[table.mechanism == "sgd"]
    assert float(sgd["slope_paper"].iloc[0]) == 1.00
    assert np.isnan(table[table.mechanism == "nu_ftrl"]["slope_paper"]).all()
    ftrl = table[table.mechanism == "nu_ftrl"]
    assert np.all(ftrl["ratio_to_sgd_sim"] < 1)
    np.testing.assert_allclose(
        ftrl["ratio_to_sgd_lti"], ftrl["theory_lti"].to_numpy() / sgd["theory_lti"].to_numpy()
    )
    assert np.all(table["sim_over_lti"] > 0.7) and np.all(table["sim_over_lti"] < 1.5)


def test_linreg_sim_is_deterministic_per_seed():
    k = get_kind("ftrl_linreg_sim")
    cell = {**SIM_CELL, "mechanism": "nu_ftrl", "d": 4, "T": 500}
    a = k.run(cell, trials=2, first_trial=0, seed=3, data=None)
    b = k.run(cell, trials=2, first_trial=0, seed=3, data=None)
    pd.testing.assert_frame_equal(a, b)
    c = k.run(cell, trials=2, first_trial=0, seed=4, data=None)
    assert not np.allclose(a["suboptimality"], c["suboptimality"])


def test_sim_cell_validation():
    k = get_kind("ftrl_linreg_sim")
    with pytest.raises(ValueError, match="^ftrl_linreg_sim: panel must be one of"):
        k.validate_cell({**SIM_CELL, "panel": "n"})
    with pytest.raises(ValueError, match="^ftrl_linreg_sim: mechanism must be one of"):
        k.validate_cell({**SIM_CELL, "mechanism": ["sgd", "tree"]})
    with pytest.raises(ValueError, match="^ftrl_linreg_sim: eta=0.5 is unstable"):
        k.validate_cell({**SIM_CELL, "eta": 0.5})
    with pytest.raises(ValueError, match="^ftrl_linreg_sim: nu must be 'eta_mu' or lie in"):
        k.validate_cell({**SIM_CELL, "nu": 1.5})
    with pytest.raises(ValueError, match=r"^ftrl_linreg_sim: tail_fraction must lie in \(0, 1\]"):
        k.validate_cell({**SIM_CELL, "tail_fraction": 1.5})
    with pytest.raises(ValueError, match="unknown key"):
        k.check_keys("s", {"panel", "mechanism", "epsilon"})


def test_mean_ratio_and_tables_and_quoted():
    fig1 = _study("ftrl_mean_ratio", {"etas": [0.01, 0.1, 1.0], "eta_panels": 0.2, "T": 10})
    assert set(fig1["panel"]) == {"ratio", "coefficients", "spectrum"}
    t1 = _study("ftrl_theory_table", {"table": "table1", "d": 16, "eta": 0.02})
    t2 = _study(
        "ftrl_theory_table", {"table": "table2", "d": 16, "eta": 0.02, "horizons": [10, 100]}
    )
    t4 = _study(
        "ftrl_theory_table",
        {"table": "table4", "ds": [8, 32], "eta": 0.02, "families": ["inv", "flat"]},
    )
    q = _study("ftrl_quoted", {})
    assert (q["status"] == "quoted from the paper, not reproduced").all()
    assert 69.26 in set(q["value"])
    with pytest.raises(ValueError, match="^ftrl_theory_table: table must be"):
        get_kind("ftrl_theory_table").validate_cell({"table": "table5"})
    with pytest.raises(ValueError, match="^ftrl_theory_table: families must be one of"):
        get_kind("ftrl_theory_table").validate_cell({"table": "table4", "families": ["cubic"]})
    sim = _study("ftrl_linreg_sim", SIM_CELL, trials=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        socp = _study(
            "ftrl_socp_bound",
            {
                "kappas": [1.0, 10.0],
                "eta": 0.5,
                "n_uniform": 60,
                "n_log": 30,
                "optimize_iterations": 1,
            },
        )
    out = check_claims(
        "choquettechoo2023",
        {"f1": fig1, "t1": t1, "t2": t2, "t4": t4, "q": q, "sim": sim, "socp": socp},
    )
    claims = out["claims"]
    assert set(claims["passed"]) <= {"yes", "NO", "n/a"}
    # the caption's "orders of magnitude better as eta -> 1" is refuted by R(1) = 1
    caption = claims[claims["claim"].str.startswith("caption")]
    assert list(caption["passed"]) == ["NO"]
    kappa_one = claims[claims["claim"].str.contains("exact quadratic")]
    assert list(kappa_one["passed"]) == ["yes"]
    assert "fig2_slopes" in out and {"slope_sim", "slope_paper"} <= set(out["fig2_slopes"])


def test_socp_cross_check_reports_only_converged_solves(monkeypatch):
    """An SCS solve stopped at its cap is no check: NaN value, its status recorded."""
    import dpreg.theory.ftrl_socp as socp

    cell = {
        "kappas": [10.0],
        "eta": 0.5,
        "n_uniform": 40,
        "n_log": 20,
        "optimize_iterations": 1,
        "cross_check_kappas": [10.0],
    }
    k = get_kind("ftrl_socp_bound")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ok = k.run(cell, trials=1, first_trial=0, seed=1, data=None).set_index("mechanism")
        monkeypatch.setattr(socp, "SCS_MAX_ITERS", 5)  # far too few: SCS cannot converge
        capped = k.run(cell, trials=1, first_trial=0, seed=1, data=None).set_index("mechanism")
    for mech in ("sgd", "nu_ftrl"):
        assert ok.loc[mech, "cross_check_status"] == socp.CONVERGED
        assert ok.loc[mech, "bound_cross_check"] == pytest.approx(ok.loc[mech, "bound"], rel=1e-4)
        assert capped.loc[mech, "cross_check_status"] not in ("", socp.CONVERGED)
        assert np.isnan(capped.loc[mech, "bound_cross_check"])
        assert capped.loc[mech, "bound"] == ok.loc[mech, "bound"]  # CLARABEL untouched
    assert ok.loc["optimized", "cross_check_status"] == ""  # not cross-checked
    assert np.isnan(ok.loc["optimized", "bound_cross_check"])


def test_socp_cell_validation():
    k = get_kind("ftrl_socp_bound")
    with pytest.raises(ValueError, match="^ftrl_socp_bound: kappas must be >= 1"):
        k.validate_cell({"kappas": [0.5, 2.0]})
    with pytest.raises(ValueError, match="^ftrl_socp_bound: kappas must be a non-empty list"):
        k.validate_cell({"kappas": []})
    with pytest.raises(ValueError, match="^ftrl_socp_bound: multiplier must be one of"):
        k.validate_cell({"multiplier": "odd"})
    with pytest.raises(ValueError, match=r"^ftrl_socp_bound: eta \* L must be <= 1"):
        k.validate_cell({"eta": 2.0})


def test_table3_kind_and_claims():
    t3 = _study("ftrl_theory_table", {"table": "table3", "T": 10, "nu": 0.05})
    out = check_claims("choquettechoo2023", {"t3": t3})["claims"]
    me = out[out["claim"].str.startswith("ME")]
    assert list(me["passed"]) == ["yes"]
    with pytest.raises(ValueError, match="ME SDP is for small T"):
        get_kind("ftrl_theory_table").validate_cell(
            {"table": "table3", "T": 500, "me_solver": "sdp"}
        )
    with pytest.raises(ValueError, match="4096"):
        get_kind("ftrl_theory_table").validate_cell({"table": "table3", "T": 5000})
    assert t3.set_index("variant").loc["FFT", "built"]
    multi = _study(
        "ftrl_theory_table",
        {"table": "table3", "T": 10, "participations": 2, "separation": 5, "schema": "fixed_epoch"},
    )
    assert set(multi["participations"]) == {2}
    out = check_claims("choquettechoo2023", {"t3": multi})["claims"]
    assert list(out[out["claim"].str.startswith("ME")]["passed"]) == ["yes"]
    check = get_kind("ftrl_theory_table").validate_cell
    with pytest.raises(ValueError, match="separation"):
        check({"table": "table3", "T": 10, "participations": 2})
    with pytest.raises(ValueError, match="schema"):
        check({"table": "table3", "T": 10, "participations": 2, "separation": 2, "schema": "x"})
    with pytest.raises(ValueError, match="fixed_epoch"):
        check({"table": "table3", "T": 100, "participations": 2, "separation": 2})
    with pytest.raises(ValueError, match="multiple of the separation"):
        check(
            {
                "table": "table3",
                "T": 100,
                "participations": 2,
                "separation": 30,
                "schema": "fixed_epoch",
            }
        )


def test_finite_time_bounds_in_the_sim_table():
    cell = {**SIM_CELL, "initial_distance": 3.0, "tail_fraction": 0.1, "T": 400}
    table = _study("ftrl_linreg_sim", cell, trials=4)
    r = table[(table.mechanism == "sgd") & (table.d == 8)].iloc[0]
    lam = 1.0 / np.arange(1, 9)
    expected = theorem_d11_for(independent(), lam, 0.05, 400 - 40, initial_distance=3.0)
    assert r["bound_d11"] == pytest.approx(expected, rel=1e-12)
    assert np.all(table["bound_d13"] >= table["bound_d11"])
    assert np.all(table["bound_d11"] >= table["theory_upper"])  # transient > 0
    # from the optimum the bound is Theorem C.15's F_inf bound
    start = _study("ftrl_linreg_sim", SIM_CELL, trials=1)
    np.testing.assert_allclose(start["bound_d11"], start["theory_upper"], rtol=1e-12)
    with pytest.raises(ValueError, match="initial_distance"):
        get_kind("ftrl_linreg_sim").validate_cell({**SIM_CELL, "initial_distance": -1.0})


def _finite_time_table(mean_ftrl: float, bound_ftrl: float) -> pd.DataFrame:
    base = {"panel": "d", "d": 8, "alpha": 1.0, "eta": 0.05, "initial_distance": 1.0}
    return pd.DataFrame(
        [
            {**base, "mechanism": "sgd", "mean": 0.1, "se": 0.01, "bound_d11": 1.0},
            {
                **base,
                "mechanism": "nu_ftrl",
                "mean": mean_ftrl,
                "se": 0.01,
                "bound_d11": bound_ftrl,
            },
        ]
    )


@pytest.mark.parametrize(
    ("mean_ftrl", "bound_ftrl", "below", "ordered"),
    [
        (0.01, 0.5, "yes", "yes"),
        (0.53, 0.5, "NO", "yes"),
        (0.51, 0.5, "yes", "yes"),
        (0.01, 1.5, "yes", "NO"),
    ],
)
def test_finite_time_claims_pass_and_fail(mean_ftrl, bound_ftrl, below, ordered):
    claims = check({"s": _finite_time_table(mean_ftrl, bound_ftrl)})["claims"]
    got = dict(zip(claims["claim"], claims["passed"], strict=True))
    assert got["simulated error below the finite-time bound in every cell"] == below
    assert got["nu-DP-FTRL's finite-time bound below DP-SGD's"] == ordered


def test_fig2_slope_claims_skip_finite_time_studies():
    t = _finite_time_table(0.01, 0.5).assign(slope_sim=1.0, slope_lti=1.0, slope_rate=1.0)
    assert len(fig2_slope_table({"s": t})) == 0  # started away from the optimum: skipped
    assert len(fig2_slope_table({"s": t.assign(initial_distance=0.0)})) == 2
