"""DP-2S-GD's public hyperparameter rule (dpreg.estimators.iv_methods)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpreg.estimators import iv
from dpreg.estimators.iv_methods import (
    IV_METHODS,
    MAX_IV_STEPS,
    MIN_IV_STEPS,
    PublicIVInputs,
    dp_2s_gd_rule,
    fit_iv_method,
    get_iv_method,
)


def _tight_eps(rho: float, delta: float) -> float:
    """Canonne, Kamath & Steinke (2020), Prop. 12, minimised on a fine grid of alpha."""
    alpha = 1.0 + np.logspace(-6, 4, 200_001)
    eps = alpha * rho + (
        math.log(1 / delta) + (alpha - 1) * np.log1p(-1 / alpha) - np.log(alpha)
    ) / (alpha - 1)
    return float(max(eps.min(), 0.0))


def _iv_data(n: int, seed: int, *, beta: float = 0.5, b0: float = 0.2):
    """A strong-instrument design inside the unit balls: z uniform, x endogenous."""
    rng = np.random.default_rng(seed)
    z = rng.uniform(-1, 1, size=(n, 1))
    u = 0.1 * rng.normal(size=n)  # the confounder of x and y
    x = np.clip(0.8 * z[:, 0] + 0.1 * rng.uniform(-1, 1, size=n) + u, -1, 1)
    y = np.clip(b0 + beta * x + 0.1 * rng.normal(size=n) + 2 * u, -1, 1)
    return z, x[:, None], y


public_iv = st.builds(
    PublicIVInputs,
    n=st.integers(20, 1_000_000),
    p=st.integers(1, 5),
    q=st.integers(5, 40),
    epsilon=st.floats(0.01, 100),
    delta=st.floats(1e-14, 1e-3),
    bound_X=st.floats(0.1, 10),
    bound_y=st.floats(0.1, 10),
    bound_Z=st.floats(0.1, 10),
    theta_share=st.floats(0.01, 0.99),
)


@settings(max_examples=80, deadline=None)
@given(public=public_iv)
def test_the_rule_is_a_function_of_public_inputs_with_sane_values(public):
    first, again = dp_2s_gd_rule(public), dp_2s_gd_rule(public)
    assert first == again
    assert MIN_IV_STEPS <= first["T"] <= MAX_IV_STEPS and isinstance(first["T"], int)
    for key in ("step_theta", "step_beta", "clip_theta", "clip_beta", "rho1", "rho2"):
        assert math.isfinite(first[key]) and first[key] > 0, key
    assert first["rho1"] + first["rho2"] == pytest.approx(public.rho, rel=1e-12)
    assert first["rho1"] / public.rho == pytest.approx(public.theta_share, rel=1e-12)
    assert first["clip_theta"] == pytest.approx(public.bound_Z * public.bound_X)
    assert first["clip_beta"] == pytest.approx(public.bound_X * public.bound_y)
    # steps stable for every design in the bounds (Hessians' eigenvalues <= B^2)
    assert first["step_theta"] * public.bound_Z**2 == pytest.approx(1.0)
    assert first["step_beta"] * public.bound_X**2 == pytest.approx(1.0)


def test_the_rule_takes_no_data_and_two_datasets_with_the_same_sizes_get_the_same_values():
    a, b = _iv_data(3000, seed=1), _iv_data(3000, seed=2, beta=-0.3, b0=-0.4)
    kw = {"epsilon": 2.0, "delta": 1e-7, "trials": 2, "intercept": True}
    fa = fit_iv_method("dp_2s_gd", *a, rng=np.random.default_rng(0), **kw)
    fb = fit_iv_method("dp_2s_gd", *b, rng=np.random.default_rng(0), **kw)
    public = PublicIVInputs(n=3000, p=2, q=2, epsilon=2.0, delta=1e-7)
    assert fa.diagnostics["hyperparameters"] == fb.diagnostics["hyperparameters"]
    assert fa.diagnostics["hyperparameters"] == get_iv_method("dp_2s_gd").hyperparameters(public)
    assert not np.allclose(fa.theta, fb.theta)


@pytest.mark.parametrize(("epsilon", "delta", "share"), [(0.5, 1e-6, 0.5), (3.0, 1e-9, 0.25)])
def test_budget_spent_equals_an_independent_conversion_and_meets_the_target(epsilon, delta, share):
    Z, X, y = _iv_data(2000, seed=3)
    fit = fit_iv_method(
        "dp_2s_gd", Z, X, y, epsilon=epsilon, delta=delta, theta_share=share,
        rng=np.random.default_rng(1), trials=3, intercept=True,
    )  # fmt: skip
    hyper = fit.diagnostics["hyperparameters"]
    # the accountant, recomputed from the noise added: T Gaussian steps per stage,
    # replace-one sensitivity 2 gamma / n (Bun & Steinke 2016, Prop. 1.6)
    n, T = 2000, hyper["T"]
    lam1, lam2 = fit.diagnostics["lambda1"], fit.diagnostics["lambda2"]
    rho = T * ((2 * hyper["clip_theta"] / n) ** 2 / (2 * lam1**2)) + T * (
        (2 * hyper["clip_beta"] / n) ** 2 / (2 * lam2**2)
    )
    assert fit.budget_spent.rho == pytest.approx(rho, rel=1e-12)
    assert fit.budget_spent.rho == pytest.approx(hyper["rho1"] + hyper["rho2"], rel=1e-9)
    spent_eps = _tight_eps(fit.budget_spent.rho, delta)
    both = fit.diagnostics["budget_spent_both_units"]
    assert both["rho"] == fit.budget_spent.rho and both["delta"] == delta
    assert both["epsilon"] == pytest.approx(spent_eps, rel=1e-5)
    assert both["epsilon"] <= epsilon * (1 + 1e-9)
    assert spent_eps <= epsilon * (1 + 1e-6)
    assert spent_eps == pytest.approx(epsilon, rel=1e-4)  # the exact calibration spends it


def test_halving_the_noise_is_caught_by_budget_spent(monkeypatch):
    Z, X, y = _iv_data(1000, seed=4)
    kw = {"epsilon": 1.0, "delta": 1e-6, "trials": 1}
    honest = fit_iv_method("dp_2s_gd", Z, X, y, rng=np.random.default_rng(0), **kw)
    real = iv.noise_scale
    monkeypatch.setattr(iv, "noise_scale", lambda *a, **k: 0.5 * real(*a, **k))
    broken = fit_iv_method("dp_2s_gd", Z, X, y, rng=np.random.default_rng(0), **kw)
    assert broken.diagnostics["lambda1"] == pytest.approx(0.5 * honest.diagnostics["lambda1"])
    assert broken.budget_spent.rho == pytest.approx(4 * honest.budget_spent.rho)
    assert _tight_eps(broken.budget_spent.rho, 1e-6) > 1.5


def test_more_budget_or_rows_never_means_fewer_steps():
    steps = [
        dp_2s_gd_rule(PublicIVInputs(n=n, p=2, q=3, epsilon=e, delta=1e-8))["T"]
        for n in (100, 1000, 10_000, 100_000)
        for e in (0.1, 1.0, 10.0)
    ]
    grid = np.reshape(steps, (4, 3))
    assert (np.diff(grid, axis=0) >= 0).all() and (np.diff(grid, axis=1) >= 0).all()
    assert grid[0, 0] == MIN_IV_STEPS


def test_the_intercept_adds_a_column_to_both_blocks_and_recovers_the_offset():
    Z, X, y = _iv_data(20_000, seed=5, beta=0.5, b0=0.2)
    fit = fit_iv_method(
        "dp_2s_gd", Z, X, y, epsilon=20.0, delta=1 / 20_000**2,
        rng=np.random.default_rng(2), trials=20, intercept=True,
    )  # fmt: skip
    assert fit.theta.shape == (20, 1) and fit.intercept.shape == (20,)
    assert fit.diagnostics["q"] == 2 and fit.diagnostics["p"] == 2
    # 2SLS of this data set, the target of Algorithm 1
    Zi, Xi = np.column_stack([Z, np.ones(len(y))]), np.column_stack([X, np.ones(len(y))])
    b = np.linalg.lstsq(Zi @ np.linalg.lstsq(Zi, Xi, rcond=None)[0], y, rcond=None)[0]
    se = fit.theta[:, 0].std(ddof=1) / math.sqrt(20)
    assert abs(fit.theta[:, 0].mean() - b[0]) < 4 * se + 0.01
    assert abs(fit.intercept.mean() - b[1]) < 4 * fit.intercept.std(ddof=1) / math.sqrt(20) + 0.01


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"q": 1, "p": 2}, "q >= p"),
        ({"epsilon": math.inf}, "epsilon"),
        ({"epsilon": 0.0}, "epsilon"),
        ({"delta": 1.0}, "delta"),
        ({"theta_share": 1.0}, "theta_share"),
        ({"bound_Z": -1.0}, "bound_Z"),
        ({"n": 0}, "n must"),
    ],
)
def test_bad_public_inputs_are_refused_naming_the_argument(kwargs, match):
    base = {"n": 100, "p": 1, "q": 2, "epsilon": 1.0, "delta": 1e-6}
    with pytest.raises(ValueError, match=match):
        PublicIVInputs(**{**base, **kwargs})


@pytest.mark.parametrize(
    ("change", "match"),
    [("X1d", r"^X must be a 2-D array"), ("Ztext", r"^Z must be numeric"), ("qp", r"q >= p")],
)
def test_bad_data_is_refused_naming_the_argument(change, match):
    Z, X, y = _iv_data(200, seed=6)
    if change == "X1d":
        X = X[:, 0]
    elif change == "Ztext":
        Z = Z.astype(str)
    else:
        X = np.column_stack([X, X])
    with pytest.raises((ValueError, TypeError), match=match):
        fit_iv_method("dp_2s_gd", Z, X, y, epsilon=1.0, delta=1e-6, rng=np.random.default_rng(0))


def test_unknown_method_lists_the_known_ones():
    with pytest.raises(ValueError, match="dp_2s_gd"):
        get_iv_method("2sls")
    assert set(IV_METHODS) == {"dp_2s_gd"}
