"""Streamed AdaSSP of the Varshney et al. (2022) study (E3): statistics over the stream.

Independent computation: the in-memory study path (``adassp_stream: false``: the rows
materialised, clipped and passed to ``fit_adassp``), which reads the same rows and the same
generator in the same order, so the two agree to round-off; tracemalloc for the memory
bound.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from dpreg.experiments import varshney2022 as study

KEY = ["trial", "method", "sigma", "epsilon"]


def _cell(**kw):
    base = {"d": 4, "n": 40_000, "sigma": [0.1, 0.0], "epsilon": [1.0, 4.0]}
    return {**base, **kw}


def _sorted(frame):
    return frame.sort_values(KEY, kind="stable").reset_index(drop=True)


def test_streamed_adassp_rows_equal_the_in_memory_rows():
    cell = _cell(methods=["ambssgd", "sgd", "adassp"])
    memory = _sorted(study.run_sim_cell(cell, trials=3, first_trial=2, seed=7))
    streamed = _sorted(
        study.run_sim_cell({**cell, "adassp_stream": True}, trials=3, first_trial=2, seed=7)
    )
    assert memory[KEY].equals(streamed[KEY])
    ada = memory["method"] == "adassp"
    assert ada.sum() == 3 * 2 * 2
    np.testing.assert_allclose(
        streamed["excess_risk"][ada], memory["excess_risk"][ada], rtol=1e-8, atol=1e-15
    )
    np.testing.assert_array_equal(streamed["clip_fraction"], memory["clip_fraction"])
    assert (memory["clip_fraction"][ada] > 0).all()  # the clipping is exercised
    # the other methods consume nothing of AdaSSP's generator after them: bit-identical
    np.testing.assert_array_equal(streamed["excess_risk"][~ada], memory["excess_risk"][~ada])


def test_streamed_adassp_leaves_the_other_methods_unchanged():
    cell = _cell(methods=["ambssgd", "sgd", "dp_ssgd"], adassp_stream=True)
    before = study.run_sim_cell(cell, trials=2, first_trial=0, seed=3)
    after = study.run_sim_cell({**cell, "methods": [*cell["methods"], "adassp"]}, trials=2,
                               first_trial=0, seed=3)  # fmt: skip
    kept = after[after["method"] != "adassp"]
    np.testing.assert_array_equal(kept["excess_risk"].to_numpy(), before["excess_risk"].to_numpy())


def test_streamed_adassp_never_holds_the_rows():
    """Peak traced memory is a small fraction of the N x d rows (N d 8 bytes = 96 MB)."""
    cell = _cell(n=300_000, d=40, sigma=[0.1], epsilon=[1.0], methods=["adassp"],
                 adassp_stream=True)  # fmt: skip
    tracemalloc.start()
    try:
        frame = study.run_sim_cell(cell, trials=1, first_trial=0, seed=1)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(frame) == 1 and frame["excess_risk"].notna().all()
    assert peak < 300_000 * 40 * 8 / 4  # one block of 2^14 rows and its clipped copy


def test_adassp_stream_key_is_validated():
    with pytest.raises(ValueError, match="adassp_stream"):
        study.check_sim_cell(_cell(methods=["adassp"], adassp_stream="yes"))


def test_adassp_gram_fit_is_fit_adassp_bit_for_bit():
    # E2's in-memory AdaSSP forms X'X once per trial; each sigma's fit must be the one
    # fit_adassp gives on the same clipped rows and generator (same statistics, draws).
    from dpreg.estimators.adassp import fit_adassp
    from dpreg.experiments.varshney2022_adassp import adassp_bounds, adassp_gram_fit
    from dpreg.privacy.budgets import ApproxDP

    d, lam = 5, np.linspace(1.0, 0.1, 5)
    rng = np.random.default_rng(3)
    X = rng.standard_normal((20_000, d)) * np.sqrt(lam)
    base, z = X @ np.full(d, 0.5), rng.standard_normal(20_000)
    bx = adassp_bounds(d, lam, 0.0)[0]
    Xc = X * np.minimum(1.0, bx / np.linalg.norm(X, axis=1))[:, None]
    xtx = Xc.T @ Xc
    ours, ref = np.random.default_rng(9), np.random.default_rng(9)
    for sigma in (1.0, 0.1, 0.0):
        by = adassp_bounds(d, lam, sigma)[1]
        yc = np.clip(base + sigma * z, -by, by)
        for eps in (0.5, 4.0):
            budget = ApproxDP(eps, 1e-6)
            got = adassp_gram_fit(Xc, xtx, yc, budget=budget, rng=ours, bound_X=bx, bound_y=by)
            want = fit_adassp(Xc, yc, budget=budget, rng=ref, bound_X=bx, bound_y=by)
            np.testing.assert_array_equal(got.theta, want.theta)
            assert got.budget_spent == want.budget_spent
    assert ours.bit_generator.state == ref.bit_generator.state
    np.testing.assert_array_equal(xtx, Xc.T @ Xc)  # not modified by the fits
