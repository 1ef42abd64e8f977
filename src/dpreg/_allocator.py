"""The C allocator of a workflow job: freed memory kept in the process and reused.

glibc's ``malloc`` serves an allocation above its mmap threshold (at most 32 MiB) with a
fresh ``mmap`` and returns it to the kernel on ``free``; it also gives back the free top
of its heap once that exceeds the trim threshold. A numpy temporary of a few tens of MB
made again at every step of a loop (a T x T matrix at T = 2000, an FFT's output block, a
block of noise) is then faulted in and zeroed by the kernel each time: several seconds of
system time in the larger jobs of a paper-scale run (docs/scaling.md, "The C allocator of a
run job"). Kept in the process, the same memory is reused without a fault. Nothing
computed changes: an allocator only decides where an array lives.
"""

from __future__ import annotations

import ctypes
import sys

__all__ = ["M_MMAP_MAX", "M_TRIM_THRESHOLD", "keep_freed_memory"]

#: ``mallopt`` parameter numbers of glibc's ``malloc.h``.
M_TRIM_THRESHOLD = -1
M_MMAP_MAX = -4

#: The free top of the heap is returned to the kernel only above this many bytes.
TRIM_THRESHOLD = 1 << 30


def keep_freed_memory() -> bool:
    """Make glibc's ``malloc`` keep and reuse freed memory, for a workflow job's process.

    Sets ``M_MMAP_MAX = 0`` (every allocation from the heap, none from a private ``mmap``
    released on ``free``) and ``M_TRIM_THRESHOLD`` = 1 GiB (the heap's free top is kept up
    to that size). For the workflow's run jobs (``workflow/scripts/run_chunk.py``) and
    ``benchmarks/profile_job.py``, which measures jobs as the workflow runs them; a library
    user's process is never changed. The cost is memory held until the job ends: a peak
    resident size up to about 16% higher where a job's large arrays come and go in
    different sizes (measured in docs/scaling.md).

    Returns
    -------
    bool
        Whether both settings were applied: ``False`` off Linux, or where the C library
        has no ``mallopt`` or refuses a setting (e.g. musl).

    Examples
    --------
    >>> import subprocess, sys
    >>> code = "from dpreg._allocator import keep_freed_memory; print(keep_freed_memory())"
    >>> out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    >>> out.stdout.strip() in ("True", "False")
    True
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    # mallopt returns 1 on success, 0 on error
    return bool(mallopt(M_MMAP_MAX, 0)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
