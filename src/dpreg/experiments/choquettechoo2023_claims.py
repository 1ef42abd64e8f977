"""Checks of Choquette-Choo et al. (2023)'s claims on the pipeline's tables.

Studies are found by kind-specific columns (any study name works), so the smoke and
paper-scale configs share the checks. Criteria:

* Fig. 1: R(eta) within 2e-3 of the values in docs/notes/choquettechoo2023.md §3.2,
  increasing, <= 1; the caption's "orders of magnitude better as eta -> 1" is checked
  literally (R(1) << 1) and fails (R(1) = 1: at eta = 1 the optimal correlation is
  independent noise).
* Tables 1/4: nu-FTRL below Noisy-SGD everywhere; its ratio to SGD falls with d for
  every family with d_eff = o(d).
* Fig. 2: each fitted slope within 0.2 of the paper's (where reported; studies started
  away from the optimum, ``initial_distance > 0``, are finite-time and skipped), and the
  FTRL/SGD ratio below 0.1 at the default cell; ``fig2_slopes`` lists the slopes with
  the paper's values.
* App. D (finite time): every simulated tail mean lies below Theorem D.11's bound
  (mean - 2 SE <= bound); ν-FTRL's bound below Noisy-SGD's in every matched cell.
* Fig. 4, scaled-down analogue on digits (``ftrl_digits``): at every epsilon the mean
  paired difference of test accuracy, nu-DP-FTRL minus DP-SGD (same trial), is not
  significantly negative: difference + 2 SE >= 0 (SE of the paired differences). The
  value is the difference; its z is in the criterion text. When the study ran amplified
  DP-SGD (``sgd_amplified``, the paper's baseline), the same test for nu-DP-FTRL and ME
  against it (the paper: DP-SGD with amplification ahead at small epsilon).
* App. D.2-D.3 (``ftrl_iterate_bounds``): in every cell the fraction of trials violating
  each high-probability bound (Theorem D.4, Propositions D.6-D.8, probability 1 - p) is
  at most p + 3 binomial SE; the simulated E||theta_{T-1} - theta*||^2 of the noise
  process plus 3 SE lies below Lemma D.12's trace bound and within 4 SE of the exact
  value.
* Fig. 3: bounds equal the exact quadratic value at kappa = 1 (rel. 2e-3); SGD >=
  nu-FTRL >= Optimized at every kappa; the nu-FTRL/SGD ratio falls with kappa.
* Multi-epoch training on data (``ftrl_epochs``; not a claim of the paper, its App. G.1
  setting, deviation 16): per (dataset, method, epsilon), more epochs help at a fixed
  budget when the score at the largest E is below the one-epoch score with z < -2
  (independent runs; the value is the relative change).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd

from dpreg.experiments.choquettechoo2023 import FIG2_PAPER_SLOPES
from dpreg.experiments.claim_rows import CLAIM_COLUMNS, claim_row
from dpreg.theory.ftrl_table3 import BANDED_VARIANT

FIG1_REFERENCE = {1e-4: 0.00258, 1e-3: 0.0164, 1e-2: 0.0909, 0.1: 0.400, 0.5: 0.864}


def _fig1(name: str, t: pd.DataFrame) -> list[dict[str, object]]:
    r = t[t["panel"] == "ratio"].sort_values("eta")
    rows = []
    for eta, ref in FIG1_REFERENCE.items():
        hit = r[np.isclose(r["eta"], eta)]
        if len(hit):
            v = float(hit["value"].iloc[0])
            rows.append(
                claim_row(
                    f"R(eta={eta:g}) equals the closed form",
                    "Fig. 1, Thm 2.1",
                    name,
                    "F(beta*)/F(sgd)",
                    v,
                    f"|R - {ref}| < 2e-3",
                    abs(v - ref) < 2e-3,
                )
            )
    if len(r) >= 2:
        inc = bool(np.all(np.diff(r["value"]) > 0) and r["value"].max() <= 1 + 1e-12)
        rows.append(
            claim_row(
                "optimal correlated noise never worse than SGD, gain grows as eta -> 0",
                "Fig. 1, Thm 2.1",
                name,
                "max R",
                r["value"].max(),
                "R increasing in eta and <= 1",
                inc,
            )
        )
        top = r.iloc[-1]
        if top["eta"] >= 1.0 - 1e-12:
            rows.append(
                claim_row(
                    "caption: orders of magnitude better as eta -> 1",
                    "Fig. 1 caption",
                    name,
                    "R(1)",
                    top["value"],
                    "R(1) < 0.1",
                    bool(top["value"] < 0.1),
                )
            )
    return rows


def _tables(name: str, t: pd.DataFrame) -> list[dict[str, object]]:
    rows = []
    which = str(t["table"].iloc[0])
    if which == "table4":
        rows.append(
            claim_row(
                "Noisy-FTRL always better (Table 4)",
                "Table 4",
                name,
                "max FTRL/SGD ratio",
                t["ratio"].max(),
                "< 1",
                bool(t["ratio"].max() < 1),
            )
        )
        for fam, g in t.groupby("family"):
            if fam == "flat" or g["d"].nunique() < 2:
                continue
            g = g.sort_values("d")
            ok = bool(np.all(np.diff(g["ratio"]) < 0))
            rows.append(
                claim_row(
                    f"better at large d ({fam})",
                    "Table 4",
                    name,
                    "ratio at largest d",
                    g["ratio"].iloc[-1],
                    "ratio decreasing in d",
                    ok,
                )
            )
    elif which == "table1":
        s = t.set_index("algorithm")
        v = s.loc["nu_noisy_ftrl", "value"] / s.loc["noisy_sgd", "value"]
        rows.append(
            claim_row(
                "nu-Noisy-FTRL beats Noisy-SGD (Table 1)",
                "Table 1",
                name,
                "FTRL/SGD",
                v,
                "< 1",
                bool(v < 1),
            )
        )
        ok = (
            s.loc["lower_bound", "value"]
            <= s.loc["optimal_correlation", "value"]
            <= s.loc["nu_noisy_ftrl", "value"]
        )
        rows.append(
            claim_row(
                "lower bound <= optimum <= nu-FTRL",
                "Table 1, Thm 2.2",
                name,
                "nu-FTRL / optimum",
                s.loc["nu_noisy_ftrl", "value"] / s.loc["optimal_correlation", "value"],
                "ordered",
                bool(ok),
            )
        )
    elif which == "table3":
        built = t[t["built"].astype(bool)].set_index("variant")["total_error"]
        best = float(built.min())
        banded = BANDED_VARIANT in built.index
        wl_all = str(t["workload"].iloc[0]) if "workload" in t.columns else "prefix"
        me = float(built.get(BANDED_VARIANT if banded else "Multi-Epoch (ME)", math.nan))
        rows.append(
            claim_row(
                "banded ME (an upper bound on the min-sep ME optimum) has the least error (3)"
                " among the built rows"
                if banded
                else (
                    "ME (optimal factorization) has the least prefix-sum error"
                    if wl_all == "prefix"
                    else f"ME (optimal factorization) has the least error on its workload {wl_all}"
                ),
                "Table 3 / §4",
                name,
                "ME / best built",
                me / best,
                "== 1",
                bool(abs(me / best - 1) < 1e-6),
            )
        )
        me_row = t[t["variant"] == "Multi-Epoch (ME)"]
        if "me_relative_gap" in t.columns and len(me_row):
            gap = float(me_row["me_relative_gap"].iloc[0])
            wl = me_row["workload"].iloc[0] if "workload" in me_row else "prefix"
            tol = float(me_row["me_gap_tol"].iloc[0]) if "me_gap_tol" in me_row else 1e-4
            if not math.isnan(gap):
                # the job fails before this when gap > me_gap_tol; recorded for the claim file
                rows.append(
                    claim_row(
                        f"ME is certified optimal by its dual bound (workload {wl})",
                        "Table 3 / deviation 19",
                        name,
                        "certified relative gap",
                        gap,
                        f"<= me_gap_tol ({tol:g})",
                        bool(gap <= tol),
                    )
                )
        anytime = t[t["anytime"].astype(bool) & t["built"].astype(bool)].set_index("variant")
        nu_best = bool(anytime["total_error"].idxmin() == "nu-DP-FTRL")
        rows.append(
            claim_row(
                "nu-DP-FTRL has the least error (3) among anytime mechanisms",
                "Table 3, Fig. 4 caption (proxy)",
                name,
                "nu-DP-FTRL / banded ME" if banded else "nu-DP-FTRL / ME",
                anytime.loc["nu-DP-FTRL", "total_error"] / me,
                "smallest error among anytime variants",
                nu_best,
            )
        )
    else:
        s = t.set_index("mechanism")
        inf_ok = math.isinf(s.loc["optimal_cc", "F_inf"]) and math.isinf(s.loc["anti_pgd", "F_inf"])
        rows.append(
            claim_row(
                "nu = 0 and undamped anti-PGD have F_inf = inf",
                "Table 2",
                name,
                "F_inf(optimal_cc)",
                s.loc["optimal_cc", "F_inf"],
                "inf",
                inf_ok,
            )
        )
        f = s["F_inf"]
        ok = bool(f["nu_ftrl"] < f["damped_anti_pgd"] < f["sgd"])
        rows.append(
            claim_row(
                "damped anti-PGD between nu-FTRL and SGD",
                "Table 2, Prop. C.24",
                name,
                "F(damped)/F(sgd)",
                f["damped_anti_pgd"] / f["sgd"],
                "nu-FTRL < damped < SGD",
                ok,
            )
        )
    return rows


def fig2_slope_table(tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Fitted slopes of every Fig. 2 panel next to the paper's (one row per panel x mech)."""
    rows = []
    for name, t in tables.items():
        if "slope_sim" not in t.columns:
            continue
        if "initial_distance" in t.columns and bool((t["initial_distance"] > 0).any()):
            continue  # the caption's slopes are of F_inf from theta_0 = theta*, not finite T
        for (panel, mech), g in t.groupby(["panel", "mechanism"]):
            rows.append(
                {
                    "study": name,
                    "panel": panel,
                    "mechanism": mech,
                    "slope_sim": g["slope_sim"].iloc[0],
                    "slope_lti": g["slope_lti"].iloc[0],
                    "slope_rate": g["slope_rate"].iloc[0],
                    "slope_paper": FIG2_PAPER_SLOPES.get((panel, mech), math.nan),
                    "cells": len(g),
                }
            )
        default = t[
            (t["mechanism"] == "nu_ftrl")
            & np.isclose(t["eta"], 0.02)
            & (t["d"] == 128)
            & np.isclose(t["alpha"], 1.0)
        ]
        if len(default):
            r = default.iloc[0]
            rows.append(
                {
                    "study": name,
                    "panel": "ratio FTRL/SGD at d=128, eta=0.02",
                    "mechanism": "nu_ftrl",
                    "slope_sim": r["ratio_to_sgd_sim"],
                    "slope_lti": r["ratio_to_sgd_lti"],
                    "slope_rate": math.nan,
                    "slope_paper": math.nan,
                    "cells": 1,
                }
            )
    return pd.DataFrame(rows)


def _fig2(slopes: pd.DataFrame) -> list[dict[str, object]]:
    rows = []
    for _, r in slopes.iterrows():
        if r["panel"].startswith("ratio"):
            rows.append(
                claim_row(
                    "nu-Noisy-FTRL far below Noisy-SGD at the default",
                    "Fig. 2 (docs/notes/choquettechoo2023.md §4.1: ~0.014)",
                    r["study"],
                    "FTRL/SGD (sim)",
                    r["slope_sim"],
                    "< 0.1",
                    bool(r["slope_sim"] < 0.1),
                )
            )
        elif not math.isnan(r["slope_paper"]) and r["cells"] >= 2:
            diff = abs(r["slope_sim"] - r["slope_paper"])
            rows.append(
                claim_row(
                    f"slope of {r['mechanism']} vs {r['panel']}",
                    "Fig. 2 caption",
                    r["study"],
                    "fitted slope (sim)",
                    r["slope_sim"],
                    f"within 0.2 of {r['slope_paper']:.2f}",
                    bool(diff <= 0.2),
                )
            )
    return rows


def _finite_time(name: str, t: pd.DataFrame) -> list[dict[str, object]]:
    """Theorem D.11 against the simulations (any ``ftrl_linreg_sim`` table)."""
    rows = []
    ok = t.dropna(subset=["bound_d11", "mean"])
    if len(ok):
        below = (ok["mean"] - 2.0 * ok["se"]) <= ok["bound_d11"]
        rows.append(
            claim_row(
                "simulated error below the finite-time bound in every cell",
                "Thm D.11 (with Thm C.15's F_inf bound)",
                name,
                "max sim / bound",
                float((ok["mean"] / ok["bound_d11"]).max()),
                "mean - 2 SE <= bound in every cell",
                bool(below.all()),
            )
        )
    match = ["panel", "d", "alpha", "eta", "initial_distance"]
    match = [k for k in match if k in t.columns]
    p = t.pivot_table(index=match, columns="mechanism", values="bound_d11")
    if {"sgd", "nu_ftrl"} <= set(p.columns) and len(p.dropna()):
        p = p.dropna(subset=["sgd", "nu_ftrl"])
        ratio = p["nu_ftrl"] / p["sgd"]
        rows.append(
            claim_row(
                "nu-DP-FTRL's finite-time bound below DP-SGD's",
                "§2.3, Thm D.11 / Cor. D.14-D.15",
                name,
                "max bound ratio FTRL/SGD",
                float(ratio.max()),
                "< 1 in every matched cell (exact)",
                bool((ratio < 1).all()),
            )
        )
    return rows


def _fig3(name: str, t: pd.DataFrame) -> list[dict[str, object]]:
    rows = []
    ex = t.dropna(subset=["exact"])
    if len(ex):
        err = float(np.max(np.abs(ex["bound"] / ex["exact"] - 1)))
        rows.append(
            claim_row(
                "bound equals the exact quadratic value at kappa = 1",
                "Fig. 3 / Thm 3.1",
                name,
                "max rel. error",
                err,
                "< 2e-3",
                bool(err < 2e-3),
            )
        )
    p = t.pivot_table(index="kappa", columns="mechanism", values="bound")
    if {"sgd", "nu_ftrl", "optimized"} <= set(p.columns):
        ok = bool(
            np.all(p["sgd"] >= p["nu_ftrl"] * (1 - 1e-4))
            and np.all(p["nu_ftrl"] >= p["optimized"] * (1 - 1e-4))
        )
        rows.append(
            claim_row(
                "SGD >= nu-FTRL >= Optimized at every kappa",
                "Fig. 3",
                name,
                "Opt/SGD at largest kappa",
                p["optimized"].iloc[-1] / p["sgd"].iloc[-1],
                "ordered",
                ok,
            )
        )
        ratio = (p["nu_ftrl"] / p["sgd"]).to_numpy()
        rows.append(
            claim_row(
                "gain of correlated noise grows with kappa",
                "Fig. 3",
                name,
                "nu-FTRL/SGD at largest kappa",
                ratio[-1],
                "ratio non-increasing in kappa",
                bool(np.all(np.diff(ratio) <= 1e-6)),
            )
        )
    return rows


_FIG4_LABELS = {
    "sgd": "DP-SGD",
    "sgd_amplified": "amplified DP-SGD",
    "nu_ftrl": "nu-DP-FTRL",
    "me": "ME",
}


def _fig4_digits(name: str, t: pd.DataFrame) -> list[dict[str, object]]:
    rows = []
    pairs = [("nu_ftrl", "sgd")]
    if "diff_vs_sgd_amplified" in t.columns:
        pairs += [("nu_ftrl", "sgd_amplified"), ("me", "sgd_amplified")]
    for method, reference in pairs:
        diff_col = f"diff_vs_{reference}"
        for _, r in t[t["method"] == method].sort_values("epsilon").iterrows():
            diff, se = float(r[diff_col]), float(r[f"{diff_col}_se"])
            evaluable = int(r["runs"]) >= 2 and math.isfinite(se)
            what, ref = _FIG4_LABELS[method], _FIG4_LABELS[reference]
            z = diff / se if se > 0 else math.nan
            rows.append(
                claim_row(
                    f"{what} test accuracy >= {ref}'s at eps={r['epsilon']:g} (digits analogue)",
                    "Fig. 4 / §4 (scaled-down analogue: logistic regression on digits)",
                    name,
                    f"mean paired accuracy difference {what} - {ref}",
                    diff,
                    f"difference + 2 SE >= 0 (SE {se:.3g}, z {z:.2f})",
                    bool(diff + 2.0 * se >= 0.0) if evaluable else None,
                )
            )
    return rows


def _iterate_bounds(name: str, t: pd.DataFrame) -> list[dict[str, object]]:
    rows = []
    for _, r in t.iterrows():
        where = f"{r['mechanism']}, d={int(r['d'])}"
        if r["type"] == "high_probability":
            vf, limit = float(r["violation_fraction"]), float(r["violation_limit"])
            rows.append(
                claim_row(
                    f"{r['label']} holds with probability 1 - p ({where})",
                    "App. D.2, Thm D.4 / Props D.6-D.8",
                    name,
                    "fraction of trials violating the bound",
                    vf,
                    f"<= p + 3 binomial SE = {limit:.4g} (p = {float(r['p']):g})",
                    vf <= limit,
                )
            )
            continue
        mean, se = float(r["mean"]), float(r["se"])
        bound, exact = float(r["bound_value"]), float(r["exact"])
        evaluable = math.isfinite(se)
        rows.append(
            claim_row(
                f"simulated Tr S_t below Lemma D.12's trace bound ({where})",
                "App. D.3, Lemma D.12",
                name,
                "simulated mean / bound",
                mean / bound,
                f"mean + 3 SE <= bound = {bound:.4g}",
                bool(mean + 3.0 * se <= bound) if evaluable else None,
            )
        )
        rows.append(
            claim_row(
                f"simulated Tr S_t equals the exact covariance recursion (83) ({where})",
                "App. D.3, Lemma D.12, Eq. (83)",
                name,
                "simulated mean",
                mean,
                f"|mean - {exact:.4g}| <= 4 SE",
                bool(abs(mean - exact) <= 4.0 * se) if evaluable else None,
            )
        )
    return rows


def _epochs(name: str, t: pd.DataFrame) -> list[dict[str, object]]:
    rows = []
    for (dataset, method, eps), cell in t.groupby(["dataset", "method", "epsilon"], sort=True):
        cell = cell.sort_values("epochs")
        one, top = cell.iloc[0], cell.iloc[-1]
        if int(one["epochs"]) != 1 or len(cell) < 2:
            continue
        z = float(top["z_vs_one_epoch"])
        rows.append(
            claim_row(
                f"{dataset}, {method}: more epochs lower the {one['score'].replace('_', ' ')}"
                f" at fixed eps={eps:g}",
                "App. G.1 multi-epoch setting (deviation 16; not a claim of the paper)",
                name,
                f"relative change of the mean, E={int(top['epochs'])} vs E=1",
                float(top["diff_vs_one_epoch"] / one["mean"]),
                f"z < -2 (z {z:.2f}, independent runs)",
                bool(z < -2) if math.isfinite(z) else None,
            )
        )
    return rows


def check(tables: Mapping[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Evaluate the claims; returns ``claims`` and ``fig2_slopes``."""
    rows: list[dict[str, object]] = []
    for name, t in tables.items():
        cols = set(t.columns)
        if {"panel", "value"} <= cols and "ratio" in set(t["panel"]):
            rows += _fig1(name, t)
        elif "table" in cols:
            rows += _tables(name, t)
        elif {"violation_fraction", "violation_limit", "bound", "type"} <= cols:
            rows += _iterate_bounds(name, t)
        elif {"kappa", "bound", "mechanism"} <= cols:
            rows += _fig3(name, t)
        elif {"bound_d11", "mean", "se", "mechanism"} <= cols:
            rows += _finite_time(name, t)
        elif {"diff_vs_sgd", "diff_vs_sgd_se", "method", "epsilon"} <= cols:
            rows += _fig4_digits(name, t)
        elif {"diff_vs_one_epoch", "z_vs_one_epoch", "epochs", "method"} <= cols:
            rows += _epochs(name, t)
    slopes = fig2_slope_table(tables)
    if len(slopes):
        rows += _fig2(slopes)
    out = {"claims": pd.DataFrame(rows, columns=CLAIM_COLUMNS)}
    if len(slopes):
        out["fig2_slopes"] = slopes
    return out
