"""Blocked correlated noise of DP-FTRL against the former implementation (issue 18)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import fft as sp_fft

import dpreg.estimators.ftrl as ftrl
import dpreg.estimators.ftrl_noise as ftrl_noise
from dpreg.estimators.ftrl import fit_dp_ftrl, simulate_streaming_regression
from dpreg.estimators.ftrl_correlations import (
    damped_anti_pgd,
    finite_toeplitz,
    independent,
    nu_ftrl,
)
from dpreg.estimators.ftrl_noise import correlated_noise, correlated_noise_reference
from dpreg.experiments.choquettechoo2023 import run_linreg_sim
from dpreg.privacy.budgets import ZCDP

CORRELATIONS = [nu_ftrl(0.01), damped_anti_pgd(0.1), independent(), finite_toeplitz([2.0])]


@pytest.mark.parametrize("T", [1, 2, 9, 4097, 9001])
@pytest.mark.parametrize("corr", CORRELATIONS, ids=lambda c: c.name)
@pytest.mark.parametrize("precision", ["double", "single"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_blocked_noise_equals_reference_bit_for_bit(T, corr, precision, dtype):
    # several FFT column batches (37 = 2 x 16 + 5) and direct-path time blocks (T > 4096)
    w = np.random.default_rng(T).standard_normal((T, 37)).astype(dtype)
    beta = corr.coefficients(T)
    ref = correlated_noise_reference(beta, w, precision=precision)
    fast = correlated_noise(beta, w, precision=precision)
    assert fast.dtype == ref.dtype and fast.shape == ref.shape
    np.testing.assert_array_equal(fast, ref)
    if w.dtype == fast.dtype:
        inplace = w.copy()
        assert correlated_noise(beta, inplace, precision=precision, out=inplace) is inplace
        np.testing.assert_array_equal(inplace, ref)


@pytest.mark.parametrize("columns_per_fft", [1, 3, 8])
def test_fft_batch_width_does_not_change_the_values(monkeypatch, columns_per_fft):
    T = 700
    n_fft = sp_fft.next_fast_len(2 * T - 1, real=True)
    monkeypatch.setattr(ftrl_noise, "_FFT_BUFFER_BYTES", columns_per_fft * n_fft * 4)
    w = np.random.default_rng(1).standard_normal((T, 21))
    beta = nu_ftrl(0.02).coefficients(T)
    ref = correlated_noise_reference(beta, w, precision="single")
    np.testing.assert_array_equal(correlated_noise(beta, w, precision="single"), ref)


def test_blocked_noise_keeps_the_reference_sign_of_zero():
    w = np.array([[-0.0, 1.0], [2.0, -0.0]], dtype=np.float32)
    beta = independent().coefficients(2)
    ref = correlated_noise_reference(beta, w, precision="single")
    fast = correlated_noise(beta, w.copy(), precision="single")
    np.testing.assert_array_equal(np.signbit(fast), np.signbit(ref))


@settings(max_examples=40, deadline=None)
@given(
    T=st.integers(1, 300),
    cols=st.integers(1, 40),
    taps=st.lists(st.floats(-2, 2, allow_nan=False, width=32), min_size=1, max_size=20),
    seed=st.integers(0, 2**31),
)
def test_blocked_noise_equals_reference_for_any_beta(T, cols, taps, seed):
    w = np.random.default_rng(seed).standard_normal((T, cols, 1))
    np.testing.assert_array_equal(correlated_noise(taps, w), correlated_noise_reference(taps, w))


@settings(max_examples=60, deadline=None)
@given(
    n_fft=st.integers(1, 400),
    rows=st.integers(1, 9),
    extra=st.integers(0, 3),
    single=st.booleans(),
    seed=st.integers(0, 2**31),
)
def test_buffered_fft_equals_scipy_public_calls_bit_for_bit(n_fft, rows, extra, single, seed):
    # the pocketfft calls with out= (buffers reused across blocks, possibly wider than the
    # block) against scipy.fft.rfft / irfft, which the reference path calls
    assert ftrl_noise._pocketfft() is not None  # this scipy passes the check
    dtype = np.float32 if single else np.float64
    rng = np.random.default_rng(seed)
    outputs = ftrl_noise._Outputs(rows + extra, n_fft, dtype)
    b_hat = sp_fft.rfft(rng.standard_normal(n_fft).astype(dtype))
    for _ in range(2):  # the second block reuses the buffers
        block = np.zeros((rows, n_fft), dtype)
        block[:, : (n_fft + 1) // 2] = rng.standard_normal((rows, (n_fft + 1) // 2))
        want = ftrl_noise._public_convolve(block, b_hat)
        got = outputs.convolve(block, b_hat)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


@pytest.mark.parametrize("rows", [False, True])
def test_noise_without_the_buffered_fft_is_unchanged(monkeypatch, rows):
    # a scipy whose private pocketfft fails the check: the public calls, the same values
    T = 3000
    w = np.random.default_rng(5).standard_normal((T, 19)).astype(np.float32)
    beta = nu_ftrl(0.01).coefficients(T)
    ref = correlated_noise_reference(beta, w, precision="single")
    monkeypatch.setattr(ftrl_noise, "_pocketfft", lambda: None)
    if rows:
        got = ftrl_noise.correlated_noise_rows(
            beta, np.ascontiguousarray(w.T), precision="single"
        ).T
    else:
        got = correlated_noise(beta, w, precision="single")
    np.testing.assert_array_equal(got.view(np.uint32), ref.view(np.uint32))


@settings(max_examples=15, deadline=None)
@given(
    sizes=st.lists(st.tuples(st.integers(1, 700), st.integers(1, 6)), min_size=1, max_size=3),
    trials=st.integers(1, 5),
    group_bytes=st.integers(1, 60_000),
    sgd=st.booleans(),
    seed=st.integers(0, 2**31),
)
def test_shared_noise_workspace_gives_the_values_of_fresh_arrays(
    sizes, trials, group_bytes, sgd, seed
):
    # successive simulations (T, d) through one workspace, several seed groups each
    # (group_bytes), against each simulation with its own fresh arrays, bit for bit
    ws = ftrl_noise.NoiseWorkspace()
    corr = independent() if sgd else nu_ftrl(0.02)
    for T, d in sizes:
        lam = 1.0 / np.arange(1, d + 1)
        kw = dict(correlation=corr, eta=0.05, T=T, trials=trials, record_every=7)
        kw.update(max_noise_bytes=group_bytes, sigma_sgd=0.2)
        got = simulate_streaming_regression(
            lam, rng=np.random.default_rng(seed), workspace=ws, **kw
        )
        ref = simulate_streaming_regression(lam, rng=np.random.default_rng(seed), **kw)
        np.testing.assert_array_equal(
            got.suboptimality.view(np.uint64), ref.suboptimality.view(np.uint64)
        )
        np.testing.assert_array_equal(got.trace.view(np.uint64), ref.trace.view(np.uint64))


def test_noise_workspace_grows_and_reuses_its_buffer():
    ws = ftrl_noise.NoiseWorkspace()
    a = ws.array((3, 4))
    assert a.flags.c_contiguous and a.dtype == np.float32 and a.shape == (3, 4)
    assert np.shares_memory(ws.array((2, 5)), a)  # smaller: the same buffer
    big = ws.array((5, 5))
    assert big.shape == (5, 5) and not np.shares_memory(big, a)  # larger: a new one


def test_out_must_match_shape_dtype_and_layout():
    w = np.ones((5, 3))
    for bad in (np.ones((5, 2)), np.ones((5, 3), np.float32), np.ones((3, 5)).T, [1.0]):
        with pytest.raises(ValueError, match="out must be"):
            correlated_noise([1.0, 0.5], w, out=bad)
    with pytest.raises(ValueError, match="precision"):
        correlated_noise([1.0], w, precision="half")


def _former_simulation(lam, corr, eta, T, rng, trials, sigma_sgd, initial_distance, cap):
    """Frozen copy of the simulation before issue 18 (two noise arrays, fresh blocks)."""
    d = lam.size
    noise_std = math.sqrt(corr.gamma_inf_sq / 2.0)
    beta = corr.coefficients(T)
    sqrt_lam = np.sqrt(lam)
    start_tail = T - max(1, int(round(0.5 * T)))
    n_tail = T - start_tail
    record_steps = np.arange(0, T, 100)
    group = max(1, min(trials, int(cap // (8 * T * d))))
    subopt = np.empty(trials)
    trace = np.empty((trials, record_steps.size))
    for first in range(0, trials, group):
        g = min(group, trials - first)
        w = rng.standard_normal((T, g * d), dtype=np.float32)
        w *= np.float32(eta * noise_std)
        noise = correlated_noise_reference(beta, w, precision="single").reshape(T, g, d)
        delta = np.full((g, d), initial_distance / math.sqrt(d))
        acc = np.zeros((g, d))
        rec = 0
        for block in range(0, T, 2048):
            stop = min(block + 2048, T)
            X = rng.standard_normal((stop - block, g, d), dtype=np.float32).astype(np.float64)
            X *= sqrt_lam
            X_eta = X * eta
            N = noise[block:stop].astype(np.float64)
            if sigma_sgd > 0:
                xi = sigma_sgd * rng.standard_normal((stop - block, g))
            for i, t in enumerate(range(block, stop)):
                r = ftrl._rowdot(X[i], delta)  # np.vecdot, as the former code
                if sigma_sgd > 0:
                    r -= xi[i]
                delta -= X_eta[i] * r[:, None] + N[i]
                if t >= start_tail:
                    acc += delta * delta
                if t % 100 == 0:
                    trace[first : first + g, rec] = 0.5 * ((delta * delta) @ lam)
                    rec += 1
        subopt[first : first + g] = 0.5 * (acc @ lam) / n_tail
    return subopt, trace


@pytest.mark.parametrize("corr", [nu_ftrl(0.0125), independent()], ids=lambda c: c.name)
@pytest.mark.parametrize("groups", [1, 3])
@pytest.mark.parametrize(("sigma_sgd", "initial_distance"), [(0.0, 0.0), (0.5, 2.0)])
def test_simulation_equals_a_frozen_copy_of_the_former_code(
    corr, groups, sigma_sgd, initial_distance
):
    lam, eta, T, trials = 1.0 / np.arange(1, 6), 0.05, 4500, 5
    cap = 4 * T * lam.size * 2 if groups == 3 else 2**29  # 2 seeds per group: 2 + 2 + 1
    fast = simulate_streaming_regression(
        lam,
        correlation=corr,
        eta=eta,
        T=T,
        rng=np.random.default_rng(3),
        trials=trials,
        sigma_sgd=sigma_sgd,
        initial_distance=initial_distance,
        max_noise_bytes=cap,
        kernel="numpy",  # the reference loop; the compiled one: tests/unit/test_ftrl_sim_kernel.py
    )
    # the former cap counted two float32 arrays (8 T d bytes per seed): twice the new one
    subopt, trace = _former_simulation(
        lam, corr, eta, T, np.random.default_rng(3), trials, sigma_sgd, initial_distance, 2 * cap
    )
    np.testing.assert_array_equal(fast.suboptimality, subopt)
    np.testing.assert_array_equal(fast.trace, trace)


@pytest.fixture
def reference_noise(monkeypatch):
    """The simulation's noise through the former implementation (a fresh array, no out)."""

    def former(beta, w, *, precision="double", out=None):
        del out
        return correlated_noise_reference(beta, w, precision=precision)

    monkeypatch.setattr(ftrl, "correlated_noise", former)


def test_fig2_rows_equal_the_former_noise_path_byte_for_byte(request):
    cell = {
        "panel": "d",
        "mechanism": ["sgd", "nu_ftrl"],
        "d": [4, 8],
        "eta": 0.02,
        "T": 3000,
        "record_every": 50,
    }
    fast = run_linreg_sim(cell, trials=3, first_trial=0, seed=7)
    request.getfixturevalue("reference_noise")
    ref = run_linreg_sim(cell, trials=3, first_trial=0, seed=7)
    pd.testing.assert_frame_equal(fast, ref, check_exact=True)


def test_dp_ftrl_equals_the_former_noise_path_bit_for_bit(request):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3)) / 3
    y = X @ np.array([0.5, -0.3, 0.2])
    kw = {"budget": ZCDP(1.0), "trials": 4, "eta": 0.1, "clip": 1.0, "nu": 0.05}
    fast = fit_dp_ftrl(X, y, rng=np.random.default_rng(1), **kw)
    request.getfixturevalue("reference_noise")
    ref = fit_dp_ftrl(X, y, rng=np.random.default_rng(1), **kw)
    np.testing.assert_array_equal(fast.theta, ref.theta)
    assert fast.budget_spent == ref.budget_spent
