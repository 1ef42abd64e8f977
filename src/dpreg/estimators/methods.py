r"""Every private regression method with hyperparameters from public inputs only.

The papers tune their methods on the data they report (step sizes, clip levels,
iteration counts chosen by looking at the error) or set them from oracle quantities
(:math:`\|w^*\|`, the noise level, the Hessian's eigenvalues). A user with a private
table has neither. This table says, for every method, how dpreg sets each
hyperparameter from **public inputs only**: the row count ``n`` (public under the
zero-out and replace-one relations), the dimension ``d``, the budget
:math:`(\varepsilon, \delta)` and the declared bounds :math:`\|x_i\| \le B`
(``bound_X``) and :math:`|y_i| \le C` (``bound_y``). Nothing is read off the data, so
the guarantee of each estimator holds as documented (``docs/privacy.md``); a test
checks that every rule's output is the same for two datasets with the same public
inputs. ``docs/benchmark.md`` explains each rule and where it comes from.

A :class:`Method` is one registered estimator plus one rule; the same estimator may
appear under several rules (``dp_gd_lev`` and ``dp_gd_brown``). Adding a method to the
benchmark is one entry in :data:`METHODS` and one name in the config
(``CONTRIBUTING.md``, "Add a method to the benchmark").

**Common relation.** Methods are compared at the same :math:`(\varepsilon, \delta)`
under the **zero-out** relation (a row replaced by zeros; n public), which every
estimator here satisfies: those with a choice (DP-GD, DP-FTRL) are run under it; the
add/remove guarantee of DP-SGD with Poisson sampling implies it (a zero row adds no
gradient); the replace-one estimators (DP-SSGD, DP-AMBSSGD) have no zero-out variant and
are run under replace-one, which implies zero-out at the same parameters but costs them
up to twice the noise they would need (a handicap the benchmark states, not hides).
zCDP mechanisms convert with the tight conversion (Canonne, Kamath & Steinke 2020).

Examples
--------
>>> import numpy as np
>>> from dpreg.estimators.methods import PublicInputs, fit_method, get_method
>>> public = PublicInputs(n=500, d=3, epsilon=1.0, delta=1 / 500**2, bound_X=1.0, bound_y=1.0)
>>> get_method("dp_gd_brown").hyperparameters(public)["T"]
2
>>> rng = np.random.default_rng(0)
>>> X = rng.uniform(-0.5, 0.5, size=(500, 3)) / np.sqrt(3)
>>> y = np.clip(X @ np.array([1.0, -1.0, 0.5]) + 0.1 * rng.normal(size=500), -1, 1)
>>> fit = fit_method("adassp", X, y, epsilon=1.0, delta=1 / 500**2, bound_X=1.0,
...                  bound_y=1.0, rng=rng, trials=4)
>>> fit.theta.shape
(4, 3)
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from dpreg._validation import check_positive, check_probability
from dpreg.estimators.ambssgd_core import block_layout
from dpreg.estimators.ambssgd_privacy import ShufflingRegimeWarning, calibrate_dp_ssgd
from dpreg.estimators.dp_ssgd import dp_ssgd_hyperparameters
from dpreg.estimators.intercept import with_intercept
from dpreg.estimators.peer_diffprivlib import (
    PEER_INSTALL_HINT,
    diffprivlib_available,
    run_diffprivlib_linear_regression,
)
from dpreg.estimators.registry import get_estimator
from dpreg.privacy.budgets import ApproxDP
from dpreg.privacy.conversions import eps_to_zcdp
from dpreg.results import Fit

__all__ = [
    "METHODS",
    "STREAM_METHODS",
    "Method",
    "PublicInputs",
    "fit_method",
    "get_method",
    "stable_step",
    "stream_hyperparameters",
]

#: Sequential single-pass methods take at most this many steps (batches grow with n).
MAX_STREAM_STEPS = 1000


@dataclass(frozen=True)
class PublicInputs:
    r"""What a hyperparameter rule may read: sizes, budget and declared bounds.

    Attributes
    ----------
    n, d : int
        Rows and columns of the design the estimator sees (with an intercept column,
        ``d`` counts it).
    epsilon, delta : float
        The target :math:`(\varepsilon, \delta)` of one release.
    bound_X, bound_y : float
        Declared bounds :math:`B \ge \max\|x_i\|`, :math:`C \ge \max|y_i|`.
    """

    n: int
    d: int
    epsilon: float
    delta: float
    bound_X: float
    bound_y: float

    def __post_init__(self) -> None:
        for name in ("n", "d"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1; got {value!r}")
            object.__setattr__(self, name, int(value))
        object.__setattr__(self, "epsilon", check_positive(self.epsilon, "epsilon"))
        object.__setattr__(self, "delta", check_probability(self.delta, "delta"))
        object.__setattr__(self, "bound_X", check_positive(self.bound_X, "bound_X"))
        object.__setattr__(self, "bound_y", check_positive(self.bound_y, "bound_y"))

    @property
    def rho(self) -> float:
        r"""The zCDP level whose tight conversion is :math:`(\varepsilon, \delta)`."""
        return eps_to_zcdp(self.epsilon, self.delta, method="tight")

    @property
    def gradient_bound(self) -> float:
        r""":math:`BC`: the largest per-example gradient norm :math:`\|x_i y_i\|` at 0."""
        return self.bound_X * self.bound_y


def stable_step(public: PublicInputs) -> float:
    r"""Step size :math:`\min\{1, d/4\}/B^2` of the gradient methods.

    Brown et al. (2024, Theorem 2.7) take :math:`\eta = 1/4` for a design whose Hessian
    is about the identity (:math:`x \sim N(0, I_d)`, :math:`\|x\|^2 \approx d`). Rows
    bounded by :math:`B` and rescaled to that convention (:math:`\|x\| \le \sqrt d`)
    give :math:`\eta = d/(4B^2)` in the original units; since the Hessian's largest
    eigenvalue may be as large as :math:`B^2` for some design within the bound, the step
    is capped at :math:`1/B^2`, where gradient descent is stable for every such design.
    """
    return min(1.0, public.d / 4.0) / public.bound_X**2


#: Epochs of the multi-epoch streaming methods (``*_epochs``).
STREAM_EPOCHS = 5


def stream_batch_size(public: PublicInputs, epochs: int = 1) -> int:
    """Rows per step of the streaming methods: ``ceil(epochs n / MAX_STREAM_STEPS)``."""
    return max(1, math.ceil(epochs * public.n / MAX_STREAM_STEPS))


# ------------------------------------------------------------------------------ rules


def _no_hyper(public: PublicInputs) -> dict[str, Any]:
    return {}


def _peer_applies(public: PublicInputs) -> str | None:
    return None if diffprivlib_available() else PEER_INSTALL_HINT


def _ihm(public: PublicInputs) -> dict[str, Any]:
    # Lev et al. (2026), Section 5: T = 3 and the residual clip C = C_Y.
    return {"T": 3, "clip": public.bound_y}


def _dp_gd_lev(public: PublicInputs) -> dict[str, Any]:
    # Lev et al.'s DP-GD baseline (App. H/J): T = 3, step 1/4 and clip 1 at B = C = 1.
    return {
        "T": 3,
        "step": 0.25 / public.bound_X**2,
        "clip": public.gradient_bound,
        "sensitivity": "zero_out",
        "conversion": "tight",
    }


def _dp_gd_brown(public: PublicInputs) -> dict[str, Any]:
    # Brown et al. (2024), Theorem 2.7 / eqs. (9)-(10): eta = 1/4 (in isotropic units),
    # T = c log(n rho / d) with c = 1, gamma of the order of the residual times the row
    # norm (here BC: nothing is clipped at theta = 0).
    T = max(1, math.ceil(math.log(max(public.n * public.rho / public.d, 1.0))))
    return {
        "T": T,
        "step": stable_step(public),
        "clip": public.gradient_bound,
        "sensitivity": "zero_out",
        "conversion": "tight",
    }


def _dp_sgd_poisson(public: PublicInputs) -> dict[str, Any]:
    return {
        "clip": public.gradient_bound,
        "eta": stable_step(public),
        "batch_size": float(max(1, math.ceil(math.sqrt(public.n)))),
        "n_public": public.n,
        "epochs": 1.0,
    }


def _dp_ssgd(public: PublicInputs) -> dict[str, Any]:
    # Varshney et al. (2022), Theorem 3.2's step (eq. (30)-(31) constants) with public
    # constants R_x^2 = ||H|| = B^2, kappa = 1 and the calibrated (public) noise
    # multiplier; the clip is the gradient bound BC instead of the theorem's oracle zeta.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ShufflingRegimeWarning)
        alpha = calibrate_dp_ssgd(public.epsilon, public.delta, public.n).noise_multiplier
    eta, _ = dp_ssgd_hyperparameters(
        public.n, public.d, x_norm_sq=public.bound_X**2, H_norm=public.bound_X**2, kappa=1.0,
        w_star_norm=0.0, sigma=public.bound_y, noise_multiplier=alpha, rule="theorem",
    )  # fmt: skip
    return {"clip": public.gradient_bound, "eta": eta}


def _dp_ssgd_applies(public: PublicInputs) -> str | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", ShufflingRegimeWarning)
            calibrate_dp_ssgd(public.epsilon, public.delta, public.n)
    except ShufflingRegimeWarning:
        return "outside the shuffling regime of Theorem 3.1 (epsilon too large for n)"
    except ValueError as err:
        return f"no shuffling amplification at this n ({err})"
    return None


def _dp_ambssgd(public: PublicInputs) -> dict[str, Any]:
    # Varshney et al. (2022), Theorem 3.7 with public constants: R_x^2 = B^2 and
    # ||H|| <= B^2 (so eta = 1/B^2), kappa = 1 and c1 = 1 (T = ceil(ln n) blocks), and
    # the DP-STAT range 2C: residuals of predictions within the response range.
    return {
        "x_norm_sq": public.bound_X**2,
        "H_norm": public.bound_X**2,
        "stat_domain": 2.0 * public.bound_y,
        "kappa": 1.0,
        "c1": 1.0,
    }


def _dp_ambssgd_applies(public: PublicInputs) -> str | None:
    try:
        block_layout(public.n, kappa=1.0, c1=1.0)
    except ValueError as err:
        return f"too few rows for the block layout ({err})"
    return None


def stream_step(public: PublicInputs, epochs: int = 1) -> float:
    r"""Step of the streaming methods, :math:`\min\{\eta_{\rm stable}, b/(B^2\sigma\sqrt T)\}`.

    :math:`T` steps of independent noise of standard deviation :math:`\eta\sigma G/b`
    per coordinate (:math:`G = BC` the clip, :math:`\sigma = 1/\sqrt{2\rho}` the
    multiplier of independent noise, :math:`b` the batch) add up to
    :math:`\eta\sigma G\sqrt T/b` when the loss is flat; the cap keeps that below
    :math:`C/B`, the scale of a coefficient vector that fits :math:`|y| \le C` with
    :math:`\|x\| \le B`. Both DP-SGD and :math:`\nu`-DP-FTRL take this step, so
    they differ only in the noise's correlation. Over ``epochs`` passes (each row in
    ``epochs`` steps) :math:`T` counts every step and :math:`\sigma` is independent
    noise's multiplier for ``epochs`` participations, :math:`\sqrt{\text{epochs}/(2\rho)}`.
    """
    b = stream_batch_size(public, epochs)
    T = epochs * (public.n // b)
    sigma = math.sqrt(epochs / (2.0 * public.rho))
    return min(stable_step(public), b / (public.bound_X**2 * sigma * math.sqrt(T)))


def _nu_ftrl(public: PublicInputs, epochs: int = 1) -> dict[str, Any]:
    # Choquette-Choo et al. (2023): nu = eta * mu; mu is not public, so the mean
    # eigenvalue bound B^2 / d (exact for an isotropic design at the bound) stands in.
    eta = stream_step(public, epochs)
    hyper = {
        "eta": eta,
        "clip": public.gradient_bound,
        "nu": min(0.5, eta * public.bound_X**2 / public.d),
        "batch_size": stream_batch_size(public, epochs),
        "neighbours": "zero_out",
    }
    return hyper if epochs == 1 else {**hyper, "epochs": epochs}


def _sgd_stream(public: PublicInputs, epochs: int = 1) -> dict[str, Any]:
    hyper = {
        "eta": stream_step(public, epochs),
        "clip": public.gradient_bound,
        "batch_size": stream_batch_size(public, epochs),
        "neighbours": "zero_out",
    }
    return hyper if epochs == 1 else {**hyper, "epochs": epochs}


def _nu_ftrl_epochs(public: PublicInputs) -> dict[str, Any]:
    return _nu_ftrl(public, STREAM_EPOCHS)


def _sgd_stream_epochs(public: PublicInputs) -> dict[str, Any]:
    return _sgd_stream(public, STREAM_EPOCHS)


#: Streaming methods whose rule takes a number of epochs (:func:`stream_hyperparameters`).
STREAM_METHODS = ("nu_dp_ftrl", "dp_sgd_stream")


def stream_hyperparameters(name: str, public: PublicInputs, epochs: int) -> dict[str, Any]:
    """Return the public rule of a streaming method (``STREAM_METHODS``) for ``epochs`` passes.

    The rules of ``nu_dp_ftrl`` / ``dp_sgd_stream`` (one pass) and of their ``*_epochs``
    methods (``STREAM_EPOCHS`` passes) at any number of epochs: batch
    ``ceil(epochs n / 1000)``, the noise-capped step of :func:`stream_step`.

    Examples
    --------
    >>> p = PublicInputs(n=2000, d=4, epsilon=1.0, delta=1e-6, bound_X=1.0, bound_y=1.0)
    >>> stream_hyperparameters("dp_sgd_stream", p, 5)["batch_size"]
    10
    """
    if name not in STREAM_METHODS:
        raise ValueError(f"method must be one of {STREAM_METHODS}; got {name!r}")
    if isinstance(epochs, bool) or not isinstance(epochs, int | np.integer) or epochs < 1:
        raise ValueError(f"epochs must be an integer >= 1; got {epochs!r}")
    rule = _nu_ftrl if name == "nu_dp_ftrl" else _sgd_stream
    return rule(public, int(epochs))


def _epochs_apply(public: PublicInputs) -> str | None:
    b = stream_batch_size(public, STREAM_EPOCHS)
    if public.n // b < 2:
        return f"fewer than 2 batches per epoch at n = {public.n}"
    return None


# ------------------------------------------------------------------------------ table


@dataclass(frozen=True)
class Method:
    """One estimator with a rule that sets its hyperparameters from public inputs.

    Attributes
    ----------
    name : str
        The method's name in the benchmark and the config.
    estimator : str
        The registered estimator (:mod:`dpreg.estimators.registry`).
    paper : str
        Where the method comes from (a paper key, or ``"reference"``).
    rule : callable
        ``rule(public) -> dict`` of hyperparameters (from :class:`PublicInputs` only).
    description : str
        One line on the rule, for tables and docs.
    private : bool
        False for the non-private reference (never ranked).
    applies : callable, optional
        ``applies(public) -> None`` or the reason the method cannot run at these
        public inputs (a regime its guarantee needs); such cells are reported as not
        run, never silently dropped.
    function : callable, optional
        Called instead of the registered ``estimator`` (the external peer, which is not
        a dpreg estimator and not in the registry).
    peer : bool
        An external implementation shown for comparison (labelled in every output).
    guarantee : str
        What one release certifies: ``"(epsilon, delta)"`` or ``"pure epsilon"``.
    """

    name: str
    estimator: str
    paper: str
    rule: Callable[[PublicInputs], dict[str, Any]]
    description: str
    private: bool = True
    applies: Callable[[PublicInputs], str | None] | None = None
    function: Callable[..., Fit] | None = None
    peer: bool = False
    guarantee: str = "(epsilon, delta)"

    def hyperparameters(self, public: PublicInputs) -> dict[str, Any]:
        """Return the hyperparameters at ``public`` (a new dict)."""
        return dict(self.rule(public))

    def reason_not_run(self, public: PublicInputs) -> str | None:
        """Return why the method cannot run at ``public``, or None."""
        return None if self.applies is None else self.applies(public)


METHODS: Mapping[str, Method] = MappingProxyType(
    {
        m.name: m
        for m in (
            Method("ols", "ols", "reference", _no_hyper, "non-private OLS", private=False),
            Method("adassp", "adassp", "lev2026", _no_hyper, "AdaSSP (Wang 2018), defaults"),
            Method("ihm", "ihm", "lev2026", _ihm, "IHM, T = 3, residual clip C"),
            Method("linear_mixing", "linear_mixing", "lev2026", _no_hyper, "linear mixing"),
            Method("sheffet_sketch", "sheffet_sketch", "lev2026", _no_hyper, "Sheffet sketch"),
            Method(
                "dp_gd_lev", "dp_gd", "lev2026", _dp_gd_lev, "DP-GD, T = 3, step 1/(4B^2), clip BC"
            ),
            Method(
                "dp_gd_brown",
                "dp_gd",
                "brown2024",
                _dp_gd_brown,
                "DP-GD, T = ceil(ln(n rho/d)), step min(1, d/4)/B^2, clip BC",
            ),
            Method(
                "dp_sgd_poisson",
                "dp_sgd_poisson",
                "varshney2022",
                _dp_sgd_poisson,
                "DP-SGD, Poisson batches of sqrt(n), 1 epoch, step min(1, d/4)/B^2, clip BC",
            ),
            Method(
                "dp_ssgd",
                "dp_ssgd",
                "varshney2022",
                _dp_ssgd,
                "DP-SSGD, one pass, Theorem 3.2 step (R_x = B, kappa = 1), clip BC (replace-one)",
                applies=_dp_ssgd_applies,
            ),
            Method(
                "dp_ambssgd",
                "dp_ambssgd",
                "varshney2022",
                _dp_ambssgd,
                "DP-AMBSSGD, R_x = B, ||H|| <= B^2, kappa = 1, DP-STAT range 2C (replace-one)",
                applies=_dp_ambssgd_applies,
            ),
            Method(
                "nu_dp_ftrl",
                "dp_ftrl",
                "choquettechoo2023",
                _nu_ftrl,
                "nu-DP-FTRL, one pass of <= 1000 steps, noise-capped step, nu = eta B^2/d",
            ),
            Method(
                "dp_sgd_stream",
                "dp_sgd_stream",
                "choquettechoo2023",
                _sgd_stream,
                "DP-SGD (independent noise), one pass of <= 1000 steps, noise-capped step",
            ),
            Method(
                "nu_dp_ftrl_epochs",
                "dp_ftrl",
                "choquettechoo2023",
                _nu_ftrl_epochs,
                f"nu-DP-FTRL, {STREAM_EPOCHS} epochs (fixed-epoch multi-participation"
                " sensitivity), <= 1000 steps, noise-capped step",
                applies=_epochs_apply,
            ),
            Method(
                "dp_sgd_stream_epochs",
                "dp_sgd_stream",
                "choquettechoo2023",
                _sgd_stream_epochs,
                f"DP-SGD (independent noise), {STREAM_EPOCHS} epochs, <= 1000 steps,"
                " noise-capped step",
                applies=_epochs_apply,
            ),
            Method(
                "diffprivlib",
                "diffprivlib_linear_regression",
                "peer",
                _no_hyper,
                "diffprivlib LinearRegression (external peer, pure epsilon-DP, bounds +-B, +-C)",
                applies=_peer_applies,
                function=run_diffprivlib_linear_regression,
                peer=True,
                guarantee="pure epsilon",
            ),
        )
    }
)


def get_method(name: str) -> Method:
    """Return the method ``name``; an unknown name lists the known ones."""
    try:
        return METHODS[name]
    except KeyError:
        known = ", ".join(METHODS)
        raise ValueError(f"unknown method {name!r}; known methods: {known}") from None


def fit_method(
    name: str,
    X: Any,
    y: Any,
    *,
    epsilon: float,
    delta: float,
    bound_X: float,
    bound_y: float,
    rng: np.random.Generator,
    trials: int = 1,
    intercept: bool = False,
    intercept_scale: float = 1.0,
) -> Fit:
    r"""Fit method ``name`` at :math:`(\varepsilon, \delta)` with its public rule.

    Parameters
    ----------
    name : str
        A key of :data:`METHODS`.
    X, y : array_like
        Rows with :math:`\|x_i\| \le` ``bound_X``, :math:`|y_i| \le` ``bound_y``.
    epsilon, delta : float
        One release's target; the estimator certifies ``budget_spent``.
    bound_X, bound_y : float
        Declared public bounds.
    rng : numpy.random.Generator
    trials : int
        Independent repetitions, vectorised.
    intercept : bool
        Fit an intercept through a public constant column inside the bound
        (:mod:`dpreg.estimators.intercept`); the rule then sees ``d + 1`` columns.
    intercept_scale : float
        The constant column's scale (:func:`~dpreg.estimators.intercept.add_intercept_column`).

    Returns
    -------
    Fit
        With ``diagnostics["hyperparameters"]``, the values the rule chose.

    Raises
    ------
    ValueError
        If the method cannot run at these public inputs (:meth:`Method.reason_not_run`).
    """
    method = get_method(name)
    n, d = np.shape(X)
    public = PublicInputs(
        n=n, d=d + int(bool(intercept)), epsilon=epsilon, delta=delta, bound_X=bound_X,
        bound_y=bound_y,
    )  # fmt: skip
    reason = method.reason_not_run(public)
    if reason is not None:
        raise ValueError(f"method {name!r} does not run here: {reason}")
    hyper = method.hyperparameters(public)
    estimator = method.function or get_estimator(method.estimator)
    kwargs: dict[str, Any] = {"rng": rng, "trials": trials, "bound_y": bound_y, **hyper}
    if method.private:
        kwargs["budget"] = ApproxDP(epsilon, delta)
    if intercept:
        fit = with_intercept(
            estimator, X, y, bound_X=bound_X, intercept_scale=intercept_scale, **kwargs
        )
    else:
        fit = estimator(X, y, bound_X=bound_X, **kwargs)
    return Fit(
        theta=fit.theta,
        budget_spent=fit.budget_spent,
        estimator=fit.estimator,
        path=fit.path,
        diagnostics={**fit.diagnostics, "hyperparameters": hyper},
        nonprivate_diagnostics=fit.nonprivate_diagnostics,
        intercept=fit.intercept,
    )
