"""The compiled batch gradient of :mod:`dpreg.estimators.ambssgd_kernel` (numba, cached).

Imported on first use only. One loop over a list of rows, row-wise (:func:`rows_rowwise`)
or four rows side by side (:func:`rows_blocked`), run either on the rows of ``X`` in
place (:func:`gradient`) or on the rows first copied into a buffer (:func:`gathered`).
Module-level functions calling each other as globals in one file: numba's on-disk cache
misses a kernel that calls a kernel held in a closure (docs/scaling.md, "numba's cache").
"""

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def rows_rowwise(S, yS, nS, rows, W, zeta, grad, clipped, a):  # pragma: no cover
    # grad[a] += sum_i s_i min(1, zeta / (|r_i| ||s_i||)) r_i over the rows ``rows`` of S,
    # r_i = <s_i, W[a]> - yS[i]; clipped[a] counts |r_i| ||s_i|| > zeta[a]
    d = S.shape[1]
    R = W.shape[2]
    for j in range(rows.shape[0]):
        i = rows[j]
        for r in range(R):
            res = 0.0
            for c in range(d):
                res += S[i, c] * W[a, c, r]
            res -= yS[i]
            g = abs(res) * nS[i]
            if g > zeta[a, r]:
                clipped[a, r] += 1.0
                res = res * (zeta[a, r] / g)
            for c in range(d):
                grad[a, c, r] += S[i, c] * res


@numba.njit(cache=True, nogil=True)
def rows_blocked(S, yS, nS, rows, W, zeta, grad, clipped, a):  # pragma: no cover
    # rows_rowwise with rows j..j+3 side by side: each residual summed over c = 0..d-1 as
    # there, clipped as there, and added into grad in the row order (the same bits)
    k = rows.shape[0]
    d = S.shape[1]
    R = W.shape[2]
    k4 = k - k % 4
    for j in range(0, k4, 4):
        i0 = rows[j]
        i1 = rows[j + 1]
        i2 = rows[j + 2]
        i3 = rows[j + 3]
        for r in range(R):
            r0 = 0.0
            r1 = 0.0
            r2 = 0.0
            r3 = 0.0
            for c in range(d):
                w = W[a, c, r]
                r0 += S[i0, c] * w
                r1 += S[i1, c] * w
                r2 += S[i2, c] * w
                r3 += S[i3, c] * w
            z = zeta[a, r]
            r0 -= yS[i0]
            g = abs(r0) * nS[i0]
            if g > z:
                clipped[a, r] += 1.0
                r0 = r0 * (z / g)
            r1 -= yS[i1]
            g = abs(r1) * nS[i1]
            if g > z:
                clipped[a, r] += 1.0
                r1 = r1 * (z / g)
            r2 -= yS[i2]
            g = abs(r2) * nS[i2]
            if g > z:
                clipped[a, r] += 1.0
                r2 = r2 * (z / g)
            r3 -= yS[i3]
            g = abs(r3) * nS[i3]
            if g > z:
                clipped[a, r] += 1.0
                r3 = r3 * (z / g)
            for c in range(d):
                acc = grad[a, c, r] + S[i0, c] * r0
                acc = acc + S[i1, c] * r1
                acc = acc + S[i2, c] * r2
                grad[a, c, r] = acc + S[i3, c] * r3
    rows_rowwise(S, yS, nS, rows[k4:], W, zeta, grad, clipped, a)


@numba.njit(cache=True, nogil=True)
def gradient(X, y, norms, idx, W, zeta, grad, clipped, blocked):  # pragma: no cover
    # idx (D, k) rows of X (n, d), y (n,), norms (n,); W, grad (D, d, R); zeta,
    # clipped (D, R): each replicate's rows read in place
    for a in range(idx.shape[0]):
        if blocked:
            rows_blocked(X, y, norms, idx[a], W, zeta, grad, clipped, a)
        else:
            rows_rowwise(X, y, norms, idx[a], W, zeta, grad, clipped, a)


@numba.njit(cache=True, nogil=True)
def gathered(X, y, norms, idx, W, zeta, grad, clipped, blocked, chunk):  # pragma: no cover
    # gradient's loops on rows first copied ``chunk`` at a time into a contiguous buffer:
    # the copies' loads do not depend on one another, so many of the random rows' cache
    # misses are in flight at once. ``chunk`` a multiple of 4: the blocks of four rows
    # are those of the in-place loop, so the same bits.
    D, k = idx.shape
    d = X.shape[1]
    buf = np.empty((chunk, d))
    yb = np.empty(chunk)
    nb = np.empty(chunk)
    local = np.arange(chunk)
    for a in range(D):
        for j0 in range(0, k, chunk):
            m = min(chunk, k - j0)
            for jj in range(m):
                i = idx[a, j0 + jj]
                for c in range(d):
                    buf[jj, c] = X[i, c]
                yb[jj] = y[i]
                nb[jj] = norms[i]
            if blocked:
                rows_blocked(buf, yb, nb, local[:m], W, zeta, grad, clipped, a)
            else:
                rows_rowwise(buf, yb, nb, local[:m], W, zeta, grad, clipped, a)
