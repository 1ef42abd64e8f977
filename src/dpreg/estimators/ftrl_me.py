r"""Scalable solver for the multi-epoch (ME) factorization of Table 3 (large ``T``).

Choquette-Choo et al. (2023), Table 3, row "Multi-Epoch (ME)" (Choquette-Choo et al.
2023b; the single-participation case is Denisov et al. 2022). The error-optimal
factorization minimises the prefix-sum error of Eq. (3),
:math:`\mathrm{tr}(AX^{-1}A^\top)` over encoder Gram matrices :math:`X = C^\top C \succ
0`, under a sensitivity constraint. :func:`~dpreg.estimators.ftrl_factorizations.
optimal_factorization` solves it as an SDP (``T`` up to 64); this module solves it for
``T`` in the thousands with one eigendecomposition per iteration.

**Constraint set (our reading of 2023b, docs/choquettechoo2023.md deviation 17).** The
steps are split into *groups* :math:`g_0, \dots, g_{m-1}` that partition
:math:`[0, T)`; the constraint is :math:`X_{gg} = I` for every group (unit column
norms, and the columns of :math:`C` of two steps in one group orthogonal). One
participation: singleton groups, i.e. :math:`\mathrm{diag}(X) = 1`, Denisov et al.'s
problem (the optimum has every diagonal constraint active, so ``=`` and ``<=``
coincide). ``k`` participations ``b`` apart in the fixed-epoch pattern
:math:`\{i, i+b, \dots, i+(k-1)b\}`: the groups are those patterns; since
:math:`X_\pi = I` the worst case over gradient directions is exactly
:math:`\mathrm{tr}X_\pi = |\pi|` (``pattern_sensitivity_sq``), whatever the signs of the
other entries, so the squared sensitivity is :math:`k` for every factorization of the
set. 2023b's optimal ME matrices show exactly this structure (orthogonal columns for
the rounds one example may share); imposing it is a restriction of the exact
multi-participation problem (never better, tested against the exact SDP).

**Algorithm (Denisov et al. 2022 fixed point, generalised to blocks).** With
:math:`W = A^\top A` and a block-diagonal multiplier :math:`H \succ 0` (one symmetric
block per group), the Lagrangian :math:`\mathrm{tr}(WX^{-1}) + \langle H, X - I\rangle`
is minimised by the geometric mean :math:`X^\star(H) = H^{-1}\#W =
L^{-\top}(L^\top WL)^{1/2}L^{-1}` (:math:`H = LL^\top`, block Cholesky), and the dual
function is

.. math::

    g(H) = 2\,\mathrm{tr}\big((L^\top W L)^{1/2}\big) - \mathrm{tr}(H)
    \ \le\ \min_{X_{gg} = I}\mathrm{tr}(WX^{-1}),

a certified lower bound for every :math:`H \succ 0` (weak duality). The update
:math:`H_g \leftarrow H_g^{1/2}X^\star_{gg}H_g^{1/2}` (for singleton groups
:math:`\lambda_i \leftarrow \lambda_i X^\star_{ii}`, Denisov et al.'s iteration) has the
KKT points :math:`X^\star_{gg} = I` as fixed points. Every iterate gives a *feasible*
primal point by a block-diagonal congruence, :math:`\tilde X = KX^\star K`,
:math:`K_g = (X^\star_{gg})^{-1/2}`, so :math:`\tilde X_{gg} = I` exactly; its objective
minus :math:`g(H)` is the duality gap, and the solver stops when the relative gap is
at most ``tol``.
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

__all__ = ["MESolution", "fixed_epoch_groups", "solve_me"]


def fixed_epoch_groups(T: int, k: int, b: int | None) -> list[np.ndarray]:
    """Return the groups of the fixed-epoch pattern: ``{i + j b : j < k}`` for ``i < b``.

    ``k = 1`` gives singleton groups (one participation; ``b`` ignored). With ``k > 1``
    the patterns must cover every step, so ``T <= k b`` is required (a step outside
    every pattern would carry no sensitivity constraint).

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
    if T > k * b:
        raise ValueError(
            f"T = {T} exceeds k * b = {k * b}: steps after the k-th epoch would be in no"
            " participation pattern"
        )
    return [np.arange(i, T, b)[:k] for i in range(min(b, T))]


@dataclass(frozen=True)
class MESolution:
    r"""Result of :func:`solve_me`.

    Attributes
    ----------
    gram : ndarray, shape (T, T)
        Feasible :math:`X = C^\top C` (:math:`X_{gg} = I` for every group).
    objective : float
        :math:`\mathrm{tr}(AX^{-1}A^\top)` at ``gram`` (an upper bound on the optimum).
    dual_bound : float
        Best dual value :math:`g(H)` (a lower bound on the optimum).
    sensitivity_sq : float
        Squared sensitivity of ``gram`` under the participation model: the largest
        group size (1 for one participation, ``k`` for ``k`` epochs).
    iterations : int
    converged : bool
        Whether the relative gap reached ``tol`` within ``max_iter``.
    seconds : float
        Wall-clock time of the solve.
    participations, separation : int
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

    @property
    def relative_gap(self) -> float:
        """``(objective - dual_bound) / objective``: certified suboptimality of ``gram``."""
        return (self.objective - self.dual_bound) / self.objective

    @property
    def total_error(self) -> float:
        r""":math:`\gamma^2\,\mathrm{tr}(AX^{-1}A^\top)` (Eq. 3 at a fixed privacy level)."""
        return self.sensitivity_sq * self.objective

    def factorization(self) -> MatrixFactorization:
        """Lower-triangular ``C`` with ``C^T C = gram`` and ``B = C^-1``."""
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
) -> MESolution:
    r"""Error-optimal ME factorization for large ``T`` (fixed point with a duality gap).

    Minimises :math:`\mathrm{tr}(AX^{-1}A^\top)` s.t. :math:`X_{gg} = I` for the groups
    of :func:`fixed_epoch_groups` (one participation: :math:`\mathrm{diag}X = 1`,
    Denisov et al. 2022; ``k`` fixed-epoch participations ``b`` apart: orthogonal unit
    columns within each pattern, our reading of Choquette-Choo et al. 2023b). See the
    module docstring for the dual bound, the iteration and the feasible primal point.

    Parameters
    ----------
    T : int
        Horizon.
    k : int
        Participations (epochs); ``k > 1`` needs ``b`` and ``T <= k b``.
    b : int, optional
        Separation (steps per epoch).
    workload : ndarray (T, T), optional
        :math:`A`; default the prefix-sum matrix (Eq. 12, Table 3's error (3)).
    tol : float
        Stop when ``(objective - dual_bound) / objective <= tol``; in (0, 1).
    max_iter : int
        At most this many eigendecompositions of a T x T matrix.

    Returns
    -------
    MESolution
        The best feasible point found, its objective and the best dual bound.

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
    A = prefix_matrix(T) if workload is None else np.asarray(workload, dtype=np.float64)
    if A.shape != (T, T) or not np.all(np.isfinite(A)):
        raise ValueError(f"workload must be a finite ({T}, {T}) matrix")
    W = A.T @ A
    if np.linalg.eigvalsh(W)[0] <= 1e-12 * np.abs(W).max():
        raise ValueError("workload must have full column rank (A^T A positive definite)")
    start = time.perf_counter()
    # pad every group to the same size p with dummy steps so blocks stack; the padded
    # system keeps the groups independent (dummies get identity rows/columns).
    p = max(len(g) for g in groups)
    n = len(groups)
    order = np.full(n * p, -1)
    for j, g in enumerate(groups):
        order[j * p : j * p + len(g)] = g
    real = order >= 0
    Wp = np.eye(n * p)
    Wp[np.ix_(real, real)] = W[np.ix_(order[real], order[real])]
    H = np.broadcast_to(np.eye(p), (n, p, p)).copy()
    best_primal, best_dual, best_X = np.inf, -np.inf, None
    converged, iterations = False, 0
    for _ in range(int(max_iter)):
        iterations += 1
        L = np.linalg.cholesky(H)
        M = _blockdiag_right(_blockdiag_right(Wp, L).T, L).T  # L^T W L
        ev, V = np.linalg.eigh(0.5 * (M + M.T))
        ev = np.clip(ev, 1e-300, None)
        root = np.sqrt(ev)
        dual = 2.0 * float(root.sum()) - float(np.trace(H, axis1=1, axis2=2).sum())
        # dummy steps contribute 2*1 - 1 = 1 each at their fixed point (H = 1, W = 1)
        dual -= float(np.sum(~real))
        S = (V * root) @ V.T  # (L^T W L)^{1/2}
        Linv = np.linalg.inv(L)
        X = _blockdiag_right(_blockdiag_right(S, Linv).T, Linv).T  # L^-T S L^-1
        Xb = np.stack([X[j * p : (j + 1) * p, j * p : (j + 1) * p] for j in range(n)])
        Xb = 0.5 * (Xb + np.swapaxes(Xb, 1, 2))
        K = _sym_pow(Xb, -0.5)
        Xt = _blockdiag_right(_blockdiag_right(X, K).T, K).T
        # objective of the feasible point: tr(W Xt^-1), Xt^-1 = K^-1 L S^-1 L^T K^-1
        Nb = np.linalg.solve(K, L)  # blocks of N = K^-1 L
        P = _blockdiag_right(_blockdiag_right(Wp, Nb).T, Nb).T  # N^T W N
        primal = float(np.sum((V / root) * (P @ V))) - float(np.sum(~real))
        if dual > best_dual:
            best_dual = dual
        if primal < best_primal:
            best_primal, best_X = primal, Xt
        if best_primal - best_dual <= tol * best_primal:
            converged = True
            break
        Hh = _sym_pow(H, 0.5)
        H = Hh @ Xb @ Hh
        H = 0.5 * (H + np.swapaxes(H, 1, 2))
    assert best_X is not None
    gram = np.empty((T, T))
    idx = order[real]
    gram[np.ix_(idx, idx)] = best_X[np.ix_(real, real)]
    for g in groups:  # exact structure (removes rounding in the congruence)
        gram[np.ix_(g, g)] = np.eye(len(g))
    gram = 0.5 * (gram + gram.T)
    # the returned point's own objective (Cholesky; never above best_primal but exact)
    Lg = np.linalg.cholesky(gram)
    objective = float(np.sum(np.linalg.solve(Lg, A.T) ** 2))
    return MESolution(
        gram=gram,
        objective=objective,
        dual_bound=best_dual,
        sensitivity_sq=float(p),
        iterations=iterations,
        converged=converged,
        seconds=time.perf_counter() - start,
        participations=int(k),
        separation=int(b) if k > 1 and b is not None else 1,
    )
