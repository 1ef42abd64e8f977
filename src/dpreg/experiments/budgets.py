"""Record a study's privacy budget in both units, with the conversion named.

Every result row carries ``epsilon``, ``delta``, ``rho``, the unit the study was
specified in and the conversion that links them, so no number is ambiguous.
"""

from __future__ import annotations

import math

from dpreg.privacy.budgets import ZCDP, ApproxDP, PureDP
from dpreg.privacy.conversions import eps_to_zcdp, zcdp_to_eps


def budget_columns(
    *, epsilon: float | None = None, rho: float | None = None, delta: float, conversion: str
) -> dict[str, object]:
    """Return the budget columns of a result row.

    Exactly one of ``epsilon`` (the study is specified in (epsilon, delta)-DP) or
    ``rho`` (specified in rho-zCDP) is given; the other unit is computed with
    ``conversion`` at the study's ``delta``.

    Notes
    -----
    For a study specified in (epsilon, delta), the recorded ``rho`` is the zCDP level
    whose conversion gives this epsilon (a reference scale, not an implication:
    approximate DP does not imply zCDP). For a study specified in rho, the recorded
    epsilon is a true guarantee, ``zcdp_to_eps(rho, delta, conversion)``.
    """
    if (epsilon is None) == (rho is None):
        raise ValueError("give exactly one of epsilon or rho")
    if epsilon is not None:
        ApproxDP(epsilon, delta)
        rho = eps_to_zcdp(epsilon, delta, method=conversion)
        unit = "epsilon_delta"
    else:
        ZCDP(rho)
        epsilon = zcdp_to_eps(rho, delta, method=conversion)
        unit = "rho_zcdp"
    return {
        "epsilon": float(epsilon),
        "delta": float(delta),
        "rho": float(rho),
        "budget_unit": unit,
        "conversion": conversion,
    }


def spent_columns(
    budget_spent: ZCDP | ApproxDP | PureDP | None, *, delta: float, conversion: str = "tight"
) -> dict[str, float]:
    """Return what an estimator certified for one release, in both units where defined.

    ``spent_epsilon``, ``spent_delta``, ``spent_rho``: a zCDP certificate gives its
    ``rho`` and the epsilon it implies at the study's ``delta`` (with ``conversion``);
    an (epsilon, delta) certificate gives its own pair and ``spent_rho = NaN``
    (approximate DP implies no zCDP level); a pure epsilon-DP certificate gives
    ``spent_delta = 0`` and the ``epsilon^2 / 2`` zCDP level it implies. ``None`` (not
    private, or not run): NaN.

    Examples
    --------
    >>> spent_columns(ApproxDP(1.0, 1e-6), delta=1e-6)
    {'spent_epsilon': 1.0, 'spent_delta': 1e-06, 'spent_rho': nan}
    """
    if budget_spent is None:
        return {"spent_epsilon": math.nan, "spent_delta": math.nan, "spent_rho": math.nan}
    if isinstance(budget_spent, PureDP):
        return {
            "spent_epsilon": float(budget_spent.epsilon),
            "spent_delta": 0.0,
            "spent_rho": float(budget_spent.to_zcdp().rho),
        }
    if isinstance(budget_spent, ZCDP):
        return {
            "spent_epsilon": float(zcdp_to_eps(budget_spent.rho, delta, method=conversion)),
            "spent_delta": float(delta),
            "spent_rho": float(budget_spent.rho),
        }
    return {
        "spent_epsilon": float(budget_spent.epsilon),
        "spent_delta": float(budget_spent.delta),
        "spent_rho": math.nan,
    }
