"""Non-private reference fits of a prepared dataset (workflow stage "references")."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from dpreg.data.datasets import Dataset
from dpreg.estimators.ols import ols_reference, two_sls_reference


def reference_summary(frame: pd.DataFrame) -> dict[str, Any]:
    """OLS of y on X (and 2SLS with the instruments, when the dataset has them).

    Returns a JSON-able dict with coefficients, standard errors and the train MSE of
    OLS (the floor of every DP estimator's train MSE curve).
    """
    data = Dataset.from_frame(frame)
    ols = ols_reference(data.X, data.y)
    resid = data.y - data.X @ np.asarray(ols.params)
    summary: dict[str, Any] = {
        "dataset": data.name,
        "n": int(data.X.shape[0]),
        "d": int(data.X.shape[1]),
        "feature_names": list(data.feature_names),
        "ols": {**ols.to_dict(), "mse": float(resid @ resid) / data.X.shape[0]},
    }
    if data.Z is not None:
        summary["two_sls"] = two_sls_reference(y=data.y, X=data.X, Z=data.Z).to_dict()
    return summary
