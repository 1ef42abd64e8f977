"""Figures of Choquette-Choo et al. (2023), drawn from aggregated tables only.

* :func:`plot_fig1` -- mean estimation: ratio vs learning rate, optimal coefficients,
  their spectrum.
* :func:`plot_fig2` -- linear-regression simulations (mean ± SE) with LTI theory lines
  against d, d_eff and eta, fitted slopes in the legend.
* :func:`plot_fig3` -- the SOCP bound against the condition number.
* :func:`plot_theory_table` -- Tables 1, 2 and 4 as charts.
* :func:`plot_quoted` -- the paper's deep-learning numbers, marked as quoted.
* :func:`plot_fig4_digits` -- the scaled-down analogue of Fig. 4 (digits): test accuracy
  against epsilon per method.
* :func:`figure_epochs` -- multi-epoch DP-FTRL on data: test MSE against the number of
  epochs per method and epsilon.
"""

from __future__ import annotations

import math
import textwrap
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

__all__ = [
    "figure_epochs",
    "plot_fig1",
    "plot_fig2",
    "plot_fig3",
    "plot_fig4_digits",
    "plot_quoted",
    "plot_theory_table",
]

LABELS = {
    "sgd": "Noisy-SGD",
    "nu_ftrl": "ν-Noisy-FTRL",
    "optimized": "Optimized",
    "optimal_cc": "Optimal CC (ν=0)",
    "anti_pgd": "Anti-PGD",
    "damped_anti_pgd": "Anti-PGD + damping",
}
PANEL_X = {
    "d": "dimension d",
    "d_eff": r"effective dimension $d_{eff}$",
    "eta": r"learning rate $\eta$",
}


def _colors(n: int) -> list[Any]:
    return sns.color_palette("colorblind", n)


def plot_fig1(table: pd.DataFrame, *, title: str | None = None) -> plt.Figure:
    """Fig. 1: ratio F(beta_star)/F(sgd) vs eta (log-x), beta_star_t, and abs(B_star(omega))^2."""
    sns.set_theme(style="whitegrid", context="paper")
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.3))
    r = table[table["panel"] == "ratio"].sort_values("eta")
    axes[0].plot(r["eta"], r["value"], color="black", marker="o", ms=3)
    axes[0].set_xscale("log")
    axes[0].set_xlabel(r"learning rate $\eta$")
    axes[0].set_ylabel(r"$F_\infty(\beta^\star) / F_\infty(\beta^{sgd})$")
    axes[0].axhline(1.0, color="grey", linestyle=":")
    c = table[table["panel"] == "coefficients"].sort_values("t")
    if len(c):
        eta = float(c["eta"].iloc[0])
        axes[1].stem(c["t"], c["value"], basefmt=" ")
        axes[1].set_xlabel("t")
        axes[1].set_ylabel(rf"$\beta^\star_t$ ($\eta$={eta:g})")
    s = table[table["panel"] == "spectrum"].sort_values("omega")
    if len(s):
        axes[2].plot(s["omega"], s["value"], color=_colors(1)[0])
        axes[2].set_xlabel(r"$\omega$")
        axes[2].set_ylabel(r"$|B^\star(\omega)|^2 = |1-\eta-e^{i\omega}|$")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_fig2(table: pd.DataFrame, *, title: str | None = None) -> plt.Figure:
    r"""Fig. 2: simulated F_inf (mean ± SE) and LTI theory vs the panel's axis, log-log.

    The finite-time bound of Theorem D.11 at the tail's first step is drawn dotted (from
    the optimum it is Theorem C.15's bound on :math:`F_\infty`); a table whose cells start
    away from the optimum (``initial_distance > 0``) gets a finite-time y label.
    """
    sns.set_theme(style="whitegrid", context="paper")
    has_bound = "bound_d11" in table
    finite_time = "bound_d11" in table and bool((table.get("initial_distance", 0) > 0).any())
    panels = [p for p in ("d", "d_eff", "eta") if p in set(table["panel"])]
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.6), squeeze=False)
    colors = dict(zip(("sgd", "nu_ftrl"), _colors(2), strict=True))
    for ax, panel in zip(axes[0], panels, strict=True):
        sub = table[table["panel"] == panel]
        for mech, g in sub.groupby("mechanism", sort=False):
            g = g.sort_values("x")
            col = colors.get(mech, "black")
            slope_sim, slope_lti = float(g["slope_sim"].iloc[0]), float(g["slope_lti"].iloc[0])
            paper = float(g["slope_paper"].iloc[0])
            paper_txt = "" if math.isnan(paper) or finite_time else f", paper {paper:.2f}"
            ax.errorbar(
                g["x"],
                g["mean"],
                yerr=g["se"],
                fmt="o",
                color=col,
                ms=4,
                capsize=2,
                label=f"{LABELS.get(mech, mech)} sim (slope {slope_sim:.2f}{paper_txt})",
            )
            ax.plot(
                g["x"],
                g["theory_lti"],
                color=col,
                linestyle="--",
                label=f"{LABELS.get(mech, mech)} LTI theory (slope {slope_lti:.2f})",
            )
            if has_bound:
                ax.plot(
                    g["x"],
                    g["bound_d11"],
                    color=col,
                    linestyle=":",
                    marker="v",
                    ms=3,
                    label=f"{LABELS.get(mech, mech)} Thm D.11 bound",
                )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(PANEL_X[panel])
        if panel == "d":  # label the simulated dimensions, not the log decades
            ax.set_xticks(sorted(set(sub["x"])))
            ax.xaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
            ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_ylabel(
            r"tail-mean suboptimality $F(\theta_t) - F^\star$"
            if finite_time
            else r"asymptotic suboptimality $F_\infty$"
        )
        ax.legend(fontsize=6.5)
    if title:
        # one panel is narrow: wrap long study titles
        fig.suptitle("\n".join(textwrap.wrap(title, 45 * len(panels))), fontsize=10)
    fig.tight_layout()
    return fig


def plot_fig3(table: pd.DataFrame, *, title: str | None = None) -> plt.Figure:
    """Fig. 3: bound of Theorem 3.1 vs kappa (log-log) and its ratio to SGD."""
    sns.set_theme(style="whitegrid", context="paper")
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    mechs = list(dict.fromkeys(table["mechanism"]))
    for col, mech in zip(_colors(len(mechs)), mechs, strict=True):
        g = table[table["mechanism"] == mech].sort_values("kappa")
        axes[0].plot(
            g["kappa"], g["bound"], marker="o", ms=3, color=col, label=LABELS.get(mech, mech)
        )
        axes[1].plot(
            g["kappa"], g["ratio_to_sgd"], marker="o", ms=3, color=col, label=LABELS.get(mech, mech)
        )
        cc = g.dropna(subset=["bound_cross_check"]) if "bound_cross_check" in g else g.iloc[:0]
        if len(cc):
            axes[0].plot(
                cc["kappa"],
                cc["bound_cross_check"],
                linestyle="none",
                marker="x",
                color=col,
                ms=7,
                label=f"{LABELS.get(mech, mech)} (SCS check)",
            )
    exact = table.dropna(subset=["exact"])
    if len(exact):
        axes[0].plot(
            exact["kappa"],
            exact["exact"],
            linestyle="none",
            marker="*",
            ms=9,
            color="black",
            label="exact quadratic (κ=1)",
        )
    for ax in axes:
        ax.set_xscale("log")
        ax.set_xlabel(r"condition number $\kappa = L/\mu$")
    axes[0].set_yscale("log")
    axes[0].set_ylabel(r"bound on $F_\infty$ (Thm 3.1)")
    axes[1].set_ylabel("ratio to Noisy-SGD")
    axes[0].legend(fontsize=7)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_theory_table(table: pd.DataFrame, *, title: str | None = None) -> plt.Figure:
    """Tables 1-4 as charts (log scale); infinite or missing entries are annotated."""
    sns.set_theme(style="whitegrid", context="paper")
    which = str(table["table"].iloc[0])
    if which == "table4":
        fig, ax = plt.subplots(figsize=(5.8, 4.0))
        fams = list(dict.fromkeys(table["family"]))
        for col, fam in zip(_colors(len(fams)), fams, strict=True):
            g = table[table["family"] == fam].sort_values("d")
            ax.plot(g["d"], g["ratio"], marker="o", color=col, label=f"{fam} (exact)")
            scale = float(g["ratio"].iloc[0] / g["ratio_rate"].iloc[0])
            ax.plot(g["d"], g["ratio_rate"] * scale, linestyle=":", color=col)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("d")
        ax.set_ylabel("ν-FTRL / SGD (dotted: Table 4 rate, matched at first d)")
        ax.legend(fontsize=7)
    else:
        fig, ax = plt.subplots(figsize=(5.8, 3.6))
        name_col, value_col = {
            "table1": ("algorithm", "value"),
            "table2": ("mechanism", "F_inf"),
            "table3": ("variant", "total_error"),
        }[which]
        names = list(table[name_col])
        values = np.asarray(table[value_col], dtype=float)
        finite = np.where(np.isfinite(values), values, np.nan)
        ax.bar(range(len(names)), finite, color=_colors(len(names)))
        for i, v in enumerate(values):
            if not np.isfinite(v):
                mark = "n/a" if which == "table3" else "∞"
                ax.text(i, np.nanmin(finite), mark, ha="center", va="bottom", fontsize=10)
        ax.set_xticks(range(len(names)), [LABELS.get(n, n) for n in names], rotation=20, fontsize=7)
        if which != "table3":  # values span decades; bars start well below the smallest
            ax.set_yscale("log")
            ax.set_ylim(bottom=float(np.nanmin(finite)) / 5.0)
        ylabel = r"$F_\infty$ (exact LTI)"
        if which == "table3":
            ylabel = r"prefix-sum error $\gamma^2\|AB\|_F^2$ (Eq. 3)"
            k = int(table["participations"].iloc[0]) if "participations" in table else 1
            if k > 1:
                ylabel += f"\n$\\gamma$: {k} participations"
        ax.set_ylabel(ylabel)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_quoted(table: pd.DataFrame, *, title: str | None = None) -> plt.Figure:
    """Draw the paper's deep-learning numbers as bars, labelled QUOTED (not reproduced)."""
    sns.set_theme(style="whitegrid", context="paper")
    acc = table[table["metric"].str.contains("accuracy")].reset_index(drop=True)
    fig, ax = plt.subplots(figsize=(7, 3.8))
    labels = [
        f"{t.split(' (')[0]} ε={e:g}: {m}"
        for t, e, m in zip(acc["task"], acc["epsilon"], acc["mechanism"], strict=True)
    ]
    ax.barh(range(len(acc)), acc["value"], color=_colors(len(acc)))
    ax.set_yticks(range(len(acc)), labels, fontsize=7)
    ax.set_xlabel("accuracy (%) as reported by the paper")
    ax.text(
        0.98,
        0.02,
        "QUOTED from the paper — not reproduced",
        transform=ax.transAxes,
        ha="right",
        va="bottom",
        fontsize=9,
        color="darkred",
    )
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


DIGITS_LABELS = {
    "sgd": "DP-SGD (independent)",
    "sgd_amplified": "DP-SGD (amplified)",
    "nu_ftrl": "ν-DP-FTRL",
    "me": "ME (optimal at T)",
    "banded": "Banded ME",
    "tree_aggregation": "TreeAgg",
    "fft": "FFT",
    "optimal_cc": "Optimal CC (ν=0)",
    "damped_anti_pgd": "Anti-PGD + damping",
    "anti_pgd": "Anti-PGD",
    "optimal_mean_estimation": "ν = η",
}


def plot_fig4_digits(table: pd.DataFrame, *, title: str | None = None) -> plt.Figure:
    """Test accuracy against epsilon (log x) per method, bars mean +/- 1.96 SE.

    The dashed line is the non-private reference (same schedule, no clipping, no noise).
    Labelled as a scaled-down analogue of Fig. 4 (digits), not the paper's experiment.
    """
    sns.set_theme(style="whitegrid", context="paper")
    fig, ax = plt.subplots(figsize=(6.2, 4.0))
    private = table[np.isfinite(table["epsilon"].astype(float))]
    methods = list(dict.fromkeys(private["method"]))
    for color, method in zip(_colors(len(methods)), methods, strict=True):
        g = private[private["method"] == method].sort_values("epsilon")
        ax.errorbar(
            g["epsilon"],
            g["accuracy_mean"],
            yerr=1.96 * g["accuracy_se"].fillna(0.0),
            marker="o",
            ms=4,
            capsize=3,
            color=color,
            label=DIGITS_LABELS.get(method, method),
        )
    ref = table["nonprivate_accuracy"].dropna()
    if len(ref):
        ax.axhline(float(ref.iloc[0]), color="black", linestyle="--", label="non-private")
    ax.set_xscale("log")
    eps = sorted(set(private["epsilon"].astype(float)))
    ax.set_xticks(eps, [f"{e:g}" for e in eps])
    ax.minorticks_off()
    ax.set_xlabel(r"$\varepsilon$ (matched $(\varepsilon, \delta)$)")
    ax.set_ylabel("test accuracy")
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title(
        "scaled-down analogue of Fig. 4: multinomial logistic regression on digits,\n"
        "not the paper's CIFAR-10/StackOverflow",
        fontsize=8,
    )
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig


def figure_epochs(table: pd.DataFrame, *, title: str | None = None) -> plt.Figure:
    """Test MSE (the table's ``score``) against epochs, one panel per dataset.

    One colour per epsilon, solid for nu-DP-FTRL and dashed for DP-SGD; mean with a 95%
    band; the dotted line is non-private OLS on the same rows.
    """
    sns.set_theme(style="whitegrid", context="paper")
    datasets = sorted(table["dataset"].unique())
    epsilons = sorted(table["epsilon"].unique())
    colors = dict(zip(epsilons, _colors(len(epsilons)), strict=True))
    styles = {"nu_dp_ftrl": "-", "dp_sgd_stream": "--"}
    names = {"nu_dp_ftrl": "ν-DP-FTRL", "dp_sgd_stream": "DP-SGD"}
    fig, axes = plt.subplots(1, len(datasets), figsize=(4.2 * len(datasets), 3.8), squeeze=False)
    for ax, dataset in zip(axes[0], datasets, strict=True):
        part = table[table["dataset"] == dataset]
        for (method, eps), cell in part.groupby(["method", "epsilon"], sort=True):
            cell = cell.sort_values("epochs")
            ax.plot(cell["epochs"], cell["mean"], marker="o", color=colors[eps],
                    linestyle=styles.get(method, ":"),
                    label=f"{names.get(method, method)}, eps={eps:g}")  # fmt: skip
            ax.fill_between(cell["epochs"], cell["ci_low"], cell["ci_high"], color=colors[eps],
                            alpha=0.2)  # fmt: skip
        ref = "ols_test_mse" if part["score"].iloc[0] == "test_mse" else "ols_train_mse"
        ax.axhline(float(part[ref].iloc[0]), color="black", linestyle=":", linewidth=1,
                   label="OLS (non-private)")  # fmt: skip
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("epochs E")
        ax.set_ylabel(part["score"].iloc[0].replace("_", " "))
        ax.set_title(dataset)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=3,
               frameon=False)  # fmt: skip
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig
