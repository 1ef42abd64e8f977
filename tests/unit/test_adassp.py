"""AdaSSP (Wang 2018; Lev et al. 2026, Algorithm 6): calibration, noise, limits, validation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpreg.estimators import get_estimator
from dpreg.estimators.adassp import (
    _solve_batch,
    adassp_noise_scales,
    adassp_sensitivities,
    fit_adassp,
    release_sufficient_statistics,
)
from dpreg.privacy.budgets import ZCDP, ApproxDP
from dpreg.privacy.gaussian import gaussian_delta


def _data(seed: int = 0, n: int = 1000, d: int = 5, bound_X: float = 1.0, bound_y: float = 1.0):
    """Gaussian design scaled to max ||x_i|| = bound_X, y scaled to max |y_i| = bound_y."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X *= bound_X / np.linalg.norm(X, axis=1).max()
    y = X @ rng.normal(size=d) + 0.1 * rng.normal(size=n)
    y *= bound_y / np.abs(y).max()
    return X, y


def _chi2_tolerance(m: int, k: float = 4.0) -> float:
    """k standard errors of s^2 / sigma^2 for m iid normal draws: sqrt(2 / (m - 1))."""
    return k * math.sqrt(2.0 / (m - 1))


# ---------------------------------------------------------------------------- calibration


def test_sensitivities():
    assert adassp_sensitivities(2.0, 0.5) == (4.0, 4.0, 1.0)


@pytest.mark.parametrize(("bound_X", "bound_y"), [(1.0, 1.0), (2.0, 0.5)])
@pytest.mark.parametrize("epsilon", [0.1, 1.0, 10.0])
def test_analytic_noise_scales_meet_the_exact_privacy_profile(epsilon, bound_X, bound_y):
    delta = 1e-6
    s_lam, s_xtx, s_xty = adassp_noise_scales(ApproxDP(epsilon, delta), bound_X, bound_y)
    for sigma, sens in [(s_lam, bound_X**2), (s_xtx, bound_X**2), (s_xty, bound_X * bound_y)]:
        # delta(sigma) at eps/3 is delta/3: the release is (eps/3, delta/3)-DP ...
        achieved = gaussian_delta(sigma, epsilon / 3, sens)
        assert achieved == pytest.approx(delta / 3, rel=1e-6)
        assert achieved <= delta / 3 * (1 + 1e-9)
        # ... and sigma is the smallest such scale (0.1% less noise breaks it)
        assert gaussian_delta(sigma * 0.999, epsilon / 3, sens) > delta / 3


def test_classic_noise_scales_are_algorithm_6_as_printed():
    epsilon, delta, c_x, c_y = 1.0, 1e-6, 2.0, 0.5
    scales = adassp_noise_scales(ApproxDP(epsilon, delta), c_x, c_y, mechanism="classic")
    prefactor = math.sqrt(2 * math.log(6 / delta)) / (epsilon / 3)
    np.testing.assert_allclose(scales, [prefactor * 4.0, prefactor * 4.0, prefactor * 1.0])
    # The printed constant sqrt(2 log(6/delta)) is NOT Dwork-Roth's classic calibration at
    # delta/3, sqrt(2 log(1.25/(delta/3))) = sqrt(2 log(3.75/delta)); it is 1.5% larger.
    dr = math.sqrt(2 * math.log(3.75 / delta)) / (epsilon / 3)
    assert prefactor / dr == pytest.approx(math.sqrt(math.log(6e6) / math.log(3.75e6)))
    assert 1.015 < prefactor / dr < 1.016


def test_reference_sigmas_at_eps1_delta1e6():
    # eps=1, delta=1e-6, C_X=C_Y=1 (sigma does not depend on d). The analytic value was
    # cross-checked against an independent brentq solve of Balle & Wang (2018), Thm 8.
    analytic = adassp_noise_scales(ApproxDP(1.0, 1e-6), 1.0, 1.0)
    np.testing.assert_allclose(analytic, [12.4712287009299] * 3, rtol=1e-11)
    classic = adassp_noise_scales(ApproxDP(1.0, 1e-6), 1.0, 1.0, mechanism="classic")
    np.testing.assert_allclose(classic, [3 * math.sqrt(2 * math.log(6e6))] * 3, rtol=1e-14)
    np.testing.assert_allclose(classic, [16.76099222866779] * 3, rtol=1e-13)


def test_classic_calibration_refused_where_it_does_not_certify_the_budget():
    # At delta=1e-6 the printed calibration under-noises for eps > 29.64 (eps/3 > 9.88).
    adassp_noise_scales(ApproxDP(10.0, 1e-6), 1.0, 1.0, mechanism="classic")
    with pytest.raises(ValueError, match="does not give .*use mechanism='analytic'"):
        adassp_noise_scales(ApproxDP(100.0, 1e-6), 1.0, 1.0, mechanism="classic")
    X, y = _data(n=50, d=2)
    with pytest.raises(ValueError, match="mechanism='classic'"):
        fit_adassp(
            X,
            y,
            budget=ApproxDP(1e3, 1e-6),
            rng=np.random.default_rng(0),
            bound_X=1,
            bound_y=1,
            mechanism="classic",
        )


# ---------------------------------------------------------------------------- the noise


def test_monte_carlo_noise_matches_the_reported_sigmas():
    d, m = 5, 4000
    X, y = _data(d=d)
    sigmas = adassp_noise_scales(ApproxDP(1.0, 1e-6), 2.0, 0.5)  # three different scales
    xtx, xty = X.T @ X, X.T @ y
    stats = release_sufficient_statistics(
        xtx,
        xty,
        3.0,
        sigma_lambda_min=sigmas[0],
        sigma_xtx=sigmas[1],
        sigma_xty=sigmas[2],
        rng=np.random.default_rng(42),
        trials=m,
    )
    assert stats.xtx.shape == (m, d, d) and stats.xty.shape == (m, d)
    np.testing.assert_array_equal(stats.xtx, np.swapaxes(stats.xtx, 1, 2))  # exactly symmetric

    def check(noise: np.ndarray, sigma: float) -> None:
        count = noise.size
        assert abs(noise.mean()) <= 4 * sigma / math.sqrt(count)
        assert abs(noise.var(ddof=1) / sigma**2 - 1) <= _chi2_tolerance(count)

    check(stats.lambda_min - 3.0, sigmas[0])
    noise_xtx = stats.xtx - xtx
    rows, cols = np.triu_indices(d, k=1)
    check(noise_xtx[:, np.arange(d), np.arange(d)], sigmas[1])  # diagonal: m*d draws
    check(noise_xtx[:, rows, cols], sigmas[1])  # off-diagonal: m*d(d-1)/2 draws
    for j in range(d):  # X'y, per coordinate
        check(stats.xty[:, j] - xty[j], sigmas[2])
    # distinct upper-triangular entries are uncorrelated (independent draws)
    corr = np.corrcoef(noise_xtx[:, 0, 1], noise_xtx[:, 0, 2])[0, 1]
    assert abs(corr) <= 4 / math.sqrt(m)


@pytest.mark.parametrize("shift", ["paper", "code"])
@pytest.mark.parametrize("mechanism", ["analytic", "classic"])
def test_fit_is_algorithm_6_on_the_released_statistics(mechanism, shift):
    """Recompute lines 3-7 by hand from the same noise draws."""
    X, y = _data(n=400, d=4)
    epsilon, delta, trials = 2.0, 1e-5, 7
    budget = ApproxDP(epsilon, delta)
    fit = fit_adassp(
        X,
        y,
        budget=budget,
        rng=np.random.default_rng(7),
        trials=trials,
        bound_X=1.0,
        bound_y=1.0,
        mechanism=mechanism,
        shift=shift,
    )
    s1, s_xtx, s2 = adassp_noise_scales(budget, 1.0, 1.0, mechanism)
    lam = np.linalg.eigvalsh(X.T @ X)[0]
    stats = release_sufficient_statistics(
        X.T @ X,
        X.T @ y,
        lam,
        sigma_lambda_min=s1,
        sigma_xtx=s_xtx,
        sigma_xty=s2,
        rng=np.random.default_rng(7),
        trials=trials,
    )
    varrho = delta / 10
    shift_amount = s1 * math.sqrt(2 * math.log(6 / delta)) if shift == "paper" else s1**2
    lam_noisy = np.maximum(stats.lambda_min - shift_amount, 0.0)
    ridge = np.maximum(0.0, s1 * math.sqrt(4 * math.log(2 * 16 / varrho)) - lam_noisy)
    theta = np.stack(
        [np.linalg.solve(stats.xtx[t] + ridge[t] * np.eye(4), stats.xty[t]) for t in range(trials)]
    )
    np.testing.assert_allclose(fit.diagnostics["lambda_min_noisy"], lam_noisy, rtol=1e-12)
    np.testing.assert_allclose(fit.diagnostics["ridge"], ridge, rtol=1e-12)
    np.testing.assert_allclose(fit.theta, theta, rtol=1e-9, atol=1e-12)
    assert fit.diagnostics["failure_prob"] == pytest.approx(varrho)
    assert fit.diagnostics["sigma_xtx"] == s_xtx and fit.diagnostics["sigma_xty"] == s2
    if mechanism == "classic":
        # line 4 printed: sqrt(2 d log(6/delta) log(2 d^2/varrho)) C_X^2 / (eps/3)
        printed = math.sqrt(2 * 4 * math.log(6 / delta) * math.log(32 / varrho)) / (epsilon / 3)
        assert fit.diagnostics["ridge_scale"] == pytest.approx(printed, rel=1e-12)


# ---------------------------------------------------------------------------- limits


def test_noiseless_limit_is_ols():
    X, y = _data(n=300, d=4)
    fit = fit_adassp(
        X,
        y,
        budget=ApproxDP(math.inf, 1e-6),
        rng=np.random.default_rng(0),
        trials=3,
        bound_X=1,
        bound_y=1,
    )
    np.testing.assert_allclose(fit.theta, np.tile(np.linalg.lstsq(X, y)[0], (3, 1)), atol=1e-10)
    assert fit.diagnostics["sigma_xtx"] == 0.0 and np.all(fit.diagnostics["ridge"] == 0.0)


def test_very_large_epsilon_is_close_to_ols():
    n, d = 1000, 4
    X, y = _data(n=n, d=d)
    theta_ols = np.linalg.lstsq(X, y, rcond=None)[0]
    fit = fit_adassp(
        X,
        y,
        budget=ApproxDP(1e8, 1e-6),
        rng=np.random.default_rng(1),
        trials=20,
        bound_X=1,
        bound_y=1,
    )
    diag = fit.diagnostics
    # Perturbation bound: theta - theta* = A^{-1}(db - dA theta*) with dA = s1 xi + ridge I,
    # db = s2 zeta. With prob >= 1 - 2e-8 per trial (Gaussian norm concentration, t = 6):
    # ||zeta|| <= sqrt(d) + 6 and ||xi||_2 <= ||xi||_F <= sqrt(2) (sqrt(d(d+1)/2) + 6).
    xi_norm = math.sqrt(2) * (math.sqrt(d * (d + 1) / 2) + 6)
    dA = diag["sigma_xtx"] * xi_norm + diag["ridge"].max()
    db = diag["sigma_xty"] * (math.sqrt(d) + 6)
    lam_min = np.linalg.eigvalsh(X.T @ X)[0]
    tol = (db + dA * np.linalg.norm(theta_ols)) / (lam_min - dA)
    assert diag["sigma_xtx"] < 2e-4  # AGM sigma ~ Delta / sqrt(2 eps/3) for huge eps
    assert tol < 1e-4
    errors = np.linalg.norm(fit.theta - theta_ols, axis=1)
    assert np.all(errors <= tol)


# ---------------------------------------------------------------------------- randomness


def _fit(seed, trials=5, **kw):
    X, y = _data(n=200, d=3)
    return fit_adassp(
        X,
        y,
        budget=ApproxDP(1.0, 1e-6),
        rng=np.random.default_rng(seed),
        trials=trials,
        bound_X=1,
        bound_y=1,
        **kw,
    )


def test_reproducible_and_seed_dependent():
    a, b, c = _fit(3), _fit(3), _fit(4)
    np.testing.assert_array_equal(a.theta, b.theta)
    np.testing.assert_array_equal(a.diagnostics["ridge"], b.diagnostics["ridge"])
    assert not np.allclose(a.theta, c.theta)
    assert a.theta.shape == (5, 3) and a.n_trials == 5
    assert len(np.unique(a.theta[:, 0])) == 5  # trials are distinct draws


def test_trials_axis_is_statistically_consistent_with_single_trials():
    k = 400
    batch = _fit(0, trials=k).theta
    single = np.vstack([_fit(seed, trials=1).theta for seed in range(1, k + 1)])
    assert batch.shape == single.shape == (k, 3)
    for j in range(3):
        a, b = batch[:, j], single[:, j]
        # means: two-sample z within 4 SE
        se = math.sqrt(a.var(ddof=1) / k + b.var(ddof=1) / k)
        assert abs(a.mean() - b.mean()) <= 4 * se
        # variances: log-ratio within 4 SE, SE from the pooled excess kurtosis
        pooled = np.concatenate([a - a.mean(), b - b.mean()])
        kurt = np.mean(pooled**4) / np.mean(pooled**2) ** 2 - 3
        se_log_var = math.sqrt(2 * (2 / (k - 1) + max(kurt, 0) / k))
        assert abs(math.log(a.var(ddof=1) / b.var(ddof=1))) <= 4 * se_log_var


# ---------------------------------------------------------------------------- sensitivity


@st.composite
def _neighbours(draw):
    n = draw(st.integers(1, 6))
    d = draw(st.integers(1, 4))
    c_x = draw(st.floats(0.1, 10.0))
    c_y = draw(st.floats(0.1, 10.0))
    unit = st.floats(-1.0, 1.0, allow_nan=False, allow_infinity=False)
    X = np.array(draw(st.lists(st.lists(unit, min_size=d, max_size=d), min_size=n, max_size=n)))
    # scale each row to a norm in [0, C_X], often exactly C_X (the worst case)
    target = np.array(
        draw(st.lists(st.sampled_from([1.0, 0.5]) | unit.map(abs), min_size=n, max_size=n))
    )
    norms = np.linalg.norm(X, axis=1)
    ok = norms > 1e-150  # subnormal rows lose precision when rescaled: treat them as zero
    X = np.where(ok[:, None], X * (c_x * target / np.where(ok, norms, 1))[:, None], 0)
    y = c_y * np.array(draw(st.lists(unit, min_size=n, max_size=n)))
    i = draw(st.integers(0, n - 1))
    return X, y, i, c_x, c_y


@settings(max_examples=200, deadline=None)
@given(_neighbours())
def test_sensitivity_of_the_releases_under_zero_out(case):
    X, y, i, c_x, c_y = case
    X0, y0 = X.copy(), y.copy()
    X0[i], y0[i] = 0.0, 0.0  # zero-out neighbour
    s_lam, s_xtx, s_xty = adassp_sensitivities(c_x, c_y)
    slack = 1 + 1e-9
    diff_xtx = X.T @ X - X0.T @ X0
    assert np.linalg.norm(diff_xtx, "fro") <= s_xtx * slack
    rows, cols = np.triu_indices(X.shape[1])
    assert np.linalg.norm(diff_xtx[rows, cols]) <= s_xtx * slack  # the released vector
    assert np.linalg.norm(X.T @ y - X0.T @ y0) <= s_xty * slack
    lam_diff = np.linalg.eigvalsh(X.T @ X)[0] - np.linalg.eigvalsh(X0.T @ X0)[0]
    assert abs(lam_diff) <= s_lam * slack + 1e-9 * max(1.0, c_x**2 * X.shape[0])


# ---------------------------------------------------------------------------- contract


def test_contract_budget_and_diagnostics():
    fit = _fit(0, trials=4)
    assert get_estimator("adassp") is fit_adassp
    assert fit.estimator == "adassp"
    assert fit.budget_spent.delta == 1e-6
    assert fit.budget_spent.epsilon == pytest.approx(1.0, rel=1e-9)  # from the noise scales
    part = fit.diagnostics["budget_per_release"]
    assert 3 * part.epsilon == pytest.approx(1.0) and 3 * part.delta == pytest.approx(1e-6)
    assert fit.diagnostics["delta_per_release_exact"] == pytest.approx(1e-6 / 3, rel=1e-6)
    for key in ("lambda_min_noisy", "ridge"):
        assert fit.diagnostics[key].shape == (4,)
    for key in ("sigma_lambda_min", "sigma_xtx", "sigma_xty"):
        assert isinstance(fit.diagnostics[key], float)
    assert fit.diagnostics["n_robust_solves"] == 0
    assert fit.diagnostics["mechanism"] == "analytic" and fit.diagnostics["shift"] == "paper"


def test_rank_deficient_design_is_allowed_and_never_nan():
    X, y = _data(n=200, d=3)
    X = np.column_stack([X, X[:, 0]]) / math.sqrt(2)  # duplicate column, norms still <= 1
    fit = fit_adassp(
        X,
        y,
        budget=ApproxDP(1.0, 1e-6),
        rng=np.random.default_rng(0),
        trials=5,
        bound_X=1,
        bound_y=1,
    )
    assert np.all(np.isfinite(fit.theta))
    # noiseless limit of a rank-deficient design: singular systems, minimum-norm solution
    fit = fit_adassp(
        X,
        y,
        budget=ApproxDP(math.inf, 1e-6),
        rng=np.random.default_rng(0),
        trials=3,
        bound_X=1,
        bound_y=1,
    )
    assert fit.diagnostics["n_robust_solves"] == 3
    np.testing.assert_allclose(fit.theta[0], np.linalg.lstsq(X, y)[0], atol=1e-8)


def test_batch_solve_with_a_singular_trial_does_not_crash():
    A = np.stack([2 * np.eye(3), np.diag([1.0, 1.0, 0.0]), -np.eye(3)])
    b = np.ones((3, 3))
    theta, robust, eig = _solve_batch(A, b)
    np.testing.assert_array_equal(robust, [False, True, False])
    np.testing.assert_allclose(theta, [[0.5] * 3, [1.0, 1.0, 0.0], [-1.0] * 3])
    assert eig[2, 0] < 0  # indefinite but non-singular: solved exactly


# ---------------------------------------------------------------------------- bad input


def _call(X=None, y=None, **kw):
    X0, y0 = _data(n=50, d=3)
    args = dict(budget=ApproxDP(1.0, 1e-6), rng=np.random.default_rng(0), bound_X=1, bound_y=1)
    args.update(kw)
    return fit_adassp(X0 if X is None else X, y0 if y is None else y, **args)


def test_bad_budget():
    with pytest.raises(TypeError, match="budget must be a ApproxDP"):
        _call(budget=ZCDP(0.5))
    with pytest.raises(ValueError, match="epsilon must be > 0"):
        _call(budget=ApproxDP(0.0, 1e-6))
    with pytest.raises(ValueError, match="epsilon must be > 0"):
        _call(budget=ApproxDP(-1.0, 1e-6))
    for bad_delta in (0.0, 1.0, 1.5):
        with pytest.raises(ValueError, match="delta must lie in"):
            _call(budget=ApproxDP(1.0, bad_delta))


def test_bad_data():
    X, y = _data(n=50, d=3)
    X_nan = X.copy()
    X_nan[4] = np.nan
    with pytest.raises(ValueError, match="X contains NaN"):
        _call(X=X_nan)
    y_nan = y.copy()
    y_nan[2] = np.nan
    with pytest.raises(ValueError, match="y contains NaN"):
        _call(y=y_nan)
    with pytest.raises(ValueError, match="y has 49 rows but X has 50"):
        _call(y=y[:-1])
    with pytest.raises(ValueError, match="X must be a 2-D array"):
        _call(X=X[:, 0])
    with pytest.raises(ValueError, match="at least as many rows as columns"):
        _call(X=X[:2], y=y[:2])


def test_public_bounds_are_required_and_enforced():
    X, y = _data(n=50, d=3, bound_X=1.0, bound_y=1.0)
    with pytest.raises(ValueError, match="X violates its public bound.*bound_X=0.5"):
        _call(bound_X=0.5)
    with pytest.raises(ValueError, match="y violates its public bound.*bound_y=0.9"):
        _call(bound_y=0.9)
    with pytest.raises(ValueError, match="bound_X must be a finite positive"):
        _call(bound_X=-1.0)
    with pytest.raises(TypeError, match="bound_X"):
        fit_adassp(X, y, budget=ApproxDP(1.0, 1e-6), rng=np.random.default_rng(0), bound_y=1)


def test_bad_options():
    with pytest.raises(ValueError, match="trials must be a positive integer"):
        _call(trials=0)
    with pytest.raises(TypeError, match="rng must be a numpy.random.Generator"):
        _call(rng=0)
    with pytest.raises(ValueError, match="mechanism must be one of"):
        _call(mechanism="laplace")
    with pytest.raises(ValueError, match="shift must be one of"):
        _call(shift="wang")
    with pytest.raises(ValueError, match="failure_prob must lie in"):
        _call(failure_prob=0.0)


def test_rho_zcdp_diagnostic_equals_independent_gaussian_zcdp():
    """rho of three Gaussian releases = sum of Delta^2 / (2 sigma^2) (Bun & Steinke Prop 1.6)."""
    import math

    import dpreg
    from dpreg.estimators.adassp import fit_adassp

    rng = np.random.default_rng(3)
    X = rng.normal(size=(100, 4))
    X /= np.linalg.norm(X, axis=1).max()
    y = np.tanh(X.sum(axis=1))
    fit = fit_adassp(X, y, budget=dpreg.ApproxDP(0.5, 1e-5), rng=rng, bound_X=2.0, bound_y=1.5)
    diag = fit.diagnostics
    expected = (
        2.0**4 / (2 * diag["sigma_lambda_min"] ** 2)
        + 2.0**4 / (2 * diag["sigma_xtx"] ** 2)
        + (2.0 * 1.5) ** 2 / (2 * diag["sigma_xty"] ** 2)
    )
    assert math.isclose(diag["rho_zcdp"], expected, rel_tol=1e-12)


# ------------------------------------------------------------- optional y'y release


def test_noisy_gram_and_moments_are_released_as_drawn():
    # xtx_noisy / xty_noisy are the releases theta is computed from (line 7).
    X, y = _data(3, n=400, d=3)
    fit = fit_adassp(X, y, budget=ApproxDP(1.0, 1e-6), rng=np.random.default_rng(0), trials=5,
                     bound_X=1.0, bound_y=1.0)  # fmt: skip
    D = fit.diagnostics
    A = D["xtx_noisy"] + D["ridge"][:, None, None] * np.eye(3)
    np.testing.assert_allclose(
        np.linalg.solve(A, D["xty_noisy"][..., None])[..., 0], fit.theta, rtol=1e-9
    )
    assert np.allclose(D["xtx_noisy"], D["xtx_noisy"].transpose(0, 2, 1))
    assert "yty_noisy" not in D


@pytest.mark.parametrize("share", [0.1, 0.5])
def test_yty_share_splits_the_budget_and_composes_four_releases(share):
    from dpreg.privacy.gaussian import analytic_gaussian_sigma, gaussian_epsilon

    eps, delta = 1.0, 1e-6
    X, y = _data(4, n=500, d=3, bound_y=0.8)
    fit = fit_adassp(X, y, budget=ApproxDP(eps, delta), rng=np.random.default_rng(1), trials=3,
                     bound_X=1.0, bound_y=0.8, yty_share=share)  # fmt: skip
    D = fit.diagnostics
    three = adassp_noise_scales(ApproxDP((1 - share) * eps, 0.75 * delta), 1.0, 0.8)
    assert (D["sigma_lambda_min"], D["sigma_xtx"], D["sigma_xty"]) == pytest.approx(three)
    sigma3 = analytic_gaussian_sigma(share * eps, delta / 4, 0.8**2)
    assert D["sigma_yty"] == pytest.approx(sigma3, rel=1e-12)
    # independent recomputation of the composition: four exact epsilons at delta / 4
    spent = sum(
        gaussian_epsilon(s, delta / 4, c)
        for s, c in zip((*three, sigma3), (1.0, 1.0, 0.8, 0.64), strict=True)
    )
    assert fit.budget_spent.epsilon == pytest.approx(spent, rel=1e-9)
    assert fit.budget_spent.epsilon <= eps * (1 + 1e-9)
    assert D["sensitivities"]["yty"] == pytest.approx(0.64)


def test_yty_share_leaves_the_other_noise_draws_unchanged():
    # The y'y noise is drawn last: the three releases equal those of plain AdaSSP at the
    # reduced budget with the same seed.
    X, y = _data(5, n=300, d=2)
    kw = dict(trials=4, bound_X=1.0, bound_y=1.0)
    with_yty = fit_adassp(
        X, y, budget=ApproxDP(2.0, 1e-6), rng=np.random.default_rng(7), yty_share=0.25, **kw
    )
    plain = fit_adassp(X, y, budget=ApproxDP(1.5, 0.75e-6), rng=np.random.default_rng(7), **kw)
    np.testing.assert_array_equal(with_yty.diagnostics["xtx_noisy"], plain.diagnostics["xtx_noisy"])
    np.testing.assert_array_equal(with_yty.diagnostics["xty_noisy"], plain.diagnostics["xty_noisy"])


def test_yty_release_is_centred_on_yty_with_the_reported_sigma():
    X, y = _data(6, n=300, d=2)
    m = 4000
    fit = fit_adassp(X, y, budget=ApproxDP(0.5, 1e-6), rng=np.random.default_rng(2), trials=m,
                     bound_X=1.0, bound_y=1.0, yty_share=0.2)  # fmt: skip
    noise = (fit.diagnostics["yty_noisy"] - y @ y) / fit.diagnostics["sigma_yty"]
    assert abs(noise.mean()) < 4.0 / math.sqrt(m)  # 4 SE of a standard normal mean
    assert abs(noise.var(ddof=1) - 1.0) < _chi2_tolerance(m)


@pytest.mark.parametrize("share", [0.0, 1.0, -0.1, "0.1", True])
def test_bad_yty_share_is_refused_by_name(share):
    X, y = _data(0, n=50, d=2)
    with pytest.raises((ValueError, TypeError), match="yty_share"):
        fit_adassp(X, y, budget=ApproxDP(1.0, 1e-6), rng=np.random.default_rng(0),
                   bound_X=1.0, bound_y=1.0, yty_share=share)  # fmt: skip


def test_fused_statistics_pass_equals_the_blas_path(monkeypatch):
    """From 64 trials the statistics come from the compiled pass: same draws, same noise
    and budget, estimates equal to round-off; below it, X'X and X'y by BLAS, bit for bit."""
    import functools

    from dpreg.estimators.adassp import adassp_release, check_adassp_options

    rng = np.random.default_rng(8)
    n, d = 6000, 6
    X = rng.uniform(-1, 1, size=(n, d)) / np.sqrt(d)
    y = np.clip(X @ rng.normal(size=d) + 0.1 * rng.normal(size=n), -1, 1)
    kwargs = dict(budget=ApproxDP(1.0, 1e-6), bound_X=1.0, bound_y=1.0, yty_share=0.1)
    fast = fit_adassp(X, y, rng=np.random.default_rng(3), trials=64, **kwargs)
    import dpreg.estimators._gram_cache as gram_cache

    real = gram_cache.check_bounded_design_gram
    monkeypatch.setattr(
        gram_cache, "check_bounded_design_gram", functools.partial(real, method="reference")
    )
    monkeypatch.setattr(gram_cache, "_GRAM_CACHE_PATH", "reference")  # no cached Gram
    ref = fit_adassp(X, y, rng=np.random.default_rng(3), trials=64, **kwargs)
    assert not np.array_equal(fast.theta, ref.theta)  # the compiled pass did run
    np.testing.assert_allclose(fast.theta, ref.theta, rtol=1e-9, atol=1e-12)
    for key in ("xtx_noisy", "xty_noisy", "yty_noisy", "ridge"):
        np.testing.assert_allclose(fast.diagnostics[key], ref.diagnostics[key], rtol=1e-12)
    assert fast.budget_spent == ref.budget_spent
    for key in ("sigma_lambda_min", "sigma_xtx", "sigma_xty", "sigma_yty"):
        assert fast.diagnostics[key] == ref.diagnostics[key]
    # the BLAS path is the former computation, bit for bit
    options = check_adassp_options(kwargs["budget"], None, "analytic", "paper", 0.1)
    direct = adassp_release(
        X.T @ X, X.T @ y, float(y @ y), rng=np.random.default_rng(3), trials=64,
        budget=kwargs["budget"], bound_X=1.0, bound_y=1.0, **options,
    )  # fmt: skip
    np.testing.assert_array_equal(ref.theta, direct.theta)
