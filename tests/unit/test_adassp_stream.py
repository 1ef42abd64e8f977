"""AdaSSP from statistics accumulated block by block equals AdaSSP on the rows in memory.

Independent computation: ``fit_adassp`` on the full arrays (its noise and release are
tested in test_adassp.py). Same rows and seed: estimates, releases and noise agree to
round-off (the sums are only added in another order), the generator is left in the same
state (same draws) and the budget and noise scales are identical.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpreg.estimators.adassp import fit_adassp
from dpreg.estimators.adassp_stream import AdasspStatistics, fit_adassp_streamed
from dpreg.privacy.budgets import ApproxDP


def _rows(n, d, seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, d)) / np.sqrt(d)
    y = np.clip(X @ np.linspace(-1, 1, d) + 0.3 * rng.standard_normal(n), -1, 1)
    return X, y


def _streamed(X, y, block, bound_y=1.0):
    stats = AdasspStatistics(X.shape[1], bound_X=1.0, bound_y=bound_y)
    for b in range(0, X.shape[0], block):
        stats.add(X[b : b + block], y[b : b + block])
    return stats


@settings(max_examples=20, deadline=None)
@given(
    n=st.integers(8, 600),
    d=st.integers(1, 7),
    block=st.integers(1, 700),
    eps=st.sampled_from([0.3, 1.0, 8.0, float("inf")]),
    yty_share=st.sampled_from([None, 0.2]),
    seed=st.integers(0, 2**16),
)
def test_streamed_release_equals_in_memory(n, d, block, eps, yty_share, seed):
    X, y = _rows(max(n, d), d, seed)
    kw = {"budget": ApproxDP(eps, 1e-6), "trials": 3, "yty_share": yty_share}
    rng_a, rng_b = np.random.default_rng(seed), np.random.default_rng(seed)
    a = fit_adassp(X, y, rng=rng_a, bound_X=1.0, bound_y=1.0, **kw)
    b = fit_adassp_streamed(_streamed(X, y, block), rng=rng_b, **kw)
    assert rng_a.random() == rng_b.random()  # the same number of draws
    scale = 1.0 + np.abs(a.theta).max()
    np.testing.assert_allclose(b.theta, a.theta, rtol=1e-7, atol=1e-9 * scale)
    assert a.budget_spent == b.budget_spent
    da, db = a.diagnostics, b.diagnostics
    for key in ("sigma_lambda_min", "sigma_xtx", "sigma_xty", "ridge_scale", "lambda_min_shift"):
        assert da[key] == db[key]
    xtx, xty = X.T @ X, X.T @ y
    # the noise added is the same draw: release minus statistic agrees to round-off
    np.testing.assert_allclose(db["xtx_noisy"] - xtx, da["xtx_noisy"] - xtx, atol=1e-9 * n)
    np.testing.assert_allclose(db["xty_noisy"] - xty, da["xty_noisy"] - xty, atol=1e-9 * n)
    np.testing.assert_allclose(db["ridge"], da["ridge"], rtol=1e-9, atol=1e-9 * n)
    if yty_share is not None:
        np.testing.assert_allclose(db["yty_noisy"], da["yty_noisy"], rtol=1e-12, atol=1e-9 * n)


def test_columns_share_the_gram_matrix_and_have_their_own_bound():
    X, y = _rows(500, 4, 1)
    Y = np.column_stack([y, 2 * y])
    stats = _streamed(X, Y, 128, bound_y=[1.0, 2.0])
    budget = ApproxDP(1.0, 1e-6)
    for j, (col, by) in enumerate(((y, 1.0), (2 * y, 2.0))):
        a = fit_adassp(X, col, budget=budget, rng=np.random.default_rng(j), bound_X=1.0, bound_y=by)
        b = fit_adassp_streamed(stats, budget=budget, rng=np.random.default_rng(j), column=j)
        np.testing.assert_allclose(b.theta, a.theta, rtol=1e-9)
        assert b.diagnostics["sigma_xty"] == a.diagnostics["sigma_xty"]


def test_bad_input_names_the_argument():
    stats = AdasspStatistics(2, bound_X=1.0, bound_y=1.0)
    with pytest.raises(ValueError, match="bound_X"):
        stats.add(np.array([[1.0, 1.0]]), np.array([0.0]))
    with pytest.raises(ValueError, match="bound_y"):
        stats.add(np.array([[0.1, 0.1]]), np.array([1.5]))
    with pytest.raises(ValueError, match="X must have shape"):
        stats.add(np.zeros((2, 3)), np.zeros(2))
    with pytest.raises(ValueError, match="finite"):
        stats.add(np.array([[np.nan, 0.0]]), np.array([0.0]))
    assert stats.n == 0 and not stats.xtx.any()  # nothing added by a refused block
    with pytest.raises(ValueError, match="n >= d"):
        fit_adassp_streamed(stats, budget=ApproxDP(1.0, 1e-6), rng=np.random.default_rng(0))
    stats.add(np.eye(2) * 0.5, np.zeros(2))
    with pytest.raises(ValueError, match="column"):
        fit_adassp_streamed(
            stats, budget=ApproxDP(1.0, 1e-6), rng=np.random.default_rng(0), column=1
        )
    with pytest.raises(ValueError, match="mechanism"):
        fit_adassp_streamed(
            stats, budget=ApproxDP(1.0, 1e-6), rng=np.random.default_rng(0), mechanism="x"
        )
    with pytest.raises(TypeError):
        fit_adassp_streamed(stats, budget=ApproxDP(1.0, 1e-6), rng=0)
    with pytest.raises(ValueError, match="d must be"):
        AdasspStatistics(0, bound_X=1.0, bound_y=1.0)
    with pytest.raises(ValueError, match="bound_y"):
        AdasspStatistics(2, bound_X=1.0, bound_y=[1.0, -1.0])


@settings(max_examples=25, deadline=None)
@given(
    m=st.integers(0, 60),
    d=st.integers(1, 300),
    k=st.integers(1, 3),
    scale=st.floats(0.1, 3.0),
    seed=st.integers(0, 2**32),
)
def test_compiled_clipping_equals_the_reference_bit_for_bit(m, d, k, scale, seed):
    """add_clipped's compiled pass against numpy's clip + add (the reference)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, d)) * scale / np.sqrt(d) * rng.uniform(0.2, 2.0, (m, 1))
    Y = rng.standard_normal((m, k)) * scale
    got, ref = (AdasspStatistics(d, bound_X=1.0, bound_y=np.linspace(0.5, 1.5, k)) for _ in "ab")
    for _ in range(2):  # two blocks: the sums accumulate
        c_got = got.add_clipped(X, Y, kernel="numba")
        c_ref = ref.add_clipped(X, Y, kernel="numpy")
        np.testing.assert_array_equal(c_got, c_ref)
    for name in ("xtx", "xty", "yty", "n"):
        np.testing.assert_array_equal(getattr(got, name), getattr(ref, name))
    norms = np.linalg.norm(X, axis=1)  # independent: the counts from the definition
    expected = ((norms > 1.0)[:, None] | (np.abs(Y) > np.linspace(0.5, 1.5, k))).sum(axis=0)
    np.testing.assert_array_equal(c_got, expected)


def test_compiled_row_norms_are_numpys():
    from dpreg.estimators.adassp_stream_kernel import clip_block

    rng = np.random.default_rng(5)
    for d in (1, 7, 8, 9, 127, 128, 129, 200, 257, 1000):
        X = rng.standard_normal((40, d)) * rng.uniform(0.01, 100.0, (40, 1))
        _, _, norms, finite = clip_block(X, np.zeros((40, 1)), 1.0, np.ones(1), np.zeros(1))
        np.testing.assert_array_equal(norms, np.linalg.norm(X, axis=1))
        assert finite


@pytest.mark.parametrize("kernel", ["numba", "numpy"])
def test_add_clipped_rejects_bad_blocks(kernel):
    stats = AdasspStatistics(2, bound_X=1.0, bound_y=1.0)
    with pytest.raises(ValueError, match="finite"):
        stats.add_clipped(np.array([[np.nan, 0.0]]), np.array([0.0]), kernel=kernel)
    with pytest.raises(ValueError, match="finite"):
        stats.add_clipped(np.array([[0.1, 0.0]]), np.array([np.inf]), kernel=kernel)
    with pytest.raises(ValueError, match="X must have shape"):
        stats.add_clipped(np.zeros((2, 3)), np.zeros(2), kernel=kernel)
    with pytest.raises(ValueError, match="Y must have shape"):
        stats.add_clipped(np.zeros((2, 2)), np.zeros(3), kernel=kernel)
    assert stats.n == 0 and not stats.xtx.any()
    with pytest.raises(ValueError, match="kernel"):
        stats.add_clipped(np.zeros((2, 2)), np.zeros(2), kernel="fast")


@pytest.mark.parametrize("d", [129, 200, 257, 1031])
def test_clip_block_norms_above_one_pairwise_block_are_numpys(d):
    """Above 128 terms np.linalg.norm's pairwise sum splits (the kernel's explicit stack)."""
    from dpreg.estimators.adassp_stream_kernel import clip_block

    X = np.random.default_rng(d).standard_normal((30, d)) * 0.1
    _, _, norms, ok = clip_block(X, np.zeros((30, 1)), 1.0, np.ones(1), np.zeros(1))
    assert ok
    np.testing.assert_array_equal(norms, np.linalg.norm(X, axis=1))
