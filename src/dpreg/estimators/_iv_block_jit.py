r"""The first stage's norms, residuals and clipping of one IV block in one pass (numba).

Imported on first use only, by :mod:`dpreg.estimators.iv_block`, which checks
:func:`residual_clip_first_stage` against the reference before using it. Per trial and
block of rows, the reference gradients of DP-2S-GD (Liang et al. 2025, Algorithm 1,
lines 5-6; :func:`dpreg.estimators.iv._batched_block_per_trial`) take, after
``W = Zb @ Theta``, the norms ``||w_i||`` by ``np.einsum``, ``R = W - X`` by
``np.subtract``, the norms ``||r_i||`` by ``np.einsum`` and the clipping
(:func:`dpreg.estimators._iv_rows_jit.clip_first_stage`): four passes over the block
(about 100 us for 1,677 x 50 values, docs/scaling.md, "Cost of a paper-scale run",
session 25). Here they are one pass per row, with the same IEEE operations on every
entry in the same order: the same bits.

**numpy's summation.** ``np.einsum("...p,...p->...", A, A)`` over a contiguous row is,
in this numpy build, a sum in two SSE2 lanes (``einsum_sumprod.c.src``,
``sum_of_products_contig_contig_outstride0_two``): each whole block of 8 coordinates
``c .. c + 7`` adds ``a * a + lane`` for the pairs ``(c + 6, c + 7)``, ``(c + 4, c +
5)``, ``(c + 2, c + 3)``, ``(c, c + 1)`` in that order, then the remaining coordinates
pair by pair (a last odd one against a zero lane), then ``0.0 + (lane0 + lane1)``; the
square root is ``np.sqrt``'s (correctly rounded). The two lanes are one ``<2 x double>``
vector here (``vload`` / ``vsub`` / ``vmul`` / ``vadd`` below: one IEEE operation per
lane, no fast-math flags, no fused multiply-add), and four rows run side by side (each
row's operations unchanged). numba runs LLVM's loop vectoriser but not its superword
vectoriser, so scalar code written this way stays scalar (about half the speed).

One file with module-level functions: numba's on-disk cache checks only the kernel's own
source file, so the vector type and intrinsics are written here rather than imported from
:mod:`dpreg.estimators._lanes_jit` (docs/scaling.md, "numba's cache").
"""

import math

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic, models, register_model

#: numpy's einsum lanes (SSE2): two float64
LANES = 2

_VECTOR = ir.VectorType(ir.DoubleType(), LANES)


class Float64x2(types.Type):
    """numba type of two float64 lanes held in one vector."""

    def __init__(self) -> None:
        super().__init__(name="Float64x2")


float64x2 = Float64x2()


@register_model(Float64x2)
class _Float64x2Model(models.PrimitiveModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, _VECTOR)


def _address(context, builder, array_type, array, offset):
    data = context.make_array(array_type)(context, builder, array).data
    return builder.bitcast(builder.gep(data, [offset]), _VECTOR.as_pointer())


def _check(array, offset) -> None:
    if not (
        isinstance(array, types.Array)
        and array.ndim == 1
        and array.layout == "C"
        and array.dtype == types.float64
    ):
        raise numba.core.errors.TypingError("a contiguous 1-D float64 array is required")
    if not isinstance(offset, types.Integer):
        raise numba.core.errors.TypingError("the offset must be an integer")


@intrinsic
def vload(typingctx, array, offset):
    """``array[offset : offset + 2]`` as one vector (nothing checked)."""
    _check(array, offset)

    def codegen(context, builder, signature, args):
        return builder.load(_address(context, builder, signature.args[0], *args), align=8)

    return float64x2(array, offset), codegen


@intrinsic
def vstore(typingctx, array, offset, value):
    """``array[offset : offset + 2] = value`` (nothing checked)."""
    _check(array, offset)

    def codegen(context, builder, signature, args):
        address = _address(context, builder, signature.args[0], args[0], args[1])
        builder.store(args[2], address, align=8)
        return context.get_dummy_value()

    return types.void(array, offset, value), codegen


@intrinsic
def vzero(typingctx):
    """Two lanes of +0.0."""

    def codegen(context, builder, signature, args):
        return ir.Constant(_VECTOR, [0.0, 0.0])

    return float64x2(), codegen


@intrinsic
def vsplat(typingctx, value):
    """Two copies of a float64 scalar."""

    def codegen(context, builder, signature, args):
        x = context.cast(builder, args[0], signature.args[0], types.float64)
        one = builder.insert_element(ir.Constant(_VECTOR, None), x, ir.Constant(ir.IntType(32), 0))
        return builder.shuffle_vector(
            one, one, ir.Constant(ir.VectorType(ir.IntType(32), LANES), None)
        )

    return float64x2(value), codegen


def _binary(name):
    def typer(typingctx, a, b):
        def codegen(context, builder, signature, args):
            return getattr(builder, name)(args[0], args[1])

        return float64x2(a, b), codegen

    return intrinsic(typer)


vadd = _binary("fadd")
vsub = _binary("fsub")
vmul = _binary("fmul")


@numba.njit(cache=True, nogil=True)
def _coordinate(j, whole):  # pragma: no cover - compiled
    # first coordinate of numpy's j-th pair: 6, 4, 2, 0 in each of the ``whole`` blocks of
    # 8, then 8 whole, 8 whole + 2, ...
    if j < 4 * whole:
        return 8 * (j >> 2) + 6 - 2 * (j & 3)
    return 2 * j


@numba.njit(cache=True, nogil=True)
def _clip_factor(r0, r1, zn, clip):  # pragma: no cover - compiled
    # a = sqrt(0.0 + (r0 + r1)) * zn; (clip / maximum(a, clip), a > clip) as the reference
    x = math.sqrt(0.0 + (r0 + r1)) * zn
    clipped = 1 if x > clip else 0
    if x < clip:  # numpy.maximum(x, clip): x unless below (NaN kept)
        x = clip
    return clip / x, clipped


@numba.njit(cache=True, nogil=True)
def residual_clip_first_stage(W, X, zn, clip, w_norm, want_w):  # pragma: no cover - compiled
    """One block's first stage from ``W = Zb Theta`` (m rows of p, flat); the clip count.

    ``W`` and ``X`` are the block's (m, p) C-ordered rows, flattened. Per row ``i``:
    ``w_norm[i] = ||w_i||`` if ``want_w``, ``r_i = w_i - x_i`` in place of ``w_i``, then
    with ``a_i = ||r_i|| zn[i]``: counted if ``a_i > clip``, ``r_i *= clip /
    maximum(a_i, clip)``: the reference's ``_norm_last`` (numpy's summation, above),
    ``np.subtract`` and :func:`dpreg.estimators._iv_rows_jit.clip_first_stage`, each
    entry's operations in the reference's order. ``p >= 2`` (at ``p = 1`` ``_norm_last``
    takes ``abs``). Four rows advance side by side (eight independent vector sums).
    """
    m = zn.shape[0]
    p = W.shape[0] // m
    pairs = p // 2
    whole = p // 8
    odd = p % 2 == 1
    lanes = np.empty(16)  # per row t of the four: w lanes at 4t, r lanes at 4t + 2
    count = 0
    i = 0
    while i < m:
        rows = min(4, m - i)
        o = i * p
        if rows == 4:
            wa = wb = wc = wd = ra = rb = rc = rd = vzero()
            for j in range(pairs):
                k = o + _coordinate(j, whole)
                a = vload(W, k)
                b = vload(W, k + p)
                c = vload(W, k + 2 * p)
                d = vload(W, k + 3 * p)
                sa = vsub(a, vload(X, k))
                sb = vsub(b, vload(X, k + p))
                sc = vsub(c, vload(X, k + 2 * p))
                sd = vsub(d, vload(X, k + 3 * p))
                vstore(W, k, sa)
                vstore(W, k + p, sb)
                vstore(W, k + 2 * p, sc)
                vstore(W, k + 3 * p, sd)
                wa = vadd(vmul(a, a), wa)
                wb = vadd(vmul(b, b), wb)
                wc = vadd(vmul(c, c), wc)
                wd = vadd(vmul(d, d), wd)
                ra = vadd(vmul(sa, sa), ra)
                rb = vadd(vmul(sb, sb), rb)
                rc = vadd(vmul(sc, sc), rc)
                rd = vadd(vmul(sd, sd), rd)
            vstore(lanes, 0, wa)
            vstore(lanes, 2, ra)
            vstore(lanes, 4, wb)
            vstore(lanes, 6, rb)
            vstore(lanes, 8, wc)
            vstore(lanes, 10, rc)
            vstore(lanes, 12, wd)
            vstore(lanes, 14, rd)
        else:  # the last m % 4 rows, one at a time
            for t in range(rows):
                w = r = vzero()
                for j in range(pairs):
                    k = o + t * p + _coordinate(j, whole)
                    a = vload(W, k)
                    s = vsub(a, vload(X, k))
                    vstore(W, k, s)
                    w = vadd(vmul(a, a), w)
                    r = vadd(vmul(s, s), r)
                vstore(lanes, 4 * t, w)
                vstore(lanes, 4 * t + 2, r)
        for t in range(rows):
            start = o + t * p
            w0, w1, r0, r1 = lanes[4 * t], lanes[4 * t + 1], lanes[4 * t + 2], lanes[4 * t + 3]
            if odd:  # the last coordinate against a zero lane
                a = W[start + p - 1]
                s = a - X[start + p - 1]
                W[start + p - 1] = s
                w0 = a * a + w0
                w1 = 0.0 * 0.0 + w1
                r0 = s * s + r0
                r1 = 0.0 * 0.0 + r1
            if want_w:
                w_norm[i + t] = math.sqrt(0.0 + (w0 + w1))
            f, clipped = _clip_factor(r0, r1, zn[i + t], clip)
            count += clipped
            fv = vsplat(f)
            for j in range(start, start + p - 1, 2):
                vstore(W, j, vmul(vload(W, j), fv))
            if odd:
                W[start + p - 1] = W[start + p - 1] * f
        i += rows
    return count
