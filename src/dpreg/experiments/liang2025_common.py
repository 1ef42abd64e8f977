r"""Helpers shared by the study kinds of Liang et al. (2025) (docs/liang2025.md).

The privacy budget keys of a cell and their checks, the budget columns of a row, the
certified budget of a fit and the per-trial clip statistics; used by
:mod:`dpreg.experiments.liang2025_synthetic` (``iv_synthetic``),
:mod:`dpreg.experiments.liang2025_angrist` (``iv_angrist``) and
:mod:`dpreg.experiments.liang2025_bound` (``iv_bound_curve``).

A privacy budget is given as ``rho_split: [rho1, rho2]`` or as separate ``rho1`` /
``rho2`` (``iv_angrist`` also accepts ``rho`` for ``rho1 = rho2 = rho``); a zCDP level
is a number > 0, and ``.inf`` (YAML's infinity) or one of the texts of
:data:`INF_STRINGS` means no noise in that stage (:func:`zcdp_level`,
:func:`as_rho`).

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
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np

from dpreg.experiments.budgets import budget_columns

__all__ = [
    "CALIBRATIONS",
    "INF_STRINGS",
    "as_rho",
    "budget_row",
    "budget_spent_rho",
    "check_budget_keys",
    "clip_stats",
    "finite",
    "half_open_interval",
    "iv_estimators",
    "scalar_diag",
    "stage_budgets",
    "trial_count",
    "zcdp_level",
]

CALIBRATIONS: tuple[str, ...] = ("exact", "paper")
"""Noise calibration of the DP estimators: their own accounting or Prop. 3.1's lambda."""

INF_STRINGS: tuple[str, ...] = ("inf", "+inf", ".inf", "infinity")
"""Texts read as an infinite zCDP level (no noise), compared after strip and lower case."""


# ---------------------------------------------------------------------- value checks


def zcdp_level(value: Any) -> str | None:
    """Check: a zCDP level > 0 (``.inf`` allowed) or one of the texts :data:`INF_STRINGS`.

    Examples
    --------
    >>> zcdp_level(1.0) is None and zcdp_level(".inf") is None
    True
    >>> zcdp_level("ten")
    "must be a number > 0 or one of the texts ['inf', '+inf', '.inf', 'infinity'] (no noise)"
    """
    if isinstance(value, str):
        if value.strip().lower() in INF_STRINGS:
            return None
        return f"must be a number > 0 or one of the texts {list(INF_STRINGS)} (no noise)"
    return None if value > 0 else "must be > 0 (.inf: no noise)"


zcdp_level.text = "> 0; `.inf` or the text `inf`, `+inf`, `.inf`, `infinity`: no noise"  # type: ignore[attr-defined]


def finite(value: Any) -> str | None:
    """Check: a finite number (any sign)."""
    return None if math.isfinite(value) else "must be finite"


finite.text = "finite"  # type: ignore[attr-defined]


def half_open_interval(low: float, high: float):
    """Check: a number in ``[low, high)``."""

    def check(value: Any) -> str | None:
        return None if low <= value < high else f"must lie in [{low:g}, {high:g})"

    check.text = f"in [{low:g}, {high:g})"  # type: ignore[attr-defined]
    return check


def as_rho(value: float | str) -> float:
    """Return a checked zCDP level (:func:`zcdp_level`) as a float (``inf``: no noise)."""
    if isinstance(value, str):
        if value.strip().lower() not in INF_STRINGS:
            raise ValueError(f"a zCDP level must be a number or one of {list(INF_STRINGS)}")
        return math.inf
    return float(value)


def trial_count(trials: Any) -> int:
    """Return ``trials`` (the workflow's block size) as an int >= 1; ``ValueError`` if not."""
    if isinstance(trials, bool) or not isinstance(trials, int | np.integer) or trials < 1:
        raise ValueError(f"trials must be an integer >= 1; got {trials!r}")
    return int(trials)


# ------------------------------------------------------------------- budget of a cell


def check_budget_keys(
    kind: str,
    keys: Collection[str],
    *,
    rho_split: Sequence[float | str] | None,
    allow_rho: bool = False,
) -> None:
    """Check how a cell gives its budget: ``rho_split`` or ``rho1``/``rho2`` (or ``rho``).

    The values are checked by the kind's typed spec (:func:`zcdp_level`); this checks the
    rules across keys: ``rho_split`` is a pair and comes alone, and ``rho`` (both stages,
    only with ``allow_rho``) comes alone.

    Parameters
    ----------
    kind : str
        The kind named in the messages.
    keys : collection of str
        The keys the cell gives.
    rho_split : sequence or None
        The cell's ``rho_split``.
    allow_rho : bool
        Whether the kind takes ``rho`` for both stages (``iv_angrist``).

    Raises
    ------
    ValueError
        Naming the kind and the keys.
    """
    given = [k for k in ("rho_split", "rho1", "rho2", "rho") if k in keys]
    if "rho" in given and not allow_rho:
        raise ValueError(f"{kind}: use rho_split: [rho1, rho2] or rho1/rho2, not rho")
    if "rho_split" in given:
        if len(given) > 1:
            raise ValueError(f"{kind}: give rho_split or rho1/rho2, not both; got {given}")
        if rho_split is None or len(rho_split) != 2:
            raise ValueError(f"{kind}: rho_split must be a pair [rho1, rho2]; got {rho_split!r}")
    if "rho" in given and len(given) > 1:
        raise ValueError(f"{kind}: give rho (both stages) or rho1/rho2, not both; got {given}")


def stage_budgets(
    *,
    rho_split: Sequence[float | str] | None,
    rho1: float | str,
    rho2: float | str,
    rho: float | str | None = None,
) -> tuple[float, float]:
    """Return ``(rho1, rho2)`` of a checked cell (:func:`check_budget_keys`).

    ``rho_split`` when given, else ``rho`` for both stages when given, else ``rho1`` and
    ``rho2`` (their specs default to ``inf``, no noise).
    """
    if rho_split is not None:
        return as_rho(rho_split[0]), as_rho(rho_split[1])
    if rho is not None:
        both = as_rho(rho)
        return both, both
    return as_rho(rho1), as_rho(rho2)


def budget_row(rho1: float, rho2: float, *, delta: float, conversion: str) -> dict[str, Any]:
    """Return ``rho1``, ``rho2`` and the budget columns of ``rho = rho1 + rho2``.

    ``epsilon`` is the composed level's guarantee at ``delta`` with ``conversion``
    (:func:`dpreg.experiments.budgets.budget_columns`); ``inf`` when a stage adds no
    noise.
    """
    cols = budget_columns(rho=rho1 + rho2, delta=float(delta), conversion=str(conversion))
    return {"rho1": rho1, "rho2": rho2, **cols}


def budget_spent_rho(fit: Any) -> float:
    """Return the zCDP level a fit's accountant certifies (``inf`` without noise)."""
    spent = getattr(fit, "budget_spent", None)
    if spent is None:
        return math.inf
    rho = getattr(spent, "rho", None)
    return float(rho) if rho is not None else math.nan


# ------------------------------------------------------------------ fits and diagnostics


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
