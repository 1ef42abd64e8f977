"""The accountants' bounded Brent search on Python floats against scipy's, bit for bit."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize

import dpreg.privacy._bounded_min as bm
from dpreg.privacy import conversions, mixing
from dpreg.privacy._bounded_min import minimize_bounded


def _scipy(func, lo, hi, xatol, maxiter=500):
    calls = []

    def traced(x):
        calls.append(float(x))
        return func(x)

    with np.errstate(all="ignore"):  # inf - inf in its parabola (the port: plain floats)
        res = optimize.minimize_scalar(
            traced, bounds=(lo, hi), method="bounded", options={"xatol": xatol, "maxiter": maxiter}
        )
    return float(res.x), float(res.fun), calls


def _port(func, lo, hi, xatol, maxiter=500):
    calls = []

    def traced(x):
        calls.append(float(x))
        return func(x)

    x, fx = minimize_bounded(traced, lo, hi, xatol=xatol, maxiter=maxiter)
    return x, fx, calls


def _same(a, b):
    """Equal floats bit for bit (NaN equal to NaN)."""
    return np.array_equal(np.asarray(a, dtype=np.float64).view(np.uint64),
                          np.asarray(b, dtype=np.float64).view(np.uint64))  # fmt: skip


_OBJECTIVES = {
    "quadratic": lambda c, s: lambda x: float((x - c) ** 2 * s),
    "quartic": lambda c, s: lambda x: float((x - c) ** 4 - s * (x - c) ** 2),
    "abs": lambda c, s: lambda x: float(abs(x - c) * s),
    "flat": lambda c, s: lambda x: float(s),
    "steps": lambda c, s: lambda x: float(math.floor(4 * (x - c)) ** 2),
    "cosine": lambda c, s: lambda x: float(math.cos(s * x + c)),
    "nan_right": lambda c, s: lambda x: float("nan") if x > c else float((x - c + s) ** 2),
    "inf_left": lambda c, s: lambda x: math.inf if x < c else float(x * x),
    "exp": lambda c, s: lambda x: math.exp(min(s * (x - c), 700.0)),
    "ties": lambda c, s: lambda x: round((x - c) ** 2 * s) / s,  # flat steps: equal values
}


@settings(max_examples=600, deadline=None)
@given(
    name=st.sampled_from(sorted(_OBJECTIVES)),
    c_frac=st.sampled_from([-0.5, 0.0, 1e-9, 0.3, 0.5, 0.999999, 1.0, 1.5]),
    s=st.floats(0.01, 50),
    lo=st.floats(-10, 10),
    width=st.sampled_from([0.0, 1e-12, 1e-6, 0.25, 1.0, 20.0]),
    xatol=st.sampled_from([1e-12, 1e-10, 1e-5, 0.1]),
    maxiter=st.sampled_from([1, 3, 500]),
)
def test_port_is_scipy_bit_for_bit(name, c_frac, s, lo, width, xatol, maxiter):
    """The same points evaluated in the same order, the same minimiser and value
    (minima inside, at and beyond the bounds; ties; NaN and infinite values)."""
    hi = lo + width
    func = _OBJECTIVES[name](lo + c_frac * max(width, 1.0), s)
    a = _scipy(func, np.float64(lo), np.float64(hi), xatol, maxiter)
    b = _port(func, np.float64(lo), np.float64(hi), xatol, maxiter)
    assert _same(a[2], b[2]) and _same(a[:2], b[:2])


@settings(max_examples=60, deadline=None)
@given(
    gamma=st.floats(1.5, 1e6),
    k=st.floats(1.0, 5e4),
    log10_delta=st.floats(-14, -2),
    rho=st.floats(1e-6, 50.0),
)
def test_accountants_give_the_same_floats_as_with_scipy(gamma, k, log10_delta, rho):
    """mixing_epsilon and the tight zCDP conversion: the same epsilon and order."""
    delta = 10.0**log10_delta
    out = []
    for path in ("port", "scipy"):
        with pytest.MonkeyPatch.context() as monkeypatch:
            monkeypatch.setattr(bm, "_MINIMIZE_PATH", path)
            eps, order = mixing.mixing_epsilon(gamma, k, delta)
            out.append([eps, order, conversions._tight_eps(rho, -math.log(delta))])
    assert _same(out[0], out[1])


def test_bad_bounds_raise_as_scipy():
    with pytest.raises(ValueError, match="finite"):
        minimize_bounded(lambda x: x, 0.0, math.inf, xatol=1e-5)
    with pytest.raises(ValueError, match="exceeds"):
        minimize_bounded(lambda x: x, 1.0, 0.0, xatol=1e-5)
