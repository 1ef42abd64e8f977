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
    "FUSED_MAX_D",
    "FUSED_NARROW_D",
    "clip_block",
    "clip_block_reference",
    "clipped_rows_fused",
    "clipped_rows_fused_reference",
    "fused_entries",
    "clipped_residual_weights",
    "clipped_residual_weights_reference",
    "row_clip_corrections",
    "row_clip_corrections_reference",
    "row_norms",
    "row_norms_reference",
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


#: largest d of :func:`clipped_rows_fused` (columns padded with zeros to d + 1 = 12)
FUSED_MAX_D = 11
#: largest d of its narrow pass (columns padded with zeros to d + 1 = 11)
FUSED_NARROW_D = 10


@cache
def _fused_kernel() -> Any:
    """Compile (or load from numba's cache) the fused residual, clip and sum passes."""
    import numba

    @numba.njit(cache=True, nogil=True, fastmath={"reassoc", "contract"})
    def fused(AT, XBT, E, row_start, G, count):
        # lanes are rows: one parameter's 12 entries and 11 partial sums stay in registers
        for j in range(E.shape[0]):
            # unsigned row indices: no wraparound tests, so the row loop vectorises
            start, stop = np.uint64(max(row_start[j], 0)), np.uint64(AT.shape[1])
            e0, e1, e2, e3, e4, e5, e6, e7, e8, e9, e10, e11 = (
                E[j, 0], E[j, 1], E[j, 2], E[j, 3], E[j, 4], E[j, 5],
                E[j, 6], E[j, 7], E[j, 8], E[j, 9], E[j, 10], E[j, 11],
            )  # fmt: skip
            g0 = g1 = g2 = g3 = g4 = g5 = g6 = g7 = g8 = g9 = g10 = 0.0
            c = 0
            for i in range(start, stop):
                u = (
                    AT[0, i] * e0 + AT[1, i] * e1 + AT[2, i] * e2 + AT[3, i] * e3
                    + AT[4, i] * e4 + AT[5, i] * e5 + AT[6, i] * e6 + AT[7, i] * e7
                    + AT[8, i] * e8 + AT[9, i] * e9 + AT[10, i] * e10 + AT[11, i] * e11
                )  # fmt: skip
                w = min(max(u, -1.0), 1.0)
                c += 1 if u != w else 0
                g0 += XBT[0, i] * w
                g1 += XBT[1, i] * w
                g2 += XBT[2, i] * w
                g3 += XBT[3, i] * w
                g4 += XBT[4, i] * w
                g5 += XBT[5, i] * w
                g6 += XBT[6, i] * w
                g7 += XBT[7, i] * w
                g8 += XBT[8, i] * w
                g9 += XBT[9, i] * w
                g10 += XBT[10, i] * w
            G[j, 0], G[j, 1], G[j, 2], G[j, 3], G[j, 4], G[j, 5] = g0, g1, g2, g3, g4, g5
            G[j, 6], G[j, 7], G[j, 8], G[j, 9], G[j, 10] = g6, g7, g8, g9, g10
            count[j] = c

    @numba.njit(cache=True, nogil=True, fastmath={"reassoc", "contract"})
    def fused_narrow(AT, XBT, E, row_start, G, count):
        # d <= 10: the wide pass without its last entry and sum (zero padding there), so
        # 21 multiply-adds and loads per pair instead of 23; the same bits as the wide
        # pass on the zero-padded arrays (tests/unit/test_dpgd_fused.py)
        for j in range(E.shape[0]):
            start, stop = np.uint64(max(row_start[j], 0)), np.uint64(AT.shape[1])
            e0, e1, e2, e3, e4, e5, e6, e7, e8, e9, e10 = (
                E[j, 0], E[j, 1], E[j, 2], E[j, 3], E[j, 4], E[j, 5],
                E[j, 6], E[j, 7], E[j, 8], E[j, 9], E[j, 10],
            )  # fmt: skip
            g0 = g1 = g2 = g3 = g4 = g5 = g6 = g7 = g8 = g9 = 0.0
            c = 0
            for i in range(start, stop):
                u = (
                    AT[0, i] * e0 + AT[1, i] * e1 + AT[2, i] * e2 + AT[3, i] * e3
                    + AT[4, i] * e4 + AT[5, i] * e5 + AT[6, i] * e6 + AT[7, i] * e7
                    + AT[8, i] * e8 + AT[9, i] * e9 + AT[10, i] * e10
                )  # fmt: skip
                w = min(max(u, -1.0), 1.0)
                c += 1 if u != w else 0
                g0 += XBT[0, i] * w
                g1 += XBT[1, i] * w
                g2 += XBT[2, i] * w
                g3 += XBT[3, i] * w
                g4 += XBT[4, i] * w
                g5 += XBT[5, i] * w
                g6 += XBT[6, i] * w
                g7 += XBT[7, i] * w
                g8 += XBT[8, i] * w
                g9 += XBT[9, i] * w
            G[j, 0], G[j, 1], G[j, 2], G[j, 3], G[j, 4], G[j, 5] = g0, g1, g2, g3, g4, g5
            G[j, 6], G[j, 7], G[j, 8], G[j, 9] = g6, g7, g8, g9
            count[j] = c

    return fused, fused_narrow


def fused_entries(d: int) -> int:
    """Return the padded entries of :func:`clipped_rows_fused`'s parameters at dimension ``d``.

    12 for ``d = 11`` (:data:`FUSED_MAX_D`), 11 for ``d <= 10`` (:data:`FUSED_NARROW_D`:
    the narrow pass, two fewer multiply-adds and loads per pair); ``AT`` has this many
    rows, ``XBT`` and ``G`` one fewer.

    Examples
    --------
    >>> fused_entries(10), fused_entries(11)
    (11, 12)
    """
    if not 1 <= d <= FUSED_MAX_D:
        raise ValueError(f"d must be in 1..{FUSED_MAX_D} for the fused pass, got {d}")
    return FUSED_NARROW_D + 1 if d <= FUSED_NARROW_D else FUSED_MAX_D + 1


def clipped_rows_fused(
    AT: np.ndarray,
    XBT: np.ndarray,
    E: np.ndarray,
    row_start: np.ndarray,
    G: np.ndarray,
    count: np.ndarray,
) -> None:
    r"""Clipped gradient sums of many parameters over row ranges, in one compiled pass.

    For parameter j, over rows :math:`i \ge` ``row_start[j]``: the scaled residual
    :math:`u_{ij} = a_i^\top e_j`, its clip :math:`w_{ij} = \mathrm{clip}_{[-1,1]}(u_{ij})`,
    the count of clipped pairs and :math:`G_j = \sum_i (x_i B_i) w_{ij}`: both products
    and the clip of :class:`~dpreg.estimators.dpgd.ClippedGradientKernel`'s dense row
    block (``kernel="fused"``) without writing the residuals, the rows as SIMD lanes and
    the parameter's entries and sums in registers. Sums are reassociated (vector lanes,
    fused multiply-adds), so results equal :func:`clipped_rows_fused_reference` to
    rounding, and the counts exactly except where a residual lies within rounding of
    the clip level.

    With k = 11 entries (``d <= 10``, :func:`fused_entries`) the narrow pass runs: the
    same bits as the wide one (k = 12) on the arrays padded with zeros to 12 entries,
    two fewer multiply-adds and loads per pair.

    Parameters
    ----------
    AT : ndarray, shape (k, n), C-contiguous, k = 11 or 12
        :math:`[X/B,\ y/B]^\top` zero-padded to k rows (d + 1 <= k).
    XBT : ndarray, shape (k - 1, n), C-contiguous
        :math:`(XB)^\top` zero-padded to k - 1 rows.
    E : ndarray, shape (width, k), C-contiguous
        Parameters :math:`[\theta_j; -1]`, zero-padded.
    row_start : ndarray, shape (width,), int64
        First row of each parameter's range (rows before it are certified elsewhere).
    G : ndarray, shape (width, k - 1)
        Overwritten with the sums.
    count : ndarray, shape (width,), int64
        Overwritten with the clipped pairs of each parameter.

    Examples
    --------
    >>> import numpy as np
    >>> AT = np.zeros((12, 3)); AT[0] = [1.0, 2.0, 0.5]; AT[1] = [-1.0, -1.0, -1.0]
    >>> XBT = np.zeros((11, 3)); XBT[0] = [1.0, 1.0, 1.0]
    >>> E = np.zeros((1, 12)); E[0, :2] = [1.0, -1.0]  # theta = 1, residual entry -1
    >>> G, count = np.empty((1, 11)), np.empty(1, dtype=np.int64)
    >>> clipped_rows_fused(AT, XBT, E, np.array([0]), G, count)
    >>> float(G[0, 0]), count.tolist()  # u = 2, 3, 1.5: all clipped to 1
    (3.0, [3])
    """
    k = AT.shape[0]
    if k not in (FUSED_NARROW_D + 1, FUSED_MAX_D + 1):
        raise ValueError(f"AT must have {FUSED_NARROW_D + 1} or {FUSED_MAX_D + 1} rows, got {k}")
    for name, got, want in (
        ("XBT", XBT.shape[0], k - 1),
        ("E", E.shape[1], k),
        ("G", G.shape[1], k - 1),
    ):
        if got != want:
            raise ValueError(
                f"{name} must have {want} entries per parameter for AT's {k} rows, got {got}"
            )
    wide, narrow = _fused_kernel()
    (narrow if k == FUSED_NARROW_D + 1 else wide)(AT, XBT, E, row_start, G, count)


def clipped_rows_fused_reference(
    AT: np.ndarray,
    XBT: np.ndarray,
    E: np.ndarray,
    row_start: np.ndarray,
    G: np.ndarray,
    count: np.ndarray,
) -> None:
    """Numpy reference of :func:`clipped_rows_fused` (same arguments and effects).

    Examples
    --------
    >>> import numpy as np
    >>> AT = np.zeros((12, 2)); AT[0] = [0.5, 3.0]
    >>> XBT = np.zeros((11, 2)); XBT[0] = [2.0, 1.0]
    >>> E = np.zeros((1, 12)); E[0, 0] = 1.0
    >>> G, count = np.empty((1, 11)), np.empty(1, dtype=np.int64)
    >>> clipped_rows_fused_reference(AT, XBT, E, np.array([0]), G, count)
    >>> float(G[0, 0]), count.tolist()
    (2.0, [1])
    """
    for j in range(E.shape[0]):
        start = int(row_start[j])
        U = E[j] @ AT[:, start:]
        W = np.clip(U, -1.0, 1.0)
        count[j] = np.count_nonzero(U != W)
        G[j] = XBT[:, start:] @ W


#: longest row :func:`row_norms` sums in compiled code (numpy's unrolled block; longer
#: rows are split recursively by numpy, and go to :func:`row_norms_reference`)
ROW_NORMS_MAX_D = 128


@cache
def _norms_kernel() -> Any:
    """Compile (or load from numba's cache) the row-norm pass."""
    import numba

    @numba.njit(cache=True, nogil=True)
    def norms(X, out):
        # numpy's add.reduce over a contiguous row of d <= 128 squares: a plain running
        # sum below 8 terms, else eight interleaved sums over the multiple-of-8 prefix,
        # combined pairwise, then the rest added in order
        n, d = X.shape
        sq = np.empty(d)
        for i in range(n):
            for k in range(d):
                v = X[i, k]
                sq[k] = v * v
            if d < 8:
                res = 0.0
                for k in range(d):
                    res += sq[k]
            else:
                r0, r1, r2, r3 = sq[0], sq[1], sq[2], sq[3]
                r4, r5, r6, r7 = sq[4], sq[5], sq[6], sq[7]
                k = 8
                stop = d - d % 8
                while k < stop:
                    r0 += sq[k]
                    r1 += sq[k + 1]
                    r2 += sq[k + 2]
                    r3 += sq[k + 3]
                    r4 += sq[k + 4]
                    r5 += sq[k + 5]
                    r6 += sq[k + 6]
                    r7 += sq[k + 7]
                    k += 8
                res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
                while k < d:
                    res += sq[k]
                    k += 1
            out[i] = np.sqrt(res)

    return norms


def row_norms(X: np.ndarray) -> np.ndarray:
    r"""Euclidean norms of the rows of ``X``, bit for bit ``np.linalg.norm(X, axis=1)``.

    One compiled pass without numpy's ``(n, d)`` temporary of squares: each row's squares
    are summed in numpy's order (its pairwise summation, which for ``d <= 128`` is eight
    interleaved running sums combined pairwise), so the values are identical
    (``tests/unit/test_dpgd_kernel.py`` compares them bit for bit). Rows longer than
    :data:`ROW_NORMS_MAX_D`, a non-C-contiguous or non-float64 ``X`` go to
    :func:`row_norms_reference`.

    Parameters
    ----------
    X : ndarray, shape (n, d)

    Returns
    -------
    ndarray, shape (n,)

    Examples
    --------
    >>> import numpy as np
    >>> X = np.arange(30.0).reshape(3, 10) / 7
    >>> bool(np.array_equal(row_norms(X), np.linalg.norm(X, axis=1)))
    True
    """
    X = np.asarray(X)
    if (
        X.ndim != 2
        or X.dtype != np.float64
        or not X.flags.c_contiguous
        or X.shape[1] > ROW_NORMS_MAX_D
    ):
        return row_norms_reference(X)
    out = np.empty(X.shape[0])
    _norms_kernel()(X, out)
    return out


def row_norms_reference(X: np.ndarray) -> np.ndarray:
    """Numpy reference of :func:`row_norms`: ``np.linalg.norm(X, axis=1)``.

    Examples
    --------
    >>> import numpy as np
    >>> row_norms_reference(np.array([[3.0, 4.0], [0.0, 0.0]])).tolist()
    [5.0, 0.0]
    """
    return np.linalg.norm(X, axis=1)


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
