"""The compiled fill of :mod:`dpreg.estimators.normal32_kernel` (numba, cached on disk).

Imported on first use only. Module-level functions calling each other as globals: numba's
on-disk cache misses a kernel that calls kernels held in a closure (their dispatchers
pickle with a per-process id), so each process compiled ``fill`` again
(docs/scaling.md, "numba's cache").
"""

import math

import numba
import numpy as np

_MULT_HI = 0x2360ED051FC65DA4
_MULT_LO = 0x4385DF649FCCF645

m32 = np.uint64(0xFFFFFFFF)
s32 = np.uint64(32)
mult_hi, mult_lo = np.uint64(_MULT_HI), np.uint64(_MULT_LO)
one = np.uint64(1)


@numba.njit(cache=True, nogil=True, inline="always")
def _next64(st):  # pragma: no cover - compiled
    # st = [state_hi, state_lo, inc_hi, inc_lo]; state <- state * MULT + inc (mod 2^128)
    hi, lo = st[0], st[1]
    a0, a1 = lo & m32, lo >> s32
    b0, b1 = mult_lo & m32, mult_lo >> s32
    p00, p01, p10, p11 = a0 * b0, a0 * b1, a1 * b0, a1 * b1
    mid = (p00 >> s32) + (p01 & m32) + (p10 & m32)
    new_lo = (mid << s32) | (p00 & m32)
    new_hi = p11 + (p01 >> s32) + (p10 >> s32) + (mid >> s32)
    new_hi += lo * mult_hi + hi * mult_lo
    lo2 = new_lo + st[3]
    carry = one if lo2 < new_lo else np.uint64(0)
    hi2 = new_hi + st[2] + carry
    st[0], st[1] = hi2, lo2
    # XSL-RR output of the new state
    x = hi2 ^ lo2
    rot = hi2 >> np.uint64(58)
    return (x >> rot) | (x << ((np.uint64(64) - rot) & np.uint64(63)))


@numba.njit(cache=True, nogil=True, inline="always")
def _next32(st, buf):  # pragma: no cover - compiled
    # buf = [has_uint32, uinteger]
    if buf[0] != 0:
        buf[0] = np.uint64(0)
        return np.uint32(buf[1])
    v = _next64(st)
    buf[0] = one
    buf[1] = v >> s32
    return np.uint32(v & m32)


@numba.njit(cache=True, nogil=True, inline="always")
def _next_float(st, buf):  # pragma: no cover - compiled
    return np.float32(_next32(st, buf) >> np.uint32(8)) * np.float32(1.0 / 16777216.0)


@numba.njit(cache=True, nogil=True)
def fill(st, buf, out_t, scale, use_scale, ki, wi, fi, nor_r, nor_inv_r, steps):  # pragma: no cover
    # draw i of the C order of out_t.T goes to out_t[i % cols, i // cols]: drawn
    # `steps` time steps at a time into tmp (in draw order), then stored as `steps`
    # consecutive numbers per column (a column's stores share cache lines and pages)
    n_c, n_t = out_t.shape
    tmp = np.empty((steps, n_c), dtype=np.float32)
    for t0 in range(0, n_t, steps):
        m = min(steps, n_t - t0)
        for t in range(m):
            for c in range(n_c):
                while True:
                    r = _next32(st, buf)
                    idx = r & np.uint32(0xFF)
                    sign = (r >> np.uint32(8)) & np.uint32(1)
                    rabs = (r >> np.uint32(9)) & np.uint32(0x0007FFFFF)
                    x = np.float32(np.float32(rabs) * wi[idx])
                    if sign:
                        x = -x
                    if rabs < ki[idx]:
                        break
                    if idx == 0:
                        while True:
                            xx = -nor_inv_r * np.float32(math.log1p(-_next_float(st, buf)))
                            yy = -np.float32(math.log1p(-_next_float(st, buf)))
                            if np.float32(yy + yy) > np.float32(xx * xx):
                                if (rabs >> np.uint32(8)) & np.uint32(1):
                                    x = -np.float32(nor_r + xx)
                                else:
                                    x = np.float32(nor_r + xx)
                                break
                        break
                    u = _next_float(st, buf)
                    lhs = np.float32(np.float32((fi[idx - 1] - fi[idx]) * u) + fi[idx])
                    if np.float64(lhs) < math.exp(-0.5 * np.float64(x) * np.float64(x)):
                        break
                tmp[t, c] = x * scale if use_scale else x
        if n_c == 1:
            for t in range(m):
                out_t[0, t0 + t] = tmp[t, 0]
        else:
            for c in range(n_c):
                for t in range(m):
                    out_t[c, t0 + t] = tmp[t, c]
