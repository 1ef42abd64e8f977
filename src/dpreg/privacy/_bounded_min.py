r"""Brent's bounded scalar minimisation on Python floats (the accountants' refinements).

The tight zCDP conversion (:func:`dpreg.privacy.conversions.zcdp_to_eps`, Canonne, Kamath
& Steinke 2020, Cor. 13) and the mixing accountant
(:func:`dpreg.privacy.mixing.mixing_epsilon`, Lev et al. 2026, eq. (39)) refine a grid
minimum with ``scipy.optimize.minimize_scalar(method="bounded")``. A study calls them
thousands of times per job (one set per data set: delta = 1/n^2 differs), and most of a
call's time was scipy's per-call validation and its loop's arithmetic on numpy scalars
(docs/scaling.md, "Cost of a paper-scale run", session 25). :func:`minimize_bounded` is
the same loop (scipy 1.17's ``_minimize_scalar_bounded``: golden-section steps and
parabolic fits, the same tolerances, tests and updates in the same order) on Python
floats: every operation is an IEEE double operation of the same operands (``abs``, the
sign and the maximum are exact), so the points evaluated, the minimum and its value are
scipy's bit for bit (``_MINIMIZE_PATH = "scipy"`` calls scipy; tests:
``tests/unit/test_bounded_min.py``).
"""

from __future__ import annotations

import math
from collections.abc import Callable

#: "port": :func:`minimize_bounded` runs the loop below; "scipy": it calls
#: ``scipy.optimize.minimize_scalar(method="bounded")`` (tests: the same floats)
_MINIMIZE_PATH = "port"

_SQRT_EPS = math.sqrt(2.2e-16)  # as scipy
_GOLDEN_MEAN = 0.5 * (3.0 - math.sqrt(5.0))


def minimize_bounded(
    func: Callable[[float], float], lo: float, hi: float, *, xatol: float, maxiter: int = 500
) -> tuple[float, float]:
    """Return ``(x, f(x))``: Brent's bounded minimum of ``func`` on ``[lo, hi]``.

    Parameters
    ----------
    func : callable
        Scalar objective, returning a float.
    lo, hi : float
        Finite bounds, ``lo <= hi``.
    xatol : float
        Absolute tolerance on the minimiser (scipy's ``xatol``).
    maxiter : int, default 500
        Most evaluations (scipy's ``maxiter``).

    Returns
    -------
    (float, float)
        scipy's ``res.x`` and ``res.fun``.

    Examples
    --------
    >>> x, fx = minimize_bounded(lambda t: (t - 1.0) ** 2, 0.0, 3.0, xatol=1e-10)
    >>> round(x, 8), fx < 1e-16
    (1.0, True)
    """
    if _MINIMIZE_PATH == "scipy":
        from scipy import optimize

        res = optimize.minimize_scalar(
            func,
            bounds=(lo, hi),
            method="bounded",
            options={"xatol": xatol, "maxiter": maxiter},
        )
        return float(res.x), float(res.fun)
    a, b = float(lo), float(hi)
    if not (math.isfinite(a) and math.isfinite(b)):
        raise ValueError("Optimization bounds must be finite scalars.")
    if a > b:
        raise ValueError("The lower bound exceeds the upper bound.")
    fulc = a + _GOLDEN_MEAN * (b - a)
    nfc = xf = fulc
    rat = e = 0.0
    fx = func(xf)
    num = 1
    ffulc = fnfc = fx
    xm = 0.5 * (a + b)
    tol1 = _SQRT_EPS * abs(xf) + xatol / 3.0
    tol2 = 2.0 * tol1
    while abs(xf - xm) > (tol2 - 0.5 * (b - a)):
        golden = True
        if abs(e) > tol1:  # a parabolic fit
            golden = False
            r = (xf - nfc) * (fx - ffulc)
            q = (xf - fulc) * (fx - fnfc)
            p = (xf - fulc) * q - (xf - nfc) * r
            q = 2.0 * (q - r)
            if q > 0.0:
                p = -p
            q = abs(q)
            r = e
            e = rat
            if abs(p) < abs(0.5 * q * r) and p > q * (a - xf) and p < q * (b - xf):
                rat = (p + 0.0) / q
                x = xf + rat
                if (x - a) < tol2 or (b - x) < tol2:
                    rat = tol1 * (_sign(xm - xf) + (xm - xf == 0))
            else:
                golden = True
        if golden:  # a golden-section step
            e = a - xf if xf >= xm else b - xf
            rat = _GOLDEN_MEAN * e
        x = xf + (_sign(rat) + (rat == 0)) * _maximum(abs(rat), tol1)
        fu = func(x)
        num += 1
        if fu <= fx:
            if x >= xf:
                a = xf
            else:
                b = xf
            fulc, ffulc = nfc, fnfc
            nfc, fnfc = xf, fx
            xf, fx = x, fu
        else:
            if x < xf:
                a = x
            else:
                b = x
            if (fu <= fnfc) or (nfc == xf):
                fulc, ffulc = nfc, fnfc
                nfc, fnfc = x, fu
            elif (fu <= ffulc) or (fulc == xf) or (fulc == nfc):
                fulc, ffulc = x, fu
        xm = 0.5 * (a + b)
        tol1 = _SQRT_EPS * abs(xf) + xatol / 3.0
        tol2 = 2.0 * tol1
        if num >= maxiter:
            break
    return xf, fx


def _sign(v: float) -> float:
    """``numpy.sign`` of a float: -1.0, 0.0 (for +-0.0) or 1.0, and NaN for NaN."""
    if v > 0.0:
        return 1.0
    if v < 0.0:
        return -1.0
    return v if v != v else 0.0


def _maximum(u: float, v: float) -> float:
    """``numpy.maximum`` of two floats: NaN if either is NaN, else the larger."""
    if u != u or v != v:
        return math.nan
    return u if u >= v else v
