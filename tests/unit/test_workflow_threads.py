"""Every workflow job runs with its BLAS thread count equal to its declared ``threads``.

The one place every job goes through is Snakemake's ``shell()``: each ``script:`` rule's
Python and each ``shell:`` rule's command is started by it in a child process whose
environment has OMP_NUM_THREADS, OPENBLAS_NUM_THREADS, MKL_NUM_THREADS (and the other
BLAS variables) set to the job's ``threads`` before the interpreter, hence numpy, loads
(docs/scaling.md, "Threads of a job"). Two checks: (1) a job started that way reports,
through threadpoolctl, a BLAS pool of exactly its ``threads`` (1 and 2), even when the
calling environment says otherwise; (2) no rule of the workflow runs Python inside the
Snakemake process itself (a ``run:`` block would inherit the scheduler's threads instead).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SNAKEMAKE = Path(sys.executable).with_name("snakemake")

PROBE = """\
import json
import numpy as np  # noqa: F401  (loads the BLAS whose pool is reported)
from threadpoolctl import threadpool_info

blas = [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]
with open(snakemake.output[0], "w") as fh:
    json.dump({"threads": snakemake.threads, "blas": blas}, fh)
"""

SNAKEFILE = """\
rule all:
    input:
        "t1.json",
        "t2.json",


rule probe:
    output:
        "t{n}.json",
    threads: lambda wildcards: int(wildcards.n)
    script:
        "probe.py"
"""


def test_job_scripts_run_with_blas_threads_equal_to_their_threads(tmp_path):
    (tmp_path / "Snakefile").write_text(SNAKEFILE)
    (tmp_path / "probe.py").write_text(PROBE)
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "3", "OMP_NUM_THREADS": "3"}
    proc = subprocess.run(
        [str(SNAKEMAKE), "--cores", "2", "--quiet", "all"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    for n in (1, 2):
        got = json.loads((tmp_path / f"t{n}.json").read_text())
        assert got["threads"] == n
        assert got["blas"] and set(got["blas"]) == {n}, got


def test_no_rule_runs_python_inside_the_snakemake_process():
    files = [ROOT / "Snakefile", *sorted((ROOT / "workflow").rglob("*.smk"))]
    files += [ROOT / "workflow" / "Snakefile"] if (ROOT / "workflow" / "Snakefile").exists() else []
    offenders = [
        f"{path.relative_to(ROOT)}:{i}"
        for path in files
        for i, line in enumerate(path.read_text().splitlines(), 1)
        if re.match(r"^\s+run:\s*$", line)
    ]
    assert not offenders, (
        f"rules with run: blocks (not given their threads' BLAS pool): {offenders}"
    )
    jobs = sum(
        len(re.findall(r"^\s+(script|shell):", path.read_text(), flags=re.M)) for path in files
    )
    assert jobs >= 10  # the check reads the real rules
