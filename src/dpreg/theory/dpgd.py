r"""Exact law of DP-GD iterates for least squares, no-clipping conditions, Huber target.

Brown, Dvijotham, Evans, Liu, Smith, Thakurta (2024), "Private gradient descent for linear
regression: tighter error bounds and instance-specific uncertainty estimation" (ICML).

Without clipping (:math:`\gamma = \infty`, or whenever no gradient is clipped; Lemma 2.2)
Algorithm 1 is the linear recursion (eq. 2)

.. math::

    \theta_t = \eta\Sigma\hat\theta + (I - \eta\Sigma)\theta_{t-1} + \eta z_{t-1},
    \qquad z_{t-1} \sim N(0, \lambda^2 I),

with :math:`\Sigma = X^\top X/n` and :math:`\hat\theta` the OLS solution, so the iterates
form a Gaussian process (Lemma 2.3, eq. 8; cross-covariances from App. C.2.2, eq. 94):

.. math::

    E\theta_t = \hat\theta + P^t(\theta_0 - \hat\theta), \quad
    \mathrm{Var}\,\theta_t = \eta^2\lambda^2 A^{(t)}, \quad
    \mathrm{Cov}(\theta_\tau, \theta_t) = \eta^2\lambda^2 P^{\tau - t} A^{(t)}
    \ (\tau \ge t),

where :math:`P = I - \eta\Sigma`, :math:`D = P^2` and
:math:`A^{(t)} = (I - D)^{-1}(I - D^t) = \sum_{k=0}^{t-1} D^k`. Every function here works
in the eigenbasis of :math:`\Sigma` and uses the geometric sum, so it also covers the
cases the paper excludes (:math:`I - D` singular: the sum is then ``t``).

All functions are pure numerics on a fixed data set (the paper's conditional view:
randomness is the privacy noise only). ``noise_std`` is :math:`\lambda`, the standard
deviation of the noise on the averaged gradient, as in
:func:`dpreg.estimators.dpgd.dp_gd_path`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = [
    "NoClippingCheck",
    "crossover_n",
    "expected_squared_error",
    "huber_objective",
    "huber_target",
    "isotropic_privacy_mse",
    "iterate_covariance",
    "iterate_cross_covariance",
    "iterate_mean",
    "lemma25_conditions",
    "lemma26_c0",
    "mean_of_iterates_covariance",
    "no_clipping_condition",
    "ols_sampling_mse",
    "stationary_covariance",
]


def _eig(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""Eigenvalues ``s`` and vectors ``V`` of :math:`\Sigma = X^\top X / n`."""
    n = X.shape[0]
    s, V = np.linalg.eigh((X.T @ X) / n)
    return np.clip(s, 0.0, None), V


def _ols(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.linalg.lstsq(X, y, rcond=None)[0]


def _geometric(a: np.ndarray, k: np.ndarray | int) -> np.ndarray:
    r""":math:`\sum_{j=0}^{k-1} a^j` elementwise (``k`` for :math:`a = 1`)."""
    a = np.asarray(a, dtype=np.float64)
    k = np.asarray(k, dtype=np.float64)
    a, k = np.broadcast_arrays(a, k)
    near = np.abs(1.0 - a) < 1e-12
    safe = np.where(near, 0.5, a)
    out = (1.0 - np.power(safe, k)) / (1.0 - safe)
    return np.where(near, k, out)


def _check_t(t: int, name: str = "t") -> int:
    if isinstance(t, bool) or not isinstance(t, int | np.integer) or t < 0:
        raise ValueError(f"{name} must be a non-negative integer; got {t!r}")
    return int(t)


def iterate_mean(
    X: np.ndarray, y: np.ndarray, *, step: float, t: int, theta0: np.ndarray | None = None
) -> np.ndarray:
    r"""Mean of the t-th DP-GD iterate without clipping (Lemma 2.3, eq. 8).

    :math:`E\theta_t = \hat\theta + (I - \eta\Sigma)^t(\theta_0 - \hat\theta)`.

    Parameters
    ----------
    X : ndarray, shape (n, d)
    y : ndarray, shape (n,)
    step : float
        Step size :math:`\eta`.
    t : int
        Iteration (0 gives :math:`\theta_0`).
    theta0 : ndarray, shape (d,), optional
        Initial point (default 0, as in the paper).

    Returns
    -------
    ndarray, shape (d,)
    """
    t = _check_t(t)
    s, V = _eig(X)
    theta_hat = _ols(X, y)
    start = np.zeros(X.shape[1]) if theta0 is None else np.asarray(theta0, dtype=np.float64)
    decay = np.power(1.0 - step * s, t)
    return theta_hat + V @ (decay * (V.T @ (start - theta_hat)))


def iterate_covariance(X: np.ndarray, *, step: float, noise_std: float, t: int) -> np.ndarray:
    r"""Covariance of the t-th iterate without clipping (Lemma 2.3).

    :math:`\eta^2\lambda^2 A^{(t)}`, :math:`A^{(t)} = \sum_{k<t}(I - \eta\Sigma)^{2k}`.

    Returns
    -------
    ndarray, shape (d, d)
    """
    return iterate_cross_covariance(X, step=step, noise_std=noise_std, t=t, tau=t)


def iterate_cross_covariance(
    X: np.ndarray, *, step: float, noise_std: float, t: int, tau: int
) -> np.ndarray:
    r"""Cross-covariance :math:`\mathrm{Cov}(\theta_\tau, \theta_t)` for :math:`\tau \ge t`.

    :math:`\eta^2\lambda^2 (I - \eta\Sigma)^{\tau - t} A^{(t)}` (App. C.2.2, eq. 94): the
    part of :math:`\theta_\tau` that depends on the noise up to step t is
    :math:`(I-\eta\Sigma)^{\tau-t}` times that of :math:`\theta_t`.

    Returns
    -------
    ndarray, shape (d, d)
        ``E[(theta_tau - E theta_tau)(theta_t - E theta_t)^T]`` (symmetric, since
        :math:`P` and :math:`A^{(t)}` commute).
    """
    t, tau = _check_t(t), _check_t(tau, "tau")
    if tau < t:
        raise ValueError(f"tau must be >= t; got t={t}, tau={tau} (use the transpose)")
    s, V = _eig(X)
    a = 1.0 - step * s
    diag = (step * noise_std) ** 2 * np.power(a, tau - t) * _geometric(a * a, t)
    return (V * diag) @ V.T


def stationary_covariance(X: np.ndarray, *, step: float, noise_std: float) -> np.ndarray:
    r"""Limit :math:`\eta^2\lambda^2 (I - D)^{-1} = \eta\lambda^2(2\Sigma - \eta\Sigma^2)^{-1}`.

    Requires :math:`0 < \eta s < 2` for every eigenvalue ``s`` of :math:`\Sigma`
    (otherwise the chain does not converge and ``ValueError`` is raised).
    """
    s, V = _eig(X)
    a = 1.0 - step * s
    if np.any(np.abs(a) >= 1.0):
        raise ValueError(
            "no stationary law: need 0 < step * eigenvalue < 2 for every eigenvalue of"
            f" Sigma; got step * eigenvalues in [{step * s.min():.3g}, {step * s.max():.3g}]"
        )
    return (V * ((step * noise_std) ** 2 / (1.0 - a * a))) @ V.T


def mean_of_iterates_covariance(
    X: np.ndarray, *, step: float, noise_std: float, start: int, stop: int
) -> np.ndarray:
    r"""Exact covariance of the window average of the iterates.

    The average is :math:`\frac1L\sum_{t=\mathrm{start}}^{\mathrm{stop}}\theta_t`. Sums
    the Gaussian-process covariances of Lemma 2.3 / eq. 94 over the window
    (:math:`L = \mathrm{stop} - \mathrm{start} + 1`). In each eigendirection of
    :math:`\Sigma` with :math:`a = 1 - \eta s` and :math:`c_t = \sum_{k<t} a^{2k}`:
    :math:`\sum_{t,t'} \mathrm{Cov} =
    \eta^2\lambda^2 \sum_t c_t (1 + 2\sum_{k=1}^{\mathrm{stop}-t} a^k)`.
    This is the variance a batch mean (batched-means CI) or a post-burn-in run average
    (independent-runs CI) has without clipping.

    Returns
    -------
    ndarray, shape (d, d)
    """
    start, stop = _check_t(start, "start"), _check_t(stop, "stop")
    if stop < start:
        raise ValueError(f"stop must be >= start; got start={start}, stop={stop}")
    s, V = _eig(X)
    a = 1.0 - step * s
    ts = np.arange(start, stop + 1, dtype=np.float64)[:, None]
    c = _geometric(a * a, ts)  # (L, d)
    tail = a * _geometric(a, stop - ts)  # sum_{k=1}^{stop-t} a^k
    total = np.sum(c * (1.0 + 2.0 * tail), axis=0)
    L = stop - start + 1
    return (V * ((step * noise_std) ** 2 * total / L**2)) @ V.T


def expected_squared_error(
    X: np.ndarray,
    y: np.ndarray,
    *,
    step: float,
    noise_std: float,
    T: int,
    theta0: np.ndarray | None = None,
) -> float:
    r"""Return the expected squared privacy error :math:`E\|\theta_T - \hat\theta\|^2`.

    :math:`\eta^2\lambda^2\,\mathrm{tr}A^{(T)} + \|P^T(\theta_0 - \hat\theta)\|^2`,
    exact without clipping (Lemma 2.3); the privacy error of Figures 1 and 2.
    """
    bias = iterate_mean(X, y, step=step, t=T, theta0=theta0) - _ols(X, y)
    cov = iterate_covariance(X, step=step, noise_std=noise_std, t=T)
    return float(np.trace(cov) + bias @ bias)


def isotropic_privacy_mse(
    n: float, p: int, *, T: int, clip: float, rho: float, step: float, theta_norm: float = 0.0
) -> float:
    r"""Privacy error :math:`E\|\theta_T - \hat\theta\|^2` for :math:`\Sigma = I` at rho-zCDP.

    With :math:`\lambda^2 = 2T\gamma^2/(\rho n^2)` (Lemma 2.1) and :math:`\Sigma = I`,
    :func:`expected_squared_error` is
    :math:`p\,\eta\lambda^2\,(1 - (1-\eta)^{2T})/(2 - \eta) + (1-\eta)^{2T}\|\hat\theta\|^2`
    (``theta_norm`` is :math:`\|\hat\theta - \theta_0\|`). Falls as :math:`1/n^2`, so the
    RMS error falls as :math:`1/n` (Figure 2).
    """
    lam2 = 2.0 * T * clip**2 / (rho * n**2)
    decay = (1.0 - step) ** (2 * T)
    return p * step * lam2 * (1.0 - decay) / (2.0 - step) + decay * theta_norm**2


def ols_sampling_mse(n: float, p: int, *, sigma: float = 1.0) -> float:
    r"""Return the sampling error :math:`E\|\hat\theta - \theta^*\|^2 = \sigma^2 p/(n-p-1)`.

    For :math:`x_i \sim N(0, I_p)` the mean of the inverse Wishart
    :math:`(X^\top X)^{-1}` is :math:`I/(n-p-1)`; the sampling error of Figure 2
    (RMS :math:`\approx\sigma\sqrt{p/n}`).
    """
    if n <= p + 1:
        raise ValueError(f"need n > p + 1 for a finite OLS error; got n={n}, p={p}")
    return sigma**2 * p / (n - p - 1)


def crossover_n(
    *, T: int, clip: float, rho: float, step: float, sigma: float = 1.0, finite_T: bool = True
) -> float:
    r"""Sample size :math:`n^*` where privacy and sampling errors meet (isotropic design).

    Equating :func:`isotropic_privacy_mse` (no bias term) with :math:`\sigma^2 p/n` gives

    .. math::

        n^* = \frac{2T\gamma^2\eta\,(1 - (1-\eta)^{2T})}{(2 - \eta)\rho\sigma^2},

    and :math:`2T\gamma^2\eta/((2-\eta)\rho\sigma^2)` with ``finite_T=False``
    (docs/notes/brown2024.md §4.6; derived from Lemma 2.3, not stated in the paper). With
    :math:`\gamma = c\sqrt p` it grows linearly in p: privacy is "for free" once
    :math:`n \gg n^*` (Section 4.1, Figures 2 and 8).
    """
    factor = 1.0 - (1.0 - step) ** (2 * T) if finite_T else 1.0
    return 2.0 * T * clip**2 * step * factor / ((2.0 - step) * rho * sigma**2)


@dataclass(frozen=True)
class NoClippingCheck:
    r"""Smallest constants with which a data set meets Condition 2.4.

    Attributes
    ----------
    condition_i : bool
        :math:`\frac12 I \preceq \Sigma \preceq 2I` and :math:`\|I - \eta\Sigma\| \le 7/8`.
    eig_min, eig_max, contraction : float
        Extreme eigenvalues of :math:`\Sigma` and :math:`\|I - \eta\Sigma\|`.
    c0_ii, c0_iii, c0_iv, c0_v : float
        Smallest :math:`c_0` for which conditions (ii)-(v) hold with the given
        :math:`\theta`: :math:`\max_i\|x_i\|/\sqrt p`, :math:`\max_i|y_i - x_i^\top\theta|/\sigma`,
        :math:`\max_{i,t}|x_i^\top(I-\eta\Sigma)^t\theta|` and
        :math:`\max_{i,t}|\sum_j (y_j - x_j^\top\theta)x_i^\top A_t x_j|/(\sigma\sqrt{np})`.
    c0 : float
        Their maximum: the data satisfy Condition 2.4 with every :math:`c_0 \ge` ``c0``
        (if ``condition_i``).
    """

    condition_i: bool
    eig_min: float
    eig_max: float
    contraction: float
    c0_ii: float
    c0_iii: float
    c0_iv: float
    c0_v: float

    @property
    def c0(self) -> float:
        """The smallest c0 meeting conditions (ii)-(v)."""
        return max(self.c0_ii, self.c0_iii, self.c0_iv, self.c0_v)


def no_clipping_condition(
    X: np.ndarray,
    y: np.ndarray,
    theta: np.ndarray,
    *,
    step: float,
    T: int,
    sigma: float = 1.0,
) -> NoClippingCheck:
    r"""Evaluate the No-Clipping Condition (Condition 2.4) on a data set.

    Parameters
    ----------
    X : ndarray, shape (n, p)
    y : ndarray, shape (n,)
        (The paper's ":math:`\mathbb R^p`" for y is a typo for :math:`\mathbb R^n`.)
    theta : ndarray, shape (p,)
        The witness :math:`\theta` (think :math:`\theta^*`).
    step : float
        :math:`\eta`.
    T : int
        Conditions (iv) and (v) are checked for :math:`t = 1, \dots, T`.
    sigma : float
        Noise scale :math:`\sigma` of the condition.

    Returns
    -------
    NoClippingCheck

    Notes
    -----
    :math:`A_t = (I - (I - \eta\Sigma)^t)\Sigma^{-1}` and
    :math:`\sum_j r_j x_i^\top A_t x_j = x_i^\top A_t X^\top r`, so each t costs one
    :math:`O(np)` product. Lemma 2.6 shows Gaussian data meet the condition with
    :math:`c_0 = 12\ln^{1.5}(5nT/\beta)` (:func:`lemma26_c0`), which is very loose.
    """
    T = _check_t(T, "T")
    n, p = X.shape
    s, V = _eig(X)
    if s.min() <= 0:
        raise ValueError("Sigma = X^T X / n is singular; Condition 2.4 (i) needs Sigma >= I/2")
    a = 1.0 - step * s
    contraction = float(np.abs(a).max())
    cond_i = bool(s.min() >= 0.5 and s.max() <= 2.0 and contraction <= 7.0 / 8.0)
    theta = np.asarray(theta, dtype=np.float64)
    r = y - X @ theta
    c_ii = float(np.linalg.norm(X, axis=1).max() / math.sqrt(p))
    c_iii = float(np.abs(r).max() / sigma)
    theta_e = V.T @ theta
    xtr_e = V.T @ (X.T @ r)
    c_iv = 0.0
    c_v = 0.0
    for t in range(1, T + 1):
        at = np.power(a, t)
        c_iv = max(c_iv, float(np.abs(X @ (V @ (at * theta_e))).max()))
        v_t = V @ ((1.0 - at) / s * xtr_e)
        c_v = max(c_v, float(np.abs(X @ v_t).max()))
    c_v /= sigma * math.sqrt(n * p)
    return NoClippingCheck(
        condition_i=cond_i,
        eig_min=float(s.min()),
        eig_max=float(s.max()),
        contraction=contraction,
        c0_ii=c_ii,
        c0_iii=c_iii,
        c0_iv=c_iv,
        c0_v=c_v,
    )


def lemma26_c0(n: int, T: int, beta: float) -> float:
    r""":math:`c_0 = 12\ln^{1.5}(5nT/\beta)`, the constant of Lemma 2.6 (Gaussian data)."""
    return 12.0 * math.log(5.0 * n * T / beta) ** 1.5


def lemma25_conditions(
    *,
    c0: float,
    sigma: float,
    clip: float,
    step: float,
    noise_std: float,
    n: int,
    p: int,
    T: int,
    beta: float,
) -> dict[str, float | bool]:
    r"""Check the two hypotheses of Lemma 2.5 (no clipping with probability 1 - beta).

    :math:`\gamma \ge 4c_0^2\sigma\sqrt p` and
    :math:`\gamma/(\eta\lambda) \ge 64c_0^2 p\sqrt{\ln(2nT/\beta)}`. With the zCDP noise
    :math:`\lambda \propto \gamma` the second ratio does not depend on :math:`\gamma`
    (it is :math:`n\sqrt\rho/(\eta\sqrt{2T})`), so it is a condition on n.

    Returns
    -------
    dict
        ``clip_required`` (:math:`4c_0^2\sigma\sqrt p`), ``ratio``
        (:math:`\gamma/(\eta\lambda)`), ``ratio_required`` and ``holds`` (both met).
    """
    clip_required = 4.0 * c0**2 * sigma * math.sqrt(p)
    ratio = math.inf if noise_std == 0 else clip / (step * noise_std)
    ratio_required = 64.0 * c0**2 * p * math.sqrt(math.log(2.0 * n * T / beta))
    return {
        "clip_required": clip_required,
        "ratio": ratio,
        "ratio_required": ratio_required,
        "holds": bool(clip >= clip_required and ratio >= ratio_required),
    }


def _thresholds(X: np.ndarray, clip: float) -> np.ndarray:
    norms = np.linalg.norm(X, axis=1)
    with np.errstate(divide="ignore"):
        return np.where(norms > 0, clip / np.where(norms > 0, norms, 1.0), np.inf)


def huber_objective(X: np.ndarray, y: np.ndarray, theta: np.ndarray, clip: float) -> float:
    r"""Evaluate the clipped-GD objective of Section 2.5.

    :math:`F_\gamma(\theta) = \frac1n\sum_i \ell_{B_i}(\theta; x_i, y_i)`, with
    :math:`\ell_B(r) = r^2/2` for :math:`|r| \le B`, :math:`B(|r| - B/2)` otherwise and
    the per-datum :math:`B_i = \gamma/\|x_i\|` (Section 2.5): its gradient is the
    average clipped gradient of Algorithm 1.
    """
    B = _thresholds(X, clip)
    r = np.abs(y - X @ theta)
    loss = np.where(r <= B, 0.5 * r * r, B * (r - 0.5 * np.where(np.isinf(B), 0.0, B)))
    return float(np.mean(loss))


def huber_target(
    X: np.ndarray,
    y: np.ndarray,
    clip: float,
    *,
    tol: float = 1e-12,
    max_iter: int = 200,
) -> np.ndarray:
    r"""Minimiser :math:`\hat\theta_\gamma` of the Huber objective that clipping optimises.

    Noise-free clipped gradient descent is gradient descent on :func:`huber_objective`
    (Section 2.5; Song et al. 2020), so under clipping DP-GD fluctuates around
    :math:`\hat\theta_\gamma` rather than the OLS :math:`\hat\theta`
    (docs/notes/brown2024.md §8 item 14).
    Solved by damped semismooth Newton (the objective is convex, piecewise quadratic,
    with generalised Hessian :math:`\frac1n\sum_{|r_i|\le B_i} x_i x_i^\top`), started at
    OLS; ``clip = inf`` returns OLS.

    Parameters
    ----------
    X : ndarray, shape (n, d)
    y : ndarray, shape (n,)
    clip : float
        :math:`\gamma`.
    tol : float
        Stop when the gradient's max-norm is below ``tol`` times the scale of
        :math:`X^\top y/n`.
    max_iter : int

    Returns
    -------
    ndarray, shape (d,)

    Raises
    ------
    RuntimeError
        If Newton's method does not converge (not observed on full-rank designs).
    """
    theta = _ols(X, y)
    if math.isinf(clip):
        return theta
    n, d = X.shape
    B = _thresholds(X, clip)
    scale = max(1.0, float(np.abs(X.T @ y).max()) / n)

    def grad_of(th: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        r = y - X @ th
        return -(X.T @ np.clip(r, -B, B)) / n, np.abs(r) <= B

    f = huber_objective(X, y, theta, clip)
    for _ in range(max_iter):
        g, inside = grad_of(theta)
        if np.abs(g).max() <= tol * scale:
            return theta
        Xi = X[inside]
        H = (Xi.T @ Xi) / n + 1e-12 * np.eye(d)
        try:
            direction = -np.linalg.solve(H, g)
        except np.linalg.LinAlgError:
            direction = -g
        t = 1.0
        while True:
            cand = theta + t * direction
            f_new = huber_objective(X, y, cand, clip)
            if f_new <= f + 1e-4 * t * float(g @ direction) or t < 1e-12:
                break
            t *= 0.5
        theta, f = cand, f_new
    g, _ = grad_of(theta)
    if np.abs(g).max() <= 1e3 * tol * scale:
        return theta
    raise RuntimeError(f"huber_target did not converge (gradient max-norm {np.abs(g).max():.3g})")
