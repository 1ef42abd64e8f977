r"""Liang et al. (2025) Fig. 2: study kind ``iv_bound_curve``.

The upper bound (7) of Theorem 3.1 with unit constants against ``T``,
:math:`\kappa^{T/2} + A\sqrt T + B` (optimisation, privacy and statistical terms), with
the regime thresholds ``T1``, ``T2``, condition (5)'s ``T_max`` and the optimal ``T``
(:mod:`dpreg.theory.iv`; docs/notes/liang2025.md §4.8). Deterministic: one row per
trial, the curve expanded by the summary.

A cell's keys, types and defaults are :class:`IVBoundParams` (tabulated in
``config/README.md``); :func:`check_iv_bound_cell` adds the rules across keys.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dpreg.data.datasets import Dataset
from dpreg.experiments.liang2025_common import (
    check_budget_keys,
    half_open_interval,
    stage_budgets,
    trial_count,
    zcdp_level,
)
from dpreg.experiments.params import (
    KindParams,
    at_least,
    param,
    positive_finite,
    positive_integer,
)
from dpreg.experiments.study_kind import StudyKind
from dpreg.theory import iv as theory

__all__ = [
    "BOUND_PARAMS",
    "IVBoundParams",
    "IV_BOUND_CURVE",
    "check_iv_bound_cell",
    "run_iv_bound_curve",
    "summarise_iv_bound_curve",
]

BOUND_PARAMS = (
    "n",
    "p",
    "q",
    "rho1",
    "rho2",
    "kappa",
    "tau",
    "eps_exponent",
    "T_min",
    "T_max_grid",
    "num",
)
"""Arguments of :func:`dpreg.theory.iv.bound_curve` recorded in every row."""


@dataclass(frozen=True)
class IVBoundParams(KindParams):
    """Cell keys of the ``iv_bound_curve`` kind (Fig. 2, bound (7) of Theorem 3.1).

    :meth:`curve_arguments` gives the arguments of :func:`dpreg.theory.iv.bound_curve`.
    """

    kind = "iv_bound_curve"
    n: float = param(doc="sample size n", check=positive_finite)
    p: int = param(doc="endogenous regressors p", check=positive_integer)
    q: int = param(doc="instruments q", check=positive_integer)
    rho_split: list[float | str] | None = param(
        None, doc="the budget as a pair [rho1, rho2] (instead of `rho1`, `rho2`)", check=zcdp_level
    )
    rho1: float | str = param(math.inf, doc="zCDP budget rho1 of the first stage", check=zcdp_level)
    rho2: float | str = param(
        math.inf, doc="zCDP budget rho2 of the second stage", check=zcdp_level
    )
    kappa: float = param(
        0.8,
        doc="contraction rate kappa of the optimisation term kappa^(T/2) (0.8 in Fig. 2)",
        check=half_open_interval(0, 1),
    )
    tau: float = param(1.0, doc="tau of the bound's log terms", check=positive_finite)
    eps_exponent: float = param(
        0.0,
        doc="the epsilon exponent of condition (5) (docs/notes/liang2025.md P15)",
        check=half_open_interval(0, 2),
    )
    T_min: float = param(1.0, doc="first T of the curve's grid", check=positive_finite)
    T_max_grid: float = param(
        1e5, doc="last T of the curve's grid (> `T_min`)", check=positive_finite
    )
    num: int = param(200, doc="points of the curve (log-spaced in T)", check=at_least(2))

    def curve_arguments(self) -> dict[str, Any]:
        """Return the keyword arguments of :func:`dpreg.theory.iv.bound_curve` (floats, ints)."""
        rho1, rho2 = stage_budgets(rho_split=self.rho_split, rho1=self.rho1, rho2=self.rho2)
        return {
            "n": float(self.n),
            "p": self.p,
            "q": self.q,
            "rho1": rho1,
            "rho2": rho2,
            "kappa": float(self.kappa),
            "tau": float(self.tau),
            "eps_exponent": float(self.eps_exponent),
            "T_min": float(self.T_min),
            "T_max_grid": float(self.T_max_grid),
            "num": self.num,
        }


def _curve_arguments(cell: Mapping[str, Any]) -> dict[str, Any]:
    """Return the checked arguments of the bound curve of a cell."""
    P = IVBoundParams.from_cell(cell)
    check_budget_keys(P.kind, set(cell), rho_split=P.rho_split)
    params = P.curve_arguments()
    # The rules across arguments (T_max_grid > T_min, ...) as the theory module checks them.
    try:
        theory.bound_curve(**{**params, "num": 2})
    except ValueError as err:
        raise ValueError(f"{P.kind}: {err}") from None
    return params


def check_iv_bound_cell(cell: Mapping[str, Any]) -> None:
    """Validate an ``iv_bound_curve`` cell: its typed spec, then the rules across keys.

    ``rho_split`` or ``rho1``/``rho2``, not both; the arguments together as
    :func:`dpreg.theory.iv.bound_curve` takes them (``T_max_grid > T_min``). Raises
    ``ValueError`` naming the kind.
    """
    _curve_arguments(cell)


def run_iv_bound_curve(
    cell: Mapping[str, Any],
    *,
    trials: int,
    first_trial: int,
    seed: int,
    data: Dataset | None = None,
) -> pd.DataFrame:
    r"""Fig. 2's parameters and thresholds, one row per (deterministic) trial.

    The bound (7) is deterministic; the study should use ``trials: 1``.

    Parameters
    ----------
    cell : mapping
        The keys of :class:`IVBoundParams` (checked by :func:`check_iv_bound_cell`).
    trials, first_trial, seed
        Rows to write, index of the first and the block's seed (recorded only).
    data : None
        Unused.

    Returns
    -------
    DataFrame
        One row per trial: ``trial``, ``seed``, the curve's arguments
        (:data:`BOUND_PARAMS`) and the scalars ``A``, ``B``, ``T1``, ``T2``, ``T_max``,
        ``T_opt``, ``bound_at_T_opt``; :func:`summarise_iv_bound_curve` expands the
        curve.
    """
    params = _curve_arguments(cell)
    trials = trial_count(trials)
    curve = theory.bound_curve(**{**params, "num": 2})
    first = curve.iloc[0]
    row = {
        **params,
        **{k: float(first[k]) for k in ("A", "B", "T1", "T2", "T_max", "bound_at_T_opt")},
        "T_opt": int(first["T_opt"]),
    }
    frame = pd.DataFrame([row] * trials)
    frame.insert(0, "trial", np.arange(first_trial, first_trial + trials, dtype=np.int64))
    frame.insert(1, "seed", np.full(trials, seed, dtype=np.uint64))
    return frame


def summarise_iv_bound_curve(
    runs: pd.DataFrame, references: Sequence[Mapping[str, Any]] = ()
) -> pd.DataFrame:
    """Expand each distinct parameter set of the runs into its Fig. 2 curve.

    Returns
    -------
    DataFrame
        :func:`dpreg.theory.iv.bound_curve` rows (``T``, ``bound``, the three terms,
        ``dominant``, ``regime``, ``T1``, ``T2``, ``T_max``, ``T_opt``, ...) with a
        ``curve`` index per parameter set.
    """
    params = runs[list(BOUND_PARAMS)].drop_duplicates().sort_values(list(BOUND_PARAMS))
    parts = []
    for i, (_, row) in enumerate(params.iterrows()):
        kw = row.to_dict()
        kw["p"], kw["q"], kw["num"] = int(kw["p"]), int(kw["q"]), int(kw["num"])
        curve = theory.bound_curve(**kw)
        curve.insert(0, "curve", i)
        parts.append(curve)
    return pd.concat(parts, ignore_index=True)


def _figure_bound(table: pd.DataFrame, *, title: str | None = None) -> Any:
    from dpreg.plotting.liang2025 import plot_bound_curve

    return plot_bound_curve(table, title=title)


IV_BOUND_CURVE = StudyKind(
    name="iv_bound_curve",
    run=run_iv_bound_curve,
    summarise=summarise_iv_bound_curve,
    figure=_figure_bound,
    params=IVBoundParams,
    check_cell=check_iv_bound_cell,
)
