r"""Per-replicate algebra of the sketch and IHM bootstraps in O(d^2), drawn by law.

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
* **IHM** (:func:`ihm_solutions`): :math:`H = FWF^\top/k` with
  :math:`F = V\mathrm{diag}(r)` and :math:`W\sim\mathrm{Wishart}_d(k, I)`, so
  :math:`H^{-1}g = k\,V\mathrm{diag}(r)^{-1}W^{-1}v`, :math:`v = \mathrm{diag}(r)^{-1}
  V^\top g`. For :math:`W` independent of :math:`v` and any orthogonal :math:`R` with
  :math:`Re_1 = u = v/|v|`, :math:`W^{-1}u` has the law of :math:`RW^{-1}e_1` (rotation
  invariance), and partitioning :math:`W` after its first coordinate,
  :math:`W^{-1}e_1 = (1, -W_{22}^{-1}w_{21})/w_{11\cdot 2}` with
  :math:`w_{11\cdot 2}\sim\chi^2_{k-d+1}` independent of :math:`W_{22}^{-1}w_{21}`, which
  has the law of :math:`z/\sqrt{\chi^2_{k-d+2}}` (as above, in dimension d - 1; Muirhead
  1982, Thms 3.2.10 and 3.2.12): two chi-squares and d - 1 normals per replicate and step
  instead of the :math:`d(d+1)/2` draws of :math:`B`; :math:`R` is a Householder
  reflection (O(d)).
* **The eigenvalue test** (:func:`bordered_min_eigenvalue`, compiled):
  :math:`\lambda_{\min}` of :math:`\Sigma_b - \eta_b I` is that of the arrowhead matrix
  :math:`\begin{pmatrix}\mathrm{diag}(w) & a\\ a^\top & c\end{pmatrix}`,
  :math:`a = V^\top g_b` (an orthogonal similarity), the root below
  :math:`\min(w, c)` of the secular equation :math:`c - \lambda - \sum_i a_i^2/(w_i -
  \lambda) = 0` (decreasing and concave there: safeguarded Newton steps from the right);
  its absolute error is of order :math:`u(|c| + |\lambda|)`, as LAPACK's.

Only replicates whose system is far from the singular cut-off :math:`d\,\varepsilon` of
the estimators' rule (where the reference would solve, not pseudo-invert) are solved here:
those with :math:`r_{\min}\ge` :data:`MIN_RATIO` :math:`r_{\max}`. The others are
flagged and the caller forms and solves their Wishart matrices (the reference path).
Tested in ``tests/unit/test_bootstrap_kernel.py``.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np

__all__ = [
    "MIN_RATIO",
    "adassp_systems",
    "adassp_systems_reference",
    "bordered_min_eigenvalue",
    "interval_quantiles",
    "ihm_solutions",
    "ihm_steps",
    "ihm_steps_reference",
    "sketch_solutions",
]

#: Smallest ratio r_min / r_max of the replicates solved here: the condition number of
#: the factor F (F_xx) is then at most 1e4 (that of the system at most 1e8 times the
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


def adassp_systems(G: np.ndarray, scale: float, upper: np.ndarray, ridge: np.ndarray) -> np.ndarray:
    r"""AdaSSP's replicate systems :math:`G + \sigma\xi_b + \lambda_b I` in one compiled pass.

    Bit for bit :func:`adassp_systems_reference` (the numpy expression of the bootstrap,
    ``tests/unit/test_bootstrap_kernel.py``) without its three (t, B, d, d) temporaries
    (the gathered symmetric noise, its scaled copy, the ridge's diagonal matrices).

    Parameters
    ----------
    G : ndarray, shape (t, d, d)
        Plug-in Gram of each trial (need not be exactly symmetric: entry (i, j) and
        (j, i) are each added to the same noise, as numpy does).
    scale : float
        Noise scale :math:`\sigma`.
    upper : ndarray, shape (t, B, d (d + 1) / 2)
        The symmetric noise's upper triangle, row by row (``numpy.triu_indices`` order).
    ridge : ndarray, shape (t, B)

    Returns
    -------
    ndarray, shape (t, B, d, d)

    Examples
    --------
    >>> import numpy as np
    >>> G, up, ridge = np.eye(2)[None], np.array([[[1.0, 2.0, 3.0]]]), np.array([[0.5]])
    >>> adassp_systems(G, 0.1, up, ridge)[0, 0].tolist()
    [[1.6, 0.2], [0.2, 1.8]]
    """
    G, upper, ridge = _f64(G), _f64(upper), _f64(ridge)
    t, d = G.shape[0], G.shape[-1]
    if G.shape != (t, d, d) or upper.shape[::2] != (t, d * (d + 1) // 2):
        raise ValueError(
            f"G must be (t, d, d) and upper (t, B, d(d+1)/2); got {G.shape} and {upper.shape}"
        )
    if ridge.shape != upper.shape[:2]:
        raise ValueError(f"ridge must have shape {upper.shape[:2]}; got {ridge.shape}")
    out = np.empty((t, upper.shape[1], d, d))
    _kernels().adassp_systems(G, float(scale), upper, ridge, out)
    return out


def interval_quantiles(est: np.ndarray, lower: float, upper: float) -> np.ndarray:
    """``numpy.quantile(est, [lower, upper], axis=1)`` bit for bit, by compiled selection.

    numpy's default (``method="linear"``) takes the order statistics ``k`` and ``k + 1``
    around each virtual index ``(B - 1) q`` and interpolates them with its ``_lerp``
    (``a + (b - a) g``, or ``b - (b - a)(1 - g)`` where ``g >= 0.5``). The order statistics
    are values of ``est`` (no arithmetic), found here by two selections per column
    instead of numpy's partition of the moved axis (its per-call cost dominates at the
    bootstrap's (1, 500, d)); the interpolation is numpy's expression on them. A column
    with a NaN or a zero order statistic, or quantiles whose order statistics overlap or
    reach the last one, is left to ``numpy.quantile`` itself.

    Parameters
    ----------
    est : ndarray, shape (t, B, d)
    lower, upper : float
        Quantile levels, ``0 <= lower < upper <= 1``.

    Returns
    -------
    ndarray, shape (2, t, d)

    Examples
    --------
    >>> import numpy as np
    >>> est = np.random.default_rng(0).normal(size=(2, 500, 3))
    >>> q = interval_quantiles(est, 0.025, 0.975)
    >>> bool(np.array_equal(q, np.quantile(est, [0.025, 0.975], axis=1)))
    True
    """
    est = np.asarray(est, dtype=np.float64)
    if est.ndim != 3:
        raise ValueError(f"est must have shape (t, B, d); got {est.shape}")
    if not 0.0 <= lower < upper <= 1.0:
        raise ValueError(f"need 0 <= lower < upper <= 1; got lower={lower!r}, upper={upper!r}")
    nb = est.shape[1]
    q = np.asanyarray([lower, upper])
    virtual = (nb - 1) * q  # numpy's virtual indexes and weights (method "linear")
    previous = np.floor(virtual)
    k0, k1 = int(previous[0]), int(previous[1])
    out = np.empty((4, est.shape[0], est.shape[2]))
    if not (
        0 <= k0
        and k0 + 1 <= k1
        and virtual[1] < nb - 1
        and _kernels().interval_order_statistics(est, k0, k1, out, np.empty(nb))
    ):
        return np.quantile(est, [lower, upper], axis=1)
    gamma = np.asanyarray(virtual - previous, dtype=virtual.dtype).reshape(2, 1, 1)
    a, b = out[0::2], out[1::2]
    diff_b_a = b - a
    result = np.add(a, diff_b_a * gamma)
    np.subtract(b, diff_b_a * (1 - gamma), out=result, where=gamma >= 0.5, casting="unsafe")
    return result


def adassp_systems_reference(
    G: np.ndarray, scale: float, upper: np.ndarray, ridge: np.ndarray
) -> np.ndarray:
    """Numpy reference of :func:`adassp_systems` (the bootstrap's original expression).

    Examples
    --------
    >>> import numpy as np
    >>> G, up, ridge = np.eye(2)[None], np.array([[[1.0, 2.0, 3.0]]]), np.array([[0.5]])
    >>> adassp_systems_reference(G, 0.1, up, ridge)[0, 0].tolist()
    [[1.6, 0.2], [0.2, 1.8]]
    """
    t, nb = upper.shape[:2]
    d = G.shape[-1]
    rows, cols = np.triu_indices(d)
    index = np.empty((d, d), dtype=np.intp)
    index[rows, cols] = index[cols, rows] = np.arange(rows.size)
    xi = np.take(upper, index.ravel(), axis=-1).reshape(t, nb, d, d)
    return G[:, None] + scale * xi + ridge[..., None, None] * np.eye(d)


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
    V: np.ndarray, r: np.ndarray, g: np.ndarray, q: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray]:
    r"""IHM's steps :math:`H^{-1}g`, :math:`H = FWF^\top/k`, :math:`F = V\mathrm{diag}(r)`, by law.

    :math:`H^{-1}g = k\,V\mathrm{diag}(r)^{-1}\,W^{-1}v`, :math:`v = \mathrm{diag}(r)^{-1}
    V^\top g`, and for :math:`W\sim\mathrm{Wishart}_d(k, I)` independent of :math:`v`,
    :math:`W^{-1}v` has the law of :math:`|v|\,\sigma R_h q` with ``q`` a draw of
    :math:`W^{-1}e_1` and :math:`R_h` the reflection with :math:`R_he_1 = \sigma u`,
    :math:`u = v/|v|` (module docstring).

    Parameters
    ----------
    V : ndarray, shape (t, d, d)
    r : ndarray, shape (t, B, d)
    g : ndarray, shape (t, B, d)
    q : ndarray, shape (t, B, d)
        Draws of :math:`W^{-1}e_1`: :math:`(1, z/\sqrt{c_2})/c_1` with
        :math:`c_1\sim\chi^2_{k-d+1}`, :math:`c_2\sim\chi^2_{k-d+2}`,
        :math:`z\sim\mathcal N(0, I_{d-1})`.
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
    >>> step, ok = ihm_solutions(V, r, g, np.array([[[1.0 / 9.0]]]), k=4)  # W = 9
    >>> bool(np.isclose(step[0, 0, 0], 1.0 / 9.0)), bool(ok[0, 0])  # H = 4 * 9 / 4
    (True, True)
    """
    rmin, rmax = r.min(axis=-1), r.max(axis=-1)
    ok = (rmin >= MIN_RATIO * rmax) & (rmin > 0.0)
    safe = np.where(ok[..., None], r, 1.0)
    v = np.einsum("tji,tbj->tbi", V, g) / safe
    norm = np.sqrt(np.einsum("tbi,tbi->tb", v, v))
    u = v / np.where(norm > 0.0, norm, 1.0)[..., None]
    sign = np.where(u[..., 0] >= 0.0, 1.0, -1.0)
    h = sign[..., None] * u  # h = e_1 + sign u (no cancellation): R_h e_1 = -sign u
    h[..., 0] += 1.0
    coef = 2.0 * np.einsum("tbi,tbi->tb", h, q) / np.einsum("tbi,tbi->tb", h, h)
    w_inv_v = (-sign * norm)[..., None] * (q - coef[..., None] * h)
    step = float(k) * np.einsum("tij,tbj->tbi", V, w_inv_v / safe)
    ok &= np.isfinite(step).all(axis=-1)
    return step, ok


def ihm_steps(
    G: np.ndarray,
    theta: np.ndarray,
    th: np.ndarray,
    eta2: np.ndarray,
    paper: bool,
    sigma: float,
    noise: np.ndarray,
    V: np.ndarray,
    r: np.ndarray,
    q: np.ndarray,
    k: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""One step of IHM's bootstrap replicates in one compiled pass (:func:`ihm_steps_reference`).

    The simulated gradient :math:`g = G(\hat\theta - \theta_t)\,[-\eta_b^2\theta_t] +
    \sigma\zeta` and the step :math:`H^{-1}g` of :func:`ihm_solutions`, per (trial,
    replicate), from the same draws (``noise`` = :math:`\zeta`, ``q``), without the numpy
    path's (t, B, d) temporaries. Equal to :func:`ihm_steps_reference` to round-off (its
    sums run in index order, numpy's ``einsum`` in its own; ``ok`` the same where no
    step is within round-off of overflow; ``tests/unit/test_bootstrap_kernel.py``).

    Parameters
    ----------
    G : ndarray, shape (t, d, d)
        Plug-in Hessian of each trial.
    theta : ndarray, shape (t, d)
        The release's estimate (units of :math:`X/C_X`).
    th : ndarray, shape (t, B, d)
        The replicates' iterates :math:`\theta_t`.
    eta2 : ndarray, shape (t, B)
        :math:`\eta_b^2` (read only when ``paper``).
    paper : bool
        Line 6 as printed (with :math:`-\eta_b^2\theta_t`).
    sigma : float
    noise : ndarray, shape (t, B, d)
    V : ndarray, shape (t, d, d)
    r : ndarray, shape (t, B, d)
    q : ndarray, shape (t, B, d)
    k : int

    Returns
    -------
    step : ndarray, shape (t, B, d)
    ok : ndarray of bool, shape (t, B)
    g : ndarray, shape (t, B, d)
        The gradients (for the caller's reference solve of the replicates not ``ok``).

    Examples
    --------
    >>> import numpy as np
    >>> one = np.ones((1, 1, 1))
    >>> step, ok, g = ihm_steps(2 * np.eye(1)[None], np.ones((1, 1)), 0 * one, one[0], False,
    ...                         0.0, 0 * one, np.eye(1)[None], 2 * one, one / 9, 4)
    >>> float(g[0, 0, 0]), bool(np.isclose(step[0, 0, 0], 2.0 / 9.0)), bool(ok[0, 0])
    (2.0, True, True)
    """
    G, theta, th, eta2 = _f64(G), _f64(theta), _f64(th), _f64(eta2)
    noise, V, r, q = _f64(noise), _f64(V), _f64(r), _f64(q)
    t, nb, d = th.shape
    for name, a, shape in (
        ("G", G, (t, d, d)), ("theta", theta, (t, d)), ("eta2", eta2, (t, nb)),
        ("noise", noise, (t, nb, d)), ("V", V, (t, d, d)), ("r", r, (t, nb, d)),
        ("q", q, (t, nb, d)),
    ):  # fmt: skip
        if a.shape != shape:
            raise ValueError(f"{name} must have shape {shape}; got {a.shape}")
    step, g = np.empty((t, nb, d)), np.empty((t, nb, d))
    ok = np.empty((t, nb), dtype=np.bool_)
    _kernels().ihm_steps(
        G, theta, th, eta2, bool(paper), float(sigma), noise, V, r, q, float(k), MIN_RATIO,
        step, ok, g,
    )  # fmt: skip
    return step, ok, g


def ihm_steps_reference(
    G: np.ndarray,
    theta: np.ndarray,
    th: np.ndarray,
    eta2: np.ndarray,
    paper: bool,
    sigma: float,
    noise: np.ndarray,
    V: np.ndarray,
    r: np.ndarray,
    q: np.ndarray,
    k: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Numpy reference of :func:`ihm_steps`: the bootstrap's ``einsum`` and :func:`ihm_solutions`.

    Examples
    --------
    >>> import numpy as np
    >>> one = np.ones((1, 1, 1))
    >>> step, ok, g = ihm_steps_reference(2 * np.eye(1)[None], np.ones((1, 1)), 0 * one,
    ...     one[0], False, 0.0, 0 * one, np.eye(1)[None], 2 * one, one / 9, 4)
    >>> float(g[0, 0, 0]), bool(np.isclose(step[0, 0, 0], 2.0 / 9.0)), bool(ok[0, 0])
    (2.0, True, True)
    """
    g = np.einsum("tij,tbj->tbi", G, theta[:, None, :] - th)
    if paper:
        g = g - eta2[..., None] * th
    g = g + sigma * noise
    step, ok = ihm_solutions(V, r, g, q, k)
    return step, ok, g
