"""Checks of Liang et al. (2025)'s claims on the pipeline's tables (issue: Checks).

Study names are the ones of ``config/config.yaml`` (``liang_fig3a`` ...); a study that
is absent gives no row. Criteria (the paper states shapes, not numbers):

* Fig. 3a: log-log slope of mean error against n within [-0.75, -0.25] (claim: -1/2).
* Fig. 3b: error above Fig. 3a at every shared (n, split).
* Fig. 4a: for the smallest rho1 the error turns up: err(T_last) exceeds the minimum over
  T by more than 2 combined SE, with the argmin before T_last; T_max of (5) reported.
* Fig. 4b: the minimising T does not decrease as rho2 grows.
* Fig. 6: at the largest T, Alg. 1's error exceeds Alg. 3's for every rho2.
* Fig. 7: at the largest n, 2SLS is closer to the true beta than 2S-GD (T = 100).
* Angrist (Figs. 5, 8, 9): at rho = 100 the DP median lies within one run-sd of the
  same-sample 2SLS; the IQR shrinks as rho grows.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from dpreg.experiments.claim_rows import CLAIM_COLUMNS, claim_row, loglog_slope

ANGRIST_STUDIES = ("liang_fig8_angrist", "liang_fig5_angrist", "liang_fig9_angrist")


def _fig3(tables: Mapping[str, pd.DataFrame]) -> list[dict[str, object]]:
    rows = []
    a = tables.get("liang_fig3a")
    if a is not None:
        for (r1, r2), g in a.groupby(["rho1", "rho2"], sort=True):
            g = g.sort_values("n")
            for metric in ("err_hat", "err_true"):
                slope = loglog_slope(g["n"], g[f"{metric}_mean"])
                rows.append(
                    claim_row(
                        "error decreases at rate 1/sqrt(n) (plateau region)",
                        "Sec. 4.1, Fig. 3(a)",
                        "liang_fig3a",
                        f"log-log slope of mean {metric} vs n, rho=({r1:g},{r2:g})",
                        slope,
                        "-0.75 <= slope <= -0.25",
                        None if np.isnan(slope) else bool(-0.75 <= slope <= -0.25),
                    )
                )
    b = tables.get("liang_fig3b")
    if a is not None and b is not None:
        keys = ["n", "rho1", "rho2"]
        m = a[keys + ["err_hat_mean"]].merge(
            b[keys + ["err_hat_mean"]], on=keys, suffixes=("_a", "_b")
        )
        if len(m):
            ratio = float((m["err_hat_mean_b"] / m["err_hat_mean_a"]).min())
            rows.append(
                claim_row(
                    "p=q=50 (condition (5) violated) gives much larger errors than p=q=5",
                    "Sec. 4.1, Fig. 3(b)",
                    "liang_fig3b",
                    "min over shared (n, split) of err_3b / err_3a",
                    ratio,
                    "ratio > 1 everywhere",
                    bool(ratio > 1),
                )
            )
    return rows


def _argmin_T(g: pd.DataFrame, col: str = "err_hat") -> tuple[int, pd.Series]:
    g = g.sort_values("T")
    best = g.loc[g[f"{col}_mean"].idxmin()]
    return int(best["T"]), best


def _fig4(tables: Mapping[str, pd.DataFrame]) -> list[dict[str, object]]:
    rows = []
    a = tables.get("liang_fig4a")
    if a is not None and a["T"].nunique() >= 2:
        rho1 = a["rho1"].min()
        g = a[a["rho1"] == rho1].sort_values("T")
        t_star, best = _argmin_T(g)
        last = g.iloc[-1]
        gap = float(last["err_hat_mean"] - best["err_hat_mean"])
        se = float(np.hypot(last["err_hat_se"], best["err_hat_se"]))
        t_max = float(g["T_max_theory"].iloc[0])
        rows.append(
            claim_row(
                "small rho1: error grows past a cutoff T consistent with condition (5)",
                "Sec. 4.1, Fig. 4(a)",
                "liang_fig4a",
                f"err(T={int(last['T'])}) - min_T err (argmin T={t_star}; T_max of (5)"
                f" = {t_max:.3g}), rho1={rho1:g}",
                gap,
                "gap > 2 SE and argmin T < largest T",
                bool(gap > 2 * se and t_star < int(last["T"])),
            )
        )
    b = tables.get("liang_fig4b")
    if b is not None and b["T"].nunique() >= 2:
        stars = [(r2, _argmin_T(g)[0]) for r2, g in b.groupby("rho2", sort=True)]
        ts = [t for _, t in stars]
        rows.append(
            claim_row(
                "small rho2: U-shaped error whose minimum moves to larger T as rho2 grows",
                "Sec. 4.1, Fig. 4(b)",
                "liang_fig4b",
                "argmin T per rho2 " + ", ".join(f"{r:g}:{t}" for r, t in stars),
                float(ts[-1]),
                "argmin T non-decreasing in rho2",
                bool(all(x <= y for x, y in zip(ts, ts[1:], strict=False))),
            )
        )
    return rows


def _fig6_fig7(tables: Mapping[str, pd.DataFrame]) -> list[dict[str, object]]:
    rows = []
    f6 = tables.get("liang_fig6")
    if f6 is not None:
        t_last = f6["T"].max()
        last = f6[f6["T"] == t_last].pivot_table(
            index="rho2", columns="algorithm", values="err_hat_mean"
        )
        if {"dp_2s_gd", "dp_2s_gd_beta"} <= set(last.columns):
            ratio = float((last["dp_2s_gd"] / last["dp_2s_gd_beta"]).min())
            rows.append(
                claim_row(
                    "for large T Alg. 1 diverges while Alg. 3 stays stable",
                    "App. F.1, Fig. 6",
                    "liang_fig6",
                    f"min over rho2 of err(Alg.1)/err(Alg.3) at T={int(t_last)}",
                    ratio,
                    "ratio > 1 for every rho2",
                    bool(ratio > 1),
                )
            )
    f7 = tables.get("liang_fig7")
    if f7 is not None:
        n_last = f7["n"].max()
        last = f7[f7["n"] == n_last].set_index("algorithm")["err_true_mean"]
        if {"2s_gd", "2sls"} <= set(last.index):
            ratio = float(last["2s_gd"] / last["2sls"])
            rows.append(
                claim_row(
                    "2S-GD converges more slowly in n than 2SLS",
                    "App. G.1, Fig. 7",
                    "liang_fig7",
                    f"err_true(2S-GD, T=100) / err_true(2SLS) at n={int(n_last)}",
                    ratio,
                    "ratio > 1",
                    bool(ratio > 1),
                )
            )
    return rows


def angrist_summary(tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """2SLS estimate and SE beside the DP median, IQR, mean and sd per rho (Figs. 5, 8, 9)."""
    rows = []
    for study in ANGRIST_STUDIES:
        table = tables.get(study)
        if table is None:
            continue
        final = table[table["quantity"] == "beta_final"].iloc[0]
        rows.append(
            {
                "study": study,
                "rho1": final["rho1"],
                "rho2": final["rho2"],
                "n": final["n"],
                "runs": final["runs"],
                "beta_2sls": final["beta_2sls"],
                "se_2sls": final["se_2sls"],
                "dp_median": final["median"],
                "dp_q25": final["q25"],
                "dp_q75": final["q75"],
                "dp_iqr": final["iqr"],
                "dp_mean": final["mean"],
                "dp_sd": final["sd"],
            }
        )
    return pd.DataFrame(rows).sort_values("rho1", ignore_index=True) if rows else pd.DataFrame()


def _angrist(summary: pd.DataFrame) -> list[dict[str, object]]:
    rows = []
    if summary.empty:
        return rows
    top = summary.iloc[-1]
    dist = abs(top["dp_median"] - top["beta_2sls"])
    rows.append(
        claim_row(
            "estimates concentrate around the 2SLS benchmark (largest rho)",
            "Sec. 4.2, Figs. 5, 9",
            str(top["study"]),
            f"abs(DP median - 2SLS) / run-sd at rho1=rho2={top['rho1']:g}",
            dist / top["dp_sd"],
            "<= 1",
            bool(dist <= top["dp_sd"]),
        )
    )
    if len(summary) >= 2:
        iqr = summary["dp_iqr"].to_numpy()
        rows.append(
            claim_row(
                "larger rho gives estimates more tightly concentrated",
                "Sec. 4.2, Figs. 5, 8, 9",
                ",".join(summary["study"]),
                "IQR by increasing rho: " + ", ".join(f"{v:.3g}" for v in iqr),
                float(iqr[-1]),
                "IQR strictly decreasing in rho",
                bool(np.all(np.diff(iqr) < 0)),
            )
        )
    return rows


def liang2025_claims(tables: Mapping[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Evaluate every checkable claim of Liang et al. (2025) (module docstring)."""
    summary = angrist_summary(tables)
    rows = _fig3(tables) + _fig4(tables) + _fig6_fig7(tables) + _angrist(summary)
    return {"claims": pd.DataFrame(rows, columns=CLAIM_COLUMNS), "angrist_summary": summary}
