"""Figure of the privacy audit: claimed against audited epsilon, one row per case.

Drawn from the ``privacy_audit`` summary table only (:mod:`dpreg.experiments.privacy_audit`).
Each row is an estimator, canary and claim; on a log axis, the epsilon the claim allows at
the audit's delta (bar) and the audited lower bounds: the held-out threshold test's
(circle, every case) and, for Gaussian releases, the epsilon of the lower end of the mu
interval (square). A marker right of the bar is a claim the audit contradicts. Lower
bounds of 0 are drawn open at the left edge, since a log axis has no 0.
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
    """Claimed vs audited epsilon (log axis), one row per estimator, canary and claim.

    The claimed epsilon is a black bar; the audited lower bounds are a circle (threshold
    test) and a square (Gaussian DP), green for pass, red for fail, orange for
    expected-fail. A bound of 0 is drawn open at the left edge.

    Examples
    --------
    >>> table = pd.DataFrame({"estimator": ["a"], "canary": ["c"], "epsilon_claim": [1.0],
    ...     "epsilon_lower": [0.5], "epsilon_gdp_lower": [0.8], "verdict": ["pass"]})
    >>> fig = plot_audit(table)
    """
    table = table.sort_values(["estimator", "canary", "epsilon_claim"], kind="stable")
    claimed = table["epsilon_claim"].to_numpy(dtype=float)
    threshold = table["epsilon_lower"].to_numpy(dtype=float)
    gdp = table.get("epsilon_gdp_lower", pd.Series(np.nan, index=table.index)).to_numpy(float)
    values = np.concatenate([claimed, threshold, gdp])
    values = values[np.isfinite(values) & (values > 0)]
    lo = 10 ** math.floor(math.log10(values.min() / 2)) if values.size else 1e-2
    hi = 10 ** math.ceil(math.log10(values.max() * 2)) if values.size else 10.0
    floor = lo * 1.2
    labels = [
        f"{e} / {c} (claim {x:.3g})"
        for e, c, x in zip(table["estimator"], table["canary"], claimed, strict=True)
    ]
    rows = np.arange(len(table))[::-1]
    fig, ax = plt.subplots(figsize=(8.0, 1.2 + 0.28 * len(table)))
    ax.scatter(claimed, rows, marker="|", s=200, color="black", label="claimed", zorder=3)
    shown: set[str] = set()
    for i, verdict in enumerate(table["verdict"].astype(str)):
        colour = _VERDICT_COLOURS.get(verdict, "black")
        for value, marker, what in ((threshold[i], "o", "threshold test"), (gdp[i], "s", "GDP")):
            if not np.isfinite(value):
                continue
            key = f"{what}, {verdict}"
            ax.scatter(
                max(value, floor),
                rows[i],
                marker=marker,
                facecolors=colour if value > 0 else "none",
                edgecolors=colour,
                s=36,
                label=None if key in shown else key,
                zorder=4,
            )
            shown.add(key)
    ax.set_yticks(rows, labels, fontsize=7)
    ax.set(
        xscale="log",
        xlim=(lo, hi),
        xlabel="epsilon at the audit's delta: claimed (bar) and audited lower bounds",
        title=title or "Empirical privacy audit",
    )
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return fig
