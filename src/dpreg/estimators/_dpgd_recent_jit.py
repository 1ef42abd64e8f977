"""The compiled pass of :mod:`dpreg.estimators._dpgd_recent` (numba, cached on disk).

Imported on first use only. Module-level functions calling each other as globals:
numba's on-disk cache misses a kernel that calls kernels held in a closure (their
dispatchers pickle with a per-process id), so each process would compile the pass again
(docs/scaling.md, "numba's cache").
"""

import numba
import numpy as np

_CERTIFY_SLACK = 1e-9  # as dpreg.estimators._dpgd_recent
_METRIC_SLACK = 1e-6


@numba.njit(cache=True, nogil=True, fastmath={"reassoc", "contract"})
def _dot(X, i, theta):  # pragma: no cover - compiled
    # row i of X times theta, reassociated (SIMD lanes)
    s = 0.0
    for a in range(X.shape[1]):
        s += X[i, a] * theta[a]
    return s


@numba.njit(cache=True, nogil=True)
def fixed_radii(y, fitted, row_norm, clip, gradient_mode, ref_norm, tau):  # pragma: no cover
    # GramRowGradient._certificate's radii around OLS in one pass: the same operations in
    # the same order as its numpy expressions (no fastmath: each rounded as numpy rounds)
    for i in range(tau.shape[0]):
        rn = row_norm[i]
        zero = rn == 0.0
        if gradient_mode:
            B = np.inf if zero else clip / rn
        else:
            B = clip
        r_ref = abs(y[i] - fitted[i])
        slack = _CERTIFY_SLACK * (abs(y[i]) + rn * ref_norm + (0.0 if zero else B))
        if zero:
            t = np.inf if B - r_ref - slack > 0.0 else -np.inf
        else:
            t = (B - r_ref - slack) / (rn * (1.0 + _METRIC_SLACK))
            if np.isnan(t):
                t = -np.inf
        tau[i] = t


@numba.njit(cache=True, nogil=True)
def uncertified(tau_fixed, worst, dist, point, tau):  # pragma: no cover - compiled
    # how many rows neither certificate covers (the test of `corrections` below, which
    # RecentCertificate.corrections's reference path evaluates with numpy temporaries)
    left = 0
    for i in range(tau.shape[0]):
        if not (tau_fixed[i] >= worst or dist[point[i]] <= tau[i]):
            left += 1
    return left


@numba.njit(cache=True, nogil=True)
def corrections(
    X, y, norms, theta, fitted, clip, residual_mode, tau_fixed, worst, dist, point,
    tau, index, theta_norm, count, corr,
):  # pragma: no cover - compiled  # fmt: skip
    # the rows neither certificate covers, in increasing order: residual, clip,
    # correction and the new radius around theta (RecentCertificate.corrections)
    n, d = X.shape
    given = fitted.shape[0] == n  # the fitted values of a full product, or none
    computed = 0
    for i in range(n):
        if tau_fixed[i] >= worst or dist[point[i]] <= tau[i]:
            continue  # certified: cannot clip at theta
        computed += 1
        r = y[i] - (fitted[i] if given else _dot(X, i, theta))
        # the clip of dpgd_kernel.row_clip_corrections
        if residual_mode:
            clipped = abs(r) > clip
            w = clip if r > clip else (-clip if r < -clip else r)
        else:
            g = abs(r) * norms[i]
            clipped = g > clip
            w = (clip / g) * r if clipped else r
        if clipped:
            count[0] += 1
            diff = w - r
            for a in range(d):
                corr[0, a] += X[i, a] * diff
        ni = norms[i]
        if ni == 0.0:  # left to the fixed certificate
            tau[i] = -np.inf
        else:
            B = clip if residual_mode else clip / ni
            slack = _CERTIFY_SLACK * (abs(y[i]) + ni * theta_norm + B)
            tau[i] = (B - abs(r) - slack) / (ni * (1.0 + _METRIC_SLACK))
        point[i] = index
    return computed
