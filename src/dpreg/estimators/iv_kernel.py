r"""Certified fast evaluation of the clipped gradients of the 2S-GD family on shared data.

The private query of every step of DP-2S-GD and DP-2S-GD-:math:`\beta` (Liang et al.
2025, Algorithms 1 and 3, lines 5-6) is, per trial,

.. math::

    G_1 = \sum_i \mathrm{CLIP}_{\gamma_1}(z_i r_i^\top), \quad r_i = \Theta^\top z_i - x_i,
    \qquad
    S_2 = \sum_i \min\Big(1, \frac{\gamma_2}{\|w_i\||e_i|}\Big) e_i z_i, \quad
    w_i = \Theta^\top z_i,\ e_i = z_i^\top\Theta\beta - y_i,

(:math:`G_2 = \Theta^\top S_2`). :func:`dpreg.estimators.iv._stage_gradients` (the
reference, ``kernel="rows"``) evaluates every (row, trial) pair. Most pairs are never
clipped: their terms are the plain ones, whose sums are the sufficient statistics
:math:`Z^\top Z\Theta - Z^\top X` and :math:`Z^\top Z v - Z^\top y` (:math:`v = \Theta\beta`).
:class:`CertifiedIVGradients` (``kernel="fast"``) computes

.. math::

    G_1 = Z^\top Z\Theta - Z^\top X + \sum_{i \in U_1} (f_i - 1) z_i r_i^\top, \qquad
    S_2 = Z^\top Z v - Z^\top y + \sum_{i \in U_2} (f_i - 1) e_i z_i,

where :math:`f_i` is the clip factor and :math:`U_k` holds the rows that a certificate
cannot rule out (for the other rows :math:`f_i = 1` exactly, in both paths), so the two
paths agree to rounding and the clip counts agree exactly (up to a row within a relative
:math:`10^{-9}` of the threshold, where the two factors differ by as little).

*Certificates.* Fix a reference point: :math:`\hat\Theta` (least squares of the first
stage from :math:`Z^\top Z, Z^\top X`) and :math:`\hat v = \hat\Theta\hat\beta`
(:math:`\hat\beta` the 2SLS solution from the same statistics); any reference is valid,
a good one certifies more rows. With :math:`b_i = \|z_i\|`,
:math:`\delta = \|\Theta - \hat\Theta\|_F \ge \|\Theta - \hat\Theta\|_2` and
:math:`\varepsilon = \|v - \hat v\|`, the triangle and Cauchy-Schwarz inequalities give

.. math::

    \|z_i\|\|r_i\| &\le b_i\|\hat r_i\| + \delta\,b_i^2, \\
    \|w_i\||e_i| &\le (\|\hat\Theta^\top z_i\| + s\,b_i)(|z_i^\top\hat v - y_i| + s\,b_i),
    \qquad s = \max(\delta, \varepsilon).

Both bounds increase in one scalar per trial (:math:`\delta`, resp. :math:`s`), so each
row has a threshold :math:`s^*_i` (the root of bound = :math:`\gamma`) below which it
cannot be clipped; rows are sorted once by :math:`s^*_i` and, for a trial with scalar
:math:`s`, :math:`U` is the prefix :math:`\{i : s^*_i < s\}` (``numpy.searchsorted``).
Against rounding the thresholds use :math:`\gamma(1 - 10^{-9})`, row norms inflated by
:math:`10^{-6}` (relative), the reference residuals by :math:`10^{-9}` of their scale,
and the trial's scalar by :math:`10^{-6}`. The compiled kernel (numba, cached on disk)
then visits only the prefix rows of each trial. Non-finite iterates give an infinite
scalar, hence every row (the reference's arithmetic on them).

The computation path depends on the data (which rows are visited), the result does not
(up to rounding): the output law, the noise and the privacy accounting are those of the
reference.
"""

from __future__ import annotations

import math
from functools import cache
from typing import Any

import numpy as np

__all__ = ["CertifiedIVGradients", "plain_recursion", "plain_recursion_trials"]

_CLIP_SLACK = 1e-9  # relative slack on the threshold and the reference residuals
_NORM_SLACK = 1e-6  # relative slack on the row norms and the trial's distance


@cache
def _kernel() -> Any:
    """Compile (or load from numba's cache) the correction kernel."""
    import numba

    @numba.njit(cache=True, nogil=True)
    def corrections(Z1, X1, zn1, k1, Z2T, Z2, y2, w2, b2, k2, Theta, v, delta, v_norm, clip1,
                    clip2, G1, S2, c1, c2, columns):  # fmt: skip
        # Per trial t: rows i < k1[t] of (Z1, X1, zn1) and i < k2[t] of (Z2T', y2) (each
        # sorted by its certificate threshold). Adds (f - 1) z r' to G1[t] and
        # (f - 1) e z to S2[t] for the clipped rows, counts them in c1[t], c2[t].
        # Second stage: e first (2q flops); the row is skipped when its bound
        # (w2 + delta b2) |e| (w2 >= ||Theta_ref' z||, b2 >= ||z||, delta[t] >=
        # ||Theta - Theta_ref||_F, slack on |e|) cannot reach the threshold. ||Theta' z||^2
        # of the rows kept: with ``columns`` for all prefix rows a column at a time
        # (vectorised over rows), else row by row; the same sums in the same order.
        # Z2 (n, q) holds the rows of Z2T (q, n) row-major (the row-wise reads).
        trials, q, p = Theta.shape
        cap2 = clip2 * (1.0 - 1e-9)
        E = np.empty(y2.shape[0])
        SQ = np.empty(y2.shape[0])
        Wj = np.empty(y2.shape[0])
        r = np.empty(p)
        for t in range(trials):
            for i in range(k1[t]):
                sq = 0.0
                for j in range(p):
                    s = 0.0
                    for m in range(q):
                        s += Z1[i, m] * Theta[t, m, j]
                    r[j] = s - X1[i, j]
                    sq += r[j] * r[j]
                a = np.sqrt(sq) * zn1[i]
                if a > clip1:
                    c1[t] += 1
                    f = clip1 / a - 1.0
                    for m in range(q):
                        zf = f * Z1[i, m]
                        for j in range(p):
                            G1[t, m, j] += zf * r[j]
            k = k2[t]
            if k == 0:
                continue
            for i in range(k):  # e = Z2 v - y2, one column of Z2T at a time (vectorised)
                E[i] = Z2T[0, i] * v[t, 0]
            for m in range(1, q):
                vm = v[t, m]
                for i in range(k):
                    E[i] += Z2T[m, i] * vm
            for i in range(k):
                E[i] -= y2[i]
            if columns:  # ||Theta' z_i||^2 of every prefix row, a column at a time (SIMD)
                for i in range(k):
                    SQ[i] = 0.0
                for j in range(p):
                    for i in range(k):
                        Wj[i] = Z2T[0, i] * Theta[t, 0, j]
                    for m in range(1, q):
                        th = Theta[t, m, j]
                        for i in range(k):
                            Wj[i] += Z2T[m, i] * th
                    for i in range(k):
                        SQ[i] += Wj[i] * Wj[i]
            for i in range(k):
                e = E[i]
                ae = abs(e) * (1.0 + 1e-9) + 1e-12 * (b2[i] * v_norm[t] + abs(y2[i]))
                if (w2[i] + delta[t] * b2[i]) * ae <= cap2:
                    continue
                if columns:
                    sq = SQ[i]
                else:  # the same sums, row by row, only for the rows the bound keeps
                    sq = 0.0
                    for j in range(p):
                        s = 0.0
                        for m in range(q):
                            s += Z2[i, m] * Theta[t, m, j]
                        sq += s * s
                a = np.sqrt(sq) * abs(e)
                if a > clip2:
                    c2[t] += 1
                    f = (clip2 / a - 1.0) * e
                    for m in range(q):
                        S2[t, m] += f * Z2[i, m]

    return corrections


@cache
def _plain_kernel() -> Any:
    """Compile (or load from numba's cache) the noiseless, unclipped recursion."""
    import numba

    @numba.njit(cache=True, nogil=True)
    def recursion(ZtZ, ZtX, Zty, n, T, eta, alpha, Thetas, betas, theta_path, beta_path):
        # Thetas (trials, q, p), betas (trials, p) zero; the run updates row 0 in place and
        # is copied to the other rows; paths (T, q, p), (T, p) or (0, ..). Returns whether
        # the final iterate is finite.
        Theta = Thetas[0]
        beta = betas[0]
        q, p = ZtX.shape
        G1 = np.empty((q, p))
        S2 = np.empty(q)
        v = np.empty(q)
        for t in range(T):
            for m in range(q):
                s = 0.0
                for j in range(p):
                    s += Theta[m, j] * beta[j]
                v[m] = s
            for m in range(q):
                s = 0.0
                for k in range(q):
                    s += ZtZ[m, k] * v[k]
                S2[m] = s - Zty[m]
                for j in range(p):
                    s = 0.0
                    for k in range(q):
                        s += ZtZ[m, k] * Theta[k, j]
                    G1[m, j] = s - ZtX[m, j]
            for j in range(p):  # beta uses Theta^(t): update it before Theta
                s = 0.0
                for m in range(q):
                    s += Theta[m, j] * S2[m]
                beta[j] = beta[j] - alpha * (s / n)
            for m in range(q):
                for j in range(p):
                    Theta[m, j] = Theta[m, j] - eta * (G1[m, j] / n)
            if theta_path.shape[0] > 0:
                theta_path[t] = Theta
                beta_path[t] = beta
        finite = True
        for j in range(p):
            finite = finite and np.isfinite(beta[j])
            for m in range(q):
                finite = finite and np.isfinite(Theta[m, j])
        for r in range(1, Thetas.shape[0]):
            Thetas[r] = Theta
            betas[r] = beta
        return finite

    return recursion


def plain_recursion(
    ZtZ: np.ndarray,
    ZtX: np.ndarray,
    Zty: np.ndarray,
    n: int,
    *,
    T: int,
    step_theta: float,
    step_beta: float,
    return_path: bool,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]:
    r"""Run the 2S-GD recursion (Liang et al. 2025, Algorithm 2) from sufficient statistics.

    :math:`\Theta^{(t+1)} = \Theta^{(t)} - \eta(Z^\top Z\Theta^{(t)} - Z^\top X)/n`,
    :math:`\beta^{(t+1)} = \beta^{(t)} - \alpha\,\Theta^{(t)\top}(Z^\top Z\Theta^{(t)}
    \beta^{(t)} - Z^\top y)/n` from zero, compiled (numba): the arithmetic of the
    reference loop (:func:`dpreg.estimators.iv._iterate` with no clipping and no noise)
    in one call instead of about ten numpy calls per step; equal to it up to rounding.

    Returns
    -------
    (Theta (q, p), beta (p,), theta_path (T, q, p) or None, beta_path (T, p) or None)

    Examples
    --------
    >>> import numpy as np
    >>> Theta, beta, _, _ = plain_recursion(np.eye(2), np.eye(2), np.ones(2), 1, T=50,
    ...                                     step_theta=1.0, step_beta=0.5,
    ...                                     return_path=False)
    >>> Theta.round(6).tolist(), beta.round(6).tolist()
    ([[1.0, 0.0], [0.0, 1.0]], [1.0, 1.0])
    """
    Theta, beta, theta_path, beta_path, _ = plain_recursion_trials(
        ZtZ, ZtX, Zty, n, T=T, step_theta=step_theta, step_beta=step_beta,
        return_path=return_path, trials=1,
    )  # fmt: skip
    return Theta[0], beta[0], theta_path, beta_path


def plain_recursion_trials(
    ZtZ: np.ndarray,
    ZtX: np.ndarray,
    Zty: np.ndarray,
    n: int,
    *,
    T: int,
    step_theta: float,
    step_beta: float,
    return_path: bool,
    trials: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None, bool]:
    """:func:`plain_recursion` with its final iterates repeated along a trials axis.

    One compiled call runs the recursion once, copies it into every trial's row and
    checks it (the same arithmetic, hence the same bits, as :func:`plain_recursion`).

    Returns
    -------
    (Theta (trials, q, p), beta (trials, p), theta_path (T, q, p) or None,
    beta_path (T, p) or None, whether the final iterate is finite)

    Examples
    --------
    >>> import numpy as np
    >>> Theta, beta, _, _, finite = plain_recursion_trials(
    ...     np.eye(2), np.eye(2), np.ones(2), 1, T=50, step_theta=1.0, step_beta=0.5,
    ...     return_path=False, trials=3)
    >>> beta.round(6).tolist(), finite
    ([[1.0, 1.0], [1.0, 1.0], [1.0, 1.0]], True)
    """
    q, p = ZtX.shape
    Theta = np.zeros((trials, q, p))
    beta = np.zeros((trials, p))
    length = T if return_path else 0
    theta_path = np.empty((length, q, p))
    beta_path = np.empty((length, p))
    finite = _plain_kernel()(
        np.ascontiguousarray(ZtZ), np.ascontiguousarray(ZtX), np.ascontiguousarray(Zty),
        float(n), int(T), float(step_theta), float(step_beta), Theta, beta, theta_path,
        beta_path,
    )  # fmt: skip
    if not return_path:
        return Theta, beta, None, None, bool(finite)
    return Theta, beta, theta_path, beta_path, bool(finite)


def _solve(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Least-squares solution of the small system ``A X = B`` (any solution is valid)."""
    return np.linalg.lstsq(A, B, rcond=None)[0]


class CertifiedIVGradients:
    r"""Clipped gradient sums of both IV stages for many trials on one shared data set.

    Parameters
    ----------
    Z : ndarray, shape (n, q)
    X : ndarray, shape (n, p)
    y : ndarray, shape (n,)
    zn : ndarray, shape (n,)
        Row norms of ``Z``.
    ZtZ, ZtX, Zty : ndarray
        :math:`Z^\top Z` (q, q), :math:`Z^\top X` (q, p), :math:`Z^\top y` (q,).
    clip_theta, clip_beta : float
        :math:`\gamma_1, \gamma_2` (``math.inf``: that stage is not clipped).
    columns : bool, default True
        Second stage: compute :math:`\|\Theta^\top z_i\|^2` for every row of the trial's
        prefix a column at a time (SIMD lanes across rows; issue 18) instead of row by
        row for the rows whose bound on :math:`\|w_i\||e_i|` fails (``False``, the former
        loop, kept as its reference). The same sums in the same order: bit for bit the
        same results (``tests/unit/test_iv_kernel.py``).

    Attributes
    ----------
    visited : list of int
        Rows visited by the kernel so far, per stage (first, second): the work beyond
        the sufficient statistics.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> Z = rng.normal(size=(200, 2)); X = Z + rng.normal(size=(200, 2)); y = X.sum(1)
    >>> k = CertifiedIVGradients(Z, X, y, np.linalg.norm(Z, axis=1), Z.T @ Z, Z.T @ X,
    ...                          Z.T @ y, clip_theta=3.0, clip_beta=3.0)
    >>> G1, S2, c1, c2 = k(np.zeros((4, 2, 2)), np.zeros((4, 2)))
    >>> G1.shape, S2.shape, c1.shape
    ((4, 2, 2), (4, 2), (4,))
    """

    def __init__(
        self,
        Z: np.ndarray,
        X: np.ndarray,
        y: np.ndarray,
        zn: np.ndarray,
        ZtZ: np.ndarray,
        ZtX: np.ndarray,
        Zty: np.ndarray,
        *,
        clip_theta: float,
        clip_beta: float,
        columns: bool = True,
    ) -> None:
        self.ZtZ, self.ZtX, self.Zty = ZtZ, ZtX, Zty
        self.columns = bool(columns)
        self.clip_theta, self.clip_beta = float(clip_theta), float(clip_beta)
        self.q, self.p = ZtX.shape
        self.visited = [0, 0]
        Theta_ref = _solve(ZtZ, ZtX)
        W = Z @ Theta_ref  # (n, p) fitted first stage at the reference
        beta_ref = _solve(Theta_ref.T @ ZtZ @ Theta_ref, Theta_ref.T @ Zty)
        self.Theta_ref = Theta_ref
        self.v_ref = Theta_ref @ beta_ref
        b = zn * (1.0 + _NORM_SLACK)
        theta_scale = float(np.sqrt(np.sum(Theta_ref * Theta_ref)))
        empty = (np.empty((0, self.q)), np.empty((0, self.p)), np.empty(0), np.empty(0))
        with np.errstate(divide="ignore", invalid="ignore"):
            if math.isfinite(self.clip_theta):
                # ||z|| ||r|| <= b (rho + tol) + delta b^2 <= gamma (1 - slack)
                rho = np.sqrt(np.einsum("ip,ip->i", W - X, W - X))
                tol = _CLIP_SLACK * (theta_scale * zn + np.sqrt(np.einsum("ip,ip->i", X, X)))
                cap = self.clip_theta * (1.0 - _CLIP_SLACK)
                s1 = np.where(b > 0, (cap - b * (rho + tol)) / (b * b), np.inf)
                order = np.argsort(s1, kind="stable")
                self._s1 = s1[order]
                self._rows1 = (Z[order], X[order], zn[order])
            else:
                self._s1, self._rows1 = empty[2], empty[:3]
            if math.isfinite(self.clip_beta):
                # (c + s b)(d + s b) <= gamma (1 - slack), solved for s (stable root)
                c = np.sqrt(np.einsum("ip,ip->i", W, W)) + _CLIP_SLACK * theta_scale * zn
                v_norm = float(np.linalg.norm(self.v_ref))
                d = np.abs(Z @ self.v_ref - y) + _CLIP_SLACK * (v_norm * zn + np.abs(y))
                cap = self.clip_beta * (1.0 - _CLIP_SLACK)
                u = 2.0 * (cap - c * d) / ((c + d) + np.sqrt((c - d) ** 2 + 4.0 * cap))
                s2 = np.where(b > 0, u / b, np.inf)
                order = np.argsort(s2, kind="stable")
                self._s2 = s2[order]
                Z2 = Z[order]
                self._rows2 = (np.ascontiguousarray(Z2.T), Z2, y[order], c[order], b[order])
            else:
                self._s2, self._rows2 = (
                    empty[3],
                    (empty[0].T.copy(), empty[0], empty[2], empty[2], empty[3]),
                )

    def distances(self, Theta: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        r"""Inflated :math:`\|\Theta - \hat\Theta\|_F` and :math:`s` per trial (inf if NaN)."""
        trials = Theta.shape[0]
        with np.errstate(invalid="ignore", over="ignore"):
            diff = (Theta - self.Theta_ref).reshape(trials, -1)
            delta = np.sqrt(np.einsum("tk,tk->t", diff, diff))
            dv = v - self.v_ref
            s = np.fmax(delta, np.sqrt(np.einsum("tk,tk->t", dv, dv)))
        # NaN distances (diverged trials) mean every row
        delta = np.where(np.isnan(delta), np.inf, delta) * (1.0 + _NORM_SLACK)
        s = np.where(np.isnan(s), np.inf, s) * (1.0 + _NORM_SLACK)
        return delta, s

    def prefixes(self, Theta: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rows each trial's certificate cannot rule out, per stage: counts (trials,)."""
        delta, s = self.distances(Theta, v)
        k1 = np.searchsorted(self._s1, delta, side="left")
        k2 = np.searchsorted(self._s2, s, side="left")
        return k1.astype(np.int64), k2.astype(np.int64)

    def __call__(
        self, Theta: np.ndarray, beta: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Return ``(G1 (trials, q, p), S2 (trials, q), count1, count2)`` (sums, not means)."""
        Theta = np.ascontiguousarray(Theta, dtype=np.float64)
        v = (Theta @ beta[..., None])[..., 0]  # (trials, q)
        G1 = self.ZtZ @ Theta - self.ZtX
        S2 = (self.ZtZ @ v[..., None])[..., 0] - self.Zty
        trials = Theta.shape[0]
        count1 = np.zeros(trials, dtype=np.int64)
        count2 = np.zeros(trials, dtype=np.int64)
        delta, s = self.distances(Theta, v)
        k1 = np.searchsorted(self._s1, delta, side="left").astype(np.int64)
        k2 = np.searchsorted(self._s2, s, side="left").astype(np.int64)
        if k1.any() or k2.any():
            Z1, X1, zn1 = self._rows1
            Z2T, Z2, y2, w2, b2 = self._rows2
            v_norm = np.sqrt(np.einsum("tk,tk->t", v, v))
            _kernel()(
                Z1, X1, zn1, k1, Z2T, Z2, y2, w2, b2, k2, Theta, np.ascontiguousarray(v), delta,
                v_norm, self.clip_theta, self.clip_beta, G1, S2, count1, count2, self.columns,
            )  # fmt: skip
            self.visited[0] += int(k1.sum())
            self.visited[1] += int(k2.sum())
        return G1, S2, count1, count2
