from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpreg.experiments.claims import check_claims, loglog_slope, papers_with_claims


def test_loglog_slope_recovers_a_power_law():
    n = np.array([250, 500, 1000, 2000, 4000])
    assert loglog_slope(n, 3.0 * n**-0.5) == pytest.approx(-0.5, abs=1e-12)
    assert np.isnan(loglog_slope(n[:1], n[:1]))


def _fig3a(exponent):
    n = np.array([250, 1000, 4000])
    return pd.DataFrame(
        {
            "n": np.tile(n, 2),
            "rho1": np.repeat([1.0, 9.0], 3),
            "rho2": np.repeat([9.0, 1.0], 3),
            "err_hat_mean": np.tile(2.0 * n**exponent, 2),
            "err_true_mean": np.tile(2.0 * n**exponent, 2),
        }
    )


@pytest.mark.parametrize(("exponent", "verdict"), [(-0.5, "yes"), (-1.0, "NO")])
def test_fig3a_slope_claim_passes_only_near_minus_one_half(exponent, verdict):
    claims = check_claims("liang2025", {"liang_fig3a": _fig3a(exponent)})["claims"]
    assert len(claims) == 4
    assert set(claims["passed"]) == {verdict}
    assert claims["value"].to_numpy() == pytest.approx(exponent)


def _angrist(rho, median, iqr, sd):
    return pd.DataFrame(
        [
            {
                "quantity": "beta_final",
                "rho1": rho,
                "rho2": rho,
                "n": 8065,
                "runs": 1000,
                "beta_2sls": -5.0,
                "se_2sls": 2.0,
                "median": median,
                "q25": median - iqr / 2,
                "q75": median + iqr / 2,
                "iqr": iqr,
                "mean": median,
                "sd": sd,
            }
        ]
    )


def test_angrist_claims_and_summary():
    tables = {
        "liang_fig8_angrist": _angrist(1, -9.0, 8.0, 6.0),
        "liang_fig5_angrist": _angrist(10, -6.0, 3.0, 2.0),
        "liang_fig9_angrist": _angrist(100, -5.3, 1.0, 0.5),
    }
    out = check_claims("liang2025", tables)
    summary = out["angrist_summary"]
    assert summary["rho1"].tolist() == [1, 10, 100]
    claims = out["claims"].set_index("source")
    assert claims.loc["Sec. 4.2, Figs. 5, 9", "passed"] == "yes"  # 0.3 <= sd 0.5
    assert claims.loc["Sec. 4.2, Figs. 5, 8, 9", "passed"] == "yes"
    tables["liang_fig9_angrist"] = _angrist(100, -6.0, 4.0, 0.5)  # off by 2 sd, wider IQR
    claims = check_claims("liang2025", tables)["claims"].set_index("source")
    assert claims.loc["Sec. 4.2, Figs. 5, 9", "passed"] == "NO"
    assert claims.loc["Sec. 4.2, Figs. 5, 8, 9", "passed"] == "NO"


def test_fig4a_upturn_needs_a_significant_rise():
    T = np.array([5, 20, 100, 1000])
    base = {"rho1": 0.1, "T": T, "T_max_theory": 17.4, "err_hat_se": 0.01}
    rising = pd.DataFrame({**base, "err_hat_mean": [1.0, 0.5, 0.6, 2.0]})
    flat = pd.DataFrame({**base, "err_hat_mean": [1.0, 0.5, 0.51, 0.505]})
    assert check_claims("liang2025", {"liang_fig4a": rising})["claims"]["passed"].item() == "yes"
    assert check_claims("liang2025", {"liang_fig4a": flat})["claims"]["passed"].item() == "NO"


def test_unknown_paper_is_an_error():
    assert "liang2025" in papers_with_claims()
    with pytest.raises(ValueError, match="no claim checks"):
        check_claims("nobody2030", {})


def _eps_table(means):
    rows = []
    for (dataset, estimator, eps), mean in means.items():
        rows.append(
            {"dataset": dataset, "estimator": estimator, "epsilon": eps, "mean": mean, "se": 0.001}
        )
    return pd.DataFrame(rows)


def test_lev2026_wins_and_majority_claim():
    means = {}
    for d in ("a", "b", "c"):
        for eps in (0.1, 10.0):
            means[(d, "ihm", eps)] = 1.0
            means[(d, "adassp", eps)] = 1.5 if d != "c" else 0.5
            means[(d, "linear_mixing", eps)] = 2.0
    out = check_claims("lev2026", {"lev_fig1": _eps_table(means)})
    wins = out["wins_figs1_3"].set_index(["epsilon", "estimator"])
    assert wins.loc[(0.1, "ihm"), "best"] == 2
    assert wins.loc[(0.1, "adassp"), "best"] == 1
    assert wins.loc[(0.1, "ihm"), "datasets"] == 3
    claims = out["claims"]
    majority = claims[claims["source"] == "Sec. 4.3, Figs. 1-3"]
    assert set(majority["passed"]) == {"yes"}
    assert majority["value"].to_numpy() == pytest.approx(2 / 3)


def test_lev2026_dpgd_claim_fails_when_dpgd_wins():
    means = {("a", "ihm", 1.0): 2.0, ("a", "dp_gd", 1.0): 1.0, ("b", "ihm", 1.0): 2.0}
    means[("b", "dp_gd", 1.0)] = 1.0
    claims = check_claims("lev2026", {"lev_fig4": _eps_table(means)})["claims"]
    row = claims[claims["source"] == "App. J, Figs. 4-5"]
    assert row["passed"].item() == "NO"
    assert row["value"].item() == 0.0


def test_lev2026_public_bounds_paired_with_data_derived():
    paper = _eps_table({("lev_pol", "ihm", 1.0): 0.5, ("lev_solar", "ihm", 1.0): 0.3})
    paper["relative_excess"] = [0.4, 0.2]
    public = _eps_table({("lev_pol_public", "ihm", 1.0): 0.1, ("lev_x_public", "ihm", 1.0): 1})
    public["relative_excess"] = [0.1, 9.0]
    out = check_claims("lev2026", {"lev_fig1": paper, "lev_public_bounds": public})
    paired = out["public_vs_data_derived"]
    assert paired["dataset"].tolist() == ["lev_pol"]  # lev_x has no data-derived twin
    assert paired["relative_excess_public"].item() == 0.1
    assert paired["relative_excess_data_derived"].item() == 0.4
    assert paired["ratio"].item() == pytest.approx(0.25)
    assert "public_vs_data_derived" not in check_claims("lev2026", {"lev_fig1": paper})
