r"""Utility bound of DP two-stage gradient descent for IV regression (Liang et al. 2025).

Theorem 3.1 bounds the distance of the DP-2S-GD iterate to the 2SLS solution,

.. math::

    \|\beta^{(T)} - \hat\beta\| \lesssim
    \underbrace{\kappa^{T/2}}_{\text{optimisation}}
    + \underbrace{\frac{\sqrt p(\sqrt q + \sqrt\tau)^3}{n\sqrt{\min(\rho_1, \rho_2)}}
      \sqrt T}_{\text{privacy}}
    + \underbrace{\frac{\sqrt{pq}(\tau + \log pq)}{\sqrt n}}_{\text{statistical}}
    \qquad (7)

under the iteration condition (5) :math:`T \lesssim \rho_1 n^{2-\epsilon} /
(p(\sqrt q + \sqrt\tau)^6)` and the sample-size condition (6). The hidden constants are
never given numerically; every function here takes them as **1** (the reading of
Fig. 2, which "qualitatively illustrates the trend"; docs/notes/liang2025.md §4.8). The numbers are
therefore shapes and orders of magnitude, not calibrated predictions.

Algorithm 3 (DP-2S-GD-beta, Theorem F.1) has the same bound with :math:`\rho_2` in
place of :math:`\min(\rho_1, \rho_2)` and no condition on :math:`T`: pass
``rho1=math.inf``.

The exponent :math:`\epsilon` of (5) is not the DP epsilon
(docs/notes/liang2025.md P15); it is called ``eps_exponent`` here.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "REGIMES",
    "bound_curve",
    "contraction_rates",
    "error_bound",
    "n_min_for_T",
    "optimal_T",
    "optimisation_term",
    "privacy_coefficient",
    "privacy_term",
    "regime_of",
    "regime_thresholds",
    "sample_size_condition",
    "statistical_term",
    "t_max",
]

REGIMES: tuple[str, ...] = ("optimisation", "statistical", "privacy", "invalid")
"""Regime labels of Remark 3.6, plus ``"invalid"`` past :math:`T_{\\max}` of (5)."""


def _pos(value: Any, name: str, *, allow_inf: bool = False) -> float:
    v = float(value)
    if math.isnan(v) or v <= 0 or (math.isinf(v) and not allow_inf):
        extra = " (math.inf allowed)" if allow_inf else ""
        raise ValueError(f"{name} must be a positive number{extra}; got {value!r}")
    return v


def _dims(p: Any, q: Any) -> tuple[int, int]:
    for v, nm in ((p, "p"), (q, "q")):
        if isinstance(v, bool) or int(v) != v or v < 1:
            raise ValueError(f"{nm} must be a positive integer; got {v!r}")
    p, q = int(p), int(q)
    if q < p:
        raise ValueError(f"Theorem 3.1 needs q >= p (Assumption 1); got p={p}, q={q}")
    return p, q


def _rho_min(rho1: Any, rho2: Any) -> float:
    return min(_pos(rho1, "rho1", allow_inf=True), _pos(rho2, "rho2", allow_inf=True))


def _kappa(kappa: Any) -> float:
    k = float(kappa)
    if not 0 <= k < 1:
        raise ValueError(f"kappa must lie in [0, 1) (a contraction rate); got {kappa!r}")
    return k


def statistical_term(n: float, p: int, q: int, *, tau: float = 1.0) -> float:
    r"""Statistical term of (7), :math:`B = \sqrt{pq}(\tau + \log pq)/\sqrt n`.

    Parameters
    ----------
    n : float
        Sample size.
    p, q : int
        Numbers of endogenous regressors and instruments (``q >= p``).
    tau : float, default 1
        Confidence parameter (the bound holds with probability ``1 - c e^{-tau}``).

    Returns
    -------
    float
        ``B`` (unit constant; the plateau of Fig. 2).
    """
    n = _pos(n, "n")
    p, q = _dims(p, q)
    tau = _pos(tau, "tau")
    return math.sqrt(p * q) * (tau + math.log(p * q)) / math.sqrt(n)


def privacy_coefficient(
    n: float, p: int, q: int, rho1: float, rho2: float, *, tau: float = 1.0
) -> float:
    r"""Return the coefficient :math:`A` of :math:`\sqrt T` in (7).

    :math:`A = \sqrt p(\sqrt q+\sqrt\tau)^3 / (n\sqrt{\min(\rho_1,\rho_2)})`.
    ``rho = math.inf`` for both stages gives 0 (no noise, Corollary 3.1); ``rho1 = inf``
    alone gives Algorithm 3's coefficient (Theorem F.1).
    """
    n = _pos(n, "n")
    p, q = _dims(p, q)
    tau = _pos(tau, "tau")
    rho = _rho_min(rho1, rho2)
    if math.isinf(rho):
        return 0.0
    return math.sqrt(p) * (math.sqrt(q) + math.sqrt(tau)) ** 3 / (n * math.sqrt(rho))


def optimisation_term(T: Any, kappa: float) -> np.ndarray | float:
    r"""Optimisation term of (7), :math:`\kappa^{T/2}` (vectorised in ``T``)."""
    k = _kappa(kappa)
    out = np.power(k, np.asarray(T, dtype=np.float64) / 2.0)
    return float(out) if out.ndim == 0 else out


def privacy_term(
    T: Any, n: float, p: int, q: int, rho1: float, rho2: float, *, tau: float = 1.0
) -> np.ndarray | float:
    r"""Privacy term of (7), :math:`A\sqrt T` (vectorised in ``T``)."""
    A = privacy_coefficient(n, p, q, rho1, rho2, tau=tau)
    out = A * np.sqrt(np.asarray(T, dtype=np.float64))
    return float(out) if out.ndim == 0 else out


def error_bound(
    T: Any,
    *,
    n: float,
    p: int,
    q: int,
    rho1: float,
    rho2: float,
    kappa: float,
    tau: float = 1.0,
) -> np.ndarray | float:
    r"""Bound (7) of Theorem 3.1 with unit hidden constants (vectorised in ``T``).

    Parameters
    ----------
    T : int or array_like
        Numbers of iterations.
    n : float
        Sample size.
    p, q : int
        Dimensions (``q >= p``).
    rho1, rho2 : float
        zCDP budgets of the first- and second-stage trajectories (``math.inf``: no
        noise in that stage).
    kappa : float
        Contraction rate in ``[0, 1)``; see :func:`contraction_rates`.
    tau : float, default 1
        Confidence parameter.

    Returns
    -------
    float or ndarray
        :math:`\kappa^{T/2} + A\sqrt T + B`. The bound is only claimed for
        ``T <= t_max(...)`` (condition (5)); this function does not truncate.
    """
    T_arr = np.asarray(T, dtype=np.float64)
    out = (
        np.power(_kappa(kappa), T_arr / 2.0)
        + privacy_coefficient(n, p, q, rho1, rho2, tau=tau) * np.sqrt(T_arr)
        + statistical_term(n, p, q, tau=tau)
    )
    return float(out) if out.ndim == 0 else out


def t_max(
    n: float, p: int, q: int, rho1: float, *, tau: float = 1.0, eps_exponent: float = 0.0
) -> float:
    r"""Largest admissible :math:`T` of the iteration condition (5), unit constant.

    :math:`T_{\max} = \rho_1 n^{2-\epsilon} / (p(\sqrt q + \sqrt\tau)^6)`; ``math.inf``
    when ``rho1`` is infinite (no first-stage noise; Algorithm 3 has no condition).
    The paper calls it "(4)" in the Fig. 3 caption and Remark 3.5 (docs/notes/liang2025.md P5).

    Parameters
    ----------
    n : float
        Sample size.
    p, q : int
        Dimensions.
    rho1 : float
        First-stage budget.
    tau : float, default 1
        Confidence parameter.
    eps_exponent : float, default 0
        The "small constant" :math:`\epsilon > 0` of (5) (0 gives the limit).
    """
    n = _pos(n, "n")
    p, q = _dims(p, q)
    rho1 = _pos(rho1, "rho1", allow_inf=True)
    tau = _pos(tau, "tau")
    if not 0 <= eps_exponent < 2:
        raise ValueError(f"eps_exponent must lie in [0, 2); got {eps_exponent!r}")
    if math.isinf(rho1):
        return math.inf
    return rho1 * n ** (2.0 - eps_exponent) / (p * (math.sqrt(q) + math.sqrt(tau)) ** 6)


def n_min_for_T(
    T: float, p: int, q: int, rho1: float, *, tau: float = 1.0, eps_exponent: float = 0.0
) -> float:
    r"""Smallest :math:`n` for which a given :math:`T` satisfies (5) (unit constant).

    Solves :math:`T = T_{\max}(n)`: :math:`n = (T p(\sqrt q+\sqrt\tau)^6/\rho_1)^{1/(2-\epsilon)}`.
    Used to mark condition (5) on the error-against-``n`` plots (Fig. 3); 0 when
    ``rho1`` is infinite.
    """
    T = _pos(T, "T")
    p, q = _dims(p, q)
    rho1 = _pos(rho1, "rho1", allow_inf=True)
    tau = _pos(tau, "tau")
    if not 0 <= eps_exponent < 2:
        raise ValueError(f"eps_exponent must lie in [0, 2); got {eps_exponent!r}")
    if math.isinf(rho1):
        return 0.0
    return (T * p * (math.sqrt(q) + math.sqrt(tau)) ** 6 / rho1) ** (1.0 / (2.0 - eps_exponent))


def sample_size_condition(
    p: int,
    q: int,
    rho1: float,
    rho2: float,
    *,
    tau: float = 1.0,
    T: float | None = None,
) -> float:
    r"""Right-hand side of the sample-size condition (6) with unit constant.

    :math:`n \ge \max\{pq(\tau+\log pq)^2,\ (\sqrt q+\sqrt\tau)^3/\sqrt{\min(\rho_1,
    \rho_2)}\}`. Lemma D.1 actually needs the second term times :math:`\sqrt T`, which
    (6) omits (docs/notes/liang2025.md P5); pass ``T`` to include it.
    """
    p, q = _dims(p, q)
    tau = _pos(tau, "tau")
    rho = _rho_min(rho1, rho2)
    first = p * q * (tau + math.log(p * q)) ** 2
    second = 0.0 if math.isinf(rho) else (math.sqrt(q) + math.sqrt(tau)) ** 3 / math.sqrt(rho)
    if T is not None:
        second *= math.sqrt(_pos(T, "T"))
    return max(first, second)


def regime_thresholds(
    n: float,
    p: int,
    q: int,
    rho1: float,
    rho2: float,
    *,
    kappa: float,
    tau: float = 1.0,
) -> tuple[float, float]:
    r"""Return the regime thresholds :math:`T_1, T_2` of Remark 3.6.

    :math:`T_1 = \log(n / (pq(\tau+\log pq)^2)) / \log(1/\kappa)` solves
    :math:`\kappa^{T/2} = B` and :math:`T_2 = n\min(\rho_1,\rho_2) q (\tau+\log pq)^2 /
    (\sqrt q+\sqrt\tau)^6` solves :math:`A\sqrt T = B` (docs/notes/liang2025.md §4.4).

    Returns
    -------
    T1, T2 : float
        ``T1`` is 0 when ``kappa == 0`` and may be negative when ``n`` is below the
        first term of (6) (no decay phase); ``T2`` is ``math.inf`` without noise.
    """
    n = _pos(n, "n")
    p, q = _dims(p, q)
    tau = _pos(tau, "tau")
    k = _kappa(kappa)
    lg = tau + math.log(p * q)
    T1 = 0.0 if k == 0 else math.log(n / (p * q * lg**2)) / math.log(1.0 / k)
    rho = _rho_min(rho1, rho2)
    T2 = math.inf if math.isinf(rho) else n * rho * q * lg**2 / (math.sqrt(q) + math.sqrt(tau)) ** 6
    return T1, T2


def regime_of(T: Any, T1: float, T2: float, T_max: float) -> np.ndarray:
    """Label each ``T`` with its regime of Remark 3.6 (``"invalid"`` past ``T_max``).

    ``T <= T1``: optimisation; ``T1 < T <= T2``: statistical; ``T2 < T <= T_max``:
    privacy; ``T > T_max``: invalid. When ``T2 < T1`` the plateau is empty and the
    privacy regime starts at ``T1``.
    """
    T_arr = np.asarray(T, dtype=np.float64)
    labels = np.where(
        T_arr <= T1,
        "optimisation",
        np.where(T_arr <= T2, "statistical", "privacy"),
    )
    return np.where(T_arr > T_max, "invalid", labels).astype(object)


def optimal_T(
    n: float,
    p: int,
    q: int,
    rho1: float,
    rho2: float,
    *,
    kappa: float,
    tau: float = 1.0,
    eps_exponent: float = 0.0,
    T_cap: int = 10**7,
) -> int:
    r"""Return the integer :math:`T \le T_{\max}` minimising bound (7) (unit constants).

    Remark 3.6 gives no closed form ("sub-linear but super-logarithmic to n"). The
    bound is not convex (:math:`A\sqrt T` is concave), so the integers are searched
    exhaustively up to the point where :math:`\kappa^{T/2}` falls below
    :math:`10^{-18}`; past it the bound increases (``A > 0``). Without noise the bound
    decreases and ``min(floor(T_max), T_cap)`` is returned.

    Parameters
    ----------
    n, p, q, rho1, rho2, kappa, tau
        As in :func:`error_bound`.
    eps_exponent : float, default 0
        Exponent of (5).
    T_cap : int, default 10**7
        Upper limit of the search when :math:`T_{\max}` is infinite or huge.

    Returns
    -------
    int
        At least 1 (if :math:`T_{\max} < 1`, no ``T`` satisfies (5) and 1 is returned).
    """
    upper = min(float(T_cap), t_max(n, p, q, rho1, tau=tau, eps_exponent=eps_exponent))
    hi = max(1, math.floor(upper))
    A = privacy_coefficient(n, p, q, rho1, rho2, tau=tau)
    k = _kappa(kappa)
    if A == 0:
        return hi  # no noise: the bound decreases in T
    if k == 0:
        return 1  # no optimisation term: the bound increases in T
    # Past T_flat, kappa^(T/2) < 1e-18 and the bound increases (A sqrt(T) dominates).
    T_flat = math.ceil(2.0 * math.log(1e-18) / math.log(k)) + 1
    grid = np.arange(1, min(hi, T_flat) + 1, dtype=np.float64)
    vals = np.asarray(error_bound(grid, n=n, p=p, q=q, rho1=rho1, rho2=rho2, kappa=k, tau=tau))
    return int(grid[int(np.argmin(vals))])


def contraction_rates(Theta: Any, *, eta: float, alpha: float) -> dict[str, float]:
    r"""Return the population limits of the contraction rates (9) (docs/notes/liang2025.md §4.1).

    As :math:`n \to \infty`, :math:`\delta, \psi \to 0`:
    :math:`\underline\gamma = \sigma_{\min}^2(\Theta)`,
    :math:`\bar\gamma = \|\Theta\|^2`, :math:`\kappa_\Theta = |1-\eta|` and
    :math:`\kappa_\beta = \max\{|1 - \alpha\sigma_{\min}^2/2|,\
    |1 - \alpha(2\|\Theta\|^2 + \sigma_{\min}^2)/2|\}`,
    :math:`\kappa = \max(\kappa_\Theta, \kappa_\beta)`. These assume
    :math:`\mathbb E[zz^\top] = I` (Assumption 2).

    Parameters
    ----------
    Theta : array_like, shape (q, p)
        True first-stage coefficients.
    eta, alpha : float
        Step sizes of the two stages.

    Returns
    -------
    dict
        ``kappa``, ``kappa_theta``, ``kappa_beta``, ``sigma_min`` and ``norm``
        (spectral norm) of ``Theta``, and ``stable`` (both rates below 1, i.e. the
        step-size condition (3) in the limit: ``0 < eta < 2`` and
        ``0 < alpha < 4 / (2||Theta||^2 + sigma_min^2)``).
    """
    Th = np.asarray(Theta, dtype=np.float64)
    if Th.ndim != 2 or Th.shape[0] < Th.shape[1] or not np.isfinite(Th).all():
        raise ValueError(f"Theta must be a finite (q, p) matrix with q >= p; got {Th.shape}")
    eta = _pos(eta, "eta")
    alpha = _pos(alpha, "alpha")
    sv = np.linalg.svd(Th, compute_uv=False)
    s_min, s_max = float(sv[-1]), float(sv[0])
    k_theta = abs(1.0 - eta)
    k_beta = max(
        abs(1.0 - alpha * s_min**2 / 2.0),
        abs(1.0 - alpha * (2.0 * s_max**2 + s_min**2) / 2.0),
    )
    kappa = max(k_theta, k_beta)
    return {
        "kappa": kappa,
        "kappa_theta": k_theta,
        "kappa_beta": k_beta,
        "sigma_min": s_min,
        "norm": s_max,
        "stable": bool(kappa < 1),
    }


def bound_curve(
    *,
    n: float,
    p: int,
    q: int,
    rho1: float,
    rho2: float,
    kappa: float,
    tau: float = 1.0,
    eps_exponent: float = 0.0,
    T_min: float = 1.0,
    T_max_grid: float = 1e5,
    num: int = 200,
) -> pd.DataFrame:
    r"""Return the curve of Fig. 2: bound (7) and its terms on a log grid of :math:`T`.

    Parameters
    ----------
    n, p, q, rho1, rho2, kappa, tau
        As in :func:`error_bound`.
    eps_exponent : float, default 0
        Exponent of (5) for :math:`T_{\max}`.
    T_min, T_max_grid : float
        Range of the log-spaced grid.
    num : int, default 200
        Number of grid points.

    Returns
    -------
    DataFrame
        One row per ``T``: ``T``, ``bound``, ``optimisation``, ``privacy``,
        ``statistical``, ``dominant`` (largest term), ``regime`` (Remark 3.6 and
        ``"invalid"`` past :math:`T_{\max}`), and the constants ``T1``, ``T2``,
        ``T_max``, ``T_opt`` (:func:`optimal_T`), ``bound_at_T_opt``, ``A``, ``B``
        with the parameters ``n, p, q, rho1, rho2, kappa, tau, eps_exponent``.
    """
    T_min = _pos(T_min, "T_min")
    T_max_grid = _pos(T_max_grid, "T_max_grid")
    if T_max_grid <= T_min or int(num) < 2:
        raise ValueError("need T_max_grid > T_min and num >= 2")
    T = np.logspace(math.log10(T_min), math.log10(T_max_grid), int(num))
    opt = np.asarray(optimisation_term(T, kappa))
    priv = np.asarray(privacy_term(T, n, p, q, rho1, rho2, tau=tau))
    B = statistical_term(n, p, q, tau=tau)
    stat = np.full_like(T, B)
    T1, T2 = regime_thresholds(n, p, q, rho1, rho2, kappa=kappa, tau=tau)
    Tm = t_max(n, p, q, rho1, tau=tau, eps_exponent=eps_exponent)
    T_opt = optimal_T(n, p, q, rho1, rho2, kappa=kappa, tau=tau, eps_exponent=eps_exponent)
    terms = np.stack([opt, stat, priv])
    names = np.array(["optimisation", "statistical", "privacy"], dtype=object)
    return pd.DataFrame(
        {
            "T": T,
            "bound": opt + priv + stat,
            "optimisation": opt,
            "privacy": priv,
            "statistical": stat,
            "dominant": names[np.argmax(terms, axis=0)],
            "regime": regime_of(T, T1, T2, Tm),
            "T1": T1,
            "T2": T2,
            "T_max": Tm,
            "T_opt": T_opt,
            "bound_at_T_opt": float(
                error_bound(T_opt, n=n, p=p, q=q, rho1=rho1, rho2=rho2, kappa=kappa, tau=tau)
            ),
            "A": privacy_coefficient(n, p, q, rho1, rho2, tau=tau),
            "B": B,
            "n": float(n),
            "p": int(p),
            "q": int(q),
            "rho1": float(rho1),
            "rho2": float(rho2),
            "kappa": float(kappa),
            "tau": float(tau),
            "eps_exponent": float(eps_exponent),
        }
    )
