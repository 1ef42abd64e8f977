"""The compiled bookkeeping of :mod:`dpreg.estimators._dpgd_fused_step` (numba, cached on disk).

Imported on first use only (the fused pass has loaded numba by then). No ``fastmath``:
every sum runs in the order numpy's reference computes it, so the results are the same
bits (``tests/unit/test_dpgd_fused_step.py``).
"""

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def prologue(
    M1, M2, scale, slack, ref_term, theta, tau_min, gram_prefix, starts,
    order, ext, E, grad, row_start,
):  # pragma: no cover - compiled  # fmt: skip
    # ClippedGradientKernel._evaluate up to the fused pass: distances, their stable
    # order, the sorted parameters, the certified blocks, the Gram prefix terms (einsum
    # "jab,bj->aj": a sequential sum over b from 0) and each parameter's first row.
    # Returns the certified (row, parameter) pairs, or -1 (nothing usable: a NaN
    # distance, left to the numpy path).
    d1, trials = M1.shape
    d = theta.shape[0]
    dist = np.empty(trials)
    for j in range(trials):
        # numpy's norm(axis=0): sqrt(add.reduce(x * x, axis=0)), rows added in order
        s = M1[0, j] * M1[0, j]
        for a in range(1, d1):
            s += M1[a, j] * M1[a, j]
        t = M2[0, j] * M2[0, j]
        for a in range(1, d1):
            t += M2[a, j] * M2[a, j]
        v = np.sqrt(s) * scale
        v += slack * (np.sqrt(t) + ref_term)
        if np.isnan(v):
            return -1
        dist[j] = v
    order[:] = np.argsort(dist, kind="mergesort")  # stable, as numpy's kind="stable"
    for j in range(trials):
        o = order[j]
        for a in range(d):
            ext[a, j] = theta[a, o]
        ext[d, j] = -1.0
    # cert[j]: blocks k whose smallest radius reaches parameter j's distance, i.e.
    # first[k] = searchsorted(sorted dist, tau_min[k], "right") > j
    blocks = tau_min.shape[0]
    cert = np.zeros(trials, dtype=np.int64)
    for k in range(blocks):
        v = tau_min[k]
        lo, hi = 0, trials  # first index with sorted dist > v
        while lo < hi:
            mid = (lo + hi) // 2
            if dist[order[mid]] <= v:
                lo = mid + 1
            else:
                hi = mid
        for j in range(lo):
            cert[j] += 1
    certified = 0
    k1 = E.shape[1]
    for j in range(trials):
        c = cert[j]
        start = starts[c]
        row_start[j] = start
        certified += start
        for a in range(d):
            if c > 0:
                acc = 0.0
                for b in range(d + 1):
                    acc += gram_prefix[c, a, b] * ext[b, j]
                grad[a, j] = 0.0 + acc
            else:
                grad[a, j] = 0.0
        for b in range(d + 1):
            E[j, b] = ext[b, j]
        for b in range(d + 1, k1):
            E[j, b] = 0.0
    return certified


@numba.njit(cache=True, nogil=True)
def epilogue(grad, G, count, order, n, out_grad, frac):  # pragma: no cover - compiled
    # grad += G[:, :d].T, then the columns back in the callers' order, divided by n
    d, trials = grad.shape
    for j in range(trials):
        o = order[j]
        for a in range(d):
            out_grad[a, o] = (grad[a, j] + G[j, a]) / n
        frac[o] = count[j] / n
