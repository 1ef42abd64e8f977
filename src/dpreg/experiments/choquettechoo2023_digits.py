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
* ``sgd`` is DP-SGD run like the others, E passes in one fixed order with its exact
  multi-participation sensitivity (:math:`\gamma^2 = E`), **without** amplification;
  ``sgd_amplified`` is the paper's baseline, DP-SGD with Poisson sampling at
  :math:`q = b/n` calibrated by ``dp-accounting``
  (:func:`dpreg.estimators.dpsgd_poisson_logistic.train_dp_sgd_poisson_logistic`);
* ``me`` (the optimal factorization at the run's horizon, certified dual solve of
  :func:`dpreg.estimators.ftrl_me.solve_me` for the fixed-epoch pattern :math:`k = E`,
  separation :math:`\lfloor n/b\rfloor`), ``banded`` (the best lower-triangular encoder
  with :math:`\lfloor n/b\rfloor` bands, unit columns, by
  :func:`dpreg.estimators.ftrl_banded.solve_banded_me`: the banded variant of ME, whose
  participations in different epochs touch disjoint rows), ``tree_aggregation`` and
  ``fft`` (Table 3's
  constructors) run through the same trainer with their own multi-participation
  sensitivity; TreeAgg and FFT are restarted ("×S", the paper's §5: "we also
  stamp/restart all baselines") with S tuned to minimise the error (3) under the run's
  participation (:func:`dpreg.estimators.ftrl_factorizations.tune_restarts`, public; the
  ``restarts`` column records S);
* ``momentum`` (public, the same for every method) is applied to the noisy gradients,
  and ``cooldown_fraction`` / ``final_lr_factor`` set a linear learning-rate cooldown
  over the last steps (the paper's App. G.1: momentum 0.95, the last quarter of the steps
  down to 0.05 times the rate), the same for every method;
* with ``learning_rates`` (a grid) and ``validation_fraction`` > 0, the first
  ``round(validation_fraction * n_train)`` training rows (the split is already a public
  random permutation) are held out as a validation split, every method is trained on the
  rest at every rate, and :func:`summarise_digits` keeps, per method and ε, the rate with
  the best mean validation accuracy: **the selection reads the validation data without
  noise, outside the guarantee** (as the paper's tuning does). Without a grid:
  ``learning_rate`` for every method (2 = 1/L with L = 1/2 the smoothness bound of the
  softmax loss at row norm <= 1);
* ``clip`` 1 (the paper's CIFAR-10 clip norm), ν of ν-DP-FTRL ``"tuned"``: the ν
  minimising the prefix-sum error (3) under the same fixed-epoch participation (as the
  paper does for StackOverflow; :func:`dpreg.theory.ftrl_table3.tuned_nu`, public).

Seeds: the trials of a seed block are vectorised; method ``m`` at ε draws from
``default_rng([block seed, stream_key(m, ε)])`` (the non-private reference from
``stream_key("nonprivate")``), the same stream at every learning rate (paired
comparison), so adding a method, an ε or a rate changes no other draw. The test rows only
score the released weights; nothing released is computed from them.
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
from dpreg.estimators.ambssgd_privacy import ACCOUNTANTS
from dpreg.estimators.dpsgd_poisson_logistic import train_dp_sgd_poisson_logistic
from dpreg.estimators.ftrl_banded import solve_banded_me
from dpreg.estimators.ftrl_correlations import CORRELATIONS
from dpreg.estimators.ftrl_factorizations import (
    fft_factorization,
    tree_aggregation,
    tune_restarts,
)
from dpreg.estimators.ftrl_logistic import noise_replay, train_dp_ftrl_logistic
from dpreg.estimators.ftrl_me import solve_me
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
    "FACTORIZATION_METHODS",
    "SELECTION",
    "FtrlDigitsParams",
    "STATUS",
    "check_digits_cell",
    "run_digits",
    "select_learning_rates",
    "summarise_digits",
]

FACTORIZATION_METHODS: tuple[str, ...] = ("me", "banded", "tree_aggregation", "fft")
"""Methods with a matrix factorization built for the run's horizon T."""

DIGITS_METHODS: tuple[str, ...] = (
    *CORRELATIONS,
    "sgd_amplified",
    *FACTORIZATION_METHODS,
    "nonprivate",
)
"""Methods of ``ftrl_digits``: a correlation name of
:data:`~dpreg.estimators.ftrl_correlations.CORRELATIONS` (``"sgd"`` is DP-SGD without
amplification), ``"sgd_amplified"`` (DP-SGD with Poisson sampling), a factorization of
:data:`FACTORIZATION_METHODS` or ``"nonprivate"`` (same schedule, no clipping, no noise:
the reference)."""

SELECTION = (
    "learning rate selected per method and eps on a validation split read without noise"
    " (outside the guarantee)"
)
"""Label of the rows whose learning rate was selected on the validation split."""

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


def _fraction_or_zero(value: Any) -> str | None:
    return None if 0 <= value < 1 else "must lie in [0, 1)"


_fraction_or_zero.text = "in [0, 1)"  # type: ignore[attr-defined]


def _momentum(value: Any) -> str | None:
    return None if 0 <= value < 1 else "must lie in [0, 1)"


_momentum.text = "in [0, 1)"  # type: ignore[attr-defined]


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
        doc="`sgd` (DP-SGD, independent noise, no amplification), `nu_ftrl`, `optimal_cc`,"
        " `damped_anti_pgd`, ... (a correlation name), `sgd_amplified` (DP-SGD with Poisson"
        " sampling), `me` (optimal factorization at the run's T), `banded` (banded ME),"
        " `tree_aggregation`, `fft`"
        " or `nonprivate` (the reference: no clip, no noise)",
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
    learning_rates: list[float] = param(
        [],
        doc="grid of learning rates, one selected per method and epsilon on the validation"
        " split (read without noise: outside the guarantee); empty: `learning_rate` only",
        check=_POSITIVE,
    )
    validation_fraction: float = param(
        0.0,
        doc="share of the training rows held out for the learning-rate selection (0: none;"
        " > 0 needed with `learning_rates`)",
        check=_fraction_or_zero,
    )
    momentum: float = param(
        0.0, doc="heavy-ball momentum, the same for every method (public)", check=_momentum
    )
    cooldown_fraction: float = param(
        0.0,
        doc="share of the last steps over which the learning rate decays linearly to"
        " `final_lr_factor` times its value, the same for every method (public; the paper's"
        " App. G.1: 0.25); 0: constant",
        check=_fraction_or_zero,
    )
    final_lr_factor: float = param(
        0.05,
        doc="learning-rate factor reached at the last step of the cooldown (App. G.1: 0.05)",
        check=open_interval(0, 1),
    )
    accountant: str = param(
        "rdp",
        doc="dp-accounting accountant of `sgd_amplified` (`rdp` or `pld`)",
        check=choice(*ACCOUNTANTS),
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
    for key in ("epsilons", "methods", "learning_rates"):
        values = getattr(P, key)
        if not values and key != "learning_rates":
            raise ValueError(f"ftrl_digits: {key} must be a non-empty list")
        if len(set(values)) != len(values):
            raise ValueError(f"ftrl_digits: {key} must not repeat a value; got {values!r}")
    if len(P.learning_rates) > 1 and P.validation_fraction <= 0:
        raise ValueError(
            "ftrl_digits: a learning_rates grid needs validation_fraction > 0 (the selection split)"
        )
    n_train = 1797 - int(round(P.test_fraction * 1797))
    n_train -= int(round(P.validation_fraction * n_train))
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
    split = _fit_split(P)
    n_train = split.X_train.shape[0]
    S = n_train // P.batch_size
    nu = _nu(P, n_train)
    common = {
        "n_classes": split.n_classes,
        "trials": trials,
        "batch_size": P.batch_size,
        "epochs": P.epochs,
        "bound_X": 1.0,
        "momentum": P.momentum,
        "cooldown_fraction": P.cooldown_fraction,
        "final_lr_factor": P.final_lr_factor,
    }
    ftrl = {"method": "zcdp", "conversion": cell_conversion(cell)}
    frames = []
    # each (method, eps) seeds its generator alike at every learning rate: replay its noise
    with noise_replay():
        for method in P.methods:
            for eta in P.learning_rates or [P.learning_rate]:
                kw = {**common, "eta": float(eta)}
                if method == "nonprivate":
                    fit = train_dp_ftrl_logistic(
                        split.X_train,
                        split.y_train,
                        budget=None,
                        noise_multiplier=0.0,
                        rng=np.random.default_rng([seed, stream_key("nonprivate")]),
                        clip=math.inf,
                        correlation="sgd",
                        **kw,
                        **ftrl,
                    )
                    frames.append(_rows(fit, split, method, math.inf, P, math.nan, eta))
                    continue
                for eps in P.epsilons:
                    rng = np.random.default_rng([seed, stream_key(method, eps)])
                    budget = ApproxDP(float(eps), P.delta)
                    if method == "sgd_amplified":
                        fit = train_dp_sgd_poisson_logistic(
                            split.X_train,
                            split.y_train,
                            budget=budget,
                            rng=rng,
                            clip=P.clip,
                            accountant=P.accountant,
                            n_public=n_train,  # fixed by the public split fractions
                            **kw,
                        )
                    else:
                        fit = train_dp_ftrl_logistic(
                            split.X_train,
                            split.y_train,
                            budget=budget,
                            rng=rng,
                            clip=P.clip,
                            correlation=_correlation(method, P.epochs, S),
                            nu=nu,
                            **kw,
                            **ftrl,
                        )
                    frames.append(_rows(fit, split, method, float(eps), P, nu, eta))
    out = pd.concat(frames, ignore_index=True)
    out.insert(0, "trial", np.tile(np.arange(first_trial, first_trial + trials), len(frames)))
    out.insert(1, "seed", np.full(len(out), seed, dtype=np.uint64))
    return out


@dataclass(frozen=True)
class _FitSplit:
    X_train: np.ndarray
    y_train: np.ndarray
    X_val: np.ndarray
    y_val: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    n_classes: int


def _fit_split(P: FtrlDigitsParams) -> _FitSplit:
    """Training rows minus the validation rows (the first ones), validation, test."""
    split = load_digits_split(P.split_seed, P.test_fraction)
    n_val = int(round(P.validation_fraction * split.X_train.shape[0]))
    return _FitSplit(
        split.X_train[n_val:],
        split.y_train[n_val:],
        split.X_train[:n_val],
        split.y_train[:n_val],
        split.X_test,
        split.y_test,
        split.n_classes,
    )


@functools.lru_cache(maxsize=8)
def _factorization_and_restarts(method: str, epochs: int, separation: int) -> tuple[Any, int]:
    """Build the run's factorization; TreeAgg and FFT restarted S times, S tuned by Eq. (3)."""
    T = epochs * separation
    if method == "me":
        return solve_me(T, k=epochs, b=separation).factorization(), 1
    if method == "banded":  # one band per step of an epoch: participations never overlap
        return solve_banded_me(T, k=epochs, b=separation, bands=separation).factorization(), 1
    build = tree_aggregation if method == "tree_aggregation" else fft_factorization
    return tune_restarts(build, T, epochs, separation, schema="fixed_epoch")


def _factorization(method: str, epochs: int, separation: int) -> Any:
    return _factorization_and_restarts(method, epochs, separation)[0]


def _restarts(method: str, epochs: int, separation: int) -> float:
    if method in ("tree_aggregation", "fft"):
        return float(_factorization_and_restarts(method, epochs, separation)[1])
    return math.nan


def _correlation(method: str, epochs: int, separation: int) -> Any:
    if method in FACTORIZATION_METHODS:
        return _factorization(method, epochs, separation)
    return method


def _rows(
    fit: Any, split: Any, method: str, eps: float, P: FtrlDigitsParams, nu: float, eta: float
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
            "val_accuracy": (
                fit.accuracy(split.X_val, split.y_val) if len(split.y_val) else math.nan
            ),
            "epsilon_certified": d.get("epsilon_certified", math.nan),
            "noise_multiplier": d["noise_multiplier"],
            "sensitivity_sq": d.get("sensitivity_sq", math.nan) if math.isfinite(eps) else math.nan,
            "nu": nu if uses_nu else math.nan,
            "steps": d["steps"],
            "separation": d["steps"] // P.epochs,
            "epochs": P.epochs,
            "batch_size": P.batch_size,
            "learning_rate": float(eta),
            "momentum": P.momentum,
            "cooldown_fraction": P.cooldown_fraction,
            "restarts": _restarts(method, P.epochs, d["steps"] // P.epochs),
            "clip": P.clip if math.isfinite(eps) else math.inf,
            "n_train": split.X_train.shape[0],
            "n_test": split.X_test.shape[0],
            "clip_fraction": fit.nonprivate_diagnostics["clip_fraction"],
        },
        index=range(trials),
    )


def select_learning_rates(runs: pd.DataFrame) -> pd.DataFrame:
    """Keep, per (method, ε), the rows of the learning rate with the best validation accuracy.

    The mean validation accuracy over trials decides (ties: the smaller rate); runs
    without a validation split (``val_accuracy`` NaN) or with one rate are returned as
    they are. The selection reads the validation rows without noise: outside the
    guarantee (as the paper's tuning), labelled by :data:`SELECTION`.

    Examples
    --------
    >>> import pandas as pd
    >>> runs = pd.DataFrame({"method": ["sgd"] * 4, "epsilon": 1.0, "trial": [0, 1, 0, 1],
    ...     "learning_rate": [0.1, 0.1, 0.2, 0.2], "val_accuracy": [0.5, 0.6, 0.7, 0.6],
    ...     "accuracy": [0.4, 0.5, 0.6, 0.7]})
    >>> select_learning_rates(runs)["learning_rate"].tolist()
    [0.2, 0.2]
    """
    if "val_accuracy" not in runs or runs["val_accuracy"].isna().all():
        return runs
    keys = ["method", "epsilon"]
    means = runs.groupby([*keys, "learning_rate"], sort=True)["val_accuracy"].mean()
    means = means.reset_index().sort_values([*keys, "learning_rate"])
    best = means.loc[means.groupby(keys, sort=True)["val_accuracy"].idxmax()]
    best = best.rename(columns={"val_accuracy": "val_accuracy_mean"})
    out = runs.merge(best, on=[*keys, "learning_rate"], how="inner")
    tried = means.groupby(keys).size().rename("learning_rates_tried").reset_index()
    return out.merge(tried, on=keys)


def _paired(runs: pd.DataFrame, reference: str) -> pd.DataFrame:
    ref = runs[runs["method"] == reference][["epsilon", "trial", "accuracy"]]
    paired = runs.merge(ref, on=["epsilon", "trial"], suffixes=("", "_ref"))
    paired["diff"] = paired["accuracy"] - paired["accuracy_ref"]
    diffs = (
        paired.groupby(["method", "epsilon"])["diff"]
        .agg(diff="mean", diff_sd="std", pairs="size")
        .reset_index()
    )
    diffs["se"] = diffs["diff_sd"] / np.sqrt(diffs["pairs"])
    with np.errstate(divide="ignore", invalid="ignore"):
        diffs["z"] = diffs["diff"] / diffs["se"]
    return diffs.rename(
        columns={
            "diff": f"diff_vs_{reference}",
            "se": f"diff_vs_{reference}_se",
            "z": f"z_vs_{reference}",
        }
    )[["method", "epsilon", f"diff_vs_{reference}", f"diff_vs_{reference}_se", f"z_vs_{reference}"]]


def summarise_digits(
    runs: pd.DataFrame, references: Sequence[Mapping[str, Any]] = ()
) -> pd.DataFrame:
    """Test accuracy per (method, ε) and the paired differences to DP-SGD.

    With a learning-rate grid, :func:`select_learning_rates` first keeps per (method, ε)
    the rate of best validation accuracy (``learning_rate``, ``val_accuracy_mean``,
    ``learning_rates_tried``; ``selection`` says the validation data was read without
    noise). Columns: ``method``, ``epsilon``, ``accuracy_mean``, ``accuracy_se`` (sd /
    sqrt(runs)), ``runs``, ``diff_vs_sgd`` (mean over trials of the method's accuracy
    minus DP-SGD's at the same ε and trial), ``diff_vs_sgd_se`` (SE of those paired
    differences), ``z_vs_sgd``, the same against ``sgd_amplified`` when it ran
    (``diff_vs_sgd_amplified``, ...), ``nonprivate_accuracy`` / ``nonprivate_se`` (the
    reference, same schedule), ``noise_multiplier``, ``sensitivity_sq``, ``nu``,
    ``restarts`` (S of TreeAgg and FFT), ``epsilon_certified`` (largest over trials),
    ``status``.
    """
    del references  # the reference is the study's own non-private rows
    runs = select_learning_rates(runs)
    selected = "learning_rates_tried" in runs
    if "learning_rate" not in runs:
        runs = runs.assign(learning_rate=math.nan)
    if "restarts" not in runs:
        runs = runs.assign(restarts=math.nan)
    g = runs.groupby(["method", "epsilon"], sort=True)
    table = g.agg(
        accuracy_mean=("accuracy", "mean"),
        sd=("accuracy", "std"),
        runs=("accuracy", "size"),
        learning_rate=("learning_rate", "first"),
        noise_multiplier=("noise_multiplier", "first"),
        sensitivity_sq=("sensitivity_sq", "first"),
        nu=("nu", "first"),
        epsilon_certified=("epsilon_certified", "max"),
        steps=("steps", "first"),
        restarts=("restarts", "first"),
    ).reset_index()
    if selected:
        extra = g.agg(
            val_accuracy_mean=("val_accuracy_mean", "first"),
            learning_rates_tried=("learning_rates_tried", "first"),
        ).reset_index()
        table = table.merge(extra, on=["method", "epsilon"])
    table["accuracy_se"] = table["sd"] / np.sqrt(table["runs"])
    table = table.drop(columns=["sd"])
    for reference in ("sgd", "sgd_amplified"):
        if reference == "sgd" or (runs["method"] == reference).any():
            table = table.merge(_paired(runs, reference), on=["method", "epsilon"], how="left")
    ref = runs[runs["method"] == "nonprivate"]["accuracy"]
    table["nonprivate_accuracy"] = float(ref.mean()) if len(ref) else math.nan
    table["nonprivate_se"] = float(ref.std() / math.sqrt(len(ref))) if len(ref) > 1 else math.nan
    table["status"] = STATUS + ("; " + SELECTION if selected else "")
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
