"""Result objects returned by every estimator (the estimator contract of DESIGN.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpreg.privacy.budgets import Budget


@dataclass(frozen=True)
class Fit:
    """The output of one estimator call, vectorised over independent trials.

    Attributes
    ----------
    theta : ndarray, shape (trials, d)
        Final estimate of each trial.
    budget_spent : Budget or None
        What the accountant certifies for one trial (each trial is an independent
        release on the same data; trials are repetitions for Monte Carlo, not a
        composition). ``None`` for non-private estimators.
    estimator : str
        Registry name of the estimator.
    path : ndarray, shape (trials, T, d), optional
        Iterates of iterative estimators.
    diagnostics : dict
        Noise scales, clip fractions, chosen hyperparameters. Arrays have a leading
        trials axis where they vary by trial.
    """

    theta: np.ndarray
    budget_spent: Budget | None
    estimator: str
    path: np.ndarray | None = None
    diagnostics: dict[str, Any] = field(default_factory=dict)

    @property
    def n_trials(self) -> int:
        """Number of independent trials."""
        return int(self.theta.shape[0])
