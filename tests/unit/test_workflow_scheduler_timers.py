"""Snakemake's scheduler wake-up timers end with the run (docs/scaling.md, "Snakemake's
own scheduling cost").

``profiles/default`` sets a long ``max-jobs-per-timespan`` so that the rate limiter's
timer chains re-run the scheduler rarely; the workflow's ``onsuccess`` and ``onerror``
hooks cancel the timers still pending, which the interpreter would otherwise wait for
before it exits. Checked here: the helper cancels exactly Snakemake's timers (against the
installed Snakemake's own ``JobScheduler``), the workflow registers it in both hooks and
the profile's timespan is the one documented, and a real ``snakemake`` run with a 60 s
timespan and those hooks exits in seconds after a success and after a failed job.
"""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import yaml

from dpreg._scheduler_timers import SNAKEMAKE_SCHEDULER_MODULE, cancel_scheduler_timers

SNAKEMAKE = Path(sys.executable).with_name("snakemake")


def test_snakemakes_own_reevaluation_timer_is_cancelled_and_others_are_not():
    from snakemake.scheduling.job_scheduler import JobScheduler

    scheduler = SimpleNamespace(_open_jobs=threading.Semaphore(0))
    JobScheduler._schedule_reevalutation(scheduler, 60)
    fired = threading.Event()
    other = threading.Timer(60.0, fired.set)
    other.start()
    try:
        timers = [t for t in threading.enumerate() if isinstance(t, threading.Timer)]
        ours = [t for t in timers if t.function.__module__ == SNAKEMAKE_SCHEDULER_MODULE]
        assert len(ours) == 1
        assert cancel_scheduler_timers() == 1
        ours[0].join(5.0)
        assert not ours[0].is_alive()
        assert not scheduler._open_jobs.acquire(blocking=False)  # its function never ran
        assert other.is_alive() and not other.finished.is_set()
    finally:
        other.cancel()
        other.join(5.0)
    assert not fired.is_set()


def test_the_workflow_cancels_the_timers_in_both_hooks_and_the_profile_sets_60s(repo_root):
    text = (repo_root / "workflow" / "Snakefile").read_text()
    for hook in ("onsuccess", "onerror"):
        body = re.search(rf"^{hook}:\n((?:[ \t]+.*\n|\n)+)", text, flags=re.M)
        assert body and "cancel_scheduler_timers()" in body.group(1), hook
    profile = yaml.safe_load((repo_root / "profiles" / "default" / "config.yaml").read_text())
    assert profile["max-jobs-per-timespan"] == "1000000/60s"


SNAKEFILE = """\
onsuccess:
    from dpreg._scheduler_timers import cancel_scheduler_timers

    cancel_scheduler_timers()


onerror:
    from dpreg._scheduler_timers import cancel_scheduler_timers

    cancel_scheduler_timers()


rule all:
    input:
        expand("out{i}.txt", i=range(3)),


rule make:
    output:
        "out{i}.txt",
    shell:
        "sleep 0.2; test {wildcards.i} != {config[fail]} && echo {wildcards.i} > {output}"
"""


def _run(tmp_path: Path, fail: int) -> tuple[subprocess.CompletedProcess[str], float]:
    (tmp_path / "Snakefile").write_text(SNAKEFILE)
    start = time.monotonic()
    proc = subprocess.run(
        [str(SNAKEMAKE), "--cores", "1", "--quiet", "--max-jobs-per-timespan", "1000000/60s"]
        + ["--config", f"fail={fail}"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return proc, time.monotonic() - start


def test_a_run_with_a_60s_timespan_exits_without_waiting_for_its_timers(tmp_path):
    # three jobs on one core: every round leaves jobs waiting and starts a 60 s timer
    proc, seconds = _run(tmp_path, fail=-1)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert sorted(p.name for p in tmp_path.glob("out*.txt")) == ["out0.txt", "out1.txt", "out2.txt"]
    assert seconds < 40, seconds


def test_a_failed_run_with_a_60s_timespan_exits_without_waiting_for_its_timers(tmp_path):
    proc, seconds = _run(tmp_path, fail=1)
    assert proc.returncode != 0
    assert seconds < 40, seconds
