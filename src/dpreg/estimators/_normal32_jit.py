r"""The compiled fill of :mod:`dpreg.estimators.normal32_kernel` (numba, cached on disk).

Imported on first use only. Module-level functions calling each other as globals: numba's
on-disk cache misses a kernel that calls kernels held in a closure (their dispatchers
pickle with a per-process id), so each process compiled ``fill`` again
(docs/scaling.md, "numba's cache"). The helpers below repeat those of
:mod:`dpreg.data._pcg64_jit` rather than import them, because numba's cache checks only
a kernel's own source file.

numpy's float32 standard normal (``random_standard_normal_f`` of
``numpy/random/src/distributions/distributions.c``) consumes the generator's stream of
32-bit halves (``pcg64_next32``: the low half of a new 64-bit output, its high half kept
in ``uinteger`` with ``has_uint32`` set and returned by the next call). Here that state
is carried in registers, as the float64 kernels of :mod:`dpreg.data._pcg64_jit` carry
theirs (issue 18, session 25; docs/scaling.md):

* the 128-bit PCG64 state as two chains, :math:`p = s_k` (numpy's state after the
  outputs drawn) and :math:`q = s_{k+1}`, each 64-bit output being ``xsl_rr(q)`` and the
  pair moving to :math:`(q, a^2 p + (a c + c))` (:func:`_jump2`), so one step's
  multiplies need not finish before the next output (the same states, computed in
  another order);
* ``has_uint32`` and ``uinteger`` as two scalars, written back at the end (``uinteger``
  stays what numpy leaves in it: the last high half, also once consumed);
* numpy's ``x = rabs * wi[idx]; if sign: x = -x`` as ``rabs * _WI_SIGNED[r & 0x1ff]``
  (IEEE multiplication is sign-symmetric: the same bits, ``-0.0`` included).

The former kernel kept the state and the buffered half in arrays, read and written at
every draw; the values and the final state are the same (numpy's, bit for bit:
``tests/unit/test_normal32_kernel.py``).
"""

import math

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic
from numba.np.random._constants import (
    fi_float,
    ki_float,
    wi_float,
    ziggurat_nor_inv_r_f,
    ziggurat_nor_r_f,
)

_MULT_HI = np.uint64(0x2360ED051FC65DA4)
_MULT_LO = np.uint64(0x4385DF649FCCF645)

_M32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)
_ZERO = np.uint64(0)
_ONE = np.uint64(1)

_KI = np.asarray(ki_float, dtype=np.uint32)
_FI = np.asarray(fi_float, dtype=np.float32)
_WI = np.asarray(wi_float, dtype=np.float32)
#: ``wi_float`` then ``-wi_float``: entry ``r & 0x1ff`` (the layer ``r & 0xff`` and the
#: sign bit ``(r >> 8) & 1`` of numpy's ``r``) gives numpy's signed ``x`` in one product.
_WI_SIGNED = np.concatenate([_WI, -_WI])
_NOR_R = np.float32(ziggurat_nor_r_f)
_NOR_INV_R = np.float32(ziggurat_nor_inv_r_f)

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
def _xsl_rr(hi, lo):  # pragma: no cover - compiled
    # numpy's pcg_output_xsl_rr_128_64
    x = hi ^ lo
    rot = hi >> np.uint64(58)
    return (x >> rot) | (x << ((np.uint64(64) - rot) & np.uint64(63)))


@numba.njit(cache=True, nogil=True)
def _jump2(inc_hi, inc_lo):  # pragma: no cover - compiled
    # (a^2, a c + c): two steps s -> a^2 s + (a c + c) of the LCG in one
    a2_hi, a2_lo = _muladd128(_MULT_HI, _MULT_LO, _MULT_HI, _MULT_LO, _ZERO, _ZERO)
    c2_hi, c2_lo = _muladd128(_MULT_HI, _MULT_LO, inc_hi, inc_lo, inc_hi, inc_lo)
    return a2_hi, a2_lo, c2_hi, c2_lo


@numba.njit(cache=True, nogil=True)
def _start(st, buf):  # pragma: no cover - compiled
    # the carried state (p, q = step(p), has_uint32, uinteger) and the jump
    p_hi, p_lo, inc_hi, inc_lo = st[0], st[1], st[2], st[3]
    q_hi, q_lo = _muladd128(p_hi, p_lo, _MULT_HI, _MULT_LO, inc_hi, inc_lo)
    s = (p_hi, p_lo, q_hi, q_lo, buf[0], buf[1])
    return s, _jump2(inc_hi, inc_lo)


@numba.njit(cache=True, nogil=True)
def _finish(s, st, buf):  # pragma: no cover - compiled
    st[0] = s[0]
    st[1] = s[1]
    buf[0] = s[4]
    buf[1] = s[5]


@numba.njit(cache=True, nogil=True, inline="always")
def _next32(s, j):  # pragma: no cover - compiled
    # numpy's pcg64_next32 on s = (p_hi, p_lo, q_hi, q_lo, has_uint32, uinteger)
    p_hi, p_lo, q_hi, q_lo, has, held = s
    if has != _ZERO:
        return np.uint32(held), (p_hi, p_lo, q_hi, q_lo, _ZERO, held)
    n_hi, n_lo = _muladd128(p_hi, p_lo, j[0], j[1], j[2], j[3])
    v = _xsl_rr(q_hi, q_lo)
    return np.uint32(v & _M32), (q_hi, q_lo, n_hi, n_lo, _ONE, v >> _S32)


@numba.njit(cache=True, nogil=True, inline="always")
def _next_float(s, j):  # pragma: no cover - compiled
    # numpy's next_float: (next_uint32 >> 8) * 2^-24 in float32
    r, s = _next32(s, j)
    return np.float32(r >> np.uint32(8)) * np.float32(1.0 / 16777216.0), s


@numba.njit(cache=True, nogil=True)
def _normal_slow(r, x, s, j):  # pragma: no cover - compiled
    # random_standard_normal_f after its first draw r (x = its signed value) was rejected:
    # the tail (layer 0) or the wedge, then its loop again from a new draw
    while True:
        idx = r & np.uint32(0xFF)
        rabs = (r >> np.uint32(9)) & np.uint32(0x0007FFFFF)
        if idx == 0:
            while True:
                u, s = _next_float(s, j)
                xx = -_NOR_INV_R * np.float32(math.log1p(-u))
                u, s = _next_float(s, j)
                yy = -np.float32(math.log1p(-u))
                if np.float32(yy + yy) > np.float32(xx * xx):
                    if (rabs >> np.uint32(8)) & np.uint32(1):
                        return -np.float32(_NOR_R + xx), s
                    return np.float32(_NOR_R + xx), s
        u, s = _next_float(s, j)
        lhs = np.float32(np.float32((_FI[idx - 1] - _FI[idx]) * u) + _FI[idx])
        if np.float64(lhs) < math.exp(-0.5 * np.float64(x) * np.float64(x)):
            return x, s
        r, s = _next32(s, j)
        idx = r & np.uint32(0xFF)
        rabs = (r >> np.uint32(9)) & np.uint32(0x0007FFFFF)
        x = np.float32(np.float32(rabs) * _WI_SIGNED[r & np.uint32(0x1FF)])
        if rabs < _KI[idx]:
            return x, s


@numba.njit(cache=True, nogil=True, inline="always")
def _normal(s, j):  # pragma: no cover - compiled
    # numpy's random_standard_normal_f: returns (x, new s)
    r, s = _next32(s, j)
    rabs = (r >> np.uint32(9)) & np.uint32(0x0007FFFFF)
    x = np.float32(np.float32(rabs) * _WI_SIGNED[r & np.uint32(0x1FF)])
    if rabs < _KI[r & np.uint32(0xFF)]:
        return x, s
    return _normal_slow(r, x, s, j)


@numba.njit(cache=True, nogil=True)
def fill(st, buf, out_t, scale, use_scale, steps):  # pragma: no cover - compiled
    # draw i of the C order of out_t.T goes to out_t[i % cols, i // cols]: drawn
    # `steps` time steps at a time into tmp (in draw order), then stored as `steps`
    # consecutive numbers per column (a column's stores share cache lines and pages);
    # st = [state_hi, state_lo, inc_hi, inc_lo], buf = [has_uint32, uinteger], both
    # updated to numpy's state after the draws
    s, j = _start(st, buf)
    n_c, n_t = out_t.shape
    if n_c == 1:
        for t in range(n_t):
            x, s = _normal(s, j)
            out_t[0, t] = x * scale if use_scale else x
        _finish(s, st, buf)
        return
    tmp = np.empty((steps, n_c), dtype=np.float32)
    for t0 in range(0, n_t, steps):
        m = min(steps, n_t - t0)
        for t in range(m):
            for c in range(n_c):
                x, s = _normal(s, j)
                tmp[t, c] = x * scale if use_scale else x
        for c in range(n_c):
            for t in range(m):
                out_t[c, t0 + t] = tmp[t, c]
    _finish(s, st, buf)
