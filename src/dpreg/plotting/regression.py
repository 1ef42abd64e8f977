"""Figures of DP regression error against the privacy budget (from aggregated tables only)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402


def plot_mse_vs_epsilon(table: pd.DataFrame, *, title: str | None = None) -> plt.Figure:
    """Train MSE against epsilon per dataset, mean with a 95% band, OLS as a dashed line.

    Parameters
    ----------
    table : DataFrame
        Aggregated rows with columns ``dataset``, ``estimator``, ``epsilon``, ``mean``,
        ``ci_low``, ``ci_high`` and ``mse_ols`` (as written by the tables stage).
    title : str, optional
        Figure title.
    """
    sns.set_theme(style="whitegrid", context="paper")
    datasets = sorted(table["dataset"].unique())
    grid = sns.FacetGrid(
        table,
        col="dataset",
        col_order=datasets,
        col_wrap=min(len(datasets), 6),
        hue="estimator",
        sharey=False,
        height=3.0,
    )

    def _band(data: pd.DataFrame, color: str, label: str, **_: object) -> None:
        data = data.sort_values("epsilon")
        ax = plt.gca()
        ax.plot(data["epsilon"], data["mean"], marker="o", color=color, label=label)
        ax.fill_between(data["epsilon"], data["ci_low"], data["ci_high"], color=color, alpha=0.25)

    grid.map_dataframe(_band)
    grid.figure.subplots_adjust(wspace=0.4, hspace=0.45)
    for ax, name in zip(grid.axes.flat, datasets, strict=True):
        ols = table.loc[table["dataset"] == name, "mse_ols"].iloc[0]
        ax.axhline(ols, color="black", linestyle="--", linewidth=1, label="OLS (non-private)")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(r"$\varepsilon$")
        ax.set_ylabel("train MSE")
    # Both axes are logarithmic (no offset text) and every tick is at the bottom, so
    # matplotlib's automatic title placement, which measures the axes of each facet at
    # every draw to lift its title clear of decorations above the axes, never moves a
    # title here. The facet titles are set again at that height (y = 1.0), which skips
    # the search: the same PNG and PDF bytes, 12-15% less CPU for the largest grids
    # (docs/scaling.md).
    grid.set_titles(y=1.0)
    handles, labels = grid.axes.flat[0].get_legend_handles_labels()
    grid.figure.legend(
        handles,
        labels,
        loc="upper center",
        bbox_to_anchor=(0.5, 0.0),
        ncol=len(labels),
        frameon=False,
    )
    if title:
        grid.figure.suptitle(title, y=1.03)
    return grid.figure
