r"""Exact expected width of the DP-GD confidence intervals without clipping.

Brown et al. (2024), §3.1, build every interval with eq. (12),
:math:`\bar\theta_j \pm t_{1-\alpha/2,m-1}\,s_j/\sqrt m`, from m estimates
:math:`\theta^{(1)},\dots,\theta^{(m)}` that are means of windows of DP-GD iterates:
batch means (batched means), single iterates (checkpoints) or one window per independent
run (independent runs; see :mod:`dpreg.inference.constructions` for the indices).
Without clipping the iterates are a Gaussian process with the law of Lemma 2.3
(eq. 8) and the cross-covariances of App. C.2.2 (eqs. 89-94), so the m estimates of
coordinate j are jointly Gaussian, :math:`b \sim N(\mu, C)`, and

.. math::

    (m-1)\,s_j^2 = b^\top Q b, \qquad Q = I_m - \tfrac1m \mathbf 1\mathbf 1^\top,

is a quadratic form whose law is known exactly. This module computes

* :func:`window_means_moments` -- mean and covariance of any set of window means of
  one run, from eq. (89), :math:`\theta_t - E\theta_t = \eta\sum_{i=0}^{t-1}
  (I - \eta\Sigma)^{t-1-i} z^i`, in the eigenbasis of :math:`\Sigma`;
* :func:`expected_t_half_width` -- :math:`E[\text{half-width}] = t\,E[s]/\sqrt m` (exact,
  one-dimensional quadrature of the Laplace transform of :math:`b^\top Q b`) and
  :math:`\sqrt{E[\text{half-width}^2]} = t\sqrt{E[s^2]}/\sqrt m` with
  :math:`E[s^2] = (\mathrm{tr}(QC) + \mu^\top Q\mu)/(m-1)`;
* :func:`ci_half_width_theory` -- both for each coordinate and each construction.

Neither expression is in the paper; they follow from its Lemma 2.3 and eq. (94). With
iid estimates (independent runs) :math:`E[s] = c_4(m)\sigma` exactly
(:math:`c_4(10) = 0.9727`). With clipping the iterates are not Gaussian and the formulas
are the no-clipping reference: a clipped gradient pulls less towards the minimiser (the
Huber objective of §2.5 is flatter than the squared loss where residuals are clipped)
while the noise is unchanged, so the iterates spread more and the observed widths exceed
the reference once a noticeable share of gradients is clipped (Figs. 6/11 at large N).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from dpreg.inference.constructions import METHODS, RUN_ESTIMATES, batch_windows, checkpoint_indices
from dpreg.inference.intervals import t_quantile
from dpreg.theory.dpgd import _eig, _geometric, _ols

_LOG_T_STEP = 0.1
_LOG_T_GRID = np.arange(-800, 801) * _LOG_T_STEP  # u = log t in [-80, 80]

__all__ = [
    "HalfWidthMoments",
    "batched_means_length_limit",
    "ci_half_width_theory",
    "construction_windows",
    "expected_t_half_width",
    "window_means_moments",
]


def _check_windows(windows: Sequence[tuple[int, int]]) -> np.ndarray:
    w = np.asarray(windows, dtype=np.int64)
    if w.ndim != 2 or w.shape[1] != 2 or w.shape[0] < 1:
        raise ValueError(f"windows must be a sequence of (first, last) pairs; got {windows!r}")
    if np.any(w[:, 0] < 1) or np.any(w[:, 1] < w[:, 0]):
        raise ValueError(
            "every window needs 1 <= first <= last (iterate indices; theta_0 is the start)"
        )
    return w


def window_means_moments(
    X: np.ndarray,
    y: np.ndarray,
    *,
    step: float,
    noise_std: float,
    windows: Sequence[tuple[int, int]],
    theta0: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    r"""Mean and covariance of window means of the iterates of one DP-GD run (no clipping).

    Estimate :math:`\ell` is :math:`b_\ell = \frac{1}{L_\ell}\sum_{t=f_\ell}^{g_\ell}
    \theta_t` for the window ``windows[l] = (f, g)``. By eq. (89), the noise
    :math:`z^i \sim N(0,\lambda^2 I)` of step :math:`i+1` enters :math:`\theta_t`
    (:math:`t > i`) with the matrix :math:`\eta P^{t-1-i}`, :math:`P = I - \eta\Sigma`, so
    in an eigendirection of :math:`\Sigma` with :math:`a = 1 - \eta s` the coefficient of
    :math:`z^i` in :math:`b_\ell` is

    .. math::

        w_\ell(i) = \frac{\eta}{L_\ell}\times\begin{cases}
        a^{f-1-i}\,(1 - a^{L_\ell})/(1 - a) & i \le f - 1,\\
        (1 - a^{g-i})/(1 - a) & f - 1 < i \le g - 1,\\
        0 & i \ge g,\end{cases}

    and :math:`\mathrm{Cov}(b_\ell, b_k) = \lambda^2\sum_i w_\ell(i)w_k(i)` in that
    direction. The means are :math:`\hat\theta + \frac{1}{L_\ell}\sum_t P^t(\theta_0 -
    \hat\theta)` (eq. 8). Windows of length one give eq. (94) (checkpoints).

    Parameters
    ----------
    X : ndarray, shape (n, d)
    y : ndarray, shape (n,)
    step : float
        :math:`\eta`.
    noise_std : float
        :math:`\lambda`, std of the noise on the averaged gradient.
    windows : sequence of (int, int)
        Inclusive iterate ranges ``(first, last)``, ``1 <= first <= last``.
    theta0 : ndarray, shape (d,), optional
        Initial point (default 0).

    Returns
    -------
    mean : ndarray, shape (m, d)
    cov : ndarray, shape (m, d, m, d)
        ``cov[l, :, k, :]`` is :math:`\mathrm{Cov}(b_\ell, b_k)`.
    """
    w = _check_windows(windows)
    s, V = _eig(X)
    theta_hat = _ols(X, y)
    d = X.shape[1]
    start = np.zeros(d) if theta0 is None else np.asarray(theta0, dtype=np.float64)
    a = 1.0 - step * s  # (d,)
    first, last = w[:, 0], w[:, 1]
    length = (last - first + 1).astype(np.float64)
    # means: theta_hat + V diag(a^f geo(a, L) / L) V^T (theta0 - theta_hat)
    decay = np.power(a[None, :], first[:, None]) * _geometric(a[None, :], length[:, None])
    decay /= length[:, None]
    mean = theta_hat + (decay * (V.T @ (start - theta_hat))) @ V.T
    # noise coefficients, shape (d, m, N)
    N = int(last.max())
    i = np.arange(N, dtype=np.float64)[None, None, :]
    f, g = first[None, :, None], last[None, :, None]
    aa = a[:, None, None]
    before = np.power(aa, np.maximum(f - 1 - i, 0.0)) * _geometric(aa, length[None, :, None])
    inside = _geometric(aa, np.maximum(g - i, 0.0))
    coef = np.where(i <= f - 1, before, np.where(i <= g - 1, inside, 0.0))
    coef *= step / length[None, :, None]
    gram = np.einsum("eli,eki->elk", coef, coef) * noise_std**2  # (d, m, m)
    cov = np.einsum("je,elk,he->ljkh", V, gram, V)
    return mean, cov


def construction_windows(
    method: str,
    total_steps: int,
    *,
    m: int = 10,
    burn_in: int = 20,
    run_estimate: str = "final",
) -> list[tuple[int, int]]:
    """Iterate windows behind the m estimates of a construction (Brown et al. 2024, §3.1).

    Batched means and checkpoints: m windows of one run of ``total_steps`` steps (indices
    of :mod:`dpreg.inference.constructions`). Independent runs: the single window of one
    run of ``total_steps // m`` steps (``(T, T)`` for ``"final"``, ``(burn_in + 1, T)``
    for ``"post_burn_in_mean"``); the m runs are iid copies.
    """
    if method == "batched_means":
        first, L = batch_windows(total_steps, m, burn_in)
        return [(first + k * L, first + (k + 1) * L - 1) for k in range(m)]
    if method == "checkpoints":
        return [(int(c), int(c)) for c in checkpoint_indices(total_steps, m, burn_in)]
    if method == "independent_runs":
        if run_estimate not in RUN_ESTIMATES:
            raise ValueError(f"run_estimate must be one of {RUN_ESTIMATES}; got {run_estimate!r}")
        T = total_steps // m
        if T < 1 or (run_estimate == "post_burn_in_mean" and T <= burn_in):
            raise ValueError(
                f"independent runs of total_steps // m = {T} steps leave no iterate after"
                f" burn_in={burn_in}"
            )
        return [(T, T)] if run_estimate == "final" else [(burn_in + 1, T)]
    raise ValueError(f"method must be one of {METHODS}; got {method!r}")


class HalfWidthMoments(NamedTuple):
    """Moments of an interval half-width h (floats, or arrays over coordinates)."""

    expected: Any
    """:math:`E[h]` (what an average of observed half-widths estimates)."""
    rms: Any
    """:math:`\\sqrt{E[h^2]}` (from :math:`E[s^2]`; never below ``expected``)."""


def _expected_sqrt(weights: np.ndarray, shifts: np.ndarray, const: float = 0.0) -> float:
    r""":math:`E\sqrt{W}` for :math:`W = c + \sum_k \omega_k (z_k + \delta_k)^2`, z iid N(0, 1).

    Uses :math:`E\sqrt W = \frac{1}{2\sqrt\pi}\int_0^\infty (1 - E e^{-tW})\,t^{-3/2}dt`
    with the closed-form Laplace transform
    :math:`E e^{-tW} = e^{-tc}\prod_k (1 + 2t\omega_k)^{-1/2}\exp(-t\omega_k\delta_k^2/(1 +
    2t\omega_k))`, after scaling W by :math:`E W`, as an integral over
    :math:`u = \log t` by the trapezoidal rule with step 0.1 on :math:`[-80, 80]`. The
    integrand is analytic in the strip :math:`|\mathrm{Im}\,u| < \pi` (the nearest
    singularities are those of :math:`\log(1 + 2e^u\omega_k)`), so the rule's error is
    of order :math:`e^{-2\pi^2/0.1}`; it is below :math:`e^{-|u|/2}` in absolute value,
    so the truncation error is below :math:`10^{-17}` relative.
    """
    mean_w = float(np.sum(weights * (1.0 + shifts**2))) + const
    if mean_w <= 0.0:
        return 0.0
    om = (weights / mean_w)[:, None]
    nc = om * shifts[:, None] ** 2
    t = np.exp(_LOG_T_GRID)[None, :]
    x = 2.0 * t * om
    log_phi = np.sum(-0.5 * np.log1p(x) - t * nc / (1.0 + x), axis=0) - t[0] * (const / mean_w)
    integrand = -np.expm1(log_phi) * np.exp(-0.5 * _LOG_T_GRID)
    total = _LOG_T_STEP * float(np.sum(integrand))
    return math.sqrt(mean_w) * total / (2.0 * math.sqrt(math.pi))


def expected_t_half_width(mean: np.ndarray, cov: np.ndarray, *, alpha: float) -> HalfWidthMoments:
    r"""Return the expected half-width of eq. (12) for jointly Gaussian estimates.

    Parameters
    ----------
    mean : ndarray, shape (m,)
        :math:`E b_\ell`.
    cov : ndarray, shape (m, m)
        :math:`\mathrm{Cov}(b_\ell, b_k)` (positive semidefinite).
    alpha : float
        Nominal miscoverage; the half-width is :math:`h = t_{1-\alpha/2,m-1}s/\sqrt m`.

    Returns
    -------
    HalfWidthMoments
        ``expected`` :math:`= t\,E[s]/\sqrt m`, exact: with :math:`QCQ = \sum_k\omega_k
        u_k u_k^\top`, :math:`(m-1)s^2 = \sum_k \omega_k(z_k + \delta_k)^2` with
        :math:`\delta_k = u_k^\top Q\mu/\sqrt{\omega_k}` (plus the constant
        :math:`\|Q\mu\|^2` outside the range of :math:`QCQ`, if any), and
        :math:`E\sqrt{\cdot}` by quadrature. ``rms`` :math:`= t\sqrt{E[s^2]}/\sqrt m`,
        :math:`E[s^2] = (\mathrm{tr}(QC) + \mu^\top Q\mu)/(m-1)`. ``rms >= expected``
        (Jensen); for iid estimates ``expected / rms`` is :math:`c_4(m)`.
    """
    mu = np.asarray(mean, dtype=np.float64)
    C = np.asarray(cov, dtype=np.float64)
    m = mu.shape[0] if mu.ndim == 1 else -1
    if mu.ndim != 1 or C.shape != (m, m):
        raise ValueError(f"mean must have shape (m,) and cov (m, m); got {mu.shape}, {C.shape}")
    if not (np.all(np.isfinite(mu)) and np.all(np.isfinite(C))):
        raise ValueError("mean and cov must be finite")
    q = t_quantile(alpha, m)
    Q = np.eye(m) - 1.0 / m
    Qmu = Q @ mu
    omega, U = np.linalg.eigh(Q @ C @ Q)
    keep = omega > 1e-12 * max(float(omega.max()), 1e-300)
    proj = U.T @ Qmu
    const = float(np.sum(proj[~keep] ** 2))  # part of Q mu the noise never reaches
    weights = omega[keep]
    shifts = proj[keep] / np.sqrt(weights)
    mean_w = float(np.sum(weights * (1.0 + shifts**2))) + const
    scale = q / math.sqrt(m * (m - 1))
    return HalfWidthMoments(
        scale * _expected_sqrt(weights, shifts, const), scale * math.sqrt(mean_w)
    )


def ci_half_width_theory(
    X: np.ndarray,
    y: np.ndarray,
    *,
    method: str,
    total_steps: int,
    step: float,
    noise_std: float,
    m: int = 10,
    burn_in: int = 20,
    alpha: float = 0.05,
    run_estimate: str = "final",
    theta0: np.ndarray | None = None,
) -> HalfWidthMoments:
    r"""Return the expected half-width of every coordinate for one construction (no clipping).

    Builds the windows of :func:`construction_windows`, their exact Gaussian law
    (:func:`window_means_moments`; independent runs: m iid copies of one run's window,
    covariance :math:`\sigma_j^2 I_m`, equal means) and applies
    :func:`expected_t_half_width` per coordinate. ``noise_std`` is the :math:`\lambda`
    of the construction (:math:`\lambda^2 = 2N\gamma^2/(\rho n^2)` for a budget spread
    over all N steps).

    Returns
    -------
    HalfWidthMoments
        ``expected`` and ``rms``, arrays of shape (d,). The expected interval length is
        twice ``expected``.
    """
    windows = construction_windows(
        method, total_steps, m=m, burn_in=burn_in, run_estimate=run_estimate
    )
    mean, cov = window_means_moments(
        X, y, step=step, noise_std=noise_std, windows=windows, theta0=theta0
    )
    d = X.shape[1]
    expected, rms = np.empty(d), np.empty(d)
    for j in range(d):
        if method == "independent_runs":
            mu_j = np.full(m, mean[0, j])
            cov_j = cov[0, j, 0, j] * np.eye(m)
        else:
            mu_j = mean[:, j]
            cov_j = cov[:, j, :, j]
        expected[j], rms[j] = expected_t_half_width(mu_j, cov_j, alpha=alpha)
    return HalfWidthMoments(expected, rms)


def batched_means_length_limit(
    X: np.ndarray, *, clip: float, rho: float, m: int = 10, alpha: float = 0.05
) -> np.ndarray:
    r"""Large-N limit of the expected batched-means interval length, no clipping.

    With the budget spread over all N steps (:math:`\lambda^2 = 2N\gamma^2/(\rho n^2)`,
    Lemma 2.1) and batches of :math:`L \approx N/m` iterates, a batch mean has variance
    :math:`\lambda^2[\Sigma^{-2}]_{jj}/L` to leading order (the long-run variance of the
    recursion of eq. 2 is :math:`(\eta\Sigma)^{-1}\eta^2\lambda^2(\eta\Sigma)^{-1}`) and the
    batch means become iid, so the expected length tends to

    .. math::

        2\,t_{1-\alpha/2,m-1}\,c_4(m)\,\frac{\gamma}{n}\sqrt{\frac{2}{\rho}}
        \sqrt{[\Sigma^{-2}]_{jj}},

    independent of N and of the step size: batched-means widths stay flat in N, unlike
    checkpoints (:math:`\propto\sqrt N`). Replace-one sensitivity :math:`2\gamma/n`.

    Returns
    -------
    ndarray, shape (d,)
    """
    n = X.shape[0]
    s, V = _eig(X)
    if s.min() <= 0.0:
        raise ValueError("Sigma = X^T X / n is singular; the limit needs Sigma invertible")
    inv2 = (V**2) @ (1.0 / s**2)  # diagonal of Sigma^{-2}
    c4 = math.sqrt(2.0 / (m - 1)) * math.exp(math.lgamma(m / 2) - math.lgamma((m - 1) / 2))
    return 2.0 * t_quantile(alpha, m) * c4 * clip / n * math.sqrt(2.0 / rho) * np.sqrt(inv2)
