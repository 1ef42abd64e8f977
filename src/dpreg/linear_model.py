r"""A scikit-learn estimator for private linear regression: ``DPLinearRegression``.

One object in the conventions of the ecosystem (``fit``, ``predict``, ``score``,
``get_params`` / ``set_params``, ``coef_``, ``intercept_``) for every private method
of :data:`dpreg.estimators.methods.METHODS`, whose hyperparameters are set from public
inputs only (``docs/benchmark.md``). The privacy budget is given once, in the unit the
analyst thinks in: ``epsilon`` (with ``delta``), or a zCDP ``rho`` (converted with the
tight conversion at ``delta``), or a budget object; what the fit certified is reported
in both units (:attr:`DPLinearRegression.budget_spent_`).

**Public bounds.** Rows must lie in the ball :math:`\|x_i\| \le B` and responses in
:math:`|y_i| \le C`, ``bounds = (B, C)``, declared before the data are seen. A row
beyond them is projected onto the bound (``out_of_bounds="clip"``, the default: a
fixed row-by-row map, so the guarantee holds) or refused (``"raise"``). How many rows
were clipped is kept in ``n_clipped_`` for the analyst: it is computed from the data
without noise, **outside the guarantee**, never to be published with the fit.
For a table with columns in their own units, map them into the bounds first with a
codebook (``docs/user-data.md``).

**What ``predict`` reads.** Only the release (``coef_``, ``intercept_``) and the rows
passed to it; never the training data.

Examples
--------
>>> import numpy as np
>>> from dpreg.linear_model import DPLinearRegression
>>> rng = np.random.default_rng(0)
>>> X = rng.uniform(-0.5, 0.5, size=(5000, 2))
>>> y = np.clip(X @ np.array([0.8, -0.4]) + 0.2 + 0.05 * rng.normal(size=5000), -1, 1)
>>> model = DPLinearRegression("ihm", epsilon=3.0, random_state=0).fit(X, y)
>>> np.round(model.coef_, 1), round(float(model.intercept_), 1)
(array([ 0.8, -0.4]), 0.2)
>>> model.budget_spent_["epsilon"] <= 3.0
True
"""

from __future__ import annotations

import math
import numbers
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from dpreg.estimators.methods import METHODS, PublicInputs, fit_method, get_method
from dpreg.privacy.budgets import ZCDP, ApproxDP, PureDP
from dpreg.privacy.conversions import zcdp_to_eps
from dpreg.privacy.split import SequentialSplit, compose_spent, split_target

__all__ = ["ZCDP_CERTIFIED_ESTIMATORS", "DPLinearRegression", "TableFit", "fit_table"]

OUT_OF_BOUNDS = ("clip", "raise")
#: Estimators whose ``budget_spent`` is a zCDP level: with a private standardisation
#: they take the zcdp route of :mod:`dpreg.privacy.split` (levels add); every other
#: method the basic route (a test checks this against every method's certificate).
ZCDP_CERTIFIED_ESTIMATORS = ("dp_gd",)


def _project(
    X: np.ndarray, y: np.ndarray, bound_X: float, bound_y: float
) -> tuple[np.ndarray, np.ndarray, int]:
    norms = np.linalg.norm(X, axis=1)
    over = (norms > bound_X) | (np.abs(y) > bound_y)
    X = X * np.minimum(1.0, bound_X / np.maximum(norms, 1e-300))[:, None]
    return X, np.clip(y, -bound_y, bound_y), int(np.count_nonzero(over))


class DPLinearRegression(RegressorMixin, BaseEstimator):
    r"""Differentially private linear regression with a public-hyperparameter method.

    Parameters
    ----------
    method : str, default "ihm"
        A private method of :data:`dpreg.estimators.methods.METHODS` (``"ihm"``,
        ``"adassp"``, ``"linear_mixing"``, ``"dp_sgd_poisson"``, ``"nu_dp_ftrl"``, ...);
        the benchmark (``docs/benchmark.md``) says which to choose for your n/d and ε.
    epsilon : float, optional
        The (ε, δ) target of one fit. Give ``epsilon`` or ``rho`` or ``budget``.
    delta : float, optional
        δ of the target; default :math:`1/n^2` (n is public under the zero-out relation
        every method satisfies).
    rho : float, optional
        A zCDP target instead: the fit runs at the ε whose tight conversion at ``delta``
        is ``rho`` (so it is (ε, δ)-DP; a zCDP certificate is reported where the method
        gives one).
    budget : ApproxDP or ZCDP, optional
        A budget object instead of the keywords.
    bounds : tuple of float, default (1.0, 1.0)
        Public bounds ``(B, C)``: :math:`\|x_i\| \le B`, :math:`|y_i| \le C`.
    fit_intercept : bool, default True
        Fit an intercept through a public constant column inside the bound
        (:mod:`dpreg.estimators.intercept`).
    out_of_bounds : {"clip", "raise"}, default "clip"
        Project rows beyond the bounds onto them, or refuse them.
    random_state : int, numpy.random.Generator or None
        Source of the noise (``None``: fresh entropy).
    standardise_share : float, optional
        A share :math:`s \in (0, 1)` of the target's zCDP level spent on a private
        standardisation of the same rows (:mod:`dpreg.data.private_scaling`; use
        :func:`fit_table`, which runs it). The fit then runs on what remains
        (:mod:`dpreg.privacy.split`: levels add for a zCDP method, basic composition
        with :math:`\delta_s = s\delta` otherwise), ``fit`` needs the level the
        standardisation certified (``standardisation_rho``), and ``budget_spent_`` is
        the composed total. ``None`` (default): no standardisation, results as before.

    Attributes
    ----------
    coef_ : ndarray, shape (d,)
    intercept_ : float
    n_features_in_ : int
    budget_spent_ : dict
        What the fit certified: ``epsilon``, ``delta``, ``rho`` (NaN when the method's
        certificate implies no zCDP level), ``unit`` and ``conversion``; with
        ``standardise_share``, the total composed with the standardisation (and
        ``composition``).
    budget_split_ : dict or None
        With ``standardise_share``: the split (:class:`dpreg.privacy.split.SequentialSplit`),
        the standardisation's certified ``rho_standardisation`` and the estimator's own
        certificate ``estimator_spent``; else ``None``.
    hyperparameters_ : dict
        The values the method's public rule chose.
    n_clipped_ : int
        Rows projected onto the bounds (**outside the guarantee**: not to be published).
    n_rows_ : int
        Training rows (public under the zero-out relation).
    target_ : tuple of float
        The (epsilon, delta) the method was run at.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(1)
    >>> X = rng.uniform(-0.5, 0.5, size=(2000, 3))
    >>> y = np.clip(X @ np.array([0.5, 0.0, -0.5]) + 0.1 * rng.normal(size=2000), -1, 1)
    >>> model = DPLinearRegression("adassp", rho=0.5, random_state=0).fit(X, y)
    >>> model.predict(X[:2]).shape
    (2,)
    >>> sorted(model.budget_spent_)
    ['conversion', 'delta', 'epsilon', 'rho', 'unit']
    """

    def __init__(
        self,
        method: str = "ihm",
        *,
        epsilon: float | None = None,
        delta: float | None = None,
        rho: float | None = None,
        budget: ApproxDP | ZCDP | None = None,
        bounds: tuple[float, float] = (1.0, 1.0),
        fit_intercept: bool = True,
        out_of_bounds: str = "clip",
        random_state: int | np.random.Generator | None = None,
        standardise_share: float | None = None,
    ) -> None:
        self.method = method
        self.epsilon = epsilon
        self.delta = delta
        self.rho = rho
        self.budget = budget
        self.bounds = bounds
        self.fit_intercept = fit_intercept
        self.out_of_bounds = out_of_bounds
        self.random_state = random_state
        self.standardise_share = standardise_share

    # ----------------------------------------------------------------------- checks

    def standardisation_split(self, n: int) -> SequentialSplit:
        """Return the split of the target for ``n`` rows (``standardise_share`` set).

        :func:`fit_table` asks it for the standardisation's level ``rho_first`` before
        the rows are standardised; :meth:`fit` runs the estimator at
        ``(epsilon_rest, delta_rest)``.
        """
        share = self.standardise_share
        if share is None:
            raise ValueError("standardise_share is not set")
        if isinstance(share, bool) or not isinstance(share, numbers.Real) or not 0 < share < 1:
            raise ValueError(f"standardise_share must be a number in (0, 1); got {share!r}")
        epsilon, delta, _ = self._target(n)
        route = (
            "zcdp" if get_method(self.method).estimator in ZCDP_CERTIFIED_ESTIMATORS else "basic"
        )
        return split_target(epsilon, delta, float(share), route=route)

    def _target(self, n: int) -> tuple[float, float, str]:
        """Return ``(epsilon, delta, unit)`` of the target, checking the budget keywords."""
        given = [k for k in ("epsilon", "rho", "budget") if getattr(self, k) is not None]
        if len(given) > 1:
            raise ValueError(f"give one of epsilon, rho or budget; got {given}")
        delta = self.delta
        budget = self.budget
        if budget is not None:
            if isinstance(budget, ApproxDP):
                if delta is not None and delta != budget.delta:
                    raise ValueError("delta is given twice (delta and budget.delta) and differs")
                return budget.epsilon, budget.delta, "epsilon_delta"
            if isinstance(budget, ZCDP):
                rho, unit = budget.rho, "rho_zcdp"
            else:
                raise TypeError(f"budget must be an ApproxDP or ZCDP; got {budget!r}")
        elif self.rho is not None:
            rho, unit = self.rho, "rho_zcdp"
        else:
            epsilon = 1.0 if self.epsilon is None else self.epsilon
            delta = 1.0 / float(n) ** 2 if delta is None else delta
            ApproxDP(epsilon, delta)  # type and range checks naming the value
            if math.isinf(float(epsilon)):
                raise ValueError("epsilon must be finite (an infinite budget is not private)")
            return float(epsilon), float(delta), "epsilon_delta"
        delta = 1.0 / float(n) ** 2 if delta is None else delta
        ZCDP(rho)
        ApproxDP(1.0, delta)  # checks delta
        if math.isinf(float(rho)):
            raise ValueError("rho must be finite (an infinite budget is not private)")
        return float(zcdp_to_eps(float(rho), float(delta), method="tight")), float(delta), unit

    def _bounds(self) -> tuple[float, float]:
        try:
            bound_X, bound_y = self.bounds
        except (TypeError, ValueError):
            raise ValueError(
                f"bounds must be a pair (bound_X, bound_y); got {self.bounds!r}"
            ) from None
        for name, value in (("bounds[0] (bound_X)", bound_X), ("bounds[1] (bound_y)", bound_y)):
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                raise TypeError(f"{name} must be a number; got {value!r}")
            if not (0 < float(value) < math.inf):
                raise ValueError(f"{name} must be a finite positive number; got {value!r}")
        return float(bound_X), float(bound_y)

    # ------------------------------------------------------------------------- API

    def fit(
        self, X: Any, y: Any, *, standardisation_rho: float | None = None
    ) -> DPLinearRegression:
        """Fit one private release on ``(X, y)``; every hyperparameter from public inputs.

        Parameters
        ----------
        X : array_like, shape (n, d)
        y : array_like, shape (n,)
        standardisation_rho : float, optional
            With ``standardise_share`` (and only then): the zCDP level the private
            standardisation of these rows certified from its noise
            (:attr:`dpreg.data.private_scaling.PrivateScaling.rho`); it is composed into
            ``budget_spent_``, and a level above the share is refused.

        Returns
        -------
        self
        """
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True)
        method = get_method(self.method)
        if not method.private:
            raise ValueError(f"method {self.method!r} is not private; choose a private method")
        if self.out_of_bounds not in OUT_OF_BOUNDS:
            raise ValueError(
                f"out_of_bounds must be one of {OUT_OF_BOUNDS}; got {self.out_of_bounds!r}"
            )
        if not isinstance(self.fit_intercept, bool | np.bool_):
            raise TypeError(f"fit_intercept must be True or False; got {self.fit_intercept!r}")
        n, d = X.shape
        if n < 2:
            raise ValueError(f"n_samples = {n}: at least 2 rows are needed")
        bound_X, bound_y = self._bounds()
        epsilon, delta, unit = self._target(n)
        split = None
        if self.standardise_share is None:
            if standardisation_rho is not None:
                raise ValueError("standardisation_rho is given but standardise_share is not set")
        else:
            if standardisation_rho is None:
                raise ValueError(
                    "standardise_share is set: give fit(..., standardisation_rho=...) the level"
                    " the standardisation certified (fit_table does)"
                )
            split = self.standardisation_split(n)
            ZCDP(standardisation_rho)  # type and range checks
            if standardisation_rho > split.rho_first * (1 + 1e-12):  # beyond rounding
                raise ValueError(
                    f"the standardisation certified rho = {standardisation_rho:.6g}, more than"
                    f" its share {split.share:g} of the target (rho = {split.rho_first:.6g})"
                )
            epsilon, delta = split.epsilon_rest, split.delta_rest
        self.target_ = (epsilon, delta)
        if self.out_of_bounds == "raise":
            norms = np.linalg.norm(X, axis=1)
            if norms.max() > bound_X * (1 + 1e-12) or np.abs(y).max() > bound_y * (1 + 1e-12):
                raise ValueError(
                    "rows beyond the public bounds (bounds="
                    f"{self.bounds!r}); rescale them or use out_of_bounds='clip'"
                )
            clipped = 0
        else:
            X, y, clipped = _project(X, y, bound_X, bound_y)
        rng = (
            self.random_state
            if isinstance(self.random_state, np.random.Generator)
            else np.random.default_rng(self.random_state)
        )
        public = PublicInputs(
            n=n, d=d + int(bool(self.fit_intercept)), epsilon=epsilon, delta=delta,
            bound_X=bound_X, bound_y=bound_y,
        )  # fmt: skip
        reason = method.reason_not_run(public)
        if reason is not None:
            raise ValueError(f"method {self.method!r} cannot run on this table: {reason}")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            fit = fit_method(
                self.method, X, y, epsilon=epsilon, delta=delta, bound_X=bound_X,
                bound_y=bound_y, rng=rng, trials=1, intercept=bool(self.fit_intercept),
            )  # fmt: skip
        self.coef_ = fit.theta[0].copy()
        self.intercept_ = float(fit.intercept[0]) if fit.intercept is not None else 0.0
        self.hyperparameters_ = dict(fit.diagnostics.get("hyperparameters", {}))
        self.budget_spent_ = _both_units(fit.budget_spent, delta, unit)
        self.budget_split_ = None
        if split is not None:
            assert standardisation_rho is not None
            total = compose_spent(split, fit.budget_spent, rho_first=float(standardisation_rho))
            self.budget_split_ = {
                **split.to_dict(),
                "rho_standardisation": float(standardisation_rho),
                "estimator_spent": {
                    k: (None if isinstance(v, float) and math.isnan(v) else v)
                    for k, v in self.budget_spent_.items()
                },
            }
            if total["epsilon"] > split.epsilon or total["delta"] > split.delta:
                raise ValueError(  # never reached: the split leaves a margin
                    f"the composed budget ({total['epsilon']!r}, {total['delta']!r}) exceeds"
                    f" the target ({split.epsilon!r}, {split.delta!r})"
                )
            self.budget_spent_ = {**total, "unit": unit}
        self.n_clipped_ = clipped
        self.n_rows_ = n
        self.fit_ = fit
        return self

    def predict(self, X: Any) -> np.ndarray:
        """Predict from the release only: ``X @ coef_ + intercept_``."""
        check_is_fitted(self, "coef_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return X @ self.coef_ + self.intercept_

    def conf_int(self, alpha: float = 0.05, *, replicates: int = 1000) -> np.ndarray:
        """Confidence intervals of ``(intercept_, coef_)``, shape (d + 1, 2), or an error.

        A parametric bootstrap from the release (post-processing: no budget;
        :func:`dpreg.inference.bootstrap.bootstrap_intervals`, ``docs/inference.md``),
        targeting the least-squares fit of the data, printed only where the coverage
        study has checked it: the method, a fit without an intercept, and public inputs
        (n, d, epsilon) inside the checked regime. Anywhere else this raises
        ``ValueError`` saying why, never an interval of unknown coverage. The intercept
        row is NaN (no intercept).
        """
        from dpreg.inference.bootstrap import (
            CHECKED_INTERVALS,
            UncheckedRegimeWarning,
            bootstrap_intervals,
        )

        check_is_fitted(self, "coef_")
        if not (isinstance(alpha, numbers.Real) and 0 < float(alpha) < 1):
            raise ValueError(f"alpha must lie in (0, 1); got {alpha!r}")
        estimator = get_method(self.method).estimator
        where = "docs/inference.md lists the methods and sizes the coverage study has checked"
        if (estimator, "empirical") not in CHECKED_INTERVALS:
            raise ValueError(
                f"no confidence interval with checked coverage for method {self.method!r} ({where})"
            )
        if self.fit_intercept:
            raise ValueError(
                "no confidence interval with checked coverage for a fit with an intercept"
                f" ({where}); fit with fit_intercept=False on centred data"
            )
        public = PublicInputs(
            n=self.n_rows_, d=self.n_features_in_, epsilon=self.target_[0],
            delta=self.target_[1], bound_X=self._bounds()[0], bound_y=self._bounds()[1],
        )  # fmt: skip
        rng = np.random.default_rng(
            [0 if not isinstance(self.random_state, int) else self.random_state, 1]
        )
        with warnings.catch_warnings():
            warnings.simplefilter("error", UncheckedRegimeWarning)
            try:
                ci = bootstrap_intervals(
                    self.fit_, public=public, rng=rng, alpha=float(alpha), replicates=replicates
                )
            except UncheckedRegimeWarning as outside:
                raise ValueError(
                    f"no confidence interval with checked coverage at these sizes: {outside}"
                    f" ({where})"
                ) from None
        out = np.full((self.n_features_in_ + 1, 2), np.nan)
        out[1:, 0], out[1:, 1] = ci.lower[0], ci.upper[0]
        return out

    def summary(self, *, feature_names: list[str] | None = None, alpha: float = 0.05) -> str:
        """Return a statsmodels-style text summary: the release, its budget and its bounds.

        Coefficients with standard errors and intervals where the method's interval
        coverage is checked (otherwise ``n/a`` with the reason); the budget as
        requested and as certified in both units with the conversion; the public
        bounds, the method, its neighbouring relation and the hyperparameters its public
        rule chose.
        """
        check_is_fitted(self, "coef_")
        names = (
            list(feature_names)
            if feature_names is not None
            else [f"x{j}" for j in range(self.n_features_in_)]
        )
        if len(names) != self.n_features_in_:
            raise ValueError(
                f"feature_names has {len(names)} names for {self.n_features_in_} features"
            )
        try:
            intervals = self.conf_int(alpha)
            reason = ""
        except ValueError as err:
            intervals, reason = None, str(err)
        method = get_method(self.method)
        spent = self.budget_spent_
        width = 78
        lines = [
            "DP linear regression".center(width),
            "=" * width,
            f"method:        {self.method} ({method.description})",
            f"guarantee:     {method.guarantee}-DP, zero-out neighbours (one row replaced by"
            " zeros; n public)",
            f"certified:     epsilon = {spent['epsilon']:.4g}, delta = {spent['delta']:.3g}"
            + (f", rho = {spent['rho']:.4g} (zCDP)" if math.isfinite(spent["rho"]) else "")
            + f"; conversion: {spent['conversion']}",
            *self._split_lines(),
            f"public bounds: ||x|| <= {self._bounds()[0]:g}, |y| <= {self._bounds()[1]:g}"
            f" ({self.out_of_bounds} rows beyond)",
            f"rows, columns: n = {self.n_rows_}, d = {self.n_features_in_}",
            "hyperparameters (public rule): "
            + (
                ", ".join(
                    f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                    for k, v in sorted(self.hyperparameters_.items())
                )
                or "none"
            ),  # fmt: skip
            "-" * width,
            f"{'':<16}{'coef':>12}{'std err':>12}{'[' + format(alpha / 2, 'g'):>14}"
            f"{format(1 - alpha / 2, 'g') + ']':>14}",
        ]
        rows = [("intercept", self.intercept_)] if self.fit_intercept else []
        rows += list(zip(names, self.coef_, strict=True))
        offset = 0 if self.fit_intercept else 1
        for i, (name, value) in enumerate(rows):
            if intervals is not None and np.isfinite(intervals[i + offset]).all():
                low, high = intervals[i + offset]
                se = (high - low) / (2 * 1.959963984540054)
                lines.append(f"{name:<16}{value:>12.4g}{se:>12.4g}{low:>14.4g}{high:>14.4g}")
            else:
                lines.append(f"{name:<16}{value:>12.4g}{'n/a':>12}{'n/a':>14}{'n/a':>14}")
        lines.append("=" * width)
        if reason:
            lines.append(f"Intervals: {reason}.")
        lines.append(
            "The clip count n_clipped_ is computed from the data without noise: outside the"
            " guarantee, not printed here."
        )
        return "\n".join(lines)

    def _split_lines(self) -> list[str]:
        split = getattr(self, "budget_split_", None)
        if split is None:
            return []
        own = split["estimator_spent"]
        first = (
            f"rho = {split['rho_standardisation']:.4g} (zCDP)"
            if split["route"] == "zcdp"
            else f"rho = {split['rho_standardisation']:.4g} (zCDP), i.e. epsilon ="
            f" {split['epsilon_first']:.4g} at delta = {split['delta_first']:.3g}"
        )
        return [
            f"  composed of: private standardisation (share {split['share']:g} of rho ="
            f" {split['rho_total']:.4g}) {first}",
            f"               + the fit: epsilon = {own['epsilon']:.4g}, delta ="
            f" {own['delta']:.3g}; composition: {split['route']}",
        ]

    def __sklearn_tags__(self):  # noqa: D105
        tags = super().__sklearn_tags__()
        tags.non_deterministic = self.random_state is None
        return tags


def _both_units(spent: Any, delta: float, unit: str) -> dict[str, Any]:
    """Return the certificate as epsilon, delta and rho (NaN: approximate DP implies none)."""
    if isinstance(spent, PureDP):
        return {"epsilon": spent.epsilon, "delta": 0.0, "rho": spent.to_zcdp().rho,
                "unit": "pure_epsilon", "conversion": "pure DP implies eps^2/2-zCDP"}  # fmt: skip
    if isinstance(spent, ZCDP):
        return {"epsilon": zcdp_to_eps(spent.rho, delta, method="tight"), "delta": delta,
                "rho": spent.rho, "unit": unit, "conversion": "tight"}  # fmt: skip
    return {"epsilon": spent.epsilon, "delta": spent.delta, "rho": math.nan, "unit": unit,
            "conversion": "none (an (epsilon, delta) certificate has no zCDP level)"}  # fmt: skip


#: The private methods a DPLinearRegression can run (for documentation and the CLI).
PRIVATE_METHODS: tuple[str, ...] = tuple(name for name, m in METHODS.items() if m.private)


@dataclass(frozen=True)
class TableFit:
    """The result of :func:`fit_table`.

    Attributes
    ----------
    model : DPLinearRegression
        The fitted model (on the mapped rows); ``model.budget_spent_`` is the composed
        total when the rows were standardised privately.
    train, test : Dataset, Dataset or None
        The mapped rows (``test`` with ``test_fraction`` > 0).
    scaling : PublicScaling
        The public map the model's rows were made with: the codebook's, or the one
        derived from the private standardisation's release.
    coef, intercept : ndarray
        The release in original units, ``scaling.to_original(coef_, intercept_)``.
    standardisation : dict or None
        The private standardisation's release (public: means, standard deviations,
        boxes, noise scale, rho; the dataset's step ``private_standardisation``), or
        ``None``.
    """

    model: DPLinearRegression
    train: Any
    test: Any
    scaling: Any
    coef: np.ndarray
    intercept: np.ndarray
    standardisation: Any = None

    @property
    def budget_spent(self) -> dict[str, Any]:
        """The budget of the whole release (composed with the standardisation)."""
        return self.model.budget_spent_


def fit_table(
    data: Any,
    codebook: Any,
    *,
    method: str = "ihm",
    epsilon: float | None = None,
    delta: float | None = None,
    rho: float | None = None,
    budget: ApproxDP | ZCDP | None = None,
    standardise_share: float | None = None,
    random_state: int | np.random.Generator | None = None,
    sha256: str | None = None,
    test_fraction: float = 0.0,
    seed: int = 0,
) -> TableFit:
    r"""Fit a private regression on a table with its codebook, in original units.

    Without private standardisation (the codebook has no ``standardise:`` entry and
    ``standardise_share`` is ``None``) this is :func:`dpreg.data.load_table_split`, then
    :class:`DPLinearRegression` with the codebook's intercept, then
    :meth:`~dpreg.data.codebook.PublicScaling.to_original`: the same numbers as those
    three calls. With it (``docs/user-data.md``, "Private standardisation (optional)"):
    the target is split (:meth:`DPLinearRegression.standardisation_split`: a share
    :math:`s` of its zCDP level :math:`\rho` for the standardisation), the training rows'
    private means and standard deviations are released at :math:`\rho_s = s\rho`
    (:mod:`dpreg.data.private_scaling`, Gaussian mechanism, zero-out relation as the
    fit's), the rows are clipped to the released boxes and mapped, the model is fitted
    on what remains, and ``model.budget_spent_`` is the composed total (never above
    the target).

    Parameters
    ----------
    data : path-like or DataFrame
        The table (:func:`dpreg.data.load_table`).
    codebook : Codebook or path-like
        Its codebook; ``standardise: {share, k, floor}`` asks for the private
        standardisation.
    method : str, default "ihm"
        A private method (:class:`DPLinearRegression`).
    epsilon, delta, rho, budget
        The target of the whole release, as for :class:`DPLinearRegression`.
    standardise_share : float, optional
        Overrides the codebook's ``standardise.share`` (with the codebook's ``k`` and
        ``floor`` and ``rounds``, or the defaults 3, 0.01 and 3 when it has none).
    random_state : int, numpy.random.Generator or None
        Source of the noise (the standardisation's first, then the fit's).
    sha256, test_fraction, seed
        As for :func:`dpreg.data.load_table_split`.

    Returns
    -------
    TableFit

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from dpreg.data import read_codebook
    >>> from dpreg.data.codebook import parse_codebook
    >>> book = parse_codebook({"response": "y", "features": ["income"], "intercept": True,
    ...     "standardise": {"share": 0.2, "k": 3},
    ...     "columns": {"y": {"range": [-50, 50]}, "income": {"range": [0, 1000000]}}})
    >>> rng = np.random.default_rng(0)
    >>> income = rng.normal(40000, 10000, size=50000)
    >>> y = (income - 40000) / 1000 + rng.normal(size=50000)
    >>> frame = pd.DataFrame({"income": income, "y": y})
    >>> result = fit_table(frame, book, method="adassp", epsilon=1.0, random_state=0)
    >>> round(float(result.coef[0]) * 1000, 1)  # y per 1000 of income; the truth is 1
    1.0
    >>> result.budget_spent["epsilon"] <= 1.0, result.budget_spent["composition"]
    (True, 'basic')
    """
    from dataclasses import replace

    from dpreg.data.codebook import Codebook, StandardiseOptions, read_codebook
    from dpreg.data.table import load_table_split, standardisation_record, table_scaling

    book = codebook if isinstance(codebook, Codebook) else read_codebook(codebook)
    options = book.standardise
    if standardise_share is not None:
        options = (
            StandardiseOptions(share=standardise_share)
            if options is None
            else replace(options, share=standardise_share)
        )
    common = {"sha256": sha256, "test_fraction": test_fraction, "seed": seed}
    model = DPLinearRegression(
        method, epsilon=epsilon, delta=delta, rho=rho, budget=budget,
        fit_intercept=bool(book.intercept), random_state=random_state,
    )  # fmt: skip
    release = None
    if options is None:
        train, test = load_table_split(data, book, **common)
        model.fit(train.X, train.y)
    else:
        rng = (
            random_state
            if isinstance(random_state, np.random.Generator)
            else np.random.default_rng(random_state)
        )
        model.set_params(standardise_share=options.share, random_state=rng)
        # n is public: count the training rows first (the codebook's map, nothing released).
        n_train = load_table_split(data, replace(book, standardise=None), **common)[0].n
        rho_s = model.standardisation_split(n_train).rho_first
        train, test = load_table_split(
            data, replace(book, standardise=options), standardise_rho=rho_s, rng=rng, **common
        )
        release = standardisation_record(train)
        assert release is not None
        model.fit(train.X, train.y, standardisation_rho=release["rho"])
    scaling = table_scaling(train)
    coef, intercept = scaling.to_original(model.coef_, model.intercept_)
    return TableFit(model, train, test, scaling, coef, intercept, release)
