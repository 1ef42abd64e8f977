r"""Quasi-Newton solver of the one-participation ME dual (Denisov et al. 2022), large ``T``.

The single-participation problem of :func:`~dpreg.estimators.ftrl_me.solve_me`,
:math:`\min\{\mathrm{tr}(WX^{-1}) : \mathrm{diag}(X) = 1\}`, :math:`W = A^\top A`, has the
concave dual (module docstring of :mod:`dpreg.estimators.ftrl_me`, :math:`H = \Lambda`)

.. math::

    g(\lambda) = 2\,\mathrm{tr}\big((\Lambda^{1/2}W\Lambda^{1/2})^{1/2}\big) - \textstyle\sum_i
    \lambda_i, \qquad \partial g/\partial\lambda_i = X^\star_{ii}(\lambda) - 1,

:math:`X^\star(\lambda) = \Lambda^{-1/2}S\Lambda^{-1/2}`, :math:`S = (\Lambda^{1/2}W
\Lambda^{1/2})^{1/2}` (envelope theorem). With :math:`M = \Lambda^{1/2}W\Lambda^{1/2} =
V\Sigma^2V^\top` everything an iteration needs comes from this one eigendecomposition
and :math:`O(T^2)` work: the gradient in :math:`u = \log\lambda` is
:math:`S_{ii} - \lambda_i` with :math:`S_{ii} = \sum_j V_{ij}^2\sigma_j`; the dual bound
is :math:`\max_{t>0} g(t\lambda) = (\sum_j\sigma_j)^2/\sum_i\lambda_i` (the best scale,
also a dual point); the feasible point :math:`\tilde X = RX^\star R`,
:math:`R = \mathrm{Diag}(X^\star_{ii})^{-1/2}` (unit diagonal, the same point as the
fixed point's) has :math:`\mathrm{tr}(W\tilde X^{-1}) = \mathrm{tr}(M D S^{-1} D) =
\sum_{jk} Q_{jk}^2\sigma_j^2/\sigma_k` with :math:`D = \mathrm{Diag}(X^\star_{ii})^{1/2}`,
:math:`Q = V^\top D V` (one symmetric product). No inverse and no other T x T product.

The ascent is L-BFGS (scipy's L-BFGS-B, unbounded) on :math:`g` in :math:`u`, after
three of Denisov et al.'s fixed-point steps (:math:`\lambda_i \leftarrow
\lambda_i X^\star_{ii}`, which find the scale), preconditioned by the
:math:`\lambda` reached (:math:`u = u_0 + \Lambda_0^{-1/2}w`: a gradient step in
:math:`w` is the fixed point's step to first order). If L-BFGS stops before the gap
closes (a failed line search), fixed-point steps continue from its last point. Every
evaluation counts as one iteration. About 12 eigendecompositions on the prefix-sum
workload and 35 on the momentum workload at any ``T`` from 250 to 2000 (against 37 and
300+ for the fixed point; docs/scaling.md).
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import eigh
from scipy.optimize import minimize

__all__ = ["solve_single_dual"]

WARM_STEPS = 3
"""Fixed-point steps before L-BFGS (they set the scale of lambda)."""


class _Certified(Exception):
    """Raised inside the objective to stop the optimiser once the gap is closed."""


class _Dual:
    """Evaluations of the dual at ``u = log(lambda)``, with the best bound and point."""

    def __init__(self, W: np.ndarray, tol: float, max_iter: int) -> None:
        self.W, self.tol, self.max_iter = W, tol, max_iter
        self.evaluations = 0
        self.best_dual, self.best_primal = -np.inf, np.inf
        self.best: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self.last_u: np.ndarray | None = None

    def gap_closed(self) -> bool:
        return self.best_primal - self.best_dual <= self.tol * self.best_primal

    def __call__(self, u: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        """Return ``g(u)``, its gradient in ``u`` and ``diag(S)``; stop when certified."""
        if self.evaluations >= self.max_iter:
            raise _Certified  # budget spent: the caller reports the best point found
        self.evaluations += 1
        self.last_u = u
        lam = np.exp(u)
        s = np.sqrt(lam)
        M = s[:, None] * self.W * s[None, :]
        ev, V = eigh(M, driver="evd", check_finite=False, overwrite_a=True)
        sig = np.sqrt(np.clip(ev, 1e-300, None))
        diag_s = (V * V) @ sig
        lam_sum = float(lam.sum())
        self.best_dual = max(self.best_dual, float(sig.sum()) ** 2 / lam_sum)
        if ev[0] > 0 and np.all(diag_s > 0):  # else the feasible point is not computable
            B = V * (diag_s / lam)[:, None] ** 0.25
            Q = B.T @ B  # V^T D V, D = diag(X*_ii)^(1/2)
            primal = float(np.sum(Q * Q * (ev[:, None] / sig[None, :])))
            if np.isfinite(primal) and primal < self.best_primal:
                self.best_primal = primal
                self.best = (V.copy(), sig.copy(), diag_s.copy())
        if self.gap_closed():
            raise _Certified
        return 2.0 * float(sig.sum()) - lam_sum, diag_s - lam, diag_s


def solve_single_dual(
    W: np.ndarray, tol: float, max_iter: int
) -> tuple[np.ndarray, float, int, bool]:
    r"""Maximise the one-participation dual by L-BFGS; return the best feasible point.

    Parameters
    ----------
    W : ndarray (T, T)
        :math:`A^\top A`, positive definite (checked by the caller).
    tol : float
        Stop when ``(primal - dual) / primal <= tol`` (best of each so far).
    max_iter : int
        At most this many eigendecompositions.

    Returns
    -------
    gram : ndarray (T, T)
        The best feasible :math:`\tilde X` found (unit diagonal set exactly).
    dual_bound : float
        The best dual value (a lower bound on the optimum).
    iterations : int
        Eigendecompositions done.
    converged : bool
        Whether the gap reached ``tol``.

    Examples
    --------
    >>> from dpreg.estimators.ftrl_factorizations import prefix_matrix
    >>> A = prefix_matrix(16)
    >>> gram, dual, its, ok = solve_single_dual(A.T @ A, 1e-8, 100)
    >>> ok, bool(np.allclose(np.diag(gram), 1.0)), round(dual, 2)
    (True, True, 45.67)
    """
    T = W.shape[0]
    dual = _Dual(W, tol, max_iter)
    u = np.zeros(T)
    try:
        for _ in range(WARM_STEPS):
            _, _, diag_s = dual(u)
            u = np.log(diag_s)  # lambda <- lambda X*_ii = S_ii
        scale = np.exp(-u / 2)
        u0 = u

        def objective(w: np.ndarray) -> tuple[float, np.ndarray]:
            value, grad, _ = dual(u0 + scale * w)
            return -value, -scale * grad

        minimize(
            objective,
            np.zeros(T),
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": max_iter, "maxfun": max_iter, "ftol": 0.0, "gtol": 0.0},
        )
        # L-BFGS stopped before the gap closed: fixed-point steps from its last point
        u = dual.last_u
        while True:
            _, _, diag_s = dual(u)
            u = np.log(diag_s)
    except _Certified:
        pass
    assert dual.best is not None, "no evaluation gave a feasible point"
    V, sig, diag_s = dual.best
    r = 1.0 / np.sqrt(diag_s)  # R Lambda^(-1/2) = diag(S_ii)^(-1/2)
    Vr = V * r[:, None]
    gram = (Vr * sig[None, :]) @ Vr.T
    np.fill_diagonal(gram, 1.0)
    gram = 0.5 * (gram + gram.T)
    return gram, dual.best_dual, dual.evaluations, dual.gap_closed()
