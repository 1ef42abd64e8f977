r"""The ``varshney_diagnostics`` study kind: DP-AMBSSGD's adaptive clip step by step (E6).

Runs the same data streams and methods as ``varshney_sim`` (:mod:`dpreg.experiments.
varshney2022`, whose cell keys and parsing it shares) and records, per step, the clip
:math:`\zeta_t`, DP-STAT's :math:`\gamma_t` and stop index, the clip fraction and the
exact residual scale the clip should track (Lemma 3.11). The clip fraction, the residual
scale and the iterate's excess risk are computed from the data without noise: outside the
privacy guarantee (``dpreg.results.NONPRIVATE_DIAGNOSTICS``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dpreg.experiments.study_kind import StudyKind
from dpreg.experiments.varshney2022 import (
    _NOISE_STREAM,
    STREAM_METHODS,
    SimParams,
    _q,
    _run_stream,
    _setup,
    check_sim_cell,
)

__all__ = ["DIAGNOSTICS", "DiagnosticsParams", "run_diagnostics_cell", "summarise_diagnostics"]


@dataclass(frozen=True)
class DiagnosticsParams(SimParams):
    """Cell keys of ``varshney_diagnostics``: those of ``varshney_sim`` (stream methods only)."""

    kind = "varshney_diagnostics"


def run_diagnostics_cell(
    cell: Mapping[str, Any], *, trials: int, first_trial: int, seed: int, data: Any = None
) -> pd.DataFrame:
    """Run one chunk of ``varshney_diagnostics``: rows per (trial, method, sigma, eps, step)."""
    del data
    spec, lam, w_star, hp_by_sigma = _setup(cell)
    spec["methods"] = [m for m in spec["methods"] if m in STREAM_METHODS]
    trial_ids = list(range(first_trial, first_trial + trials))
    rng = np.random.default_rng([seed, _NOISE_STREAM])
    res, labels, _ = _run_stream(spec, lam, w_star, hp_by_sigma, trial_ids, seed, rng)
    st = res.steps
    T = spec["layout"].T
    hp0 = hp_by_sigma
    frames = []
    for r, (method, sigma, eps) in enumerate(labels):
        hp = hp0[sigma]
        scale = math.sqrt(hp.x_norm_sq) * hp.log_factor
        for k, trial in enumerate(trial_ids):
            frames.append(
                pd.DataFrame(
                    {
                        "trial": trial,
                        "method": method,
                        "sigma": sigma,
                        "epsilon": eps,
                        "step": np.arange(T),
                        "zeta": st["zeta"][k, r],
                        "gamma": st["gamma"][k, r],
                        "stop_index": st["stop_index"][k, r],
                        "no_break": st["no_break"][k, r],
                        "clip_fraction": st["clip_fraction"][k, r],
                        "residual_scale": st["residual_scale"][k, r],
                        "zeta_over_target": st["zeta"][k, r] / (scale * st["residual_scale"][k, r]),
                        "excess_risk_iterate": st["excess_risk_iterate"][k, r],
                    }
                )
            )
    frame = pd.concat(frames, ignore_index=True)
    frame["seed"] = np.uint64(seed)
    frame["n"] = spec["n"]
    frame["d"] = spec["d"]
    frame["kappa"] = spec["kappa"]
    frame["T"] = T
    return frame


def summarise_diagnostics(
    runs: pd.DataFrame, references: Sequence[Mapping[str, Any]] = ()
) -> pd.DataFrame:
    """Per (n, d, sigma, epsilon, method, step): median and 10-90% of each diagnostic."""
    del references
    keys = ["n", "d", "kappa", "sigma", "epsilon", "method", "step"]
    cols = ["zeta", "gamma", "stop_index", "clip_fraction", "residual_scale", "zeta_over_target"]
    rows = []
    for key, g in runs.groupby(keys, sort=True):
        row = dict(zip(keys, key, strict=True))
        for c in cols:
            v = g[c].astype(float).dropna()
            if len(v):
                row[f"{c}_median"] = _q(v, 0.5)
                row[f"{c}_q10"] = _q(v, 0.1)
                row[f"{c}_q90"] = _q(v, 0.9)
        row["no_break_fraction"] = float(g["no_break"].mean())
        row["trials"] = int(len(g))
        rows.append(row)
    return pd.DataFrame(rows)


def _figure_diag(table: pd.DataFrame, *, title: str | None = None) -> Any:
    from dpreg.plotting.varshney2022 import plot_diagnostics

    return plot_diagnostics(table, title=title)


DIAGNOSTICS = StudyKind(
    name="varshney_diagnostics",
    run=run_diagnostics_cell,
    summarise=summarise_diagnostics,
    figure=_figure_diag,
    params=DiagnosticsParams,
    check_cell=check_sim_cell,
)
