r"""Cheap paths, with the same results, for the checks and errors of explicit factorizations.

:class:`~dpreg.estimators.ftrl_factorizations.MatrixFactorization` checks
:math:`BC = I` (Choquette-Choo et al. 2023, App. A.1: unbiased gradients) and reports the
prefix-sum error :math:`\|AB\|_F^2` of Eq. (3). At Table 3's horizon T = 2000 the dense
products behind both cost about 0.3-0.7 s each (TreeAgg and Full Honaker have m = 3,999
encoder rows), although the matrices are sparse, integer or triangular (issue 18,
docs/scaling.md, session 24). Two shortcuts, each with the reference's result:

* :func:`certified_identity` decides :math:`BC \approx I` from a cheaper product (sparse
  for a sparse encoder, by triangular blocks for lower-triangular factors) and a
  rigorous bound on how far any floating-point evaluation of :math:`BC`, the dense one
  included, can be from it; only when that bound cannot settle the decision is the
  dense product :math:`B @ C` formed, so the decision is always the reference's.
* :func:`exact_prefix_rows` returns :math:`AB` (:math:`A` the prefix-sum matrix) for an
  integer decoder (TreeAgg's entries are 0 and :math:`\pm1`) by running sums: every sum
  of small integers is exact in floating point, so the product equals ``A @ B`` bit for
  bit whatever the order of its additions.
"""

from __future__ import annotations

import numpy as np

from dpreg.privacy._integer_gram import _SPARSE_DENSITY, small_integer_matrix

__all__ = ["certified_identity", "exact_prefix_rows", "is_identity", "signed_pair_product"]

_U = 2.0**-53
"""Unit round-off of float64."""


def is_identity(P: np.ndarray, *, atol: float, rtol: float = 1e-5) -> bool:
    """``np.allclose(P, I, rtol, atol)`` for a square ``P`` it may overwrite (same decision).

    The same comparisons, ``|P_ij - I_ij| <= atol + rtol |I_ij|``, without ``isclose``'s
    T x T temporaries (at T = 2000 a few ms instead of ~0.2 s; tested against
    ``np.allclose``). NaN or infinite entries fail, as in ``np.allclose``.

    Examples
    --------
    >>> is_identity(np.eye(3) + 1e-9, atol=1e-8), is_identity(np.eye(3) + 1e-7, atol=1e-8)
    (True, False)
    """
    diag = np.diagonal(P) - 1.0
    if not bool(np.all(np.abs(diag) <= atol + rtol * 1.0)):
        return False
    np.fill_diagonal(P, 0.0)
    return bool(np.abs(P).max(initial=0.0) <= atol)


def exact_prefix_rows(B: np.ndarray) -> np.ndarray | None:
    r"""Return ``prefix_matrix(T) @ B`` bit for bit for an integer ``B`` (T, m), else None.

    Row :math:`t` of :math:`AB` is :math:`\sum_{s\le t}B_s`; with integer entries of
    magnitude at most :math:`2^{52}/T` every such sum is an exact integer, in the order
    of the running sum here as in any order of the BLAS product, so the values are equal;
    the result is C-contiguous of shape (T, m), as the product's. Signs of zero may
    differ (only squares are used). ``None`` for any other ``B`` (then the caller forms
    the product).

    Examples
    --------
    >>> B = np.array([[1.0, 0.0], [-1.0, 1.0], [0.0, 1.0]])
    >>> exact_prefix_rows(B).tolist()
    [[1.0, 0.0], [0.0, 1.0], [0.0, 2.0]]
    >>> exact_prefix_rows(B / 3) is None
    True
    """
    B = np.asarray(B)
    if B.ndim != 2 or not small_integer_matrix(B, B.shape[0]):
        return None
    G = np.empty(B.shape, dtype=np.float64)
    if B.shape[0]:
        G[0] = B[0]
    for i in range(1, B.shape[0]):  # contiguous rows (numpy's cumsum(axis=0) is strided)
        np.add(G[i - 1], B[i], out=G[i])
    return G


def signed_pair_product(A: np.ndarray, B: np.ndarray) -> np.ndarray | None:
    r"""Return ``A @ B`` when each column of ``B`` has at most two non-zeros, all :math:`\pm1`.

    TreeAgg's decoder is such a matrix (a node enters the dyadic decomposition of the
    prefix :math:`[0, t]` at one step and leaves it at one later step), so entry
    :math:`(i, j)` of :math:`AB` is :math:`s_1A_{ik_1} + s_2A_{ik_2}`: products by
    :math:`\pm1` and by 0 are exact and adding an exact zero changes nothing but the sign
    of a zero, so any order of the product's sums gives the single rounding of this
    two-term sum. The values equal the BLAS product's (zeros possibly of the other sign;
    the callers square them), C-contiguous (T, m) as the product. ``None`` if ``B`` is
    not of that form or ``A`` is not finite (then the caller forms ``A @ B``).

    Examples
    --------
    >>> A = np.array([[1.0, 2.0, 4.0], [0.5, 0.25, 3.0]])
    >>> B = np.array([[1.0, 0.0], [-1.0, 1.0], [0.0, 1.0]])
    >>> signed_pair_product(A, B).tolist() == (A @ B).tolist()
    True
    """
    A = np.asarray(A)
    B = np.asarray(B)
    if A.dtype != np.float64 or B.dtype != np.float64 or A.ndim != 2 or B.ndim != 2:
        return None
    if A.shape[1] != B.shape[0] or B.size == 0:
        return None
    cols, rows = np.nonzero(B.T)  # sorted by column, then row
    counts = np.bincount(cols, minlength=B.shape[1])
    if counts.max(initial=0) > 2 or not np.all(np.abs(B[rows, cols]) == 1.0):
        return None
    if not np.all(np.isfinite(A)):
        return None
    first = np.zeros(B.shape[1], dtype=np.intp)  # first non-zero's place in (cols, rows)
    np.cumsum(counts[:-1], out=first[1:])
    k1 = np.zeros(B.shape[1], dtype=np.intp)
    k2 = np.zeros(B.shape[1], dtype=np.intp)
    s1 = np.zeros(B.shape[1])
    s2 = np.zeros(B.shape[1])
    one = counts >= 1
    two = counts == 2
    k1[one] = rows[first[one]]
    s1[one] = B[k1[one], np.flatnonzero(one)]
    k2[two] = rows[first[two] + 1]
    s2[two] = B[k2[two], np.flatnonzero(two)]
    G = np.empty((A.shape[0], B.shape[1]))  # C order, as the product (fixes np.sum's order)
    np.multiply(A[:, k1], s1, out=G)
    G += A[:, k2] * s2
    return G


def _is_lower(M: np.ndarray) -> bool:
    return M.shape[0] == M.shape[1] and not np.any(np.triu(M, 1))


def _cheap_product(B: np.ndarray, C: np.ndarray) -> np.ndarray | None:
    """``B @ C`` by a cheaper route (another order of the sums), or None if none applies.

    A sparse encoder (TreeAgg, Full Honaker: about log2(T) non-zeros per column) by
    scipy's sparse product; square lower-triangular ``B`` and ``C`` by row blocks that
    skip the zero blocks (about a third of the dense product's flops; the entries above
    the diagonal are exactly 0 in both).
    """
    T = C.shape[1]
    if np.count_nonzero(C) <= _SPARSE_DENSITY * C.size:
        from scipy import sparse  # lazy: job start-up (docs/scaling.md)

        Cs = sparse.csr_matrix(C)
        if np.count_nonzero(B) <= _SPARSE_DENSITY * B.size:
            return (sparse.csr_matrix(B) @ Cs).toarray()
        return np.ascontiguousarray(B @ Cs)
    if B.shape == (T, T) and C.shape == (T, T) and _is_lower(B) and _is_lower(C):
        P = np.zeros((T, T))
        block = 256
        for i0 in range(0, T, block):
            i1 = min(i0 + block, T)
            P[i0:i1, :i1] = B[i0:i1, :i1] @ C[:i1, :i1]
        return P
    return None


def certified_identity(B: np.ndarray, C: np.ndarray, *, atol: float, rtol: float = 1e-5) -> bool:
    r"""``is_identity(B @ C, atol=atol, rtol=rtol)`` (same decision), mostly without ``B @ C``.

    Any floating-point evaluation of :math:`P = BC` with inner dimension :math:`m`, in any
    order of the sums and with or without fused multiply-adds, is within
    :math:`\gamma_m(|B||C|)_{ij} \le \gamma_m\|B_{i,:}\|_2\|C_{:,j}\|_2` of the exact
    product, :math:`\gamma_m = mu/(1 - mu)` (Higham 2002, Accuracy and Stability of
    Numerical Algorithms, Eq. 3.13; Cauchy-Schwarz). So the dense product the reference
    forms and the cheaper one formed here (:func:`_cheap_product`) differ by at most
    :math:`2\gamma_m\|B_{i,:}\|\|C_{:,j}\|` per entry. When every entry of the cheaper
    product plus twice that margin is within half the tolerance of the identity, the
    reference passes too (the factor two of slack covers the rounding of this test's
    own arithmetic, and :math:`P_{ii} - 1` is exact near 1), and ``True`` is returned
    without the dense product. Otherwise (non-finite entries, no cheaper route, or a
    margin that does not settle it) the result is the reference's, computed.

    Examples
    --------
    >>> C = np.array([[1.0, 0.0], [1.0, 1.0]])
    >>> B = np.array([[1.0, 0.0], [-1.0, 1.0]])
    >>> certified_identity(B, C, atol=1e-8), certified_identity(B, 2 * C, atol=1e-8)
    (True, False)
    """
    B = np.asarray(B, dtype=np.float64)
    C = np.asarray(C, dtype=np.float64)
    P = None
    if np.all(np.isfinite(B)) and np.all(np.isfinite(C)):
        P = _cheap_product(B, C)
    if P is not None:
        m = C.shape[0]
        gamma = (m + 2) * _U / (1.0 - (m + 2) * _U)
        rows = np.sqrt(np.einsum("ij,ij->i", B, B))
        cols = np.sqrt(np.einsum("ij,ij->j", C, C))
        margin = np.multiply.outer(4.0 * gamma * rows, cols)  # 2 products, 2x for rounding
        np.fill_diagonal(P, np.diagonal(P) - 1.0)
        np.abs(P, out=P)
        P += margin
        diag_ok = bool(np.all(np.diagonal(P) <= 0.5 * (atol + rtol)))
        np.fill_diagonal(P, 0.0)
        if diag_ok and bool(P.max(initial=0.0) <= 0.5 * atol):
            return True
    return is_identity(B @ C, atol=atol, rtol=rtol)
