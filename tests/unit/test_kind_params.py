"""Typed parameter specs of study kinds: keys, defaults, messages and docs from one place."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
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
