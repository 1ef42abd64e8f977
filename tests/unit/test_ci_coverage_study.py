"""Study kind ci_coverage: its truth, its OLS reference, its rows, summary and claims."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpreg.data.regimes import load_regime_split, regime_bounds, regime_theta
from dpreg.experiments import ci_coverage as kind
from dpreg.experiments.dpreg_claims import check
from dpreg.inference import bootstrap
from dpreg.inference.bootstrap import CheckedRegime
from dpreg.inference.coverage import ols_interval_half_width


def test_regime_theta_is_the_loaders_truth():
    # Without noise, rows that were not projected satisfy y_b = x_b' theta C_X / C_Y exactly.
    d, seed = 4, 17
    train, _ = load_regime_split(n=400, d=d, n_test=1, sigma=0.0, seed=seed)
    bx, by = regime_bounds(d=d, sigma=0.0)
    inside = np.linalg.norm(train.X, axis=1) < 1.0 - 1e-12
    inside &= np.abs(train.y) < 1.0 - 1e-12
    coef = np.linalg.lstsq(train.X[inside], train.y[inside], rcond=None)[0]
    np.testing.assert_allclose(coef, regime_theta(d=d, seed=seed) * bx / by, atol=1e-10)


def test_population_scale_is_the_bounded_coefficient_along_theta():
    # d = 10: rows are almost never projected (P(chi2_10 > 40) ~ 2e-5) and y is clipped
    # beyond 3 sd only, so kappa is a little below the unclipped C_X / C_Y; the draw's
    # coefficient is parallel to theta up to Monte Carlo error.
    d, sigma = 10, 0.5
    kappa, se = kind.population_scale(d, sigma, "gaussian", 500_000)
    bx, by = regime_bounds(d=d, sigma=sigma)
    assert 0.97 * bx / by < kappa < bx / by
    assert se < 0.003
    rows, _ = load_regime_split(n=250_000, d=d, n_test=1, sigma=sigma, seed=99)
    coef = np.linalg.solve(rows.X.T @ rows.X, rows.X.T @ rows.y)
    theta = regime_theta(d=d, seed=99)
    along = coef @ theta
    assert abs(along - kappa) < 5 * se * math.sqrt(2)  # one block against the mean of two
    assert np.linalg.norm(coef - along * theta) < 0.01


def test_ols_half_width_is_statsmodels_interval():
    train, _ = load_regime_split(n=300, d=3, n_test=1, seed=4)
    ols, half = kind.ols_half_width(train.X, train.y, 0.05)
    np.testing.assert_allclose(half, ols_interval_half_width(train.X, train.y, 0.05), rtol=1e-9)
    np.testing.assert_allclose(ols, np.linalg.lstsq(train.X, train.y, rcond=None)[0], rtol=1e-9)


CELL = {"n": 400, "d": 2, "epsilon": 3.0, "replicates": 30, "population_draws": 20_000}


@pytest.mark.parametrize("estimator", ["adassp", "ihm"])
def test_rows_are_deterministic_and_independent_of_chunking(estimator):
    cell = {**CELL, "estimator": estimator}
    whole = kind.run_ci_coverage(cell, trials=4, first_trial=0, seed=7, data=None)
    parts = pd.concat(
        [
            kind.run_ci_coverage(cell, trials=2, first_trial=0, seed=7, data=None),
            kind.run_ci_coverage(cell, trials=2, first_trial=2, seed=7, data=None),
        ],
        ignore_index=True,
    )
    pd.testing.assert_frame_equal(whole, parts)
    targets = {"adassp": ["empirical", "population"], "ihm": ["empirical"]}[estimator]
    assert sorted(whole["target"].unique()) == targets
    assert len(whole) == 4 * len(targets)
    assert whole["covered"].between(0, 1).all() and (whole["length"] > 0).all()
    assert (whole["spent_epsilon"] <= 3.0 * (1 + 1e-9)).all()
    other = kind.run_ci_coverage(cell, trials=4, first_trial=0, seed=8, data=None)
    assert not np.array_equal(whole["length"], other["length"])


def test_ihm_rows_with_the_reference_passes_equal_the_certified_kernels(monkeypatch):
    """The study fits IHM with kernel="rows" (fresh data per trial: the certificate's set-up
    never pays); its rows equal those of the certified kernel to rounding, same draws."""
    cell = {**CELL, "n": 2000, "d": 3, "estimator": "ihm", "replicates": 50}
    rows = kind.run_ci_coverage(cell, trials=6, first_trial=0, seed=3, data=None)
    real = kind.get_estimator
    seen = []

    def certified(name):
        estimator = real(name)

        def fit(*args, **kw):
            seen.append(kw["kernel"])
            return estimator(*args, **{**kw, "kernel": "fast"})

        return fit

    monkeypatch.setattr(kind, "get_estimator", certified)
    fast = kind.run_ci_coverage(cell, trials=6, first_trial=0, seed=3, data=None)
    assert seen == ["rows"] * 6
    exact = [c for c in rows.columns if c != "length"]
    pd.testing.assert_frame_equal(rows[exact], fast[exact])
    np.testing.assert_allclose(rows["length"], fast["length"], rtol=1e-12, atol=0)


def test_the_study_computes_unchecked_cells_without_warnings():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kind.run_ci_coverage({**CELL, "estimator": "adassp"}, trials=1, first_trial=0, seed=1,
                             data=None)  # fmt: skip


def test_summary_statistics():
    runs = pd.DataFrame(
        {
            "estimator": "adassp",
            "target": "empirical",
            "n": 100,
            "d": 2,
            "epsilon": 1.0,
            "delta": 1e-4,
            "alpha": 0.05,
            "covered": [1.0, 0.5, 1.0, 1.0],
            "covered_first": [True, False, True, True],
            "covered_other": 1.0,
            "length": [1.0, 2.0, 3.0, 4.0],
            "ols_length": 0.5,
            "ols_covered": 1.0,
            "kappa": 0.5,
            "spent_epsilon": 0.9,
            "interval": "basic",
            "replicates": 30,
        }
    )
    row = kind.summarise_ci_coverage(runs).iloc[0]
    assert row["coverage"] == pytest.approx(0.875)
    assert row["coverage_se"] == pytest.approx(np.std([1, 0.5, 1, 1], ddof=1) / 2)
    assert row["coverage_se_nominal"] == pytest.approx(math.sqrt(0.95 * 0.05 / 8))
    assert row["z"] == pytest.approx((0.875 - 0.95) / row["coverage_se"])
    assert row["coverage_first"] == pytest.approx(0.75)
    assert row["width_ratio"] == pytest.approx(5.0)


def test_cell_checks():
    with pytest.raises(ValueError, match="n must exceed d"):
        kind.CI_COVERAGE.validate_cell({**CELL, "estimator": "adassp", "n": 3})
    with pytest.raises(ValueError, match="estimator"):
        kind.CI_COVERAGE.validate_cell({**CELL, "estimator": "dp_gd"})
    kind.CI_COVERAGE.validate_cell({**CELL, "estimator": "ihm", "targets": "empirical"})


def _table(coverages, se=0.01):
    return pd.DataFrame(
        {
            "estimator": "adassp",
            "target": "empirical",
            "n": [1000, 10000, 10000],
            "d": [3, 3, 10],
            "epsilon": [1.0, 1.0, 1.0],
            "nominal": 0.95,
            "coverage": coverages,
            "coverage_se": se,
            "coverage_se_nominal": 0.005,
        }
    )


def test_coverage_claims_read_the_claimed_cells_only(monkeypatch):
    regime = CheckedRegime("adassp", "empirical", ((10000, 3, 1.0),), "toy", "toy")
    monkeypatch.setattr(bootstrap, "CHECKED_INTERVALS", {("adassp", "empirical"): regime})
    # the unclaimed cells (n = 1000; d = 10) fail badly and are not judged
    good = check({"s": _table([0.5, 0.955, 0.2])})["ci_coverage"]
    assert len(good) == 2 and (good["passed"] == "yes").all()
    assert good["value"].iloc[0] == pytest.approx(0.955)
    bad = check({"s": _table([0.5, 0.90, 0.2])})["ci_coverage"]
    assert (bad["passed"] == "NO").all()


def test_no_coverage_claim_without_a_checked_entry(monkeypatch):
    monkeypatch.setattr(bootstrap, "CHECKED_INTERVALS", {})
    assert "ci_coverage" not in check({"s": _table([0.5, 0.9, 0.2])})


@pytest.mark.parametrize(
    "cell",
    [
        {"estimator": "adassp", "d": 3},
        {"estimator": "adassp", "d": 9, "targets": "population", "interval": "percentile"},
        {"estimator": "linear_mixing", "d": 9},
        {"estimator": "sheffet_sketch", "d": 1, "epsilon": 0.3},
        {"estimator": "ihm", "d": 4, "targets": ["population", "empirical"]},
        {"estimator": "ihm", "d": 2, "targets": "population"},  # no target: the reference
    ],
)
def test_fast_trials_equal_the_reference_bit_for_bit(monkeypatch, cell):
    """_trials (arrays per cell, regime_rows) gives the reference's frame: every value,
    dtype and column, in the same order (docs/scaling.md, session 25)."""
    cell = {**CELL, "n": 300, "replicates": 64, **cell}
    fast = kind.run_ci_coverage(cell, trials=7, first_trial=3, seed=5, data=None)
    monkeypatch.setattr(kind, "_PATH", "reference")
    ref = kind.run_ci_coverage(cell, trials=7, first_trial=3, seed=5, data=None)
    assert list(fast.columns) == list(ref.columns)
    assert (fast.dtypes == ref.dtypes).all()
    assert fast.equals(ref)


@settings(max_examples=60, deadline=None)
@given(
    rows=st.integers(1, 40),
    d=st.integers(1, 70),
    seed=st.integers(0, 2**32 - 1),
    scale=st.sampled_from([1e-8, 1.0, 1e8]),
)
def test_row_sums_along_the_last_axis_are_each_rows_mean(rows, d, seed, scale):
    """The columns ``length`` and ``ols_length`` of _trials: numpy's reduction along the
    last, contiguous axis sums each row as ``mean`` of that row does (pairwise)."""
    x = np.random.default_rng(seed).normal(size=(rows, 2, d)) * scale
    got = np.add.reduce(x, axis=-1) / d
    want = np.array([[float(row.mean()) for row in pair] for pair in x])
    assert np.array_equal(got, want)
