"""Result objects returned by every estimator (what is released: docs/privacy.md)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpreg._validation import check_matrix
from dpreg.privacy.budgets import Budget, PureDP

NONPRIVATE_DIAGNOSTICS = frozenset(
    {
        "clip_fraction",  # fraction of (rows, steps) clipped: reveals a canary row
        "clip_fraction_theta",
        "clip_fraction_beta",
        "step_clip_fraction",
        "step_residual_scale",  # exact residual scale of the iterate (oracle quantity)
        "step_excess_risk_iterate",
    }
)
"""Diagnostic keys computed from the data without noise: always in
:attr:`Fit.nonprivate_diagnostics`, never in :attr:`Fit.diagnostics`."""


_NONPRIVATE_COLUMN = re.compile(
    r"clip_frac|clipped|residual_scale|excess_risk_iterate|(^|_)lambda_min($|_true)"
)


def nonprivate_columns(columns: Iterable[str]) -> list[str]:
    """Per-trial or table columns computed from the data without noise (outside the guarantee).

    Clip fractions and counts, exact residual scales and exact eigenvalues, by name (the
    convention every study kind follows). Error columns (distances to OLS or to the true
    parameter) are *evaluation* metrics: they use the data to score a release, and are
    never part of one. The workflow writes this list into every per-trial parquet file
    (schema metadata ``dpreg.nonprivate_columns``) and under every study's markdown table.

    Examples
    --------
    >>> nonprivate_columns(["theta_err", "clip_fraction", "lambda_min_noisy", "lambda_min"])
    ['clip_fraction', 'lambda_min']
    """
    return [c for c in columns if _NONPRIVATE_COLUMN.search(str(c))]


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
        Iterates of iterative estimators (released with ``theta``: every iterate is
        covered by ``budget_spent`` where the estimator says so).
    diagnostics : dict
        Quantities computed from public inputs and the noisy releases only (noise
        scales, chosen hyperparameters, step counts, noisy eigenvalues, ...): releasing
        them costs no budget beyond ``budget_spent``. Arrays have a leading trials axis
        where they vary by trial.
    nonprivate_diagnostics : dict
        Quantities computed from the data **without noise** (clip fractions, exact
        residual scales, ...). **Outside the privacy guarantee**: ``budget_spent`` does
        not cover them, and a single one can reveal a row (e.g. whether a canary row was
        clipped). For research diagnostics only; never publish them with a private
        release. The keys listed in :data:`NONPRIVATE_DIAGNOSTICS` are moved here at
        construction if an estimator passes them in ``diagnostics``.
    intercept : ndarray, shape (trials,), optional
        The fitted intercept of each trial when the fit had one
        (:func:`dpreg.estimators.intercept.with_intercept`), released with
        ``theta`` under the same ``budget_spent``; ``None``: no intercept (zero).

    Examples
    --------
    >>> import numpy as np
    >>> fit = Fit(np.zeros((2, 1)), None, "toy", diagnostics={"clip_fraction": 0.5, "T": 3})
    >>> fit.diagnostics, fit.nonprivate_diagnostics
    ({'T': 3}, {'clip_fraction': 0.5})
    """

    theta: np.ndarray
    budget_spent: Budget | PureDP | None
    estimator: str
    path: np.ndarray | None = None
    diagnostics: dict[str, Any] = field(default_factory=dict)
    nonprivate_diagnostics: dict[str, Any] = field(default_factory=dict)
    intercept: np.ndarray | None = None

    def __post_init__(self) -> None:
        moved = {k: v for k, v in self.diagnostics.items() if k in NONPRIVATE_DIAGNOSTICS}
        if moved:
            public = {k: v for k, v in self.diagnostics.items() if k not in moved}
            object.__setattr__(self, "diagnostics", public)
            object.__setattr__(
                self, "nonprivate_diagnostics", {**self.nonprivate_diagnostics, **moved}
            )

    @property
    def n_trials(self) -> int:
        """Number of independent trials."""
        return int(self.theta.shape[0])

    def predict(self, X: Any, *, out: np.ndarray | None = None) -> np.ndarray:
        """Return every trial's predictions ``X @ theta + intercept``, shape (trials, m).

        Uses only the release (``theta``, ``intercept``) and the rows given, never the
        training data. ``out``, a C-contiguous float64 array of shape (trials, m),
        receives the predictions (the same values as a fresh array: the same product
        and the same addition of the intercept, done in place) and is returned.

        Examples
        --------
        >>> import numpy as np
        >>> fit = Fit(np.array([[1.0, 2.0]]), None, "toy", intercept=np.array([0.5]))
        >>> fit.predict(np.array([[1.0, 1.0], [0.0, 0.0]]))
        array([[3.5, 0.5]])
        >>> buf = np.empty((1, 2))
        >>> fit.predict(np.array([[1.0, 1.0], [0.0, 0.0]]), out=buf) is buf
        True
        """
        X = check_matrix(X, "X")
        if X.shape[1] != self.theta.shape[1]:
            raise ValueError(f"X has {X.shape[1]} columns but the fit has d={self.theta.shape[1]}")
        if out is None:
            pred = self.theta @ X.T
        else:
            shape = (self.theta.shape[0], X.shape[0])
            if (
                not isinstance(out, np.ndarray)
                or out.shape != shape
                or out.dtype != np.float64
                or np.result_type(self.theta, X) != np.float64
                or not out.flags.c_contiguous
            ):
                raise ValueError(
                    f"out must be a C-contiguous float64 array of shape {shape} (float64"
                    " theta and X)"
                )
            pred = np.matmul(self.theta, X.T, out=out)
        if self.intercept is not None:
            intercept = np.asarray(self.intercept)[:, None]
            if np.result_type(pred, intercept) == pred.dtype:
                pred = np.add(pred, intercept, out=pred)
            elif out is None:
                pred = pred + intercept
            else:
                raise ValueError(
                    f"out: the intercept's dtype {intercept.dtype} needs a wider array"
                )
        return pred
