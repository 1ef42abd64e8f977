"""The cyclic garbage collector of a workflow job: what is alive for good is not rescanned.

A figure job (``workflow/scripts/study_table.py``) imports pandas, pyarrow, matplotlib and
seaborn, about 140,000 container objects that live until the process ends. CPython's
collector still walks all of them at every full collection while the job runs, and again
in the collections of the interpreter's teardown, when nothing is left to do but exit:
about 0.2 s of CPU while a table job runs and 0.3 s after its last line, out of 1-5 s
(docs/scaling.md, "Cost of a paper-scale run"). ``gc.freeze`` moves the objects alive at
that moment to the collector's permanent generation, which no collection scans. Nothing
computed changes: the collector only decides when unreachable cycles are freed, and no
output of a job depends on object addresses or on when a cycle is freed (every output
file is written and closed before the job's last line, and reruns already give the same
bytes at other addresses).
"""

from __future__ import annotations

import gc

__all__ = ["YOUNG_THRESHOLD", "freeze_survivors"]

#: Allocations of container objects between two collections of the youngest generation
#: (CPython's default is 700): a figure job's drawing makes hundreds of such collections.
YOUNG_THRESHOLD = 10_000


def freeze_survivors(young_threshold: int | None = None, *, collect: bool = False) -> int:
    """Exclude every object alive now from the cyclic collector's future scans.

    For a workflow job's process only (``workflow/scripts/study_table.py``): called once
    after the job's imports, so the modules' objects are not walked again by each full
    collection, and once after the job's last output is written, so the interpreter's
    teardown does not walk the whole heap again (its collections skip frozen objects; a
    cycle still alive then is left to the operating system, like the rest of the
    process's memory). A library user's process is never changed.

    Parameters
    ----------
    young_threshold : int, optional
        If given, the new threshold of the youngest generation (the other two are
        kept); :data:`YOUNG_THRESHOLD` in the table job. The cost is at most that many
        more young objects alive between two collections (a few MB).
    collect : bool, default False
        Collect every generation first, so the garbage of the imports (the job pauses
        the collector with ``gc.disable()`` while it imports) is freed, not frozen. The
        collector is enabled again either way.

    Returns
    -------
    int
        The number of objects now frozen (``gc.get_freeze_count()``).

    Examples
    --------
    >>> import subprocess, sys
    >>> code = (
    ...     "import gc; from dpreg._collector import freeze_survivors;"
    ...     "print(freeze_survivors(5000) > 1000, gc.get_threshold()[0])"
    ... )
    >>> print(subprocess.run([sys.executable, "-c", code], capture_output=True,
    ...                      text=True, check=True).stdout.strip())
    True 5000
    """
    if collect:
        gc.collect()
    gc.freeze()
    gc.enable()
    if young_threshold is not None:
        _, middle, old = gc.get_threshold()
        gc.set_threshold(young_threshold, middle, old)
    return gc.get_freeze_count()
