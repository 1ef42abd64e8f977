"""The API reference (docs/api) documents every public module of the library (issue 14)."""

from __future__ import annotations

import pkgutil
import re

import dpreg


def test_every_public_module_is_in_the_api_reference(repo_root):
    text = "".join(p.read_text() for p in (repo_root / "docs" / "api").glob("*.rst"))
    documented = set(re.findall(r"automodule:: (\S+)", text))
    modules = {
        m.name
        for m in pkgutil.walk_packages(dpreg.__path__, "dpreg.")
        if not m.ispkg and not m.name.rsplit(".", 1)[-1].startswith("_")
    }
    assert modules <= documented, f"missing from docs/api/*.rst: {sorted(modules - documented)}"
    assert documented <= modules, f"documented but gone: {sorted(documented - modules)}"
