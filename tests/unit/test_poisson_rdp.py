"""The RDP epsilon with skipped orders equals the full dp-accounting RdpAccountant (issue 18).

Equality is exact (``==`` on floats): the calibrated noise of DP-SGD (Poisson) and so its
draws must not move. The grid covers the calibration's brackets (sigma from 0.05 e^-4 to
2 e^6) at the benchmark's rules (q = 1/sqrt(n), one epoch, delta = 1/n^2).
"""

from __future__ import annotations

import logging
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpreg.privacy.poisson_rdp import ZERO_GUARD, poisson_rdp_epsilon, poisson_rdp_epsilon_full

logging.getLogger("absl").setLevel(logging.ERROR)  # non-converged orders: excluded by both

SIGMAS = np.exp(np.linspace(math.log(0.05) - 4, math.log(2.0) + 6, 16)).tolist()


@pytest.mark.parametrize("n", [50, 1503, 45000, 10**6])
def test_equal_to_the_full_accountant_on_the_benchmark_rules(n):
    q = math.sqrt(n) / n
    steps, delta = math.ceil(1 / q), 1.0 / n**2
    for sigma in [*SIGMAS, 0.05, 2.0]:
        assert poisson_rdp_epsilon(sigma, q, steps, delta) == poisson_rdp_epsilon_full(
            sigma, q, steps, delta
        ), (n, sigma)


@settings(max_examples=80, deadline=None)
@given(
    log_sigma=st.floats(math.log(0.1), math.log(50.0)),
    log_q=st.floats(math.log(1e-4), math.log(0.5)),
    steps=st.integers(1, 5000),
    log_delta=st.floats(math.log(1e-12), math.log(1e-3)),
)
def test_equal_to_the_full_accountant_on_random_inputs(log_sigma, log_q, steps, log_delta):
    args = (math.exp(log_sigma), math.exp(log_q), steps, math.exp(log_delta))
    assert poisson_rdp_epsilon(*args) == poisson_rdp_epsilon_full(*args)


def test_no_sampling_and_tiny_rdp_take_the_full_accountant(monkeypatch):
    import dpreg.privacy.poisson_rdp as module

    calls = []
    real = module.poisson_rdp_epsilon_full
    monkeypatch.setattr(module, "poisson_rdp_epsilon_full", lambda *a: calls.append(a) or real(*a))
    assert poisson_rdp_epsilon(1.0, 1.0, 10, 1e-5) == real(1.0, 1.0, 10, 1e-5)
    # Pinsker bound 2 T (q (2 Phi(1/(2 sigma)) - 1))^2 below the guard at sigma = 1e4
    assert 2 * (1e-3 * 0.5 / 1e4 / math.sqrt(2 * math.pi)) ** 2 < ZERO_GUARD
    assert poisson_rdp_epsilon(1e4, 1e-3, 1, 1e-5) == real(1e4, 1e-3, 1, 1e-5)
    assert len(calls) == 2
    calls.clear()
    poisson_rdp_epsilon(1.0, 0.01, 100, 1e-5)
    assert calls == []  # the skipping path


@settings(max_examples=200, deadline=None)
@given(
    alpha=st.integers(1, 1100),
    log_q=st.floats(math.log(1e-6), math.log(0.999)),
    log_sigma=st.floats(math.log(0.01), math.log(1e4)),
)
def test_log_a_int_is_the_accountants_float(alpha, log_q, log_sigma):
    # The same float (==) as dp-accounting's own binomial sum at an integer order: the
    # calibrated noise multiplier of DP-SGD (Poisson) and so its draws do not move.
    from dp_accounting.rdp import rdp_privacy_accountant as rdp

    from dpreg.privacy.poisson_rdp import _rdp_at, log_a_int

    q, sigma = math.exp(log_q), math.exp(log_sigma)
    assert log_a_int(q, sigma, alpha) == rdp._compute_log_a_int(q, sigma, alpha)
    order = float(alpha)
    expected = float(rdp._compute_rdp_poisson_subsampled_gaussian(q, sigma, [order])[0])
    if alpha >= 2:
        assert _rdp_at(q, sigma, order) == expected


def test_log_a_int_control_and_bad_input_named():
    from dpreg.privacy.poisson_rdp import log_a_int

    # A control: q = 1/2, sigma large: A_2 -> 1 from above; a known value at order 2,
    # log((1-q)^2 + 2 q (1-q) + q^2 e^{1/sigma^2}).
    q, sigma = 0.5, 2.0
    expected = math.log(0.25 + 0.5 + 0.25 * math.exp(1 / sigma**2))
    assert math.isclose(log_a_int(q, sigma, 2), expected, rel_tol=1e-12)
    with pytest.raises(ValueError, match="alpha"):
        log_a_int(0.1, 1.0, 0)
    with pytest.raises(ValueError, match="q"):
        log_a_int(1.0, 1.0, 3)
    with pytest.raises(ValueError, match="sigma"):
        log_a_int(0.1, 0.0, 3)


@settings(max_examples=200, deadline=None)
@given(
    alpha=st.floats(1.01, 300.0).filter(lambda a: not a.is_integer()),
    log_q=st.floats(math.log(1e-6), math.log(0.999)),
    log_sigma=st.floats(math.log(0.01), math.log(1e4)),
)
def test_log_a_frac_is_the_accountants_float(alpha, log_q, log_sigma):
    # The same float (==) as dp-accounting's series at a fractional order, inf included
    # (a series that does not stop within its 1000 terms).
    from dp_accounting.rdp import rdp_privacy_accountant as rdp

    from dpreg.privacy.poisson_rdp import _rdp_at, log_a_frac

    q, sigma = math.exp(log_q), math.exp(log_sigma)
    assert log_a_frac(q, sigma, alpha) == rdp._compute_log_a_frac(q, sigma, alpha)
    expected = float(rdp._compute_rdp_poisson_subsampled_gaussian(q, sigma, [alpha])[0])
    assert _rdp_at(q, sigma, alpha) == expected


@pytest.mark.parametrize("q", [1e-3, 0.0047, 0.05, 0.4])
def test_log_a_frac_on_the_default_fractional_orders(q):
    # The accountant's own fractional orders (1.1, 1.2, ..., 10.9) over the brackets.
    from dp_accounting.rdp import rdp_privacy_accountant as rdp

    from dpreg.privacy.poisson_rdp import log_a_frac

    orders = [float(a) for a in rdp.DEFAULT_RDP_ORDERS if not float(a).is_integer()]
    assert len(orders) > 80
    for alpha in orders:
        for sigma in SIGMAS[::3]:
            assert log_a_frac(q, sigma, alpha) == rdp._compute_log_a_frac(q, sigma, alpha)


def test_log_a_frac_bad_input_named():
    from dpreg.privacy.poisson_rdp import log_a_frac

    with pytest.raises(ValueError, match="alpha"):
        log_a_frac(0.1, 1.0, 1.0)
    with pytest.raises(ValueError, match="q"):
        log_a_frac(0.0, 1.0, 2.5)
    with pytest.raises(ValueError, match="sigma"):
        log_a_frac(0.1, -1.0, 2.5)
