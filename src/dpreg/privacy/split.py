r"""Split one (epsilon, delta) target between a zCDP first step and an estimator; compose.

The private standardisation (:mod:`dpreg.data.private_scaling`) spends a zCDP level
:math:`\rho_s` on the same rows before the estimator runs, so the guarantee of the whole
release is a sequential composition. Given the analyst's target
:math:`(\varepsilon, \delta)` and a share :math:`s \in (0, 1)`:

* :math:`\rho = ` ``eps_to_zcdp(epsilon, delta, "tight")`` (the total as a zCDP level,
  Canonne, Kamath & Steinke 2020, Cor. 13) and :math:`\rho_s = s\rho`.
* **zcdp route** (an estimator that certifies zCDP, e.g. DP-GD): the estimator gets
  what remains, :math:`\rho_e = \rho - \rho_s`, as the target
  :math:`\varepsilon_e = ` ``zcdp_to_eps(rho_e, delta)`` at the same :math:`\delta`;
  the certified levels add (Bun & Steinke 2016, Lemma 2.3) and the total
  :math:`\rho_s + \rho_e^{\rm cert}` converts back to at most :math:`\varepsilon` at
  :math:`\delta` (tight conversion).
* **basic route** (an estimator that certifies only :math:`(\varepsilon, \delta)`: AdaSSP,
  IHM, linear mixing, the sketch, the streaming methods, ...): zCDP levels cannot be
  added to an :math:`(\varepsilon, \delta)` certificate, so the first step is converted
  on its own at :math:`\delta_s = s\delta`, :math:`\varepsilon_s = ` ``zcdp_to_eps(rho_s,
  delta_s)``, and the estimator gets :math:`(\varepsilon - \varepsilon_s, (1 - s)\delta)`;
  basic composition (Dwork & Roth 2014, Thm. 3.16) gives
  :math:`(\varepsilon_s + \varepsilon_e^{\rm cert}, \delta_s + \delta_e^{\rm cert})`.
  Converting separately costs more: at :math:`\varepsilon = 1`, :math:`\delta = 10^{-6}`
  a share of 0.1 of :math:`\rho` is about a third of :math:`\varepsilon`.

The estimator's target is lowered by :data:`MARGIN` times :math:`\varepsilon` so that
rounding (in its own calibration, or in the first step's certified level) can never push
the composed total above the target.

Examples
--------
>>> split = split_target(1.0, 1e-6, 0.1, route="zcdp")
>>> round(split.rho_first / split.rho_total, 12), split.delta_rest
(0.1, 1e-06)
>>> from dpreg.privacy.budgets import ZCDP
>>> total = compose_spent(split, ZCDP(split.rho_total - split.rho_first))
>>> total["epsilon"] <= 1.0, total["composition"]
(True, 'zcdp')
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from dpreg._validation import check_positive, check_probability
from dpreg.privacy.budgets import ZCDP, ApproxDP, PureDP
from dpreg.privacy.conversions import eps_to_zcdp, zcdp_to_eps

__all__ = ["MARGIN", "ROUTES", "SequentialSplit", "compose_spent", "split_target"]

#: The two ways of composing the first step with the estimator (module docstring).
ROUTES = ("zcdp", "basic")
#: Margin, relative to epsilon, taken off the estimator's target (rounding).
MARGIN = 1e-9


@dataclass(frozen=True)
class SequentialSplit:
    r"""How a target is split between a zCDP first step and an estimator.

    Attributes
    ----------
    epsilon, delta : float
        The analyst's total target.
    share : float
        :math:`s`, the first step's share of :math:`\rho`.
    route : {"zcdp", "basic"}
    rho_total : float
        :math:`\rho`, the total target as a zCDP level (tight conversion).
    rho_first : float
        :math:`\rho_s = s\rho`, the first step's zCDP level.
    epsilon_first, delta_first : float
        Basic route: the first step's :math:`(\varepsilon_s, \delta_s)`; zcdp route:
        NaN and 0 (the first step is accounted in zCDP).
    epsilon_rest, delta_rest : float
        The estimator's target.
    """

    epsilon: float
    delta: float
    share: float
    route: str
    rho_total: float
    rho_first: float
    epsilon_first: float
    delta_first: float
    epsilon_rest: float
    delta_rest: float

    def to_dict(self) -> dict[str, Any]:
        """Return the split as a JSON-able dict (NaN as ``None``)."""
        return {
            k: (None if isinstance(v, float) and math.isnan(v) else v)
            for k, v in self.__dict__.items()
        }


def split_target(epsilon: float, delta: float, share: float, *, route: str) -> SequentialSplit:
    r"""Split the target :math:`(\varepsilon, \delta)` (module docstring).

    Parameters
    ----------
    epsilon : float
        Total target, finite and > 0.
    delta : float
        Total target, in (0, 1).
    share : float
        The first step's share of the zCDP level, in (0, 1).
    route : {"zcdp", "basic"}
        ``"zcdp"`` when the estimator certifies zCDP, else ``"basic"``.

    Returns
    -------
    SequentialSplit

    Raises
    ------
    ValueError
        A value out of range, or a share that leaves the estimator no
        :math:`\varepsilon`.

    Examples
    --------
    >>> split = split_target(1.0, 1e-6, 0.1, route="basic")
    >>> round(split.epsilon_first, 3), round(split.epsilon_rest, 3), split.delta_first
    (0.328, 0.672, 1e-07)
    """
    epsilon = check_positive(epsilon, "epsilon")
    delta = check_probability(delta, "delta")
    if isinstance(share, bool) or not isinstance(share, int | float) or not 0 < share < 1:
        raise ValueError(f"share must be a number in (0, 1); got {share!r}")
    if route not in ROUTES:
        raise ValueError(f"route must be one of {ROUTES}; got {route!r}")
    rho_total = eps_to_zcdp(epsilon, delta, method="tight")
    rho_first = share * rho_total
    if route == "zcdp":
        eps_rest = zcdp_to_eps(rho_total - rho_first, delta, method="tight") - MARGIN * epsilon
        if not eps_rest > 0:
            raise ValueError(
                f"a share of {share:g} of rho leaves the estimator no epsilon at delta"
                f" {delta:g}: lower the share"
            )
        return SequentialSplit(
            epsilon, delta, float(share), route, rho_total, rho_first, math.nan, 0.0,
            eps_rest, delta,
        )  # fmt: skip
    delta_first = share * delta
    eps_first = zcdp_to_eps(rho_first, delta_first, method="tight")
    if not eps_first < epsilon * (1 - 2 * MARGIN):
        raise ValueError(
            f"a share of {share:g} of rho costs epsilon {eps_first:.4g} >= {epsilon:g} on its"
            " own (at delta share * delta): lower the share"
        )
    return SequentialSplit(
        epsilon, delta, float(share), route, rho_total, rho_first, eps_first, delta_first,
        epsilon - eps_first - MARGIN * epsilon, (delta - delta_first) * (1 - MARGIN),
    )  # fmt: skip


def compose_spent(
    split: SequentialSplit, spent: Any, *, rho_first: float | None = None
) -> dict[str, Any]:
    r"""Compose the first step with the estimator's certificate ``spent``.

    Parameters
    ----------
    split : SequentialSplit
    spent : ZCDP, ApproxDP or PureDP
        What the estimator certified, computed from its noise.
    rho_first : float, optional
        What the first step certified from its noise (default: the split's
        ``rho_first``); the basic route converts it at ``delta_first``.

    Returns
    -------
    dict
        ``epsilon``, ``delta``, ``rho`` (NaN when the total has no zCDP level),
        ``composition`` (the route) and ``conversion``.

    Raises
    ------
    TypeError
        The zcdp route with a certificate that is not zCDP (the split assumed one).

    Examples
    --------
    >>> from dpreg.privacy.budgets import ApproxDP
    >>> split = split_target(1.0, 1e-6, 0.1, route="basic")
    >>> total = compose_spent(split, ApproxDP(split.epsilon_rest, split.delta_rest))
    >>> total["epsilon"] <= 1.0, total["delta"] <= 1e-6, total["composition"]
    (True, True, 'basic')
    """
    first = split.rho_first if rho_first is None else check_positive(rho_first, "rho_first")
    if split.route == "zcdp":
        if not isinstance(spent, ZCDP):
            raise TypeError(
                f"the zcdp route needs a zCDP certificate from the estimator; got {spent!r}"
            )
        rho = first + spent.rho
        return {
            "epsilon": zcdp_to_eps(rho, split.delta, method="tight"),
            "delta": split.delta,
            "rho": rho,
            "composition": "zcdp",
            "conversion": "tight",
        }
    if isinstance(spent, ZCDP):  # valid too: convert the estimator's level at its delta
        eps_rest = zcdp_to_eps(spent.rho, split.delta_rest, method="tight")
        delta_rest = split.delta_rest
    elif isinstance(spent, PureDP):
        eps_rest, delta_rest = spent.epsilon, 0.0
    elif isinstance(spent, ApproxDP):
        eps_rest, delta_rest = spent.epsilon, spent.delta
    else:
        raise TypeError(f"spent must be a ZCDP, ApproxDP or PureDP budget; got {spent!r}")
    eps_first = zcdp_to_eps(first, split.delta_first, method="tight")
    return {
        "epsilon": eps_first + eps_rest,
        "delta": split.delta_first + delta_rest,
        "rho": math.nan,
        "composition": "basic",
        "conversion": "tight (first step at delta_first), basic composition",
    }
