"""Record a study's privacy budget in both units, with the conversion named.

Every result row carries ``epsilon``, ``delta``, ``rho``, the unit the study was
specified in and the conversion that links them, so no number is ambiguous.
"""

from __future__ import annotations

from dpreg.privacy.budgets import ZCDP, ApproxDP
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
