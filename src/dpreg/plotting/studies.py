"""Deterministic saving of figures (no timestamps, atomic)."""

from __future__ import annotations

import os

import matplotlib.pyplot as plt

from dpreg.io import atomic_write


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
