"""The compiled kernels of :mod:`dpreg.inference.bootstrap_kernel` (numba, cached on disk).

Imported on first use only (numba's import costs about 0.4 s of CPU); module-level
functions so that numba's on-disk cache can hit (a kernel calling a kernel defined in a
closure is recompiled in every process).
"""

# ruff: noqa: E741
import numba
import numpy as np


@numba.njit(cache=True, nogil=True, inline="always")
def condition_bound(r, chi, low, d, B, y):  # pragma: no cover - compiled
    # B: the d x d Bartlett block; returns a bound on kappa(diag(r) B) (inf if singular)
    rmin, rmax = np.inf, 0.0
    for i in range(d):
        rmin = min(rmin, r[i])
        rmax = max(rmax, r[i])
    if not rmin > 0.0:
        return np.inf
    frob = 0.0
    for i in range(d):
        B[i, i] = chi[i]
        frob += chi[i] * chi[i]
        o = i * (i - 1) // 2
        for j in range(i):
            B[i, j] = low[o + j]
            frob += low[o + j] * low[o + j]
    if not np.isfinite(frob):
        return np.inf
    for i in range(d):
        if not B[i, i] > 0.0:
            return np.inf
    # ||M(B)^{-1}||_inf = max of M(B)^{-1} 1 (forward substitution, non-negative terms)
    ninf = 0.0
    for i in range(d):
        s = 1.0
        for j in range(i):
            s += abs(B[i, j]) * y[j]
        y[i] = s / B[i, i]
        ninf = max(ninf, y[i])
    # ||M(B)^{-1}||_1 = max of M(B)^{-T} 1 (back substitution)
    n1 = 0.0
    for i in range(d - 1, -1, -1):
        s = 1.0
        for j in range(i + 1, d):
            s += abs(B[j, i]) * y[j]
        y[i] = s / B[i, i]
        n1 = max(n1, y[i])
    return (rmax / rmin) * np.sqrt(frob) * np.sqrt(n1 * ninf)


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
def ihm(V, r, g, chi, low, k, max_cond, step, ok):  # pragma: no cover - compiled
    t, nb, d = g.shape
    B = np.empty((d, d))
    y = np.empty(d)
    z = np.empty(d)
    for i in range(t):
        for b in range(nb):
            kappa = condition_bound(r[i, b], chi[i, b], low[i, b], d, B, y)
            if not kappa <= max_cond:
                ok[i, b] = False
                continue
            # z = B^{-1} diag(1/r) V' g (forward), then z = B^{-T} z (back)
            for j in range(d):
                s = 0.0
                for m in range(d):
                    s += V[i, m, j] * g[i, b, m]
                s /= r[i, b, j]
                for m in range(j):
                    s -= B[j, m] * z[m]
                z[j] = s / B[j, j]
            for j in range(d - 1, -1, -1):
                s = z[j]
                for m in range(j + 1, d):
                    s -= B[m, j] * z[m]
                z[j] = s / B[j, j]
            for j in range(d):
                z[j] = z[j] * k / r[i, b, j]
            finite = True
            for m in range(d):
                acc = 0.0
                for j in range(d):
                    acc += V[i, m, j] * z[j]
                step[i, b, m] = acc
                finite = finite and np.isfinite(acc)
            ok[i, b] = finite
