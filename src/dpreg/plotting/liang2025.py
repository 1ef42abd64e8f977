"""Figures of Liang et al. (2025), drawn from aggregated tables only.

* :func:`plot_iv_synthetic` -- Figs. 3, 4, 6, 7: error against ``n`` or ``T``, mean ±
  SE over runs, log-log axes, optional marks of the iteration condition (5).
* :func:`plot_iv_angrist` -- Figs. 5, 8, 9: (a) boxplot of the final DP estimate with
  the same-sample 2SLS reference; (b) mean ± SE paths of beta^(t) and Theta^(t).
* :func:`plot_bound_curve` -- Fig. 2: bound (7) against ``T`` with its three terms and
  the thresholds T1, T2 (Remark 3.6) and T_max (condition (5)).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker as ticker  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

__all__ = ["plot_bound_curve", "plot_iv_angrist", "plot_iv_synthetic"]

ALGORITHM_LABELS = {
    "dp_2s_gd": "DP-2S-GD (Alg. 1)",
    "dp_2s_gd_beta": "DP-2S-GD-β (Alg. 3)",
    "2s_gd": "2S-GD (Alg. 2)",
    "2sls": "2SLS",
}
KEY_LABELS = {
    "rho1": "ρ1",
    "rho2": "ρ2",
    "tau": "τ",
    "c0": "c0",
    "T": "T",
    "n": "n",
    "kappa": "κ",
}
METRIC_LABELS = {
    "err_hat": r"$\|\beta^{(T)} - \hat\beta\|$",
    "err_true": r"$\|\beta^{(T)} - \beta\|$",
}
# Columns whose variation defines the curves of an iv_synthetic figure (derived budget
# columns such as rho and epsilon follow rho1/rho2 and are left out).
HUE_CANDIDATES = (
    "rho1",
    "rho2",
    "p",
    "q",
    "r",
    "calibration",
    "c0",
    "tau",
    "clip_rule",
    "steps",
    "alpha_scale",
    "truth_seed",
    "redraw_truth",
    "instrument_strength",
)


def _fmt(value: Any) -> str:
    if isinstance(value, float | np.floating):
        if math.isinf(value):
            return "∞"
        return f"{value:g}"
    return str(value)


def _varying(table: pd.DataFrame, keys: Sequence[str], within: str | None = None) -> list[str]:
    out = []
    for k in keys:
        if k not in table.columns:
            continue
        if within is None or within not in table.columns:
            n_unique = table[k].nunique(dropna=False)
        else:
            n_unique = table.groupby(within, dropna=False)[k].nunique(dropna=False).max()
        if n_unique > 1:
            out.append(k)
    return out


def _hue_label(row: pd.Series, keys: Sequence[str]) -> str:
    parts = []
    for k in keys:
        if k == "algorithm":
            parts.append(ALGORITHM_LABELS.get(row[k], str(row[k])))
        else:
            parts.append(f"{KEY_LABELS.get(k, k)}={_fmt(row[k])}")
    return ", ".join(parts) if parts else "all runs"


def _loglog_slope(x: np.ndarray, y: np.ndarray) -> float:
    ok = (x > 0) & (y > 0) & np.isfinite(x) & np.isfinite(y)
    if ok.sum() < 2:
        return math.nan
    return float(np.polyfit(np.log(x[ok]), np.log(y[ok]), 1)[0])


def plot_iv_synthetic(table: pd.DataFrame, *, title: str | None = None) -> plt.Figure:
    r"""Error against ``n`` (Figs. 3, 7) or ``T`` (Figs. 4, 6), mean ± SE over runs.

    The x-axis is ``n`` when it varies, else ``T``. When ``algorithm`` varies together
    with other keys (Fig. 6), each algorithm gets its own panel; the curves are the
    remaining varying keys (e.g. the budget split of Fig. 3 or ``rho2`` of Fig. 4b);
    if only the algorithm varies (Fig. 7), it is the hue. The metric is the table's
    ``metric`` column (``err_hat``, ``err_true`` or ``both``: one row of panels each, as
    the paper leaves the metric of Figs. 3, 4, 6 undefined, docs/notes/liang2025.md P3;
    the 2SLS rows of Fig. 7 carry :math:`\|\hat\beta - \beta\|` as ``err_true``). With
    ``t_max_line`` the iteration condition (5) is marked (unit constant) in each curve's
    colour: a vertical line at ``T_max`` (x = ``T``) or at the smallest ``n`` with
    ``T <= T_max`` (x = ``n``), when it falls in the plotted range. On an ``n`` axis the
    legend gives each curve's log-log slope (Fig. 3a expects about -0.5).

    Parameters
    ----------
    table : DataFrame
        Output of :func:`dpreg.experiments.liang2025_synthetic.summarise_iv_synthetic`.
    title : str, optional
        Figure title.
    """
    sns.set_theme(style="whitegrid", context="paper")
    x = "n" if table["n"].nunique() > 1 else "T"
    other = "T" if x == "n" else "n"
    chosen = str(table["metric"].iloc[0]) if "metric" in table.columns else "err_hat"
    metrics = ["err_hat", "err_true"] if chosen == "both" else [chosen]
    facet = None
    if "algorithm" in table.columns and table["algorithm"].nunique() > 1:
        inner = _varying(table, (*HUE_CANDIDATES, other), within="algorithm")
        if inner:
            facet, hue_keys = "algorithm", inner
        else:
            hue_keys = ["algorithm"]
    else:
        hue_keys = _varying(table, (*HUE_CANDIDATES, other))
    facets = list(dict.fromkeys(table[facet])) if facet else [None]
    # Panels: metrics x facets; a single facet puts the metrics side by side.
    n_rows, n_cols = (len(metrics), len(facets)) if facet else (1, len(metrics))
    fig, grid = plt.subplots(
        n_rows,
        n_cols,
        figsize=(max(4.2 * n_cols, 6.0), 3.4 * n_rows),
        squeeze=False,
        sharey="row" if facet else False,
    )
    axes = grid if facet else grid.reshape(len(metrics), 1)
    hue_values = (
        table[hue_keys].drop_duplicates().sort_values(hue_keys).reset_index(drop=True)
        if hue_keys
        else pd.DataFrame(index=[0])
    )
    palette = sns.color_palette("colorblind", max(len(hue_values), 1))
    draw_tmax = "t_max_line" in table.columns and bool(table["t_max_line"].astype(bool).any())
    mark_col = "T_max_theory" if x == "T" else "n_min_theory"
    for row, metric in enumerate(metrics):
        for col, fval in enumerate(facets):
            ax = axes[row, col]
            part = table if facet is None else table[table[facet] == fval]
            xmin, xmax = part[x].min(), part[x].max()
            marks: dict[float, Any] = {}
            all_marks: set[float] = set()
            for i, hv in hue_values.iterrows():
                sel = part
                for k in hue_keys:
                    sel = sel[sel[k].isna()] if _isnan(hv[k]) else sel[sel[k] == hv[k]]
                if sel.empty:
                    continue
                sel = sel.sort_values(x)
                xs = sel[x].to_numpy(dtype=float)
                ys = sel[f"{metric}_mean"].to_numpy(dtype=float)
                se = sel[f"{metric}_se"].to_numpy(dtype=float)
                label = _hue_label(hv, hue_keys)
                if x == "n" and len(xs) > 1:
                    label += f" (slope {_loglog_slope(xs, ys):.2f})"
                color = palette[i % len(palette)]
                ax.errorbar(
                    xs,
                    ys,
                    yerr=np.nan_to_num(se),
                    marker="o",
                    ms=3.5,
                    capsize=2.5,
                    color=color,
                    label=label,
                    linewidth=1.2,
                )
                if draw_tmax and mark_col in sel.columns:
                    mark = float(sel[mark_col].iloc[0])
                    all_marks.add(mark)
                    if math.isfinite(mark) and xmin <= mark <= xmax:
                        marks.setdefault(mark, color)
            shared_mark = len(all_marks) == 1  # the same for every curve: draw it in grey
            for mark, color in marks.items():
                ax.axvline(
                    mark, color="grey" if shared_mark else color, linestyle=":", linewidth=1.4
                )
            ax.set_xscale("log")
            ax.set_yscale("log")
            ticks = np.unique(part[x].to_numpy(dtype=float))
            if len(ticks) <= 12:
                ax.set_xticks(ticks)
                ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
                ax.xaxis.set_minor_formatter(ticker.NullFormatter())
                ax.tick_params(axis="x", labelrotation=45)
            ax.set_xlabel(x)
            ax.set_ylabel(f"error {METRIC_LABELS.get(metric, metric)}")
            if facet is not None and row == 0:
                ax.set_title(ALGORITHM_LABELS.get(fval, str(fval)))
            elif facet is None and len(metrics) > 1:
                ax.set_title("to the 2SLS solution" if metric == "err_hat" else "to the truth")
            ax.legend(fontsize=7, frameon=False)
    if draw_tmax:
        what = "T_max of (5)" if x == "T" else "smallest n meeting (5) at this T"
        fig.text(0.01, -0.02, f"dotted: {what}, unit constant, where in range", fontsize=7)
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig


def _isnan(v: Any) -> bool:
    return isinstance(v, float | np.floating) and math.isnan(v)


def _rho_label(row: pd.Series) -> str:
    r1, r2 = float(row["rho1"]), float(row["rho2"])
    if r1 == r2:
        return f"ρ1=ρ2={_fmt(r1)}"
    return f"ρ1={_fmt(r1)}, ρ2={_fmt(r2)}"


def plot_iv_angrist(table: pd.DataFrame, *, title: str | None = None) -> plt.Figure:
    r"""Draw the real-data figure (Figs. 5, 8, 9) from the summary table.

    Panel (a): boxplot of :math:`\beta^{(T)}` per budget; panel (b): mean ± SE paths
    of :math:`\beta^{(t)}` and :math:`\Theta^{(t)}`.

    Boxes are drawn from the table's quartiles and Tukey whiskers (no raw runs; outliers
    are counted, not drawn). The dashed line is the same-sample non-private 2SLS
    estimate, with a band of ± 1.96 of its standard error; in the paths the dashed lines
    are the 2SLS estimate and the first-stage coefficient.

    Parameters
    ----------
    table : DataFrame
        Output of :func:`dpreg.experiments.liang2025_angrist.summarise_iv_angrist`.
    title : str, optional
        Figure title.
    """
    sns.set_theme(style="whitegrid", context="paper")
    final = table[table["quantity"] == "beta_final"].sort_values(["rho1", "rho2"])
    budgets = final[["rho1", "rho2"]].drop_duplicates().reset_index(drop=True)
    palette = sns.color_palette("colorblind", max(len(budgets), 1))
    fig, axes = plt.subplots(1, 3, figsize=(12.5, 3.6))
    beta_2sls = float(final["beta_2sls"].iloc[0])
    se_2sls = float(final["se_2sls"].iloc[0])
    theta_2sls = float(final["theta_2sls"].iloc[0])

    ax = axes[0]
    stats = []
    for _, row in final.iterrows():
        stats.append(
            {
                "med": row["median"],
                "q1": row["q25"],
                "q3": row["q75"],
                "whislo": row["whisker_low"],
                "whishi": row["whisker_high"],
                "mean": row["mean"],
                "label": _rho_label(row),
                "fliers": [],
            }
        )
    boxes = ax.bxp(stats, showmeans=True, showfliers=False, patch_artist=True)
    for patch, color in zip(boxes["boxes"], palette, strict=False):
        patch.set_facecolor(color)
        patch.set_alpha(0.6)
    ax.axhline(
        beta_2sls,
        color="black",
        linestyle="--",
        linewidth=1,
        label=f"2SLS {beta_2sls:.2f}, band ± 1.96 SE (SE {se_2sls:.2f})",
    )
    ax.axhspan(beta_2sls - 1.96 * se_2sls, beta_2sls + 1.96 * se_2sls, color="grey", alpha=0.12)
    # Limits from the boxes and the 2SLS line (the 2SLS band may be much wider).
    lo = min(float(final["whisker_low"].min()), beta_2sls)
    hi = max(float(final["whisker_high"].max()), beta_2sls)
    pad = 0.1 * (hi - lo) if hi > lo else 1.0
    ax.set_ylim(lo - pad, hi + pad)
    T = int(final["t"].iloc[0])
    ax.set_ylabel(rf"$\beta^{{({T})}}$")
    runs = int(final["runs"].iloc[0])
    ax.set_title(f"(a) final estimate over {runs} runs")
    ax.legend(fontsize=7, frameon=False)

    for ax, qty, ref, ylabel, ref_label in (
        (axes[1], "beta_path", beta_2sls, r"$\beta^{(t)}$", "2SLS"),
        (axes[2], "theta_path", theta_2sls, r"$\Theta^{(t)}$", "first stage (OLS)"),
    ):
        for (i, b), color in zip(budgets.iterrows(), palette, strict=False):
            sel = table[
                (table["quantity"] == qty)
                & (table["rho1"] == b["rho1"])
                & (table["rho2"] == b["rho2"])
            ].sort_values("t")
            t = sel["t"].to_numpy(dtype=float)
            m = sel["mean"].to_numpy(dtype=float)
            se = sel["se"].to_numpy(dtype=float)
            ax.plot(t, m, color=color, marker="o", ms=2.5, label=_rho_label(b))
            ax.fill_between(t, m - se, m + se, color=color, alpha=0.3, linewidth=0)
            del i
        ax.axhline(ref, color="black", linestyle="--", linewidth=1, label=ref_label)
        ax.set_xlabel("iteration t")
        ax.set_ylabel(ylabel)
        ax.legend(fontsize=7, frameon=False)
    axes[1].set_title("(b) mean ± SE path of β")
    axes[2].set_title("(b) mean ± SE path of Θ")
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig


def plot_bound_curve(table: pd.DataFrame, *, title: str | None = None) -> plt.Figure:
    """Fig. 2: bound (7) with unit constants against ``T`` (log-log).

    One curve: the bound and its optimisation, statistical and privacy terms, vertical
    lines at T1 and T2 (Remark 3.6) and T_max (condition (5)), the region past T_max
    shaded as invalid, and the minimiser T_opt marked. Several curves (a parameter
    varies): the bounds with their T_max lines in matching colours.

    Parameters
    ----------
    table : DataFrame
        Output of :func:`dpreg.experiments.liang2025_bound.summarise_iv_bound_curve`.
    title : str, optional
        Figure title.
    """
    sns.set_theme(style="whitegrid", context="paper")
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    curves = list(dict.fromkeys(table["curve"]))
    t_hi = float(table["T"].max())
    t_lo = float(table["T"].min())
    if len(curves) == 1:
        c = table.sort_values("T")
        palette = sns.color_palette("colorblind", 3)
        ax.plot(c["T"], c["bound"], color="black", linewidth=2.2, label="bound (7)")
        for name, color in zip(("optimisation", "statistical", "privacy"), palette, strict=True):
            ax.plot(c["T"], c[name], color=color, linestyle="--", linewidth=1.2, label=name)
        first = c.iloc[0]
        for key, label in (("T1", "$T_1$"), ("T2", "$T_2$"), ("T_max", r"$T_{\max}$")):
            v = float(first[key])
            if math.isfinite(v) and t_lo <= v <= t_hi:
                ax.axvline(v, color="grey", linestyle=":", linewidth=1.2)
                ax.text(
                    v, 0.98, f" {label}", transform=ax.get_xaxis_transform(), va="top", fontsize=8
                )
        tmax = float(first["T_max"])
        if math.isfinite(tmax) and tmax < t_hi:
            ax.axvspan(tmax, t_hi, color="red", alpha=0.08, label="invalid: (5) fails")
        t_opt = float(first["T_opt"])
        ax.plot(
            [t_opt],
            [float(first["bound_at_T_opt"])],
            marker="*",
            color="black",
            ms=9,
            linestyle="none",
            label=f"optimal T = {int(t_opt)}",
        )
        lower = 0.3 * float(np.nanmin(c["bound"]))
        ax.set_ylim(lower, None)
    else:
        params = table.drop_duplicates("curve")
        keys = _varying(params, ("n", "p", "q", "rho1", "rho2", "kappa", "tau"))
        palette = sns.color_palette("colorblind", len(curves))
        shared = params["T_max"].nunique() == 1
        for color, cid in zip(palette, curves, strict=True):
            c = table[table["curve"] == cid].sort_values("T")
            first = c.iloc[0]
            ax.plot(c["T"], c["bound"], color=color, linewidth=1.6, label=_hue_label(first, keys))
            tmax = float(first["T_max"])
            if math.isfinite(tmax) and t_lo <= tmax <= t_hi:
                ax.axvline(tmax, color="grey" if shared else color, linestyle=":", linewidth=1.2)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("iterations T")
    ax.set_ylabel("error bound (unit constants)")
    ax.legend(fontsize=7, frameon=False)
    if title:
        ax.set_title(title, fontsize=9)
    fig.tight_layout()
    return fig
