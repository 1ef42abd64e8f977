r"""The elementwise pass of DP-GD's clipped-gradient kernel, compiled (numba).

:class:`~dpreg.estimators.dpgd.ClippedGradientKernel` computes the scaled residuals
:math:`u_{ij}` of a row block for many parameters with one matrix product; the clipped
gradient then needs, for every (row, parameter) pair, :math:`w_{ij} =
\mathrm{clip}_{[-1,1]}(u_{ij})`, whether the pair was clipped (counted per parameter) and
which rows were clipped for some parameter. :func:`clip_block` does all of it in one pass
over the block (numpy needs five: clip, compare, two reductions and a row reduction);
:func:`clip_block_reference` is the numpy reference, and the two are tested equal
(exactly: there is no arithmetic besides the comparisons). numba is imported on first
use (compilation is cached on disk).
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np

__all__ = ["clip_block", "clip_block_reference", "screen_block", "screen_block_reference"]


@cache
def _kernel() -> Any:
    """Compile (or load from numba's cache) the block kernel."""
    import numba

    @numba.njit(cache=True, nogil=True)
    def kernel(U, W, count, hit):
        rows, width = U.shape
        total = 0
        for i in range(rows):
            row_hit = 0
            for j in range(width):
                u = U[i, j]
                w = min(max(u, -1.0), 1.0)
                W[i, j] = w
                c = 1 if u != w else 0
                count[j] += c
                row_hit |= c
            hit[i] = row_hit
            total += row_hit
        return total

    @numba.njit(cache=True, nogil=True)
    def screen(U, threshold, hit):
        rows, width = U.shape
        total = 0
        for i in range(rows):
            row_hit = 0
            for j in range(width):
                row_hit |= 1 if abs(U[i, j]) > threshold else 0
            hit[i] = row_hit
            total += row_hit
        return total

    return kernel, screen


def clip_block(U: np.ndarray, W: np.ndarray, count: np.ndarray, hit: np.ndarray) -> int:
    r"""Clip a block of scaled residuals to [-1, 1], count clipped pairs, flag clipped rows.

    Parameters
    ----------
    U : ndarray, shape (rows, width), float64, C-contiguous
        Scaled residuals (read only).
    W : ndarray, shape (rows, width), float64, C-contiguous
        Receives :math:`\mathrm{clip}_{[-1,1]}(U)`.
    count : ndarray, shape (width,), int64
        Incremented in place by the number of clipped rows of each column.
    hit : ndarray, shape (>= rows,), uint8
        ``hit[i]`` set to 1 if row i is clipped in some column, else 0.

    Returns
    -------
    int
        The number of rows clipped in some column.

    Examples
    --------
    >>> import numpy as np
    >>> U = np.array([[0.5, 2.0], [-0.1, 0.3], [-3.0, -1.5]])
    >>> W, count, hit = np.empty_like(U), np.zeros(2, dtype=np.int64), np.zeros(3, np.uint8)
    >>> clip_block(U, W, count, hit)
    2
    >>> W.tolist(), count.tolist(), hit.tolist()
    ([[0.5, 1.0], [-0.1, 0.3], [-1.0, -1.0]], [1, 2], [1, 0, 1])
    """
    return int(_kernel()[0](U, W, count, hit))


def clip_block_reference(U: np.ndarray, W: np.ndarray, count: np.ndarray, hit: np.ndarray) -> int:
    """Numpy reference of :func:`clip_block` (same arguments, same effects and result).

    Examples
    --------
    >>> import numpy as np
    >>> U = np.array([[0.5, 2.0], [-0.1, 0.3]])
    >>> W, count, hit = np.empty_like(U), np.zeros(2, dtype=np.int64), np.zeros(2, np.uint8)
    >>> clip_block_reference(U, W, count, hit), W.tolist(), count.tolist(), hit.tolist()
    (1, [[0.5, 1.0], [-0.1, 0.3]], [0, 1], [1, 0])
    """
    np.clip(U, -1.0, 1.0, out=W)
    clipped = U != W
    count += np.count_nonzero(clipped, axis=0)
    rows = clipped.any(axis=1)
    hit[: U.shape[0]] = rows
    return int(rows.sum())


def screen_block(U: np.ndarray, threshold: float, hit: np.ndarray) -> int:
    """Flag the rows of ``U`` with an entry of absolute value above ``threshold``.

    Used on a block of scaled residuals computed in single precision: with ``threshold``
    one minus a bound on their rounding error, an unflagged row is certainly not clipped.

    Parameters
    ----------
    U : ndarray, shape (rows, width), C-contiguous (float32 or float64)
    threshold : float
    hit : ndarray, shape (>= rows,), uint8
        ``hit[i]`` set to 1 if some ``abs(U[i, j]) > threshold``, else 0.

    Returns
    -------
    int
        The number of flagged rows.

    Examples
    --------
    >>> import numpy as np
    >>> hit = np.zeros(2, np.uint8)
    >>> screen_block(np.array([[0.5, -0.99], [0.2, 1.5]], np.float32), 0.9, hit), hit.tolist()
    (2, [1, 1])
    """
    return int(_kernel()[1](U, float(threshold), hit))


def screen_block_reference(U: np.ndarray, threshold: float, hit: np.ndarray) -> int:
    """Numpy reference of :func:`screen_block`.

    Examples
    --------
    >>> import numpy as np
    >>> hit = np.zeros(2, np.uint8)
    >>> screen_block_reference(np.array([[0.5, 0.1], [0.2, 1.5]]), 0.9, hit), hit.tolist()
    (1, [0, 1])
    """
    rows = np.any(np.abs(U) > np.float64(threshold), axis=1)  # compared in float64
    hit[: U.shape[0]] = rows
    return int(rows.sum())
