r"""Covariance of the Noisy-FTRL noise process (paper Lemma D.12).

Choquette-Choo et al. (2023), App. D.3, Lemma D.12: the process
:math:`\tilde\theta'_t = \tilde\theta_t - \theta^\star` of Noisy-FTRL started at
:math:`\theta^\star` (only label noise and correlated DP noise move it) has a covariance
:math:`S_t = \mathbb E[\tilde\theta'_t\otimes\tilde\theta'_t]` that (a) is non-decreasing,
:math:`S_t \preceq S_{t+1}`, and (b) converges; its proof bounds it uniformly,

.. math::

    \mathrm{Tr}[S_{t+1}] \le (1-\eta\mu)\mathrm{Tr}[S_t] + 2\eta\sigma^2\|\beta\|_2^2
    \mathrm{Tr}[H^{-1}] + \eta^2R^2\sigma_{sgd}^2, \qquad
    \mathrm{Tr}[S_t] \le \frac1\mu\big(2\sigma^2\|\beta\|_2^2\mathrm{Tr}[H^{-1}]
    + \eta R^2\sigma_{sgd}^2\big).

:func:`lemma_d12_covariance` computes :math:`S_t` exactly for Gaussian inputs from the
proof's recursion (83); :func:`lemma_d12_trace_bound` is the trace bound. Noise
:math:`w_t \sim \mathcal N(0, \sigma^2I)`, :math:`H = \mathrm{diag}(\lambda)`,
:math:`R^2 = \mathrm{Tr}H + 2\lambda_{\max}`, :math:`\eta \le 1/R^2`.
"""

from __future__ import annotations

import math

import numpy as np

from dpreg.theory.ftrl import _eigs, gaussian_kurtosis_constants

__all__ = ["lemma_d12_covariance", "lemma_d12_trace_bound"]


def _inputs(beta, eigenvalues, eta, sigma, sigma_sgd):
    b = np.asarray(beta, dtype=np.float64).ravel()
    if b.size == 0 or not np.all(np.isfinite(b)):
        raise ValueError("beta must be a non-empty vector of finite numbers")
    lam = _eigs(eigenvalues)
    eta_f = float(eta)
    if not (eta_f > 0) or math.isinf(eta_f):
        raise ValueError(f"eta must be a finite number > 0; got {eta!r}")
    r2, _ = gaussian_kurtosis_constants(lam)
    if eta_f * r2 > 1.0:
        raise ValueError(f"eta must be <= 1/R^2 = {1.0 / r2:.6g} (Lemma D.12); got eta={eta!r}")
    out = []
    for value, name in ((sigma, "sigma"), (sigma_sgd, "sigma_sgd")):
        v = float(value)
        if not (v >= 0) or math.isinf(v):
            raise ValueError(f"{name} must be a finite number >= 0; got {value!r}")
        out.append(v)
    return b, lam, eta_f, r2, out[0], out[1]


def _steps(t: object) -> np.ndarray:
    arr = np.atleast_1d(np.asarray(t))
    if arr.size == 0 or arr.dtype.kind not in "iu" or np.any(arr < 0):
        raise ValueError(f"t must hold integers >= 0; got {t!r}")
    return arr.astype(np.int64)


def lemma_d12_covariance(
    beta: np.ndarray,
    eigenvalues: np.ndarray,
    eta: float,
    t: int | np.ndarray,
    *,
    sigma: float,
    sigma_sgd: float = 0.0,
) -> np.ndarray:
    r"""Exact :math:`\mathrm{diag}(S_t)` of Lemma D.12 for Gaussian inputs.

    The proof's recursion (83),

    .. math::

        S_{t+1} = \mathcal PS_t + \eta^2\sigma_{sgd}^2H + \eta^2\sigma^2N_t,\qquad
        N_t = \sum_{\tau, k\le t}\beta_\tau\beta_k(I - \eta H)^{|\tau-k|},

    :math:`S_0 = 0`, with :math:`\mathcal PM = \mathbb E[(I - \eta xx^\top)M(I - \eta
    xx^\top)]`; for :math:`x \sim \mathcal N(0, H)` and diagonal M (Isserlis),
    :math:`(\mathcal PM)_{jj} = (1 - 2\eta\lambda_j + 2\eta^2\lambda_j^2)M_{jj} +
    \eta^2\lambda_j\langle\lambda, \mathrm{diag}M\rangle`. :math:`S_t` stays diagonal (the
    law is invariant under coordinate sign flips). :math:`N_t` is updated in
    :math:`O(d)` per step, so the cost is :math:`O(td)`.
    :math:`F(\tilde\theta_t) - F^\star` has mean :math:`\frac12\langle\lambda,
    \mathrm{diag}S_t\rangle`.

    Parameters
    ----------
    beta : array_like
        Noise coefficients; missing ones are 0.
    eigenvalues : array_like
        Spectrum of :math:`H`.
    eta : float
        Learning rate in :math:`(0, 1/R^2]`.
    t : int or array_like of int
        Steps :math:`\ge 0`.
    sigma : float
        DP noise standard deviation per coordinate.
    sigma_sgd : float
        Label-noise standard deviation.

    Returns
    -------
    ndarray, shape (len(t), d)

    Examples
    --------
    :math:`S_1 = \eta^2(\sigma_{sgd}^2H + \sigma^2\beta_0^2I)`:

    >>> lemma_d12_covariance([1.0], [1.0, 0.5], 0.1, [0, 1], sigma=1.0, sigma_sgd=1.0)
    array([[0.   , 0.   ],
           [0.02 , 0.015]])
    """
    b, lam, eta, _, sig, s = _inputs(beta, eigenvalues, eta, sigma, sigma_sgd)
    steps = _steps(t)
    tmax = int(steps.max())
    a = 1.0 - eta * lam
    contraction = 1.0 - 2.0 * eta * lam + 2.0 * eta**2 * lam**2
    cov = np.zeros(lam.size)
    n_acc = np.zeros(lam.size)  # N_{t}
    c_acc = np.zeros(lam.size)  # sum_{k<t} beta_k a^{t-k}
    history = np.empty((tmax + 1, lam.size))
    history[0] = cov
    for step in range(tmax):
        bt = b[step] if step < b.size else 0.0
        if step > 0:
            prev = b[step - 1] if step - 1 < b.size else 0.0
            c_acc = a * (c_acc + prev)
        n_acc = n_acc + bt * bt + 2.0 * bt * c_acc
        cov = contraction * cov + eta**2 * lam * float(lam @ cov)
        cov = cov + eta**2 * (s * s * lam + sig * sig * n_acc)
        history[step + 1] = cov
    return history[steps]


def lemma_d12_trace_bound(
    beta: np.ndarray,
    eigenvalues: np.ndarray,
    eta: float,
    t: int | float | np.ndarray,
    *,
    sigma: float,
    sigma_sgd: float = 0.0,
) -> np.ndarray:
    r"""Trace bound of Lemma D.12's proof, :math:`\mathrm{Tr}[S_t] \le U_t`.

    Unrolling :math:`\mathrm{Tr}S_{s+1} \le (1-\eta\mu)\mathrm{Tr}S_s + c_s` from
    :math:`S_0 = 0`,

    .. math::

        U_t = \sum_{s<t}(1-\eta\mu)^{t-1-s}c_s,\qquad
        c_s = 2\eta\sigma^2\|\beta_{0:s}\|_2^2\mathrm{Tr}[H^{-1}] + \eta^2R^2\sigma_{sgd}^2

    (:math:`\|\beta_{0:s}\|_2` the norm of the coefficients used up to step s, at most
    :math:`\|\beta\|_2`; Lemma F.17 bounds the noise term). ``t = inf`` gives the paper's
    uniform bound :math:`\frac1\mu(2\sigma^2\|\beta\|_2^2\mathrm{Tr}[H^{-1}] + \eta R^2
    \sigma_{sgd}^2)` with :math:`\|\beta\|_2` over the given coefficients.

    Parameters
    ----------
    beta, eigenvalues, eta, sigma, sigma_sgd
        As :func:`lemma_d12_covariance`.
    t : int, float('inf') or array_like
        Steps :math:`\ge 0` (integers), or ``inf``.

    Returns
    -------
    ndarray
        :math:`U_t` per step.

    Examples
    --------
    >>> lemma_d12_trace_bound([1.0], [1.0], 0.1, [0, 1, float("inf")], sigma=1.0).tolist()
    [0.0, 0.2, 2.0]
    """
    b, lam, eta, r2, sig, s = _inputs(beta, eigenvalues, eta, sigma, sigma_sgd)
    arr = np.atleast_1d(np.asarray(t, dtype=np.float64))
    finite = np.isfinite(arr)
    if arr.size == 0 or np.any(arr < 0) or np.any(arr[finite] != np.floor(arr[finite])):
        raise ValueError(f"t must hold integers >= 0 or inf; got {t!r}")
    mu = float(lam.min())
    tr_inv = float((1.0 / lam).sum())
    out = np.empty(arr.size)
    uniform = (2.0 * sig * sig * float(b @ b) * tr_inv + eta * r2 * s * s) / mu
    out[~finite] = uniform
    if np.any(finite):
        tmax = int(arr[finite].max())
        prefix = np.cumsum(np.concatenate([b, np.zeros(max(tmax - b.size, 0))])[:tmax] ** 2)
        c = 2.0 * eta * sig * sig * prefix * tr_inv + eta**2 * r2 * s * s
        a = 1.0 - eta * mu
        u = np.zeros(tmax + 1)
        for step in range(tmax):
            u[step + 1] = a * u[step] + c[step]
        out[finite] = u[arr[finite].astype(np.int64)]
    return out
