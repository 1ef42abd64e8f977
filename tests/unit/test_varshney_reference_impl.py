"""The package's DP-AMBSSGD against an independent reference implementation (issue 6).

``varshney_reference.py`` (next to this file) implements Algorithms 2 and 3 and Theorem
3.7's hyperparameters from the paper, one run at a time, without importing the package's
DP-AMBSSGD or DP-STAT code. Three levels of agreement are checked:

1. exact: the hyperparameters of every E1 cell, DP-STAT on shared noise, and whole passes
   (estimator and the E1 study path) on a shared data stream with identical noise draws,
   block by block (clip norm, DP-STAT stop index, noise std, step size, tail window);
2. exact with zero privacy noise;
3. in distribution: independent data, permutations and noise for one E1 cell; means and
   medians of the log excess risk, of the per-run mean DP-STAT stop index and of the mean
   log clip norm agree within 4 Monte Carlo standard errors (two-sample z; bootstrap SE
   for medians).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import varshney_reference as ref
import yaml

from dpreg.data.streams import GaussianStream
from dpreg.estimators import get_estimator
from dpreg.estimators.ambssgd_privacy import ambssgd_noise_multiplier
from dpreg.estimators.dp_stat import dp_stat
from dpreg.experiments import varshney2022 as study
from dpreg.experiments.varshney2022_diagnostics import run_diagnostics_cell
from dpreg.privacy.budgets import ApproxDP

CONFIG = Path(__file__).resolve().parents[2] / "config" / "config.yaml"
NOISE_STREAM = 2**31 - 1  # the study's DP-noise stream: default_rng([seed, 2**31 - 1])


# ------------------------------------------------------------------------------ privacy


@pytest.mark.parametrize(
    ("eps", "delta", "table"),
    [(0.1, 1e-5, 68.008), (0.5, 1e-5, 13.718), (1, 1e-5, 6.930), (1, 1e-6, 7.566),
     (2, 1e-6, 3.847), (5, 1e-6, 1.611), (10, 1e-6, 0.860)],
)  # fmt: skip
def test_alpha_by_bisection_matches_package_and_notes_table(eps, delta, table):
    """Theorem 3.6's alpha: bisection on Bun-Steinke's conversion, closed form, table.

    The table is the one of docs/notes/varshney2022.md §3.2.
    """
    alpha = ref.alpha_by_bisection(eps, delta)
    rho, L = 1 / alpha**2, math.log(1 / delta)
    assert rho + 2 * math.sqrt(rho * L) == pytest.approx(eps, rel=1e-12)
    assert ambssgd_noise_multiplier(eps, delta, "exact") == pytest.approx(alpha, rel=1e-10)
    assert alpha == pytest.approx(table, abs=1e-3)


# ---------------------------------------------------------------------- hyperparameters


def _e1_cells():
    e1 = yaml.safe_load(CONFIG.read_text())["studies"]["varshney_e1_nscaling"]
    for d in e1["grid"]["d"]:
        for n in e1["grid"]["n"]:
            yield {**e1["params"], "d": d, "n": n}


def test_every_e1_cell_uses_theorem_3_7_hyperparameters():
    """T, s, b, eta, R_x, B, ln^a N of the study equal the reference's, for all E1 cells."""
    cells = list(_e1_cells())
    assert len(cells) == 10
    for cell in cells:
        spec, lam, w_star, hp_by_sigma = study._setup(cell)
        assert float(w_star @ (lam * w_star)) == pytest.approx(1.0, rel=1e-12)
        for sigma in spec["sigmas"]:
            mine = ref.theorem_3_7_setup(cell["n"], lam, w_star_H_norm=1.0, sigma=sigma)
            lay, hp = spec["layout"], hp_by_sigma[sigma]
            assert (lay.T, lay.s, lay.b) == (mine.T, mine.s, mine.b)
            assert lay.tail_start == mine.tail[0] and lay.T == mine.tail[-1]
            assert spec["K"] == mine.n_queries
            assert hp.eta == pytest.approx(mine.eta, rel=1e-13)
            assert math.sqrt(hp.x_norm_sq) == pytest.approx(mine.x_norm, rel=1e-13)
            assert hp.stat_domain == pytest.approx(mine.domain, rel=1e-13)
            assert hp.log_factor == pytest.approx(mine.log_a, rel=1e-13)


# ----------------------------------------------------------------------------- DP-STAT


@pytest.mark.parametrize("fraction", [1.0, 0.9])
def test_dp_stat_equals_reference_on_shared_noise(fraction):
    """Same residuals (with exact grid ties) and the same K normals per call."""
    rng = np.random.default_rng(11)
    calls, s, K, B, alpha = 300, 40, 12, 10.0, 1.3
    a = np.abs(rng.standard_normal((calls, s))) * rng.uniform(0.01, 3.0, (calls, 1))
    a[::7, 0] = B / 2**K * 2.0 ** rng.integers(0, K, calls)[::7]  # values on the grid
    a[::11, 1] = 1e9  # beyond B: never counted
    res = dp_stat(
        a, domain=B, n_queries=K, noise_multiplier=alpha, rng=np.random.default_rng(5),
        threshold_fraction=fraction,
    )  # fmt: skip
    draws = np.random.default_rng(5).standard_normal((calls, K))
    for m in range(calls):
        it = iter(draws[m])
        out = ref.dp_stat_reference(
            a[m], domain=B, n_queries=K, s=s, alpha=alpha, draw=lambda it=it: next(it),
            threshold=fraction * s,
        )  # fmt: skip
        assert (res.gamma[m], res.stop_index[m], res.no_break[m]) == (
            out.gamma,
            out.stop_index,
            out.no_break,
        )
    assert res.no_break.any() and (~res.no_break).any()


# ---------------------------------------------------------------- whole pass, exact


def _package_order_noise(seed, T, K, d, lanes=1):
    """The package's draw order: per block, DP-STAT (lanes, 1, K) then gradient (lanes, d, 1)."""
    rng = np.random.default_rng(seed)
    stat, grad = np.empty((lanes, T, K)), np.empty((lanes, T, d))
    for t in range(T):
        stat[:, t] = rng.standard_normal((lanes, 1, K))[:, 0]
        grad[:, t] = rng.standard_normal((lanes, d, 1))[:, :, 0]
    return stat, grad


@pytest.mark.parametrize(
    ("epsilon", "margin"), [(1.0, 0.0), (4.0, 0.0), (1.0, 2.0), (math.inf, 0.0)]
)
def test_estimator_equals_reference_block_by_block(epsilon, margin):
    """dp_ambssgd on a fixed row order with the reference fed the same normals."""
    n, d, sigma = 20_000, 10, 0.1
    lam = np.ones(d)
    w_star = np.full(d, 1 / math.sqrt(d))
    X, y = ref.gaussian_sample(np.random.default_rng(3), n, lam, w_star, sigma)
    setup = ref.theorem_3_7_setup(n, lam, w_star_H_norm=1.0, sigma=sigma)
    fit = get_estimator("dp_ambssgd")(
        X, y, budget=ApproxDP(epsilon, 1e-6), rng=np.random.default_rng(21),
        x_norm_sq=setup.x_norm**2, H_norm=1.0, stat_domain=setup.domain, shuffle=False,
        stat_margin=margin,
    )  # fmt: skip
    alpha = 0.0 if math.isinf(epsilon) else ref.alpha_by_bisection(epsilon, 1e-6)
    stat, grad = _package_order_noise(21, setup.T, setup.n_queries, d)
    noise = ref.FedNoise(stat[0], grad[0]) if alpha else ref.zero_noise(setup.T, 20, d)
    out = ref.dp_ambssgd_reference(X, y, setup, alpha=alpha, noise=noise, stat_margin=margin)
    diag, nonprivate = fit.diagnostics, fit.nonprivate_diagnostics
    assert (diag["T"], diag["s"], diag["b"]) == (setup.T, setup.s, setup.b)
    assert diag["eta"] == pytest.approx(setup.eta, rel=1e-14)
    assert diag["noise_multiplier"] == pytest.approx(alpha, rel=1e-10)
    blocks = out.blocks
    np.testing.assert_array_equal(diag["step_stop_index"][0], [b.stop_index for b in blocks])
    np.testing.assert_array_equal(diag["step_no_break"][0], [b.no_break for b in blocks])
    np.testing.assert_allclose(diag["step_gamma"][0], [b.gamma for b in blocks], rtol=1e-15)
    np.testing.assert_allclose(diag["step_zeta"][0], [b.zeta for b in blocks], rtol=1e-13)
    pkg_noise_std = diag["eta"] * 2 * diag["noise_multiplier"] * diag["step_zeta"][0] / diag["b"]
    np.testing.assert_allclose(pkg_noise_std, [b.iterate_noise_std for b in blocks], rtol=1e-13)
    np.testing.assert_allclose(
        nonprivate["step_clip_fraction"][0], [b.clipped / setup.b for b in blocks], rtol=0, atol=0
    )
    np.testing.assert_allclose(fit.theta[0], out.w_bar, rtol=1e-9, atol=1e-12)
    if alpha == 0:  # noiseless: gamma is the first grid point with every residual below it
        assert all(b.stop_index < 20 for b in blocks)


def test_e1_study_path_equals_reference_on_shared_stream_and_noise():
    """run_sim_cell / run_diagnostics_cell of the smallest E1 cell, two trials from trial 5."""
    n, d, sigma, eps, seed = 10_000, 20, 0.1, 1.0, 77
    cell = {"n": n, "d": d, "sigma": [sigma], "epsilon": [eps], "delta": 1e-6,
            "methods": ["ambssgd"]}  # fmt: skip
    rows = study.run_sim_cell(cell, trials=2, first_trial=5, seed=seed)
    diag = run_diagnostics_cell(cell, trials=2, first_trial=5, seed=seed)
    lam = study.eigenvalues(d, 1.0)
    w_star = study.true_w_star(d, lam, 0)
    setup = ref.theorem_3_7_setup(n, lam, w_star_H_norm=1.0, sigma=sigma)
    alpha = ref.alpha_by_bisection(eps, 1e-6)
    stat, grad = _package_order_noise([seed, NOISE_STREAM], setup.T, 20, d, lanes=2)
    assert sorted(rows["trial"]) == [5, 6]
    for k, trial in enumerate([5, 6]):
        X, base, z = GaussianStream(seed, [trial], lam, w_star).take(n)
        out = ref.dp_ambssgd_reference(
            X[0], base[0] + sigma * z[0], setup, alpha=alpha, noise=ref.FedNoise(stat[k], grad[k])
        )
        row = rows[rows["trial"] == trial].iloc[0]
        assert (row["T"], row["s"], row["b"]) == (setup.T, setup.s, setup.b)
        risk = ref.excess_risk(out.w_bar, w_star, lam)
        assert row["excess_risk"] == pytest.approx(risk, rel=1e-9)
        steps = diag[diag["trial"] == trial].sort_values("step")
        np.testing.assert_array_equal(steps["stop_index"], [b.stop_index for b in out.blocks])
        np.testing.assert_allclose(steps["zeta"], [b.zeta for b in out.blocks], rtol=1e-13)


# ---------------------------------------------------------------- in distribution


def test_e1_cell_distribution_matches_independent_reference():
    """E1 cell d = 20, N = 1e4, sigma = 0.1, eps = 8 (in the transition: wide spread).

    Package: the study path (GaussianStream, vectorised pass, 3 seed blocks of 40 trials).
    Reference: its own data, permutation, w* and query-by-query noise. |z| <= 4 for each
    statistic (false-alarm probability about 6e-5 each under agreement).
    """
    n, d, sigma, eps, runs = 10_000, 20, 0.1, 8.0, 120
    cell = {"n": n, "d": d, "sigma": [sigma], "epsilon": [eps], "delta": 1e-6,
            "methods": ["ambssgd"]}  # fmt: skip
    pkg = pd.concat(
        [study.run_sim_cell(cell, trials=40, first_trial=k, seed=500 + k) for k in (0, 40, 80)]
    )
    mine = ref.reference_runs(n=n, d=d, sigma=sigma, epsilon=eps, delta=1e-6, runs=runs, seed=9)
    pairs = {
        "log excess risk": (np.log(pkg["excess_risk"].to_numpy()), np.log(mine["excess_risk"])),
        "mean stop index": (pkg["stop_index_mean"].to_numpy(), mine["stop_index_mean"]),
        "no-break fraction": (pkg["no_break_fraction"].to_numpy(), mine["no_break_fraction"]),
        "clip fraction": (pkg["clip_fraction"].to_numpy(), mine["clip_fraction"]),
        "log last clip norm": (np.log(pkg["zeta_last"].to_numpy()), mine["log_zeta_last"]),
    }
    for name, (a, b) in pairs.items():
        assert a.size == b.size == runs
        z = ref.z_mean_difference(a, b)
        assert abs(z) <= 4, f"{name}: means differ by z = {z:.2f}"
    for name in ("log excess risk", "mean stop index", "log last clip norm"):
        z = ref.z_median_difference(*pairs[name])
        assert abs(z) <= 4, f"{name}: medians differ by z = {z:.2f}"
    # the cell is informative: neither degenerate nor saturated at B
    risk = mine["excess_risk"]
    assert np.quantile(risk, 0.9) / np.quantile(risk, 0.1) > 10
    assert np.mean(mine["stop_index_mean"]) < 19
