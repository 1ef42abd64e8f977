"""The compiled pass of :mod:`dpreg.estimators.adassp_stream_kernel` (numba, cached on disk).

Imported on first use only (numba's import costs about 0.4 s of CPU). Module-level
functions calling each other as globals, and no recursion: numba's on-disk cache misses
a kernel that calls a kernel held in a closure (its dispatcher pickles with a per-process
id, so every process compiled ``clip_rows`` again, about 3 s of CPU) and crashes on
loading a recursive function from the cache (docs/scaling.md, "numba's cache").
The pairwise sum's explicit stack is also written out in
:mod:`dpreg.estimators._adassp_stream_jit`, :mod:`dpreg.data._counter_jit` and
:mod:`dpreg.estimators.peer_bfgs_kernel` on purpose: numba checks only a cached
function's own file, so a shared callee in another file could be edited and leave its
callers' cached code stale.
"""

import numba
import numpy as np

PW_BLOCK = 128
"""numpy's pairwise-summation block (``PW_BLOCKSIZE``)."""
PW_STACK = 64
"""Frames of the pairwise sum's explicit stack (each level halves the terms)."""


@numba.njit(cache=True, nogil=True, inline="always")
def block_sum_sq(X, i, lo, n):  # pragma: no cover - compiled
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
def sum_sq(X, i, lo, n, f_lo, f_n, f_state, f_left):  # pragma: no cover - compiled
    # numpy's pairwise sum of X[i, lo:lo+n]**2 (np.linalg.norm's order):
    # pw(lo, n) = pw(lo, h) + pw(lo + h, n - h), h = n // 2 cut down to a multiple of 8,
    # blocks of <= 128 terms by block_sum_sq; the recursion on the explicit stack f_*
    if n <= PW_BLOCK:
        return block_sum_sq(X, i, lo, n)
    top = 0
    f_lo[0], f_n[0], f_state[0] = lo, n, 0
    ret = 0.0
    while top >= 0:
        m = f_n[top]
        if m <= PW_BLOCK:
            ret = block_sum_sq(X, i, f_lo[top], m)
            top -= 1
            continue
        h = m // 2
        h -= h % 8
        if f_state[top] == 0:  # descend left
            f_state[top] = 1
            f_lo[top + 1], f_n[top + 1], f_state[top + 1] = f_lo[top], h, 0
            top += 1
        elif f_state[top] == 1:  # left done: keep it, descend right
            f_left[top] = ret
            f_state[top] = 2
            f_lo[top + 1], f_n[top + 1], f_state[top + 1] = f_lo[top] + h, m - h, 0
            top += 1
        else:  # both done
            ret = f_left[top] + ret
            top -= 1
    return ret


@numba.njit(cache=True, nogil=True, error_model="numpy")
def clip_rows(X, Y, bound_x, bound_y, Xc, Yc, norms, clipped):  # pragma: no cover - compiled
    # Row i: norms_i = ||x_i|| (np.linalg.norm's bits), Xc_i = X_i min{1, bound_x /
    # norms_i}; Yc_ij = Y_ij clipped to [-bound_y_j, bound_y_j]; clipped_j counts rows
    # with ||x_i|| > bound_x or |Y_ij| > bound_y_j. Returns False if a norm or a
    # response is not finite.
    m, d = X.shape
    k = Y.shape[1]
    f_lo = np.empty(PW_STACK, np.int64)
    f_n = np.empty(PW_STACK, np.int64)
    f_state = np.empty(PW_STACK, np.int64)
    f_left = np.empty(PW_STACK)
    finite = True
    for i in range(m):
        nrm = np.sqrt(sum_sq(X, i, 0, d, f_lo, f_n, f_state, f_left))
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
