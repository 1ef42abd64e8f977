"""Figures of the Varshney et al. (2022) validation study, drawn from summary tables only.

* :func:`plot_sim` -- E1-E5: median excess risk with 10-90% bands against the grid axis
  that varies (N, sigma, d or kappa), one panel per value of the other varying axes,
  log-log, with the reference curves sigma^2 d / N and the exact OLS excess.
  With an ``n_star`` column (E5) one more panel shows the sample complexity
  :math:`N^*(d)` per method; methods that never reach the criterion on the grid are drawn
  as open triangles above the grid and listed as "n/a".
* :func:`plot_diagnostics` -- E6: per-step clip norm, true residual scale, clipped
  fraction and DP-STAT stop index (median, 10-90% band).
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

__all__ = ["METHOD_LABELS", "plot_diagnostics", "plot_sim"]

METHOD_LABELS = {
    "ambssgd": "DP-AMBSSGD (paper)",
    "ambssgd_margin": "DP-AMBSSGD, DP-STAT margin (non-paper)",
    "fixedclip": "fixed clip",
    "oracleclip": "oracle clip (non-private)",
    "sgd": "non-private SGD",
    "adassp": "AdaSSP",
    "dp_ssgd": "DP-SSGD (Alg. 1, FMT21; over-noised outside its regime)",
    "dp_sgd_tuned": "DP-SGD, grid-tuned on held-out replicates (non-private tuning)",
}
_AXES = ("n", "sigma", "d", "kappa")
_LINESTYLES = ("-", "--", ":", "-.")


def _label(method: str) -> str:
    if method.startswith("dp_sgd_c"):
        return f"DP-SGD Poisson, C scale {method[len('dp_sgd_c') :]}"
    return METHOD_LABELS.get(method, method)


def _xvalues(values: pd.Series, axis: str) -> np.ndarray:
    x = values.to_numpy(dtype=float)
    if axis == "sigma" and np.any(x == 0):
        positive = x[x > 0]
        x = np.where(x == 0, (positive.min() if positive.size else 1.0) / 10, x)
    return x


def plot_sim(table: pd.DataFrame, *, title: str | None = None) -> Any:
    """E1-E5 figure: median and 10-90% band of the excess risk (log-log)."""
    varying = [a for a in _AXES if a in table and table[a].nunique() > 1]
    x_axis = max(varying, key=lambda a: table[a].nunique()) if varying else "n"
    facets = [a for a in varying if a != x_axis]
    groups = list(table.groupby(facets, sort=True)) if facets else [((), table)]
    star_panel = "n_star" in table and x_axis == "n"
    panels = len(groups) + star_panel
    cols = min(3, panels)
    rows = math.ceil(panels / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(max(5.2 * cols, 11.0), 4.0 * rows), squeeze=False)
    methods = sorted(table["method"].unique())
    colours = dict(
        zip(
            methods,
            itertools.cycle(plt.rcParams["axes.prop_cycle"].by_key()["color"]),
            strict=False,
        )
    )
    eps_values = sorted(e for e in table["epsilon"].unique() if np.isfinite(e))
    styles = dict(zip(eps_values, itertools.cycle(_LINESTYLES), strict=False))
    for ax, (key, g) in zip(axes.ravel(), groups, strict=False):
        key = key if isinstance(key, tuple) else (key,)
        for (method, eps), c in g.groupby(["method", "epsilon"], sort=True):
            c = c.sort_values(x_axis)
            x = _xvalues(c[x_axis], x_axis)
            ok = c["median"] > 0
            label = _label(method) + ("" if not np.isfinite(eps) else f", ε={eps:g}")
            ax.plot(x[ok], c["median"][ok], color=colours[method], ls=styles.get(eps, "-"),
                    marker="o", ms=3, label=label)  # fmt: skip
            lo = np.maximum(c["q10"], c["median"] * 1e-6)
            ax.fill_between(x[ok], lo[ok], c["q90"][ok], color=colours[method], alpha=0.12)
        ref = g.drop_duplicates(x_axis).sort_values(x_axis)
        xr = _xvalues(ref[x_axis], x_axis)
        pos = (ref["sigma2_d_over_n"] > 0).to_numpy()
        if pos.any():
            ax.plot(xr[pos], ref["sigma2_d_over_n"][pos], "k--", lw=1, label=r"$\sigma^2 d/N$")
            ax.plot(xr[pos], ref["ols_expected"][pos], "k:", lw=1, label="OLS (exact)")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel({"n": "N", "sigma": "σ (0 drawn at min/10)", "d": "d", "kappa": "κ"}[x_axis])
        ax.set_ylabel(r"excess risk $\frac{1}{2}\|\bar w - w^*\|_H^2$")
        ax.set_title(", ".join(f"{a}={v:g}" for a, v in zip(facets, key, strict=True)) or "all")
    if star_panel:
        _plot_n_star(axes.ravel()[len(groups)], table, colours)
    spare = axes.ravel()[panels:]
    for ax in spare:
        ax.axis("off")
    handles, labels = axes.ravel()[0].get_legend_handles_labels()
    if title:
        fig.suptitle(title)
    if len(spare):  # the legend goes where the unused panels are
        fig.tight_layout(rect=(0, 0, 1, 0.96))
        box = spare[0].get_position()
        fig.legend(handles, labels, loc="upper left", bbox_to_anchor=(box.x0, box.y1),
                   ncol=1 + (len(spare) > 1), fontsize="x-small", frameon=False)  # fmt: skip
    else:
        fig.legend(handles, labels, loc="lower center", ncol=3, fontsize="small", frameon=False)
        legend_rows = math.ceil(len(labels) / 3)
        bottom = min(0.45, (0.45 + 0.17 * legend_rows) / fig.get_figheight())
        fig.tight_layout(rect=(0, bottom, 1, 0.96))
    return fig


def _plot_n_star(ax: Any, table: pd.DataFrame, colours: dict[str, Any]) -> None:
    """E5 panel: N*(d), with methods not reaching the criterion shown and listed as n/a."""
    keys = ["d", "kappa", "sigma", "epsilon", "method"]
    stars = table[table["method"] != "sgd"].groupby(keys, sort=True)
    stars = stars.agg(n_star=("n_star", "first"), reached=("n_star_reached", "first"),
                      n_max=("n", "max")).reset_index()  # fmt: skip
    top = float(table["n"].max()) * 1.6
    missing = []
    for (method, sigma, eps, kappa), g in stars.groupby(["method", "sigma", "epsilon", "kappa"]):
        g = g.sort_values("d")
        hit = g["reached"].astype(bool).to_numpy()
        label = f"{_label(method)}, σ={sigma:g}, ε={eps:g}" + (
            f", κ={kappa:g}" if kappa != 1 else ""
        )
        ax.plot(g["d"][hit], g["n_star"][hit], marker="o", color=colours[method], label=label)
        if (~hit).any():
            ax.plot(g["d"][~hit], np.full((~hit).sum(), top), ls="none", marker="^", mfc="none",
                    color=colours[method])  # fmt: skip
            ds = ", ".join(f"{v:g}" for v in g["d"][~hit])
            missing.append(f"{_label(method)}: n/a at d = {ds}")
    d = np.sort(table["d"].unique()).astype(float)
    n0 = float(table[table["d"] == d[0]]["n"].min())
    ax.plot(d, n0 * d / d[0], "k--", lw=1, label=r"$\propto d$")
    ax.plot(d, n0 * (d / d[0]) ** 1.5, "k:", lw=1, label=r"$\propto d^{1.5}$")
    ax.axhline(top, color="grey", lw=0.5)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("d")
    ax.set_ylabel(r"$N^*$ (median $\leq 2\times$ non-private)")
    ax.set_title("N*(d); open triangles: n/a (not reached)")
    note = "\n".join(missing) if missing else "every method reaches N* at every d"
    ax.text(0.98, 0.02, note, transform=ax.transAxes, va="bottom", ha="right",
            fontsize="x-small", bbox={"facecolor": "white", "alpha": 0.8, "lw": 0})  # fmt: skip
    ax.legend(fontsize="xx-small", loc="center left")


def plot_diagnostics(table: pd.DataFrame, *, title: str | None = None) -> Any:
    """E6 figure: per-step diagnostics of the adaptive clip (median, 10-90% band)."""
    panels = [
        ("zeta", r"clip norm $\zeta_t$", True),
        ("residual_scale", r"$\sqrt{\|w_t-w^*\|_H^2+\sigma^2}$", True),
        ("clip_fraction", "fraction of batch clipped", False),
        ("stop_index", "DP-STAT stop index", False),
    ]
    fig, axes = plt.subplots(2, 2, figsize=(11, 8))
    curves = list(table.groupby(["n", "d", "sigma", "epsilon", "method"], sort=True))
    colours = itertools.cycle(plt.rcParams["axes.prop_cycle"].by_key()["color"])
    for (key, g), colour in zip(curves, colours, strict=False):
        n, d, sigma, eps, method = key
        g = g.sort_values("step")
        label = f"{_label(method)}, N={n:g}, d={d:g}, σ={sigma:g}, ε={eps:g}"
        for ax, (col, name, log) in zip(axes.ravel(), panels, strict=True):
            if f"{col}_median" not in g or g[f"{col}_median"].isna().all():
                continue
            ax.plot(g["step"], g[f"{col}_median"], color=colour, marker="o", ms=3, label=label)
            ax.fill_between(g["step"], g[f"{col}_q10"], g[f"{col}_q90"], color=colour, alpha=0.12)
            ax.set_ylabel(name)
            ax.set_xlabel("step t")
            if log:
                ax.set_yscale("log")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=2, fontsize="small", frameon=False)
    if title:
        fig.suptitle(title)
    fig.tight_layout(rect=(0, 0.12, 1, 0.96))
    return fig
