r"""The regime designs' projection onto the unit ball, in one compiled pass.

:func:`dpreg.data.regimes.load_regime_split` divides the rows by the public bound
:math:`C_X` and projects them onto the unit ball,
:math:`x \mapsto (x/C_X)/\max\{\|x/C_X\|, 1\}`. In numpy that is four passes over the
(n, d) rows, each with a fresh temporary (the division, the squares, the row sums, the
second division): at n = 10^4, d = 10 about 0.8 ms per draw, more than the normals'
compiled draw. :func:`project_rows` does it in place, row by row, with the same
floating-point operations in the same order (the division by :math:`C_X`, the squares
summed in numpy's pairwise order, the square root, the division by the larger of the
norm and 1), so the rows are bit for bit those of :func:`project_rows_reference`
(``tests/unit/test_regime_kernel.py``). numba is imported on first use (compilation is
cached on disk).
"""

from __future__ import annotations

import math
from functools import cache
from typing import Any

import numpy as np

__all__ = ["PROJECT_MAX_D", "project_rows", "project_rows_reference"]

#: widest row :func:`project_rows` sums in compiled code (numpy's unrolled pairwise block
#: covers d <= 128; wider rows are split recursively by numpy and go to the reference)
PROJECT_MAX_D = 128


@cache
def _project_kernel() -> Any:
    """Compile (or load from numba's cache) the projection pass."""
    import numba

    @numba.njit(cache=True, nogil=True)
    def project(X, bound):
        # numpy's add.reduce over a contiguous row of d <= 128 squares: a plain running
        # sum below 8 terms, else eight interleaved sums over the multiple-of-8 prefix,
        # combined pairwise, then the rest added in order (written here as well as in
        # dpreg.estimators.dpgd_kernel: numba's cache checks only this file)
        n, d = X.shape
        sq = np.empty(d)
        for i in range(n):
            for k in range(d):
                v = X[i, k] / bound
                X[i, k] = v
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
            norm = np.sqrt(res)
            scale = 1.0 if norm <= 1.0 else norm  # np.maximum(norm, 1.0), NaN kept
            for k in range(d):
                X[i, k] = X[i, k] / scale

    return project


def project_rows(X: np.ndarray, bound_X: float) -> np.ndarray:
    r"""Rows divided by ``bound_X`` and projected onto the unit ball, in place.

    Bit for bit :func:`project_rows_reference` (the same operations in the same order);
    an ``X`` that is not a C-contiguous float64 matrix of at most :data:`PROJECT_MAX_D`
    columns goes to the reference (and is not modified).

    Parameters
    ----------
    X : ndarray, shape (n, d)
        Overwritten with the result when it is C-contiguous float64.
    bound_X : float
        The public bound :math:`C_X > 0`.

    Returns
    -------
    ndarray, shape (n, d)
        ``X`` itself, or the reference's new array.

    Raises
    ------
    ValueError
        If ``bound_X`` is not a finite positive number.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[6.0, 8.0], [0.3, 0.4]])
    >>> project_rows(X, 2.0).tolist()  # norms 5 and 0.25: the first row is scaled to 1
    [[0.6, 0.8], [0.15, 0.2]]
    """
    bound_X = float(bound_X)
    if not (math.isfinite(bound_X) and bound_X > 0.0):
        raise ValueError(f"bound_X must be a finite number > 0; got {bound_X!r}")
    if not (
        isinstance(X, np.ndarray)
        and X.ndim == 2
        and X.dtype == np.float64
        and X.flags.c_contiguous
        and X.flags.writeable
        and X.shape[1] <= PROJECT_MAX_D
    ):
        return project_rows_reference(X, bound_X)
    _project_kernel()(X, bound_X)
    return X


def project_rows_reference(X: np.ndarray, bound_X: float) -> np.ndarray:
    """Numpy reference of :func:`project_rows` (a new array; ``X`` is not modified).

    Examples
    --------
    >>> import numpy as np
    >>> project_rows_reference(np.array([[6.0, 8.0]]), 2.0).tolist()
    [[0.6, 0.8]]
    """
    X = X / bound_X
    norms = np.linalg.norm(X, axis=1)
    return X / np.maximum(norms, 1.0)[:, None]
