"""The compiled kernel of :mod:`dpreg.inference.bootstrap_kernel` (numba, cached on disk).

Imported on first use only (numba's import costs about 0.4 s of CPU); module-level
functions so that numba's on-disk cache can hit (a kernel calling a kernel defined in a
closure is recompiled in every process).
"""

# ruff: noqa: E741
import numba
import numpy as np


@numba.njit(cache=True, nogil=True, inline="always")
def secular(w, a, c, x):  # pragma: no cover - compiled
    """f(x) = c - x - sum a_i^2 / (w_i - x) and f'(x); f = -inf at or past a pole."""
    f = c - x
    df = -1.0
    for j in range(w.shape[0]):
        aj = a[j]
        if aj != 0.0:
            den = w[j] - x
            if not den > 0.0:
                return -np.inf, -np.inf
            q = aj / den
            f -= aj * q
            df -= q * q
    return f, df


@numba.njit(cache=True, nogil=True)
def min_eig(w, a, c, out):  # pragma: no cover - compiled
    # f is decreasing and concave below min(w): Newton steps from a point right of the
    # root stay right of it and converge monotonically; a bracket [lo, hi] safeguards
    # them (bisection wherever a step leaves it or a point lands past a pole).
    t, nb, d = a.shape
    for i in range(t):
        wmin, wabs = np.inf, 0.0
        for j in range(d):
            wmin = min(wmin, w[i, j])
            wabs = max(wabs, abs(w[i, j]))
        for b in range(nb):
            cc = c[i, b]
            ab = a[i, b]
            norm2 = 0.0
            for j in range(d):
                norm2 += ab[j] * ab[j]
            hi = min(wmin, cc)
            lo = hi - np.sqrt(norm2)  # Weyl: lambda_min >= min(w, c) - |a|
            x = hi
            tol = 2.2e-16 * (abs(cc) + wabs + np.sqrt(norm2))
            if lo < hi - tol:  # the root within tol of hi (a clamped w with a residue of
                f, df = secular(w[i], ab, cc, hi - tol)  # round-off size): done
                if f > 0.0:
                    out[i, b] = hi - 0.5 * tol
                    continue
            for _ in range(400):
                if not lo < hi:
                    break
                f, df = secular(w[i], ab, cc, x)
                if f > 0.0:
                    lo = x
                elif f == 0.0:
                    lo = hi = x
                    break
                else:
                    hi = x
                if f < 0.0 and np.isfinite(f):
                    step = f / df
                    xn = x - step
                    if abs(step) <= tol:
                        x = xn
                        break
                else:
                    xn = np.nan
                if not lo < xn < hi:
                    xn = 0.5 * (lo + hi)
                    if not lo < xn < hi:
                        break
                x = xn
            out[i, b] = x if lo <= x <= hi else 0.5 * (lo + hi)


@numba.njit(cache=True, nogil=True)
def adassp_systems(G, scale, upper, ridge, out):  # pragma: no cover - compiled
    """out[t, b] = G[t] + scale * xi[t, b] + ridge[t, b] * I, xi symmetric from ``upper``.

    ``upper[t, b]`` lists xi's upper triangle row by row (numpy.triu_indices order); each
    entry is computed as numpy evaluates ``G[:, None] + scale * xi + ridge[..., None, None]
    * eye(d)``: ``(G_ij + scale * xi_ij) + ridge * I_ij`` (off the diagonal the added
    ``ridge * 0.0`` too, so the sign of a zero is numpy's).
    """
    t, nb, d = out.shape[0], out.shape[1], out.shape[2]
    for s in range(t):
        for b in range(nb):
            r = ridge[s, b]
            off = r * 0.0
            k = 0
            for i in range(d):
                out[s, b, i, i] = (G[s, i, i] + scale * upper[s, b, k]) + r * 1.0
                k += 1
                for j in range(i + 1, d):
                    x = scale * upper[s, b, k]
                    out[s, b, i, j] = (G[s, i, j] + x) + off
                    out[s, b, j, i] = (G[s, j, i] + x) + off
                    k += 1


@numba.njit(cache=True, nogil=True)
def ihm_steps(G, theta, th, eta2, paper, sigma, noise, V, r, q, k, min_ratio, step, ok, g):  # noqa: PLR0913  # pragma: no cover - compiled
    """One IHM bootstrap step per (trial, replicate): the gradient, then H^{-1} g by law.

    The arithmetic of ``bootstrap._ihm``'s numpy step and ``bootstrap_kernel.ihm_solutions``
    (same expressions, sums in index order) for every (s, b), without temporaries.
    """
    t, nb, d = th.shape
    v = np.empty(d)
    h = np.empty(d)
    for s in range(t):
        for b in range(nb):
            for i in range(d):
                acc = 0.0
                for j in range(d):
                    acc += G[s, i, j] * (theta[s, j] - th[s, b, j])
                if paper:
                    acc = acc - eta2[s, b] * th[s, b, i]
                g[s, b, i] = acc + sigma * noise[s, b, i]
            rmin = r[s, b, 0]
            rmax = r[s, b, 0]
            for i in range(1, d):
                rmin = min(rmin, r[s, b, i])
                rmax = max(rmax, r[s, b, i])
            good = rmin >= min_ratio * rmax and rmin > 0.0
            nrm2 = 0.0
            for i in range(d):
                acc = 0.0
                for j in range(d):
                    acc += V[s, j, i] * g[s, b, j]
                vi = acc / r[s, b, i] if good else acc
                v[i] = vi
                nrm2 += vi * vi
            nrm = np.sqrt(nrm2)
            div = nrm if nrm > 0.0 else 1.0
            sign = 1.0 if v[0] / div >= 0.0 else -1.0
            hq = 0.0
            hh = 0.0
            for i in range(d):
                hi = sign * (v[i] / div)
                if i == 0:
                    hi += 1.0
                h[i] = hi
                hq += hi * q[s, b, i]
                hh += hi * hi
            coef = 2.0 * hq / hh
            scale = -sign * nrm
            for i in range(d):
                wi = scale * (q[s, b, i] - coef * h[i])
                v[i] = wi / r[s, b, i] if good else wi  # reuse v: W^{-1} v / r
            finite = True
            for i in range(d):
                acc = 0.0
                for j in range(d):
                    acc += V[s, i, j] * v[j]
                val = k * acc
                step[s, b, i] = val
                if not np.isfinite(val):
                    finite = False
            ok[s, b] = good and finite


@numba.njit(cache=True, nogil=True, inline="always")
def _select(a, lo, hi, k):  # pragma: no cover - compiled
    """Order a[lo:hi + 1] partially: a[k] becomes its (k - lo)-th smallest value."""
    while lo < hi:
        mid = (lo + hi) // 2  # median of three as pivot value
        x, y, z = a[lo], a[mid], a[hi]
        if x > y:
            x, y = y, x
        if y > z:
            y = z
            if x > y:
                y = x
        pivot = y
        i, j = lo, hi
        while i <= j:
            while a[i] < pivot:
                i += 1
            while a[j] > pivot:
                j -= 1
            if i <= j:
                a[i], a[j] = a[j], a[i]
                i += 1
                j -= 1
        if k <= j:
            hi = j
        elif k >= i:
            lo = i
        else:
            return


@numba.njit(cache=True, nogil=True)
def interval_order_statistics(est, k0, k1, out, buf):  # pragma: no cover - compiled
    """out[:, t, j] = order statistics k0, k0 + 1, k1, k1 + 1 of est[t, :, j] (0-based).

    Needs 0 <= k0 < k1 < est.shape[1] - 1. Two selections (k1 on the whole column, then
    k0 + 1 below it) and two scans (the minimum right of k1, the maximum up to k0 + 1).
    Returns False (out undefined) if a column holds a NaN or a chosen value is zero
    (+0 and -0 compare equal: which one lands at a rank is the algorithm's choice).
    """
    t, nb, d = est.shape
    for s in range(t):
        for j in range(d):
            for b in range(nb):
                v = est[s, b, j]
                if v != v:
                    return False
                buf[b] = v
            _select(buf, 0, nb - 1, k1)
            a1 = buf[k1]
            b1 = buf[k1 + 1]
            for b in range(k1 + 2, nb):
                b1 = min(b1, buf[b])
            if k0 + 1 < k1:
                _select(buf, 0, k1 - 1, k0 + 1)
            b0 = buf[k0 + 1]
            a0 = buf[0]
            for b in range(1, k0 + 1):
                a0 = max(a0, buf[b])
            if a0 == 0.0 or b0 == 0.0 or a1 == 0.0 or b1 == 0.0:
                return False
            out[0, s, j] = a0
            out[1, s, j] = b0
            out[2, s, j] = a1
            out[3, s, j] = b1
    return True
