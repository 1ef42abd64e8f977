r"""Batched linear algebra shared by the estimators (one rule for singular systems).

:func:`solve_symmetric_batch` applies one rule to every noisy Gram or Hessian system of
AdaSSP, linear mixing, the Sheffet sketch and IHM: a system is *numerically singular*
when the smallest absolute eigenvalue that ``numpy.linalg.eigvalsh`` computes is at most
``d * eps`` times the largest. The rule needs a symmetric eigenvalue problem per system
(LAPACK ``syevd``, about 10x the cost of a Cholesky factorisation at d = 26), yet almost
every system the estimators solve is positive definite and far from that cut-off.

**The certificate** (``method="fast"``; ``"auto"``, the default, uses it for batches of at
least :data:`COMPILED_MIN_BATCH` systems). A compiled kernel factors each
``A = L L'`` (Cholesky, lower triangle of ``A``) and bounds, rigorously up to a large
safety factor,

.. math::

    \lambda_{\max}(A) \le U = \|A\|_\infty, \qquad
    \lambda_{\min}(A) \ge \ell = \frac{1}{2\,\beta} - 2(d+1)\,u\,\mathrm{tr}(A),
    \qquad \beta \ge \|\hat L^{-1}\|_2^2,

(:math:`u` the unit round-off; :math:`\hat L\hat L^\top = A + E` with
:math:`\|E\|_2 \le \gamma_{d+1}\|\hat L\|_F^2 \approx (d+1)u\,\mathrm{tr}(A)`, Higham,
*Accuracy and Stability of Numerical Algorithms*, 2nd ed., Thm 10.3). First
:math:`\beta = \|M(\hat L)^{-1}\|_1\,\|M(\hat L)^{-1}\|_\infty` with the comparison matrix
:math:`M(\hat L)` (:math:`|\hat L^{-1}| \le M(\hat L)^{-1}` entrywise, Higham Thm 8.12;
:math:`\|X\|_2^2 \le \|X\|_1\|X\|_\infty`): two :math:`O(d^2)` substitutions over
non-negative terms, so rounding cannot make it smaller than its exact value by more
than a relative :math:`O(d u)`. That bound can be loose, so where it does not decide,
:math:`\beta = \|\hat W\|_F^2` with :math:`\hat W` the computed :math:`\hat L^{-1}`
(:math:`O(d^3)`; its relative error is of order :math:`d\,u\,\kappa(L) \le 10^{-5}` on
the certified systems). The factor 2 absorbs both roundings. A system with
:math:`\ell > 1024\, d\, \varepsilon\, U` (:math:`\varepsilon = 2u`, the ``eps`` of the
rule) is certified regular: the eigenvalues ``eigvalsh`` computes are within
:math:`p(d)\,u\,U` of the exact ones (backward stability), with :math:`p(d)` far below
the factor 1024 d, so they are positive and their ratio exceeds ``d * eps``: the rule
would choose the regular branch. Those systems are solved with the Cholesky factor
(forward and back substitution), equal to ``numpy.linalg.solve`` to round-off. Every
other system -- a failed factorisation (indefinite, singular, NaN), a condition number
above about :math:`1/(2048\,d\,\varepsilon)` (about :math:`10^{11}` at d = 26) or a
non-finite solution -- goes through the reference path. The branch taken is
therefore the reference's for every system (tested on random and near-singular batches in
``tests/unit/test_linalg.py``).

On the noisy systems of the estimators (condition numbers of a few units on the four
large benchmark datasets of ``benchmarks/anchors.py``) the comparison bound decides: per
system one Cholesky factorisation (:math:`d^3/3` flops) and :math:`O(d^2)` more, instead
of a symmetric eigenvalue problem and an LU solve.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np

from dpreg.estimators._stacked import distinct_matrices, eigvalsh_stacked

__all__ = [
    "COMPILED_MIN_BATCH",
    "SOLVE_METHODS",
    "solve_symmetric_batch",
    "solve_symmetric_shared",
    "symmetric_from_upper",
]

SOLVE_METHODS = ("auto", "fast", "reference")

#: ``method="auto"`` compiles from this many systems (trials) on: below it, numba's one-off
#: load in a fresh process (about 0.4 s of CPU) costs more than the kernels save.
COMPILED_MIN_BATCH = 64

# Batches from this many systems look for repeated matrices first (below it the look-up
# costs more than the eigenvalue problems it could save).
_DISTINCT_MIN = 8

_MARGIN = 1024.0  # safety factor of the certificate over the rule's cut-off d * eps


@cache
def _kernel() -> Any:
    """Compile (or load from numba's cache) the certified Cholesky kernel."""
    import numba

    @numba.njit(cache=True, nogil=True)
    def certified_cholesky_solve(A, shift, b, theta, certified, margin, interleave=True):
        # A (m, d, d) symmetric (lower triangle read), shift (m,) added to the diagonal,
        # b (m, R, d): R right-hand sides per system (R = 1: one system per right-hand
        # side; R > 1: a system shared by R of them, factored and certified once); writes
        # theta (m, R, d) and certified (m, R) (True: the rule's regular branch is proven
        # and theta solves A + shift I). interleave=False: the factor one row at a time
        # (the reference of the interleaved loop: the same bits, tested).
        m, R, d = b.shape
        u = np.finfo(np.float64).eps / 2.0
        L = np.zeros((d, d))
        W = np.zeros((d, d))
        z = np.zeros(d)
        v = np.zeros(d)
        for t in range(m):
            for r in range(R):
                certified[t, r] = False
            ok = True
            trace = 0.0
            for j in range(d):
                s = A[t, j, j] + shift[t]
                trace += s
                for k in range(j):
                    s -= L[j, k] * L[j, k]
                if not s > 0.0:  # also catches NaN
                    ok = False
                    break
                ljj = np.sqrt(s)
                L[j, j] = ljj
                # rows below j, four at a time: four independent sums in flight, each
                # with the operations of the one-row loop in the same order (same bits)
                i = j + 1
                while interleave and i + 3 < d:
                    s0 = A[t, i, j]
                    s1 = A[t, i + 1, j]
                    s2 = A[t, i + 2, j]
                    s3 = A[t, i + 3, j]
                    for k in range(j):
                        ljk = L[j, k]
                        s0 -= L[i, k] * ljk
                        s1 -= L[i + 1, k] * ljk
                        s2 -= L[i + 2, k] * ljk
                        s3 -= L[i + 3, k] * ljk
                    L[i, j] = s0 / ljj
                    L[i + 1, j] = s1 / ljj
                    L[i + 2, j] = s2 / ljj
                    L[i + 3, j] = s3 / ljj
                    i += 4
                while i < d:
                    s = A[t, i, j]
                    for k in range(j):
                        s -= L[i, k] * L[j, k]
                    L[i, j] = s / ljj
                    i += 1
            if not ok:
                continue
            upper = 0.0  # ||A + shift I||_inf from the lower triangle, mirrored
            for i in range(d):
                r = abs(A[t, i, i] + shift[t])
                for k in range(i):
                    r += abs(A[t, i, k])
                for k in range(i + 1, d):
                    r += abs(A[t, k, i])
                upper = max(upper, r)
            threshold = margin * d * 2.0 * u * upper
            rounding = 2.0 * (d + 1) * u * trace
            # ||L^{-1}||_2^2 <= ||L^{-1}||_1 ||L^{-1}||_inf, each bounded through the
            # comparison matrix M(L) (|L^{-1}| <= M(L)^{-1} entrywise): M(L)^{-1} e and
            # M(L)^{-T} e, two O(d^2) substitutions over non-negative terms
            row_max = 0.0
            for i in range(d):
                s = 1.0
                for k in range(i):
                    s += abs(L[i, k]) * z[k]
                z[i] = s / L[i, i]
                row_max = max(row_max, z[i])
            col_max = 0.0
            for i in range(d - 1, -1, -1):
                s = 1.0
                for k in range(i + 1, d):
                    s += abs(L[k, i]) * v[k]
                v[i] = s / L[i, i]
                col_max = max(col_max, v[i])
            if not 0.5 / (row_max * col_max) - rounding > threshold:
                # the comparison bound can be loose: ||L^{-1}||_F^2 from W = L^{-1}
                fro2 = 0.0
                for j in range(d):
                    W[j, j] = 1.0 / L[j, j]
                    fro2 += W[j, j] * W[j, j]
                    for i in range(j + 1, d):
                        s = 0.0
                        for k in range(j, i):
                            s += L[i, k] * W[k, j]
                        W[i, j] = -s / L[i, i]
                        fro2 += W[i, j] * W[i, j]
                if not 0.5 / fro2 - rounding > threshold:
                    continue
            # forward then back substitution: theta = L^{-T} L^{-1} b, per right-hand side
            for r in range(R):
                finite = True
                for i in range(d):
                    s = b[t, r, i]
                    for k in range(i):
                        s -= L[i, k] * z[k]
                    z[i] = s / L[i, i]
                for i in range(d - 1, -1, -1):
                    s = z[i]
                    for k in range(i + 1, d):
                        s -= L[k, i] * theta[t, r, k]
                    theta[t, r, i] = s / L[i, i]
                    if not np.isfinite(theta[t, r, i]):
                        finite = False
                certified[t, r] = finite

    return certified_cholesky_solve


def _certified_solve(
    A: np.ndarray, shift: np.ndarray, b: np.ndarray, *, lanes: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """Run the compiled certificate and solve on every system: ``theta``, ``certified``.

    ``lanes=True``: four systems side by side in SIMD lanes
    (:func:`dpreg.estimators._lanes_jit.certified_lanes`); the systems it defers (failed
    factorisation, comparison bound not decisive) go through the one-trial kernel
    :func:`_kernel`, which also tries the Frobenius bound. ``lanes=False``: the one-trial
    kernel for every system (the reference). The same bits for every certified system,
    the same ``certified`` (``tests/unit/test_lanes.py``); ``theta`` of an uncertified
    system is not used.
    """
    theta = np.empty(b.shape)
    certified = np.empty(b.shape[0], dtype=np.bool_)
    if not lanes:
        _kernel()(A, shift, b[:, None], theta[:, None], certified[:, None], _MARGIN)
        return theta, certified
    from dpreg.estimators._lanes_jit import certified_lanes

    deferred = np.empty(b.shape[0], dtype=np.bool_)
    certified_lanes(A, shift, b, theta, certified, deferred, _MARGIN)
    if deferred.any():
        rest = np.flatnonzero(deferred)
        sub_theta = np.empty((rest.size, b.shape[1]))
        sub_certified = np.empty(rest.size, dtype=np.bool_)
        _kernel()(
            A[rest],
            shift[rest],
            b[rest][:, None],
            sub_theta[:, None],
            sub_certified[:, None],
            _MARGIN,
        )
        theta[rest] = sub_theta
        certified[rest] = sub_certified
    return theta, certified


def _compiled(method: str, batch: int) -> bool:
    """Whether ``method`` runs the compiled path on ``batch`` systems (never on none)."""
    if batch == 0:
        return False
    return method == "fast" or (method == "auto" and batch >= COMPILED_MIN_BATCH)


def _shifted(A: np.ndarray, shift: np.ndarray | None) -> np.ndarray:
    """``A[t] + shift[t] I`` (a copy; ``A`` itself when there is no shift)."""
    if shift is None:
        return A
    out = A.copy()
    diagonal = np.arange(A.shape[-1])
    out[:, diagonal, diagonal] += shift[:, None]
    return out


#: How :func:`_reference` treats a batch of one system (the estimators' fits and the
#: bootstrap's plug-in solves of one trial): ``"lean"`` (:func:`_reference_regular_one`
#: first) or ``"stacked"`` (the batch code). The same bits (``tests/unit/test_linalg.py``).
_ONE_SYSTEM = "lean"

_EPS = float(np.finfo(np.float64).eps)


def _reference_regular_one(
    A: np.ndarray, b: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """:func:`_reference` of one regular system (A (1, d, d), b (1, d)); ``None`` otherwise.

    The same calls on the same values as the batch code (``eigvalsh`` of the stack, the
    cut-off ``d eps`` times the largest magnitude, ``solve`` of the system), without its
    masks and copies, which cost more than the 10 x 10 LAPACK calls at one system. A
    singular system, or one whose solve is not finite, returns ``None``: the batch code
    then runs it from the start (a pseudo-inverse, as before).
    """
    eig = np.linalg.eigvalsh(A)
    magnitude = np.abs(eig[0])
    if magnitude.min() <= A.shape[-1] * _EPS * magnitude.max():
        return None  # singular (a NaN eigenvalue compares False: the solve decides it)
    theta = np.empty_like(b)
    theta[0] = np.linalg.solve(A, b[..., None])[0, :, 0]
    if not np.isfinite(theta).all():
        return None
    return theta, np.zeros(1, dtype=bool), eig


def _reference(A: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Apply the rule as stated: ``eigvalsh`` of every system, then ``solve`` or ``pinv``.

    ``eigvalsh`` and ``pinv`` run once per distinct matrix of the batch (the bootstrap
    solves one matrix against many right-hand sides): the same bits as per system
    (:mod:`dpreg.estimators._stacked`).
    """
    if A.shape[0] == 1 and _ONE_SYSTEM == "lean":
        regular = _reference_regular_one(A, b)
        if regular is not None:
            return regular
    d = A.shape[-1]
    eig = eigvalsh_stacked(A) if A.shape[0] >= _DISTINCT_MIN else np.linalg.eigvalsh(A)
    magnitude = np.abs(eig)
    rcond = d * np.finfo(np.float64).eps
    singular = magnitude.min(axis=1) <= rcond * magnitude.max(axis=1)
    theta = np.empty_like(b)
    regular = ~singular
    if regular.any():
        theta[regular] = np.linalg.solve(A[regular], b[regular][..., None])[..., 0]
        broken = regular & ~np.all(np.isfinite(theta), axis=1)
        singular = singular | broken
    if singular.any():
        unique, index = distinct_matrices(A[singular])
        pinv = np.linalg.pinv(unique, rcond=rcond, hermitian=True)[index]
        theta[singular] = np.einsum("tij,tj->ti", pinv, b[singular])
    return theta, singular, eig


def solve_symmetric_batch(
    A: np.ndarray,
    b: np.ndarray,
    *,
    shift: np.ndarray | None = None,
    method: str = "auto",
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Solve symmetric systems ``A[t] theta[t] = b[t]``; pseudo-inverse for singular ones.

    One rule for every estimator that solves a (noisy) Gram or Hessian system (AdaSSP,
    linear mixing, the Sheffet sketch, IHM): a system is *numerically singular* when its
    smallest absolute eigenvalue is at most ``d * eps * `` its largest; those get the
    minimum-norm least-squares solution ``pinv(A[t]) b[t]`` (symmetric pseudo-inverse,
    the same cut-off), the others ``numpy.linalg.solve``. A system whose solve is not
    finite is treated as singular too.

    Parameters
    ----------
    A : ndarray, shape (trials, d, d)
        Symmetric matrices (only their lower triangle enters the eigenvalue test).
    b : ndarray, shape (trials, d)
        Right-hand sides.
    shift : ndarray, shape (trials,), optional
        Solve ``(A[t] + shift[t] I) theta[t] = b[t]`` instead (e.g. AdaSSP's ridge),
        without a shifted copy of ``A`` on the fast path; ``A + shift I`` is formed
        exactly as numpy would (one addition per diagonal entry).
    method : {"auto", "fast", "reference"}, default "auto"
        ``"reference"``: the rule as stated, ``eigvalsh`` of every system.
        ``"fast"``: a Cholesky certificate decides the systems it can prove regular and
        solves them by substitution; the others go through the reference (module
        docstring). Same branch for every system; solutions equal to round-off.
        ``"auto"``: ``"fast"`` for at least :data:`COMPILED_MIN_BATCH` systems, else
        ``"reference"``.

    Returns
    -------
    theta : ndarray, shape (trials, d)
    singular : ndarray of bool, shape (trials,)
        The systems solved by the pseudo-inverse.
    eigenvalues : ndarray, shape (trials, d)
        Eigenvalues of each (shifted) ``A[t]``, ascending, for the systems that went
        through the reference path; ``NaN`` rows for the systems the certificate decided
        (the fast path): those are positive definite with a condition number below
        ``1 / (1024 d eps)``.

    Examples
    --------
    >>> import numpy as np
    >>> A = np.stack([np.eye(2), np.diag([1.0, 0.0])])
    >>> theta, singular, eig = solve_symmetric_batch(A, np.ones((2, 2)), method="fast")
    >>> theta, singular
    (array([[1., 1.],
           [1., 0.]]), array([False,  True]))
    >>> eig  # the first system was certified regular, the second needed eigvalsh
    array([[nan, nan],
           [ 0.,  1.]])
    >>> solve_symmetric_batch(A, np.ones((2, 2)), shift=np.array([1.0, 1.0]))[0]
    array([[0.5, 0.5],
           [0.5, 1. ]])
    """
    if method not in SOLVE_METHODS:
        raise ValueError(f"method must be one of {SOLVE_METHODS}; got {method!r}")
    if shift is not None:
        shift = np.asarray(shift, dtype=np.float64)
        if shift.shape != (A.shape[0],):
            raise ValueError(f"shift must have shape ({A.shape[0]},); got {shift.shape}")
    if not _compiled(method, A.shape[0]):
        return _reference(_shifted(A, shift), b)
    A = np.asarray(A, dtype=np.float64)  # strided views are read in place (no copy)
    b = np.asarray(b, dtype=np.float64)
    diagonal_shift = np.zeros(b.shape[0]) if shift is None else np.ascontiguousarray(shift)
    theta, certified = _certified_solve(A, diagonal_shift, b)
    singular = np.zeros(b.shape[0], dtype=bool)
    eig = np.full(b.shape, np.nan)
    rest = ~certified
    if rest.any():
        sub = _shifted(A[rest], None if shift is None else shift[rest])
        theta[rest], singular[rest], eig[rest] = _reference(sub, b[rest])
    return theta, singular, eig


def solve_symmetric_shared(
    A: np.ndarray, b: np.ndarray, *, method: str = "auto"
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`solve_symmetric_batch` of ``A[t]`` against ``R`` right-hand sides each.

    The same results, bit for bit, as :func:`solve_symmetric_batch` of the ``m R``
    systems ``A[t] theta[t, r] = b[t, r]`` (``A`` repeated ``R`` times, the path chosen
    by ``method`` for ``m R`` systems): on the compiled path each ``A[t]`` is factored
    and certified once instead of ``R`` times (the factor and the certificate depend on
    ``A[t]`` only), then substituted per right-hand side; a right-hand side whose
    solution is not finite, and every one of a system the certificate does not decide,
    goes through the reference as it would there. The parametric bootstrap's population
    target solves one plug-in Gram against every replicate (docs/inference.md).

    Parameters
    ----------
    A : ndarray, shape (m, d, d)
        Symmetric matrices (only their lower triangle enters the eigenvalue test).
    b : ndarray, shape (m, R, d)
        ``R`` right-hand sides per matrix.
    method : {"auto", "fast", "reference"}, default "auto"
        As in :func:`solve_symmetric_batch`, with ``"auto"`` deciding on ``m R`` systems.

    Returns
    -------
    theta : ndarray, shape (m, R, d)
    singular : ndarray of bool, shape (m, R)
    eigenvalues : ndarray, shape (m, R, d)
        As :func:`solve_symmetric_batch` returns them, reshaped.

    Examples
    --------
    >>> import numpy as np
    >>> A = np.stack([2.0 * np.eye(2), np.diag([1.0, 0.0])])
    >>> b = np.ones((2, 3, 2))
    >>> theta, singular, _ = solve_symmetric_shared(A, b, method="fast")
    >>> theta[:, 0], singular
    (array([[0.5, 0.5],
           [1. , 0. ]]), array([[False, False, False],
           [ True,  True,  True]]))
    """
    if method not in SOLVE_METHODS:
        raise ValueError(f"method must be one of {SOLVE_METHODS}; got {method!r}")
    A = np.asarray(A, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if A.ndim != 3 or b.ndim != 3 or A.shape[0] != b.shape[0] or A.shape[1:] != (b.shape[2],) * 2:
        raise ValueError(
            f"A must have shape (m, d, d) and b shape (m, R, d); got {A.shape} and {b.shape}"
        )
    m, R, d = b.shape
    if not _compiled(method, m * R):
        repeated = np.broadcast_to(A[:, None], (m, R, d, d)).reshape(-1, d, d)
        theta, singular, eig = _reference(repeated, b.reshape(-1, d))
        return theta.reshape(m, R, d), singular.reshape(m, R), eig.reshape(m, R, d)
    theta = np.empty(b.shape)
    certified = np.empty((m, R), dtype=np.bool_)
    _kernel()(A, np.zeros(m), b, theta, certified, _MARGIN)
    singular = np.zeros((m, R), dtype=bool)
    eig = np.full(b.shape, np.nan)
    rest = ~certified
    if rest.any() and _SHARED_REST == "per_matrix":
        for t in np.flatnonzero(rest.any(axis=1)):
            r = slice(None) if rest[t].all() else rest[t]  # all, for an uncertified matrix
            theta[t, r], singular[t, r], eig[t, r] = _reference_one_matrix(A[t], b[t, r])
    elif rest.any():
        theta[rest], singular[rest], eig[rest] = _reference(A[np.nonzero(rest)[0]], b[rest])
    return theta, singular, eig


#: How :func:`solve_symmetric_shared` sends the right-hand sides the certificate left to
#: the reference: ``"per_matrix"`` (:func:`_reference_one_matrix`, one eigenvalue test and
#: one pseudo-inverse per matrix) or ``"stacked"`` (:func:`_reference` of the matrix
#: repeated once per right-hand side). The same bits (``tests/unit/test_linalg.py``).
_SHARED_REST = "per_matrix"


def _reference_one_matrix(A: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, ...]:
    """:func:`_reference` of the one matrix ``A`` (d, d) against the rows of ``b`` (k, d).

    The same bits as :func:`_reference` of ``A`` repeated k times: its eigenvalues are
    one ``eigvalsh`` of ``A`` (a deterministic function of the matrix, as
    :mod:`dpreg.estimators._stacked` uses), so the rule decides every system alike; a
    singular ``A`` is pseudo-inverted once, by the call :func:`_reference` makes on its
    one distinct matrix, and applied by the same ``einsum`` to the same gathered stack,
    without hashing or copying the k repeated matrices. A regular ``A`` (the rare case
    here: a certificate failure far from the cut-off) goes through :func:`_reference`.
    Returns ``theta`` (k, d), ``singular`` (k,) and the eigenvalues, (1, d) (every row's:
    the caller broadcasts them) or (k, d).
    """
    k, d = b.shape
    eig = np.linalg.eigvalsh(A[None])
    magnitude = np.abs(eig)
    rcond = d * np.finfo(np.float64).eps
    if not magnitude.min(axis=1)[0] <= rcond * magnitude.max(axis=1)[0]:
        return _reference(np.broadcast_to(A, (k, d, d)), b)
    pinv = np.linalg.pinv(np.ascontiguousarray(A)[None], rcond=rcond, hermitian=True)
    theta = np.einsum("tij,tj->ti", pinv[np.zeros(k, dtype=np.intp)], b)
    return theta, np.ones(k, dtype=bool), eig  # eig (1, d): broadcast over the k rows


@cache
def _mirror_kernel() -> Any:
    """Compile (or load from numba's cache) the kernel of :func:`symmetric_from_upper`."""
    import numba

    @numba.njit(cache=True, nogil=True)
    def mirror(base, scale, upper, out):
        # out[t, i, j] = out[t, j, i] = base[k] + scale * upper[t, k], k the position of
        # (i, j), i <= j, in numpy.triu_indices order (row by row)
        trials, d = out.shape[0], out.shape[1]
        for t in range(trials):
            k = 0
            for i in range(d):
                for j in range(i, d):
                    value = base[k] + scale * upper[t, k]
                    out[t, i, j] = value
                    out[t, j, i] = value
                    k += 1

    return mirror


def symmetric_from_upper(
    base: np.ndarray, scale: float, upper: np.ndarray, *, method: str = "auto"
) -> np.ndarray:
    """Symmetric matrices ``base + scale * xi[t]`` from upper triangles.

    Parameters
    ----------
    base : ndarray, shape (d, d)
        Exactly symmetric matrix.
    scale : float
    upper : ndarray, shape (trials, d (d + 1) / 2)
        The upper triangle of each ``xi[t]``, diagonal included, in
        ``numpy.triu_indices(d)`` order; ``xi[t]`` is its mirror image.
    method : {"auto", "fast", "reference"}, default "auto"
        One compiled pass writing both triangles (``"fast"``; ``"auto"`` from
        :data:`COMPILED_MIN_BATCH` matrices on), or numpy (the triangle, then one
        gather). The same floating-point operations: identical results.

    Returns
    -------
    ndarray, shape (trials, d, d)
        Exactly symmetric.

    Examples
    --------
    >>> import numpy as np
    >>> symmetric_from_upper(np.eye(2), 0.5, np.array([[1.0, 2.0, 3.0]]))
    array([[[1.5, 1. ],
            [1. , 2.5]]])
    """
    if method not in SOLVE_METHODS:
        raise ValueError(f"method must be one of {SOLVE_METHODS}; got {method!r}")
    d = base.shape[0]
    rows, cols = np.triu_indices(d)
    base_upper = np.ascontiguousarray(base[rows, cols], dtype=np.float64)
    if _compiled(method, upper.shape[0]):
        out = np.empty((upper.shape[0], d, d))
        upper = np.ascontiguousarray(upper, dtype=np.float64)
        _mirror_kernel()(base_upper, float(scale), upper, out)
        return out
    mirror = np.empty((d, d), dtype=np.intp)
    mirror[rows, cols] = np.arange(rows.size)
    mirror[cols, rows] = mirror[rows, cols]
    return (base_upper[None, :] + scale * upper)[:, mirror]
