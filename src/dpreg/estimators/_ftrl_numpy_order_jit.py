"""The numpy step loop of DP-FTRL / DP-SGD compiled with numpy's own arithmetic (numba, cached).

Imported on first use only, by :mod:`dpreg.estimators.ftrl_numpy_order`, which checks these
kernels against numpy before it uses them. No ``fastmath``: every operation is the one
``dpreg.estimators.ftrl._data_steps`` performs, in its order (Choquette-Choo et al. 2023,
Alg. 1; the reference's arrays, docs/scaling.md "Cost of a paper-scale run", session 24):

* the residual ``np.einsum("tbd,td->tb", Xb, theta)`` is numpy's two-operand sum of
  products over a contiguous axis, which this numpy build runs as two SSE2 lanes: the
  products of each block of 8 coordinates added as ``a * b + lane`` in the order 6-7,
  4-5, 2-3, 0-1, then pairs, a last odd coordinate against a zero lane, then
  ``0.0 + (lane0 + lane1)`` (:func:`dot_einsum`);
* the gradient ``np.einsum("tbd,tb->td", Xb, resid)`` (for ``d >= 2``) adds
  ``x_ic r_i`` into a zeroed output row by row, in the batch's order;
* the clip factor ``clip / np.maximum(norms, clip)`` (NaN propagated as numpy's
  ``maximum`` does), the division by ``b``, ridge, noise and step as the reference.
"""

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def dot_einsum(X, i, theta, k, d):  # pragma: no cover - compiled
    """``np.einsum("tbd,td->tb")`` of row ``X[i]`` and ``theta[k]`` as numpy sums it."""
    lane0 = 0.0
    lane1 = 0.0
    c = 0
    while d - c >= 8:
        lane0 = X[i, c + 6] * theta[k, c + 6] + lane0
        lane1 = X[i, c + 7] * theta[k, c + 7] + lane1
        lane0 = X[i, c + 4] * theta[k, c + 4] + lane0
        lane1 = X[i, c + 5] * theta[k, c + 5] + lane1
        lane0 = X[i, c + 2] * theta[k, c + 2] + lane0
        lane1 = X[i, c + 3] * theta[k, c + 3] + lane1
        lane0 = X[i, c] * theta[k, c] + lane0
        lane1 = X[i, c + 1] * theta[k, c + 1] + lane1
        c += 8
    while d - c >= 2:
        lane0 = X[i, c] * theta[k, c] + lane0
        lane1 = X[i, c + 1] * theta[k, c + 1] + lane1
        c += 2
    if d - c == 1:
        lane0 = X[i, c] * theta[k, c] + lane0
        lane1 = 0.0 * 0.0 + lane1
    return 0.0 + (lane0 + lane1)


@numba.njit(cache=True, nogil=True, inline="always")
def _pair(X, i0, i1, i2, i3, theta, k, c, a0, a1, a2, a3):  # pragma: no cover - compiled
    # one lane step of dot_einsum (coordinate c) for four rows side by side
    t = theta[k, c]
    return (X[i0, c] * t + a0, X[i1, c] * t + a1, X[i2, c] * t + a2, X[i3, c] * t + a3)


@numba.njit(cache=True, nogil=True)
def dot4_einsum(X, i0, i1, i2, i3, theta, k, d):  # pragma: no cover - compiled
    """:func:`dot_einsum` of rows ``i0..i3`` with ``theta[k]``, side by side (same sums)."""
    p0 = p1 = p2 = p3 = 0.0  # lane 0 of each row
    q0 = q1 = q2 = q3 = 0.0  # lane 1 of each row
    c = 0
    while d - c >= 8:
        for e in (6, 4, 2, 0):
            p0, p1, p2, p3 = _pair(X, i0, i1, i2, i3, theta, k, c + e, p0, p1, p2, p3)
            q0, q1, q2, q3 = _pair(X, i0, i1, i2, i3, theta, k, c + e + 1, q0, q1, q2, q3)
        c += 8
    while d - c >= 2:
        p0, p1, p2, p3 = _pair(X, i0, i1, i2, i3, theta, k, c, p0, p1, p2, p3)
        q0, q1, q2, q3 = _pair(X, i0, i1, i2, i3, theta, k, c + 1, q0, q1, q2, q3)
        c += 2
    if d - c == 1:
        p0, p1, p2, p3 = _pair(X, i0, i1, i2, i3, theta, k, c, p0, p1, p2, p3)
        z = 0.0 * 0.0
        q0, q1, q2, q3 = z + q0, z + q1, z + q2, z + q3
    return 0.0 + (p0 + q0), 0.0 + (p1 + q1), 0.0 + (p2 + q2), 0.0 + (p3 + q3)


@numba.njit(cache=True, nogil=True)
def _clip(r, norm, clip, finite, clipped, k):  # pragma: no cover - compiled
    # norms = |r| ||x||; clipped += (norms > clip); r * (clip / np.maximum(norms, clip))
    if not finite:
        return r
    g = abs(r) * norm
    if g > clip:
        clipped[k] += 1.0
    m = clip if clip > g else g  # np.maximum(g, clip): g when NaN
    return r * (clip / m)


@numba.njit(cache=True, nogil=True)
def steps(X, y, norms, order, theta, epochs, eta, clip, finite, ridge, noise, path,
          clipped):  # pragma: no cover - compiled  # fmt: skip
    """``_data_steps`` trial by trial: theta (trials, d) and clipped (trials,) in place.

    ``order`` (trials, S, b) rows of ``X`` (n, d), any strides; ``norms`` numpy's
    ``np.linalg.norm(X, axis=1)``; ``noise`` (T, trials, d) or empty; ``path``
    (trials, T, d) or empty. The residuals of four rows are formed side by side (each
    row's sums unchanged) and added into the gradient in the batch's row order.
    """
    trials, S, b = order.shape
    d = X.shape[1]
    has_noise = noise.shape[0] > 0
    has_path = path.shape[0] > 0
    grad = np.empty(d)
    b4 = b - b % 4
    for k in range(trials):
        t = 0
        for _ in range(epochs):
            for s in range(S):
                grad[:] = 0.0
                for j in range(0, b4, 4):
                    i0 = order[k, s, j]
                    i1 = order[k, s, j + 1]
                    i2 = order[k, s, j + 2]
                    i3 = order[k, s, j + 3]
                    r0, r1, r2, r3 = dot4_einsum(X, i0, i1, i2, i3, theta, k, d)
                    r0 = _clip(r0 - y[i0], norms[i0], clip, finite, clipped, k)
                    r1 = _clip(r1 - y[i1], norms[i1], clip, finite, clipped, k)
                    r2 = _clip(r2 - y[i2], norms[i2], clip, finite, clipped, k)
                    r3 = _clip(r3 - y[i3], norms[i3], clip, finite, clipped, k)
                    for c in range(d):
                        acc = X[i0, c] * r0 + grad[c]
                        acc = X[i1, c] * r1 + acc
                        acc = X[i2, c] * r2 + acc
                        grad[c] = X[i3, c] * r3 + acc
                for j in range(b4, b):
                    i = order[k, s, j]
                    r = _clip(dot_einsum(X, i, theta, k, d) - y[i], norms[i], clip, finite,
                              clipped, k)  # fmt: skip
                    for c in range(d):
                        grad[c] = X[i, c] * r + grad[c]
                for c in range(d):
                    gc = grad[c] / b
                    if ridge > 0:
                        gc = gc + ridge * theta[k, c]
                    if has_noise:
                        gc = gc + noise[t, k, c]
                    theta[k, c] = theta[k, c] - eta * gc
                    if has_path:
                        path[k, t, c] = theta[k, c]
                t += 1
