"""Four trials side by side: the Bartlett products and certified solves in SIMD lanes.

Imported on first use only (numba). The per-trial ``d x d`` work of linear mixing and the
Sheffet sketch (Lev et al. 2026, Algorithms 4 and 5) is a set of short loops and chains
of dependent operations, one trial at a time in the one-trial kernels
(:func:`dpreg.estimators.gram_sketch._bartlett_kernel`,
:func:`dpreg.estimators._linalg._kernel`, kept as the references). Here trials
``t0 .. t0 + 3`` are laid out with the trial index innermost (flat buffers, entry ``x``
of lane ``l`` at ``4 x + l``) and every step is one vector instruction on the four lanes
(:mod:`dpreg.estimators._simd`). Every entry of every trial is the same sequence of IEEE
operations, in the same order, as in the one-trial kernel (no fast-math, no fused
multiply-add): the same bits (tested bitwise in ``tests/unit/test_lanes.py``). A batch
whose size is not a multiple of four fills the missing lanes with copies of its first
trial and discards them.

Module-level functions (numba's on-disk cache misses kernels held in closures that call
other kernels; docs/scaling.md, "numba's cache").
"""

import numba
import numpy as np

from dpreg.estimators._simd import abs4, add4, div4, load4, mul4, splat4, sqrt4, store4, sub4


@numba.njit(cache=True, nogil=True)
def bartlett_lanes(V, w, var, diagonal, below, out):  # pragma: no cover
    # out[t] = (L B)(L B)' with L = V diag(sqrt(w + var[t])) and the Bartlett factor B of
    # trial t (diagonal[t] on the diagonal, below[t] under it in numpy.tril_indices(p, -1)
    # order), as _bartlett_kernel: L'[k, i] = V[i, k] sqrt(w[k] + var[t]); C = B' L'
    # (C[j, i] = B[j, j] L'[j, i], then + B[k, j] L'[k, i] for k = j+1..p-1 in that order);
    # the lower half of C' C (0.0 + C[0, i] C[0, j] + ... in the order m = 0..p-1),
    # mirrored. Four columns at a time: four vector sums (sixteen scalars) in flight.
    trials, p = diagonal.shape
    P = (p + 3) // 4 * 4  # columns padded with zeros to whole blocks of four
    pairs = p * (p - 1) // 2
    LT = np.zeros(p * P * 4)  # L'[k, i], lane l at 4 (k P + i) + l
    C = np.zeros(p * P * 4)
    Bl = np.zeros(max(pairs, 1) * 4)
    D = np.empty(p * 4)
    E = np.empty(16)
    zero = splat4(0.0)
    for t0 in range(0, trials, 4):
        lanes = min(4, trials - t0)
        for lane in range(4):
            t = t0 + lane if lane < lanes else t0
            for k in range(p):
                scale = np.sqrt(w[k] + var[t])
                for i in range(p):
                    LT[4 * (k * P + i) + lane] = V[i, k] * scale
                D[4 * k + lane] = diagonal[t, k]
            for q in range(pairs):
                Bl[4 * q + lane] = below[t, q]
        for j in range(p):
            a = load4(D, 4 * j)
            for ib in range(0, P, 4):
                x = 4 * (j * P + ib)
                c0 = mul4(a, load4(LT, x))
                c1 = mul4(a, load4(LT, x + 4))
                c2 = mul4(a, load4(LT, x + 8))
                c3 = mul4(a, load4(LT, x + 12))
                for k in range(j + 1, p):
                    b = load4(Bl, 4 * (k * (k - 1) // 2 + j))
                    y = 4 * (k * P + ib)
                    c0 = add4(c0, mul4(b, load4(LT, y)))
                    c1 = add4(c1, mul4(b, load4(LT, y + 4)))
                    c2 = add4(c2, mul4(b, load4(LT, y + 8)))
                    c3 = add4(c3, mul4(b, load4(LT, y + 12)))
                store4(C, x, c0)
                store4(C, x + 4, c1)
                store4(C, x + 8, c2)
                store4(C, x + 12, c3)
        for i in range(p):
            for jb in range(0, i + 1, 4):
                e0 = zero
                e1 = zero
                e2 = zero
                e3 = zero
                for m in range(p):
                    c = load4(C, 4 * (m * P + i))
                    y = 4 * (m * P + jb)
                    e0 = add4(e0, mul4(c, load4(C, y)))
                    e1 = add4(e1, mul4(c, load4(C, y + 4)))
                    e2 = add4(e2, mul4(c, load4(C, y + 8)))
                    e3 = add4(e3, mul4(c, load4(C, y + 12)))
                store4(E, 0, e0)
                store4(E, 4, e1)
                store4(E, 8, e2)
                store4(E, 12, e3)
                for r in range(min(4, i + 1 - jb)):
                    j = jb + r
                    for lane in range(lanes):
                        out[t0 + lane, i, j] = E[4 * r + lane]
                        out[t0 + lane, j, i] = E[4 * r + lane]


@numba.njit(cache=True, nogil=True)
def certified_lanes(A, shift, b, theta, certified, deferred, margin):  # pragma: no cover
    # The certified Cholesky solve of dpreg.estimators._linalg._kernel, four systems side
    # by side: factor A + shift I (lower triangle read), bound ||A + shift I||_inf and
    # ||L^{-1}||_2^2 through the comparison matrix, then substitute. A lane whose factor
    # fails or whose comparison bound does not decide is marked deferred (theta and
    # certified left for the one-trial kernel, which also has the Frobenius bound); the
    # others get theta and certified (False for a non-finite solution) exactly as there.
    # Rows are factored four at a time (four vector sums in flight); rows d..d+2 of the
    # buffers are padding (zeros in, never read out).
    m, d = b.shape
    u = np.finfo(np.float64).eps / 2.0
    R = d + 3
    Al = np.zeros(R * d * 4)  # lower triangle of A, entry (i, k), lane l at 4 (i d + k) + l
    L = np.zeros(R * d * 4)
    z = np.empty(d * 4)
    v = np.empty(d * 4)
    rows = np.empty(d * 4)  # row sums of |A + shift I|
    pivots = np.empty(d * 4)  # the pivots before their square roots
    rhs = np.empty(d * 4)
    h4 = np.empty(4)
    trace = np.empty(4)
    one = splat4(1.0)
    for t0 in range(0, m, 4):
        lanes = min(4, m - t0)
        for lane in range(4):
            t = t0 + lane if lane < lanes else t0
            for i in range(d):
                for k in range(i + 1):
                    Al[4 * (i * d + k) + lane] = A[t, i, k]
                rhs[4 * i + lane] = b[t, i]
            h4[lane] = shift[t]
        h = load4(h4, 0)
        tr = splat4(0.0)
        for j in range(d):
            jj = 4 * (j * d + j)
            s = add4(load4(Al, jj), h)
            tr = add4(tr, s)
            for k in range(j):
                f = load4(L, 4 * (j * d + k))
                s = sub4(s, mul4(f, f))
            store4(pivots, 4 * j, s)
            g = sqrt4(s)
            store4(L, jj, g)
            for i in range(j + 1, d, 4):
                x = 4 * (i * d + j)
                s0 = load4(Al, x)
                s1 = load4(Al, x + 4 * d)
                s2 = load4(Al, x + 8 * d)
                s3 = load4(Al, x + 12 * d)
                for k in range(j):
                    f = load4(L, 4 * (j * d + k))
                    y = 4 * (i * d + k)
                    s0 = sub4(s0, mul4(load4(L, y), f))
                    s1 = sub4(s1, mul4(load4(L, y + 4 * d), f))
                    s2 = sub4(s2, mul4(load4(L, y + 8 * d), f))
                    s3 = sub4(s3, mul4(load4(L, y + 12 * d), f))
                store4(L, x, div4(s0, g))
                store4(L, x + 4 * d, div4(s1, g))
                store4(L, x + 8 * d, div4(s2, g))
                store4(L, x + 12 * d, div4(s3, g))
        # row sums of |A + shift I| (lower triangle, mirrored)
        for i in range(d):
            r = abs4(add4(load4(Al, 4 * (i * d + i)), h))
            for k in range(i):
                r = add4(r, abs4(load4(Al, 4 * (i * d + k))))
            for k in range(i + 1, d):
                r = add4(r, abs4(load4(Al, 4 * (k * d + i))))
            store4(rows, 4 * i, r)
        # M(L)^{-1} e and M(L)^{-T} e (comparison matrix)
        for i in range(d):
            s = one
            for k in range(i):
                s = add4(s, mul4(abs4(load4(L, 4 * (i * d + k))), load4(z, 4 * k)))
            store4(z, 4 * i, div4(s, load4(L, 4 * (i * d + i))))
        for i in range(d - 1, -1, -1):
            s = one
            for k in range(i + 1, d):
                s = add4(s, mul4(abs4(load4(L, 4 * (k * d + i))), load4(v, 4 * k)))
            store4(v, 4 * i, div4(s, load4(L, 4 * (i * d + i))))
        # the decision per lane, with the scalar operations of the one-trial kernel
        store4(trace, 0, tr)
        for lane in range(lanes):
            ok = True
            for j in range(d):
                if not pivots[4 * j + lane] > 0.0:  # also catches NaN
                    ok = False
            upper = 0.0
            row_max = 0.0
            col_max = 0.0
            for i in range(d):
                upper = max(upper, rows[4 * i + lane])
                row_max = max(row_max, z[4 * i + lane])
            for i in range(d - 1, -1, -1):
                col_max = max(col_max, v[4 * i + lane])
            threshold = margin * d * 2.0 * u * upper
            rounding = 2.0 * (d + 1) * u * trace[lane]
            if not (ok and 0.5 / (row_max * col_max) - rounding > threshold):
                ok = False
            deferred[t0 + lane] = not ok
        # forward then back substitution: theta = L^{-T} L^{-1} b
        for i in range(d):
            s = load4(rhs, 4 * i)
            for k in range(i):
                s = sub4(s, mul4(load4(L, 4 * (i * d + k)), load4(z, 4 * k)))
            store4(z, 4 * i, div4(s, load4(L, 4 * (i * d + i))))
        for i in range(d - 1, -1, -1):
            s = load4(z, 4 * i)
            for k in range(i + 1, d):
                s = sub4(s, mul4(load4(L, 4 * (k * d + i)), load4(v, 4 * k)))
            store4(v, 4 * i, div4(s, load4(L, 4 * (i * d + i))))
        for lane in range(lanes):
            t = t0 + lane
            if deferred[t]:
                continue
            finite = True
            for i in range(d):
                theta[t, i] = v[4 * i + lane]
                if not np.isfinite(theta[t, i]):
                    finite = False
            certified[t] = finite
