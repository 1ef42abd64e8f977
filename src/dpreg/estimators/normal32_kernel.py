r"""numpy's float32 standard normals drawn in compiled code: the same values, faster.

The Fig. 2 simulation of Choquette-Choo et al. (2023) (§2.2,
:func:`~dpreg.estimators.ftrl.simulate_streaming_regression`) draws :math:`2Td` float32
standard normals per seed (the inputs and the DP noise), about :math:`10^9` per job at
paper scale: ``rng.standard_normal(dtype=np.float32, out=buf)`` costs about 9 ns per draw
here, a third of those jobs. numba's own ``Generator.standard_normal(dtype=np.float32)``
is no help: it calls the bit generator through a function pointer per draw (about 15 ns)
and its rejection test evaluates :math:`e^{-x^2/2}` in float32 where numpy evaluates it in
double, so its stream drifts from numpy's (measured: one draw lost after about 1.3 M).

:func:`normal32_fill` runs **numpy's algorithm on numpy's state**: the PCG64 (XSL-RR
128/64) step and output, the buffered 32-bit halves (``has_uint32`` / ``uinteger``), and
numpy's float32 ziggurat (``random_standard_normal_f``: 8-bit layer, sign bit, 23-bit
magnitude, the tail by :math:`\log1p` in float32, the wedge test in double) with numpy's
tables, inlined, then writes the state back (:func:`normal32_fill_columns` stores the
same draws transposed, 64 time steps at a time, for an FFT along time). Same values in C
order and the same generator state afterwards as
``rng.standard_normal(dtype=np.float32, out=out)``, bit for bit
(``tests/unit/test_normal32_kernel.py``, against numpy, tails included); only a plain
:class:`numpy.random.Generator` on :class:`numpy.random.PCG64` is served here, anything
else (a subclass, another bit generator) by numpy itself. numba is imported on first use
(compilation is cached on disk).
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np

__all__ = ["normal32_fill", "normal32_fill_columns"]

_M64 = (1 << 64) - 1
_STEPS = 64


@cache
def _kernel() -> Any:
    """Return the fill loop (compiled or loaded from numba's cache on first use)."""
    from dpreg.estimators import _normal32_jit

    return _normal32_jit.fill


def _native(rng: np.random.Generator) -> bool:
    return type(rng) is np.random.Generator and type(rng.bit_generator) is np.random.PCG64


def normal32_fill(
    rng: np.random.Generator, out: np.ndarray, scale: float | None = None
) -> np.ndarray:
    r"""Fill ``out`` as ``rng.standard_normal(dtype=np.float32, out=out)`` does (times ``scale``).

    Same values in C order and the same generator state afterwards, bit for bit; with
    ``scale``, each draw is multiplied by ``np.float32(scale)`` before it is stored: the
    float32 products of ``out *= np.float32(scale)`` after the draw, without a second pass.

    Parameters
    ----------
    rng : numpy.random.Generator
        The generator drawn from (its state advances as numpy's would). A subclass or a
        bit generator other than PCG64 is served by numpy's own ``standard_normal``.
    out : ndarray
        C-contiguous float32 array, overwritten.
    scale : float, optional
        Factor applied in float32 to every draw.

    Returns
    -------
    ndarray
        ``out``.

    Raises
    ------
    TypeError
        If ``rng`` is not a Generator.
    ValueError
        If ``out`` is not a C-contiguous float32 array.

    Examples
    --------
    >>> import numpy as np
    >>> a = normal32_fill(np.random.default_rng(3), np.empty((2, 3), np.float32))
    >>> b = np.random.default_rng(3).standard_normal((2, 3), dtype=np.float32)
    >>> bool(np.array_equal(a, b))
    True
    """
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator; got {type(rng).__name__}")
    if not (isinstance(out, np.ndarray) and out.dtype == np.float32 and out.flags.c_contiguous):
        raise ValueError("out must be a C-contiguous float32 ndarray")
    f32 = np.float32(1.0 if scale is None else scale)
    if not _native(rng):
        rng.standard_normal(dtype=np.float32, out=out)
        if scale is not None:
            out *= f32
        return out
    if out.size:
        _run(rng, out.reshape(1, -1), f32, scale is not None)
    return out


def normal32_fill_columns(
    rng: np.random.Generator, out_t: np.ndarray, scale: float | None = None
) -> np.ndarray:
    r"""Fill ``out_t.T`` as :func:`normal32_fill` fills a C-contiguous array of its shape.

    For a C-contiguous (columns, T) ``out_t``: the draws of
    ``rng.standard_normal((T, columns), dtype=np.float32)`` (times ``np.float32(scale)``),
    bit for bit and in the same order, stored transposed (time along the last axis, so
    that each column's series is contiguous for an FFT along time); the generator's state
    afterwards is numpy's.

    Parameters
    ----------
    rng : numpy.random.Generator
        The generator drawn from.
    out_t : ndarray
        C-contiguous 2-d float32 array (columns, T), overwritten.
    scale : float, optional
        Factor applied in float32 to every draw.

    Returns
    -------
    ndarray
        ``out_t``.

    Raises
    ------
    TypeError
        If ``rng`` is not a Generator.
    ValueError
        If ``out_t`` is not a C-contiguous 2-d float32 array.

    Examples
    --------
    >>> import numpy as np
    >>> a = normal32_fill_columns(np.random.default_rng(3), np.empty((3, 2), np.float32))
    >>> b = np.random.default_rng(3).standard_normal((2, 3), dtype=np.float32)
    >>> bool(np.array_equal(a, b.T))
    True
    """
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator; got {type(rng).__name__}")
    ok = isinstance(out_t, np.ndarray) and out_t.dtype == np.float32 and out_t.ndim == 2
    if not (ok and out_t.flags.c_contiguous):
        raise ValueError("out_t must be a C-contiguous 2-d float32 ndarray")
    f32 = np.float32(1.0 if scale is None else scale)
    if not _native(rng):
        out_t[...] = rng.standard_normal(out_t.shape[::-1], dtype=np.float32).T
        if scale is not None:
            out_t *= f32
        return out_t
    if out_t.size:
        _run(rng, out_t, f32, scale is not None)
    return out_t


def _run(rng: np.random.Generator, out: np.ndarray, f32: Any, use: bool) -> None:
    """Run a fill kernel on the PCG64 state of ``rng``, then write the state back."""
    state = rng.bit_generator.state
    s, inc = int(state["state"]["state"]), int(state["state"]["inc"])
    st = np.array([s >> 64, s & _M64, inc >> 64, inc & _M64], dtype=np.uint64)
    buf = np.array([state["has_uint32"], state["uinteger"]], dtype=np.uint64)
    _kernel()(st, buf, out, f32, use, _STEPS)
    state["state"]["state"] = (int(st[0]) << 64) | int(st[1])
    state["has_uint32"] = int(buf[0])
    state["uinteger"] = int(buf[1])
    rng.bit_generator.state = state
