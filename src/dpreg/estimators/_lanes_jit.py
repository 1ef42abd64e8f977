"""Trials side by side: the Bartlett products and certified solves in SIMD lanes.

Imported on first use only (numba). The per-trial ``d x d`` work of linear mixing and the
Sheffet sketch (Lev et al. 2026, Algorithms 4 and 5) is a set of short loops and chains
of dependent operations, one trial at a time in the one-trial kernels
(:func:`dpreg.estimators.gram_sketch._bartlett_kernel`,
:func:`dpreg.estimators._linalg._kernel`, kept as the references). Here ``W =``
:data:`LANES` trials ``t0 .. t0 + W - 1`` are laid out with the trial index innermost
(flat buffers, entry ``x`` of lane ``l`` at ``W x + l``) and every step is one vector
instruction on the ``W`` lanes. Every entry of every trial is the same sequence of IEEE
operations, in the same order, as in the one-trial kernel: the same bits (tested
bitwise in ``tests/unit/test_lanes.py``). A batch whose size is not a multiple of ``W``
fills the missing lanes with copies of its first trial and discards them.

**The vector operations.** numba runs LLVM's loop vectoriser but not its superword (SLP)
vectoriser, so independent scalar sums written side by side stay scalar; the intrinsics
below (``vload``, ``vadd``, ...) emit ``<W x double>`` instructions directly. Each is one
IEEE operation per lane, correctly rounded, without fast-math flags or fused
multiply-add: lane ``l`` of ``vadd(vmul(a, b), c)`` has the bits of
``a[l] * b[l] + c[l]`` in scalar code. Loads and stores address a one-dimensional
contiguous float64 array at an element offset (the caller keeps
``offset + W <= size``; nothing is checked, as in numba's own indexing without
``boundscheck``).

One file with module-level functions: numba's on-disk cache checks only the kernel's own
source file (the intrinsics and ``LANES`` live here, so editing them recompiles) and
misses kernels held in closures that call other kernels (docs/scaling.md, "numba's
cache").
"""

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, models, register_model

#: Lanes per vector: four float64 fill one AVX2 register. Eight (one AVX-512 register, or
#: two AVX2 instructions) measured no faster on the benchmark machine (Bartlett products
#: 120-138 against 118 us, solves 44-49 against 47 us per 100 trials at d = 20), and
#: waste more padding lanes on small batches.
LANES = 4
W = LANES

_VECTOR = ir.VectorType(ir.DoubleType(), LANES)


class Float64Lanes(types.Type):
    """numba type of :data:`LANES` float64 lanes held in one vector."""

    def __init__(self) -> None:
        super().__init__(name="Float64Lanes")


float64_lanes = Float64Lanes()


@register_model(Float64Lanes)
class _Float64LanesModel(models.PrimitiveModel):
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
    """``array[offset : offset + LANES]`` as one vector."""
    _check(array, offset)

    def codegen(context, builder, signature, args):
        return builder.load(_address(context, builder, signature.args[0], *args), align=8)

    return float64_lanes(array, offset), codegen


@intrinsic
def vstore(typingctx, array, offset, value):
    """``array[offset : offset + LANES] = value``."""
    _check(array, offset)

    def codegen(context, builder, signature, args):
        address = _address(context, builder, signature.args[0], args[0], args[1])
        builder.store(args[2], address, align=8)
        return context.get_dummy_value()

    return types.void(array, offset, value), codegen


@intrinsic
def vsplat(typingctx, value):
    """``LANES`` copies of a float64 scalar."""

    def codegen(context, builder, signature, args):
        x = context.cast(builder, args[0], signature.args[0], types.float64)
        one = builder.insert_element(ir.Constant(_VECTOR, None), x, ir.Constant(ir.IntType(32), 0))
        return builder.shuffle_vector(
            one, one, ir.Constant(ir.VectorType(ir.IntType(32), LANES), None)
        )

    return float64_lanes(value), codegen


def _binary(name):
    def typer(typingctx, a, b):
        def codegen(context, builder, signature, args):
            return getattr(builder, name)(args[0], args[1])

        return float64_lanes(a, b), codegen

    return intrinsic(typer)


def _unary(llvm_name):
    def typer(typingctx, a):
        def codegen(context, builder, signature, args):
            function = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(_VECTOR, [_VECTOR]), f"{llvm_name}.v{LANES}f64"
            )
            return builder.call(function, [args[0]])

        return float64_lanes(a), codegen

    return intrinsic(typer)


vadd = _binary("fadd")
vsub = _binary("fsub")
vmul = _binary("fmul")
vdiv = _binary("fdiv")
vsqrt = _unary("llvm.sqrt")
vabs = _unary("llvm.fabs")


# ------------------------------------------------------------------ the kernels


@numba.njit(cache=True, nogil=True)
def bartlett_lanes(V, w, var, diagonal, below, out):  # pragma: no cover
    # out[t] = (L B)(L B)' with L = V diag(sqrt(w + var[t])) and the Bartlett factor B of
    # trial t (diagonal[t] on the diagonal, below[t] under it in numpy.tril_indices(p, -1)
    # order), as _bartlett_kernel: L'[k, i] = V[i, k] sqrt(w[k] + var[t]); C = B' L'
    # (C[j, i] = B[j, j] L'[j, i], then + B[k, j] L'[k, i] for k = j+1..p-1 in that order);
    # the lower half of C' C (0.0 + C[0, i] C[0, j] + ... in the order m = 0..p-1),
    # mirrored. Four columns at a time: four vector sums in flight.
    trials, p = diagonal.shape
    P = (p + 3) // 4 * 4  # columns padded with zeros to whole blocks of four
    pairs = p * (p - 1) // 2
    LT = np.zeros(p * P * W)  # L'[k, i], lane l at W (k P + i) + l
    C = np.zeros(p * P * W)
    Bl = np.zeros(max(pairs, 1) * W)
    D = np.empty(p * W)
    E = np.empty(4 * W)
    zero = vsplat(0.0)
    for t0 in range(0, trials, W):
        lanes = min(W, trials - t0)
        for lane in range(W):
            t = t0 + lane if lane < lanes else t0
            for k in range(p):
                scale = np.sqrt(w[k] + var[t])
                for i in range(p):
                    LT[W * (k * P + i) + lane] = V[i, k] * scale
                D[W * k + lane] = diagonal[t, k]
            for q in range(pairs):
                Bl[W * q + lane] = below[t, q]
        for j in range(p):
            a = vload(D, W * j)
            for ib in range(0, P, 4):
                x = W * (j * P + ib)
                c0 = vmul(a, vload(LT, x))
                c1 = vmul(a, vload(LT, x + W))
                c2 = vmul(a, vload(LT, x + 2 * W))
                c3 = vmul(a, vload(LT, x + 3 * W))
                for k in range(j + 1, p):
                    b = vload(Bl, W * (k * (k - 1) // 2 + j))
                    y = W * (k * P + ib)
                    c0 = vadd(c0, vmul(b, vload(LT, y)))
                    c1 = vadd(c1, vmul(b, vload(LT, y + W)))
                    c2 = vadd(c2, vmul(b, vload(LT, y + 2 * W)))
                    c3 = vadd(c3, vmul(b, vload(LT, y + 3 * W)))
                vstore(C, x, c0)
                vstore(C, x + W, c1)
                vstore(C, x + 2 * W, c2)
                vstore(C, x + 3 * W, c3)
        for i in range(p):
            for jb in range(0, i + 1, 4):
                e0 = zero
                e1 = zero
                e2 = zero
                e3 = zero
                for m in range(p):
                    c = vload(C, W * (m * P + i))
                    y = W * (m * P + jb)
                    e0 = vadd(e0, vmul(c, vload(C, y)))
                    e1 = vadd(e1, vmul(c, vload(C, y + W)))
                    e2 = vadd(e2, vmul(c, vload(C, y + 2 * W)))
                    e3 = vadd(e3, vmul(c, vload(C, y + 3 * W)))
                vstore(E, 0, e0)
                vstore(E, W, e1)
                vstore(E, 2 * W, e2)
                vstore(E, 3 * W, e3)
                for r in range(min(4, i + 1 - jb)):
                    j = jb + r
                    for lane in range(lanes):
                        out[t0 + lane, i, j] = E[W * r + lane]
                        out[t0 + lane, j, i] = E[W * r + lane]


@numba.njit(cache=True, nogil=True)
def certified_lanes(A, shift, b, theta, certified, deferred, margin):  # pragma: no cover
    # The certified Cholesky solve of dpreg.estimators._linalg._kernel, W systems side
    # by side: factor A + shift I (lower triangle read), bound ||A + shift I||_inf and
    # ||L^{-1}||_2^2 through the comparison matrix, then substitute. A lane whose factor
    # fails or whose comparison bound does not decide is marked deferred (theta and
    # certified left for the one-trial kernel, which also has the Frobenius bound); the
    # others get theta and certified (False for a non-finite solution) exactly as there.
    # Rows are factored four at a time (four vector sums in flight); rows d..d+2 of the
    # buffers are padding (zeros in, never read out).
    m, d = b.shape
    u = np.finfo(np.float64).eps / 2.0
    R = d + 3
    Al = np.zeros(R * d * W)  # lower triangle of A, entry (i, k), lane l at W (i d + k) + l
    L = np.zeros(R * d * W)
    z = np.empty(d * W)
    v = np.empty(d * W)
    rows = np.empty(d * W)  # row sums of |A + shift I|
    pivots = np.empty(d * W)  # the pivots before their square roots
    rhs = np.empty(d * W)
    shifts = np.empty(W)
    trace = np.empty(W)
    one = vsplat(1.0)
    for t0 in range(0, m, W):
        lanes = min(W, m - t0)
        for lane in range(W):
            t = t0 + lane if lane < lanes else t0
            for i in range(d):
                for k in range(i + 1):
                    Al[W * (i * d + k) + lane] = A[t, i, k]
                rhs[W * i + lane] = b[t, i]
            shifts[lane] = shift[t]
        h = vload(shifts, 0)
        tr = vsplat(0.0)
        for j in range(d):
            jj = W * (j * d + j)
            s = vadd(vload(Al, jj), h)
            tr = vadd(tr, s)
            for k in range(j):
                f = vload(L, W * (j * d + k))
                s = vsub(s, vmul(f, f))
            vstore(pivots, W * j, s)
            g = vsqrt(s)
            vstore(L, jj, g)
            for i in range(j + 1, d, 4):
                x = W * (i * d + j)
                s0 = vload(Al, x)
                s1 = vload(Al, x + W * d)
                s2 = vload(Al, x + 2 * W * d)
                s3 = vload(Al, x + 3 * W * d)
                for k in range(j):
                    f = vload(L, W * (j * d + k))
                    y = W * (i * d + k)
                    s0 = vsub(s0, vmul(vload(L, y), f))
                    s1 = vsub(s1, vmul(vload(L, y + W * d), f))
                    s2 = vsub(s2, vmul(vload(L, y + 2 * W * d), f))
                    s3 = vsub(s3, vmul(vload(L, y + 3 * W * d), f))
                vstore(L, x, vdiv(s0, g))
                vstore(L, x + W * d, vdiv(s1, g))
                vstore(L, x + 2 * W * d, vdiv(s2, g))
                vstore(L, x + 3 * W * d, vdiv(s3, g))
        # row sums of |A + shift I| (lower triangle, mirrored)
        for i in range(d):
            r = vabs(vadd(vload(Al, W * (i * d + i)), h))
            for k in range(i):
                r = vadd(r, vabs(vload(Al, W * (i * d + k))))
            for k in range(i + 1, d):
                r = vadd(r, vabs(vload(Al, W * (k * d + i))))
            vstore(rows, W * i, r)
        # M(L)^{-1} e and M(L)^{-T} e (comparison matrix)
        for i in range(d):
            s = one
            for k in range(i):
                s = vadd(s, vmul(vabs(vload(L, W * (i * d + k))), vload(z, W * k)))
            vstore(z, W * i, vdiv(s, vload(L, W * (i * d + i))))
        for i in range(d - 1, -1, -1):
            s = one
            for k in range(i + 1, d):
                s = vadd(s, vmul(vabs(vload(L, W * (k * d + i))), vload(v, W * k)))
            vstore(v, W * i, vdiv(s, vload(L, W * (i * d + i))))
        # the decision per lane, with the scalar operations of the one-trial kernel
        vstore(trace, 0, tr)
        for lane in range(lanes):
            ok = True
            for j in range(d):
                if not pivots[W * j + lane] > 0.0:  # also catches NaN
                    ok = False
            upper = 0.0
            row_max = 0.0
            col_max = 0.0
            for i in range(d):
                upper = max(upper, rows[W * i + lane])
                row_max = max(row_max, z[W * i + lane])
            for i in range(d - 1, -1, -1):
                col_max = max(col_max, v[W * i + lane])
            threshold = margin * d * 2.0 * u * upper
            rounding = 2.0 * (d + 1) * u * trace[lane]
            if not (ok and 0.5 / (row_max * col_max) - rounding > threshold):
                ok = False
            deferred[t0 + lane] = not ok
        # forward then back substitution: theta = L^{-T} L^{-1} b
        for i in range(d):
            s = vload(rhs, W * i)
            for k in range(i):
                s = vsub(s, vmul(vload(L, W * (i * d + k)), vload(z, W * k)))
            vstore(z, W * i, vdiv(s, vload(L, W * (i * d + i))))
        for i in range(d - 1, -1, -1):
            s = vload(z, W * i)
            for k in range(i + 1, d):
                s = vsub(s, vmul(vload(L, W * (k * d + i)), vload(v, W * k)))
            vstore(v, W * i, vdiv(s, vload(L, W * (i * d + i))))
        for lane in range(lanes):
            t = t0 + lane
            if deferred[t]:
                continue
            finite = True
            for i in range(d):
                theta[t, i] = v[W * i + lane]
                if not np.isfinite(theta[t, i]):
                    finite = False
            certified[t] = finite
