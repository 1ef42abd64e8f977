"""DP linear regression against OLS on one dataset over a privacy grid.

One *cell* of a study is (dataset, estimator, epsilon, chunk of trials); it returns a
tidy table with one row per trial. Used by the foundation's AdaSSP study and by the
lev2026 benchmark (train MSE against epsilon, Lev et al. 2026, Section 5).
"""

from __future__ import annotations

import inspect
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dpreg.data.datasets import Dataset
from dpreg.estimators import ESTIMATORS, get_estimator
from dpreg.experiments.budgets import budget_columns, spent_columns
from dpreg.experiments.params import KindParams, choice, open_interval, param, positive
from dpreg.experiments.study_kind import StudyKind
from dpreg.privacy.budgets import ApproxDP

DELTA_RULES = ("inverse_n_squared", "fixed")


def study_delta(n: int, rule: str, value: float | None = None) -> float:
    """Return the study's delta: ``1/n^2`` (Lev et al., Section 5) or a fixed value."""
    if rule == "inverse_n_squared":
        return 1.0 / float(n) ** 2
    if rule == "fixed":
        if value is None:
            raise ValueError("delta rule 'fixed' needs a delta value")
        return float(value)
    raise ValueError(f"unknown delta rule {rule!r}; choose one of {DELTA_RULES}")


def ols_fit(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Return the least-squares fit of ``(X, y)`` (the reference every pair is scored on).

    Examples
    --------
    >>> import numpy as np
    >>> ols_fit(np.array([[1.0], [2.0]]), np.array([2.0, 4.0]))
    array([2.])
    """
    return np.linalg.lstsq(X, y, rcond=None)[0]


@dataclass(frozen=True)
class OlsReference:
    r"""What scoring a fit against OLS needs from the rows, computed once per data set.

    Attributes
    ----------
    theta : ndarray, shape (d,)
        The least-squares fit :math:`\theta_{\rm ols}` (:func:`ols_fit`).
    mse : float
        Its train MSE :math:`\|r\|^2/n`, :math:`r = y - X\theta_{\rm ols}`.
    factor : ndarray, shape (d, d)
        :math:`R` of the thin QR factorisation :math:`X = QR` (Householder).
    moment : ndarray, shape (d,)
        :math:`Q^\top r` (zero up to rounding for OLS: kept so the score is exact
        algebra for any reference point).
    """

    theta: np.ndarray
    mse: float
    factor: np.ndarray
    moment: np.ndarray


def ols_reference(
    X: np.ndarray, y: np.ndarray, theta_ols: np.ndarray | None = None
) -> OlsReference:
    """Return the :class:`OlsReference` of ``(X, y)`` (one O(n d^2) QR factorisation).

    Examples
    --------
    >>> import numpy as np
    >>> ref = ols_reference(np.array([[1.0], [2.0]]), np.array([2.0, 5.0]))
    >>> ref.theta.round(3), round(ref.mse, 3)
    (array([2.4]), 0.1)
    """
    theta = ols_fit(X, y) if theta_ols is None else theta_ols
    resid = y - X @ theta
    n = X.shape[0]
    Q, R = np.linalg.qr(X, mode="reduced")
    return OlsReference(theta=theta, mse=float(resid @ resid) / n, factor=R, moment=Q.T @ resid)


SCORINGS = ("qr", "rows")


def train_mse(
    theta: np.ndarray,
    X: np.ndarray,
    y: np.ndarray,
    reference: OlsReference,
    scoring: str = "qr",
) -> np.ndarray:
    r"""Train MSE :math:`\|y - X\theta_j\|^2/n` of each row of ``theta`` (trials, d).

    ``"rows"`` (reference): the (trials, n) residuals, :math:`O(\text{trials}\,n d)`.
    ``"qr"``: with :math:`\Delta_j = \theta_j - \theta_{\rm ols}`,
    :math:`r = y - X\theta_{\rm ols}` and :math:`X = QR`, exactly
    :math:`\|y - X\theta_j\|^2 = \|r\|^2 - 2(R\Delta_j)^\top Q^\top r +
    \|R\Delta_j\|^2`, :math:`O(\text{trials}\,d^2)` from :class:`OlsReference`. The
    two differ by rounding only: the first and last terms are non-negative and the middle
    one is zero up to rounding, so nothing cancels; :math:`R` comes from a Householder QR
    (backward stable in :math:`X`, not :math:`X^\top X`: a :math:`\Delta_j` far along a
    near-null direction of :math:`X` is scored as accurately as by the residuals)
    (``tests/unit/test_eps_grid_scoring.py``).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X, y = rng.normal(size=(50, 3)), rng.normal(size=50)
    >>> ref, theta = ols_reference(X, y), rng.normal(size=(4, 3))
    >>> bool(np.allclose(train_mse(theta, X, y, ref), train_mse(theta, X, y, ref, "rows"),
    ...                  rtol=1e-13, atol=0))
    True
    """
    if scoring not in SCORINGS:
        raise ValueError(f"scoring must be one of {SCORINGS}; got {scoring!r}")
    n = X.shape[0]
    if scoring == "rows":
        residuals = theta @ X.T  # (trials, n), then y - X theta in place (same values)
        np.subtract(y[None, :], residuals, out=residuals)
        return np.einsum("ij,ij->i", residuals, residuals) / n
    fitted = (theta - reference.theta[None, :]) @ reference.factor.T  # rows R Delta_j
    quad = np.einsum("ij,ij->i", fitted, fitted)
    return reference.mse + (quad - 2.0 * (fitted @ reference.moment)) / n


def run_eps_cell(
    X: np.ndarray,
    y: np.ndarray,
    *,
    estimator: str,
    epsilon: float,
    delta: float,
    trials: int,
    seed: int,
    stream: int = 0,
    first_trial: int = 0,
    hyper: Mapping[str, Any] | None = None,
    bound_X: float = 1.0,
    bound_y: float = 1.0,
    conversion: str = "tight",
    label: str | None = None,
    theta_ols: np.ndarray | None = None,
    reference: OlsReference | None = None,
    scoring: str = "qr",
) -> pd.DataFrame:
    """Run ``trials`` independent fits of a DP estimator and score them against OLS.

    Parameters
    ----------
    X, y : ndarray
        Training data, already scaled to the public bounds.
    estimator : str
        Registry name of an (epsilon, delta)-DP estimator.
    epsilon, delta : float
        The per-trial budget.
    trials : int
        Number of trials, vectorised inside the estimator.
    seed : int
        Seed of this job (derived by :func:`dpreg.seeds.job_seed`).
    stream : int
        Index of this (estimator, epsilon) pair within the job; the generator is
        ``default_rng([seed, stream])``.
    first_trial : int
        Global index of the first trial of this chunk (recorded per row).
    hyper : mapping, optional
        Estimator hyperparameters from the config.
    bound_X, bound_y : float
        Public bounds passed to the estimator.
    conversion : str
        Name of the zCDP <-> (epsilon, delta) conversion recorded with the budget.
    label : str, optional
        Name recorded in the ``estimator`` column (a study's variant label, e.g.
        ``ihm_code``); default ``estimator``.
    theta_ols : ndarray, optional
        The least-squares fit of ``(X, y)`` (:func:`ols_fit`), when the caller scores
        several pairs on the same rows; default: computed here (the same values).
    reference : OlsReference, optional
        :func:`ols_reference` of ``(X, y)`` when the caller scores several pairs on the
        same rows (overrides ``theta_ols``); default: computed here.
    scoring : {"qr", "rows"}, default "qr"
        How ``mse`` is computed (:func:`train_mse`): from the Gram matrix,
        :math:`O(d^2)` per trial, or from the (trials, n) residuals (the reference; the
        same values to rounding).

    Returns
    -------
    DataFrame
        One row per trial: ``trial``, ``seed``, budget columns (the target),
        ``spent_epsilon``, ``spent_delta``, ``spent_rho`` (what the estimator certified
        for the noise it added, :func:`~dpreg.experiments.budgets.spent_columns`),
        ``mse`` (train MSE
        ``||y - X theta||^2 / n``), ``mse_ols``, ``excess_mse``, ``param_error``
        (``||theta - theta_ols||``), ``hyper``
        (JSON of the keyword arguments the estimator was called with besides the data,
        budget, rng and trials).
    """
    columns = _eps_cell_columns(
        X, y, estimator=estimator, epsilon=epsilon, delta=delta, trials=trials, seed=seed,
        stream=stream, first_trial=first_trial, hyper=hyper, bound_X=bound_X,
        bound_y=bound_y, conversion=conversion, label=label, theta_ols=theta_ols,
        reference=reference, scoring=scoring,
    )  # fmt: skip
    return pd.DataFrame(columns)  # built at once: no column inserts


def _eps_cell_columns(
    X: np.ndarray,
    y: np.ndarray,
    *,
    estimator: str,
    epsilon: float,
    delta: float,
    trials: int,
    seed: int,
    stream: int,
    first_trial: int,
    hyper: Mapping[str, Any] | None,
    bound_X: float,
    bound_y: float,
    conversion: str,
    label: str | None,
    theta_ols: np.ndarray | None,
    reference: OlsReference | None,
    scoring: str,
) -> dict[str, Any]:
    """Fit and score one pair: the columns of :func:`run_eps_cell`'s frame."""
    fit_fn = get_estimator(estimator)
    rng = np.random.default_rng([seed, stream])
    fit = fit_fn(
        X,
        y,
        budget=ApproxDP(epsilon, delta),
        rng=rng,
        trials=trials,
        bound_X=bound_X,
        bound_y=bound_y,
        **dict(hyper or {}),
    )
    if reference is None:
        reference = ols_reference(X, y, theta_ols)
    theta_ols = reference.theta
    mse = train_mse(fit.theta, X, y, reference, scoring)
    mse_ols = reference.mse
    columns = (
        {
            "trial": np.arange(first_trial, first_trial + trials, dtype=np.int64),
            "seed": np.full(trials, seed, dtype=np.uint64),
            "stream": np.full(trials, stream, dtype=np.int64),
            "estimator": estimator if label is None else label,
            "mse": mse,
            "mse_ols": mse_ols,
            "excess_mse": mse - mse_ols,
            "param_error": np.linalg.norm(fit.theta - theta_ols[None, :], axis=1),
            # the hyperparameters this row's estimator was actually called with
            "hyper": json.dumps(
                {**dict(hyper or {}), "bound_X": bound_X, "bound_y": bound_y},
                sort_keys=True,
                default=str,
            ),
        }
        | budget_columns(epsilon=epsilon, delta=delta, conversion=conversion)
        | spent_columns(fit.budget_spent, delta=delta, conversion=conversion)
    )
    rho_mech = fit.diagnostics.get("rho_zcdp")
    columns["rho_mechanism"] = float(rho_mech) if rho_mech is not None else math.nan
    return columns


def aggregate_trials(runs: pd.DataFrame, by: list[str], value: str = "mse") -> pd.DataFrame:
    """Summarise trials: mean, standard deviation, standard error, 95% band, median.

    The band is ``mean +/- 1.96 * std / sqrt(trials)`` (the authors' code; the
    paper prints ``/ trials``, a typo; docs/notes/lev2026.md §8 item 11).
    """
    grouped = runs.groupby(by, sort=True, observed=True)[value]
    table = grouped.agg(mean="mean", std="std", median="median", trials="count").reset_index()
    table["se"] = table["std"] / np.sqrt(table["trials"])
    table["ci_low"] = table["mean"] - 1.96 * table["se"]
    table["ci_high"] = table["mean"] + 1.96 * table["se"]
    return table


@dataclass(frozen=True)
class EpsGridParams(KindParams):
    """Cell keys of the ``eps_grid`` kind (DP estimators against OLS over epsilon)."""

    kind = "eps_grid"
    dataset: str = param(doc="a dataset declared under `datasets`")
    estimator: str | list[str] = param(
        doc="estimator registry name(s) taking an (epsilon, delta) budget (an IV estimator"
        " is refused at the dry run); a list runs every (estimator, epsilon) pair in one job"
    )
    epsilon: float | list[float] = param(doc="the per-trial epsilon(s)", check=positive)
    delta_rule: str = param(
        doc="`inverse_n_squared` (delta = 1/n^2, Lev et al.) or `fixed` (then `delta`)",
        check=choice("inverse_n_squared", "fixed"),
    )
    delta: float | None = param(None, doc="delta of `delta_rule: fixed`", check=open_interval(0, 1))
    hyper: dict = param(
        {},
        doc="estimator name (or variant label) -> hyperparameters (checked against the"
        " estimator's signature: unknown keys, keys the study sets itself, wrong types and"
        " signs stop the dry run; recorded in every row's `hyper` column)",
    )
    variants: dict = param(
        {},
        doc="label -> estimator registry name: a label listed in `estimator` runs that"
        " estimator with `hyper.<label>` and its rows carry the label (e.g. `ihm_code: ihm`"
        " beside `ihm`, two settings of one estimator in one figure); a label may not be a"
        " registry name and must be listed in `estimator`",
    )
    bound_X: float = param(
        1.0, doc="public bound on max row norm (after preprocessing)", check=positive
    )
    bound_y: float = param(1.0, doc="public bound on max abs(y)", check=positive)


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else [value]


def _registry_names(P: EpsGridParams) -> dict[str, str]:
    """Map each label in ``estimator`` to the registry name it runs (``variants``)."""
    variants = P.variants or {}
    labels = [str(name) for name in _as_list(P.estimator)]
    for label, target in variants.items():
        if not isinstance(target, str):
            raise ValueError(f"variants.{label}: must name a registry estimator; got {target!r}")
        if label in ESTIMATORS:
            raise ValueError(
                f"variants.{label}: {label!r} is a registry name; choose another label"
            )
        if label not in labels:
            raise ValueError(
                f"variants.{label}: not listed in `estimator` ({labels}), so it would not run"
            )
    return {label: variants.get(label, label) for label in labels}


def check_eps_grid_cell(cell: Mapping[str, Any]) -> None:
    """Validate one ``eps_grid`` cell before any job runs (so the dry run stops on it)."""
    P = EpsGridParams.from_cell(cell)
    names = _registry_names(P)
    for label, name in names.items():
        try:
            params = inspect.signature(get_estimator(name)).parameters
        except ValueError as err:
            raise ValueError(f"estimator {label}: {err}") from None
        if "Z" in params:
            raise ValueError(
                f"estimator {name!r} is an IV estimator (it needs instruments Z); eps_grid"
                " runs regression estimators on (X, y) only: use an iv_* study kind"
            )
    for epsilon in _as_list(P.epsilon):
        try:
            ApproxDP(epsilon, 0.5)
        except (TypeError, ValueError) as err:
            raise ValueError(f"epsilon: {err}") from None
    study_delta(2, P.delta_rule, P.delta)  # a fixed rule needs its delta
    hyper = P.hyper
    if not all(isinstance(v, Mapping) for v in hyper.values()):
        raise ValueError("hyper must map estimator names to their hyperparameters")
    for name, values in hyper.items():
        registry = names.get(name, name)
        try:
            params = inspect.signature(get_estimator(registry)).parameters
        except ValueError as err:
            raise ValueError(f"hyper.{name}: {err}") from None
        if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
            continue
        unknown = sorted(set(values) - set(params))
        if unknown:
            raise ValueError(
                f"hyper.{name}: unknown hyperparameter(s) {unknown} for estimator {registry!r}"
            )


def run_eps_grid_cell(
    cell: Mapping[str, Any], *, trials: int, first_trial: int, seed: int, data: Dataset | None
) -> pd.DataFrame:
    """Run one chunk of an ``eps_grid`` cell: DP estimator(s) against OLS at epsilon(s).

    ``estimator`` and ``epsilon`` may each be one value or a list; a list runs every
    (estimator, epsilon) pair in this job (fewer, longer jobs for cheap estimators).
    Pair ``j`` (in config order, estimators outer) draws from
    ``default_rng([seed, j])``, recorded as the row's ``seed`` and ``stream``. A label of
    ``variants`` runs its registry estimator with ``hyper.<label>`` and is recorded as
    the rows' ``estimator``.
    """
    if data is None:
        raise ValueError("an eps_grid cell needs a dataset")
    P = EpsGridParams.from_cell(cell)
    delta = study_delta(data.X.shape[0], P.delta_rule, P.delta)
    names = _registry_names(P)
    frames = []
    pairs = [(e, eps) for e in _as_list(P.estimator) for eps in _as_list(P.epsilon)]
    reference = ols_reference(data.X, data.y)  # once for every pair: the same rows
    pair_fn = run_eps_cell if _FRAME_PATH == "per_pair" else _eps_cell_columns
    for stream, (estimator, epsilon) in enumerate(pairs):
        runs = pair_fn(
            data.X,
            data.y,
            estimator=names[str(estimator)],
            epsilon=float(epsilon),
            delta=delta,
            trials=trials,
            seed=seed,
            stream=stream,
            first_trial=first_trial,
            hyper=(P.hyper or {}).get(estimator, {}),
            bound_X=float(P.bound_X),
            bound_y=float(P.bound_y),
            conversion=cell["conversion"],
            label=str(estimator),
            theta_ols=None,
            reference=reference,
            scoring="qr",
        )
        frames.append(runs)
    if _FRAME_PATH == "per_pair":  # the reference: a frame per pair, concatenated
        runs = pd.concat(frames, ignore_index=True)
        runs.insert(0, "dataset", P.dataset)
        return runs
    return _cell_frame(P.dataset, frames, trials)


#: "cell": :func:`run_eps_grid_cell` builds one frame from the pairs' columns;
#: "per_pair": a frame per pair, concatenated (the reference; tests: equal frames)
_FRAME_PATH = "cell"


def _cell_frame(dataset: str, pairs: Sequence[Mapping[str, Any]], trials: int) -> pd.DataFrame:
    """One frame from the pairs' columns, equal to the per-pair frames concatenated.

    A pair's scalar (its estimator label, budget, ``hyper``, ...) is repeated over its
    ``trials`` rows, as the per-pair frame broadcasts it; a frame per pair and the
    concatenation cost about 0.6 ms per pair (3,450 pairs in ``lev_fig5``).
    """
    columns: dict[str, Any] = {"dataset": dataset}
    for name in pairs[0]:
        parts = [np.broadcast_to(np.asarray(pair[name]), (trials,)) for pair in pairs]
        columns[name] = np.concatenate(parts)
    return pd.DataFrame(columns)


def summarise_eps_grid(runs: pd.DataFrame, references: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """Aggregate trials per (dataset, estimator, epsilon) with the OLS reference.

    Only deterministic columns (no wall times), so reruns give byte-identical tables.
    """
    keys = ["dataset", "estimator", "epsilon", "delta", "rho", "conversion"]
    table = aggregate_trials(runs, keys, value="mse")
    if "spent_epsilon" in runs:  # the largest epsilon certified in the cell (honest budget)
        spent = runs.groupby(keys, sort=True, observed=True)["spent_epsilon"].max()
        table = table.merge(spent.reset_index(), on=keys, how="left")
    ols = {ref["dataset"]: ref["ols"]["mse"] for ref in references}
    missing = set(table["dataset"]) - set(ols)
    if missing:
        raise ValueError(f"no OLS reference for datasets {sorted(missing)}")
    table["mse_ols"] = table["dataset"].map(ols)
    table["relative_excess"] = table["mean"] / table["mse_ols"] - 1.0
    return table


def _figure(table: pd.DataFrame, *, title: str | None = None) -> Any:
    from dpreg.plotting.regression import plot_mse_vs_epsilon

    return plot_mse_vs_epsilon(table, title=title)


EPS_GRID = StudyKind(
    name="eps_grid",
    run=run_eps_grid_cell,
    summarise=summarise_eps_grid,
    figure=_figure,
    params=EpsGridParams,
    check_cell=check_eps_grid_cell,
)
