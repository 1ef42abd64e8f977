"""Figure of the ``ci_coverage`` study: coverage and width of the bootstrap intervals.

Drawn from the summary table only (:mod:`dpreg.experiments.ci_coverage`). One column of
panels per (n, d); top: coverage against epsilon (log x), one line per estimator (colour)
and target (solid: empirical, dashed: population), error bars of 2 standard errors, the
nominal level with its 2-SE binomial band; bottom: interval width over the non-private
OLS interval's (log axes).
"""

from __future__ import annotations

import math
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

__all__ = ["plot_ci_coverage"]

_COLOURS = {
    "adassp": "tab:blue",
    "linear_mixing": "tab:orange",
    "sheffet_sketch": "tab:green",
    "ihm": "tab:red",
}
_STYLES = {"empirical": "-", "population": "--"}


def plot_ci_coverage(table: pd.DataFrame, *, title: str | None = None) -> Any:
    """Coverage (top) and width relative to OLS (bottom) against epsilon, per (n, d).

    Examples
    --------
    >>> table = pd.DataFrame({"estimator": ["adassp"] * 2, "target": ["empirical"] * 2,
    ...     "n": [1000] * 2, "d": [3] * 2, "epsilon": [1.0, 3.0], "coverage": [0.94, 0.95],
    ...     "coverage_se": [0.01, 0.01], "coverage_se_nominal": [0.006] * 2,
    ...     "nominal": [0.95] * 2, "width_ratio": [3.0, 1.5], "trials": [100] * 2})
    >>> fig = plot_ci_coverage(table)
    """
    sizes = sorted({(int(n), int(d)) for n, d in zip(table["n"], table["d"], strict=True)})
    fig, axes = plt.subplots(
        2, len(sizes), figsize=(3.4 * len(sizes) + 1.0, 6.0), squeeze=False, sharex=True
    )
    nominal = float(table["nominal"].iloc[0])
    lowest = float((table["coverage"] - 2 * table["coverage_se"].fillna(0)).min())
    for col, (n, d) in enumerate(sizes):
        ax_c, ax_w = axes[0, col], axes[1, col]
        at = table[(table["n"] == n) & (table["d"] == d)]
        band = 2 * float(at["coverage_se_nominal"].max())
        ax_c.axhline(nominal, color="k", lw=0.8)
        ax_c.axhspan(nominal - band, nominal + band, color="grey", alpha=0.2, lw=0)
        for (est, target), g in at.groupby(["estimator", "target"], sort=True):
            g = g.sort_values("epsilon")
            colour = _COLOURS.get(str(est))
            style = _STYLES.get(str(target), ":")
            label = f"{est} ({target})"
            ax_c.errorbar(
                g["epsilon"], g["coverage"], yerr=2 * g["coverage_se"].fillna(0), ls=style,
                marker="o", ms=3, color=colour, capsize=2, label=label,
            )  # fmt: skip
            ax_w.plot(g["epsilon"], g["width_ratio"], ls=style, marker="o", ms=3, color=colour)
        ax_c.set_title(f"n = {n}, d = {d}", fontsize="medium")
        ax_c.set_xscale("log")
        ax_c.set_ylim(max(0.0, min(lowest, nominal - 0.1) - 0.02), 1.0)
        ax_w.set_yscale("log")
        ax_w.axhline(1.0, color="k", ls="--", lw=0.8)
        ax_w.set_xlabel(r"$\varepsilon$")
    axes[0, 0].set_ylabel(f"coverage (nominal {nominal:g}, band 2 SE)")
    axes[1, 0].set_ylabel("width / OLS width")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    for ax in axes[0, 1:]:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    fig.legend(handles, labels, loc="lower center", ncol=min(4, max(1, len(labels))),
               frameon=False, fontsize="small", bbox_to_anchor=(0.5, -0.02))  # fmt: skip
    fig.tight_layout(rect=(0, 0.06 + 0.03 * math.ceil(len(labels) / 4), 1, 0.95))
    if title:
        fig.suptitle(title)
    return fig
