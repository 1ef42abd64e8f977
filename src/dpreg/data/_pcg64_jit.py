r"""numpy's PCG64 and standard-normal ziggurat inlined in compiled code (numba, cached on disk).

Imported on first use only (:mod:`dpreg.data.normal_kernel`,
:func:`dpreg.estimators.dp_ssgd_kernel.stream_chunk`). numba's ``rng.standard_normal()``
runs numpy's ziggurat but fetches each 64-bit output through the bit generator's function
pointer (``next_uint64``), an opaque call per draw. Here the 128-bit state lives in
registers and each output is numpy's PCG64 step (``numpy/random/src/pcg64/pcg64.h``:
``pcg_setseq_128_step_r``, :math:`s_{k+1} = a s_k + c \bmod 2^{128}` with numpy's
multiplier :math:`a` and the generator's increment :math:`c`, then
``pcg_output_xsl_rr_128_64`` of :math:`s_{k+1}`), inlined into numpy's
``random_standard_normal`` (``numpy/random/src/distributions/distributions.c``, as
numba's ``numba/np/random/distributions.py`` transcribes it, with numba's ziggurat
tables): the same outputs consumed in the same order, so the same normals and the same
final state. Kernels take ``st = [state_hi, state_lo, inc_hi, inc_lo]`` (``uint64``) and
write the final ``state_hi, state_lo`` back into ``st[0], st[1]``.

**Geometric draws.** :func:`geometric_cumsum` draws ``rng.geometric(p)`` for p < 1/3 as
numpy does (``random_geometric_inversion``: :math:`\lceil -E / \log(1 - p)\rceil` with
``E`` from numpy's exponential ziggurat, ``random_standard_exponential``, transcribed
as numba's ``distributions.py`` does, on the inlined PCG64) and sums each row as
``np.cumsum`` does: the Poisson subsample positions of DP-SGD
(:func:`dpreg.estimators.dpsgd_poisson.poisson_positions`; issue 18, session 25).

**Two chains.** The step's multiply-add (:func:`muladd128`, one LLVM ``i128``
expression: three 64-bit multiplies) is a chain of dependent multiplies, one per output.
The loops carry two states, :math:`p = s_k` (numpy's state after the outputs drawn) and
:math:`q = s_{k+1}`; a draw outputs ``xsl_rr(q)`` and moves to
:math:`(q, s_{k+2})` with :math:`s_{k+2} = a^2 s_k + (a c + c)` (:func:`jump2`), so
each multiply has two outputs' time to finish. The values are those of the one-chain
recurrence: only the order in which the states are computed changes.

**Sign without a branch.** numpy's ``x = rabs * wi[idx]; if sign: x = -x`` is
``rabs * _WI_SIGNED[r & 0x1ff]`` (see :data:`_WI_SIGNED`), bit for bit.

Module-level functions calling each other as globals: numba's on-disk cache misses
kernels held in closures, and checks only a kernel's own source file (docs/scaling.md,
"numba's cache"), so the consumers drawing one normal at a time (DP-SSGD's stream loop)
live in this file too: editing the generator recompiles them.
"""

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic
from numba.np.random._constants import (
    fe_double,
    fi_double,
    ke_double,
    ki_double,
    we_double,
    wi_double,
    ziggurat_exp_r,
    ziggurat_nor_inv_r,
    ziggurat_nor_r,
)

_I128 = ir.IntType(128)
_I64 = ir.IntType(64)

#: numpy's PCG64 multiplier (``PCG_DEFAULT_MULTIPLIER_128``), high and low 64 bits.
MULT_HI = np.uint64(0x2360ED051FC65DA4)
MULT_LO = np.uint64(0x4385DF649FCCF645)

_ONE = np.uint64(1)
_INT64_MAX = np.int64(2**63 - 1)

#: ``wi_double`` then ``-wi_double``: entry ``r & 0x1ff`` of a raw output ``r`` (its
#: ``idx = r & 0xff`` and sign bit ``(r >> 8) & 1``) is ``-wi[idx]`` for a set sign bit, so
#: ``rabs * _WI_SIGNED[r & 0x1ff]`` is numpy's ``x = rabs * wi[idx]; if sign: x = -x``
#: bit for bit (IEEE multiplication is sign-symmetric; ``rabs = 0`` gives ``-0.0`` as
#: ``-x`` does) without a branch or a select.
_WI_SIGNED = np.concatenate([wi_double, -wi_double])


@intrinsic
def muladd128(typingctx, hi, lo, m_hi, m_lo, c_hi, c_lo):
    """``(hi:lo) * (m_hi:m_lo) + (c_hi:c_lo) mod 2**128`` as ``(hi, lo)`` (uint64 halves)."""
    u64 = types.uint64
    sig = types.UniTuple(u64, 2)(u64, u64, u64, u64, u64, u64)

    def codegen(context, builder, signature, args):
        def join(high, low):
            wide = builder.shl(builder.zext(high, _I128), ir.Constant(_I128, 64))
            return builder.or_(wide, builder.zext(low, _I128))

        s = join(args[0], args[1])
        r = builder.add(builder.mul(s, join(args[2], args[3])), join(args[4], args[5]))
        high = builder.trunc(builder.lshr(r, ir.Constant(_I128, 64)), _I64)
        return context.make_tuple(builder, sig.return_type, [high, builder.trunc(r, _I64)])

    return sig, codegen


@numba.njit(cache=True, nogil=True, inline="always")
def _xsl_rr(hi, lo):  # pragma: no cover - compiled
    # numpy's pcg_output_xsl_rr_128_64
    x = hi ^ lo
    rot = hi >> np.uint64(58)
    return (x >> rot) | (x << ((np.uint64(64) - rot) & np.uint64(63)))


@numba.njit(cache=True, nogil=True)
def jump2(inc_hi, inc_lo):  # pragma: no cover - compiled
    # (a^2, a c + c): two steps s -> a^2 s + (a c + c) of the LCG in one
    a2_hi, a2_lo = muladd128(MULT_HI, MULT_LO, MULT_HI, MULT_LO, np.uint64(0), np.uint64(0))
    c2_hi, c2_lo = muladd128(MULT_HI, MULT_LO, inc_hi, inc_lo, inc_hi, inc_lo)
    return a2_hi, a2_lo, c2_hi, c2_lo


@numba.njit(cache=True, nogil=True, inline="always")
def next64(s, j):  # pragma: no cover - compiled
    # s = (p_hi, p_lo, q_hi, q_lo): p the state after the outputs drawn so far (numpy's
    # state), q = step(p); j = jump2(...). Returns numpy's next output, xsl_rr(q), and
    # the advanced (q, step(step(p))): each chain is stepped every other draw, so the
    # latency of one 128-bit multiply is spread over two outputs.
    p_hi, p_lo, q_hi, q_lo = s
    n_hi, n_lo = muladd128(p_hi, p_lo, j[0], j[1], j[2], j[3])
    return _xsl_rr(q_hi, q_lo), (q_hi, q_lo, n_hi, n_lo)


@numba.njit(cache=True, nogil=True, inline="always")
def _next_double(s, j):  # pragma: no cover - compiled
    # numpy's pcg64_next_double
    r, s = next64(s, j)
    return np.float64(r >> np.uint64(11)) * (1.0 / 9007199254740992.0), s


@numba.njit(cache=True, nogil=True)
def _normal_slow(idx, rabs, x, s, j):  # pragma: no cover - compiled
    # random_standard_normal after its first draw was rejected (the tail idx == 0 or the
    # wedge), then its loop again from a new draw; about 1% of the draws come here
    while True:
        if idx == 0:
            while True:
                u, s = _next_double(s, j)
                xx = -ziggurat_nor_inv_r * np.log1p(-u)
                u, s = _next_double(s, j)
                yy = -np.log1p(-u)
                if yy + yy > xx * xx:
                    if (rabs >> np.uint64(8)) & _ONE:
                        return -(ziggurat_nor_r + xx), s
                    return ziggurat_nor_r + xx, s
        u, s = _next_double(s, j)
        if (fi_double[idx - 1] - fi_double[idx]) * u + fi_double[idx] < np.exp(-0.5 * x * x):
            return x, s
        r, s = next64(s, j)
        idx = r & np.uint64(0xFF)
        rabs = (r >> np.uint64(9)) & np.uint64(0x000FFFFFFFFFFFFF)
        x = rabs * _WI_SIGNED[r & np.uint64(0x1FF)]
        if rabs < ki_double[idx]:
            return x, s


@numba.njit(cache=True, nogil=True, inline="always")
def normal(s, j):  # pragma: no cover - compiled
    # numpy's random_standard_normal on the state s of next64: returns (x, new s)
    r, s = next64(s, j)
    idx = r & np.uint64(0xFF)
    rabs = (r >> np.uint64(9)) & np.uint64(0x000FFFFFFFFFFFFF)
    x = rabs * _WI_SIGNED[r & np.uint64(0x1FF)]  # numpy's x = rabs * wi[idx], negated if
    if rabs < ki_double[idx]:  # bit 8 of r is set
        return x, s
    return _normal_slow(idx, rabs, x, s, j)


@numba.njit(cache=True, nogil=True)
def start(st):  # pragma: no cover - compiled
    # the state s of next64 and the jump j from st = [state_hi, state_lo, inc_hi, inc_lo]
    p_hi, p_lo, inc_hi, inc_lo = st[0], st[1], st[2], st[3]
    q_hi, q_lo = muladd128(p_hi, p_lo, MULT_HI, MULT_LO, inc_hi, inc_lo)
    return (p_hi, p_lo, q_hi, q_lo), jump2(inc_hi, inc_lo)


@numba.njit(cache=True, nogil=True)
def fill(st, flat):  # pragma: no cover - compiled
    # flat[i] = the i-th normal, as rng.standard_normal(out=flat)
    s, j = start(st)
    n = flat.shape[0]
    for i in range(0, n - 1, 2):  # two at a time: the two chains keep their registers
        x, s = normal(s, j)
        flat[i] = x
        x, s = normal(s, j)
        flat[i + 1] = x
    if n % 2:
        x, s = normal(s, j)
        flat[n - 1] = x
    st[0] = s[0]
    st[1] = s[1]


@numba.njit(cache=True, nogil=True)
def fill_scaled(st, out, scale):  # pragma: no cover - compiled
    # out[i, c] = the normal of C-order position (i, c) times scale[c], two at a time
    s, j = start(st)
    m, d = out.shape
    for i in range(m):
        for c in range(0, d - 1, 2):
            x, s = normal(s, j)
            out[i, c] = x * scale[c]
            x, s = normal(s, j)
            out[i, c + 1] = x * scale[c + 1]
        if d % 2:
            x, s = normal(s, j)
            out[i, d - 1] = x * scale[d - 1]
    st[0] = s[0]
    st[1] = s[1]


@numba.njit(cache=True, nogil=True)
def _exponential_slow(idx, x, s, j):  # pragma: no cover - compiled
    # random_standard_exponential after its first draw was rejected (standard_exponential_
    # unlikely: the tail idx == 0 or the wedge), then its loop again from a new draw
    while True:
        if idx == 0:
            u, s = _next_double(s, j)
            return ziggurat_exp_r - np.log1p(-u), s
        u, s = _next_double(s, j)
        if (fe_double[idx - 1] - fe_double[idx]) * u + fe_double[idx] < np.exp(-x):
            return x, s
        r, s = next64(s, j)
        ri = r >> np.uint64(3)
        idx = ri & np.uint64(0xFF)
        ri = ri >> np.uint64(8)
        x = ri * we_double[idx]
        if ri < ke_double[idx]:
            return x, s


@numba.njit(cache=True, nogil=True, inline="always")
def exponential(s, j):  # pragma: no cover - compiled
    # numpy's random_standard_exponential on the state s of next64: returns (x, new s)
    r, s = next64(s, j)
    ri = r >> np.uint64(3)
    idx = ri & np.uint64(0xFF)
    ri = ri >> np.uint64(8)
    x = ri * we_double[idx]
    if ri < ke_double[idx]:  # about 98.9% of the draws
        return x, s
    return _exponential_slow(idx, x, s, j)


@numba.njit(cache=True, nogil=True)
def geometric_cumsum(st, log1p_neg_p, n, pos):  # pragma: no cover - compiled
    # pos[k, m] = (draw 0 + ... + draw m of row k) - 1, the draws numpy's
    # rng.geometric(p, size=pos.shape) in C order for p < 1/3 (random_geometric_inversion:
    # ceil(-E / log1p(-p)), capped at INT64_MAX; log1p_neg_p is libm's log1p(-p), passed
    # in). Returns the largest count of positions below n in a row, or -1 if some row's
    # last position is below n (the caller then draws more, as the reference does).
    s, j = start(st)
    trials, M = pos.shape
    width = 0
    for k in range(trials):
        acc = np.int64(-1)
        below = 0
        for m in range(M):
            e, s = exponential(s, j)
            z = np.ceil(-e / log1p_neg_p)
            acc += _INT64_MAX if z >= 9.223372036854776e18 else np.int64(z)
            pos[k, m] = acc
            below += acc < n
        if acc < n:
            width = -1
        elif width >= 0 and below > width:
            width = below
    st[0] = s[0]
    st[1] = s[1]
    return width


# ------------------------------------------------- consumers drawing one at a time


@numba.njit(cache=True, nogil=True)
def dp_ssgd_stream(
    X, base, z, sig, norms, st, scale, W, W_sum, clipped, eta_clip, clip, first_step, tail_start
):  # pragma: no cover - compiled
    # dpreg.estimators.dp_ssgd_kernel's stream_kernel (the reference) line for line, with
    # its rng replaced by st, the PCG64 state (the final state written back to st[0:2])
    s, jump = start(st)
    D, c, d = X.shape
    R = W.shape[3]
    has_z = sig.shape[0] == R
    rr = np.empty((D, R))
    for j in range(c):
        in_tail = first_step + j + 1 >= tail_start
        rr[:] = 0.0
        for i in range(d):
            for k in range(D):
                x = X[k, j, i]
                for q in range(R):
                    rr[k, q] += x * W[k, 0, i, q]
        for k in range(D):
            r = rr[k]
            nrm = norms[k, j]
            for q in range(R):
                y = base[k, j] + z[k, j] * sig[q] if has_z else base[k, j]
                v = r[q] - y
                gr = abs(v) * nrm
                if gr > clip[q]:
                    clipped[k, q] += 1.0
                r[q] = v * (eta_clip[q] / max(gr, clip[q]))
            for i in range(d):
                x = X[k, j, i]
                for q in range(R):
                    w = W[k, 0, i, q] - x * r[q]
                    g, s = normal(s, jump)
                    w -= g * scale[q]
                    W[k, 0, i, q] = w
                    if in_tail:
                        W_sum[k, 0, i, q] += w
    st[0] = s[0]
    st[1] = s[1]
