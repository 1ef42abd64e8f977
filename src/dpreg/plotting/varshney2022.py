"""Figures of the Varshney et al. (2022) validation study, drawn from summary tables only.

* :func:`plot_sim` -- E1-E5: median excess risk with 10-90% bands against the grid axis
  that varies (N, sigma, d or kappa), one panel per value of the other varying axes,
  log-log, with the reference curves sigma^2 d / N and the exact OLS excess.
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
    cols = min(3, len(groups))
    rows = math.ceil(len(groups) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 4.0 * rows), squeeze=False)
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
    for ax in axes.ravel()[len(groups) :]:
        ax.axis("off")
    handles, labels = axes.ravel()[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize="small", frameon=False)
    if title:
        fig.suptitle(title)
    fig.tight_layout(rect=(0, 0.12, 1, 0.96))
    return fig


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
