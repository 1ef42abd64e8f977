"""dpreg: differentially private linear and instrumental-variable regression.

The library behind a Snakemake pipeline that reproduces five papers on DP regression.
Estimators are plain functions following one contract (see ``dpreg.estimators``);
privacy budgets and accounting live in ``dpreg.privacy``.
"""

from dpreg.privacy.budgets import ZCDP, ApproxDP, Budget, PureDP
from dpreg.results import Fit

__all__ = [
    "ApproxDP",
    "Budget",
    "DPIVRegression",
    "DPLinearRegression",
    "Fit",
    "PureDP",
    "ZCDP",
    "__version__",
]
__version__ = "0.1.0"


def __getattr__(name: str):
    """``dpreg.DPLinearRegression`` and ``dpreg.DPIVRegression``, imported on first use."""
    if name == "DPLinearRegression":
        from dpreg.linear_model import DPLinearRegression

        return DPLinearRegression
    if name == "DPIVRegression":
        from dpreg.iv_model import DPIVRegression

        return DPIVRegression
    raise AttributeError(f"module 'dpreg' has no attribute {name!r}")
