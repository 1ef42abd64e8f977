"""Lev et al.'s error-against-epsilon grid: fixed facet titles draw as automatic placement."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from dpreg.plotting.regression import plot_mse_vs_epsilon


def _table(datasets: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for k in range(datasets):
        mse_ols = float(10.0 ** rng.uniform(-3, 1))
        for estimator in ("ihm", "linear_mixing", "adassp"):
            for eps in (0.1, 0.3, 1.0, 3.0, 10.0):
                mean = mse_ols * (1 + 10.0 ** rng.uniform(-2, 3) / eps)
                rows.append(
                    {
                        "dataset": f"data{k}",
                        "estimator": estimator,
                        "epsilon": eps,
                        "mean": mean,
                        "ci_low": mean * 0.8,
                        "ci_high": mean * 1.25,
                        "mse_ols": mse_ols,
                    }
                )
    return pd.DataFrame(rows)


def _bytes(figure, fmt: str) -> bytes:
    buffer = io.BytesIO()
    metadata = {"Software": None} if fmt == "png" else {"CreationDate": None, "Producer": None}
    figure.savefig(buffer, format=fmt, dpi=100, bbox_inches="tight", metadata=metadata)
    return buffer.getvalue()


@pytest.mark.parametrize(("datasets", "seed"), [(1, 0), (7, 1)])
def test_fixed_facet_titles_give_the_bytes_of_automatic_placement(datasets, seed):
    # plot_mse_vs_epsilon sets its facet titles at y = 1.0, which turns off matplotlib's
    # automatic title placement (a search over the axes' decorations at every draw).
    # Turning it back on (the axes' private switch) must change no byte: on log axes with
    # the ticks at the bottom the automatic search leaves every title at 1.0.
    import matplotlib.pyplot as plt

    figure = plot_mse_vs_epsilon(_table(datasets, seed), title="a title")
    axes = [ax for ax in figure.axes if ax.get_title()]
    assert len(axes) == datasets
    assert all(ax.title.get_position()[1] == 1.0 and ax._autotitlepos is False for ax in axes)
    fixed = {fmt: _bytes(figure, fmt) for fmt in ("png", "pdf")}
    for ax in axes:
        ax._autotitlepos = True
    automatic = {fmt: _bytes(figure, fmt) for fmt in ("png", "pdf")}
    assert all(ax.title.get_position()[1] == 1.0 for ax in axes)
    assert fixed == automatic
    plt.close(figure)
