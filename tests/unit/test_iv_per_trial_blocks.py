"""Batched IV gradients one trial at a time: the same bits as the stacked calls (issue 18).

``dpreg.estimators.iv._stage_gradients`` evaluates a block of batched rows trial by
trial (``_batched_block_per_trial``) once a trial's products reach
``_PER_TRIAL_MIN_WORK`` multiply-adds; below it, the stacked numpy calls (the reference).
Both are compared bit for bit over shapes, thresholds, blocks and whole fits.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpreg.estimators.iv as iv


def _data(seed, trials, n, q, p):
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((trials, n, q))
    Pi = 2.0 * np.eye(q, p) + 0.3 * rng.standard_normal((q, p))
    X = Z @ Pi + rng.standard_normal((trials, n, p))
    y = X @ rng.standard_normal(p) + rng.standard_normal((trials, n))
    Theta = Pi + 0.5 * rng.standard_normal((trials, q, p))
    beta = rng.standard_normal((trials, p))
    return Z, X, y, Theta, beta


def _both(monkeypatch, block, args, clips):
    monkeypatch.setattr(iv, "_BLOCK_ELEMENTS_BATCHED", block)
    out = []
    for threshold in (2**62, 0):  # the stacked reference, then trial by trial
        monkeypatch.setattr(iv, "_PER_TRIAL_MIN_WORK", threshold)
        out.append(iv.clipped_gradient_means(*args, clip_theta=clips[0], clip_beta=clips[1]))
    return out


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    trials=st.integers(1, 4),
    n=st.integers(12, 160),  # n >= q (12 at most)
    pq=st.sampled_from([(1, 1), (1, 3), (2, 2), (3, 5), (5, 5), (7, 9), (12, 12)]),
    clip_theta=st.sampled_from([0.5, 3.0, 30.0, math.inf]),
    clip_beta=st.sampled_from([0.5, 3.0, 30.0, math.inf]),
    block=st.sampled_from([1, 64, 500, 1 << 22]),
)
def test_per_trial_blocks_are_bitwise_the_stacked_calls(
    seed, trials, n, pq, clip_theta, clip_beta, block
):
    p, q = pq
    Z, X, y, Theta, beta = _data(seed, trials, n, q, p)
    with pytest.MonkeyPatch.context() as mp:
        ref, new = _both(mp, block, (Z, X, y, Theta, beta), (clip_theta, clip_beta))
    for a, b in zip(ref, new, strict=True):
        np.testing.assert_array_equal(a, b)
    assert ref[2].shape == (trials,)


def test_per_trial_blocks_at_paper_width(monkeypatch):
    """p = q = 50 (Fig. 3b), several blocks, some rows clipped in both stages."""
    Z, X, y, Theta, beta = _data(3, 3, 900, 50, 50)
    ref, new = _both(monkeypatch, 3 * 50 * 300, (Z, X, y, Theta, beta), (150.0, 150.0))
    assert 0.0 < ref[2].mean() < 1.0 and 0.0 < ref[3].mean() < 1.0
    for a, b in zip(ref, new, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("algorithm", ["dp_2s_gd", "dp_2s_gd_beta"])
def test_whole_batched_fit_unchanged(algorithm, monkeypatch):
    Z, X, y, _, _ = _data(5, 4, 400, 20, 20)
    fits = []
    for threshold in (2**62, 0):
        monkeypatch.setattr(iv, "_PER_TRIAL_MIN_WORK", threshold)
        common = dict(
            rng=np.random.default_rng(8), T=6, step_theta=1.0, step_beta=0.01,
            clip_beta=40.0, trials=4, kernel="rows", return_path=False,
        )  # fmt: skip
        if algorithm == "dp_2s_gd":
            fit = iv.fit_dp_two_stage_gd(Z, X, y, rho1=1.0, rho2=1.0, clip_theta=40.0, **common)
        else:
            fit = iv.fit_dp_two_stage_gd_beta(Z, X, y, rho2=1.0, **common)
        fits.append(fit)
    ref, new = fits
    np.testing.assert_array_equal(ref.theta, new.theta)
    for key in ("clip_fraction_theta", "clip_fraction_beta"):
        np.testing.assert_array_equal(
            ref.nonprivate_diagnostics[key], new.nonprivate_diagnostics[key]
        )
    assert ref.budget_spent == new.budget_spent
