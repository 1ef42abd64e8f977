"""Deterministic seeds for workflow jobs (DESIGN.md, "Seeds").

A job's seed is derived from the master seed and the job's wildcards through
:class:`numpy.random.SeedSequence` and a stable hash (CRC-32 of the canonical
``key=value`` string, never Python's salted ``hash()``), so results do not depend
on ``--cores``, job order or the machine.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping

import numpy as np


def wildcard_key(wildcards: Mapping[str, object]) -> str:
    """Canonical string of a job's wildcards: ``k1=v1/k2=v2`` sorted by key."""
    return "/".join(f"{k}={wildcards[k]}" for k in sorted(wildcards))


def job_seed(master_seed: int, wildcards: Mapping[str, object]) -> int:
    """Return the 64-bit seed of one job.

    Parameters
    ----------
    master_seed : int
        The config's single ``seed``.
    wildcards : mapping
        The job's wildcards (study, dataset, estimator, grid values, chunk...).

    Returns
    -------
    int
        ``SeedSequence([master_seed, crc32(key)]).generate_state(1, uint64)[0]``,
        recorded in every result row so a single chunk can be re-run alone.
    """
    if isinstance(master_seed, bool) or not isinstance(master_seed, int | np.integer):
        raise TypeError(f"master_seed must be an int; got {master_seed!r}")
    if master_seed < 0:
        raise ValueError(f"master_seed must be >= 0; got {master_seed}")
    key = zlib.crc32(wildcard_key(wildcards).encode("utf-8"))
    state = np.random.SeedSequence([int(master_seed), key]).generate_state(1, dtype=np.uint64)
    return int(state[0])
