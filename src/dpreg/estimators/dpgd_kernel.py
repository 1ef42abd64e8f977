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

__all__ = [
    "clip_block",
    "clip_block_reference",
    "clipped_residual_weights",
    "clipped_residual_weights_reference",
    "row_clip_corrections",
    "row_clip_corrections_reference",
    "screen_block",
    "screen_block_reference",
]


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

    @numba.njit(cache=True, nogil=True)
    def weights(R, y, norms, clip, count):
        rows, width = R.shape
        for i in range(rows):
            yi = y[i]
            ni = norms[i]
            for j in range(width):
                r = yi - R[i, j]
                a = abs(r) * ni
                if a > clip:
                    count[j] += 1
                m = a if a > clip else clip
                R[i, j] = (clip / m) * r

    @numba.njit(cache=True, nogil=True)
    def row_corrections(R, y, norms, X, clip, residual_mode, count, corr):
        rows, width = R.shape
        d = X.shape[1]
        for i in range(rows):
            yi = y[i]
            ni = norms[i]
            for j in range(width):
                r = yi - R[i, j]
                if residual_mode:
                    clipped = abs(r) > clip
                    w = clip if r > clip else (-clip if r < -clip else r)
                else:
                    g = abs(r) * ni
                    clipped = g > clip
                    w = (clip / g) * r if clipped else r
                if clipped:
                    count[j] += 1
                    diff = w - r
                    for a in range(d):
                        corr[j, a] += X[i, a] * diff

    return kernel, screen, weights, row_corrections


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


def clipped_residual_weights(
    R: np.ndarray, y: np.ndarray, norms: np.ndarray, clip: float, count: np.ndarray
) -> np.ndarray:
    r"""Turn fitted values into clipped-gradient weights in place, counting clipped pairs.

    For gradient clipping of the squared loss (Brown et al. 2024, Alg. 1) the clipped
    per-example gradient is :math:`-x_i w_{ij}` with :math:`r_{ij} = y_i - R_{ij}` and
    :math:`w_{ij} = r_{ij}\,C/\max\{\|x_i\||r_{ij}|,\ C\}`. One pass computes every
    :math:`w_{ij}` with the same floating-point operations, in the same order, as the
    numpy sequence of :func:`dpreg.estimators.dpgd.clipped_mean_gradient` (five
    elementwise passes and a temporary), so the weights are identical bit for bit
    (:func:`clipped_residual_weights_reference`).

    Parameters
    ----------
    R : ndarray, shape (rows, width), float64, C-contiguous
        Fitted values :math:`x_i^\top\theta_j`; overwritten by the weights.
    y : ndarray, shape (rows,)
    norms : ndarray, shape (rows,)
        :math:`\|x_i\|_2`.
    clip : float
        :math:`C`.
    count : ndarray, shape (width,), int64
        Incremented by the number of rows with :math:`\|x_i\||r_{ij}| > C`.

    Returns
    -------
    ndarray
        ``R``.

    Examples
    --------
    >>> import numpy as np
    >>> R, count = np.array([[0.0], [4.0]]), np.zeros(1, dtype=np.int64)
    >>> clipped_residual_weights(R, np.array([1.0, 0.0]), np.array([1.0, 2.0]), 2.0, count)
    array([[ 1.],
           [-1.]])
    >>> count.tolist()
    [1]
    """
    _kernel()[2](R, y, norms, float(clip), count)
    return R


def clipped_residual_weights_reference(
    R: np.ndarray, y: np.ndarray, norms: np.ndarray, clip: float, count: np.ndarray
) -> np.ndarray:
    """Numpy reference of :func:`clipped_residual_weights` (the same bits).

    Examples
    --------
    >>> import numpy as np
    >>> R, count = np.array([[0.0], [4.0]]), np.zeros(1, dtype=np.int64)
    >>> w = clipped_residual_weights_reference(R, np.ones(2), np.array([1.0, 2.0]), 2.0, count)
    >>> w.ravel().tolist(), count.tolist()
    ([1.0, -1.0], [1])
    """
    np.subtract(y[:, None], R, out=R)  # residuals r_i
    W = np.abs(R)
    W *= norms[:, None]  # ||g_i|| = ||x_i|| |r_i|
    count += np.count_nonzero(W > clip, axis=0)
    # min{1, C/||g||} = C / max{||g||, C}; exactly 1 when not clipped.
    np.maximum(W, clip, out=W)
    np.divide(clip, W, out=W)
    W *= R
    R[...] = W
    return R


def row_clip_corrections(
    R: np.ndarray,
    y: np.ndarray,
    norms: np.ndarray,
    X: np.ndarray,
    clip: float,
    clip_mode: str,
    count: np.ndarray,
    corr: np.ndarray,
) -> None:
    r"""Count the clipped (row, parameter) pairs of a row block and add their corrections.

    With residuals :math:`r_{ij} = y_i - R_{ij}` and clipped weights :math:`w_{ij}`
    (``"gradient"``: :math:`r_{ij} C/\max\{\|x_i\||r_{ij}|, C\}`; ``"residual"``:
    :math:`\mathrm{clip}_{[-C, C]}(r_{ij})`), the clipped gradient sum
    :math:`-\sum_i x_i w_{ij}` equals :math:`G\theta_j - X^\top y - \sum_{i\,
    \mathrm{clipped}} x_i (w_{ij} - r_{ij})`; this pass adds the last sum's terms to
    ``corr[j]`` in increasing ``i`` and counts the clipped pairs (the same comparisons
    as :func:`dpreg.estimators.dpgd.clipped_mean_gradient`, so the counts are exact).

    Parameters
    ----------
    R : ndarray, shape (rows, width)
        Fitted values :math:`x_i^\top\theta_j` (read only).
    y, norms : ndarray, shape (rows,)
        Responses and :math:`\|x_i\|_2` (``norms`` unused by ``"residual"``).
    X : ndarray, shape (rows, d)
    clip : float
    clip_mode : {"gradient", "residual"}
    count : ndarray, shape (width,), int64
        Incremented by the clipped pairs of each column.
    corr : ndarray, shape (width, d), float64
        Receives the corrections (added in place).

    Examples
    --------
    >>> import numpy as np
    >>> R, X = np.array([[0.0], [4.0]]), np.array([[1.0, 0.0], [0.0, 2.0]])
    >>> count, corr = np.zeros(1, dtype=np.int64), np.zeros((1, 2))
    >>> row_clip_corrections(R, np.zeros(2), np.array([1.0, 2.0]), X, 2.0, "gradient",
    ...                      count, corr)
    >>> count.tolist(), corr.tolist()
    ([1], [[0.0, 6.0]])
    """
    _kernel()[3](R, y, norms, X, float(clip), clip_mode == "residual", count, corr)


def row_clip_corrections_reference(
    R: np.ndarray,
    y: np.ndarray,
    norms: np.ndarray,
    X: np.ndarray,
    clip: float,
    clip_mode: str,
    count: np.ndarray,
    corr: np.ndarray,
) -> None:
    """Numpy reference of :func:`row_clip_corrections` (the same bits).

    Examples
    --------
    >>> import numpy as np
    >>> R, X = np.array([[0.0], [4.0]]), np.array([[1.0, 0.0], [0.0, 2.0]])
    >>> count, corr = np.zeros(1, dtype=np.int64), np.zeros((1, 2))
    >>> row_clip_corrections_reference(R, np.zeros(2), np.ones(2), X, 3.0, "residual",
    ...                                count, corr)
    >>> count.tolist(), corr.tolist()
    ([1], [[0.0, 2.0]])
    """
    r = y[:, None] - R
    if clip_mode == "residual":
        clipped = np.abs(r) > clip
        W = np.clip(r, -clip, clip)
    else:
        g = np.abs(r) * norms[:, None]
        clipped = g > clip
        with np.errstate(divide="ignore", invalid="ignore"):
            W = (clip / g) * r
    count += np.count_nonzero(clipped, axis=0)
    diff = np.where(clipped, W - r, 0.0)
    idx = np.flatnonzero(clipped.any(axis=1))
    if idx.size:
        # added one row after another (cumsum is a running sum: the compiled loop's
        # order; an unclipped pair adds a zero, which leaves a sum not -0.0 unchanged)
        terms = np.empty((idx.size + 1, *corr.shape))
        terms[0] = corr
        np.multiply(diff[idx][:, :, None], X[idx][:, None, :], out=terms[1:])
        corr[...] = np.cumsum(terms, axis=0)[-1]


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
