r"""Liang et al. (2025) Fig. 2: study kind ``iv_bound_curve``.

Bound (7) of Theorem 3.1 with unit constants against ``T`` (:mod:`dpreg.theory.iv`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from dpreg.data.datasets import Dataset
from dpreg.experiments.liang2025_common import _float, _int, parse_rho
from dpreg.experiments.study_kind import StudyKind
from dpreg.theory import iv as theory

__all__ = [
    "IV_BOUND_CURVE",
    "check_iv_bound_cell",
    "run_iv_bound_curve",
    "summarise_iv_bound_curve",
]

BOUND_REQUIRED = frozenset({"n", "p", "q"})
BOUND_OPTIONAL = frozenset(
    {"rho_split", "rho1", "rho2", "kappa", "tau", "eps_exponent", "T_min", "T_max_grid", "num"}
)
BOUND_KEYS = BOUND_REQUIRED | BOUND_OPTIONAL
"""Cell keys of ``iv_bound_curve`` (see :func:`run_iv_bound_curve`)."""

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


def _bound_params(cell: Mapping[str, Any]) -> dict[str, Any]:
    rho1, rho2 = parse_rho(cell)
    params = {
        "n": _float(cell.get("n"), "n"),
        "p": _int(cell.get("p"), "p"),
        "q": _int(cell.get("q"), "q"),
        "rho1": rho1,
        "rho2": rho2,
        "kappa": float(cell.get("kappa", 0.8)),
        "tau": _float(cell.get("tau", 1.0), "tau"),
        "eps_exponent": _float(cell.get("eps_exponent", 0.0), "eps_exponent", positive=False),
        "T_min": _float(cell.get("T_min", 1.0), "T_min"),
        "T_max_grid": _float(cell.get("T_max_grid", 1e5), "T_max_grid"),
        "num": _int(cell.get("num", 200), "num", minimum=2),
    }
    # Validate through the theory module (raises ValueError naming the argument).
    theory.bound_curve(**{**params, "num": 2})
    return params


def check_iv_bound_cell(cell: Mapping[str, Any]) -> None:
    """Validate an ``iv_bound_curve`` cell."""
    _bound_params(cell)


def run_iv_bound_curve(
    cell: Mapping[str, Any],
    *,
    trials: int,
    first_trial: int,
    seed: int,
    data: Dataset | None = None,
) -> pd.DataFrame:
    r"""Fig. 2's parameters and thresholds, one row per (deterministic) trial.

    The bound (7) is deterministic; the study should use ``trials: 1``. The row holds
    the parameters (``n``, ``p``, ``q``, ``rho1``, ``rho2``, ``kappa`` (0.8), ``tau``
    (1), ``eps_exponent`` (0), grid ``T_min`` (1), ``T_max_grid`` (1e5), ``num`` (200))
    and the scalars ``A``, ``B``, ``T1``, ``T2``, ``T_max``, ``T_opt``,
    ``bound_at_T_opt``; :func:`summarise_iv_bound_curve` expands the curve.
    """
    params = _bound_params(cell)
    trials = _int(trials, "trials")
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
    required=BOUND_REQUIRED,
    optional=BOUND_OPTIONAL,
    check_cell=check_iv_bound_cell,
)
