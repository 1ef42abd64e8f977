r"""IHM's train MSE against its mixing level gamma at a fixed budget (Lev et al. 2026).

Study kind ``lev_gamma_sweep``: why IHM with the authors' gamma (``ihm_code``, a larger
gamma, so more mixing noise) beats IHM with the exact gamma (``ihm``) at small epsilon on
Solar and Concrete Slump in Fig. 1 (docs/lev2026.md, "IHM with the authors' gamma"). At
one (dataset, epsilon) the run fits IHM (Algorithm 1, :func:`~dpreg.estimators.ihm.fit_ihm`)
with its mixing level set by hand to

* the exact gamma :math:`\gamma_{\rm exact}` (``ihm_gamma(..., "rdp")``, the default fit),
* :math:`f\gamma_{\rm exact}` for every factor ``f`` of ``gamma_factor`` (all >= 1), and
* the authors' code's gamma :math:`\gamma_{\rm code}` (``ihm_gamma(..., "code")``),

everything else fixed (T, k, :math:`\sigma` of the exact calibration, :math:`\delta =
1/n^2`). Every gamma is at least the smallest certifying one, so every fit is
:math:`(\varepsilon, \delta)`-DP and spends at most the target (``spent_epsilon`` is the
exact epsilon at its gamma). All points of a chunk draw from the *same* stream
``default_rng([seed, 0])`` (common random numbers: the same standard normals scaled by a
different gamma), so the differences between points are paired per trial and their
standard errors are those of the paired differences.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dpreg.data.datasets import Dataset
from dpreg.estimators.ihm import ihm_gamma, ihm_sketch_size
from dpreg.experiments.params import (
    KindParams,
    at_least,
    cell_conversion,
    finite,
    param,
    positive_finite,
    positive_integer,
)
from dpreg.experiments.regression import ols_fit, run_eps_cell, study_delta
from dpreg.experiments.study_kind import StudyKind

__all__ = [
    "GAMMA_SWEEP",
    "GammaSweepParams",
    "gamma_points",
    "run_gamma_sweep_cell",
    "summarise_gamma_sweep",
]


@dataclass(frozen=True)
class GammaSweepParams(KindParams):
    """Cell keys of the ``lev_gamma_sweep`` kind (IHM's MSE against its mixing level)."""

    kind = "lev_gamma_sweep"
    dataset: str = param(doc="a dataset declared under `datasets` (prepared, bounded rows)")
    epsilon: float = param(doc="the per-trial epsilon (delta = 1/n^2)", check=positive_finite)
    gamma_factor: list[float] = param(
        doc="gamma / gamma_exact of the swept points (each >= 1, so each certifies); the"
        " exact gamma (factor 1) and the authors' code's gamma are always added",
        check=finite(at_least(1.0)),
    )
    T: int = param(3, doc="IHM's iterations T", check=positive_integer)
    bound_X: float = param(1.0, doc="public bound on max row norm", check=positive_finite)
    bound_y: float = param(1.0, doc="public bound on max abs(y)", check=positive_finite)


def gamma_points(
    epsilon: float, n: int, d: int, T: int, factors: Sequence[float]
) -> list[tuple[str, float, float]]:
    """Return the swept points ``(point, gamma, gamma / gamma_exact)``, sorted by gamma.

    ``point`` is ``"exact"``, ``"code"`` or ``"factor"``; k and delta as :func:`fit_ihm`
    takes them by default (``delta = 1/n^2``, ``k = ihm_sketch_size(d, T, delta / 10)``).

    Examples
    --------
    >>> pts = gamma_points(0.1, 92, 7, 3, [2.0])
    >>> [p for p, _, _ in pts]
    ['exact', 'code', 'factor']
    >>> round(pts[1][1] / pts[0][1], 3)  # the code's gamma over the exact one (Concrete Slump)
    1.357
    """
    delta = study_delta(n, "inverse_n_squared")
    k = ihm_sketch_size(d, T, delta / 10.0)
    exact = ihm_gamma(float(epsilon), delta, k, T, "rdp")
    code = ihm_gamma(float(epsilon), delta, k, T, "code")
    points = {("exact", exact, 1.0), ("code", code, code / exact)}
    points |= {("factor", f * exact, float(f)) for f in factors if float(f) != 1.0}
    return sorted(points, key=lambda p: (p[1], p[0]))


def run_gamma_sweep_cell(
    cell: Mapping[str, Any], *, trials: int, first_trial: int, seed: int, data: Dataset | None
) -> pd.DataFrame:
    """IHM at every swept gamma on one dataset, one row per (point, trial).

    Columns: those of :func:`~dpreg.experiments.regression.run_eps_cell` plus ``point``,
    ``gamma``, ``gamma_factor``, ``gamma_exact``, ``gamma_code`` and ``mse_zero`` (train
    MSE of theta = 0, the limit of IHM as gamma grows: the mixing noise then dominates
    the sketched Hessian and the steps vanish).
    """
    if data is None:
        raise ValueError("a lev_gamma_sweep cell needs a dataset")
    P = GammaSweepParams.from_cell(cell)
    n, d = data.X.shape
    points = gamma_points(P.epsilon, n, d, P.T, P.gamma_factor)
    exact = next(g for p, g, _ in points if p == "exact")
    code = next(g for p, g, _ in points if p == "code")
    frames = []
    theta_ols = ols_fit(data.X, data.y)  # once for every point: the same rows
    for point, gamma, factor in points:
        runs = run_eps_cell(
            data.X,
            data.y,
            estimator="ihm",
            epsilon=float(P.epsilon),
            delta=study_delta(n, "inverse_n_squared"),
            trials=trials,
            seed=seed,
            stream=0,  # common random numbers across the points (module docstring)
            first_trial=first_trial,
            hyper={"T": int(P.T), "gamma": gamma},
            bound_X=float(P.bound_X),
            bound_y=float(P.bound_y),
            conversion=cell_conversion(cell),
            theta_ols=theta_ols,
        )
        runs.insert(0, "point", point)
        runs["gamma"] = gamma
        runs["gamma_factor"] = factor
        runs["gamma_exact"] = exact
        runs["gamma_code"] = code
        runs["mse_zero"] = float(np.mean(data.y**2))  # theta = 0: the limit gamma -> inf
        frames.append(runs)
    out = pd.concat(frames, ignore_index=True)
    out.insert(0, "dataset", P.dataset)
    return out


def summarise_gamma_sweep(
    runs: pd.DataFrame, references: Sequence[Mapping[str, Any]]
) -> pd.DataFrame:
    """Per (dataset, epsilon, gamma): mean train MSE +- SE and paired differences.

    ``diff_exact`` / ``se_diff_exact`` / ``z_exact``: mean over trials of MSE at this gamma
    minus MSE at the exact gamma (same trial, same draws) and its standard error;
    ``diff_previous`` / ``se_diff_previous``: the same against the next smaller gamma.

    Examples
    --------
    >>> runs = pd.DataFrame({"dataset": "a", "epsilon": 0.1, "trial": [0, 1] * 2,
    ...     "point": ["exact"] * 2 + ["code"] * 2, "gamma": [10.0] * 2 + [20.0] * 2,
    ...     "gamma_factor": [1.0] * 2 + [2.0] * 2, "gamma_code": 20.0,
    ...     "mse": [1.0, 2.0, 0.5, 1.7], "mse_ols": 0.1, "spent_epsilon": 0.1})
    >>> t = summarise_gamma_sweep(runs, [])
    >>> t["diff_exact"].round(3).tolist(), t["se_diff_exact"].round(3).tolist()
    ([0.0, -0.4], [0.0, 0.1])
    """
    keys = ["dataset", "epsilon"]
    rows = []
    for (dataset, epsilon), cell in runs.groupby(keys, sort=True):
        wide = cell.pivot_table(index="trial", columns="gamma", values="mse")
        gammas = sorted(wide.columns)
        exact = cell.loc[cell["point"] == "exact", "gamma"].iloc[0]
        for i, gamma in enumerate(gammas):
            at = cell[cell["gamma"] == gamma]
            values = wide[gamma]
            d_exact = values - wide[exact]
            d_prev = values - wide[gammas[i - 1]] if i else values * 0.0
            m = len(values)
            rows.append(
                {
                    "dataset": dataset,
                    "epsilon": epsilon,
                    "point": at["point"].iloc[0],
                    "gamma": gamma,
                    "gamma_factor": float(at["gamma_factor"].iloc[0]),
                    "code_factor": float(at["gamma_code"].iloc[0] / exact),
                    "trials": m,
                    "mean": float(values.mean()),
                    "se": float(values.std(ddof=1) / np.sqrt(m)) if m > 1 else np.nan,
                    "diff_exact": float(d_exact.mean()),
                    "se_diff_exact": _se(d_exact),
                    "diff_previous": float(d_prev.mean()),
                    "se_diff_previous": _se(d_prev),
                    "mse_ols": float(at["mse_ols"].iloc[0]),
                    "mse_zero": float(at["mse_zero"].iloc[0]) if "mse_zero" in at else np.nan,
                    "spent_epsilon": float(at["spent_epsilon"].max()),
                }
            )
    table = pd.DataFrame(rows)
    table["ci_low"] = table["mean"] - 1.96 * table["se"]
    table["ci_high"] = table["mean"] + 1.96 * table["se"]
    with np.errstate(divide="ignore", invalid="ignore"):
        table["z_exact"] = np.where(
            table["se_diff_exact"] > 0, table["diff_exact"] / table["se_diff_exact"], 0.0
        )
    return table


def _se(values: pd.Series) -> float:
    m = len(values)
    return float(values.std(ddof=1) / np.sqrt(m)) if m > 1 else float("nan")


def _figure(table: pd.DataFrame, *, title: str | None = None) -> Any:
    from dpreg.plotting.lev2026 import figure_gamma_sweep

    return figure_gamma_sweep(table, title=title)


GAMMA_SWEEP = StudyKind(
    name="lev_gamma_sweep",
    run=run_gamma_sweep_cell,
    summarise=summarise_gamma_sweep,
    figure=_figure,
    params=GammaSweepParams,
)
