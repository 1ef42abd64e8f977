"""The compiled passes of :mod:`dpreg.data.counter_kernel` (numba, cached on disk).

Imported on first use only. Module-level functions calling each other as globals, and no
recursion: numba's on-disk cache misses a kernel that calls kernels held in a closure
(their dispatchers pickle with a per-process id, so every process compiled ``rows`` and
``uniforms`` again) and crashes on loading a recursive function (docs/scaling.md,
"numba's cache"). The constants of the sine and cosine are computed here, so that the
file numba checks for staleness is the one that defines them.
The pairwise sum's explicit stack is also written out in
:mod:`dpreg.estimators._adassp_stream_jit`, :mod:`dpreg.data._counter_jit` and
:mod:`dpreg.estimators.peer_bfgs_kernel` on purpose: numba checks only a cached
function's own file, so a shared callee in another file could be edited and leave its
callers' cached code stale.
"""

import math
from fractions import Fraction

import numba
import numpy as np

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


INV_PIO2, P1, P2, P3, S1, S2, S3, S4, S5, S6, S7, S8, *_CC = _sincos_constants()
C2, C3, C4, C5, C6, C7, C8, C9 = _CC

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
    n = math.floor(a * INV_PIO2 + 0.5)
    r1 = a - n * P1  # exact (Sterbenz)
    t = n * P2  # exact
    y0 = r1 - t  # two-sum: y0 + e = r1 - t exactly
    bv = y0 - r1
    e = (r1 - (y0 - bv)) + (-t - bv)
    y1 = e - n * P3
    y = y0 + y1  # renormalise: the reduced argument r = y0 + y1, |y1| <= ulp(y0) / 2
    y1 = y1 - (y - y0)
    y0 = y
    z = y0 * y0
    ps = z * (S1 + z * (S2 + z * (S3 + z * (S4 + z * (S5 + z * (S6 + z * (S7 + z * S8)))))))
    sn = y0 + (y0 * ps + y1 * (1.0 - 0.5 * z))  # sin(y0 + y1): tail y1 cos(y0)
    hz = 0.5 * z
    w = 1.0 - hz
    pc = z * z * (C2 + z * (C3 + z * (C4 + z * (C5 + z * (C6 + z * (C7 + z * (C8 + z * C9)))))))
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
def dot(X, w, i, lo, n, f_lo, f_n, f_state, f_left):
    # numpy's pairwise sum of the products X[i, lo:lo+n] * w[lo:lo+n] (the order of
    # ``(X * w).sum(axis=1)``): pw(lo, n) = pw(lo, h) + pw(lo + h, n - h), h = n // 2 cut
    # down to a multiple of 8, blocks of <= 128 terms by block_dot; the recursion on the
    # explicit stack f_* (numba's cache crashes on loading a recursive function)
    if n <= 128:
        return block_dot(X, w, i, lo, n)
    top = 0
    f_lo[0], f_n[0], f_state[0] = lo, n, 0
    ret = 0.0
    while top >= 0:
        m = f_n[top]
        if m <= 128:
            ret = block_dot(X, w, i, f_lo[top], m)
            top -= 1
            continue
        h = m // 2
        h -= h % 8
        if f_state[top] == 0:  # descend left
            f_state[top] = 1
            f_lo[top + 1], f_n[top + 1], f_state[top + 1] = f_lo[top], h, 0
            top += 1
        elif f_state[top] == 1:  # left done: keep it, descend right
            f_left[top] = ret
            f_state[top] = 2
            f_lo[top + 1], f_n[top + 1], f_state[top + 1] = f_lo[top] + h, m - h, 0
            top += 1
        else:  # both done
            ret = f_left[top] + ret
            top -= 1
    return ret


@numba.njit(cache=True, nogil=True)
def rows(log_u, angle, sqrt_h, w, X, z, base):
    # normals 2j, 2j + 1 of a row: r cos(angle), r sin(angle), r = sqrt(-2 log u);
    # X[i, c] = normal c * sqrt_h[c], z[i] = normal d, base[i] = <X[i], w> (numpy's
    # pairwise order; w empty: base not computed)
    m, pairs = log_u.shape
    d = sqrt_h.shape[0]
    with_base = w.shape[0] == d
    g = np.empty(2 * pairs)  # one row's normals (d + 1, rounded up to pairs)
    f_lo = np.empty(64, np.int64)  # the pairwise sum's stack (each level halves)
    f_n = np.empty(64, np.int64)
    f_state = np.empty(64, np.int64)
    f_left = np.empty(64)
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
            base[i] = dot(X, w, i, 0, d, f_lo, f_n, f_state, f_left)
