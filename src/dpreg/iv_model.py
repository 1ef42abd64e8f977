r"""A scikit-learn estimator for private IV regression: ``DPIVRegression``.

The instrumental-variable counterpart of :class:`dpreg.linear_model.DPLinearRegression`:
``fit(X, y, Z)``, ``predict``, ``score``, ``get_params`` / ``set_params``, ``coef_``,
``intercept_``, for the private IV methods of
:data:`dpreg.estimators.iv_methods.IV_METHODS` (today DP-2S-GD, Liang et al. 2025,
Algorithm 1), whose hyperparameters are set from public inputs only. The budget is an
:math:`(\varepsilon, \delta)` target; the fit runs at the zCDP level :math:`\rho` whose
tight conversion is that target, split between the two stages
(:math:`\rho_1 = s\rho`, :math:`\rho_2 = (1-s)\rho`, ``theta_share`` :math:`= s`), and
reports what it certified in both units (:attr:`DPIVRegression.budget_spent_`) and the
split (:attr:`DPIVRegression.budget_split_`).

**Public bounds.** ``bounds = (B_X, B_y, B_Z)``: :math:`\|x_i\| \le B_X`,
:math:`|y_i| \le B_y`, :math:`\|z_i\| \le B_Z`, declared before the data are seen. A row
beyond them is projected onto the bound (``out_of_bounds="clip"``, a fixed row-by-row
map, so the guarantee holds) or refused (``"raise"``). ``n_clipped_`` counts the rows
projected: computed from the data without noise, **outside the guarantee**, not to be
published. For a table in its own units, map it into the bounds with a codebook
(``docs/user-data.md``, "Instrumental variables on your table").

**Intercept.** ``fit_intercept=True`` adds a public constant column inside the bound to
both ``X`` and ``Z`` (an exogenous regressor is its own instrument;
:mod:`dpreg.estimators.intercept`).

**Intervals.** No confidence interval of DP-2S-GD has been checked by a coverage study
(``docs/inference.md``), so :meth:`DPIVRegression.conf_int` refuses, as
:meth:`~dpreg.linear_model.DPLinearRegression.conf_int` refuses an unchecked method, and
:meth:`~DPIVRegression.summary` prints ``n/a`` with the reason.

Examples
--------
>>> import numpy as np
>>> from dpreg.iv_model import DPIVRegression
>>> rng = np.random.default_rng(0)
>>> Z = rng.uniform(-1, 1, size=(20_000, 1))
>>> u = 0.1 * rng.normal(size=20_000)  # confounds x and y
>>> X = np.clip(0.8 * Z + 0.1 * rng.uniform(-1, 1, size=(20_000, 1)) + u[:, None], -1, 1)
>>> y = np.clip(0.2 + 0.5 * X[:, 0] + 0.1 * rng.normal(size=20_000) + 2 * u, -1, 1)
>>> model = DPIVRegression(epsilon=5.0, random_state=0).fit(X, y, Z)
>>> np.round(model.coef_, 1), round(float(model.intercept_), 1)
(array([0.5]), 0.2)
>>> model.budget_spent_["epsilon"] <= 5.0 * (1 + 1e-9)
True
>>> sorted(model.budget_split_)
['rho1', 'rho2', 'theta_share']
"""

from __future__ import annotations

import math
import numbers
import warnings
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from dpreg._validation import check_matrix, check_vector
from dpreg.estimators.iv_methods import IV_METHODS, PublicIVInputs, fit_iv_method, get_iv_method
from dpreg.linear_model import OUT_OF_BOUNDS, _both_units

__all__ = ["DPIVRegression", "IV_METHOD_NAMES"]

#: The private IV methods a DPIVRegression can run (for documentation and the CLI).
IV_METHOD_NAMES: tuple[str, ...] = tuple(IV_METHODS)

_WHERE = "docs/inference.md lists the methods and sizes the coverage study has checked"


def _project_rows(A: np.ndarray, bound: float) -> tuple[np.ndarray, np.ndarray]:
    norms = np.linalg.norm(A, axis=1)
    return A * np.minimum(1.0, bound / np.maximum(norms, 1e-300))[:, None], norms > bound


class DPIVRegression(RegressorMixin, BaseEstimator):
    r"""Differentially private IV regression with a public-hyperparameter method.

    Parameters
    ----------
    method : str, default "dp_2s_gd"
        A private IV method of :data:`dpreg.estimators.iv_methods.IV_METHODS`.
    epsilon : float, optional
        The :math:`(\varepsilon, \delta)` target of one fit (finite, > 0); default 1.
    delta : float, optional
        δ of the target, in (0, 1); default :math:`1/n^2` (n is public under the
        replace-one relation of Algorithm 1).
    theta_share : float, default 0.5
        Share :math:`s \in (0, 1)` of the zCDP budget spent on the first stage.
    bounds : tuple of float, default (1.0, 1.0, 1.0)
        Public bounds ``(B_X, B_y, B_Z)``.
    fit_intercept : bool, default True
        Add a public constant column to ``X`` and ``Z``.
    out_of_bounds : {"clip", "raise"}, default "clip"
        Project rows beyond the bounds onto them, or refuse them.
    random_state : int, numpy.random.Generator or None
        Source of the noise (``None``: fresh entropy).

    Attributes
    ----------
    coef_ : ndarray, shape (p,)
    intercept_ : float
    n_features_in_ : int
    n_instruments_ : int
    budget_spent_ : dict
        What the fit certified: ``epsilon`` (the tight conversion of ``rho`` at
        ``delta``), ``delta``, ``rho`` (zCDP), ``unit`` and ``conversion``.
    budget_split_ : dict
        ``rho1`` (first stage, :math:`\Theta`), ``rho2`` (second stage, :math:`\beta`)
        and ``theta_share``.
    hyperparameters_ : dict
        The values the public rule chose (``T``, steps, clip thresholds, ``rho1``, ``rho2``).
    n_clipped_ : int
        Rows projected onto the bounds (**outside the guarantee**: not to be published).
    n_rows_ : int
        Training rows (public under the replace-one relation).
    target_ : tuple of float
        The (epsilon, delta) target.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(1)
    >>> Z = rng.uniform(-1, 1, size=(2000, 2)) / np.sqrt(2)
    >>> X = np.clip(Z[:, :1] + 0.1 * rng.normal(size=(2000, 1)), -1, 1)
    >>> y = np.clip(0.5 * X[:, 0] + 0.1 * rng.normal(size=2000), -1, 1)
    >>> model = DPIVRegression(epsilon=1.0, random_state=0).fit(X, y, Z)
    >>> model.predict(X[:2]).shape
    (2,)
    >>> model.conf_int()  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: no confidence interval with checked coverage for method 'dp_2s_gd' ...
    """

    def __init__(
        self,
        method: str = "dp_2s_gd",
        *,
        epsilon: float | None = None,
        delta: float | None = None,
        theta_share: float = 0.5,
        bounds: tuple[float, float, float] = (1.0, 1.0, 1.0),
        fit_intercept: bool = True,
        out_of_bounds: str = "clip",
        random_state: int | np.random.Generator | None = None,
    ) -> None:
        self.method = method
        self.epsilon = epsilon
        self.delta = delta
        self.theta_share = theta_share
        self.bounds = bounds
        self.fit_intercept = fit_intercept
        self.out_of_bounds = out_of_bounds
        self.random_state = random_state

    # ----------------------------------------------------------------------- checks

    def _bounds(self) -> tuple[float, float, float]:
        try:
            bound_X, bound_y, bound_Z = self.bounds
        except (TypeError, ValueError):
            raise ValueError(
                f"bounds must be a triple (bound_X, bound_y, bound_Z); got {self.bounds!r}"
            ) from None
        named = zip(
            ("bounds[0] (bound_X)", "bounds[1] (bound_y)", "bounds[2] (bound_Z)"),
            (bound_X, bound_y, bound_Z),
            strict=True,
        )
        for name, value in named:
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                raise TypeError(f"{name} must be a number; got {value!r}")
            if not (0 < float(value) < math.inf):
                raise ValueError(f"{name} must be a finite positive number; got {value!r}")
        return float(bound_X), float(bound_y), float(bound_Z)

    def _check_params(self) -> None:
        """Every constructor argument, before the data are touched."""
        get_iv_method(self.method)
        if self.out_of_bounds not in OUT_OF_BOUNDS:
            raise ValueError(
                f"out_of_bounds must be one of {OUT_OF_BOUNDS}; got {self.out_of_bounds!r}"
            )
        if not isinstance(self.fit_intercept, bool | np.bool_):
            raise TypeError(f"fit_intercept must be True or False; got {self.fit_intercept!r}")
        self._bounds()
        for name in ("epsilon", "delta", "theta_share"):
            value = getattr(self, name)
            if value is None and name != "theta_share":
                continue
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                raise TypeError(f"{name} must be a number; got {value!r}")
        if self.epsilon is not None and not (0 < float(self.epsilon) < math.inf):
            raise ValueError(
                f"epsilon must be a finite number > 0 (an infinite budget is not private);"
                f" got {self.epsilon!r}"
            )
        if self.delta is not None and not (0 < float(self.delta) < 1):
            raise ValueError(f"delta must lie in (0, 1); got {self.delta!r}")
        if not (0 < float(self.theta_share) < 1):
            raise ValueError(f"theta_share must lie in (0, 1); got {self.theta_share!r}")

    # ------------------------------------------------------------------------- API

    def fit(self, X: Any, y: Any, Z: Any) -> DPIVRegression:
        """Fit one private release on ``(X, y)`` with instruments ``Z``.

        Parameters
        ----------
        X : array_like, shape (n, p)
            Endogenous regressors.
        y : array_like, shape (n,)
        Z : array_like, shape (n, q)
            Excluded instruments, ``q >= p``.

        Returns
        -------
        self
        """
        self._check_params()
        X_arr = check_matrix(X, "X")
        y_arr = check_vector(y, X_arr.shape[0], "y")
        Z_arr = check_matrix(Z, "Z")
        n, p = X_arr.shape
        if Z_arr.shape[0] != n:
            raise ValueError(f"Z has {Z_arr.shape[0]} rows but X has {n}; they must match")
        q = Z_arr.shape[1]
        if q < p:
            raise ValueError(
                f"Z has q={q} instrument column(s) but X has p={p}: under-identified, IV"
                " regression needs at least as many instruments as regressors (q >= p)"
            )
        extra = int(bool(self.fit_intercept))
        if n < max(2, q + extra):
            raise ValueError(f"n_samples = {n}: need at least {max(2, q + extra)} rows")
        X_arr, y_arr = validate_data(self, X, y, dtype=np.float64, y_numeric=True)
        bound_X, bound_y, bound_Z = self._bounds()
        epsilon = 1.0 if self.epsilon is None else float(self.epsilon)
        delta = 1.0 / float(n) ** 2 if self.delta is None else float(self.delta)
        public = PublicIVInputs(
            n=n, p=p + extra, q=q + extra, epsilon=epsilon, delta=delta, bound_X=bound_X,
            bound_y=bound_y, bound_Z=bound_Z, theta_share=float(self.theta_share),
        )  # fmt: skip
        if self.out_of_bounds == "raise":
            for name, beyond in (
                ("X", np.linalg.norm(X_arr, axis=1).max() > bound_X * (1 + 1e-12)),
                ("y", np.abs(y_arr).max() > bound_y * (1 + 1e-12)),
                ("Z", np.linalg.norm(Z_arr, axis=1).max() > bound_Z * (1 + 1e-12)),
            ):
                if beyond:
                    raise ValueError(
                        f"rows of {name} beyond the public bounds (bounds={self.bounds!r});"
                        " rescale them or use out_of_bounds='clip'"
                    )
            clipped = 0
        else:
            X_arr, over_x = _project_rows(X_arr, bound_X)
            Z_arr, over_z = _project_rows(Z_arr, bound_Z)
            over_y = np.abs(y_arr) > bound_y
            y_arr = np.clip(y_arr, -bound_y, bound_y)
            clipped = int(np.count_nonzero(over_x | over_y | over_z))
        rng = (
            self.random_state
            if isinstance(self.random_state, np.random.Generator)
            else np.random.default_rng(self.random_state)
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            fit = fit_iv_method(
                self.method, Z_arr, X_arr, y_arr, epsilon=epsilon, delta=delta, rng=rng,
                bound_X=bound_X, bound_y=bound_y, bound_Z=bound_Z,
                theta_share=float(self.theta_share), trials=1, intercept=bool(self.fit_intercept),
            )  # fmt: skip
        hyper = fit.diagnostics["hyperparameters"]
        self.target_ = (epsilon, delta)
        self.coef_ = fit.theta[0].copy()
        self.intercept_ = float(fit.intercept[0]) if fit.intercept is not None else 0.0
        self.hyperparameters_ = dict(hyper)
        self.budget_spent_ = _both_units(fit.budget_spent, delta, "epsilon_delta")
        self.budget_split_ = {
            "rho1": float(hyper["rho1"]),
            "rho2": float(hyper["rho2"]),
            "theta_share": float(self.theta_share),
        }
        self.n_instruments_ = q
        self.n_clipped_ = clipped
        self.n_rows_ = n
        self.public_ = public
        self.fit_ = fit
        return self

    def predict(self, X: Any) -> np.ndarray:
        """Predict from the release only: ``X @ coef_ + intercept_``."""
        check_is_fitted(self, "coef_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return X @ self.coef_ + self.intercept_

    def conf_int(self, alpha: float = 0.05) -> np.ndarray:
        """Confidence intervals of ``(intercept_, coef_)``, or an error saying why none.

        Intervals are printed only where a coverage study has checked them
        (:data:`dpreg.inference.bootstrap.CHECKED_INTERVALS`, ``docs/inference.md``), the
        rule of :meth:`dpreg.linear_model.DPLinearRegression.conf_int`. No IV method is
        checked today, so this raises ``ValueError`` naming the method.
        """
        from dpreg.inference.bootstrap import CHECKED_INTERVALS

        check_is_fitted(self, "coef_")
        if not (isinstance(alpha, numbers.Real) and 0 < float(alpha) < 1):
            raise ValueError(f"alpha must lie in (0, 1); got {alpha!r}")
        estimator = get_iv_method(self.method).estimator
        if (estimator, "empirical") not in CHECKED_INTERVALS:
            raise ValueError(
                f"no confidence interval with checked coverage for method {self.method!r}"
                f" ({_WHERE})"
            )
        raise ValueError(  # pragma: no cover - no IV simulator exists yet
            f"no parametric bootstrap for method {self.method!r} yet ({_WHERE})"
        )

    def summary(
        self,
        *,
        feature_names: list[str] | None = None,
        instrument_names: list[str] | None = None,
        alpha: float = 0.05,
    ) -> str:
        """Return a text summary: coefficients, the budget in both units and its split.

        Standard errors and intervals are ``n/a`` with the reason :meth:`conf_int`
        gives; the budget certified in both units with the conversion, the split
        between the stages, the public bounds, the method, its neighbouring relation and
        the hyperparameters its public rule chose.
        """
        check_is_fitted(self, "coef_")
        p, q = self.n_features_in_, self.n_instruments_
        names = list(feature_names) if feature_names is not None else [f"x{j}" for j in range(p)]
        if len(names) != p:
            raise ValueError(f"feature_names has {len(names)} names for {p} features")
        z_names = (
            list(instrument_names) if instrument_names is not None else [f"z{j}" for j in range(q)]
        )
        if len(z_names) != q:
            raise ValueError(f"instrument_names has {len(z_names)} names for {q} instruments")
        try:
            self.conf_int(alpha)
            reason = ""
        except ValueError as err:
            reason = str(err)
        spent, split = self.budget_spent_, self.budget_split_
        method = get_iv_method(self.method)
        bx, by, bz = self._bounds()
        width = 78
        lines = [
            "DP instrumental-variable regression".center(width),
            "=" * width,
            f"method:        {self.method} ({method.title or method.paper})",
            "guarantee:     rho-zCDP, hence (epsilon, delta)-DP; replace-one neighbours (one"
            " record (z, x, y) replaced; n public)",
            f"certified:     epsilon = {spent['epsilon']:.4g}, delta = {spent['delta']:.3g},"
            f" rho = {spent['rho']:.4g} (zCDP); conversion: {spent['conversion']}",
            f"budget split:  rho1 = {split['rho1']:.4g} (first stage), rho2 ="
            f" {split['rho2']:.4g} (second stage); theta_share = {split['theta_share']:g}",
            f"public bounds: ||x|| <= {bx:g}, |y| <= {by:g}, ||z|| <= {bz:g}"
            f" ({self.out_of_bounds} rows beyond)",
            f"rows, columns: n = {self.n_rows_}, p = {p}, q = {q}"
            + (" (+ a constant column in X and Z)" if self.fit_intercept else ""),
            f"instruments:   {', '.join(z_names)}",
            "hyperparameters (public rule): "
            + ", ".join(
                f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                for k, v in sorted(self.hyperparameters_.items())
            ),
            "-" * width,
            f"{'':<16}{'coef':>12}{'std err':>12}{'[' + format(alpha / 2, 'g'):>14}"
            f"{format(1 - alpha / 2, 'g') + ']':>14}",
        ]
        rows = [("intercept", self.intercept_)] if self.fit_intercept else []
        rows += list(zip(names, self.coef_, strict=True))
        for name, value in rows:
            lines.append(f"{name:<16}{value:>12.4g}{'n/a':>12}{'n/a':>14}{'n/a':>14}")
        lines.append("=" * width)
        if reason:
            lines.append(f"Intervals: {reason}.")
        lines.append(
            "The clip count n_clipped_ and the clip fractions are computed from the data"
            " without noise: outside the guarantee, not printed here."
        )
        return "\n".join(lines)

    def __sklearn_tags__(self):  # noqa: D105
        tags = super().__sklearn_tags__()
        tags.non_deterministic = self.random_state is None
        return tags
