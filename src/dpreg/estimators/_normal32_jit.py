"""The compiled fill of :mod:`dpreg.estimators.normal32_kernel` (numba, cached on disk).

Imported on first use only. Module-level functions calling each other as globals: numba's
on-disk cache misses a kernel that calls kernels held in a closure (their dispatchers
pickle with a per-process id), so each process compiled ``fill`` again
(docs/scaling.md, "numba's cache").

The PCG64 step (numpy's ``pcg64.h``) is one LLVM ``i128`` multiply-add
(:func:`_muladd128`; three 64-bit multiplies), not four 32 x 32-bit partial products
(issue 18; about 15% less time per float32 normal, docs/scaling.md).
"""

import math

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

_MULT_HI = 0x2360ED051FC65DA4
_MULT_LO = 0x4385DF649FCCF645

m32 = np.uint64(0xFFFFFFFF)
s32 = np.uint64(32)
mult_hi, mult_lo = np.uint64(_MULT_HI), np.uint64(_MULT_LO)
one = np.uint64(1)


_I128 = ir.IntType(128)


@intrinsic
def _muladd128(typingctx, hi, lo, m_hi, m_lo, c_hi, c_lo):
    # (hi:lo) * (m_hi:m_lo) + (c_hi:c_lo) mod 2^128 as (hi, lo): one LLVM i128 expression
    # (as dpreg.data._pcg64_jit.muladd128; here so that numba's cache sees its edits)
    u64 = types.uint64
    sig = types.UniTuple(u64, 2)(u64, u64, u64, u64, u64, u64)

    def codegen(context, builder, signature, args):
        def join(high, low):
            wide = builder.shl(builder.zext(high, _I128), ir.Constant(_I128, 64))
            return builder.or_(wide, builder.zext(low, _I128))

        r = builder.add(
            builder.mul(join(args[0], args[1]), join(args[2], args[3])), join(args[4], args[5])
        )
        high = builder.trunc(builder.lshr(r, ir.Constant(_I128, 64)), ir.IntType(64))
        return context.make_tuple(
            builder, sig.return_type, [high, builder.trunc(r, ir.IntType(64))]
        )

    return sig, codegen


@numba.njit(cache=True, nogil=True, inline="always")
def _next64(st):  # pragma: no cover - compiled
    # st = [state_hi, state_lo, inc_hi, inc_lo]; state <- state * MULT + inc (mod 2^128)
    hi2, lo2 = _muladd128(st[0], st[1], mult_hi, mult_lo, st[2], st[3])
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
