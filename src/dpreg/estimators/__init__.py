"""Estimators: one module per family, every estimator a plain function (docs/architecture.md).

:data:`ESTIMATORS` maps config names to the functions; the table is
:data:`dpreg.estimators.registry.BUILTIN_ESTIMATORS`.
"""

from dpreg.estimators.registry import BUILTIN_ESTIMATORS, ESTIMATORS, get_estimator, register

__all__ = ["BUILTIN_ESTIMATORS", "ESTIMATORS", "get_estimator", "register"]
