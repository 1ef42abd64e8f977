"""Study kinds of Brown et al. (2024): data, runs, tables, figures, claims."""

from __future__ import annotations

import math

import matplotlib
import numpy as np
import pandas as pd
import pytest

from dpreg.experiments.claims import check_claims
from dpreg.experiments.kinds import get_kind

matplotlib.use("Agg")


def _run(kind_name, cells, trials):
    kind = get_kind(kind_name)
    runs = []
    for c in cells:
        c = {**c, "conversion": "tight"}
        kind.check_keys("s", set(c))
        kind.validate_cell(c)
        runs.append(kind.run(c, trials=trials, first_trial=0, seed=5, data=None))
    runs = pd.concat(runs, ignore_index=True)
    assert {"trial", "seed", "rho", "epsilon", "delta"} <= set(runs.columns)
    table = kind.summarise(runs, [])
    again = kind.summarise(runs, [])
    pd.testing.assert_frame_equal(table, again)  # deterministic
    fig = kind.figure(table, title="t")
    assert fig.axes
    matplotlib.pyplot.close(fig)
    return runs, table


def test_error_vs_dim_and_claims():
    _, table = _run("brown_error_vs_dim", [dict(p=5), dict(p=15)], 3)
    assert set(table["method"]) == {"ols", "dp_gd", "adassp"}
    assert (table[table["method"] == "ols"]["err_hat_mean"] == 0).all()
    # Claim A.6 conversion for AdaSSP: rho = 0.05 -> epsilon = 1.712 at delta = 1e-6
    assert table["epsilon_adassp"].iloc[0] == pytest.approx(1.712, abs=1e-3)
    claims = check_claims("brown2024", {"brown_fig1": table})["claims"]
    assert len(claims) == 2


def _assert_rms(errors, theory: float, z: float = 4.0) -> None:
    """RMS of the trials' errors equals ``theory`` within ``z`` Monte Carlo standard errors.

    SE of the mean square from the trials' spread, then the delta method for its root.
    """
    squares = np.asarray(errors, dtype=float) ** 2
    rms = float(np.sqrt(squares.mean()))
    se = float(squares.std(ddof=1) / np.sqrt(squares.size) / (2 * rms))
    assert abs(rms - theory) <= z * se, (rms, theory, se)


def test_cost_of_privacy_predictions():
    runs, table = _run("brown_cost_of_privacy", [dict(n=2000, p=5, rho=0.1)], 30)
    row = table.iloc[0]
    # the RMS of the privacy and sampling errors is predicted by Lemma 2.3 (isotropic)
    _assert_rms(runs["privacy_error"], row["privacy_rms_theory"])
    _assert_rms(runs["sampling_error"], row["sampling_rms_theory"])


def test_optimisation_error_is_plain_gradient_descent_and_splits_the_privacy_error():
    from dpreg.experiments.brown2024 import _noiseless_gd

    rng = np.random.default_rng(3)
    X = rng.standard_normal((400, 4)) * np.array([1.0, 0.5, 2.0, 1.0])
    y = X @ np.array([1.0, -1.0, 0.5, 0.0]) + rng.standard_normal(400)
    ols = np.linalg.lstsq(X, y, rcond=None)[0]
    theta = np.zeros(4)
    for _ in range(7):  # the loss (1/2n)||y - X theta||^2, its gradient step by step
        theta = theta - 0.2 * X.T @ (X @ theta - y) / 400
    np.testing.assert_allclose(_noiseless_gd(X, ols, T=7, step=0.2), theta, atol=1e-12)

    runs, table = _run("brown_cost_of_privacy", [dict(n=3000, p=5, rho=0.1, T=8)], 20)
    # triangle inequality row by row: privacy <= noise + optimisation
    assert (runs["privacy_error"] <= runs["noise_error"] + runs["optimisation_error"] + 1e-12).all()
    # with T = 8 the optimisation error (0.8^8 ||theta_hat|| ~ 0.17) dominates the paper's
    # privacy error, while the noise part matches the Lemma 2.3 prediction
    row = table.iloc[0]
    assert row["optimisation_error_mean"] > row["noise_error_mean"]
    _assert_rms(runs["noise_error"], row["privacy_rms_theory"])


def test_heatmap_and_sweeps():
    _, heat = _run("brown_clip_heatmap", [dict(p=5, gamma=[1.0, 30.0])], 1)
    lo, hi = heat.sort_values("gamma")["clip_fraction"]
    assert lo > hi
    runs, bv = _run(
        "brown_bias_variance", [dict(n=800, p=5, clip_scales=[0.5, 5], data_seed=1)], 40
    )
    assert (bv["figure"] == "bias_variance").all()
    small, large = bv.sort_values("gamma").iloc[0], bv.sort_values("gamma").iloc[-1]
    assert small["bias2_hat"] > large["bias2_hat"] and small["variance"] < large["variance"]
    # bias^2 + variance (ddof 1) reproduces the MSE up to the (R-1)/R factor
    R = small["trials"]
    assert small["mse_hat"] == pytest.approx(small["bias2_hat"] + small["variance"] * (R - 1) / R)
    _, fig7 = _run(
        "brown_error_vs_clipping",
        [dict(n=800, p=5, T=T, clip_scales=[0.5, 5], data_seed=1) for T in (10, 30)],
        20,
    )
    claims = check_claims("brown2024", {"brown_fig4": bv, "brown_fig7": fig7})["claims"]
    assert set(claims["study"]) == {"brown_fig4", "brown_fig7"}


def test_ci_kind():
    cells = [dict(n=1500, p=4, total_steps=N, data_seed=2, step=0.25) for N in (150, 400)]
    runs, table = _run("brown_ci", cells, 20)
    methods = table.groupby("total_steps")["method"].apply(set)
    assert methods[150] == {"checkpoints", "batched_means"}  # N/m = 15 <= burn-in 20
    assert methods[400] == {"checkpoints", "batched_means", "independent_runs"}
    assert table["coverage"].between(0, 1).all() and (table["ols_length"] > 0).all()
    assert np.allclose(table["noise_std"][table["total_steps"] == 400], table["noise_std"].max())
    claims = check_claims("brown2024", {"brown_fig5_6": table})["claims"]
    assert (claims["study"] == "brown_fig5_6").all() and len(claims) >= 5


def test_claims_flag_failures():
    fake = pd.DataFrame(
        {
            "total_steps": [100],
            "method": ["checkpoints"],
            "coverage": [0.7],
            "coverage_se": [0.01],
            "coverage_se_nominal": [0.007],
            "huber_coverage": [0.7],
            "nominal": [0.95],
            "clip_fraction": [0.0],
            "runs": [100],
            "length": [1.0],
        }
    )
    claims = check_claims("brown2024", {"brown_x": fake})["claims"]
    assert claims["passed"].tolist() == ["NO"]


@pytest.mark.parametrize(
    "kind,cell,match",
    [
        ("brown_error_vs_dim", dict(p=1), "^brown_error_vs_dim: p must be >= 2"),
        ("brown_error_vs_dim", dict(p=5, design="sparse"), "^brown_error_vs_dim: design must"),
        ("brown_cost_of_privacy", dict(n=5, p=10), r"^brown_cost_of_privacy: n must exceed p \+ 1"),
        ("brown_cost_of_privacy", dict(n=500, p=10, rho=-1.0), "^brown_cost_of_privacy: rho must"),
        ("brown_clip_heatmap", dict(p=5, gamma=[1.0, math.inf]), "^brown_clip_heatmap: gamma must"),
        ("brown_bias_variance", dict(n=500, p=5, clip_scales=[0.0]), "clip_scales must be > 0"),
        ("brown_error_vs_clipping", dict(n=6, p=5, clip_scales=1), "^brown_error_vs_clipping: n"),
        ("brown_ci", dict(n=500, p=5, total_steps=25), "^brown_ci: need total_steps - burn_in"),
        ("brown_ci", dict(n=500, p=5, total_steps=200, m=1), "^brown_ci: m must be >= 2"),
        ("brown_ci", dict(n=500, p=5, total_steps=200, methods=["bootstrap"]), "brown_ci: methods"),
        ("brown_ci", dict(n=500, p=5, total_steps=200, alpha=2.0), r"brown_ci: alpha must lie in"),
    ],
)
def test_bad_cells(kind, cell, match):
    with pytest.raises(ValueError, match=match):
        get_kind(kind).validate_cell(cell)


def test_unknown_key():
    with pytest.raises(ValueError, match="unknown key"):
        get_kind("brown_ci").check_keys("s", {"n", "p", "total_steps", "gamma"})


def test_ci_runs_do_not_depend_on_the_trial_split():
    """A trial's noise is keyed by its global index: one call of 6 = calls of 2 and 4."""
    cell = dict(n=400, p=3, total_steps=250, data_seed=3, step=0.25, conversion="tight")
    run = get_kind("brown_ci").run
    whole = run(cell, trials=6, first_trial=4, seed=9, data=None)
    parts = pd.concat(
        [
            run(cell, trials=2, first_trial=4, seed=9, data=None),
            run(cell, trials=4, first_trial=6, seed=9, data=None),
        ]
    )
    key = ["method", "trial"]
    whole = whole.sort_values(key, ignore_index=True)
    parts = parts.sort_values(key, ignore_index=True)
    pd.testing.assert_frame_equal(whole, parts, rtol=1e-9, atol=1e-12)
    other = run(cell, trials=6, first_trial=0, seed=9, data=None)  # trials 0..5: others
    assert not np.allclose(other.sort_values(key)["length_0"], whole["length_0"])


def test_ci_theory_columns():
    """The table carries the exact no-clipping expected length of every construction."""
    # the noise scales with gamma: a large gamma and a large budget make clipping vanish
    cell = dict(n=1500, p=3, total_steps=400, data_seed=1, step=0.25, rho=100.0, clip_scale=50.0)
    runs, table = _run("brown_ci", [cell], 40)
    assert (runs["clip_fraction"] == 0).all()
    assert table["length_theory"].notna().all()
    assert (table["length_theory"] < table["length_theory_rms"]).all()
    # 40 runs x 3 coordinates: the observed mean length is within 4.5 SE of the theory
    gap = (table["length"] - table["length_theory"]).abs()
    assert (gap < 4.5 * table["length_se"]).all(), table[["method", "length", "length_theory"]]


def test_width_theory_claim_flags_a_gap():
    rows = {
        "total_steps": [200, 400],
        "method": ["batched_means"] * 2,
        "coverage": [0.95] * 2,
        "coverage_se": [0.01] * 2,
        "coverage_se_nominal": [0.007] * 2,
        "huber_coverage": [0.95] * 2,
        "nominal": [0.95] * 2,
        "runs": [100] * 2,
        "length": [1.0, 1.0],
        "length_se": [0.01, 0.01],
        "length_theory": [1.02, 1.05],  # 2 and 5 SE away
        "clip_fraction": [0.0, 0.001],
    }
    claims = check_claims("brown2024", {"b": pd.DataFrame(rows)})["claims"]
    row = claims[claims["claim"].str.contains("no-clipping expectation")]
    assert row["passed"].tolist() == ["NO"] and row["value"].iloc[0] == pytest.approx(5.0)
    rows["clip_fraction"] = [0.0, 0.05]  # the 5 SE gap is at 5% clipping: not tested
    claims = check_claims("brown2024", {"b": pd.DataFrame(rows)})["claims"]
    row = claims[claims["claim"].str.contains("no-clipping expectation")]
    assert row["passed"].tolist() == ["yes"] and row["value"].iloc[0] == pytest.approx(2.0)


@pytest.mark.parametrize("kind", ["brown_cost_of_privacy", "brown_error_vs_dim"])
@pytest.mark.parametrize("design", ["isotropic", "anisotropic"])
def test_reused_design_buffer_equals_fresh_arrays(kind, design, monkeypatch):
    """Figs. 1/2/8/9 draw every trial's design into reused buffers: rows equal to fresh arrays.

    The reference path (``_draw_data`` without ``out``: a new array per trial) and the
    reused buffer must give the same rows bit for bit (``DataFrame.equals``).
    """
    import dpreg.experiments.brown2024 as brown

    size = dict(n=300) if kind == "brown_cost_of_privacy" else dict(n_per_p=60)
    cell = dict(**size, p=4, rho=0.1, T=6, design=design, conversion="tight")
    run = get_kind(kind).run
    fast = run(cell, trials=4, first_trial=0, seed=11, data=None)
    draw = brown._draw_data
    calls = []

    def fresh(*args, out=None, rotated=None, **kwargs):
        calls.append((out, rotated))
        return draw(*args, **kwargs)  # the reference: new arrays per trial

    monkeypatch.setattr(brown, "_draw_data", fresh)
    reference = run(cell, trials=4, first_trial=0, seed=11, data=None)
    assert len(calls) == 4 and all(c[0] is calls[0][0] and c[1] is calls[0][1] for c in calls)
    assert calls[0][0] is not None
    # anisotropic: a second buffer for the rotated design
    assert (calls[0][1] is not None) == (design == "anisotropic")
    assert fast.equals(reference)
    col = "privacy_error" if kind == "brown_cost_of_privacy" else "err_true"
    assert reference[col].nunique() >= 4  # four different data sets
