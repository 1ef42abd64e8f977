"""Typed specs of the Liang et al. (2025) kinds: every key refuses a wrong type or range."""

from __future__ import annotations

import dataclasses
import math
import typing

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpreg.experiments.kinds import get_kind
from dpreg.experiments.liang2025_angrist import IVAngristParams
from dpreg.experiments.liang2025_bound import IVBoundParams
from dpreg.experiments.liang2025_common import INF_STRINGS, as_rho, finite, zcdp_level
from dpreg.experiments.liang2025_synthetic import IVSyntheticParams

#: A valid cell of each spec with only its required keys.
MINIMAL = {
    IVSyntheticParams: {"algorithm": "dp_2s_gd", "n": 400, "p": 2, "q": 3, "T": 20},
    IVAngristParams: {"dataset": "angrist_liang"},
    IVBoundParams: {"n": 10_000.0, "p": 5, "q": 5},
}
FIELDS = [(spec, f) for spec in MINIMAL for f in dataclasses.fields(spec)]


def _id(case):
    spec, f = case
    return f"{spec.kind}.{f.name}"


def _takes_numbers(spec, f) -> bool:
    hint = str(typing.get_type_hints(spec)[f.name])
    return "float" in hint or "int" in hint


def _out_of_range(spec, f):
    """A value of the right type that the field's check refuses."""
    check = f.metadata["check"]
    hint = str(typing.get_type_hints(spec)[f.name])
    if check is finite:
        return math.inf
    if getattr(check, "text", "").startswith("one of"):
        return "no_such_choice"
    bad = -1 if hint.startswith("int") else -1.0
    return [bad, 1.0] if hint.startswith("list") else bad


@pytest.mark.parametrize("spec", list(MINIMAL), ids=lambda s: s.kind)
def test_the_kind_reads_its_spec_and_the_defaults_are_valid(spec):
    kind = get_kind(spec.kind)
    assert kind.params is spec
    assert kind.required == frozenset(MINIMAL[spec])
    kind.validate_cell(MINIMAL[spec])


@pytest.mark.parametrize(
    "case",
    [c for c in FIELDS if _takes_numbers(*c)],
    ids=[_id(c) for c in FIELDS if _takes_numbers(*c)],
)
@pytest.mark.parametrize("value", ["ten", True])
def test_text_or_a_boolean_for_a_number_is_refused_naming_kind_and_key(case, value):
    spec, f = case
    with pytest.raises(ValueError, match=rf"^{spec.kind}: {f.name} "):
        spec.from_cell({**MINIMAL[spec], f.name: value})


@pytest.mark.parametrize(
    "case",
    [c for c in FIELDS if c[1].metadata["check"] is not None],
    ids=[_id(c) for c in FIELDS if c[1].metadata["check"] is not None],
)
def test_an_out_of_range_value_is_refused_naming_kind_and_key(case):
    spec, f = case
    with pytest.raises(ValueError, match=rf"^{spec.kind}: {f.name} "):
        spec.from_cell({**MINIMAL[spec], f.name: _out_of_range(spec, f)})


@pytest.mark.parametrize("spec", list(MINIMAL), ids=lambda s: s.kind)
@pytest.mark.parametrize("text", [*INF_STRINGS, " Inf", "INFINITY"])
def test_infinite_budgets_are_accepted_as_yaml_inf_or_text(spec, text):
    P = spec.from_cell({**MINIMAL[spec], "rho1": text, "rho_split": None})
    assert as_rho(P.rho1) == math.inf
    P = spec.from_cell({**MINIMAL[spec], "rho_split": [math.inf, text]})
    assert [as_rho(v) for v in P.rho_split] == [math.inf, math.inf]


@given(
    st.floats(allow_nan=False, max_value=0.0)
    | st.text().filter(lambda t: t.strip().lower() not in INF_STRINGS)
)
def test_a_zcdp_level_is_positive_or_an_infinity(value):
    assert zcdp_level(value) is not None


@pytest.mark.parametrize(
    ("spec", "extra", "match"),
    [
        (IVSyntheticParams, {"rho": 1.0}, "iv_synthetic: use rho_split"),
        (IVSyntheticParams, {"rho_split": [1, 2], "rho2": 1}, "iv_synthetic: give rho_split"),
        (IVSyntheticParams, {"rho_split": [1, 2, 3]}, "iv_synthetic: rho_split must be a pair"),
        (IVSyntheticParams, {"clip": 1.0, "clip_beta": 1.0}, "iv_synthetic: give clip"),
        (IVSyntheticParams, {"alpha": 1.0, "alpha_scale": 0.5}, "iv_synthetic: alpha_scale"),
        (IVSyntheticParams, {"n": 3}, "iv_synthetic: need n > q"),
        (IVSyntheticParams, {"conversion": "loose"}, "iv_synthetic: conversion"),
        (IVAngristParams, {"rho": 1.0, "rho1": 1.0}, "iv_angrist: give rho"),
        (IVAngristParams, {"clip_rule": "explicit", "clip_beta": 1.0}, "iv_angrist: clip_rule"),
        (IVBoundParams, {"T_min": 10.0, "T_max_grid": 5.0}, "iv_bound_curve: need T_max_grid"),
    ],
)
def test_rules_across_keys_name_the_kind(spec, extra, match):
    with pytest.raises(ValueError, match=match):
        get_kind(spec.kind).validate_cell({**MINIMAL[spec], **extra})
