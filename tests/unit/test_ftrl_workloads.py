"""The momentum / cooldown training workload and Table 3 under it (Choquette-Choo App. G.1)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpreg.estimators.ftrl_correlations import nu_ftrl, optimal_cc
from dpreg.estimators.ftrl_factorizations import prefix_matrix, toeplitz_factorization
from dpreg.estimators.ftrl_me import solve_me
from dpreg.estimators.ftrl_workloads import cooldown_schedule, momentum_cooldown_workload
from dpreg.theory.ftrl_table3 import ME_PREFIX_VARIANT, table3, toeplitz_workload_error

ME = "Multi-Epoch (ME)"


def _simulate_impulses(eta: np.ndarray, beta: float) -> np.ndarray:
    """Run m_t = beta m_{t-1} + g_t, theta_{t+1} = theta_t - eta_t m_t for every unit
    impulse g = e_s at once (column s); row t is -(theta_{t+1} - theta_0)."""
    T = len(eta)
    m = np.zeros(T)
    theta = np.zeros(T)
    rows = []
    for t in range(T):
        g = np.zeros(T)
        g[t] = 1.0  # impulse s = t enters at step t, in column s
        m = beta * m + g
        theta = theta - eta[t] * m
        rows.append(-theta.copy())
    return np.array(rows)


@settings(max_examples=25, deadline=None)
@given(
    T=st.integers(1, 40),
    beta=st.floats(0.0, 0.99),
    frac=st.floats(0.0, 1.0),
    final=st.floats(0.01, 1.0),
)
def test_workload_matches_a_simulation_of_the_recursion(T, beta, frac, final):
    A = momentum_cooldown_workload(T, beta, frac, final)
    eta = cooldown_schedule(T, frac, final)
    np.testing.assert_allclose(A, _simulate_impulses(eta, beta), rtol=1e-12, atol=1e-12)


def test_special_cases():
    # no momentum, no cooldown: the prefix-sum matrix of Eq. (12)
    np.testing.assert_array_equal(momentum_cooldown_workload(7, 0.0, 0.0), prefix_matrix(7))
    # constant learning rate: (1 - beta^(t-s+1)) / (1 - beta)
    T, beta = 9, 0.9
    t, s = np.meshgrid(np.arange(T), np.arange(T), indexing="ij")
    closed = np.where(t >= s, (1 - beta ** (t - s + 1)) / (1 - beta), 0.0)
    np.testing.assert_allclose(momentum_cooldown_workload(T, beta, 0.0), closed, rtol=1e-13)


def test_paper_schedule():
    eta = cooldown_schedule(2000)  # App. G.1: last 500 of 2000 steps, down to 0.05x
    assert np.all(eta[:1500] == 1.0)
    assert eta[-1] == pytest.approx(0.05)
    assert np.all(np.diff(eta[1500:]) < 0)
    np.testing.assert_allclose(np.diff(eta[1499:]), -0.95 / 500)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"momentum": 1.0}, "momentum"),
        ({"momentum": -0.1}, "momentum"),
        ({"cooldown_fraction": 1.5}, "cooldown_fraction"),
        ({"final_lr_factor": 0.0}, "final_lr_factor"),
        ({"final_lr_factor": True}, "final_lr_factor"),
    ],
)
def test_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        momentum_cooldown_workload(10, **kwargs)


def test_toeplitz_workload_error_matches_the_dense_product():
    A = momentum_cooldown_workload(30, 0.9, 0.25, 0.05)
    for corr in (nu_ftrl(0.05), optimal_cc()):
        dense = np.sum((A @ toeplitz_factorization(corr, 30).decoder) ** 2)
        assert toeplitz_workload_error(corr, A) == pytest.approx(dense, rel=1e-10)


@pytest.mark.parametrize(
    "kwargs", [{}, {"participations": 3, "separation": 4, "schema": "fixed_epoch"}]
)
def test_table3_under_the_momentum_workload(kwargs):
    t = table3(12, me_solver="fixed_point", me_tol=1e-8, workload="momentum_cooldown", **kwargs)
    t = t.set_index("variant")
    A = momentum_cooldown_workload(12)
    assert set(t["workload"]) == {"momentum_cooldown"}
    # ME, optimised for this workload, is the best row, and certified
    assert t["total_error"].idxmin() == ME
    assert t.loc[ME, "me_relative_gap"] <= 1e-8 and bool(t.loc[ME, "me_certified"])
    assert t.loc[ME, "me_lower_bound"] <= t["total_error"].min()
    # the prefix-sum ME, evaluated on this workload, is worse (it is not optimised for it)
    k = kwargs.get("participations", 1)
    prefix_me = solve_me(12, k, kwargs.get("separation"), tol=1e-8).factorization()
    independent_error = np.sum((A @ prefix_me.decoder) ** 2)
    assert t.loc[ME_PREFIX_VARIANT, "total_error"] == pytest.approx(independent_error, rel=1e-9)
    assert t.loc[ME_PREFIX_VARIANT, "relative_to_optimal"] > 1
    # DP-SGD: B = I, error ||A||_F^2 times its sensitivity k
    assert t.loc["DP-SGD", "total_error"] == pytest.approx(k * np.sum(A**2), rel=1e-12)


def test_table3_momentum_needs_the_fixed_point():
    with pytest.raises(ValueError, match="fixed_point"):
        table3(12, me_solver="sdp", workload="momentum_cooldown")
    with pytest.raises(ValueError, match="workload"):
        table3(12, me_solver="fixed_point", workload="adam")


def _kind_table(cell):
    from dpreg.experiments.kinds import get_kind

    kind = get_kind("ftrl_theory_table")
    kind.validate_cell(cell)
    runs = kind.run(cell, trials=1, first_trial=0, seed=7, data=None)
    return kind.summarise(runs, [])


def test_kind_and_claims_under_the_momentum_workload():
    from dpreg.experiments.claims import check_claims
    from dpreg.experiments.kinds import get_kind

    cell = {"table": "table3", "T": 10, "me_solver": "fixed_point", "workload": "momentum_cooldown"}
    t = _kind_table(cell)
    assert set(t["workload"]) == {"momentum_cooldown"} and ME_PREFIX_VARIANT in set(t["variant"])
    claims = check_claims("choquettechoo2023", {"t": t})["claims"]
    mine = claims[claims["claim"].str.startswith("ME")]
    assert len(mine) == 2 and set(mine["passed"]) == {"yes"}  # least error; certified
    check = get_kind("ftrl_theory_table").validate_cell
    with pytest.raises(ValueError, match="fixed_point"):
        check({"table": "table3", "T": 10, "workload": "momentum_cooldown"})
    with pytest.raises(ValueError, match="me_gap_tol"):
        check({"table": "table3", "T": 10, "me_tol": 1e-3, "me_gap_tol": 1e-5})
    with pytest.raises(ValueError, match="momentum"):
        check({"table": "table3", "T": 10, "me_solver": "fixed_point", "momentum": 1.0})


def test_certificate_claim_fails_on_a_synthetic_uncertified_table():
    from dpreg.experiments.claims import check_claims

    t = table3(8, nu=0.05, me_solver="fixed_point", me_tol=1e-8)
    t.insert(0, "table", "table3")  # as the kind writes it
    ok = check_claims("choquettechoo2023", {"t": t})["claims"]
    cert = ok[ok["claim"].str.startswith("ME is certified")]
    assert list(cert["passed"]) == ["yes"]
    bad = t.copy()
    bad.loc[bad["variant"] == "Multi-Epoch (ME)", "me_relative_gap"] = 1e-2  # > me_gap_tol
    out = check_claims("choquettechoo2023", {"t": bad})["claims"]
    cert = out[out["claim"].str.startswith("ME is certified")]
    assert list(cert["passed"]) == ["NO"]
