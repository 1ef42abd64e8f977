"""Figures of Brown et al. (2024), drawn from the aggregated tables only.

One function per study kind of :mod:`dpreg.experiments.brown2024`; means with bands of
1.96 standard errors, log axes where the paper's claims are rates.
"""

from __future__ import annotations

import math
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

__all__ = [
    "plot_bias_variance",
    "plot_ci",
    "plot_clip_heatmap",
    "plot_cost_of_privacy",
    "plot_error_vs_clipping",
    "plot_error_vs_dim",
]

METHOD_STYLE = {
    "ols": ("OLS (non-private)", "tab:gray", "s"),
    "dp_gd": ("DP-GD", "tab:blue", "o"),
    "adassp": ("AdaSSP", "tab:red", "^"),
    "independent_runs": ("independent runs", "tab:green", "o"),
    "checkpoints": ("checkpoints", "tab:orange", "s"),
    "batched_means": ("batched means", "tab:purple", "D"),
}


def _finish(fig: Any, title: str | None) -> Any:
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def _band(ax: Any, x: Any, mean: Any, se: Any, colour: str) -> None:
    mean, se = np.asarray(mean, float), np.nan_to_num(np.asarray(se, float))
    ax.fill_between(x, mean - 1.96 * se, mean + 1.96 * se, color=colour, alpha=0.2, lw=0)


def plot_error_vs_dim(table: pd.DataFrame, *, title: str | None = None) -> Any:
    """Figs. 1/9: mean error against p (n/p fixed); left vs theta*, right vs OLS."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, metric, label in (
        (axes[0], "err_true", r"$\|\tilde\theta - \theta^*\|$"),
        (axes[1], "err_hat", r"$\|\tilde\theta - \hat\theta_{OLS}\|$"),
    ):
        for method, g in table.groupby("method", sort=False):
            if metric == "err_hat" and method == "ols":
                continue
            name, colour, marker = METHOD_STYLE.get(method, (method, None, "x"))
            g = g.sort_values("p")
            ax.plot(g["p"], g[f"{metric}_mean"], marker=marker, color=colour, label=name)
            _band(ax, g["p"], g[f"{metric}_mean"], g[f"{metric}_se"], colour)
        ax.set_xscale("log")
        ax.set_xlabel(f"dimension p (n = {int(table['n'].iloc[0] / table['p'].iloc[0])} p)")
        ax.set_ylabel(label)
        ax.set_ylim(bottom=0)
        ax.legend(frameon=False)
    return _finish(fig, title)


def plot_cost_of_privacy(table: pd.DataFrame, *, title: str | None = None) -> Any:
    """Figs. 2/8: privacy and sampling error against n (log-log), theory and n*."""
    fig, ax = plt.subplots(figsize=(6, 4.2))
    t = table.sort_values("n")
    for col, theory, label, colour in (
        ("privacy_error", "privacy_rms_theory", r"privacy $\|\theta_T-\hat\theta\|$", "tab:blue"),
        ("sampling_error", "sampling_rms_theory", r"sampling $\|\hat\theta-\theta^*\|$", "tab:red"),
    ):
        ax.plot(t["n"], t[f"{col}_mean"], "o-", color=colour, label=label, ms=3)
        _band(ax, t["n"], t[f"{col}_mean"], t[f"{col}_se"], colour)
        ax.plot(t["n"], t[theory], ":", color=colour, label=f"{col.split('_')[0]} RMS (theory)")
    if "noise_error_mean" in t:  # the privacy error split into noise and T-step optimisation
        ax.plot(
            t["n"],
            t["noise_error_mean"],
            "s--",
            color="tab:cyan",
            ms=3,
            label=r"noise $\|\theta_T-\theta_T^{GD}\|$",
        )
        ax.plot(
            t["n"],
            t["optimisation_error_mean"],
            "--",
            color="tab:gray",
            label=r"optimisation $\|\theta_T^{GD}-\hat\theta\|$",
        )
    n_star = float(t["crossover_n_theory"].iloc[0])
    if t["n"].min() <= n_star <= t["n"].max():
        ax.axvline(n_star, color="k", ls="--", lw=0.8, label=f"predicted n* = {n_star:.3g}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("n")
    ax.set_ylabel("mean error")
    ax.legend(frameon=False, fontsize="small")
    ax.set_title(
        f"p = {int(t['p'].iloc[0])}, rho = {t['rho'].iloc[0]:g}, T = {int(t['T'].iloc[0])},"
        f" eta = {t['step'].iloc[0]:g}",
        fontsize="small",
    )
    return _finish(fig, title)


def plot_clip_heatmap(table: pd.DataFrame, *, title: str | None = None) -> Any:
    """Fig. 3: fraction clipped over (p, gamma) with the gamma = c sqrt(p) curves."""
    pivot = table.pivot_table(index="gamma", columns="p", values="clip_fraction")
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ps, gammas = pivot.columns.to_numpy(float), pivot.index.to_numpy(float)
    mesh = ax.pcolormesh(ps, gammas, pivot.to_numpy(), shading="nearest", cmap="viridis")
    fig.colorbar(mesh, ax=ax, label="fraction of gradients clipped")
    grid = np.linspace(ps.min(), ps.max(), 200)
    for c, style in ((3, ":"), (5, "--")):
        ax.plot(grid, c * np.sqrt(grid), "r" + style, label=rf"$\gamma = {c}\sqrt{{p}}$")
    ax.set_ylim(gammas.min(), gammas.max())
    ax.set_xlabel("dimension p (n = 100 p)")
    ax.set_ylabel(r"clipping threshold $\gamma$")
    ax.legend(frameon=False, loc="upper left", fontsize="small")
    return _finish(fig, title)


def plot_bias_variance(table: pd.DataFrame, *, title: str | None = None) -> Any:
    """Fig. 4: error, squared bias and variance against gamma with % clipped labels."""
    T = int(table["T"].max())
    t = table[table["T"] == T].sort_values("gamma")
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    ax.plot(t["gamma"], t["mse_hat"], "o-", color="k", label=r"error $E\|\theta_T-\hat\theta\|^2$")
    ax.plot(t["gamma"], t["bias2_hat"], "s--", color="tab:red", label="squared bias")
    ax.plot(t["gamma"], t["variance"], "^--", color="tab:blue", label="variance")
    for _, row in t.iterrows():
        ax.annotate(
            f"{100 * row['clip_fraction']:.1f}%",
            (row["gamma"], row["mse_hat"]),
            textcoords="offset points",
            xytext=(0, 6),
            ha="center",
            fontsize=7,
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(r"clipping threshold $\gamma$ (labels: % of gradients clipped)")
    ax.set_ylabel("squared error")
    ax.legend(frameon=False, fontsize="small")
    ax.set_title(f"T = {T}", fontsize="small")
    return _finish(fig, title)


def plot_error_vs_clipping(table: pd.DataFrame, *, title: str | None = None) -> Any:
    """Fig. 7: mean error against the realised fraction clipped, one curve per T."""
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for T, g in table.groupby("T", sort=True):
        g = g.sort_values("clip_fraction")
        ax.plot(g["clip_fraction"], g["err_hat_mean"], "o-", label=f"T = {int(T)}", ms=3)
    ax.set_yscale("log")
    ax.set_xlabel("fraction of gradients clipped")
    ax.set_ylabel(r"mean $\|\theta_T - \hat\theta\|$")
    ax.legend(frameon=False, fontsize="small")
    return _finish(fig, title)


def plot_ci(table: pd.DataFrame, *, title: str | None = None) -> Any:
    """Figs. 5/6 (10/11): coverage and mean length against N (dashed: no-clipping theory)."""
    fig, (ax_c, ax_l) = plt.subplots(1, 2, figsize=(11, 4.2))
    nominal = float(table["nominal"].iloc[0])
    for method, g in table.groupby("method", sort=False):
        name, colour, marker = METHOD_STYLE.get(method, (method, None, "x"))
        g = g.sort_values("total_steps")
        x = g["total_steps"].to_numpy(float)
        ax_c.errorbar(
            x,
            g["coverage"],
            yerr=[g["coverage"] - g["coverage_low"], g["coverage_high"] - g["coverage"]],
            marker=marker,
            color=colour,
            capsize=3,
            label=name,
        )
        ax_c.plot(x, g["huber_coverage"], ls=":", color=colour, marker=marker, mfc="none")
        ax_l.errorbar(
            x,
            g["length"],
            yerr=[g["length"] - g["length_low"], g["length_high"] - g["length"]],
            marker=marker,
            color=colour,
            capsize=3,
            label=name,
        )
        if "length_theory" in g and g["length_theory"].notna().any():
            ax_l.plot(x, g["length_theory"], ls="--", lw=1, color=colour, marker="_", ms=10)
    if "length_theory" in table and table["length_theory"].notna().any():
        ax_l.plot(
            [], [], ls="--", lw=1, color="grey", marker="_", label="exact expectation, no clipping"
        )
    runs = int(table["runs"].max())
    p = int(table["p"].iloc[0])
    band = 1.96 * math.sqrt(nominal * (1 - nominal) / (runs * p))
    ax_c.axhline(nominal, color="k", lw=0.8)
    ax_c.axhspan(nominal - band, nominal + band, color="grey", alpha=0.2, lw=0)
    ax_c.set_xscale("log")
    ax_c.set_ylim(max(0.0, float(table["coverage_low"].min()) - 0.05), 1.0)
    ax_c.set_xlabel("total gradient iterations N = mT")
    ax_c.set_ylabel(r"coverage of $\hat\theta_j$ (dotted: Huber target)")
    ax_c.legend(frameon=False, fontsize="small")
    ax_l.axhline(float(table["ols_length"].iloc[0]), color="k", ls="--", label="OLS (non-private)")
    ax_l.set_xscale("log")
    ax_l.set_yscale("log")
    ax_l.set_xlabel("total gradient iterations N = mT")
    ax_l.set_ylabel("mean CI length")
    ax_l.legend(frameon=False, fontsize="small")
    return _finish(fig, title)
