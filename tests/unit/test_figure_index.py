"""The figure index (docs/figures.md) is generated and never stale (issue 14)."""

from __future__ import annotations

import yaml

from dpreg.experiments.figure_index import figure_index, function_location


def test_docs_figures_md_is_up_to_date(repo_root):
    config = yaml.safe_load((repo_root / "config" / "config.yaml").read_text())
    fresh = figure_index(config)
    current = (repo_root / "docs" / "figures.md").read_text()
    assert current == fresh, (
        "docs/figures.md is stale: run `python -m dpreg.experiments.figure_index > docs/figures.md`"
    )


def test_every_study_is_one_row_and_every_location_exists(repo_root):
    config = yaml.safe_load((repo_root / "config" / "config.yaml").read_text())
    text = figure_index(config)
    rows = [line.split(" | ") for line in text.splitlines() if line.startswith("| ")]
    studies = [cells[1] for cells in rows if len(cells) > 2]
    for name in config["studies"]:
        assert studies.count(f"`{name}`") == 1, name  # the study column, not the kind
    for cell in text.split("`"):
        if cell.startswith("src/dpreg/") and "::" in cell:
            path, qualname = cell.split("::")
            source = (repo_root / path).read_text()
            assert f"def {qualname.split('.')[-1]}(" in source, cell


def test_function_location_follows_wrapped_functions():
    import functools

    @functools.wraps(function_location)
    def wrapper(*args, **kwargs):
        return function_location(*args, **kwargs)

    assert function_location(wrapper).endswith("figure_index.py::function_location")
