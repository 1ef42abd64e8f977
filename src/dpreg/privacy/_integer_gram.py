r"""Exact arithmetic for integer encoders (TreeAgg's 0/1 dyadic encoder; issue 18).

Sums and products of small integers are exact in float64, in any order, so for an
integer-valued encoder :math:`C` the Gram matrix :math:`C^\top C` (multi-participation
sensitivity, Full Honaker's least-squares decoder) has the same bits whether it is formed
by BLAS or by a sparse product. At Table 3's T = 2000 TreeAgg's encoder is 3,999 x 2,000
with about 11 non-zeros per column: the sparse product takes milliseconds instead of the
dense one's ~0.35 s (docs/scaling.md, session 24).
"""

from __future__ import annotations

import numpy as np

__all__ = ["encoder_gram", "small_integer_matrix"]

_SPARSE_DENSITY = 0.01
"""At most this fraction of non-zero entries: the encoder is multiplied as sparse."""


def small_integer_matrix(M: np.ndarray, terms: int) -> bool:
    """Whether ``M`` is float64 with integer entries any ``terms`` of which sum exactly.

    True when the entries are integers of magnitude at most ``2**52 / terms``: every
    partial sum of at most ``terms`` of them (or of their products with 0 or 1) is then
    an integer below :math:`2^{52}`, represented exactly in float64.

    Examples
    --------
    >>> small_integer_matrix(np.array([[0.0, 1.0], [-1.0, 0.0]]), 4)
    True
    >>> small_integer_matrix(np.array([[0.5, 1.0]]), 4)
    False
    """
    M = np.asarray(M)
    if M.dtype != np.float64 or M.size == 0:
        return False
    largest = float(np.max(np.abs(M)))
    if not np.isfinite(largest) or largest * max(int(terms), 1) > 2.0**52:
        return False
    return bool(np.array_equal(M, np.trunc(M)))


def encoder_gram(C: np.ndarray) -> np.ndarray:
    r"""Return ``C.T @ C`` of an encoder (m, T), bit for bit; sparse if ``C`` is sparse integer.

    For a sparse encoder with integer entries of magnitude :math:`c` and
    :math:`c^2 m \le 2^{52}` every entry of :math:`C^\top C` is an exact integer, so the
    sparse product (another order of the sums) has the dense product's bits; any other
    encoder is ``C.T @ C`` itself. C-contiguous float64 (T, T) either way.

    Examples
    --------
    >>> C = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    >>> encoder_gram(C).tolist()
    [[2.0, 1.0], [1.0, 2.0]]
    """
    C = np.asarray(C, dtype=np.float64)
    if C.ndim == 2 and C.size and np.count_nonzero(C) <= _SPARSE_DENSITY * C.size:
        largest = float(np.max(np.abs(C)))
        if small_integer_matrix(C, C.shape[0]) and largest * largest * C.shape[0] <= 2.0**52:
            from scipy import sparse  # lazy: job start-up (docs/scaling.md)

            Cs = sparse.csc_matrix(C)
            return np.ascontiguousarray((Cs.T @ Cs).toarray())
    return C.T @ C
