"""Privacy budget types: rho-zCDP and (epsilon, delta)-DP.

Both are frozen value objects; composition of budgets of one kind is addition
(Bun & Steinke 2016, Lemma 2.3 for zCDP; basic composition for approximate DP).
Conversions between the two live in :mod:`dpreg.privacy.conversions`.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any

from dpreg._validation import check_positive, check_probability


def _real(value: object, name: str) -> float:
    """``value`` as a float; ``TypeError`` for bool, str, None, complex (named)."""
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        raise TypeError(f"{name} must be a real number, not a boolean; got {value!r}")
    if not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number; got {value!r} ({type(value).__name__})")
    return float(value)


@dataclass(frozen=True)
class ZCDP:
    """A rho-zCDP guarantee (Bun & Steinke 2016).

    Parameters
    ----------
    rho : float
        Must be > 0 (``math.inf`` means no privacy, used for noiseless limits).

    Examples
    --------
    >>> ZCDP(0.5) + ZCDP(0.25)
    ZCDP(rho=0.75)
    >>> ZCDP(1.0).split(1, 3)
    (ZCDP(rho=0.25), ZCDP(rho=0.75))
    """

    rho: float

    def __post_init__(self) -> None:
        rho = _real(self.rho, "rho")
        if not (rho > 0) or math.isnan(rho):
            raise ValueError(f"rho must be > 0 (got rho={self.rho!r}); rho=inf means no noise")
        object.__setattr__(self, "rho", rho)

    def __add__(self, other: ZCDP) -> ZCDP:
        if not isinstance(other, ZCDP):
            return NotImplemented
        return ZCDP(self.rho + other.rho)

    def split(self, *weights: float) -> tuple[ZCDP, ...]:
        """Split rho proportionally to positive ``weights`` (sequential composition)."""
        total = math.fsum(weights)
        if not weights or any(w <= 0 for w in weights):
            raise ValueError(f"weights must be positive (got {weights!r})")
        return tuple(ZCDP(self.rho * w / total) for w in weights)

    @property
    def is_infinite(self) -> bool:
        """True for rho = inf (no privacy; the noiseless limit)."""
        return math.isinf(self.rho)

    def to_approx_dp(self, delta: float, method: str = "tight") -> ApproxDP:
        """Convert to (epsilon, delta)-DP at ``delta``.

        See :func:`dpreg.privacy.conversions.zcdp_to_approx_dp`: ``"tight"`` is
        Canonne, Kamath & Steinke (2020), Cor. 13; ``"simple"`` is Bun & Steinke
        (2016), Prop. 1.3.
        """
        from dpreg.privacy.conversions import zcdp_to_approx_dp

        return zcdp_to_approx_dp(self, delta, method)


@dataclass(frozen=True)
class ApproxDP:
    """An (epsilon, delta)-DP guarantee (Dwork & Roth 2014, Def. 2.4).

    Parameters
    ----------
    epsilon : float
        Must be > 0 (``math.inf`` means no privacy).
    delta : float
        Must lie in the open interval (0, 1).

    Examples
    --------
    >>> ApproxDP(1.0, 1e-6).split(1, 1)
    (ApproxDP(epsilon=0.5, delta=5e-07), ApproxDP(epsilon=0.5, delta=5e-07))
    """

    epsilon: float
    delta: float

    def __post_init__(self) -> None:
        eps, delta = _real(self.epsilon, "epsilon"), _real(self.delta, "delta")
        if not (eps > 0) or math.isnan(eps):
            raise ValueError(f"epsilon must be > 0 (got epsilon={self.epsilon!r})")
        if not (0.0 < delta < 1.0):
            raise ValueError(f"delta must lie in (0, 1) (got delta={self.delta!r})")
        object.__setattr__(self, "epsilon", eps)
        object.__setattr__(self, "delta", delta)

    def __add__(self, other: ApproxDP) -> ApproxDP:
        if not isinstance(other, ApproxDP):
            return NotImplemented
        return ApproxDP(self.epsilon + other.epsilon, self.delta + other.delta)

    def split(self, *weights: float) -> tuple[ApproxDP, ...]:
        """Split epsilon and delta proportionally to ``weights`` (basic composition)."""
        total = math.fsum(weights)
        if not weights or any(w <= 0 for w in weights):
            raise ValueError(f"weights must be positive (got {weights!r})")
        return tuple(ApproxDP(self.epsilon * w / total, self.delta * w / total) for w in weights)

    @property
    def is_infinite(self) -> bool:
        """True for epsilon = inf (no privacy; the noiseless limit)."""
        return math.isinf(self.epsilon)

    def to_zcdp(self, method: str = "tight") -> ZCDP:
        """Largest rho-zCDP budget that converts back to at most this (epsilon, delta).

        A calibration target (a rho-zCDP mechanism with this rho is (epsilon, delta)-DP),
        not an implication: (epsilon, delta)-DP does not imply zCDP.

        See :func:`dpreg.privacy.conversions.approx_dp_to_zcdp` (Canonne, Kamath &
        Steinke 2020, Cor. 13, or Bun & Steinke 2016, Prop. 1.3, inverted).
        """
        from dpreg.privacy.conversions import approx_dp_to_zcdp

        return approx_dp_to_zcdp(self, method)


@dataclass(frozen=True)
class PureDP:
    """A pure epsilon-DP guarantee (delta = 0): a certificate, not an estimator's target.

    dpreg's estimators take (epsilon, delta) or zCDP targets; this type reports what a
    pure-DP mechanism (e.g. the diffprivlib peer of the benchmark) certifies, in both
    units: it implies (epsilon, delta)-DP for every delta and (epsilon^2 / 2)-zCDP
    (Bun & Steinke 2016, Prop. 1.4).

    Examples
    --------
    >>> PureDP(1.0).to_zcdp()
    ZCDP(rho=0.5)
    >>> PureDP(1.0).to_approx_dp(1e-6)
    ApproxDP(epsilon=1.0, delta=1e-06)
    """

    epsilon: float

    def __post_init__(self) -> None:
        eps = _real(self.epsilon, "epsilon")
        if not (eps > 0) or math.isnan(eps):
            raise ValueError(f"epsilon must be > 0 (got epsilon={self.epsilon!r})")
        object.__setattr__(self, "epsilon", eps)

    def to_zcdp(self) -> ZCDP:
        """Return the zCDP level it implies, epsilon^2 / 2 (Bun & Steinke 2016, Prop. 1.4)."""
        return ZCDP(self.epsilon**2 / 2.0)

    def to_approx_dp(self, delta: float) -> ApproxDP:
        """Return the (epsilon, delta) guarantee it implies at any ``delta``."""
        return ApproxDP(self.epsilon, delta)


Budget = ZCDP | ApproxDP


def check_budget(budget: Any, kind: type | tuple[type, ...] = (ZCDP, ApproxDP)) -> Any:
    """Require a budget object of the given kind(s)."""
    if not isinstance(budget, kind):
        kinds = kind if isinstance(kind, tuple) else (kind,)
        names = " or ".join(k.__name__ for k in kinds)
        raise TypeError(f"budget must be a {names} instance; got {budget!r}")
    return budget


def check_approx_dp_budget(budget: Any) -> tuple[float, float]:
    """Require an :class:`ApproxDP` budget; return ``(epsilon, delta)`` (epsilon may be inf)."""
    check_budget(budget, ApproxDP)
    epsilon = check_positive(budget.epsilon, "budget.epsilon", allow_inf=True)
    return epsilon, check_probability(budget.delta, "budget.delta")
