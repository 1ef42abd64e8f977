"""The fused steps of the tiled batched recursion against the reference loop: the same bits.

:func:`dpreg.estimators.iv._fused_steps` (``_STEP_PATH = "fused"``) replaces the numpy
bookkeeping of each step of :func:`dpreg.estimators.iv._iterate` on the tiled batched
kernel by :mod:`dpreg.estimators._iv_step_jit`; the iterates, paths and clip fractions
must be the reference loop's (``"numpy"``) bit for bit, with the same draws (the
generator ends in the same state), for any number of trials (padded tiles), either
stage alone, with or without noise, and trials whose iterate diverges.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpreg.estimators import _iv_step_jit as jit
from dpreg.estimators import iv, iv_batched
from dpreg.estimators.iv import _prepare, fit_dp_two_stage_gd, fit_dp_two_stage_gd_beta
from dpreg.estimators.iv_batched import TILE_LANES, _from_tiles, _to_tiles


def _batched(seed: int, trials: int, n: int, q: int, p: int):
    rng = np.random.default_rng(seed)
    Theta = 5.0 * np.eye(q, p) + rng.normal(size=(q, p))
    Z = rng.normal(size=(trials, n, q))
    u = rng.normal(size=(trials, n, 1))
    X = Z @ Theta + u + rng.normal(size=(trials, n, p))
    y = X @ rng.normal(size=p) + u[..., 0] + rng.normal(size=(trials, n))
    return Z, X, y


def _same_bits(a: np.ndarray, b: np.ndarray) -> None:
    """Equal shapes and dtypes, NaN where NaN, every other value's bits (signed zeros)."""
    assert a.shape == b.shape and a.dtype == b.dtype
    nan = np.isnan(b)
    assert np.array_equal(np.isnan(a), nan)
    assert np.array_equal(a[~nan].view(np.int64), b[~nan].view(np.int64))


def _run(path: str, d, kw: dict, seed: int, monkeypatch) -> tuple[dict, dict]:
    monkeypatch.setattr(iv, "_STEP_PATH", path)
    rng = np.random.default_rng(seed)
    run = iv._iterate(d, rng=rng, **kw)
    return run, rng.bit_generator.state


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    shape=st.sampled_from([(1, 1), (3, 2), (5, 5), (8, 8)]),
    trials=st.integers(1, 2 * TILE_LANES + 3),
    n=st.integers(8, 30),
    T=st.integers(1, 12),
    clips=st.sampled_from(
        [(1.0, 1.0), (0.05, 10.0), (100.0, 0.05), (math.inf, 3.0), (3.0, math.inf)]
    ),
    lambdas=st.sampled_from([(0.0, 0.0), (0.5, 0.0), (0.0, 0.5), (0.3, 2.0)]),
    steps=st.sampled_from([(1.0, 0.02), (0.3, 0.5), (40.0, 40.0)]),  # the last diverges
    return_path=st.booleans(),
)
def test_fused_steps_give_the_reference_loops_bits(
    seed, shape, trials, n, T, clips, lambdas, steps, return_path
):
    q, p = shape
    Z, X, y = _batched(seed, trials, n, q, p)
    d = _prepare(Z, X, y, trials)
    kw = dict(trials=trials, T=T, step_theta=steps[0], step_beta=steps[1], clip_theta=clips[0],
              clip_beta=clips[1], lambda1=lambdas[0], lambda2=lambdas[1],
              return_path=return_path, kernel="fast")  # fmt: skip
    with pytest.MonkeyPatch.context() as mp:
        fused, state_f = _run("fused", d, kw, seed + 1, mp)
        ref, state_r = _run("numpy", d, kw, seed + 1, mp)
    assert state_f == state_r  # the same draws, in the same order
    for key in ("beta", "Theta", "clip_fraction_theta", "clip_fraction_beta"):
        _same_bits(fused[key], ref[key])
    for key in ("beta_path", "theta_path"):
        assert (fused[key] is None) == (ref[key] is None)
        if ref[key] is not None:
            _same_bits(fused[key], ref[key])
    assert fused["n_nonfinite"] == ref["n_nonfinite"]


def test_the_fused_path_runs_where_the_tiles_run(monkeypatch):
    """Batched data with q p <= 64 and a clipped stage: ``_fused_steps``; else the loop."""
    calls = []
    real = iv._fused_steps
    monkeypatch.setattr(iv, "_fused_steps", lambda *a, **k: calls.append(1) or real(*a, **k))
    Z, X, y = _batched(1, 4, 20, 3, 2)
    kw = dict(trials=4, T=3, step_theta=1.0, step_beta=0.1, clip_theta=1.0, clip_beta=1.0,
              lambda1=0.1, lambda2=0.1, return_path=False)  # fmt: skip
    iv._iterate(_prepare(Z, X, y, 4), rng=np.random.default_rng(0), kernel="fast", **kw)
    assert calls == [1]
    iv._iterate(_prepare(Z, X, y, 4), rng=np.random.default_rng(0), kernel="rows", **kw)
    assert calls == [1]  # the reference rows kernel: no tiles, the loop
    monkeypatch.setattr(iv_batched, "_PATH", "loops")
    iv._iterate(_prepare(Z, X, y, 4), rng=np.random.default_rng(0), kernel="fast", **kw)
    assert calls == [1]


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    shape=st.sampled_from([(1, 1), (3, 2), (5, 5)]),
    trials=st.integers(1, 2 * TILE_LANES + 3),
)
def test_pack_and_unpack_move_the_reference_layouts_values(seed, shape, trials):
    q, p = shape
    rng = np.random.default_rng(seed)
    Theta, v = rng.normal(size=(trials, q, p)), rng.normal(size=(trials, q))
    tiles = -(-trials // TILE_LANES)
    S = np.full((tiles, q * p + q, TILE_LANES), np.nan)
    jit.pack(Theta, v, S)
    _same_bits(S, _to_tiles(np.concatenate([Theta.reshape(trials, q * p), v], axis=1)))
    Out = rng.normal(size=(tiles, q * p + q + 3 + p, TILE_LANES))
    Out[:, q * p + q : q * p + q + 2] = rng.integers(0, 50, size=(tiles, 2, TILE_LANES))
    out = _from_tiles(Out.copy(), trials)
    G1, S2 = np.empty((trials, q, p)), np.empty((trials, q))
    f1, f2 = np.full((trials, 3), -1.0), np.full((trials, 3), -1.0)
    jit.unpack(Out, G1, S2, f1, f2, 1, 50.0, True, True)
    _same_bits(G1, out[:, : q * p].reshape(trials, q, p))
    _same_bits(S2, out[:, q * p : q * p + q])
    _same_bits(f1[:, 1], out[:, q * p + q].astype(np.int64) / 50)
    _same_bits(f2[:, 1], out[:, q * p + q + 1].astype(np.int64) / 50)
    assert (f1[:, [0, 2]] == -1.0).all() and not Out.any()  # one column; Out zeroed


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    trials=st.integers(1, 9),
    scale=st.sampled_from([1e-300, 1.0, 1e150, 1e300]),
    noise=st.booleans(),
    specials=st.booleans(),
)
def test_update_is_the_reference_expression(seed, trials, scale, noise, specials):
    rng = np.random.default_rng(seed)
    q, p, n = 4, 3, 37
    Theta, beta = scale * rng.normal(size=(trials, q, p)), scale * rng.normal(size=(trials, p))
    G1, G2 = scale * rng.normal(size=(trials, q, p)), scale * rng.normal(size=(trials, p))
    if specials:
        G1[0, 0, :] = [np.inf, -0.0, np.nan]
        Theta[-1, -1, :] = [-np.inf, 0.0, -0.0]
    xi, nu = rng.normal(size=(trials, q, p)), rng.normal(size=(trials, p))
    lambda1, lambda2, step_theta, step_beta = 0.7, 1.3, 0.9, 1e-3
    Tn, bn = np.empty_like(Theta), np.empty_like(beta)
    with np.errstate(all="ignore"):
        jit.update(Theta, beta, G1, G2, float(n), step_theta, step_beta,
                   xi if noise else np.empty((0, q, p)), lambda1,
                   nu if noise else np.empty((0, p)), lambda2, Tn, bn)  # fmt: skip
        ref_T = Theta - step_theta * (G1 / n)
        ref_b = beta - step_beta * (G2 / n)
        if noise:
            x, u = xi.copy(), nu.copy()
            x *= lambda1
            x *= step_theta
            ref_T += x
            u *= lambda2
            u *= step_beta
            ref_b += u
    _same_bits(Tn, ref_T)
    _same_bits(bn, ref_b)


@pytest.mark.parametrize("fit", ["dp_2s_gd", "dp_2s_gd_beta"])
@pytest.mark.parametrize("trials", [20, 7, 45])
def test_whole_fits_are_the_same_bits(fit, trials, monkeypatch):
    n, q, p, T = 300, 5, 5, 40
    Z, X, y = _batched(11, trials, n, q, p)
    runs = {}
    for path in ("fused", "numpy"):
        monkeypatch.setattr(iv, "_STEP_PATH", path)
        kw = dict(T=T, step_theta=1.0, step_beta=0.02, trials=trials, clip_beta=8.0,
                  rng=np.random.default_rng(3), kernel="fast", calibration="paper")  # fmt: skip
        if fit == "dp_2s_gd":
            runs[path] = fit_dp_two_stage_gd(Z, X, y, rho1=1.0, rho2=1.0, clip_theta=8.0, **kw)
        else:
            runs[path] = fit_dp_two_stage_gd_beta(Z, X, y, rho2=1.0, **kw)
    a, b = runs["fused"], runs["numpy"]
    _same_bits(a.theta, b.theta)
    _same_bits(a.path, b.path)
    _same_bits(a.diagnostics["theta_final"], b.diagnostics["theta_final"])
    for key in ("clip_fraction_theta", "clip_fraction_beta"):
        _same_bits(a.nonprivate_diagnostics[key], b.nonprivate_diagnostics[key])
    frac = a.nonprivate_diagnostics["clip_fraction_beta"]
    assert 0.0 < frac.mean() < 1.0  # some rows clipped, not all: the clip path is exercised
    for key in ("lambda1", "lambda2", "rho_certified", "kernel"):
        assert a.diagnostics[key] == b.diagnostics[key]
    assert a.budget_spent == b.budget_spent
