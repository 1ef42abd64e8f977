"""eps_grid's ``variants``: two settings of one estimator side by side (issue 17)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from dpreg.data.datasets import Dataset
from dpreg.estimators.ihm import ihm_gamma, ihm_privacy_pieces, ihm_sigma, ihm_sketch_size
from dpreg.experiments.lev2026_claims import ihm_gamma_methods, lev2026_claims
from dpreg.experiments.regression import check_eps_grid_cell, summarise_eps_grid
from dpreg.experiments.studies import run_chunk


def _frame(n: int = 300, d: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1).max()
    y = np.clip(X @ np.array([0.5, -0.2, 0.1]) + 0.1 * rng.normal(size=n), -1, 1)
    return Dataset(name="toy", X=X, y=y).to_frame()


CELL = {
    "dataset": "toy",
    "estimator": ["ihm", "ihm_code"],
    "variants": {"ihm_code": "ihm"},
    "epsilon": [0.5, 4.0],
    "delta_rule": "inverse_n_squared",
    "hyper": {"ihm": {"T": 3}, "ihm_code": {"T": 3, "gamma_method": "code"}},
    "conversion": "tight",
}


def test_a_variant_runs_its_estimator_with_its_own_hyperparameters():
    blocks = [{"first_trial": 0, "trials": 4, "seed": 11}]
    runs = run_chunk("eps_grid", CELL, blocks=blocks, frame=_frame())
    assert set(runs["estimator"]) == {"ihm", "ihm_code"}
    used = {e: json.loads(h) for e, h in runs.groupby("estimator")["hyper"].first().items()}
    assert used["ihm_code"]["gamma_method"] == "code"
    assert "gamma_method" not in used["ihm"]
    n, d = 300, 3
    delta = 1 / n**2
    k = ihm_sketch_size(d, 3, delta / 10)
    for eps in (0.5, 4.0):
        exact = runs[(runs["estimator"] == "ihm") & (runs["epsilon"] == eps)]
        code = runs[(runs["estimator"] == "ihm_code") & (runs["epsilon"] == eps)]
        # the exact calibration spends its target; the code's gamma spends what its
        # noise certifies, recomputed here from gamma and sigma
        assert exact["spent_epsilon"].to_numpy() == pytest.approx(eps, rel=1e-9)
        g = ihm_gamma(eps, delta, k, 3, "code")
        s = ihm_sigma(eps, delta, 3, 1.0)
        certified = ihm_privacy_pieces(g, s, k=k, T=3, clip=1.0, delta=delta)["epsilon"]
        np.testing.assert_allclose(code["spent_epsilon"], certified, rtol=1e-12)
        assert certified < eps
        assert not np.allclose(exact["mse"].to_numpy(), code["mse"].to_numpy())
    table = summarise_eps_grid(runs, [{"dataset": "toy", "ols": {"mse": 0.01}}])
    assert "spent_epsilon" in table


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"variants": {"ihm_code": 3}}, r"variants.ihm_code: must name a registry estimator"),
        ({"variants": {"ihm_code": "ihmm"}}, r"estimator ihm_code: .*ihmm"),
        ({"variants": {"adassp": "ihm"}}, r"variants.adassp: 'adassp' is a registry name"),
        ({"variants": {"ihm_code": "ihm", "x": "ihm"}}, r"variants.x: not listed in `estimator`"),
        ({"estimator": ["ihm", "ihm_c"]}, r"ihm_c"),
        (
            {"hyper": {"ihm_code": {"gamma_methd": "code"}}},
            r"hyper.ihm_code: unknown hyperparameter\(s\) \['gamma_methd'\] for estimator 'ihm'",
        ),
    ],
)
def test_bad_variants_stop_the_dry_run(change, message):
    with pytest.raises(ValueError, match=message):
        check_eps_grid_cell({**CELL, **change})


def test_lev_claims_keep_ihm_code_out_of_the_wins_and_compare_it():
    rows = []
    for ds in ("lev_pol", "lev_solar"):
        for est, mean in (("ihm", 1.0), ("ihm_code", 0.5), ("adassp", 0.9), ("linear_mixing", 2)):
            rows.append({"dataset": ds, "estimator": est, "epsilon": 10.0, "mean": mean})
    table = pd.DataFrame(rows).assign(se=0.01, spent_epsilon=10.0)
    out = lev2026_claims({"lev_fig1": table})
    wins = out["wins_figs1_3"]
    assert "ihm_code" not in set(wins["estimator"])
    assert wins.set_index("estimator").loc["adassp", "best"] == 2  # ihm_code not a rival
    claims = out["claims"]
    pol = claims[claims["statistic"].str.startswith("MSE(LinMix)/MSE(")]
    assert sorted(pol["statistic"]) == [
        "MSE(LinMix)/MSE(ihm) at eps=10",
        "MSE(LinMix)/MSE(ihm_code) at eps=10",
    ]
    assert pol.set_index("statistic")["value"].to_dict() == {
        "MSE(LinMix)/MSE(ihm) at eps=10": 2.0,
        "MSE(LinMix)/MSE(ihm_code) at eps=10": 4.0,
    }
    paired = out["ihm_gamma_methods"]
    assert paired["difference"].tolist() == [-0.5, -0.5]
    assert paired["se"].to_numpy() == pytest.approx(np.hypot(0.01, 0.01))
    assert paired["relative_difference"].tolist() == [-0.5, -0.5]
    assert list(ihm_gamma_methods(table[table["estimator"] != "ihm_code"]).index) == []


def test_the_baselines_panels_are_not_repeated_for_ihm_code():
    rows = [
        {"dataset": "lev_concreteslump", "estimator": e, "epsilon": 10.0, "mean": m}
        for e, m in (("ihm", 1.0), ("ihm_code", 1.0), ("adassp", 0.5), ("linear_mixing", 2.0))
    ]
    claims = lev2026_claims({"lev_fig1": pd.DataFrame(rows).assign(se=0.01)})["claims"]
    assert (claims["claim"] == "Concrete Slump: AdaSSP <= LinMix").sum() == 1


def test_the_config_checks_a_variants_hyper_block_against_its_estimator():
    from pathlib import Path

    import yaml

    from dpreg.config import check_hyper_blocks

    smoke = yaml.safe_load(
        (Path(__file__).resolve().parents[2] / "config" / "smoke.yaml").read_text()
    )
    check_hyper_blocks(smoke)  # lev_fig1's ihm_code block is checked as ihm's
    smoke["studies"]["lev_fig1"]["params"]["hyper"]["ihm_code"]["T"] = 2.5
    with pytest.raises(ValueError, match=r"hyper.ihm.T: must be an integer; got 2.5"):
        check_hyper_blocks(smoke)


def test_lev_claims_check_ihm_code_in_figs_4_to_6_apart_from_ihm():
    def table(means: dict[str, float], datasets=("lev_a", "lev_b"), eps=(0.1, 1.0)):
        rows = [
            {"dataset": ds, "estimator": est, "epsilon": e, "mean": m}
            for ds in datasets
            for e in eps
            for est, m in means.items()
        ]
        return pd.DataFrame(rows).assign(se=0.01)

    # Figs. 4-5: ihm loses to DP-GD everywhere, ihm_code wins everywhere
    fig4 = table({"ihm": 2.0, "ihm_code": 0.5, "adassp": 1.0, "linear_mixing": 3, "dp_gd": 1.5})
    # Figs. 1-3 (T = 3) and Fig. 6 (T = 2): the T = 2 gap shrinks for ihm, grows for ihm_code
    fig1 = table({"ihm": 2.0, "ihm_code": 1.0, "adassp": 1.0, "linear_mixing": 3.0})
    fig6 = table({"ihm": 1.5, "ihm_code": 1.2, "adassp": 1.0, "linear_mixing": 3, "dp_gd": 2})
    out = lev2026_claims({"lev_fig1": fig1, "lev_fig4": fig4, "lev_fig6": fig6})
    assert "ihm_code" not in set(out["wins_figs4_5"]["estimator"])
    assert "ihm_code" not in set(out["wins_figs1_3"]["estimator"])
    assert set(out["wins_figs1_3_ihm_code"]["estimator"]) == {"ihm", "adassp", "linear_mixing"}
    claims = out["claims"].set_index("statistic")
    dpgd = claims.loc["share of (dataset, eps) cells with MSE(ihm) < MSE(DP-GD)"]
    dpgd_code = claims.loc["share of (dataset, eps) cells with MSE(ihm_code) < MSE(DP-GD)"]
    assert (dpgd["value"], dpgd["passed"]) == (0.0, "NO")
    assert (dpgd_code["value"], dpgd_code["passed"]) == (1.0, "yes")
    assert "ihm_code: IHM with the authors' gamma" in dpgd_code["claim"]
    t2 = "share of datasets where MSE({})-MSE(AdaSSP) at eps<=1 is smaller at T=2"
    assert claims.loc[t2.format("ihm"), "value"] == 1.0
    assert claims.loc[t2.format("ihm_code"), "value"] == 0.0
    assert out["ihm_gamma_methods_t2"]["difference"].tolist() == pytest.approx([-0.3] * 4)
