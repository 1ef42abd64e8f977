r"""Lev et al. (2026) Figure 7 (App. L): IHM when the residual clip is triggered.

Study kind ``lev_clipping``. Each job generates one synthetic data set
(docs/notes/lev2026.md §5.3, §8 item 18) with :class:`~dpreg.data.synthetic.LevClippingMLPDGP`
(the notebook's generator by default, the paper's text with ``generator: {variant:
paper}``): network and :math:`\theta_0` from ``default_rng(net_seed)``, the ``n_rows``
rows (default :math:`2^{18}`) and the 80/20 split from ``default_rng(data_seed)``, then
the lev2026 preprocessing (training rows scaled to :math:`\max\|x_i\| = 1`,
:math:`\max|y_i| = 1`, data-derived). As in the notebook the data are drawn **once**,
not per trial; the trials only redraw the estimators' noise.

On the training rows, for every (estimator, epsilon) pair of the cell, with
:math:`\delta = 1/n_{\rm train}^2`, the run fits ``trials`` vectorised repetitions and
records the train MSE and, for IHM, the fraction of rows whose residual is clipped
(:math:`|y_i - x_i^\top\hat\theta_t| > C`) at each :math:`\hat\theta_t`:
``clip_frac_t0`` ... ``clip_frac_t{T-1}`` are the gradients Algorithm 1 computes
(:math:`\hat\theta_0 = 0` and :math:`|y_i|\le 1 = C`, so ``t0`` is 0), and
``clip_frac_t{T}`` is the same fraction at the returned :math:`\hat\theta_T` (not used by
the algorithm; recorded because the notebook's iteration count is not known to us).
The paper's claim, "more than 50% of the iterations undergo a clipping operation",
reads as: over trials and iterations :math:`t \ge 1`, more than half clip at least one
row; the summary gives both that share (``clipped_share``) and the mean row fraction.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dpreg.data.datasets import Dataset
from dpreg.data.preprocess import preprocess_lev2026
from dpreg.data.synthetic import LEV_CLIPPING_VARIANTS, LevClippingMLPDGP
from dpreg.estimators import get_estimator
from dpreg.experiments.budgets import budget_columns
from dpreg.experiments.params import (
    KindParams,
    at_least,
    cell_conversion,
    nonnegative,
    open_interval,
    param,
    positive_finite,
)
from dpreg.experiments.regression import aggregate_trials, study_delta
from dpreg.experiments.study_kind import StudyKind
from dpreg.privacy.budgets import ApproxDP

__all__ = [
    "CLIPPING",
    "ClippingParams",
    "DEFAULT_ESTIMATORS",
    "DEFAULT_HYPER",
    "N_ROWS",
    "check_clipping_cell",
    "clipping_data",
    "figure_clipping",
    "run_clipping_cell",
    "summarise_clipping",
]

#: The notebook's sample size (before the 80/20 split).
N_ROWS = 2**18
DEFAULT_ESTIMATORS = ("ihm", "linear_mixing", "adassp")
#: As in the other lev2026 studies (config ``lev_fig1``).
DEFAULT_HYPER: dict[str, dict[str, Any]] = {
    "ihm": {"T": 3},
    "linear_mixing": {},
    "adassp": {"mechanism": "analytic", "shift": "paper"},
}


def clipping_data(
    n_rows: int = N_ROWS,
    *,
    data_seed: int = 0,
    net_seed: int = 0,
    train_fraction: float = 0.8,
    generator: Mapping[str, Any] | None = None,
) -> tuple[Dataset, Dataset, LevClippingMLPDGP]:
    """Generate, split and scale the Figure 7 data: ``(train, test, dgp)``.

    The network from ``default_rng(net_seed)``; latents, noise and the split (the first
    ``floor(train_fraction * n_rows)`` rows of a permutation are training rows) from
    ``default_rng(data_seed)``; then :func:`~dpreg.data.preprocess.preprocess_lev2026`
    without standardisation (factors from the training rows).
    """
    if not 0.0 < train_fraction < 1.0:
        raise ValueError(f"train_fraction must be in (0, 1); got {train_fraction!r}")
    dgp = LevClippingMLPDGP.draw(rng=np.random.default_rng(net_seed), **dict(generator or {}))
    rng = np.random.default_rng(data_seed)
    ds = dgp.sample(int(n_rows), rng=rng)
    n_train = int(train_fraction * ds.n)
    mask = np.zeros(ds.n, dtype=bool)
    mask[rng.permutation(ds.n)[:n_train]] = True
    ds = ds.with_(
        train_mask=mask,
        split=f"random {train_fraction:g}/{1 - train_fraction:g} (data_seed {data_seed})",
    )
    train, test = preprocess_lev2026(ds, standardise=False)
    return train, test, dgp


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else [value]


@dataclass(frozen=True)
class ClippingParams(KindParams):
    """Cell keys of the ``lev_clipping`` kind (Figure 7, App. L)."""

    kind = "lev_clipping"
    epsilon: float | list[float] = param(
        doc="the epsilon(s); delta = 1/n_train^2", check=positive_finite
    )
    estimator: str | list[str] = param(
        list(DEFAULT_ESTIMATORS), doc="estimator registry name(s); every (estimator, epsilon) pair"
    )
    n_rows: int = param(
        N_ROWS, doc="rows generated before the split (2^18 in App. L)", check=at_least(10)
    )
    data_seed: int = param(0, doc="seed of the latents, noise and split", check=nonnegative)
    net_seed: int = param(0, doc="seed of the network and theta_0", check=nonnegative)
    train_fraction: float = param(
        0.8, doc="share of the rows used for training", check=open_interval(0, 1)
    )
    generator: dict = param(
        {},
        doc="keyword arguments of `LevClippingMLPDGP.draw` (`variant: code` (default) or `paper`)",
    )
    hyper: dict = param(
        {},
        doc="estimator name -> hyperparameters; an estimator not named gets `DEFAULT_HYPER`",
    )


def _hyper(P: ClippingParams, estimator: str) -> dict[str, Any]:
    given = P.hyper or {}
    return dict(given[estimator]) if estimator in given else dict(DEFAULT_HYPER.get(estimator, {}))


def check_clipping_cell(cell: Mapping[str, Any]) -> None:
    """Check the cross-key rules of a ``lev_clipping`` cell (after its typed spec)."""
    P = ClippingParams.from_cell(cell)
    for name in _as_list(P.estimator):
        get_estimator(name)
    if P.generator.get("variant", "code") not in LEV_CLIPPING_VARIANTS:
        raise ValueError(
            f"lev_clipping: generator.variant must be one of {sorted(LEV_CLIPPING_VARIANTS)}"
        )
    if not all(isinstance(v, Mapping) for v in P.hyper.values()):
        raise ValueError("lev_clipping: hyper must map estimator names to their hyperparameters")


#: "in_place": the trials' residuals in one (trials, n) array, the clipped rows counted
#: by two comparisons (no temporaries of that size); "reference": the expressions
#: ``y - theta X'`` and ``|r| > C`` (tests: the same rows)
_SCORING_PATH = "in_place"


def _residuals(X: np.ndarray, y: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """``y[None, :] - theta @ X.T``: the same product and differences, in place."""
    if _SCORING_PATH == "reference":
        return y[None, :] - theta @ X.T
    residuals = theta @ X.T
    return np.subtract(y[None, :], residuals, out=residuals)


def _count_beyond(residuals: np.ndarray, clip: float) -> np.ndarray:
    """Per trial, the rows with ``|r| > clip`` (``clip > 0``; a NaN is never counted)."""
    if _SCORING_PATH == "reference":
        return np.count_nonzero(np.abs(residuals) > clip, axis=1)
    return np.count_nonzero(residuals > clip, axis=1) + np.count_nonzero(residuals < -clip, axis=1)


def run_clipping_cell(
    cell: Mapping[str, Any], *, trials: int, first_trial: int, seed: int, data: Dataset | None
) -> pd.DataFrame:
    """Run one chunk of a ``lev_clipping`` cell (``data`` is unused: generated here).

    Pair ``j`` of (estimator, epsilon) (estimators outer, config order) draws from
    ``default_rng([seed, j])``. One row per (pair, trial).
    """
    del data
    P = ClippingParams.from_cell(cell)
    train, _, _ = clipping_data(
        int(P.n_rows),
        data_seed=int(P.data_seed),
        net_seed=int(P.net_seed),
        train_fraction=float(P.train_fraction),
        generator=P.generator,
    )
    X, y = train.X, train.y
    n = X.shape[0]
    delta = study_delta(n, "inverse_n_squared")
    theta_ols = np.linalg.lstsq(X, y, rcond=None)[0]
    resid_ols = y - X @ theta_ols
    mse_ols = float(resid_ols @ resid_ols) / n
    T = int(_hyper(P, "ihm").get("T", 3))
    clip = float(_hyper(P, "ihm").get("clip", 1.0))
    pairs = [(e, float(eps)) for e in _as_list(P.estimator) for eps in _as_list(P.epsilon)]
    frames = []
    for stream, (estimator, epsilon) in enumerate(pairs):
        rng = np.random.default_rng([seed, stream])
        fit = get_estimator(estimator)(
            X,
            y,
            budget=ApproxDP(epsilon, delta),
            rng=rng,
            trials=trials,
            bound_X=1.0,
            bound_y=1.0,
            **_hyper(P, estimator),
        )
        residuals = _residuals(X, y, fit.theta)
        mse = np.einsum("ij,ij->i", residuals, residuals) / n
        frame = pd.DataFrame(
            {
                "trial": np.arange(first_trial, first_trial + trials, dtype=np.int64),
                "seed": np.full(trials, seed, dtype=np.uint64),
                "stream": np.full(trials, stream, dtype=np.int64),
                "estimator": estimator,
                "n_train": n,
                "mse": mse,
                "mse_ols": mse_ols,
                "excess_mse": mse - mse_ols,
                # the hyperparameters this row's estimator was actually called with
                "hyper": json.dumps(
                    {**_hyper(P, estimator), "bound_X": 1.0, "bound_y": 1.0},
                    sort_keys=True,
                    default=str,
                ),
            }
        )
        for key, value in budget_columns(
            epsilon=epsilon, delta=delta, conversion=cell_conversion(cell)
        ).items():
            frame[key] = value
        fractions = np.full((trials, T + 1), np.nan)
        if estimator == "ihm":
            fractions[:, :T] = fit.nonprivate_diagnostics["clip_fraction"]
            fractions[:, T] = _count_beyond(residuals, clip) / n
        for t in range(T + 1):
            frame[f"clip_frac_t{t}"] = fractions[:, t]
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def _clip_columns(frame: pd.DataFrame) -> list[str]:
    cols = [c for c in frame.columns if c.startswith("clip_frac_t")]
    return sorted(cols, key=lambda c: int(c[len("clip_frac_t") :]))


def summarise_clipping(
    runs: pd.DataFrame, references: Sequence[Mapping[str, Any]] = ()
) -> pd.DataFrame:
    """Two blocks in one table, told apart by ``quantity``.

    * ``quantity == "mse"``: per (estimator, epsilon) the train MSE's ``mean``, ``std``,
      ``se``, 95% band (:func:`~dpreg.experiments.regression.aggregate_trials`), ``median``,
      ``trials`` and ``mse_ols``.
    * ``quantity == "clip_fraction"`` (IHM only): per (epsilon, ``iteration`` t) the mean
      and SE over trials of the fraction of clipped rows, ``clipped_share`` (share of
      trials in which at least one row is clipped) and ``in_algorithm`` (``t < T``: a
      gradient Algorithm 1 computes; ``t = T`` is the returned estimate).

    ``references`` is unused (the data are synthetic).
    """
    del references
    keys = ["estimator", "epsilon", "delta", "rho", "conversion"]
    mse = aggregate_trials(runs, keys, value="mse")
    mse["mse_ols"] = mse["epsilon"].map(runs.groupby("epsilon")["mse_ols"].first())
    mse.insert(0, "quantity", "mse")
    ihm = runs[runs["estimator"] == "ihm"]
    cols = _clip_columns(runs)
    T = len(cols) - 1
    rows = []
    for eps, group in ihm.groupby("epsilon", sort=True):
        for t, col in enumerate(cols):
            values = group[col].to_numpy(dtype=float)
            rows.append(
                {
                    "quantity": "clip_fraction",
                    "estimator": "ihm",
                    "epsilon": float(eps),
                    "delta": float(group["delta"].iloc[0]),
                    "iteration": t,
                    "in_algorithm": t < T,
                    "mean": float(values.mean()),
                    "se": float(values.std(ddof=1) / math.sqrt(values.size))
                    if values.size > 1
                    else math.nan,
                    "clipped_share": float(np.mean(values > 0)),
                    "trials": int(values.size),
                }
            )
    clip = pd.DataFrame(rows)
    return pd.concat([mse, clip], ignore_index=True)


def figure_clipping(table: pd.DataFrame, *, title: str | None = None) -> Any:
    """Draw Figure 7 (:func:`dpreg.plotting.lev2026.figure_clipping`)."""
    from dpreg.plotting import lev2026 as plots

    return plots.figure_clipping(table, title=title)


CLIPPING = StudyKind(
    name="lev_clipping",
    run=run_clipping_cell,
    summarise=summarise_clipping,
    figure=figure_clipping,
    params=ClippingParams,
    check_cell=check_clipping_cell,
)
