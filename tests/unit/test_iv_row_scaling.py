"""Issue 18 (session 23) changes to the IV reference path and the Section 4.1 data: same bits.

* :mod:`dpreg.estimators._iv_rows_jit`'s clipping of a block (products, count, maximum,
  division, scaling) against the reference's numpy lines, entry for entry (signed zeros,
  subnormals, inf, NaN and ties with the threshold included);
* a batched design's sufficient statistics computed on first use (``_STATISTICS_PATH =
  "lazy"``) against the eager reference;
* :func:`dpreg.data.synthetic.sample_iv_batch` accumulated in place against the reference
  expression (the same arrays and the same generator state);
* whole DP-2S-GD, DP-2S-GD-beta and 2S-GD fits on batched data taking the per-trial
  blocks of the reference (``kernel="rows"``) with every change against all references.
"""

from __future__ import annotations

import math

import numba  # noqa: F401 - the compiled row scaling runs only once numba is loaded
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from dpreg.data import synthetic
from dpreg.data.synthetic import IVLinearDGP, draw_iv_truth_batch, sample_iv_batch
from dpreg.estimators import iv
from dpreg.estimators._iv_rows_jit import clip_first_stage, clip_second_stage
from dpreg.estimators.iv import (
    _clip_factors,
    _prepare,
    fit_dp_two_stage_gd,
    fit_dp_two_stage_gd_beta,
    fit_two_stage_gd,
)


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float64).view(np.uint64)


def _same(a, b, what=""):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype, what
    if a.dtype == np.float64:
        # every number bit for bit (signed zeros included); a NaN where numpy has one, its
        # sign and payload aside (x86 gives inf/inf's NaN the sign bit, and which operand's
        # NaN a product keeps depends on the operands' order, which the compiled pass may swap)
        nan = np.isnan(a)
        assert np.array_equal(nan, np.isnan(b)), what
        assert np.array_equal(_bits(np.where(nan, 0.0, a)), _bits(np.where(nan, 0.0, b))), what
    else:
        assert np.array_equal(a, b), what


_floats = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True, width=64),
    st.sampled_from([0.0, -0.0, 5e-324, -5e-324, 1.0, 1e308, -1e-308]),
)


def _numpy_first(R, a, zn, clip):
    """The reference's lines of :func:`dpreg.estimators.iv._batched_block_per_trial`."""
    a *= zn
    f, c = _clip_factors(a, clip, 0)
    R *= f[..., None]
    return int(c)


def _numpy_second(e, w_norm, clip):
    a = np.abs(e)
    a *= w_norm
    f, c = _clip_factors(a, clip, 0)
    e *= f
    return int(c)


@settings(max_examples=80, deadline=None)
@given(
    data=st.data(),
    m=st.integers(1, 40),
    p=st.integers(1, 12),
    clip=st.sampled_from([1e-300, 0.5, 1.0, 3.0, 1e300, math.inf]),
    layout=st.sampled_from(["C", "F", "strided"]),
)
def test_compiled_clipping_is_numpys(data, m, p, clip, layout):
    R = data.draw(hnp.arrays(np.float64, (m, p), elements=_floats))
    a = np.abs(data.draw(hnp.arrays(np.float64, (m,), elements=_floats)))
    zn = np.abs(data.draw(hnp.arrays(np.float64, (m,), elements=_floats)))
    e = data.draw(hnp.arrays(np.float64, (m,), elements=_floats))
    if data.draw(st.booleans()):  # ties with the threshold
        a[: m // 2] = clip
        zn[: m // 2] = 1.0
    if layout == "F":
        R = np.asfortranarray(R)
    elif layout == "strided":
        R = np.repeat(R, 2, axis=1)[:, ::2]
    with np.errstate(all="ignore"):
        R_ref, a_ref, e_ref = R.copy(), a.copy(), e.copy()
        c_ref = _numpy_first(R_ref, a_ref, zn, clip)
        c2_ref = _numpy_second(e_ref, np.abs(zn), clip)
        c = clip_first_stage(R, a, zn, clip)
        c2 = clip_second_stage(e, np.abs(zn), clip)
    assert c == c_ref and c2 == c2_ref
    _same(R, R_ref, "R")
    _same(a, a_ref, "f")
    _same(e, e_ref, "e")


def test_compiled_clipping_is_used_in_the_per_trial_blocks(monkeypatch):
    calls = []
    real = iv._compiled_rows
    monkeypatch.setattr(iv, "_compiled_rows", lambda size: calls.append(size) or real(size))
    Z, X, y = _data(0, trials=2, n=300, q=16, p=16)
    fit_dp_two_stage_gd(Z, X, y, rho1=1.0, rho2=1.0, rng=np.random.default_rng(1), T=2,
                        step_theta=1.0, step_beta=0.01, clip_theta=20.0, clip_beta=20.0,
                        trials=2, return_path=False, kernel="rows")  # fmt: skip
    assert calls and all(size == 300 * 16 and real(size) for size in calls)


def _data(seed, *, trials, n, q, p, r=None):
    truth = draw_iv_truth_batch(
        np.random.default_rng(seed), p=p, q=q, r=p if r is None else r, trials=trials
    )
    return sample_iv_batch(truth, n=n, trials=trials, rng=np.random.default_rng(seed + 1))


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    trials=st.integers(1, 4),
    n=st.integers(1, 30),
    qpr=st.sampled_from([(1, 1, 1), (3, 2, 2), (5, 5, 5), (4, 2, 7)]),
    shared=st.booleans(),
    sigmas=st.sampled_from([(1.0, 1.0), (0.5, 2.0), (0.0, -0.0), (1e-300, 1e300)]),
)
def test_in_place_sample_is_the_expression(seed, trials, n, qpr, shared, sigmas):
    q, p, r = qpr
    if shared:
        truth = IVLinearDGP.draw(rng=np.random.default_rng(seed), p=p, q=q, r=r).truth_batch()
    else:
        truth = draw_iv_truth_batch(np.random.default_rng(seed), p=p, q=q, r=r, trials=trials)
    out = {}
    for path in ("expression", "in_place"):
        with pytest.MonkeyPatch.context() as mp, np.errstate(over="ignore", invalid="ignore"):
            mp.setattr(synthetic, "_ACCUMULATE", path)
            rng = np.random.default_rng(seed + 1)
            Z, X, y = sample_iv_batch(
                truth, n=n, trials=trials, rng=rng, sigma_x=sigmas[0], sigma_y=sigmas[1]
            )
        out[path] = (Z, X, y, rng.bit_generator.state)
    for a, b, what in zip(out["expression"][:3], out["in_place"][:3], "ZXy", strict=True):
        _same(a, b, what)
    assert out["expression"][3] == out["in_place"][3]


def test_in_place_sample_large_draws(monkeypatch):
    """A draw past the compiled normals' threshold (the studies' large blocks)."""
    truth = IVLinearDGP.draw(rng=np.random.default_rng(3), p=5, q=5, r=5).truth_batch()
    out = {}
    for path in ("expression", "in_place"):
        monkeypatch.setattr(synthetic, "_ACCUMULATE", path)
        rng = np.random.default_rng(4)
        out[path] = (*sample_iv_batch(truth, n=50_000, trials=5, rng=rng), rng.random())
    for a, b in zip(out["expression"], out["in_place"], strict=True):
        _same(a, b)


def test_lazy_statistics_are_the_eager_ones(monkeypatch):
    Z, X, y = _data(5, trials=3, n=40, q=4, p=3)
    lazy = _prepare(Z, X, y, 3)
    assert lazy.statistics is None
    monkeypatch.setattr(iv, "_STATISTICS_PATH", "eager")
    eager = _prepare(Z, X, y, 3)
    assert eager.statistics is not None
    for key in ("ZtZ", "ZtX", "Zty", "zn"):
        _same(getattr(lazy, key), getattr(eager, key), key)
    assert lazy.statistics is not None and lazy.ZtZ is lazy.ZtZ  # computed once


_REFERENCE = {"_ROW_SCALE_PATH": "numpy", "_STATISTICS_PATH": "eager"}


def _fit(algorithm, Z, X, y, trials, clip, T=3):
    common = dict(rng=np.random.default_rng(11), T=T, step_theta=1.0, step_beta=0.005,
                  trials=trials, return_path=True, kernel="rows")  # fmt: skip
    with np.errstate(over="ignore", invalid="ignore"):
        if algorithm == "dp_2s_gd":
            return fit_dp_two_stage_gd(Z, X, y, rho1=0.5, rho2=0.5, clip_theta=clip,
                                       clip_beta=clip, calibration="paper", **common)  # fmt: skip
        if algorithm == "dp_2s_gd_beta":
            return fit_dp_two_stage_gd_beta(Z, X, y, rho2=0.5, clip_beta=clip, **common)
        common.pop("rng")
        return fit_two_stage_gd(Z, X, y, **common)


@pytest.mark.parametrize(
    ("algorithm", "clip"),
    [(a, c) for a in ("dp_2s_gd", "dp_2s_gd_beta") for c in (0.5, 40.0, 1e6)]
    + [("2s_gd", math.inf)],
)
def test_whole_fits_keep_their_bits(monkeypatch, algorithm, clip):
    trials, n, q, p = 3, 300, 16, 15  # 300 x 16 x 15 >= the per-trial work: per-trial blocks
    assert n * q * p >= iv._PER_TRIAL_MIN_WORK
    Z, X, y = _data(7, trials=trials, n=n, q=q, p=p)
    new = _fit(algorithm, Z, X, y, trials, clip)
    for name, value in _REFERENCE.items():
        monkeypatch.setattr(iv, name, value)
    ref = _fit(algorithm, Z, X, y, trials, clip)
    _same(new.theta, ref.theta, "beta")
    _same(new.path, ref.path, "path")
    for key in ("clip_fraction_theta", "clip_fraction_beta"):
        _same(new.nonprivate_diagnostics[key], ref.nonprivate_diagnostics[key], key)
    for key in ("theta_final", "lambda1", "lambda2"):
        if key in ref.diagnostics:
            _same(new.diagnostics[key], ref.diagnostics[key], key)
    assert new.budget_spent == ref.budget_spent
    if algorithm == "dp_2s_gd" and math.isfinite(clip) and clip < 1:
        assert np.all(ref.nonprivate_diagnostics["clip_fraction_theta"] > 0)
