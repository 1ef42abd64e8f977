r"""Compiled rows of :class:`dpreg.data.streams.CounterGaussianRows` (equal to round-off).

The numpy reference (:func:`dpreg.data.streams._counter_normal_pairs`) makes eight passes
over uint64 arrays for SplitMix64, then Box-Muller; most of its time is the cosine and
sine passes and the temporaries. Here one compiled pass hashes each counter and writes
the uniform and the angle (:func:`counter_uniforms`), numpy takes the logarithm (numpy's
vectorised ``log`` and libm's differ in the last bit of a few values in a thousand, so it
stays numpy's), and a second pass writes the scaled coordinates and the response noise
(:func:`counter_rows`), a block of rows at a time through small reused scratch arrays
(fresh whole-call temporaries were faulted in from the kernel on every call, doubling the
cost). The hashes, uniforms, angles and logarithms are the reference's
bits; the cosine and sine of each angle come from one argument reduction
(:func:`counter_sincos`: Cody-Waite reduction by :math:`\pi/2` in three parts, Taylor
polynomials on :math:`|r| \le \pi/4`, the quadrant chosen without branches, so the loop
vectorises) instead of two libm calls, about 5x faster and within one ulp of libm's
(about 3% of the values differ, in the last bit). So the rows equal the reference's to
round-off (relative difference at most 4.5e-16), ``tests/unit/test_counter_kernel.py``.
"""

from __future__ import annotations

import math
from functools import cache
from typing import Any

import numpy as np

__all__ = ["counter_rows", "counter_sincos", "counter_uniforms"]

_ANGLE = 2.0**-53 * 2.0 * math.pi
"""The reference's angle factor, one rounded constant."""

_SCRATCH_PAIRS = 1 << 13
"""Box-Muller pairs per block of :func:`counter_rows` (64 KB per scratch array)."""

_EMPTY = np.empty(0)


@cache
def _kernels() -> tuple[Any, Any, Any]:
    """Return the two passes and the sin/cos loop (compiled or loaded from numba's cache)."""
    from dpreg.data import _counter_jit as jit

    return jit.uniforms, jit.rows, jit.sincos_loop


def counter_uniforms(key: int, positions: np.ndarray, pairs: int) -> tuple[np.ndarray, np.ndarray]:
    r"""Return the Box-Muller inputs of counters ``positions[i] * pairs + j``: (m, pairs) each.

    ``u`` in (0, 1] from the first SplitMix64 hash of ``(2 c) ^ key``, the angle in
    :math:`[0, 2\pi)` from the hash of ``(2 c + 1) ^ key``, as in
    :func:`dpreg.data.streams._counter_normal_pairs`.

    Examples
    --------
    >>> import numpy as np
    >>> u, angle = counter_uniforms(7, np.array([0, 3]), 2)
    >>> u.shape, bool(np.all((u > 0) & (u <= 1))), bool(np.all(angle < 2 * np.pi))
    ((2, 2), True, True)
    """
    pos = np.ascontiguousarray(positions, dtype=np.int64)
    u = np.empty((pos.size, pairs))
    angle = np.empty((pos.size, pairs))
    _kernels()[0](np.uint64(key), pos, int(pairs), _ANGLE, u, angle)
    return u, angle


def counter_sincos(angle: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""Return ``(sin(angle), cos(angle))`` as :func:`counter_rows` computes them (1-d, float64).

    One argument reduction by :math:`\pi/2` for both (three-part Cody-Waite, exact for
    the quadrants of :math:`[0, 2\pi)`), Taylor polynomials to degree 17 / 18 on the
    reduced argument with its tail, the quadrant's swap and signs by selects. Within one
    ulp of libm's ``sin``/``cos`` for angles in :math:`[0, 2\pi)`.

    Examples
    --------
    >>> import numpy as np
    >>> a = np.array([0.0, 0.5, 2.0, 4.0, 6.0])
    >>> s, c = counter_sincos(a)
    >>> bool(np.all(np.abs(s - np.sin(a)) <= np.spacing(np.abs(np.sin(a)))))
    True
    >>> bool(np.all(np.abs(c - np.cos(a)) <= np.spacing(np.abs(np.cos(a)))))
    True
    """
    a = np.ascontiguousarray(angle, dtype=np.float64)
    if a.ndim != 1:
        raise ValueError(f"angle must be 1-d; got shape {a.shape}")
    s, c = np.empty_like(a), np.empty_like(a)
    _kernels()[2](a, s, c)
    return s, c


def counter_rows(
    key: int, positions: np.ndarray, sqrt_h: np.ndarray, w: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray] | tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Return ``(X, z)`` of the rows at ``positions``: (m, d) scaled by ``sqrt_h``, (m,).

    The rows of :meth:`dpreg.data.streams.CounterGaussianRows.rows`, computed in two
    compiled passes around numpy's log, equal to round-off (the cosine and sine of
    :func:`counter_sincos`, within one ulp of libm's). With ``w`` (d,), returns
    ``(X, z, base)`` with ``base`` :math:`= \langle x_i, w\rangle` summed in the second
    pass in numpy's pairwise order: the bits of ``(X * w).sum(axis=1)`` without its two
    passes (issue 18).

    Examples
    --------
    >>> import numpy as np
    >>> X, z = counter_rows(7, np.array([2, 0]), np.ones(3))
    >>> X.shape, z.shape
    ((2, 3), (2,))
    >>> base = counter_rows(7, np.array([2, 0]), np.ones(3), np.arange(3.0))[2]
    >>> bool(np.array_equal(base, (X * np.arange(3.0)).sum(axis=1)))
    True
    """
    sqrt_h = np.ascontiguousarray(sqrt_h, dtype=np.float64)
    d = sqrt_h.size
    pos = np.ascontiguousarray(positions, dtype=np.int64)
    m, pairs = pos.size, (d + 2) // 2
    with_base = w is not None
    if with_base:
        w = np.ascontiguousarray(w, dtype=np.float64)
        if w.shape != (d,):
            raise ValueError(f"w must have shape ({d},); got {w.shape}")
    X = np.empty((m, d))
    z = np.empty(m)
    base = np.empty(m) if with_base else z
    # Blocks of rows through small scratch arrays (kept in cache, reused): whole-call
    # temporaries of 1.6 MB at 1000 rows, d = 200, freed each call, made glibc return the
    # memory and fault it in again on every call (about as costly as the rows themselves).
    block = max(1, min(m, _SCRATCH_PAIRS // pairs))
    u, angle = np.empty((block, pairs)), np.empty((block, pairs))
    uniforms, rows = _kernels()[:2]
    for lo in range(0, m, block):
        k = min(block, m - lo)
        uniforms(np.uint64(key), pos[lo : lo + k], pairs, _ANGLE, u[:k], angle[:k])
        np.log(u[:k], out=u[:k])
        rows(u[:k], angle[:k], sqrt_h, w if with_base else _EMPTY, X[lo : lo + k], z[lo : lo + k],
             base[lo : lo + k])  # fmt: skip
    return (X, z, base) if with_base else (X, z)
