"""Methods with public hyperparameter rules, the intercept, and public bounds everywhere."""

from __future__ import annotations

import inspect
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpreg import ApproxDP
from dpreg.data.regimes import load_regime_split
from dpreg.estimators.intercept import add_intercept_column, split_intercept, with_intercept
from dpreg.estimators.methods import METHODS, PublicInputs, fit_method, get_method
from dpreg.estimators.registry import BUILTIN_ESTIMATORS, get_estimator
from dpreg.privacy.budgets import PureDP

#: Private regression estimators deliberately not in the benchmark, with the reason.
NOT_BENCHMARKED = {
    "dp_ambssgd_fixedclip": "an ablation of dp_ambssgd (Varshney et al. validation study)",
    "dp_2s_gd": "IV regression (instruments)",
    "dp_2s_gd_beta": "IV regression (instruments)",
}
PRIVATE_METHODS = [name for name, m in METHODS.items() if m.private]


def _data(n=400, d=3, seed=0, offset=0.0):
    train, test = load_regime_split(n=n, d=d, n_test=200, seed=seed, sigma=0.3)
    if offset:
        shift = lambda ds: ds.with_(y=np.clip(ds.y + offset, -1, 1))  # noqa: E731
        train, test = shift(train), shift(test)
    return train, test


def _fit(name, X, y, *, epsilon=1.0, trials=20, seed=0, **kw):
    n = X.shape[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fit_method(
            name, X, y, epsilon=epsilon, delta=1 / n**2, bound_X=1.0, bound_y=1.0,
            rng=np.random.default_rng(seed), trials=trials, **kw,
        )  # fmt: skip


def test_every_private_regression_estimator_is_a_method_or_excluded_with_a_reason():
    covered = {m.estimator for m in METHODS.values()}
    private_regression = {
        name
        for name, fn in BUILTIN_ESTIMATORS.items()
        if "budget" in inspect.signature(fn).parameters or name.startswith("dp_")
    } - {"ols", "ambssgd_sgd", "dp_ambssgd_oracleclip"}
    missing = private_regression - covered - set(NOT_BENCHMARKED)
    assert not missing, f"private estimators with no public rule in METHODS: {sorted(missing)}"


public_inputs = st.builds(
    PublicInputs,
    n=st.integers(20, 200_000),
    d=st.integers(1, 200),
    epsilon=st.floats(0.01, 50),
    delta=st.floats(1e-12, 1e-3),
    bound_X=st.floats(0.1, 10),
    bound_y=st.floats(0.1, 10),
)


@settings(max_examples=60, deadline=None)
@given(public=public_inputs)
def test_rules_are_functions_of_public_inputs_with_sane_values(public):
    for name, method in METHODS.items():
        if method.reason_not_run(public) is not None:
            continue
        first, again = method.hyperparameters(public), method.hyperparameters(public)
        assert first == again, name  # deterministic: nothing else is read
        for key in ("eta", "step", "clip", "T", "batch_size", "nu", "x_norm_sq", "H_norm"):
            if key in first:
                value = float(first[key])
                assert math.isfinite(value) and value > 0, (name, key, value)
        if "nu" in first:
            assert first["nu"] < 1
        if "batch_size" in first:
            assert first["batch_size"] <= public.n


def test_the_rule_sees_the_same_values_on_two_datasets_with_the_same_public_inputs():
    (a, _), (b, _) = _data(seed=1), _data(seed=2)
    public = PublicInputs(n=a.n, d=a.d, epsilon=1.0, delta=1 / a.n**2, bound_X=1.0, bound_y=1.0)
    ran = [name for name, m in METHODS.items() if m.reason_not_run(public) is None]
    assert len(ran) >= len(METHODS) - 1
    for name in ran:
        fa, fb = _fit(name, a.X, a.y, trials=2), _fit(name, b.X, b.y, trials=2)
        assert fa.diagnostics["hyperparameters"] == fb.diagnostics["hyperparameters"], name
        assert fa.diagnostics["hyperparameters"] == METHODS[name].hyperparameters(public)


@pytest.mark.parametrize("name", PRIVATE_METHODS)
def test_budget_spent_is_at_most_the_target(name):
    train, _ = _data(n=2000, d=4)
    fit = _fit(name, train.X, train.y, epsilon=0.3, trials=2)  # inside DP-SSGD's regime
    spent = fit.budget_spent
    target = ApproxDP(0.3, 1 / 2000**2)
    if isinstance(spent, PureDP):  # the diffprivlib peer: delta = 0
        assert spent.epsilon <= target.epsilon * (1 + 1e-9)
    elif isinstance(spent, ApproxDP):
        assert spent.epsilon <= target.epsilon * (1 + 1e-9)
        assert spent.delta <= target.delta * (1 + 1e-9)
    else:  # zCDP certificate: its tight conversion at the target delta
        from dpreg.privacy.conversions import zcdp_to_eps

        assert zcdp_to_eps(spent.rho, target.delta, method="tight") <= 0.3 * (1 + 1e-9)


def test_a_method_outside_its_regime_is_refused_with_the_reason():
    train, _ = _data(n=500, d=3)
    with pytest.raises(ValueError, match="dp_ssgd.*does not run here: outside the shuffling"):
        _fit("dp_ssgd", train.X, train.y, epsilon=10.0)
    with pytest.raises(ValueError, match="unknown method 'nope'"):
        get_method("nope")


# ---------------------------------------------------------------- public bounds everywhere

BOUND_CALLS = {
    "dp_ftrl": {"eta": 0.1, "clip": 1.0, "nu": 0.1},
    "dp_sgd_stream": {"eta": 0.1, "clip": 1.0},
    "dp_sgd_poisson": {"eta": 0.1, "clip": 1.0, "batch_size": 20.0, "n_public": 400},
    "dp_ssgd": {"eta": 0.01, "clip": 1.0},
    "dp_ambssgd": {"x_norm_sq": 1.0, "H_norm": 1.0, "stat_domain": 2.0},
    "dp_ambssgd_fixedclip": {"x_norm_sq": 1.0, "H_norm": 1.0, "fixed_clip": 1.0},
}


@pytest.mark.parametrize("name", sorted(BOUND_CALLS))
def test_clip_based_estimators_accept_and_check_public_bounds(name):
    train, _ = _data(n=400, d=3)
    fn = get_estimator(name)
    budget = ApproxDP(0.5, 1e-5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = fn(train.X, train.y, budget=budget, rng=np.random.default_rng(3),
                   **BOUND_CALLS[name])  # fmt: skip
        bounded = fn(train.X, train.y, budget=budget, rng=np.random.default_rng(3),
                     bound_X=1.0, bound_y=1.0, **BOUND_CALLS[name])  # fmt: skip
        np.testing.assert_array_equal(plain.theta, bounded.theta)  # the bounds change nothing
        with pytest.raises(ValueError, match="bound_X"):
            fn(train.X * 2, train.y, budget=budget, rng=np.random.default_rng(3),
               bound_X=1.0, **BOUND_CALLS[name])  # fmt: skip
        with pytest.raises(ValueError, match="bound_y"):
            fn(train.X, train.y * 3, budget=budget, rng=np.random.default_rng(3),
               bound_y=1.0, **BOUND_CALLS[name])  # fmt: skip


# -------------------------------------------------------------------------- the intercept


@settings(max_examples=50, deadline=None)
@given(
    X=st.integers(1, 5).flatmap(
        lambda d: st.lists(
            st.lists(st.floats(-1, 1), min_size=d, max_size=d), min_size=1, max_size=20
        )
    ),
    bound=st.floats(0.5, 5),
    scale=st.floats(0.05, 20),
    theta_seed=st.integers(0, 2**31),
)
def test_intercept_column_keeps_the_bound_and_maps_fits_back_exactly(X, bound, scale, theta_seed):
    X = np.asarray(X)
    X = X / np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True)) * bound
    aug = add_intercept_column(X, bound, scale=scale)
    assert aug.shape == (X.shape[0], X.shape[1] + 1)
    assert (np.linalg.norm(aug, axis=1) <= bound * (1 + 1e-12)).all()
    theta = np.random.default_rng(theta_seed).normal(size=(3, X.shape[1] + 1))
    coef, b0 = split_intercept(theta, bound, scale=scale)
    np.testing.assert_allclose(aug @ theta.T, X @ coef.T + b0[None, :], atol=1e-9 * bound)


def test_intercept_scale_is_checked():
    with pytest.raises(ValueError, match="intercept_scale"):
        add_intercept_column(np.ones((2, 2)), 2.0, scale=0.0)
    with pytest.raises((TypeError, ValueError), match="intercept_scale"):
        add_intercept_column(np.ones((2, 2)), 2.0, scale="1")


INTERCEPT_METHODS = ["adassp", "ihm", "linear_mixing", "dp_gd_brown", "nu_dp_ftrl"]


@pytest.mark.parametrize("name", INTERCEPT_METHODS)
def test_intercept_helps_when_y_has_an_offset(name):
    train, test = _data(n=4000, d=3, offset=0.4)
    with_b0 = _fit(name, train.X, train.y, epsilon=10.0, trials=40, intercept=True)
    without = _fit(name, train.X, train.y, epsilon=10.0, trials=40)

    def mse(fit):
        return ((test.y[None] - fit.predict(test.X)) ** 2).mean(axis=1)

    a, b = mse(with_b0), mse(without)
    diff = b - a  # paired by trial index but independent noise: use the difference's SE
    se = np.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size)
    assert diff.mean() > 4 * se, (name, a.mean(), b.mean(), se)
    assert with_b0.intercept.mean() > 0.1  # the offset (0.4 in y before clipping) is found


@pytest.mark.parametrize("name", INTERCEPT_METHODS)
def test_intercept_is_zero_in_mean_when_nothing_is_offset(name):
    train, _ = _data(n=4000, d=3)  # x and e have mean zero, so y does in the population
    fit = _fit(name, train.X, train.y, epsilon=3.0, trials=200, intercept=True)
    b0 = fit.intercept
    se = b0.std(ddof=1) / math.sqrt(b0.size)
    assert abs(b0.mean()) <= 4 * se + 0.02, (name, b0.mean(), se)


def test_with_intercept_recovers_ols_exactly_without_noise():
    from dpreg.estimators.ols import fit_ols

    rng = np.random.default_rng(0)
    X = rng.uniform(-0.5, 0.5, size=(100, 3))
    y = X @ np.array([0.2, -0.1, 0.3]) - 0.25
    fit = with_intercept(fit_ols, X, y, bound_X=1.0, intercept_scale=0.7)
    np.testing.assert_allclose(fit.theta[0], [0.2, -0.1, 0.3], atol=1e-10)
    np.testing.assert_allclose(fit.intercept, [-0.25], atol=1e-10)
    np.testing.assert_allclose(fit.predict(X)[0], y, atol=1e-10)
