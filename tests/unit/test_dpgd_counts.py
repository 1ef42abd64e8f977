"""GramRowGradient's counts of uncertified rows: the fast paths against their references.

Issue 18, session 25 (docs/scaling.md, "Cost of a paper-scale run"): the fixed
certificate's rows left are counted per call instead of searched in the radii sorted once
per data set (``dpgd._UNCERTIFIED_PATH``), and the recent certificate's rows left before
its product are counted by one compiled pass instead of numpy temporaries
(``_dpgd_recent._COUNT_PATH``). Both are integer counts of the same comparisons, so every
decision, hence every bit of a run, is the reference's.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpreg.estimators._dpgd_recent as recent_mod
import dpreg.estimators.dpgd as dpgd_mod
from dpreg.estimators._dpgd_recent_jit import uncertified
from dpreg.estimators.dpgd import GramRowGradient, fit_dp_gd
from dpreg.privacy.budgets import ZCDP

_SPECIAL = [math.inf, -math.inf, math.nan, 0.0, -0.0]


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(0, 300),
    points=st.integers(1, 6),
    worst=st.sampled_from([0.0, 0.5, 1.0, math.inf, -math.inf]),
    specials=st.integers(0, 20),
)
def test_compiled_count_equals_the_numpy_expression(seed, n, points, worst, specials):
    """The compiled count of the rows left is ``n`` minus numpy's count of the certified
    rows, with ties, signed zeros, infinities and NaN (NaN compares false in both)."""
    rng = np.random.default_rng(seed)
    tau_fixed = np.round(rng.normal(size=n), 1)
    tau = np.round(rng.normal(size=n), 1)
    dist = np.round(np.abs(rng.normal(size=points)), 1)
    point = rng.integers(0, points, size=n)
    for arr in (tau_fixed, tau, dist):
        if arr.size:
            where = rng.integers(0, arr.size, size=specials)
            arr[where] = rng.choice(_SPECIAL, size=specials)
    with np.errstate(invalid="ignore"):
        certified = (tau_fixed >= worst) | (dist[point] <= tau)
    assert uncertified(tau_fixed, float(worst), dist, point, tau) == n - np.count_nonzero(certified)


def _data(seed: int, n: int, p: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    y = X @ (rng.standard_normal(p) / math.sqrt(p)) + rng.standard_normal(n)
    X[3] = 0.0  # a zero row: its radius is +-inf
    return X, y


def _fit(X, y, clip, mode, monkeypatch, uncertified_path, count_path):
    monkeypatch.setattr(dpgd_mod, "_UNCERTIFIED_PATH", uncertified_path)
    monkeypatch.setattr(recent_mod, "_COUNT_PATH", count_path)
    kernel = GramRowGradient(X, y, clip, mode)
    kw = dict(budget=ZCDP(0.015), T=20, step=0.2, clip=clip, clip_mode=mode, bound_X=None)
    kw["bound_y"] = None
    if mode == "residual":
        kw["bound_X"] = float(np.linalg.norm(X, axis=1).max())
    fit = fit_dp_gd(X, y, rng=np.random.default_rng(5), kernel=kernel, **kw)
    return fit, kernel


@settings(max_examples=6, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    mode=st.sampled_from(["gradient", "residual"]),
    clip_scale=st.sampled_from([0.5, 1.0, 3.0]),
)
def test_dp_gd_runs_are_bitwise_the_references(seed, mode, clip_scale):
    """DP-GD with the Gram kernel (both certificates, d >= 32 so the recent certificate
    counts before its product): the iterates, clip fractions and rows computed of the
    fast counts equal those of both references bit for bit."""
    n, p = 6000, 34
    X, y = _data(seed, n, p)
    clip = clip_scale * math.sqrt(p) if mode == "gradient" else clip_scale
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(dpgd_mod, "_use_compiled", lambda pairs: True)
        monkeypatch.setattr(dpgd_mod, "_RECENT_MIN_WORK", 0)  # small data: the recent pass
        runs = [
            _fit(X, y, clip, mode, monkeypatch, path, count)
            for path, count in (("count", "compiled"), ("sorted", "reference"))
        ]
    (a, ka), (b, kb) = runs
    assert np.array_equal(a.theta, b.theta)
    clip_a = a.nonprivate_diagnostics["clip_fraction"]
    assert np.array_equal(clip_a, b.nonprivate_diagnostics["clip_fraction"])
    assert ka.rows_computed == kb.rows_computed
    assert ka.recent is not None and np.array_equal(ka.recent.tau, kb.recent.tau)


def test_uncertified_counts_equal_the_sorted_search(monkeypatch):
    """The fixed certificate's count of rows left equals the search of the sorted radii
    at distances around every radius (ties included), and no sort is kept by default."""
    X, y = _data(2, 3000, 5)
    kernel = GramRowGradient(X, y, 2.0)
    assert kernel.tau_sorted is None
    monkeypatch.setattr(dpgd_mod, "_UNCERTIFIED_PATH", "sorted")
    reference = GramRowGradient(X, y, 2.0)
    rng = np.random.default_rng(0)
    ref = reference.theta_ref
    finite = kernel.tau[np.isfinite(kernel.tau)]
    for dist in [0.0, 1e-3, *rng.choice(finite, 20), *np.abs(rng.normal(size=10))]:
        if dist < 0:
            continue
        direction = rng.standard_normal(5)
        theta = ref + dist * direction / np.linalg.norm(direction)
        monkeypatch.setattr(dpgd_mod, "_UNCERTIFIED_PATH", "count")
        got = kernel._uncertified(theta[:, None])
        monkeypatch.setattr(dpgd_mod, "_UNCERTIFIED_PATH", "sorted")
        assert got == reference._uncertified(theta[:, None])


@settings(max_examples=80, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(3, 200),
    p=st.integers(1, 5),
    mode=st.sampled_from(["gradient", "residual"]),
    clip=st.sampled_from([1e-300, 1e-3, 0.7, 3.0, 1e6, 1e300]),
    zero_rows=st.integers(0, 3),
    scale=st.sampled_from([1e-160, 1e-8, 1.0, 1e8, 1e150]),
)
def test_compiled_radii_are_numpys_bit_for_bit(seed, n, p, mode, clip, zero_rows, scale):
    """The fixed certificate's radii from the compiled pass equal numpy's expressions bit
    for bit: zero rows (both modes), tiny and huge rows and clip levels (overflowing
    thresholds, NaN radii sent to -inf)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p)) * scale
    X[rng.integers(0, n, size=zero_rows)] = 0.0
    y = rng.standard_normal(n) * rng.choice([1e-3, 1.0, 1e5], size=n)
    taus = []
    with pytest.MonkeyPatch.context() as monkeypatch, np.errstate(all="ignore"):
        monkeypatch.setattr(dpgd_mod, "_use_compiled", lambda pairs: True)
        for path in ("compiled", "reference"):
            monkeypatch.setattr(dpgd_mod, "_RADII_PATH", path)
            kernel = GramRowGradient(X, y, clip, mode)
            taus.append(None if kernel.tau is None else kernel.tau.view(np.uint64).copy())
    if taus[0] is None:
        assert taus[1] is None
    else:
        assert np.array_equal(taus[0], taus[1])
