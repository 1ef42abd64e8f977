"""Registration is explicit: one table each for estimators, study kinds, claims and loaders.

Nothing registers by import side effect, so a thing missing from its table is found
here, not silently skipped (issue 14).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest
import yaml

import dpreg.data
import dpreg.estimators
import dpreg.experiments
from dpreg.data.loaders import BUILTIN_LOADERS
from dpreg.estimators.registry import BUILTIN_ESTIMATORS, get_estimator, register
from dpreg.experiments.claims import CLAIM_CHECKS, check_claims
from dpreg.experiments.kinds import BUILTIN_KINDS, get_kind, register_kind
from dpreg.experiments.study_kind import StudyKind


def _modules(package):
    for info in pkgutil.iter_modules(package.__path__):
        yield importlib.import_module(f"{package.__name__}.{info.name}")


def test_every_public_fit_function_is_in_the_estimator_table():
    table = set(BUILTIN_ESTIMATORS.values())
    missing = [
        f"{module.__name__}.{name}"
        for module in _modules(dpreg.estimators)
        for name, func in inspect.getmembers(module, inspect.isfunction)
        if name.startswith("fit_")
        and func.__module__ == module.__name__
        and func not in table
        # an estimator takes the data first; fit_method(name, X, y) dispatches to them
        and next(iter(inspect.signature(func).parameters)) in ("X", "Z")
    ]
    assert not missing, f"estimators missing from BUILTIN_ESTIMATORS: {missing}"


def test_every_study_kind_defined_is_in_the_kind_table():
    table = set(map(id, BUILTIN_KINDS.values()))
    missing = [
        f"{module.__name__}.{name}"
        for module in _modules(dpreg.experiments)
        for name, value in vars(module).items()
        if isinstance(value, StudyKind) and id(value) not in table
    ]
    assert not missing, f"study kinds missing from BUILTIN_KINDS: {missing}"
    assert all(name == kind.name for name, kind in BUILTIN_KINDS.items())


def test_every_claims_module_is_in_the_claims_table():
    modules = [m for m in _modules(dpreg.experiments) if m.__name__.endswith("_claims")]
    registered = {inspect.getmodule(f) for f in CLAIM_CHECKS.values()}
    assert set(modules) == registered


@pytest.mark.parametrize("config", ["config.yaml", "smoke.yaml"])
def test_every_paper_and_kind_of_the_configs_is_registered(repo_root, config):
    studies = yaml.safe_load((repo_root / "config" / config).read_text())["studies"]
    assert {s["paper"] for s in studies.values()} <= set(CLAIM_CHECKS)
    assert {s["kind"] for s in studies.values()} <= set(BUILTIN_KINDS)
    assert set(BUILTIN_KINDS) <= {s["kind"] for s in studies.values()}, "a kind no study runs"


def test_every_loader_module_table_is_in_the_loader_table():
    for module in (dpreg.data.uci, dpreg.data.lev2026, dpreg.data.angrist, dpreg.data.regimes):
        assert module.LOADERS.items() <= BUILTIN_LOADERS.items()


def test_unknown_and_duplicate_names_are_refused():
    with pytest.raises(ValueError, match="unknown estimator 'olss'.*ols"):
        get_estimator("olss")
    with pytest.raises(ValueError, match="registered twice"):
        register("ols", BUILTIN_ESTIMATORS["adassp"])
    with pytest.raises(ValueError, match="unknown study kind"):
        get_kind("eps-grid")
    clash = StudyKind(name="eps_grid", run=len, summarise=len, figure=len)
    with pytest.raises(ValueError, match="registered twice"):
        register_kind(clash)
    with pytest.raises(ValueError, match="no claim checks for paper"):
        check_claims("nobody2030", {})
