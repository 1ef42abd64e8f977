"""A run job's allocator keeps freed memory: a large temporary is reused, not faulted in anew."""

from __future__ import annotations

import sys

import pytest
from fresh_python import run_python

# A 48 MB array (above glibc's largest mmap threshold, 32 MiB): where malloc put it while
# alive (bytes in private mmaps, glibc's mallinfo2 `hblkhd`), and the free bytes the heap
# keeps once it is freed (`fordblks`).
_PROBE = """
import ctypes, sys
import numpy as np
from dpreg._allocator import keep_freed_memory

class Info(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]

libc = ctypes.CDLL(None)
if not hasattr(libc, "mallinfo2"):
    print("no-mallinfo2"); sys.exit()
libc.mallinfo2.restype = Info
applied = keep_freed_memory() if sys.argv[1] == "keep" else None
array = np.ones(6_000_000)
mapped = libc.mallinfo2().hblkhd
del array
print(applied, mapped, libc.mallinfo2().fordblks)
"""

_BYTES = 6_000_000 * 8


def _probe(mode: str) -> list[str]:
    return run_python(_PROBE, mode).split()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_keep_freed_memory_serves_and_keeps_large_arrays_in_the_heap():
    kept = _probe("keep")
    if kept == ["no-mallinfo2"] or kept[0] != "True":
        pytest.skip("not glibc >= 2.33 (mallopt, mallinfo2)")
    default = _probe("default")
    # glibc's default: the array lives in a private mmap, unmapped (faulted in anew) on free
    assert int(default[1]) >= _BYTES
    # kept: it lives in the heap, and the heap keeps its bytes for the next array
    assert int(kept[1]) < _BYTES
    assert int(kept[2]) >= _BYTES


def test_keep_freed_memory_is_called_by_run_jobs_and_their_profiler(repo_root):
    for path in ("workflow/scripts/run_chunk.py", "benchmarks/profile_job.py"):
        text = (repo_root / path).read_text()
        call = text.find("keep_freed_memory()")
        assert call != -1, path
        assert call < text.find("from dpreg.experiments"), path
