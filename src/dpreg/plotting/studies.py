"""Figure dispatch per study and deterministic saving."""

from __future__ import annotations

import os

import matplotlib.pyplot as plt
import pandas as pd

from dpreg.io import atomic_write
from dpreg.plotting.regression import plot_mse_vs_epsilon


def draw_study_figure(table: pd.DataFrame, *, title: str | None = None) -> plt.Figure:
    """Draw the figure of a study from its aggregated table."""
    return plot_mse_vs_epsilon(table, title=title)


def save_figure(
    figure: plt.Figure, png: str | os.PathLike[str], pdf: str | os.PathLike[str]
) -> None:
    """Save PNG and PDF without timestamps, so reruns are byte-identical."""
    atomic_write(
        png,
        lambda tmp: figure.savefig(
            tmp, format="png", dpi=150, bbox_inches="tight", metadata={"Software": None}
        ),
    )
    atomic_write(
        pdf,
        lambda tmp: figure.savefig(
            tmp,
            format="pdf",
            bbox_inches="tight",
            metadata={"CreationDate": None, "ModDate": None, "Producer": None, "Creator": None},
        ),
    )
    plt.close(figure)
