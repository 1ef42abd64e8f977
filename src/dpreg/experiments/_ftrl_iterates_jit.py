"""numba kernel of the App. D simulation of :mod:`dpreg.experiments.choquettechoo2023_iterates`.

Module-level functions (not closures) so that numba's on-disk cache holds them; the
pairwise sum is written out here on purpose, as in the other ``_*_jit`` modules (numba
checks only a cached function's own file for staleness; docs/scaling.md, "numba's cache").
"""

import numba
import numpy as np

PW_BLOCK = 128
"""numpy's pairwise-summation block (``PW_BLOCKSIZE``); rows of at most this many terms."""


@numba.njit(cache=True, nogil=True, inline="always")
def row_sum(v, n):  # pragma: no cover - compiled
    # numpy's pairwise sum of v[:n], n <= 128 (one block): sequentially below 8 terms,
    # else 8 interleaved accumulators combined pairwise, then the remainder
    if n < 8:
        res = 0.0
        for c in range(n):
            res += v[c]
        return res
    r0, r1, r2, r3 = v[0], v[1], v[2], v[3]
    r4, r5, r6, r7 = v[4], v[5], v[6], v[7]
    c = 8
    while c < n - (n % 8):
        r0 += v[c]
        r1 += v[c + 1]
        r2 += v[c + 2]
        r3 += v[c + 3]
        r4 += v[c + 4]
        r5 += v[c + 5]
        r6 += v[c + 6]
        r7 += v[c + 7]
        c += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while c < n:
        res += v[c]
        c += 1
    return res


@numba.njit(cache=True, nogil=True)
def iterate_steps(
    draws, root, sigma_sgd, eta, z, hat, sgd, dp, out, noise_sq, first, T
):  # pragma: no cover - compiled
    # Steps first .. first + m - 1 of the App. D simulation (the numpy loop of
    # choquettechoo2023_iterates._simulate_reference, operation by operation):
    # draws (m, trials * d + trials) are the step's standard normals in the order the
    # loop draws them (x's, then xi's); out (5, T, trials) receives d6, d7, d8,
    # d4_iterate, d4_gradient; hat, sgd, dp (trials, d) are updated in place.
    m = draws.shape[0]
    trials, d = hat.shape
    x = np.empty(d)
    theta = np.empty(d)
    buf = np.empty(d)
    for s in range(m):
        t = first + s
        for i in range(trials):
            for j in range(d):
                x[j] = root[j] * draws[s, i * d + j]
            xi = sigma_sgd * draws[s, trials * d + i]
            for j in range(d):
                theta[j] = (hat[i, j] + sgd[i, j]) + dp[i, j]
            for j in range(d):
                buf[j] = hat[i, j] * hat[i, j]
            out[0, t, i] = row_sum(buf, d)
            for j in range(d):
                buf[j] = sgd[i, j] * sgd[i, j]
            out[1, t, i] = row_sum(buf, d)
            for j in range(d):
                buf[j] = dp[i, j] * dp[i, j]
            out[2, t, i] = row_sum(buf, d)
            for j in range(d):
                buf[j] = theta[j] * theta[j]
            out[3, t, i] = row_sum(buf, d)
            for j in range(d):
                buf[j] = x[j] * x[j]
            xx = row_sum(buf, d)
            for j in range(d):
                buf[j] = x[j] * theta[j]
            q = row_sum(buf, d) - xi
            out[4, t, i] = xx * (q * q)
            if t == T - 1:
                for j in range(d):
                    v = sgd[i, j] + dp[i, j]
                    buf[j] = v * v
                noise_sq[i] = row_sum(buf, d)
                continue
            for j in range(d):
                buf[j] = x[j] * hat[i, j]
            s_hat = row_sum(buf, d)
            for j in range(d):
                buf[j] = x[j] * sgd[i, j]
            s_sgd = row_sum(buf, d) - xi
            for j in range(d):
                buf[j] = x[j] * dp[i, j]
            s_dp = row_sum(buf, d)
            for j in range(d):
                ex = eta * x[j]
                hat[i, j] = hat[i, j] - ex * s_hat
                sgd[i, j] = sgd[i, j] - ex * s_sgd
                dp[i, j] = (dp[i, j] - ex * s_dp) - eta * z[t, i, j]
