"""Closed forms (F.15, F.16, Thm 2.1, 2.2, C.14, C.15, C.18), Tables, SOCP (Thm 3.1)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import integrate

from dpreg.estimators.ftrl_correlations import (
    damped_anti_pgd,
    finite_toeplitz,
    independent,
    nu_ftrl,
)
from dpreg.theory import ftrl as th
from dpreg.theory.ftrl_socp import SocpProblem, frequency_grid, socp_curve

# ----------------------------------------------------------------- elliptic integrals

AB = [(0.01, 0.1), (0.05, 0.02), (0.001, 0.02), (0.3, 0.3), (0.9, 0.05), (1e-4, 0.5), (1e-6, 0.02)]


@pytest.mark.parametrize("a", [1e-4, 0.01, 0.1, 0.5, 0.99])
def test_f15_against_quadrature_and_landen(a):
    value = th.integral_f15(a)
    assert value == pytest.approx(th.integral_f15_quadrature(a), rel=1e-10)
    assert value == pytest.approx(4 * th.ellipk_modulus(1 - a), rel=1e-12)


def test_f15_reference_value_from_notes():
    assert th.integral_f15(0.1) == pytest.approx(9.1222, abs=5e-5)


@pytest.mark.parametrize("a,b", AB)
def test_f16_against_quadrature(a, b):
    assert th.integral_f16(a, b) == pytest.approx(th.integral_f16_quadrature(a, b), rel=1e-10)


def test_f16_reference_values_and_diagonal():
    assert th.integral_f16(0.01, 0.1) == pytest.approx(8.06605, abs=1e-5)
    assert th.integral_f16(0.05, 0.02) == pytest.approx(15.45839, abs=1e-5)
    assert th.integral_f16(0.001, 0.02) == pytest.approx(10.7969, abs=1e-4)
    for a in (0.02, 0.4):
        assert th.integral_f16(a, a) == pytest.approx(th.integral_f15(a), rel=1e-12)


@pytest.mark.parametrize("n,k", [(-5.44, 0.5), (0.3, 0.5), (0.9, 0.99), (-100.0, 0.999)])
def test_carlson_pi_against_defining_integral(n, k):
    def f(w):
        s = math.sin(w) ** 2
        return 1.0 / ((1 - n * s) * math.sqrt(1 - k * k * s))

    quad = integrate.quad(f, 0, math.pi / 2, epsabs=0, epsrel=1e-13, limit=500)[0]
    assert th.ellippi_modulus(n, k) == pytest.approx(quad, rel=1e-11)
    assert th.ellippi_modulus(0.0, k) == pytest.approx(th.ellipk_modulus(k), rel=1e-14)
    assert th.ellipe_modulus(0.0) == pytest.approx(math.pi / 2)


@pytest.mark.parametrize("k", [0.3, 0.9, 0.999])
def test_complete_integrals_against_quadrature_and_legendre_relation(k):
    e_quad = integrate.quad(
        lambda w: math.sqrt(1 - (k * math.sin(w)) ** 2), 0, math.pi / 2, epsabs=0, epsrel=1e-13
    )[0]
    k_quad = integrate.quad(
        lambda w: 1 / math.sqrt(1 - (k * math.sin(w)) ** 2), 0, math.pi / 2, epsabs=0, epsrel=1e-13
    )[0]
    assert th.ellipe_modulus(k) == pytest.approx(e_quad, rel=1e-12)
    assert th.ellipk_modulus(k) == pytest.approx(k_quad, rel=1e-10)
    # Legendre: E K' + E' K - K K' = pi / 2 with k' = sqrt(1 - k^2)
    kp = math.sqrt(1 - k * k)
    K, E = th.ellipk_modulus(k), th.ellipe_modulus(k)
    Kp, Ep = th.ellipk_modulus(kp), th.ellipe_modulus(kp)
    assert E * Kp + Ep * K - K * Kp == pytest.approx(math.pi / 2, rel=1e-12)


# ----------------------------------------------------------------- mean estimation


def test_fig1_ratio_values_and_shape():
    expected = {
        1e-4: 0.00258,
        1e-3: 0.0164,
        1e-2: 0.0909,
        0.1: 0.400,
        0.3: 0.704,
        0.5: 0.864,
        0.9: 0.995,
    }
    for eta, value in expected.items():
        assert th.fig1_ratio(eta) == pytest.approx(value, abs=6e-4)
    assert th.fig1_ratio(1.0) == pytest.approx(1.0, abs=1e-15)
    grid = np.geomspace(1e-5, 1, 60)
    assert np.all(np.diff(th.fig1_ratio(grid)) > 0)
    table = th.fig1_table([0.01, 0.1, 0.5, 1.0])
    ratio = table[table.panel == "ratio"]
    np.testing.assert_allclose(ratio["optimal"] / ratio["sgd"], ratio["value"], rtol=1e-10)


def test_mean_estimation_against_direct_quadrature_of_eq16():
    eta, rho, sigma = 0.2, 0.7, 0.3
    for corr in (independent(), nu_ftrl(0.05), damped_anti_pgd(0.3), finite_toeplitz([1.0, -0.3])):
        g2 = corr.gamma_inf_sq

        def f(w, corr=corr, g2=g2):
            s = float(corr.spectrum(w)) * g2 / (2 * rho) + sigma**2
            return s / abs(1 - eta - np.exp(1j * w)) ** 2

        quad = integrate.quad(f, -np.pi, np.pi, epsabs=0, epsrel=1e-12, points=[0.0], limit=500)[0]
        expected = eta**2 / (4 * np.pi) * quad  # half-normalised Eq. 16
        got = th.mean_estimation_suboptimality(corr, eta, rho=rho, sigma_sgd=sigma)
        assert got == pytest.approx(expected, rel=1e-9)


def test_theorem21_optimal_correlation_is_minimal():
    eta = 0.05
    best = th.mean_estimation_suboptimality(nu_ftrl(eta), eta)
    # Cauchy-Schwarz optimum over all B
    assert best == pytest.approx(th.optimal_lti_suboptimality(np.array([1.0]), eta), rel=1e-7)
    for other in (
        nu_ftrl(eta / 10),
        nu_ftrl(min(0.99, eta * 5)),
        damped_anti_pgd(eta),
        independent(),
    ):
        assert th.mean_estimation_suboptimality(other, eta) > best


# ----------------------------------------------------------------- linear regression

LAM = 1.0 / np.arange(1, 33)
ETA = 0.05


def test_lti_closed_forms_against_quadrature_of_h():
    for corr in (
        independent(),
        nu_ftrl(ETA * LAM.min()),
        damped_anti_pgd(0.2),
        finite_toeplitz([1.0, -0.5, 0.1]),
    ):

        def f(w, corr=corr):
            return float(corr.spectrum(w)) * float(th.h_function(w, LAM, ETA))

        pts = [ETA * LAM.min(), ETA]
        quad = 2 * sum(
            integrate.quad(f, lo, hi, epsabs=0, epsrel=1e-12, limit=1000)[0]
            for lo, hi in zip([0, *pts], [*pts, np.pi], strict=True)
        )
        assert th.spectral_integral(corr, LAM, ETA) == pytest.approx(quad, rel=1e-8)


def test_lti_sgd_and_ftrl_formulas():
    sgd = th.lti_suboptimality(independent(), LAM, ETA, rho=2.0)
    assert sgd == pytest.approx(ETA / (4 * 2.0) * np.sum(1 / (2 - ETA * LAM)), rel=1e-13)
    nu = ETA * LAM.min()
    ftrl = th.lti_suboptimality(nu_ftrl(nu), LAM, ETA)
    expected = (
        ETA**2
        / (16 * np.pi**2)
        * th.integral_f15(nu)
        * np.sum(LAM * th.integral_f16(nu, ETA * LAM))
    )
    assert ftrl == pytest.approx(expected, rel=1e-12)


def test_time_domain_identity_behind_c14():
    # <beta, T_j beta> = sum_{t,s} beta_t beta_s c^{|t-s|} equals the F.12 identity.
    corr = finite_toeplitz([1.0, -0.6, 0.2])
    beta = corr.coefficients(3)
    lam = np.array([0.7])
    c = 1 - ETA * lam[0]
    direct = sum(beta[t] * beta[s] * c ** abs(t - s) for t in range(3) for s in range(3))
    r2, ck = th.gaussian_kurtosis_constants(lam)
    f = (1 - ETA * r2) ** -2
    expected = (1 + ck * f) * ETA * corr.gamma_inf_sq / 2 * direct
    assert th.theorem_c14_upper(corr, lam, ETA) == pytest.approx(expected, rel=1e-9)


def test_bounds_are_ordered():
    nu = ETA * LAM.min()
    for corr in (independent(), nu_ftrl(nu)):
        lower = th.theorem_c18_lower(corr, LAM, ETA, sigma_sgd=0.5)
        lti = th.lti_suboptimality(corr, LAM, ETA, sigma_sgd=0.5)
        assert lower <= lti * (1 + 1e-12)
        assert lti < th.theorem_c15_upper(corr, LAM, ETA, sigma_sgd=0.5)
        assert lti < th.theorem_c14_upper(corr, LAM, ETA, sigma_sgd=0.5)
    opt = th.optimal_lti_suboptimality(LAM, ETA)
    assert th.universal_lower_bound(LAM, ETA) <= opt
    assert opt <= th.lti_suboptimality(nu_ftrl(nu), LAM, ETA)
    assert th.lti_suboptimality(nu_ftrl(nu), LAM, ETA) < th.lti_suboptimality(
        independent(), LAM, ETA
    )
    assert math.isinf(th.theorem_c15_upper(independent(), LAM, 1.0))  # eta R^2 >= 1


def test_theorem22_rates_and_tables():
    rates = th.theorem22_rates(LAM, ETA, nu=ETA * LAM.min())
    assert rates["sgd"] == pytest.approx(ETA * 32)
    assert rates["lower"] < rates["nu_ftrl"]
    t1 = th.table1(LAM, ETA)
    assert list(t1.algorithm) == [
        "lower_bound",
        "optimal_correlation",
        "noisy_sgd",
        "nu_noisy_ftrl",
    ]
    assert (
        t1.set_index("algorithm").loc["noisy_sgd", "ratio"]
        > t1.set_index("algorithm").loc["nu_noisy_ftrl", "ratio"]
        > 1
    )
    t2 = th.table2(LAM, ETA, horizons=(100, 1000))
    row = t2.set_index("mechanism")
    assert math.isinf(row.loc["optimal_cc", "F_inf"]) and math.isinf(row.loc["anti_pgd", "F_inf"])
    assert row.loc["anti_pgd", "gamma_T_sq_1000"] == 1000
    assert (
        row.loc["nu_ftrl", "F_inf"] < row.loc["damped_anti_pgd", "F_inf"] < row.loc["sgd", "F_inf"]
    )
    t4 = th.table4([16, 64, 256], 0.02, families=("flat", "inv", "inv_sq"))
    for fam, g in t4.groupby("family"):
        assert np.all(g["ratio"] < 1)
        if fam != "flat":  # ratio falls with d when d_eff grows slower than d
            assert np.all(np.diff(g.sort_values("d")["ratio"]) < 0)
    with pytest.raises(ValueError, match="family"):
        th.spectrum_eigenvalues("cubic", 4)


# ----------------------------------------------------------------- SOCP (Theorem 3.1)


@pytest.fixture(scope="module")
def socp_small():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return socp_curve([1.0, 10.0], eta=0.5, n_uniform=120, n_log=80)


def test_socp_equals_exact_quadratic_at_kappa_one(socp_small):
    rows = socp_small[socp_small.kappa == 1.0]
    for _, r in rows.iterrows():
        # the infimum needs lambda_0 -> inf, so the solver approaches it from above
        assert r["bound"] == pytest.approx(r["exact"], rel=1e-3)
        assert r["bound"] >= r["exact"] * (1 - 1e-5)
    sgd = rows.set_index("mechanism").loc["sgd", "exact"]
    assert sgd == pytest.approx(0.5 / (4 * 1.5), rel=1e-12)  # eta / (4 (2 - eta))


def test_socp_orders_mechanisms_and_dominates_quadratics(socp_small):
    r = socp_small[socp_small.kappa == 10.0].set_index("mechanism")["bound"]
    assert r["sgd"] > r["nu_ftrl"] >= r["optimized"] * (1 - 1e-9)
    # any quadratic with curvature in [mu, L] is in the class: bound >= (L/2) E||theta||^2
    for lam in np.linspace(0.1, 1.0, 5):
        lti = th.lti_suboptimality(independent(), np.array([lam]), 0.5)
        assert r["sgd"] >= lti * (1.0 / lam)


def test_socp_scs_cross_check_and_multiplier_conventions():
    omega, widths = frequency_grid(0.05, n_uniform=40, n_log=20)
    S = np.full(omega.size, 0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        std = SocpProblem(mu=0.1, L=1.0, eta=0.5, omega=omega, widths=widths)
        a = std.solve(S, solver="CLARABEL").bound
        b = std.solve(S, solver="SCS").bound
        paper = (
            SocpProblem(mu=0.1, L=1.0, eta=0.5, omega=omega, widths=widths, multiplier="paper")
            .solve(S)
            .bound
        )
        wide = (
            SocpProblem(
                mu=0.1, L=1.0, eta=0.5, omega=omega, widths=widths, t_max=2, multiplier="standard"
            )
            .solve(S)
            .bound
        )
    assert b == pytest.approx(a, rel=1e-4)
    assert paper == pytest.approx(a, rel=1e-7)  # identical at t_max = 0
    assert wide <= a * (1 + 1e-6)  # more multipliers can only tighten
    with pytest.raises(ValueError, match="mu"):
        SocpProblem(mu=2.0, L=1.0, eta=0.5, omega=omega, widths=widths)
    with pytest.raises(ValueError, match="multiplier"):
        SocpProblem(mu=0.5, L=1.0, eta=0.5, omega=omega, widths=widths, multiplier="odd")
