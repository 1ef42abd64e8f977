"""Streamed DP-SGD of the Varshney et al. (2022) study (E3): rows regenerated on demand.

Independent computations: the in-memory :func:`dp_sgd_poisson_runs` on the materialised
rows (bit-identical when the same draws are consumed in the same order), the registered
``dp_sgd_poisson`` estimator's ``budget_spent``, moments of the generated rows against
N(0, H) with tolerances from their standard errors, and tracemalloc for the memory bound.
"""

from __future__ import annotations

import math
import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpreg.data.streams import CounterGaussianRows
from dpreg.estimators import get_estimator
from dpreg.estimators.ambssgd_privacy import calibrate_poisson_dpsgd
from dpreg.estimators.dpsgd_poisson import dp_sgd_poisson_runs, dp_sgd_poisson_stream_runs
from dpreg.experiments import varshney2022 as study
from dpreg.privacy.budgets import ApproxDP

LAM = np.array([1.0, 0.5, 0.1])
W_STAR = np.array([0.6, -0.8, 1.0])


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.integers(0, 10**9), min_size=1, max_size=40),
    st.integers(0, 2**40),
    st.integers(0, 50),
)
def test_counter_rows_do_not_depend_on_the_read_block(positions, seed, replicate):
    src = CounterGaussianRows(seed, replicate, LAM, W_STAR)
    pos = np.array(positions)
    X, base, z = src.rows(pos)
    for k, p in enumerate(pos):  # one row at a time, in another order
        x1, b1, z1 = src.rows(np.array([p]))
        assert np.array_equal(x1[0], X[k]) and b1[0] == base[k] and z1[0] == z[k]
    assert np.array_equal(base, (X * W_STAR).sum(axis=1))


def test_counter_rows_follow_the_data_generating_process():
    """x ~ N(0, diag(LAM)), z ~ N(0, 1) independent, replicates independent."""
    m = 200_000
    X, base, z = CounterGaussianRows(11, 0, LAM, W_STAR).rows(np.arange(m))
    X2, _, _ = CounterGaussianRows(11, 1, LAM, W_STAR).rows(np.arange(m))
    U = np.column_stack([X / np.sqrt(LAM), z, X2[:, 0]])  # should be i.i.d. N(0, 1) columns
    se_mean, se_var = 1 / math.sqrt(m), math.sqrt(2 / m)
    assert np.all(np.abs(U.mean(axis=0)) < 5 * se_mean)
    assert np.all(np.abs(U.var(axis=0) - 1) < 5 * se_var)
    C = np.corrcoef(U.T)
    assert np.all(np.abs(C[np.triu_indices(5, 1)]) < 5 * se_mean)
    # fourth moment 3 (normal, not merely unit variance): se of mean(u^4) is sqrt(96/m)
    assert np.all(np.abs((U**4).mean(axis=0) - 3) < 5 * math.sqrt(96 / m))


def test_counter_rows_reject_bad_input():
    with pytest.raises(ValueError, match="seed"):
        CounterGaussianRows(-1, 0, LAM, W_STAR)
    with pytest.raises(ValueError, match="replicate_id"):
        CounterGaussianRows(0, 1.5, LAM, W_STAR)
    with pytest.raises(ValueError, match="w_star"):
        CounterGaussianRows(0, 0, LAM, W_STAR[:2])
    with pytest.raises(ValueError, match="positions"):
        CounterGaussianRows(0, 0, LAM, W_STAR).rows(np.array([3, -1]))


def _lanes():
    return {
        "sigma": np.array([0.1, 0.0, 0.1]),
        "clip": np.array([0.3, 1.0, 2.0]),
        "eta": np.array([0.5, 0.2, 0.4]),
        "noise_multiplier": np.array([1.3, 0.9, 1.3]),
    }


def test_streamed_dp_sgd_is_bit_identical_to_in_memory_on_the_same_rows():
    n = 3000
    src = CounterGaussianRows(7, 2, LAM, W_STAR)
    X, base, z = src.rows(np.arange(n))
    kw = {**_lanes(), "batch_size": 150.0, "steps": 40}
    mem = dp_sgd_poisson_runs(X, base, z, rng=np.random.default_rng(9), **kw)
    streamed = dp_sgd_poisson_stream_runs(src.rows, n, 3, rng=np.random.default_rng(9), **kw)
    np.testing.assert_array_equal(streamed[0], mem[0])
    np.testing.assert_array_equal(streamed[1], mem[1])


def _cell(**extra):
    return {
        "n": 4000, "d": 3, "sigma": [0.1, 0.0], "epsilon": [1.0, 4.0],
        "methods": ["sgd", "dp_sgd", "dp_sgd_tuned"], "dpsgd_clip_scales": [0.1, 1.0],
        "dpsgd_batch_size": 400, "dpsgd_grid_clip_scales": [0.1, 1.0],
        "dpsgd_grid_eta_scales": [1.0], "dpsgd_stream": True, **extra,
    }  # fmt: skip


def test_study_streamed_lanes_equal_in_memory_runs_and_budget():
    """Every streamed lane equals dp_sgd_poisson_runs on the trial's materialised rows."""
    cell, seed, trial = _cell(), 5, 3
    frame = study.run_sim_cell(cell, trials=1, first_trial=trial, seed=seed)
    spec, lam, w_star, hp = study._setup(cell)
    n, L = spec["n"], spec["batch"]
    q, steps = L / n, math.ceil(1.0 / (L / n))
    X, base, z = CounterGaussianRows(seed, trial, lam, w_star).rows(np.arange(n))
    labels, sig, clip, eta, mult = [], [], [], [], []
    for s in spec["sigmas"]:
        rx2 = hp[s].x_norm_sq
        for e in spec["epsilons"]:
            for c in (0.1, 1.0):
                labels.append((f"dp_sgd_c{c:g}", s, e, math.nan))
                sig.append(s)
                clip.append(c * math.sqrt(rx2) * (1 + s))
                eta.append(L / (rx2 + (L - 1) * lam.max()))
                mult.append(calibrate_poisson_dpsgd(e, spec["delta"], q, steps))
    for s in spec["sigmas"]:
        rx2 = hp[s].x_norm_sq
        for e in spec["epsilons"]:
            for c in (0.1, 1.0):
                labels.append((study.GRID_METHOD, s, e, c))
                sig.append(s)
                clip.append(c * math.sqrt(rx2) * (1 + s))
                eta.append(L / (rx2 + (L - 1) * lam.max()))
                mult.append(calibrate_poisson_dpsgd(e, spec["delta"], q, steps))
    theta, frac = dp_sgd_poisson_runs(
        X, base, z, sigma=np.array(sig), clip=np.array(clip), eta=np.array(eta),
        noise_multiplier=np.array(mult), batch_size=L, steps=steps,
        rng=np.random.default_rng([seed, study._DPSGD_STREAM, trial]),
    )  # fmt: skip
    expected = 0.5 * np.einsum("rd,d,rd->r", theta - w_star, lam, theta - w_star)
    runs = frame[frame["method"] != "sgd"]
    assert len(runs) == len(labels)
    for r, (method, s, e, c) in enumerate(labels):
        sel = (runs["method"] == method) & (runs["sigma"] == s) & (runs["epsilon"] == e)
        if not math.isnan(c):
            sel &= runs["clip_scale"] == c
        (row,) = runs[sel].itertuples()
        assert row.excess_risk == expected[r] and row.clip_fraction == frac[r]
        # the budget: what the in-memory estimator reports for the same mechanism
        fit = get_estimator("dp_sgd_poisson")(
            X[:500], base[:500], budget=ApproxDP(e, spec["delta"]),
            rng=np.random.default_rng(0), clip=clip[r], eta=eta[r], batch_size=L, n_public=n,
        )  # fmt: skip
        assert row.epsilon_spent == fit.budget_spent.epsilon <= e
        assert fit.diagnostics["noise_multiplier"] == mult[r]


def test_study_streamed_dp_sgd_never_holds_the_rows():
    """Peak traced memory is a small fraction of the N x d rows (N d 8 bytes = 48 MB)."""
    cell = _cell(n=200_000, d=30, sigma=[0.1], epsilon=[1.0], dpsgd_batch_size=1000,
                 dpsgd_epochs=0.02, methods=["dp_sgd"])  # fmt: skip
    tracemalloc.start()
    try:
        frame = study.run_sim_cell(cell, trials=2, first_trial=0, seed=1)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(frame) == 2 * 2 and frame["excess_risk"].notna().all()
    assert peak < 200_000 * 30 * 8 / 20


def test_streamed_and_in_memory_study_rows_have_the_same_columns_and_law():
    """Same lanes either way; on one seed both runs give finite, comparable risks."""
    cell = _cell(n=3000, sigma=[0.1], epsilon=[1.0], methods=["dp_sgd"], dpsgd_clip_scales=[1.0])
    streamed = study.run_sim_cell(cell, trials=40, first_trial=0, seed=2)
    memory = study.run_sim_cell({**cell, "dpsgd_stream": False}, trials=40, first_trial=0, seed=2)
    a, b = streamed["excess_risk"].to_numpy(), memory["excess_risk"].to_numpy()
    assert set(streamed["method"]) == set(memory["method"]) == {"dp_sgd_c1"}
    # two-sample comparison of the log risks: difference of means within 4 standard errors
    la, lb = np.log(a), np.log(b)
    se = math.sqrt(la.var(ddof=1) / la.size + lb.var(ddof=1) / lb.size)
    assert abs(la.mean() - lb.mean()) < 4 * se


def test_dpssgd_trials_caps_dp_ssgd_to_the_first_trials():
    cell = {"n": 2000, "d": 3, "sigma": [0.1], "epsilon": [1.0], "methods": ["sgd", "dp_ssgd"],
            "dpssgd_trials": 2}  # fmt: skip
    capped = study.run_sim_cell(cell, trials=4, first_trial=0, seed=3)
    cell.pop("dpssgd_trials")
    first_two = study.run_sim_cell(cell, trials=2, first_trial=0, seed=3)
    ss, ref = capped[capped["method"] == "dp_ssgd"], first_two[first_two["method"] == "dp_ssgd"]
    np.testing.assert_array_equal(
        ss[ss["trial"] < 2]["excess_risk"].to_numpy(), ref["excess_risk"].to_numpy()
    )
    late = ss[ss["trial"] >= 2]
    assert len(late) == 2 and late["excess_risk"].isna().all()
    assert set(late["status"]) == {"not_run"}
    # the other methods still run on every trial
    assert capped[capped["method"] == "sgd"]["excess_risk"].notna().sum() == 4
    with pytest.raises(ValueError, match="dpssgd_trials"):
        study.check_sim_cell({**cell, "dpssgd_trials": 0})


def test_adding_the_streamed_baselines_leaves_the_other_methods_unchanged():
    cell = _cell(n=3000, sigma=[0.01], epsilon=[1.0], methods=["ambssgd", "fixedclip", "sgd"])
    before = study.run_sim_cell(cell, trials=2, first_trial=0, seed=4)
    cell["methods"] += ["dp_ssgd", "dp_sgd", "dp_sgd_tuned"]
    after = study.run_sim_cell(cell, trials=2, first_trial=0, seed=4)
    kept = after[after["method"].isin(["ambssgd", "fixedclip", "sgd"])]
    np.testing.assert_array_equal(kept["excess_risk"].to_numpy(), before["excess_risk"].to_numpy())
    assert set(after["method"]) > set(before["method"])
