r"""Noise calibration of DP-FTRL with correlated noise (Choquette-Choo et al. 2023, Thm 1.1).

DP-FTRL releases the iterates of :math:`\theta_{t+1} = \theta_t - \eta(g_t + (Bw)_t)`,
:math:`w_t \sim \mathcal N(0, \sigma_{dp}^2 G^2 I_d)`, :math:`g_t` clipped to norm
:math:`G`. Writing :math:`C = B^{-1}` (the encoder), the iterates are post-processing
of the single Gaussian mechanism :math:`C\,(g_0; \dots; g_{T-1}) + (w_0; \dots;
w_{T-1})` (App. A.1, Eq. 11). Under zero-out neighbours (one gradient of the stream
replaced by the zero vector; App. A.2) its L2 sensitivity is :math:`G\,\gamma_T(B)`
with :math:`\gamma_T(B) = \max_t \|C_{:,t}\|_2` (Theorem 1.1; Denisov et al. 2022 show
that adaptively chosen streams are no worse). Hence

* :math:`\rho`-zCDP with :math:`\sigma_{dp} = \gamma_T / \sqrt{2\rho}` (Bun & Steinke
  2016, Prop. 1.6) -- :func:`ftrl_noise_multiplier` with a :class:`ZCDP` budget;
* :math:`(\varepsilon, \delta)`-DP either through zCDP and the conversion of App. A.2
  (``method="zcdp"``, the paper's route; Canonne, Kamath & Steinke 2020, Cor. 13) or
  exactly with the analytic Gaussian mechanism (``method="analytic"``; Balle & Wang
  2018, Thm 8), valid because the whole release is one Gaussian mechanism.

``sensitivity`` below is :math:`\gamma` (in units of the clip norm :math:`G`), the
*noise multiplier* :math:`\sigma_{dp}` is the standard deviation of :math:`w_t` per
unit of :math:`G` (the paper's unit). Replace-one neighbours double the sensitivity
(``neighbours="replace_one"``).
"""

from __future__ import annotations

import math

import numpy as np

from dpreg._validation import check_budget, check_choice, check_positive
from dpreg.privacy.budgets import ZCDP, ApproxDP, Budget
from dpreg.privacy.conversions import CONVERSIONS, DEFAULT_CONVERSION, eps_to_zcdp, zcdp_to_eps
from dpreg.privacy.gaussian import analytic_gaussian_sigma, gaussian_epsilon

__all__ = [
    "CALIBRATIONS",
    "NEIGHBOURS",
    "ftrl_epsilon",
    "ftrl_noise_multiplier",
    "ftrl_zcdp",
    "matrix_sensitivity",
    "multi_participation_sensitivity_sq",
]

CALIBRATIONS: tuple[str, ...] = ("zcdp", "analytic")
"""``"zcdp"``: via rho-zCDP (paper, App. A.2); ``"analytic"``: exact Gaussian profile."""

NEIGHBOURS: tuple[str, ...] = ("zero_out", "replace_one")
"""Zero-out (the paper's relation, App. A.2) or replace-one (sensitivity doubles)."""


def _neighbour_factor(neighbours: str) -> float:
    check_choice(neighbours, "neighbours", NEIGHBOURS)
    return 1.0 if neighbours == "zero_out" else 2.0


def ftrl_noise_multiplier(
    budget: Budget,
    sensitivity: float,
    *,
    method: str = "zcdp",
    conversion: str = DEFAULT_CONVERSION,
    neighbours: str = "zero_out",
) -> float:
    r"""Noise multiplier :math:`\sigma_{dp}` of DP-FTRL for a budget (Theorem 1.1).

    Parameters
    ----------
    budget : ZCDP or ApproxDP
        Target guarantee for the released iterates (one participation per example).
    sensitivity : float
        :math:`\gamma = \gamma_T(B)` (or :math:`\gamma_\infty` for an anytime
        guarantee), the largest column norm of the encoder :math:`B^{-1}`, > 0.
    method : {"zcdp", "analytic"}
        For an :class:`ApproxDP` budget: ``"zcdp"`` converts to the largest
        :math:`\rho` whose zCDP guarantee gives :math:`(\varepsilon,\delta)` (with
        ``conversion``) and uses :math:`\gamma/\sqrt{2\rho}`; ``"analytic"`` uses the
        analytic Gaussian mechanism (never larger). Ignored for a :class:`ZCDP` budget.
    conversion : {"tight", "simple"}
        zCDP to approximate-DP conversion for ``method="zcdp"``.
    neighbours : {"zero_out", "replace_one"}
        Neighbouring relation; ``"replace_one"`` doubles the sensitivity.

    Returns
    -------
    float
        :math:`\sigma_{dp}` (0 for an infinite budget).

    Raises
    ------
    TypeError
        If ``budget`` is not a budget.
    ValueError
        For a non-positive sensitivity or an unknown option.
    """
    check_budget(budget)
    gamma = check_positive(sensitivity, "sensitivity") * _neighbour_factor(neighbours)
    check_choice(method, "method", CALIBRATIONS)
    check_choice(conversion, "conversion", CONVERSIONS)
    if budget.is_infinite:
        return 0.0
    if isinstance(budget, ZCDP):
        return gamma / math.sqrt(2.0 * budget.rho)
    if method == "analytic":
        return float(analytic_gaussian_sigma(budget.epsilon, budget.delta, gamma))
    rho = eps_to_zcdp(budget.epsilon, budget.delta, conversion)
    return gamma / math.sqrt(2.0 * rho)


def ftrl_zcdp(noise_multiplier: float, sensitivity: float, neighbours: str = "zero_out") -> ZCDP:
    r"""Return the :math:`\rho`-zCDP of DP-FTRL: :math:`\rho = \gamma^2 / (2\sigma_{dp}^2)`.

    Parameters
    ----------
    noise_multiplier : float
        :math:`\sigma_{dp} > 0`.
    sensitivity : float
        :math:`\gamma > 0`.
    neighbours : {"zero_out", "replace_one"}

    Returns
    -------
    ZCDP
    """
    sigma = check_positive(noise_multiplier, "noise_multiplier")
    gamma = check_positive(sensitivity, "sensitivity") * _neighbour_factor(neighbours)
    return ZCDP(gamma * gamma / (2.0 * sigma * sigma))


def ftrl_epsilon(
    noise_multiplier: float,
    sensitivity: float,
    delta: float,
    *,
    method: str = "zcdp",
    conversion: str = DEFAULT_CONVERSION,
    neighbours: str = "zero_out",
) -> ApproxDP:
    r"""Return the :math:`(\varepsilon, \delta)`-DP of DP-FTRL at ``delta``.

    ``method="zcdp"``: :func:`ftrl_zcdp` converted with ``conversion``;
    ``"analytic"``: the smallest :math:`\varepsilon` with the exact Gaussian profile
    (Balle & Wang 2018, Thm 8) at most ``delta``
    (:func:`dpreg.privacy.gaussian.gaussian_epsilon`).

    Returns
    -------
    ApproxDP
    """
    sigma = check_positive(noise_multiplier, "noise_multiplier")
    gamma = check_positive(sensitivity, "sensitivity") * _neighbour_factor(neighbours)
    check_choice(method, "method", CALIBRATIONS)
    if method == "zcdp":
        rho = gamma * gamma / (2.0 * sigma * sigma)
        return ApproxDP(zcdp_to_eps(rho, delta, conversion), delta)
    return ApproxDP(float(gaussian_epsilon(sigma, delta, gamma)), delta)


def matrix_sensitivity(encoder: np.ndarray) -> float:
    r"""Single-participation sensitivity :math:`\max_t \|C_{:,t}\|_2` of any encoder matrix.

    Theorem 1.1 for a general (non-Toeplitz) factorisation, e.g. tree aggregation.

    Parameters
    ----------
    encoder : ndarray, shape (m, T)

    Returns
    -------
    float
    """
    C = np.asarray(encoder, dtype=np.float64)
    if C.ndim != 2 or not np.all(np.isfinite(C)):
        raise ValueError("encoder must be a finite 2-D array (m, T)")
    return float(np.sqrt(np.max(np.sum(C * C, axis=0))))


def multi_participation_sensitivity_sq(encoder_coeffs: np.ndarray, k: int, b: int) -> float:
    r"""Squared sensitivity of a Toeplitz encoder when an example participates ``k`` times.

    Not part of this paper (Theorem 1.1 covers one participation; notes §2.5): for a
    lower-triangular Toeplitz encoder with non-negative, non-increasing coefficients
    (true for ν-FTRL), participations at least ``b`` steps apart are worst when they
    sit at :math:`0, b, \dots, (k-1)b` (Kalinin & Lampert 2024, Thm 2), giving
    :math:`\|\sum_{j<k} C_{:, jb}\|_2^2`.

    Parameters
    ----------
    encoder_coeffs : ndarray, shape (T,)
        :math:`c_0, \dots, c_{T-1}`, non-negative and non-increasing.
    k, b : int
        Number of participations and minimum separation; :math:`(k-1)b < T`.

    Returns
    -------
    float
    """
    c = np.asarray(encoder_coeffs, dtype=np.float64).ravel()
    if c.size == 0 or np.any(c < 0) or np.any(np.diff(c) > 1e-15):
        raise ValueError("encoder_coeffs must be non-negative and non-increasing")
    if k < 1 or b < 1 or (k - 1) * b >= c.size:
        raise ValueError(f"need k >= 1, b >= 1 and (k - 1) b < T; got k={k}, b={b}, T={c.size}")
    col = np.zeros(c.size)
    for j in range(k):
        col[j * b :] += c[: c.size - j * b]
    return float(np.dot(col, col))
