r"""Symmetric eigenproblems of stacks that repeat matrices, solved once per distinct matrix.

The bootstrap simulators (:mod:`dpreg.inference.bootstrap`) decompose one matrix per
replicate, and in several of them the replicates share it: with the empirical target the
simulated Gram of linear mixing and Sheffet's sketch is the same for every replicate
(docs/inference.md), and Sheffet's shift is too, so the eigenvalue test and the Wishart
factor of 500 replicates decompose one matrix 500 times. :func:`eigh_stacked` and
:func:`eigvalsh_stacked` return exactly what :func:`numpy.linalg.eigh` and
:func:`numpy.linalg.eigvalsh` return for the whole stack (LAPACK ``syevd`` is a
deterministic function of the matrix, so equal matrices give equal bits), but call them
only on the distinct matrices. Matrices are compared by their bytes, so ``-0.0`` and
``0.0`` (or two NaN payloads) count as different and the result is bit-for-bit
numpy's. Tested against numpy, bitwise, in ``tests/unit/test_stacked_eigh.py``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["distinct_matrices", "eigh_stacked", "eigvalsh_stacked"]

# Fixed odd multipliers of the entries' bit patterns (any fixed values are exact: the
# hash only ever proves matrices distinct, never equal).
_HASH_WEIGHTS = np.random.default_rng(20261126).integers(
    1, 2**63, size=4096, dtype=np.uint64
) * np.uint64(2) + np.uint64(1)


def distinct_matrices(S: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct square matrices of the stack ``S`` (..., p, p) and where each one goes.

    Returns ``(unique (u, p, p), index)`` with ``unique[index]`` equal, byte for byte, to
    ``S`` reshaped to (-1, p, p).

    Examples
    --------
    >>> import numpy as np
    >>> S = np.stack([np.eye(2), 2 * np.eye(2), np.eye(2)])
    >>> unique, index = distinct_matrices(S)
    >>> unique.shape, index.tolist()
    ((2, 2, 2), [0, 1, 0])
    """
    S = np.asarray(S, dtype=np.float64)
    if S.ndim < 2 or S.shape[-1] != S.shape[-2]:
        raise ValueError(f"S must be a stack of square matrices (..., p, p); got shape {S.shape}")
    p = S.shape[-1]
    flat = np.ascontiguousarray(S.reshape(-1, p, p))
    if flat.shape[0] == 0:
        return flat, np.zeros(0, dtype=np.intp)
    bits = flat.view(np.uint64).reshape(flat.shape[0], -1)
    if np.all(bits == bits[0]):  # the common case: one matrix broadcast over replicates
        return flat[:1], np.zeros(flat.shape[0], dtype=np.intp)
    # Equal matrices have equal hashes, so distinct hashes prove distinct matrices (then
    # the byte-wise sort below, several times the cost of the hash, is skipped).
    weights = np.resize(_HASH_WEIGHTS, bits.shape[1])
    hashes = (bits * weights).sum(axis=1)  # wraps modulo 2**64
    if np.unique(hashes).size == hashes.size:
        return flat, np.arange(flat.shape[0])
    _, first, index = np.unique(bits, axis=0, return_index=True, return_inverse=True)
    return flat[first], index.reshape(-1)


def eigh_stacked(S: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`numpy.linalg.eigh` of every matrix of ``S`` (..., p, p), once per distinct one.

    Examples
    --------
    >>> import numpy as np
    >>> S = np.broadcast_to(np.array([[2.0, 1.0], [1.0, 2.0]]), (3, 2, 2))
    >>> w, V = eigh_stacked(S)
    >>> w.tolist()
    [[1.0, 3.0], [1.0, 3.0], [1.0, 3.0]]
    >>> all(np.array_equal(a, b) for a, b in zip((w, V), np.linalg.eigh(S)))
    True
    """
    unique, index = distinct_matrices(S)
    w, V = np.linalg.eigh(unique)
    lead, p = S.shape[:-2], S.shape[-1]
    return w[index].reshape(*lead, p), V[index].reshape(*lead, p, p)


def eigvalsh_stacked(S: np.ndarray) -> np.ndarray:
    """:func:`numpy.linalg.eigvalsh` of every matrix of ``S`` (..., p, p), once per distinct one.

    Examples
    --------
    >>> import numpy as np
    >>> S = np.broadcast_to(np.diag([3.0, 1.0]), (2, 4, 2, 2))
    >>> eigvalsh_stacked(S).shape, eigvalsh_stacked(S)[1, 3].tolist()
    ((2, 4, 2), [1.0, 3.0])
    """
    unique, index = distinct_matrices(S)
    lead, p = S.shape[:-2], S.shape[-1]
    return np.linalg.eigvalsh(unique)[index].reshape(*lead, p)
