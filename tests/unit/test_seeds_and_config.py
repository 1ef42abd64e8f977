from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

from dpreg.config import eps_label, study_cells, value_label
from dpreg.seeds import job_seed, wildcard_key


def test_job_seed_is_order_independent_and_stable_across_processes():
    a = job_seed(7, {"study": "s", "eps": "0.1", "chunk": "000"})
    b = job_seed(7, {"chunk": "000", "eps": "0.1", "study": "s"})
    assert a == b
    code = (
        "from dpreg.seeds import job_seed;"
        " print(job_seed(7, {'study': 's', 'eps': '0.1', 'chunk': '000'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert int(out.stdout) == a  # no salted hash(): a new interpreter gives the same seed


def test_job_seed_differs_across_wildcards_and_master_seeds():
    seeds = {job_seed(m, {"study": "s", "chunk": f"{c:03d}"}) for m in range(3) for c in range(50)}
    assert len(seeds) == 150


def test_job_seed_matches_independent_seedsequence():
    import zlib

    key = zlib.crc32(b"chunk=001/study=x")
    expected = np.random.SeedSequence([11, key]).generate_state(1, dtype=np.uint64)[0]
    assert wildcard_key({"study": "x", "chunk": "001"}) == "chunk=001/study=x"
    assert job_seed(11, {"study": "x", "chunk": "001"}) == int(expected)


@pytest.mark.parametrize("bad", [-1, 1.5, "3", True])
def test_job_seed_rejects_bad_master_seed(bad):
    with pytest.raises((TypeError, ValueError), match="master_seed"):
        job_seed(bad, {})


def test_study_cells_cover_all_trials_exactly_once():
    config = {
        "conversion": "tight",
        "studies": {
            "s": {
                "grid": {"dataset": ["a", "b"], "estimator": ["adassp"], "epsilon": [0.1, 1.0]},
                "params": {"delta_rule": "inverse_n_squared"},
                "trials": 23,
                "chunk_size": 10,
            }
        },
    }
    cells = list(study_cells(config, "s"))
    assert len(cells) == 2 * 1 * 2 * math.ceil(23 / 10)
    paths = {c.path for c in cells}
    assert "dataset~a/estimator~adassp/epsilon~0.1" in paths
    for path in paths:
        chunk = [c for c in cells if c.path == path]
        covered = [t for c in chunk for t in range(c.first_trial, c.first_trial + c.trials)]
        assert covered == list(range(23))
    params = cells[0].params(config)
    assert params == {
        "delta_rule": "inverse_n_squared",
        "dataset": "a",
        "estimator": "adassp",
        "epsilon": 0.1,
        "conversion": "tight",
    }


def test_value_labels():
    assert value_label([1, 9]) == "1_9"
    assert value_label(float("inf")) == "inf"
    assert value_label(True) == "true"
    assert value_label(1000) == "1000"
    with pytest.raises(ValueError, match="path label"):
        value_label("a/b")


def test_eps_label_is_six_significant_digits():
    assert eps_label(0.25118864315095796) == "0.251189"
    assert eps_label(10.0) == "10"


def test_disabled_datasets_leave_grids_and_references():
    from dpreg.config import check_config_references, reference_datasets, study_datasets

    config = {
        "conversion": "tight",
        "datasets": {
            "lev_solar": {"loader": "lev_solar"},
            "lev_slice": {"loader": "lev_slice", "enabled": False},
        },
        "references": {"datasets": ["lev_solar", "lev_slice"]},
        "studies": {
            "s": {
                "kind": "eps_grid",
                "grid": {"dataset": ["lev_solar", "lev_slice"]},
                "params": {
                    "estimator": "adassp",
                    "epsilon": 1.0,
                    "delta_rule": "inverse_n_squared",
                },
                "trials": 4,
                "chunk_size": 4,
            }
        },
    }
    check_config_references(config)
    assert {c.path for c in study_cells(config, "s")} == {"dataset~lev_solar"}
    assert study_datasets(config, "s") == ["lev_solar"]
    assert reference_datasets(config) == ["lev_solar"]
    config["datasets"]["lev_solar"]["enabled"] = False
    with pytest.raises(ValueError, match="every dataset is disabled"):
        check_config_references(config)


# --- jobs: chunks_per_job consecutive chunks of a study (issue 18) ---------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from dpreg.config import find_job, study_chunks_per_job, study_jobs  # noqa: E402


def _jobs_config(trials, chunk_size, epsilons, top=None, own=None):
    spec = {"grid": {"epsilon": epsilons}, "trials": trials, "chunk_size": chunk_size}
    if own is not None:
        spec["chunks_per_job"] = own
    config = {"conversion": "tight", "studies": {"s": spec}}
    if top is not None:
        config["chunks_per_job"] = top
    return config


@settings(max_examples=60, deadline=None)
@given(
    trials=st.integers(1, 40),
    chunk_size=st.integers(1, 45),
    cells=st.integers(1, 6),
    top=st.one_of(st.none(), st.integers(1, 9)),
    own=st.one_of(st.none(), st.integers(1, 9)),
)
def test_jobs_partition_the_chunks_in_order(trials, chunk_size, cells, top, own):
    config = _jobs_config(trials, chunk_size, [float(e) for e in range(1, cells + 1)], top, own)
    size = own if own is not None else (top if top is not None else 1)
    assert study_chunks_per_job(config, "s") == size
    jobs = study_jobs(config, "s")
    flat = [cell for job in jobs for cell in job]
    assert flat == list(study_cells(config, "s"))  # every chunk once, in grid order
    assert all(len(job) == size for job in jobs[:-1]) and 1 <= len(jobs[-1]) <= size
    assert [find_job(config, "s", j) for j in range(len(jobs))] == jobs
    with pytest.raises(ValueError, match="has no job"):
        find_job(config, "s", len(jobs))


@pytest.mark.parametrize("bad", [0, -2, 1.5, "4", True, None])
@pytest.mark.parametrize("where", ["top", "own"])
def test_chunks_per_job_rejects_non_positive_integers_naming_the_key(bad, where):
    config = _jobs_config(4, 2, [1.0])
    (config if where == "top" else config["studies"]["s"])["chunks_per_job"] = bad
    key = "config chunks_per_job" if where == "top" else "config studies.s.chunks_per_job"
    with pytest.raises(ValueError, match=key):
        study_chunks_per_job(config, "s")
