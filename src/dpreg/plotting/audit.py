"""Figure of the privacy audit: claimed against audited epsilon, one point per case.

Drawn from the ``privacy_audit`` summary table only (:mod:`dpreg.experiments.privacy_audit`).
The x axis is the epsilon each claim allows at the audit's delta; the y axis the audited
lower bound: the held-out threshold test's (circles, every case) and, for Gaussian
releases, the epsilon of the lower end of the mu interval (squares). A point above the
diagonal is a claim the audit contradicts. Lower bounds of 0 are drawn at the floor of the
axis (marked in the legend), since a log axis has no 0.
"""

from __future__ import annotations

import math
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

__all__ = ["plot_audit"]

_VERDICT_COLOURS = {"pass": "tab:green", "fail": "tab:red", "expected-fail": "tab:orange"}


def plot_audit(table: pd.DataFrame, *, title: str | None = None) -> Any:
    """Claimed vs audited epsilon (log-log), coloured by verdict, with the diagonal.

    Examples
    --------
    >>> table = pd.DataFrame({"estimator": ["a"], "canary": ["c"], "epsilon_claim": [1.0],
    ...     "epsilon_lower": [0.5], "epsilon_gdp_lower": [0.8], "verdict": ["pass"]})
    >>> fig = plot_audit(table)
    """
    claimed = table["epsilon_claim"].to_numpy(dtype=float)
    threshold = table["epsilon_lower"].to_numpy(dtype=float)
    gdp = table.get("epsilon_gdp_lower", pd.Series(np.nan, index=table.index)).to_numpy(float)
    positive = np.concatenate([claimed, threshold, gdp])
    positive = positive[np.isfinite(positive) & (positive > 0)]
    lo = 10 ** math.floor(math.log10(positive.min() / 2)) if positive.size else 1e-2
    hi = 10 ** math.ceil(math.log10(positive.max() * 2)) if positive.size else 10.0
    floor = lo * 1.5

    fig, ax = plt.subplots(figsize=(7.5, 6.0))
    ax.plot([lo, hi], [lo, hi], color="0.4", lw=1, ls="--", label="audited = claimed")
    labels = table["estimator"].astype(str) + " / " + table["canary"].astype(str)
    shown: set[str] = set()
    for i, verdict in enumerate(table["verdict"].astype(str)):
        colour = _VERDICT_COLOURS.get(verdict, "black")
        for value, marker, what in ((threshold[i], "o", "threshold test"), (gdp[i], "s", "GDP")):
            if not np.isfinite(value):
                continue
            key = f"{what}, {verdict}"
            ax.scatter(
                claimed[i],
                max(value, floor),
                marker=marker,
                facecolors=colour if value > 0 else "none",
                edgecolors=colour,
                s=40,
                label=None if key in shown else key,
                zorder=3,
            )
            shown.add(key)
        ax.annotate(
            labels.iloc[i],
            (claimed[i], max(threshold[i], floor)),
            fontsize=6,
            xytext=(4, -2),
            textcoords="offset points",
        )
    ax.set(
        xscale="log",
        yscale="log",
        xlim=(lo, hi),
        ylim=(lo, hi),
        xlabel="claimed epsilon at the audit's delta",
        ylabel="audited lower bound on epsilon (open: bound is 0, drawn at the floor)",
        title=title or "Empirical privacy audit",
    )
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    return fig
