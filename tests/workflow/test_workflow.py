"""End-to-end: the smoke config runs, is complete, is idempotent and is reproducible."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from dpreg.experiments.claims import papers_with_claims

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent
SNAKEMAKE = str(BIN / "snakemake")
COPY = ["Snakefile", "profiles", "workflow", "config", "data"]


def _copy_repo(repo_root: Path, dest: Path) -> Path:
    dest.mkdir(parents=True)
    for name in COPY:
        src = repo_root / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, dest / name)
    return dest


def _snakemake(
    workdir: Path, *args: str, check: bool = True, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        # "--configfile=" with "=": nargs="+" would also swallow targets that follow it.
        [SNAKEMAKE, "--configfile=config/smoke.yaml", *args],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")
    return proc


def _deterministic_artifacts(workdir: Path) -> dict[str, bytes]:
    results = workdir / "results"
    paths = sorted(results.glob("tables/**/*.csv")) + sorted(results.glob("tables/**/*.md"))
    paths += sorted(results.glob("figures/**/*.png"))
    paths += sorted(results.glob("references/*.json"))
    paths.append(results / "MANIFEST.sha256")
    return {str(p.relative_to(workdir)): p.read_bytes() for p in paths if p.is_file()}


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory, repo_root):
    # Data come from DPREG_DATA_MIRROR when set (conftest finds ../shared/data/mirror),
    # else from the manifest URLs (sha256-verified either way).
    workdir = _copy_repo(repo_root, tmp_path_factory.mktemp("smoke") / "repo")
    _snakemake(workdir, "--cores", "2")
    return workdir


@pytest.fixture(scope="module")
def smoke_config(repo_root):
    return yaml.safe_load((repo_root / "config" / "smoke.yaml").read_text())


def test_every_expected_artifact_is_present_and_well_formed(smoke_run, smoke_config):
    from dpreg.config import reference_datasets

    results = smoke_run / "results"
    for name in reference_datasets(smoke_config):
        ref = json.loads((results / "references" / f"{name}.json").read_text())
        assert ref["dataset"] == name
        assert len(ref["ols"]["params"]) == ref["d"]
        if ref["ols"]["rank"] == ref["d"]:  # rank-deficient designs (Solar) are not identified
            assert all(se > 0 for se in ref["ols"]["std_errors"])
    for study, spec in smoke_config["studies"].items():
        paper = spec["paper"]
        table = pd.read_csv(results / "tables" / paper / f"{study}.csv")
        cells = math.prod(len(axis) for axis in spec.get("grid", {}).values())
        trials = pd.read_parquet(results / "tables" / paper / f"{study}.trials.parquet")
        # Each chunk returns a positive multiple of its trials (run_cell's contract); kinds
        # may return several rows per trial (one per estimator, method, ...), not the same
        # number in every cell (e.g. a CI construction skipped for short runs).
        assert len(trials) % spec["trials"] == 0 and len(trials) >= cells * spec["trials"]
        assert trials["trial"].nunique() == spec["trials"]
        assert trials["seed"].notna().all()
        table = pd.read_csv(results / "tables" / paper / f"{study}.csv")
        assert len(table) >= 1
        if spec["kind"] == "eps_grid":
            params = {**spec.get("params", {}), **spec.get("grid", {})}
            pairs = math.prod(
                len(v) if isinstance(v, list) else 1
                for k, v in params.items()
                if k in ("estimator", "epsilon") and k not in spec.get("grid", {})
            )
            assert len(table) == cells * pairs
            assert (table["trials"] == spec["trials"]).all()
            assert table[["mean", "se", "mse_ols", "rho", "delta"]].notna().all().all()
            assert (table["mean"] >= table["mse_ols"] * (1 - 1e-9)).all()
            for column in ("epsilon", "delta", "rho", "conversion", "budget_unit"):
                assert trials[column].notna().all(), column
            assert set(trials["conversion"]) == {smoke_config["conversion"]}
        png = (results / "figures" / paper / f"{study}.png").read_bytes()
        assert png.startswith(b"\x89PNG")
        assert (results / "figures" / paper / f"{study}.pdf").read_bytes().startswith(b"%PDF")
    papers = {spec["paper"] for spec in smoke_config["studies"].values()}
    for paper in sorted(papers & set(papers_with_claims())):
        claims = pd.read_csv(
            results / "tables" / paper / "claims" / "claims.csv", keep_default_na=False
        )
        assert len(claims) > 0
        assert set(claims["passed"]) <= {"yes", "NO", "n/a"}
    manifest = (results / "MANIFEST.sha256").read_text().splitlines()
    assert len(manifest) >= len(reference_datasets(smoke_config)) + 2


def test_job_benchmarks_table_covers_every_chunk_job(smoke_run):
    table = pd.read_csv(smoke_run / "results" / "benchmarks" / "jobs.csv")
    row = table.set_index("rule").loc["run_chunk"]
    chunks = list((smoke_run / "results" / "runs").rglob("job~*.parquet"))
    assert int(row["jobs"]) == len(chunks)
    assert 0 < row["max_s"] <= row["total_s"]
    assert row["max_rss_mb"] > 10  # a Python process with numpy holds more than 10 MB
    assert str(row["largest_job"]) and str(row["slowest_job"])


def test_second_run_has_nothing_to_do(smoke_run):
    proc = _snakemake(smoke_run, "--cores", "1", "--dry-run")
    assert "Nothing to be done" in proc.stdout + proc.stderr


def test_mirror_is_not_identity(smoke_run, tmp_path):
    """Where a file came from never changes what depends on it (the sha256 is the identity).

    The same workflow without a mirror, and with the mirror moved, has nothing to rerun.
    """
    mirror = os.environ.get("DPREG_DATA_MIRROR")
    if not mirror:
        pytest.skip("the smoke run used downloads, not a mirror")
    without = {k: v for k, v in os.environ.items() if k != "DPREG_DATA_MIRROR"}
    moved = tmp_path / "moved-mirror"
    moved.symlink_to(Path(mirror).resolve(), target_is_directory=True)
    for env in (without, {**without, "DPREG_DATA_MIRROR": str(moved)}):
        proc = _snakemake(smoke_run, "--cores", "1", "--dry-run", env=env)
        assert "Nothing to be done" in proc.stdout + proc.stderr, proc.stdout


def test_report_builds(smoke_run):
    from dpreg.experiments.captions import study_caption

    _snakemake(smoke_run, "--report", "report.html")
    html = (smoke_run / "report.html").read_text(errors="replace")
    assert "<html" in html.lower()
    # Every study's figure and table carry its own caption, rendered without RST errors.
    assert "system-message" not in html and "problematic" not in html
    config = yaml.safe_load((smoke_run / "config" / "smoke.yaml").read_text())
    for name, study in config["studies"].items():
        title = str(study.get("title") or name)
        caption = study_caption(name, config)
        literal = f'study <tt class=\\"docutils literal\\">{name}</tt>'  # JSON-escaped
        assert html.count(literal) >= 2, name
        assert title.replace('"', '\\"') in html, title
        assert "Grid (" in caption or "One cell" in caption


def _rechunked(config: dict) -> dict:
    """The same studies with every chunking changed (results must not change, issue 8).

    Chunks are grouped into jobs differently too (``chunks_per_job``: 1 <-> 3).
    """
    import copy

    from dpreg.config import study_seed_block

    config = copy.deepcopy(config)
    config["chunks_per_job"] = 1 if config.get("chunks_per_job", 1) > 1 else 3
    for spec in config["studies"].values():
        spec.pop("chunks_per_job", None)
        trials, block = spec["trials"], study_seed_block(spec)
        if spec["chunk_size"] < trials:
            spec["chunk_size"] = trials  # merge the chunks into one job
        elif trials > block:
            spec["chunk_size"] = block  # split one job into a chunk per seed block
    return config


def test_rerun_with_other_chunks_is_byte_identical(smoke_run, tmp_path, repo_root):
    from dpreg.config import study_jobs

    # Another job order too (Snakemake schedules 2 cores nondeterministically); a run with
    # --cores 1 is covered by the resumption test, a cluster run by the SLURM test. Only
    # the studies whose chunking changes are rebuilt (their tables, trials and figures):
    # the others would repeat the first run (the CI budget), and the report-level
    # artifacts are compared by the other reproducibility tests.
    other = _copy_repo(repo_root, tmp_path / "again")
    original = yaml.safe_load((other / "config" / "smoke.yaml").read_text())
    before = {name: spec["chunk_size"] for name, spec in original["studies"].items()}
    config = _rechunked(original)
    changed = {n: s for n, s in config["studies"].items() if s["chunk_size"] != before[n]}
    assert len(changed) >= 2, "the rerun was meant to chunk several studies differently"
    (other / "config" / "smoke.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    targets = [f"results/tables/{s['paper']}/{n}.csv" for n, s in changed.items()]
    targets += [f"results/figures/{s['paper']}/{n}.png" for n, s in changed.items()]
    _snakemake(other, *targets, "--cores", "2")
    for name in changed:
        layouts = [
            [[(c.path, c.chunk, c.trials) for c in job] for job in study_jobs(conf, name)]
            for conf in (original, config)
        ]
        assert layouts[0] != layouts[1], f"{name}: the rerun was meant to chunk it differently"
        for w, layout in zip((smoke_run, other), layouts, strict=True):
            files = list((w / "results" / "runs" / name).glob("job~*.parquet"))
            assert len(files) == len(layout), f"{name}: one run file per job"
    first, second = _deterministic_artifacts(smoke_run), _deterministic_artifacts(other)
    rebuilt = [
        path for path in second if any(f"/{n}." in path or path.endswith(f"/{n}") for n in changed)
    ]
    assert len(rebuilt) >= 2 * len(changed)
    differing = [name for name in rebuilt if first.get(name) != second[name]]
    assert not differing, f"artifacts differ between runs: {differing}"
    # Per-trial files are byte-identical too (no timings in them: those are in benchmarks/).
    for name, spec in changed.items():
        path = smoke_run / "results" / "tables" / spec["paper"] / f"{name}.trials.parquet"
        again = other / path.relative_to(smoke_run)
        pd.testing.assert_frame_equal(
            pd.read_parquet(path), pd.read_parquet(again), check_exact=True
        )  # names the first differing column if the bytes differ
        assert path.read_bytes() == again.read_bytes(), path


def test_bad_config_key_stops_with_a_message_naming_it(tmp_path, repo_root):
    workdir = _copy_repo(repo_root, tmp_path / "bad")
    config = yaml.safe_load((workdir / "config" / "smoke.yaml").read_text())
    config["studies"]["adassp_uci"]["trails"] = 3
    (workdir / "config" / "smoke.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    proc = _snakemake(workdir, "--cores", "1", "--dry-run", check=False)
    assert proc.returncode != 0
    assert "trails" in proc.stdout + proc.stderr


def test_a_study_name_written_twice_stops_the_dry_run(tmp_path, repo_root):
    workdir = _copy_repo(repo_root, tmp_path / "bad")
    text = (workdir / "config" / "smoke.yaml").read_text()
    top_level = [
        line for line in text.splitlines() if line and not line[0].isspace() and line[0] != "#"
    ]
    assert top_level[-1].startswith("studies:"), "studies must be the last block"
    # YAML (hence Snakemake) keeps the second silently: the first study would vanish
    text = text.rstrip() + "\n  adassp_uci:\n    paper: lev2026\n"
    (workdir / "config" / "smoke.yaml").write_text(text)
    proc = _snakemake(workdir, "--cores", "1", "--dry-run", check=False)
    assert proc.returncode != 0
    assert "key 'adassp_uci' appears twice" in proc.stdout + proc.stderr


@pytest.mark.parametrize(
    ("mutate", "needle"),
    [
        (lambda c: c["studies"]["adassp_uci"]["grid"]["estimator"].append("no_such"), "no_such"),
        (lambda c: c["studies"]["adassp_uci"]["grid"]["dataset"].append("nowhere"), "nowhere"),
        (lambda c: c["studies"]["adassp_uci"]["grid"].update({"epsilon": [0.0]}), "epsilon"),
        (lambda c: c["studies"]["adassp_uci"]["params"].update({"detla_rule": "x"}), "detla_rule"),
        (lambda c: c["datasets"]["airfoil"].update({"preprocessing": "zscore"}), "zscore"),
        # issue 13: each of these used to pass the dry run and fail (or be ignored) later
        (
            lambda c: (
                c["studies"]["adassp_uci"]["grid"].update({"estimator": ["dp_2s_gd"]}),
                c["studies"]["adassp_uci"]["params"].pop("hyper", None),
            ),
            "IV estimator",
        ),
        (
            lambda c: c["studies"]["lev_fig1"]["params"]["hyper"].update({"adasp": {}}),
            "['adasp'] not run by this study",
        ),
        (
            lambda c: c["studies"]["liang_fig3a"]["params"].update({"delta": "1e-5"}),
            "liang_fig3a.params.delta: '1e-5' is text, not a number",
        ),
    ],
)
def test_bad_config_values_stop_with_a_clear_message(tmp_path, repo_root, mutate, needle):
    workdir = _copy_repo(repo_root, tmp_path / "bad")
    config = yaml.safe_load((workdir / "config" / "smoke.yaml").read_text())
    mutate(config)
    (workdir / "config" / "smoke.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    proc = _snakemake(workdir, "--cores", "1", "--dry-run", check=False)
    assert proc.returncode != 0
    assert needle in proc.stdout + proc.stderr


# --- resumption (issue 8) -------------------------------------------------------------------

KILLED_STUDY = "adassp_uci"


def _subset_workdir(repo_root: Path, dest: Path, studies: list[str]) -> Path:
    """A copy whose smoke config holds only ``studies`` (and the datasets they read)."""
    from dpreg.config import study_datasets

    workdir = _copy_repo(repo_root, dest)
    config = yaml.safe_load((workdir / "config" / "smoke.yaml").read_text())
    config["studies"] = {name: config["studies"][name] for name in studies}
    names = {d for name in studies for d in study_datasets(config, name)}
    config["datasets"] = {k: v for k, v in config["datasets"].items() if k in names}
    if not config["datasets"]:  # the schema wants one dataset; keep one, unused
        first = next(
            iter(
                yaml.safe_load((repo_root / "config" / "smoke.yaml").read_text())[
                    "datasets"
                ].items()
            )
        )
        config["datasets"] = dict([first])
    config["references"] = {"extra": []}
    (workdir / "config" / "smoke.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return workdir


def _subset_artifacts(workdir: Path, config: dict) -> dict[str, bytes]:
    """The subset's own study outputs and references (claims depend on every study)."""
    wanted = {f"/{spec['paper']}/{name}." for name, spec in config["studies"].items()}
    from dpreg.config import reference_datasets

    references = {f"results/references/{name}.json" for name in reference_datasets(config)}
    return {
        name: data
        for name, data in _deterministic_artifacts(workdir).items()
        if any(w in name for w in wanted) or name in references
    }


def _assert_subset_equal(reference: Path, workdir: Path) -> None:
    config = yaml.safe_load((workdir / "config" / "smoke.yaml").read_text())
    expected, got = _subset_artifacts(reference, config), _subset_artifacts(workdir, config)
    assert expected and expected.keys() == got.keys()
    assert [k for k in expected if expected[k] != got[k]] == []
    for name, spec in config["studies"].items():
        trials = f"results/tables/{spec['paper']}/{name}.trials.parquet"
        pd.testing.assert_frame_equal(
            pd.read_parquet(reference / trials), pd.read_parquet(workdir / trials), check_exact=True
        )
        assert (reference / trials).read_bytes() == (workdir / trials).read_bytes(), trials


def _stale_files(workdir: Path) -> list[str]:
    found = []
    for root in ("results", "resources"):
        for pattern in (".*.tmp", ".*.part"):
            found += [str(p) for p in (workdir / root).rglob(pattern)]
    incomplete = workdir / ".snakemake" / "incomplete"
    if incomplete.is_dir():
        found += [str(p) for p in incomplete.rglob("*") if p.is_file()]
    return found


def _start_killable_run(workdir: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [SNAKEMAKE, "--configfile=config/smoke.yaml", "--cores", "1"],
        cwd=workdir,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its own process group: a signal to it reaches every job
    )


def _wait_inside_a_chunk_job(proc: subprocess.Popen, workdir: Path, chunks: int) -> None:
    """Wait until ``chunks`` chunk files exist and a job started later has run for 0.5 s.

    Timing the signal into a running job matters for SIGTERM: Snakemake's handler
    (``JobScheduler.exit_gracefully``, 9.27) takes the scheduler's non-reentrant lock, so a
    SIGTERM that lands while the scheduler holds it, between one job's end and the next
    job's start, deadlocks Snakemake (docs/scaling.md, "Killing and resuming"). While a
    job runs the scheduler only waits, and the signal is handled.
    """
    import time

    import psutil

    deadline = time.monotonic() + 300
    written = None  # when the chunk files were first counted complete
    while True:
        assert proc.poll() is None, f"snakemake ended before {chunks} chunks were written"
        assert time.monotonic() < deadline, f"{chunks} chunks not written within 300 s"
        if written is None:
            if len(list((workdir / "results" / "runs").rglob("job~*.parquet"))) >= chunks:
                written = time.time()
        else:
            # a job started after that moment: the one that wrote the last file is finished
            # (it may still be exiting when its file appears, and a kill then deletes it)
            try:
                jobs = [
                    child
                    for child in psutil.Process(proc.pid).children(recursive=True)
                    if "run_chunk" in " ".join(child.cmdline())
                    and child.create_time() > written
                    and time.time() - child.create_time() > 0.5
                ]
            except psutil.Error:  # a process ended while it was being read
                jobs = []
            if jobs:
                return
        time.sleep(0.05)


def _signal_run(proc: subprocess.Popen, sig: int) -> None:
    import os

    try:
        os.killpg(proc.pid, sig)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, 9)
            proc.wait(timeout=30)


def test_killed_run_resumes_to_identical_artifacts(smoke_run, tmp_path, repo_root):
    import signal

    workdir = _subset_workdir(repo_root, tmp_path / "killed", [KILLED_STUDY])
    config = yaml.safe_load((workdir / "config" / "smoke.yaml").read_text())
    config["chunks_per_job"] = 1  # one job per chunk: the kill falls inside a later job
    config["studies"][KILLED_STUDY].pop("chunks_per_job", None)
    (workdir / "config" / "smoke.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    runs = workdir / "results" / "runs"

    # 1. SIGTERM to the process group (scancel, a closed terminal): the running job dies,
    #    Snakemake deletes its outputs and exits on its own, leaving no lock.
    proc = _start_killable_run(workdir)
    _wait_inside_a_chunk_job(proc, workdir, chunks=2)
    _signal_run(proc, signal.SIGTERM)
    assert proc.returncode != -signal.SIGKILL, "snakemake did not exit within 60 s of SIGTERM"
    assert not (workdir / "results" / "MANIFEST.sha256").exists(), "the run was not cut midway"
    after_term = sorted(runs.rglob("job~*.parquet"))
    assert len(after_term) >= 2, "finished chunks should survive the kill (not be recomputed)"
    assert not (workdir / ".snakemake" / "locks").is_dir() or not any(
        (workdir / ".snakemake" / "locks").iterdir()
    ), "SIGTERM left Snakemake's lock behind"

    # 2. The same command resumes; SIGKILL to the group (OOM killer, power loss) mid-job:
    #    nothing can clean up, so the lock stays and `--unlock` is the documented step.
    proc = _start_killable_run(workdir)
    _wait_inside_a_chunk_job(proc, workdir, chunks=len(after_term) + 1)
    _signal_run(proc, signal.SIGKILL)
    assert not (workdir / "results" / "MANIFEST.sha256").exists(), "the run was not cut midway"
    survivors = sorted(runs.rglob("job~*.parquet"))
    assert set(after_term) < set(survivors), "the resumed run added chunks and kept the old"
    # What a SIGKILLed job leaves behind when killed while writing: a half-written temporary.
    stale = survivors[0].parent / ".job~999.parquet.abcd1234.tmp"
    stale.write_bytes(b"half-written")
    _snakemake(workdir, "--unlock")
    _snakemake(workdir, "--cores", "2")
    assert _stale_files(workdir) == []
    config = yaml.safe_load((workdir / "config" / "smoke.yaml").read_text())
    assert len(_subset_artifacts(workdir, config)) >= 3 + 2  # table, md, figure, 2 references
    _assert_subset_equal(smoke_run, workdir)


# --- the same workflow on a real SLURM cluster (issue 8) --------------------------------------

SLURM_SCRIPT = Path(".ci") / "slurm-cluster.sh"
# One cheap study per paper (CI budget: ~6 s of SLURM overhead per job); the full smoke
# config through SLURM is `make slurm-smoke` (see README, "Cluster").
SLURM_STUDIES = ["lev_fig6", "liang_fig2_bound", "brown_fig9", "varshney_e2_sigma", "cc_table4"]


@pytest.fixture(scope="module")
def slurm_cluster(repo_root):
    """A one-node SLURM on 127.0.0.1, started for this module and stopped by PID after it."""
    script = repo_root / SLURM_SCRIPT
    if shutil.which("apt-get") is None and shutil.which("slurmctld") is None:
        pytest.skip("SLURM test skipped: no slurmctld and no apt-get to install slurm-wlm")
    if subprocess.run(["id", "-u"], capture_output=True, text=True).stdout.strip() != "0":
        pytest.skip("SLURM test skipped: installing and starting slurmctld/slurmd needs root")
    if shutil.which("sinfo") and subprocess.run(["sinfo"], capture_output=True).returncode == 0:
        pytest.skip("SLURM test skipped: a SLURM cluster is already running on this machine")
    # slurmctld runs as user slurm: its state cannot live under pytest's 0700 tmp folders
    state = Path(f"/run/dpreg-slurm-test-{os.getpid()}")
    env = {**os.environ, "DPREG_SLURM_STATE": str(state)}
    install = subprocess.run(
        ["bash", str(script), "install"], env=env, capture_output=True, text=True, timeout=900
    )
    if install.returncode == 3:
        pytest.skip(f"SLURM test skipped: packages cannot be installed: {install.stderr.strip()}")
    assert install.returncode == 0, install.stdout + install.stderr
    try:
        start = subprocess.run(
            ["bash", str(script), "start"], env=env, capture_output=True, text=True, timeout=120
        )
        if start.returncode == 3:
            pytest.skip(f"SLURM test skipped: {start.stderr.strip()}")
        assert start.returncode == 0, start.stdout + start.stderr
        yield state
    finally:
        started = (state / "pids").read_text().split() if (state / "pids").exists() else []
        subprocess.run(["bash", str(script), "stop"], env=env, timeout=120, check=False)
        shutil.rmtree(state, ignore_errors=True)
        alive = [pid for pid in started[1::2] if _alive(int(pid))]
        assert not alive, f"daemons still running after stop: {alive}"
        # a slurm.conf naming the stopped controller would make every later `snakemake`
        # call wait on the executor plugin's `scontrol show config` probe (docs/scaling.md)
        conf = Path("/etc/slurm/slurm.conf")
        assert not (conf.exists() and "ClusterName=dpregci" in conf.read_text().split()), (
            "slurm-cluster.sh stop left its slurm.conf behind"
        )


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_slurm_run_equals_local_run(smoke_run, slurm_cluster, tmp_path, repo_root):
    workdir = _subset_workdir(repo_root, tmp_path / "slurm", SLURM_STUDIES)
    jobcomp = slurm_cluster / "jobcomp.log"
    before = jobcomp.read_text().count("JobId=") if jobcomp.exists() else 0
    proc = subprocess.run(
        [
            SNAKEMAKE,
            "--configfile",
            "config/smoke.yaml",
            "--executor",
            "slurm",
            "--workflow-profile",
            "workflow/profiles/slurm",
            "--default-resources",
            "slurm_partition=dpreg",
            "--slurm-status-command",  # no slurmdbd here: sacct would hang (docs/scaling.md)
            "squeue",
            "--jobs",
            "4",
            "--latency-wait",
            "5",
            "--seconds-between-status-checks",
            "2",
            "--slurm-init-seconds-before-status-checks",
            "2",
        ],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-5000:]
    log = proc.stdout + proc.stderr
    submitted = log.count("has been submitted with SLURM jobid")
    finished = jobcomp.read_text().count("JobId=") - before
    assert submitted > 0 and finished >= submitted, log[-3000:]
    assert "JobState=COMPLETED" in jobcomp.read_text()
    dry = _snakemake(workdir, "--cores", "1", "--dry-run")
    assert "Nothing to be done" in dry.stdout + dry.stderr
    _assert_subset_equal(smoke_run, workdir)
