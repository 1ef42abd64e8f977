"""Deterministic seeds for workflow jobs (docs/architecture.md, "Seeds").

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
    """Return the 64-bit seed named by a set of keys (a dataset, or a seed block).

    Studies never seed a chunk: their trials draw from :func:`block_seed`, so results do
    not depend on how trials are chunked (``docs/architecture.md``, "Seeds"). This
    function seeds a dataset's random preprocessing (``{"dataset": name}``) and is the
    hash behind :func:`block_seed`.

    Parameters
    ----------
    master_seed : int
        The config's single ``seed``.
    wildcards : mapping
        The keys naming what is seeded, e.g. ``{"dataset": "lev_pol"}``.

    Returns
    -------
    int
        ``SeedSequence([master_seed, crc32(key)]).generate_state(1, uint64)[0]`` with
        ``key`` = :func:`wildcard_key`.

    Examples
    --------
    >>> job_seed(20261122, {"dataset": "lev_pol"}) == job_seed(20261122, {"dataset": "lev_pol"})
    True
    >>> job_seed(1, {"a": 1, "b": 2}) == job_seed(1, {"b": 2, "a": 1})  # order-free
    True
    """
    if isinstance(master_seed, bool) or not isinstance(master_seed, int | np.integer):
        raise TypeError(f"master_seed must be an int; got {master_seed!r}")
    if master_seed < 0:
        raise ValueError(f"master_seed must be >= 0; got {master_seed}")
    key = zlib.crc32(wildcard_key(wildcards).encode("utf-8"))
    state = np.random.SeedSequence([int(master_seed), key]).generate_state(1, dtype=np.uint64)
    return int(state[0])


def block_seed(master_seed: int, study: str, cell: str, block: int) -> int:
    """Return the seed of one seed block of trials of one study cell.

    Parameters
    ----------
    master_seed : int
        The config's single ``seed``.
    study, cell : str
        The study name and the cell's path (``axis~label/...``).
    block : int
        Index of the block of trials (``first_trial // seed_block``); independent of the
        chunk size, so re-chunking a study never changes its draws.

    Returns
    -------
    int
        :func:`job_seed` of ``{"study": study, "cell": cell, "block": block}``.
    """
    if isinstance(block, bool) or not isinstance(block, int | np.integer) or block < 0:
        raise ValueError(f"block must be an int >= 0; got {block!r}")
    return job_seed(master_seed, {"study": study, "cell": cell, "block": f"{int(block):06d}"})


def stream_key(*names: object) -> int:
    """Return a stable 32-bit key naming one random stream inside a seed block.

    Kinds whose cell runs several named things (the benchmark's methods at each epsilon,
    the audit's cases) draw thing ``names`` from ``default_rng([seed, stream_key(*names)])``
    instead of its position in a list, so adding, removing or reordering a method or a
    case never changes the draws of the others (``docs/architecture.md``, "Seeds").

    Parameters
    ----------
    *names : object
        What the stream is for, e.g. ``("ihm", 1.0)``; numbers are written with ``repr``
        of their float value, so ``1`` and ``1.0`` name the same stream.

    Returns
    -------
    int
        CRC-32 of the ``/``-joined names.

    Examples
    --------
    >>> stream_key("ihm", 1.0) == stream_key("ihm", 1)
    True
    >>> stream_key("ihm", 1.0) == stream_key("adassp", 1.0)
    False
    """
    parts = []
    for name in names:
        if isinstance(name, bool) or not isinstance(name, str | int | float | np.number):
            raise TypeError(f"stream names must be text or numbers; got {name!r}")
        parts.append(name if isinstance(name, str) else repr(float(name)))
    return zlib.crc32("/".join(parts).encode("utf-8"))
