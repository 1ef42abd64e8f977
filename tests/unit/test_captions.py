"""Report captions: one per study, true to the study (issue 14)."""

from __future__ import annotations

import pytest
import yaml

from dpreg.experiments.captions import FIGURE_DESCRIPTIONS, study_caption
from dpreg.experiments.kinds import STUDY_KINDS, get_kind


@pytest.fixture(scope="module", params=["config.yaml", "smoke.yaml"])
def config(request, repo_root):
    return yaml.safe_load((repo_root / "config" / request.param).read_text())


def test_every_registered_kind_has_a_figure_description():
    get_kind("eps_grid")  # loads the built-in kinds
    assert set(STUDY_KINDS) <= set(FIGURE_DESCRIPTIONS)
    assert set(FIGURE_DESCRIPTIONS) <= set(STUDY_KINDS), "a description of no kind"


@pytest.mark.parametrize("what", ["figure", "table"])
def test_every_caption_names_its_study_title_and_grid(config, what):
    captions = {}
    for name, study in config["studies"].items():
        text = study_caption(name, config, what)
        assert f"``{name}``" in text
        assert str(study.get("title") or name) in text.replace("\\", "")  # RST escapes
        assert f"kind ``{study['kind']}``" in text
        for axis in study.get("grid") or {}:
            assert f"{axis}: " in text
        captions[name] = text
    # No two studies share a caption.
    assert len(set(captions.values())) == len(captions)


def test_bounds_sentence_says_where_the_bounds_come_from(config):
    studies = config["studies"]
    for name, study in studies.items():
        if study["kind"] != "eps_grid":
            continue
        text = study_caption(name, config)
        datasets = (study.get("grid") or {}).get("dataset") or []
        if all(d.endswith("_public") for d in datasets):
            assert "public constants" in text and "NOT private" not in text
        elif datasets and not any(d.endswith("_public") for d in datasets):
            assert "NOT private" in text


def test_bad_what_is_refused(config):
    name = next(iter(config["studies"]))
    with pytest.raises(ValueError, match="what"):
        study_caption(name, config, "poster")
