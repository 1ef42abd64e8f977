r"""Compiled clipping pass of :meth:`~dpreg.estimators.adassp_stream.AdasspStatistics.add_clipped`.

The numpy reference clips a block of rows to the public bounds in about eight passes over
the block (the scaled copy, the response clip, the clipped counts, then
:meth:`~dpreg.estimators.adassp_stream.AdasspStatistics.add`'s finiteness and bound
checks, and ``np.linalg.norm``'s product and reduction); at d = 200 those passes cost
more than the :math:`X^\top X` they feed (docs/scaling.md). Here one compiled pass does
them all, with the reference's operations on the same operands in the same order (the
row norms summed in numpy's pairwise order, the factor
:math:`\min\{1, C_X/\|x_i\|\}`, the products, the clip of each response column), so the
clipped block is bit-identical (``tests/unit/test_adassp_stream.py``). numba is imported
on first use (:mod:`dpreg.estimators._adassp_stream_jit`; compilation cached on disk).
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np

__all__ = ["clip_block"]


@cache
def _kernel() -> Any:
    """Return the clipping pass (compiled or loaded from numba's cache on first use)."""
    from dpreg.estimators import _adassp_stream_jit

    return _adassp_stream_jit.clip_rows


def clip_block(
    X: np.ndarray,
    Y: np.ndarray,
    bound_x: float,
    bound_y: np.ndarray,
    clipped: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    r"""Clip rows ``X`` (m, d) to ``bound_x`` and responses ``Y`` (m, k) to ``bound_y`` (k,).

    ``clipped`` (k,) float counts are incremented for each row whose x or column-j
    response was clipped. Returns ``(Xc, Yc, norms, finite)``: the clipped C-contiguous
    copies, the row norms (the bits of ``np.linalg.norm(X, axis=1)``: numpy's pairwise
    summation order) and whether every norm and response was finite. No validation
    (float64 arrays, ``Y`` 2-d).

    Examples
    --------
    >>> import numpy as np
    >>> X, Y, c = np.array([[3.0, 4.0], [0.3, 0.4]]), np.array([[2.0], [-0.5]]), np.zeros(1)
    >>> Xc, Yc, norms, ok = clip_block(X, Y, 1.0, np.ones(1), c)
    >>> Xc.tolist(), Yc.tolist(), norms.tolist(), c.tolist(), ok
    ([[0.6000000000000001, 0.8], [0.3, 0.4]], [[1.0], [-0.5]], [5.0, 0.5], [1.0], True)
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    Y = np.ascontiguousarray(Y, dtype=np.float64)
    Xc = np.empty_like(X)
    Yc = np.empty_like(Y)
    norms = np.empty(X.shape[0])
    b_y = np.ascontiguousarray(bound_y, dtype=np.float64)
    finite = _kernel()(X, Y, float(bound_x), b_y, Xc, Yc, norms, clipped)
    return Xc, Yc, norms, bool(finite)
