"""Estimators: one module per family, every estimator a plain function (docs/architecture.md).

Importing this package registers every estimator in :data:`ESTIMATORS`.
"""

from dpreg.estimators import (  # noqa: F401  (registers)
    adassp,
    ambssgd,
    dpgd,
    ftrl,
    ihm,
    iv,
    ols,
    sketch,
)
from dpreg.estimators.registry import ESTIMATORS, get_estimator, register

__all__ = ["ESTIMATORS", "get_estimator", "register"]
