r"""Uniform random permutations by sorting uniform keys, in compiled code.

A shuffled estimator (DP-SSGD, Varshney, Thakurta & Jain 2022, Algorithm 1) permutes the
rows of each trial by ``numpy.argsort(rng.random((trials, n)), axis=1)``: keys uniform on
[0, 1), so every permutation is equally likely. :func:`uniform_key_permutations` returns
**the same permutations and leaves the generator in the same state**: it draws the same
keys (``rng.random(out=...)`` fills rows in C order, chunk after chunk, with the values of
one ``rng.random((trials, n))`` call) and sorts each row by a bucket sort, key
:math:`u` to bucket :math:`\lfloor un\rfloor` (about one key per bucket; buckets in order,
insertion sort within; each key stored beside its index, one cache line per move). The
permutation that sorts *distinct* keys is unique, so any
correct sort returns numpy's; a row with two equal keys (probability about
:math:`n^2 2^{-54}`, where numpy's unstable sort may order the pair either way) is sorted
again by ``numpy.argsort`` itself. Tested against numpy, rows with ties included
(``tests/unit/test_permutations.py``). At n = 1000 and 20,000 trials (the privacy audit's
DP-SSGD case) it saves about a third of the draw and sort, and the (trials, n) key array;
at the benchmark's 100 x 57,248 about a quarter (docs/scaling.md, issue 18). Callers:
DP-SSGD, DP-FTRL on data (``fit_dp_ftrl``), the logistic DP-FTRL and DP-AMBSSGD's
replicate permutations (``PermutedRows``, int32 indices).
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np

from dpreg._validation import check_choice, check_rng

__all__ = ["PERMUTATION_METHODS", "uniform_key_permutations"]

PERMUTATION_METHODS = ("auto", "fast", "reference")

#: ``method="auto"`` compiles from this many keys on (below, numba's load costs more).
COMPILED_MIN_KEYS = 1 << 16

_CHUNK_KEYS = 1 << 18  # keys drawn per chunk (2 MB of float64: in cache while sorted)


@cache
def _kernel() -> Any:
    """Compile (or load from numba's cache) the row-wise bucket sort."""
    import numba

    @numba.njit(cache=True, nogil=True)
    def sort_rows(keys, out, ties):
        # keys (m, n), finite; out[i] = the permutation sorting keys[i] ascending (any
        # order among equal keys); ties[i] = whether keys[i] holds two equal keys
        m, n = keys.shape
        count = np.zeros(n + 1, dtype=np.int32)  # n < 2**31 (checked by the caller)
        bucket = np.empty(n, dtype=np.int32)
        rec = np.empty((n, 2))  # (key, index) side by side: one cache line per record
        for i in range(m):
            row = keys[i]
            o = out[i]
            count[:] = 0
            for j in range(n):
                # monotone in the key (clamped for keys outside [0, 1)): buckets in order
                b = min(max(int(row[j] * n), 0), n - 1)
                bucket[j] = b
                count[b + 1] += 1
            for b in range(n):
                count[b + 1] += count[b]
            for j in range(n):
                b = bucket[j]
                p = count[b]
                count[b] = p + 1
                rec[p, 0] = row[j]
                rec[p, 1] = j  # exact: j < 2**31
            tie = False
            for a in range(1, n):  # insertion sort: keys of lower buckets are smaller
                kj = rec[a, 0]
                if rec[a - 1, 0] < kj:
                    continue
                j = rec[a, 1]
                c = a - 1
                while c >= 0 and rec[c, 0] > kj:
                    rec[c + 1, 0] = rec[c, 0]
                    rec[c + 1, 1] = rec[c, 1]
                    c -= 1
                rec[c + 1, 0] = kj
                rec[c + 1, 1] = j
                if c >= 0 and rec[c, 0] == kj:
                    tie = True
            for a in range(n):
                o[a] = int(rec[a, 1])
            ties[i] = tie

    return sort_rows


def uniform_key_permutations(
    rng: np.random.Generator, trials: int, n: int, *, method: str = "auto", dtype: Any = np.int64
) -> np.ndarray:
    """``numpy.argsort(rng.random((trials, n)), axis=1)``: the same values and rng state.

    Parameters
    ----------
    rng : numpy.random.Generator
    trials, n : int
        Permutations of ``range(n)``, one per trial.
    method : {"auto", "fast", "reference"}, default "auto"
        ``"reference"``: the numpy expression. ``"fast"``: the keys drawn in chunks and
        bucket-sorted in compiled code (module docstring; rows of ``n >= 2**31`` keys
        go to numpy). ``"auto"``: ``"fast"`` from :data:`COMPILED_MIN_KEYS` keys on.
    dtype : {numpy.int64, numpy.int32}, default numpy.int64
        Index type of the result (``numpy.int32`` needs ``n <= 2**31 - 1``; half the
        memory, as DP-AMBSSGD stores its replicate permutations).

    Returns
    -------
    ndarray of ``dtype``, shape (trials, n)

    Examples
    --------
    >>> import numpy as np
    >>> a = uniform_key_permutations(np.random.default_rng(0), 3, 5, method="fast")
    >>> b = np.argsort(np.random.default_rng(0).random((3, 5)), axis=1)
    >>> bool(np.array_equal(a, b)), sorted(a[0].tolist())
    (True, [0, 1, 2, 3, 4])
    """
    check_rng(rng)
    check_choice(method, "method", PERMUTATION_METHODS)
    for value, name in ((trials, "trials"), (n, "n")):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
            raise ValueError(f"{name} must be a non-negative integer; got {value!r}")
    trials, n = int(trials), int(n)
    dtype = np.dtype(dtype)
    if dtype not in (np.dtype(np.int64), np.dtype(np.int32)):
        raise ValueError(f"dtype must be numpy.int64 or numpy.int32; got {dtype!r}")
    if dtype == np.int32 and n > np.iinfo(np.int32).max:
        raise ValueError(f"dtype int32 cannot index n={n} rows; use numpy.int64")
    fast = method == "fast" or (method == "auto" and trials * n >= COMPILED_MIN_KEYS)
    fast = fast and n < 2**31  # the kernel's int32 buckets
    if not fast or trials * n == 0:
        return np.argsort(rng.random((trials, n)), axis=1).astype(dtype, copy=False)
    perm = np.empty((trials, n), dtype=dtype)
    chunk = max(1, min(trials, _CHUNK_KEYS // n))
    keys = np.empty((chunk, n))
    ties = np.empty(chunk, dtype=np.bool_)
    for start in range(0, trials, chunk):
        rows = min(chunk, trials - start)
        _argsort_rows(rng.random(out=keys[:rows]), perm[start : start + rows], ties[:rows])
    return perm


def _argsort_rows(keys: np.ndarray, out: np.ndarray, ties: np.ndarray) -> None:
    """``out[:] = numpy.argsort(keys, axis=1)`` for finite (m, n) keys (compiled sort)."""
    _kernel()(keys, out, ties)
    for i in np.flatnonzero(ties):  # equal keys: numpy's own order for the tied pairs
        out[i] = np.argsort(keys[i])
