r"""Compiled per-replicate algebra of the sketch and IHM bootstraps (O(d^2) per replicate).

The bootstrap of linear mixing, Sheffet's sketch and IHM (:mod:`dpreg.inference.bootstrap`)
draws per replicate a Wishart matrix :math:`M = FBB^\top F^\top` (Bartlett: :math:`B`
lower triangular, :math:`BB^\top\sim\mathrm{Wishart}(k, I)`) and solves a system of it;
the reference path forms :math:`M` and solves with :func:`numpy.linalg.eigh` factors and
:func:`~dpreg.estimators._linalg.solve_symmetric_batch` (several LAPACK calls of
:math:`O(p^3)` per replicate). Here the same quantities are computed from the factors
directly, by triangular substitution (docs/inference.md, "Replicates"):

* **Sketch** (:func:`sketch_solutions`): with the plug-in Gram
  :math:`\Sigma_b = \begin{pmatrix}G_{xx} & g_b\\ g_b^\top & c_b\end{pmatrix} + \eta_b I`,
  :math:`G_{xx} = V\mathrm{diag}(w)V^\top` and the *bordered* factor
  :math:`F = \begin{pmatrix}V\mathrm{diag}(r) & 0\\ l^\top & s\end{pmatrix}`,
  :math:`r = \sqrt{w + \eta_b}`, :math:`l = r^{-1}\odot V^\top g_b`,
  :math:`s^2 = c_b + \eta_b - |l|^2` (so :math:`FF^\top = \Sigma_b`), the solution of
  :math:`M_{xx}\theta = M_{xy}` is
  :math:`\theta_b = V\,\mathrm{diag}(r)^{-1}(l + s\,B_{xx}^{-\top}b)`, with :math:`B_{xx}`
  the leading :math:`d\times d` block of :math:`B` and :math:`b` its last row's first
  :math:`d` entries (:math:`M_{xx} = F_{xx}B_{xx}B_{xx}^\top F_{xx}^\top`,
  :math:`M_{xy} = F_{xx}B_{xx}(B_{xx}^\top l + s\,b)`).
* **IHM** (:func:`ihm_solutions`): :math:`H = FBB^\top F^\top/k` with
  :math:`F = V\mathrm{diag}(r)`, so :math:`H^{-1}g = k\,V\mathrm{diag}(r)^{-1}B^{-\top}
  B^{-1}\mathrm{diag}(r)^{-1}V^\top g`: the same draws, the same solution to round-off.
* **The eigenvalue test** (:func:`bordered_min_eigenvalue`): :math:`\lambda_{\min}` of
  :math:`\Sigma_b - \eta_b I` is that of the arrowhead matrix
  :math:`\begin{pmatrix}\mathrm{diag}(w) & a\\ a^\top & c\end{pmatrix}`,
  :math:`a = V^\top g_b` (an orthogonal similarity), the root below
  :math:`\min(w, c)` of the secular equation :math:`c - \lambda - \sum_i a_i^2/(w_i -
  \lambda) = 0` (decreasing there), found by bisection to the last bit; its absolute
  error is of order :math:`u(|c| + |\lambda|)`, as LAPACK's.

A replicate is solved here only when a bound on the condition number of its system,
:math:`\kappa \le (r_{\max}/r_{\min})\,\|B\|_F\,\beta` with :math:`\beta \ge
\|B^{-1}\|_2` from the comparison matrix (Higham, *Accuracy and Stability of Numerical
Algorithms*, 2nd ed., Thm 8.12: :math:`\|B^{-1}\|_2^2 \le \|M(B)^{-1}\|_1
\|M(B)^{-1}\|_\infty`), is at most :data:`MAX_CONDITION` (so the system is far from the
singular cut-off :math:`d\,\varepsilon` of the estimators' rule and the reference would
solve it, not pseudo-invert it); the others are flagged and the caller solves them by
the reference path. Tested against the reference to round-off in
``tests/unit/test_bootstrap_kernel.py``.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np

__all__ = ["MAX_CONDITION", "bordered_min_eigenvalue", "ihm_solutions", "sketch_solutions"]

#: Largest certified bound on the condition number of a replicate's factor F B (the
#: system's is its square, 1e8, far below the rule's cut-off 1 / (d eps) > 4e13).
MAX_CONDITION = 1e4


@cache
def _kernels() -> Any:
    """Import the compiled kernels (:mod:`dpreg.inference._bootstrap_jit`) on first use."""
    from dpreg.inference import _bootstrap_jit

    return _bootstrap_jit


def _f64(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float64)


def bordered_min_eigenvalue(w: np.ndarray, a: np.ndarray, c: np.ndarray) -> np.ndarray:
    r"""Smallest eigenvalue of the arrowhead matrices ``[[diag(w[t]), a[t, b]], [a', c[t, b]]]``.

    Parameters
    ----------
    w : ndarray, shape (t, d)
    a : ndarray, shape (t, B, d)
    c : ndarray, shape (t, B)

    Returns
    -------
    ndarray, shape (t, B)
        The root below ``min(w, c)`` of the secular equation (module docstring), equal to
        :func:`numpy.linalg.eigvalsh`'s smallest eigenvalue to round-off.

    Examples
    --------
    >>> import numpy as np
    >>> w, a, c = np.array([[1.0, 2.0]]), np.array([[[0.5, 0.0]]]), np.array([[3.0]])
    >>> S = np.array([[1.0, 0.0, 0.5], [0.0, 2.0, 0.0], [0.5, 0.0, 3.0]])
    >>> bool(np.isclose(bordered_min_eigenvalue(w, a, c)[0, 0], np.linalg.eigvalsh(S)[0]))
    True
    """
    w, a, c = _f64(w), _f64(a), _f64(c)
    t, nb, d = a.shape
    if w.shape != (t, d) or c.shape != (t, nb):
        raise ValueError(f"w must be (t, d) and c (t, B) for a of shape {a.shape}")
    out = np.empty((t, nb))
    _kernels().min_eig(w, a, c, out)
    return out


def sketch_solutions(
    V: np.ndarray,
    w: np.ndarray,
    g: np.ndarray,
    c: np.ndarray,
    eta: np.ndarray,
    chi: np.ndarray,
    low: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    r"""Solutions of :math:`M_{xx}\theta = M_{xy}` for :math:`M = FBB^\top F^\top`, F bordered.

    Parameters
    ----------
    V, w : ndarray, shapes (t, d, d), (t, d)
        :math:`G_{xx} = V\mathrm{diag}(w)V^\top`, ``w >= 0``.
    g, c, eta : ndarray, shapes (t, B, d), (t, B), (t, B)
        Each replicate's :math:`g_b`, :math:`c_b` and shift :math:`\eta_b \ge 0`.
    chi, low : ndarray, shapes (t, B, d + 1), (t, B, d (d + 1) / 2)
        The Bartlett factor's diagonal (square roots of the chi-squares) and its entries
        below the diagonal in the row-major order of ``numpy.tril_indices(d + 1, -1)``.

    Returns
    -------
    theta : ndarray, shape (t, B, d)
        :math:`V\mathrm{diag}(r)^{-1}(l + sB_{xx}^{-\top}b)` (module docstring).
    ok : ndarray of bool, shape (t, B)
        Replicates certified (condition bound at most :data:`MAX_CONDITION`, finite);
        ``theta`` is undefined elsewhere and the caller solves those by the reference.

    Examples
    --------
    >>> import numpy as np
    >>> V, w = np.eye(1)[None], np.array([[2.0]])
    >>> g, c, eta = np.array([[[1.0]]]), np.array([[1.0]]), np.array([[0.0]])
    >>> chi, low = np.array([[[3.0, 2.0]]]), np.array([[[0.5]]])
    >>> theta, ok = sketch_solutions(V, w, g, c, eta, chi, low)
    >>> F = np.array([[np.sqrt(2.0), 0.0], [1 / np.sqrt(2.0), np.sqrt(0.5)]])
    >>> M = F @ np.array([[3.0, 0.0], [0.5, 2.0]]) @ np.array([[3.0, 0.5], [0.0, 2.0]]) @ F.T
    >>> bool(ok[0, 0]), bool(np.isclose(theta[0, 0, 0], M[0, 1] / M[0, 0]))
    (True, True)
    """
    V, w, g, c, eta = _f64(V), _f64(w), _f64(g), _f64(c), _f64(eta)
    chi, low = _f64(chi), _f64(low)
    t, nb, d = g.shape
    theta = np.empty((t, nb, d))
    ok = np.zeros((t, nb), dtype=bool)
    _kernels().sketch(V, w, g, c, eta, chi, low, MAX_CONDITION, theta, ok)
    return theta, ok


def ihm_solutions(
    V: np.ndarray, r: np.ndarray, g: np.ndarray, chi: np.ndarray, low: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray]:
    r""":math:`H^{-1}g` for :math:`H = FBB^\top F^\top/k`, :math:`F = V\mathrm{diag}(r)`.

    Parameters
    ----------
    V : ndarray, shape (t, d, d)
    r : ndarray, shape (t, B, d)
    g : ndarray, shape (t, B, d)
    chi, low : ndarray, shapes (t, B, d), (t, B, d (d - 1) / 2)
        The Bartlett factor (as :func:`sketch_solutions`, here d x d).
    k : int

    Returns
    -------
    step : ndarray, shape (t, B, d)
    ok : ndarray of bool, shape (t, B)
        As :func:`sketch_solutions`.

    Examples
    --------
    >>> import numpy as np
    >>> V, r, g = np.eye(1)[None], np.array([[[2.0]]]), np.array([[[1.0]]])
    >>> step, ok = ihm_solutions(V, r, g, np.array([[[3.0]]]), np.zeros((1, 1, 0)), k=4)
    >>> bool(np.isclose(step[0, 0, 0], 1.0 / 9.0)), bool(ok[0, 0])  # H = 4 * 9 / 4
    (True, True)
    """
    V, r, g, chi, low = _f64(V), _f64(r), _f64(g), _f64(chi), _f64(low)
    t, nb, d = g.shape
    step = np.empty((t, nb, d))
    ok = np.zeros((t, nb), dtype=bool)
    _kernels().ihm(V, r, g, chi, low, float(k), MAX_CONDITION, step, ok)
    return step, ok
