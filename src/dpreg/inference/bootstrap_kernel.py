r"""Per-replicate algebra of the sketch and IHM bootstraps in O(d^2) (numba where it loops).

The bootstrap of linear mixing, Sheffet's sketch and IHM (:mod:`dpreg.inference.bootstrap`)
draws per replicate a Wishart matrix :math:`M = FBB^\top F^\top` (Bartlett: :math:`B`
lower triangular, :math:`BB^\top\sim\mathrm{Wishart}(k, I)`) and solves a system of it;
the reference path forms :math:`M` and solves with :func:`numpy.linalg.eigh` factors and
:func:`~dpreg.estimators._linalg.solve_symmetric_batch` (several LAPACK calls of
:math:`O(p^3)` per replicate). Here (docs/inference.md, "Replicates"):

* **Sketch** (:func:`sketch_solutions`): with the plug-in Gram
  :math:`\Sigma_b = \begin{pmatrix}G_{xx} & g_b\\ g_b^\top & c_b\end{pmatrix} + \eta_b I`,
  :math:`G_{xx} = V\mathrm{diag}(w)V^\top`, and the *bordered* factor
  :math:`F = \begin{pmatrix}V\mathrm{diag}(r) & 0\\ l^\top & s\end{pmatrix}`,
  :math:`r = \sqrt{w + \eta_b}`, :math:`l = r^{-1}\odot V^\top g_b`,
  :math:`s^2 = c_b + \eta_b - |l|^2` (so :math:`FF^\top = \Sigma_b`), the solution of
  :math:`M_{xx}\theta = M_{xy}` is
  :math:`\theta_b = V\,\mathrm{diag}(r)^{-1}(l + s\,x)`, :math:`x = B_{xx}^{-\top}b`, with
  :math:`B_{xx}` the leading :math:`d\times d` block of :math:`B` and :math:`b` its last
  row's first :math:`d` entries (:math:`M_{xx} = F_{xx}B_{xx}B_{xx}^\top F_{xx}^\top`,
  :math:`M_{xy} = F_{xx}B_{xx}(B_{xx}^\top l + s\,b)`). Given :math:`W = B_{xx}B_{xx}^\top
  \sim\mathrm{Wishart}_d(k, I)`, :math:`x\sim\mathcal N(0, W^{-1})`; its law is spherical
  and :math:`|x|^2 = |z|^2\,(u^\top W^{-1}u)` with :math:`1/(u^\top W^{-1}u)\sim
  \chi^2_{k-d+1}` independent of the direction :math:`u` (Muirhead, *Aspects of
  Multivariate Statistical Theory*, 1982, Thm 3.2.12), so :math:`x` has the law of
  :math:`z/\sqrt{\chi^2_{k-d+1}}`, :math:`z\sim\mathcal N(0, I_d)`: d normals and one
  chi-square per replicate instead of the :math:`(d+1)(d+2)/2` draws of :math:`B`.
* **IHM** (:func:`ihm_solutions`): :math:`H = FBB^\top F^\top/k` with
  :math:`F = V\mathrm{diag}(r)`, so :math:`H^{-1}g = k\,V\mathrm{diag}(r)^{-1}B^{-\top}
  B^{-1}\mathrm{diag}(r)^{-1}V^\top g` (compiled): the same draws, the same solution to
  round-off.
* **The eigenvalue test** (:func:`bordered_min_eigenvalue`, compiled):
  :math:`\lambda_{\min}` of :math:`\Sigma_b - \eta_b I` is that of the arrowhead matrix
  :math:`\begin{pmatrix}\mathrm{diag}(w) & a\\ a^\top & c\end{pmatrix}`,
  :math:`a = V^\top g_b` (an orthogonal similarity), the root below
  :math:`\min(w, c)` of the secular equation :math:`c - \lambda - \sum_i a_i^2/(w_i -
  \lambda) = 0` (decreasing and concave there: safeguarded Newton steps from the right);
  its absolute error is of order :math:`u(|c| + |\lambda|)`, as LAPACK's.

Only replicates whose system is far from the singular cut-off :math:`d\,\varepsilon` of
the estimators' rule (where the reference would solve, not pseudo-invert) are solved here:
IHM's when :math:`\kappa(FB) \le (r_{\max}/r_{\min})\,\|B\|_F\,\beta \le`
:data:`MAX_CONDITION`, :math:`\beta \ge \|B^{-1}\|_2` from the comparison matrix (Higham,
*Accuracy and Stability of Numerical Algorithms*, 2nd ed., Thm 8.12:
:math:`\|B^{-1}\|_2^2 \le \|M(B)^{-1}\|_1\|M(B)^{-1}\|_\infty`); the sketch's when
:math:`r_{\min}\ge` :data:`MIN_RATIO` :math:`r_{\max}`. The others are flagged and the
caller solves them by the reference path. Tested in ``tests/unit/test_bootstrap_kernel.py``.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np

__all__ = [
    "MAX_CONDITION",
    "MIN_RATIO",
    "bordered_min_eigenvalue",
    "ihm_solutions",
    "sketch_solutions",
]

#: Largest certified bound on the condition number of a replicate's factor F B (the
#: system's is its square, 1e8, far below the rule's cut-off 1 / (d eps) > 4e13).
MAX_CONDITION = 1e4

#: Smallest ratio r_min / r_max of the sketch replicates solved from the factors: the
#: condition number of F_xx is then at most 1e4 (that of M_xx at most 1e8 times the
#: Wishart_d(k, I) draw's; a draw of condition above about 4e6 -- far in its tail for the
#: k >= d + 1 of the estimators -- would make the rule pseudo-invert it).
MIN_RATIO = 1e-4


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
    x: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    r"""Solutions :math:`V\mathrm{diag}(r)^{-1}(l + s\,x)` of the sketch replicates.

    With :math:`x = B_{xx}^{-\top}b` this is :math:`M_{xx}^{-1}M_{xy}` for :math:`M =
    FBB^\top F^\top`, F the bordered factor (module docstring); the bootstrap draws
    :math:`x` directly by its law, :math:`z/\sqrt{\chi^2_{k-d+1}}`.

    Parameters
    ----------
    V, w : ndarray, shapes (t, d, d), (t, d)
        :math:`G_{xx} = V\mathrm{diag}(w)V^\top`, ``w >= 0``.
    g, c, eta : ndarray, shapes (t, B, d), (t, B), (t, B)
        Each replicate's :math:`g_b`, :math:`c_b` and shift :math:`\eta_b \ge 0`.
    x : ndarray, shape (t, B, d)

    Returns
    -------
    theta : ndarray, shape (t, B, d)
    ok : ndarray of bool, shape (t, B)
        Replicates with :math:`r_{\min} \ge` :data:`MIN_RATIO` :math:`r_{\max} > 0` and a
        finite solution (their system is far from singular); ``theta`` is undefined
        elsewhere and the caller solves those by the reference.

    Examples
    --------
    >>> import numpy as np
    >>> V, w = np.eye(1)[None], np.array([[2.0]])
    >>> g, c, eta = np.array([[[1.0]]]), np.array([[1.0]]), np.array([[0.0]])
    >>> B = np.array([[3.0, 0.0], [0.5, 2.0]])  # a Bartlett factor; x = B_xx^{-T} b
    >>> theta, ok = sketch_solutions(V, w, g, c, eta, np.array([[[0.5 / 3.0]]]))
    >>> F = np.array([[np.sqrt(2.0), 0.0], [1 / np.sqrt(2.0), np.sqrt(0.5)]])
    >>> M = F @ B @ B.T @ F.T
    >>> bool(ok[0, 0]), bool(np.isclose(theta[0, 0, 0], M[0, 1] / M[0, 0]))
    (True, True)
    """
    r = np.sqrt(np.maximum(w[:, None, :] + eta[..., None], 0.0))
    ok = r.min(axis=-1) >= MIN_RATIO * r.max(axis=-1)
    ok &= r.min(axis=-1) > 0.0
    safe = np.where(ok[..., None], r, 1.0)
    v = np.einsum("tji,tbj->tbi", V, g) / safe
    s = np.sqrt(np.maximum(c + eta - np.einsum("tbi,tbi->tb", v, v), 0.0))
    v += s[..., None] * x
    v /= safe
    theta = np.einsum("tij,tbj->tbi", V, v)
    ok &= np.isfinite(theta).all(axis=-1)
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
