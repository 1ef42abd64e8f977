r"""Study kind ``iv_table``: private IV regression on a user's table, over epsilon.

One cell is one dataset with instruments: a ``loader: table`` dataset whose codebook
lists ``instruments:`` (``docs/user-data.md``, "Instrumental variables on your table").
At every ``epsilon`` of the cell, each trial is one release of DP-2S-GD, Liang et al.
(2025), Algorithm 1, with the public rule of :mod:`dpreg.estimators.iv_methods`
(:func:`~dpreg.estimators.iv_methods.fit_iv_method`): every hyperparameter from
:class:`~dpreg.estimators.iv_methods.PublicIVInputs` only (n, p and q with the constant
columns, :math:`(\varepsilon, \delta)`, the unit bounds of the table loader and the
share of the budget given to the first stage). The target :math:`(\varepsilon, \delta)`,
:math:`\delta = 1/n^2` unless the cell gives one, becomes the zCDP level whose tight
conversion it is, split :math:`\rho_1 = s\rho`, :math:`\rho_2 = (1 - s)\rho` as the rule
does. The ``trials`` releases of a seed block run as one vectorised call (a trials axis,
no loop over trials); pair ``j`` of the cell's epsilons (in config order) draws from
``default_rng([seed, j])``, so a row depends on its seed block only, never on the
chunking (``docs/architecture.md``, "Seeds").

Each row reports the release in the table's **original units**, mapped back with the
codebook's public scaling (:meth:`dpreg.data.codebook.PublicScaling.to_original`), beside
the non-private 2SLS fit of the same rows (:func:`dpreg.estimators.ols.two_sls`, with a
constant column when the cell fits an intercept), mapped back the same way, and the
distance between them. The 2SLS fit and the distance score a release; they are never
part of one. The clip fractions of both stages are computed from the data without noise:
they are outside the guarantee, kept only as diagnostics, in columns whose names
(``clip_frac_*``) :func:`dpreg.results.nonprivate_columns` lists in every per-trial file
(metadata ``dpreg.nonprivate_columns``) and under the study's table.

The summary (:func:`summarise_iv_table`) has one row per (dataset, method, epsilon,
term); the figure (:func:`dpreg.plotting.dpreg.plot_iv_table`) draws each regressor's
coefficient against epsilon beside the 2SLS value. Its claims (every release certifies at
most its target; the distance to 2SLS shrinks between consecutive epsilons beyond 2 SE)
are checked by :mod:`dpreg.experiments.dpreg_claims`.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dpreg.data.datasets import Dataset
from dpreg.data.table import table_scaling
from dpreg.estimators.iv_methods import IV_METHODS, fit_iv_method, get_iv_method
from dpreg.estimators.ols import two_sls
from dpreg.experiments.budgets import budget_columns, spent_columns
from dpreg.experiments.params import KindParams, choice, open_interval, param, positive_finite
from dpreg.experiments.study_kind import StudyKind

__all__ = [
    "CONVERSION",
    "INTERCEPT_TERM",
    "IVTableParams",
    "IV_TABLE",
    "check_iv_table_cell",
    "run_iv_table",
    "summarise_iv_table",
]

#: The conversion of the public rule (:class:`~dpreg.estimators.iv_methods.PublicIVInputs`).
CONVERSION = "tight"
#: The summary's name of the intercept term (a feature of this name is refused).
INTERCEPT_TERM = "(intercept)"


@dataclass(frozen=True)
class IVTableParams(KindParams):
    """Cell keys of the ``iv_table`` kind (DP-2S-GD on a user's table over epsilon)."""

    kind = "iv_table"
    dataset: str = param(
        doc="a `loader: table` dataset whose codebook lists `instruments:` (rows in the unit"
        " balls; the codebook's public map gives the original units back)"
    )
    epsilon: float | list[float] = param(
        doc="the epsilon(s) of one release (a list: every epsilon in one job)",
        check=positive_finite,
    )
    delta: float | None = param(
        None, doc="delta of one release; default 1/n^2", check=open_interval(0, 1)
    )
    method: str = param(
        "dp_2s_gd",
        doc="a private IV method of `dpreg.estimators.iv_methods.IV_METHODS` (its public rule"
        " sets every hyperparameter)",
        check=choice(*IV_METHODS),
    )
    theta_share: float = param(
        0.5,
        doc="share s of the zCDP budget given to the first stage (rho1 = s rho,"
        " rho2 = (1 - s) rho)",
        check=open_interval(0, 1),
    )
    intercept: bool = param(
        False,
        doc="fit an intercept (a public constant column in X and Z); required when the"
        " codebook declares one (its columns are centred)",
    )


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else [value]


def check_iv_table_cell(cell: Mapping[str, Any]) -> None:
    """Validate an ``iv_table`` cell beyond its typed spec: no epsilon given twice.

    Raises ``ValueError`` naming the kind and the key.
    """
    P = IVTableParams.from_cell(cell)
    eps = [float(e) for e in _as_list(P.epsilon)]
    if len(set(eps)) != len(eps):
        raise ValueError(f"iv_table: epsilon lists a value twice: {eps}")
    get_iv_method(P.method)


def _two_sls_scaled(data: Dataset, intercept: bool) -> tuple[np.ndarray, float]:
    """Return the non-private 2SLS fit of the rows as the estimator sees them (scaled)."""
    assert data.Z is not None
    if intercept:
        coef = two_sls(y=data.y, X=data.X, Z=data.Z, W=np.ones((data.n, 1)))
        return coef[:-1], float(coef[-1])
    return two_sls(y=data.y, X=data.X, Z=data.Z), 0.0


def run_iv_table(
    cell: Mapping[str, Any],
    *,
    trials: int,
    first_trial: int,
    seed: int,
    data: Dataset | None,
) -> pd.DataFrame:
    r"""Run one seed block of an ``iv_table`` cell: ``trials`` releases per epsilon.

    Each release is DP-2S-GD, Liang et al. (2025), Algorithm 1, with the public rule
    (:func:`~dpreg.estimators.iv_methods.fit_iv_method`; the ``trials`` releases are one
    vectorised call); it certifies :math:`\rho_1 + \rho_2`-zCDP under replace-one
    neighbours, hence the target :math:`(\varepsilon, \delta)`.

    Parameters
    ----------
    cell : mapping
        The keys of :class:`IVTableParams`.
    trials, first_trial, seed : int
        The seed block: ``trials`` releases from global index ``first_trial``, all drawn
        from ``default_rng([seed, j])`` for the cell's ``j``-th epsilon.
    data : Dataset
        A table loaded with its codebook (:func:`dpreg.data.load_table`): ``X``, ``y``
        and the instruments ``Z`` in the unit balls, the public map in its record.

    Returns
    -------
    DataFrame
        One row per (epsilon, trial): ``trial``, ``seed``, ``stream``, ``dataset``,
        ``method``, ``estimator``, ``n``, ``p``, ``q`` (without the constant column),
        ``intercept``, ``features`` (JSON list), the target's budget columns
        (``epsilon``, ``delta``, ``rho``, ``budget_unit``, ``conversion``), ``theta_share``,
        ``rho1``, ``rho2``, ``T``, ``hyper`` (JSON of every value the public rule chose),
        what the release certifies (``spent_epsilon``, ``spent_delta``, ``spent_rho``),
        ``coef_<feature>`` and ``intercept_coef`` (original units; 0 without an
        intercept), the non-private 2SLS ``coef_2sls_<feature>`` and ``intercept_2sls`` of
        the same rows, ``distance_2sls`` (Euclidean distance of the regressors'
        coefficients to 2SLS's, original units) and, outside the guarantee, the clip
        fractions ``clip_frac_theta_mean``, ``clip_frac_theta_last``,
        ``clip_frac_beta_mean``, ``clip_frac_beta_last`` (over the T steps, and at the last).

    Raises
    ------
    ValueError
        No dataset, a dataset not loaded from a table with a codebook, a codebook without
        instruments, or a codebook that declares an intercept the cell does not fit.
    """
    if data is None:
        raise ValueError("an iv_table cell needs a dataset (a loader: table dataset)")
    P = IVTableParams.from_cell(cell)
    check_iv_table_cell(cell)
    try:
        scaling = table_scaling(data)
    except ValueError as err:
        raise ValueError(
            f"iv_table: dataset {P.dataset!r} is not a table loaded with a codebook (loader:"
            f" table): its coefficients cannot be mapped back to original units ({err})"
        ) from None
    if data.Z is None:
        raise ValueError(
            f"iv_table: dataset {P.dataset!r} has no instruments: list them under"
            " instruments: in its codebook"
        )
    if scaling.intercept and not P.intercept:
        raise ValueError(
            f"iv_table: the codebook of dataset {P.dataset!r} declares an intercept (its"
            " columns are centred on the public midpoints): set intercept: true"
        )
    features = list(data.feature_names)
    if INTERCEPT_TERM in features:
        raise ValueError(f"iv_table: a feature may not be named {INTERCEPT_TERM!r}")
    n, p = data.X.shape
    q = data.Z.shape[1]
    delta = 1.0 / float(n) ** 2 if P.delta is None else float(P.delta)
    method = get_iv_method(P.method)
    theta_2sls, icpt_2sls = _two_sls_scaled(data, P.intercept)
    coef_2sls, b0_2sls = scaling.to_original(theta_2sls, icpt_2sls if P.intercept else None)
    coef_2sls = np.asarray(coef_2sls, dtype=np.float64).reshape(p)
    frames = []
    for stream, epsilon in enumerate(float(e) for e in _as_list(P.epsilon)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # the clip fractions tell
            fit = fit_iv_method(
                P.method, data.Z, data.X, data.y, epsilon=epsilon, delta=delta,
                rng=np.random.default_rng([seed, stream]), theta_share=float(P.theta_share),
                trials=trials, intercept=P.intercept,
            )  # fmt: skip
        hyper = fit.diagnostics["hyperparameters"]
        coef, b0 = scaling.to_original(fit.theta, fit.intercept if P.intercept else None)
        coef = np.asarray(coef, dtype=np.float64).reshape(trials, p)
        b0 = np.broadcast_to(np.asarray(b0, dtype=np.float64), (trials,))
        clips = fit.nonprivate_diagnostics  # outside the guarantee
        clip_cols = {}
        for stage in ("theta", "beta"):
            frac = np.asarray(clips[f"clip_fraction_{stage}"], dtype=np.float64)
            frac = frac.reshape(trials, -1)
            clip_cols[f"clip_frac_{stage}_mean"] = frac.mean(axis=1)
            clip_cols[f"clip_frac_{stage}_last"] = frac[:, -1]
        frame = pd.DataFrame(
            {
                "trial": np.arange(first_trial, first_trial + trials, dtype=np.int64),
                "seed": np.full(trials, seed, dtype=np.uint64),
                "stream": np.full(trials, stream, dtype=np.int64),
                "dataset": P.dataset,
                "method": P.method,
                "estimator": method.estimator,
                "n": n,
                "p": p,
                "q": q,
                "intercept": bool(P.intercept),
                "features": json.dumps(features),
            }
        )
        budget = budget_columns(epsilon=epsilon, delta=delta, conversion=CONVERSION)
        for key, value in budget.items():
            frame[key] = value
        frame["theta_share"] = float(P.theta_share)
        frame["rho1"] = float(hyper["rho1"])
        frame["rho2"] = float(hyper["rho2"])
        frame["T"] = int(hyper["T"])
        frame["hyper"] = json.dumps(hyper, sort_keys=True, default=str)
        spent = spent_columns(fit.budget_spent, delta=delta, conversion=CONVERSION)
        for key, value in spent.items():
            frame[key] = value
        for j, name in enumerate(features):
            frame[f"coef_{name}"] = coef[:, j]
        frame["intercept_coef"] = b0
        for j, name in enumerate(features):
            frame[f"coef_2sls_{name}"] = float(coef_2sls[j])
        frame["intercept_2sls"] = float(b0_2sls)
        frame["distance_2sls"] = np.linalg.norm(coef - coef_2sls[None, :], axis=1)
        for key, value in clip_cols.items():
            frame[key] = value
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


#: Columns constant within a (dataset, method, epsilon) group, copied into the summary.
_GROUP = ["dataset", "method", "epsilon"]
_FIRST = ["estimator", "n", "p", "q", "intercept", "delta", "rho", "conversion",
          "theta_share", "rho1", "rho2", "T", "hyper"]  # fmt: skip


def _mean_sd_se(values: np.ndarray) -> tuple[float, float, float]:
    k = values.size
    mean = float(values.mean())
    sd = float(values.std(ddof=1)) if k > 1 else math.nan
    return mean, sd, sd / math.sqrt(k) if k > 1 else math.nan


def summarise_iv_table(
    runs: pd.DataFrame, references: Sequence[Mapping[str, Any]] = ()
) -> pd.DataFrame:
    r"""Per (dataset, method, epsilon, term): the releases' spread against 2SLS.

    Parameters
    ----------
    runs : DataFrame
        Rows of :func:`run_iv_table`.
    references : sequence of mapping
        Unused: the 2SLS fit of the same rows (with the cell's intercept, in original
        units) is in every row.

    Returns
    -------
    DataFrame
        One row per term (each regressor, ``role = "endogenous"``, then the intercept
        :data:`INTERCEPT_TERM`, ``role = "intercept"``, when the cell fits one), with the
        group's settings, ``trials`` (k), the term's ``mean``, ``sd``, ``se``
        (:math:`\mathrm{sd}/\sqrt k`), ``median``, ``two_sls`` (the non-private
        2SLS value), ``bias`` (``mean - two_sls``) and ``rmse_term``
        (:math:`\sqrt{\overline{(c - c_{2SLS})^2}}`); and per epsilon, repeated on each
        term's row: ``distance_2sls_mean``, ``distance_2sls_sd``, ``distance_2sls_se`` of
        the regressors' distance :math:`D` to 2SLS, ``rmse_2sls``
        (:math:`\sqrt{\overline{D^2}}`) with ``rmse_2sls_se`` (delta method,
        :math:`\mathrm{SE}(\overline{D^2}) / (2\,\mathrm{rmse})`), the largest certified
        ``spent_epsilon``, ``spent_delta``, ``spent_rho`` over the releases and, outside the
        guarantee, the mean clip fractions ``clip_frac_theta_mean``,
        ``clip_frac_beta_mean``. Deterministic columns only.
    """
    del references
    rows = []
    for key, part in runs.groupby(_GROUP, sort=True):
        base = dict(zip(_GROUP, key, strict=True))
        for col in _FIRST:
            base[col] = part[col].iloc[0]
        k = len(part)
        base["trials"] = int(k)
        dist = part["distance_2sls"].to_numpy(dtype=np.float64)
        d_mean, d_sd, d_se = _mean_sd_se(dist)
        sq_mean, _, sq_se = _mean_sd_se(dist**2)
        rmse = math.sqrt(sq_mean)
        per_eps = {
            "distance_2sls_mean": d_mean,
            "distance_2sls_sd": d_sd,
            "distance_2sls_se": d_se,
            "rmse_2sls": rmse,
            "rmse_2sls_se": sq_se / (2.0 * rmse) if rmse > 0 else math.nan,
            "spent_epsilon": float(part["spent_epsilon"].max()),
            "spent_delta": float(part["spent_delta"].max()),
            "spent_rho": float(part["spent_rho"].max()),
            "clip_frac_theta_mean": float(part["clip_frac_theta_mean"].mean()),
            "clip_frac_beta_mean": float(part["clip_frac_beta_mean"].mean()),
        }
        terms = [(f, "endogenous", f"coef_{f}", f"coef_2sls_{f}")
                 for f in json.loads(part["features"].iloc[0])]  # fmt: skip
        if bool(base["intercept"]):
            terms.append((INTERCEPT_TERM, "intercept", "intercept_coef", "intercept_2sls"))
        for term, role, col, ref_col in terms:
            values = part[col].to_numpy(dtype=np.float64)
            ref = float(part[ref_col].iloc[0])
            mean, sd, se = _mean_sd_se(values)
            rows.append(
                {
                    **base,
                    "term": term,
                    "role": role,
                    "mean": mean,
                    "sd": sd,
                    "se": se,
                    "median": float(np.median(values)),
                    "two_sls": ref,
                    "bias": mean - ref,
                    "rmse_term": math.sqrt(float(np.mean((values - ref) ** 2))),
                    **per_eps,
                }
            )
    return pd.DataFrame(rows)


def _figure(table: pd.DataFrame, *, title: str | None = None) -> Any:
    from dpreg.plotting.dpreg import plot_iv_table

    return plot_iv_table(table, title=title)


IV_TABLE = StudyKind(
    name="iv_table",
    run=run_iv_table,
    summarise=summarise_iv_table,
    figure=_figure,
    params=IVTableParams,
    check_cell=check_iv_table_cell,
)
