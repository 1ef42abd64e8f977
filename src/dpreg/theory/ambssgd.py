r"""Risk bounds and reference rates of Varshney, Thakurta & Jain (2022).

Closed forms for Gaussian design :math:`x\sim N(0, H)`, :math:`H = \mathrm{diag}(\lambda)`,
independent noise :math:`z\sim N(0,\sigma^2)` (docs/notes/varshney2022.md §4.2):
:math:`\Sigma = \sigma^2 H`, so :math:`\mathrm{Tr}(H^{-1}\Sigma) = \sigma^2 d`,
:math:`\mathrm{Tr}(H\Sigma) = \sigma^2\sum\lambda_i^2` and
:math:`\|\Sigma + cI\|_H = \sigma^2 + c/\mu`. Every function
takes the eigenvalues of H and returns the excess population risk bound
:math:`\mathcal L(\bar w) - \mathcal L(w^*)`. Natural logarithms throughout.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = [
    "cai_rate",
    "dp_stat_gamma",
    "existing_rate",
    "headline_rate",
    "lemma_3_5_bound",
    "lemma_3_11_bound",
    "lemma_3_11_batch_condition",
    "lemma_3_11_crossover",
    "lower_bound_rate",
    "ols_expected_excess",
    "theorem_3_2_rate",
    "theorem_3_7_layout",
    "theorem_3_7_rate",
]


def _eig(H_eigenvalues: Sequence[float] | np.ndarray) -> np.ndarray:
    lam = np.asarray(H_eigenvalues, dtype=np.float64)
    if lam.ndim != 1 or lam.size == 0 or np.any(~(lam > 0)):
        raise ValueError("H_eigenvalues must be a non-empty vector of positive numbers")
    return lam


def headline_rate(sigma, d, n, epsilon):
    r"""Abstract / Cor. 3.8 shape without logs.

    :math:`\frac{\sigma^2d}{N}(1 + \frac{d}{\varepsilon^2N})`.
    """
    sigma, d, n, epsilon = map(np.asarray, (sigma, d, n, epsilon))
    return sigma**2 * d / n * (1.0 + d / (epsilon**2 * n))


def lower_bound_rate(sigma, d, n, epsilon):
    r"""Cai, Wang & Zhang (2021) lower bound.

    :math:`\frac{\sigma^2d}{N} + \frac{\sigma^2d^2}{\varepsilon^2N^2}`.
    """
    sigma, d, n, epsilon = map(np.asarray, (sigma, d, n, epsilon))
    return sigma**2 * d / n + sigma**2 * d**2 / (epsilon**2 * n**2)


def existing_rate(d, n, epsilon, w_star_norm=1.0, sigma=0.0):
    r"""Privacy term of "existing efficient methods": :math:`\frac{d^3\|w^*\|^2}{\varepsilon^2N^2}`.

    Plus the statistical term :math:`\sigma^2d/N` (abstract; Remark ii of Thm 3.2).
    """
    d, n, epsilon = map(np.asarray, (d, n, epsilon))
    return sigma**2 * d / n + d**3 * w_star_norm**2 / (epsilon**2 * n**2)


def cai_rate(sigma, d, n, epsilon, w_star_H_norm=1.0):
    r"""Cai et al. (2021) upper bound.

    :math:`\frac{\sigma^2d}{N} + \frac{(d\|w^*\|_H^2+\sigma^2)d^2}{\varepsilon^2N^2}`.
    """
    sigma, d, n, epsilon = map(np.asarray, (sigma, d, n, epsilon))
    return sigma**2 * d / n + (d * w_star_H_norm**2 + sigma**2) * d**2 / (epsilon**2 * n**2)


def ols_expected_excess(sigma, d, n):
    r"""Exact OLS excess risk for Gaussian design.

    :math:`E[\frac12\|\hat w_{OLS} - w^*\|_H^2] = \frac{\sigma^2 d}{2(N-d-1)}`.
    """
    sigma, d, n = map(np.asarray, (sigma, d, n))
    return sigma**2 * d / (2.0 * (n - d - 1))


def theorem_3_7_rate(sigma, d, n, epsilon, delta, kappa=1.0, w_star_H_norm=1.0, constant=1.0):
    r"""Theorem 3.7 with the :math:`\widetilde O` constant explicit.

    :math:`\frac{\|w^*\|_H^2}{N^{100}} + \frac{8\sigma^2d}{N} + C\frac{\sigma^2\kappa^2d^2
    \ln(1/\delta)}{\varepsilon^2N^2}`.
    """
    sigma, d, n, epsilon = map(np.asarray, (sigma, d, n, epsilon))
    log_inv = math.log(1.0 / delta)
    return (
        w_star_H_norm**2 * np.exp(-100.0 * np.log(n))  # N^-100 without overflow
        + 8.0 * sigma**2 * d / n
        + constant * sigma**2 * kappa**2 * d**2 * log_inv / (epsilon**2 * n**2)
    )


def theorem_3_2_rate(
    sigma, d, n, epsilon, delta, *, H_eigenvalues, w_star_H_norm=1.0, K2=1.0, a=0.5, c=1.0
):
    r"""Eq. (6) of Theorem 3.2 (DP-SSGD), without the exponentially small first term.

    :math:`\frac{2\sigma^2d}{N} + \frac{128\,dR_x^2K_2^2\kappa\ln^{4a}N(\|w^*\|_H^2+\sigma^2)
    \ln^2(N/\delta)}{\mu\varepsilon^2N^2}`.
    """
    lam = _eig(H_eigenvalues)
    mu, kappa = lam.min(), lam.max() / lam.min()
    rx2 = lam.sum() + 2 * lam.max()
    n = np.asarray(n, dtype=np.float64)
    priv = (
        128.0
        * d
        * rx2
        * K2**2
        * kappa
        * np.log(n) ** (4 * a)
        * (w_star_H_norm**2 + sigma**2)
        * np.log(n / delta) ** 2
        / (mu * np.asarray(epsilon) ** 2 * n**2)
    )
    return 2.0 * sigma**2 * d / n + c * priv


def lemma_3_5_bound(
    *, H_eigenvalues, sigma, w_star_norm, n, eta, clip, noise_multiplier, x_norm_sq=None
):
    r"""Lemma 3.5 (DP-SSGD, no-clipping event, :math:`\eta\le 1/(2R_x^2)`).

    .. math::
        \frac{R_x^2}{2}e^{-\eta\mu(N/2+1)}\|w^*\|^2
        + \frac1N\frac{\eta R_x^2}{1-\eta R_x^2}d\,\|\Sigma + 4\zeta^2\alpha^2I\|_H
        + \frac1N\mathrm{Tr}(H^{-1}(\Sigma + 4\zeta^2\alpha^2I)).
    """
    lam = _eig(H_eigenvalues)
    d, mu = lam.size, lam.min()
    rx2 = lam.sum() + 2 * lam.max() if x_norm_sq is None else x_norm_sq
    if not eta * rx2 < 1:
        raise ValueError(
            f"Lemma 3.5 needs eta * R_x^2 < 1 (it assumes <= 1/2); got {eta * rx2:.3g}"
        )
    c = 4.0 * clip**2 * noise_multiplier**2
    n = np.asarray(n, dtype=np.float64)
    bias = rx2 / 2.0 * np.exp(-eta * mu * (n / 2 + 1)) * w_star_norm**2
    var1 = eta * rx2 / (1 - eta * rx2) * d * (sigma**2 + c / mu) / n
    var2 = (sigma**2 * d + c * np.sum(1.0 / lam)) / n
    return bias + var1 + var2


def lemma_3_11_batch_condition(*, H_eigenvalues, b, eta, noise_multiplier, n, K2=1.0, a=0.5):
    r"""Lemma 3.11's batch condition as a ratio (the lemma needs it >= 1).

    :math:`b^2 / (24\eta\alpha^2R_x^2K_2^2\kappa\ln^{4a}N\,\mathrm{Tr}H/\mu)`, with
    :math:`b = N/T - s`.
    """
    lam = _eig(H_eigenvalues)
    mu, kappa = lam.min(), lam.max() / lam.min()
    rx2 = lam.sum() + 2 * lam.max()
    need = 24 * eta * noise_multiplier**2 * rx2 * K2**2 * kappa * math.log(n) ** (4 * a)
    return b**2 / (need * lam.sum() / mu)


def lemma_3_11_bound(
    *,
    H_eigenvalues,
    sigma,
    w_star_H_norm,
    n,
    T,
    b,
    eta,
    noise_multiplier,
    c1,
    K2=1.0,
    a=0.5,
    Delta=0.0,
):
    r"""Lemma 3.11 (DP-AMBSSGD, no-clipping event), fully explicit.

    .. math::
        \Big(\frac{4e^{-\eta\mu}}{\eta^2\mu^2T^2} + \frac{96\alpha^2}{Tb^2}K_2^2R_x^2\kappa
        \ln^{4a}N\,\mathrm{Tr}(H^{-1})\Big)
        \Big(\frac{\|w^*\|_H^2}{N^{\eta\mu c_1\kappa/4}} + \frac{2\eta}{\mu b}
        \mathrm{Tr}(H\Sigma) + \frac{24\eta\alpha^2}{\mu b^2}K_2^2R_x^2\ln^{4a}N
        (\sigma^2+\Delta^2)\mathrm{Tr}(H)\Big)
        + \frac{8}{Tb}\Big(\mathrm{Tr}(H^{-1}\Sigma) + \frac{12\alpha^2}{b}K_2^2R_x^2
        \ln^{4a}N(\sigma^2+\Delta^2)\mathrm{Tr}(H^{-1})\Big).
    """
    lam = _eig(H_eigenvalues)
    d, mu = lam.size, lam.min()
    kappa = lam.max() / mu
    rx2 = lam.sum() + 2 * lam.max()
    L4 = math.log(n) ** (4 * a)
    al2 = noise_multiplier**2
    tr_inv, tr_h = np.sum(1 / lam), lam.sum()
    first = (
        4 * math.exp(-eta * mu) / (eta**2 * mu**2 * T**2)
        + 96 * al2 / (T * b**2) * K2**2 * rx2 * kappa * L4 * tr_inv
    )
    second = (
        w_star_H_norm**2 / n ** (eta * mu * c1 * kappa / 4)
        + 2 * eta / (mu * b) * sigma**2 * np.sum(lam**2)
        + 24 * eta * al2 / (mu * b**2) * K2**2 * rx2 * L4 * (sigma**2 + Delta**2) * tr_h
    )
    third = (
        8
        / (T * b)
        * (sigma**2 * d + 12 * al2 / b * K2**2 * rx2 * L4 * (sigma**2 + Delta**2) * tr_inv)
    )
    return first * second + third


def dp_stat_gamma(noise_multiplier, n_queries, beta):
    r"""Lemma 3.10's count slack.

    :math:`\Gamma = \alpha\sqrt{2\ln(B/\Delta)\ln(\ln(B/\Delta)/\beta)}` with
    :math:`B/\Delta = 2^K`.
    """
    log_ratio = n_queries * math.log(2.0)
    return noise_multiplier * math.sqrt(2 * log_ratio * math.log(log_ratio / beta))


def theorem_3_7_layout(n, *, kappa=1.0, c1=1.0):
    r"""Theorem 3.7's block layout at N rows: ``(T, s, b)``.

    :math:`T = \lceil c_1\kappa\ln N\rceil`, :math:`b + s = \lfloor N/T\rfloor`,
    :math:`s = \lfloor (b+s)/11\rfloor` (:math:`s = b/10`), as the estimator uses.
    """
    T = max(1, math.ceil(c1 * kappa * math.log(n)))
    m = int(n) // T
    s = m // 11
    return T, s, m - s


def lemma_3_11_crossover(
    *, H_eigenvalues, sigma, noise_multiplier, w_star_H_norm=1.0, c1=1.0, K2=1.0, a=0.5,
    n_min=1e3, n_max=1e16, per_decade=100,
):  # fmt: skip
    r"""Where Theorem 3.7's explicit form (Lemma 3.11) stops being privacy-dominated.

    On a log grid of N (``per_decade`` points per decade) with Theorem 3.7's layout
    (:func:`theorem_3_7_layout`) and step :math:`\eta = b/(R_x^2 + (b-1)\|H\|)`:

    * ``n_batch``: the smallest N from which on Lemma 3.11's batch condition
      (:func:`lemma_3_11_batch_condition`) holds;
    * ``n_privacy``: the smallest N from which on the privacy part of the bound,
      ``lemma_3_11_bound(alpha) - lemma_3_11_bound(0)``, is at most
      :math:`\sigma^2 d/N`.

    Returns
    -------
    dict
        ``n_batch``, ``n_privacy`` (``inf`` if not reached below ``n_max``) and the ratio
        privacy part / (sigma^2 d / N) at ``n_min`` (``ratio_at_n_min``).
    """
    lam = _eig(H_eigenvalues)
    d = lam.size
    rx2 = lam.sum() + 2 * lam.max()
    grid = np.logspace(
        math.log10(n_min), math.log10(n_max), int(per_decade * math.log10(n_max / n_min)) + 1
    )
    batch_ok, priv_ok, ratios = [], [], []
    for n in grid:
        T, _, b = theorem_3_7_layout(n, kappa=lam.max() / lam.min(), c1=c1)
        eta = b / (rx2 + (b - 1) * lam.max())
        kw = dict(H_eigenvalues=lam, sigma=sigma, w_star_H_norm=w_star_H_norm, n=n, T=T, b=b,
                  eta=eta, c1=c1, K2=K2, a=a)  # fmt: skip
        part = lemma_3_11_bound(noise_multiplier=noise_multiplier, **kw) - lemma_3_11_bound(
            noise_multiplier=0.0, **kw
        )
        ratio = float(part / (sigma**2 * d / n))
        ratios.append(ratio)
        priv_ok.append(ratio <= 1.0)
        batch_ok.append(
            lemma_3_11_batch_condition(
                H_eigenvalues=lam, b=b, eta=eta, noise_multiplier=noise_multiplier, n=n, K2=K2, a=a
            )
            >= 1.0
        )

    def first_from_on(ok: list[bool]) -> float:
        ok = np.asarray(ok)
        if not ok[-1]:
            return math.inf
        bad = np.flatnonzero(~ok)
        return float(grid[0] if bad.size == 0 else grid[bad[-1] + 1])

    return {
        "n_batch": first_from_on(batch_ok),
        "n_privacy": first_from_on(priv_ok),
        "ratio_at_n_min": ratios[0],
    }
