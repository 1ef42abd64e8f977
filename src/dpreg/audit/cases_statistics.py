"""Audit cases of the sufficient-statistics and sketch estimators: AdaSSP, IHM, sketches.

These estimators return a post-processing (a solve) of their Gaussian releases, so each
case intercepts the release itself while the estimator runs (:func:`recording`: the
module attribute that produces it is wrapped for the duration of one call and restored).
That is the mechanism's own output, the object its privacy proof is about
(docs/privacy.md, "Empirical privacy audit"). Neighbours are zero-out (Lev et al. 2026,
§2): D holds a zero row that D' replaces by a canary at the public bounds, along a
direction (e1) that the rest of D leaves empty.

* ``adassp``: the three noisy statistics; score sum_j obs_j / Delta_j over lambda_min,
  (X'X)_11 and (X'y)_1, which the canary moves by their full sensitivities. Gaussian.
* ``ihm`` (T = 1): the noisy gradient ``G = H theta_1`` recovered with the intercepted
  sketch Hessian H; score G_1. Gaussian; the claim is the gradient half of the budget,
  (epsilon/2, delta/4), which Lev et al. (2026, App. C.1.1, eq. 41) and
  :func:`dpreg.estimators.ihm.ihm_sigma` assign to the T gradient releases.
* ``linear_mixing``, ``sheffet_sketch``: the sketch's Gram matrix M; score u'Mu along the
  canary's (normalised) row u: a scaled chi-square with k degrees of freedom, eta^2 on D
  and eta^2 + 1 on D'. Not Gaussian: threshold test.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

import numpy as np

from dpreg.audit.core import AuditCase
from dpreg.privacy.budgets import ApproxDP

__all__ = ["cases", "recording"]


@contextmanager
def recording(module: ModuleType, name: str) -> Iterator[list[Any]]:
    """Record every value ``module.name(...)`` returns inside the ``with`` block.

    Examples
    --------
    >>> import math
    >>> with recording(math, "sqrt") as seen:
    ...     _ = math.sqrt(4.0)
    >>> seen
    [2.0]
    """
    real = getattr(module, name)
    seen: list[Any] = []

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        out = real(*args, **kwargs)
        seen.append(out)
        return out

    setattr(module, name, wrapper)
    try:
        yield seen
    finally:
        setattr(module, name, real)


def _estimator(name: str) -> Callable[..., Any]:
    from dpreg.estimators import get_estimator

    return get_estimator(name)


_N = 30


def _design(side: int, y_canary: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Rows along e2 (eigenvalue 2 there) with y = 0; row 0 zero (D) or (e1, y_canary) (D')."""
    X = np.zeros((_N, 2))
    X[1:, 1] = np.where(np.arange(1, _N) % 2, 1.0, -1.0) * math.sqrt(2.0 / (_N - 1))
    y = np.zeros(_N)
    if side:
        X[0, 0], y[0] = 1.0, y_canary
    return X, y


def _adassp_scores(budget: ApproxDP) -> Callable[..., np.ndarray]:
    import dpreg.estimators.adassp as module

    def scores(trials: int, rng: np.random.Generator, side: int) -> np.ndarray:
        X, y = _design(side)
        with recording(module, "release_sufficient_statistics") as seen:
            _estimator("adassp")(
                X, y, budget=budget, rng=rng, trials=trials, bound_X=1.0, bound_y=1.0
            )
        stats = seen[0]
        # sensitivities (C_X^2, C_X^2, C_X C_Y) = (1, 1, 1) with unit bounds
        return stats.lambda_min + stats.xtx[:, 0, 0] + stats.xty[:, 0]

    return scores


def _ihm_scores(budget: ApproxDP, clip: float) -> Callable[..., np.ndarray]:
    import dpreg.estimators.ihm as module

    def scores(trials: int, rng: np.random.Generator, side: int) -> np.ndarray:
        X, y = _design(side)
        with recording(module, "sample_sketch_gram") as seen:
            fit = _estimator("ihm")(X, y, budget=budget, rng=rng, trials=trials, T=1, clip=clip)
        H = seen[0]  # divided by k in place by the estimator: the Hessian it solves with
        grad = np.einsum("tij,tj->ti", H, fit.path[:, 0, :])
        return grad[:, 0]

    return scores


def _sketch_scores(name: str, budget: ApproxDP) -> Callable[..., np.ndarray]:
    import dpreg.estimators.sketch as module

    u = np.array([1.0, 0.0, 1.0]) / math.sqrt(2.0)  # the canary (e1, 1) / sqrt(C_X^2 + C_Y^2)

    def scores(trials: int, rng: np.random.Generator, side: int) -> np.ndarray:
        X, y = _design(side)
        with recording(module, "sketch_gram") as seen:
            _estimator(name)(X, y, budget=budget, rng=rng, trials=trials)
        M = seen[-1]
        return np.einsum("i,tij,j->t", u, M, u)

    return scores


def cases(*, epsilon: float = 1.0, delta: float = 1e-5) -> list[AuditCase]:
    """Audit cases of AdaSSP, IHM, linear mixing and Sheffet's sketch at (epsilon, delta)."""
    budget = ApproxDP(epsilon, delta)
    ihm_clip = 0.5
    return [
        AuditCase(
            "adassp", "e1-row", "zero_out", budget, delta, _adassp_scores(budget), True,
            f"n={_N}, d=2: D' adds (e1, 1) where D is empty; score: the noisy lambda_min,"
            " (X'X)_11 and (X'y)_1 summed (each moved by its full sensitivity)",
        ),
        AuditCase(
            "ihm", "e1-row-gradient", "zero_out",
            ApproxDP(epsilon / 2.0, delta / 4.0), delta / 4.0,
            _ihm_scores(budget, ihm_clip), True,
            f"T=1, clip={ihm_clip}: D' adds (e1, 1); score: the noisy gradient along e1"
            " recovered as H theta_1; claim: the gradient half (epsilon/2, delta/4)",
        ),
        AuditCase(
            "linear_mixing", "e1-row-sketch", "zero_out", budget, delta,
            _sketch_scores("linear_mixing", budget), False,
            "D' adds (e1, 1) where D is empty; score: the sketch Gram along the canary row",
        ),
        AuditCase(
            "sheffet_sketch", "e1-row-sketch", "zero_out", budget, delta,
            _sketch_scores("sheffet_sketch", budget), False,
            "D' adds (e1, 1) where D is empty; score: the sketch Gram along the canary row",
        ),
    ]  # fmt: skip
