"""The tiled batched IV kernel against the loop kernel it replaces: the same bits.

:func:`dpreg.estimators.iv_batched._tile_kernel` (``_PATH = "tiles"``) must return the
sums and clip counts of :func:`dpreg.estimators.iv_batched._kernel` (``"loops"``, the
reference of the batched path) bit for bit, for any number of trials (tiles padded with
zero lanes), either stage alone, thresholds from "all rows clipped" to "none", and trials
whose iterate is not finite; whole fits then draw the same noise and return the same
bits.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpreg.estimators import iv_batched
from dpreg.estimators.iv import _prepare, fit_dp_two_stage_gd, fit_dp_two_stage_gd_beta
from dpreg.estimators.iv_batched import TILE_LANES, BatchedIVGradients


def _batched(seed: int, trials: int, n: int, q: int, p: int):
    rng = np.random.default_rng(seed)
    Theta = 5.0 * np.eye(q, p) + rng.normal(size=(q, p))
    Z = rng.normal(size=(trials, n, q))
    u = rng.normal(size=(trials, n, 1))
    X = Z @ Theta + u + rng.normal(size=(trials, n, p))
    y = X @ rng.normal(size=p) + u[..., 0] + rng.normal(size=(trials, n))
    return Z, X, y, Theta


def _sums(path, d, Theta, beta, clip_theta, clip_beta, monkeypatch):
    monkeypatch.setattr(iv_batched, "_PATH", path)
    k = BatchedIVGradients(d.Z, d.X, d.y, d.zn, d.ZtZ, d.ZtX, d.Zty,
                           clip_theta=clip_theta, clip_beta=clip_beta)  # fmt: skip
    assert k.path == path
    with np.errstate(invalid="ignore", over="ignore"):  # non-finite trials, both paths
        return k(Theta, beta)


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    shape=st.sampled_from([(1, 1), (3, 2), (5, 5)]),
    trials=st.integers(1, 2 * TILE_LANES + 3),
    n=st.integers(5, 40),
    clips=st.tuples(
        st.sampled_from([0.05, 1.0, 10.0, 100.0, math.inf]),
        st.sampled_from([0.05, 1.0, 10.0, 100.0, math.inf]),
    ),
    spread=st.sampled_from([0.0, 0.3, 3.0]),
    nonfinite=st.booleans(),
)
def test_tiles_give_the_loop_kernels_bits(seed, shape, trials, n, clips, spread, nonfinite):
    q, p = shape
    Z, X, y, Theta0 = _batched(seed, trials, n, q, p)
    d = _prepare(Z, X, y, trials)
    rng = np.random.default_rng(seed + 1)
    Theta = Theta0 + spread * rng.normal(size=(trials, q, p))
    beta = rng.normal(size=(trials, p))
    if nonfinite:
        Theta[0, 0, 0] = np.nan
        beta[-1, 0] = np.inf
    with pytest.MonkeyPatch.context() as mp:
        tiles = _sums("tiles", d, Theta, beta, *clips, mp)
        loops = _sums("loops", d, Theta, beta, *clips, mp)
    for a, b in zip(tiles, loops, strict=True):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)  # NaN where NaN (its sign bit is not kept)
        number = ~np.isnan(b)
        assert np.array_equal(np.signbit(a[number]), np.signbit(b[number]))  # signed zeros


def test_tiles_count_the_clipped_rows(monkeypatch):
    """Every row clipped (tiny threshold) and none (huge): counts n and 0, both paths."""
    Z, X, y, Theta0 = _batched(7, 23, 50, 5, 5)
    d = _prepare(Z, X, y, 23)
    Theta = np.broadcast_to(Theta0, (23, 5, 5)).copy()
    beta = np.ones((23, 5))
    _, _, c1, c2 = _sums("tiles", d, Theta, beta, 1e-9, 1e-9, monkeypatch)
    assert (c1 == 50).all() and (c2 == 50).all() and c1.dtype == np.int64
    _, _, c1, c2 = _sums("tiles", d, Theta, beta, 1e12, 1e12, monkeypatch)
    assert (c1 == 0).all() and (c2 == 0).all()


@pytest.mark.parametrize("fit", ["dp_2s_gd", "dp_2s_gd_beta"])
@pytest.mark.parametrize("trials", [20, 7, 45])
def test_whole_fits_are_the_same_bits(fit, trials, monkeypatch):
    n, q, p, T = 300, 5, 5, 40
    Z, X, y, _ = _batched(11, trials, n, q, p)
    runs = {}
    for path in ("tiles", "loops"):
        monkeypatch.setattr(iv_batched, "_PATH", path)
        kw = dict(T=T, step_theta=1.0, step_beta=0.02, trials=trials, clip_beta=8.0,
                  rng=np.random.default_rng(3), kernel="fast", calibration="paper")  # fmt: skip
        if fit == "dp_2s_gd":
            runs[path] = fit_dp_two_stage_gd(Z, X, y, rho1=1.0, rho2=1.0, clip_theta=8.0, **kw)
        else:
            runs[path] = fit_dp_two_stage_gd_beta(Z, X, y, rho2=1.0, **kw)
    a, b = runs["tiles"], runs["loops"]
    np.testing.assert_array_equal(a.theta, b.theta)
    np.testing.assert_array_equal(a.path, b.path)
    np.testing.assert_array_equal(a.diagnostics["theta_final"], b.diagnostics["theta_final"])
    for key in ("clip_fraction_theta", "clip_fraction_beta"):
        np.testing.assert_array_equal(a.nonprivate_diagnostics[key], b.nonprivate_diagnostics[key])
    frac = a.nonprivate_diagnostics["clip_fraction_beta"]
    assert 0.0 < frac.mean() < 1.0  # some rows clipped, not all: the clip path is exercised
    for key in ("lambda1", "lambda2", "rho_certified", "kernel"):
        assert a.diagnostics[key] == b.diagnostics[key]
    assert a.budget_spent == b.budget_spent
