r"""Lev et al. (2026) Table 2: per-dataset quantities, computed and set beside the paper.

Study kind ``lev_table2`` (one job per dataset, ``trials: 1``; nothing is random). For
the prepared training data ``(X, Y)`` (rows of norm at most 1, ``|y| <= 1``, so
:math:`C_X = C_Y = 1`) the run computes, as in docs/notes/lev2026.md §4.7 and §5.2:

* ``n``, ``d``; :math:`\lambda^X_{\min} = \lambda_{\min}(X^\top X)` (and
  :math:`\lambda^X_{\max}`); :math:`\lambda^{XY}_{\min} = \lambda_{\min}([X\,Y]^\top[X\,Y])`;
* :math:`L(\theta^*)/n` with the minimum-norm OLS (``lstsq``) and :math:`\|Y\|^2/n`;
* at each :math:`\varepsilon` (``epsilon`` may be a list), with :math:`\delta = 1/n^2` and
  :math:`\varrho = \delta/10`:

  - the closed forms of Table 1, :math:`\gamma_{\rm ASSP}`, :math:`\gamma_{\rm hess}`
    and :math:`\gamma_{\rm mix} = \sqrt{\max\{d,\log(1/\varrho)\}\log(1/\delta)}/\varepsilon`;
  - the **residual-dominance ratio** :math:`L(\theta^*)/(\gamma_{\rm mix}(1+C_Y^2))` (Table 2,
    column 6) with the closed-form :math:`\gamma_{\rm mix}`; for reference also the same
    ratio with the *numeric* Linear-Mixing level :func:`~dpreg.estimators.sketch.
    linear_mixing_gamma` at :math:`k = 2.5\max\{d, \log(2/\varrho)\}` (``*_numeric``);
  - the **no-clipping indicator** :math:`\sqrt{\kappa^X(\psi)}/(2\sqrt8-1)`,
    :math:`\psi = \max\{0, \gamma_{\rm IHM}-\lambda^X_{\min}\}`, with the numeric IHM
    mixing level :func:`~dpreg.estimators.ihm.ihm_gamma` (T, :math:`k = 6\max\{d,
    \log(4T/\varrho)\}`); Theorem 1's condition holds when it is below 1;
  - the regime flags of Table 1 / docs/notes/lev2026.md §4.7:
    :math:`\lambda^X_{\min}\ge\gamma_{\rm ASSP}`, :math:`\lambda^X_{\min}\ge\gamma_{\rm hess}`,
    :math:`\lambda^{XY}_{\min}\ge\gamma_{\rm mix}(1+C_Y^2)`.

The caption of Table 2 says :math:`\varepsilon = 0.65`, but its residual-ratio column
matches :math:`\varepsilon \approx 0.75` and its kappa column 0.63--0.65
(docs/notes/lev2026.md §5.2, §8 item 13): the study evaluates every listed epsilon and the
summary sets each beside the single printed value.

The paper's values are read from the package file ``lev2026_table2_paper.csv`` (a
byte-identical copy of ``data/lev2026_table2_paper.csv``): one header comment line, then
the 33 rows with the columns as printed and the values as **printed strings**; ``<1e-3``
is kept verbatim and parsed by :func:`load_paper_table2` to ``NaN`` in the numeric
column plus ``True`` in a ``<column>_below_1e-3`` flag.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np
import pandas as pd

from dpreg.data.datasets import Dataset
from dpreg.data.lev2026 import LEV2026_DATASETS
from dpreg.estimators.ihm import ihm_gamma, ihm_sketch_size
from dpreg.estimators.sketch import default_sketch_size, linear_mixing_gamma
from dpreg.experiments.params import (
    KindParams,
    param,
    positive,
    positive_finite,
    positive_integer,
)
from dpreg.experiments.study_kind import StudyKind

__all__ = [
    "BELOW",
    "KAPPA_DENOMINATOR",
    "PAPER_COLUMNS",
    "TABLE2",
    "Table2Params",
    "dataset_quantities",
    "gamma_assp",
    "gamma_hess",
    "gamma_mix",
    "load_paper_table2",
    "privacy_quantities",
    "run_table2_cell",
    "summarise_table2",
]

#: The printed value the paper uses for small entries.
BELOW = "<1e-3"
#: :math:`2\sqrt8 - 1`, the Theorem 1 no-clipping threshold on :math:`\sqrt{\kappa}`.
KAPPA_DENOMINATOR = 2.0 * math.sqrt(8.0) - 1.0
#: Numeric columns of the paper's CSV, in printed order.
PAPER_COLUMNS = (
    "n",
    "d",
    "lambda_min_X",
    "lambda_min_XY",
    "L_over_gamma_mix_1_plus_CY2",
    "L_over_n",
    "Y_sq_over_n",
    "sqrt_kappa_over_2sqrt8_minus_1",
)
_PAPER_FILE = "lev2026_table2_paper.csv"
_TITLE_TO_NAME = {info.title: name for name, info in LEV2026_DATASETS.items()}


# ------------------------------------------------------------------------ paper values


def load_paper_table2() -> pd.DataFrame:
    """Return the paper's Table 2 (33 rows), indexed by registry name (``lev_<key>``).

    Columns: ``title`` (as printed), the numeric :data:`PAPER_COLUMNS` (``NaN`` where the
    paper prints ``<1e-3``), ``<column>_printed`` (the printed string) and
    ``<column>_below_1e-3`` (bool).
    """
    text = resources.files("dpreg.experiments").joinpath(_PAPER_FILE).read_text("utf-8")
    raw = pd.read_csv(io.StringIO(text), comment="#", dtype=str, keep_default_na=False)
    out = pd.DataFrame({"title": raw["dataset"]})
    for col in PAPER_COLUMNS:
        printed = raw[col].str.strip()
        below = printed == BELOW
        out[col] = pd.to_numeric(printed.where(~below), errors="raise")
        out[f"{col}_printed"] = printed
        out[f"{col}_below_1e-3"] = below
    out.index = pd.Index([_TITLE_TO_NAME[t] for t in raw["dataset"]], name="dataset")
    return out


# --------------------------------------------------------------------- closed forms


def _logs(delta: float, failure_prob: float) -> tuple[float, float]:
    return math.log(1.0 / delta), math.log(1.0 / failure_prob)


def gamma_assp(epsilon: float, delta: float, failure_prob: float, d: int) -> float:
    r"""Return :math:`\gamma_{\rm ASSP}=\sqrt{d\log(d^2/\varrho)\log(1/\delta)}/\varepsilon`."""
    log_inv_delta, _ = _logs(delta, failure_prob)
    return math.sqrt(d * math.log(d * d / failure_prob) * log_inv_delta) / epsilon


def gamma_hess(epsilon: float, delta: float, failure_prob: float, d: int, T: int) -> float:
    r""":math:`\gamma_{\rm hess} = \sqrt{T\max\{d,\log(T/\varrho)\}\log(1/\delta)}/\varepsilon`."""
    log_inv_delta, _ = _logs(delta, failure_prob)
    return math.sqrt(T * max(d, math.log(T / failure_prob)) * log_inv_delta) / epsilon


def gamma_mix(epsilon: float, delta: float, failure_prob: float, d: int) -> float:
    r""":math:`\gamma_{\rm mix} = \sqrt{\max\{d,\log(1/\varrho)\}\log(1/\delta)}/\varepsilon`."""
    log_inv_delta, log_inv_rho = _logs(delta, failure_prob)
    return math.sqrt(max(d, log_inv_rho) * log_inv_delta) / epsilon


# ------------------------------------------------------------------------ quantities


def dataset_quantities(X: np.ndarray, y: np.ndarray) -> dict[str, float]:
    r"""Return the budget-free columns: n, d, eigenvalues, :math:`L(\theta^*)`, norms.

    Eigenvalues by ``eigvalsh`` of the Gram matrices (docs/notes/lev2026.md §8 item 22);
    :math:`\theta^*` is the minimum-norm least-squares solution (``lstsq``).
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n, d = X.shape
    eig_x = np.linalg.eigvalsh(X.T @ X)
    Z = np.column_stack([X, y])
    eig_xy = np.linalg.eigvalsh(Z.T @ Z)
    theta = np.linalg.lstsq(X, y, rcond=None)[0]
    resid = y - X @ theta
    loss = float(resid @ resid)
    return {
        "n": int(n),
        "d": int(d),
        "lambda_min_X": float(eig_x[0]),
        "lambda_max_X": float(eig_x[-1]),
        "lambda_min_XY": float(eig_xy[0]),
        "L": loss,
        "L_over_n": loss / n,
        "Y_sq_over_n": float(y @ y) / n,
        "theta_norm": float(np.linalg.norm(theta)),
    }


def privacy_quantities(
    q: Mapping[str, float], *, epsilon: float, T: int = 3, C_Y: float = 1.0
) -> dict[str, Any]:
    r"""Return the budget-dependent columns at one epsilon (from :func:`dataset_quantities`).

    :math:`\delta = 1/n^2`, :math:`\varrho = \delta/10` (Lev et al. 2026, §5).
    """
    n, d = int(q["n"]), int(q["d"])
    delta = 1.0 / float(n) ** 2
    rho = delta / 10.0
    g_assp = gamma_assp(epsilon, delta, rho, d)
    g_hess = gamma_hess(epsilon, delta, rho, d, T)
    g_mix = gamma_mix(epsilon, delta, rho, d)
    k_ihm = ihm_sketch_size(d, T, rho)
    g_ihm = ihm_gamma(epsilon, delta, k_ihm, T)
    k_mix = default_sketch_size(d, rho)
    g_mix_num = linear_mixing_gamma(epsilon, k_mix, delta)
    scale = 1.0 + C_Y**2
    psi = max(0.0, g_ihm - q["lambda_min_X"])
    kappa = (q["lambda_max_X"] + psi) / (q["lambda_min_X"] + psi)
    return {
        "epsilon": float(epsilon),
        "delta": delta,
        "failure_prob": rho,
        "T": int(T),
        "C_Y": float(C_Y),
        "gamma_assp": g_assp,
        "gamma_hess": g_hess,
        "gamma_mix": g_mix,
        "gamma_assp_over_mix": g_assp / g_mix,
        "gamma_hess_over_mix": g_hess / g_mix,
        "k_ihm": k_ihm,
        "gamma_ihm": g_ihm,
        "k_linmix": k_mix,
        "gamma_mix_numeric": g_mix_num,
        "resid_ratio": q["L"] / (g_mix * scale),
        "resid_ratio_numeric": q["L"] / (g_mix_num * scale),
        "psi": psi,
        "kappa": kappa,
        "kappa_indicator": math.sqrt(kappa) / KAPPA_DENOMINATOR,
        "lambda_X_ge_gamma_assp": bool(q["lambda_min_X"] >= g_assp),
        "lambda_X_ge_gamma_hess": bool(q["lambda_min_X"] >= g_hess),
        "lambda_XY_ge_gamma_mix_scaled": bool(q["lambda_min_XY"] >= g_mix * scale),
    }


# ------------------------------------------------------------------------- the kind


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else [value]


@dataclass(frozen=True)
class Table2Params(KindParams):
    """Cell keys of the ``lev_table2`` kind (Table 2's per-dataset quantities)."""

    kind = "lev_table2"
    dataset: str = param(doc="a dataset declared under `datasets` (prepared, bounded rows)")
    epsilon: float | list[float] = param(
        doc="the epsilon(s) at which the privacy quantities are evaluated (delta = 1/n^2)",
        check=positive_finite,
    )
    T: int = param(
        3, doc="IHM's iteration count T in its mixing level gamma", check=positive_integer
    )
    C_Y: float = param(1.0, doc="the public response bound C_Y of Table 1", check=positive)


def run_table2_cell(
    cell: Mapping[str, Any], *, trials: int, first_trial: int, seed: int, data: Dataset | None
) -> pd.DataFrame:
    """Table 2's quantities for the cell's dataset, one row per epsilon (per trial).

    Deterministic: every trial of the chunk gets the same rows (use ``trials: 1``).
    """
    if data is None:
        raise ValueError("a lev_table2 cell needs a dataset")
    P = Table2Params.from_cell(cell)
    q = dataset_quantities(data.X, data.y)
    T = int(P.T)
    C_Y = float(P.C_Y)
    per_eps = [privacy_quantities(q, epsilon=float(e), T=T, C_Y=C_Y) for e in _as_list(P.epsilon)]
    rows = [
        {"trial": t, "seed": seed, "dataset": P.dataset, **q, **p}
        for t in range(first_trial, first_trial + trials)
        for p in per_eps
    ]
    frame = pd.DataFrame(rows)
    frame["trial"] = frame["trial"].astype(np.int64)
    frame["seed"] = frame["seed"].astype(np.uint64)
    return frame


def _eps_label(eps: float) -> str:
    return f"eps{eps:g}"


def _rel(ours: pd.Series, paper: pd.Series) -> pd.Series:
    return ours / paper - 1.0


def summarise_table2(
    runs: pd.DataFrame, references: Sequence[Mapping[str, Any]] = ()
) -> pd.DataFrame:
    """One row per dataset: ours beside the paper's Table 2 with relative differences.

    For each compared quantity ``q``: ``q`` (ours), ``q_paper`` (NaN where the paper
    prints ``<1e-3``), ``q_paper_printed``, ``q_rel_diff`` (ours / paper - 1) and, for the
    eigenvalues, ``q_below_1e-3_agrees`` (paper prints ``<1e-3`` and ours is below 1e-3;
    ``NaN`` where the paper prints a number). The epsilon-dependent columns are
    ``resid_ratio_eps<e>`` / ``kappa_indicator_eps<e>`` for every epsilon run, each with
    its ``_rel_diff`` against the single printed column. ``references`` is unused.
    """
    del references
    runs = runs.loc[runs["trial"] == runs.groupby("dataset")["trial"].transform("min")]
    paper = load_paper_table2()
    static = ["n", "d", "lambda_min_X", "lambda_min_XY", "L_over_n", "Y_sq_over_n"]
    base = runs.groupby("dataset", sort=True)[[*static, "lambda_max_X", "theta_norm"]].first()
    unknown = set(base.index) - set(paper.index)
    if unknown:
        raise ValueError(f"datasets not in Table 2: {sorted(unknown)}")
    table = pd.DataFrame(index=base.index)
    table["title"] = paper.loc[base.index, "title"]
    for col in static:
        table[col] = base[col]
        table[f"{col}_paper"] = paper.loc[base.index, col]
        table[f"{col}_paper_printed"] = paper.loc[base.index, f"{col}_printed"]
        table[f"{col}_rel_diff"] = _rel(table[col], table[f"{col}_paper"])
        if col.startswith("lambda"):
            below = paper.loc[base.index, f"{col}_below_1e-3"]
            table[f"{col}_below_1e-3_agrees"] = (table[col] < 1e-3).where(below)
    table["lambda_max_X"] = base["lambda_max_X"]
    table["theta_norm"] = base["theta_norm"]
    paper_cols = {
        "resid_ratio": "L_over_gamma_mix_1_plus_CY2",
        "kappa_indicator": "sqrt_kappa_over_2sqrt8_minus_1",
    }
    for ours, pcol in paper_cols.items():
        table[f"{ours}_paper"] = paper.loc[base.index, pcol]
        table[f"{ours}_paper_printed"] = paper.loc[base.index, f"{pcol}_printed"]
    flags = [
        "lambda_X_ge_gamma_assp",
        "lambda_X_ge_gamma_hess",
        "lambda_XY_ge_gamma_mix_scaled",
    ]
    per_eps = ["resid_ratio", "resid_ratio_numeric", "kappa_indicator", "gamma_ihm", "gamma_mix"]
    for eps, group in runs.groupby("epsilon", sort=True):
        g = group.set_index("dataset").reindex(base.index)
        lab = _eps_label(float(eps))
        for col in per_eps + flags:
            table[f"{col}_{lab}"] = g[col]
        for ours in paper_cols:
            table[f"{ours}_{lab}_rel_diff"] = _rel(g[ours], table[f"{ours}_paper"])
    table["T"] = int(runs["T"].iloc[0])
    return table.reset_index()


def figure_table2(table: pd.DataFrame, *, title: str | None = None) -> Any:
    """Draw Table 2 against the paper (:func:`dpreg.plotting.lev2026.figure_table2`)."""
    from dpreg.plotting import lev2026 as plots

    return plots.figure_table2(table, title=title)


TABLE2 = StudyKind(
    name="lev_table2",
    run=run_table2_cell,
    summarise=summarise_table2,
    figure=figure_table2,
    params=Table2Params,
)
