"""Figures of Lev et al. (2026): Table 2 beside the paper, and Figure 7 (clipping).

Drawn from the aggregated tables only (``dpreg.experiments.lev2026_table2``,
``dpreg.experiments.lev2026_clipping``, ``dpreg.experiments.lev2026_gamma``); the
eps-grid figures (Figs. 1-6) are
:func:`dpreg.plotting.regression.plot_mse_vs_epsilon`.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["figure_clipping", "figure_gamma_sweep", "figure_table2"]


def figure_table2(table: pd.DataFrame, *, title: str | None = None) -> Any:
    """Ours against the paper (log-log, identity line): L/n and the residual ratio."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns

    sns.set_theme(style="whitegrid", context="paper")
    eps_cols = sorted(c for c in table.columns if re.fullmatch(r"resid_ratio_eps[0-9.e+-]+", c))
    panels = []
    panels.append(
        pd.DataFrame(
            {
                "paper": table["L_over_n_paper"],
                "ours": table["L_over_n"],
                "series": "L/n",
                "panel": r"$L(\theta^*)/n$",
            }
        )
    )
    for col in eps_cols:
        panels.append(
            pd.DataFrame(
                {
                    "paper": table["resid_ratio_paper"],
                    "ours": table[col],
                    "series": r"$\varepsilon$ = " + col[len("resid_ratio_eps") :],
                    "panel": r"$L(\theta^*)/(\gamma_{\rm mix}(1+C_Y^2))$",
                }
            )
        )
    long = pd.concat(panels, ignore_index=True)
    long = long[(long["paper"] > 0) & (long["ours"] > 0)]
    fig, axes = plt.subplots(1, 2, figsize=(9.0, 4.2))
    for ax, panel in zip(axes, long["panel"].unique(), strict=False):
        data = long[long["panel"] == panel]
        sns.scatterplot(data=data, x="paper", y="ours", hue="series", style="series", ax=ax)
        lo = float(min(data["paper"].min(), data["ours"].min())) / 1.5
        hi = float(max(data["paper"].max(), data["ours"].max())) * 1.5
        ax.plot([lo, hi], [lo, hi], color="black", linestyle="--", linewidth=1, label="identity")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
        ax.set_title(panel)
        ax.set_xlabel("Lev et al. (2026) Table 2")
        ax.set_ylabel("ours")
        ax.legend(frameon=False, fontsize="small")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


_STYLE = {
    "adassp": ("AdaSSP [Wang '18]", "tab:blue", "*", "-"),
    "linear_mixing": ("LinMix [Lev et al. '25]", "orangered", "o", "-"),
    "ihm": ("IHM (ours)", "green", "D", "--"),
}


def figure_clipping(table: pd.DataFrame, *, title: str | None = None) -> Any:
    """Draw the two panels of Figure 7 from the summary table.

    (a) IHM's mean clipped-row fraction per iteration t >= 1 at each epsilon (bars, the
    share of trials that clip printed above); (b) train MSE against epsilon (log-log) per
    estimator with 95% bands and the OLS level.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    mse = table[table["quantity"] == "mse"]
    clip = table[(table["quantity"] == "clip_fraction") & (table["iteration"] >= 1)]
    fig, (ax_a, ax_b) = plt.subplots(1, 2, figsize=(10.0, 4.0))
    eps_values = sorted(clip["epsilon"].unique())
    iterations = sorted(clip["iteration"].unique())
    width = 0.8 / max(len(iterations), 1)
    x = np.arange(len(eps_values))
    for j, t in enumerate(iterations):
        part = clip[clip["iteration"] == t].set_index("epsilon").reindex(eps_values)
        in_alg = bool(part["in_algorithm"].iloc[0]) if len(part) else True
        label = f"t = {t}" if in_alg else f"t = {t} (final estimate)"
        bars = ax_a.bar(
            x + (j - (len(iterations) - 1) / 2) * width,
            part["mean"],
            width,
            yerr=1.96 * part["se"].fillna(0.0),
            label=label,
            hatch=None if in_alg else "//",
            alpha=0.85,
        )
        for rect, share in zip(bars, part["clipped_share"], strict=True):
            ax_a.annotate(
                f"{share:.0%}",
                (rect.get_x() + rect.get_width() / 2, rect.get_height()),
                ha="center",
                va="bottom",
                fontsize=6,
            )
    ax_a.set_xticks(x, [f"{e:.3g}" for e in eps_values])
    ax_a.set_xlabel(r"$\varepsilon$")
    ax_a.set_ylabel("fraction of rows clipped (IHM)")
    ax_a.set_title("(a) clipping per iteration (labels: share of trials that clip)")
    ax_a.legend(frameon=False, fontsize="small")
    for est, group in mse.groupby("estimator", sort=True):
        label, colour, marker, line = _STYLE.get(est, (est, None, "x", "-"))
        group = group.sort_values("epsilon")
        ax_b.plot(
            group["epsilon"],
            group["mean"],
            marker=marker,
            linestyle=line,
            color=colour,
            label=label,
        )
        ax_b.fill_between(
            group["epsilon"],
            np.maximum(group["ci_low"], group["mean"] * 1e-3),
            group["ci_high"],
            color=colour,
            alpha=0.2,
        )
    if len(mse):
        ax_b.axhline(float(mse["mse_ols"].iloc[0]), color="grey", linestyle=":", label="OLS")
    ax_b.set_xscale("log")
    ax_b.set_yscale("log")
    ax_b.set_xlabel(r"$\varepsilon$")
    ax_b.set_ylabel("train MSE")
    ax_b.set_title("(b) train MSE")
    ax_b.legend(frameon=False, fontsize="small")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def figure_gamma_sweep(table: pd.DataFrame, *, title: str | None = None) -> Any:
    """IHM's train MSE against gamma / gamma_exact, one panel per (dataset, epsilon).

    Mean with a 95% band; the authors' code's gamma is marked (dotted line and square);
    the dashed line is the train MSE of theta = 0, IHM's limit as gamma grows (non-private
    OLS is in the table: far below, it would flatten the curve).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cells = list(table.groupby(["dataset", "epsilon"], sort=True))
    fig, axes = plt.subplots(1, len(cells), figsize=(4.2 * len(cells), 3.6), squeeze=False)
    for ax, ((dataset, eps), cell) in zip(axes[0], cells, strict=True):
        cell = cell.sort_values("gamma")
        ax.plot(cell["gamma_factor"], cell["mean"], marker="o", label="IHM")
        ax.fill_between(cell["gamma_factor"], cell["ci_low"], cell["ci_high"], alpha=0.25)
        code = cell[cell["point"] == "code"]
        ax.plot(code["gamma_factor"], code["mean"], marker="s", linestyle="none", color="C3",
                label="authors' gamma")  # fmt: skip
        ax.axvline(float(cell["code_factor"].iloc[0]), color="C3", linestyle=":", linewidth=1)
        ax.axhline(float(cell["mse_zero"].iloc[0]), color="black", linestyle="--", linewidth=1,
                   label=r"$\theta = 0$")  # fmt: skip
        ax.set_xscale("log")
        ax.set_xlabel(r"$\gamma / \gamma_{\rm exact}$")
        ax.set_ylabel("train MSE")
        ax.set_title(f"{dataset}, eps = {eps:g}")
    axes[0][0].legend(loc="best", fontsize="small")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig
