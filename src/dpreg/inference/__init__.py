"""Confidence intervals from private releases.

* :func:`dp_gd_confidence_intervals` -- private gradient descent (Brown et al. 2024,
  §3): run DP-GD within one budget and return per-coordinate intervals
  (:class:`ConfidenceIntervals`) with the method's metadata;
* :func:`~dpreg.inference.bootstrap.bootstrap_intervals` -- parametric bootstrap from the
  release of AdaSSP, linear mixing, Sheffet's sketch or IHM (Ferrando, Wang & Sheldon
  2022), post-processing only, refused where the coverage study has not checked it;
* :mod:`~dpreg.inference.constructions` -- independent runs, checkpoints, batched means;
* :mod:`~dpreg.inference.intervals` -- the t-interval of eq. (12);
* :mod:`~dpreg.inference.coverage` -- coverage summaries and the OLS interval.
"""

from dpreg.inference.bootstrap import (
    CHECKED_INTERVALS,
    BootstrapIntervals,
    PrivateRelease,
    UncheckedRegimeWarning,
    bootstrap_intervals,
)
from dpreg.inference.constructions import METHODS, RUN_ESTIMATES
from dpreg.inference.coverage import coverage_summary, ols_interval_half_width
from dpreg.inference.dpgd_ci import (
    dp_gd_confidence_intervals,
    intervals_from_path,
    intervals_from_runs,
)
from dpreg.inference.intervals import ConfidenceIntervals, t_interval, t_quantile

__all__ = [
    "CHECKED_INTERVALS",
    "METHODS",
    "RUN_ESTIMATES",
    "BootstrapIntervals",
    "ConfidenceIntervals",
    "PrivateRelease",
    "UncheckedRegimeWarning",
    "bootstrap_intervals",
    "coverage_summary",
    "dp_gd_confidence_intervals",
    "intervals_from_path",
    "intervals_from_runs",
    "ols_interval_half_width",
    "t_interval",
    "t_quantile",
]
