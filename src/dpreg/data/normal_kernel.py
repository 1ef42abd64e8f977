r"""numpy's standard normals drawn in compiled code: the same values, about 4x faster.

``rng.standard_normal(out=buf)`` costs about 9 ns per draw here (numpy's ziggurat called
per element through the bit generator's function pointers). numba implements
:class:`numpy.random.Generator` methods with numpy's algorithms on the generator's own
bit-generator state, so :func:`standard_normal_fill` writes **the same values, in the same
order, and leaves the generator in the same state** as ``rng.standard_normal(out=out)``
(about 3.5 ns per draw; ``tests/unit/test_normal_kernel.py`` checks values and state
against numpy). The Varshney et al. (2022) study draws about 10^9 normals per job
(the data stream of docs/notes/varshney2022.md §5.1 and DP-SSGD's noise), so the draw
is most of its time (docs/scaling.md). numba is imported on first use (compilation is
cached on disk).

For numpy's default bit generator, :class:`numpy.random.PCG64`, the fill runs numpy's
PCG64 step and ziggurat inlined (:mod:`dpreg.data._pcg64_jit`, about 2.4 ns per draw; the
generator's state is read before and written back after, through its public
``bit_generator.state``); ``inline_pcg64=False`` and any other bit generator take numba's
``rng.standard_normal()`` (the reference). Both give numpy's values and final state, bit
for bit (tested).
"""

from __future__ import annotations

import sys
from functools import cache
from typing import Any

import numpy as np

__all__ = [
    "COMPILED_MIN_DRAWS",
    "pcg64_state",
    "scaled_normal_fill",
    "set_pcg64_state",
    "standard_normal_fill",
    "standard_normals",
]

_MASK64 = (1 << 64) - 1


@cache
def _fill_kernel() -> Any:
    """Compile (or load from numba's cache) the fill loop."""
    import numba

    @numba.njit(cache=True, nogil=True)
    def fill(rng, flat):
        for i in range(flat.shape[0]):
            flat[i] = rng.standard_normal()

    return fill


@cache
def _scaled_fill_kernel() -> Any:
    """Compile (or load from numba's cache) the column-scaled fill loop."""
    import numba

    @numba.njit(cache=True, nogil=True)
    def fill_scaled(rng, out, scale):
        for i in range(out.shape[0]):
            for c in range(out.shape[1]):
                out[i, c] = rng.standard_normal() * scale[c]

    return fill_scaled


@cache
def _pcg64_kernels() -> Any:
    """Import (compiling or loading from numba's cache) the inlined-PCG64 kernels."""
    from dpreg.data import _pcg64_jit

    return _pcg64_jit


def pcg64_state(rng: np.random.Generator) -> tuple[dict, np.ndarray] | None:
    """Read the state of ``rng``'s PCG64 as the compiled kernels take it (or ``None``).

    Parameters
    ----------
    rng : numpy.random.Generator
        The generator.

    Returns
    -------
    tuple of (dict, ndarray) or None
        ``rng.bit_generator.state`` and ``uint64`` ``[state_hi, state_lo, inc_hi,
        inc_lo]`` (:mod:`dpreg.data._pcg64_jit`) when the bit generator is exactly
        :class:`numpy.random.PCG64`; ``None`` otherwise (PCG64DXSM, Philox, a subclass).

    Examples
    --------
    >>> import numpy as np
    >>> state, st = pcg64_state(np.random.default_rng(0))
    >>> st.dtype, st.shape, state["bit_generator"]
    (dtype('uint64'), (4,), 'PCG64')
    >>> pcg64_state(np.random.Generator(np.random.Philox(0))) is None
    True
    """
    if type(rng.bit_generator) is not np.random.PCG64:
        return None
    state = rng.bit_generator.state
    s, inc = state["state"]["state"], state["state"]["inc"]
    st = np.array([s >> 64, s & _MASK64, inc >> 64, inc & _MASK64], dtype=np.uint64)
    return state, st


def set_pcg64_state(rng: np.random.Generator, state: dict, st: np.ndarray) -> None:
    """Set ``rng``'s PCG64 to the 128-bit state ``st[0]:st[1]`` a compiled kernel left.

    The rest of ``state`` (from :func:`pcg64_state`: the increment and the buffered
    ``has_uint32``, ``uinteger``, which normal draws do not touch) is kept.

    Parameters
    ----------
    rng : numpy.random.Generator
        The generator whose :func:`pcg64_state` was ``(state, st)``.
    state : dict
        Its ``bit_generator.state`` before the kernel ran.
    st : ndarray
        The kernel's ``uint64`` state array.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> state, st = pcg64_state(rng)
    >>> set_pcg64_state(rng, state, st)
    >>> bool(rng.random() == np.random.default_rng(0).random())
    True
    """
    state["state"]["state"] = (int(st[0]) << 64) | int(st[1])
    rng.bit_generator.state = state


def standard_normal_fill(
    rng: np.random.Generator, out: np.ndarray, *, inline_pcg64: bool = True
) -> np.ndarray:
    r"""Fill ``out`` with standard normals from ``rng`` as ``rng.standard_normal(out=out)`` does.

    Same values in C order and the same generator state afterwards (numba's
    :class:`~numpy.random.Generator` support runs numpy's ziggurat on the same bit
    generator; for PCG64, :mod:`dpreg.data._pcg64_jit` inlines it), in compiled code. A
    subclass of Generator, which may override ``standard_normal`` (e.g. one that counts
    its draws), is served by its own ``standard_normal``.

    Parameters
    ----------
    rng : numpy.random.Generator
        The generator drawn from (its state advances as numpy's would).
    out : ndarray
        C-contiguous float64 array, overwritten.
    inline_pcg64 : bool, default True
        Draw a PCG64 generator's normals with the inlined kernel; ``False``: numba's
        ``rng.standard_normal()`` (the reference; the same values and state).

    Returns
    -------
    ndarray
        ``out``.

    Raises
    ------
    TypeError
        If ``rng`` is not a Generator.
    ValueError
        If ``out`` is not a C-contiguous float64 array.

    Examples
    --------
    >>> import numpy as np
    >>> a = standard_normal_fill(np.random.default_rng(3), np.empty((2, 3)))
    >>> bool(np.array_equal(a, np.random.default_rng(3).standard_normal((2, 3))))
    True
    """
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator; got {type(rng).__name__}")
    if not (isinstance(out, np.ndarray) and out.dtype == np.float64 and out.flags.c_contiguous):
        raise ValueError("out must be a C-contiguous float64 ndarray")
    if type(rng) is not np.random.Generator:  # a subclass may override standard_normal
        return rng.standard_normal(out=out)
    if not out.size:
        return out
    pcg = pcg64_state(rng) if inline_pcg64 else None
    if pcg is None:
        _fill_kernel()(rng, out.reshape(-1))
    else:
        _pcg64_kernels().fill(pcg[1], out.reshape(-1))
        set_pcg64_state(rng, *pcg)
    return out


COMPILED_MIN_DRAWS = 2**20
"""Normals per draw from which the compiled fill pays for numba's start-up (~0.4 s)."""


def standard_normals(
    rng: np.random.Generator, out: np.ndarray, *, compiled_from: float = COMPILED_MIN_DRAWS
) -> np.ndarray:
    """``rng.standard_normal(out=out)``: the same values and generator state, compiled if large.

    The compiled :func:`standard_normal_fill` is used when ``out`` holds at least
    ``compiled_from`` numbers or numba is already loaded in this process (its start-up
    then costs nothing); otherwise numpy's own call. Both give identical arrays.

    Parameters
    ----------
    rng : numpy.random.Generator
        The generator drawn from.
    out : ndarray
        C-contiguous float64 array, overwritten.
    compiled_from : float, default :data:`COMPILED_MIN_DRAWS`
        Size from which the compiled fill is used even before numba is loaded
        (``math.inf``: only once it is loaded).

    Returns
    -------
    ndarray
        ``out``.

    Examples
    --------
    >>> import numpy as np
    >>> a = standard_normals(np.random.default_rng(3), np.empty(4), compiled_from=0)
    >>> bool(np.array_equal(a, np.random.default_rng(3).standard_normal(4)))
    True
    """
    if out.size >= compiled_from or "numba" in sys.modules:
        return standard_normal_fill(rng, out)
    return rng.standard_normal(out=out)


def scaled_normal_fill(
    rng: np.random.Generator, out: np.ndarray, scale: np.ndarray, *, inline_pcg64: bool = True
) -> np.ndarray:
    r"""Fill ``out`` (m, d) as ``rng.standard_normal(out=out); out *= scale`` does, in one pass.

    The draws of :func:`standard_normal_fill` (numpy's values in C order, the same
    generator state afterwards), each multiplied by its column's ``scale`` before it is
    stored: the products of the two-pass version, bit for bit, without a second pass over
    ``out`` (the synthetic rows :math:`x = H^{1/2}u` of docs/notes/varshney2022.md §5.1).

    Parameters
    ----------
    rng : numpy.random.Generator
        The generator drawn from (its state advances as numpy's would).
    out : ndarray
        C-contiguous float64 array of shape (m, d), overwritten.
    scale : ndarray
        Float64 array of shape (d,).
    inline_pcg64 : bool, default True
        As in :func:`standard_normal_fill`.

    Returns
    -------
    ndarray
        ``out``.

    Raises
    ------
    TypeError
        If ``rng`` is not a Generator.
    ValueError
        If ``out`` is not a C-contiguous 2-d float64 array or ``scale`` does not match
        its columns.

    Examples
    --------
    >>> import numpy as np
    >>> a = scaled_normal_fill(np.random.default_rng(3), np.empty((2, 3)), np.arange(3.0))
    >>> bool(np.array_equal(a, np.random.default_rng(3).standard_normal((2, 3)) * np.arange(3.0)))
    True
    """
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator; got {type(rng).__name__}")
    ok = isinstance(out, np.ndarray) and out.dtype == np.float64 and out.flags.c_contiguous
    if not (ok and out.ndim == 2):
        raise ValueError("out must be a C-contiguous 2-d float64 ndarray")
    scale = np.ascontiguousarray(scale, dtype=np.float64)
    if scale.shape != (out.shape[1],):
        raise ValueError(f"scale must have shape ({out.shape[1]},); got {scale.shape}")
    if type(rng) is not np.random.Generator:  # a subclass may override standard_normal
        rng.standard_normal(out=out)
        out *= scale
        return out
    if not out.size:
        return out
    pcg = pcg64_state(rng) if inline_pcg64 else None
    if pcg is None:
        _scaled_fill_kernel()(rng, out, scale)
    else:
        _pcg64_kernels().fill_scaled(pcg[1], out, scale)
        set_pcg64_state(rng, *pcg)
    return out
