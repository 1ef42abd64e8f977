r"""DP-2S-GD with every hyperparameter from public inputs only: the IV counterpart of methods.

:mod:`dpreg.estimators.methods` sets the hyperparameters of every private linear
regression from public inputs; this module does the same for private IV regression,
Algorithm 1 of Liang et al. (2025) (DP-2S-GD, :func:`dpreg.estimators.iv.fit_dp_two_stage_gd`).
The paper tunes nothing on public grounds: its synthetic studies take step sizes from the
ground truth and its clip thresholds from eq. (4), whose constants it leaves open
(``docs/liang2025.md``, "Defaults and why"). A user with a private table has neither,
so :data:`IV_METHODS` states a rule that reads only :class:`PublicIVInputs`: the row
count ``n`` (public under the replace-one relation of Algorithm 1), the numbers of
regressors ``p`` and instruments ``q`` (each counting the intercept's constant column
when there is one), the target :math:`(\varepsilon, \delta)`, the declared bounds
:math:`\|x_i\| \le B_X`, :math:`|y_i| \le B_y`, :math:`\|z_i\| \le B_Z` and the share
of the budget given to the first stage. Nothing is read off the data (a test checks two
datasets with the same public inputs get the same values).

**The budget.** The target :math:`(\varepsilon, \delta)` becomes the zCDP level
:math:`\rho` whose tight conversion (Canonne, Kamath & Steinke 2020,
:func:`dpreg.privacy.conversions.eps_to_zcdp`) is :math:`(\varepsilon, \delta)`; it is
split :math:`\rho_1 = s\rho` (the :math:`\Theta` trajectory) and :math:`\rho_2 = (1-s)\rho`
(the :math:`\beta` trajectory), with the public share :math:`s` (default 1/2, the equal
split of the paper's real-data figures, §4.2). With the exact calibration
(:func:`dpreg.estimators.iv.noise_scale`) the fit certifies :math:`\rho_1 + \rho_2`
(Prop. 3.1 with the accounting of ``docs/liang2025.md``, "Algorithm 1: why ρ1 + ρ2
holds"), i.e. the target.

**The rule** (:func:`dp_2s_gd_rule`), for rows in the declared balls:

* clip thresholds :math:`\gamma_1 = B_Z B_X` and :math:`\gamma_2 = B_X B_y`: the largest
  per-sample gradient norms at the start (:math:`\Theta = 0`: :math:`\|z_i x_i^\top\|_F
  \le B_Z B_X`; :math:`\beta = 0`: :math:`\|\Theta^\top z_i\|\,|y_i| \le B_X B_y` while the
  first stage's fitted values stay in the ball of :math:`x`). It is the argument of
  ``angrist_clip_thresholds`` (``docs/liang2025.md``, "Angrist–Evans";
  ``docs/notes/liang2025.md P9``: thresholds from the variables' public ranges, not eq.
  (4), whose :math:`\gamma \approx 21` over-noises by an order of magnitude), and the
  convention ``clip = BC`` of the linear methods (``docs/benchmark.md``);
* step sizes :math:`\eta = 1/B_Z^2` and :math:`\alpha = 1/B_X^2`: the Hessians
  :math:`\frac1n Z^\top Z` and :math:`\frac1n\Theta^\top Z^\top Z\Theta` have eigenvalues at
  most :math:`B_Z^2` and (fitted values in the ball of :math:`x`) :math:`B_X^2`, so both
  steps are stable for every design within the bounds (range (3) of Theorem 3.1 asks
  :math:`0 < \eta < 2` for :math:`\mathbb E[zz^\top] = I`). On Angrist–Evans the project
  uses :math:`\eta = 1/\mathrm{Var}(z)`, the same step with a known variance;
* iterations :math:`T = \min\{1000, \max\{20, \lceil 3q\ln(n\min(\rho_1, \rho_2))\rceil\}\}`:
  20 is the paper's :math:`T` on Angrist–Evans (§4.2, Figs. 5, 8, 9); for large
  :math:`n\rho` more steps pay off: gradient descent with step :math:`1/B_Z^2` on a design
  that fills its ranges (:math:`\mathbb E[zz^\top] \approx B_Z^2 I/(3q)`, a uniform
  distribution on the cube scaled into the ball) contracts by :math:`1 - 1/(3q)` a step,
  and :math:`3q\ln(n\rho)` steps bring the optimisation error (the :math:`\kappa^{T/2}`
  of bound (7)) to the order of :math:`1/(n\rho)`, the logarithmic rule of Brown et al.
  (2024, Theorem 2.7) times the design's public condition number.

Weak instruments converge slowly under these steps (the second stage's curvature is the
variance of the fitted values, which no public input bounds from below): with few rows
or a small budget the estimate is shrunk towards 0. Read the clip fractions (outside the
guarantee) and, on your own table, prefer more rows over more iterations.

Examples
--------
>>> from dpreg.estimators.iv_methods import PublicIVInputs, get_iv_method
>>> public = PublicIVInputs(n=428, p=2, q=3, epsilon=1.0, delta=1 / 428**2)
>>> hyper = get_iv_method("dp_2s_gd").hyperparameters(public)
>>> hyper["T"], hyper["clip_theta"], hyper["clip_beta"]
(20, 1.0, 1.0)
>>> round(hyper["rho1"] + hyper["rho2"], 6) == round(public.rho, 6)
True
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from dpreg._validation import check_matrix, check_positive, check_probability
from dpreg.estimators.intercept import add_intercept_column, split_intercept
from dpreg.estimators.iv import fit_dp_two_stage_gd
from dpreg.privacy.conversions import eps_to_zcdp, zcdp_to_eps
from dpreg.results import Fit

__all__ = [
    "IV_METHODS",
    "IVMethod",
    "MAX_IV_STEPS",
    "MIN_IV_STEPS",
    "PublicIVInputs",
    "dp_2s_gd_rule",
    "fit_iv_method",
    "get_iv_method",
]

#: Fewest iterations of the rule: the paper's T on Angrist-Evans (§4.2, Figs. 5, 8, 9).
MIN_IV_STEPS = 20
#: Most iterations of the rule (the noise per step grows as sqrt(T)).
MAX_IV_STEPS = 1000


@dataclass(frozen=True)
class PublicIVInputs:
    r"""What the IV rule may read: sizes, budget, its split and the declared bounds.

    Attributes
    ----------
    n : int
        Rows (public under the replace-one relation).
    p, q : int
        Columns of ``X`` (regressors) and ``Z`` (instruments) the estimator sees, each
        counting the intercept's constant column when there is one; ``q >= p``.
    epsilon, delta : float
        The target :math:`(\varepsilon, \delta)` of one release (finite, ``delta`` in (0, 1)).
    bound_X, bound_y, bound_Z : float, default 1.0
        Declared bounds :math:`\|x_i\| \le B_X`, :math:`|y_i| \le B_y`, :math:`\|z_i\| \le B_Z`.
    theta_share : float, default 0.5
        Share :math:`s \in (0, 1)` of the zCDP budget given to the first stage
        (:math:`\rho_1 = s\rho`, :math:`\rho_2 = (1 - s)\rho`).
    """

    n: int
    p: int
    q: int
    epsilon: float
    delta: float
    bound_X: float = 1.0
    bound_y: float = 1.0
    bound_Z: float = 1.0
    theta_share: float = 0.5

    def __post_init__(self) -> None:
        for name in ("n", "p", "q"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1; got {value!r}")
            object.__setattr__(self, name, int(value))
        if self.q < self.p:
            raise ValueError(
                f"under-identified: q={self.q} instruments for p={self.p} regressors;"
                " IV regression needs q >= p"
            )
        object.__setattr__(self, "epsilon", check_positive(self.epsilon, "epsilon"))
        object.__setattr__(self, "delta", check_probability(self.delta, "delta"))
        for name in ("bound_X", "bound_y", "bound_Z"):
            object.__setattr__(self, name, check_positive(getattr(self, name), name))
        object.__setattr__(self, "theta_share", check_probability(self.theta_share, "theta_share"))

    @property
    def rho(self) -> float:
        r"""The zCDP level whose tight conversion is :math:`(\varepsilon, \delta)`."""
        return eps_to_zcdp(self.epsilon, self.delta, method="tight")

    @property
    def rho_split(self) -> tuple[float, float]:
        r""":math:`(\rho_1, \rho_2) = (s\rho, (1 - s)\rho)`."""
        rho = self.rho
        return self.theta_share * rho, (1.0 - self.theta_share) * rho


def dp_2s_gd_rule(public: PublicIVInputs) -> dict[str, Any]:
    r"""Hyperparameters of DP-2S-GD from public inputs only (module docstring).

    Parameters
    ----------
    public : PublicIVInputs

    Returns
    -------
    dict
        ``T``, ``step_theta`` (:math:`\eta = 1/B_Z^2`), ``step_beta``
        (:math:`\alpha = 1/B_X^2`), ``clip_theta`` (:math:`B_Z B_X`), ``clip_beta``
        (:math:`B_X B_y`), ``rho1``, ``rho2`` and ``calibration`` (``"exact"``).

    Examples
    --------
    >>> public = PublicIVInputs(n=20_000, p=2, q=2, epsilon=20.0, delta=1 / 20_000**2)
    >>> dp_2s_gd_rule(public)["T"]
    64
    """
    rho1, rho2 = public.rho_split
    grow = 3.0 * public.q * math.log(max(public.n * min(rho1, rho2), 1.0))
    T = min(MAX_IV_STEPS, max(MIN_IV_STEPS, math.ceil(grow)))
    return {
        "T": int(T),
        "step_theta": 1.0 / public.bound_Z**2,
        "step_beta": 1.0 / public.bound_X**2,
        "clip_theta": public.bound_Z * public.bound_X,
        "clip_beta": public.bound_X * public.bound_y,
        "rho1": rho1,
        "rho2": rho2,
        "calibration": "exact",
    }


@dataclass(frozen=True)
class IVMethod:
    """One IV estimator with a rule that sets its hyperparameters from public inputs.

    Attributes
    ----------
    name : str
        The method's name (CLI ``--method``, :class:`dpreg.iv_model.DPIVRegression`).
    estimator : str
        The registered estimator (:mod:`dpreg.estimators.registry`).
    paper : str
        Where the method comes from.
    rule : callable
        ``rule(public) -> dict`` of keyword arguments (from :class:`PublicIVInputs` only).
    description : str
        One line on the rule.
    function : callable
        The estimator, called as ``function(Z, X, y, rng=..., trials=..., **rule(public))``.
    title : str
        The algorithm's name and source, for summaries.
    """

    name: str
    estimator: str
    paper: str
    rule: Callable[[PublicIVInputs], dict[str, Any]]
    description: str
    function: Callable[..., Fit]
    title: str = ""

    def hyperparameters(self, public: PublicIVInputs) -> dict[str, Any]:
        """Return the hyperparameters at ``public`` (a new dict)."""
        return dict(self.rule(public))


IV_METHODS: Mapping[str, IVMethod] = MappingProxyType(
    {
        m.name: m
        for m in (
            IVMethod(
                "dp_2s_gd",
                "dp_2s_gd",
                "liang2025",
                dp_2s_gd_rule,
                "DP-2S-GD (Liang et al. 2025, Alg. 1), rho split by theta_share (default"
                " 1/2), T = clip(3q ln(n rho_min), 20, 1000), steps 1/B_Z^2, 1/B_X^2,"
                " clips B_Z B_X, B_X B_y",
                fit_dp_two_stage_gd,
                title="DP-2S-GD, Liang et al. (2025), Algorithm 1",
            ),
        )
    }
)
"""Every private IV method by name (Algorithm 3 is not here: its rho2 claim fails)."""


def get_iv_method(name: str) -> IVMethod:
    """Return the IV method ``name``; an unknown name lists the known ones."""
    try:
        return IV_METHODS[name]
    except KeyError:
        known = ", ".join(IV_METHODS)
        raise ValueError(f"unknown IV method {name!r}; known IV methods: {known}") from None


def fit_iv_method(
    name: str,
    Z: Any,
    X: Any,
    y: Any,
    *,
    epsilon: float,
    delta: float,
    rng: np.random.Generator,
    bound_X: float = 1.0,
    bound_y: float = 1.0,
    bound_Z: float = 1.0,
    theta_share: float = 0.5,
    trials: int = 1,
    intercept: bool = False,
) -> Fit:
    r"""Fit IV method ``name`` at :math:`(\varepsilon, \delta)` with its public rule.

    Parameters
    ----------
    name : str
        A key of :data:`IV_METHODS`.
    Z, X, y : array_like
        Instruments (n, q), regressors (n, p), response (n,), with
        :math:`\|z_i\| \le B_Z`, :math:`\|x_i\| \le B_X`, :math:`|y_i| \le B_y`
        (checked by the caller; the estimator clips gradients, not rows).
    epsilon, delta : float
        One release's target.
    rng : numpy.random.Generator
    bound_X, bound_y, bound_Z : float
        Declared public bounds.
    theta_share : float, default 0.5
        Share of the budget of the first stage.
    trials : int
        Independent repetitions, vectorised.
    intercept : bool
        Add a public constant column inside the bound to both ``X`` and ``Z``
        (:func:`~dpreg.estimators.intercept.add_intercept_column`; an exogenous regressor
        is its own instrument); the rule then sees ``p + 1`` and ``q + 1`` columns.

    Returns
    -------
    Fit
        ``theta`` (trials, p) the coefficients, ``intercept`` (trials,) or None,
        ``budget_spent`` the estimator's ``ZCDP`` certificate (from the noise added),
        ``diagnostics["budget_spent_both_units"]`` the same as ``rho``, ``epsilon`` (its
        tight conversion at ``delta``), ``delta`` and ``conversion``, and
        ``diagnostics["hyperparameters"]`` the values the rule chose.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> Z = rng.uniform(-1, 1, size=(5000, 1))
    >>> X = np.clip(0.8 * Z + 0.2 * rng.uniform(-1, 1, size=(5000, 1)), -1, 1)
    >>> y = np.clip(0.5 * X[:, 0], -1, 1)
    >>> fit = fit_iv_method("dp_2s_gd", Z, X, y, epsilon=5.0, delta=1e-8, rng=rng, trials=2)
    >>> fit.theta.shape, fit.budget_spent.rho <= PublicIVInputs(5000, 1, 1, 5.0, 1e-8).rho
    ((2, 1), True)
    """
    method = get_iv_method(name)
    n, p = check_matrix(X, "X").shape
    q = check_matrix(Z, "Z").shape[1]
    public = PublicIVInputs(
        n=n, p=p + int(bool(intercept)), q=q + int(bool(intercept)), epsilon=epsilon,
        delta=delta, bound_X=bound_X, bound_y=bound_y, bound_Z=bound_Z, theta_share=theta_share,
    )  # fmt: skip
    hyper = method.hyperparameters(public)
    if intercept:
        X = add_intercept_column(X, public.bound_X)
        Z = add_intercept_column(Z, public.bound_Z)
    fit = method.function(Z, X, y, rng=rng, trials=trials, return_path=False, **hyper)
    coef, icpt = fit.theta, None
    if intercept:
        coef, icpt = split_intercept(fit.theta, public.bound_X)
    rho = float(fit.budget_spent.rho)
    both = {
        "rho": rho,
        "epsilon": zcdp_to_eps(rho, public.delta, method="tight"),
        "delta": public.delta,
        "conversion": "tight",
    }
    return Fit(
        theta=coef,
        budget_spent=fit.budget_spent,
        estimator=fit.estimator,
        path=None,
        diagnostics={
            **fit.diagnostics,
            "hyperparameters": hyper,
            "budget_spent_both_units": both,
            "intercept_scale": 1.0,
        },
        nonprivate_diagnostics=fit.nonprivate_diagnostics,
        intercept=icpt,
    )
