"""Study kind ``lev_table2``: Lev et al. (2026) Table 2 computed and set beside the paper.

Paper values: ``data/lev2026_table2_paper.csv`` (docs/notes/lev2026.md §5.2). The
authors drew one random split (mask column or permutation) per dataset, so a value that
depends on the split is checked *within split noise*: the printed value must lie in the
range of ours over the 10 provided mask columns (mask datasets) or 10 permutation seeds,
widened by half a unit of the last printed digit (rounding). For the mask datasets one of
the 10 columns is the authors' split, so there the paper's eigenvalue must be reproduced
to the printed precision by one column.
"""

from __future__ import annotations

import functools
import math
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest

from dpreg.data import fetch, load_dataset
from dpreg.data.lev2026 import lev2026_kind
from dpreg.estimators.ihm import ihm_gamma, ihm_sketch_size
from dpreg.experiments.kinds import get_kind
from dpreg.experiments.lev2026_table2 import (
    KAPPA_DENOMINATOR,
    PAPER_COLUMNS,
    dataset_quantities,
    load_paper_table2,
    privacy_quantities,
    run_table2_cell,
    summarise_table2,
)

REPO = Path(__file__).resolve().parents[2]
# Small offline datasets whose default split has Table 2's n (two mask, one permutation).
DATASETS = ("lev_fertility", "lev_pendulum", "lev_concrete")
N_DRAWS = 10


@pytest.fixture(scope="module")
def fetcher(data_mirror, tmp_path_factory):
    dest = tmp_path_factory.mktemp("lev_table2")
    return functools.partial(fetch, dest_dir=dest, mirror=data_mirror, allow_download=False)


@pytest.fixture(scope="module")
def draws(fetcher):
    """Table 2 quantities of every dataset over the 10 splits / seeds."""
    out = {}
    for name in DATASETS:
        key = "split" if lev2026_kind(name) == "mask" else "seed"
        out[name] = [
            dataset_quantities(ds.X, ds.y)
            for ds in (
                load_dataset(name, fetcher=fetcher, bounds="data_derived", **{key: i})
                for i in range(N_DRAWS)
            )
        ]
    return out


@pytest.fixture(scope="module")
def table(fetcher):
    runs = [
        run_table2_cell(
            {"dataset": name, "epsilon": [0.65, 0.75], "T": 3},
            trials=1,
            first_trial=0,
            seed=7,
            data=load_dataset(name, fetcher=fetcher, bounds="data_derived"),
        )
        for name in DATASETS
    ]
    import pandas as pd

    return summarise_table2(pd.concat(runs, ignore_index=True), [])


def _half_unit(printed: str) -> float:
    """Half a unit of the last printed digit (``"0.076"`` -> 5e-4)."""
    return 0.5 * 10.0 ** Decimal(printed).as_tuple().exponent


# ------------------------------------------------------------------------ paper file


def test_paper_csv_is_packaged_and_complete():
    src = REPO / "data" / "lev2026_table2_paper.csv"
    pkg = REPO / "src" / "dpreg" / "experiments" / "lev2026_table2_paper.csv"
    assert src.read_bytes() == pkg.read_bytes()
    assert src.read_text().startswith("# ")
    paper = load_paper_table2()
    assert len(paper) == 33 and paper.index.is_unique
    assert paper.loc["lev_kin40k", "L_over_gamma_mix_1_plus_CY2"] == 39.1509
    assert paper.loc["lev_tecator", "L_over_n_below_1e-3"]
    assert math.isnan(paper.loc["lev_tecator", "L_over_n"])
    assert paper.loc["lev_autompg", "sqrt_kappa_over_2sqrt8_minus_1_printed"] == "0.250"
    for col in PAPER_COLUMNS:  # every cell is a number or the printed bound
        assert (paper[col].notna() | paper[f"{col}_below_1e-3"]).all()
    assert paper["sqrt_kappa_over_2sqrt8_minus_1"].max() == 0.782


def test_kind_is_registered():
    kind = get_kind("lev_table2")
    kind.check_keys("t", {"dataset", "epsilon", "T"})
    with pytest.raises(ValueError, match="epsilon"):
        kind.validate_cell({"dataset": "lev_solar", "epsilon": [0.65, -1.0]})


# ---------------------------------------------------------------- real data vs paper


def test_n_d_equal_the_paper(table):
    assert (table["n"] == table["n_paper"]).all()
    assert (table["d"] == table["d_paper"]).all()


@pytest.mark.parametrize("name", DATASETS)
@pytest.mark.parametrize("col", ["L_over_n", "lambda_min_X", "lambda_min_XY"])
def test_within_split_noise(name, col, draws):
    paper = load_paper_table2().loc[name]
    printed = paper[f"{col}_printed"]
    values = np.array([q[col] for q in draws[name]])
    tol = _half_unit(printed)
    assert values.min() - tol <= float(printed) <= values.max() + tol


@pytest.mark.parametrize("name", [n for n in DATASETS if lev2026_kind(n) == "mask"])
def test_one_mask_column_reproduces_lambda_min(name, draws):
    # The authors' split is one of the 10 columns: it reproduces the printed eigenvalues.
    paper = load_paper_table2().loc[name]
    for col in ("lambda_min_X", "lambda_min_XY"):
        printed = paper[f"{col}_printed"]
        values = np.array([q[col] for q in draws[name]])
        assert np.min(np.abs(values - float(printed))) <= _half_unit(printed)


def test_kappa_indicator_below_one(table):
    for eps in ("0.65", "0.75"):
        assert (table[f"kappa_indicator_eps{eps}"] < 1.0).all()
    # At the caption's epsilon it is near the printed column (docs/notes/lev2026.md §5.2:
    # it matches eps 0.63-0.65); lambda_max and lambda_min move with the split
    # (Concrete: +6%).
    assert (table["kappa_indicator_eps0.65_rel_diff"].abs() < 0.10).all()


def test_summary_and_figure(table):
    assert list(table["dataset"]) == sorted(DATASETS)
    assert {"resid_ratio_eps0.65", "resid_ratio_eps0.75_rel_diff", "L_over_n_rel_diff"} <= set(
        table.columns
    )
    fig = get_kind("lev_table2").figure(table, title="t")
    assert len(fig.axes) == 2
    import matplotlib.pyplot as plt

    plt.close(fig)


# -------------------------------------------------------------- synthetic, exact


def test_synthetic_design_with_known_eigenvalues():
    rng = np.random.default_rng(0)
    n, d = 400, 4
    Q, _ = np.linalg.qr(rng.standard_normal((n, d + 1)))
    U, r_dir = Q[:, :d], Q[:, d]
    sv = np.array([30.0, 20.0, 15.0, 12.0])  # singular values; eigenvalues sv**2
    V, _ = np.linalg.qr(rng.standard_normal((d, d)))
    X = U @ np.diag(sv) @ V.T
    r_norm2 = 50.0
    y = math.sqrt(r_norm2) * r_dir  # orthogonal to col(X): theta* = 0, L = ||y||^2
    q = dataset_quantities(X, y)
    assert (q["n"], q["d"]) == (n, d)
    np.testing.assert_allclose(q["lambda_min_X"], 144.0, rtol=1e-12)
    np.testing.assert_allclose(q["lambda_max_X"], 900.0, rtol=1e-12)
    # [X y]^T [X y] = blockdiag(X^T X, ||y||^2): lambda^XY_min = min(144, 50)
    np.testing.assert_allclose(q["lambda_min_XY"], 50.0, rtol=1e-12)
    np.testing.assert_allclose(q["L_over_n"], r_norm2 / n, rtol=1e-12)
    np.testing.assert_allclose(q["Y_sq_over_n"], r_norm2 / n, rtol=1e-12)
    assert q["theta_norm"] < 1e-12

    eps, T = 0.65, 3
    p = privacy_quantities(q, epsilon=eps, T=T)
    delta = 1.0 / n**2
    rho = delta / 10.0
    log_d, log_r = math.log(n**2), math.log(10.0 * n**2)
    g_mix = math.sqrt(max(d, log_r) * log_d) / eps
    g_hess = math.sqrt(T * max(d, log_r + math.log(T)) * log_d) / eps
    g_assp = math.sqrt(d * (log_r + 2 * math.log(d)) * log_d) / eps
    np.testing.assert_allclose([p["delta"], p["failure_prob"]], [delta, rho], rtol=1e-15)
    np.testing.assert_allclose(p["gamma_mix"], g_mix, rtol=1e-12)
    np.testing.assert_allclose(p["gamma_hess"], g_hess, rtol=1e-12)
    np.testing.assert_allclose(p["gamma_assp"], g_assp, rtol=1e-12)
    np.testing.assert_allclose(p["resid_ratio"], r_norm2 / (2.0 * g_mix), rtol=1e-12)
    k = ihm_sketch_size(d, T, rho)
    assert k == int(6 * max(d, math.log(4 * T / rho))) and p["k_ihm"] == k
    g_ihm = ihm_gamma(eps, delta, k, T)
    psi = max(0.0, g_ihm - 144.0)
    assert psi > 0  # gamma_IHM exceeds lambda_min here
    expected = math.sqrt((900.0 + psi) / (144.0 + psi)) / (2 * math.sqrt(8) - 1)
    np.testing.assert_allclose(p["kappa_indicator"], expected, rtol=1e-12)
    assert KAPPA_DENOMINATOR == 2 * math.sqrt(8) - 1
    # regimes: 144 is below gamma_hess and gamma_assp; lambda^XY = 50 vs 2 gamma_mix
    assert p["lambda_X_ge_gamma_hess"] is (144.0 >= g_hess)
    assert p["lambda_X_ge_gamma_assp"] is (144.0 >= g_assp)
    assert p["lambda_XY_ge_gamma_mix_scaled"] is (50.0 >= 2 * g_mix)

    # Scaled up, lambda_min exceeds every gamma: psi = 0, kappa = 900/144 exactly.
    big = dataset_quantities(100.0 * X, 100.0 * y)
    pb = privacy_quantities(big, epsilon=eps, T=T)
    assert pb["psi"] == 0.0
    np.testing.assert_allclose(pb["kappa_indicator"], 2.5 / KAPPA_DENOMINATOR, rtol=1e-10)
    assert pb["lambda_X_ge_gamma_assp"] and pb["lambda_X_ge_gamma_hess"]
    assert pb["lambda_XY_ge_gamma_mix_scaled"]

    # y in col(X): L = 0, lambda^XY_min = 0 (rank d), theta* recovered.
    theta = np.array([0.3, -0.2, 0.1, 0.05])
    qc = dataset_quantities(X, X @ theta)
    assert qc["L_over_n"] < 1e-20 and abs(qc["lambda_min_XY"]) < 1e-9
    np.testing.assert_allclose(qc["theta_norm"], np.linalg.norm(theta), rtol=1e-12)


def test_run_rows_and_columns():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((50, 3))
    X /= np.linalg.norm(X, axis=1).max()
    y = np.clip(rng.standard_normal(50), -1, 1)

    class _D:
        pass

    data = _D()
    data.X, data.y = X, y
    runs = run_table2_cell(
        {"dataset": "lev_servo", "epsilon": [0.65, 0.75]},
        trials=1,
        first_trial=3,
        seed=11,
        data=data,
    )
    assert len(runs) == 2 and set(runs["trial"]) == {3} and set(runs["seed"]) == {11}
    assert list(runs["epsilon"]) == [0.65, 0.75]
    # resid ratio scales as epsilon (gamma_mix proportional to 1/epsilon)
    ratio = runs["resid_ratio"].to_numpy()
    np.testing.assert_allclose(ratio[1] / ratio[0], 0.75 / 0.65, rtol=1e-12)
