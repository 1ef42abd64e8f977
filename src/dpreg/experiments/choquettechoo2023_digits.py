r"""Kind ``ftrl_digits``: a scaled-down analogue of Choquette-Choo et al. (2023) Fig. 4.

Fig. 4 trains a CNN on CIFAR-10 (20 epochs) and a language model on StackOverflow with
DP-SGD, ν-DP-FTRL and other correlated-noise mechanisms at matched privacy; those runs
are out of CPU scope (quoted by ``ftrl_quoted``). This kind runs the same comparison at a
scale these machines can do: multi-epoch private training of a multinomial logistic
regression on scikit-learn's digits (:func:`dpreg.data.digits.load_digits_split`: public
scaling into the unit ball, a public train/test split), with
:func:`dpreg.estimators.ftrl_logistic.train_dp_ftrl_logistic` for every method in
``methods`` at every :math:`(\varepsilon, \delta)` of ``epsilons``, and the test accuracy
of each trial. It is an analogue, not a reproduction (docs/choquettechoo2023.md):

* the model is linear (convex), the data 1438 images of 8 x 8 pixels;
* DP-SGD is run like the others, E passes in one fixed order with its exact
  multi-participation sensitivity (:math:`\gamma^2 = E`), **without** the amplification by
  sampling the paper gives its DP-SGD baseline;
* hyperparameters are fixed in advance from public quantities and the same for every
  method (no tuning): ``learning_rate`` 2 = 1/L with L = 1/2 the smoothness bound of the
  softmax loss at row norm <= 1, ``clip`` 1 (the paper's CIFAR-10 clip norm), batch 32,
  5 epochs, no momentum, and ν of ν-DP-FTRL ``"tuned"``: the ν minimising the prefix-sum
  error (3) under the same fixed-epoch participation (as the paper does for
  StackOverflow; :func:`dpreg.theory.ftrl_table3.tuned_nu`, a public computation).

Seeds: the trials of a seed block are vectorised; method ``m`` at ε draws from
``default_rng([block seed, stream_key(m, ε)])`` (the non-private reference from
``stream_key("nonprivate")``), so adding a method or an ε changes no other draw. The
test rows only score the released weights; nothing released is computed from them.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dpreg.data.datasets import Dataset
from dpreg.data.digits import load_digits_split
from dpreg.estimators.ftrl_correlations import CORRELATIONS
from dpreg.estimators.ftrl_logistic import train_dp_ftrl_logistic
from dpreg.experiments.params import (
    KindParams,
    cell_conversion,
    choice,
    finite,
    nonnegative,
    open_interval,
    param,
    positive,
    positive_integer,
)
from dpreg.experiments.study_kind import StudyKind
from dpreg.privacy.budgets import ApproxDP
from dpreg.seeds import stream_key
from dpreg.theory.ftrl_table3 import tuned_nu

__all__ = [
    "DIGITS_METHODS",
    "FtrlDigitsParams",
    "STATUS",
    "check_digits_cell",
    "run_digits",
    "summarise_digits",
]

DIGITS_METHODS: tuple[str, ...] = (*CORRELATIONS, "nonprivate")
"""Methods of ``ftrl_digits``: a correlation name of
:data:`~dpreg.estimators.ftrl_correlations.CORRELATIONS` (``"sgd"`` is DP-SGD) or
``"nonprivate"`` (same schedule, no clipping, no noise: the reference)."""

STATUS = (
    "scaled-down analogue of Fig. 4: multinomial logistic regression on digits,"
    " not the paper's CIFAR-10/StackOverflow"
)
"""Label of every row of the study (beside the quoted Fig. 4 table)."""

_POSITIVE = finite(positive)


def _tuned_or_fraction(value: Any) -> str | None:
    ok = value == "tuned" if isinstance(value, str) else 0 < value < 1
    return None if ok else "must be 'tuned' or lie in (0, 1)"


_tuned_or_fraction.text = "`tuned` or in (0, 1)"  # type: ignore[attr-defined]


@dataclass(frozen=True)
class FtrlDigitsParams(KindParams):
    """Cell keys of ``ftrl_digits`` (the Fig. 4 analogue on digits)."""

    kind = "ftrl_digits"
    epsilons: list[float] = param(
        doc="privacy levels epsilon of (epsilon, delta)-DP, every method at each",
        check=_POSITIVE,
    )
    methods: list[str] = param(
        ["sgd", "nu_ftrl", "optimal_cc", "nonprivate"],
        doc="`sgd` (DP-SGD, independent noise), `nu_ftrl`, `optimal_cc`, `damped_anti_pgd`,"
        " ... (a correlation name) or `nonprivate` (the reference: no clip, no noise)",
        check=choice(*DIGITS_METHODS),
    )
    delta: float = param(1e-6, doc="delta of every (epsilon, delta)", check=open_interval(0, 1))
    epochs: int = param(
        5, doc="passes E over the training rows (one fixed order)", check=positive_integer
    )
    batch_size: int = param(32, doc="rows per step b", check=positive_integer)
    learning_rate: float = param(
        2.0, doc="constant step eta (public: 1/L, L = 1/2)", check=_POSITIVE
    )
    clip: float = param(1.0, doc="per-example clip norm G", check=_POSITIVE)
    nu: float | str = param(
        "tuned",
        doc="nu of nu_ftrl and damped_anti_pgd, a number or `tuned` (minimises the error (3)"
        " under the fixed-epoch participation, a public computation)",
        check=_tuned_or_fraction,
    )
    split_seed: int = param(0, doc="seed of the public train/test permutation", check=nonnegative)
    test_fraction: float = param(
        0.2, doc="share of the 1797 images held out for the test", check=open_interval(0, 1)
    )


def _digits_params(cell: Mapping[str, Any]) -> FtrlDigitsParams:
    return FtrlDigitsParams.from_cell(cell)


def check_digits_cell(cell: Mapping[str, Any]) -> None:
    """Check across keys: non-empty distinct lists; the batch fits the training rows."""
    P = _digits_params(cell)
    for key in ("epsilons", "methods"):
        values = getattr(P, key)
        if not values:
            raise ValueError(f"ftrl_digits: {key} must be a non-empty list")
        if len(set(values)) != len(values):
            raise ValueError(f"ftrl_digits: {key} must not repeat a value; got {values!r}")
    n_train = 1797 - int(round(P.test_fraction * 1797))
    if P.batch_size > n_train:
        raise ValueError(
            f"ftrl_digits: batch_size={P.batch_size} exceeds the {n_train} training rows"
        )


@functools.lru_cache(maxsize=16)
def _tuned(T: int, epochs: int, separation: int) -> float:
    return tuned_nu(T, participations=epochs, separation=separation, schema="fixed_epoch")


def _nu(P: FtrlDigitsParams, n_train: int) -> float:
    if P.nu != "tuned":
        return float(P.nu)
    S = n_train // P.batch_size
    return _tuned(P.epochs * S, P.epochs, S)


def run_digits(
    cell: Mapping[str, Any],
    *,
    trials: int,
    first_trial: int,
    seed: int,
    data: Dataset | None = None,
) -> pd.DataFrame:
    r"""One cell: every method at every ε for ``trials`` vectorised trials.

    Rows (one per trial, method and ε; the non-private reference once per trial with
    ε = inf): ``accuracy`` (test), ``epsilon_certified`` (from the noise actually added),
    ``noise_multiplier``, ``sensitivity_sq``, ``nu``, ``steps``, ``separation``, the
    hyperparameters and the non-private ``clip_fraction``.
    """
    del data  # the kind loads the digits shipped with scikit-learn
    P = _digits_params(cell)
    check_digits_cell(cell)
    split = load_digits_split(P.split_seed, P.test_fraction)
    n_train = split.X_train.shape[0]
    nu = _nu(P, n_train)
    common = {
        "n_classes": split.n_classes,
        "trials": trials,
        "eta": P.learning_rate,
        "batch_size": P.batch_size,
        "epochs": P.epochs,
        "bound_X": 1.0,
        "method": "zcdp",
        "conversion": cell_conversion(cell),
    }
    frames = []
    for method in P.methods:
        if method == "nonprivate":
            fit = train_dp_ftrl_logistic(
                split.X_train,
                split.y_train,
                budget=None,
                noise_multiplier=0.0,
                rng=np.random.default_rng([seed, stream_key("nonprivate")]),
                clip=math.inf,
                correlation="sgd",
                **common,
            )
            frames.append(_rows(fit, split, method, math.inf, P, math.nan))
            continue
        for eps in P.epsilons:
            fit = train_dp_ftrl_logistic(
                split.X_train,
                split.y_train,
                budget=ApproxDP(float(eps), P.delta),
                rng=np.random.default_rng([seed, stream_key(method, eps)]),
                clip=P.clip,
                correlation=method,
                nu=nu,
                **common,
            )
            frames.append(_rows(fit, split, method, float(eps), P, nu))
    out = pd.concat(frames, ignore_index=True)
    out.insert(0, "trial", np.tile(np.arange(first_trial, first_trial + trials), len(frames)))
    out.insert(1, "seed", np.full(len(out), seed, dtype=np.uint64))
    return out


def _rows(
    fit: Any, split: Any, method: str, eps: float, P: FtrlDigitsParams, nu: float
) -> pd.DataFrame:
    d = fit.diagnostics
    trials = fit.weights.shape[0]
    uses_nu = method in ("nu_ftrl", "damped_anti_pgd")
    return pd.DataFrame(
        {
            "method": method,
            "epsilon": eps,
            "delta": P.delta if math.isfinite(eps) else math.nan,
            "accuracy": fit.accuracy(split.X_test, split.y_test),
            "epsilon_certified": d.get("epsilon_certified", math.nan),
            "noise_multiplier": d["noise_multiplier"],
            "sensitivity_sq": d["sensitivity_sq"] if math.isfinite(eps) else math.nan,
            "nu": nu if uses_nu else math.nan,
            "steps": d["steps"],
            "separation": d["separation"],
            "epochs": P.epochs,
            "batch_size": P.batch_size,
            "learning_rate": P.learning_rate,
            "clip": P.clip if math.isfinite(eps) else math.inf,
            "n_train": split.X_train.shape[0],
            "n_test": split.X_test.shape[0],
            "clip_fraction": fit.nonprivate_diagnostics["clip_fraction"],
        },
        index=range(trials),
    )


def summarise_digits(
    runs: pd.DataFrame, references: Sequence[Mapping[str, Any]] = ()
) -> pd.DataFrame:
    """Test accuracy per (method, ε) and the paired difference to DP-SGD.

    Columns: ``method``, ``epsilon``, ``accuracy_mean``, ``accuracy_se`` (sd / sqrt(runs)),
    ``runs``, ``diff_vs_sgd`` (mean over trials of the method's accuracy minus DP-SGD's
    at the same ε and trial), ``diff_vs_sgd_se`` (SE of those paired differences),
    ``z_vs_sgd``, ``nonprivate_accuracy`` / ``nonprivate_se`` (the reference, same
    schedule), ``noise_multiplier``, ``sensitivity_sq``, ``nu``, ``epsilon_certified``
    (largest over trials), ``status``.
    """
    del references  # the reference is the study's own non-private rows
    g = runs.groupby(["method", "epsilon"], sort=True)
    table = g.agg(
        accuracy_mean=("accuracy", "mean"),
        sd=("accuracy", "std"),
        runs=("accuracy", "size"),
        noise_multiplier=("noise_multiplier", "first"),
        sensitivity_sq=("sensitivity_sq", "first"),
        nu=("nu", "first"),
        epsilon_certified=("epsilon_certified", "max"),
        steps=("steps", "first"),
    ).reset_index()
    table["accuracy_se"] = table["sd"] / np.sqrt(table["runs"])
    table = table.drop(columns=["sd"])
    sgd = runs[runs["method"] == "sgd"][["epsilon", "trial", "accuracy"]]
    paired = runs.merge(sgd, on=["epsilon", "trial"], suffixes=("", "_sgd"))
    paired["diff"] = paired["accuracy"] - paired["accuracy_sgd"]
    diffs = (
        paired.groupby(["method", "epsilon"])["diff"]
        .agg(diff_vs_sgd="mean", diff_sd="std", pairs="size")
        .reset_index()
    )
    diffs["diff_vs_sgd_se"] = diffs["diff_sd"] / np.sqrt(diffs["pairs"])
    table = table.merge(
        diffs[["method", "epsilon", "diff_vs_sgd", "diff_vs_sgd_se"]],
        on=["method", "epsilon"],
        how="left",
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        table["z_vs_sgd"] = table["diff_vs_sgd"] / table["diff_vs_sgd_se"]
    ref = runs[runs["method"] == "nonprivate"]["accuracy"]
    table["nonprivate_accuracy"] = float(ref.mean()) if len(ref) else math.nan
    table["nonprivate_se"] = float(ref.std() / math.sqrt(len(ref))) if len(ref) > 1 else math.nan
    table["status"] = STATUS
    return table


def _figure_digits(table: pd.DataFrame, *, title: str | None = None) -> Any:
    from dpreg.plotting.choquettechoo2023 import plot_fig4_digits

    return plot_fig4_digits(table, title=title)


DIGITS = StudyKind(
    name="ftrl_digits",
    run=run_digits,
    summarise=summarise_digits,
    figure=_figure_digits,
    params=FtrlDigitsParams,
    check_cell=check_digits_cell,
)
