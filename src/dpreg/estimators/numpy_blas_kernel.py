r"""numpy's own BLAS and libm ``pow``, callable from compiled (numba) code.

A compiled replica of a numpy computation gives the same bits only if every reduction
adds in numpy's order. ``np.dot`` and ``np.matmul`` of float64 arrays call the BLAS numpy
was built with (OpenBLAS, whose kernels use fused multiply-adds in an order of their own),
and ``x ** y`` of float64 scalars calls libm's ``pow`` (not always ``x * x`` or
``sqrt(x)`` to the bit). Here those very functions are made callable from numba: numpy's
``cblas_ddot``, ``cblas_dgemv`` and ``cblas_dgemm`` (the ILP64 ``scipy_cblas_*64_``
symbols of the ``scipy-openblas64`` library numpy wheels load) and libm's ``pow``, each
registered with LLVM under a name of ours (so that numba's on-disk cache stays valid
across processes, and so that LLVM does not rewrite ``pow(x, 2.0)`` as ``x * x``).

How numpy calls them (numpy's ``cblasfuncs.c`` and ``matmul.c.src``; checked bit for bit
by :func:`blas_available` on random operands, and by ``tests/unit/test_numpy_blas_kernel.py``):

* ``np.dot(a, b)`` of two contiguous vectors (length >= 2) is ``0.0 + cblas_ddot(n, a, 1,
  b, 1)`` (so a ``-0.0`` dot becomes ``+0.0``);
* ``np.dot(A, x)`` of a C-contiguous (m, n) matrix and a contiguous vector is
  ``cblas_dgemv(RowMajor, NoTrans, m, n, 1, A, n, x, 1, 0, y, 1)``;
* ``np.matmul(A, x)`` of a C-contiguous (n, n) matrix and a vector is
  ``cblas_dgemv(ColMajor, Trans, n, n, 1, A, n, x, 1, 0, y, 1)``;
* ``np.dot(A, B)`` of two C-contiguous (n, n) matrices (not one the transpose of the other)
  is ``cblas_dgemm(RowMajor, NoTrans, NoTrans, n, n, n, 1, A, n, B, n, 0, C, n)``.

Where numpy was built against another BLAS the symbols are not found and
:func:`blas_available` is False: callers keep their numpy path.
"""

from __future__ import annotations

import ctypes
import glob
import os
from functools import cache
from typing import Any

import numpy as np

from dpreg.estimators._bits import same_bits

__all__ = ["ROW_MAJOR", "COL_MAJOR", "NO_TRANS", "TRANS", "blas_available", "intrinsics"]

ROW_MAJOR, COL_MAJOR, NO_TRANS, TRANS = 101, 102, 111, 112
"""The CBLAS enumeration values (``CblasRowMajor`` ... ``CblasTrans``)."""

_SYMBOLS = {
    "ddot": "scipy_cblas_ddot64_",
    "dgemv": "scipy_cblas_dgemv64_",
    "dgemm": "scipy_cblas_dgemm64_",
}
_OUR_NAMES = {key: f"dpreg_numpy_blas_{key}" for key in _SYMBOLS} | {"pow": "dpreg_libm_pow"}


def _candidate_paths() -> list[str]:
    """Shared libraries that may hold numpy's BLAS: numpy's wheel's own, then those loaded."""
    libs = os.path.join(os.path.dirname(os.path.dirname(np.__file__)), "numpy.libs")
    paths = sorted(glob.glob(os.path.join(libs, "*openblas*")))
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.split()[-1] if "/" in line else ""
                if "blas" in os.path.basename(path).lower() and path not in paths:
                    paths.append(path)
    except OSError:
        pass
    return paths


@cache
def _addresses() -> dict[str, int] | None:
    """Addresses of numpy's BLAS functions and libm's pow, or None if not found."""
    blas = np.__config__.CONFIG.get("Build Dependencies", {}).get("blas", {})
    config = str(blas.get("openblas configuration", ""))
    if blas.get("name") != "scipy-openblas" or "USE64BITINT" not in config:
        return None
    for path in _candidate_paths():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        if all(hasattr(lib, symbol) for symbol in _SYMBOLS.values()):
            found = {
                key: ctypes.cast(getattr(lib, symbol), ctypes.c_void_p).value
                for key, symbol in _SYMBOLS.items()
            }
            break
    else:
        return None
    try:
        libm = ctypes.CDLL("libm.so.6")
    except OSError:
        return None
    found["pow"] = ctypes.cast(libm.pow, ctypes.c_void_p).value
    if not all(found.values()):
        return None
    return {key: int(address) for key, address in found.items()}  # type: ignore[arg-type]


@cache
def intrinsics() -> Any:
    """Register the symbols with LLVM and build the numba intrinsics (None if unavailable).

    Returns a namespace with ``ddot(n, x, y)`` (the raw ``cblas_ddot``, without numpy's
    ``0.0 +``), ``dgemv(order, trans, m, n, A, lda, x, y)`` (alpha 1, beta 0, unit
    strides), ``dgemm_square(n, A, B, C)`` (row-major, no transposes, alpha 1, beta 0)
    and ``libm_pow(x, y)``; array arguments must be contiguous float64.
    """
    addresses = _addresses()
    if addresses is None:
        return None
    import llvmlite.binding as llvm
    from llvmlite import ir
    from numba import types
    from numba.core import cgutils
    from numba.extending import intrinsic

    for key, address in addresses.items():
        llvm.add_symbol(_OUR_NAMES[key], address)
    i32, i64, dbl = ir.IntType(32), ir.IntType(64), ir.DoubleType()
    pdbl = dbl.as_pointer()

    def data(context, builder, ty, value):
        return context.make_array(ty)(context, builder, value).data

    def function(builder, key, fnty):
        return cgutils.get_or_insert_function(builder.module, fnty, _OUR_NAMES[key])

    @intrinsic
    def ddot(typingctx, n, x, y):
        sig = types.float64(types.intp, x, y)

        def codegen(context, builder, signature, args):
            fn = function(builder, "ddot", ir.FunctionType(dbl, [i64, pdbl, i64, pdbl, i64]))
            one = ir.Constant(i64, 1)
            xp = data(context, builder, signature.args[1], args[1])
            yp = data(context, builder, signature.args[2], args[2])
            return builder.call(fn, [args[0], xp, one, yp, one])

        return sig, codegen

    @intrinsic
    def dgemv(typingctx, order, trans, m, n, a, lda, x, y):
        sig = types.void(types.intp, types.intp, types.intp, types.intp, a, types.intp, x, y)

        def codegen(context, builder, signature, args):
            fnty = ir.FunctionType(
                ir.VoidType(),
                [i32, i32, i64, i64, dbl, pdbl, i64, pdbl, i64, dbl, pdbl, i64],
            )
            fn = function(builder, "dgemv", fnty)
            one = ir.Constant(i64, 1)
            order32 = builder.trunc(args[0], i32)
            trans32 = builder.trunc(args[1], i32)
            ap = data(context, builder, signature.args[4], args[4])
            xp = data(context, builder, signature.args[6], args[6])
            yp = data(context, builder, signature.args[7], args[7])
            builder.call(
                fn,
                [
                    order32,
                    trans32,
                    args[2],
                    args[3],
                    ir.Constant(dbl, 1.0),
                    ap,
                    args[5],
                    xp,
                    one,
                    ir.Constant(dbl, 0.0),
                    yp,
                    one,
                ],  # fmt: skip
            )
            return context.get_dummy_value()

        return sig, codegen

    @intrinsic
    def dgemm_square(typingctx, n, a, b, c):
        sig = types.void(types.intp, a, b, c)

        def codegen(context, builder, signature, args):
            fnty = ir.FunctionType(
                ir.VoidType(),
                [i32, i32, i32, i64, i64, i64, dbl, pdbl, i64, pdbl, i64, dbl, pdbl, i64],
            )
            fn = function(builder, "dgemm", fnty)
            row, no = ir.Constant(i32, ROW_MAJOR), ir.Constant(i32, NO_TRANS)
            n = args[0]
            ap = data(context, builder, signature.args[1], args[1])
            bp = data(context, builder, signature.args[2], args[2])
            cp = data(context, builder, signature.args[3], args[3])
            builder.call(
                fn,
                [
                    row,
                    no,
                    no,
                    n,
                    n,
                    n,
                    ir.Constant(dbl, 1.0),
                    ap,
                    n,
                    bp,
                    n,
                    ir.Constant(dbl, 0.0),
                    cp,
                    n,
                ],  # fmt: skip
            )
            return context.get_dummy_value()

        return sig, codegen

    @intrinsic
    def libm_pow(typingctx, x, y):
        sig = types.float64(types.float64, types.float64)

        def codegen(context, builder, signature, args):
            fn = function(builder, "pow", ir.FunctionType(dbl, [dbl, dbl]))
            return builder.call(fn, list(args))

        return sig, codegen

    class Intrinsics:
        pass

    out = Intrinsics()
    out.ddot, out.dgemv, out.dgemm_square, out.libm_pow = ddot, dgemv, dgemm_square, libm_pow
    return out


@cache
def blas_available() -> bool:
    """Whether numpy's BLAS is callable from numba **and** gives numpy's bits here.

    Besides finding the symbols, runs each compiled call on random operands (n = 2, 7, 37,
    128) and compares with ``np.dot`` / ``np.matmul`` / ``**`` bit for bit; any mismatch
    (another BLAS, another calling convention) makes it False.

    Examples
    --------
    >>> isinstance(blas_available(), bool)
    True
    """
    ops = intrinsics()
    if ops is None:
        return False
    check, powers_kernel = _checks()
    rng = np.random.default_rng(20261126)
    for n in (2, 7, 37, 128):
        a, b = rng.normal(size=n) * 1e3, rng.normal(size=n)
        A, B = rng.normal(size=(n, n)), rng.normal(size=(n, n)) * 1e-2
        dot, mv, mm, mat = np.zeros(1), np.zeros(n), np.zeros(n), np.zeros((n, n))
        check(a, b, A, B, dot, mv, mm, mat)
        expected = (np.dot(a, b), np.dot(A, b), np.matmul(A, b), np.dot(A, B))
        for got, want in zip((dot[0], mv, mm, mat), expected, strict=True):
            if not same_bits(got, want):
                return False
    x = rng.normal(size=64) * 10.0 ** rng.uniform(-30, 30, size=64)
    powers = powers_kernel(x)
    scalars = [np.float64(v) for v in x]  # scalar powers (an array's ** 2 is a square)
    expected = np.array([[v**2 for v in scalars], [v**3 for v in scalars],
                         [abs(v) ** 0.5 for v in scalars]])  # fmt: skip
    return same_bits(powers, expected)


def _check(a, b, A, B, dot, mv, mm, mat):
    # each compiled call as numpy makes it (module docstring); compiled by _checks()
    n = a.shape[0]
    dot[0] = 0.0 + _ddot(n, a, b)
    mv[:] = 0.0
    _dgemv(ROW_MAJOR, NO_TRANS, n, n, A, n, b, mv)
    mm[:] = 0.0
    _dgemv(COL_MAJOR, TRANS, n, n, A, n, b, mm)
    mat[:] = 0.0
    _dgemm(n, A, B, mat)


def _powers(x):
    out = np.empty((3, x.shape[0]))
    for i in range(x.shape[0]):
        out[0, i] = _pow(x[i], 2.0)
        out[1, i] = _pow(x[i], 3.0)
        out[2, i] = _pow(abs(x[i]), 0.5)
    return out


_ddot = _dgemv = _dgemm = _pow = None  # bound by _checks()


@cache
def _checks() -> tuple[Any, Any]:
    """Compile (or load from numba's cache) the self-check kernels.

    Module-level functions compiled here with the intrinsics bound as module globals:
    a closure over them would be hashed into numba's cache key with a per-process id.
    """
    import numba

    ops = intrinsics()
    module = globals()
    module["_ddot"], module["_dgemv"] = ops.ddot, ops.dgemv
    module["_dgemm"], module["_pow"] = ops.dgemm_square, ops.libm_pow
    jit = numba.njit(cache=True)
    return jit(_check), jit(_powers)
