"""Confidence intervals from private gradient descent (Brown et al. 2024, §3).

* :func:`dp_gd_confidence_intervals` -- the public API: run DP-GD within one budget and
  return per-coordinate intervals (:class:`ConfidenceIntervals`) with the method's
  metadata;
* :mod:`~dpreg.inference.constructions` -- independent runs, checkpoints, batched means;
* :mod:`~dpreg.inference.intervals` -- the t-interval of eq. (12);
* :mod:`~dpreg.inference.coverage` -- coverage summaries and the OLS interval.
"""

from dpreg.inference.constructions import METHODS, RUN_ESTIMATES
from dpreg.inference.coverage import coverage_summary, ols_interval_half_width
from dpreg.inference.dpgd_ci import (
    dp_gd_confidence_intervals,
    intervals_from_path,
    intervals_from_runs,
)
from dpreg.inference.intervals import ConfidenceIntervals, t_interval, t_quantile

__all__ = [
    "METHODS",
    "RUN_ESTIMATES",
    "ConfidenceIntervals",
    "coverage_summary",
    "dp_gd_confidence_intervals",
    "intervals_from_path",
    "intervals_from_runs",
    "ols_interval_half_width",
    "t_interval",
    "t_quantile",
]
