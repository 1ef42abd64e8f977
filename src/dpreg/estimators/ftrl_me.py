r"""Scalable solver for the multi-epoch (ME) factorization of Table 3 (large ``T``).

Choquette-Choo et al. (2023), Table 3, row "Multi-Epoch (ME)" (Choquette-Choo et al.
2023b; the single-participation case is Denisov et al. 2022). The error-optimal
factorization minimises the prefix-sum error of Eq. (3),
:math:`\mathrm{tr}(AX^{-1}A^\top)` over encoder Gram matrices :math:`X = C^\top C \succ
0`, under a sensitivity constraint. :func:`~dpreg.estimators.ftrl_factorizations.
optimal_factorization` and ``optimal_multi_participation_factorization`` solve it as
SDPs (``T`` up to 64); this module solves it for ``T`` in the thousands with one
eigendecomposition per iteration.

**Constraint set (our reading of 2023b, docs/choquettechoo2023.md deviation 19).** The
steps are split into *groups* that partition :math:`[0, T)`: singletons for one
participation, the fixed-epoch patterns :math:`\{i, i+b, \dots\}` for ``k``
participations ``b`` apart. The solver imposes :math:`X_{gg} = \mathrm{Diag}(d_g)`,
:math:`\mathbf 1^\top d_g = 1`: the columns of :math:`C` of two steps one example may
share are orthogonal (the structure of 2023b's optimal ME matrices) and their squared
norms sum to 1, so the worst case over gradient directions
(``pattern_sensitivity_sq``) is exactly 1 whatever the signs of the other entries. One
participation: :math:`\mathrm{diag}(X) = 1`, Denisov et al.'s problem. The allocation
:math:`d_g` is optimised too.

**Certificate (exact problem).** For any block-diagonal :math:`H \succ 0` whose block
:math:`H_g` has a constant diagonal :math:`\mu_g`, :math:`H_g/\mu_g` is a correlation
matrix, so :math:`\langle X_{gg}, H_g\rangle \le \mu_g` holds for every :math:`X` of
multi-participation sensitivity at most 1 (any signs). Weak duality then gives

.. math::

    g(H) = 2\,\mathrm{tr}\big((L^\top W L)^{1/2}\big) - \textstyle\sum_g \mu_g
    \ \le\ \min\{\mathrm{tr}(WX^{-1}) : \text{sensitivity}(X) \le 1\},

:math:`W = A^\top A`, :math:`H = LL^\top` (block Cholesky): a lower bound on the
*exact* problem (not only on the restricted one), the minimum of the Lagrangian
being attained at the geometric mean :math:`X^\star(H) = H^{-1}\#W =
L^{-\top}(L^\top WL)^{1/2}L^{-1}`. A zero gap therefore also proves the restriction
lossless (it is, to the solver tolerance, in every case tested).

**Iteration (Denisov et al.'s fixed point, generalised to blocks).** Lift every block
to a constant diagonal (:math:`H_g \mathrel{+}= \mathrm{Diag}(\mu_g - (H_g)_{ii})`,
:math:`\mu_g = \max_i (H_g)_{ii}`; keeps :math:`H \succ 0`), compute
:math:`X^\star(H)`, then :math:`H_g \leftarrow H_g^{1/2}D_g^{-1/2}X^\star_{gg}
D_g^{-1/2}H_g^{1/2}` and :math:`d_g \propto d_g \odot \mathrm{diag}(H_g)` (the
allocation moves towards the steps whose multiplier is largest; at the optimum the
diagonal of :math:`H_g` is constant). For singletons this is exactly
:math:`\lambda_i \leftarrow \lambda_i X^\star_{ii}` (Denisov et al. 2022). Every
iterate gives a *feasible* point by a block-diagonal congruence,
:math:`\tilde X = K^\top X^\star K`, :math:`K_g = (X^\star_{gg})^{-1/2}D_g^{1/2}`, so
:math:`\tilde X_{gg} = D_g` exactly; the solver stops when
:math:`(\mathrm{tr}(W\tilde X^{-1}) - g(H))/\mathrm{tr}(W\tilde X^{-1}) \le`
``tol``.

**Every use checks the certificate.** There is no convergence proof of the fixed point
(none in Denisov et al. either), so :func:`solve_me` refuses, by default, to return a
point whose certified relative gap exceeds ``gap_tol`` (:data:`DEFAULT_GAP_TOL`,
:class:`MECertificateError`), and :meth:`MESolution.factorization` (the only way to use
the point as a mechanism) checks it again: an unconverged solve can never be reported
as "ME". ``gap_tol=None`` returns the raw point (diagnostics only); its
:meth:`~MESolution.factorization` then needs ``gap_tol=None`` too.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from dpreg.estimators.ftrl_factorizations import (
    MatrixFactorization,
    _check_horizon,
    _factor_gram,
    prefix_matrix,
)
from dpreg.estimators.ftrl_me_dual import BLOCK_STARTS, solve_block_dual, solve_single_dual

__all__ = [
    "DEFAULT_GAP_TOL",
    "ME_METHODS",
    "MECertificateError",
    "MESolution",
    "check_gap_tol",
    "fixed_epoch_groups",
    "solve_me",
]

DEFAULT_GAP_TOL = 1e-4
"""Largest certified relative gap at which a fixed-point solution is used as "ME"."""

ME_METHODS: tuple[str, ...] = ("auto", "lbfgs", "fixed_point")
"""Algorithms of :func:`solve_me`: ``fixed_point`` (Denisov et al.'s iteration, the
reference), ``lbfgs`` (L-BFGS on the same dual, :mod:`dpreg.estimators.ftrl_me_dual`)
and ``auto`` (``lbfgs`` unless ``relaxation != 1``, a parameter of the fixed point).
Both are checked by the same certificate."""


class MECertificateError(RuntimeError):
    """A fixed-point ME solution whose certified relative gap exceeds the tolerance."""


def check_gap_tol(gap_tol: object, name: str = "gap_tol") -> float:
    """Validate a gap tolerance (a number in (0, 1)) and return it as a float."""
    if isinstance(gap_tol, bool) or not isinstance(gap_tol, float | int) or not 0 < gap_tol < 1:
        raise ValueError(f"{name} must be in (0, 1); got {gap_tol!r}")
    return float(gap_tol)


def fixed_epoch_groups(T: int, k: int, b: int | None) -> list[np.ndarray]:
    """Return the groups of the fixed-epoch pattern: ``{i + j b : j < k}`` for ``i < b``.

    ``k = 1`` gives singleton groups (one participation; ``b`` ignored). With ``k > 1``
    the patterns must cover every step with groups of one size: ``T`` a multiple of
    ``b`` and ``T <= k b`` (a step outside every pattern would carry no sensitivity
    constraint).

    Examples
    --------
    >>> [g.tolist() for g in fixed_epoch_groups(6, 3, 2)]
    [[0, 2, 4], [1, 3, 5]]
    """
    T = _check_horizon(T)
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise ValueError(f"k must be a positive integer; got {k!r}")
    if k == 1:
        return [np.array([t]) for t in range(T)]
    if isinstance(b, bool) or not isinstance(b, int | np.integer) or b < 1:
        raise ValueError(f"b must be a positive integer when k > 1; got {b!r}")
    if T > k * b or T % b:
        raise ValueError(
            f"T = {T} must be a multiple of b = {b} and at most k * b = {k * b} (every step"
            " in one participation pattern, all patterns of one length)"
        )
    return [np.arange(i, T, b)[:k] for i in range(min(b, T))]


@dataclass(frozen=True)
class MESolution:
    r"""Result of :func:`solve_me`.

    Attributes
    ----------
    gram : ndarray, shape (T, T)
        Feasible :math:`X = C^\top C` (:math:`X_{gg} = \mathrm{Diag}(d_g)`,
        :math:`\mathbf 1^\top d_g = 1`, for every group).
    objective : float
        :math:`\mathrm{tr}(AX^{-1}A^\top)` at ``gram`` (an upper bound on the optimum).
    dual_bound : float
        Best dual value :math:`g(H)`: a lower bound on the optimum of the *exact*
        problem (sensitivity at most 1 under the participation model, any signs).
    sensitivity_sq : float
        Squared sensitivity of ``gram`` under the participation model (1 by
        construction: each pattern's orthogonal columns have squared norms summing to 1).
    iterations : int
    converged : bool
        Whether the relative gap reached ``tol`` within ``max_iter``.
    seconds : float
        Wall-clock time of the solve.
    participations, separation : int
    method : str
        The algorithm that found the point (:data:`ME_METHODS`, resolved).
    """

    gram: np.ndarray
    objective: float
    dual_bound: float
    sensitivity_sq: float
    iterations: int
    converged: bool
    seconds: float
    participations: int
    separation: int
    method: str = "fixed_point"

    @property
    def relative_gap(self) -> float:
        """``(objective - dual_bound) / objective``: certified suboptimality of ``gram``."""
        return (self.objective - self.dual_bound) / self.objective

    @property
    def total_error(self) -> float:
        r""":math:`\gamma^2\,\mathrm{tr}(AX^{-1}A^\top)` (Eq. 3 at a fixed privacy level)."""
        return self.sensitivity_sq * self.objective

    def require_certificate(self, gap_tol: float = DEFAULT_GAP_TOL) -> MESolution:
        """Return ``self`` if the certified relative gap is at most ``gap_tol``; else raise.

        Raises
        ------
        MECertificateError
            When ``relative_gap > gap_tol`` (or is not finite): the point is not certified
            optimal to ``gap_tol`` and must not be reported as ME.

        Examples
        --------
        >>> solve_me(8, tol=1e-8).require_certificate(1e-6).relative_gap <= 1e-6
        True
        """
        gap_tol = check_gap_tol(gap_tol)
        gap = self.relative_gap
        if not (np.isfinite(gap) and gap <= gap_tol):
            raise MECertificateError(
                f"ME ({self.method}) not certified: relative gap {gap:.3g} > gap_tol = {gap_tol:g}"
                f" after {self.iterations} iterations (objective {self.objective:.10g}, dual"
                f" bound {self.dual_bound:.10g}); raise max_iter or loosen gap_tol"
            )
        return self

    def factorization(self, gap_tol: float | None = DEFAULT_GAP_TOL) -> MatrixFactorization:
        """Lower-triangular ``C`` with ``C^T C = gram`` and ``B = C^-1``.

        Checks the certificate first (:meth:`require_certificate` with ``gap_tol``;
        ``None`` skips it, for diagnostics of an unconverged point only).
        """
        if gap_tol is not None:
            self.require_certificate(gap_tol)
        tag = "single" if self.participations == 1 else f"k{self.participations}"
        return _factor_gram(self.gram, f"optimal_{tag}_fixed_point")


def _sym_pow(blocks: np.ndarray, power: float) -> np.ndarray:
    """Symmetric power of a stack of SPD blocks (n, p, p)."""
    w, V = np.linalg.eigh(blocks)
    return (V * np.clip(w, 1e-300, None)[:, None, :] ** power) @ np.swapaxes(V, 1, 2)


def _blockdiag_right(M: np.ndarray, blocks: np.ndarray) -> np.ndarray:
    """``M @ blockdiag(blocks)`` for equal contiguous blocks (n, p, p)."""
    n, p, _ = blocks.shape
    return np.einsum("rnp,npq->rnq", M.reshape(M.shape[0], n, p), blocks).reshape(M.shape)


def solve_me(
    T: int,
    k: int = 1,
    b: int | None = None,
    *,
    workload: np.ndarray | None = None,
    tol: float = 1e-6,
    max_iter: int = 500,
    gap_tol: float | None = DEFAULT_GAP_TOL,
    relaxation: float = 1.0,
    method: str = "auto",
    block_start: str = "scaled",
) -> MESolution:
    r"""Error-optimal ME factorization for large ``T`` (fixed point with a duality gap).

    Minimises :math:`\mathrm{tr}(AX^{-1}A^\top)` s.t. :math:`X_{gg} = \mathrm{Diag}(d_g)`,
    :math:`\mathbf 1^\top d_g = 1`, for the groups of :func:`fixed_epoch_groups` (one
    participation: :math:`\mathrm{diag}X = 1`, Denisov et al. 2022; ``k`` fixed-epoch
    participations ``b`` apart: orthogonal columns within each pattern, our reading of
    Choquette-Choo et al. 2023b), the allocation :math:`d` included. See the module
    docstring for the dual bound (valid for the exact problem), the iteration and the
    feasible primal point.

    Parameters
    ----------
    T : int
        Horizon.
    k : int
        Participations (epochs); ``k > 1`` needs ``b``, ``T`` a multiple of ``b`` and
        ``T <= k b``.
    b : int, optional
        Separation (steps per epoch).
    workload : ndarray (T, T), optional
        :math:`A`; default the prefix-sum matrix (Eq. 12, Table 3's error (3)).
    tol : float
        Stop when ``(objective - dual_bound) / objective <= tol``; in (0, 1).
    max_iter : int
        At most this many eigendecompositions of a T x T matrix.
    relaxation : float
        Over-relaxation :math:`\omega \in [1, 4]` of the update,
        :math:`H_g \leftarrow H_g^{1/2}(D_g^{-1/2}X^\star_{gg}D_g^{-1/2})^{\omega}
        H_g^{1/2}` (singletons: :math:`\lambda_i \leftarrow \lambda_i
        (X^\star_{ii})^\omega`); 1 is Denisov et al.'s iteration. The certificate does
        not depend on it (any :math:`H` gives a dual bound and a feasible point); about
        :math:`\omega` times fewer iterations where the plain iteration is slow (the
        momentum workload: 579 -> 193 iterations at T = 250 with 3), divergent above ~4.
        One participation only (``k = 1``).
    gap_tol : float or None
        Certificate check (default :data:`DEFAULT_GAP_TOL`): raise
        :class:`MECertificateError` when the returned point's certified relative gap
        exceeds it (e.g. ``max_iter`` too small). ``None`` returns an uncertified point
        (diagnostics only).
    method : {"auto", "lbfgs", "fixed_point"}
        :data:`ME_METHODS`. ``lbfgs`` maximises the same dual by L-BFGS, one
        eigendecomposition per evaluation (:mod:`dpreg.estimators.ftrl_me_dual`): the
        same certificate (a dual bound and a feasible point of the same form). At
        T = 2000: 10 eigendecompositions on the prefix-sum workload, 49 on the momentum
        workload and 59 for 20 epochs of 100 steps, against 37, more than 300 (not
        certified) and 108 for the fixed point (docs/scaling.md). ``auto``: ``lbfgs`` unless
        ``relaxation != 1``.
    block_start : {"scaled", "uniform"}
        Starting point of ``lbfgs`` with ``k > 1``
        (:data:`~dpreg.estimators.ftrl_me_dual.BLOCK_STARTS`; ``uniform``: 24 instead of
        59 evaluations for 20 epochs of 100 steps). The certificate does not depend on it.

    Returns
    -------
    MESolution
        The best feasible point found, its objective and the best dual bound.

    Raises
    ------
    MECertificateError
        When ``gap_tol`` is set and the certified relative gap exceeds it.

    Examples
    --------
    >>> sol = solve_me(16)
    >>> sol.converged, sol.objective >= sol.dual_bound, round(sol.total_error, 2)
    (True, True, 45.67)
    """
    T = _check_horizon(T, 20_000)
    groups = fixed_epoch_groups(T, k, b)
    if not (isinstance(tol, float | int) and not isinstance(tol, bool) and 0 < tol < 1):
        raise ValueError(f"tol must be in (0, 1); got {tol!r}")
    if isinstance(max_iter, bool) or not isinstance(max_iter, int | np.integer) or max_iter < 1:
        raise ValueError(f"max_iter must be a positive integer; got {max_iter!r}")
    if gap_tol is not None:
        gap_tol = check_gap_tol(gap_tol)
    if (
        isinstance(relaxation, bool)
        or not isinstance(relaxation, float | int)
        or not 1 <= relaxation <= 4
    ):
        raise ValueError(f"relaxation must be in [1, 4]; got {relaxation!r}")
    relaxation = float(relaxation)
    if method not in ME_METHODS:
        raise ValueError(f"method must be one of {ME_METHODS}; got {method!r}")
    if block_start not in BLOCK_STARTS:
        raise ValueError(f"block_start must be one of {BLOCK_STARTS}; got {block_start!r}")
    if method == "auto":
        method = "lbfgs" if relaxation == 1.0 else "fixed_point"
    if method == "lbfgs" and relaxation != 1.0:
        raise ValueError("relaxation != 1 is a parameter of method='fixed_point', not 'lbfgs'")
    if relaxation != 1.0 and k > 1:
        raise ValueError(
            "relaxation != 1 is for one participation only (with fixed-epoch blocks the"
            " relaxed update can stall; the certificate check then fails)"
        )
    A = prefix_matrix(T) if workload is None else np.asarray(workload, dtype=np.float64)
    if A.shape != (T, T) or not np.all(np.isfinite(A)):
        raise ValueError(f"workload must be a finite ({T}, {T}) matrix")
    W = A.T @ A
    # the prefix-sum matrix is unit lower triangular, of full rank: the check is for a
    # given workload (an eigvalsh of T x T, ~0.6 s at T = 2000)
    if workload is not None and np.linalg.eigvalsh(W)[0] <= 1e-12 * np.abs(W).max():
        raise ValueError("workload must have full column rank (A^T A positive definite)")
    start = time.perf_counter()
    p = len(groups[0])
    n = len(groups)
    order = np.concatenate(groups)
    if method == "lbfgs":
        if k == 1:
            # prefix sum: W^-1 = A^-1 A^-T, A^-1 = I - (subdiagonal of ones), bidiagonal
            factor = (np.ones(T), -np.ones(T - 1)) if workload is None else None
            gram, best_dual, its, ok = solve_single_dual(
                W, float(tol), int(max_iter), inverse_factor=factor
            )
        else:
            Wp = W[np.ix_(order, order)]
            grouped, _, best_dual, its, ok = solve_block_dual(
                Wp, n, p, float(tol), int(max_iter), start=block_start
            )
            gram = np.empty((T, T))
            gram[np.ix_(order, order)] = grouped
        return _certified_solution(gram, A, best_dual, its, ok, start, k, b, gap_tol, method)
    Wp = W[np.ix_(order, order)]  # grouped order: H is block diagonal with (p, p) blocks
    H = np.broadcast_to(np.eye(p), (n, p, p)).copy()
    d = np.full((n, p), 1.0 / p)
    eye = np.eye(p, dtype=bool)
    best_primal, best_dual, best = np.inf, -np.inf, None
    converged, iterations = False, 0
    for _ in range(int(max_iter)):
        iterations += 1
        diag = np.diagonal(H, axis1=1, axis2=2)
        mu = diag.max(axis=1)
        H = H + (mu[:, None] - diag)[:, :, None] * eye  # constant diagonal per block
        L = np.linalg.cholesky(H)
        M = _blockdiag_right(_blockdiag_right(Wp, L).T, L).T  # L^T W L
        ev, V = np.linalg.eigh(0.5 * (M + M.T))
        root = np.sqrt(np.clip(ev, 1e-300, None))
        best_dual = max(best_dual, 2.0 * float(root.sum()) - float(mu.sum()))
        S = (V * root) @ V.T  # (L^T W L)^{1/2}
        Linv = np.linalg.inv(L)
        X = _blockdiag_right(_blockdiag_right(S, Linv).T, Linv).T  # L^-T S L^-1
        Xb = np.stack([X[j * p : (j + 1) * p, j * p : (j + 1) * p] for j in range(n)])
        Xb = 0.5 * (Xb + np.swapaxes(Xb, 1, 2))
        K = _sym_pow(Xb, -0.5) * np.sqrt(d)[:, None, :]
        # feasible point K^T X K (blocks Diag(d)); objective tr(W (K^T X K)^-1) =
        # tr(N^T W N S^-1) with the block-diagonal N = K^-1 L
        Nb = np.linalg.solve(K, L)
        P = _blockdiag_right(_blockdiag_right(Wp, Nb).T, Nb).T
        primal = float(np.sum((V / root) * (P @ V)))
        if primal < best_primal:
            Xt = _blockdiag_right(_blockdiag_right(X, K).T, K).T
            best_primal, best = primal, (Xt, d.copy())
        if best_primal - best_dual <= tol * best_primal:
            converged = True
            break
        Dm = 1.0 / np.sqrt(d)
        Hh = _sym_pow(H, 0.5)
        step = Dm[:, :, None] * Xb * Dm[:, None, :]
        if relaxation != 1.0:
            step = _sym_pow(0.5 * (step + np.swapaxes(step, 1, 2)), relaxation)
        H = Hh @ step @ Hh
        H = 0.5 * (H + np.swapaxes(H, 1, 2))
        d = d * np.diagonal(H, axis1=1, axis2=2)
        d = d / d.sum(axis=1, keepdims=True)
    assert best is not None
    Xt, d_best = best
    gram = np.empty((T, T))
    gram[np.ix_(order, order)] = Xt
    for j, g in enumerate(groups):  # exact structure (removes rounding in the congruence)
        gram[np.ix_(g, g)] = np.diag(d_best[j])
    gram = 0.5 * (gram + gram.T)
    return _certified_solution(
        gram, A, best_dual, iterations, converged, start, k, b, gap_tol, method
    )


def _certified_solution(
    gram: np.ndarray,
    A: np.ndarray,
    best_dual: float,
    iterations: int,
    converged: bool,
    start: float,
    k: int,
    b: int | None,
    gap_tol: float | None,
    method: str,
) -> MESolution:
    """Recompute the objective of ``gram`` and check the certificate (both methods)."""
    from scipy.linalg import solve_triangular  # lazy: a table job loads no SciPy (docs/scaling.md)

    # the returned point's own objective (Cholesky), never trusted from the iteration
    Lg = np.linalg.cholesky(gram)
    # a triangular solve (T^3 flops; numpy's solve would factor Lg again by LU)
    objective = float(np.sum(solve_triangular(Lg, A.T, lower=True, check_finite=False) ** 2))
    solution = MESolution(
        gram=gram,
        objective=objective,
        dual_bound=best_dual,
        sensitivity_sq=1.0,
        iterations=iterations,
        converged=converged,
        seconds=time.perf_counter() - start,
        participations=int(k),
        separation=int(b) if k > 1 and b is not None else 1,
        method=method,
    )
    return solution if gap_tol is None else solution.require_certificate(gap_tol)
