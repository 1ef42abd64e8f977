"""Config errors stop the dry run with a message naming the key (issue 13)."""

from __future__ import annotations

import copy
import doctest
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from snakemake.utils import validate

import dpreg.config
from dpreg.config import (
    check_config_references,
    check_hyper_blocks,
    check_hyperparameters,
    check_no_duplicate_keys,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def smoke() -> dict:
    with open(ROOT / "config" / "smoke.yaml", encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def _study(config: dict, **params) -> dict:
    bad = copy.deepcopy(config)
    bad["studies"]["adassp_uci"]["params"].update(params)
    return bad


def test_the_shipped_configs_pass(smoke, monkeypatch):
    monkeypatch.chdir(ROOT)  # a table dataset's paths are relative to the working directory
    check_no_duplicate_keys([ROOT / "config" / "smoke.yaml", ROOT / "config" / "config.yaml"])
    with open(ROOT / "config" / "config.yaml", encoding="utf-8") as fh:
        paper = yaml.safe_load(fh)
    for config in (smoke, paper):
        check_config_references(config)
        check_hyper_blocks(config)


def test_a_repeated_study_name_is_refused(tmp_path):
    text = (ROOT / "config" / "smoke.yaml").read_text()
    text += "\n  adassp_uci:\n    paper: lev2026\n"
    (tmp_path / "c.yaml").write_text(text)
    with pytest.raises(ValueError, match="'adassp_uci' appears twice"):
        check_no_duplicate_keys([tmp_path / "c.yaml"])


def test_a_hyper_block_for_an_estimator_not_run_is_refused(smoke):
    bad = _study(smoke, hyper={"adasp": {"mechanism": "analytic"}})
    with pytest.raises(ValueError, match=r"adassp_uci.params.hyper: \['adasp'\] not run"):
        check_hyper_blocks(bad)


def test_an_unknown_hyperparameter_is_refused(smoke):
    bad = _study(smoke, hyper={"adassp": {"mechanisms": "analytic"}})
    with pytest.raises(ValueError, match=r"unknown hyperparameter\(s\) \['mechanisms'\]"):
        check_config_references(bad)


@pytest.mark.parametrize(
    ("params", "grid", "message"),
    [
        ({"delta_rule": "fixed", "delta": 1.5}, {}, r"eps_grid: delta must lie in \(0, 1\)"),
        ({"bound_X": -1.0}, {}, "bound_X must be"),
        ({"bound_y": "2"}, {}, r"bound_y: '2' is text, not a number"),
        ({"bound_y": True}, {}, "eps_grid: bound_y must be float; got True"),
        ({}, {"epsilon": ["1.0"]}, "epsilon"),
        ({}, {"epsilon": [True]}, "epsilon"),
        ({"hyper": {}}, {"estimator": ["dp_2s_gd"]}, "IV estimator"),
    ],
)
def test_bad_values_stop_the_dry_run(smoke, params, grid, message):
    bad = _study(smoke, **params)
    bad["studies"]["adassp_uci"]["grid"].update(grid)
    with pytest.raises(ValueError, match=message):
        check_config_references(bad)


def test_an_unknown_loader_option_stops_the_dry_run(smoke):
    bad = copy.deepcopy(smoke)
    bad["datasets"]["lev_solar"]["options"]["bonds"] = "public"
    with pytest.raises(ValueError, match=r"lev_solar.options: unknown option\(s\) \['bonds'\]"):
        check_config_references(bad)


def test_docstring_examples_run():
    result = doctest.testmod(dpreg.config, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_a_key_repeated_deeper_down_is_refused_with_both_lines(tmp_path):
    text = "studies:\n  s:\n    params:\n      epsilon: 1.0\n      delta: 0.1\n      epsilon: 2.0\n"
    (tmp_path / "c.yaml").write_text(text)
    with pytest.raises(ValueError, match=r"c.yaml: key 'epsilon' appears twice \(lines 4 and 6\)"):
        check_no_duplicate_keys([tmp_path / "c.yaml"])


def _set(config: dict, path: tuple, value) -> dict:
    bad = copy.deepcopy(config)
    node = bad
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return bad


def _check(config: dict) -> None:
    check_config_references(config)
    check_hyper_blocks(config)


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        # YAML 1.1 (Snakemake's loader) reads 1e-5 without a dot as the text '1e-5'
        (
            ("studies", "liang_fig3a", "params", "delta"),
            yaml.safe_load("x: 1e-5")["x"],
            r"liang_fig3a.params.delta: '1e-5' is text, not a number \(YAML reads 1e-5 as"
            r" text: write 1.0e-5\)",
        ),
        (("studies", "cc_fig2_d", "params", "eta"), "0.05", r"cc_fig2_d.params.eta: '0.05'"),
        (("studies", "liang_fig4a", "grid", "rho1"), [0.1, "10"], r"grid.rho1\[1\]: '10' is"),
        (("studies", "lev_fig1", "params", "hyper", "dp_gd", "clip"), "1.0", "dp_gd.clip"),
        (("studies", "adassp_uci", "params", "bound_X"), ".inf", "YAML's infinity is .inf"),
        (
            ("datasets", "angrist_liang", "preprocessing_options", "n_subsample"),
            "500",
            r"angrist_liang.preprocessing_options.n_subsample: '500' is text",
        ),
    ],
)
def test_a_number_written_as_text_stops_the_dry_run(smoke, path, value, message):
    with pytest.raises(ValueError, match=message):
        _check(_set(smoke, path, value))


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("dp_gd", "T"), True, r"lev_fig1.params.hyper.dp_gd.T: must be a number; got True"),
        (("dp_gd", "T"), -3, r"hyper.dp_gd.T: must be >= 0; got -3"),
        (("dp_gd", "T"), 2.5, r"hyper.dp_gd.T: must be an integer; got 2.5"),
        (("dp_gd", "step"), float("nan"), r"hyper.dp_gd.step: must be >= 0; got nan"),
        (("dp_gd", "clip"), -1.0, r"hyper.dp_gd.clip: must be >= 0"),
        (("dp_gd", "return_path"), 1, r"hyper.dp_gd.return_path: must be true or false"),
        (("dp_gd", "clip_mode"), 3, r"hyper.dp_gd.clip_mode: must be text"),
        (("dp_gd", "trials"), 5, r"hyper.dp_gd: \['trials'\] set by the study itself"),
        (("dp_gd", "bound_X"), 2.0, r"hyper.dp_gd: \['bound_X'\] set by the study itself"),
        (("ihm", "X"), 2.0, r"hyper.ihm: \['X'\] set by the study itself"),
        (("ihm", "tt"), 2, r"unknown hyperparameter\(s\) \['tt'\] for estimator 'ihm'; it takes"),
    ],
)
def test_a_bad_hyperparameter_stops_the_dry_run(smoke, path, value, message):
    bad = _set(smoke, ("studies", "lev_fig1", "params", "hyper", *path), value)
    with pytest.raises(ValueError, match=message):
        check_hyper_blocks(bad)


def test_the_kinds_own_hyper_checks_agree(smoke):
    # eps_grid checks unknown hyperparameters itself too; both name the key
    bad = _set(smoke, ("studies", "lev_fig1", "params", "hyper", "ihm", "tt"), 2)
    with pytest.raises(ValueError, match="'tt'"):
        check_config_references(bad)


def test_a_hyper_typo_is_caught_without_an_estimator_list(smoke):
    # lev_clipping runs its default estimators when the study names none
    bad = copy.deepcopy(smoke)
    bad["studies"]["lev_fig7"]["params"].pop("estimator", None)
    bad["studies"]["lev_fig7"]["params"]["hyper"] = {"ihmm": {"T": 2}}
    with pytest.raises(ValueError, match=r"hyper.ihmm: unknown estimator 'ihmm'"):
        check_hyper_blocks(bad)


def test_an_open_ended_estimator_takes_any_hyperparameter_name():
    check_hyperparameters("dp_sgd_stream", {"anything": 1})  # takes **hyper


@pytest.mark.parametrize(
    ("path", "value"),
    [(("cc_fig3_socp", "params", "n_log"), True), (("cc_fig3_socp", "params", "n_uniform"), -1)],
)
def test_a_kind_refuses_a_boolean_or_negative_count(smoke, path, value):
    with pytest.raises(ValueError, match=path[-1]):
        check_config_references(_set(smoke, ("studies", *path), value))


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("studies", "adassp_uci", "trials"), True),
        (("studies", "adassp_uci", "chunk_size"), "10"),
        (("seed",), False),
        (("datasets", "airfoil", "split"), True),
    ],
)
def test_the_schema_refuses_booleans_and_text_where_integers_belong(smoke, path, value):
    schema = ROOT / "workflow" / "schemas" / "config.schema.yaml"
    validate(copy.deepcopy(smoke), str(schema))  # the shipped config passes
    with pytest.raises(Exception, match=f"{value!r} is not of type"):
        validate(_set(smoke, path, value), str(schema))


def _numeric_leaves(tree, path=()):
    if isinstance(tree, bool):
        return
    if isinstance(tree, int | float):
        yield path
    elif isinstance(tree, dict):
        for key, value in tree.items():
            yield from _numeric_leaves(value, (*path, key))
    elif isinstance(tree, list):
        for i, value in enumerate(tree):
            yield from _numeric_leaves(value, (*path, i))


def _smoke_leaves() -> list[tuple]:
    with open(ROOT / "config" / "smoke.yaml", encoding="utf-8") as fh:
        config = yaml.safe_load(fh)
    return [
        ("studies", study, section, *leaf)
        for study, spec in config["studies"].items()
        for section in ("params", "grid")
        for leaf in _numeric_leaves(spec.get(section) or {})
    ]


SMOKE_LEAVES = _smoke_leaves()


@settings(max_examples=60, deadline=None, derandomize=True)
@given(leaf=st.sampled_from(SMOKE_LEAVES), how=st.sampled_from(["text", "bool"]))
def test_any_number_of_the_smoke_config_as_text_or_boolean_is_refused(smoke, leaf, how):
    node = smoke
    for key in leaf:
        node = node[key]
    value = str(node) if how == "text" else True
    with pytest.raises(ValueError):
        _check(_set(smoke, leaf, value))


@pytest.fixture(scope="module")
def paper() -> dict:
    with open(ROOT / "config" / "config.yaml", encoding="utf-8") as fh:
        return yaml.safe_load(fh)


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("cc_fig3_socp", "params", "cross_check_kappas"), [1.0, True]),
        (("cc_fig3_socp", "params", "cross_check_kappas"), [-10.0]),
        (("cc_table2", "params", "horizons"), [100, True]),
        (("cc_table2", "params", "horizons"), [-100]),
        (("cc_table4", "params", "a_gt1"), True),
        (("cc_table4", "params", "a_lt1"), -0.75),
        (("liang_fig2_bound", "params", "eps_exponent"), True),
    ],
)
def test_paper_config_numbers_are_checked_by_their_kind(paper, path, value):
    with pytest.raises(ValueError, match=path[-1]):
        check_config_references(_set(paper, ("studies", *path), value))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"bound_y": -3.0}, r"lev_solar.options.bound_y: must be >= 0; got -3.0"),
        ({"bound_X_per_sqrt_d": 0}, r"bound_X_per_sqrt_d must be a finite positive number"),
        ({"bound_y": True}, r"lev_solar.options.bound_y: must be a number; got True"),
        ({"bounds": "data-derived"}, r"bounds must be one of"),
        ({"split": 1.5}, r"lev_solar.options.split: must be an integer"),
    ],
)
def test_bad_loader_bounds_stop_the_dry_run(smoke, options, message):
    bad = copy.deepcopy(smoke)
    bad["datasets"]["lev_solar"]["options"].update(options)
    with pytest.raises(ValueError, match=message):
        check_config_references(bad)
