"""Four float64 lanes as one LLVM vector in numba kernels (``<4 x double>``).

Imported on first use only (numba). numba runs LLVM's loop vectoriser but not its
superword (SLP) vectoriser, so four independent scalar sums written side by side stay
scalar; these intrinsics emit the vector instructions directly. Each is one IEEE
operation per lane, correctly rounded, without fast-math flags or fused multiply-add:
lane ``l`` of ``add4(mul4(a, b), c)`` has the bits of ``a[l] * b[l] + c[l]`` computed in
scalar code. Loads and stores address a one-dimensional contiguous float64 array at an
element offset (the caller keeps ``offset + 4 <= size``; nothing is checked, as in numba's
own indexing without ``boundscheck``).
"""

import numba
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, models, register_model

_VECTOR = ir.VectorType(ir.DoubleType(), 4)


class Float64x4(types.Type):
    """numba type of four float64 lanes held in one vector register."""

    def __init__(self) -> None:
        super().__init__(name="Float64x4")


float64x4 = Float64x4()


@register_model(Float64x4)
class _Float64x4Model(models.PrimitiveModel):
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
def load4(typingctx, array, offset):
    """``array[offset : offset + 4]`` as one vector."""
    _check(array, offset)

    def codegen(context, builder, signature, args):
        return builder.load(_address(context, builder, signature.args[0], *args), align=8)

    return float64x4(array, offset), codegen


@intrinsic
def store4(typingctx, array, offset, value):
    """``array[offset : offset + 4] = value``."""
    _check(array, offset)

    def codegen(context, builder, signature, args):
        address = _address(context, builder, signature.args[0], args[0], args[1])
        builder.store(args[2], address, align=8)
        return context.get_dummy_value()

    return types.void(array, offset, value), codegen


@intrinsic
def splat4(typingctx, value):
    """Four copies of a float64 scalar."""

    def codegen(context, builder, signature, args):
        x = context.cast(builder, args[0], signature.args[0], types.float64)
        one = builder.insert_element(ir.Constant(_VECTOR, None), x, ir.Constant(ir.IntType(32), 0))
        return builder.shuffle_vector(one, one, ir.Constant(ir.VectorType(ir.IntType(32), 4), None))

    return float64x4(value), codegen


def _binary(name):
    def typer(typingctx, a, b):
        def codegen(context, builder, signature, args):
            return getattr(builder, name)(args[0], args[1])

        return float64x4(a, b), codegen

    return intrinsic(typer)


def _unary(llvm_name):
    def typer(typingctx, a):
        def codegen(context, builder, signature, args):
            function = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(_VECTOR, [_VECTOR]), f"{llvm_name}.v4f64"
            )
            return builder.call(function, [args[0]])

        return float64x4(a), codegen

    return intrinsic(typer)


add4 = _binary("fadd")
sub4 = _binary("fsub")
mul4 = _binary("fmul")
div4 = _binary("fdiv")
sqrt4 = _unary("llvm.sqrt")
abs4 = _unary("llvm.fabs")
