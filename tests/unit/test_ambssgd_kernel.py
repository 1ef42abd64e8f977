"""DP-AMBSSGD's compiled kernels against the numpy reference (issue 18).

``PermutedRows(kernel="numba")`` (the default) lets ``ambssgd_pass`` read rows in place;
``kernel="numpy"`` gathers copies. Same draws, the same permutations, the same output to
rounding, the same clip counts, DP-STAT results and budget.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpreg.estimators import ambssgd, ambssgd_core
from dpreg.estimators.ambssgd import (
    fit_ambssgd_sgd,
    fit_dp_ambssgd,
    fit_dp_ambssgd_fixedclip,
    fit_dp_ambssgd_oracleclip,
)
from dpreg.estimators.ambssgd_core import PermutedRows, block_layout, paper_hyperparameters
from dpreg.estimators.ambssgd_kernel import batch_gradient, stat_magnitudes
from dpreg.privacy.budgets import ApproxDP


def _data(n: int = 4000, d: int = 5, sigma: float = 0.1, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    w = rng.normal(size=d) / np.sqrt(d)
    y = X @ w + sigma * rng.normal(size=n)
    return X, y, w


def _fits(monkeypatch, fit, X, y, **kw):
    out = {}
    for kernel in ("numpy", "numba"):
        monkeypatch.setattr(
            ambssgd, "PermutedRows", functools.partial(ambssgd_core.PermutedRows, kernel=kernel)
        )
        out[kernel] = fit(X, y, rng=np.random.default_rng(7), **kw)
    return out["numba"], out["numpy"]


@pytest.mark.parametrize("shuffle", [True, False])
@pytest.mark.parametrize("rule", ["adaptive", "fixed", "oracle", "none"])
def test_fits_equal_the_reference(monkeypatch, rule, shuffle):
    n, d, sigma = 4000, 5, 0.1
    X, y, w = _data(n, d, sigma)
    hp = paper_hyperparameters(
        n, block_layout(n).b, H_eigenvalues=np.ones(d), w_star_H_norm=1.0, sigma=sigma
    )
    kw = dict(trials=6, x_norm_sq=hp.x_norm_sq, H_norm=1.0, shuffle=shuffle)
    budget = ApproxDP(1.0, 1e-6)
    if rule == "adaptive":
        fit, kw = fit_dp_ambssgd, kw | dict(budget=budget, stat_domain=hp.stat_domain)
    elif rule == "fixed":  # a small clip: many rows clipped
        fit, kw = fit_dp_ambssgd_fixedclip, kw | dict(budget=budget, fixed_clip=0.5)
    elif rule == "oracle":
        fit = fit_dp_ambssgd_oracleclip
        kw = kw | dict(budget=budget, w_star=w, H=np.ones(d), sigma=sigma)
    else:
        fit = fit_ambssgd_sgd
    fast, ref = _fits(monkeypatch, fit, X, y, **kw)
    np.testing.assert_allclose(fast.theta, ref.theta, rtol=0, atol=1e-12)
    assert fast.budget_spent == ref.budget_spent
    diagnostics = {**ref.diagnostics, **ref.nonprivate_diagnostics}
    fast_diagnostics = {**fast.diagnostics, **fast.nonprivate_diagnostics}
    for key, value in diagnostics.items():
        if isinstance(value, np.ndarray) and value.dtype.kind in "iub":
            np.testing.assert_array_equal(fast_diagnostics[key], value, err_msg=key)
        elif isinstance(value, np.ndarray):
            np.testing.assert_allclose(
                fast_diagnostics[key], value, rtol=1e-12, atol=1e-13, err_msg=key
            )
        else:
            assert fast_diagnostics[key] == value or value is None, key
    if rule == "fixed":  # the test exercises clipping
        assert ref.nonprivate_diagnostics["step_clip_fraction"].mean() > 0.1


def test_batch_gradient_and_magnitudes_equal_gathered_numpy():
    rng = np.random.default_rng(1)
    n, d, D, R, k = 300, 4, 3, 5, 50
    X, y = rng.normal(size=(n, d)), rng.normal(size=n)
    norms = np.linalg.norm(X, axis=1)
    idx = np.stack([rng.permutation(n)[:k] for _ in range(D)])
    W = rng.normal(size=(D, d, R))
    zeta = rng.uniform(0.5, 5.0, size=(D, R))
    zeta[:, 0] = np.inf
    grad, clipped = batch_gradient(X, y, norms, idx, W, zeta)
    Xg, yg = X[idx], y[idx]  # (D, k, d), (D, k)
    res = Xg @ W - yg[:, :, None]  # (D, k, R)
    g = np.abs(res) * norms[idx][:, :, None]
    over = g > zeta[:, None, :]
    res = np.where(over, res * zeta[:, None, :] / g, res)
    np.testing.assert_allclose(grad, np.swapaxes(Xg, 1, 2) @ res, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(clipped, over.sum(axis=1))
    assert clipped[:, 0].sum() == 0 and clipped.sum() > 0
    runs = np.array([4, 1])
    mags = stat_magnitudes(X, y, idx, W, runs)
    expected = np.moveaxis(np.abs(Xg @ W - yg[:, :, None])[:, :, runs], 1, 2)
    np.testing.assert_allclose(mags, expected, rtol=1e-12, atol=1e-14)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 700),
    d=st.integers(1, 9),
    D=st.integers(1, 3),
    R=st.integers(1, 4),
    frac=st.floats(0.0, 1.0),
)
def test_gathered_gradient_equals_the_in_place_kernel_bit_for_bit(seed, n, d, D, R, frac):
    """Rows copied GATHER_ROWS at a time (issue 18): the same sums as reading in place."""
    rng = np.random.default_rng(seed)
    k = max(1, int(frac * n))  # from one row to every row: partial and several chunks
    X, y = rng.normal(size=(n, d)), rng.normal(size=n)
    norms = np.linalg.norm(X, axis=1)
    idx = np.stack([rng.permutation(n)[:k] for _ in range(D)]).astype(np.int32)
    W = rng.normal(size=(D, d, R))
    zeta = rng.uniform(0.1, 5.0, size=(D, R))
    zeta[:, 0] = np.inf
    reference = batch_gradient(X, y, norms, idx, W, zeta, variant="rowwise", gather=False)
    for variant in ("blocked", "rowwise"):  # each variant gathered and in place
        for gather in (True, False):
            out = batch_gradient(X, y, norms, idx, W, zeta, variant=variant, gather=gather)
            for a, b in zip(out, reference, strict=True):
                np.testing.assert_array_equal(a, b)


def test_permutations_are_the_same_and_bad_kernel_raises():
    X, y, _ = _data(500, 3)
    a = PermutedRows(X, y, 4, np.random.default_rng(3), kernel="numba")
    b = PermutedRows(X, y, 4, np.random.default_rng(3), kernel="numpy")
    np.testing.assert_array_equal(a.perm, b.perm)
    np.testing.assert_array_equal(a.take_indices(10), b.perm[:, :10])
    with pytest.raises(ValueError, match="kernel"):
        PermutedRows(X, y, 4, np.random.default_rng(3), kernel="fast")


def test_permutations_drawn_in_blocks_are_the_reference_and_leave_the_same_stream():
    n = 2**18 + 1  # blocks of 3 replicates
    X, y = np.zeros((n, 1)), np.zeros(n)
    rng_a, rng_b = np.random.default_rng(5), np.random.default_rng(5)
    a = PermutedRows(X, y, 7, rng_a, kernel="numba")
    b = PermutedRows(X, y, 7, rng_b, kernel="numpy")
    np.testing.assert_array_equal(a.perm, b.perm)
    assert a.perm.dtype == np.int32
    assert rng_a.random() == rng_b.random()  # the noise that follows is the same


def test_auto_kernel_by_rows_read():
    from dpreg.estimators.ambssgd_core import AUTO_MIN_ROWS

    small = PermutedRows(np.zeros((100, 1)), np.zeros(100), 4, np.random.default_rng(0))
    assert small.kernel == "numpy"
    n = AUTO_MIN_ROWS // 16
    large = PermutedRows(np.zeros((n, 1)), np.zeros(n), 16, np.random.default_rng(0))
    assert large.kernel == "numba"


def test_kernels_read_contiguous_rows_of_a_column_major_design(monkeypatch):
    """A prepared table's X is column-major: the kernels get one row-major copy, same values."""
    n, d, sigma = 4000, 5, 0.1
    X, y, _ = _data(n, d, sigma)
    X = np.asfortranarray(X)
    seen = []

    def recording(Xk, *args):
        seen.append((Xk.flags.c_contiguous, np.array_equal(Xk, X)))
        return batch_gradient(Xk, *args)

    monkeypatch.setattr(ambssgd_core, "batch_gradient", recording)
    hp = paper_hyperparameters(
        n, block_layout(n).b, H_eigenvalues=np.ones(d), w_star_H_norm=1.0, sigma=sigma
    )
    kw = dict(trials=3, x_norm_sq=hp.x_norm_sq, H_norm=1.0, budget=ApproxDP(1.0, 1e-6))
    fast, ref = _fits(monkeypatch, fit_dp_ambssgd_fixedclip, X, y, fixed_clip=0.5, **kw)
    assert seen and all(c and same for c, same in seen)
    np.testing.assert_allclose(fast.theta, ref.theta, rtol=0, atol=1e-12)
    rows = PermutedRows(X, y, 2, np.random.default_rng(0), kernel="numba")
    assert rows.rows.flags.c_contiguous and np.array_equal(rows.rows, X)


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, 60),
    d=st.integers(1, 9),
    D=st.integers(1, 3),
    R=st.integers(1, 3),
    k=st.integers(1, 13),
    seed=st.integers(0, 2**32 - 1),
    scale=st.sampled_from([0.05, 1.0, 20.0]),
)
def test_blocked_kernels_equal_the_rowwise_bit_for_bit(n, d, D, R, k, seed, scale):
    """Four rows at a time (issue 18): every sum in the row-wise order, so the same bits."""
    rng = np.random.default_rng(seed)
    X, y = rng.normal(size=(n, d)), rng.normal(size=n)
    norms = np.linalg.norm(X, axis=1)
    idx = rng.integers(0, n, size=(D, k)).astype(rng.choice([np.int32, np.int64]))
    W = scale * rng.normal(size=(D, d, R))
    zeta = rng.uniform(0.1, 3.0, size=(D, R))
    zeta[:, 0] = np.inf  # no clipping in one run
    ref = batch_gradient(X, y, norms, idx, W, zeta, variant="rowwise")
    fast = batch_gradient(X, y, norms, idx, W, zeta)
    np.testing.assert_array_equal(fast[0], ref[0])
    np.testing.assert_array_equal(fast[1], ref[1])
    runs = rng.permutation(R)[: rng.integers(1, R + 1)]
    np.testing.assert_array_equal(
        stat_magnitudes(X, y, idx, W, runs),
        stat_magnitudes(X, y, idx, W, runs, variant="rowwise"),
    )


def test_blocked_kernel_clips_and_a_bad_variant_raises():
    rng = np.random.default_rng(4)
    X, y = rng.normal(size=(200, 6)), rng.normal(size=200)
    norms = np.linalg.norm(X, axis=1)
    idx = np.stack([rng.permutation(200)[:23] for _ in range(4)])
    W, zeta = rng.normal(size=(4, 6, 2)), np.full((4, 2), 0.5)
    grad, clipped = batch_gradient(X, y, norms, idx, W, zeta)
    ref_grad, ref_clipped = batch_gradient(X, y, norms, idx, W, zeta, variant="rowwise")
    assert clipped.sum() > 0 and np.array_equal(clipped, ref_clipped)
    assert np.array_equal(grad, ref_grad)
    with pytest.raises(ValueError, match="variant"):
        batch_gradient(X, y, norms, idx, W, zeta, variant="fast")
    with pytest.raises(ValueError, match="variant"):
        stat_magnitudes(X, y, idx, W, np.array([0]), variant="fast")
