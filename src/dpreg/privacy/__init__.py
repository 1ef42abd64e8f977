"""Privacy budgets and exact accounting."""

from dpreg.privacy.budgets import ApproxDP, Budget, PureDP, ZCDP  # noqa: I001  (must load first)
from dpreg.privacy.conversions import (
    CONVERSIONS,
    DEFAULT_CONVERSION,
    approx_dp_to_zcdp,
    compose,
    eps_to_zcdp,
    zcdp_to_approx_dp,
    zcdp_to_eps,
)
from dpreg.privacy.gaussian import (
    analytic_gaussian_sigma,
    classic_gaussian_sigma,
    gaussian_delta,
    gaussian_epsilon,
    gaussian_zcdp,
    zcdp_gaussian_sigma,
)
from dpreg.privacy.mixing import mixing_epsilon, mixing_rdp
from dpreg.privacy.rdp import gaussian_pld_epsilon, gaussian_rdp_delta, gaussian_rdp_epsilon

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
