r"""The t-interval of Brown et al. (2024), eq. (12), and the result object of every CI.

Given estimates :math:`\theta^{(1)},\dots,\theta^{(m)}` the per-coordinate interval is

.. math::

    \bar\theta_j \pm t_{1-\alpha/2,\,m-1}\,\hat\sigma_j/\sqrt m, \qquad
    \hat\sigma_j^2 = \frac{1}{m-1}\sum_\ell (\theta^{(\ell)}_j - \bar\theta_j)^2,

"as if the iterates came from a Gaussian distribution with unknown mean and variance".
The paper writes :math:`t_{\alpha/2,m-1}` for "the α-th percentile"; read literally that
quantile is negative, so the upper quantile :math:`t_{1-\alpha/2,m-1}` is meant
(docs/notes/brown2024.md §8 item 9).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["ConfidenceIntervals", "t_interval", "t_quantile"]


def t_quantile(alpha: float, m: int) -> float:
    r"""Upper quantile :math:`t_{1-\alpha/2,\,m-1}` of Student's t with m - 1 df."""
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie in (0, 1); got {alpha!r}")
    if m < 2:
        raise ValueError(f"need m >= 2 estimates for a t-interval; got m={m}")
    from scipy import stats  # imported on first use: job start-up (docs/scaling.md)

    return float(stats.t.ppf(1.0 - alpha / 2.0, m - 1))


def t_interval(estimates: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    r"""Centre and half-width of eq. (12) for every leading index and coordinate.

    Parameters
    ----------
    estimates : ndarray, shape (..., m, d)
        The m estimates (runs, checkpoints or batch means) along axis -2.
    alpha : float
        Nominal miscoverage; the interval has level :math:`1 - \alpha`.

    Returns
    -------
    center, half_width : ndarray, shape (..., d)
        :math:`\bar\theta_j` and :math:`t_{1-\alpha/2,m-1}\hat\sigma_j/\sqrt m`
        (``ddof = 1``).

    Examples
    --------
    >>> import numpy as np
    >>> lower, upper = t_interval(np.array([[0.9], [1.1], [1.0], [1.2], [0.8]]), alpha=0.05)
    >>> lower.round(3), upper.round(3)
    (array([1.]), array([0.196]))
    """
    est = np.asarray(estimates, dtype=np.float64)
    if est.ndim < 2:
        raise ValueError(f"estimates must have shape (..., m, d); got {est.shape}")
    m = est.shape[-2]
    q = t_quantile(alpha, m)
    center = est.mean(axis=-2)
    sd = est.std(axis=-2, ddof=1)
    return center, q * sd / np.sqrt(m)


@dataclass(frozen=True)
class ConfidenceIntervals:
    """Per-coordinate confidence intervals, one set per trial (DP-GD; the bootstrap extends it).

    Attributes
    ----------
    lower, upper, center, half_width : ndarray, shape (trials, d)
    estimates : ndarray, shape (trials, m, d)
        The m estimates each interval was built from.
    method : str
        ``"independent_runs"``, ``"checkpoints"`` or ``"batched_means"``.
    metadata : dict
        ``m``, ``burn_in``, ``alpha``, ``df`` (m - 1), ``t_quantile``,
        ``total_steps`` (noisy steps the budget covers), ``steps_per_run``,
        ``iterates`` (which iterates fed the estimates), ``run_estimate``,
        ``noise_std``, ``budget_spent`` (of the whole construction), ``clip_fraction``
        (trials,) over every step used, ``proven`` (whether Theorem 3.1 covers the
        construction: independent runs or checkpoints with final iterates and no
        clipping), ``target`` (what the interval is for).
    """

    lower: np.ndarray
    upper: np.ndarray
    center: np.ndarray
    half_width: np.ndarray
    estimates: np.ndarray
    method: str
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def length(self) -> np.ndarray:
        """Interval lengths ``upper - lower``, shape (trials, d)."""
        return self.upper - self.lower

    def covers(self, target: np.ndarray) -> np.ndarray:
        """Boolean (trials, d): whether each interval contains ``target`` (shape (d,))."""
        target = np.asarray(target, dtype=np.float64)
        return (self.lower <= target) & (target <= self.upper)
