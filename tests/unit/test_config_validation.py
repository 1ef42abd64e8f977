"""Config errors stop the dry run with a message naming the key (issue 13)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from dpreg.config import check_config_references, check_hyper_blocks, check_no_duplicate_keys

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def smoke() -> dict:
    with open(ROOT / "config" / "smoke.yaml", encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def _study(config: dict, **params) -> dict:
    bad = copy.deepcopy(config)
    bad["studies"]["adassp_uci"]["params"].update(params)
    return bad


def test_the_shipped_configs_pass(smoke):
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
        ({"delta_rule": "fixed", "delta": 1.5}, {}, "delta must lie in the open interval"),
        ({"bound_X": -1.0}, {}, "bound_X must be"),
        ({"bound_y": "2"}, {}, "bound_y must be a real number"),
        ({}, {"epsilon": ["1.0"]}, "epsilon"),
        ({}, {"epsilon": [True]}, "epsilon"),
        ({}, {"estimator": ["dp_2s_gd"]}, "IV estimator"),
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
