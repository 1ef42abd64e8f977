"""DP-AMBSSGD's compiled residual clipping on streamed rows against the numpy reference.

``ambssgd_pass(clip_kernel="numba")`` keeps numpy's products and row norms and does the
elementwise work of each batch chunk (response, clip test, count, scaling) in one compiled
pass (``clip_residuals``); ``clip_kernel="numpy"`` is the reference. Both must give the
same bits: the Varshney studies' rows are compared byte for byte (issue 18).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpreg.data.streams import GaussianStream
from dpreg.estimators.ambssgd_core import OracleInfo, ambssgd_pass
from dpreg.estimators.ambssgd_kernel import clip_residuals
from dpreg.experiments import varshney2022 as v


def _reference(Rm, base, z, sig, norms, zeta):
    """``ambssgd_pass``'s numpy operations on one chunk (the reference's order)."""
    Rm = Rm - base[:, :, None]
    if z is not None:
        Rm -= z[:, :, None] * sig[None, None, :]
    gnorm = np.abs(Rm) * norms[:, :, None]
    over = gnorm > zeta[:, None, :]
    if over.any():
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = np.where(over, zeta[:, None, :] / gnorm, 1.0)
        Rm *= scale
    return Rm, over.sum(axis=1)


def _clip_inputs(seed, D, k, R, with_z, scale):
    """Residuals, responses, noise, row norms (one zero row: never clipped, its factor
    zeta / 0 computed and not kept) and thresholds (0 and inf included) of a clip pass."""
    rng = np.random.default_rng(seed)
    Rm = rng.standard_normal((D, k, R)) * scale
    base = rng.standard_normal((D, k))
    z = rng.standard_normal((D, k)) if with_z else None
    sig = rng.choice([0.0, 0.01, 1.0], size=R)
    norms = np.abs(rng.standard_normal((D, k))) * 3.0
    if k:
        norms[0, 0] = 0.0
    zeta = rng.choice([0.0, 0.05, 0.5, 2.0, math.inf], size=(D, R))
    return Rm, base, z, sig, norms, zeta


@settings(max_examples=60, deadline=None)
@given(
    D=st.integers(1, 3),
    k=st.integers(1, 40),
    R=st.integers(1, 6),
    with_z=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
    scale=st.sampled_from([1e-3, 1.0, 1e3]),
)
def test_clip_residuals_equals_the_reference_bit_for_bit(D, k, R, with_z, seed, scale):
    Rm, base, z, sig, norms, zeta = _clip_inputs(seed, D, k, R, with_z, scale)
    want, counts = _reference(Rm, base, z, sig, norms, zeta)
    clipped = np.full((D, R), 2.0)
    got = clip_residuals(Rm.copy(), base, z, sig, norms, zeta, clipped)
    np.testing.assert_array_equal(got.view(np.uint64), want.view(np.uint64))
    np.testing.assert_array_equal(clipped, counts + 2.0)


def test_clip_residuals_reads_strided_views():
    # the stream hands the pass row ranges of a larger chunk (views across replicates)
    rng = np.random.default_rng(1)
    base_all, z_all = rng.standard_normal((2, 50)), rng.standard_normal((2, 50))
    base, z = base_all[:, 10:30], z_all[:, 10:30]
    Rm = rng.standard_normal((2, 20, 3))
    sig, norms, zeta = np.array([0.0, 0.5, 1.0]), np.full((2, 20), 2.0), np.full((2, 3), 1.0)
    want, counts = _reference(Rm, base, z, sig, norms, zeta)
    clipped = np.zeros((2, 3))
    got = clip_residuals(Rm.copy(), base, z, sig, norms, zeta, clipped)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(clipped, counts)
    assert 0 < counts.sum() < Rm.size  # some rows clipped, not all


def test_clip_residuals_needs_a_contiguous_product():
    Rm = np.zeros((2, 3, 4))[:, :, :2]
    with pytest.raises(ValueError, match="Rm"):
        clip_residuals(Rm, np.zeros((2, 3)), None, np.zeros(2), np.ones((2, 3)),
                       np.ones((2, 2)), np.zeros((2, 2)))  # fmt: skip


def _pass(clip_kernel, chunk_rows):
    cell = {
        "d": 6, "n": 30000, "sigma": [0.1, 0.0], "epsilon": [1.0, 8.0], "delta": 1e-6,
        "kappa": 10.0, "methods": ["ambssgd", "ambssgd_margin", "fixedclip", "oracleclip", "sgd"],
    }  # fmt: skip
    spec, lam, w_star, hp_by_sigma = v._setup(cell)
    runs, _ = v._stream_runs(spec, hp_by_sigma)
    hp = next(iter(hp_by_sigma.values()))
    return ambssgd_pass(
        GaussianStream(3, [0, 1, 2], lam, w_star, chunk_rows=chunk_rows),
        layout=spec["layout"], runs=runs, eta=hp.eta, x_norm=math.sqrt(hp.x_norm_sq),
        log_factor=hp.log_factor, n_queries=spec["K"], rng=np.random.default_rng(5),
        oracle=OracleInfo(w_star=w_star, H=lam, kappa=spec["kappa"]), clip_kernel=clip_kernel,
    )  # fmt: skip


@pytest.mark.parametrize("chunk_rows", [1000, 4096])
def test_stream_pass_is_bit_identical_to_the_reference(chunk_rows):
    ref, fast = _pass("numpy", chunk_rows), _pass("numba", chunk_rows)
    np.testing.assert_array_equal(fast.w_bar, ref.w_bar)
    np.testing.assert_array_equal(fast.w_last, ref.w_last)
    assert fast.steps.keys() == ref.steps.keys()
    for key, value in ref.steps.items():
        np.testing.assert_array_equal(fast.steps[key], value, err_msg=key)
    fraction = ref.steps["clip_fraction"].mean(axis=(0, 2))
    assert fraction.max() > 0.5 and (fraction == 0).any()  # clipping and none both covered


def test_stream_pass_rejects_an_unknown_clip_kernel():
    with pytest.raises(ValueError, match="clip_kernel"):
        _pass("fortran", 1000)


@settings(max_examples=60, deadline=None)
@given(
    D=st.integers(1, 3),
    k=st.integers(0, 30),
    R=st.integers(1, 40),
    with_z=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
    scale=st.sampled_from([1e-3, 1.0, 1e3]),
)
def test_simd_clip_equals_the_scalar_pass_bit_for_bit(D, k, R, with_z, seed, scale):
    """``clip_residuals``' SIMD pass (selects) against its scalar reference (branches)."""
    Rm, base, z, sig, norms, zeta = _clip_inputs(seed, D, k, R, with_z, scale)
    got, want = Rm.copy(), Rm.copy()
    c_got, c_want = np.full((D, R), 7.0), np.full((D, R), 7.0)
    clip_residuals(got, base, z, sig, norms, zeta, c_got, simd=True)
    clip_residuals(want, base, z, sig, norms, zeta, c_want, simd=False)
    assert got.tobytes() == want.tobytes()
    assert c_got.tobytes() == c_want.tobytes()
