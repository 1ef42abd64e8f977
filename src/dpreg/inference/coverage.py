r"""Coverage summaries and the non-private OLS interval (Brown et al. 2024, Figs. 5, 6).

Figure 5 plots the "average empirical coverage across co-ordinates over 100 algorithm
runs" with error bars at the "95-percentiles of coverage across coordinates"; Figure 6
compares interval lengths with "the width of standard nonprivate OLS confidence
intervals for the population quantity" (the textbook t-interval).
"""

from __future__ import annotations

import math

import numpy as np

from dpreg.estimators.ols import ols_reference
from dpreg.inference.intervals import t_quantile

__all__ = ["coverage_summary", "ols_interval_half_width"]


def coverage_summary(covered: np.ndarray, alpha: float = 0.05) -> dict[str, float]:
    r"""Summarise coverage indicators ``covered (runs, d)`` as in Figure 5.

    Returns
    -------
    dict
        ``mean`` (over runs and coordinates), ``low``/``high`` (2.5 and 97.5
        percentiles across coordinates of the per-coordinate coverage), ``se`` (Monte
        Carlo standard error of ``mean`` from the spread of per-run averages, which
        accounts for dependence between coordinates of one run), ``se_nominal``
        (binomial SE at the nominal level if the runs x d indicators were independent),
        ``runs``.

    Examples
    --------
    >>> import numpy as np
    >>> covered = np.array([[True, True]] * 95 + [[False, True]] * 5)  # 100 runs, 2 coordinates
    >>> s = coverage_summary(covered)
    >>> s['mean'], s['runs']
    (0.975, 100)
    """
    covered = np.asarray(covered, dtype=np.float64)
    runs, d = covered.shape
    per_coord = covered.mean(axis=0)
    per_run = covered.mean(axis=1)
    se = float(per_run.std(ddof=1) / math.sqrt(runs)) if runs > 1 else math.nan
    return {
        "mean": float(covered.mean()),
        "low": float(np.percentile(per_coord, 2.5)),
        "high": float(np.percentile(per_coord, 97.5)),
        "se": se,
        "se_nominal": math.sqrt(alpha * (1 - alpha) / (runs * d)),
        "runs": runs,
    }


def ols_interval_half_width(X: np.ndarray, y: np.ndarray, alpha: float = 0.05) -> np.ndarray:
    r"""Half-widths :math:`t_{1-\alpha/2,n-p}\,\hat s\sqrt{[(X^\top X)^{-1}]_{jj}}` (non-private).

    The textbook OLS interval for the population coefficients (statsmodels' classical
    standard errors via :func:`~dpreg.estimators.ols.ols_reference`), the dashed line of
    Figures 6 and 11.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(400, 2))
    >>> y = X @ np.array([1.0, 0.0]) + rng.normal(size=400)
    >>> ols_interval_half_width(X, y).round(2)
    array([0.09, 0.09])
    """
    ref = ols_reference(X, y)
    return t_quantile(alpha, ref.n - ref.rank + 1) * ref.std_errors
