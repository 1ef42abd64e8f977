r"""Compiled clipped gradients of the 2S-GD family on batched data (one data set per trial).

The private query of every step of DP-2S-GD and DP-2S-GD-:math:`\beta` (Liang et al.
2025, Algorithms 1 and 3, lines 5-6) is, per trial with its own data,

.. math::

    G_1 = \sum_i f_{1,i}\,z_i r_i^\top,\quad r_i = \Theta^\top z_i - x_i,\quad
    f_{1,i} = \min\Big(1, \frac{\gamma_1}{\|z_i\|\|r_i\|}\Big), \qquad
    S_2 = \sum_i f_{2,i}\,e_i z_i,\quad f_{2,i} = \min\Big(1,
    \frac{\gamma_2}{\|w_i\||e_i|}\Big),

with :math:`w_i = \Theta^\top z_i` and :math:`e_i = z_i^\top\Theta\beta - y_i`
(:math:`G_2 = \Theta^\top S_2`). The reference
(:func:`dpreg.estimators.iv._stage_gradients`, ``kernel="rows"``) forms the
(trials, n, p) work arrays with numpy; at the small :math:`p, q` of the paper's
synthetic figures (5) that is a dozen passes over arrays of the data's size per step.
:class:`BatchedIVGradients` (``kernel="fast"`` on batched data) does one compiled pass
(numba, cached on disk) per step: per trial and block of rows, :math:`w_i` and
:math:`e_i` vectorised along the rows, the norms and clip factors, then

.. math::

    G_1 = Z^\top Z\,\Theta - Z^\top X + \sum_{i:\,f_{1,i} < 1}(f_{1,i} - 1)\,z_i r_i^\top

(the per-trial sufficient statistics :math:`Z^\top Z, Z^\top X` of the design: only the
clipped rows cost a rank-one update) and :math:`S_2` summed directly. A trial whose
iterate is not finite is summed directly too (the reference's arithmetic). The result
equals the reference's to rounding (sums in another order) and the clip counts agree
(up to a row within rounding of its threshold); the draws, the noise scales and the
privacy accounting are the reference's: only the evaluation of the same function
changes.
"""

from __future__ import annotations

import math
from functools import cache
from typing import Any

import numpy as np

__all__ = ["FAST_MAX_WIDTH", "BatchedIVGradients"]

FAST_MAX_WIDTH = 64
"""``kernel="fast"`` on batched data is compiled when ``q * p`` is at most this; above it
the reference's batched BLAS products are the faster evaluation (measured: at
:math:`p = q = 50` the compiled loops are about 3x slower), so the reference runs."""

_ROWS = 256  # rows per block: the block's (p, rows) work array stays in the L1/L2 cache
_DENSE = 8  # a block with more than 1/_DENSE of its rows clipped updates lane-wise


@cache
def _kernel() -> Any:
    """Compile (or load from numba's cache) the batched gradient kernel."""
    import numba

    @numba.njit(cache=True, nogil=True, error_model="numpy")
    def gradients(Zt, Xt, y, zn, Theta, v, clip1, clip2, do1, do2, G1, S2, c1, c2):  # fmt: skip
        # Zt (trials, q, n), Xt (trials, p, n), y, zn (trials, n); Theta (trials, q, p),
        # v = Theta beta (trials, q). G1 holds Z'Z Theta - Z'X on entry (do1); the
        # clipped rows' (f - 1) z r' are added to it, or for a non-finite trial it is
        # reset and every row's f z r' added. S2 (zero on entry) gets f e z (do2).
        trials, q, n = Zt.shape
        p = Xt.shape[1]
        W = np.empty((p, _ROWS))
        E = np.empty(_ROWS)
        F = np.empty(_ROWS)
        A = np.empty(_ROWS)
        ACC = np.zeros((q, p, _ROWS))  # lane sums of the first stage's dense blocks
        for t in range(trials):
            Z = Zt[t]
            X = Xt[t]
            Th = Theta[t]
            vt = v[t]
            finite = True
            for m in range(q):
                if not math.isfinite(vt[m]):
                    finite = False
                for j in range(p):
                    if not math.isfinite(Th[m, j]):
                        finite = False
            lanes = False
            if do1 and not finite:
                for m in range(q):
                    for j in range(p):
                        G1[t, m, j] = 0.0
            for start in range(0, n, _ROWS):
                b = min(_ROWS, n - start)
                for j in range(p):  # W[j, k] = sum_m z_km Theta_mj (vectorised over k)
                    th = Th[0, j]
                    wj = W[j]
                    z0 = Z[0]
                    for k in range(b):
                        wj[k] = z0[start + k] * th
                    for m in range(1, q):
                        th = Th[m, j]
                        zm = Z[m]
                        for k in range(b):
                            wj[k] += zm[start + k] * th
                if do2:
                    vm = vt[0]
                    z0 = Z[0]
                    for k in range(b):
                        E[k] = z0[start + k] * vm
                    for m in range(1, q):
                        vm = vt[m]
                        zm = Z[m]
                        for k in range(b):
                            E[k] += zm[start + k] * vm
                    yt = y[t]
                    for k in range(b):
                        E[k] -= yt[start + k]
                    for k in range(b):
                        F[k] = W[0, k] * W[0, k]
                    for j in range(1, p):
                        wj = W[j]
                        for k in range(b):
                            F[k] += wj[k] * wj[k]
                    for k in range(b):  # a = ||w|| |e|; factor clip / max(a, clip)
                        A[k] = math.sqrt(F[k]) * abs(E[k])
                    cnt = 0
                    for k in range(b):
                        cnt += 1 if A[k] > clip2 else 0
                    c2[t] += cnt
                    for k in range(b):  # NaN stays NaN (numpy.maximum); a <= clip: 1.0
                        a = A[k] if not A[k] <= clip2 else clip2
                        F[k] = E[k] * (clip2 / a)
                    for m in range(q):  # four partial sums: the adds' latency overlaps
                        zm = Z[m]
                        s0 = s1 = s2 = s3 = 0.0
                        k = 0
                        while k + 4 <= b:
                            s0 += zm[start + k] * F[k]
                            s1 += zm[start + k + 1] * F[k + 1]
                            s2 += zm[start + k + 2] * F[k + 2]
                            s3 += zm[start + k + 3] * F[k + 3]
                            k += 4
                        while k < b:
                            s0 += zm[start + k] * F[k]
                            k += 1
                        S2[t, m] += (s0 + s1) + (s2 + s3)
                if do1:
                    for j in range(p):
                        wj = W[j]
                        xj = X[j]
                        for k in range(b):
                            wj[k] -= xj[start + k]
                    for k in range(b):
                        F[k] = W[0, k] * W[0, k]
                    for j in range(1, p):
                        wj = W[j]
                        for k in range(b):
                            F[k] += wj[k] * wj[k]
                    znt = zn[t]
                    for k in range(b):  # a = ||z|| ||r||
                        A[k] = math.sqrt(F[k]) * znt[start + k]
                    cnt = 0
                    for k in range(b):
                        cnt += 1 if A[k] > clip1 else 0
                    c1[t] += cnt
                    for k in range(b):
                        a = A[k] if not A[k] <= clip1 else clip1
                        F[k] = clip1 / a
                    if finite:  # only the clipped rows correct Z'Z Theta - Z'X
                        for k in range(b):
                            F[k] -= 1.0
                    if not finite or cnt * _DENSE > b:
                        # many rows: lane-wise products, vectorised along the rows
                        # (rows with F = 0 add exact zeros), summed at the trial's end
                        lanes = True
                        for j in range(p):
                            wj = W[j]
                            for k in range(b):
                                wj[k] *= F[k]
                        for m in range(q):
                            zm = Z[m]
                            for j in range(p):
                                acc = ACC[m, j]
                                wj = W[j]
                                for k in range(b):
                                    acc[k] += zm[start + k] * wj[k]
                    else:  # few clipped rows: a rank-one update each
                        for k in range(b):
                            f = F[k]
                            if f == 0.0:
                                continue
                            for m in range(q):
                                zf = Z[m, start + k] * f
                                for j in range(p):
                                    G1[t, m, j] += zf * W[j, k]
            if lanes:
                for m in range(q):
                    for j in range(p):
                        acc = ACC[m, j]
                        s0 = s1 = s2 = s3 = 0.0  # four chains: the adds' latency overlaps
                        for k in range(0, _ROWS, 4):
                            s0 += acc[k]
                            s1 += acc[k + 1]
                            s2 += acc[k + 2]
                            s3 += acc[k + 3]
                        acc[:] = 0.0
                        G1[t, m, j] += (s0 + s1) + (s2 + s3)

    return gradients


class BatchedIVGradients:
    r"""Clipped gradient sums of both IV stages for trials with their own data sets.

    Parameters
    ----------
    Z : ndarray, shape (trials, n, q)
    X : ndarray, shape (trials, n, p)
    y : ndarray, shape (trials, n)
    zn : ndarray, shape (trials, n)
        Row norms of ``Z``.
    ZtZ, ZtX, Zty : ndarray
        Per-trial :math:`Z^\top Z` (trials, q, q), :math:`Z^\top X` (trials, q, p),
        :math:`Z^\top y` (trials, q).
    clip_theta, clip_beta : float
        :math:`\gamma_1, \gamma_2` (``math.inf``: that stage is not clipped).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> Z = rng.normal(size=(3, 200, 2)); X = Z + rng.normal(size=(3, 200, 2))
    >>> y = X.sum(-1)
    >>> k = BatchedIVGradients(Z, X, y, np.linalg.norm(Z, axis=-1), Z.transpose(0, 2, 1) @ Z,
    ...                        Z.transpose(0, 2, 1) @ X, np.einsum("tiq,ti->tq", Z, y),
    ...                        clip_theta=3.0, clip_beta=3.0)
    >>> G1, S2, c1, c2 = k(np.zeros((3, 2, 2)), np.zeros((3, 2)))
    >>> G1.shape, S2.shape, c1.shape
    ((3, 2, 2), (3, 2), (3,))
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
    ) -> None:
        # Transposed once per fit: rows contiguous along the last axis (vector loops).
        self.Zt = np.ascontiguousarray(np.swapaxes(Z, 1, 2), dtype=np.float64)
        self.Xt = np.ascontiguousarray(np.swapaxes(X, 1, 2), dtype=np.float64)
        self.y = np.ascontiguousarray(y, dtype=np.float64)
        self.zn = np.ascontiguousarray(zn, dtype=np.float64)
        self.ZtZ, self.ZtX, self.Zty = ZtZ, ZtX, Zty
        self.clip_theta, self.clip_beta = float(clip_theta), float(clip_beta)

    def __call__(
        self, Theta: np.ndarray, beta: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Return ``(G1 (trials, q, p), S2 (trials, q), count1, count2)`` (sums, not means)."""
        Theta = np.ascontiguousarray(Theta, dtype=np.float64)
        v = np.ascontiguousarray((Theta @ beta[..., None])[..., 0])  # (trials, q)
        trials, q, p = Theta.shape
        do1, do2 = math.isfinite(self.clip_theta), math.isfinite(self.clip_beta)
        G1 = np.ascontiguousarray(self.ZtZ @ Theta - self.ZtX)
        if do2:
            S2 = np.zeros((trials, q))
        else:  # sum_i z_i (z_i' Theta beta - y_i) = Z'Z v - Z'y
            S2 = (self.ZtZ @ v[..., None])[..., 0] - self.Zty
        count1 = np.zeros(trials, dtype=np.int64)
        count2 = np.zeros(trials, dtype=np.int64)
        if do1 or do2:
            _kernel()(
                self.Zt, self.Xt, self.y, self.zn, Theta, v,
                self.clip_theta if do1 else 0.0, self.clip_beta if do2 else 0.0,
                do1, do2, G1, S2, count1, count2,
            )  # fmt: skip
        return G1, S2, count1, count2
