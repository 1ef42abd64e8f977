r"""Finite-time bounds for Noisy-FTRL / DP-FTRL on linear regression (paper App. D).

Choquette-Choo et al. (2023), §2.3 and Appendix D: Theorem D.11 (finite-time error of
Noisy-FTRL in terms of its asymptotic suboptimality), Definition D.3 (Half-Expo Decay),
Theorem D.13 (DP-FTRL: privacy, no clipping with probability :math:`1-p`, utility) and
Corollaries D.14 (DP-SGD) and D.15 (ν-DP-FTRL).

Conventions as :mod:`dpreg.theory.ftrl`: :math:`F(\theta) - F^\star =
\frac12\|\theta - \theta^\star\|_H^2`, noise :math:`w_t \sim \mathcal N(0,
\sigma_{dp}^2G^2I)` with :math:`\sigma_{dp}^2 = \gamma_\infty^2(\beta)/(2\rho)`,
:math:`L = \lambda_{\max}(H)`, :math:`\mu = \lambda_{\min}(H)`.

Readings (see ``docs/choquettechoo2023.md``, "Finite-time bounds"):

* D.11 is printed without its square roots; the proof (triangle inequality on
  :math:`\|\cdot\|_H`) gives :math:`(\sqrt{a} + \sqrt{b})^2`.
* :math:`F_\infty(\beta)` in D.11 / :math:`\hat F_\infty` in D.13(c) is the random-design
  asymptotic suboptimality, known only up to bounds; ``f_inf="c15"`` plugs in Theorem
  C.15's upper bound (so the result stays an upper bound), or pass a number.
* D.13's clip norm and step-size cap and the corollaries contain unspecified universal
  constants (``c``, ``C``) and "polylog(T)"; they are exposed as named arguments with
  default 1. The corollaries are **orders of magnitude** ("ignoring absolute
  constants"), not numerical bounds.

:func:`exact_suboptimality` is the independent check: the exact
:math:`\mathbb E[F(\theta_t)] - F^\star` of the random-design recursion (Eq. 57) with
Gaussian inputs and any noise coefficients β, by second-moment recursions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from dpreg.estimators.ftrl_correlations import ToeplitzCorrelation
from dpreg.theory.ftrl import _eigs, effective_dimension, theorem_c15_upper

__all__ = [
    "corollary_d14_rate",
    "corollary_d15_rate",
    "exact_suboptimality",
    "half_expo_decay_constant",
    "initial_suboptimality",
    "theorem_d11_bound",
    "theorem_d11_for",
    "theorem_d13_clip_norm",
    "theorem_d13_max_learning_rate",
    "theorem_d13_utility",
]


def _positive(value: float, name: str) -> float:
    v = float(value)
    if not (v > 0) or math.isinf(v):
        raise ValueError(f"{name} must be a finite number > 0; got {value!r}")
    return v


def _nonnegative(value: float, name: str) -> float:
    v = float(value)
    if not (v >= 0) or math.isinf(v):
        raise ValueError(f"{name} must be a finite number >= 0; got {value!r}")
    return v


def _steps(t: float | np.ndarray, name: str = "t") -> np.ndarray:
    arr = np.asarray(t, dtype=np.float64)
    if arr.size == 0 or not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ValueError(f"{name} must hold finite numbers >= 0; got {t!r}")
    return arr


def _unit(p: float, name: str = "p") -> float:
    v = float(p)
    if not 0 < v < 1:
        raise ValueError(f"{name} must lie in (0, 1); got {p!r}")
    return v


def theorem_d11_bound(
    t: float | np.ndarray,
    *,
    L: float,
    mu: float,
    eta: float,
    initial_suboptimality: float,
    f_inf: float,
) -> float | np.ndarray:
    r"""Theorem D.11: finite-time error of Noisy-FTRL from its asymptotic error.

    .. math::

        \mathbb E[F(\theta_t) - F^\star] \le \Big(\sqrt{\tfrac L\mu e^{-\eta\mu t}
        (F(\theta_0) - F^\star)} + \sqrt{F_\infty(\beta)}\Big)^2

    (square roots restored, ``docs/notes/choquettechoo2023.md`` §3.8 and §7 item 1).
    Assumptions: C.2, :math:`\eta < 1/R^2`, noise calibrated with
    :math:`\gamma_\infty(\beta)`. Decreasing in ``t`` with limit ``f_inf``.

    Parameters
    ----------
    t : float or array_like
        Step(s) :math:`t \ge 0`.
    L, mu : float
        Largest and smallest eigenvalue of :math:`H`, :math:`0 < \mu \le L`.
    eta : float
        Learning rate, > 0.
    initial_suboptimality : float
        :math:`F(\theta_0) - F^\star \ge 0`.
    f_inf : float
        :math:`F_\infty(\beta) \ge 0` (an upper bound of it keeps the result a bound).

    Returns
    -------
    float or ndarray
        The bound at each ``t``.

    Examples
    --------
    >>> theorem_d11_bound(0, L=1.0, mu=1.0, eta=0.1, initial_suboptimality=1.0, f_inf=1.0)
    4.0
    >>> round(theorem_d11_bound(1e6, L=4.0, mu=1.0, eta=0.1, initial_suboptimality=1.0,
    ...                         f_inf=0.5), 12)
    0.5
    """
    L, mu, eta = _positive(L, "L"), _positive(mu, "mu"), _positive(eta, "eta")
    if mu > L:
        raise ValueError(f"mu must be <= L; got mu={mu!r}, L={L!r}")
    f0 = _nonnegative(initial_suboptimality, "initial_suboptimality")
    fi = _nonnegative(f_inf, "f_inf")
    ts = _steps(t)
    out = (np.sqrt(L / mu * np.exp(-eta * mu * ts) * f0) + math.sqrt(fi)) ** 2
    return float(out) if out.ndim == 0 else out


def theorem_d13_utility(
    t: float | np.ndarray,
    *,
    L: float,
    mu: float,
    eta: float,
    initial_suboptimality: float,
    f_inf: float,
) -> float | np.ndarray:
    r"""Theorem D.13(c): :math:`\mathbb E[(F(\theta_t)-F^\star)\mathbb 1(\mathcal E)]`.

    .. math::

        \le 2\frac L\mu e^{-\eta\mu t}(F(\theta_0) - F^\star) + 2\hat F_\infty(\beta),

    :math:`\mathcal E` the event that nothing is clipped (on it DP-FTRL equals
    Noisy-FTRL, so this is D.11 loosened by :math:`(a+b)^2 \le 2a^2 + 2b^2`). Holds under
    the clip norm :func:`theorem_d13_clip_norm` and the step cap
    :func:`theorem_d13_max_learning_rate`. Arguments as :func:`theorem_d11_bound`.

    Examples
    --------
    >>> theorem_d13_utility(0, L=1.0, mu=1.0, eta=0.1, initial_suboptimality=1.0, f_inf=1.0)
    4.0
    """
    L, mu, eta = _positive(L, "L"), _positive(mu, "mu"), _positive(eta, "eta")
    if mu > L:
        raise ValueError(f"mu must be <= L; got mu={mu!r}, L={L!r}")
    f0 = _nonnegative(initial_suboptimality, "initial_suboptimality")
    fi = _nonnegative(f_inf, "f_inf")
    ts = _steps(t)
    out = 2.0 * L / mu * np.exp(-eta * mu * ts) * f0 + 2.0 * fi
    return float(out) if out.ndim == 0 else out


def initial_suboptimality(eigenvalues: np.ndarray, initial_distance: float) -> float:
    r"""Return :math:`F(\theta_0) - F^\star = \frac{r^2}{2d}\mathrm{Tr}H`.

    For :math:`\theta_0 - \theta^\star` of length r along :math:`(1,\dots,1)/\sqrt d`,
    the start of :func:`~dpreg.estimators.ftrl.simulate_streaming_regression`.

    Examples
    --------
    >>> initial_suboptimality([1.0, 0.5], 2.0)
    1.5
    """
    lam = _eigs(eigenvalues)
    r = _nonnegative(initial_distance, "initial_distance")
    return 0.5 * r * r * float(lam.mean())


def theorem_d11_for(
    correlation: ToeplitzCorrelation,
    eigenvalues: np.ndarray,
    eta: float,
    t: float | np.ndarray,
    *,
    initial_distance: float = 0.0,
    rho: float = 1.0,
    clip: float = 1.0,
    sigma_sgd: float = 0.0,
    f_inf: str | float = "c15",
    form: str = "d11",
) -> float | np.ndarray:
    r"""Theorem D.11 (or D.13(c)) for Gaussian inputs on :math:`H = \mathrm{diag}(\lambda)`.

    Parameters
    ----------
    correlation : ToeplitzCorrelation
        Noise coefficients β.
    eigenvalues : array_like
        :math:`\lambda_k > 0`.
    eta : float
        Learning rate, :math:`\eta < 1/R^2` for ``f_inf="c15"``.
    t : float or array_like
        Step(s).
    initial_distance : float
        :math:`\|\theta_0 - \theta^\star\|` along :math:`(1,\dots,1)/\sqrt d`.
    rho, clip, sigma_sgd : float
        Calibration :math:`\rho`, :math:`G`, label noise :math:`\sigma_{sgd}`.
    f_inf : {"c15"} or float
        ``"c15"``: :func:`~dpreg.theory.ftrl.theorem_c15_upper` (an upper bound of the
        random-design :math:`F_\infty`, so the result is an upper bound); a number: that
        value.
    form : {"d11", "d13"}
        :func:`theorem_d11_bound` or the looser :func:`theorem_d13_utility`.

    Examples
    --------
    >>> from dpreg.estimators.ftrl_correlations import independent, nu_ftrl
    >>> lam = 1.0 / np.arange(1, 9)
    >>> sgd = theorem_d11_for(independent(), lam, 0.05, 2000, initial_distance=1.0)
    >>> ftrl = theorem_d11_for(nu_ftrl(0.05 / 8), lam, 0.05, 2000, initial_distance=1.0)
    >>> bool(ftrl < sgd)
    True
    """
    lam = _eigs(eigenvalues)
    eta = _positive(eta, "eta")
    if form not in ("d11", "d13"):
        raise ValueError(f"form must be 'd11' or 'd13'; got {form!r}")
    if isinstance(f_inf, str):
        if f_inf != "c15":
            raise ValueError(f"f_inf must be 'c15' or a number; got {f_inf!r}")
        value = theorem_c15_upper(correlation, lam, eta, rho=rho, clip=clip, sigma_sgd=sigma_sgd)
        if math.isinf(value):
            raise ValueError(
                f"f_inf='c15' is infinite here (eta={eta:g} >= 1/R^2 or gamma_inf = inf)"
            )
    else:
        value = _nonnegative(f_inf, "f_inf")
    fn = theorem_d11_bound if form == "d11" else theorem_d13_utility
    return fn(
        t,
        L=float(lam.max()),
        mu=float(lam.min()),
        eta=eta,
        initial_suboptimality=initial_suboptimality(lam, initial_distance),
        f_inf=value,
    )


def exact_suboptimality(
    correlation: ToeplitzCorrelation,
    eigenvalues: np.ndarray,
    eta: float,
    t: int | Sequence[int],
    *,
    initial_distance: float = 0.0,
    rho: float = 1.0,
    clip: float = 1.0,
    sigma_sgd: float = 0.0,
) -> np.ndarray:
    r"""Exact :math:`\mathbb E[F(\theta_t)] - F^\star` of Noisy-FTRL, Gaussian random design.

    The recursion (57), :math:`\delta_{s+1} = A_s\delta_s + \eta\xi_sx_s - \eta\tilde
    w_s`, :math:`A_s = I - \eta x_sx_s^\top`, :math:`x_s \sim \mathcal N(0, H)`,
    :math:`\tilde w = \beta * w`, :math:`w_s \sim \mathcal N(0, \sigma_{dp}^2G^2 I)`
    (:math:`\sigma_{dp}^2 = \gamma_\infty^2/(2\rho)`), noise started at step 0,
    :math:`\delta_0` of length ``initial_distance`` along :math:`(1,\dots,1)/\sqrt d`.
    With :math:`M_n = \mathbb E[\Phi_n^\top H\Phi_n]` for a product of n independent
    :math:`A`'s (diagonal, :math:`m_{n+1} = (1 - 2\eta\lambda + 2\eta^2\lambda^2)m_n +
    \eta^2\lambda\langle\lambda, m_n\rangle` by Isserlis),
    :math:`\mathbb E[\Phi] = (I - \eta H)^n` and
    :math:`\mathbb E[\tilde w_s\tilde w_{s+\ell}^\top] = \sigma^2
    \sum_{j\le s}\beta_j\beta_{j+\ell}I`:

    .. math::

        2\,\mathbb E F_t = \langle\delta_0^2, m_t\rangle
        + \eta^2\sigma_{sgd}^2\sum_{n<t}\langle\lambda, m_n\rangle
        + \eta^2\sigma^2\sum_{\ell\ge0}(2 - [\ell = 0])\sum_{s + \ell < t}
        r_s(\ell)\langle(1-\eta\lambda)^\ell, m_{t-1-s-\ell}\rangle.

    No surrogate, no Monte Carlo: an independent check of Theorem D.11. Cost
    :math:`O(t^2 d)` per step ``t``.

    Examples
    --------
    >>> from dpreg.estimators.ftrl_correlations import independent
    >>> lam = np.array([1.0, 0.5])
    >>> val = exact_suboptimality(independent(), lam, 0.1, [0, 1], initial_distance=1.0)
    >>> np.round(val, 7).tolist()
    [0.375, 0.3265625]
    """
    lam = _eigs(eigenvalues)
    eta = _positive(eta, "eta")
    rho, clip = _positive(rho, "rho"), _positive(clip, "clip")
    sigma_sgd = _nonnegative(sigma_sgd, "sigma_sgd")
    r = _nonnegative(initial_distance, "initial_distance")
    if not isinstance(correlation, ToeplitzCorrelation):
        raise TypeError(f"correlation must be a ToeplitzCorrelation; got {correlation!r}")
    steps = np.atleast_1d(np.asarray(t))
    if steps.size == 0 or steps.dtype.kind not in "iu" or np.any(steps < 0):
        raise ValueError(f"t must hold integers >= 0; got {t!r}")
    gamma_sq = correlation.gamma_inf_sq
    if math.isinf(gamma_sq):
        raise ValueError("correlation has gamma_inf = inf: the calibration is undefined")
    sigma_sq = gamma_sq / (2.0 * rho) * clip**2
    tmax = int(steps.max())
    d = lam.size
    # m_n, n = 0..tmax
    m = np.empty((tmax + 1, d))
    m[0] = lam
    a = 1.0 - 2.0 * eta * lam + 2.0 * eta**2 * lam**2
    for n in range(tmax):
        m[n + 1] = a * m[n] + eta**2 * lam * float(lam @ m[n])
    beta = np.asarray(correlation.coefficients(max(tmax, 1)), dtype=np.float64)
    q = 1.0 - eta * lam
    delta0_sq = np.full(d, r * r / d)
    lam_m = m @ lam  # <lambda, m_n>
    out = np.empty(steps.size)
    for i, tt in enumerate(steps.tolist()):
        total = float(delta0_sq @ m[tt]) + eta**2 * sigma_sgd**2 * float(lam_m[:tt].sum())
        noise = 0.0
        for ell in range(tt):
            # r_s(ell) = sum_{j<=s} beta_j beta_{j+ell}, s = 0..tt-1-ell
            rs = np.cumsum(beta[: tt - ell] * beta[ell:tt])
            # sum_s r_s m_{tt-1-s-ell}: rows tt-1-ell down to 0
            inner = rs @ m[tt - 1 - ell :: -1][: tt - ell] if tt - 1 - ell >= 0 else 0.0
            noise += (1.0 if ell == 0 else 2.0) * float(np.asarray(inner) @ q**ell)
        total += eta**2 * sigma_sq * noise
        out[i] = 0.5 * total
    return out


def half_expo_decay_constant(beta: Sequence[float] | np.ndarray, nu: float) -> float:
    r"""Smallest C of Definition D.3 (Half-Expo Decay) over the given coefficients.

    :math:`\max_\tau (1-\nu)^{-\tau/2}\sum_{k\le\tau}|\beta_k|(1-\nu)^{(\tau-k)/2}
    = \max_\tau\sum_{k\le\tau}|\beta_k|(1-\nu)^{-k/2}`, over
    :math:`\tau < \mathrm{len}(\beta)`. Theorem D.13 needs it bounded by a universal
    constant.

    Examples
    --------
    >>> half_expo_decay_constant([1.0, 0.0, 0.0], 0.5)
    1.0
    >>> round(half_expo_decay_constant([1.0, -0.5], 0.75), 6)  # 1 + 0.5 / 0.5
    2.0
    """
    b = np.asarray(beta, dtype=np.float64).ravel()
    if b.size == 0 or not np.all(np.isfinite(b)):
        raise ValueError("beta must be a non-empty vector of finite numbers")
    nu = _unit(nu, "nu")
    k = np.arange(b.size)
    return float(np.max(np.cumsum(np.abs(b) * np.exp(-0.5 * k * math.log1p(-nu)))))


def theorem_d13_clip_norm(
    eigenvalues: np.ndarray,
    *,
    initial_distance: float,
    eta: float,
    sigma_sgd: float,
    T: int,
    p: float,
    c: float = 1.0,
) -> float:
    r"""Theorem D.13's clip norm, :math:`\hat G` (Eq. 9).

    .. math::

        \hat G = cR^2\max\Big\{\|\theta_0-\theta^\star\|_2,
        \frac{\eta R^2\sigma_{sgd}^2}{\mu}, \frac{\sigma_{sgd}}{R}\Big\}
        \log^{5/2}\frac Tp

    with :math:`R^2 = \mathrm{Tr}H + 2\|H\|_2` (Gaussian inputs) and ``c`` the paper's
    unspecified universal constant (default 1: an order, not a guarantee). The middle
    term is printed :math:`\eta R^2\sigma_{sgd}^2/\mu`; dimensionally it reads
    :math:`\sqrt{\eta R^2\sigma_{sgd}^2/\mu}` (a distance), which we use.

    Examples
    --------
    >>> g = theorem_d13_clip_norm([1.0], initial_distance=1.0, eta=0.1, sigma_sgd=0.0,
    ...                           T=100, p=0.1)
    >>> round(g / (3.0 * math.log(1000.0) ** 2.5), 12)
    1.0
    """
    lam = _eigs(eigenvalues)
    r = _nonnegative(initial_distance, "initial_distance")
    eta = _positive(eta, "eta")
    s = _nonnegative(sigma_sgd, "sigma_sgd")
    if int(T) != T or T < 1:
        raise ValueError(f"T must be an integer >= 1; got {T!r}")
    p = _unit(p)
    c = _positive(c, "c")
    r2 = float(lam.sum() + 2.0 * lam.max())
    mu = float(lam.min())
    scale = max(r, math.sqrt(eta * r2 * s * s / mu), s / math.sqrt(r2))
    return c * r2 * scale * math.log(T / p) ** 2.5


def theorem_d13_max_learning_rate(
    eigenvalues: np.ndarray,
    *,
    nu_tilde: float,
    rho: float,
    gamma_sq: float,
    beta_l1: float,
    T: int,
    p: float,
    C: float = 1.0,
) -> float:
    r"""Theorem D.13's step-size cap.

    .. math::

        \eta \le \min\Big\{\frac{1}{CR^2\log(T/p)},
        \frac{\tilde\nu\rho}{8C^2R^4d\,\gamma_\infty^2(\beta)\|\beta\|_1^2\log^5(T/p)}\Big\}

    ``C`` is the universal constant of Half-Expo Decay / Theorem D.4 (unspecified;
    :func:`half_expo_decay_constant` gives the smallest one for given β).

    Examples
    --------
    >>> theorem_d13_max_learning_rate([1.0], nu_tilde=1.0, rho=1e9, gamma_sq=1.0,
    ...                               beta_l1=1.0, T=10, p=0.1)  # 1 / (3 log 100)
    0.0723824136...
    """
    lam = _eigs(eigenvalues)
    nu_tilde = _positive(nu_tilde, "nu_tilde")
    rho = _positive(rho, "rho")
    gamma_sq = _positive(gamma_sq, "gamma_sq")
    beta_l1 = _positive(beta_l1, "beta_l1")
    if int(T) != T or T < 1:
        raise ValueError(f"T must be an integer >= 1; got {T!r}")
    p = _unit(p)
    C = _positive(C, "C")
    r2 = float(lam.sum() + 2.0 * lam.max())
    lg = math.log(T / p)
    first = 1.0 / (C * r2 * lg)
    second = nu_tilde * rho / (8.0 * C**2 * r2**2 * lam.size * gamma_sq * beta_l1**2 * lg**5)
    return min(first, second)


def _rate_inputs(eigenvalues, T, rho, initial_distance, sigma_sgd, p, c, polylog):
    lam = _eigs(eigenvalues)
    if int(T) != T or T < 2:
        raise ValueError(f"T must be an integer >= 2; got {T!r}")
    return (
        lam,
        int(T),
        _positive(rho, "rho"),
        _nonnegative(initial_distance, "initial_distance"),
        _nonnegative(sigma_sgd, "sigma_sgd"),
        _unit(p),
        _positive(c, "c"),
        _positive(polylog, "polylog"),
    )


def corollary_d14_rate(
    eigenvalues: np.ndarray,
    *,
    T: int,
    rho: float,
    initial_distance: float,
    sigma_sgd: float,
    p: float = 0.01,
    c: float = 1.0,
    polylog: float = 1.0,
) -> float:
    r"""Corollary D.14 (DP-SGD), "ignoring absolute constants": an order, not a bound.

    .. math::

        \frac L\mu\exp\Big(-\frac{\rho T}{c\kappa^2d_{eff}^2d\log^5(T/p)}\Big)
        + \kappa d_{eff}\Big(\frac{d\,\mathrm{Tr}H\|\theta_0-\theta^\star\|^2}{\rho T}
        + \frac{d\sigma_{sgd}^2}{\rho T} + \frac{\sigma_{sgd}^2}{T}\Big)\mathrm{polylog}(T)

    ``c`` and ``polylog`` (the value of the unspecified polylog(T) factor) default to 1.

    Examples
    --------
    >>> lam = np.ones(4)  # kappa d_eff = 4, d Tr H r^2 / (rho T) = 16 / T
    >>> v = corollary_d14_rate(lam, T=10**12, rho=1.0, initial_distance=1.0, sigma_sgd=0.0)
    >>> round(float(v) * 1e12, 6)
    64.0
    """
    lam, T, rho, r, s, p, c, poly = _rate_inputs(
        eigenvalues, T, rho, initial_distance, sigma_sgd, p, c, polylog
    )
    d = lam.size
    kappa = float(lam.max() / lam.min())
    deff = effective_dimension(lam)
    transient = kappa * math.exp(-rho * T / (c * kappa**2 * deff**2 * d * math.log(T / p) ** 5))
    private = kappa * deff * (d * lam.sum() * r * r / (rho * T) + d * s * s / (rho * T))
    return transient + (private + kappa * deff * s * s / T) * poly


def corollary_d15_rate(
    eigenvalues: np.ndarray,
    *,
    T: int,
    rho: float,
    initial_distance: float,
    sigma_sgd: float,
    p: float = 0.01,
    c: float = 1.0,
    polylog: float = 1.0,
) -> float:
    r"""Corollary D.15 (ν-DP-FTRL), "ignoring absolute constants": an order, not a bound.

    .. math::

        \frac L\mu\exp\Big(-\frac{\rho T}{c\kappa^2d_{eff}^2d\log^7(T/p)
        \log(\kappa^2d_{eff}^2d/\rho)}\Big)
        + \kappa d_{eff}\Big(\frac{\kappa d_{eff}\mathrm{Tr}H\|\theta_0-\theta^\star\|^2}
        {\rho T^2} + \frac{\kappa d_{eff}\sigma_{sgd}^2}{\rho T^2}
        + \frac{\sigma_{sgd}^2}{T}\Big)\mathrm{polylog}(T)

    The private terms are D.14's with :math:`d` replaced by :math:`\kappa d_{eff}/T`
    (§2.3). The log of the exponent is floored at 1 (it is printed for large
    :math:`\kappa^2d_{eff}^2d/\rho`).

    Examples
    --------
    With the constants set to 1 the :math:`\log^7` of the transient keeps it dominant
    until astronomically large T; the ordering against D.14 shows beyond it:

    >>> lam = np.ones(4)
    >>> kw = dict(rho=1.0, initial_distance=1.0, sigma_sgd=0.0)
    >>> bool(corollary_d15_rate(lam, T=10**20, **kw) < corollary_d14_rate(lam, T=10**20, **kw))
    True
    >>> bool(corollary_d15_rate(lam, T=10**9, **kw) < corollary_d14_rate(lam, T=10**9, **kw))
    False
    """
    lam, T, rho, r, s, p, c, poly = _rate_inputs(
        eigenvalues, T, rho, initial_distance, sigma_sgd, p, c, polylog
    )
    d = lam.size
    kappa = float(lam.max() / lam.min())
    deff = effective_dimension(lam)
    lg = max(1.0, math.log(kappa**2 * deff**2 * d / rho))
    transient = kappa * math.exp(
        -rho * T / (c * kappa**2 * deff**2 * d * math.log(T / p) ** 7 * lg)
    )
    kd = kappa * deff
    private = kd * (kd * lam.sum() * r * r / (rho * T * T) + kd * s * s / (rho * T * T))
    return transient + (private + kd * s * s / T) * poly
