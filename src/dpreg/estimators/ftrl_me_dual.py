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
evaluation counts as one iteration. 10–16 eigendecompositions on the prefix-sum
workload for ``T`` from 250 to 2000, 33–37 on the momentum workload up to ``T = 1500``
and 49 at 2000 (the fixed point: 37 on the prefix sum at 2000; on the momentum workload
366 at ``T = 250`` and not certified after 300 at 2000; docs/scaling.md). The
log-multipliers stay within ``LOG_RANGE`` above their start and above ``LAMBDA_FLOOR``
times the largest start.

On the prefix-sum workload (Eq. 12) :math:`W^{-1} = A^{-1}A^{-\top}` is tridiagonal, and
so is :math:`M^{-1}`: :func:`solve_single_dual` with ``inverse_factor`` takes the
eigenvectors of that tridiagonal matrix and the eigenvalues as Rayleigh quotients
through its bidiagonal factor (:func:`eigh_from_inverse_factor`, ~0.2 s instead of ~1.1 s
at T = 2000; the dense path is the reference, equal to round-off, issue 18,
docs/scaling.md).
"""

from __future__ import annotations

import numpy as np

__all__ = ["BLOCK_STARTS", "eigh_from_inverse_factor", "solve_block_dual", "solve_single_dual"]

WARM_STEPS = 3
"""Fixed-point steps before L-BFGS (they set the scale of lambda)."""


LAMBDA_FLOOR = 1e-12
"""Lower bound of lambda during L-BFGS, relative to the largest lambda after the warm
steps (any lambda > 0 gives a valid dual bound; the floor stops L-BFGS from spending
evaluations on driving a tiny multiplier towards 0)."""


LOG_RANGE = 30.0
"""L-BFGS keeps each log-multiplier within this distance above (one participation) or
either side (blocks) of its starting value (a factor e^30 ~ 1e13): a line search can
then never overflow the eigendecomposition."""


LBFGS_MEMORY = 10
"""Correction pairs kept by L-BFGS on the one-participation dual (scipy's ``maxcor``, its
default: more does not help there, 29 evaluations with 10, 50 or 100 on the momentum
workload at T = 1000)."""

BLOCK_LBFGS_MEMORY = 100
"""Correction pairs kept by L-BFGS on the fixed-epoch block dual. On the momentum workload
(T = 500, 5 epochs of 100 steps, tol 1e-5) 10 pairs took 777 evaluations, 50 took 319, 100
took 220 and 200 took 172 (30: not certified after 1500): the block dual's curvature is
badly conditioned and a longer memory models it (issue 18, docs/scaling.md)."""


BLOCK_STARTS: tuple[str, ...] = ("scaled", "uniform")
r"""Starting points of the block dual (:func:`solve_block_dual`): ``scaled``,
:math:`H_g = (\mathrm{tr}(S_{gg})/p)I` (one fixed-point step from :math:`H = I`, the
default), or ``uniform``, :math:`H = tI` with :math:`t = (\sum_j\sigma_j/n)^2` the best
common scale of :math:`H = I` (:math:`\max_t g(tI)`, closed form). Table 3 uses
``uniform``: 24 evaluations instead of 59 for 20 epochs of 100 steps at T = 2000 (prefix
sum, tol 1e-6) and 172 instead of 220 for 5 epochs of 100 steps on the momentum workload
at T = 500 (tol 1e-5), both certified (issue 18, docs/scaling.md)."""


def eigh_from_inverse_factor(
    lam: np.ndarray, f: np.ndarray, h: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    r"""Eigenpairs of :math:`M = \Lambda^{1/2}W\Lambda^{1/2}` from its tridiagonal inverse.

    If :math:`W^{-1} = FF^\top` with :math:`F` lower bidiagonal (diagonal ``f``,
    subdiagonal ``h``; the prefix-sum workload of Eq. (12): :math:`F = A^{-1}`,
    ``f = 1``, ``h = -1``), then :math:`M^{-1} = CC^\top`, :math:`C =
    \Lambda^{-1/2}F` lower bidiagonal, is tridiagonal: its eigenvectors are those of
    :math:`M` (LAPACK ``stevd``, divide and conquer on the tridiagonal: ~0.15 s at
    T = 2000 against ~1.1 s for the dense ``syevd`` of :math:`M`, which first reduces
    :math:`M` to tridiagonal form), and each eigenvalue of :math:`M`
    is taken as :math:`1/\|C^\top v_j\|^2` (the Rayleigh quotient through the
    factor: a sum of squares, accurate relative to the eigenvalue also for the largest
    eigenvalues of :math:`M`, whose reciprocals ``stevd`` returns only to
    :math:`\epsilon\|M^{-1}\|` absolutely). Agrees with ``eigh(M)`` to round-off
    (``tests/unit/test_ftrl_me_tridiagonal.py``).

    Parameters
    ----------
    lam : ndarray (T,)
        :math:`\lambda > 0`.
    f, h : ndarray (T,), (T - 1,)
        Diagonal and subdiagonal of :math:`F`.

    Returns
    -------
    ev : ndarray (T,)
        Eigenvalues of :math:`M`, in the order of ``eigh`` (ascending up to round-off).
    V : ndarray (T, T)
        Orthonormal eigenvectors (columns).

    Examples
    --------
    >>> from dpreg.estimators.ftrl_factorizations import prefix_matrix
    >>> A = prefix_matrix(6)
    >>> lam = np.linspace(1.0, 2.0, 6)
    >>> M = np.sqrt(lam)[:, None] * (A.T @ A) * np.sqrt(lam)[None, :]
    >>> ev, V = eigh_from_inverse_factor(lam, np.ones(6), -np.ones(5))
    >>> bool(np.allclose(ev, np.linalg.eigvalsh(M))), bool(np.allclose(V * ev @ V.T, M))
    (True, True)
    """
    r = 1.0 / np.sqrt(lam)
    c = r * f  # C = Lambda^(-1/2) F: diagonal c, subdiagonal s (C[i + 1, i] = s_i)
    s = r[1:] * h
    diag = c * c
    if diag.size == 1:  # T = 1 (stevd needs a subdiagonal)
        return 1.0 / diag, np.ones((1, 1))
    diag[1:] += s * s
    from scipy.linalg.lapack import dstevd  # lazy: job start-up (docs/scaling.md)

    w, Z, info = dstevd(diag, s * c[:-1], compute_v=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"stevd did not converge (info {info})")
    CtZ = c[:, None] * Z  # C^T Z, row i: c_i z_i + s_i z_(i+1)
    CtZ[:-1] += s[:, None] * Z[1:]
    kappa = np.einsum("ij,ij->j", CtZ, CtZ)
    return 1.0 / kappa[::-1], Z[:, ::-1]


class _Certified(Exception):
    """Raised inside the objective to stop the optimiser once the gap is closed."""


class _Dual:
    """Evaluations of the dual at ``u = log(lambda)``, with the best bound and point."""

    def __init__(
        self,
        W: np.ndarray,
        tol: float,
        max_iter: int,
        inverse_factor: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> None:
        self.W, self.tol, self.max_iter = W, tol, max_iter
        self.inverse_factor = inverse_factor
        self.evaluations = 0
        self.best_dual, self.best_primal = -np.inf, np.inf
        self.best: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self.last_u: np.ndarray | None = None

    def gap_closed(self) -> bool:
        return self.best_primal - self.best_dual <= self.tol * self.best_primal

    def __call__(self, u: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        """Return ``g(u)``, its gradient in ``u`` and ``diag(S)``; stop when certified."""
        from scipy.linalg import eigh  # lazy: job start-up (docs/scaling.md)

        if self.evaluations >= self.max_iter:
            raise _Certified  # budget spent: the caller reports the best point found
        self.evaluations += 1
        self.last_u = u
        lam = np.exp(u)
        if self.inverse_factor is None:  # the dense reference
            s = np.sqrt(lam)
            M = s[:, None] * self.W * s[None, :]
            ev, V = eigh(M, driver="evd", check_finite=False, overwrite_a=True)
        else:
            ev, V = eigh_from_inverse_factor(lam, *self.inverse_factor)
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
    W: np.ndarray,
    tol: float,
    max_iter: int,
    *,
    inverse_factor: tuple[np.ndarray, np.ndarray] | None = None,
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
    inverse_factor : tuple of ndarray, optional
        ``(f, h)``: the diagonal and subdiagonal of a lower-bidiagonal :math:`F` with
        :math:`W^{-1} = FF^\top` (the prefix-sum workload: ``f = 1``, ``h = -1``).
        Each evaluation then decomposes the tridiagonal :math:`M^{-1}`
        (:func:`eigh_from_inverse_factor`, ~0.2 s instead of ~1.1 s at T = 2000)
        instead of the dense :math:`M` (the default, the reference): the same iteration
        up to round-off.

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
    from scipy.optimize import minimize  # lazy: job start-up (docs/scaling.md)

    T = W.shape[0]
    dual = _Dual(W, tol, max_iter, inverse_factor)
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

        floor = np.log(LAMBDA_FLOOR * float(np.exp(u0).max()))  # keeps lambda > 0 in range
        lower, upper = (floor - u0) / scale, LOG_RANGE / scale
        minimize(
            objective,
            np.zeros(T),
            jac=True,
            method="L-BFGS-B",
            bounds=list(zip(lower, upper, strict=True)),
            options={
                "maxiter": max_iter,
                "maxfun": max_iter,
                "maxcor": LBFGS_MEMORY,
                "ftol": 0.0,
                "gtol": 0.0,
            },
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


class _BlockWorkspace:
    r"""The (T, T) arrays of one block-dual solve, kept across its evaluations.

    Each evaluation at T = 2000 used to allocate about ten fresh 32 MB arrays, which glibc
    hands back to the kernel and faults in again at the next evaluation (about 0.15 s of
    system time per evaluation of ~1.9 s; issue 18, docs/scaling.md). Writing into these
    instead, with the layouts numpy would give the fresh arrays (C order, or the
    transpose of one where numpy's result is in Fortran order), gives the same numbers:
    ``WL`` (:math:`WL`, then :math:`MJ`), ``M`` (:math:`L^\top WL`), ``S`` (its
    symmetric part, decomposed in place: the eigenvectors), ``X`` (``X.T``:
    :math:`V_g\sigma` and :math:`V\Sigma^{-1/2}`; then :math:`JS^{-1}`), ``Y``
    (:math:`S^{-1}`) and ``best_V`` (the best point's eigenvectors).
    """

    __slots__ = ("M", "S", "WL", "X", "Y", "best_V")

    def __init__(self, T: int) -> None:
        self.WL, self.M, self.S, self.X, self.Y, self.best_V = (np.empty((T, T)) for _ in range(6))


_BLOCK_WORKSPACE = True
"""Whether :func:`solve_block_dual` evaluates into a :class:`_BlockWorkspace` (``False``:
fresh arrays at every evaluation, the reference; the same numbers, tested in
``tests/unit/test_ftrl_me_workspace.py``)."""


def _block_primal(
    M: np.ndarray,
    V: np.ndarray,
    sig: np.ndarray,
    J: np.ndarray,
    work: _BlockWorkspace | None = None,
) -> float:
    r"""Return :math:`\mathrm{tr}(MJS^{-1}J^\top)` for block-diagonal ``J`` (n, p, p).

    :math:`\mathrm{tr}(MJS^{-1}J^\top) = \sum_{ij}(MJ)_{ij}(JS^{-1})_{ij}` with
    :math:`S^{-1} = (V\Sigma^{-1/2})(V\Sigma^{-1/2})^\top` (one symmetric product,
    :math:`T^3` flops) and the block products :math:`MJ`, :math:`JS^{-1}`
    (:math:`O(pT^2)`), instead of :math:`Q = V^\top JV` (a general product, :math:`2T^3`)
    in :func:`_block_primal_reference`; equal to round-off (tested). ``work``: a
    :class:`_BlockWorkspace` to write into (``p > 1``; ``V`` Fortran-ordered, as from ``eigh``;
    its ``WL`` and ``X`` are overwritten), the same number bit for bit.
    """
    n, p, _ = J.shape
    T = n * p
    if work is None:  # the reference: fresh arrays
        R = V * sig**-0.5
        S_inv = R @ R.T
        MJ = np.matmul(M.reshape(T, n, p).transpose(1, 0, 2), J)
        MJ = MJ.transpose(1, 0, 2).reshape(T, T)
        JS = np.matmul(J, S_inv.reshape(n, p, T)).reshape(T, T)
        return float(np.einsum("ij,ij->", MJ, JS))
    R = np.multiply(V, sig**-0.5, out=work.X.T)  # Fortran order, as V * sig**-0.5
    S_inv = np.matmul(R, R.T, out=work.Y)  # the symmetric product (syrk), as R @ R.T
    MJ = work.WL  # written as (n, T, p) blocks, read as the (T, T) copy of the reference
    np.matmul(M.reshape(T, n, p).transpose(1, 0, 2), J, out=MJ.reshape(T, n, p).transpose(1, 0, 2))
    JS = np.matmul(J, S_inv.reshape(n, p, T), out=work.X.reshape(n, p, T)).reshape(T, T)
    return float(np.einsum("ij,ij->", MJ, JS))


def _block_primal_reference(V: np.ndarray, ev: np.ndarray, sig: np.ndarray, J: np.ndarray) -> float:
    r"""Return :func:`_block_primal` as :math:`\sum_{jk}Q_{jk}^2\sigma_j^2/\sigma_k`, Q = VᵀJV."""
    n, p, _ = J.shape
    T = n * p
    Q = V.T @ np.matmul(J, V.reshape(n, p, T)).reshape(T, T)
    return float(np.sum(Q * Q * (ev[:, None] / sig[None, :])))


class _BlockDual:
    r"""Evaluations of the block dual at ``x = (u, F)`` (fixed-epoch groups, ``k > 1``).

    :math:`H_g = e^{u_g}N_gN_g^\top`, :math:`N_g` the rows of :math:`F_g` scaled to unit
    norm (so :math:`H_g` has the constant diagonal :math:`\mu_g = e^{u_g}`); ``Wp`` is
    :math:`W` in grouped order (groups of ``p`` contiguous indices).
    """

    def __init__(self, Wp: np.ndarray, n: int, p: int, tol: float, max_iter: int) -> None:
        self.Wp, self.n, self.p, self.tol, self.max_iter = Wp, n, p, tol, max_iter
        # p = 1: numpy's reshapes of the reference are views in another order, so the
        # reference's arrays (and einsum's order of the sums) are kept there
        self.work = _BlockWorkspace(n * p) if _BLOCK_WORKSPACE and p > 1 else None
        self.evaluations = 0
        self.best_dual, self.best_primal = -np.inf, np.inf
        self.best: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None
        self.last_x: np.ndarray | None = None
        self.S_gg = np.empty((n, p, p))
        self.sig_sum = 0.0

    def gap_closed(self) -> bool:
        return self.best_primal - self.best_dual <= self.tol * self.best_primal

    def __call__(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        """Return ``-g(x)`` and its gradient (L-BFGS minimises); stop when certified."""
        from scipy.linalg import eigh  # lazy: job start-up (docs/scaling.md)

        if self.evaluations >= self.max_iter:
            raise _Certified
        self.evaluations += 1
        self.last_x = x
        n, p = self.n, self.p
        T = n * p
        F = x[n:].reshape(n, p, p)
        norms = np.sqrt(np.sum(F * F, axis=2))
        N = F / norms[:, :, None]
        mu = np.exp(x[:n])
        L = np.sqrt(mu)[:, None, None] * N  # H_g = L_g L_g^T
        Wt = self.Wp.reshape(T, n, p).transpose(1, 0, 2)
        work = self.work
        if work is None:  # the reference: fresh arrays
            WL = np.matmul(Wt, L)  # [h, i, s]
            WL = WL.transpose(1, 0, 2).reshape(T, T)  # W L
            M = np.matmul(np.swapaxes(L, 1, 2), WL.reshape(n, p, T)).reshape(T, T)  # L^T W L
            Msym = 0.5 * (M + M.T)
        else:  # the same products into kept arrays (_BlockWorkspace)
            WL = work.WL
            np.matmul(Wt, L, out=WL.reshape(T, n, p).transpose(1, 0, 2))
            M = np.matmul(np.swapaxes(L, 1, 2), WL.reshape(n, p, T), out=work.M.reshape(n, p, T))
            M = M.reshape(T, T)
            np.add(M, M.T, out=work.S)
            work.S *= 0.5
            # exactly symmetric, so its transpose (Fortran order: no copy in eigh) is it
            Msym = work.S.T
        ev, V = eigh(Msym, driver="evd", check_finite=False, overwrite_a=True)
        sig = np.sqrt(np.clip(ev, 1e-300, None))
        self.sig_sum = float(sig.sum())
        Vg = V.reshape(n, p, T)
        if work is None:
            Vs = Vg * sig
        else:  # numpy's result of Vg * sig is in V's (Fortran) order
            Vs = np.multiply(Vg, sig, out=work.X.T.reshape(n, p, T))
        S_gg = np.matmul(Vs, np.swapaxes(Vg, 1, 2))  # diagonal blocks of S
        self.S_gg = S_gg
        dual = 2.0 * float(sig.sum()) - float(mu.sum())
        self.best_dual = max(self.best_dual, dual)
        L_inv = np.linalg.inv(L)
        X_gg = np.swapaxes(L_inv, 1, 2) @ S_gg @ L_inv  # blocks of X* = L^-T S L^-1
        X_gg = 0.5 * (X_gg + np.swapaxes(X_gg, 1, 2))
        diag = np.diagonal(X_gg, axis1=1, axis2=2)
        w, U = np.linalg.eigh(X_gg)
        if ev[0] > 0 and np.all(w > 0):  # else the feasible point is not computable
            d = diag / diag.sum(axis=1, keepdims=True)  # allocation: X*_gg's diagonal
            # K_g = X*_gg^(-1/2) D_g^(1/2): K^T X* K has blocks Diag(d_g) (module docstring)
            K = (U * w[:, None, :] ** -0.5) @ np.swapaxes(U, 1, 2) * np.sqrt(d)[:, None, :]
            E = L_inv @ K  # X~ = E^T S E
            J = L_inv @ np.linalg.inv(K) @ L  # tr(W X~^-1) = tr(M J S^-1 J^T)
            primal = _block_primal(M, V, sig, J, work)
            if np.isfinite(primal) and primal < self.best_primal:
                self.best_primal = primal
                if work is None:
                    best_V = V.copy()  # C order
                else:
                    best_V = work.best_V  # C order, as V.copy()
                    np.copyto(best_V, V)
                self.best = (best_V, sig.copy(), E, d)
        if self.gap_closed():
            raise _Certified
        G = 2.0 * np.swapaxes(L_inv, 1, 2) @ S_gg  # d phi / d L, phi = 2 tr((L^T W L)^1/2)
        grad_u = 0.5 * np.einsum("gpq,gpq->g", G, L) - mu
        GN = np.sqrt(mu)[:, None, None] * G
        GF = (GN - N * np.sum(GN * N, axis=2, keepdims=True)) / norms[:, :, None]
        return -dual, -np.concatenate([grad_u, GF.ravel()])


def solve_block_dual(
    Wp: np.ndarray, n: int, p: int, tol: float, max_iter: int, *, start: str = "scaled"
) -> tuple[np.ndarray, np.ndarray, float, int, bool]:
    r"""Maximise the fixed-epoch dual by L-BFGS; return the best feasible point.

    The dual of :func:`~dpreg.estimators.ftrl_me.solve_me` with ``n`` groups of ``p``
    steps, over block-diagonal :math:`H` with constant-diagonal blocks
    :math:`H_g = \mu_gN_gN_g^\top` (unit rows :math:`N_g`), parameterised by
    :math:`(\log\mu_g, F_g)`, :math:`N_g` = the rows of :math:`F_g` normalised; the
    gradient of :math:`2\,\mathrm{tr}((L^\top WL)^{1/2})` in :math:`L` is
    :math:`2L^{-\top}S` (:math:`S = (L^\top WL)^{1/2}`), whose diagonal blocks need only
    the diagonal blocks of :math:`S` (:math:`O(pT^2)` from the eigendecomposition).
    The feasible point is the fixed point's congruence :math:`K^\top X^\star K` with the
    allocation :math:`d_g \propto \mathrm{diag}(X^\star_{gg})`, its objective
    :math:`\sum_{jk}Q_{jk}^2\sigma_j^2/\sigma_k`, :math:`Q = V^\top JV`,
    :math:`J = L^{-1}K^{-1}L` (one T x T product). After :math:`H = I`, starts from
    ``start`` (:data:`BLOCK_STARTS`: :math:`H_g = (\mathrm{tr}(S_{gg})/p) I` with
    :math:`S` at :math:`H = I`, the scale of the fixed point's first step, or the best
    common scale :math:`tI`), :math:`\log\mu_g` kept within ``LOG_RANGE`` of it; L-BFGS
    restarts from its last point if it stops before the gap closes.

    Parameters
    ----------
    Wp : ndarray (T, T)
        :math:`W` in grouped order, ``T = n p``.
    n, p : int
        Groups and their size.
    tol, max_iter
        As in :func:`solve_single_dual`.
    start : {"scaled", "uniform"}
        Starting point of L-BFGS (:data:`BLOCK_STARTS`); every start gives a dual
        bound and a feasible point of the same form, so the certificate does not depend
        on it.

    Returns
    -------
    gram : ndarray (T, T)
        The best feasible point in grouped order (blocks ``Diag(d_g)`` set exactly).
    d : ndarray (n, p)
        Its allocation.
    dual_bound : float
    iterations : int
    converged : bool

    Examples
    --------
    >>> from dpreg.estimators.ftrl_factorizations import prefix_matrix
    >>> A = prefix_matrix(6)
    >>> order = [0, 2, 4, 1, 3, 5]  # groups {0, 2, 4}, {1, 3, 5}: 3 epochs of 2 steps
    >>> W = (A.T @ A)[np.ix_(order, order)]
    >>> gram, d, dual, its, ok = solve_block_dual(W, 2, 3, 1e-8, 200)
    >>> ok, bool(np.allclose(d.sum(axis=1), 1.0)), bool(np.all(gram[:3, :3] == np.diag(d[0])))
    (True, True, True)
    """
    from scipy.optimize import minimize  # lazy: job start-up (docs/scaling.md)

    if start not in BLOCK_STARTS:
        raise ValueError(f"start must be one of {BLOCK_STARTS}; got {start!r}")
    T = n * p
    dual = _BlockDual(Wp, n, p, tol, max_iter)
    eye = np.broadcast_to(np.eye(p), (n, p, p)).ravel()
    try:
        dual(np.concatenate([np.zeros(n), eye]))  # H = I
        if start == "uniform":  # g(tI) = 2 sqrt(t) sum(sigma) - t n is largest here
            u0 = np.full(n, 2.0 * np.log(dual.sig_sum / n))
        else:
            u0 = np.log(np.trace(dual.S_gg, axis1=1, axis2=2) / p)  # the scale of each block
        x = np.concatenate([u0, eye])
        bounds = [(lo, lo + 2 * LOG_RANGE) for lo in u0 - LOG_RANGE] + [(None, None)] * eye.size
        while True:
            minimize(
                dual,
                x,
                jac=True,
                method="L-BFGS-B",
                bounds=bounds,
                options={
                    "maxiter": max_iter,
                    "maxfun": max_iter,
                    "maxcor": BLOCK_LBFGS_MEMORY,
                    "ftol": 0.0,
                    "gtol": 0.0,
                },
            )
            x = dual.last_x  # stopped before the gap closed: restart from the last point
    except _Certified:
        pass
    if dual.best is None:
        raise RuntimeError("no evaluation of the ME dual gave a feasible point")
    V, sig, E, d = dual.best
    dual.work = None  # free the kept arrays (but V) before the products below
    EV = np.matmul(np.swapaxes(E, 1, 2), V.reshape(n, p, T)).reshape(T, T)  # E^T V
    gram = (EV * sig[None, :]) @ EV.T
    for j in range(n):  # exact structure (removes rounding in the congruence)
        gram[j * p : (j + 1) * p, j * p : (j + 1) * p] = np.diag(d[j])
    gram = 0.5 * (gram + gram.T)
    return gram, d, dual.best_dual, dual.evaluations, dual.gap_closed()
