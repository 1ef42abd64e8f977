"""Batched linear algebra shared by the estimators (one rule for singular systems)."""

from __future__ import annotations

import numpy as np

__all__ = ["solve_symmetric_batch"]


def solve_symmetric_batch(
    A: np.ndarray, b: np.ndarray
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

    Returns
    -------
    theta : ndarray, shape (trials, d)
    singular : ndarray of bool, shape (trials,)
        The systems solved by the pseudo-inverse.
    eigenvalues : ndarray, shape (trials, d)
        Eigenvalues of each ``A[t]``, ascending.

    Examples
    --------
    >>> import numpy as np
    >>> A = np.stack([np.eye(2), np.diag([1.0, 0.0])])
    >>> theta, singular, _ = solve_symmetric_batch(A, np.ones((2, 2)))
    >>> theta, singular
    (array([[1., 1.],
           [1., 0.]]), array([False,  True]))
    """
    d = A.shape[-1]
    eig = np.linalg.eigvalsh(A)
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
        pinv = np.linalg.pinv(A[singular], rcond=rcond, hermitian=True)
        theta[singular] = np.einsum("tij,tj->ti", pinv, b[singular])
    return theta, singular, eig
