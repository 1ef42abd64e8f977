"""``benchmarks/anchors.py``: the authors' code executed beside dpreg (issue 18).

No timing is asserted. The authors' files are read from the anchors directory beside the
repository (a folder ``shared/anchors``) or ``$DPREG_ANCHORS``; without them (no network in the
test) the tests that need them skip.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import anchors  # noqa: E402

from dpreg.data.acquire import DataIntegrityError  # noqa: E402


@pytest.fixture(scope="module")
def authors(tmp_path_factory):
    root = anchors.default_anchors_dir()
    if root is None or not (root / anchors.AUTHORS_REPO).is_dir():
        pytest.skip("the authors' code is not beside the repository")
    cache = tmp_path_factory.mktemp("anchors_cache")
    return anchors.fetch_authors_code(root, cache)


def test_the_script_splits_into_every_method_section(authors):
    script = anchors.parse_authors_script(authors["IterativeHessianMixing_main.py"].read_text())
    for banner, _ in anchors.SECTIONS.values():
        assert script.sections[banner], banner
    assert script.dataset_setup and script.epsilon_setup and script.constants


def test_a_changed_script_is_refused(tmp_path):
    with pytest.raises(ValueError, match="no loop over 'dataset_type'"):
        anchors.parse_authors_script("x = 1\n")
    root = tmp_path / "anchors"
    for name in anchors.AUTHORS_FILES:
        path = root / anchors.AUTHORS_REPO / anchors.AUTHORS_COMMIT / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("tampered\n")
    with pytest.raises(DataIntegrityError, match="sha256"):
        anchors.fetch_authors_code(root, tmp_path / "cache")


def test_holm_rejects_step_down():
    assert anchors.holm_reject([0.001, 0.04, 0.2], 0.05) == [True, False, False]
    assert anchors.holm_reject([0.01, 0.02, 0.03], 0.1) == [True, True, True]
    assert anchors.holm_reject([0.5], 0.01) == [False]


def test_a_tiny_side_by_side_run_writes_rows_and_laws(authors, tmp_path):
    out = tmp_path / "out"
    code = anchors.main(
        [
            "--quick",
            "--no-pin",
            "--datasets",
            "concreteslump",
            "--their-trials",
            "30",
            "--our-trials",
            "200",
            "--rounds",
            "1",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    import pandas as pd

    frame = pd.read_csv(out / "anchors.csv")
    assert set(frame["method"]) == {
        "linear_mixing",
        "ihm",
        "adassp",
        "dp_gd (rows)",
        "dp_gd (fast)",
    }
    assert (frame["their_trials"] == 30).all() and (frame["our_trials"] == 200).all()
    timed = ["their_mean_mse", "our_mean_mse", "speedup", "speedup_cpu"]
    assert np.isfinite(frame[timed]).all().all()
    assert (frame["our_cpu_seconds_per_trial"] > 0).all()
    # the same estimators under the same settings: no cell is rejected
    assert frame["laws_agree"].all(), frame[["method", "ks_pvalue", "welch_pvalue"]]
    assert "## Summary" in (out / "anchors.md").read_text()
