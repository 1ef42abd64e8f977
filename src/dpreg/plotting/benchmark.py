"""Figures of the private regression benchmark (``docs/benchmark.md``), from its tables only."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

__all__ = ["plot_heatmap", "plot_performance_profile", "plot_recommendation_map"]


def _method_styles(methods: list[str]) -> dict[str, dict[str, object]]:
    """Return a colour and line style per method, distinct for up to 30 methods."""
    palette = sns.color_palette("tab10", n_colors=10)
    styles = ("-", "--", ":")
    return {
        m: {"color": palette[i % 10], "linestyle": styles[(i // 10) % 3]}
        for i, m in enumerate(methods)
    }


def plot_performance_profile(profile: pd.DataFrame, *, title: str | None = None) -> plt.Figure:
    """Dolan--Moré curves, one panel per epsilon, one curve per method.

    Parameters
    ----------
    profile : DataFrame
        Columns ``epsilon``, ``method``, ``tau``, ``share``
        (:func:`dpreg.experiments.benchmark.performance_profile`).
    title : str, optional
    """
    sns.set_theme(style="whitegrid", context="paper")
    epsilons = sorted(profile["epsilon"].unique())
    methods = sorted(profile["method"].unique())
    styles = _method_styles(methods)
    fig, axes = plt.subplots(
        1, max(len(epsilons), 1), figsize=(3.2 * max(len(epsilons), 1), 3.4), squeeze=False
    )
    for ax, eps in zip(axes[0], epsilons, strict=False):
        at = profile[profile["epsilon"] == eps]
        for method in methods:
            curve = at[at["method"] == method].sort_values("tau")
            if not curve.empty:
                ax.step(curve["tau"], curve["share"], where="post", label=method,
                        **styles[method])  # fmt: skip
        ax.set_xscale("log")
        ax.set_ylim(-0.02, 1.02)
        ax.set_title(rf"$\varepsilon = {eps:g}$")
        ax.set_xlabel(r"$\tau$ (test MSE / best method's)")
    axes[0][0].set_ylabel("share of datasets within $\\tau$ of the best")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0),
               ncol=min(len(labels), 6), frameon=False)  # fmt: skip
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_heatmap(table: pd.DataFrame, *, title: str | None = None) -> plt.Figure:
    """Heatmap of log10(test MSE / the best private method's), dataset x method, per epsilon.

    Parameters
    ----------
    table : DataFrame
        The benchmark summary (``dataset``, ``method``, ``epsilon``, ``ratio_to_best``,
        ``status``, ``private``, ``n``, ``d``); datasets ordered by n/d, methods by their
        mean rank over all epsilons; cells not run are blank; the colour saturates at 10x.
    title : str, optional
    """
    sns.set_theme(style="white", context="paper")
    ranked = table[table["private"].astype(bool)]
    epsilons = sorted(ranked["epsilon"].unique())
    order = (
        ranked.assign(nd=ranked["n"] / ranked["d"])
        .groupby("dataset")["nd"]
        .first()
        .sort_values()
        .index.tolist()
    )
    methods = ranked.groupby("method")["rank"].mean().sort_values().index.tolist()
    log_ratio = np.log10(ranked["ratio_to_best"].where(ranked["status"] == "ok"))
    fig, axes = plt.subplots(
        1, len(epsilons), figsize=(0.42 * len(methods) * len(epsilons) + 3,
                                   0.28 * len(order) + 2.8),
        squeeze=False,
    )  # fmt: skip
    for j, (ax, eps) in enumerate(zip(axes[0], epsilons, strict=False)):
        at = ranked.assign(log_ratio=log_ratio)[ranked["epsilon"] == eps]
        grid = at.pivot(index="dataset", columns="method", values="log_ratio").reindex(
            index=order, columns=methods
        )
        sns.heatmap(grid, ax=ax, cmap="viridis", vmin=0.0, vmax=1.0,
                    cbar=j == len(epsilons) - 1, yticklabels=j == 0,
                    cbar_kws={"label": "log10(test MSE / best private method's)"})  # fmt: skip
        ax.set_title(rf"$\varepsilon = {eps:g}$")
        ax.set_xlabel("")
        ax.set_ylabel("dataset (by n/d)" if j == 0 else "")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_recommendation_map(rec: pd.DataFrame, *, title: str | None = None) -> plt.Figure:
    """Draw the recommended method per (n/d region, epsilon), its mean rank and evidence.

    Parameters
    ----------
    rec : DataFrame
        :func:`dpreg.experiments.benchmark.recommendation_map` (``region_n_per_d``,
        ``epsilon``, ``recommended``, ``mean_rank``, ``datasets``).
    title : str, optional
    """
    sns.set_theme(style="white", context="paper")
    regions = list(dict.fromkeys(rec["region_n_per_d"]))
    epsilons = sorted(rec["epsilon"].unique())
    methods = sorted(rec["recommended"].unique())
    code = {m: i for i, m in enumerate(methods)}
    grid = np.full((len(regions), len(epsilons)), np.nan)
    fig, ax = plt.subplots(figsize=(1.6 * len(epsilons) + 2, 1.0 * len(regions) + 1.5))
    for _, row in rec.iterrows():
        i, j = regions.index(row["region_n_per_d"]), epsilons.index(row["epsilon"])
        grid[i, j] = code[row["recommended"]]
        runner = (
            f"\nnext: {row['runner_up']} {row['runner_up_mean_rank']:.2g}"
            if row["runner_up"]
            else ""
        )
        ax.text(j, i, f"{row['recommended']}\nmean rank {row['mean_rank']:.2g},"
                f" {row['datasets']} datasets{runner}", ha="center", va="center",
                fontsize=7)  # fmt: skip
    cmap = plt.get_cmap("Pastel1", max(len(methods), 1))
    ax.imshow(grid, cmap=cmap, aspect="auto", vmin=-0.5, vmax=len(methods) - 0.5)
    ax.set_xticks(range(len(epsilons)), [f"{e:g}" for e in epsilons])
    ax.set_yticks(range(len(regions)), regions)
    ax.set_xlabel(r"$\varepsilon$ ($\delta = 1/n^2$)")
    ax.set_ylabel("n / d")
    if title:
        ax.set_title(title)
    fig.tight_layout()
    return fig
