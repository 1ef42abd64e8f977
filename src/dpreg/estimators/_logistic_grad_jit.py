r"""The elementwise passes of the softmax gradient, compiled (issue 18; numba).

Imported on first use only, by
:func:`dpreg.estimators.ftrl_logistic.clipped_gradient_sum`. Per step of the logistic
DP-FTRL / DP-SGD training (Choquette-Choo et al. 2023, Fig. 4 analogue;
docs/choquettechoo2023.md) the numpy reference
(:func:`~dpreg.estimators.ftrl_logistic.clipped_gradient_sum_reference`) makes about
fifteen passes over (trials, b, classes) arrays of a few thousand entries (the row
maximum, the softmax sum, the one-hot gather, the norms, the clipping), each a numpy
call of a few microseconds. :func:`shift_by_row_max` and :func:`residual_clip` do the same
IEEE operations on every entry in the same order, in two passes: the row maximum (exact
in any order; NaN propagates as in ``np.max``), numpy's pairwise sum of at most 128
terms for the softmax normaliser and the squared norm (``row_sum``, as in numpy's
``pairwise_sum``), the division, ``p - onehot``, the mask product, ``x_norm *
sqrt(.)``, ``clip / maximum(norm, clip)`` and the product. No fast-math flags (no
reciprocal, reassociation or fused multiply-add): the same bits
(``tests/unit/test_logistic_grad_kernel.py``). The exponential and the two batched
products stay numpy's (their SIMD and BLAS kernels fix the bits).

One file with module-level kernels, so numba's on-disk cache checks its source
(docs/scaling.md, "numba's cache").
"""

import math

import numba
import numpy as np


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
def shift_by_row_max(logits):  # pragma: no cover - compiled; tested against numpy
    # logits (trials, b, K) C-contiguous: logits -= logits.max(axis=2, keepdims=True)
    trials, b, K = logits.shape
    for t in range(trials):
        for i in range(b):
            row = logits[t, i]
            m = row[0]
            for j in range(1, K):
                v = row[j]
                if m != m:
                    break
                if v > m or v != v:
                    m = v
            for j in range(K):
                row[j] = row[j] - m


@numba.njit(cache=True, nogil=True)
def residual_clip(
    p, onehot, x_norm, idx, mask, use_mask, clip, clipped, n_clipped
):  # pragma: no cover - compiled; tested against numpy
    # p (trials, b, K) = exp(shifted logits), overwritten by the (clipped) residuals
    # r = p / sum(p) - onehot[idx] (times the mask); n_clipped (trials,) int64 counts
    # the rows with x_norm * |r| > clip (if clipped)
    trials, b, K = p.shape
    buf = np.empty(K)
    for t in range(trials):
        count = 0
        for i in range(b):
            row = p[t, i]
            s = 0.0 + row_sum(row, K)
            k = idx[t, i]
            oh = onehot[k]
            for j in range(K):
                row[j] = row[j] / s - oh[j]
            if use_mask:
                f = 1.0 if mask[t, i] else 0.0
                for j in range(K):
                    row[j] = row[j] * f
            if clipped:
                for j in range(K):
                    buf[j] = row[j] * row[j]
                norm = x_norm[k] * math.sqrt(0.0 + row_sum(buf, K))
                if norm > clip:
                    count += 1
                den = norm if (norm >= clip or norm != norm) else clip
                scale = clip / den
                for j in range(K):
                    row[j] = row[j] * scale
        n_clipped[t] = count


@numba.njit(cache=True, nogil=True)
def noisy_step(
    W, grad, noise_t, use_noise, velocity, use_momentum, momentum, batch_size, lr
):  # pragma: no cover - compiled; tested against numpy
    # One DP-FTRL step on C-contiguous float64 arrays of one shape, entry by entry as
    # numpy's statements: grad /= b; grad += noise_t; velocity *= mu; velocity += grad;
    # W -= lr * (velocity if use_momentum else grad)
    w = W.reshape(-1)
    g = grad.reshape(-1)
    z = noise_t.reshape(-1)
    vel = velocity.reshape(-1)
    bf = float(batch_size)
    for i in range(g.size):
        v = g[i] / bf
        if use_noise:
            v = v + z[i]
        g[i] = v
        if use_momentum:
            u = vel[i] * momentum
            u = u + v
            vel[i] = u
            v = u
        w[i] = w[i] - lr * v
