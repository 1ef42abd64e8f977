"""Privacy budgets and exact accounting.

The names below are imported from their modules on first use (PEP 562): ``import dpreg``
loads only the budget types, not the accountants' SciPy solvers (``scipy.optimize``,
about a quarter of a second of start-up for every workflow job that never converts a
budget; ``docs/scaling.md``, "Start-up of a job").
"""

from __future__ import annotations

from dpreg._lazy import lazy_attributes
from dpreg.privacy.budgets import ZCDP, ApproxDP, Budget, PureDP

#: Public name -> the module of ``dpreg.privacy`` that defines it (imported on first use).
_LAZY: dict[str, str] = {
    "CONVERSIONS": "conversions",
    "DEFAULT_CONVERSION": "conversions",
    "approx_dp_to_zcdp": "conversions",
    "compose": "conversions",
    "eps_to_zcdp": "conversions",
    "zcdp_to_approx_dp": "conversions",
    "zcdp_to_eps": "conversions",
    "analytic_gaussian_sigma": "gaussian",
    "classic_gaussian_sigma": "gaussian",
    "gaussian_delta": "gaussian",
    "gaussian_epsilon": "gaussian",
    "gaussian_zcdp": "gaussian",
    "zcdp_gaussian_sigma": "gaussian",
    "mixing_epsilon": "mixing",
    "mixing_rdp": "mixing",
    "gaussian_pld_epsilon": "rdp",
    "gaussian_rdp_delta": "rdp",
    "gaussian_rdp_epsilon": "rdp",
}

__all__ = [
    "CONVERSIONS",
    "DEFAULT_CONVERSION",
    "ApproxDP",
    "Budget",
    "PureDP",
    "ZCDP",
    "analytic_gaussian_sigma",
    "approx_dp_to_zcdp",
    "classic_gaussian_sigma",
    "compose",
    "eps_to_zcdp",
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_pld_epsilon",
    "gaussian_rdp_delta",
    "gaussian_rdp_epsilon",
    "gaussian_zcdp",
    "mixing_epsilon",
    "mixing_rdp",
    "zcdp_gaussian_sigma",
    "zcdp_to_approx_dp",
    "zcdp_to_eps",
]


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, globals(), __all__)
