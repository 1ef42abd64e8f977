r"""Compiled clipping pass of :meth:`~dpreg.estimators.adassp_stream.AdasspStatistics.add_clipped`.

The numpy reference clips a block of rows to the public bounds in about eight passes over
the block (the scaled copy, the response clip, the clipped counts, then
:meth:`~dpreg.estimators.adassp_stream.AdasspStatistics.add`'s finiteness and bound
checks, and ``np.linalg.norm``'s product and reduction); at d = 200 those passes cost
more than the :math:`X^\top X` they feed (docs/scaling.md). Here one compiled pass does
them all, with the reference's operations on the same operands in the same order (the
row norms summed in numpy's pairwise order, the factor
:math:`\min\{1, C_X/\|x_i\|\}`, the products, the clip of each response column), so the
clipped block is bit-identical (``tests/unit/test_adassp_stream.py``). numba is imported
on first use (compilation is cached on disk).
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np

__all__ = ["clip_block"]


_PW_BLOCK = 128
"""numpy's pairwise-summation block (``PW_BLOCKSIZE``)."""


@cache
def _kernel() -> Any:
    """Compile (or load from numba's cache) the clipping pass."""
    import numba

    @numba.njit(cache=True, nogil=True, inline="always")
    def block_sum_sq(X, i, lo, n):
        # sum of X[i, lo:lo+n]**2 as numpy's pairwise sum adds a block of <= 128 terms:
        # sequentially below 8 terms, else 8 interleaved accumulators combined pairwise,
        # then the remainder
        if n < 8:
            res = 0.0
            for c in range(lo, lo + n):
                res += X[i, c] * X[i, c]
            return res
        x = X[i, lo : lo + n]
        r0, r1, r2, r3 = x[0] * x[0], x[1] * x[1], x[2] * x[2], x[3] * x[3]
        r4, r5, r6, r7 = x[4] * x[4], x[5] * x[5], x[6] * x[6], x[7] * x[7]
        c = 8
        while c < n - (n % 8):
            r0 += x[c] * x[c]
            r1 += x[c + 1] * x[c + 1]
            r2 += x[c + 2] * x[c + 2]
            r3 += x[c + 3] * x[c + 3]
            r4 += x[c + 4] * x[c + 4]
            r5 += x[c + 5] * x[c + 5]
            r6 += x[c + 6] * x[c + 6]
            r7 += x[c + 7] * x[c + 7]
            c += 8
        res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
        while c < n:
            res += x[c] * x[c]
            c += 1
        return res

    @numba.njit(cache=True, nogil=True)
    def sum_sq(X, i, lo, n):
        # numpy's pairwise sum of X[i, lo:lo+n]**2 (np.linalg.norm's order): halves cut
        # at a multiple of 8 until a block has <= 128 terms
        if n <= 128:
            return block_sum_sq(X, i, lo, n)
        n2 = n // 2
        n2 -= n2 % 8
        return sum_sq(X, i, lo, n2) + sum_sq(X, i, lo + n2, n - n2)

    @numba.njit(cache=True, nogil=True, error_model="numpy")
    def clip_rows(X, Y, bound_x, bound_y, Xc, Yc, norms, clipped):
        # Row i: norms_i = ||x_i|| (np.linalg.norm's bits), Xc_i = X_i min{1, bound_x /
        # norms_i}; Yc_ij = Y_ij clipped to [-bound_y_j, bound_y_j]; clipped_j counts rows
        # with ||x_i|| > bound_x or |Y_ij| > bound_y_j. Returns False if a norm or a
        # response is not finite.
        m, d = X.shape
        k = Y.shape[1]
        finite = True
        for i in range(m):
            nrm = np.sqrt(sum_sq(X, i, 0, d))
            norms[i] = nrm
            if not np.isfinite(nrm):
                finite = False
            f = min(1.0, bound_x / nrm)
            for c in range(d):
                Xc[i, c] = X[i, c] * f
            over_x = nrm > bound_x
            for j in range(k):
                y = Y[i, j]
                if not np.isfinite(y):
                    finite = False
                b = bound_y[j]
                Yc[i, j] = min(max(y, -b), b)
                if over_x or abs(y) > b:
                    clipped[j] += 1.0
        return finite

    return clip_rows


def clip_block(
    X: np.ndarray,
    Y: np.ndarray,
    bound_x: float,
    bound_y: np.ndarray,
    clipped: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    r"""Clip rows ``X`` (m, d) to ``bound_x`` and responses ``Y`` (m, k) to ``bound_y`` (k,).

    ``clipped`` (k,) float counts are incremented for each row whose x or column-j
    response was clipped. Returns ``(Xc, Yc, norms, finite)``: the clipped C-contiguous
    copies, the row norms (the bits of ``np.linalg.norm(X, axis=1)``: numpy's pairwise
    summation order) and whether every norm and response was finite. No validation
    (float64 arrays, ``Y`` 2-d).

    Examples
    --------
    >>> import numpy as np
    >>> X, Y, c = np.array([[3.0, 4.0], [0.3, 0.4]]), np.array([[2.0], [-0.5]]), np.zeros(1)
    >>> Xc, Yc, norms, ok = clip_block(X, Y, 1.0, np.ones(1), c)
    >>> Xc.tolist(), Yc.tolist(), norms.tolist(), c.tolist(), ok
    ([[0.6000000000000001, 0.8], [0.3, 0.4]], [[1.0], [-0.5]], [5.0, 0.5], [1.0], True)
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    Y = np.ascontiguousarray(Y, dtype=np.float64)
    Xc = np.empty_like(X)
    Yc = np.empty_like(Y)
    norms = np.empty(X.shape[0])
    b_y = np.ascontiguousarray(bound_y, dtype=np.float64)
    finite = _kernel()(X, Y, float(bound_x), b_y, Xc, Yc, norms, clipped)
    return Xc, Yc, norms, bool(finite)
