r"""Compiled rows of :class:`dpreg.data.streams.CounterGaussianRows` (the same bits).

The numpy reference (:func:`dpreg.data.streams._counter_normal_pairs`) makes eight passes
over uint64 arrays for SplitMix64, then Box-Muller; most of its time is the cosine and
sine passes and the temporaries. Here one compiled pass hashes each counter and writes
the uniform and the angle (:func:`counter_uniforms`), numpy takes the logarithm (numpy's
vectorised ``log`` and libm's differ in the last bit of a few values in a thousand, so it
stays numpy's), and a second pass writes the scaled coordinates and the response noise
(:func:`counter_rows`). Every operation is the reference's, on the same operands in the
same order: the rows are bit-identical where numpy's float64 ``cos``/``sin`` are libm's
(measured here; otherwise equal to round-off), ``tests/unit/test_counter_kernel.py``.
"""

from __future__ import annotations

import math
from functools import cache
from typing import Any

import numpy as np

__all__ = ["counter_rows", "counter_uniforms"]

_ANGLE = 2.0**-53 * 2.0 * math.pi
"""The reference's angle factor, one rounded constant."""


@cache
def _kernels() -> tuple[Any, Any]:
    """Compile (or load from numba's cache) the two passes."""
    import numba

    golden = np.uint64(0x9E3779B97F4A7C15)
    mix1 = np.uint64(0xBF58476D1CE4E5B9)
    mix2 = np.uint64(0x94D049BB133111EB)
    s30, s27, s31 = np.uint64(30), np.uint64(27), np.uint64(31)
    s11, one = np.uint64(11), np.uint64(1)

    @numba.njit(cache=True, nogil=True)
    def mix(x):
        z = x + golden
        z = (z ^ (z >> s30)) * mix1
        z = (z ^ (z >> s27)) * mix2
        return z ^ (z >> s31)

    @numba.njit(cache=True, nogil=True)
    def uniforms(key, pos, pairs, angle_scale, u, angle):
        # u[i, j] in (0, 1], angle[i, j] in [0, 2 pi): counter pos[i] * pairs + j
        for i in range(pos.shape[0]):
            c0 = np.uint64(pos[i]) * np.uint64(pairs)
            for j in range(pairs):
                b = ((c0 + np.uint64(j)) << one) ^ key
                h1 = mix(b)
                h2 = mix(b ^ one)
                u[i, j] = (np.float64(h1 >> s11) + 1.0) * 2.0**-53
                angle[i, j] = np.float64(h2 >> s11) * angle_scale

    @numba.njit(cache=True, nogil=True)
    def block_dot(X, w, i, lo, n):
        # sum of X[i, c] * w[c], c in [lo, lo + n), as numpy's pairwise sum adds a block
        # of <= 128 terms: sequentially below 8 terms, else 8 interleaved accumulators
        # combined pairwise, then the remainder
        if n < 8:
            res = 0.0
            for c in range(lo, lo + n):
                res += X[i, c] * w[c]
            return res
        x = X[i, lo : lo + n]
        v = w[lo : lo + n]
        r0, r1, r2, r3 = x[0] * v[0], x[1] * v[1], x[2] * v[2], x[3] * v[3]
        r4, r5, r6, r7 = x[4] * v[4], x[5] * v[5], x[6] * v[6], x[7] * v[7]
        c = 8
        while c < n - (n % 8):
            r0 += x[c] * v[c]
            r1 += x[c + 1] * v[c + 1]
            r2 += x[c + 2] * v[c + 2]
            r3 += x[c + 3] * v[c + 3]
            r4 += x[c + 4] * v[c + 4]
            r5 += x[c + 5] * v[c + 5]
            r6 += x[c + 6] * v[c + 6]
            r7 += x[c + 7] * v[c + 7]
            c += 8
        res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
        while c < n:
            res += x[c] * v[c]
            c += 1
        return res

    @numba.njit(cache=True, nogil=True)
    def dot(X, w, i, lo, n):
        # numpy's pairwise sum of the products X[i, lo:lo+n] * w[lo:lo+n] (the order of
        # ``(X * w).sum(axis=1)``): halves cut at a multiple of 8 until <= 128 terms
        if n <= 128:
            return block_dot(X, w, i, lo, n)
        n2 = n // 2
        n2 -= n2 % 8
        return dot(X, w, i, lo, n2) + dot(X, w, i, lo + n2, n - n2)

    @numba.njit(cache=True, nogil=True)
    def rows(log_u, angle, sqrt_h, w, X, z, base):
        # normals 2j, 2j + 1 of a row: r cos(angle), r sin(angle), r = sqrt(-2 log u);
        # X[i, c] = normal c * sqrt_h[c], z[i] = normal d, base[i] = <X[i], w> (numpy's
        # pairwise order; w empty: base not computed)
        m, pairs = log_u.shape
        d = sqrt_h.shape[0]
        with_base = w.shape[0] == d
        for i in range(m):
            for j in range(pairs):
                r = math.sqrt(-2.0 * log_u[i, j])
                a = angle[i, j]
                c = 2 * j
                g = r * math.cos(a)
                if c < d:
                    X[i, c] = g * sqrt_h[c]
                elif c == d:
                    z[i] = g
                g = r * math.sin(a)
                if c + 1 < d:
                    X[i, c + 1] = g * sqrt_h[c + 1]
                elif c + 1 == d:
                    z[i] = g
            if with_base:
                base[i] = dot(X, w, i, 0, d)

    return uniforms, rows


def counter_uniforms(key: int, positions: np.ndarray, pairs: int) -> tuple[np.ndarray, np.ndarray]:
    r"""Return the Box-Muller inputs of counters ``positions[i] * pairs + j``: (m, pairs) each.

    ``u`` in (0, 1] from the first SplitMix64 hash of ``(2 c) ^ key``, the angle in
    :math:`[0, 2\pi)` from the hash of ``(2 c + 1) ^ key``, as in
    :func:`dpreg.data.streams._counter_normal_pairs`.

    Examples
    --------
    >>> import numpy as np
    >>> u, angle = counter_uniforms(7, np.array([0, 3]), 2)
    >>> u.shape, bool(np.all((u > 0) & (u <= 1))), bool(np.all(angle < 2 * np.pi))
    ((2, 2), True, True)
    """
    pos = np.ascontiguousarray(positions, dtype=np.int64)
    u = np.empty((pos.size, pairs))
    angle = np.empty((pos.size, pairs))
    _kernels()[0](np.uint64(key), pos, int(pairs), _ANGLE, u, angle)
    return u, angle


def counter_rows(
    key: int, positions: np.ndarray, sqrt_h: np.ndarray, w: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray] | tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Return ``(X, z)`` of the rows at ``positions``: (m, d) scaled by ``sqrt_h``, (m,).

    The rows of :meth:`dpreg.data.streams.CounterGaussianRows.rows`, computed in two
    compiled passes around numpy's log. With ``w`` (d,), returns ``(X, z, base)`` with
    ``base`` :math:`= \langle x_i, w\rangle` summed in the second pass in numpy's
    pairwise order: the bits of ``(X * w).sum(axis=1)`` without its two passes (issue 18).

    Examples
    --------
    >>> import numpy as np
    >>> X, z = counter_rows(7, np.array([2, 0]), np.ones(3))
    >>> X.shape, z.shape
    ((2, 3), (2,))
    >>> base = counter_rows(7, np.array([2, 0]), np.ones(3), np.arange(3.0))[2]
    >>> bool(np.array_equal(base, (X * np.arange(3.0)).sum(axis=1)))
    True
    """
    sqrt_h = np.ascontiguousarray(sqrt_h, dtype=np.float64)
    d = sqrt_h.size
    u, angle = counter_uniforms(key, positions, (d + 2) // 2)
    np.log(u, out=u)
    X = np.empty((u.shape[0], d))
    z = np.empty(u.shape[0])
    if w is None:
        _kernels()[1](u, angle, sqrt_h, np.empty(0), X, z, z)
        return X, z
    w = np.ascontiguousarray(w, dtype=np.float64)
    if w.shape != (d,):
        raise ValueError(f"w must have shape ({d},); got {w.shape}")
    base = np.empty(u.shape[0])
    _kernels()[1](u, angle, sqrt_h, w, X, z, base)
    return X, z, base
