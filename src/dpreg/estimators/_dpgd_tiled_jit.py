"""The fused pass's narrow variant over row tiles, in explicit eight-lane vectors.

Imported on first use only (numba). :func:`dpreg.estimators.dpgd_kernel.clipped_rows_fused`'s
narrow pass (``fused_narrow``, the reference) runs each parameter (chain) over all its
uncertified rows in turn; at Brown et al.'s :math:`n = 10^4` rows its two row arrays
(11 + 10 rows of float64, 1.7 MB) do not fit in the core's 1 MB L2 cache, so every
chain streams them from L3 (docs/scaling.md, "Cost of a paper-scale run", session 24:
1.5 ns per (row, chain) pair up to 4,000 rows, 2.0 ns at :math:`10^4`). Here the rows
are visited in tiles of :data:`TILE` rows, every chain's part of a tile before the next
tile, so a tile is read from L2 by all chains; and two neighbouring chains at the same
row (the chains are sorted by their certified prefix, so most are) run together, each
row vector loaded once for both (the pass is bound by its loads, not its multiply-adds).

**The same bits.** LLVM compiles the reference's row loop (fast-math ``reassoc`` and
``contract``) into eight-lane vectors on this machine: chain j's rows
``start_j + 8m + l`` go to lane l of ten vector sums (lane 0 starting at +0.0, lanes
1-7 at -0.0, LLVM's identity for a vector ``fadd`` reduction), each residual is
``fma(a_0, e_0, a_1 e_1)`` followed by ``fma(a_k, e_k, .)`` for k = 2 .. 10, the clip
two selects, each sum ``fma(xb_k, w, .)``; after the whole groups of eight the lanes are
added as ``((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7))`` and the last
``(stop - start) mod 8`` rows are added one at a time with the same scalar operations.
:func:`fused_narrow_tiled` performs exactly these operations (``llvm.fma`` and plain IEEE
operations, no fast-math flags), keeping each chain's eight lanes in memory between
tiles: each lane's sequence of operations is unchanged, only the order in which the
chains' lanes advance. Whether the reference was compiled this way depends on the CPU
and LLVM, so :func:`dpreg.estimators._dpgd_tiled.tiled_pass` compares the two bit for
bit on a test problem before using this pass (and keeps the reference otherwise).

One file with module-level functions (numba's on-disk cache checks only the kernel's
own source file, and misses kernels held in closures; docs/scaling.md, "numba's cache").
For the same reason the vector type and the ``vload`` / ``vstore`` / ``vsplat``
intrinsics are written here again rather than imported from
:mod:`dpreg.estimators._lanes_jit` (four lanes there, eight here): an edit to intrinsics
imported from another file would leave this kernel's cached machine code stale.
"""

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, models, register_model

#: lanes per vector (one AVX-512 register): the reference's vectorisation factor here
LANES = 8
#: rows per tile: 21 float64 rows of 2,048 entries, 344 kB, held in L2 by all chains
TILE = 2048
#: entries of a parameter (the narrow pass: d <= 10 padded to 11) and sums (10)
ENTRIES = 11
SUMS = 10

_VECTOR = ir.VectorType(ir.DoubleType(), LANES)


class Float64x8(types.Type):
    """numba type of eight float64 lanes held in one vector."""

    def __init__(self) -> None:
        super().__init__(name="Float64x8")


float64x8 = Float64x8()


@register_model(Float64x8)
class _Float64x8Model(models.PrimitiveModel):
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
    """``array[offset : offset + 8]`` as one vector (unchecked, as numba's indexing)."""
    _check(array, offset)

    def codegen(context, builder, signature, args):
        return builder.load(_address(context, builder, signature.args[0], *args), align=8)

    return float64x8(array, offset), codegen


@intrinsic
def vstore(typingctx, array, offset, value):
    """``array[offset : offset + 8] = value``."""
    _check(array, offset)

    def codegen(context, builder, signature, args):
        address = _address(context, builder, signature.args[0], args[0], args[1])
        builder.store(args[2], address, align=8)
        return context.get_dummy_value()

    return types.void(array, offset, value), codegen


@intrinsic
def vsplat(typingctx, value):
    """Eight copies of a float64 scalar."""

    def codegen(context, builder, signature, args):
        x = context.cast(builder, args[0], signature.args[0], types.float64)
        one = builder.insert_element(ir.Constant(_VECTOR, None), x, ir.Constant(ir.IntType(32), 0))
        return builder.shuffle_vector(
            one, one, ir.Constant(ir.VectorType(ir.IntType(32), LANES), None)
        )

    return float64x8(value), codegen


@intrinsic
def vmul(typingctx, a, b):
    """Lane-wise product, correctly rounded."""

    def codegen(context, builder, signature, args):
        return builder.fmul(args[0], args[1])

    return float64x8(a, b), codegen


@intrinsic
def vfma(typingctx, a, b, c):
    """Lane-wise ``a * b + c`` with one rounding (``llvm.fma``)."""

    def codegen(context, builder, signature, args):
        function = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(_VECTOR, [_VECTOR] * 3), f"llvm.fma.v{LANES}f64"
        )
        return builder.call(function, list(args))

    return float64x8(a, b, c), codegen


@intrinsic
def sfma(typingctx, a, b, c):
    """Scalar ``a * b + c`` with one rounding (``llvm.fma``)."""

    def codegen(context, builder, signature, args):
        dbl = ir.DoubleType()
        function = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(dbl, [dbl] * 3), "llvm.fma.f64"
        )
        return builder.call(function, list(args))

    return types.float64(types.float64, types.float64, types.float64), codegen


@intrinsic
def vclip(typingctx, u):
    """Lane-wise ``min(max(u, -1), 1)`` as the reference's two selects (NaN kept)."""

    def codegen(context, builder, signature, args):
        lo, hi = ir.Constant(_VECTOR, [-1.0] * LANES), ir.Constant(_VECTOR, [1.0] * LANES)
        w = builder.select(builder.fcmp_ordered("<", args[0], lo), lo, args[0])
        return builder.select(builder.fcmp_ordered(">", w, hi), hi, w)

    return float64x8(u), codegen


@intrinsic
def vcount_ne(typingctx, u, w):
    """How many lanes have ``u != w`` (unordered: a NaN counts), as an int64."""

    def codegen(context, builder, signature, args):
        ne = builder.fcmp_unordered("!=", args[0], args[1])
        bits = builder.bitcast(ne, ir.IntType(LANES))
        ctpop = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.IntType(LANES), [ir.IntType(LANES)]),
            f"llvm.ctpop.i{LANES}",
        )  # fmt: skip
        return builder.zext(builder.call(ctpop, [bits]), ir.IntType(64))

    return types.int64(u, w), codegen


# ------------------------------------------------------------------ the kernel

# The operations on a group of eight rows are written once, in _steps, for two chains
# side by side (each row vector loaded once for both); _two_chains runs it for chains j
# and j + 1, _one_chain for chain j twice: the second copy's operations are the first's
# on the same values, and LLVM folds them away (with this numba and LLVM both loops
# compile to the instructions of the former hand-written _one_chain and _two_chains,
# read off their assembly; docs/scaling.md, session 26). The helpers are inlined
# (inline="always"), so every value stays in a register as in one written-out loop.


@numba.njit(cache=True, nogil=True, inline="always")
def _splat(E, j):  # pragma: no cover
    # chain j's parameter, each entry in all eight lanes
    return (
        vsplat(E[j, 0]), vsplat(E[j, 1]), vsplat(E[j, 2]), vsplat(E[j, 3]),
        vsplat(E[j, 4]), vsplat(E[j, 5]), vsplat(E[j, 6]), vsplat(E[j, 7]),
        vsplat(E[j, 8]), vsplat(E[j, 9]), vsplat(E[j, 10]),
    )  # fmt: skip


@numba.njit(cache=True, nogil=True, inline="always")
def _load_sums(acc, base):  # pragma: no cover
    # a chain's ten vector sums, kept in acc between tiles
    return (
        vload(acc, base + 0 * LANES), vload(acc, base + 1 * LANES),
        vload(acc, base + 2 * LANES), vload(acc, base + 3 * LANES),
        vload(acc, base + 4 * LANES), vload(acc, base + 5 * LANES),
        vload(acc, base + 6 * LANES), vload(acc, base + 7 * LANES),
        vload(acc, base + 8 * LANES), vload(acc, base + 9 * LANES),
    )  # fmt: skip


@numba.njit(cache=True, nogil=True, inline="always")
def _store_sums(acc, base, g):  # pragma: no cover
    for k in range(SUMS):  # unrolled by LLVM
        vstore(acc, base + k * LANES, g[k])


@numba.njit(cache=True, nogil=True, inline="always")
def _steps(At, Xt, n, p, e, f, g, h):  # pragma: no cover
    # rows p .. p + 7 for two chains (parameters e, f; sums g, h), each row vector loaded
    # once for both: each residual fma(a_0, e_0, a_1 e_1), then fma(a_k, e_k, .) for
    # k = 2 .. 10; the clip; each sum fma(xb_k, w, .)
    x0 = vload(At, p)
    x1 = vload(At, n + p)
    u = vfma(x0, e[0], vmul(x1, e[1]))
    v = vfma(x0, f[0], vmul(x1, f[1]))
    for k in range(2, ENTRIES):  # unrolled by LLVM (e[k], f[k]: fixed tuple entries)
        x = vload(At, k * n + p)
        u = vfma(x, e[k], u)
        v = vfma(x, f[k], v)
    w = vclip(u)
    z = vclip(v)
    dj = vcount_ne(u, w)  # here, not after the sums: u and v live on would cost two
    dk = vcount_ne(v, z)  # more spilled operands per step (read off the assembly)
    x = vload(Xt, 0 * n + p)
    g0, h0 = vfma(x, w, g[0]), vfma(x, z, h[0])
    x = vload(Xt, 1 * n + p)
    g1, h1 = vfma(x, w, g[1]), vfma(x, z, h[1])
    x = vload(Xt, 2 * n + p)
    g2, h2 = vfma(x, w, g[2]), vfma(x, z, h[2])
    x = vload(Xt, 3 * n + p)
    g3, h3 = vfma(x, w, g[3]), vfma(x, z, h[3])
    x = vload(Xt, 4 * n + p)
    g4, h4 = vfma(x, w, g[4]), vfma(x, z, h[4])
    x = vload(Xt, 5 * n + p)
    g5, h5 = vfma(x, w, g[5]), vfma(x, z, h[5])
    x = vload(Xt, 6 * n + p)
    g6, h6 = vfma(x, w, g[6]), vfma(x, z, h[6])
    x = vload(Xt, 7 * n + p)
    g7, h7 = vfma(x, w, g[7]), vfma(x, z, h[7])
    x = vload(Xt, 8 * n + p)
    g8, h8 = vfma(x, w, g[8]), vfma(x, z, h[8])
    x = vload(Xt, 9 * n + p)
    g9, h9 = vfma(x, w, g[9]), vfma(x, z, h[9])
    g = (g0, g1, g2, g3, g4, g5, g6, g7, g8, g9)
    h = (h0, h1, h2, h3, h4, h5, h6, h7, h8, h9)
    return dj, dk, g, h


@numba.njit(cache=True, nogil=True)
def _one_chain(At, Xt, E, acc, n, j, p, lim, pos, c):  # pragma: no cover
    # chain j's whole groups of eight from row p up to lim, its lanes in acc
    e = _splat(E, j)
    base = j * SUMS * LANES
    g = _load_sums(acc, base)
    cj = 0
    while p < lim:
        dj, _, g, _ = _steps(At, Xt, n, p, e, e, g, g)  # the copy folded away
        cj += dj
        p += LANES
    _store_sums(acc, base, g)
    pos[j] = p
    c[j] += cj


@numba.njit(cache=True, nogil=True)
def _two_chains(At, Xt, E, acc, n, j, p, lim, pos, c):  # pragma: no cover
    # chains j and j + 1 from the same row p up to the same lim: each row vector is
    # loaded once for both (each chain's operations are those of _one_chain)
    e, f = _splat(E, j), _splat(E, j + 1)
    base = j * SUMS * LANES
    other = base + SUMS * LANES
    g, h = _load_sums(acc, base), _load_sums(acc, other)
    cj = 0
    ck = 0
    while p < lim:
        dj, dk, g, h = _steps(At, Xt, n, p, e, f, g, h)
        cj += dj
        ck += dk
        p += LANES
    _store_sums(acc, base, g)
    _store_sums(acc, other, h)
    pos[j] = p
    pos[j + 1] = p
    c[j] += cj
    c[j + 1] += ck


@numba.njit(cache=True, nogil=True)
def fused_narrow_tiled(AT, XBT, E, row_start, G, count, tile):  # pragma: no cover
    # AT (11, n), XBT (10, n) C-contiguous; E (width, 11); G (width, 10); as the
    # reference fused_narrow, rows in tiles of `tile` (a multiple of 8) for all chains,
    # two neighbouring chains at the same row together
    width = E.shape[0]
    n = AT.shape[1]
    At = AT.reshape(AT.size)
    Xt = XBT.reshape(XBT.size)
    acc = np.empty(width * SUMS * LANES)  # chain j's sum k, lane l at (j SUMS + k) LANES + l
    pos = np.empty(width, dtype=np.int64)  # the next group's first row
    vend = np.empty(width, dtype=np.int64)  # end of the whole groups of eight
    c = np.zeros(width, dtype=np.int64)
    for j in range(width):
        start = min(max(row_start[j], 0), n)
        pos[j] = start
        vend[j] = start + (n - start) // LANES * LANES
        for k in range(SUMS):
            base = (j * SUMS + k) * LANES
            acc[base] = 0.0
            for lane in range(1, LANES):
                acc[base + lane] = -0.0
    for t0 in range(0, n, tile):
        t1 = t0 + tile
        j = 0
        while j < width:
            p = pos[j]
            lim = min(t1, vend[j])
            if p < lim and j + 1 < width and pos[j + 1] == p and min(t1, vend[j + 1]) == lim:
                _two_chains(At, Xt, E, acc, n, j, p, lim, pos, c)
                j += 2
                continue
            if p < lim:
                _one_chain(At, Xt, E, acc, n, j, p, lim, pos, c)
            j += 1
    for j in range(width):
        # the lanes' reduction, then the last rows one at a time, as the reference
        for k in range(SUMS):
            b = (j * SUMS + k) * LANES
            G[j, k] = ((acc[b] + acc[b + 4]) + (acc[b + 2] + acc[b + 6])) + (
                (acc[b + 1] + acc[b + 5]) + (acc[b + 3] + acc[b + 7])
            )
        cj = c[j]
        for i in range(vend[j], n):
            u = AT[1, i] * E[j, 1]
            for k in range(ENTRIES):
                if k != 1:
                    u = sfma(AT[k, i], E[j, k], u)
            w = -1.0 if u < -1.0 else u
            w = 1.0 if w > 1.0 else w
            cj += 1 if u != w else 0
            for k in range(SUMS):
                G[j, k] = sfma(XBT[k, i], w, G[j, k])
        count[j] = cj
