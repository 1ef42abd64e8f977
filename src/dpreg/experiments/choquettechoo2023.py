r"""Experiments of Choquette-Choo et al. (2023): Figs. 1-3, Tables 1, 2, 4, quoted Fig. 4.

Five study kinds are registered (see :mod:`dpreg.experiments.kinds`):

``ftrl_mean_ratio``
    Fig. 1: mean estimation, ratio :math:`F_\infty(\beta^\star)/F_\infty(\beta^{sgd})`
    against :math:`\eta`, the optimal coefficients and spectrum
    (:func:`dpreg.theory.ftrl.fig1_table`).
``ftrl_theory_table``
    Tables 1, 2 and 4 computed (:mod:`dpreg.theory.ftrl`).
``ftrl_linreg_sim``
    Fig. 2: streaming linear-regression simulations of Noisy-SGD and ν-Noisy-FTRL
    (:func:`dpreg.estimators.ftrl.simulate_streaming_regression`) with the exact LTI
    theory values, the finite-time bounds of Theorems D.11 / D.13(c)
    (:mod:`dpreg.theory.ftrl_finite_time`) beside them, and fitted log-log slopes next to
    the paper's.
``ftrl_socp_bound``
    Fig. 3: Theorem 3.1's SOCP bound against the condition number
    (:func:`dpreg.theory.ftrl_socp.socp_curve`).
``ftrl_quoted``
    Fig. 4 (CIFAR-10, StackOverflow): the paper's reported numbers, **quoted, not
    reproduced** (deep learning is out of scope).

Deterministic kinds (all but ``ftrl_linreg_sim``) compute their rows in ``run`` and
repeat them per trial (use ``trials: 1``); ``summarise`` drops the repeats.

Privacy bookkeeping: Noisy-FTRL / Noisy-SGD do not clip and are **not DP** (the paper's
analysis vehicle, §2.2); the simulation rows record the calibration level
``rho_calibration`` and ``private = False``.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dpreg.data.datasets import Dataset
from dpreg.estimators.ftrl import simulate_streaming_regression
from dpreg.estimators.ftrl_correlations import independent, nu_ftrl
from dpreg.estimators.ftrl_noise import NoiseWorkspace
from dpreg.experiments.params import (
    KindParams,
    at_least,
    choice,
    finite,
    half_open_interval,
    nonnegative,
    open_interval,
    param,
    positive,
    positive_integer,
)
from dpreg.experiments.study_kind import StudyKind
from dpreg.privacy.correlated import PARTICIPATION_SCHEMAS
from dpreg.theory import ftrl as theory
from dpreg.theory import ftrl_finite_time, ftrl_socp
from dpreg.theory.ftrl_table3 import ME_SOLVERS, WORKLOADS, check_me_solver

__all__ = [
    "FIG2_PAPER_SLOPES",
    "QUOTED_RESULTS",
    "FtrlLinregSimParams",
    "FtrlMeanRatioParams",
    "FtrlQuotedParams",
    "FtrlSocpBoundParams",
    "FtrlTheoryTableParams",
    "run_linreg_sim",
    "run_mean_ratio",
    "run_quoted",
    "run_socp_bound",
    "run_theory_table",
    "summarise_linreg_sim",
]

PAPER = "Choquette-Choo et al. (2023)"

FIG2_PAPER_SLOPES: dict[tuple[str, str], float] = {
    ("d", "sgd"): 1.00,
    ("d_eff", "sgd"): 0.18,
    ("d_eff", "nu_ftrl"): 0.94,
    ("eta", "nu_ftrl"): 2.03,
    ("eta", "sgd"): 1.27,
}
"""Slopes printed in Fig. 2's caption, keyed by (panel, mechanism); ν-FTRL vs d is not
reported."""

QUOTED_RESULTS: tuple[dict[str, Any], ...] = (
    {
        "task": "CIFAR-10 (example-level DP)",
        "metric": "test accuracy (%)",
        "epsilon": 10.0,
        "mechanism": "nu_dp_ftrl",
        "value": 69.26,
        "source": "§4 / App. G.1 text",
    },
    {
        "task": "CIFAR-10 (example-level DP)",
        "metric": "test accuracy (%)",
        "epsilon": 10.0,
        "mechanism": "multi_epoch_me",
        "value": 70.83,
        "source": "§4 / App. G.1 text",
    },
    {
        "task": "CIFAR-10 (example-level DP)",
        "metric": "test accuracy (%)",
        "epsilon": 4.0,
        "mechanism": "nu_dp_ftrl",
        "value": 63.02,
        "source": "§4 text ('for eps >= 4'; eps = 4 presumed)",
    },
    {
        "task": "CIFAR-10 (example-level DP)",
        "metric": "test accuracy (%)",
        "epsilon": 4.0,
        "mechanism": "dp_sgd_amplified",
        "value": 62.02,
        "source": "§4 text ('for eps >= 4'; eps = 4 presumed)",
    },
    {
        "task": "CIFAR-10 (example-level DP)",
        "metric": "gain over other anytime (pp)",
        "epsilon": math.nan,
        "mechanism": "nu_dp_ftrl",
        "value": 3.0,
        "source": "§4 text ('about 3 pp on average')",
    },
    {
        "task": "StackOverflow (user-level DP)",
        "metric": "validation accuracy (%)",
        "epsilon": 2.0,
        "mechanism": "nu_dp_ftrl",
        "value": 23.6,
        "source": "§4 / App. G.2 text ('around eps = 2')",
    },
    {
        "task": "StackOverflow (user-level DP)",
        "metric": "validation accuracy (%)",
        "epsilon": 2.0,
        "mechanism": "dp_sgd_amplified",
        "value": 22.6,
        "source": "§4 / App. G.2 text ('around eps = 2')",
    },
    {
        "task": "StackOverflow (user-level DP)",
        "metric": "validation accuracy (%)",
        "epsilon": 8.0,
        "mechanism": "nu_dp_ftrl",
        "value": 25.3,
        "source": "§4 text",
    },
    {
        "task": "StackOverflow (user-level DP)",
        "metric": "gain over ME (pp)",
        "epsilon": math.nan,
        "mechanism": "nu_dp_ftrl",
        "value": 0.3,
        "source": "§4 text ('at all eps')",
    },
)
"""Numbers the paper reports for its deep-learning experiments (Fig. 4; no tables in
the paper). Quoted, not reproduced."""


# ----------------------------------------------------------------------- helpers


_POSITIVE = finite(positive)


def _params(spec: type[KindParams], cell: Mapping[str, Any]) -> Any:
    """Return the cell's typed parameters (the workflow's ``conversion`` key left aside)."""
    return spec.from_cell(cell)


def _named_or_fraction(name: str):
    """Check: the text ``name`` or a number in (0, 1) (the ``nu`` keys)."""

    def check(value: Any) -> str | None:
        ok = value == name if isinstance(value, str) else 0 < value < 1
        return None if ok else f"must be {name!r} or lie in (0, 1)"

    check.text = f"`{name}` or in (0, 1)"  # type: ignore[attr-defined]
    return check


def _non_empty(P: KindParams, key: str) -> None:
    if not getattr(P, key):
        raise ValueError(f"{P.kind}: {key} must be a non-empty list")


def _repeat(frame: pd.DataFrame, trials: int, first_trial: int, seed: int) -> pd.DataFrame:
    """Stack a deterministic table once per trial (trial-major), tagged with trial and seed."""
    out = frame.iloc[np.tile(np.arange(len(frame)), trials)].reset_index(drop=True)
    out.insert(0, "trial", np.repeat(np.arange(first_trial, first_trial + trials), len(frame)))
    out.insert(1, "seed", np.full(len(out), seed, dtype=np.uint64))
    return out


def _first_trial_only(runs: pd.DataFrame) -> pd.DataFrame:
    first = runs["trial"].min()
    out = runs[runs["trial"] == first].drop(columns=["trial", "seed"], errors="ignore")
    return out.drop(columns=["study"], errors="ignore").reset_index(drop=True)


def summarise_first_trial(
    runs: pd.DataFrame, references: Sequence[Mapping[str, Any]] = ()
) -> pd.DataFrame:
    """Summary of the deterministic kinds: the rows of the first trial (all trials agree)."""
    return _first_trial_only(runs)


# ----------------------------------------------------------------------- Fig. 1


@dataclass(frozen=True)
class FtrlMeanRatioParams(KindParams):
    """Cell keys of ``ftrl_mean_ratio`` (Fig. 1, mean estimation)."""

    kind = "ftrl_mean_ratio"
    etas: list[float] = param(
        doc="learning rates eta of the ratio panel F_inf(beta*) / F_inf(beta^sgd)"
        " (a non-empty list)",
        check=half_open_interval(0, 1),
    )
    eta_panels: float = param(
        0.1,
        doc="eta of the panels of the optimal coefficients beta*_t and the spectrum"
        " abs(B*(omega))^2",
        check=open_interval(0, 1),
    )
    T: int = param(30, doc="coefficients beta*_0..beta*_{T-1} drawn", check=positive_integer)


def _mean_params(cell: Mapping[str, Any]) -> FtrlMeanRatioParams:
    P = _params(FtrlMeanRatioParams, cell)
    _non_empty(P, "etas")
    return P


def check_mean_cell(cell: Mapping[str, Any]) -> None:
    """Validate an ``ftrl_mean_ratio`` cell (the spec, and ``etas`` not empty)."""
    _mean_params(cell)


def run_mean_ratio(
    cell: Mapping[str, Any],
    *,
    trials: int,
    first_trial: int,
    seed: int,
    data: Dataset | None = None,
) -> pd.DataFrame:
    """Fig. 1 rows (:func:`dpreg.theory.ftrl.fig1_table`); keys: :class:`FtrlMeanRatioParams`."""
    P = _mean_params(cell)
    table = theory.fig1_table(
        [float(e) for e in P.etas],
        eta_panels=float(P.eta_panels),
        T=int(P.T),
    )
    return _repeat(table, trials, first_trial, seed)


def _figure_mean(table: pd.DataFrame, *, title: str | None = None) -> Any:
    from dpreg.plotting.choquettechoo2023 import plot_fig1

    return plot_fig1(table, title=title)


MEAN_RATIO = StudyKind(
    name="ftrl_mean_ratio",
    run=run_mean_ratio,
    summarise=summarise_first_trial,
    figure=_figure_mean,
    params=FtrlMeanRatioParams,
    check_cell=check_mean_cell,
)


# ----------------------------------------------------------------------- Tables 1, 2, 4

TABLES = ("table1", "table2", "table3", "table4")


def _unit_right_open(value: Any) -> str | None:
    return None if 0 <= value < 1 else "must lie in [0, 1)"


def _unit_closed(value: Any) -> str | None:
    return None if 0 <= value <= 1 else "must lie in [0, 1]"


_unit_right_open.text = "in [0, 1)"  # type: ignore[attr-defined]
_unit_closed.text = "in [0, 1]"  # type: ignore[attr-defined]
_UNIT_RIGHT_OPEN = _unit_right_open
_UNIT_CLOSED = _unit_closed


def _relaxation(value: Any) -> str | None:
    return None if 1 <= value <= 4 else "must lie in [1, 4]"


_relaxation.text = "in [1, 4]"  # type: ignore[attr-defined]
_RELAXATION = _relaxation


@dataclass(frozen=True)
class FtrlTheoryTableParams(KindParams):
    """Cell keys of ``ftrl_theory_table`` (Tables 1-4); each table reads some of them."""

    kind = "ftrl_theory_table"
    table: str = param(
        doc="which table: `table1`, `table2`, `table4` (lambda_k = k^-alpha for 1 and 2) or"
        " `table3` (factorizations: sensitivity and prefix-sum error (3))",
        check=choice(*TABLES),
    )
    d: int = param(128, doc="table1/2: dimension d", check=positive_integer)
    ds: list[int] = param([16, 64, 256], doc="table4: dimensions d", check=positive_integer)
    alpha: float = param(
        1.0, doc="table1/2: exponent alpha of the spectrum lambda_k = k^-alpha", check=_POSITIVE
    )
    eta: float = param(0.02, doc="table1/2/4: learning rate eta", check=open_interval(0, 1))
    families: list[str] = param(
        list(theory.SPECTRUM_FAMILIES),
        doc="table4: spectrum families (rows)",
        check=choice(*theory.SPECTRUM_FAMILIES),
    )
    horizons: list[int] = param(
        [100, 1000, 10000], doc="table2: horizons T", check=positive_integer
    )
    a_lt1: float = param(
        0.75, doc="table4: exponent a of the family k^-a with a < 1 (`power_lt1`)", check=_POSITIVE
    )
    a_gt1: float = param(
        3.0, doc="table4: exponent a of the family k^-a with a > 1 (`power_gt1`)", check=_POSITIVE
    )
    rho: float = param(1.0, doc="table1/2/4: zCDP calibration level rho", check=_POSITIVE)
    T: int = param(
        32,
        doc="table3: horizon T (ME by SDP: <= 128 with one participation, <= 64 with several;"
        " by the fixed point: <= 4096)",
        check=positive_integer,
    )
    nu: float | str = param(
        "tuned",
        doc="table3: nu of nu-DP-FTRL, a number or `tuned` (minimises the error (3) under"
        " the participation model)",
        check=_named_or_fraction("tuned"),
    )
    participations: int = param(
        1, doc="table3: participations k of one example", check=positive_integer
    )
    separation: int | None = param(
        None,
        doc="table3: separation b between participations (needed when k > 1)",
        check=positive_integer,
    )
    schema: str = param(
        "min_sep",
        doc="table3: participation model, `min_sep` (at most k participations, b apart) or"
        " `fixed_epoch`",
        check=choice(*PARTICIPATION_SCHEMAS),
    )
    me_solver: str = param(
        "auto",
        doc="table3: ME solver, `sdp` (small T), `fixed_point` (large T, the certified solver"
        " of ftrl_me: L-BFGS on the dual for one participation, Denisov et al.'s fixed point"
        " for `fixed_epoch` with T a multiple of separation, T <= k b, or with"
        " `me_relaxation` != 1), `auto` (SDP when T is"
        " small enough) or `banded` (`min_sep` at any T: banded encoders, an upper bound on ME)",
        check=choice(*ME_SOLVERS),
    )
    me_tol: float = param(
        1e-6,
        doc="table3: relative duality gap at which the fixed-point ME solver stops (`banded`:"
        " L-BFGS relative tolerance on the objective)",
        check=open_interval(0, 1),
    )
    me_max_iter: int = param(
        200,
        doc="table3: iteration cap of the fixed-point ME solver (`banded`: L-BFGS iterations)",
        check=positive_integer,
    )
    me_bands: int | None = param(
        None,
        doc="table3, `me_solver: banded`: bands p <= separation of the banded encoder (default"
        " separation)",
        check=positive_integer,
    )
    me_relaxation: float = param(
        1.0,
        doc="table3: over-relaxation omega in [1, 4] of the fixed point (1: Denisov et al.'s"
        " iteration, or L-BFGS for one participation; ~3 needs ~3x fewer fixed-point iterations"
        " on the momentum workload; != 1 selects the fixed point; one participation only)",
        check=_RELAXATION,
    )
    me_gap_tol: float = param(
        1e-4,
        doc="table3: largest certified relative gap at which the fixed point is reported as ME"
        " (a larger gap fails the job: an unconverged solve is never reported as ME); at least"
        " `me_tol`",
        check=open_interval(0, 1),
    )
    workload: str = param(
        "prefix",
        doc="table3: workload A of the error, `prefix` (Eq. 3) or `momentum_cooldown` (SGD with"
        " momentum and a linear learning-rate cooldown, App. G.1; needs `me_solver:"
        " fixed_point`)",
        check=choice(*WORKLOADS),
    )
    momentum: float = param(
        0.95,
        doc="table3, `momentum_cooldown`: momentum beta in [0, 1)",
        check=_UNIT_RIGHT_OPEN,
    )
    cooldown_fraction: float = param(
        0.25,
        doc="table3, `momentum_cooldown`: fraction of the last steps with a linear learning-rate"
        " decay (paper: 500 of 2000)",
        check=_UNIT_CLOSED,
    )
    final_lr_factor: float = param(
        0.05,
        doc="table3, `momentum_cooldown`: learning rate at the last step relative to the initial",
        check=half_open_interval(0, 1),
    )


def _table_params(cell: Mapping[str, Any]) -> FtrlTheoryTableParams:
    P = _params(FtrlTheoryTableParams, cell)
    if P.table == "table3":
        k = P.participations
        if k > 1 and P.separation is None:
            raise ValueError(f"{P.kind}: participations={k} > 1 needs separation")
        try:
            solver = check_me_solver(P.me_solver, int(P.T), k, P.separation, P.schema)
        except ValueError as err:
            raise ValueError(f"{P.kind}: table3: {err}") from None
        if P.me_bands is not None and (solver != "banded" or P.me_bands > (P.separation or 0)):
            raise ValueError(f"{P.kind}: table3: me_bands needs me_solver: banded, <= separation")
        if P.me_relaxation != 1 and k > 1:
            raise ValueError(f"{P.kind}: table3: me_relaxation != 1 needs participations: 1")
        if P.me_gap_tol < P.me_tol:
            raise ValueError(f"{P.kind}: table3: me_gap_tol must be at least me_tol")
        if P.workload != "prefix" and solver != "fixed_point":
            raise ValueError(
                f"{P.kind}: table3: workload {P.workload!r} needs me_solver: fixed_point"
            )
    return P


def check_table_cell(cell: Mapping[str, Any]) -> None:
    """Validate an ``ftrl_theory_table`` cell (the spec, and table 3's T and separation)."""
    _table_params(cell)


def run_theory_table(
    cell: Mapping[str, Any],
    *,
    trials: int,
    first_trial: int,
    seed: int,
    data: Dataset | None = None,
) -> pd.DataFrame:
    r"""Tables 1, 2, 3 or 4 (key ``table``); :math:`\lambda_k = k^{-\alpha}` for 1 and 2.

    Table 3 (:func:`dpreg.estimators.ftrl_factorizations.table3`) takes ``T`` (32),
    the ν of ν-DP-FTRL (``nu``: a number, or ``"tuned"`` to minimise the error (3)) and
    the participation model: ``participations`` (k, 1), ``separation`` (b, needed when
    k > 1) and ``schema`` (``min_sep`` or ``fixed_epoch``); ME is computed by
    ``me_solver`` (``auto``: the SDP for small T, the certified dual solve of
    :func:`dpreg.estimators.ftrl_me.solve_me` above (L-BFGS on the dual, or the fixed
    point), with ``me_tol`` and ``me_max_iter``).
    """
    P = _table_params(cell)
    eta, rho = float(P.eta), float(P.rho)
    which = P.table
    if which == "table3":
        from dpreg.theory.ftrl_table3 import table3

        k = int(P.participations)
        out = table3(
            int(P.T),
            nu=P.nu if P.nu == "tuned" else float(P.nu),
            participations=k,
            separation=int(P.separation) if k > 1 else None,
            schema=P.schema,
            me_solver=P.me_solver,
            me_tol=float(P.me_tol),
            me_max_iter=int(P.me_max_iter),
            me_gap_tol=float(P.me_gap_tol),
            workload=P.workload,
            momentum=float(P.momentum),
            cooldown_fraction=float(P.cooldown_fraction),
            final_lr_factor=float(P.final_lr_factor),
            me_bands=None if P.me_bands is None else int(P.me_bands),
            me_relaxation=float(P.me_relaxation),
        )
    elif which == "table4":
        out = theory.table4(
            [int(d) for d in P.ds],
            eta,
            families=tuple(P.families),
            a_lt1=float(P.a_lt1),
            a_gt1=float(P.a_gt1),
            rho=rho,
        )
    else:
        d, alpha = int(P.d), float(P.alpha)
        lam = np.arange(1, d + 1, dtype=np.float64) ** -alpha
        if which == "table1":
            out = theory.table1(lam, eta, rho=rho)
        else:
            horizons = [int(h) for h in P.horizons]
            out = theory.table2(lam, eta, horizons=horizons, rho=rho)
        out.insert(0, "alpha", alpha)
    out.insert(0, "table", which)
    return _repeat(out, trials, first_trial, seed)


def _figure_table(table: pd.DataFrame, *, title: str | None = None) -> Any:
    from dpreg.plotting.choquettechoo2023 import plot_theory_table

    return plot_theory_table(table, title=title)


THEORY_TABLE = StudyKind(
    name="ftrl_theory_table",
    run=run_theory_table,
    summarise=summarise_first_trial,
    figure=_figure_table,
    params=FtrlTheoryTableParams,
    check_cell=check_table_cell,
)


# ----------------------------------------------------------------------- Fig. 2

PANELS = ("d", "d_eff", "eta")
SIM_MECHANISMS = ("sgd", "nu_ftrl")


@dataclass(frozen=True)
class FtrlLinregSimParams(KindParams):
    """Cell keys of ``ftrl_linreg_sim`` (Fig. 2); ``eta`` must be stable (check_cell)."""

    kind = "ftrl_linreg_sim"
    panel: str = param(doc="the panel's x-axis: `d`, `d_eff` or `eta`", check=choice(*PANELS))
    mechanism: str | list[str] = param(
        doc="`sgd` (Noisy-SGD) or `nu_ftrl` (nu-Noisy-FTRL); a list runs each in this job",
        check=choice(*SIM_MECHANISMS),
    )
    d: int | list[int] = param(
        128, doc="dimension d of H = diag(lambda_k); a list runs each", check=positive_integer
    )
    alpha: float | list[float] = param(
        1.0, doc="exponent alpha of lambda_k = k^-alpha; a list runs each", check=_POSITIVE
    )
    eta: float | list[float] = param(
        0.02,
        doc="learning rate eta, stable only below 1/R^2, R^2 = Tr H + 2 lambda_max (checked);"
        " a list runs each",
        check=_POSITIVE,
    )
    T: int | None = param(
        None,
        doc="steps T; unset: ceil(time_constants / (eta mu)) clipped to [T_min, T_max]",
        check=positive_integer,
    )
    time_constants: float = param(
        20.0, doc="T in units of the slowest time constant 1/(eta mu)", check=_POSITIVE
    )
    T_min: int = param(20000, doc="smallest T from `time_constants`", check=positive_integer)
    T_max: int = param(2_000_000, doc="largest T from `time_constants`", check=positive_integer)
    nu: float | str = param(
        "eta_mu",
        doc="nu of nu-Noisy-FTRL, a number or `eta_mu` (nu = eta lambda_min, the best reading"
        " in docs/notes/choquettechoo2023.md §4.1)",
        check=_named_or_fraction("eta_mu"),
    )
    rho: float = param(
        1.0,
        doc="zCDP level rho the noise is calibrated to (nothing is clipped: not DP; rows"
        " record `rho_calibration` and `private = False`)",
        check=_POSITIVE,
    )
    clip: float = param(1.0, doc="G: scales the noise only (nothing is clipped)", check=_POSITIVE)
    sigma_sgd: float = param(
        0.0, doc="standard deviation sigma_sgd of the label noise", check=finite(nonnegative)
    )
    tail_fraction: float = param(
        0.5,
        doc="fraction of the last steps averaged into `suboptimality`",
        check=half_open_interval(0, 1),
    )
    record_every: int = param(100, doc="thinning of the recorded trace", check=positive_integer)
    initial_distance: float = param(
        0.0,
        doc="distance of theta_0 from theta* along (1,...,1)/sqrt(d) (0: start at the optimum); the"
        " finite-time bounds of Theorems D.11 / D.13(c) (`bound_d11`, `bound_d13`) then"
        " carry a transient",
        check=finite(nonnegative),
    )


SIM_DESIGN = [
    "panel",
    "mechanism",
    "d",
    "alpha",
    "eta",
    "nu",
    "d_eff",
    "mu",
    "T",
    "rho",
    "sigma_sgd",
    "initial_distance",
]


def _sim_spec(P: FtrlLinregSimParams) -> dict[str, Any]:
    """One sub-cell's design (scalar ``mechanism``, ``d``, ``alpha``, ``eta``), checked."""
    d, alpha, eta = int(P.d), float(P.alpha), float(P.eta)
    lam = np.arange(1, d + 1, dtype=np.float64) ** -alpha
    r2, _ = theory.gaussian_kurtosis_constants(lam)
    if eta * r2 >= 1:
        raise ValueError(
            f"{P.kind}: eta={eta:g} is unstable for this H: need eta < 1/R^2 = {1 / r2:.3g}"
        )
    mu = float(lam.min())
    nu = eta * mu if P.nu == "eta_mu" else float(P.nu)
    if not 0 < nu < 1:
        raise ValueError(f"{P.kind}: nu = eta mu must lie in (0, 1); got {nu!r}")
    if P.T is not None:
        T = int(P.T)
    else:
        T = int(math.ceil(float(P.time_constants) / (eta * mu)))
        T = max(int(P.T_min), min(T, int(P.T_max)))
    return {
        "panel": P.panel,
        "mechanism": P.mechanism,
        "d": d,
        "alpha": alpha,
        "eta": eta,
        "nu": nu,
        "lam": lam,
        "mu": mu,
        "T": T,
        "rho": float(P.rho),
        "clip": float(P.clip),
        "sigma_sgd": float(P.sigma_sgd),
        "tail_fraction": float(P.tail_fraction),
        "record_every": int(P.record_every),
        "initial_distance": float(P.initial_distance),
    }


LIST_AXES = ("mechanism", "d", "alpha", "eta")
"""Keys that may hold a list inside one cell (expanded in one job, fewer jobs)."""


def _expand(P: FtrlLinregSimParams) -> list[FtrlLinregSimParams]:
    axes = [k for k in LIST_AXES if isinstance(getattr(P, k), list | tuple)]
    return [
        dataclasses.replace(P, **dict(zip(axes, combo, strict=True)))
        for combo in itertools.product(*(getattr(P, k) for k in axes))
    ]


def check_sim_cell(cell: Mapping[str, Any]) -> None:
    """Validate an ``ftrl_linreg_sim`` cell (every combination of its list-valued keys)."""
    for sub in _expand(_params(FtrlLinregSimParams, cell)):
        _sim_spec(sub)


def run_linreg_sim(
    cell: Mapping[str, Any],
    *,
    trials: int,
    first_trial: int,
    seed: int,
    data: Dataset | None = None,
) -> pd.DataFrame:
    r"""Fig. 2 cell: ``trials`` seeds of each mechanism on :math:`\lambda_k = k^{-\alpha}`.

    Keys, defaults and ranges: :class:`FtrlLinregSimParams` (``nu = "eta_mu"``:
    :math:`\nu = \eta\lambda_{\min}`, the best reading in
    docs/notes/choquettechoo2023.md §4.1; without ``T``,
    :math:`T = \lceil c/(\eta\mu)\rceil` with ``c = time_constants``, clipped to
    ``[T_min, T_max]``). ``mechanism``, ``d``, ``alpha`` and ``eta`` may be lists: every
    combination runs in this job (sub-cell ``k`` draws from ``default_rng([seed, k])``);
    the seeds of one sub-cell are vectorised.

    Rows (one per trial and sub-cell): ``suboptimality`` (tail mean of
    :math:`F(\theta_t) - F^\star`), the exact LTI value ``theory_lti`` (= the C.18
    lower bound), ``theory_upper`` (C.15), the Theorem 2.2 rate ``theory_rate``, the
    finite-time bounds ``bound_d11`` / ``bound_d13`` (Theorems D.11 / D.13(c), evaluated
    at the tail's first step ``T - n_tail``),
    ``late_over_early`` (stationarity check) and the design.
    """
    P = _params(FtrlLinregSimParams, cell)
    # the sub-cells' noise in one buffer (the mechanisms of a cell need the same size)
    workspace = NoiseWorkspace()
    parts = [
        _run_sim_subcell(
            sub, trials=trials, first_trial=first_trial, seed=seed, stream=k, workspace=workspace
        )
        for k, sub in enumerate(_expand(P))
    ]
    return pd.concat(parts, ignore_index=True)


def _run_sim_subcell(
    P: FtrlLinregSimParams,
    *,
    trials: int,
    first_trial: int,
    seed: int,
    stream: int,
    workspace: NoiseWorkspace | None = None,
) -> pd.DataFrame:
    spec = _sim_spec(P)
    corr = independent() if spec["mechanism"] == "sgd" else nu_ftrl(spec["nu"])
    rng = np.random.default_rng([seed, stream])
    res = simulate_streaming_regression(
        spec["lam"],
        correlation=corr,
        eta=spec["eta"],
        T=spec["T"],
        rng=rng,
        trials=trials,
        rho=spec["rho"],
        clip=spec["clip"],
        sigma_sgd=spec["sigma_sgd"],
        tail_fraction=spec["tail_fraction"],
        record_every=spec["record_every"],
        initial_distance=spec["initial_distance"],
        workspace=workspace,
    )
    lam, eta = spec["lam"], spec["eta"]
    kw = {"rho": spec["rho"], "clip": spec["clip"], "sigma_sgd": spec["sigma_sgd"]}
    # the tail averages F(theta_t) for t > T - n_tail; the bounds decrease in t, so their
    # value at t0 = T - n_tail bounds the tail mean (App. D, docs/choquettechoo2023.md)
    t0 = spec["T"] - res.n_tail
    bounds = {
        f"bound_{form}": ftrl_finite_time.theorem_d11_for(
            corr, lam, eta, t0, initial_distance=spec["initial_distance"], form=form, **kw
        )
        for form in ("d11", "d13")
    }
    rates = theory.theorem22_rates(lam, eta, spec["nu"], **kw)
    base = {
        "panel": spec["panel"],
        "mechanism": spec["mechanism"],
        "d": spec["d"],
        "alpha": spec["alpha"],
        "eta": eta,
        "nu": spec["nu"] if spec["mechanism"] != "sgd" else math.nan,
        "d_eff": theory.effective_dimension(lam),
        "mu": spec["mu"],
        "T": spec["T"],
        "rho": spec["rho"],
        "sigma_sgd": spec["sigma_sgd"],
        "initial_distance": spec["initial_distance"],
        "theory_lti": theory.lti_suboptimality(corr, lam, eta, **kw),
        "theory_upper": theory.theorem_c15_upper(corr, lam, eta, **kw),
        "theory_rate": rates["sgd" if spec["mechanism"] == "sgd" else "nu_ftrl"],
        **bounds,
        "noise_multiplier": res.noise_multiplier,
        "gamma_sq": res.sensitivity_sq,
        "n_tail": res.n_tail,
        "rho_calibration": spec["rho"],
        "private": False,
    }
    frame = pd.DataFrame([base] * trials)
    frame.insert(0, "trial", np.arange(first_trial, first_trial + trials, dtype=np.int64))
    frame.insert(1, "seed", np.full(trials, seed, dtype=np.uint64))
    frame["suboptimality"] = res.suboptimality
    frame["late_over_early"] = _drift(res)
    return frame


def _drift(res: Any) -> np.ndarray:
    """Mean F over the last quarter over that of the third quarter (stationarity check)."""
    n = res.trace.shape[1]
    if n < 4:
        return np.full(res.trace.shape[0], math.nan)
    q3 = res.trace[:, n // 2 : 3 * n // 4].mean(axis=1)
    q4 = res.trace[:, 3 * n // 4 :].mean(axis=1)
    return q4 / q3


def _slope(x: np.ndarray, y: np.ndarray) -> float:
    x, y = np.asarray(x, float), np.asarray(y, float)
    ok = np.isfinite(x) & np.isfinite(y) & (x > 0) & (y > 0)
    if ok.sum() < 2 or np.unique(x[ok]).size < 2:
        return math.nan
    return float(np.polyfit(np.log(x[ok]), np.log(y[ok]), 1)[0])


def summarise_linreg_sim(
    runs: pd.DataFrame, references: Sequence[Mapping[str, Any]] = ()
) -> pd.DataFrame:
    r"""Mean, SE and theory per cell; slopes per (panel, mechanism); FTRL/SGD ratio.

    Columns: the design, ``mean``, ``se`` (std / sqrt(runs)), ``runs``, ``theory_lti``,
    ``theory_upper``, ``theory_rate``, the finite-time bounds ``bound_d11`` /
    ``bound_d13`` (Theorems D.11 / D.13(c) at the tail's first step, with Theorem C.15's
    :math:`F_\infty` upper bound), ``sim_over_lti``, ``late_over_early``;
    ``x`` (the panel's axis value), ``slope_sim`` / ``slope_lti`` / ``slope_rate``
    (log-log least squares over the panel), ``slope_paper`` (Fig. 2 caption);
    ``ratio_to_sgd_sim`` and ``ratio_to_sgd_lti`` where the SGD cell exists.
    """
    keys = [k for k in SIM_DESIGN if k in runs.columns]
    runs = runs.copy()
    runs["nu"] = runs["nu"].fillna(-1.0)
    g = runs.groupby(keys, sort=True, dropna=False)
    table = g.agg(
        mean=("suboptimality", "mean"),
        sd=("suboptimality", "std"),
        runs=("suboptimality", "size"),
        theory_lti=("theory_lti", "first"),
        theory_upper=("theory_upper", "first"),
        theory_rate=("theory_rate", "first"),
        bound_d11=("bound_d11", "first"),
        bound_d13=("bound_d13", "first"),
        late_over_early=("late_over_early", "mean"),
        noise_multiplier=("noise_multiplier", "first"),
    ).reset_index()
    table["nu"] = table["nu"].where(table["nu"] >= 0)
    table["se"] = table["sd"].fillna(0.0) / np.sqrt(table["runs"])
    table = table.drop(columns=["sd"])
    table["sim_over_lti"] = table["mean"] / table["theory_lti"]
    table["x"] = np.where(
        table["panel"] == "d",
        table["d"],
        np.where(table["panel"] == "d_eff", table["d_eff"], table["eta"]),
    )
    for col in ("slope_sim", "slope_lti", "slope_rate", "slope_paper"):
        table[col] = math.nan
    for (panel, mech), idx in table.groupby(["panel", "mechanism"]).groups.items():
        sub = table.loc[idx]
        table.loc[idx, "slope_sim"] = _slope(sub["x"], sub["mean"])
        table.loc[idx, "slope_lti"] = _slope(sub["x"], sub["theory_lti"])
        table.loc[idx, "slope_rate"] = _slope(sub["x"], sub["theory_rate"])
        table.loc[idx, "slope_paper"] = FIG2_PAPER_SLOPES.get((panel, mech), math.nan)
    match = ["panel", "d", "alpha", "eta"]
    sgd = table[table["mechanism"] == "sgd"][match + ["mean", "theory_lti"]]
    table = table.merge(sgd, on=match, how="left", suffixes=("", "_sgd"))
    table["ratio_to_sgd_sim"] = table["mean"] / table["mean_sgd"]
    table["ratio_to_sgd_lti"] = table["theory_lti"] / table["theory_lti_sgd"]
    return table.drop(columns=["mean_sgd", "theory_lti_sgd"])


def _figure_sim(table: pd.DataFrame, *, title: str | None = None) -> Any:
    from dpreg.plotting.choquettechoo2023 import plot_fig2

    return plot_fig2(table, title=title)


LINREG_SIM = StudyKind(
    name="ftrl_linreg_sim",
    run=run_linreg_sim,
    summarise=summarise_linreg_sim,
    figure=_figure_sim,
    params=FtrlLinregSimParams,
    check_cell=check_sim_cell,
)


# ----------------------------------------------------------------------- Fig. 3

_KAPPA = finite(at_least(1))


@dataclass(frozen=True)
class FtrlSocpBoundParams(KindParams):
    """Cell keys of ``ftrl_socp_bound`` (Fig. 3); ``eta L <= 1`` (check_cell)."""

    kind = "ftrl_socp_bound"
    kappa_max: float = param(
        1000.0,
        doc="largest condition number kappa = L / mu of the grid (without `kappas`)",
        check=_KAPPA,
    )
    n_kappa: int = param(
        20, doc="points of the grid, log-spaced from 1 to `kappa_max`", check=positive_integer
    )
    kappas: list[float] | None = param(
        None, doc="the condition numbers kappa instead of the grid (non-empty)", check=_KAPPA
    )
    L: float = param(1.0, doc="smoothness L of the objective (eta L <= 1)", check=_POSITIVE)
    eta: float = param(0.5, doc="learning rate eta (eta L <= 1)", check=_POSITIVE)
    rho: float = param(1.0, doc="zCDP calibration level rho of the noise", check=_POSITIVE)
    clip: float = param(1.0, doc="G: the gradient bound scaling the noise", check=_POSITIVE)
    sigma_sgd: float = param(
        0.0, doc="standard deviation sigma_sgd of the gradient noise", check=finite(nonnegative)
    )
    t_max: int = param(
        0, doc="support T_max of the Zames-Falb multiplier (0: none)", check=nonnegative
    )
    multiplier: str = param(
        "standard",
        doc="sign reading of the multiplier: `standard` (valid for every slope-restricted"
        " map) or `paper`",
        check=choice(*ftrl_socp.MULTIPLIERS),
    )
    n_uniform: int = param(500, doc="uniform frequency nodes of the SOCP", check=positive_integer)
    n_log: int = param(
        500, doc="frequency nodes log-spaced towards 0 (from eta mu / 100)", check=nonnegative
    )
    optimize_iterations: int = param(
        5,
        doc="alternations of the `optimized` mechanism (abs(B)^2 against the SOCP)",
        check=positive_integer,
    )
    solver: str = param(
        "CLARABEL", doc="cvxpy solver of the SOCPs", check=choice(*ftrl_socp.SOLVERS)
    )
    cross_check_kappas: list[float] = param(
        [],
        doc="condition numbers (added to the grid) where SGD and nu-FTRL are solved again"
        " with `cross_check_solver`, into `bound_cross_check` (NaN unless that solve"
        " converged; its status in `cross_check_status`)",
        check=_KAPPA,
    )
    cross_check_solver: str = param(
        "SCS", doc="solver of the cross-check", check=choice(*ftrl_socp.SOLVERS)
    )


def _kappas(P: FtrlSocpBoundParams) -> list[float]:
    if P.kappas is not None:
        return [float(k) for k in P.kappas]
    return list(np.geomspace(1.0, float(P.kappa_max), int(P.n_kappa)))


def _socp_params(cell: Mapping[str, Any]) -> FtrlSocpBoundParams:
    P = _params(FtrlSocpBoundParams, cell)
    if P.kappas is not None:
        _non_empty(P, "kappas")
    if float(P.eta) * float(P.L) > 1:
        raise ValueError(f"{P.kind}: eta * L must be <= 1; got eta={P.eta}, L={P.L}")
    return P


def check_socp_cell(cell: Mapping[str, Any]) -> None:
    """Validate an ``ftrl_socp_bound`` cell (the spec, ``eta L <= 1``, ``kappas`` not empty)."""
    _socp_params(cell)


def run_socp_bound(
    cell: Mapping[str, Any],
    *,
    trials: int,
    first_trial: int,
    seed: int,
    data: Dataset | None = None,
) -> pd.DataFrame:
    r"""Fig. 3 rows: :func:`dpreg.theory.ftrl_socp.socp_curve` over the κ grid.

    Keys, defaults and ranges: :class:`FtrlSocpBoundParams`. The κ grid is ``kappas``
    or ``n_kappa`` points log-spaced from 1 to ``kappa_max``; ``cross_check_kappas``
    (added to the grid) re-solves SGD and ν-FTRL there with ``cross_check_solver`` into
    ``bound_cross_check``, with the solver's status in ``cross_check_status``: a solve
    that did not converge (status other than ``optimal``, e.g. at κ = 1, where the
    infimum is not attained, after :data:`~dpreg.theory.ftrl_socp.SCS_MAX_ITERS`
    iterations of SCS) leaves ``bound_cross_check`` NaN; κ = 1 is checked by the closed
    form in ``exact``.
    """
    P = _socp_params(cell)
    kw = {
        "L": float(P.L),
        "eta": float(P.eta),
        "rho": float(P.rho),
        "clip": float(P.clip),
        "sigma_sgd": float(P.sigma_sgd),
        "t_max": int(P.t_max),
        "multiplier": P.multiplier,
        "n_uniform": int(P.n_uniform),
        "n_log": int(P.n_log),
    }
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # cvxpy's "solution may be inaccurate"; see status
        checks = [float(k) for k in P.cross_check_kappas]
        kappas = sorted(set(_kappas(P)) | set(checks))
        table = ftrl_socp.socp_curve(
            kappas,
            optimize_iterations=int(P.optimize_iterations),
            solver=P.solver,
            **kw,
        )
        table["bound_cross_check"] = math.nan
        table["cross_check_status"] = ""
        if checks:
            other = ftrl_socp.socp_curve(
                [float(k) for k in checks],
                mechanisms=("sgd", "nu_ftrl"),
                solver=P.cross_check_solver,
                **kw,
            )
            for _, r in other.iterrows():
                mask = np.isclose(table["kappa"], r["kappa"]) & (
                    table["mechanism"] == r["mechanism"]
                )
                # an unconverged solve is no check: its value is not reported (its status is)
                converged = r["status"] == ftrl_socp.CONVERGED
                table.loc[mask, "bound_cross_check"] = r["bound"] if converged else math.nan
                table.loc[mask, "cross_check_status"] = r["status"]
    return _repeat(table, trials, first_trial, seed)


def _figure_socp(table: pd.DataFrame, *, title: str | None = None) -> Any:
    from dpreg.plotting.choquettechoo2023 import plot_fig3

    return plot_fig3(table, title=title)


SOCP_BOUND = StudyKind(
    name="ftrl_socp_bound",
    run=run_socp_bound,
    summarise=summarise_first_trial,
    figure=_figure_socp,
    params=FtrlSocpBoundParams,
    check_cell=check_socp_cell,
)


# ----------------------------------------------------------------------- Fig. 4 (quoted)


@dataclass(frozen=True)
class FtrlQuotedParams(KindParams):
    """``ftrl_quoted`` takes no keys: its rows are the paper's numbers."""

    kind = "ftrl_quoted"


def run_quoted(
    cell: Mapping[str, Any],
    *,
    trials: int,
    first_trial: int,
    seed: int,
    data: Dataset | None = None,
) -> pd.DataFrame:
    """Return the paper's deep-learning numbers (:data:`QUOTED_RESULTS`), labelled quoted."""
    del cell  # no keys (FtrlQuotedParams)
    frame = pd.DataFrame(list(QUOTED_RESULTS))
    frame.insert(0, "status", "quoted from the paper, not reproduced")
    return _repeat(frame, trials, first_trial, seed)


def _figure_quoted(table: pd.DataFrame, *, title: str | None = None) -> Any:
    from dpreg.plotting.choquettechoo2023 import plot_quoted

    return plot_quoted(table, title=title)


QUOTED = StudyKind(
    name="ftrl_quoted",
    run=run_quoted,
    summarise=summarise_first_trial,
    figure=_figure_quoted,
    params=FtrlQuotedParams,
)
