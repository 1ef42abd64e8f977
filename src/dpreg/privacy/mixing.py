r"""RDP accountant of the Gaussian mixing mechanism (Lev et al. 2025, Lemma 1).

If every row of :math:`A` has :math:`\|a_i\|\le1` and
:math:`\lambda_{\min}(A^\top A)+\eta^2\ge\gamma`, the sketch :math:`SA + \eta\xi`
(:math:`S\sim\mathcal N(0, I_{k\times n})`, :math:`\xi\sim\mathcal N(0, I_{k\times p})`)
is :math:`(\alpha, \varphi(\alpha;k,\gamma))`-RDP for :math:`1<\alpha<\gamma` under
zero-out neighbours, with

.. math::

    \varphi(\alpha;k,\gamma) = \frac{k\alpha}{2(\alpha-1)}\log\Bigl(1-\frac1\gamma\Bigr)
    - \frac{k}{2(\alpha-1)}\log\Bigl(1-\frac\alpha\gamma\Bigr)

(:func:`mixing_rdp`; k times the Renyi divergence between :math:`\mathcal N(0,\gamma)` and
:math:`\mathcal N(0,\gamma-1)`). :math:`\varphi` is linear in :math:`k`, so T sketches of
size k compose to :math:`\varphi(\alpha;kT,\gamma)`. :func:`mixing_epsilon` converts it
to :math:`(\varepsilon,\delta)` with Canonne, Kamath & Steinke (2020), Prop. 12, minimised
over :math:`\alpha`; :func:`smallest_gamma` inverts a decreasing epsilon in :math:`\gamma`.
Used by Iterative Hessian Mixing (:mod:`dpreg.estimators.ihm`), Linear Mixing and
Sheffet's sketch (:mod:`dpreg.estimators.sketch`).

References
----------
- O. Lev, V. Srinivasan, M. Shenfeld, K. Ligett, A. Sekhari, A. C. Wilson,
  "The Gaussian mixing mechanism: Renyi differential privacy via Gaussian sketches",
  2025, Lemma 1; Lev et al. (2026), Lemma 1, Lemma 3, eq. (39).
- C. Canonne, G. Kamath, T. Steinke, "The discrete Gaussian for differential
  privacy", NeurIPS 2020, Prop. 12.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from dpreg.privacy._bounded_min import minimize_bounded

__all__ = ["mixing_epsilon", "mixing_rdp", "smallest_gamma"]

# Grid over s = logit(u), alpha = 1 + (gamma - 1) * expit(s): covers alpha - 1 from
# ~1e-17 (gamma - 1) up to gamma (1 - 1e-17).
_S_GRID = np.linspace(-40.0, 40.0, 1601)


def mixing_rdp(alpha: np.ndarray | float, k: float, gamma: float) -> np.ndarray:
    r"""Gaussian-mixing RDP :math:`\varphi(\alpha;k,\gamma)` (Lev et al. 2025, Lemma 1).

    Parameters
    ----------
    alpha : float or ndarray
        Orders; ``+inf`` is returned outside :math:`(1, \gamma)`.
    k : float
        Sketch size (``k T`` for T composed sketches).
    gamma : float
        :math:`\eta^2 + \bar\lambda_{\min}` (> 1), in units where :math:`\max\|a_i\|=1`.

    Returns
    -------
    ndarray
        :math:`\frac{k\alpha}{2(\alpha-1)}\log(1-\frac1\gamma)-\frac{k}{2(\alpha-1)}
        \log(1-\frac\alpha\gamma)`, written as :math:`\frac k2[\log(1-\frac1\gamma) -
        \log(1-\frac{v}{\gamma-1})/v]`, :math:`v=\alpha-1`, to avoid cancellation.
    """
    a = np.asarray(alpha, dtype=np.float64)
    v = a - 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        val = 0.5 * k * (np.log1p(-1.0 / gamma) - np.log1p(-v / (gamma - 1.0)) / v)
    return np.where((a > 1.0) & (a < gamma), val, np.inf)


def _mixing_objective(s: np.ndarray, k: float, gamma: float, log_inv_delta: float) -> np.ndarray:
    """Evaluate phi + the CKS conversion term at alpha = 1 + (gamma - 1) expit(s), stably."""
    from scipy import special  # on use: a config check reads the signatures only

    s = np.asarray(s, dtype=np.float64)
    log_u = special.log_expit(s)
    log_1mu = special.log_expit(-s)
    log_v = math.log(gamma - 1.0) + log_u  # log(alpha - 1)
    v = np.exp(log_v)
    phi = 0.5 * k * (math.log1p(-1.0 / gamma) - log_1mu / v)
    log_alpha = np.log1p(v)
    conv = log_inv_delta / v + (log_v - log_alpha) - log_alpha / v
    return phi + conv


def mixing_epsilon(
    gamma: float, k: float, delta: float, *, refine: bool = True
) -> tuple[float, float]:
    r"""Epsilon of Gaussian mixing releases, RDP converted at ``delta`` (CKS 2020, Prop. 12).

    :math:`\min_{1<\alpha<\gamma}\{\varphi(\alpha;k,\gamma)+\frac{\log(1/\delta)+
    (\alpha-1)\log(1-1/\alpha)-\log\alpha}{\alpha-1}\}`, floored at 0 -- eq. (39) of
    Lev et al. (2026) with :math:`k\to kT`, the second term of their eq. (17), and the
    whole accounting of Sheffet's data-independent sketch.

    Parameters
    ----------
    gamma : float
        > 1.
    k : float
        Sketch size times the number of composed sketches (may be non-integer).
    delta : float
        Conversion delta in (0, 1).
    refine : bool
        Refine the grid minimum with a bounded Brent search. Without it the value is
        the grid minimum, an upper bound on the exact one (so still certified).

    Returns
    -------
    (float, float)
        ``(epsilon, alpha_opt)``.

    Examples
    --------
    >>> eps, order = mixing_epsilon(gamma=100.0, k=50, delta=1e-6)
    >>> round(eps, 3)
    0.277
    """
    log_inv_delta = -math.log(delta)
    values = _mixing_objective(_S_GRID, k, gamma, log_inv_delta)
    i = int(np.nanargmin(values))
    best_s, best = float(_S_GRID[i]), float(values[i])
    if refine:
        lo = _S_GRID[max(i - 1, 0)]
        hi = _S_GRID[min(i + 1, _S_GRID.size - 1)]
        x, fun = minimize_bounded(  # scipy's bounded Brent search, bit for bit
            lambda s: float(_mixing_objective(s, k, gamma, log_inv_delta)), lo, hi, xatol=1e-10
        )
        if fun < best:
            best, best_s = fun, x
    from scipy import special

    alpha = 1.0 + (gamma - 1.0) * float(special.expit(best_s))
    return max(best, 0.0), alpha


#: "bracketed": :func:`smallest_gamma` brackets the root before its bisection and
#: evaluates only the bisection points near it; "reference": every bisection point
#: (tests: the same gamma)
_GAMMA_PATH = "bracketed"
#: relative distance beyond which a point is decided by monotonicity from an evaluated one
_MONOTONE_MARGIN = 1e-10


def smallest_gamma(fun: Callable[[float], float], epsilon: float, lower: float) -> float:
    """Smallest gamma > lower with fun(gamma) <= epsilon; fun decreasing (log bisection).

    The returned value always satisfies ``fun(gamma) <= epsilon`` (relative tolerance
    1e-12 on gamma): it is an evaluated point.

    The result is the last upper end of a bisection in log gamma from the doubling's
    bracket (``_GAMMA_PATH = "reference"``: about 40 evaluations of ``fun``, ~0.1 ms each
    for the mixing accountant). By default the root is first bracketed by regula falsi
    (Illinois) to a relative width of ``_MONOTONE_MARGIN``, and the same bisection is then
    replayed: a point more than that margin above an evaluated point with
    ``fun <= epsilon`` (below one with ``fun > epsilon``) takes that point's verdict, the
    others are evaluated. As ``fun`` decreases (by about the margin times epsilon over
    such a step, far above its rounding, ~1e-14 relative), every verdict is the
    reference's, so is the result (tested over the studies' calibrations); the result is
    evaluated at the end and the reference bisection runs if it does not certify.
    """
    lo = lower * (1.0 + 1e-12)
    f_lo = fun(lo)
    if f_lo <= epsilon:
        return lo
    hi = 2.0 * lo
    for _ in range(2100):  # more doublings than float64 has exponents
        f_hi = fun(hi)
        if f_hi <= epsilon:
            break
        lo, hi, f_lo = hi, 2.0 * hi, f_hi
    else:
        raise ValueError(
            f"epsilon={epsilon!r} is too small to calibrate: no finite gamma reaches it"
        )
    if _GAMMA_PATH == "reference":
        return _bisect(lambda g: fun(g) <= epsilon, lo, hi)
    known: dict[float, bool] = {lo: False, hi: True}  # exact verdicts, fun(g) <= epsilon
    a, b = _illinois(fun, epsilon, lo, f_lo, hi, f_hi, known)

    def below(g: float) -> bool:
        if g in known:
            return known[g]
        if g >= b * (1.0 + _MONOTONE_MARGIN):
            return True
        if g <= a * (1.0 - _MONOTONE_MARGIN):
            return False
        known[g] = fun(g) <= epsilon
        return known[g]

    gamma = _bisect(below, lo, hi)
    if known.get(gamma) or fun(gamma) <= epsilon:
        return gamma
    return _bisect(lambda g: fun(g) <= epsilon, lo, hi)  # pragma: no cover - not monotone


def _bisect(below: Callable[[float], bool], lo: float, hi: float) -> float:
    """Bisect in log gamma as :func:`smallest_gamma` does (``below``: lo false, hi true)."""
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        if below(mid):
            hi = mid
        else:
            lo = mid
        if hi / lo - 1.0 < 1e-12:
            break
    return hi


def _illinois(
    fun: Callable[[float], float],
    epsilon: float,
    a: float,
    fa: float,
    b: float,
    fb: float,
    known: dict[float, bool],
) -> tuple[float, float]:
    """Shrink ``[a, b]`` (``fun(a) > epsilon >= fun(b)``) around the root by regula falsi.

    Illinois variant in log gamma (the retained end's value halved), with a bisection
    step when the interpolation leaves the bracket; stops at relative width
    ``_MONOTONE_MARGIN``. Every evaluated verdict is recorded in ``known``.
    """
    ha, hb = fa - epsilon, fb - epsilon  # ha > 0 >= hb
    ua, ub = math.log(a), math.log(b)
    side = 0
    for _ in range(100):
        if b / a - 1.0 < _MONOTONE_MARGIN:
            break
        u = ub - hb * (ub - ua) / (hb - ha)
        g = math.exp(u)
        if not a < g < b:
            g, u = math.sqrt(a * b), 0.5 * (ua + ub)
        f = fun(g)
        h = f - epsilon
        known[g] = f <= epsilon  # the reference's comparison
        if known[g]:
            b, ub, hb = g, u, h
            ha = 0.5 * ha if side == 1 else ha
            side = 1
        else:
            a, ua, ha = g, u, h
            hb = 0.5 * hb if side == -1 else hb
            side = -1
    return a, b
