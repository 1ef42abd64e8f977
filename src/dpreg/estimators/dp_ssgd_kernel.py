r"""Compiled inner loops of DP-SSGD (Varshney, Thakurta & Jain 2022, Algorithm 1).

Algorithm 1 makes N sequential one-row steps, so the Python loop over steps of
:mod:`dpreg.estimators.dp_ssgd` costs a numpy dispatch per step. The two kernels here
run one chunk of steps for all trials (and runs) in compiled code (numba), with the
Gaussian noise of the chunk drawn from the caller's numpy Generator exactly as the numpy
loops draw it (the path kernel: a buffer drawn beforehand; the stream kernel: each normal
drawn where it is used, in the buffer's C order, issue 18): the draws, their order and
the output law are unchanged, and
the kernels agree with the numpy loops (the reference, ``kernel="numpy"``) to round-off
(only the order of the additions in :math:`\langle x_t, w_t\rangle` differs;
``tests/unit/test_dp_ssgd_kernel.py``).

Each kernel performs, per step t of the chunk and per trial (and run), the update of
Algorithm 1, line 5,

.. math::
    w_{t+1} = w_t - \eta\big(\min\{1, \zeta/(|r_t|\|x_t\|)\}\, r_t x_t + 2\zeta\alpha g_t\big),
    \qquad r_t = \langle x_t, w_t\rangle - y_t,

with the floating-point operations in the order of the corresponding numpy loop, adds
:math:`w_{t+1}` to the tail sum when :math:`t + 1 \ge \lfloor N/2\rfloor + 1` and counts
the clipped steps. numba is imported on first use (compilation is cached on disk).

The path kernel has two variants with the same arithmetic, bit for bit
(:data:`PATH_VARIANTS`, tested): ``"rowwise"``, one trial at a time (its
:math:`\langle x_t, w_t\rangle` and :math:`\|x_t\|^2` are chains of :math:`d` dependent
additions, so the loop waits on the adder's latency), and ``"blocked"`` (the default;
issue 18), four trials of a step side by side: eight independent chains, each summed over
the coordinates in the same order, then each trial's clip and update as in the row-wise
loop (the trials of a step do not interact).
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np

from dpreg.data.normal_kernel import pcg64_state, set_pcg64_state

__all__ = ["PATH_VARIANTS", "path_chunk", "stream_chunk"]

PATH_VARIANTS: tuple[str, ...] = ("blocked", "rowwise")
"""Compiled loops of :func:`path_chunk` (the same values bit for bit)."""


@cache
def _kernels() -> tuple[Any, Any]:
    """Compile (or load from numba's cache) the two chunk kernels."""
    import numba

    @numba.njit(cache=True, nogil=True)
    def path_kernel(X, y, perm, start, stop, G, scale, W, W_sum, clipped, eta, clip, tail_start):
        # Steps start..stop-1 read rows perm[k, t] of X (n, d), y (n,) directly (no gathered
        # copy); G (stop - start, trials, d) standard normals, scale = 2 zeta alpha (the
        # product G * scale rounds as numpy's); W, W_sum (trials, d), clipped (trials,)
        # updated in place.
        trials = perm.shape[0]
        d = X.shape[1]
        for t in range(start, stop):
            j = t - start
            in_tail = t + 1 >= tail_start
            for k in range(trials):
                p = perm[k, t]
                r = 0.0
                sq = 0.0
                for i in range(d):
                    r += X[p, i] * W[k, i]
                    sq += X[p, i] * X[p, i]
                r -= y[p]
                gnorm = abs(r) * np.sqrt(sq)
                if gnorm > clip:
                    clipped[k] += 1.0
                    r = r * (clip / max(gnorm, clip))
                for i in range(d):
                    W[k, i] = W[k, i] - eta * (X[p, i] * r + G[j, k, i] * scale)
                    if in_tail:
                        W_sum[k, i] += W[k, i]

    @numba.njit(cache=True, nogil=True)
    def stream_kernel(
        X,
        base,
        z,
        sig,
        norms,
        rng,
        scale,
        W,
        W_sum,
        clipped,
        eta_clip,
        clip,
        first_step,
        tail_start,
    ):
        # X (D, k, d) (any strides), y = base + z sig (D, k, R) from base, z (D, k) and
        # sig (R,) (sig empty: y = base), norms (D, k), rng the numpy Generator of the
        # noise, scale (R,) = 2 eta zeta alpha; W, W_sum (D, 1, d, R) and clipped (D, R)
        # updated. The R runs are the inner loop (W's contiguous axis); each run's sums
        # are added in the order of the reference. The noise normal of (step j, replicate
        # k, coordinate i, run q) is drawn where it is used, in the loop order j, k, i, q:
        # the C order of the reference's draw of shape (k, D, 1, d, R), so the same values
        # (numba's Generator runs numpy's algorithm on the same state) without a buffer.
        # The D R inner products of a step are summed side by side (i outermost): each
        # is still the sequential sum over i, but the D R independent chains overlap
        # instead of waiting on one another (the same bits as one replicate at a time).
        D, c, d = X.shape
        R = W.shape[3]
        has_z = sig.shape[0] == R
        rr = np.empty((D, R))
        for j in range(c):
            in_tail = first_step + j + 1 >= tail_start
            rr[:] = 0.0
            for i in range(d):
                for k in range(D):
                    x = X[k, j, i]
                    for q in range(R):
                        rr[k, q] += x * W[k, 0, i, q]
            for k in range(D):
                r = rr[k]
                nrm = norms[k, j]
                for q in range(R):
                    y = base[k, j] + z[k, j] * sig[q] if has_z else base[k, j]
                    v = r[q] - y
                    gr = abs(v) * nrm
                    if gr > clip[q]:
                        clipped[k, q] += 1.0
                    r[q] = v * (eta_clip[q] / max(gr, clip[q]))
                for i in range(d):
                    x = X[k, j, i]
                    for q in range(R):
                        w = W[k, 0, i, q] - x * r[q]
                        w -= rng.standard_normal() * scale[q]
                        W[k, 0, i, q] = w
                        if in_tail:
                            W_sum[k, 0, i, q] += w

    return path_kernel, stream_kernel


@cache
def _blocked_path_kernel() -> Any:
    """Compile (or load from numba's cache) the path kernel, four trials at a time."""
    import numba

    @numba.njit(cache=True, nogil=True)
    def path_kernel(X, y, perm, start, stop, G, scale, W, W_sum, clipped, eta, clip, tail_start):
        # _kernels' path_kernel with trials k..k+3 of a step side by side: their inner
        # products and squared norms summed over i = 0..d-1 as there (eight independent
        # chains), then each trial's clip and update as there, in the trial order.
        trials = perm.shape[0]
        d = X.shape[1]
        k4 = trials - trials % 4
        rr = np.empty(4)
        ss = np.empty(4)
        pp = np.empty(4, dtype=np.int64)
        for t in range(start, stop):
            j = t - start
            in_tail = t + 1 >= tail_start
            for k0 in range(0, trials, 4):
                m = 4 if k0 < k4 else trials - k0
                if m == 4:
                    p0 = perm[k0, t]
                    p1 = perm[k0 + 1, t]
                    p2 = perm[k0 + 2, t]
                    p3 = perm[k0 + 3, t]
                    r0 = 0.0
                    r1 = 0.0
                    r2 = 0.0
                    r3 = 0.0
                    s0 = 0.0
                    s1 = 0.0
                    s2 = 0.0
                    s3 = 0.0
                    for i in range(d):
                        x0 = X[p0, i]
                        x1 = X[p1, i]
                        x2 = X[p2, i]
                        x3 = X[p3, i]
                        r0 += x0 * W[k0, i]
                        s0 += x0 * x0
                        r1 += x1 * W[k0 + 1, i]
                        s1 += x1 * x1
                        r2 += x2 * W[k0 + 2, i]
                        s2 += x2 * x2
                        r3 += x3 * W[k0 + 3, i]
                        s3 += x3 * x3
                    rr[0] = r0
                    rr[1] = r1
                    rr[2] = r2
                    rr[3] = r3
                    ss[0] = s0
                    ss[1] = s1
                    ss[2] = s2
                    ss[3] = s3
                    pp[0] = p0
                    pp[1] = p1
                    pp[2] = p2
                    pp[3] = p3
                else:
                    for q in range(m):
                        p = perm[k0 + q, t]
                        r = 0.0
                        sq = 0.0
                        for i in range(d):
                            r += X[p, i] * W[k0 + q, i]
                            sq += X[p, i] * X[p, i]
                        rr[q] = r
                        ss[q] = sq
                        pp[q] = p
                for q in range(m):
                    k = k0 + q
                    p = pp[q]
                    r = rr[q] - y[p]
                    gnorm = abs(r) * np.sqrt(ss[q])
                    if gnorm > clip:
                        clipped[k] += 1.0
                        r = r * (clip / max(gnorm, clip))
                    for i in range(d):
                        W[k, i] = W[k, i] - eta * (X[p, i] * r + G[j, k, i] * scale)
                        if in_tail:
                            W_sum[k, i] += W[k, i]

    return path_kernel


def path_chunk(
    X: np.ndarray,
    y: np.ndarray,
    perm: np.ndarray,
    G: np.ndarray,
    W: np.ndarray,
    W_sum: np.ndarray,
    clipped: np.ndarray,
    *,
    noise_scale: float,
    start: int,
    stop: int,
    eta: float,
    clip: float,
    tail_start: int,
    variant: str = "blocked",
) -> None:
    r"""Run steps ``start..stop-1`` of :func:`~dpreg.estimators.dp_ssgd.dp_ssgd_path` in place.

    Step t of trial k reads row ``perm[k, t]`` of ``X`` (n, d) and ``y`` (n,) (no gathered
    copy of the chunk); ``G`` (stop - start, trials, d) holds the chunk's standard normals
    and ``noise_scale`` is :math:`2\zeta\alpha`; ``W``, ``W_sum`` (trials, d) and ``clipped``
    (trials,) are updated. No validation (C-contiguous float64 arrays, int64 ``perm``)
    but of ``variant`` (:data:`PATH_VARIANTS`: ``"blocked"`` or ``"rowwise"``, the same
    values bit for bit).

    Examples
    --------
    >>> import numpy as np
    >>> W, S, c = np.zeros((1, 2)), np.zeros((1, 2)), np.zeros(1)
    >>> X, y, perm = np.array([[1.0, 0.0]]), np.array([2.0]), np.zeros((1, 1), dtype=np.int64)
    >>> path_chunk(X, y, perm, np.zeros((1, 1, 2)), W, S, c, noise_scale=1.0, start=0, stop=1,
    ...            eta=0.5, clip=10.0, tail_start=1)
    >>> W.tolist(), S.tolist(), c.tolist()
    ([[1.0, 0.0]], [[1.0, 0.0]], [0.0])
    """
    if variant not in PATH_VARIANTS:
        raise ValueError(f"variant must be one of {PATH_VARIANTS}; got {variant!r}")
    kernel = _blocked_path_kernel() if variant == "blocked" else _kernels()[0]
    kernel(X, y, perm, start, stop, G, noise_scale, W, W_sum, clipped, eta, clip, tail_start)


def stream_chunk(
    X: np.ndarray,
    base: np.ndarray,
    z: np.ndarray | None,
    sigma: np.ndarray,
    norms: np.ndarray,
    rng: np.random.Generator,
    W: np.ndarray,
    W_sum: np.ndarray,
    clipped: np.ndarray,
    *,
    noise_scale: np.ndarray,
    eta_clip: np.ndarray,
    clip: np.ndarray,
    first_step: int,
    tail_start: int,
    inline_pcg64: bool = True,
) -> None:
    r"""Run one chunk of :func:`~dpreg.estimators.dp_ssgd.dp_ssgd_stream_pass` in place.

    ``X`` (D, k, d) (read in place, any strides), responses
    :math:`y = \text{base} + \sigma_r z` from ``base``, ``z`` (D, k) (``None``: y = base)
    and ``sigma`` (R,), ``norms`` (D, k), ``rng`` the generator of the noise,
    ``noise_scale`` (R,) :math:`2\eta\zeta\alpha` per run; ``W``, ``W_sum``
    (D, 1, d, R) and ``clipped`` (D, R) are updated; ``eta_clip`` (R,) is
    :math:`\eta\zeta`, ``clip`` (R,) :math:`\zeta`. No validation.

    The chunk's k D d R standard normals are drawn from ``rng`` inside the steps, each
    where it is used, in the C order of an array of shape (k, D, 1, d, R): the values
    and the generator state of ``rng.standard_normal((k, D, 1, d, R))`` (the numpy
    reference's draw), with no noise buffer, so one call can run any number of rows
    (issue 18; ``tests/unit/test_dp_ssgd_kernel.py``). For a PCG64 generator the draws
    are numpy's PCG64 and ziggurat inlined (:func:`dpreg.data._pcg64_jit.dp_ssgd_stream`;
    ``inline_pcg64=False``: numba's ``rng.standard_normal()``, the same values and state).

    Examples
    --------
    >>> import numpy as np
    >>> W, S, c = np.zeros((1, 1, 2, 1)), np.zeros((1, 1, 2, 1)), np.zeros((1, 1))
    >>> X = np.array([[[1.0, 0.0]]])
    >>> stream_chunk(X, np.array([[2.0]]), None, np.zeros(1), np.ones((1, 1)),
    ...              np.random.default_rng(0), W, S, c, noise_scale=np.zeros(1),
    ...              eta_clip=np.array([5.0]), clip=np.array([10.0]), first_step=0,
    ...              tail_start=1)
    >>> W[0, 0, :, 0].tolist(), c.tolist()
    ([1.0, 0.0], [[0.0]])
    """
    X = np.asarray(X, dtype=np.float64)
    base = np.asarray(base, dtype=np.float64)
    if z is None:
        z, sigma = base, np.empty(0)  # the kernel reads y = base
    else:
        z = np.asarray(z, dtype=np.float64)
        sigma = np.ascontiguousarray(np.broadcast_to(sigma, (W.shape[3],)), dtype=np.float64)
    pcg = pcg64_state(rng) if inline_pcg64 else None
    if pcg is None:
        _kernels()[1](
            X, base, z, sigma, norms, rng, noise_scale, W, W_sum, clipped, eta_clip, clip,
            first_step, tail_start,
        )  # fmt: skip
        return
    from dpreg.data._pcg64_jit import dp_ssgd_stream

    dp_ssgd_stream(
        X, base, z, sigma, norms, pcg[1], noise_scale, W, W_sum, clipped, eta_clip, clip,
        first_step, tail_start,
    )  # fmt: skip
    set_pcg64_state(rng, *pcg)
