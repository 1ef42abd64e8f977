r"""Compiled rows of :class:`dpreg.data.streams.CounterGaussianRows` (equal to round-off).

The numpy reference (:func:`dpreg.data.streams._counter_normal_pairs`) makes eight passes
over uint64 arrays for SplitMix64, then Box-Muller; most of its time is the cosine and
sine passes and the temporaries. Here one compiled pass hashes each counter and writes
the uniform and the angle (:func:`counter_uniforms`), numpy takes the logarithm (numpy's
vectorised ``log`` and libm's differ in the last bit of a few values in a thousand, so it
stays numpy's), and a second pass writes the scaled coordinates and the response noise
(:func:`counter_rows`), a block of rows at a time through small reused scratch arrays
(fresh whole-call temporaries were faulted in from the kernel on every call, doubling the
cost). The hashes, uniforms, angles and logarithms are the reference's
bits; the cosine and sine of each angle come from one argument reduction
(:func:`counter_sincos`: Cody-Waite reduction by :math:`\pi/2` in three parts, Taylor
polynomials on :math:`|r| \le \pi/4`, the quadrant chosen without branches, so the loop
vectorises) instead of two libm calls, about 5x faster and within one ulp of libm's
(about 3% of the values differ, in the last bit). So the rows equal the reference's to
round-off (relative difference at most 4.5e-16), ``tests/unit/test_counter_kernel.py``.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import cache
from typing import Any

import numpy as np

__all__ = ["counter_rows", "counter_sincos", "counter_uniforms"]

_ANGLE = 2.0**-53 * 2.0 * math.pi
"""The reference's angle factor, one rounded constant."""

_SCRATCH_PAIRS = 1 << 13
"""Box-Muller pairs per block of :func:`counter_rows` (64 KB per scratch array)."""

_EMPTY = np.empty(0)

_PI = Fraction(
    "3.14159265358979323846264338327950288419716939937510582097494459230781640628620899863"
)
"""pi to 84 digits (enough for the 153 bits of the reduction constants below)."""


def _round_bits(x: Fraction, bits: int) -> Fraction:
    """``x`` > 0 rounded to ``bits`` significant bits."""
    scale = Fraction(2) ** (bits - 1 - math.floor(math.log2(x)))
    return Fraction(round(x * scale)) / scale


def _sincos_constants() -> tuple[float, ...]:
    r"""``2/pi``, :math:`\pi/2` in three parts and the Taylor coefficients of sin and cos.

    :math:`\pi/2 = P_1 + P_2 + P_3` to about :math:`2^{-153}`, with :math:`P_1, P_2` of 50
    significant bits: for a quadrant :math:`n \le 4` (3 bits) the products :math:`n P_1`,
    :math:`n P_2` are exact doubles. Then :math:`(-1)^k/(2k+1)!`, k = 1..8 (sin, to the
    term :math:`r^{17}`) and :math:`(-1)^k/(2k)!`, k = 2..9 (cos, to :math:`r^{18}`): at
    :math:`|r| \le \pi/4` the first omitted terms are below :math:`2^{-62}` relative.
    """
    half = _PI / 2
    p1 = _round_bits(half, 50)
    p2 = _round_bits(half - p1, 50)
    consts = [float(2 / _PI), float(p1), float(p2), float(half - p1 - p2)]
    consts += [float(Fraction((-1) ** k, math.factorial(2 * k + 1))) for k in range(1, 9)]
    consts += [float(Fraction((-1) ** k, math.factorial(2 * k))) for k in range(2, 10)]
    return tuple(consts)


@cache
def _kernels() -> tuple[Any, Any, Any]:
    """Compile (or load from numba's cache) the two passes and the sin/cos loop."""
    import numba

    inv_pio2, p1, p2, p3, s1, s2, s3, s4, s5, s6, s7, s8, *cc = _sincos_constants()
    c2, c3, c4, c5, c6, c7, c8, c9 = cc

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

    @numba.njit(cache=True, nogil=True, inline="always")
    def sincos(a):
        # (sin a, cos a) for 0 <= a < 2 pi (quadrant n <= 4: n P1, n P2 are exact)
        n = math.floor(a * inv_pio2 + 0.5)
        r1 = a - n * p1  # exact (Sterbenz)
        t = n * p2  # exact
        y0 = r1 - t  # two-sum: y0 + e = r1 - t exactly
        bv = y0 - r1
        e = (r1 - (y0 - bv)) + (-t - bv)
        y1 = e - n * p3
        y = y0 + y1  # renormalise: the reduced argument r = y0 + y1, |y1| <= ulp(y0) / 2
        y1 = y1 - (y - y0)
        y0 = y
        z = y0 * y0
        ps = z * (s1 + z * (s2 + z * (s3 + z * (s4 + z * (s5 + z * (s6 + z * (s7 + z * s8)))))))
        sn = y0 + (y0 * ps + y1 * (1.0 - 0.5 * z))  # sin(y0 + y1): tail y1 cos(y0)
        hz = 0.5 * z
        w = 1.0 - hz
        pc = z * z * (c2 + z * (c3 + z * (c4 + z * (c5 + z * (c6 + z * (c7 + z * (c8 + z * c9)))))))
        cs = w + (((1.0 - w) - hz) + (pc - y0 * y1))  # cos(y0 + y1); 1 - hz's rounding back
        k = int(n)  # quadrant: (sin, cos) = (s, c), (c, -s), (-s, -c), (-c, s) by selects
        odd = (k & 1) == 1
        ss = 1.0 - 2.0 * ((k >> 1) & 1)
        sc = 1.0 - 2.0 * (((k + 1) >> 1) & 1)
        return (cs if odd else sn) * ss, (sn if odd else cs) * sc

    @numba.njit(cache=True, nogil=True)
    def sincos_loop(angle, s, c):
        for i in range(angle.shape[0]):
            s[i], c[i] = sincos(angle[i])

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
        g = np.empty(2 * pairs)  # one row's normals (d + 1, rounded up to pairs)
        for i in range(m):
            for j in range(pairs):  # branch-free: vectorises
                r = math.sqrt(-2.0 * log_u[i, j])
                sin_a, cos_a = sincos(angle[i, j])
                g[2 * j] = r * cos_a
                g[2 * j + 1] = r * sin_a
            for c in range(d):
                X[i, c] = g[c] * sqrt_h[c]
            z[i] = g[d]
            if with_base:
                base[i] = dot(X, w, i, 0, d)

    return uniforms, rows, sincos_loop


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


def counter_sincos(angle: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""Return ``(sin(angle), cos(angle))`` as :func:`counter_rows` computes them (1-d, float64).

    One argument reduction by :math:`\pi/2` for both (three-part Cody-Waite, exact for
    the quadrants of :math:`[0, 2\pi)`), Taylor polynomials to degree 17 / 18 on the
    reduced argument with its tail, the quadrant's swap and signs by selects. Within one
    ulp of libm's ``sin``/``cos`` for angles in :math:`[0, 2\pi)`.

    Examples
    --------
    >>> import numpy as np
    >>> a = np.array([0.0, 0.5, 2.0, 4.0, 6.0])
    >>> s, c = counter_sincos(a)
    >>> bool(np.all(np.abs(s - np.sin(a)) <= np.spacing(np.abs(np.sin(a)))))
    True
    >>> bool(np.all(np.abs(c - np.cos(a)) <= np.spacing(np.abs(np.cos(a)))))
    True
    """
    a = np.ascontiguousarray(angle, dtype=np.float64)
    if a.ndim != 1:
        raise ValueError(f"angle must be 1-d; got shape {a.shape}")
    s, c = np.empty_like(a), np.empty_like(a)
    _kernels()[2](a, s, c)
    return s, c


def counter_rows(
    key: int, positions: np.ndarray, sqrt_h: np.ndarray, w: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray] | tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Return ``(X, z)`` of the rows at ``positions``: (m, d) scaled by ``sqrt_h``, (m,).

    The rows of :meth:`dpreg.data.streams.CounterGaussianRows.rows`, computed in two
    compiled passes around numpy's log, equal to round-off (the cosine and sine of
    :func:`counter_sincos`, within one ulp of libm's). With ``w`` (d,), returns
    ``(X, z, base)`` with ``base`` :math:`= \langle x_i, w\rangle` summed in the second
    pass in numpy's pairwise order: the bits of ``(X * w).sum(axis=1)`` without its two
    passes (issue 18).

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
    pos = np.ascontiguousarray(positions, dtype=np.int64)
    m, pairs = pos.size, (d + 2) // 2
    with_base = w is not None
    if with_base:
        w = np.ascontiguousarray(w, dtype=np.float64)
        if w.shape != (d,):
            raise ValueError(f"w must have shape ({d},); got {w.shape}")
    X = np.empty((m, d))
    z = np.empty(m)
    base = np.empty(m) if with_base else z
    # Blocks of rows through small scratch arrays (kept in cache, reused): whole-call
    # temporaries of 1.6 MB at 1000 rows, d = 200, freed each call, made glibc return the
    # memory and fault it in again on every call (about as costly as the rows themselves).
    block = max(1, min(m, _SCRATCH_PAIRS // pairs))
    u, angle = np.empty((block, pairs)), np.empty((block, pairs))
    uniforms, rows = _kernels()[:2]
    for lo in range(0, m, block):
        k = min(block, m - lo)
        uniforms(np.uint64(key), pos[lo : lo + k], pairs, _ANGLE, u[:k], angle[:k])
        np.log(u[:k], out=u[:k])
        rows(u[:k], angle[:k], sqrt_h, w if with_base else _EMPTY, X[lo : lo + k], z[lo : lo + k],
             base[lo : lo + k])  # fmt: skip
    return (X, z, base) if with_base else (X, z)
