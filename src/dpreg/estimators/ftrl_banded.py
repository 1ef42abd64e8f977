r"""Banded factorizations for ``min_sep`` participation at large ``T`` (an upper bound on ME).

Under ``min_sep`` participation (at most ``k`` participations, pairwise at least ``b``
steps apart; deviation 15 of docs/choquettechoo2023.md) the patterns overlap, so the
block structure of :func:`~dpreg.estimators.ftrl_me.solve_me` does not apply and the
exact ME SDP stays limited to small ``T``. This module optimises over a smaller class
in which the sensitivity is exactly computable for any ``T``: lower-triangular encoders
:math:`C` with ``bands`` :math:`= p \le b` bands (:math:`C_{ij} = 0` unless
:math:`0 \le i - j < p`), the banded class of Choquette-Choo et al.'s later "amplified
banded matrix factorization" work (its idea only; no code from it).

**Sensitivity (exact).** Column :math:`j` of a ``p``-banded :math:`C` is supported on
rows :math:`j, \dots, j+p-1`; two steps of one example are at least :math:`b \ge p`
apart, so their columns have disjoint supports and
:math:`\|\sum_{j\in\pi}C_{:,j}g_j^\top\|_F^2 = \sum_{j\in\pi}\|C_{:,j}\|^2\|g_j\|^2`:
the squared sensitivity is the largest :math:`\sum_{j\in\pi}\|C_{:,j}\|^2` over the
``min_sep`` patterns :math:`\pi` (:func:`banded_sensitivity_sq`, a dynamic programme in
O(kT); tested against the brute force
:func:`~dpreg.privacy.correlated.multi_participation_sensitivity_sq`). With unit columns
it is :math:`\min(k, \lfloor (T-1)/b\rfloor + 1)`.

**Optimisation.** :func:`solve_banded_me` minimises :math:`\|AC^{-1}\|_F^2` over the
band entries with the columns normalised to unit norm (the error only falls when a
column is scaled up, so unit norms are optimal under the constraint
:math:`\|C_{:,j}\| \le 1`), by L-BFGS with the exact gradient
:math:`\nabla_C = -2B^\top A^\top A B B^\top` (:math:`B = C^{-1}`) restricted to the band
and projected through the normalisation. ``toeplitz=True`` restricts further to banded
Toeplitz :math:`C` (``p`` parameters, prefix-sum workload, O(T p + T log T) per
evaluation) and is the default warm start of the general solver.

Whatever the solver's convergence, the result is a *feasible* factorization with
exactly computed sensitivity, so its error is an **upper bound** on the optimum of the
exact ``min_sep`` problem (the exact ME), not the ME itself. A lower bound comes from
the ``fixed_epoch`` problem: its patterns are ``min_sep`` patterns, so the certified
dual bound of :func:`~dpreg.estimators.ftrl_me.solve_me` with ``k`` epochs of ``b``
steps (``T = k b``) bounds the ``min_sep`` optimum from below.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from dpreg.estimators.ftrl_factorizations import MatrixFactorization, _check_horizon

__all__ = [
    "BandedSolution",
    "banded_sensitivity_sq",
    "max_separated_participations",
    "solve_banded_me",
]


def _positive_int(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise ValueError(f"{name} must be a positive integer; got {value!r}")
    return int(value)


def max_separated_participations(T: int, k: int, b: int) -> int:
    """Largest number of steps of one example in ``T`` steps: ``min(k, (T-1)//b + 1)``.

    Examples
    --------
    >>> max_separated_participations(2000, 20, 100), max_separated_participations(10, 5, 4)
    (20, 3)
    """
    T = _check_horizon(T)
    return min(_positive_int(k, "k"), (T - 1) // _positive_int(b, "b") + 1)


def banded_sensitivity_sq(encoder: np.ndarray, k: int, b: int) -> float:
    r"""Exact ``min_sep`` squared sensitivity of a banded lower-triangular encoder.

    Requires :math:`C_{ij} = 0` unless :math:`0 \le i - j < b` (at most ``b`` bands);
    then the columns of any two participations have disjoint supports and the squared
    sensitivity is :math:`\max_\pi\sum_{j\in\pi}\|C_{:,j}\|^2` over sets of at most
    ``k`` steps pairwise at least ``b`` apart (module docstring), found by the dynamic
    programme :math:`V_m(j) = \max(V_m(j+1),\ \|C_{:,j}\|^2 + V_{m-1}(j+b))`.

    Parameters
    ----------
    encoder : ndarray (T, T)
    k, b : int
        Maximum participations and minimum separation.

    Examples
    --------
    >>> C = np.eye(6) + np.eye(6, k=-1)  # 2 bands, columns of norm^2 2 (last: 1)
    >>> banded_sensitivity_sq(C, 3, 2)
    6.0
    """
    C = np.asarray(encoder, dtype=np.float64)
    if C.ndim != 2 or C.shape[0] != C.shape[1] or C.size == 0 or not np.all(np.isfinite(C)):
        raise ValueError("encoder must be a finite square (T, T) matrix")
    T = C.shape[0]
    k, b = _positive_int(k, "k"), _positive_int(b, "b")
    lag = np.subtract.outer(np.arange(T), np.arange(T))
    if np.any(C[(lag < 0) | (lag >= b)] != 0):
        raise ValueError(
            f"encoder must be lower triangular with at most b = {b} bands (C[i, j] = 0"
            " unless 0 <= i - j < b): otherwise participations can share rows"
        )
    norms = np.sum(C**2, axis=0)
    value = np.zeros(T + b)  # V_{m-1}(j), j >= T: 0
    for _ in range(k):
        new = np.zeros(T + b)
        for j in range(T - 1, -1, -1):
            new[j] = max(new[j + 1], norms[j] + value[j + b])
        value = new
    return float(value[0])


@dataclass(frozen=True)
class BandedSolution:
    r"""Result of :func:`solve_banded_me`.

    Attributes
    ----------
    encoder : ndarray (T, T)
        Banded lower-triangular :math:`C` with unit columns.
    objective : float
        :math:`\|AC^{-1}\|_F^2`, recomputed from ``encoder``.
    sensitivity_sq : float
        Exact ``min_sep`` squared sensitivity (:func:`banded_sensitivity_sq`).
    bands, participations, separation, iterations : int
    toeplitz : bool
    converged : bool
        Whether L-BFGS reported convergence (irrelevant to validity: any banded point
        is feasible, so ``total_error`` is an upper bound on the ``min_sep`` optimum).
    seconds : float
    warm_start_error : float
        Total error of the banded Toeplitz warm start of the general solver (NaN when
        none was run).
    decoder : ndarray (T, T) or None
        :math:`C^{-1}` as :func:`solve_banded_me` computed it for ``objective``: the
        triangular solve :meth:`factorization` would make, reused there (issue 18).
    """

    encoder: np.ndarray
    objective: float
    sensitivity_sq: float
    bands: int
    participations: int
    separation: int
    iterations: int
    toeplitz: bool
    converged: bool
    seconds: float
    warm_start_error: float = float("nan")
    decoder: np.ndarray | None = field(default=None, repr=False, compare=False)

    @property
    def total_error(self) -> float:
        r""":math:`\gamma^2\|AC^{-1}\|_F^2`: an upper bound on the ``min_sep`` optimum."""
        return self.sensitivity_sq * self.objective

    def factorization(self) -> MatrixFactorization:
        """Return the factorization ``(B, C)`` with ``B = C^-1`` (not anytime)."""
        from scipy.linalg import solve_triangular  # lazy: job start-up (docs/scaling.md)

        T = self.encoder.shape[0]
        if self.decoder is not None:
            B = self.decoder.copy(order="K")  # the same layout as the solve's
        else:
            B = solve_triangular(self.encoder, np.eye(T), lower=True)
        tag = "toeplitz_" if self.toeplitz else ""
        return MatrixFactorization(f"banded_{tag}p{self.bands}", self.encoder, B, False)


def _band_index(T: int, p: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows, columns and validity mask of the band entries V[j, l] = C[j + l, j]."""
    j = np.arange(T)[:, None]
    lag = np.arange(p)[None, :]
    rows = j + lag
    mask = rows < T
    return np.where(mask, rows, 0), np.broadcast_to(j, (T, p)), mask


class _Workspace:
    r"""The (T, T) arrays of one general banded solve, kept across its evaluations.

    Each L-BFGS evaluation at T = 2000 used to allocate five fresh 32 MB arrays
    (:math:`C`, :math:`B`, :math:`G`, :math:`G^{\circ 2}`, :math:`Z^\top`); glibc hands
    them back to the kernel and faults them in again at every evaluation, which cost
    about 0.04 s of system time per evaluation, a third of one (issue 18,
    docs/scaling.md). Writing into these arrays instead gives the same numbers: every
    entry an evaluation reads is written by it first, or is a zero that no evaluation
    writes (``C`` outside the band, ``B`` above its diagonal blocks).
    """

    __slots__ = ("B", "C", "G", "Z")

    def __init__(self, T: int) -> None:
        self.C, self.B, self.G, self.Z = (np.zeros((T, T)) for _ in range(4))


def _assemble(
    V: np.ndarray, T: int, p: int, index, out: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Return the encoder ``C`` (unit columns) and its band ``Cb`` from the entries ``V``.

    ``out``: a (T, T) array that is zero outside the band of ``index`` (e.g. the ``C``
    of an earlier call with the same ``index``); only the band entries are written, so
    the result equals the fresh one (:class:`_Workspace`).
    """
    rows, cols, mask = index
    V = np.where(mask, V.reshape(T, p), 0.0)
    norms = np.sqrt(np.sum(V**2, axis=1))
    Cb = V / norms[:, None]
    C = np.zeros((T, T)) if out is None else out
    C[rows[mask], cols[mask]] = Cb[mask]
    return C, Cb


def _prefix_rows(B: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    r"""Return ``np.cumsum(B, axis=0)`` (:math:`AB`, A the prefix sum) bit for bit, row by row.

    numpy accumulates along axis 0 of a C-contiguous array with the strided axis as the
    inner loop (about 50 ms at T = 2000); the same additions
    :math:`G_i = G_{i-1} + B_i`, one contiguous row at a time, take about 8 ms (issue 18,
    docs/scaling.md; equal bit for bit, ``tests/unit/test_ftrl_banded.py``). ``out``: an
    array of ``B``'s shape to write into (every entry is written).
    """
    G = np.empty_like(B) if out is None else out
    if B.shape[0]:
        G[0] = B[0]
    for i in range(1, B.shape[0]):
        np.add(G[i - 1], B[i], out=G[i])
    return G


def _lower_inverse(C: np.ndarray) -> np.ndarray:
    """Inverse of a nonsingular lower-triangular matrix (LAPACK ``trtri``: T^3/3 flops)."""
    from scipy.linalg.lapack import dtrtri  # lazy: job start-up (docs/scaling.md)

    B, info = dtrtri(C, lower=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"singular encoder (trtri info {info})")
    return B


def _banded_lower_inverse(
    C: np.ndarray, p: int, block: int = 128, out: np.ndarray | None = None
) -> np.ndarray:
    r"""Inverse of a nonsingular lower-triangular ``C`` with ``p`` bands, by row blocks.

    :math:`CB = I` row block :math:`I` by row block: :math:`C_{II}B_{I,<I} =
    -C_{I,J}B_{J,<I}` with :math:`J` the at most ``p - 1`` rows above :math:`I` that
    the band reaches, and :math:`B_{II} = C_{II}^{-1}`: one product of
    :math:`(	ext{block} 	imes p)(p 	imes T)` and one triangular solve per block,
    about :math:`(p + 	ext{block})T^2` flops in all, instead of ``trtri``'s
    :math:`T^3/3` (:func:`_lower_inverse`, the reference; equal to round-off, tested).
    ``out``: a (T, T) array that is zero above the diagonal blocks (e.g. the result of an
    earlier call with the same ``T`` and ``block``, which writes the same entries); the
    result equals the fresh one (:class:`_Workspace`).
    """
    T = C.shape[0]
    if not np.all(np.diagonal(C) != 0):
        raise np.linalg.LinAlgError("singular encoder (zero on the diagonal)")
    B = np.zeros((T, T)) if out is None else out
    for I0 in range(0, T, block):
        I1 = min(I0 + block, T)
        lo = max(0, I0 - p + 1)
        CII = C[I0:I1, I0:I1]
        B[I0:I1, I0:I1] = _lower_inverse(np.asfortranarray(CII))
        if I0:
            R = C[I0:I1, lo:I0] @ B[lo:I0, :I0]
            B[I0:I1, :I0] = -B[I0:I1, I0:I1] @ R
    return B


def _band_of_product(M: np.ndarray, B: np.ndarray, p: int, block: int = 128) -> np.ndarray:
    r"""Return :math:`P[j, l] = (MB^\top)_{j+l,\,j}` for ``l < p`` (0 where ``j + l >= T``).

    ``B`` is lower triangular, so :math:`(MB^\top)_{j+l,j} = \sum_{m\le j}M_{j+l,m}B_{j,m}`:
    each block of ``block`` columns ``j`` is one matrix product of the rows
    :math:`j + l` and columns :math:`m \le j` it needs, about :math:`(\text{block} + p)
    T^2` flops in all, instead of ``p`` passes over two T x T matrices
    (:func:`_band_of_product_reference`, the per-lag loop, tested equal).
    """
    T = B.shape[0]
    out = np.zeros((T, p))
    for J in range(0, T, block):
        J2 = min(J + block, T)
        R2 = min(J2 + p - 1, T)
        P = M[J:R2, :J2] @ B[J:J2, :J2].T  # rows J..R2-1, columns J..J2-1
        jj = np.arange(J2 - J)[:, None]
        rr = jj + np.arange(p)[None, :]
        valid = rr < R2 - J
        out[J:J2][valid] = P[rr[valid], np.broadcast_to(jj, rr.shape)[valid]]
    return out


def _band_of_gram_product(G: np.ndarray, B: np.ndarray, p: int, block: int = 128) -> np.ndarray:
    r"""Return :func:`_band_of_product` of :math:`M = G^\top G`, not forming :math:`M`.

    ``G`` and ``B`` lower triangular (the banded solver's :math:`G = AB` for a
    lower-triangular workload, e.g. the prefix sum).
    :math:`(G^\top GB^\top)_{j+l,j} = \sum_{m \ge j+l} G_{m,j+l}Z_{m,j}`, :math:`Z =
    GB^\top`, needs :math:`Z_{m,j}` for :math:`m \ge j` only, and there
    :math:`Z_{m,j} = \sum_{k \le j}G_{m,k}B_{j,k}`: per block of ``block`` columns
    ``j`` one product for those rows of :math:`Z` (about :math:`T^3/3` flops in all) and
    one for the band, about :math:`(\text{block} + p)T^2`, instead of the
    :math:`T^3` of :math:`G^\top G` (a symmetric product) plus the band. Sums in another
    order: equal to :func:`_band_of_product` to round-off (tested).
    """
    T = B.shape[0]
    out = np.zeros((T, p))
    for J in range(0, T, block):
        J2 = min(J + block, T)
        R2 = min(J2 + p - 1, T)
        Z = G[J:, :J2] @ B[J:J2, :J2].T  # Z[m, j] for rows m >= J, columns J..J2-1
        P = G[J:, J:R2].T @ Z  # rows J..R2-1 of G^T Z (G[m, r] = 0 for m < r)
        jj = np.arange(J2 - J)[:, None]
        rr = jj + np.arange(p)[None, :]
        valid = rr < R2 - J
        out[J:J2][valid] = P[rr[valid], np.broadcast_to(jj, rr.shape)[valid]]
    return out


def _band_of_gradient(
    G: np.ndarray, C: np.ndarray, p: int, block: int = 64, work: np.ndarray | None = None
) -> np.ndarray:
    r"""Return :func:`_band_of_gram_product` of ``(G, C^-1, p)`` using the band of ``C``.

    :math:`Z^\top = BG^\top = C^{-1}G^\top` solves :math:`CZ^\top = G^\top` by row
    blocks (:math:`C` has ``p`` bands: each block needs the at most ``p - 1`` rows above
    it), and only its columns :math:`m \ge j` are needed (:math:`G` lower triangular):
    about :math:`(2p + \text{block})T^2/2` flops instead of the :math:`T^3/3` of
    :math:`GB^\top`; the band then as in :func:`_band_of_gram_product`. ``G`` and ``C``
    lower triangular, ``C`` with ``p`` bands. Equal to round-off (tested). ``work``: any
    (T, T) float64 array to hold :math:`Z^\top` (every entry read is written first, so
    its content does not matter; :class:`_Workspace`).
    """
    T = C.shape[0]
    out = np.zeros((T, p))
    Zt = np.zeros((T, T)) if work is None else work
    for J in range(0, T, block):
        J2 = min(J + block, T)
        lo = max(0, J - p + 1)
        R = G[J:, J:J2].T  # G^T rows J..J2-1, columns m >= J
        if J:
            R = R - C[J:J2, lo:J] @ Zt[lo:J, J:]
        Zt[J:J2, J:] = _lower_inverse(np.asfortranarray(C[J:J2, J:J2])) @ R
        R2 = min(J2 + p - 1, T)
        P = Zt[J:J2, J:] @ G[J:, J:R2]  # P[jj, r] = sum_m Z[m, J + jj] G[m, J + r]
        jj = np.arange(J2 - J)[:, None]
        rr = jj + np.arange(p)[None, :]
        valid = rr < R2 - J
        out[J:J2][valid] = P[np.broadcast_to(jj, rr.shape)[valid], rr[valid]]
    return out


def _band_of_product_reference(M: np.ndarray, B: np.ndarray, p: int) -> np.ndarray:
    """Return the same band by the per-lag loop :func:`_band_of_product` replaces (tests)."""
    T = B.shape[0]
    out = np.zeros((T, p))
    for lag in range(min(p, T)):
        out[: T - lag, lag] = np.einsum("ij,ij->i", M[lag:], B[: T - lag])
    return out


_WORKSPACE = True
"""Whether :func:`solve_banded_me` evaluates into a :class:`_Workspace` (``False``: fresh
arrays at every evaluation, the reference; the same numbers, tested)."""


def _banded_objective(
    x: np.ndarray,
    T: int,
    p: int,
    index,
    A: np.ndarray | None,
    lower: bool,
    work: _Workspace | None = None,
) -> tuple[float, np.ndarray]:
    r"""Return :math:`\|AC^{-1}\|_F^2` at the band entries ``x`` and its gradient in them.

    ``A=None``: the prefix sum. ``lower``: ``A`` is lower triangular (then
    :math:`G = AB` is). ``work``: a :class:`_Workspace` of this ``T`` to evaluate into
    (the numbers of ``work=None``, bit for bit: ``tests/unit/test_ftrl_banded.py``).
    """
    mask = index[2]
    if work is None:  # the reference: fresh arrays
        C, Cb = _assemble(x, T, p, index)
        B = _banded_lower_inverse(C, p)
        G = _prefix_rows(B) if A is None else A @ B
        f = float(np.sum(G**2))
        Zt = None
    else:
        C, Cb = _assemble(x, T, p, index, out=work.C)
        B = _banded_lower_inverse(C, p, out=work.B)
        G = _prefix_rows(B, out=work.G) if A is None else A @ B
        f = float(np.sum(np.square(G, out=work.Z)))  # G**2 is np.square(G)
        Zt = work.Z  # _band_of_gradient writes every entry of it that it reads
    if lower:  # G = A B lower triangular
        gb = -2.0 * _band_of_gradient(G, C, p, work=Zt)
    else:
        gb = -2.0 * _band_of_product(G.T @ G, B, p)  # M = B^T A^T A B = G^T G
    V = np.where(mask, x.reshape(T, p), 0.0)
    n = np.sqrt(np.sum(V**2, axis=1))
    gv = (gb - Cb * np.sum(Cb * gb, axis=1, keepdims=True)) / n[:, None]
    return f, np.where(mask, gv, 0.0).ravel()


def _toeplitz_prefix_objective(c: np.ndarray, T: int) -> tuple[float, np.ndarray]:
    r"""Return the prefix-sum error of a banded Toeplitz encoder and its gradient.

    ``c`` is the first column; :math:`\beta = c^{-1}` as power series and
    :math:`d\beta = -\beta * dc * \beta`.
    """
    p = len(c)
    beta = np.zeros(T)
    beta[0] = 1.0 / c[0]
    for t in range(1, T):  # forward substitution, O(T p)
        m = min(t, p - 1)
        beta[t] = -np.dot(c[1 : m + 1], beta[t - 1 :: -1][:m]) / c[0]
    P = np.cumsum(beta)
    w = T - np.arange(T)
    f = float(np.sum(w * P**2))
    g = 2.0 * np.cumsum((w * P)[::-1])[::-1]  # df / d beta_s
    bb = np.convolve(beta, beta)[:T]
    grad = -np.array([np.dot(g[m:], bb[: T - m]) for m in range(p)])
    return f, grad


def solve_banded_me(
    T: int,
    k: int,
    b: int,
    *,
    bands: int | None = None,
    workload: np.ndarray | None = None,
    toeplitz: bool = False,
    max_iter: int = 500,
    tol: float = 1e-10,
    init: np.ndarray | None = None,
) -> BandedSolution:
    r"""Best banded factorization found for ``k`` participations at least ``b`` apart.

    Minimises :math:`\|AC^{-1}\|_F^2` over lower-triangular :math:`C` with ``bands``
    :math:`p \le b` bands and unit columns (module docstring); the total error
    :math:`\gamma^2\|AC^{-1}\|_F^2` with the exact ``min_sep`` sensitivity is an upper
    bound on the exact ME optimum under ``min_sep`` participation.

    Parameters
    ----------
    T : int
    k, b : int
        Maximum participations and minimum separation (``min_sep``).
    bands : int, optional
        :math:`p`, at most ``b`` (default ``b``).
    workload : ndarray (T, T), optional
        :math:`A`; default the prefix-sum matrix (Eq. 3). ``toeplitz=True`` needs the
        default.
    toeplitz : bool
        Restrict to banded Toeplitz :math:`C` (``p`` parameters).
    max_iter : int
        L-BFGS iterations (the Toeplitz warm start of the general solver runs at least
        500).
    tol : float
        L-BFGS relative tolerance on the objective (``ftol``).
    init : ndarray, optional
        Starting first column (Toeplitz) or band entries ``(T, p)``; default: the
        banded Toeplitz optimum for the general solver (prefix-sum workload), else the
        truncated encoder of Optimal CC, :math:`c_t = \binom{2t}{t}4^{-t}`.

    Returns
    -------
    BandedSolution

    Examples
    --------
    >>> sol = solve_banded_me(16, 2, 8, bands=4)
    >>> round(sol.sensitivity_sq, 9), bool(sol.encoder[5, 0] == 0.0)
    (2.0, True)
    """
    from scipy.linalg import solve_triangular  # lazy: job start-up (docs/scaling.md)
    from scipy.optimize import minimize  # lazy: job start-up (docs/scaling.md)

    T = _check_horizon(T, 4096)
    k, b = _positive_int(k, "k"), _positive_int(b, "b")
    p = b if bands is None else _positive_int(bands, "bands")
    if p > b:
        raise ValueError(
            f"bands (= {p}) must be at most b (= {b}): the sensitivity is exact only then"
        )
    p = min(p, T)
    max_iter = _positive_int(max_iter, "max_iter")
    if not (isinstance(tol, float | int) and not isinstance(tol, bool) and 0 < tol < 1):
        raise ValueError(f"tol must be in (0, 1); got {tol!r}")
    if workload is not None:
        A = np.asarray(workload, dtype=np.float64)
        if A.shape != (T, T) or not np.all(np.isfinite(A)):
            raise ValueError(f"workload must be a finite ({T}, {T}) matrix")
        if toeplitz:
            raise ValueError("toeplitz=True supports the prefix-sum workload only")
    else:
        A = None
    start = time.perf_counter()
    warm = float("nan")
    k_eff = max_separated_participations(T, k, b)
    t = np.arange(p)
    # Optimal CC's encoder binom(2t, t) 4^-t, truncated: a decent start
    cc = np.exp(np.cumsum(np.r_[0.0, np.log((2 * t[1:] - 1) / (2 * t[1:]))]))
    if toeplitz:
        c0 = cc if init is None else np.asarray(init, dtype=np.float64).reshape(p)

        def fun_t(x: np.ndarray) -> tuple[float, np.ndarray]:
            n = np.linalg.norm(x)
            c = x / n
            f, g = _toeplitz_prefix_objective(c, T)
            return f, (g - c * np.dot(c, g)) / n

        res = minimize(
            fun_t,
            c0,
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": max_iter, "ftol": tol, "gtol": 0.0},
        )
        c = res.x / np.linalg.norm(res.x)
        C = np.zeros((T, T))
        for lag in range(p):
            C += np.diag(np.full(T - lag, c[lag]), -lag)
        iterations, converged = int(res.nit), bool(res.success)
    else:
        index = _band_index(T, p)
        rows, cols, mask = index
        if init is None:
            if A is None:
                # p parameters, O(T p) per evaluation: run it to convergence
                start_sol = solve_banded_me(
                    T, k, b, bands=p, toeplitz=True, max_iter=max(max_iter, 500), tol=tol
                )
                V0 = np.broadcast_to(start_sol.encoder[0:p, 0][None, :], (T, p)).copy()
                warm = start_sol.total_error
            else:
                V0 = np.broadcast_to(cc[None, :], (T, p)).copy()
        else:
            V0 = np.asarray(init, dtype=np.float64).reshape(T, p)
        prefix = A is None
        lower = prefix or bool(np.array_equal(A, np.tril(A)))  # then G = A B is too
        work = _Workspace(T) if _WORKSPACE else None

        def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
            return _banded_objective(x, T, p, index, A, lower, work)

        res = minimize(
            fun,
            V0.ravel(),
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": max_iter, "ftol": tol, "gtol": 0.0},
        )
        work = None  # the closure's arrays are freed before the final products
        C, _ = _assemble(res.x, T, p, index)
        iterations, converged = int(res.nit), bool(res.success)
    # the returned point's own error and exact sensitivity, never trusted from the iteration
    B = solve_triangular(C, np.eye(T), lower=True)
    objective = float(np.sum((_prefix_rows(B) if A is None else A @ B) ** 2))
    sens = banded_sensitivity_sq(C, k, b)
    assert sens <= k_eff * (1 + 1e-9)
    return BandedSolution(
        encoder=C,
        objective=objective,
        sensitivity_sq=sens,
        bands=p,
        participations=k,
        separation=b,
        iterations=iterations,
        toeplitz=bool(toeplitz),
        converged=converged,
        seconds=time.perf_counter() - start,
        warm_start_error=warm,
        decoder=B,
    )
