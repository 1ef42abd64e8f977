"""Study kind ``iv_table``: DP-2S-GD with its public rule on a user's table (issue 16)."""

from __future__ import annotations

import copy
import hashlib
import json
import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
import yaml

from dpreg.config import check_config_references, study_cells
from dpreg.data import load_table, table_scaling
from dpreg.data.examples import example_table_csv, example_table_path
from dpreg.estimators.iv_methods import PublicIVInputs, dp_2s_gd_rule, fit_iv_method
from dpreg.experiments import dpreg_iv_table
from dpreg.experiments.claims import check_claims
from dpreg.experiments.dpreg_iv_table import (
    INTERCEPT_TERM,
    IV_TABLE,
    IVTableParams,
    run_iv_table,
    summarise_iv_table,
)
from dpreg.experiments.kinds import get_kind
from dpreg.experiments.studies import run_chunk
from dpreg.privacy.conversions import eps_to_zcdp
from dpreg.results import nonprivate_columns

CODEBOOK = {
    "description": "a toy IV design: y on x, instrumented by z1 and z2",
    "response": "y",
    "features": ["x"],
    "instruments": ["z1", "z2"],
    "intercept": True,
    "out_of_range": "clip",
    "missing": "refuse",
    "columns": {
        "y": {"range": [-5.0, 15.0]},
        "x": {"range": [0.0, 20.0]},
        "z1": {"range": [0.0, 10.0]},
        "z2": {"range": [0.0, 10.0]},
    },
}


def _write_table(tmp_path, *, n=400, seed=0, name="toy", intercept=True, instruments=True):
    """A CSV whose values lie inside the codebook's ranges, and its codebook."""
    rng = np.random.default_rng(seed)
    z = rng.uniform(0.0, 10.0, size=(n, 2))
    u = rng.uniform(-1.0, 1.0, size=n)  # confounder: OLS of y on x is biased
    x = np.clip(0.8 * z.sum(axis=1) + 2.0 * u + rng.uniform(-1, 1, size=n), 0.0, 20.0)
    y = np.clip(1.0 + 0.5 * x + 2.0 * u, -5.0, 15.0)
    frame = pd.DataFrame({"y": y, "x": x, "z1": z[:, 0], "z2": z[:, 1]})
    book = copy.deepcopy(CODEBOOK)
    book["intercept"] = intercept
    if not instruments:
        del book["instruments"]
        for col in ("z1", "z2"):
            del book["columns"][col]
    csv = tmp_path / f"{name}.csv"
    frame.to_csv(csv, index=False, float_format="%.10g")
    yml = tmp_path / f"{name}.yaml"
    yml.write_text(yaml.safe_dump(book, sort_keys=False))
    return csv, yml, frame


@pytest.fixture
def toy(tmp_path):
    csv, yml, frame = _write_table(tmp_path)
    return load_table(csv, yml, name="toy"), pd.read_csv(csv)


CELL = {"dataset": "toy", "epsilon": [1.0, 10.0], "intercept": True, "conversion": "tight"}


def _two_sls_original(frame: pd.DataFrame) -> tuple[float, float]:
    """2SLS with an intercept in original units, by two least-squares stages (numpy only)."""
    ones = np.ones(len(frame))
    Z = np.column_stack([ones, frame["z1"], frame["z2"]])
    x_hat = Z @ np.linalg.lstsq(Z, frame["x"].to_numpy(), rcond=None)[0]
    b0, b1 = np.linalg.lstsq(np.column_stack([ones, x_hat]), frame["y"].to_numpy(), rcond=None)[0]
    return float(b1), float(b0)


# ------------------------------------------------------------------------------- rows


def test_rows_of_a_small_table(toy):
    data, raw = toy
    rows = run_iv_table(CELL, trials=6, first_trial=10, seed=123, data=data)
    assert len(rows) == 12
    assert list(rows["trial"][:6]) == list(range(10, 16))
    assert (rows["seed"] == 123).all() and list(rows["epsilon"].unique()) == [1.0, 10.0]
    n = data.n
    assert (rows["delta"] == 1.0 / n**2).all() and (rows["n"] == n).all()
    assert json.loads(rows["features"].iloc[0]) == ["x"]
    for eps, part in rows.groupby("epsilon"):
        rho = eps_to_zcdp(eps, 1.0 / n**2, method="tight")
        assert part["rho"].iloc[0] == pytest.approx(rho, rel=1e-12)
        assert (part["rho1"] + part["rho2"]).iloc[0] == pytest.approx(rho, rel=1e-12)
        # certified in both units, at most the target
        assert (part["spent_epsilon"] <= eps * (1 + 1e-9)).all()
        assert part["spent_epsilon"].iloc[0] == pytest.approx(eps, rel=1e-6)
        assert (part["spent_rho"] <= rho * (1 + 1e-9)).all()
        assert (part["spent_delta"] == part["delta"]).all()
        assert part["budget_unit"].iloc[0] == "epsilon_delta"
    # 2SLS of the same rows, mapped back by the codebook, equals 2SLS on the raw table
    b1, b0 = _two_sls_original(raw)
    assert rows["coef_2sls_x"].iloc[0] == pytest.approx(b1, rel=1e-9)
    assert rows["intercept_2sls"].iloc[0] == pytest.approx(b0, rel=1e-9, abs=1e-9)
    assert np.allclose(rows["distance_2sls"], np.abs(rows["coef_x"] - rows["coef_2sls_x"]))
    # the release, mapped back with the codebook's public scaling
    fit = fit_iv_method(
        "dp_2s_gd", data.Z, data.X, data.y, epsilon=10.0, delta=1.0 / n**2,
        rng=np.random.default_rng([123, 1]), trials=6, intercept=True,
    )  # fmt: skip
    coef, icpt = table_scaling(data).to_original(fit.theta, fit.intercept)
    at10 = rows[rows["epsilon"] == 10.0]
    np.testing.assert_array_equal(at10["coef_x"].to_numpy(), coef[:, 0])
    np.testing.assert_array_equal(at10["intercept_coef"].to_numpy(), icpt)
    # clip fractions are the only columns outside the guarantee, and named so
    assert nonprivate_columns(rows.columns) == [
        "clip_frac_theta_mean", "clip_frac_theta_last", "clip_frac_beta_mean",
        "clip_frac_beta_last",
    ]  # fmt: skip
    assert rows[nonprivate_columns(rows.columns)].apply(lambda c: c.between(0, 1)).all().all()


def test_the_estimate_moves_towards_2sls_on_a_strong_design(tmp_path):
    csv, yml, raw = _write_table(tmp_path, n=20000, seed=3)
    data = load_table(csv, yml, name="big")
    cell = {"dataset": "big", "epsilon": [1000.0], "intercept": True}
    rows = run_iv_table(cell, trials=20, first_trial=0, seed=1, data=data)
    b1, _ = _two_sls_original(raw)
    ols = np.polyfit(raw["x"], raw["y"], 1)[0]
    mean, se = rows["coef_x"].mean(), rows["coef_x"].std(ddof=1) / math.sqrt(20)
    # closer to 2SLS (0.5 by design) than OLS is (biased by the confounder)
    assert abs(mean - b1) + 3 * se < abs(ols - b1)


def test_trials_run_as_one_vectorised_call_per_epsilon(toy, monkeypatch):
    data, _ = toy
    calls = []
    real = dpreg_iv_table.fit_iv_method

    def spy(*args, **kwargs):
        calls.append(kwargs["trials"])
        return real(*args, **kwargs)

    monkeypatch.setattr(dpreg_iv_table, "fit_iv_method", spy)
    run_iv_table(CELL, trials=7, first_trial=0, seed=1, data=data)
    assert calls == [7, 7]


def test_two_chunkings_give_identical_rows(toy):
    data, _ = toy
    frame = data.to_frame()

    def rows(chunk_size: int, block: int) -> pd.DataFrame:
        config = {
            "seed": 5,
            "conversion": "tight",
            "datasets": {"toy": {"loader": "table"}},
            "studies": {
                "s": {"kind": "iv_table", "trials": 8, "chunk_size": chunk_size,
                      "seed_block": block, "grid": {"dataset": ["toy"]},
                      "params": {"epsilon": [1.0, 10.0], "intercept": True}},
            },
        }  # fmt: skip
        parts = [
            run_chunk("iv_table", cell.params(config), blocks=cell.seeded_blocks(5), frame=frame)
            for cell in study_cells(config, "s")
        ]
        out = pd.concat(parts, ignore_index=True)
        return out.sort_values(["epsilon", "trial"], kind="stable").reset_index(drop=True)

    one, two = rows(8, 4), rows(4, 4)
    pd.testing.assert_frame_equal(one, two)
    assert len(one) == 16
    other = rows(8, 8)  # other seed blocks draw other numbers
    assert not np.array_equal(one["coef_x"], other["coef_x"])


def test_the_public_rule_reads_no_data(tmp_path):
    """Two tables of the same sizes: every hyperparameter and budget column is the same."""
    a = load_table(*_write_table(tmp_path, seed=1, name="a")[:2], name="a")
    b = load_table(*_write_table(tmp_path, seed=2, name="b")[:2], name="b")
    assert not np.array_equal(a.X, b.X)
    cell = {**CELL, "dataset": "a"}
    ra = run_iv_table(cell, trials=3, first_trial=0, seed=9, data=a)
    rb = run_iv_table(cell, trials=3, first_trial=0, seed=9, data=b)
    public = ["epsilon", "delta", "rho", "rho1", "rho2", "T", "hyper", "spent_epsilon",
              "spent_delta", "spent_rho", "n", "p", "q"]  # fmt: skip
    pd.testing.assert_frame_equal(ra[public], rb[public])
    assert not np.array_equal(ra["coef_x"], rb["coef_x"])
    n = a.n
    for eps, part in ra.groupby("epsilon"):
        rule = dp_2s_gd_rule(PublicIVInputs(n=n, p=2, q=3, epsilon=eps, delta=1.0 / n**2))
        assert json.loads(part["hyper"].iloc[0]) == json.loads(json.dumps(rule))
        assert int(part["T"].iloc[0]) == rule["T"]


def test_a_given_delta_is_used(toy):
    data, _ = toy
    rows = run_iv_table({**CELL, "delta": 1e-6}, trials=2, first_trial=0, seed=1, data=data)
    assert (rows["delta"] == 1e-6).all() and (rows["spent_delta"] == 1e-6).all()


# ------------------------------------------------------------------------- bad values


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("epsilon", -1.0, r"^iv_table: epsilon must be > 0"),
        ("epsilon", [1.0, math.inf], r"^iv_table: epsilon must be > 0 and finite"),
        ("epsilon", "1", r"^iv_table: epsilon must be float"),
        ("epsilon", [1.0, 1.0], r"^iv_table: epsilon lists a value twice"),
        ("delta", 1.5, r"^iv_table: delta must lie in \(0, 1\)"),
        ("theta_share", 1.0, r"^iv_table: theta_share must lie in \(0, 1\)"),
        ("method", "dp_2s_gd_beta", r"^iv_table: method must be one of \['dp_2s_gd'\]"),
        ("intercept", "yes", r"^iv_table: intercept must be bool"),
        ("dataset", 3, r"^iv_table: dataset must be str"),
    ],
)
def test_bad_values_are_refused_naming_the_key(key, value, message):
    with pytest.raises(ValueError, match=message):
        IV_TABLE.validate_cell({**CELL, key: value})


def test_unknown_and_missing_keys_are_named():
    kind = get_kind("iv_table")
    with pytest.raises(ValueError, match=r"unknown key\(s\) \['T'\] for kind 'iv_table'"):
        kind.check_keys("s", {"dataset", "epsilon", "T"})
    with pytest.raises(ValueError, match=r"needs key\(s\) \['epsilon'\]"):
        kind.check_keys("s", {"dataset"})
    with pytest.raises(ValueError, match=r"missing key\(s\) \['epsilon'\]"):
        IVTableParams.from_cell({"dataset": "toy"})


def test_a_dataset_the_kind_cannot_use_is_refused(tmp_path, toy):
    data, _ = toy
    with pytest.raises(ValueError, match="set intercept: true"):
        run_iv_table({**CELL, "intercept": False}, trials=2, first_trial=0, seed=1, data=data)
    no_z = load_table(*_write_table(tmp_path, name="noz", instruments=False)[:2], name="noz")
    with pytest.raises(ValueError, match="has no instruments: list them under instruments:"):
        run_iv_table(CELL, trials=2, first_trial=0, seed=1, data=no_z)
    plain = data.with_(preprocessing=())
    with pytest.raises(ValueError, match="not a table loaded with a codebook"):
        run_iv_table(CELL, trials=2, first_trial=0, seed=1, data=plain)
    with pytest.raises(ValueError, match="needs a dataset"):
        run_iv_table(CELL, trials=2, first_trial=0, seed=1, data=None)


def test_without_an_intercept_the_intercept_columns_are_zero(tmp_path):
    csv, yml, _ = _write_table(tmp_path, name="flat", intercept=False)
    data = load_table(csv, yml, name="flat")
    rows = run_iv_table({**CELL, "intercept": False}, trials=3, first_trial=0, seed=1, data=data)
    assert (rows["intercept_coef"] == 0).all() and (rows["intercept_2sls"] == 0).all()
    table = summarise_iv_table(rows)
    assert list(table["term"].unique()) == ["x"]


# ------------------------------------------------------------------------------ summary


def _runs(values, distances, epsilon=1.0):
    k = len(values)
    return pd.DataFrame(
        {
            "trial": np.arange(k), "seed": 1, "stream": 0, "dataset": "toy",
            "method": "dp_2s_gd", "estimator": "dp_2s_gd", "n": 100, "p": 1, "q": 2,
            "intercept": True, "features": json.dumps(["x"]), "epsilon": epsilon,
            "delta": 1e-4, "rho": 0.1, "budget_unit": "epsilon_delta", "conversion": "tight",
            "theta_share": 0.5, "rho1": 0.05, "rho2": 0.05, "T": 20, "hyper": "{}",
            "spent_epsilon": epsilon, "spent_delta": 1e-4, "spent_rho": 0.1,
            "coef_x": values, "intercept_coef": np.ones(k), "coef_2sls_x": 2.0,
            "intercept_2sls": 0.5, "distance_2sls": distances,
            "clip_frac_theta_mean": 0.0, "clip_frac_theta_last": 0.0,
            "clip_frac_beta_mean": 0.25, "clip_frac_beta_last": 0.0,
        }
    )  # fmt: skip


def test_the_summary_derives_se_bias_and_rmse():
    table = summarise_iv_table(_runs([1.0, 2.0, 3.0, 4.0], [1.0, 0.0, 1.0, 2.0]))
    assert list(table["term"]) == ["x", INTERCEPT_TERM]
    assert list(table["role"]) == ["endogenous", "intercept"]
    row = table.iloc[0]
    sd = math.sqrt(5.0 / 3.0)  # of 1, 2, 3, 4
    assert row["trials"] == 4
    assert row["mean"] == 2.5 and row["sd"] == pytest.approx(sd)
    assert row["se"] == pytest.approx(sd / 2.0)  # sd / sqrt(4)
    assert row["median"] == 2.5 and row["two_sls"] == 2.0 and row["bias"] == 0.5
    assert row["rmse_term"] == pytest.approx(math.sqrt((1 + 0 + 1 + 4) / 4))
    # distance 1, 0, 1, 2: mean 1, sd sqrt(2/3); D^2 = 1, 0, 1, 4: mean 1.5, sd sqrt(3)
    assert row["distance_2sls_mean"] == 1.0
    assert row["distance_2sls_sd"] == pytest.approx(math.sqrt(2.0 / 3.0))
    assert row["distance_2sls_se"] == pytest.approx(math.sqrt(2.0 / 3.0) / 2.0)
    assert row["rmse_2sls"] == pytest.approx(math.sqrt(1.5))
    assert row["rmse_2sls_se"] == pytest.approx((math.sqrt(3.0) / 2.0) / (2 * math.sqrt(1.5)))
    assert row["clip_frac_beta_mean"] == 0.25 and row["spent_epsilon"] == 1.0
    icpt = table.iloc[1]
    assert icpt["mean"] == 1.0 and icpt["sd"] == 0.0 and icpt["two_sls"] == 0.5
    # the per-epsilon columns repeat on every term's row
    assert icpt["distance_2sls_mean"] == 1.0
    assert set(nonprivate_columns(table.columns)) == {"clip_frac_theta_mean",
                                                      "clip_frac_beta_mean"}  # fmt: skip


def test_the_summary_of_the_kind_rows_is_deterministic(toy):
    data, _ = toy
    rows = run_iv_table(CELL, trials=5, first_trial=0, seed=2, data=data)
    one, two = summarise_iv_table(rows), summarise_iv_table(rows.sample(frac=1, random_state=0))
    pd.testing.assert_frame_equal(one, two)
    assert len(one) == 4  # two epsilons x (x, intercept)


# ------------------------------------------------------------------------------- figure


def test_the_figure_draws_each_regressor_against_epsilon(toy):
    data, _ = toy
    table = summarise_iv_table(run_iv_table(CELL, trials=5, first_trial=0, seed=2, data=data))
    fig = IV_TABLE.figure(table, title="toy")
    try:
        assert len(fig.axes) == 1
        ax = fig.axes[0]
        assert ax.get_xscale() == "log"
        two_sls = float(table["two_sls"].iloc[0])
        assert any(np.allclose(line.get_ydata(), two_sls) for line in ax.get_lines())
        assert "coefficient of x" in ax.get_ylabel()
    finally:
        plt.close(fig)


# ------------------------------------------------------------------------------- claims


def _claim_table(distances, ses, spent=None):
    eps = [0.3, 1.0, 10.0][: len(distances)]
    return pd.DataFrame(
        {
            "dataset": "toy", "method": "dp_2s_gd", "epsilon": eps, "delta": 1e-4,
            "term": "x", "role": "endogenous", "two_sls": 0.05, "distance_2sls_mean": distances,
            "distance_2sls_se": ses, "spent_epsilon": spent if spent is not None else eps,
            "spent_delta": 1e-4,
        }
    )  # fmt: skip


def test_the_claims_pass_on_a_shrinking_distance_and_fail_otherwise():
    good = check_claims("dpreg", {"s": _claim_table([0.2, 0.1, 0.03], [0.01, 0.01, 0.005])})
    rows = good["iv_table"]
    assert list(rows["passed"]) == ["yes", "yes"]
    assert rows["value"].iloc[1] == pytest.approx(0.07 / math.hypot(0.01, 0.005))
    flat = check_claims("dpreg", {"s": _claim_table([0.2, 0.1, 0.095], [0.01, 0.01, 0.01])})
    assert list(flat["iv_table"]["passed"]) == ["yes", "NO"]  # 0.005 is within 2 SE
    over = check_claims("dpreg", {"s": _claim_table([0.2, 0.1], [0.01, 0.01], spent=[0.3, 1.01])})
    assert list(over["iv_table"]["passed"]) == ["NO", "yes"]
    one = check_claims("dpreg", {"s": _claim_table([0.2], [0.01])})
    assert len(one["iv_table"]) == 1  # one epsilon: no distance claim


# ------------------------------------------------------------------------------- config


@pytest.mark.parametrize("name", ["smoke.yaml", "config.yaml"])
def test_the_configs_run_the_study_on_the_pinned_mroz_export(repo_root, name):
    config = yaml.safe_load((repo_root / "config" / name).read_text())
    options = config["datasets"]["mroz_user"]["options"]
    text = example_table_csv("mroz")
    assert hashlib.sha256(text.encode("utf-8")).hexdigest() == options["sha256"]
    assert options["path"] == example_table_path("mroz")
    book = (repo_root / options["codebook"]).read_bytes()
    assert hashlib.sha256(book).hexdigest() == options["codebook_sha256"]
    study = config["studies"]["iv_user_table"]
    assert study["kind"] == "iv_table" and study["paper"] == "dpreg"
    assert study["grid"]["dataset"] == ["mroz_user"]


def test_the_dry_run_check_wants_the_intercept_the_codebook_declares(repo_root, monkeypatch):
    monkeypatch.chdir(repo_root)
    config = yaml.safe_load((repo_root / "config" / "smoke.yaml").read_text())
    config["studies"] = {"iv_user_table": config["studies"]["iv_user_table"]}
    check_config_references(config)
    del config["studies"]["iv_user_table"]["params"]["intercept"]
    with pytest.raises(ValueError, match="'mroz_user' is a table whose codebook declares"):
        check_config_references(config)
