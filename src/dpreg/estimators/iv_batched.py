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
(numba, cached on disk) per step with the trials along the innermost, contiguous axis
(the data transposed once per fit to (n, q, trials)): row after row, :math:`w_i`,
:math:`e_i`, the norms, clip factors and both sums are elementwise operations over the
trials, which the compiler vectorises (each trial with its own data and iterate), and
:math:`G_1` and :math:`S_2` are summed directly, :math:`\sum_i f_i z_i r_i^\top` and
:math:`\sum_i f_i e_i z_i`, in row order (the reference's arithmetic, also for a trial
whose iterate is not finite). A stage without clipping takes its sufficient statistics
(:math:`Z^\top Z\Theta - Z^\top X`, :math:`Z^\top Zv - Z^\top y`). The result
equals the reference's to rounding (sums in another order) and the clip counts agree
(up to a row within rounding of its threshold); the draws, the noise scales and the
privacy accounting are the reference's: only the evaluation of the same function
changes. (Issue 18 replaced a kernel looping over trials, then blocks of 256 rows, with
sufficient statistics plus rank-one corrections for the clipped rows: about twice the
CPU per step where many rows clip, docs/scaling.md.)

Tiles of lanes (issue 18, eighth pass). The loops above run each of about 90 small
operations of a row over all the trials, every one reading and writing its operands in
memory. :func:`_tile_kernel` compiles the same arithmetic for one ``(q, p)`` with the
trials cut into tiles of :data:`TILE_LANES` lanes and every array of a tile laid out at
offsets that are compile-time constants, so that a row is 2p + 2 loops over the tile's
lanes (w one column per loop, the second stage, the first stage's clip factors, G1 one
column per loop; the lanes innermost, or the compiler keeps a loop scalar), vectorised
with the q-term sums unrolled in registers. It performs the same operations in the same
order on every lane (multiply-adds fused where the loop kernel fuses them; each sum
starts from a zero that the compiler cannot see, ``zero``, so that its first product is
rounded alone, as the loop kernel's stored one is), so its sums are the loop kernel's
**bit for bit** (``tests/unit/test_iv_tiles.py``); lanes past the last trial are zero
data, computed and dropped. The loop kernel stays as the reference (``_PATH = "loops"``).
"""

from __future__ import annotations

import math
from functools import cache
from typing import Any

import numpy as np

__all__ = ["FAST_MAX_WIDTH", "TILE_LANES", "BatchedIVGradients"]

FAST_MAX_WIDTH = 64
"""``kernel="fast"`` on batched data is compiled when ``q * p`` is at most this; above it
the reference's batched BLAS products are the faster evaluation (measured: at
:math:`p = q = 50` the compiled loops are about 3x slower), so the reference runs."""

TILE_LANES = 20
"""Lanes (trials) per tile of :func:`_tile_kernel`: a multiple of the 4-lane vectors
numba emits, long enough for the compiler to vectorise the tile's loops (at 8 it keeps
them scalar; 12 and 40 were slower) and a divisor of the paper's 100 trials per block (no
padding)."""

_PATH = "tiles"
"""``"tiles"`` (:func:`_tile_kernel`) or ``"loops"`` (:func:`_kernel`, the reference)."""


@cache
def _kernel() -> Any:
    """Compile (or load from numba's cache) the batched gradient kernel."""
    import numba

    # "contract": a * b + c may be one fused multiply-add (rounded once): a rounding
    # difference only, no other fast-math assumption (NaN and inf behave as in numpy)
    @numba.njit(cache=True, nogil=True, error_model="numpy", fastmath={"contract"})
    def gradients(Zl, Xl, yl, znl, Th, v, clip1, clip2, do1, do2, G1, S2, c1, c2):  # fmt: skip
        # Trials along the last (contiguous) axis, rows in the outer loop: every loop
        # below runs over the L trials elementwise (vectorised), each with its own data.
        # Zl (n, q, L), Xl (n, p, L), yl, znl (n, L); Th (q, p, L), v = Theta beta (q, L).
        # G1 (q, p, L) and S2 (q, L) are zero on entry and get f z r' (do1), f e z (do2).
        n, q, L = Zl.shape
        p = Xl.shape[1]
        W = np.empty((p, L))
        E = np.empty(L)
        A = np.empty(L)
        for i in range(n):
            for j in range(p):  # w = Theta' z_i
                for t in range(L):
                    W[j, t] = Zl[i, 0, t] * Th[0, j, t]
                for m in range(1, q):
                    for t in range(L):
                        W[j, t] += Zl[i, m, t] * Th[m, j, t]
            if do2:
                for t in range(L):  # e = z_i' v - y_i
                    E[t] = Zl[i, 0, t] * v[0, t]
                for m in range(1, q):
                    for t in range(L):
                        E[t] += Zl[i, m, t] * v[m, t]
                for t in range(L):
                    E[t] -= yl[i, t]
                for t in range(L):
                    A[t] = W[0, t] * W[0, t]
                for j in range(1, p):
                    for t in range(L):
                        A[t] += W[j, t] * W[j, t]
                for t in range(L):  # a = ||w|| |e|
                    A[t] = math.sqrt(A[t]) * abs(E[t])
                for t in range(L):
                    c2[t] += 1 if A[t] > clip2 else 0
                for t in range(L):  # e clip / max(a, clip); NaN stays NaN (numpy.maximum)
                    a = A[t] if not A[t] <= clip2 else clip2
                    E[t] = E[t] * (clip2 / a)
                for m in range(q):
                    for t in range(L):
                        S2[m, t] += Zl[i, m, t] * E[t]
            if do1:
                for j in range(p):  # r = Theta' z_i - x_i
                    for t in range(L):
                        W[j, t] -= Xl[i, j, t]
                for t in range(L):
                    A[t] = W[0, t] * W[0, t]
                for j in range(1, p):
                    for t in range(L):
                        A[t] += W[j, t] * W[j, t]
                for t in range(L):  # a = ||z|| ||r||
                    A[t] = math.sqrt(A[t]) * znl[i, t]
                for t in range(L):
                    c1[t] += 1 if A[t] > clip1 else 0
                for t in range(L):
                    a = A[t] if not A[t] <= clip1 else clip1
                    A[t] = clip1 / a
                for j in range(p):  # r f, as the reference scales it
                    for t in range(L):
                        W[j, t] *= A[t]
                for m in range(q):
                    for j in range(p):
                        for t in range(L):
                            G1[m, j, t] += Zl[i, m, t] * W[j, t]

    return gradients


@cache
def _tile_kernel(q: int, p: int) -> Any:
    """Compile (or load from numba's cache) the tiled kernel for ``(q, p)``.

    ``q`` and ``p`` are closure constants: numba caches one kernel per pair.
    """
    import numba

    TL, Q, P = TILE_LANES, q, p
    SV, DX, DY, DN = Q * P, Q, Q + P, Q + P + 1  # v in S; x, y, |z| in D
    OS2, OC1, OC2, OW = Q * P, Q * P + Q, Q * P + Q + 1, Q * P + Q + 2  # rows of Out
    OF = OW + P  # the first stage's clip factors (scratch)

    # "contract" as in _kernel. Every index below is a constant plus the lane t within a
    # row's or tile's one-dimensional view, which lets the compiler group the accesses
    # (and vectorise) and makes it hoist nothing that changes an operation's order.
    @numba.njit(cache=True, nogil=True, error_model="numpy", fastmath={"contract"})
    def gradients(D, S, Out, clip1, clip2, do1, do2, zero):  # fmt: skip
        # D (tiles, n, q + p + 2, TL): z, x, y, |z| of a row; S (tiles, q p + q, TL):
        # Theta (row-major), v; Out (tiles, q p + q + 2 + p, TL): G1, S2, the two counts
        # (zero on entry) and w = Theta' z (scratch).
        for k in range(D.shape[0]):
            Sk = S[k].reshape(-1)
            Ok = Out[k].reshape(-1)
            for i in range(D.shape[1]):
                Di = D[k, i].reshape(-1)
                for j in range(P):  # w = Theta' z_i
                    for t in range(TL):
                        acc = zero
                        for m in range(Q):
                            acc += Di[m * TL + t] * Sk[(m * P + j) * TL + t]
                        Ok[(OW + j) * TL + t] = acc
                if do2:
                    for t in range(TL):
                        e = zero  # e = z_i' v - y_i
                        for m in range(Q):
                            e += Di[m * TL + t] * Sk[(SV + m) * TL + t]
                        e -= Di[DY * TL + t]
                        a = zero
                        for j in range(P):
                            a += Ok[(OW + j) * TL + t] * Ok[(OW + j) * TL + t]
                        a = math.sqrt(a) * abs(e)  # ||w|| |e|
                        Ok[OC2 * TL + t] += 1.0 if a > clip2 else 0.0
                        a = a if not a <= clip2 else clip2  # NaN stays NaN
                        e = e * (clip2 / a)
                        for m in range(Q):
                            Ok[(OS2 + m) * TL + t] += Di[m * TL + t] * e
                if do1:
                    for t in range(TL):
                        a = zero
                        for j in range(P):  # r = w - x_i
                            r = Ok[(OW + j) * TL + t] - Di[(DX + j) * TL + t]
                            a += r * r
                        a = math.sqrt(a) * Di[DN * TL + t]  # ||z|| ||r||
                        Ok[OC1 * TL + t] += 1.0 if a > clip1 else 0.0
                        a = a if not a <= clip1 else clip1
                        Ok[OF * TL + t] = clip1 / a
                    for j in range(P):
                        for t in range(TL):  # r f, as the reference scales it
                            r = (Ok[(OW + j) * TL + t] - Di[(DX + j) * TL + t]) * Ok[OF * TL + t]
                            for m in range(Q):
                                Ok[(m * P + j) * TL + t] += Di[m * TL + t] * r

    return gradients


def _to_tiles(A: np.ndarray) -> np.ndarray:
    """(trials, ..., c) -> (tiles, ..., c, TILE_LANES), zero lanes past the last trial."""
    trials = A.shape[0]
    tiles = -(-trials // TILE_LANES)
    padded = np.zeros((tiles * TILE_LANES, *A.shape[1:]))
    padded[:trials] = A
    padded = padded.reshape(tiles, TILE_LANES, *A.shape[1:])
    return np.ascontiguousarray(np.moveaxis(padded, 1, -1))


def _from_tiles(tiled: np.ndarray, trials: int) -> np.ndarray:
    """(tiles, c, TILE_LANES) -> (trials, c)."""
    return tiled.transpose(0, 2, 1).reshape(-1, tiled.shape[1])[:trials]


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
        self.path = _PATH
        if self.path == "tiles":  # once per fit: (tiles, n, q + p + 2, lanes)
            self.D = _to_tiles(np.concatenate([Z, X, y[..., None], zn[..., None]], axis=-1))
        else:  # trials last, once per fit: the kernel's loops run along them (contiguous)
            self.Zl = np.ascontiguousarray(np.moveaxis(Z, 0, -1), dtype=np.float64)
            self.Xl = np.ascontiguousarray(np.moveaxis(X, 0, -1), dtype=np.float64)
            self.yl = np.ascontiguousarray(np.swapaxes(y, 0, 1), dtype=np.float64)
            self.znl = np.ascontiguousarray(np.swapaxes(zn, 0, 1), dtype=np.float64)
        self.ZtZ, self.ZtX, self.Zty = ZtZ, ZtX, Zty
        self.clip_theta, self.clip_beta = float(clip_theta), float(clip_beta)
        self._step_buffers: tuple[np.ndarray, np.ndarray] | None = None  # for step_sums

    def __call__(
        self, Theta: np.ndarray, beta: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Return ``(G1 (trials, q, p), S2 (trials, q), count1, count2)`` (sums, not means)."""
        Theta = np.asarray(Theta, dtype=np.float64)
        v = (Theta @ beta[..., None])[..., 0]  # (trials, q)
        trials, q, p = Theta.shape
        do1, do2 = math.isfinite(self.clip_theta), math.isfinite(self.clip_beta)
        if self.path == "tiles":
            G1, S2, count1, count2 = self._tiles(Theta, v, do1, do2)
        else:
            G1, S2, count1, count2 = self._loops(Theta, v, do1, do2)
        if not do1:  # sum_i z_i (z_i' Theta - x_i') = Z'Z Theta - Z'X
            G1 = self.ZtZ @ Theta - self.ZtX
        if not do2:  # sum_i z_i (z_i' Theta beta - y_i) = Z'Z v - Z'y
            S2 = (self.ZtZ @ v[..., None])[..., 0] - self.Zty
        return G1, S2, count1, count2

    def _tiles(self, Theta: np.ndarray, v: np.ndarray, do1: bool, do2: bool) -> tuple:
        """:func:`_tile_kernel`'s sums (the stage not clipped: ``None``) and counts."""
        trials, q, p = Theta.shape
        qp = q * p
        sums = np.zeros((self.D.shape[0], qp + q + 3 + p, TILE_LANES))
        if do1 or do2:
            S = _to_tiles(np.concatenate([Theta.reshape(trials, qp), v], axis=1))
            _tile_kernel(q, p)(
                self.D, S, sums, self.clip_theta if do1 else 0.0,
                self.clip_beta if do2 else 0.0, do1, do2, 0.0,
            )  # fmt: skip
        out = _from_tiles(sums, trials)
        G1 = out[:, :qp].reshape(trials, q, p) if do1 else None
        S2 = out[:, qp : qp + q].copy() if do2 else None
        count1 = out[:, qp + q].astype(np.int64)
        count2 = out[:, qp + q + 1].astype(np.int64)
        return G1, S2, count1, count2

    def step_sums(
        self,
        Theta: np.ndarray,
        v: np.ndarray,
        G1: np.ndarray,
        S2: np.ndarray,
        frac_theta: np.ndarray,
        frac_beta: np.ndarray,
        t: int,
    ) -> None:
        """:meth:`__call__` into buffers: the sums ``G1``, ``S2`` and step ``t``'s fractions.

        For the tiled path (``path == "tiles"``) of the fused recursion of
        :func:`dpreg.estimators.iv._iterate`: ``v`` is ``Theta beta`` (the caller's numpy
        product), ``G1`` (trials, q, p) and ``S2`` (trials, q) receive the sums of
        :meth:`__call__` (a stage not clipped: its sufficient statistics, by the same
        numpy calls) and ``frac_theta[:, t]``, ``frac_beta[:, t]`` the counts divided by
        ``n``. The layout moves by :mod:`dpreg.estimators._iv_step_jit` (copies), the
        kernel is :func:`_tile_kernel`'s: the same bits (``tests/unit/test_iv_fused_steps.py``).
        """
        from dpreg.estimators import _iv_step_jit as jit

        trials, q, p = Theta.shape
        do1, do2 = math.isfinite(self.clip_theta), math.isfinite(self.clip_beta)
        if self._step_buffers is None:  # once per fit
            tiles = self.D.shape[0]
            self._step_buffers = (
                np.zeros((tiles, q * p + q, TILE_LANES)),
                np.zeros((tiles, q * p + q + 3 + p, TILE_LANES)),
            )
        S, Out = self._step_buffers
        jit.pack(Theta, v, S)
        _tile_kernel(q, p)(
            self.D, S, Out, self.clip_theta if do1 else 0.0,
            self.clip_beta if do2 else 0.0, do1, do2, 0.0,
        )  # fmt: skip
        jit.unpack(Out, G1, S2, frac_theta, frac_beta, t, float(self.D.shape[1]), do1, do2)
        if not do1:  # sum_i z_i (z_i' Theta - x_i') = Z'Z Theta - Z'X
            np.subtract(self.ZtZ @ Theta, self.ZtX, out=G1)
        if not do2:  # sum_i z_i (z_i' Theta beta - y_i) = Z'Z v - Z'y
            np.subtract((self.ZtZ @ v[..., None])[..., 0], self.Zty, out=S2)

    def _loops(self, Theta: np.ndarray, v: np.ndarray, do1: bool, do2: bool) -> tuple:
        """:func:`_kernel`'s sums (the stage not clipped: ``None``) and counts."""
        trials, q, p = Theta.shape
        G1 = np.zeros((q, p, trials))
        S2 = np.zeros((q, trials))
        count1 = np.zeros(trials, dtype=np.int64)
        count2 = np.zeros(trials, dtype=np.int64)
        if do1 or do2:
            _kernel()(
                self.Zl, self.Xl, self.yl, self.znl,
                Theta.transpose(1, 2, 0).copy(), v.T.copy(),
                self.clip_theta if do1 else 0.0, self.clip_beta if do2 else 0.0,
                do1, do2, G1, S2, count1, count2,
            )  # fmt: skip
        return G1.transpose(2, 0, 1).copy(), S2.T.copy(), count1, count2
