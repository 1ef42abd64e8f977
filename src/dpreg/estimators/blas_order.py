r"""Products :math:`A^\top B` formed as :math:`(B^\top A)^\top`: the same sums, a faster GEMM.

Three products of the Varshney et al. (2022) study (docs/varshney2022.md) have a tall
shared dimension and a narrow result: AdaSSP's :math:`X^\top Y` over a streamed block
(16,384 rows, two response columns), DP-AMBSSGD's clipped gradient :math:`X^\top R` over a
batch chunk (about 500-2,000 rows of each replicate, 4-35 runs) and the DP-SGD lanes'
:math:`X_b^\top r` (about 1,000 sampled rows, 20-64 lanes). numpy hands ``A.T @ B`` to
OpenBLAS's GEMM with the tall matrix transposed; asking for ``B.T @ A`` and reading its
transpose gives the kernel the same operands with the roles of the two outer dimensions
exchanged, which at these shapes packs less and ran 1.3-2x faster on the benchmark machine
(docs/scaling.md, "Varshney E1/E3, seventh pass").

**Bits.** Entry :math:`(i, j)` of either product is the sum over the shared dimension of
:math:`a_{ki} b_{kj}`; OpenBLAS's double-precision kernels (Haswell and SkylakeX, the
ones this machine's ``scipy-openblas`` 0.3.31 selects) accumulate each entry in one
register, in the order of k, within the same blocks of the shared dimension (their size
depends on k alone), so with one BLAS thread (the workflow's jobs run with one) the two
forms give the same bits. That is a property of the BLAS build, not a guarantee of numpy,
so the swap is made only on a BLAS listed in :data:`VERIFIED_BLAS`;
``tests/unit/test_blas_order.py`` checks it bit for bit at every shape the study's jobs
use, and the callers keep the plain product as their numpy reference path.
"""

from __future__ import annotations

from functools import cache

import numpy as np

__all__ = ["SWAP_MIN_WORK", "VERIFIED_BLAS", "at_b", "swap_pays", "swap_verified"]

VERIFIED_BLAS = frozenset({("openblas", "SkylakeX")})
"""(library, kernel architecture) pairs of numpy's BLAS on which the swapped form was
checked bit for bit at every shape the jobs use, with one BLAS thread as the workflow's jobs
run (``tests/unit/test_blas_order.py``). With any other BLAS, :func:`at_b` computes the
plain product, so a machine whose BLAS might order the sums differently keeps its own plain
product's bits. With several BLAS threads the two forms may split the work differently and
differ in the last bits (a library call with threads, not a workflow job)."""


@cache
def swap_verified() -> bool:
    """Whether numpy's BLAS in this process is one of :data:`VERIFIED_BLAS`.

    Read once per process from :func:`threadpoolctl.threadpool_info` (the library loaded
    from numpy's own folder, and the kernel architecture OpenBLAS chose at run time).

    Examples
    --------
    >>> isinstance(swap_verified(), bool)
    True
    """
    import os

    from threadpoolctl import threadpool_info

    numpy_dir = os.path.dirname(os.path.dirname(np.__file__))
    for info in threadpool_info():
        path = str(info.get("filepath", ""))
        if info.get("user_api") == "blas" and path.startswith(numpy_dir) and "numpy" in path:
            pair = (info.get("internal_api"), info.get("architecture"))
            return pair in VERIFIED_BLAS
    return False


SWAP_MIN_WORK = 1_000_000
"""Multiply-adds per matrix product from which the swapped form is used. Below it OpenBLAS
runs its small-matrix kernels and both forms cost the same (measured at the study's
shapes, docs/scaling.md); a performance choice only, both forms give the same bits."""


def swap_pays(rows: int, cols_a: int, cols_b: int, *, min_cols: int) -> bool:
    r"""Whether :func:`at_b` should swap for an :math:`A^\top B` of these sizes.

    ``rows`` is the shared dimension, ``cols_a`` and ``cols_b`` the columns of A and B;
    the swap is chosen when A has at least ``min_cols`` columns and the product at least
    :data:`SWAP_MIN_WORK` multiply-adds (the shapes where it measured faster).

    Examples
    --------
    >>> swap_pays(524, 200, 10, min_cols=50), swap_pays(2475, 20, 34, min_cols=50)
    (True, False)
    """
    return cols_a >= min_cols and rows * cols_a * cols_b >= SWAP_MIN_WORK


def at_b(A: np.ndarray, B: np.ndarray, *, swap: bool = True) -> np.ndarray:
    r""":math:`A^\top B` over the last two axes (stacked like ``np.matmul``).

    ``A`` (..., k, m), ``B`` (..., k, n) -> (..., m, n). ``swap=True`` computes
    ``(B^T A)^T`` (a transposed view of a C-contiguous product), ``False`` the plain
    ``A^T B``; the same bits with this machine's OpenBLAS (module docstring). The swap is
    made only where :func:`swap_verified` holds; elsewhere the plain product.

    Examples
    --------
    >>> import numpy as np
    >>> A = np.arange(6.0).reshape(3, 2)
    >>> B = np.ones((3, 1))
    >>> at_b(A, B).tolist(), bool(np.array_equal(at_b(A, B), A.T @ B))
    ([[6.0], [9.0]], True)
    """
    if swap and swap_verified():
        return np.swapaxes(np.matmul(np.swapaxes(B, -1, -2), A), -1, -2)
    return np.matmul(np.swapaxes(A, -1, -2), B)
