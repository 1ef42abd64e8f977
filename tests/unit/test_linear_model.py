"""The scikit-learn estimator DPLinearRegression."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.utils.estimator_checks import check_estimator

from dpreg import ZCDP, ApproxDP
from dpreg.data.regimes import load_regime_split
from dpreg.estimators.methods import METHODS, PublicInputs
from dpreg.linear_model import DPLinearRegression
from dpreg.privacy.conversions import zcdp_to_eps

#: Checks of scikit-learn that a private estimator cannot pass, with the reason.
NOT_APPLICABLE = {
    "check_regressors_train": (
        "asks for R^2 > 0.5 on 200 standardised rows; a private fit at epsilon = 1 with the"
        " rows clipped to the unit ball cannot reach it (the cost of privacy,"
        " docs/benchmark.md)"
    ),
}


def test_scikit_learn_estimator_checks():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_estimator(DPLinearRegression(random_state=0), expected_failed_checks=NOT_APPLICABLE)


@pytest.fixture(scope="module")
def data():
    train, test = load_regime_split(n=4000, d=3, seed=0, sigma=0.3)
    return train, test


@pytest.mark.parametrize("method", [m for m, spec in METHODS.items() if spec.private])
def test_every_private_method_fits_predicts_and_reports_its_budget(data, method):
    train, test = data
    model = DPLinearRegression(method, epsilon=0.3, random_state=0)
    try:
        model.fit(train.X, train.y)
    except ValueError as err:  # a regime-limited method says why, naming itself
        assert method in str(err) and "cannot run" in str(err)
        return
    assert model.coef_.shape == (3,) and np.isfinite(model.intercept_)
    assert model.predict(test.X).shape == (test.n,)
    assert model.budget_spent_["epsilon"] <= 0.3 * (1 + 1e-9)
    public = PublicInputs(
        n=train.n, d=4, epsilon=0.3, delta=1 / train.n**2, bound_X=1.0, bound_y=1.0
    )  # d = 3 features + the intercept column
    assert model.hyperparameters_ == METHODS[method].hyperparameters(public)


def test_the_budget_is_given_once_in_either_unit(data):
    train, _ = data
    n = train.n
    by_rho = DPLinearRegression("adassp", rho=0.2, delta=1e-6, random_state=0).fit(train.X, train.y)
    eps = zcdp_to_eps(0.2, 1e-6, method="tight")
    by_eps = DPLinearRegression("adassp", epsilon=eps, delta=1e-6, random_state=0).fit(
        train.X, train.y
    )
    np.testing.assert_array_equal(by_rho.coef_, by_eps.coef_)  # the same target
    assert by_rho.budget_spent_["unit"] == "rho_zcdp"
    by_obj = DPLinearRegression("adassp", budget=ZCDP(0.2), delta=1e-6, random_state=0)
    np.testing.assert_array_equal(by_obj.fit(train.X, train.y).coef_, by_rho.coef_)
    default = DPLinearRegression("ihm", random_state=0).fit(train.X, train.y)
    assert default.budget_spent_["delta"] <= 1 / n**2 * (1 + 1e-9)  # delta = 1/n^2
    gd = DPLinearRegression("dp_gd_brown", epsilon=1.0, random_state=0).fit(train.X, train.y)
    assert math.isfinite(gd.budget_spent_["rho"]) and gd.budget_spent_["epsilon"] <= 1.0 + 1e-9
    with pytest.raises(ValueError, match="give one of epsilon, rho or budget"):
        DPLinearRegression(epsilon=1.0, rho=0.5).fit(train.X, train.y)
    with pytest.raises(ValueError, match="delta is given twice"):
        DPLinearRegression(budget=ApproxDP(1.0, 1e-6), delta=1e-5).fit(train.X, train.y)


@pytest.mark.parametrize(
    "params, match",
    [
        ({"epsilon": -1.0}, "epsilon"),
        ({"epsilon": math.inf}, "finite"),
        ({"epsilon": "1"}, "epsilon"),
        ({"delta": 1.5}, "delta"),
        ({"rho": 0.0}, "rho"),
        ({"bounds": (1.0,)}, "bounds"),
        ({"bounds": (1.0, -2.0)}, r"bounds\[1\]"),
        ({"bounds": (True, 1.0)}, r"bounds\[0\]"),
        ({"out_of_bounds": "ignore"}, "out_of_bounds"),
        ({"method": "ols"}, "not private"),
        ({"method": "nope"}, "unknown method"),
        ({"budget": 1.0}, "budget"),
    ],
)
def test_bad_parameters_are_named_at_fit(data, params, match):
    train, _ = data
    with pytest.raises((TypeError, ValueError), match=match):
        DPLinearRegression(**params).fit(train.X, train.y)


def test_rows_beyond_the_bounds_are_clipped_or_refused(data):
    train, _ = data
    X = train.X.copy()
    X[:10] *= 5.0  # ten rows beyond the unit ball
    model = DPLinearRegression("adassp", epsilon=1.0, random_state=0).fit(X, train.y)
    assert model.n_clipped_ >= 1
    with pytest.raises(ValueError, match="beyond the public bounds"):
        DPLinearRegression("adassp", out_of_bounds="raise").fit(X, train.y)


def test_predict_reads_the_release_only(data):
    train, test = data
    X, y = train.X.copy(), train.y.copy()
    model = DPLinearRegression("ihm", epsilon=1.0, random_state=0).fit(X, y)
    before = model.predict(test.X)
    X[:] = 0.0  # the training data change after the fit...
    y[:] = 0.0
    np.testing.assert_array_equal(model.predict(test.X), before)  # ...nothing follows
    np.testing.assert_allclose(before, test.X @ model.coef_ + model.intercept_)


def test_fits_are_reproducible_and_clone_keeps_the_parameters(data):
    train, _ = data
    a = DPLinearRegression("nu_dp_ftrl", epsilon=1.0, random_state=7).fit(train.X, train.y)
    b = clone(a).fit(train.X, train.y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    c = DPLinearRegression("nu_dp_ftrl", epsilon=1.0, random_state=8).fit(train.X, train.y)
    assert not np.array_equal(a.coef_, c.coef_)


def test_summary_states_the_release_budget_bounds_and_refuses_unchecked_intervals(data):
    train, _ = data
    X = train.X.copy()
    X[:5] *= 4.0  # five rows clipped: their count must not be printed
    model = DPLinearRegression("ihm", epsilon=1.0, random_state=0).fit(X, train.y)
    text = model.summary(feature_names=["a", "b", "c"])
    for expected in ("ihm", "zero-out", "epsilon = 1", "||x|| <= 1", "intercept", "T=3"):
        assert expected in text, expected
    assert "n/a" in text and "no confidence interval with checked coverage" in text
    assert model.n_clipped_ >= 1
    assert f"{model.n_clipped_} rows" not in text and "clipped:" not in text
    with pytest.raises(ValueError, match="no confidence interval with checked coverage"):
        model.conf_int()
    with pytest.raises(ValueError, match="feature_names"):
        model.summary(feature_names=["a"])


def test_conf_int_where_the_coverage_study_has_checked_it_and_refusal_elsewhere():
    train, _ = load_regime_split(n=10000, d=3, seed=4, sigma=0.3)
    model = DPLinearRegression("adassp", epsilon=3.0, fit_intercept=False, random_state=0)
    ci = model.fit(train.X, train.y).conf_int(replicates=200)
    assert ci.shape == (4, 2) and np.isnan(ci[0]).all()  # no intercept row
    assert (ci[1:, 0] < model.coef_).all() and (model.coef_ < ci[1:, 1]).all()
    assert "n/a" not in model.summary()
    small, _ = load_regime_split(n=1000, d=3, seed=4, sigma=0.3)
    outside = DPLinearRegression("adassp", epsilon=0.3, fit_intercept=False, random_state=0)
    with pytest.raises(ValueError, match="at these sizes"):
        outside.fit(small.X, small.y).conf_int()
    gd = DPLinearRegression("dp_gd_brown", epsilon=3.0, fit_intercept=False, random_state=0)
    with pytest.raises(ValueError, match="for method 'dp_gd_brown'"):
        gd.fit(train.X, train.y).conf_int()
    with pytest.raises(ValueError, match="alpha"):
        model.conf_int(alpha=1.5)
