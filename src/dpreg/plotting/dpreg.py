r"""Figures of dpreg's own studies on a user's table, drawn from summary tables only.

* :func:`plot_iv_table` -- study kind ``iv_table``
  (:mod:`dpreg.experiments.dpreg_iv_table`): the coefficient of each endogenous
  regressor released by DP-2S-GD (Liang et al. 2025, Algorithm 1, with the public rule
  of :mod:`dpreg.estimators.iv_methods`) against epsilon, in the codebook's original
  units, beside the non-private 2SLS value of the same rows.
"""

from __future__ import annotations

from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

__all__ = ["plot_iv_table"]


def plot_iv_table(table: pd.DataFrame, *, title: str | None = None) -> Any:
    r"""Each endogenous regressor's released coefficient against epsilon (log x).

    One panel per (dataset, regressor): the mean over releases with error bars of
    :math:`\pm 1.96` SE (a 95% interval for the mean release), a shaded band of
    :math:`\pm 1` sd (the spread of one release) and the non-private 2SLS coefficient of
    the same rows as a dashed line.

    Parameters
    ----------
    table : DataFrame
        Output of :func:`dpreg.experiments.dpreg_iv_table.summarise_iv_table`.
    title : str, optional
        Figure title.

    Examples
    --------
    >>> table = pd.DataFrame({"dataset": ["t"] * 2, "method": ["dp_2s_gd"] * 2,
    ...     "term": ["educ"] * 2, "role": ["endogenous"] * 2, "epsilon": [1.0, 10.0],
    ...     "mean": [0.01, 0.02], "sd": [0.1, 0.04], "se": [0.02, 0.008],
    ...     "two_sls": [0.05] * 2, "trials": [20] * 2})
    >>> fig = plot_iv_table(table)
    >>> len(fig.axes)
    1
    """
    endogenous = table[table["role"] == "endogenous"]
    panels = list(dict.fromkeys(zip(endogenous["dataset"], endogenous["term"], strict=True)))
    width = max(6.0, 4.2 * len(panels))  # room for a long title over one panel
    fig, axes = plt.subplots(1, len(panels), figsize=(width, 3.8), squeeze=False)
    for ax, (dataset, term) in zip(axes[0], panels, strict=True):
        at = endogenous[(endogenous["dataset"] == dataset) & (endogenous["term"] == term)]
        for method, g in at.groupby("method", sort=True):
            g = g.sort_values("epsilon")
            eps = g["epsilon"].to_numpy(dtype=float)
            mean = g["mean"].to_numpy(dtype=float)
            sd = g["sd"].to_numpy(dtype=float)
            trials = int(g["trials"].min())
            ax.fill_between(eps, mean - sd, mean + sd, alpha=0.15, lw=0)
            ax.errorbar(
                eps,
                mean,
                yerr=1.96 * g["se"].to_numpy(dtype=float),
                marker="o",
                ms=4,
                capsize=3,
                label=f"{method}: mean of {trials} releases ± 1.96 SE (band ± 1 sd)",
            )
        ref = float(at["two_sls"].iloc[0])
        ax.axhline(ref, color="k", ls="--", lw=1, label=f"2SLS, non-private: {ref:.4g}")
        ax.set_xscale("log")
        ax.set_xlabel(r"$\varepsilon$ (one release; $\delta$ in the table)")
        ax.set_ylabel(f"coefficient of {term} (original units)")
        ax.set_title(str(dataset), fontsize=9)
        ax.legend(fontsize=7, frameon=False)
        ax.grid(True, which="both", alpha=0.3)
        if np.all(np.isfinite(at["mean"])):
            ax.margins(y=0.1)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig
