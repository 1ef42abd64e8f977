"""Bound (7) of Liang et al. (2025), Theorem 3.1, with unit constants (dpreg.theory.iv)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpreg.theory import iv

# Worked example of docs/notes/liang2025.md §4.8 ("our check", unit constants):
# n = 1000, p = q = 5, tau = 1, kappa = 0.8 gives B ~ 0.667, A ~ 0.0758 / sqrt(rho_min),
# T1 ~ 3.6, T2 ~ 77 rho_min, T_max ~ 174 rho1.
N, P, Q, TAU, KAPPA = 1000, 5, 5, 1.0, 0.8


def test_statistical_term_worked_example():
    B = iv.statistical_term(N, P, Q, tau=TAU)
    assert B == pytest.approx(0.667, abs=5e-4)
    assert B == pytest.approx(5 * (1 + math.log(25)) / math.sqrt(1000), rel=1e-12)


@pytest.mark.parametrize("rho_min", [0.1, 1.0, 10.0])
def test_privacy_coefficient_worked_example(rho_min):
    A = iv.privacy_coefficient(N, P, Q, rho_min, 100.0 * rho_min, tau=TAU)
    assert A * math.sqrt(rho_min) == pytest.approx(0.0758, abs=5e-5)
    # symmetric in the two budgets: only the minimum enters (7)
    assert iv.privacy_coefficient(N, P, Q, 100.0 * rho_min, rho_min) == pytest.approx(A)


@pytest.mark.parametrize("rho_min", [0.5, 1.0, 4.0])
def test_regime_thresholds_worked_example(rho_min):
    T1, T2 = iv.regime_thresholds(N, P, Q, rho_min, rho_min, kappa=KAPPA, tau=TAU)
    assert T1 == pytest.approx(3.6, abs=0.05)
    assert T2 / rho_min == pytest.approx(77.5, abs=0.5)


def test_thresholds_solve_the_term_equalities():
    A = iv.privacy_coefficient(N, P, Q, 2.0, 3.0)
    B = iv.statistical_term(N, P, Q)
    T1, T2 = iv.regime_thresholds(N, P, Q, 2.0, 3.0, kappa=KAPPA)
    assert iv.optimisation_term(T1, KAPPA) == pytest.approx(B, rel=1e-12)
    assert A * math.sqrt(T2) == pytest.approx(B, rel=1e-12)


@pytest.mark.parametrize("rho1", [0.1, 1.0, 9.0])
def test_t_max_worked_example(rho1):
    assert iv.t_max(N, P, Q, rho1, tau=TAU) / rho1 == pytest.approx(174.15, abs=0.05)
    # the n at which T = T_max inverts it
    T = iv.t_max(N, P, Q, rho1)
    assert iv.n_min_for_T(T, P, Q, rho1) == pytest.approx(N, rel=1e-12)


def test_t_max_table_of_the_notes():
    # p (sqrt q + 1)^6 for p = q = 5, 20, 50 (docs/notes/liang2025.md §4.8): 5.7e3, 5.4e5, 1.38e7
    for p, expected in ((5, 5.7e3), (20, 5.4e5), (50, 1.38e7)):
        assert 1.0 / iv.t_max(1.0, p, p, 1.0) == pytest.approx(expected, rel=0.02)
    # p = q = 50, rho1 = 1: T = 20 violates (5) for n < 16,600 (docs/notes/liang2025.md §4.8)
    assert iv.n_min_for_T(20, 50, 50, 1.0) == pytest.approx(16_600, rel=0.01)
    assert iv.n_min_for_T(20, 50, 50, 9.0) == pytest.approx(5_540, rel=0.01)


def test_eps_exponent_shrinks_t_max():
    assert iv.t_max(N, P, Q, 1.0, eps_exponent=0.1) < iv.t_max(N, P, Q, 1.0)


def test_no_noise_limits():
    inf = math.inf
    assert iv.privacy_coefficient(N, P, Q, inf, inf) == 0.0
    assert iv.t_max(N, P, Q, inf) == inf
    T1, T2 = iv.regime_thresholds(N, P, Q, inf, inf, kappa=KAPPA)
    assert T2 == inf
    # Algorithm 3 (Theorem F.1): rho1 = inf, the privacy term uses rho2 only
    assert iv.privacy_coefficient(N, P, Q, inf, 2.0) == pytest.approx(
        iv.privacy_coefficient(N, P, Q, 2.0, 2.0)
    )
    # without noise the bound decreases in T: the optimum is the search cap
    assert iv.optimal_T(N, P, Q, inf, inf, kappa=KAPPA, T_cap=500) == 500


def test_error_bound_is_sum_of_terms_and_vectorised():
    T = np.array([1, 10, 100, 1000])
    b = iv.error_bound(T, n=N, p=P, q=Q, rho1=1.0, rho2=2.0, kappa=KAPPA)
    expected = (
        KAPPA ** (T / 2)
        + iv.privacy_coefficient(N, P, Q, 1.0, 2.0) * np.sqrt(T)
        + iv.statistical_term(N, P, Q)
    )
    np.testing.assert_allclose(b, expected, rtol=1e-14)
    assert isinstance(iv.error_bound(5, n=N, p=P, q=Q, rho1=1, rho2=1, kappa=KAPPA), float)


def test_optimal_t_is_integer_argmin_below_t_max():
    for rho in (0.01, 0.1, 1.0, 10.0):
        T_opt = iv.optimal_T(N, P, Q, rho, rho, kappa=KAPPA)
        hi = max(1, math.floor(iv.t_max(N, P, Q, rho)))
        assert 1 <= T_opt <= hi
        grid = np.arange(1, hi + 1)
        vals = iv.error_bound(grid, n=N, p=P, q=Q, rho1=rho, rho2=rho, kappa=KAPPA)
        assert T_opt == int(grid[np.argmin(vals)])
    # sub-linear but super-logarithmic in n (Remark 3.6): grows with n, slower than n
    t_small = iv.optimal_T(1e3, P, Q, 1.0, 1.0, kappa=KAPPA)
    t_big = iv.optimal_T(1e5, P, Q, 1.0, 1.0, kappa=KAPPA)
    assert t_small < t_big < 100 * t_small


def test_sample_size_condition():
    first = P * Q * (1 + math.log(25)) ** 2
    assert iv.sample_size_condition(P, Q, 1.0, 1.0) == pytest.approx(first)
    second = (math.sqrt(5) + 1) ** 3 / math.sqrt(1e-3)
    assert iv.sample_size_condition(P, Q, 1e-3, 1.0) == pytest.approx(second)
    # Lemma D.1's sqrt(T) factor (docs/notes/liang2025.md P5)
    assert iv.sample_size_condition(P, Q, 1e-3, 1.0, T=100) == pytest.approx(10 * second)


def test_contraction_rates_population_limits():
    Theta = np.diag([4.0, 2.0])  # ||Theta|| = 4, sigma_min = 2
    r = iv.contraction_rates(Theta, eta=1.0, alpha=2 / (16 + 4))
    assert r["kappa_theta"] == 0.0
    assert r["sigma_min"] == pytest.approx(2.0)
    assert r["norm"] == pytest.approx(4.0)
    # kappa_beta = max(|1 - a s^2/2|, |1 - a (2 S^2 + s^2)/2|) with a = 0.1
    assert r["kappa_beta"] == pytest.approx(max(abs(1 - 0.2), abs(1 - 0.1 * 36 / 2)))
    assert r["kappa"] == pytest.approx(0.8)
    assert r["stable"]
    assert iv.contraction_rates(Theta, eta=2.5, alpha=0.1)["kappa_theta"] == pytest.approx(1.5)
    assert not iv.contraction_rates(Theta, eta=1.0, alpha=1.0)["stable"]


def test_bound_curve_regimes_and_shape():
    df = iv.bound_curve(n=1e4, p=5, q=5, rho1=1.0, rho2=0.1, kappa=0.8, T_max_grid=1e6, num=400)
    assert list(df["T"]) == sorted(df["T"])
    np.testing.assert_allclose(df["bound"], df["optimisation"] + df["privacy"] + df["statistical"])
    T1, T2, Tm = df[["T1", "T2", "T_max"]].iloc[0]
    assert T1 < T2 < Tm
    # regimes appear in order: optimisation -> statistical -> privacy -> invalid
    order = {name: i for i, name in enumerate(iv.REGIMES)}
    codes = df["regime"].map(order).to_numpy()
    assert (np.diff(codes) >= 0).all()
    assert set(df["regime"]) == set(iv.REGIMES)
    assert (df.loc[df["T"] > Tm, "regime"] == "invalid").all()
    # decay, then growth: the bound decreases before T_opt and increases after it
    T_opt = df["T_opt"].iloc[0]
    b, T = df["bound"].to_numpy(), df["T"].to_numpy()
    assert (np.diff(b[T < T_opt]) < 0).all()
    assert (np.diff(b[T > T_opt + 1]) > 0).all()
    assert b.min() >= df["bound_at_T_opt"].iloc[0] - 1e-12
    # plateau near B between T1 and T2; sqrt(T) growth far beyond T2
    mid = df[(df["T"] > 3 * T1) & (df["T"] < T2 / 3)]
    assert ((mid["bound"] / mid["B"]) < 1.6).all()
    far = df[df["T"] > 100 * T2]
    ratio = far["privacy"] / np.sqrt(far["T"])
    np.testing.assert_allclose(ratio, df["A"].iloc[0])
    assert (far["dominant"] == "privacy").all()


def test_bound_curve_rejects_bad_input():
    with pytest.raises(ValueError, match="q >= p"):
        iv.bound_curve(n=100, p=5, q=3, rho1=1, rho2=1, kappa=0.5)
    with pytest.raises(ValueError, match="kappa"):
        iv.bound_curve(n=100, p=1, q=1, rho1=1, rho2=1, kappa=1.0)
    with pytest.raises(ValueError, match="rho1"):
        iv.bound_curve(n=100, p=1, q=1, rho1=0, rho2=1, kappa=0.5)
