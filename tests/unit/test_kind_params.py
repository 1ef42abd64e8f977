"""Typed parameter specs of study kinds: keys, defaults, messages and docs from one place."""

from __future__ import annotations

import dataclasses
import math
import re
import types
import typing

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpreg.experiments.kinds import BUILTIN_KINDS
from dpreg.experiments.privacy_audit import AuditParams

SPECS = {name: kind.params for name, kind in BUILTIN_KINDS.items() if kind.params is not None}


def test_at_least_the_audit_kind_has_a_typed_spec():
    assert "privacy_audit" in SPECS


@pytest.mark.parametrize("name", sorted(SPECS))
def test_keys_of_the_kind_come_from_its_spec(name):
    kind, spec = BUILTIN_KINDS[name], SPECS[name]
    assert kind.required == spec.required_keys() and kind.optional == spec.optional_keys()
    assert spec.kind == name


@pytest.mark.parametrize("name", sorted(SPECS))
def test_config_readme_holds_the_generated_table(repo_root, name):
    readme = (repo_root / "config" / "README.md").read_text()
    spec = SPECS[name]
    block = re.search(
        rf"<!-- generated from {spec.__name__} [^\n]*-->\n(.*?)\n<!-- end generated -->",
        readme,
        re.S,
    )
    assert block, f"config/README.md has no generated table for {spec.__name__}"
    assert block.group(1) == spec.markdown_table(), (
        f"config/README.md's table of {name} is stale: paste {spec.__name__}.markdown_table()"
    )


def test_defaults_fill_in_and_values_are_typed():
    params = AuditParams.from_cell({"estimator": "adassp", "epsilon": 1, "delta": 1e-5})
    assert params.alpha == 0.05 and params.epsilon == 1


@given(
    value=st.one_of(
        st.text(max_size=5), st.booleans(), st.none(), st.floats(max_value=0), st.lists(st.none())
    )
)
def test_a_bad_epsilon_is_refused_with_a_message_naming_kind_and_key(value):
    with pytest.raises(ValueError, match=r"^privacy_audit: epsilon "):
        AuditParams.from_cell({"estimator": "adassp", "epsilon": value, "delta": 1e-5})


def test_a_missing_key_is_named():
    with pytest.raises(ValueError, match=r"missing key\(s\) \['delta'\]"):
        AuditParams.from_cell({"estimator": "adassp", "epsilon": 1.0})


# ------------------------------ the Brown et al., Choquette-Choo and iv_table kinds

#: A valid cell (the required keys) of each kind whose spec is tested field by field.
VALID_CELLS: dict[str, dict] = {
    "brown_error_vs_dim": {"p": 5},
    "brown_cost_of_privacy": {"n": 500, "p": 5},
    "brown_clip_heatmap": {"p": 5, "gamma": [2.0]},
    "brown_bias_variance": {"n": 500, "p": 5, "clip_scales": [1.0]},
    "brown_error_vs_clipping": {"n": 500, "p": 5, "clip_scales": [1.0]},
    "brown_ci": {"n": 500, "p": 5, "total_steps": 100},
    "ftrl_mean_ratio": {"etas": [0.1]},
    "ftrl_theory_table": {"table": "table1"},
    "ftrl_linreg_sim": {"panel": "d", "mechanism": "sgd"},
    "ftrl_socp_bound": {},
    "ftrl_quoted": {},
    "iv_table": {"dataset": "toy", "epsilon": 1.0},
}


def _scalar_types(annotation) -> tuple[set, bool]:
    """The scalar types a key takes, and whether only a list of them is allowed."""
    union = typing.get_origin(annotation) in (typing.Union, types.UnionType)
    args = typing.get_args(annotation) if union else (annotation,)
    scalars, lists = set(), set()
    for arg in args:
        if typing.get_origin(arg) is list:
            lists |= set(typing.get_args(arg))
        elif arg is not type(None):
            scalars.add(arg)
    return scalars | lists, not scalars


FIELDS = [
    (name, f.name, *_scalar_types(typing.get_type_hints(SPECS[name])[f.name]), f.metadata)
    for name in VALID_CELLS
    for f in dataclasses.fields(SPECS[name])
]
NUMERIC = [f for f in FIELDS if f[2] & {int, float}]
CHECKED = [f for f in FIELDS if f[4]["check"] is not None]


def test_every_kind_of_both_papers_has_a_spec_and_a_valid_cell():
    for name in VALID_CELLS:
        assert SPECS[name].kind == name
        SPECS[name].from_cell(VALID_CELLS[name])
        BUILTIN_KINDS[name].validate_cell(VALID_CELLS[name])


def _cell(name, key, value, only_list):
    return {**VALID_CELLS[name], key: [value] if only_list else value}


@pytest.mark.parametrize(("name", "key", "scalars", "only_list", "meta"), NUMERIC)
@pytest.mark.parametrize("value", ["1", "0.5", True, False])
def test_text_or_a_boolean_for_a_number_is_refused_naming_kind_and_key(
    name, key, scalars, only_list, meta, value
):
    with pytest.raises(ValueError, match=rf"^{name}: {key} must be "):
        SPECS[name].from_cell(_cell(name, key, value, only_list))


def _type_ok(scalars: set, value) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, str):
        return str in scalars
    if isinstance(value, float):
        return float in scalars and not math.isnan(value)
    return bool({int, float} & scalars)


CANDIDATES = [-1e9, -1, -0.5, 0, 0.5, 1, 1.5, 2, 10**9, math.inf, -math.inf, "not-an-option"]


@pytest.mark.parametrize(("name", "key", "scalars", "only_list", "meta"), CHECKED)
def test_every_checked_key_refuses_some_value_naming_kind_and_key(
    name, key, scalars, only_list, meta
):
    bad = [v for v in CANDIDATES if _type_ok(scalars, v) and meta["check"](v)]
    assert bad, f"{name}.{key}: its check refuses none of {CANDIDATES}"
    for value in bad:
        with pytest.raises(ValueError, match=rf"^{name}: {key} must "):
            SPECS[name].from_cell(_cell(name, key, value, only_list))


@pytest.mark.parametrize(("name", "key", "scalars", "only_list", "meta"), CHECKED)
@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    value=st.one_of(
        st.integers(-(10**6), 10**6),
        st.floats(allow_nan=False),
        st.sampled_from([0, 1, 2, 0.5, 1.0, math.inf, "tuned", "eta_mu", "x"]),
    )
)
def test_a_value_is_accepted_exactly_when_its_type_and_range_fit(
    name, key, scalars, only_list, meta, value
):
    """Property: ``from_cell`` refuses a value iff its type or its key's range refuses it."""
    fits = _type_ok(scalars, value) and meta["check"](value) is None
    cell = _cell(name, key, value, only_list)
    if fits:
        assert getattr(SPECS[name].from_cell(cell), key) == cell[key]
    else:
        with pytest.raises(ValueError, match=rf"^{name}: {key} must "):
            SPECS[name].from_cell(cell)
