"""Checks of dpreg's own claims (paper key ``dpreg``), evaluated on its studies' tables.

* ``privacy_audit``: for every audited estimator, no audit case contradicts the privacy
  claim (verdict ``fail``); ``expected-fail`` cases are disclaimed in the estimator's
  documentation and reported with their reason, not counted as passes or failures.
* Coverage: every estimator with an audit case (:func:`dpreg.audit.audit_cases`) appears
  in some audit table of the run.
* ``benchmark`` (``docs/benchmark.md``): every method certifies at most its target budget;
  and the papers' comparative claims, re-checked on common ground with public
  hyperparameters: Lev et al.'s "IHM is best" among the baselines of their paper and
  among every method of the benchmark, Brown et al.'s "DP-GD beats AdaSSP" and
  Choquette-Choo et al.'s "correlated noise (nu-DP-FTRL) beats independent noise". A
  failed comparative claim is a finding of the benchmark, not an error.
* ``ci_coverage`` (docs/inference.md): for every (estimator, target) that
  :data:`dpreg.inference.bootstrap.CHECKED_INTERVALS` lists, the bootstrap intervals cover
  at the nominal level in the cells of the study that the table claims (those its regime
  covers): the pooled coverage within 2 standard errors of nominal, and no single cell
  beyond the Bonferroni bound of a family-wise 5% test.
* ``iv_table`` (``docs/user-data.md``, "Instrumental variables on your table"): every
  release of DP-2S-GD (Liang et al. 2025, Algorithm 1, public rule) certifies at most its
  target (epsilon, delta); and on each dataset the mean distance of the released
  coefficients to the non-private 2SLS fit of the same rows decreases between every two
  consecutive epsilons by more than 2 standard errors of the difference (the distance
  shrinks; it need not vanish: the public rule's bias stays).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy.stats import binomtest, norm

from dpreg.experiments.claim_rows import CLAIM_COLUMNS, claim_row

_SOURCE = "docs/privacy.md, Empirical privacy audit"


def _audit_tables(tables: Mapping[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    return {
        name: t
        for name, t in tables.items()
        if {"verdict", "canary", "epsilon_lower"} <= set(t.columns)
    }


_BENCH = "docs/benchmark.md"
_NOT_BEATEN = (
    "no method's mean rank is lower than IHM's by more than 2 standard errors of the"
    " paired rank difference across datasets"
)
#: Lev et al.'s baselines (Section 5): the methods their figures compare IHM with.
LEV_BASELINES = ("ihm", "adassp", "linear_mixing", "dp_gd_lev")


def _benchmark_tables(tables: Mapping[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    return {
        name: t
        for name, t in tables.items()
        if {"method", "rank", "ratio_to_best", "score", "spent_epsilon"} <= set(t.columns)
    }


def _ranks(at_eps: pd.DataFrame, methods: Sequence[str]) -> pd.DataFrame:
    """Ranks of ``methods`` among themselves (datasets x methods) where all of them ran."""
    ok = at_eps[(at_eps["status"] == "ok") & at_eps["method"].isin(methods)]
    scores = ok.pivot(index="dataset", columns="method", values="score").dropna()
    return scores.rank(axis=1)


def _best_claim(ranks: pd.DataFrame, method: str) -> tuple[float, str, bool]:
    """``method``'s mean rank, the evidence, and whether no method beats it significantly.

    A method beats ``method`` significantly when its mean rank is lower by more than two
    standard errors of the paired rank difference across datasets.
    """
    mean = ranks.mean().sort_values()
    k = len(ranks)
    worst_z, rival = -np.inf, ""
    for other in ranks.columns.drop(method):
        diff = ranks[method] - ranks[other]
        se = diff.std(ddof=1) / np.sqrt(k) if k > 1 else np.nan
        z = (
            diff.mean() / se
            if se and np.isfinite(se) and se > 0
            else (np.inf if diff.mean() > 0 else -np.inf)
        )
        if z > worst_z:
            worst_z, rival = z, other
    shown = ", ".join(f"{m} {r:.2f}" for m, r in mean.head(4).items())
    evidence = f"mean ranks over {k} datasets ({shown}); strongest rival {rival}: z = {worst_z:.2f}"
    return float(mean[method]), evidence, bool(worst_z <= 2.0)


def _benchmark_rows(study: str, table: pd.DataFrame) -> list[dict[str, object]]:
    rows = []
    ran = table[table["status"] == "ok"]
    private = ran[ran["private"].astype(bool)]
    ratio = (private["spent_epsilon"] / private["epsilon"]).max()
    rows.append(
        claim_row(
            "every private method certifies at most the target epsilon of its cell",
            "docs/privacy.md; " + _BENCH,
            study,
            "largest spent_epsilon / epsilon",
            float(ratio),
            "<= 1 + 1e-9",
            bool(ratio <= 1 + 1e-9),
        )
    )
    for epsilon, at_eps in table.groupby("epsilon", sort=True):
        lev = _ranks(at_eps, LEV_BASELINES)
        if "ihm" in lev.columns and lev.shape[1] > 1 and len(lev):
            value, evidence, passed = _best_claim(lev, "ihm")
            rows.append(
                claim_row(
                    f"eps={epsilon:g}: IHM is the best of Lev et al.'s methods (IHM, AdaSSP,"
                    " linear mixing, DP-GD)",
                    "Lev et al. (2026), Section 5, Figs. 1-6; " + _BENCH,
                    study,
                    "IHM's mean rank; " + evidence,
                    value,
                    _NOT_BEATEN,
                    passed,
                )
            )
        # methods that ran on every dataset at this epsilon (a regime-limited method, e.g.
        # DP-SSGD, would be ranked on a few datasets only)
        at_private = private[private["epsilon"] == epsilon]
        runs = at_private.groupby("method")["dataset"].nunique()
        everywhere = sorted(runs[runs == at_eps["dataset"].nunique()].index)
        every = _ranks(at_eps, everywhere)
        if "ihm" in every.columns and every.shape[1] > 1 and len(every):
            value, evidence, passed = _best_claim(every, "ihm")
            rows.append(
                claim_row(
                    f"eps={epsilon:g}: IHM is the best of every method of the benchmark that"
                    " ran on every dataset (baselines the paper did not include)",
                    "Lev et al. (2026), Section 5 (extended); " + _BENCH,
                    study,
                    "IHM's mean rank; " + evidence,
                    value,
                    _NOT_BEATEN,
                    passed,
                )
            )
        pairs = (
            ("dp_gd_brown", "adassp", "Brown et al. (2024), Figs. 1, 9: DP-GD beats AdaSSP"),
            (
                "nu_dp_ftrl",
                "dp_sgd_stream",
                "Choquette-Choo et al. (2023), Section 1: correlated noise (nu-DP-FTRL) beats"
                " independent noise (DP-SGD) at equal privacy",
            ),
        )
        for better, worse, source in pairs:
            both = ran[ran["method"].isin([better, worse])]
            wide = both[both["epsilon"] == epsilon].pivot(
                index="dataset", columns="method", values="score"
            )
            if not {better, worse} <= set(wide.columns):
                continue
            wide = wide.dropna()
            wins = int((wide[better] < wide[worse]).sum())
            k = len(wide)
            p_value = float(binomtest(wins, k, 0.5).pvalue) if k else np.nan
            rows.append(
                claim_row(
                    f"eps={epsilon:g}: {better} has a lower test MSE than {worse} on most datasets",
                    source.split(":")[0] + "; " + _BENCH,
                    study,
                    f"share of {k} datasets where {better} is better (two-sided sign test"
                    f" p = {p_value:.2g})",
                    wins / k if k else np.nan,
                    "> 1/2, sign test p < 0.05",
                    bool(k and wins / k > 0.5 and p_value < 0.05),
                )
            )
    return rows


_CI_COLUMNS = {"estimator", "target", "n", "d", "epsilon", "nominal", "coverage", "coverage_se",
               "coverage_se_nominal"}  # fmt: skip
_CI_SOURCE = "docs/inference.md; Ferrando, Wang & Sheldon (2022), Algorithm 1"


def _ci_tables(tables: Mapping[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    return {name: t for name, t in tables.items() if _CI_COLUMNS <= set(t.columns)}


def _ci_rows(study: str, table: pd.DataFrame) -> list[dict[str, object]]:
    """Coverage claims of the checked (estimator, target) pairs at the cells they claim.

    A cell's standard error is the larger of the SE from per-trial averages and the
    binomial SE at the nominal level (the table's ``z``). Pooled: the mean coverage of the
    m claimed cells, SE sqrt(sum se_i^2) / m, within 2 SE of nominal. Worst cell: the
    largest |coverage - nominal| / se_i at most z_{1 - 0.05/(2m)}.
    """
    from dpreg.inference import bootstrap

    rows = []
    for (estimator, target), group in table.groupby(["estimator", "target"], sort=True):
        regime = bootstrap.CHECKED_INTERVALS.get((estimator, target))
        if regime is None:
            continue
        claimed = group[
            [
                regime.covers(int(n), int(d), float(e))
                for n, d, e in zip(group["n"], group["d"], group["epsilon"], strict=True)
            ]
        ]
        m = len(claimed)
        if m == 0:
            continue
        nominal = float(claimed["nominal"].iloc[0])
        se = np.maximum(
            claimed["coverage_se"].fillna(0.0).to_numpy(float),
            claimed["coverage_se_nominal"].to_numpy(float),
        )
        cov = claimed["coverage"].to_numpy(float)
        pooled, pooled_se = float(cov.mean()), float(np.sqrt(np.sum(se**2)) / m)
        z = (pooled - nominal) / pooled_se
        cells = "; ".join(
            f"n={n} d={d} eps={e:g}: {c:.3f}"
            for n, d, e, c in zip(claimed["n"], claimed["d"], claimed["epsilon"], cov, strict=True)
        )
        rows.append(
            claim_row(
                f"{estimator} ({target} target): the bootstrap intervals cover at the nominal"
                f" {nominal:g} where CHECKED_INTERVALS says they do",
                _CI_SOURCE,
                study,
                f"pooled coverage over the {m} claimed cells ({cells}); z = {z:.2f}",
                pooled,
                "within 2 SE of nominal",
                bool(abs(z) <= 2.0),
            )
        )
        zs = np.abs(cov - nominal) / se
        worst = int(np.argmax(zs))
        bound = float(norm.ppf(1.0 - 0.05 / (2 * m)))
        w = claimed.iloc[worst]
        rows.append(
            claim_row(
                f"{estimator} ({target} target): no claimed cell misses the nominal coverage",
                _CI_SOURCE,
                study,
                f"largest |coverage - {nominal:g}| / SE over the claimed cells (n={w['n']},"
                f" d={w['d']}, eps={w['epsilon']:g}: coverage {cov[worst]:.3f})",
                float(zs[worst]),
                f"<= {bound:.2f} (Bonferroni over {m} cells, family-wise 5%)",
                bool(zs[worst] <= bound),
            )
        )
    return rows


_IV_TABLE_COLUMNS = {"term", "role", "two_sls", "distance_2sls_mean", "distance_2sls_se",
                     "spent_epsilon", "spent_delta", "epsilon", "delta"}  # fmt: skip
_IV_SOURCE = 'docs/user-data.md, "Instrumental variables on your table"'


def _iv_table_tables(tables: Mapping[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    return {name: t for name, t in tables.items() if _IV_TABLE_COLUMNS <= set(t.columns)}


def _iv_table_rows(study: str, table: pd.DataFrame) -> list[dict[str, object]]:
    """Return the budget claim and, per (dataset, method), the shrinking distance to 2SLS.

    The distance claim compares consecutive epsilons ``e_k < e_{k+1}``: ``z_k = (D_k -
    D_{k+1}) / sqrt(se_k^2 + se_{k+1}^2)`` with ``D`` the mean distance and ``se`` its
    standard error (the releases at different epsilons draw independent noise); it holds
    when the smallest ``z_k`` exceeds 2. A table with one epsilon gives no distance row.
    """
    ratio = float((table["spent_epsilon"] / table["epsilon"]).max())
    delta_ok = bool((table["spent_delta"] <= table["delta"] * (1 + 1e-12)).all())
    rows = [
        claim_row(
            "every release of DP-2S-GD with the public rule certifies at most its target"
            " (epsilon, delta)",
            "Liang et al. (2025), Algorithm 1, Prop. 3.1; " + _IV_SOURCE,
            study,
            "largest spent_epsilon / epsilon" + ("" if delta_ok else " (a spent_delta > delta)"),
            ratio,
            "<= 1 + 1e-9 and spent_delta <= delta",
            bool(ratio <= 1 + 1e-9 and delta_ok),
        )
    ]
    per_eps = table[table["role"] == "endogenous"].drop_duplicates(["dataset", "method", "epsilon"])
    for (dataset, method), group in per_eps.groupby(["dataset", "method"], sort=True):
        group = group.sort_values("epsilon")
        if len(group) < 2:
            continue
        eps = group["epsilon"].to_numpy(float)
        mean = group["distance_2sls_mean"].to_numpy(float)
        se = group["distance_2sls_se"].to_numpy(float)
        z = (mean[:-1] - mean[1:]) / np.hypot(se[:-1], se[1:])
        worst = int(np.argmin(z))
        shown = ", ".join(f"eps={e:g}: {m:.4g}" for e, m in zip(eps, mean, strict=True))
        rows.append(
            claim_row(
                f"{dataset} ({method}): the mean distance of the released coefficients to the"
                " non-private 2SLS fit of the same rows shrinks as epsilon grows",
                _IV_SOURCE,
                study,
                f"smallest z of a decrease between consecutive epsilons (eps={eps[worst]:g} to"
                f" {eps[worst + 1]:g}); mean distances {shown}",
                float(z[worst]),
                "> 2 (every consecutive decrease beyond 2 SE of the difference)",
                bool(np.all(np.isfinite(z)) and z[worst] > 2.0),
            )
        )
    return rows


def check(tables: Mapping[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Audit claims, the benchmark's, the intervals' coverage and the IV table's claims."""
    from dpreg.audit import audit_cases

    rows = []
    seen: set[str] = set()
    for study, table in sorted(_audit_tables(tables).items()):
        for estimator, group in table.groupby("estimator", sort=True):
            seen.add(str(estimator))
            fails = int((group["verdict"] == "fail").sum())
            expected = int((group["verdict"] == "expected-fail").sum())
            rows.append(
                claim_row(
                    f"{estimator}: the audit finds no leak beyond the documented claim",
                    _SOURCE,
                    study,
                    f"cases failing (of {len(group)}; {expected} expected-fail)",
                    fails,
                    "0 cases with verdict fail",
                    fails == 0,
                )
            )
    if rows:
        audited = {c.estimator for c in audit_cases()}
        missing = sorted(audited - seen)
        rows.append(
            claim_row(
                "every estimator with an audit case is audited in this run",
                _SOURCE,
                ",".join(sorted(_audit_tables(tables))),
                "estimators not audited" + (f" ({', '.join(missing)})" if missing else ""),
                len(missing),
                "0",
                not missing,
            )
        )
    out = {"claims": pd.DataFrame(rows, columns=CLAIM_COLUMNS)}
    bench_rows = [
        row
        for study, table in sorted(_benchmark_tables(tables).items())
        for row in _benchmark_rows(study, table)
    ]
    if bench_rows:
        out["benchmark"] = pd.DataFrame(bench_rows, columns=CLAIM_COLUMNS)
    ci_rows = [
        row for study, table in sorted(_ci_tables(tables).items()) for row in _ci_rows(study, table)
    ]
    if ci_rows:
        out["ci_coverage"] = pd.DataFrame(ci_rows, columns=CLAIM_COLUMNS)
    iv_rows = [
        row
        for study, table in sorted(_iv_table_tables(tables).items())
        for row in _iv_table_rows(study, table)
    ]
    if iv_rows:
        out["iv_table"] = pd.DataFrame(iv_rows, columns=CLAIM_COLUMNS)
    return out
