r"""Audit cases of the private classifier ``dp_ftrl_logistic`` (a library function).

:func:`dpreg.estimators.ftrl_logistic.train_dp_ftrl_logistic` is not in the regression
registry (it returns class weights), so its cases carry the name ``"dp_ftrl_logistic"``.
Relation: **zero-out** (its documented one, Choquette-Choo et al. 2023 App. A.2): D' has a
canary row where D has the null row :math:`x = 0`, whose gradient is zero.

Design (white box, exactly Gaussian): one feature, two classes, two rows, full batch
(``batch_size = n = 2``), so every row is in every one of the :math:`T = E` steps (the
fixed-epoch pattern :math:`\{0, 1, \dots, E-1\}` at separation 1, the only pattern;
its sensitivity :math:`\gamma^2 = \|C\mathbf 1\|^2` is the trainer's own
multi-participation computation) and the trainer's random order does not matter. D: both
rows zero. D': row 0 is :math:`x = 100` with label 0. With two classes the canary's
gradient :math:`x(p - e_0)^\top = x(1 - p_0)(-1, 1)` always points along
:math:`u = (-1, 1)/\sqrt2`; its norm :math:`100\sqrt2(1 - p_0)` exceeds the clip
:math:`G = 1` as long as :math:`p_0 < 0.99`, i.e. :math:`|W_{0,0} - W_{0,1}| < 0.046`,
and the step :math:`\eta = 10^{-5}` keeps the weights at :math:`|W| \lesssim 10^{-3}`
even at :math:`\varepsilon = 0.5` (dozens of standard deviations inside), so every
participation moves the released gradient by exactly :math:`(G/b)u`. The score: the
auditor recovers each step's noisy mean gradient from the released path,
:math:`\hat g_t = -(W_{t+1} - W_t)/\eta` (on D it is pure noise), projects it on
:math:`u`, and whitens with the encoder, :math:`s = \hat g^\top C^\top C\mathbf 1`: the
likelihood-ratio statistic, whose standardised shift is :math:`\gamma/\sigma_{dp}`, the
claimed :math:`\mu` (docs/privacy.md, "Empirical privacy audit").
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from dpreg.audit.core import AuditCase
from dpreg.privacy.budgets import ZCDP

__all__ = ["CLASSIFIER", "cases"]

CLASSIFIER = "dp_ftrl_logistic"
"""Audit name of :func:`~dpreg.estimators.ftrl_logistic.train_dp_ftrl_logistic`."""

_EPOCHS, _CANARY, _CLIP, _ETA, _NU = 4, 100.0, 1.0, 1e-5, 0.2


def _gaussian_claim(epsilon: float, delta: float) -> ZCDP:
    from dpreg.audit.cases_iterative import gaussian_claim

    return gaussian_claim(epsilon, delta)


def _scores(claim: ZCDP, correlation: str) -> Callable[..., np.ndarray]:
    from dpreg.estimators.ftrl_correlations import correlation_from_name
    from dpreg.estimators.ftrl_logistic import train_dp_ftrl_logistic

    T = _EPOCHS
    corr = correlation_from_name(correlation, nu=_NU)
    coeffs = np.asarray(corr.coefficients(T), dtype=np.float64)
    B = np.zeros((T, T))  # noise_t = sum_tau beta_tau w_{t-tau}
    for lag, b in enumerate(coeffs):
        B += np.diag(np.full(T - lag, b), -lag)
    C = np.linalg.inv(B)
    weights = C.T @ C.sum(axis=1)  # the canary is in every step
    u = np.array([-1.0, 1.0]) / np.sqrt(2.0)

    def scores(trials: int, rng: np.random.Generator, side: int) -> np.ndarray:
        X = np.zeros((2, 1))
        labels = np.zeros(2, dtype=np.int64)
        if side:
            X[0, 0] = _CANARY
        fit = train_dp_ftrl_logistic(
            X, labels, n_classes=2, budget=claim, rng=rng, trials=trials, eta=_ETA,
            clip=_CLIP, correlation=correlation, nu=_NU, batch_size=2, epochs=_EPOCHS,
            return_path=True,
        )  # fmt: skip
        path = np.concatenate([np.zeros((trials, 1, 1, 2)), fit.path], axis=1)[:, :, 0, :]
        grads = -(path[:, 1:] - path[:, :-1]) / _ETA  # (trials, T, 2) mean gradients
        return (grads @ u) * (2 / _CLIP) @ weights

    return scores


def cases(*, epsilon: float = 1.0, delta: float = 1e-5) -> list[AuditCase]:
    """Audit cases of ``dp_ftrl_logistic`` (ν-DP-FTRL and DP-SGD noise) at the claim."""
    tight = _gaussian_claim(epsilon, delta)
    return [
        AuditCase(
            CLASSIFIER,
            f"canary-in-every-step-{correlation}",
            "zero_out",
            tight,
            delta,
            _scores(tight, correlation),
            True,
            f"{label}, 2 classes, full batch of 2 rows, {_EPOCHS} epochs (T={_EPOCHS}): D"
            f" both rows x = 0, D' row 0 x = {_CANARY:g} (gradient clipped to G along"
            " (-1, 1) in every step); score: encoder-whitened recovered gradients",
        )
        for correlation, label in (("nu_ftrl", f"nu-DP-FTRL (nu={_NU})"), ("sgd", "DP-SGD"))
    ]
