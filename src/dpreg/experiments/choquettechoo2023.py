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
    theory values beside them, and fitted log-log slopes next to the paper's.
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

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from dpreg.data.datasets import Dataset
from dpreg.estimators.ftrl import simulate_streaming_regression
from dpreg.estimators.ftrl_correlations import independent, nu_ftrl
from dpreg.experiments.study_kind import StudyKind
from dpreg.privacy.correlated import PARTICIPATION_SCHEMAS
from dpreg.theory import ftrl as theory
from dpreg.theory import ftrl_socp

__all__ = [
    "FIG2_PAPER_SLOPES",
    "QUOTED_RESULTS",
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


def _float(
    cell: Mapping[str, Any], key: str, default: float | None = None, *, positive: bool = True
) -> float:
    value = cell.get(key, default)
    if value is None or isinstance(value, bool):
        raise ValueError(f"{key} must be a number; got {value!r}")
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{key} must be a number; got {value!r}") from None
    if not math.isfinite(v) or (positive and v <= 0) or (not positive and v < 0):
        raise ValueError(
            f"{key} must be a finite {'positive' if positive else '>= 0'} number; got {value!r}"
        )
    return v


def _int(cell: Mapping[str, Any], key: str, default: int | None = None, minimum: int = 1) -> int:
    value = cell.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ValueError(f"{key} must be an integer >= {minimum}; got {value!r}")
    return int(value)


def _floats(cell: Mapping[str, Any], key: str, default: Sequence[float]) -> list[float]:
    values = cell.get(key, default)
    if not isinstance(values, list | tuple) or not values:
        raise ValueError(f"{key} must be a non-empty list of numbers; got {values!r}")
    return [_float({key: v}, key) for v in values]


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

MEAN_KEYS = frozenset({"etas", "eta_panels", "T"})


def check_mean_cell(cell: Mapping[str, Any]) -> None:
    """Validate an ``ftrl_mean_ratio`` cell."""
    etas = _floats(cell, "etas", [0.1])
    if any(e > 1 for e in etas):
        raise ValueError("etas must lie in (0, 1]")
    if not 0 < _float(cell, "eta_panels", 0.1) < 1:
        raise ValueError("eta_panels must lie in (0, 1)")
    _int(cell, "T", 30)


def run_mean_ratio(
    cell: Mapping[str, Any],
    *,
    trials: int,
    first_trial: int,
    seed: int,
    data: Dataset | None = None,
) -> pd.DataFrame:
    """Fig. 1 rows (:func:`dpreg.theory.ftrl.fig1_table`); keys ``etas``, ``eta_panels``, ``T``."""
    check_mean_cell(cell)
    table = theory.fig1_table(
        _floats(cell, "etas", [0.1]),
        eta_panels=_float(cell, "eta_panels", 0.1),
        T=_int(cell, "T", 30),
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
    required=frozenset({"etas"}),
    optional=MEAN_KEYS - {"etas"},
    check_cell=check_mean_cell,
)


# ----------------------------------------------------------------------- Tables 1, 2, 4

TABLES = ("table1", "table2", "table3", "table4")
TABLE_KEYS = frozenset(
    {
        "table",
        "d",
        "ds",
        "alpha",
        "eta",
        "families",
        "horizons",
        "a_lt1",
        "a_gt1",
        "rho",
        "T",
        "nu",
        "participations",
        "separation",
        "schema",
    }
)


def check_table_cell(cell: Mapping[str, Any]) -> None:
    """Validate an ``ftrl_theory_table`` cell."""
    if cell.get("table") not in TABLES:
        raise ValueError(f"table must be one of {TABLES}; got {cell.get('table')!r}")
    eta = _float(cell, "eta", 0.02)
    if eta >= 1:
        raise ValueError("eta must lie in (0, 1)")
    if cell["table"] == "table4":
        for fam in cell.get("families", theory.SPECTRUM_FAMILIES):
            if fam not in theory.SPECTRUM_FAMILIES:
                raise ValueError(f"families: unknown {fam!r}; known {theory.SPECTRUM_FAMILIES}")
        [_int({"d": d}, "d") for d in cell.get("ds", [16, 64, 256])]
        _float(cell, "a_lt1", 0.75)
        _float(cell, "a_gt1", 3.0)
    elif cell["table"] == "table3":
        k = _int(cell, "participations", 1)
        limit = 128 if k == 1 else 64
        if not 1 <= _int(cell, "T", 32) <= limit:
            raise ValueError(f"table3 needs T <= {limit} with participations={k} (ME is an SDP)")
        if k > 1:
            _int(cell, "separation", None)
        if cell.get("schema", "min_sep") not in PARTICIPATION_SCHEMAS:
            raise ValueError(f"schema must be one of {PARTICIPATION_SCHEMAS}")
        if cell.get("nu", "tuned") != "tuned" and _float(cell, "nu") >= 1:
            raise ValueError("nu must lie in (0, 1) or be 'tuned'")
    else:
        _int(cell, "d", 128)
        _float(cell, "alpha", 1.0)
        [_int({"horizons": h}, "horizons") for h in cell.get("horizons", [100, 1000, 10000])]


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
    k > 1) and ``schema`` (``min_sep`` or ``fixed_epoch``).
    """
    check_table_cell(cell)
    eta, rho = _float(cell, "eta", 0.02), _float(cell, "rho", 1.0)
    which = cell["table"]
    if which == "table3":
        from dpreg.theory.ftrl_table3 import table3

        nu = cell.get("nu", "tuned")
        k = _int(cell, "participations", 1)
        out = table3(
            _int(cell, "T", 32),
            nu=nu if nu == "tuned" else _float(cell, "nu"),
            participations=k,
            separation=_int(cell, "separation") if k > 1 else None,
            schema=cell.get("schema", "min_sep"),
        )
    elif which == "table4":
        out = theory.table4(
            [int(d) for d in cell.get("ds", [16, 64, 256])],
            eta,
            families=tuple(cell.get("families", theory.SPECTRUM_FAMILIES)),
            a_lt1=_float(cell, "a_lt1", 0.75),
            a_gt1=_float(cell, "a_gt1", 3.0),
            rho=rho,
        )
    else:
        d, alpha = _int(cell, "d", 128), _float(cell, "alpha", 1.0)
        lam = np.arange(1, d + 1, dtype=np.float64) ** -alpha
        if which == "table1":
            out = theory.table1(lam, eta, rho=rho)
        else:
            horizons = [int(h) for h in cell.get("horizons", [100, 1000, 10000])]
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
    required=frozenset({"table"}),
    optional=TABLE_KEYS - {"table"},
    check_cell=check_table_cell,
)


# ----------------------------------------------------------------------- Fig. 2

PANELS = ("d", "d_eff", "eta")
SIM_MECHANISMS = ("sgd", "nu_ftrl")
SIM_KEYS = frozenset(
    {
        "panel",
        "mechanism",
        "d",
        "alpha",
        "eta",
        "T",
        "time_constants",
        "T_min",
        "T_max",
        "nu",
        "rho",
        "clip",
        "sigma_sgd",
        "tail_fraction",
        "record_every",
    }
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
]


def _sim_spec(cell: Mapping[str, Any]) -> dict[str, Any]:
    panel = cell.get("panel")
    if panel not in PANELS:
        raise ValueError(f"panel must be one of {PANELS}; got {panel!r}")
    mech = cell.get("mechanism")
    if mech not in SIM_MECHANISMS:
        raise ValueError(f"mechanism must be one of {SIM_MECHANISMS}; got {mech!r}")
    d, alpha, eta = _int(cell, "d", 128), _float(cell, "alpha", 1.0), _float(cell, "eta", 0.02)
    lam = np.arange(1, d + 1, dtype=np.float64) ** -alpha
    r2, _ = theory.gaussian_kurtosis_constants(lam)
    if eta * r2 >= 1:
        raise ValueError(f"eta={eta:g} is unstable for this H: need eta < 1/R^2 = {1 / r2:.3g}")
    mu = float(lam.min())
    nu_value = cell.get("nu", "eta_mu")
    nu = eta * mu if nu_value == "eta_mu" else _float(cell, "nu", None)
    if not 0 < nu < 1:
        raise ValueError(f"nu must lie in (0, 1) (or be 'eta_mu'); got {nu_value!r}")
    if "T" in cell:
        T = _int(cell, "T")
    else:
        T = int(math.ceil(_float(cell, "time_constants", 20.0) / (eta * mu)))
        T = max(_int(cell, "T_min", 20000), min(T, _int(cell, "T_max", 2_000_000)))
    tail = _float(cell, "tail_fraction", 0.5)
    if tail > 1:
        raise ValueError("tail_fraction must lie in (0, 1]")
    return {
        "panel": panel,
        "mechanism": mech,
        "d": d,
        "alpha": alpha,
        "eta": eta,
        "nu": nu,
        "lam": lam,
        "mu": mu,
        "T": T,
        "rho": _float(cell, "rho", 1.0),
        "clip": _float(cell, "clip", 1.0),
        "sigma_sgd": _float(cell, "sigma_sgd", 0.0, positive=False),
        "tail_fraction": tail,
        "record_every": _int(cell, "record_every", 100),
    }


LIST_AXES = ("mechanism", "d", "alpha", "eta")
"""Keys that may hold a list inside one cell (expanded in one job, fewer jobs)."""


def _expand(cell: Mapping[str, Any]) -> list[dict[str, Any]]:
    axes = [k for k in LIST_AXES if isinstance(cell.get(k), list | tuple)]
    if not axes:
        return [dict(cell)]
    out = []
    for combo in itertools.product(*(cell[k] for k in axes)):
        sub = dict(cell)
        sub.update(zip(axes, combo, strict=True))
        out.append(sub)
    return out


def check_sim_cell(cell: Mapping[str, Any]) -> None:
    """Validate an ``ftrl_linreg_sim`` cell (every combination of its list-valued keys)."""
    for sub in _expand(cell):
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

    Keys: ``panel`` (``d``, ``d_eff``, ``eta``: the x-axis of the panel), ``mechanism``
    (``sgd``, ``nu_ftrl``), ``d`` (128), ``alpha`` (1), ``eta`` (0.02), ``nu``
    (``"eta_mu"``: :math:`\nu = \eta\lambda_{\min}`, the best reading in
    docs/notes/choquettechoo2023.md §4.1), ``T`` or ``time_constants`` (20;
    :math:`T = \lceil 20/(\eta\mu)\rceil` clipped to ``[T_min, T_max]``), ``rho`` (1),
    ``clip`` (1), ``sigma_sgd`` (0), ``tail_fraction`` (0.5), ``record_every`` (100).
    ``mechanism``, ``d``, ``alpha`` and ``eta`` may be lists: every combination runs in
    this job (sub-cell ``k`` draws from ``default_rng([seed, k])``); the seeds of one
    sub-cell are vectorised.

    Rows (one per trial and sub-cell): ``suboptimality`` (tail mean of
    :math:`F(\theta_t) - F^\star`), the exact LTI value ``theory_lti`` (= the C.18
    lower bound), ``theory_upper`` (C.15), the Theorem 2.2 rate ``theory_rate``,
    ``late_over_early`` (stationarity check) and the design.
    """
    parts = [
        _run_sim_subcell(sub, trials=trials, first_trial=first_trial, seed=seed, stream=k)
        for k, sub in enumerate(_expand(cell))
    ]
    return pd.concat(parts, ignore_index=True)


def _run_sim_subcell(
    cell: Mapping[str, Any], *, trials: int, first_trial: int, seed: int, stream: int
) -> pd.DataFrame:
    spec = _sim_spec(cell)
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
    )
    lam, eta = spec["lam"], spec["eta"]
    kw = {"rho": spec["rho"], "clip": spec["clip"], "sigma_sgd": spec["sigma_sgd"]}
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
        "theory_lti": theory.lti_suboptimality(corr, lam, eta, **kw),
        "theory_upper": theory.theorem_c15_upper(corr, lam, eta, **kw),
        "theory_rate": rates["sgd" if spec["mechanism"] == "sgd" else "nu_ftrl"],
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
    """Mean, SE and theory per cell; slopes per (panel, mechanism); FTRL/SGD ratio.

    Columns: the design, ``mean``, ``se`` (std / sqrt(runs)), ``runs``, ``theory_lti``,
    ``theory_upper``, ``theory_rate``, ``sim_over_lti``, ``late_over_early``;
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
    required=frozenset({"panel", "mechanism"}),
    optional=SIM_KEYS - {"panel", "mechanism"},
    check_cell=check_sim_cell,
)


# ----------------------------------------------------------------------- Fig. 3

SOCP_KEYS = frozenset(
    {
        "kappa_max",
        "n_kappa",
        "kappas",
        "L",
        "eta",
        "rho",
        "clip",
        "sigma_sgd",
        "t_max",
        "multiplier",
        "n_uniform",
        "n_log",
        "optimize_iterations",
        "solver",
        "cross_check_kappas",
        "cross_check_solver",
    }
)


def _kappas(cell: Mapping[str, Any]) -> list[float]:
    if "kappas" in cell:
        kappas = _floats(cell, "kappas", [1.0])
    else:
        kmax = _float(cell, "kappa_max", 1000.0)
        kappas = list(np.geomspace(1.0, kmax, _int(cell, "n_kappa", 20)))
    if any(k < 1 for k in kappas):
        raise ValueError("condition numbers kappa must be >= 1")
    return kappas


def check_socp_cell(cell: Mapping[str, Any]) -> None:
    """Validate an ``ftrl_socp_bound`` cell."""
    _kappas(cell)
    if cell.get("multiplier", "standard") not in ftrl_socp.MULTIPLIERS:
        raise ValueError(f"multiplier must be one of {ftrl_socp.MULTIPLIERS}")
    for key in ("solver", "cross_check_solver"):
        if cell.get(key, "CLARABEL") not in ftrl_socp.SOLVERS:
            raise ValueError(f"{key} must be one of {ftrl_socp.SOLVERS}")
    _int(cell, "t_max", 0, minimum=0)
    _int(cell, "n_uniform", 500)
    _int(cell, "n_log", 500, minimum=0)
    _int(cell, "optimize_iterations", 5)
    for kappa in cell.get("cross_check_kappas", []):
        if _float({"cross_check_kappas": kappa}, "cross_check_kappas") < 1:
            raise ValueError("cross_check_kappas must be >= 1 (condition numbers)")
    if _float(cell, "eta", 0.5) * _float(cell, "L", 1.0) > 1:
        raise ValueError("eta * L must be <= 1")


def run_socp_bound(
    cell: Mapping[str, Any],
    *,
    trials: int,
    first_trial: int,
    seed: int,
    data: Dataset | None = None,
) -> pd.DataFrame:
    r"""Fig. 3 rows: :func:`dpreg.theory.ftrl_socp.socp_curve` over the κ grid.

    Keys: ``kappas`` or ``kappa_max`` (1000) and ``n_kappa`` (20, log-spaced from 1),
    ``L`` (1), ``eta`` (0.5), ``rho`` (1), ``clip`` (1), ``sigma_sgd`` (0), ``t_max``
    (0), ``multiplier`` (standard), ``n_uniform`` / ``n_log`` (500 / 500 grid nodes),
    ``optimize_iterations`` (5), ``solver`` (CLARABEL); ``cross_check_kappas`` (added to
    the grid) re-solves SGD and ν-FTRL there with ``cross_check_solver`` (SCS) into
    ``bound_cross_check``.
    """
    check_socp_cell(cell)
    kw = {
        "L": _float(cell, "L", 1.0),
        "eta": _float(cell, "eta", 0.5),
        "rho": _float(cell, "rho", 1.0),
        "clip": _float(cell, "clip", 1.0),
        "sigma_sgd": _float(cell, "sigma_sgd", 0.0, positive=False),
        "t_max": _int(cell, "t_max", 0, minimum=0),
        "multiplier": cell.get("multiplier", "standard"),
        "n_uniform": _int(cell, "n_uniform", 500),
        "n_log": _int(cell, "n_log", 500, minimum=0),
    }
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # cvxpy's "solution may be inaccurate"; see status
        checks = [float(k) for k in cell.get("cross_check_kappas", [])]
        kappas = sorted(set(_kappas(cell)) | set(checks))
        table = ftrl_socp.socp_curve(
            kappas,
            optimize_iterations=_int(cell, "optimize_iterations", 5),
            solver=cell.get("solver", "CLARABEL"),
            **kw,
        )
        table["bound_cross_check"] = math.nan
        if checks:
            other = ftrl_socp.socp_curve(
                [float(k) for k in checks],
                mechanisms=("sgd", "nu_ftrl"),
                solver=cell.get("cross_check_solver", "SCS"),
                **kw,
            )
            for _, r in other.iterrows():
                mask = np.isclose(table["kappa"], r["kappa"]) & (
                    table["mechanism"] == r["mechanism"]
                )
                table.loc[mask, "bound_cross_check"] = r["bound"]
    return _repeat(table, trials, first_trial, seed)


def _figure_socp(table: pd.DataFrame, *, title: str | None = None) -> Any:
    from dpreg.plotting.choquettechoo2023 import plot_fig3

    return plot_fig3(table, title=title)


SOCP_BOUND = StudyKind(
    name="ftrl_socp_bound",
    run=run_socp_bound,
    summarise=summarise_first_trial,
    figure=_figure_socp,
    required=frozenset(),
    optional=SOCP_KEYS,
    check_cell=check_socp_cell,
)


# ----------------------------------------------------------------------- Fig. 4 (quoted)


def run_quoted(
    cell: Mapping[str, Any],
    *,
    trials: int,
    first_trial: int,
    seed: int,
    data: Dataset | None = None,
) -> pd.DataFrame:
    """Return the paper's deep-learning numbers (:data:`QUOTED_RESULTS`), labelled quoted."""
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
)
