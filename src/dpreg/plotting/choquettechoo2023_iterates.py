"""Figure of ``ftrl_iterate_bounds`` (Choquette-Choo et al. 2023, App. D.2-D.3).

:func:`plot_iterate_bounds` draws from the summary table only: the largest simulation /
bound ratio of each high-probability bound (Theorem D.4, Propositions D.6-D.8) against d,
and Lemma D.12's trace bound beside the simulated and exact noise covariance trace.
"""

from __future__ import annotations

from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

__all__ = ["plot_iterate_bounds"]

_LABELS = {"sgd": "Noisy-SGD", "nu_ftrl": "ν-Noisy-FTRL"}
_MARKERS = {"d4_iterate": "o", "d4_gradient": "s", "d6": "^", "d7": "v", "d8": "D"}


def plot_iterate_bounds(table: pd.DataFrame, *, title: str | None = None) -> Any:
    """Left: max simulation / bound per high-probability bound; right: Lemma D.12.

    Examples
    --------
    >>> t = pd.DataFrame({"d": [4, 4], "mechanism": ["sgd", "sgd"],
    ...                   "bound": ["d4_iterate", "d12"], "label": ["D.4", "D.12"],
    ...                   "type": ["high_probability", "expectation"],
    ...                   "max_ratio": [0.1, 0.3], "mean": [None, 1.0], "se": [None, 0.1],
    ...                   "exact": [None, 1.0], "bound_value": [None, 3.0]})
    >>> fig = plot_iterate_bounds(t)
    >>> len(fig.axes)
    2
    """
    sns.set_theme(style="whitegrid", context="paper")
    fig, (left, right) = plt.subplots(1, 2, figsize=(9.0, 3.8))
    colors = dict(zip(("sgd", "nu_ftrl"), sns.color_palette("colorblind", 2), strict=True))
    hp = table[table["type"] == "high_probability"]
    for (mech, key), g in hp.groupby(["mechanism", "bound"], sort=False):
        g = g.sort_values("d")
        left.plot(
            g["d"],
            g["max_ratio"],
            marker=_MARKERS.get(key, "o"),
            color=colors.get(mech, "black"),
            ms=4,
            lw=0.8,
            label=f"{_LABELS.get(mech, mech)}: {g['label'].iloc[0]}",
        )
    left.axhline(1.0, color="black", lw=0.8, ls="--")
    left.set_xscale("log", base=2)
    left.set_yscale("log")
    left.set_xlabel("d")
    left.set_ylabel("largest simulation / bound (steps t ≥ 1)")
    left.set_title("Thm D.4, Props D.6–D.8 (prob. 1 − p)", fontsize=9)
    left.legend(fontsize=5.5, ncol=1)
    ex = table[table["type"] == "expectation"]
    for mech, g in ex.groupby("mechanism", sort=False):
        g = g.sort_values("d")
        col = colors.get(mech, "black")
        name = _LABELS.get(mech, mech)
        right.errorbar(
            g["d"],
            g["mean"],
            yerr=g["se"],
            fmt="o",
            color=col,
            ms=4,
            capsize=2,
            label=f"{name} sim ± SE",
        )
        right.plot(g["d"], g["exact"], color=col, lw=1.0, label=f"{name} exact")
        right.plot(g["d"], g["bound_value"], color=col, lw=1.0, ls=":", label=f"{name} D.12 bound")
    right.set_xscale("log", base=2)
    right.set_yscale("log")
    right.set_xlabel("d")
    right.set_ylabel("Tr S_{T-1} = E||θ̃_{T-1} − θ*||²")
    right.set_title("Lemma D.12 (noise process from θ*)", fontsize=9)
    right.legend(fontsize=6)
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig
