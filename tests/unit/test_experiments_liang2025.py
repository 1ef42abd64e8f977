"""Study kinds of Liang et al. (2025): smoke runs, cell checks, summaries and figures.

The Section 4.1 DGP is tested in test_data_synthetic.py, the typed specs in
test_liang2025_params.py.
"""

from __future__ import annotations

import io
import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from dpreg.data.datasets import Dataset
from dpreg.data.preprocess import preprocess_liang2025
from dpreg.data.synthetic import IVLinearDGP, sample_iv_batch
from dpreg.estimators.ols import two_sls
from dpreg.experiments.kinds import STUDY_KINDS
from dpreg.experiments.liang2025_angrist import (
    check_iv_angrist_cell,
    run_iv_angrist,
    summarise_iv_angrist,
)
from dpreg.experiments.liang2025_bound import (
    check_iv_bound_cell,
    run_iv_bound_curve,
    summarise_iv_bound_curve,
)
from dpreg.experiments.liang2025_synthetic import (
    SYNTHETIC_DESIGN_COLUMNS,
    SYNTHETIC_METRICS,
    check_iv_synthetic_cell,
    run_iv_synthetic,
    summarise_iv_synthetic,
)

SMALL = {
    "algorithm": "dp_2s_gd",
    "n": 400,
    "p": 2,
    "q": 3,
    "r": 2,
    "T": 20,
    "c0": 4.0,
    "truth_seed": 7,
    "delta": 1e-5,
    "conversion": "simple",
}


def _csv_roundtrip(table: pd.DataFrame) -> pd.DataFrame:
    """The workflow writes tables as CSV and draws figures from the CSV."""
    buf = io.StringIO()
    table.to_csv(buf, index=False)
    buf.seek(0)
    return pd.read_csv(buf)


# ------------------------------------------------------------- the batched 2SLS


def test_two_sls_batch_matches_closed_form():
    dgp = IVLinearDGP.draw(rng=np.random.default_rng(1), p=2, q=3, r=2)
    truth = dgp.truth_batch()
    Z, X, y = sample_iv_batch(truth, n=300, trials=4, rng=np.random.default_rng(2))
    got = two_sls(Z=Z, X=X, y=y)
    for k in range(4):
        np.testing.assert_allclose(got[k], two_sls(y=y[k], X=X[k], Z=Z[k]), rtol=1e-9)


# ---------------------------------------------------------------------- iv_synthetic


def test_kinds_registered_with_their_keys():
    for name in ("iv_synthetic", "iv_angrist", "iv_bound_curve"):
        assert name in STUDY_KINDS
    kind = STUDY_KINDS["iv_synthetic"]
    kind.check_keys("s", {"algorithm", "n", "p", "q", "T", "rho_split", "c0", "metric"})
    with pytest.raises(ValueError, match="unknown key"):
        kind.check_keys("s", {"algorithm", "n", "p", "q", "T", "rho"})
    with pytest.raises(ValueError, match="needs key"):
        kind.check_keys("s", {"algorithm", "n", "p", "q"})


def test_synthetic_smoke_columns_and_budgets():
    runs = run_iv_synthetic(
        {**SMALL, "rho_split": [1, 9]}, trials=6, first_trial=12, seed=5, data=None
    )
    assert len(runs) == 6
    assert list(runs["trial"]) == list(range(12, 18))
    assert (runs["seed"] == 5).all()
    for col in (*SYNTHETIC_METRICS, *SYNTHETIC_DESIGN_COLUMNS, "T_max_theory"):
        assert col in runs.columns, col
    row = runs.iloc[0]
    assert (row["rho1"], row["rho2"], row["rho"]) == (1.0, 9.0, 10.0)
    assert row["epsilon"] == pytest.approx(31.4597, abs=1e-3)  # docs/notes/liang2025.md §3 (simple)
    assert row["rho_certified"] == pytest.approx(10.0)  # exact calibration
    assert row["clip_theta"] == pytest.approx(
        (math.sqrt(3) + math.sqrt(1 + math.log(8000))) ** 2 * 4
    )
    assert np.isfinite(runs[list(SYNTHETIC_METRICS)].to_numpy()).all()
    assert ((runs["clip_frac_beta_mean"] >= 0) & (runs["clip_frac_beta_mean"] <= 1)).all()
    # paper calibration: sqrt(2) more noise, half the certified budget
    # (docs/notes/liang2025.md §3.1)
    paper = run_iv_synthetic(
        {**SMALL, "rho_split": [1, 9], "calibration": "paper"},
        trials=2,
        first_trial=0,
        seed=5,
        data=None,
    )
    assert paper["rho_certified"].iloc[0] == pytest.approx(5.0)
    assert paper["lambda1"].iloc[0] == pytest.approx(math.sqrt(2) * row["lambda1"])


def test_non_private_algorithms():
    cell = {**SMALL, "algorithm": "2s_gd", "T": 400}
    runs = run_iv_synthetic(cell, trials=5, first_trial=0, seed=1, data=None)
    # 2S-GD converges to the 2SLS solution (docs/notes/liang2025.md §7, "2S-GD sanity")
    assert runs["err_hat"].max() < 1e-8
    np.testing.assert_allclose(runs["err_true"], runs["err_2sls"], atol=1e-8)
    assert math.isinf(runs["rho"].iloc[0]) and math.isinf(runs["epsilon"].iloc[0])
    tsls = run_iv_synthetic(
        {**cell, "algorithm": "2sls"}, trials=5, first_trial=0, seed=1, data=None
    )
    assert (tsls["err_hat"] == 0).all()
    # same seed, same data: the two algorithms see identical data sets
    np.testing.assert_allclose(tsls["err_2sls"], runs["err_2sls"])


def test_algorithm3_budget_columns():
    runs = run_iv_synthetic(
        {**SMALL, "algorithm": "dp_2s_gd_beta", "rho1": 1, "rho2": 2},
        trials=3,
        first_trial=0,
        seed=2,
        data=None,
    )
    row = runs.iloc[0]
    assert math.isinf(row["rho1"]) and row["rho2"] == 2.0  # no first-stage noise
    assert math.isinf(row["epsilon"])  # docs/notes/liang2025.md P8: no end-to-end rho2 guarantee
    assert row["rho_claimed"] == 2.0  # Lemma F.1's claim, kept for reference
    assert row["rho_certified"] == pytest.approx(SMALL["n"] ** 2 * 2.0)


def test_dp_error_shrinks_with_budget():
    errs = {}
    for rho in (1.0, 100.0):
        runs = run_iv_synthetic(
            {**SMALL, "rho_split": [rho, rho]}, trials=40, first_trial=0, seed=9, data=None
        )
        errs[rho] = runs["err_hat"]
    diff = errs[1.0].mean() - errs[100.0].mean()
    se = math.sqrt(errs[1.0].var() / 40 + errs[100.0].var() / 40)
    assert diff > 4 * se, (errs[1.0].mean(), errs[100.0].mean(), se)


def test_redraw_truth_per_trial():
    runs = run_iv_synthetic(
        {**SMALL, "redraw_truth": True, "rho_split": [5, 5]},
        trials=4,
        first_trial=0,
        seed=3,
        data=None,
    )
    assert runs["sigma_min_theta"].nunique() == 4
    assert runs["alpha"].nunique() == 4  # population steps follow each truth
    fixed = run_iv_synthetic({**SMALL, "rho_split": [5, 5]}, trials=4, first_trial=0, seed=3)
    assert fixed["sigma_min_theta"].nunique() == 1


def test_synthetic_cell_validation():
    check = check_iv_synthetic_cell
    check({**SMALL, "rho_split": [1, ".inf"]})
    for bad, match in (
        ({"algorithm": "ols"}, "algorithm"),
        ({"rho_split": [1]}, "rho_split"),
        ({"rho_split": [1, 1], "rho1": 1}, "not both"),
        ({"p": 4, "q": 3}, "q >= p"),
        ({"steps": "fixed"}, "eta and alpha"),
        ({"clip_theta": 1.0}, "clip_beta"),
        ({"metric": "mse"}, "metric"),
        ({"delta": 2.0}, "delta"),
    ):
        with pytest.raises(ValueError, match=match):
            check({**SMALL, **bad})


def test_synthetic_summary_and_figures():
    parts = []
    for n in (200, 400):
        for split in ([1, 9], [9, 1]):
            cell = {**SMALL, "n": n, "rho_split": split, "t_max_line": True, "metric": "both"}
            parts.append(run_iv_synthetic(cell, trials=4, first_trial=0, seed=n, data=None))
    runs = pd.concat(parts, ignore_index=True)
    runs.insert(0, "study", "s")  # the workflow adds this column
    table = summarise_iv_synthetic(runs, [])
    assert len(table) == 4 and (table["trials"] == 4).all()
    sub = runs[(runs["n"] == 200) & (runs["rho1"] == 1)]
    got = table[(table["n"] == 200) & (table["rho1"] == 1)].iloc[0]
    assert got["err_hat_mean"] == pytest.approx(sub["err_hat"].mean())
    assert got["err_hat_se"] == pytest.approx(sub["err_hat"].std() / 2)
    assert "wall_time_s" not in table.columns and "study" not in table.columns
    fig = STUDY_KINDS["iv_synthetic"].figure(_csv_roundtrip(table), title="smoke")
    assert len(fig.axes) == 2  # err_hat and err_true side by side
    plt.close(fig)
    # a T axis with the algorithm as facet (Fig. 6 layout)
    parts = [
        run_iv_synthetic(
            {**SMALL, "algorithm": alg, "T": T, "rho1": 1, "rho2": r2, "t_max_line": True},
            trials=2,
            first_trial=0,
            seed=T,
        )
        for alg in ("dp_2s_gd", "dp_2s_gd_beta")
        for T in (5, 10)
        for r2 in (0.1, 1.0)
    ]
    table = summarise_iv_synthetic(pd.concat(parts, ignore_index=True), [])
    fig = STUDY_KINDS["iv_synthetic"].figure(_csv_roundtrip(table), title="facets")
    assert len(fig.axes) == 2
    assert {ax.get_title() for ax in fig.axes} == {"DP-2S-GD (Alg. 1)", "DP-2S-GD-β (Alg. 3)"}
    plt.close(fig)


# ------------------------------------------------------------------------ iv_angrist


def _toy_angrist(n: int = 3000, seed: int = 0) -> Dataset:
    """A centred p = q = 1 IV sample resembling Angrist-Evans (binary z and x)."""
    rng = np.random.default_rng(seed)
    z = rng.integers(0, 2, n).astype(float)
    u = rng.standard_normal(n)
    x = (0.3 + 0.07 * z + 0.1 * u > rng.uniform(size=n)).astype(float)
    y = np.clip(20 - 5 * x + 8 * u + rng.normal(0, 5, n), 0, 52)
    ds = Dataset(name="toy", X=x[:, None], y=y, Z=z[:, None])
    return preprocess_liang2025(ds, n_subsample=n // 2, rng=np.random.default_rng(1))


def test_angrist_smoke_summary_and_figure():
    data = _toy_angrist()
    parts = []
    for rho in (1, 100):
        cell = {"dataset": "toy", "rho": rho, "T": 8, "delta": 1e-5, "conversion": "tight"}
        check_iv_angrist_cell(cell)
        parts.append(run_iv_angrist(cell, trials=60, first_trial=0, seed=rho, data=data))
    runs = pd.concat(parts, ignore_index=True)
    assert len(runs) == 120
    for t in range(1, 9):
        assert f"beta_{t}" in runs.columns and f"theta_{t}" in runs.columns
    np.testing.assert_allclose(runs["beta_T"], runs["beta_8"])
    assert (runs["rho1"] == runs["rho2"]).all()
    assert runs["clip_theta"].iloc[0] == pytest.approx(1.1)  # public ranges: 1 * (0.1 + 1)
    assert runs["clip_beta"].iloc[0] == pytest.approx(0.1 * (0.1 * 20 + 52))
    beta_2sls = two_sls(y=data.y, X=data.X, Z=data.Z)[0]
    assert runs["beta_2sls"].iloc[0] == pytest.approx(beta_2sls)
    ref = {"dataset": "toy", "two_sls": {"params": [beta_2sls], "std_errors": [1.0]}}
    table = summarise_iv_angrist(runs, [ref])
    final = table[table["quantity"] == "beta_final"].set_index("rho1")
    assert final.loc[1.0, "iqr"] > final.loc[100.0, "iqr"]  # docs/notes/liang2025.md §7
    assert final.loc[100.0, "beta_2sls_reference"] == pytest.approx(beta_2sls)
    assert final.loc[1.0, "runs"] == 60
    paths = table[table["quantity"] == "beta_path"]
    assert sorted(paths["t"].unique()) == list(range(1, 9))
    fig = STUDY_KINDS["iv_angrist"].figure(_csv_roundtrip(table), title="toy")
    assert len(fig.axes) == 3
    plt.close(fig)


def test_angrist_cell_options():
    data = _toy_angrist(800)
    c0 = run_iv_angrist(
        {"dataset": "toy", "rho": 10, "T": 5, "clip_rule": "c0_formula"},
        trials=2,
        first_trial=0,
        seed=0,
        data=data,
    )
    gamma = (1 + math.sqrt(1 + math.log(400 * 5))) ** 2
    assert c0["clip_beta"].iloc[0] == pytest.approx(gamma)
    with pytest.raises(ValueError, match="clip_rule: explicit"):
        check_iv_angrist_cell({"dataset": "toy", "rho": 1, "clip_theta": 1.0})
    with pytest.raises(ValueError, match="p = q = 1"):
        wide = Dataset(name="w", X=np.ones((10, 2)), y=np.ones(10), Z=np.ones((10, 2)))
        run_iv_angrist({"dataset": "w", "rho": 1}, trials=1, first_trial=0, seed=0, data=wide)


def test_preprocess_liang2025():
    ds = Dataset(
        name="d",
        X=np.arange(20.0)[:, None],
        y=np.arange(20.0) ** 2,
        Z=(np.arange(20) % 2.0)[:, None],
    )
    a = preprocess_liang2025(ds, n_subsample=8, rng=np.random.default_rng(4))
    b = preprocess_liang2025(ds, n_subsample=8, rng=np.random.default_rng(4))
    assert a.n == 8
    np.testing.assert_array_equal(a.X, b.X)
    np.testing.assert_allclose([a.X.mean(), a.Z.mean(), a.y.mean()], 0, atol=1e-12)
    steps = [s["step"] for s in a.preprocessing]
    assert steps[-2:] == ["subsample", "center"]
    assert all(s["data_derived_nonprivate"] for s in a.preprocessing[-2:])
    assert all("P17" in s["privacy"] for s in a.preprocessing[-2:])
    with pytest.raises(ValueError, match="n_subsample"):
        preprocess_liang2025(ds, n_subsample=21, rng=np.random.default_rng(0))


# --------------------------------------------------------------------- iv_bound_curve


def test_bound_curve_kind():
    cell = {"n": 10_000, "p": 5, "q": 5, "rho1": 1, "rho2": 1, "kappa": 0.8, "num": 60}
    check_iv_bound_cell(cell)
    runs = run_iv_bound_curve(cell, trials=1, first_trial=0, seed=0)
    assert len(runs) == 1
    assert runs["T2"].iloc[0] == pytest.approx(774.92, abs=0.01)
    table = summarise_iv_bound_curve(runs, [])
    assert len(table) == 60
    assert set(table["regime"]) == {"optimisation", "statistical", "privacy", "invalid"}
    fig = STUDY_KINDS["iv_bound_curve"].figure(_csv_roundtrip(table), title="Fig. 2")
    plt.close(fig)
