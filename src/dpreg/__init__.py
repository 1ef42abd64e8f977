"""dpreg: differentially private linear and instrumental-variable regression.

The library behind a Snakemake pipeline that reproduces five papers on DP regression.
Estimators are plain functions following one contract (see ``dpreg.estimators``);
privacy budgets and accounting live in ``dpreg.privacy``.
"""

from dpreg.privacy.budgets import ZCDP, ApproxDP, Budget
from dpreg.results import Fit

__all__ = ["ApproxDP", "Budget", "Fit", "ZCDP", "__version__"]
__version__ = "0.1.0"
