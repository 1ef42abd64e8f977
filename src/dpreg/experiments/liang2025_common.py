r"""Helpers shared by the study kinds of Liang et al. (2025) (docs/liang2025.md).

The privacy budget of a cell, the budget columns of a row, the certified budget of a fit
and the per-trial clip statistics; used by :mod:`dpreg.experiments.liang2025_synthetic`
(``iv_synthetic``), :mod:`dpreg.experiments.liang2025_angrist` (``iv_angrist``) and
:mod:`dpreg.experiments.liang2025_bound` (``iv_bound_curve``).

A privacy budget is given as ``rho_split: [rho1, rho2]`` or as separate ``rho1`` /
``rho2`` (``iv_angrist`` also accepts ``rho`` for ``rho1 = rho2 = rho``); ``.inf`` or
``"inf"`` means no noise in that stage.

Privacy bookkeeping (every row of ``iv_synthetic`` and ``iv_angrist``): ``rho1``,
``rho2``, ``rho = rho1 + rho2`` (the composed zCDP level of the released trajectories,
Prop. 3.1) and its ``epsilon`` at the cell's ``delta`` with the cell's ``conversion``.
Stages that add no noise record ``inf``; in particular Algorithm 3 records
``rho1 = inf`` and hence ``rho = inf``: its "rho2-zCDP" claim (Lemma F.1) is not
supported under replace-one neighbours because the non-private :math:`\Theta^{(t)}`
enters every per-sample gradient (docs/notes/liang2025.md §3.4, P8). The paper's claim is
kept in ``rho_claimed``. ``rho_certified`` is what the estimator's accountant certifies
(with ``calibration="paper"`` the paper's noise is :math:`\sqrt 2` larger than its own
accounting needs, so it certifies ``(rho1 + rho2) / 2``; docs/notes/liang2025.md §3.1,
P7).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from dpreg.experiments.budgets import budget_columns
from dpreg.privacy.conversions import DEFAULT_CONVERSION

__all__ = [
    "CALIBRATIONS",
    "budget_row",
    "budget_spent_rho",
    "clip_stats",
    "iv_estimators",
    "parse_rho",
    "scalar_diag",
]

CALIBRATIONS: tuple[str, ...] = ("exact", "paper")
DEFAULT_DELTA = 1e-5

_INF_STRINGS = {"inf", "+inf", ".inf", "infinity"}


# ----------------------------------------------------------------------- parsing helpers


def _float(value: Any, name: str, *, allow_inf: bool = False, positive: bool = True) -> float:
    if isinstance(value, str) and value.strip().lower() in _INF_STRINGS:
        value = math.inf
    if isinstance(value, bool):
        raise ValueError(f"{name} must be a number; got {value!r}")
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number; got {value!r}") from None
    if math.isnan(v) or (math.isinf(v) and not allow_inf) or (positive and v <= 0):
        what = "a positive number" if positive else "a finite number"
        raise ValueError(f"{name} must be {what}{' or inf' if allow_inf else ''}; got {value!r}")
    return v


def _int(value: Any, name: str, *, minimum: int = 1) -> int:
    if isinstance(value, bool):
        raise ValueError(f"{name} must be an integer; got {value!r}")
    try:
        v = int(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be an integer; got {value!r}") from None
    if v != value or v < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {value!r}")
    return v


def _choice(value: Any, name: str, choices: Sequence[str]) -> str:
    if value not in choices:
        raise ValueError(f"{name} must be one of {list(choices)}; got {value!r}")
    return str(value)


def _bool(value: Any, name: str) -> bool:
    if not isinstance(value, bool | np.bool_):
        raise ValueError(f"{name} must be true or false; got {value!r}")
    return bool(value)


def parse_rho(cell: Mapping[str, Any], *, allow_rho: bool = False) -> tuple[float, float]:
    """Return ``(rho1, rho2)`` from ``rho_split`` or ``rho1``/``rho2`` (default ``inf``).

    With ``allow_rho``, a key ``rho`` sets both stages (``rho1 = rho2 = rho``, as in the
    real-data figures).
    """
    given = [k for k in ("rho_split", "rho1", "rho2", "rho") if k in cell]
    if "rho" in given and not allow_rho:
        raise ValueError("use rho_split: [rho1, rho2] or rho1/rho2, not rho")
    if "rho_split" in given:
        if len(given) > 1:
            raise ValueError(f"give rho_split or rho1/rho2, not both; got {given}")
        split = cell["rho_split"]
        if not isinstance(split, list | tuple) or len(split) != 2:
            raise ValueError(f"rho_split must be a pair [rho1, rho2]; got {split!r}")
        return (
            _float(split[0], "rho_split[0]", allow_inf=True),
            _float(split[1], "rho_split[1]", allow_inf=True),
        )
    if "rho" in given:
        if len(given) > 1:
            raise ValueError(f"give rho (both stages) or rho1/rho2, not both; got {given}")
        r = _float(cell["rho"], "rho", allow_inf=True)
        return r, r
    return (
        _float(cell.get("rho1", math.inf), "rho1", allow_inf=True),
        _float(cell.get("rho2", math.inf), "rho2", allow_inf=True),
    )


def budget_row(rho1: float, rho2: float, cell: Mapping[str, Any]) -> dict[str, Any]:
    """Return ``rho1``, ``rho2`` and the budget columns of ``rho = rho1 + rho2``."""
    delta = _float(cell.get("delta", DEFAULT_DELTA), "delta")
    if delta >= 1:
        raise ValueError(f"delta must lie in (0, 1); got {delta!r}")
    conversion = str(cell.get("conversion", DEFAULT_CONVERSION))
    cols = budget_columns(rho=rho1 + rho2, delta=delta, conversion=conversion)
    return {"rho1": rho1, "rho2": rho2, **cols}


def budget_spent_rho(fit: Any) -> float:
    """Return the zCDP level a fit's accountant certifies (``inf`` without noise)."""
    spent = getattr(fit, "budget_spent", None)
    if spent is None:
        return math.inf
    rho = getattr(spent, "rho", None)
    return float(rho) if rho is not None else math.nan


def iv_estimators():
    """Return :mod:`dpreg.estimators.iv`, imported lazily (the kind registry loads fast)."""
    from dpreg.estimators import iv

    return iv


def clip_stats(diag: Mapping[str, Any], key: str, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Return the mean over steps and the last step of a clip fraction, per trial."""
    frac = diag.get(key)
    if frac is None:
        return np.full(k, np.nan), np.full(k, np.nan)
    frac = np.asarray(frac, dtype=np.float64).reshape(k, -1)
    return frac.mean(axis=1), frac[:, -1]


def scalar_diag(diag: Mapping[str, Any], key: str, k: int) -> np.ndarray:
    """Return a scalar diagnostic broadcast to ``k`` trials (NaN when absent)."""
    v = diag.get(key)
    if v is None:
        return np.full(k, np.nan)
    return np.broadcast_to(np.asarray(v, dtype=np.float64).reshape(-1), (k,)).copy()
