r"""Exact samplers for Gaussian sketches with Gaussian mixing, via one Gram pass.

The Gaussian-mixing mechanisms of Lev et al. (2025, 2026) release a sketch
:math:`\widetilde A = S A + \eta\,\xi` of a data matrix :math:`A \in \mathbb R^{n\times p}`
(``A = X`` in Iterative Hessian Mixing, Lev et al. 2026, Algorithm 1, line 5;
``A = [X, Y]`` in Linear Mixing, Algorithm 4, line 3), with
:math:`S \sim \mathcal N(0, I_{k\times n})` and :math:`\xi \sim \mathcal N(0, I_{k\times p})`
independent. The downstream estimators only use the Gram matrix
:math:`\widetilde A^\top \widetilde A` (and its blocks). Forming :math:`S A` costs
:math:`O(k n p)` time and :math:`k n` Gaussian draws per sketch; this module samples
the same random matrix exactly from :math:`G = A^\top A`, computed once per dataset.

**Exactness.** Write :math:`\widetilde A = [S,\ \xi]\,[A;\ \eta I_p]`. The rows
:math:`(s_i, \xi_i)` of :math:`[S,\ \xi]` are iid :math:`\mathcal N(0, I_{n+p})`, so row
:math:`i` of :math:`\widetilde A` is the linear image
:math:`\tilde a_i = A^\top s_i + \eta\,\xi_i \sim \mathcal N(0,\ A^\top A + \eta^2 I_p)`,
and the :math:`k` rows are independent. Hence :math:`\widetilde A` has exactly the
distribution of :math:`k` iid rows :math:`\mathcal N(0, \Sigma)`,
:math:`\Sigma = G + \eta^2 I_p`, and depends on the data only through :math:`G`.

Let :math:`G = V\,\mathrm{diag}(w)\,V^\top` (eigendecomposition, one per dataset) and
:math:`L_\eta = V\,\mathrm{diag}(\sqrt{w + \eta^2})`, so :math:`L_\eta L_\eta^\top = \Sigma`
for every :math:`\eta` (no per-trial factorisation; :math:`G` may be singular). With
:math:`Z \in \mathbb R^{k\times p}` iid :math:`\mathcal N(0, 1)`, the rows of
:math:`Z L_\eta^\top` are iid :math:`\mathcal N(0, \Sigma)`: this is :func:`sample_sketch_rows`
(cost :math:`O(k p^2)`). Then

.. math::

    \widetilde A^\top \widetilde A \overset{d}{=} L_\eta\,(Z^\top Z)\,L_\eta^\top,
    \qquad Z^\top Z \sim \mathrm{Wishart}_p(k, I_p),

and for :math:`k \ge p` the Bartlett decomposition (Bartlett 1933; Anderson 2003,
Cor. 7.2.1) gives :math:`Z^\top Z \overset{d}{=} B B^\top` with :math:`B` lower triangular,
:math:`B_{ii} = \sqrt{c_i}`, :math:`c_i \sim \chi^2_{k-i}` (:math:`i = 0, \dots, p-1`), and
:math:`B_{ij} \sim \mathcal N(0, 1)` for :math:`i > j`, all independent. This is
:func:`sample_sketch_gram` with ``method="bartlett"`` (cost :math:`O(p^3)`, only
:math:`p(p+1)/2` draws, independent of both :math:`n` and :math:`k`).

:func:`direct_sketch_gram` is the reference: it draws :math:`S` explicitly, in blocks of
rows of :math:`A` (so the :math:`k\times n` matrix never has to fit in memory), and
accumulates :math:`S A = \sum_J S_{:,J} A_J`.

References
----------
- O. Lev, M. Shenfeld, V. Srinivasan, K. Ligett, A. C. Wilson, "Near-optimal
  private linear regression via iterative Hessian mixing", 2026, Algorithms 1, 3, 4.
- M. S. Bartlett, "On the theory of statistical regression", Proc. Roy. Soc.
  Edinburgh 53 (1933); T. W. Anderson, *An Introduction to Multivariate Statistical
  Analysis*, 3rd ed., Wiley 2003, Section 7.2.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from dpreg.data.normal_kernel import standard_normal_fill
from dpreg.estimators._linalg import COMPILED_MIN_BATCH

_COMPILED_MIN_DRAWS = 2**20  # normals per draw from which numba's start-up (~0.4 s) pays

__all__ = [
    "BARTLETT_KERNELS",
    "GRAM_METHODS",
    "GramFactor",
    "direct_sketch",
    "direct_sketch_gram",
    "gram_factor",
    "sample_sketch_gram",
    "sample_sketch_rows",
]

GRAM_METHODS = ("bartlett", "rows")
BARTLETT_KERNELS = ("auto", "numba", "blas", "numpy")

#: ``kernel="auto"`` forms the Bartlett products with BLAS (triangular product and rank-k
#: update per trial) from this dimension on, where they beat the compiled loop (about 2x
#: at p = 128, the lev_gas design; slower below p = 64, where the per-call cost dominates).
BLAS_MIN_DIM = 96

_BLOCK_ELEMENTS = 1 << 21  # entries of S drawn per block in the direct sampler (16 MB)


@dataclass(frozen=True)
class GramFactor:
    r"""Eigendecomposition :math:`G = V\,\mathrm{diag}(w)\,V^\top` of a Gram matrix.

    Attributes
    ----------
    eigenvalues : ndarray, shape (p,)
        :math:`w`, clamped at 0 (round-off can make the smallest ones slightly negative).
    eigenvectors : ndarray, shape (p, p)
        :math:`V`, orthonormal columns.
    """

    eigenvalues: np.ndarray
    eigenvectors: np.ndarray

    @property
    def dim(self) -> int:
        """Number of columns ``p`` of the sketched matrix."""
        return int(self.eigenvalues.shape[0])

    def factor(self, noise_var: np.ndarray) -> np.ndarray:
        r"""Square roots :math:`L_\eta = V\,\mathrm{diag}(\sqrt{w + \eta^2})`, (trials, p, p)."""
        scale = np.sqrt(self.eigenvalues[None, :] + noise_var[:, None])
        return self.eigenvectors[None, :, :] * scale[:, None, :]


def gram_factor(A: np.ndarray | None = None, *, gram: np.ndarray | None = None) -> GramFactor:
    r"""Factor :math:`G = A^\top A` once per dataset (an :math:`O(n p^2)` pass).

    Parameters
    ----------
    A : ndarray, shape (n, p), optional
        Data matrix to be sketched.
    gram : ndarray, shape (p, p), optional
        :math:`A^\top A` if already computed (symmetric positive semi-definite). Give
        exactly one of ``A`` and ``gram``.

    Returns
    -------
    GramFactor
    """
    if (A is None) == (gram is None):
        raise ValueError("give exactly one of A (the data matrix) and gram (A^T A)")
    G = A.T @ A if gram is None else np.asarray(gram, dtype=np.float64)
    G = 0.5 * (G + G.T)
    w, V = np.linalg.eigh(G)
    return GramFactor(eigenvalues=np.maximum(w, 0.0), eigenvectors=V)


def _noise_var(noise_std: np.ndarray | float, trials: int | None) -> np.ndarray:
    s = np.atleast_1d(np.asarray(noise_std, dtype=np.float64))
    if trials is not None and s.size == 1:
        s = np.full(trials, float(s[0]))
    if s.ndim != 1 or not np.all(np.isfinite(s)) or np.any(s < 0):
        raise ValueError("noise_std must be finite, non-negative, one value per trial")
    return s * s


def sample_sketch_rows(
    factor: GramFactor, noise_std: np.ndarray | float, k: int, rng: np.random.Generator
) -> np.ndarray:
    r"""Sample sketches :math:`S A + \eta\,\xi` exactly in distribution, one per trial.

    Parameters
    ----------
    factor : GramFactor
        From :func:`gram_factor` of the data matrix :math:`A` (n, p).
    noise_std : float or ndarray, shape (trials,)
        Mixing noise :math:`\eta \ge 0` of each trial.
    k : int
        Sketch size (rows).
    rng : numpy.random.Generator
        Draws ``Z`` of shape (trials, k, p).

    Returns
    -------
    ndarray, shape (trials, k, p)
        Rows iid :math:`\mathcal N(0, A^\top A + \eta^2 I_p)` (see the module docstring).
    """
    var = _noise_var(noise_std, None)
    L = factor.factor(var)  # (trials, p, p)
    Z = rng.standard_normal((var.size, int(k), factor.dim))
    return Z @ L.transpose(0, 2, 1)


def _sketch_sizes(k: np.ndarray | int, trials: int | None) -> np.ndarray:
    """Sketch sizes as an int array: shape () for one size, else (trials,)."""
    ks = np.asarray(k)
    if not np.issubdtype(ks.dtype, np.integer) or ks.ndim > 1 or np.any(ks < 1):
        raise ValueError(f"k must be a positive integer or one integer per trial; got {k!r}")
    if ks.ndim == 1 and trials is not None and trials not in (1, ks.size):
        raise ValueError(f"k has {ks.size} entries but noise_std has {trials}")
    return ks.astype(np.int64)


def sample_sketch_gram(
    factor: GramFactor,
    noise_std: np.ndarray | float,
    k: np.ndarray | int,
    rng: np.random.Generator,
    method: str = "bartlett",
    kernel: str = "auto",
) -> np.ndarray:
    r"""Sample :math:`(SA + \eta\xi)^\top (SA + \eta\xi)` exactly in distribution, per trial.

    Parameters
    ----------
    factor : GramFactor
        From :func:`gram_factor` of the data matrix :math:`A` (n, p).
    noise_std : float or ndarray, shape (trials,)
        Mixing noise :math:`\eta \ge 0` of each trial.
    k : int or ndarray of int, shape (trials,)
        Sketch size (rows of :math:`S`), one for all trials or one per trial (e.g. the
        dynamic sketch size of Lev et al. 2026, Algorithm 5).
    rng : numpy.random.Generator
        Source of randomness. ``"bartlett"`` draws, per call, the chi-square diagonals
        (trials, p), then the strictly-lower entries (trials, p(p-1)/2).
    method : {"bartlett", "rows"}
        ``"bartlett"``: :math:`(L_\eta B)(L_\eta B)^\top` with the Bartlett factor
        :math:`B` of :math:`\mathrm{Wishart}_p(k, I)`, :math:`O(p^3)` per trial (needs
        :math:`k \ge p`; falls back to ``"rows"`` otherwise). ``"rows"``: the Gram
        matrix of :func:`sample_sketch_rows`, :math:`O(k p^2)` per trial. Both are exact
        (module docstring); they consume the generator differently.
    kernel : {"auto", "numba", "blas", "numpy"}, default "auto"
        How ``"bartlett"`` forms :math:`(L_\eta B)(L_\eta B)^\top` from the same draws:
        one compiled loop over four trials side by side in SIMD lanes (``"numba"``; no
        temporaries, the result is exactly symmetric; the bits of the one-trial loop
        :func:`_bartlett_kernel`, kept as its reference), per trial BLAS's triangular
        product :math:`C = B^\top L_\eta^\top` (``trmm``) and :math:`C^\top C` (``syrk``,
        lower half mirrored: exactly symmetric; ``"blas"``) or numpy's batched products
        (``"numpy"``, the reference);
        ``"auto"``: ``"blas"`` from :data:`BLAS_MIN_DIM` columns on, else compiled from
        :data:`dpreg.estimators._linalg.COMPILED_MIN_BATCH` trials on, else numpy.
        Equal to round-off (``tests/unit/test_gram_sketch.py``).

    Returns
    -------
    ndarray, shape (trials, p, p)
        Symmetric positive semi-definite; a draw from
        :math:`\mathrm{Wishart}_p(k,\ A^\top A + \eta^2 I_p)` per trial.
    """
    if method not in GRAM_METHODS:
        raise ValueError(f"method must be one of {GRAM_METHODS}; got {method!r}")
    if kernel not in BARTLETT_KERNELS:
        raise ValueError(f"kernel must be one of {BARTLETT_KERNELS}; got {kernel!r}")
    ks = _sketch_sizes(k, np.size(noise_std))
    var = _noise_var(noise_std, ks.size if ks.ndim else None)
    trials, p = var.size, factor.dim
    if method == "rows" or ks.min() < p:
        L = factor.factor(var)  # (trials, p, p)
        if ks.ndim == 0 or np.all(ks == ks.flat[0]):
            Z = rng.standard_normal((trials, int(ks.flat[0]), p))
            W = Z.transpose(0, 2, 1) @ Z
        else:
            W = np.empty((trials, p, p))
            for t in range(trials):
                Z = rng.standard_normal((int(ks[t]), p))
                W[t] = Z.T @ Z
        out = L @ W @ L.transpose(0, 2, 1)
    else:
        df = np.empty((trials, p))  # k_t - i, converted exactly (no broadcast_to + astype)
        df[...] = ks[..., None] - np.arange(p)
        diagonal = np.sqrt(rng.chisquare(df))
        below = np.empty((trials, p * (p - 1) // 2))
        if below.size >= _COMPILED_MIN_DRAWS or "numba" in sys.modules:
            standard_normal_fill(rng, below)  # numpy's values and generator state, compiled
        else:
            rng.standard_normal(out=below)
        if kernel == "blas" or (kernel == "auto" and p >= BLAS_MIN_DIM):
            return _bartlett_blas(factor, var, diagonal, below)
        if kernel == "numba" or (kernel == "auto" and trials >= COMPILED_MIN_BATCH):
            from dpreg.estimators._lanes_jit import bartlett_lanes

            out = np.empty((trials, p, p))
            bartlett_lanes(factor.eigenvectors, factor.eigenvalues, var, diagonal, below, out)
            return out
        L = factor.factor(var)  # (trials, p, p)
        B = np.zeros((trials, p, p))
        idx = np.arange(p)
        B[:, idx, idx] = diagonal
        rows, cols = np.tril_indices(p, -1)
        B[:, rows, cols] = below
        LB = L @ B
        out = LB @ LB.transpose(0, 2, 1)
    return 0.5 * (out + out.transpose(0, 2, 1))


def _bartlett_blas(
    factor: GramFactor, var: np.ndarray, diagonal: np.ndarray, below: np.ndarray
) -> np.ndarray:
    """``kernel="blas"`` of :func:`sample_sketch_gram`: per trial ``trmm`` then ``syrk``."""
    from scipy.linalg.blas import dsyrk, dtrmm

    trials, p = diagonal.shape
    out = np.empty((trials, p, p))
    B = np.zeros((p, p), order="F")  # lower triangular Bartlett factor, refilled per trial
    flat = B.reshape(-1, order="F")  # a view: entry (i, j) at i + j p
    rows, cols = np.tril_indices(p, -1)  # the order of ``below`` (row by row)
    below_at = rows + cols * p
    diag_at = np.arange(p) * (p + 1)
    VT = np.asarray(factor.eigenvectors.T, order="F")
    LT = np.empty((p, p), order="F")
    idx = np.arange(p)
    for t in range(trials):
        flat[below_at] = below[t]
        flat[diag_at] = diagonal[t]
        np.multiply(VT, np.sqrt(factor.eigenvalues + var[t])[:, None], out=LT)  # L' = diag(s) V'
        C = dtrmm(1.0, B, LT, side=0, lower=1, trans_a=1)  # B' L' = (L B)'
        G = dsyrk(1.0, C, trans=1, lower=1)  # C' C in the lower half, zeros above
        o = out[t]
        np.add(G, G.T, out=o)  # exact: each entry is one value plus zero ...
        o[idx, idx] *= 0.5  # ... but the diagonal, doubled: halved exactly
    return out


@cache
def _bartlett_kernel() -> Any:
    """Compile (or load from numba's cache) the Bartlett product kernel."""
    import numba

    @numba.njit(cache=True, nogil=True)
    def bartlett_product(V, w, var, diagonal, below, out):
        # Per trial t: L = V diag(sqrt(w + var[t])), B lower triangular with diagonal[t] on
        # the diagonal and below[t] under it (numpy.tril_indices(p, -1) order, row by row);
        # out[t] = (L B)(L B)', written as C = (L B)' = B' L' (rows of C are sums of rows of
        # L' weighted by columns of B), then out = C' C, lower half mirrored: exactly
        # symmetric. Every entry is the same sequence of IEEE operations as in
        # _bartlett_rows_kernel (no fast-math): the rows of L', C and the lower half of
        # C' C are padded with zero columns to a multiple of 4 so that the inner loops run
        # whole SIMD vectors without scalar remainders (the padding is never read out).
        trials, p = diagonal.shape
        P = (p + 3) // 4 * 4
        LT = np.zeros((p, P))
        C = np.zeros((p, P))
        G = np.zeros((p, P))  # row i: entries (i, 0..i) of C' C, then padding
        for t in range(trials):
            for k in range(p):
                scale = np.sqrt(w[k] + var[t])
                for i in range(p):
                    LT[k, i] = V[i, k] * scale
            for j in range(p):
                a = diagonal[t, j]
                for i in range(P):
                    C[j, i] = a * LT[j, i]
                for k in range(j + 1, p):
                    a = below[t, k * (k - 1) // 2 + j]
                    for i in range(P):
                        C[j, i] += a * LT[k, i]
            for i in range(p):
                for j in range((i + 4) // 4 * 4):
                    G[i, j] = 0.0
            for m in range(p):
                for i in range(p):
                    a = C[m, i]
                    for j in range((i + 4) // 4 * 4):
                        G[i, j] += a * C[m, j]
            for i in range(p):
                for j in range(i + 1):
                    out[t, i, j] = G[i, j]
                    out[t, j, i] = G[i, j]

    return bartlett_product


@cache
def _bartlett_rows_kernel() -> Any:
    """Compile the reference of :func:`_bartlett_kernel` (loops of length p; tests)."""
    import numba

    @numba.njit(cache=True, nogil=True)
    def bartlett_product(V, w, var, diagonal, below, out):
        # Per trial t: L = V diag(sqrt(w + var[t])), B lower triangular with diagonal[t] on
        # the diagonal and below[t] under it (numpy.tril_indices(p, -1) order, row by row);
        # out[t] = (L B)(L B)', written as C = (L B)' = B' L' (rows of C are sums of rows of
        # L' weighted by columns of B), then out = C' C, lower half mirrored: exactly
        # symmetric. All inner loops run along contiguous rows.
        trials, p = diagonal.shape
        LT = np.empty((p, p))
        C = np.empty((p, p))
        for t in range(trials):
            for k in range(p):
                scale = np.sqrt(w[k] + var[t])
                for i in range(p):
                    LT[k, i] = V[i, k] * scale
            for j in range(p):
                a = diagonal[t, j]
                for i in range(p):
                    C[j, i] = a * LT[j, i]
                for k in range(j + 1, p):
                    a = below[t, k * (k - 1) // 2 + j]
                    for i in range(p):
                        C[j, i] += a * LT[k, i]
            for i in range(p):
                for j in range(i + 1):
                    out[t, i, j] = 0.0
            for m in range(p):
                for i in range(p):
                    a = C[m, i]
                    for j in range(i + 1):
                        out[t, i, j] += a * C[m, j]
            for i in range(p):
                for j in range(i):
                    out[t, j, i] = out[t, i, j]

    return bartlett_product


def direct_sketch(
    A: np.ndarray,
    noise_std: float,
    k: int,
    rng: np.random.Generator,
    *,
    block_elements: int | None = None,
) -> np.ndarray:
    r"""One explicit sketch :math:`S A + \eta\,\xi` (the reference sampler).

    :math:`S \sim \mathcal N(0, I_{k\times n})` is drawn in column blocks :math:`S_{:,J}`
    matched to row blocks :math:`A_J` of at most ``block_elements / k`` rows, and
    :math:`SA = \sum_J S_{:,J} A_J` is accumulated, so memory stays bounded for any
    ``n`` (Lev et al. 2026, Algorithm 1, line 5; docs/notes/lev2026.md §5.1, memory
    note). Then
    :math:`\xi \sim \mathcal N(0, I_{k\times p})` is drawn. Cost :math:`O(k n p)`.

    Parameters
    ----------
    A : ndarray, shape (n, p)
        Data matrix.
    noise_std : float
        :math:`\eta \ge 0`.
    k : int
        Sketch size.
    rng : numpy.random.Generator
        Source of ``S`` (block by block, in row order of ``A``) then ``xi``.
    block_elements : int, optional
        Entries of ``S`` drawn per block, default ``2**21`` (memory bound); the block
        size decides which ``S`` a seed gives when ``n > block_elements / k``.

    Returns
    -------
    ndarray, shape (k, p)
    """
    k = int(k)
    n, p = A.shape
    block = max(1, int(_BLOCK_ELEMENTS if block_elements is None else block_elements) // k)
    SA = np.zeros((k, p))
    for start in range(0, n, block):
        stop = min(n, start + block)
        SA += rng.standard_normal((k, stop - start)) @ A[start:stop]
    return SA + float(noise_std) * rng.standard_normal((k, p))


def direct_sketch_gram(
    A: np.ndarray,
    noise_std: np.ndarray | float,
    k: np.ndarray | int,
    rng: np.random.Generator,
    *,
    block_elements: int | None = None,
) -> np.ndarray:
    r"""Gram matrices of explicit sketches, one per trial (the reference sampler).

    Parameters
    ----------
    A : ndarray, shape (n, p)
        Data matrix.
    noise_std : float or ndarray, shape (trials,)
        :math:`\eta \ge 0` per trial.
    k : int or ndarray of int, shape (trials,)
        Sketch size, one for all trials or one per trial.
    rng : numpy.random.Generator
        Source of randomness (trial by trial, see :func:`direct_sketch`).
    block_elements : int, optional
        See :func:`direct_sketch`.

    Returns
    -------
    ndarray, shape (trials, p, p)
        :math:`\widetilde A^\top \widetilde A` with :math:`\widetilde A = S A + \eta\,\xi`.
    """
    ks = _sketch_sizes(k, np.size(noise_std))
    var = _noise_var(noise_std, ks.size if ks.ndim else None)
    ks = np.broadcast_to(ks, var.shape)
    out = np.empty((var.size, A.shape[1], A.shape[1]))
    for t, v in enumerate(var):
        sk = direct_sketch(A, float(np.sqrt(v)), int(ks[t]), rng, block_elements=block_elements)
        out[t] = sk.T @ sk
    return out
