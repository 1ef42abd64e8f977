"""DPIVRegression: the scikit-learn estimator of private IV regression (dpreg.iv_model)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone

import dpreg
from dpreg import iv_model
from dpreg.iv_model import DPIVRegression
from dpreg.privacy.conversions import eps_to_zcdp


def _tight_eps(rho: float, delta: float) -> float:
    """Canonne, Kamath & Steinke (2020), Prop. 12, minimised on a fine grid of alpha."""
    alpha = 1.0 + np.logspace(-6, 4, 200_001)
    log_term = math.log(1 / delta) + (alpha - 1) * np.log1p(-1 / alpha) - np.log(alpha)
    return float(max((alpha * rho + log_term / (alpha - 1)).min(), 0.0))


def _iv_data(n: int, seed: int, *, beta: float = 0.5, b0: float = 0.2, q: int = 1):
    """Instruments uniform in the cube (scaled into the ball), x confounded with y."""
    rng = np.random.default_rng(seed)
    Z = rng.uniform(-1, 1, size=(n, q)) / math.sqrt(q)
    u = 0.1 * rng.normal(size=n)
    x = np.clip(0.8 * math.sqrt(q) * Z.mean(axis=1) + 0.1 * rng.uniform(-1, 1, n) + u, -1, 1)
    y = np.clip(b0 + beta * x + 0.1 * rng.normal(size=n) + 2 * u, -1, 1)
    return x[:, None], y, Z


def _two_sls(X, y, Z, intercept=True):
    if intercept:
        X, Z = np.column_stack([X, np.ones(len(y))]), np.column_stack([Z, np.ones(len(y))])
    fitted = Z @ np.linalg.lstsq(Z, X, rcond=None)[0]
    return np.linalg.lstsq(fitted, y, rcond=None)[0]


def test_it_is_exported_lazily_from_dpreg():
    assert dpreg.DPIVRegression is DPIVRegression and "DPIVRegression" in dpreg.__all__


def test_recovers_the_2sls_coefficient_and_intercept_at_large_epsilon():
    # n = 20000, epsilon = 20: the noise sd of one fit is about 0.001 (measured), the
    # optimisation error of the rule's T = 64 steps about 0.001; OLS is biased by the
    # confounder (about +0.09), so recovering 2SLS is the IV at work.
    X, y, Z = _iv_data(20_000, seed=0)
    b = _two_sls(X, y, Z)
    ols = np.linalg.lstsq(np.column_stack([X, np.ones(len(y))]), y, rcond=None)[0]
    assert ols[0] - b[0] > 0.05
    fits = [DPIVRegression(epsilon=20.0, random_state=s).fit(X, y, Z) for s in range(8)]
    coef = np.array([m.coef_[0] for m in fits])
    icpt = np.array([m.intercept_ for m in fits])
    se_c, se_i = coef.std(ddof=1) / math.sqrt(8), icpt.std(ddof=1) / math.sqrt(8)
    assert abs(coef.mean() - b[0]) < 4 * se_c + 0.005
    assert abs(icpt.mean() - b[1]) < 4 * se_i + 0.005
    assert abs(coef.mean() - 0.5) < 0.03  # the true beta, within 2SLS's own error


def test_without_intercept_the_intercept_is_zero_and_the_budget_the_same():
    X, y, Z = _iv_data(3000, seed=1, b0=0.0)
    with_icpt = DPIVRegression(epsilon=2.0, random_state=0).fit(X, y, Z)
    without = DPIVRegression(epsilon=2.0, fit_intercept=False, random_state=0).fit(X, y, Z)
    assert without.intercept_ == 0.0 and with_icpt.intercept_ != 0.0
    assert without.budget_spent_["rho"] == pytest.approx(with_icpt.budget_spent_["rho"])
    assert without.hyperparameters_["T"] <= with_icpt.hyperparameters_["T"]  # q + 1 columns


def test_predict_reads_only_the_release():
    X, y, Z = _iv_data(1000, seed=2)
    model = DPIVRegression(epsilon=1.0, random_state=0).fit(X, y, Z)
    model.coef_, model.intercept_ = np.array([2.0]), -1.0
    assert np.allclose(model.predict(X[:5]), 2.0 * X[:5, 0] - 1.0)
    assert math.isfinite(model.score(X, y))


def test_budget_spent_in_both_units_and_the_split():
    X, y, Z = _iv_data(2000, seed=3, q=3)
    model = DPIVRegression(epsilon=0.7, delta=1e-7, theta_share=0.25, random_state=0)
    model.fit(X, y, Z)
    spent, split = model.budget_spent_, model.budget_split_
    rho = eps_to_zcdp(0.7, 1e-7, method="tight")
    assert split["rho1"] == pytest.approx(0.25 * rho) and split["rho2"] == pytest.approx(0.75 * rho)
    assert spent["rho"] == pytest.approx(split["rho1"] + split["rho2"], rel=1e-9)
    assert spent["epsilon"] == pytest.approx(_tight_eps(spent["rho"], 1e-7), rel=1e-5)
    assert spent["epsilon"] <= 0.7 * (1 + 1e-9) and spent["delta"] == 1e-7
    assert spent["conversion"] == "tight"
    assert model.fit_.diagnostics["hyperparameters"] == model.hyperparameters_


@settings(max_examples=15, deadline=None)
@given(
    epsilon=st.floats(0.05, 30),
    share=st.floats(0.05, 0.95),
    bounds=st.tuples(st.floats(0.5, 3), st.floats(0.5, 3), st.floats(0.5, 3)),
)
def test_budget_spent_never_exceeds_the_target(epsilon, share, bounds):
    X, y, Z = _iv_data(300, seed=4, q=2)
    model = DPIVRegression(epsilon=epsilon, theta_share=share, bounds=bounds, random_state=0)
    model.fit(X, y, Z)
    assert model.budget_spent_["epsilon"] <= epsilon * (1 + 1e-9)
    assert model.budget_spent_["delta"] == pytest.approx(1 / 300**2)


def test_halving_the_noise_is_caught_by_budget_spent(monkeypatch):
    from dpreg.estimators import iv

    X, y, Z = _iv_data(1000, seed=5)
    honest = DPIVRegression(epsilon=1.0, random_state=0).fit(X, y, Z).budget_spent_
    real = iv.noise_scale
    monkeypatch.setattr(iv, "noise_scale", lambda *a, **k: 0.5 * real(*a, **k))
    broken = DPIVRegression(epsilon=1.0, random_state=0).fit(X, y, Z).budget_spent_
    assert broken["rho"] == pytest.approx(4 * honest["rho"])
    assert broken["epsilon"] > 1.5


def test_params_round_trip_and_clone():
    model = DPIVRegression(epsilon=2.0, theta_share=0.3, bounds=(1.0, 2.0, 1.5))
    params = model.get_params()
    assert params["theta_share"] == 0.3 and params["bounds"] == (1.0, 2.0, 1.5)
    twin = clone(model).set_params(epsilon=3.0)
    assert twin.epsilon == 3.0 and model.epsilon == 2.0


def test_rows_beyond_the_bounds_are_clipped_and_counted_or_refused():
    X, y, Z = _iv_data(500, seed=6)
    X, Z = X.copy(), Z.copy()
    X[0] = 5.0
    Z[1] = 3.0
    model = DPIVRegression(epsilon=1.0, random_state=0).fit(X, y, Z)
    assert model.n_clipped_ == 2
    with pytest.raises(ValueError, match="rows of X beyond the public bounds"):
        DPIVRegression(epsilon=1.0, out_of_bounds="raise").fit(X, y, Z)
    X[0] = 0.0
    with pytest.raises(ValueError, match="rows of Z beyond the public bounds"):
        DPIVRegression(epsilon=1.0, out_of_bounds="raise").fit(X, y, Z)


def test_summary_prints_the_budget_and_the_split_and_refuses_intervals():
    X, y, Z = _iv_data(1000, seed=7, q=2)
    model = DPIVRegression(epsilon=1.0, random_state=0).fit(X, y, Z)
    text = model.summary(feature_names=["educ"], instrument_names=["fatheduc", "motheduc"])
    for piece in ("budget split:  rho1 =", "rho2 =", "epsilon = 1", "conversion: tight",
                  "educ", "intercept", "fatheduc, motheduc", "replace-one", "n/a",
                  "Intervals: no confidence interval with checked coverage"):  # fmt: skip
        assert piece in text, piece
    assert text.count("n_clipped_") == 1 and "outside the guarantee, not printed" in text
    with pytest.raises(ValueError, match="no confidence interval with checked coverage"):
        model.conf_int()
    with pytest.raises(ValueError, match="feature_names has 2 names for 1 features"):
        model.summary(feature_names=["a", "b"])


def _good():
    return _iv_data(100, seed=8, q=2)


BAD = [
    ({"X": "nan"}, {}, r"^X contains NaN"),
    ({"y": "nan"}, {}, r"^y contains NaN"),
    ({"Z": "nan"}, {}, r"^Z contains NaN"),
    ({"Z": "text"}, {}, r"^Z must be numeric"),
    ({"X": "text"}, {}, r"^X must be numeric"),
    ({"Z": "1d"}, {}, r"^Z must be a 2-D array"),
    ({"y": "short"}, {}, r"^y has 99 rows but X has 100"),
    ({"Z": "short"}, {}, r"^Z has 99 rows but X has 100"),
    ({"X": "wide"}, {}, r"Z has q=2 instrument column\(s\) but X has p=3"),
    ({}, {"epsilon": 0.0}, r"^epsilon must be a finite number > 0"),
    ({}, {"epsilon": math.inf}, r"^epsilon must be a finite number > 0"),
    ({}, {"epsilon": -1.0}, r"^epsilon must be a finite number > 0"),
    ({}, {"epsilon": "1"}, r"^epsilon must be a number"),
    ({}, {"delta": 0.0}, r"^delta must lie in \(0, 1\)"),
    ({}, {"delta": 1.0}, r"^delta must lie in \(0, 1\)"),
    ({}, {"theta_share": 1.0}, r"^theta_share must lie in \(0, 1\)"),
    ({}, {"bounds": (1.0, 1.0)}, r"^bounds must be a triple"),
    ({}, {"bounds": (1.0, 0.0, 1.0)}, r"^bounds\[1\] \(bound_y\) must be a finite positive"),
    ({}, {"method": "ihm"}, r"unknown IV method 'ihm'"),
    ({}, {"out_of_bounds": "wrap"}, r"^out_of_bounds must be one of"),
    ({}, {"fit_intercept": "yes"}, r"^fit_intercept must be True or False"),
]


@pytest.mark.parametrize(("data", "params", "match"), BAD)
def test_bad_input_is_refused_naming_the_argument_before_any_work(data, params, match, monkeypatch):
    X, y, Z = _good()
    edits = {
        "nan": lambda a: np.where(np.arange(a.size).reshape(a.shape) == 3, np.nan, a),
        "text": lambda a: a.astype(str),
        "1d": lambda a: a[:, 0],
        "short": lambda a: a[:-1],
        "wide": lambda a: np.column_stack([a, a, a]),
    }
    arrays = {"X": X, "y": y, "Z": Z}
    for name, how in data.items():
        arrays[name] = edits[how](arrays[name])

    def no_work(*args, **kwargs):
        raise AssertionError("the estimator ran on refused input")

    monkeypatch.setattr(iv_model, "fit_iv_method", no_work)
    with pytest.raises((ValueError, TypeError), match=match):
        DPIVRegression(**{"epsilon": 1.0, **params}).fit(arrays["X"], arrays["y"], arrays["Z"])


@settings(max_examples=10, deadline=None)
@given(a=st.integers(0, 2**31 - 1), b=st.integers(0, 2**31 - 1), scale=st.floats(0.1, 1.0))
def test_two_datasets_of_the_same_sizes_get_the_same_hyperparameters(a, b, scale):
    Xa, ya, Za = _iv_data(400, seed=a, q=2)
    Xb, yb, Zb = _iv_data(400, seed=b, q=2, beta=-0.4, b0=0.0)
    fa = DPIVRegression(epsilon=1.0, random_state=0).fit(Xa, ya, Za)
    fb = DPIVRegression(epsilon=1.0, random_state=0).fit(scale * Xb, scale * yb, scale * Zb)
    assert fa.hyperparameters_ == fb.hyperparameters_
    assert fa.budget_spent_ == fb.budget_spent_ and fa.budget_split_ == fb.budget_split_
