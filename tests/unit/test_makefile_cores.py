"""`make run` and `make smoke` start as many jobs as the machine has CPUs, at most 8."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def _cores(repo_root, target, *overrides):
    # -n prints the recipe without running it; -s drops make's own messages
    out = subprocess.run(
        ["make", "-n", "-s", target, *overrides],
        cwd=repo_root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [int(n) for n in re.findall(r"snakemake --cores (\d+)", out)]


@pytest.mark.parametrize("target", ["run", "smoke"])
def test_the_default_is_the_cpus_this_process_may_use_capped_at_8(repo_root, target):
    expected = min(len(os.sched_getaffinity(0)), 8)
    assert _cores(repo_root, target) == [expected]


def test_cores_can_be_overridden(repo_root):
    assert _cores(repo_root, "run", "CORES=16") == [16]
