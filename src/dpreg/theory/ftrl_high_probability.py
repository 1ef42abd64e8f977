r"""High-probability iterate bounds for Noisy-FTRL (paper App. D.2, Theorems D.4–D.10).

Choquette-Choo et al. (2023), Appendix D.2: Theorem D.4 bounds, with probability
:math:`1-p`, every iterate :math:`\|\theta_t - \theta^\star\|^2` and stochastic gradient
:math:`\|g_t\|^2` of Noisy-FTRL over :math:`T` steps; its proof goes through the events of
Proposition D.5, the three components of Property D.2 (Propositions D.6–D.8) and the
expectation Lemmas D.9 and D.10.

**Explicit-constant reading** (``docs/choquettechoo2023.md``, deviation 17). The paper
states D.4–D.8 up to an unspecified universal constant C and polylogarithmic factors
(Hanson–Wright for sub-Gaussian inputs). For the Gaussian case of Assumption D.1
(:math:`x \sim \mathcal N(0, H)`, :math:`\xi \sim \mathcal N(0, \sigma_{sgd}^2)`,
:math:`w \sim \mathcal N(0, \sigma^2I)`) every step of the proof can be made explicit,
and the functions here return those explicit bounds:

* each of the six events of D.5 gets probability :math:`q = p/6` (the proof's union
  bound), and :math:`u = \log(T/q)`;
* a Gaussian quadratic form :math:`\sum_i a_iz_i^2` exceeds
  :math:`\sum a_i + 2\|a\|_2\sqrt u + 2\|a\|_\infty u` with probability at most
  :math:`e^{-u}` (Laurent & Massart's inequality, in place of Hanson–Wright with its
  constant); so ℰ₁ reads :math:`\|x_t\|^2 \le b_x` with
  :math:`b_x = \mathrm{Tr}H + 2\|\lambda\|_2\sqrt u + 2\lambda_{\max}u`, and ℰ₁^sgd, ℰ₁^dp
  carry the factor :math:`h(u) = 1 + 2\sqrt u + 2u` (:math:`\ge` the ratio for any
  weights, since :math:`\|a\|_2, \|a\|_\infty \le \sum a`);
* the step condition :math:`\eta \le 1/(CR^2\log(T/p))` becomes :math:`\eta b_x \le 1`
  (it is what the proof uses: :math:`0 \preceq Q_t \preceq I` on ℰ₁; it implies
  :math:`\eta \le 1/R^2` for Lemma D.9);
* Propositions D.7/D.8 minimise the proof's split point numerically instead of through
  Lemma F.20 (D.8 takes, term by term, the smaller of Lemma D.10's two bounds, which the
  proof's split also uses; it then needs no Half-Expo Decay);
* the gradient bound uses :math:`\|g_t\| \le \|x_t\|^2\|\theta'_t\| + \|x_t\||\xi_t|`
  squared (the proof's :math:`2a^2 + 2b^2` is looser).

Typos the proofs show (deviation 17): D.7 is printed without :math:`\sigma_{sgd}^2`
(:math:`\|\tilde\theta^{sgd}_t\|^2 \le C\eta R^2\sigma_{sgd}^2\mu^{-1}\log^3`); D.8 is
printed as a copy of D.7 (it bounds :math:`\|\tilde\theta^{dp}_t\|^2 \le
C\eta^2\sigma^2d\|\beta\|_1^2\nu^{-1}\log^2(T/p)`); Lemma D.10's expected bound, event
(78) and D.8's step (b) lack the square of :math:`\sum_k|\beta_k|(1-\eta\mu)^{(\tau-k)/2}`
that the induction of D.10 (e) proves. The displayed forms of D.4 with a constant C are in
:func:`theorem_d4_displayed`.

Conventions as :mod:`dpreg.theory.ftrl_finite_time`; :math:`H = \mathrm{diag}(\lambda)`
(the laws involved depend on :math:`H` only through its eigenvalues),
:math:`R^2 = \mathrm{Tr}H + 2\lambda_{\max}` (Gaussian inputs), :math:`\mu =
\lambda_{\min}`, steps :math:`t = 0, \dots, T-1`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpreg.theory.ftrl import _eigs, gaussian_kurtosis_constants
from dpreg.theory.ftrl_finite_time import _nonnegative, _positive

__all__ = [
    "D4Bound",
    "EventThresholds",
    "lemma_d9_bound",
    "lemma_d10_bound",
    "proposition_d5_events",
    "proposition_d6_bound",
    "proposition_d7_bound",
    "proposition_d8_bound",
    "theorem_d4_bound",
    "theorem_d4_displayed",
]


def _horizon(T: object) -> int:
    if isinstance(T, bool) or not isinstance(T, (int, np.integer)) or T < 1:
        raise ValueError(f"T must be an integer >= 1; got {T!r}")
    return int(T)


def _probability(p: float) -> float:
    v = float(p)
    if not 0 < v < 1:
        raise ValueError(f"p must lie in (0, 1); got {p!r}")
    return v


def _beta(beta: object) -> np.ndarray:
    b = np.asarray(beta, dtype=np.float64).ravel()
    if b.size == 0 or not np.all(np.isfinite(b)):
        raise ValueError("beta must be a non-empty vector of finite numbers")
    return b


def _step_indices(t: object, T: int) -> np.ndarray:
    arr = np.atleast_1d(np.asarray(t))
    if arr.size == 0 or arr.dtype.kind not in "iu" or np.any(arr < 0) or np.any(arr >= T):
        raise ValueError(f"t must hold integers in [0, T-1] = [0, {T - 1}]; got {t!r}")
    return arr.astype(np.int64)


def _contraction(lam: np.ndarray, eta: float) -> float:
    a = 1.0 - eta * float(lam.min())
    if not 0 <= a < 1:
        raise ValueError(f"eta * mu must lie in (0, 1]; got eta={eta!r}, mu={lam.min()!r}")
    return a


@dataclass(frozen=True)
class EventThresholds:
    r"""The six events of Proposition D.5 with explicit thresholds (Gaussian case).

    Each event fails with probability at most ``q = p / 6``.

    Attributes
    ----------
    T, p, q : int, float, float
        Horizon, total failure probability, per-event failure probability.
    log_term : float
        :math:`u = \log(T/q)`.
    input_sq : float
        ℰ₁ (71): :math:`\|x_t\|^2 \le b_x = \mathrm{Tr}H + 2\|\lambda\|_2\sqrt u +
        2\lambda_{\max}u` for all :math:`t < T`.
    label_sq : float
        ℰ₂ (72): :math:`\xi_t^2 \le 2\sigma_{sgd}^2\log(2T/q)`.
    chaos_factor : float
        ℰ₁^sgd (73), ℰ₁^dp (77): :math:`\|\tilde\theta_t\|^2 \le \eta^2s^2\,
        \mathrm{Tr}[\Sigma_t]\,h(u)`, :math:`h(u) = 1 + 2\sqrt u + 2u` (s the noise scale).
    markov_factor : float
        ℰ₂^sgd (76), ℰ₂^dp (78): a trace exceeds ``markov_factor`` times its expectation
        bound (Lemma D.9 / D.10), :math:`T^2/q`.
    r2 : float
        :math:`R^2 = \mathrm{Tr}H + 2\lambda_{\max}`.
    """

    T: int
    p: float
    q: float
    log_term: float
    input_sq: float
    label_sq: float
    chaos_factor: float
    markov_factor: float
    r2: float


def proposition_d5_events(
    eigenvalues: np.ndarray, *, T: int, p: float, sigma_sgd: float = 0.0
) -> EventThresholds:
    r"""Proposition D.5: events holding jointly with probability :math:`\ge 1 - p`.

    The paper's ℰ₁, ℰ₂, ℰ₁^sgd, ℰ₂^sgd, ℰ₁^dp, ℰ₂^dp (Eqs. 71–78) each fail with
    probability at most :math:`q = p/6` (the proof's union bound, with :math:`p/6` for
    :math:`p` as at the end of the proof of D.4). The unspecified constant C of (71),
    (73), (77) is replaced by Laurent & Massart's Gaussian tail (module docstring).

    Parameters
    ----------
    eigenvalues : array_like
        :math:`\lambda_k > 0`, the spectrum of :math:`H`.
    T : int
        Number of steps, >= 1.
    p : float
        Total failure probability in (0, 1).
    sigma_sgd : float
        Label-noise standard deviation (only ℰ₂ uses it).

    Returns
    -------
    EventThresholds

    Examples
    --------
    >>> ev = proposition_d5_events([1.0, 1.0], T=10, p=0.06)
    >>> ev.q, round(ev.log_term, 6)  # u = log(10 / 0.01)
    (0.01, 6.907755)
    >>> round(ev.input_sq, 4)  # 2 + 2 sqrt(2) sqrt(u) + 2u
    23.2494
    """
    lam = _eigs(eigenvalues)
    T = _horizon(T)
    p = _probability(p)
    s = _nonnegative(sigma_sgd, "sigma_sgd")
    q = p / 6.0
    u = math.log(T / q)
    b_x = float(lam.sum() + 2.0 * math.sqrt(u) * np.linalg.norm(lam) + 2.0 * lam.max() * u)
    r2, _ = gaussian_kurtosis_constants(lam)
    return EventThresholds(
        T=T,
        p=p,
        q=q,
        log_term=u,
        input_sq=b_x,
        label_sq=2.0 * s * s * math.log(2.0 * T / q),
        chaos_factor=1.0 + 2.0 * math.sqrt(u) + 2.0 * u,
        markov_factor=T * T / q,
        r2=r2,
    )


def _events_for(lam: np.ndarray, eta: float, T: int, p: float, sigma_sgd: float):
    ev = proposition_d5_events(lam, T=T, p=p, sigma_sgd=sigma_sgd)
    if eta * ev.input_sq > 1.0:
        raise ValueError(
            f"eta must be <= 1/b_x = {1.0 / ev.input_sq:.6g} (the step condition of "
            f"Theorem D.4, explicit: 0 <= Q_t <= I on event E1); got eta={eta!r}"
        )
    return ev


def lemma_d9_bound(lag: int | np.ndarray, *, eigenvalues: np.ndarray, eta: float) -> np.ndarray:
    r"""Lemma D.9: :math:`\mathbb E\,\mathrm{Tr}[W_{t,\tau}] \le R^2(1-\eta\mu)^{t-1-\tau}`.

    :math:`W_{t,\tau} = Q_{t-1}\cdots Q_{\tau+1}x_\tau x_\tau^\top Q_{\tau+1}\cdots
    Q_{t-1}` (Eq. 75), :math:`Q_s = I - \eta x_sx_s^\top`, at lag :math:`t-1-\tau`.
    Needs :math:`\eta \le 1/R^2` (Lemma F.18).

    Parameters
    ----------
    lag : int or array_like of int
        :math:`t - 1 - \tau \ge 0`.
    eigenvalues : array_like
        Spectrum of :math:`H`.
    eta : float
        Learning rate in :math:`(0, 1/R^2]`.

    Returns
    -------
    ndarray
        The bound at each lag.

    Examples
    --------
    >>> lemma_d9_bound([0, 1], eigenvalues=[1.0, 1.0], eta=0.1).tolist()  # R^2 = 4
    [4.0, 3.6]
    """
    lam = _eigs(eigenvalues)
    eta = _positive(eta, "eta")
    r2, _ = gaussian_kurtosis_constants(lam)
    if eta * r2 > 1.0:
        raise ValueError(f"eta must be <= 1/R^2 = {1.0 / r2:.6g}; got eta={eta!r}")
    lags = np.atleast_1d(np.asarray(lag))
    if lags.size == 0 or lags.dtype.kind not in "iu" or np.any(lags < 0):
        raise ValueError(f"lag must hold integers >= 0; got {lag!r}")
    return r2 * _contraction(lam, eta) ** lags.astype(np.float64)


def lemma_d10_bound(
    beta: np.ndarray,
    *,
    eigenvalues: np.ndarray,
    eta: float,
    kind: str = "expected",
) -> np.ndarray:
    r"""Lemma D.10: bounds on :math:`\mathrm{Tr}[V_{t,\tau}V_{t,\tau}^\top]` for each τ.

    One value per :math:`\tau < \mathrm{len}(\beta)`.

    :math:`V_{t,\tau} = \beta_\tau I + \beta_{\tau-1}Q_{t-1} + \dots + \beta_0Q_{t-1}\cdots
    Q_{t-\tau}` (Eq. 65).

    * ``kind="expected"``: :math:`\mathbb E\,\mathrm{Tr}[VV^\top] \le
      d\big(\sum_{k\le\tau}|\beta_k|(1-\eta\mu)^{(\tau-k)/2}\big)^2`, needs
      :math:`\eta \le 1/R^2`. The square is printed missing; the induction of the proof,
      step (e), proves it (and :math:`\tau = 0` gives :math:`d\beta_0^2`, which the
      unsquared form would not bound for :math:`|\beta_0| > 1`).
    * ``kind="absolute"``: :math:`\mathrm{Tr}[VV^\top] \le d(\sum_{k\le\tau}|\beta_k|)^2`
      surely on :math:`\{Q_s \succeq 0\}` (e.g. on ℰ₁ with :math:`\eta b_x \le 1`).

    Examples
    --------
    >>> b = lemma_d10_bound([1.0, -0.5], eigenvalues=[1.0], eta=0.19)  # (0.9 + 0.5)^2
    >>> np.round(b, 12).tolist()
    [1.0, 1.96]
    >>> lemma_d10_bound([1.0, -0.5], eigenvalues=[1.0], eta=0.19, kind="absolute").tolist()
    [1.0, 2.25]
    """
    b = np.abs(_beta(beta))
    lam = _eigs(eigenvalues)
    eta = _positive(eta, "eta")
    d = lam.size
    if kind == "absolute":
        return d * np.cumsum(b) ** 2
    if kind != "expected":
        raise ValueError(f"kind must be 'expected' or 'absolute'; got {kind!r}")
    r2, _ = gaussian_kurtosis_constants(lam)
    if eta * r2 > 1.0:
        raise ValueError(f"eta must be <= 1/R^2 = {1.0 / r2:.6g}; got eta={eta!r}")
    # scipy.signal costs ~0.6 s to import, and only this bound needs it: imported here, so
    # that a config check or a job that never draws Appendix D's bounds does not pay it.
    from scipy.signal import lfilter

    root_a = math.sqrt(_contraction(lam, eta))
    # s_tau = sum_k |b_k| a^{(tau-k)/2} = root_a * s_{tau-1} + |b_tau|: a first-order filter
    s = lfilter([1.0], [1.0, -root_a], b)
    return d * s**2


def proposition_d6_bound(
    t: int | np.ndarray,
    *,
    initial_distance: float,
    eigenvalues: np.ndarray,
    eta: float,
    T: int,
    p: float,
) -> np.ndarray:
    r"""Proposition D.6: :math:`\|\hat\theta_t\|_2^2 \le \|\theta_0 - \theta^\star\|_2^2` on ℰ₁.

    :math:`\hat\theta_t = Q_{t-1}\cdots Q_0(\theta_0 - \theta^\star)` (Eq. 58, the
    noiseless recursion), :math:`0 \preceq Q_s \preceq I` on ℰ₁ when :math:`\eta b_x \le 1`
    (checked; :func:`proposition_d5_events`).

    Examples
    --------
    >>> proposition_d6_bound([0, 5], initial_distance=2.0, eigenvalues=[1.0], eta=0.01,
    ...                      T=10, p=0.1).tolist()
    [4.0, 4.0]
    """
    lam = _eigs(eigenvalues)
    eta = _positive(eta, "eta")
    T = _horizon(T)
    r = _nonnegative(initial_distance, "initial_distance")
    _events_for(lam, eta, T, _probability(p), 0.0)
    return np.full(_step_indices(t, T).size, r * r)


def _split_min(per_term: np.ndarray, cap: float) -> np.ndarray:
    r""":math:`\min_{0\le k\le t}[k\cdot cap + \sum_{k\le\ell<t} per\_term_\ell]` for t = 0..n.

    ``per_term[ell]`` is the Markov bound at lag ``ell``; the k most recent lags are
    bounded by ``cap``. With prefix sums :math:`S`, the bracket is :math:`k\,cap - S_k +
    S_t`, so a running minimum gives every t in :math:`O(n)`.
    """
    prefix = np.concatenate([[0.0], np.cumsum(per_term)])
    g = np.arange(prefix.size) * cap - prefix
    return np.minimum.accumulate(g) + prefix


def proposition_d7_bound(
    t: int | np.ndarray,
    *,
    eigenvalues: np.ndarray,
    eta: float,
    sigma_sgd: float,
    T: int,
    p: float,
) -> np.ndarray:
    r"""Proposition D.7: :math:`\|\tilde\theta^{sgd}_t\|_2^2` on ℰ₁ ∩ ℰ₁^sgd ∩ ℰ₂^sgd.

    :math:`\tilde\theta^{sgd}` is the label-noise component (59). The proof, with its
    constants explicit:

    .. math::

        \|\tilde\theta^{sgd}_t\|^2 \le \eta^2\sigma_{sgd}^2h(u)\min_{0\le k\le t}
        \Big(k\,b_x + \frac{T^2R^2}{q}\sum_{\ell=k}^{t-1}(1-\eta\mu)^\ell\Big)

    (the k most recent :math:`\mathrm{Tr}W_{t,\tau}` bounded by :math:`\|x_\tau\|^2 \le
    b_x`, the rest by ℰ₂^sgd with Lemma D.9). The paper prints the order
    :math:`C(\eta R^2/\mu)\log^3(T/p)` without the factor :math:`\sigma_{sgd}^2` that its
    proof carries (typo).

    Parameters
    ----------
    t : int or array_like of int
        Steps in :math:`[0, T-1]`.
    eigenvalues, eta, T, p
        As :func:`proposition_d5_events`; :math:`\eta b_x \le 1` is required.
    sigma_sgd : float
        Label-noise standard deviation.

    Examples
    --------
    >>> b = proposition_d7_bound([0, 1, 9], eigenvalues=[1.0], eta=0.02, sigma_sgd=1.0,
    ...                          T=10, p=0.1)
    >>> float(b[0]), bool(b[1] <= b[2])
    (0.0, True)
    """
    lam = _eigs(eigenvalues)
    eta = _positive(eta, "eta")
    T = _horizon(T)
    s = _nonnegative(sigma_sgd, "sigma_sgd")
    ev = _events_for(lam, eta, T, _probability(p), s)
    steps = _step_indices(t, T)
    a = _contraction(lam, eta)
    per_lag = ev.markov_factor * ev.r2 * a ** np.arange(T - 1, dtype=np.float64)
    trace = _split_min(per_lag, ev.input_sq)
    return eta**2 * s * s * ev.chaos_factor * trace[steps]


def proposition_d8_bound(
    t: int | np.ndarray,
    *,
    beta: np.ndarray,
    eigenvalues: np.ndarray,
    eta: float,
    sigma: float,
    T: int,
    p: float,
) -> np.ndarray:
    r"""Proposition D.8: :math:`\|\tilde\theta^{dp}_t\|_2^2` on ℰ₁ ∩ ℰ₁^dp ∩ ℰ₂^dp.

    :math:`\tilde\theta^{dp}` is the DP-noise component (60) with noise
    :math:`\sum_\tau\beta_\tau w_{t-\tau}`, :math:`w \sim \mathcal N(0, \sigma^2I)`.
    With the constants explicit,

    .. math::

        \|\tilde\theta^{dp}_t\|^2 \le \eta^2\sigma^2h(u)\sum_{\tau<t}\min\Big\{
        d\Big(\sum_{k\le\tau}|\beta_k|\Big)^2,\;
        \frac{T^2d}{q}\Big(\sum_{k\le\tau}|\beta_k|(1-\eta\mu)^{(\tau-k)/2}\Big)^2\Big\}

    (Lemma D.10's absolute bound, and ℰ₂^dp with D.10's expected bound). The proof splits
    the sum at one τ and uses Half-Expo Decay (Def. D.3) to reach the order
    :math:`C\eta^2\sigma^2d\|\beta\|_1^2\nu^{-1}\log^2(T/p)`; the term-wise minimum is
    never larger. The paper prints D.8 as a copy of D.7 (typo).

    Parameters
    ----------
    t : int or array_like of int
        Steps in :math:`[0, T-1]`.
    beta : array_like
        Noise coefficients; missing ones (beyond ``len(beta)``) are 0.
    eigenvalues, eta, T, p
        As :func:`proposition_d7_bound`.
    sigma : float
        Standard deviation of each coordinate of :math:`w_t`.

    Examples
    --------
    Independent noise (β = (1)): each term is :math:`\min\{d, dT^2/q\} = d`, so the bound
    is :math:`\eta^2\sigma^2h(u)\,d\,t`:

    >>> b = proposition_d8_bound([3], beta=[1.0], eigenvalues=[1.0, 1.0], eta=0.02,
    ...                          sigma=1.0, T=10, p=0.06)
    >>> u = math.log(1000.0)
    >>> round(float(b[0]) / (0.02**2 * (1 + 2 * math.sqrt(u) + 2 * u) * 2 * 3), 12)
    1.0
    """
    lam = _eigs(eigenvalues)
    eta = _positive(eta, "eta")
    T = _horizon(T)
    sig = _nonnegative(sigma, "sigma")
    b = _beta(beta)
    ev = _events_for(lam, eta, T, _probability(p), 0.0)
    steps = _step_indices(t, T)
    full = np.zeros(max(T - 1, 1))
    m = min(b.size, full.size)
    full[:m] = b[:m]
    absolute = lemma_d10_bound(full, eigenvalues=lam, eta=eta, kind="absolute")
    expected = lemma_d10_bound(full, eigenvalues=lam, eta=eta, kind="expected")
    per_tau = np.minimum(absolute, ev.markov_factor * expected)
    trace = np.concatenate([[0.0], np.cumsum(per_tau)])
    return eta**2 * sig * sig * ev.chaos_factor * trace[steps]


@dataclass(frozen=True)
class D4Bound:
    """Theorem D.4's two bounds at the requested steps (arrays, one value per step)."""

    iterate_sq: np.ndarray
    gradient_sq: np.ndarray


def theorem_d4_bound(
    t: int | np.ndarray,
    *,
    beta: np.ndarray,
    eigenvalues: np.ndarray,
    eta: float,
    sigma: float,
    sigma_sgd: float,
    initial_distance: float,
    T: int,
    p: float,
) -> D4Bound:
    r"""Theorem D.4 with explicit constants: iterate and gradient bounds for all t < T.

    With probability :math:`\ge 1 - p`, for all :math:`t < T`,

    .. math::

        \|\theta_t - \theta^\star\|^2 \le B_t := \Big(\|\theta_0 - \theta^\star\|
        + \sqrt{S^{sgd}_t} + \sqrt{S^{dp}_t}\Big)^2, \qquad
        \|g_t\|^2 \le \big(b_x\sqrt{B_t} + \sqrt{b_x\,2\sigma_{sgd}^2\log(2T/q)}\big)^2,

    :math:`S^{sgd}`, :math:`S^{dp}` from :func:`proposition_d7_bound`,
    :func:`proposition_d8_bound`, by the triangle inequality on Property D.2's split
    (66) and Proposition D.6; :math:`g_t = x_t(\langle x_t, \theta_t - \theta^\star\rangle
    - \xi_t)`. All six events of D.5 hold with probability :math:`\ge 1 - p`. The paper's
    display, with its unspecified constant, is :func:`theorem_d4_displayed`.

    Parameters
    ----------
    t : int or array_like of int
        Steps in :math:`[0, T-1]`.
    beta : array_like
        Noise coefficients :math:`\beta_0, \beta_1, \dots`.
    eigenvalues : array_like
        Spectrum of :math:`H`.
    eta : float
        Learning rate with :math:`\eta b_x \le 1`.
    sigma : float
        DP noise standard deviation per coordinate, :math:`w_t \sim \mathcal N(0,
        \sigma^2I)`.
    sigma_sgd : float
        Label-noise standard deviation.
    initial_distance : float
        :math:`\|\theta_0 - \theta^\star\|_2`.
    T : int
        Horizon.
    p : float
        Failure probability.

    Returns
    -------
    D4Bound

    Examples
    --------
    Without noise the iterate bound is the initial distance (attained at t = 0):

    >>> b = theorem_d4_bound([0, 9], beta=[1.0], eigenvalues=[1.0], eta=0.01, sigma=0.0,
    ...                      sigma_sgd=0.0, initial_distance=2.0, T=10, p=0.1)
    >>> b.iterate_sq.tolist()
    [4.0, 4.0]
    """
    lam = _eigs(eigenvalues)
    s = _nonnegative(sigma_sgd, "sigma_sgd")
    ev = _events_for(lam, _positive(eta, "eta"), _horizon(T), _probability(p), s)
    common = dict(eigenvalues=lam, eta=eta, T=T, p=p)
    r_sq = proposition_d6_bound(t, initial_distance=initial_distance, **common)
    sgd = proposition_d7_bound(t, sigma_sgd=s, **common)
    dp = proposition_d8_bound(t, beta=beta, sigma=sigma, **common)
    iterate = (np.sqrt(r_sq) + np.sqrt(sgd) + np.sqrt(dp)) ** 2
    gradient = (ev.input_sq * np.sqrt(iterate) + math.sqrt(ev.input_sq * ev.label_sq)) ** 2
    return D4Bound(iterate_sq=iterate, gradient_sq=gradient)


def theorem_d4_displayed(
    *,
    beta: np.ndarray,
    eigenvalues: np.ndarray,
    eta: float,
    sigma: float,
    sigma_sgd: float,
    initial_distance: float,
    nu: float,
    T: int,
    p: float,
    C: float = 1.0,
) -> D4Bound:
    r"""Theorem D.4 as displayed, with its unspecified universal constant ``C``.

    .. math::

        \|\theta'_t\|^2 \le C\Big(\|\theta'_0\|^2 + \frac{\eta R^2\sigma_{sgd}^2}{\mu}
        + \frac{\eta^2\sigma^2d\|\beta\|_1^2}{\nu}\Big)\log^3\frac Tp,\quad
        \|g_t\|^2 \le CR^4\Big(\dots + \frac{\sigma_{sgd}^2}{R^2} + \dots\Big)
        \log^5\frac Tp

    for β with Half-Expo Decay at parameter :math:`\nu \le \eta\mu` and
    :math:`\eta \le 1/(cR^2\log(T/p))`. With ``C = 1`` this is an order, not a bound;
    :func:`theorem_d4_bound` is the explicit one (the docs page reports the C the display
    needs to cover it). Returns one value (uniform in t) per bound.

    Examples
    --------
    >>> b = theorem_d4_displayed(beta=[1.0], eigenvalues=[1.0], eta=0.1, sigma=0.0,
    ...                          sigma_sgd=0.0, initial_distance=1.0, nu=0.1, T=10, p=0.1)
    >>> round(float(b.iterate_sq) / math.log(100.0) ** 3, 12)
    1.0
    """
    lam = _eigs(eigenvalues)
    b = _beta(beta)
    eta = _positive(eta, "eta")
    sig = _nonnegative(sigma, "sigma")
    s = _nonnegative(sigma_sgd, "sigma_sgd")
    r = _nonnegative(initial_distance, "initial_distance")
    nu = _positive(nu, "nu")
    if nu > eta * float(lam.min()):
        raise ValueError(f"nu must be <= eta * mu = {eta * lam.min():.6g}; got nu={nu!r}")
    T = _horizon(T)
    p = _probability(p)
    C = _positive(C, "C")
    r2, _ = gaussian_kurtosis_constants(lam)
    mu = float(lam.min())
    lg = math.log(T / p)
    base = r * r + eta * r2 * s * s / mu + eta**2 * sig**2 * lam.size * np.abs(b).sum() ** 2 / nu
    iterate = C * base * lg**3
    gradient = C * r2**2 * (base + s * s / r2) * lg**5
    return D4Bound(iterate_sq=np.asarray(iterate), gradient_sq=np.asarray(gradient))
