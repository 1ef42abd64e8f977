"""The compiled step loop of the Fig. 2 simulation against the numpy reference loop."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpreg.estimators.ftrl import simulate_streaming_regression
from dpreg.estimators.ftrl_correlations import independent, nu_ftrl
from dpreg.estimators.ftrl_sim_kernel import sim_block


def _run(kernel: str, **kw):
    args = {
        "correlation": nu_ftrl(0.05),
        "eta": 0.05,
        "T": 600,
        "trials": 3,
        "record_every": 7,
        "initial_distance": 1.0,
    }
    args.update(kw)
    lam = args.pop("lam", 1.0 / np.arange(1, 9))
    seed = args.pop("seed", 0)
    return simulate_streaming_regression(
        lam, rng=np.random.default_rng(seed), kernel=kernel, **args
    )


def _assert_same(a, b) -> None:
    # same draws; only the order of the additions in two sums over coordinates differs
    np.testing.assert_allclose(a.suboptimality, b.suboptimality, rtol=1e-12, atol=0)
    np.testing.assert_allclose(a.trace, b.trace, rtol=1e-12, atol=1e-300)
    assert a.noise_multiplier == b.noise_multiplier
    assert a.sensitivity_sq == b.sensitivity_sq
    assert a.n_tail == b.n_tail


@settings(max_examples=20, deadline=None)
@given(
    d=st.integers(1, 12),
    T=st.integers(1, 5000),
    trials=st.integers(1, 4),
    record_every=st.integers(1, 50),
    sigma_sgd=st.sampled_from([0.0, 0.3]),
    sgd=st.booleans(),
    tail=st.sampled_from([0.1, 0.5, 1.0]),
    seed=st.integers(0, 2**32 - 1),
)
def test_kernel_equals_numpy_reference(d, T, trials, record_every, sigma_sgd, sgd, tail, seed):
    kw = {
        "lam": 1.0 / np.arange(1, d + 1),
        "T": T,
        "trials": trials,
        "record_every": record_every,
        "sigma_sgd": sigma_sgd,
        "correlation": independent() if sgd else nu_ftrl(0.05),
        "tail_fraction": tail,
        "seed": seed,
    }
    _assert_same(_run("numba", **kw), _run("numpy", **kw))


def test_kernel_equals_reference_across_seed_groups_and_blocks():
    # several seed groups (small noise cap) and several 2048-step input blocks
    kw = {"T": 5000, "trials": 5, "max_noise_bytes": 4 * 5000 * 8 * 2, "sigma_sgd": 0.2}
    _assert_same(_run("numba", **kw), _run("numpy", **kw))


def test_kernel_changes_with_the_seed():
    # the comparison above is not vacuous: another seed gives other values
    a, b = _run("numba", seed=1), _run("numba", seed=2)
    assert not np.allclose(a.suboptimality, b.suboptimality)


def test_unknown_kernel_is_named():
    with pytest.raises(ValueError, match="kernel"):
        _run("fortran")


def test_sim_block_one_step_by_hand():
    # delta = 1 - ((x eta) <x, delta> + noise), x = z sqrt(lam)
    z = np.array([[[1.0, 2.0]]], dtype=np.float32)
    noise = np.array([[[0.25, -0.5]]], dtype=np.float32)
    delta, acc, trace = np.ones((1, 2)), np.zeros((1, 2)), np.zeros((1, 1))
    lam = np.array([4.0, 1.0])
    rec = sim_block(
        z, noise, np.array([[0.5]]), delta, acc, trace, sqrt_lam=np.sqrt(lam), lam=lam,
        eta=0.1, first=0, rec=0, block=0, start_tail=1, record_every=1,
    )  # fmt: skip
    r = 1.0 * 2.0 * 1.0 + 2.0 * 1.0 * 1.0 - 0.5  # <x, delta> - xi
    expected = np.array([1.0 - (2.0 * 0.1 * r + 0.25), 1.0 - (2.0 * 0.1 * r - 0.5)])
    np.testing.assert_allclose(delta[0], expected, rtol=1e-15)
    assert rec == 1
    assert acc.tolist() == [[0.0, 0.0]]  # step 0 is before start_tail
    np.testing.assert_allclose(trace[0, 0], 0.5 * (lam @ expected**2), rtol=1e-15)
