"""Machine facts recorded beside every benchmark table (shared by the benchmark scripts).

Only the standard library is imported at module level, so that a script can pin itself
to one core (and set the BLAS thread variables) before numpy is loaded.
"""

from __future__ import annotations

import datetime
import os
import platform
import shutil
import sys
from pathlib import Path

THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
)


def cpu_model() -> str:
    """Return the CPU model name from ``/proc/cpuinfo`` (``"unknown"`` when unreadable)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def load_average() -> float:
    """Return the 1-minute load average (NaN where the platform has none)."""
    try:
        return float(os.getloadavg()[0])
    except (OSError, AttributeError):
        return float("nan")


def cpu_affinity() -> list[int]:
    """Return the CPUs this process may run on (all CPUs where affinity is unsupported)."""
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:
        return list(range(os.cpu_count() or 1))


def mem_total_gb() -> float:
    """Return the total memory in GB from ``/proc/meminfo`` (NaN when unreadable)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / 1024**2
    except (OSError, ValueError, IndexError):
        pass
    return float("nan")


def blas_name() -> str:
    """Return numpy's BLAS library and version (imports numpy)."""
    import numpy as np

    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        return f"{blas.get('name', '?')} {blas.get('version', '')}".strip()
    except Exception:  # noqa: BLE001  (older numpy: no dict mode)
        return "unknown"


def machine_facts() -> dict[str, object]:
    """Collect the facts that make a timing interpretable (imports numpy).

    Returns
    -------
    dict
        ``date_utc``, ``host``, ``nproc`` (CPUs online), ``cpu_model``, ``affinity``
        (CPUs this process may use), ``mem_total_gb``, ``python``, ``numpy``, ``blas``,
        ``thread_env`` (the BLAS/OpenMP thread variables that are set) and
        ``taskset`` (whether the ``taskset`` binary exists).
    """
    import numpy as np

    thread_env = {k: os.environ[k] for k in THREAD_VARIABLES if k in os.environ}
    return {
        "date_utc": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M:%S"),
        "host": platform.node(),
        "nproc": os.cpu_count(),
        "cpu_model": cpu_model(),
        "affinity": ",".join(map(str, cpu_affinity())),
        "mem_total_gb": round(mem_total_gb(), 1),
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "blas": blas_name(),
        "thread_env": ", ".join(f"{k}={v}" for k, v in thread_env.items()) or "unset",
        "taskset": shutil.which("taskset") is not None,
    }


def facts_markdown(facts: dict[str, object]) -> str:
    """Render ``facts`` as a two-column markdown table."""
    lines = ["| fact | value |", "|---|---|"]
    lines += [f"| {key} | {value} |" for key, value in facts.items()]
    return "\n".join(lines)
