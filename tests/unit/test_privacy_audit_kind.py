"""The workflow's ``privacy_audit`` kind: blocks, verdicts, checks and figure."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dpreg.audit
from dpreg.audit import AuditCase
from dpreg.experiments.privacy_audit import check_audit_cell, summarise_audit
from dpreg.experiments.studies import draw_study_figure, run_chunk
from dpreg.privacy import ZCDP, ApproxDP


def _toy_cases(*, epsilon: float = 1.0, delta: float = 1e-5) -> list[AuditCase]:
    mu = np.sqrt(2 * 0.5)

    def gaussian(shift):
        return lambda t, rng, side: rng.normal(shift * side, 1.0, t)

    return [
        AuditCase("toy", "honest", "add_remove", ZCDP(0.5), delta, gaussian(mu), True),
        AuditCase("toy", "leaky", "add_remove", ZCDP(0.5), delta, gaussian(3 * mu), True),
        AuditCase(
            "toy_disclaimed",
            "leaky",
            "replace_one",
            ApproxDP(epsilon, delta),
            delta,
            gaussian(10.0),
            False,
            expected_fail="the docstring disclaims this claim",
        ),
    ]


@pytest.fixture
def toy_factory(monkeypatch):
    monkeypatch.setitem(dpreg.audit.CASE_FACTORIES, "toy", _toy_cases)


def _blocks(sizes, seed0=11):
    blocks, first = [], 0
    for j, size in enumerate(sizes):
        blocks.append({"first_trial": first, "trials": size, "seed": seed0 + j})
        first += size
    return blocks


def test_audit_kind_verdicts_and_rows(toy_factory):
    cell = {"estimator": "toy", "epsilon": 1.0, "delta": 1e-5, "alpha": 0.01}
    runs = run_chunk("privacy_audit", cell, blocks=_blocks([2000, 2000]))
    assert len(runs) == 2 * 2 * 4000  # 2 cases x 2 sides x trials
    assert set(runs["side"]) == {0, 1}
    table = summarise_audit(runs).set_index("canary")
    assert table.loc["honest", "verdict"] == "pass"
    assert table.loc["leaky", "verdict"] == "fail"
    assert table.loc["honest", "trials"] == 4000
    assert table.loc["honest", "mu_lower"] < 1.0 < table.loc["honest", "mu_upper"]
    other = run_chunk(
        "privacy_audit", {**cell, "estimator": "toy_disclaimed"}, blocks=_blocks([500])
    )
    row = summarise_audit(other).iloc[0]
    assert row["verdict"] == "expected-fail" and "disclaims" in row["reason"]
    assert np.isnan(row["mu"])  # not a Gaussian case: threshold evidence only


def test_a_new_case_leaves_the_draws_of_the_others_unchanged(monkeypatch):
    # Each case has a stream named by (estimator, canary) (dpreg.seeds.stream_key).
    cell = {"estimator": "toy", "epsilon": 1.0, "delta": 1e-5, "alpha": 0.01}
    blocks = _blocks([300])
    monkeypatch.setitem(dpreg.audit.CASE_FACTORIES, "toy", lambda **kw: _toy_cases(**kw)[1:2])
    alone = run_chunk("privacy_audit", cell, blocks=blocks)
    monkeypatch.setitem(dpreg.audit.CASE_FACTORIES, "toy", _toy_cases)
    both = run_chunk("privacy_audit", cell, blocks=blocks)
    leaky = both[both["canary"] == "leaky"].reset_index(drop=True)
    pd.testing.assert_frame_equal(alone.reset_index(drop=True), leaky)


def test_summary_does_not_depend_on_row_order(toy_factory):
    cell = {"estimator": "toy", "epsilon": 1.0, "delta": 1e-5}
    runs = run_chunk("privacy_audit", cell, blocks=_blocks([300, 300, 300]))
    shuffled = runs.sample(frac=1.0, random_state=0)
    pd.testing.assert_frame_equal(summarise_audit(runs), summarise_audit(shuffled))


def test_check_cell_names_the_problem(toy_factory):
    good = {"estimator": "toy", "epsilon": 1.0, "delta": 1e-5}
    check_audit_cell(good)
    with pytest.raises(ValueError, match="no audit case for estimators \\['nope'\\]"):
        check_audit_cell({**good, "estimator": "nope"})
    with pytest.raises(ValueError, match="delta"):
        check_audit_cell({**good, "delta": 1.5})
    with pytest.raises(ValueError, match="epsilon"):
        check_audit_cell({**good, "epsilon": "1.0"})
    with pytest.raises(ValueError, match="alpha"):
        check_audit_cell({**good, "alpha": True})


def test_figure_draws_from_the_table(toy_factory):
    runs = run_chunk(
        "privacy_audit",
        {"estimator": "toy", "epsilon": 1.0, "delta": 1e-5},
        blocks=_blocks([400]),
    )
    fig = draw_study_figure("privacy_audit", summarise_audit(runs), title="audit")
    assert fig.axes[0].get_xscale() == "log"


def test_dpreg_claims_flag_unexpected_failures(toy_factory):
    from dpreg.experiments.claims import check_claims

    cell = {"estimator": "toy", "epsilon": 1.0, "delta": 1e-5, "alpha": 0.01}
    table = summarise_audit(run_chunk("privacy_audit", cell, blocks=_blocks([2000])))
    claims = check_claims("dpreg", {"audit": table})["claims"].set_index("claim")
    toy = claims.loc["toy: the audit finds no leak beyond the documented claim"]
    assert toy["passed"] == "NO" and toy["value"] == 1  # the leaky case
    coverage = claims.loc["every estimator with an audit case is audited in this run"]
    assert coverage["passed"] == "NO" and "toy_disclaimed" in coverage["statistic"]
    honest = table[table["canary"] == "honest"]
    claims = check_claims("dpreg", {"audit": honest})["claims"]
    assert claims.iloc[0]["passed"] == "yes"


def test_alpha_is_family_wise_over_the_study(toy_factory):
    cell = {"estimator": ["toy", "toy_disclaimed"], "epsilon": 1.0, "delta": 1e-5}
    table = summarise_audit(
        run_chunk("privacy_audit", {**cell, "alpha": 0.06}, blocks=_blocks([500]))
    )
    # two Gaussian cases (two tests each) and one threshold-only case: 5 tests
    assert len(table) == 3
    assert np.allclose(table["alpha_case"], 0.06 / 5)
    assert (table["alpha"] == 0.06).all()


def _summarise_audit_by_group_copies(runs: pd.DataFrame) -> pd.DataFrame:
    """The summary as it was written first: each group copied whole, sorted by pandas."""
    from dpreg.audit import judge_scores
    from dpreg.experiments.privacy_audit import _case_from_rows

    keys = ["estimator", "canary", "claim_unit", "claim_value", "delta"]
    groups = [g for _, g in runs.groupby(keys)]
    tests = sum(2 if bool(g["gaussian"].iloc[0]) else 1 for g in groups)
    rows = []
    for group in groups:
        group = group.sort_values(["side", "trial"], kind="stable")
        first = group.iloc[0]
        case = _case_from_rows(first)
        s0 = group.loc[group["side"] == 0, "score"].to_numpy()
        s1 = group.loc[group["side"] == 1, "score"].to_numpy()
        alpha_case = float(first["alpha"]) / tests
        row = judge_scores(case, s0, s1, alpha=alpha_case).as_row()
        row["claim_unit"] = first["claim_unit"]
        row["claim_value"] = float(first["claim_value"])
        row["gaussian"] = bool(first["gaussian"])
        row["alpha"] = float(first["alpha"])
        row["alpha_case"] = alpha_case
        row["description"] = case.description
        rows.append(row)
    table = pd.DataFrame(rows)
    order = ["estimator", "canary", "relation", "claim", "claim_unit", "claim_value", "delta"]
    return table[order + [c for c in table.columns if c not in order]]


@pytest.mark.parametrize("seed", [0, 1])
def test_summary_gathers_each_group_as_copying_the_group_would(toy_factory, seed):
    # The summary gathers a group's scores by position (no copy of the group's rows);
    # it must equal copying each group and sorting it by (side, trial), also on shuffled
    # rows with repeated trial numbers (ties keep frame order) and several estimators.
    cell = {"estimator": "toy", "epsilon": 1.0, "delta": 1e-5, "alpha": 0.05}
    runs = pd.concat(
        [
            run_chunk("privacy_audit", cell, blocks=_blocks([200, 150])),
            run_chunk(
                "privacy_audit", {**cell, "estimator": "toy_disclaimed"}, blocks=_blocks([90])
            ),
            run_chunk("privacy_audit", cell, blocks=_blocks([40], seed0=99)),  # trials 0-39 again
        ],
        ignore_index=True,
    )
    runs = runs.sample(frac=1.0, random_state=seed)
    expected = _summarise_audit_by_group_copies(runs)
    got = summarise_audit(runs)
    pd.testing.assert_frame_equal(got, expected, check_exact=True)
    assert got.equals(expected)
