"""Bad input is never accepted silently and never hangs (issue 13, property-based).

Every registered estimator and every public accounting function is fed malformed,
extreme and mistyped values, one argument at a time, starting from a valid call. Each
case must raise ``ValueError`` or ``TypeError`` whose message names the argument (or, for
extreme but valid numbers, return a documented result), within a time limit enforced by
``SIGALRM``: a hang is a failure, not a stuck CI job.
"""

from __future__ import annotations

import math
import signal
from contextlib import contextmanager

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dpreg.privacy as privacy
from dpreg.estimators import ESTIMATORS, get_estimator
from dpreg.privacy import ZCDP, ApproxDP

TIME_LIMIT_S = 20


@contextmanager
def time_limit(seconds: int = TIME_LIMIT_S):
    def handler(signum, frame):
        raise TimeoutError(f"no answer within {seconds} s: a hang")

    old = signal.signal(signal.SIGALRM, handler)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _regression(n: int = 40, d: int = 2) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, d))
    X /= 2 * np.linalg.norm(X, axis=1, keepdims=True)
    return X, np.clip(X @ np.ones(d), -1, 1)


def _iv(n: int = 40) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(1)
    Z = rng.normal(size=(n, 1)) / 3
    X = Z + rng.normal(size=(n, 1)) / 10
    return Z, X, (X[:, 0] / 2)


APPROX = ApproxDP(1.0, 1e-5)
ZC = ZCDP(0.5)
IV_HYPER = {"T": 3, "step_theta": 0.1, "step_beta": 0.1}
AMB = {"x_norm_sq": 1.0, "H_norm": 1.0, "T": 2, "eta": 0.1}


def valid_call(name: str) -> tuple[tuple, dict]:
    """Positional data and keyword arguments of a small valid call of estimator ``name``."""
    X, y = _regression()
    Z, Xi, yi = _iv()
    rng = np.random.default_rng(0)
    calls = {
        "ols": ((X, y), {}),
        "adassp": ((X, y), {"budget": APPROX, "rng": rng, "bound_X": 1.0, "bound_y": 1.0}),
        "ihm": ((X, y), {"budget": APPROX, "rng": rng}),
        "linear_mixing": ((X, y), {"budget": APPROX, "rng": rng}),
        "sheffet_sketch": ((X, y), {"budget": APPROX, "rng": rng}),
        "dp_gd": ((X, y), {"budget": ZC, "rng": rng}),
        "dp_ftrl": ((X, y), {"budget": ZC, "rng": rng, "eta": 0.1, "clip": 1.0, "nu": 0.1}),
        "dp_sgd_stream": ((X, y), {"budget": ZC, "rng": rng, "eta": 0.1, "clip": 1.0}),
        "dp_sgd_poisson": (
            (X, y),
            {"budget": APPROX, "rng": rng, "clip": 1.0, "eta": 0.5, "batch_size": 10,
             "n_public": 40},
        ),
        "dp_ssgd": (_regression(n=1000), {"budget": ApproxDP(1.0, 1e-5), "rng": rng,
                                          "clip": 1.0, "eta": 0.1}),
        "dp_ambssgd": ((X, y), {"budget": ZC, "rng": rng, "stat_domain": 2.0, **AMB}),
        "dp_ambssgd_fixedclip": ((X, y), {"budget": ZC, "rng": rng, "fixed_clip": 1.0, **AMB}),
        "dp_ambssgd_oracleclip": (
            (X, y),
            {"budget": ZC, "rng": rng, "w_star": np.ones(2), "H": np.eye(2), "sigma": 0.1,
             **AMB},
        ),
        "ambssgd_sgd": ((X, y), {"rng": rng, **AMB}),
        "2s_gd": ((Z, Xi, yi), {**IV_HYPER}),
        "dp_2s_gd": (
            (Z, Xi, yi),
            {"rho1": 1.0, "rho2": 1.0, "rng": rng, "clip_theta": 1.0, "clip_beta": 1.0,
             **IV_HYPER},
        ),
        "dp_2s_gd_beta": (
            (Z, Xi, yi), {"rho2": 1.0, "rng": rng, "clip_beta": 1.0, **IV_HYPER}
        ),
    }  # fmt: skip
    return calls[name]


def _call(name: str, args: tuple, kwargs: dict):
    # The lookup imports the estimator's module (the registry is lazy): outside the limit,
    # which times the call, as when the registry imported every module up front.
    func = get_estimator(name)
    with time_limit():
        return func(*args, **kwargs)


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_every_estimator_has_a_valid_small_call(name):
    args, kwargs = valid_call(name)
    fit = _call(name, args, {**kwargs, "trials": 2} if name != "2s_gd" else kwargs)
    assert np.all(np.isfinite(fit.theta))


BAD_NUMBERS = st.sampled_from(
    ["1.0", True, None, 1 + 2j, math.nan, -1.0, 0.0, math.inf, -math.inf, [1.0], b"1"]
)


def _numeric_keys(kwargs: dict) -> list[str]:
    return [
        k
        for k, v in kwargs.items()
        if isinstance(v, int | float) and not isinstance(v, bool) and k not in {"T"}
    ]


BAD_VALUES = ["1.0", True, None, 1 + 2j, math.nan, -1.0, 0.0, math.inf, -math.inf, [1.0], b"1"]


def _documented(name: str, key: str, bad: object) -> bool:
    """Values of a numeric argument that are valid by documentation, not errors."""
    import inspect

    param = inspect.signature(get_estimator(name)).parameters.get(key)
    if bad is None and param is not None and param.default is None:
        return True  # None selects the default rule
    if bad == math.inf and key in {"rho1", "rho2"}:
        return True  # an infinite stage budget is the noiseless limit
    if bad == math.inf and key == "clip" and name in {"dp_ftrl", "dp_sgd_stream"}:
        return True  # clip = inf is Noisy-FTRL, reported as not private
    return bad == 0.0 and key == "sigma"  # the oracle's noise level may be 0


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_bad_hyperparameters_are_refused_by_name(name):
    # Every numeric keyword of the valid call, with every bad value (exhaustive: fast,
    # since each call stops at validation).
    args, kwargs = valid_call(name)
    for key in _numeric_keys(kwargs):
        for bad in BAD_VALUES:
            if _documented(name, key, bad):
                continue
            with pytest.raises((TypeError, ValueError)) as info:
                _call(name, args, {**kwargs, key: bad})
            assert key in str(info.value), (key, bad, str(info.value))


BAD_DATA = st.sampled_from(["nan", "inf", "complex", "text", "object-na", "3d", "empty"])


def _corrupt(kind: str, A: np.ndarray):
    if kind == "nan":
        B = A.astype(float).copy()
        B.flat[0] = np.nan
        return B
    if kind == "inf":
        B = A.astype(float).copy()
        B.flat[-1] = np.inf
        return B
    if kind == "complex":
        return A + 1j
    if kind == "text":
        return A.astype(str)
    if kind == "object-na":
        import pandas as pd

        B = A.astype(object).copy()
        B.flat[0] = pd.NA
        return B
    if kind == "3d":
        return A[None]
    return A[:0]


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
@settings(
    max_examples=14, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(kind=BAD_DATA, which=st.integers(0, 2))
def test_bad_data_is_refused_naming_the_array(name, kind, which):
    args, kwargs = valid_call(name)
    names = ("Z", "X", "y") if len(args) == 3 else ("X", "y")
    if kind == "3d" and len(args) == 3:
        return  # documented: IV data may carry a leading trials axis (here of length 1)
    which %= len(args)
    bad_args = list(args)
    bad_args[which] = _corrupt(kind, np.asarray(args[which]))
    with pytest.raises((TypeError, ValueError)) as info:
        _call(name, tuple(bad_args), kwargs)
    assert names[which] in str(info.value), (kind, names[which], str(info.value))


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
@settings(
    max_examples=8, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(trials=st.sampled_from([0, -3, 2.5, "4", True, None, 10**15]))
def test_bad_trials_are_refused(name, trials):
    args, kwargs = valid_call(name)
    if name == "2s_gd" and trials == 10**15:
        return  # deterministic: no trials axis
    with pytest.raises((TypeError, ValueError, MemoryError)) as info:
        _call(name, args, {**kwargs, "trials": trials})
    if info.type is not MemoryError:
        assert "trials" in str(info.value)


# ------------------------------------------------------------------------ accounting

EXTREME = st.sampled_from([5e-324, 1e-300, 1e-100, 1e-12, 1.0, 1e12, 1e300])
DELTAS = st.sampled_from([5e-324, 1e-300, 1e-12, 1e-5, 0.5, 1 - 1e-12, 1 - 1e-16])


@settings(max_examples=80, derandomize=True, deadline=None)
@given(eps=EXTREME, delta=DELTAS, method=st.sampled_from(["tight", "simple"]))
def test_eps_to_zcdp_answers_or_refuses_at_every_scale(eps, delta, method):
    with time_limit():
        try:
            rho = privacy.eps_to_zcdp(eps, delta, method)
        except ValueError as err:
            assert "epsilon" in str(err)
            return
    assert rho > 0 and math.isfinite(rho)  # the docstring's promise
    assert privacy.zcdp_to_eps(rho, delta, method) <= eps * (1 + 1e-9) + 1e-12


@settings(max_examples=80, derandomize=True, deadline=None)
@given(eps=EXTREME, delta=DELTAS, sens=st.sampled_from([1e-300, 1.0, 1e300]))
def test_gaussian_calibration_answers_or_refuses_at_every_scale(eps, delta, sens):
    with time_limit():
        try:
            sigma = privacy.analytic_gaussian_sigma(eps, delta, sens)
        except ValueError as err:
            assert "epsilon" in str(err) or "delta" in str(err)
            return
    assert 0 < sigma < math.inf


@settings(max_examples=60, derandomize=True, deadline=None)
@given(
    func=st.sampled_from(
        [
            privacy.zcdp_to_eps,
            privacy.eps_to_zcdp,
            privacy.gaussian_epsilon,
            privacy.gaussian_delta,
            privacy.analytic_gaussian_sigma,
            privacy.classic_gaussian_sigma,
            privacy.zcdp_gaussian_sigma,
            privacy.gaussian_zcdp,
        ]
    ),
    position=st.integers(0, 1),
    bad=BAD_NUMBERS,
)
def test_accounting_functions_refuse_bad_numbers(func, position, bad):
    import inspect

    params = list(inspect.signature(func).parameters)
    good = {"rho": 0.5, "delta": 1e-5, "epsilon": 1.0, "sigma": 1.0, "sensitivity": 1.0}
    kwargs = {p: good[p] for p in params if p in good}
    target = [p for p in params if p in good][position % len(kwargs)]
    if bad == math.inf and target in {"rho", "epsilon"}:
        return  # documented: infinite budgets mean no noise
    kwargs[target] = bad
    with time_limit(), pytest.raises((TypeError, ValueError)) as info:
        func(**kwargs)
    assert target in str(info.value), (func.__name__, target, bad, str(info.value))


@settings(max_examples=40, derandomize=True, deadline=None)
@given(bad=BAD_NUMBERS, which=st.sampled_from(["rho", "epsilon", "delta"]))
def test_budget_objects_refuse_bad_numbers(bad, which):
    if bad == math.inf and which != "delta":
        return  # documented: the noiseless limit
    with pytest.raises((TypeError, ValueError)) as info:
        if which == "rho":
            ZCDP(bad)
        elif which == "epsilon":
            ApproxDP(bad, 1e-5)
        else:
            ApproxDP(1.0, bad)
    assert which in str(info.value)


@pytest.mark.parametrize("name", ["dp_ftrl", "dp_sgd_stream"])
@pytest.mark.parametrize(
    "budget",
    [ApproxDP(1e-300, 1e-5), ApproxDP(1e-300, 5e-324), ApproxDP(1e300, 1e-5), ZCDP(1e-300)],
)
def test_ftrl_estimators_answer_extreme_budgets_without_hanging(name, budget):
    args, kwargs = valid_call(name)
    fit = _call(name, args, {**kwargs, "budget": budget})
    assert type(fit.budget_spent) is type(budget)
    assert np.all(np.isfinite(fit.theta))
