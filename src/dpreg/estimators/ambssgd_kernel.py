r"""Compiled inner loops of DP-AMBSSGD on permuted rows (Varshney, Thakurta & Jain 2022, Alg. 2).

:func:`dpreg.estimators.ambssgd_core.ambssgd_pass` on a source with ``kernel="numpy"`` (the
reference) gathers each replicate's permuted rows into a copy (``X[perm]``, one
``(D, k, d)`` array per chunk) and multiplies. With ``kernel="numba"`` (the default) the
rows of a :class:`dpreg.estimators.ambssgd_core.PermutedRows` source are read in place
through the permutation indices, and the residual, the clip test and the gradient sum of
each row are done in one compiled pass (:func:`batch_gradient`); the stat sample's
residual magnitudes likewise (:func:`stat_magnitudes`). The random draws are untouched
(the kernels draw nothing); the results equal the reference's up to the order of the
floating-point additions (``tests/unit/test_ambssgd_kernel.py``).

The permutations themselves are the reference's (``numpy.argsort`` of the same
uniform keys): a bucket sort in compiled code was no faster here.

Two compiled variants with the same arithmetic, bit for bit (:data:`VARIANTS`, tested):
``"rowwise"``, one row at a time (each residual a chain of :math:`d` dependent additions,
so the loop waits on the adder's latency), and ``"blocked"`` (the default; issue 18),
four rows of a batch at a time: their four residuals are summed side by side (four
independent chains, each over :math:`c = 0, \dots, d-1` as in the row-wise loop) and the
four rows are added into the gradient in the row order, so every sum has the same terms
in the same order.

The batch gradient copies the permuted rows :data:`GATHER_ROWS` at a time into a
contiguous buffer before its row loop (issue 18; ``gather=True``, the default): the
copies' loads are independent, so the cache misses of the random rows overlap instead of
stalling the loop one row at a time; the arithmetic is that of the variant run on the
buffer, bit for bit (``gather=False`` reads the rows in place). The gradient's two loops
live once in :mod:`dpreg.estimators._ambssgd_jit`, each run on a list of rows of ``X``
or of the buffer.

On any other source (e.g. the Varshney studies' :class:`~dpreg.data.streams.GaussianStream`)
the pass keeps numpy's products and row norms, and :func:`clip_residuals` does the
elementwise work after the product (response, clip test, count, scaling) in one compiled
pass, the reference's operations in its order: bit for bit the same (issue 18).
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np

__all__ = ["GATHER_ROWS", "VARIANTS", "batch_gradient", "clip_residuals", "stat_magnitudes"]

VARIANTS: tuple[str, ...] = ("blocked", "rowwise")
"""Compiled loops of :func:`batch_gradient` and :func:`stat_magnitudes` (equal bit for bit)."""


@cache
def _kernels() -> Any:
    """Compile (or load from numba's cache) the residual-magnitude kernel."""
    import numba

    @numba.njit(cache=True, nogil=True)
    def magnitudes(X, y, idx, W, runs, out):
        # out (D, len(runs), k) = |<x_i, W[:, :, run]> - y_i| for the rows idx (D, k).
        D, k = idx.shape
        d = X.shape[1]
        for a in range(D):
            for j in range(k):
                i = idx[a, j]
                for m in range(runs.shape[0]):
                    r = runs[m]
                    res = 0.0
                    for c in range(d):
                        res += X[i, c] * W[a, c, r]
                    out[a, m, j] = abs(res - y[i])

    return magnitudes


@cache
def _blocked_kernels() -> Any:
    """Compile (or load from numba's cache) the magnitudes, four rows at a time."""
    import numba

    @numba.njit(cache=True, nogil=True)
    def magnitudes(X, y, idx, W, runs, out):
        # _kernels' magnitudes with rows j..j+3 side by side (each sum as there).
        D, k = idx.shape
        d = X.shape[1]
        k4 = k - k % 4
        for a in range(D):
            for j in range(0, k4, 4):
                i0 = idx[a, j]
                i1 = idx[a, j + 1]
                i2 = idx[a, j + 2]
                i3 = idx[a, j + 3]
                for m in range(runs.shape[0]):
                    r = runs[m]
                    r0 = 0.0
                    r1 = 0.0
                    r2 = 0.0
                    r3 = 0.0
                    for c in range(d):
                        w = W[a, c, r]
                        r0 += X[i0, c] * w
                        r1 += X[i1, c] * w
                        r2 += X[i2, c] * w
                        r3 += X[i3, c] * w
                    out[a, m, j] = abs(r0 - y[i0])
                    out[a, m, j + 1] = abs(r1 - y[i1])
                    out[a, m, j + 2] = abs(r2 - y[i2])
                    out[a, m, j + 3] = abs(r3 - y[i3])
            for j in range(k4, k):
                i = idx[a, j]
                for m in range(runs.shape[0]):
                    r = runs[m]
                    res = 0.0
                    for c in range(d):
                        res += X[i, c] * W[a, c, r]
                    out[a, m, j] = abs(res - y[i])

    return magnitudes


#: Rows copied at a time by the gathered gradient (40 KB of rows at d = 20, cache-resident).
GATHER_ROWS = 256


@cache
def _gradient_kernels() -> Any:
    """Import the compiled batch gradient on first use (it loads numba)."""
    from dpreg.estimators import _ambssgd_jit

    return _ambssgd_jit


def _check_variant(variant: str) -> bool:
    """Return whether ``variant`` is the blocked loop (``ValueError`` if unknown)."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}; got {variant!r}")
    return variant == "blocked"


def batch_gradient(
    X: np.ndarray,
    y: np.ndarray,
    norms: np.ndarray,
    idx: np.ndarray,
    W: np.ndarray,
    zeta: np.ndarray,
    *,
    variant: str = "blocked",
    gather: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    r"""Return the summed clipped gradients of the rows ``idx`` and the clip counts.

    Parameters
    ----------
    X : ndarray, shape (n, d)
    y : ndarray, shape (n,)
    norms : ndarray, shape (n,)
        :math:`\|x_i\|`.
    idx : ndarray of int32 or int64, shape (D, k)
        Rows of each replicate's batch.
    W : ndarray, shape (D, d, R)
        Current iterates.
    zeta : ndarray, shape (D, R)
        Clip levels (``inf``: no clipping).
    variant : {"blocked", "rowwise"}
        The compiled loop (:data:`VARIANTS`; the same values bit for bit).
    gather : bool, default True
        Copy the rows :data:`GATHER_ROWS` at a time into a contiguous buffer before the
        row loop (issue 18: the copies' cache misses overlap); ``False`` reads each row
        in place. The same operations in the same order: the same results bit for bit
        (``tests/unit/test_ambssgd_kernel.py``).

    Returns
    -------
    grad : ndarray, shape (D, d, R)
        :math:`\sum_i x_i r_i\min(1, \zeta/(|r_i|\|x_i\|))`, :math:`r_i = x_i^\top w - y_i`.
    clipped : ndarray, shape (D, R)
        Number of rows with :math:`|r_i|\|x_i\| > \zeta`.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0, 0.0], [0.0, 2.0]]); y = np.array([1.0, -1.0])
    >>> grad, clipped = batch_gradient(X, y, np.linalg.norm(X, axis=1),
    ...                                np.array([[0, 1]]), np.zeros((1, 2, 1)),
    ...                                np.array([[1.0]]))
    >>> grad[0, :, 0].tolist(), clipped.tolist()
    ([-1.0, 1.0], [[1.0]])
    """
    D, d, R = W.shape
    grad = np.zeros((D, d, R))
    clipped = np.zeros((D, R))
    blocked = _check_variant(variant)
    args = (
        X, y, norms, np.ascontiguousarray(idx), np.ascontiguousarray(W),
        np.ascontiguousarray(zeta, dtype=np.float64), grad, clipped, blocked,
    )  # fmt: skip
    if gather:
        _gradient_kernels().gathered(*args, GATHER_ROWS)
    else:
        _gradient_kernels().gradient(*args)
    return grad, clipped


def stat_magnitudes(
    X: np.ndarray,
    y: np.ndarray,
    idx: np.ndarray,
    W: np.ndarray,
    runs: np.ndarray,
    *,
    variant: str = "blocked",
) -> np.ndarray:
    r"""Residual magnitudes :math:`|x_i^\top w_r - y_i|`, shape (D, len(runs), k).

    ``variant`` as in :func:`batch_gradient` (the same values bit for bit).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.eye(2); y = np.array([1.0, -3.0])
    >>> stat_magnitudes(X, y, np.array([[1, 0]]), np.zeros((1, 2, 2)), np.array([1]))
    array([[[3., 1.]]])
    """
    D, k = idx.shape
    out = np.empty((D, runs.size, k))
    magnitudes = _blocked_kernels() if _check_variant(variant) else _kernels()
    magnitudes(
        X, y, np.ascontiguousarray(idx), np.ascontiguousarray(W),
        np.ascontiguousarray(runs, dtype=np.int64), out,
    )  # fmt: skip
    return out


@cache
def _clip_kernel_simd() -> Any:
    """Return the residuals' clipping pass with the runs in SIMD registers.

    :func:`dpreg.estimators._ambssgd_clip_jit.clip_simd`: :func:`_clip_kernel`'s values
    (the reference; the same bits, tested), compiled or loaded from numba's cache.
    """
    from dpreg.estimators._ambssgd_clip_jit import clip_simd

    return clip_simd


@cache
def _clip_kernel() -> Any:
    """Compile (or load from numba's cache) the residuals' elementwise clipping pass.

    The reference of :func:`_clip_kernel_simd` (the same bits).
    """
    import numba

    @numba.njit(cache=True, nogil=True)
    def clip(Rm, base, z, sig, norms, zeta, clipped, has_z):
        # In place, replicate a, row i, run r: v = (Rm - base) - z sig_r (the reference's
        # two subtractions), g = |v| ||x||; where g > zeta: count it, v *= zeta / g.
        D, k, R = Rm.shape
        for a in range(D):
            for i in range(k):
                b = base[a, i]
                zi = z[a, i] if has_z else 0.0
                nm = norms[a, i]
                for r in range(R):
                    v = Rm[a, i, r] - b
                    if has_z:
                        v = v - zi * sig[r]
                    g = abs(v) * nm
                    if g > zeta[a, r]:
                        clipped[a, r] += 1.0
                        v = v * (zeta[a, r] / g)
                    Rm[a, i, r] = v

    return clip


def clip_residuals(
    Rm: np.ndarray,
    base: np.ndarray,
    z: np.ndarray | None,
    sigma: np.ndarray,
    norms: np.ndarray,
    zeta: np.ndarray,
    clipped: np.ndarray,
    *,
    simd: bool = True,
) -> np.ndarray:
    r"""Turn products :math:`x_i^\top w_r` into clipped residuals, in place; count the clips.

    The elementwise part of a DP-AMBSSGD batch (Algorithm 2 of Varshney, Thakurta & Jain
    2022, the per-example clip :math:`\min\{1, \zeta/\|g_i\|\}`) after the product
    ``Rm = X @ W``: :math:`v = (\mathrm{Rm} - \mathrm{base}) - z\sigma_r` (``z`` None:
    no second term), :math:`g = |v|\,\|x_i\|`, and where :math:`g > \zeta_r` the row is
    counted in ``clipped`` and :math:`v \leftarrow v\,(\zeta_r / g)`. The same operations in
    the same order as :func:`~dpreg.estimators.ambssgd_core.ambssgd_pass`'s numpy
    reference, so the same bits (``tests/unit/test_ambssgd_clip_residuals.py``).

    Parameters
    ----------
    Rm : ndarray, shape (D, k, R)
        C-contiguous products, overwritten with the clipped residuals.
    base, z : ndarray, shape (D, k)
        Noiseless responses and the unit noise (``y = base + sigma z``); ``z`` may be None.
    sigma : ndarray, shape (R,)
        Noise level of each run.
    norms : ndarray, shape (D, k)
        Row norms :math:`\|x_i\|`.
    zeta : ndarray, shape (D, R)
        Clip levels (``inf``: no clipping).
    clipped : ndarray, shape (D, R)
        Float counts, incremented in place.
    simd : bool, default True
        The runs in SIMD registers (:mod:`dpreg.estimators._ambssgd_clip_jit`, selects
        instead of branches); False: the scalar reference pass. The same bits.

    Returns
    -------
    ndarray
        ``Rm``.

    Examples
    --------
    >>> import numpy as np
    >>> Rm = np.array([[[3.0, 3.0]]]); c = np.zeros((1, 2))
    >>> clip_residuals(Rm, np.array([[1.0]]), np.array([[1.0]]), np.array([0.0, 1.0]),
    ...                np.array([[2.0]]), np.array([[1.0, 1.0]]), c).tolist(), c.tolist()
    ([[[0.5, 0.5]]], [[1.0, 1.0]])
    """
    if Rm.ndim != 3 or not Rm.flags.c_contiguous:
        raise ValueError("Rm must be a C-contiguous (D, k, R) array")
    has_z = z is not None
    args = (
        Rm, base, base if z is None else z, np.ascontiguousarray(sigma, dtype=np.float64),
        norms, np.ascontiguousarray(zeta, dtype=np.float64), clipped, has_z,
    )  # fmt: skip
    if simd:
        _clip_kernel_simd()(*args, np.empty(Rm.shape[2], dtype=np.int64))
    else:
        _clip_kernel()(*args)
    return Rm
