r"""Standard DP-SGD with Poisson subsampling (Abadi et al. 2016): the fixed-clip baseline.

Each step includes every row independently with probability :math:`q = L/N` (L the
expected batch size, N the **public** dataset size ``n_public``), clips each per-example
gradient :math:`x_i(\langle x_i, w\rangle - y_i)` to norm C, adds
:math:`N(0, \sigma_{DP}^2C^2 I)` to the sum and moves
:math:`w \leftarrow w - \eta(\text{sum} + \text{noise})/L` (normalising by the *expected*
batch size keeps the sensitivity data-independent). ``steps = ceil(epochs / q)``; the
output is the average of the last half of the iterates, like DP-AMBSSGD's.

Under add-or-remove-one neighbours the number of rows is private: q, the step count and
the noise scale are computed from the public ``n_public`` and never from the data's own
row count (computing them from ``len(X)`` made one extra row change the mechanism itself:
n = 100 -> 101 at L = 50 moved the run from 2 to 3 steps and the noise std from 3.46 to
4.00). The data may have any number of rows; ``n_public`` is what the analyst declares.

:math:`\sigma_{DP}` is calibrated with ``dp-accounting`` (RDP or PLD) for the
Poisson-subsampled Gaussian, **add-or-remove-one** neighbours (dp-accounting's relation for
Poisson sampling). DP-AMBSSGD's guarantee is replace-one, which is stronger at equal
(epsilon, delta), so this comparison favours the baseline.

Poisson sampling is exact and vectorised over trials: inclusion positions are cumulative
sums of geometric gaps (the gaps between successes of independent Bernoulli(q) trials).

:func:`fit_dp_sgd_poisson` with ``kernel="numba"`` (what ``"auto"``, the default, picks
for large calls) reads each trial's sampled rows in place in one compiled pass (residual,
clip, sum); ``kernel="numpy"`` (the reference) gathers them into a (trials, M, d) copy.
The draws are the same; the results agree up to the order of the additions
(``tests/unit/test_dpsgd_poisson_kernel.py``).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np

from dpreg._validation import (
    check_choice,
    check_optional_bounds,
    check_positive,
    check_regression,
    check_rng,
    check_trials,
)
from dpreg.estimators.ambssgd_privacy import ACCOUNTANTS, calibrate_poisson_dpsgd
from dpreg.estimators.blas_order import at_b, swap_pays
from dpreg.privacy.budgets import ApproxDP, check_approx_dp_budget
from dpreg.results import Fit

__all__ = [
    "AUTO_MIN_ROWS",
    "POISSON_KERNELS",
    "dp_sgd_poisson_runs",
    "dp_sgd_poisson_stream_runs",
    "fit_dp_sgd_poisson",
    "poisson_positions",
    "poisson_positions_one",
]


POISSON_KERNELS: tuple[str, ...] = ("auto", "numba", "numpy", "numpy_reference")
"""Kernels of :func:`fit_dp_sgd_poisson`: compiled in-place reads, numpy on gathered copies
(``"numpy"``, the same bits as ``"numpy_reference"``, the former gathers), or ``"auto"``
(compiled from :data:`AUTO_MIN_ROWS` expected sampled rows)."""

AUTO_MIN_ROWS = 1 << 22
"""``kernel="auto"`` sums with the compiled kernel when trials x steps x batch size reaches
this; below it the numpy reference costs about as much as the kernel's one-time start in a
fresh process (numba's import and cache load, about 1 s)."""


@cache
def _step_kernel_rowwise() -> Any:
    """Compile (or load from numba's cache) one step's clipped gradient sums, row by row.

    The reference of :func:`_step_kernel` (the same values bit for bit, tested).
    """
    import numba

    @numba.njit(cache=True, nogil=True)
    def step(X, y, norms, pos, mask, W, clip, total, clipped, seen):
        # total[k] += sum over sampled rows i = pos[k, j] (mask) of
        # x_i r_i clip / max(|r_i| ||x_i||, clip), r_i = <x_i, W[k]> - y_i; counts.
        trials, M = pos.shape
        d = X.shape[1]
        for k in range(trials):
            for j in range(M):
                if not mask[k, j]:
                    continue
                i = pos[k, j]
                r = 0.0
                for c in range(d):
                    r += X[i, c] * W[k, c]
                r -= y[i]
                g = abs(r) * norms[i]
                if g > clip:
                    clipped[k] += 1.0
                seen[k] += 1.0
                coef = r * (clip / max(g, clip))
                for c in range(d):
                    total[k, c] += X[i, c] * coef

    return step


@cache
def _step_kernel() -> Any:
    """Compile (or load from numba's cache) one step's clipped gradient sums, 4 rows at a time.

    The arithmetic of :func:`_step_kernel_rowwise` per row and coordinate, in its order:
    the sampled rows of a trial four at a time, their four dot products summed side by
    side (independent chains, each over c = 0..d-1), then added into ``total`` in the row
    order (issue 18).
    """
    import numba

    @numba.njit(cache=True, nogil=True)
    def step(X, y, norms, pos, mask, W, clip, total, clipped, seen):
        trials, M = pos.shape
        d = X.shape[1]
        rows = np.empty(M, dtype=np.int64)
        for k in range(trials):
            m = 0
            for j in range(M):
                if mask[k, j]:
                    rows[m] = pos[k, j]
                    m += 1
            m4 = m - m % 4
            for j in range(0, m4, 4):
                i0 = rows[j]
                i1 = rows[j + 1]
                i2 = rows[j + 2]
                i3 = rows[j + 3]
                r0 = 0.0
                r1 = 0.0
                r2 = 0.0
                r3 = 0.0
                for c in range(d):
                    w = W[k, c]
                    r0 += X[i0, c] * w
                    r1 += X[i1, c] * w
                    r2 += X[i2, c] * w
                    r3 += X[i3, c] * w
                r0 -= y[i0]
                r1 -= y[i1]
                r2 -= y[i2]
                r3 -= y[i3]
                g0 = abs(r0) * norms[i0]
                g1 = abs(r1) * norms[i1]
                g2 = abs(r2) * norms[i2]
                g3 = abs(r3) * norms[i3]
                clipped[k] += (g0 > clip) + (g1 > clip) + (g2 > clip) + (g3 > clip)
                seen[k] += 4.0
                c0 = r0 * (clip / max(g0, clip))
                c1 = r1 * (clip / max(g1, clip))
                c2 = r2 * (clip / max(g2, clip))
                c3 = r3 * (clip / max(g3, clip))
                for c in range(d):
                    acc = total[k, c] + X[i0, c] * c0
                    acc = acc + X[i1, c] * c1
                    acc = acc + X[i2, c] * c2
                    total[k, c] = acc + X[i3, c] * c3
            for j in range(m4, m):
                i = rows[j]
                r = 0.0
                for c in range(d):
                    r += X[i, c] * W[k, c]
                r -= y[i]
                g = abs(r) * norms[i]
                if g > clip:
                    clipped[k] += 1.0
                seen[k] += 1.0
                coef = r * (clip / max(g, clip))
                for c in range(d):
                    total[k, c] += X[i, c] * coef

    return step


@cache
def _clip_kernel_simd() -> Any:
    """Return the lanes' residual clipping of one step, the lanes in SIMD registers.

    :func:`dpreg.estimators._dpsgd_lanes_jit.clip_lanes_simd`: the arithmetic of
    :func:`_clip_kernel` (the reference) per entry, its counts summed once per call (the
    same bits, tested); compiled or loaded from numba's cache on first use.
    """
    from dpreg.estimators._dpsgd_lanes_jit import clip_lanes_simd

    return clip_lanes_simd


@cache
def _clip_kernel() -> Any:
    """Compile (or load from numba's cache) the lanes' residual clipping of one step.

    The reference of :func:`_clip_kernel_simd` (the same bits).
    """
    import numba

    @numba.njit(cache=True, nogil=True)
    def clip_lanes(Rm, base, noise, sig, xnorm, clip, clipped, has_noise):
        # In place, row m and lane r: Rm = <x_m, w_r> - y_mr, y_mr = base_m + noise_m sig_r,
        # times clip_r / max(|Rm| ||x_m||, clip_r); clipped_r counts |Rm| ||x_m|| > clip_r.
        # The reference's elementwise operations, in its order.
        M, R = Rm.shape
        for m in range(M):
            for r in range(R):
                y = base[m] + noise[m] * sig[r] if has_noise else base[m]
                v = Rm[m, r] - y
                g = abs(v) * xnorm[m]
                if g > clip[r]:
                    clipped[r] += 1.0
                Rm[m, r] = v * (clip[r] / max(g, clip[r]))

    return clip_lanes


def _numpy_step_reference(
    X: np.ndarray, y: np.ndarray, pos: np.ndarray, mask: np.ndarray, W: np.ndarray,
    clip: float, clipped: np.ndarray, seen: np.ndarray,
) -> np.ndarray:  # fmt: skip
    """One step's clipped gradient sums (trials, d), by numpy on gathered copies.

    The reference of ``kernel="numpy"`` (:class:`_GatheredSums`, the same values bit for
    bit); updates the counts ``clipped`` and ``seen`` in place.
    """
    Xb = X[pos]  # (trials, M, d)
    r = np.einsum("kmd,kd->km", Xb, W) - y[pos]
    gnorm = np.abs(r) * np.sqrt(np.einsum("kmd,kmd->km", Xb, Xb))
    over = (gnorm > clip) & mask
    clipped += over.sum(axis=1)
    seen += mask.sum(axis=1)
    coef = np.where(mask, r * (clip / np.maximum(gnorm, clip)), 0.0)
    return np.einsum("kmd,km->kd", Xb, coef)


class _GatheredSums:
    r""":func:`_numpy_step_reference` with the gathers and row norms made cheaper (issue 18).

    The same numpy operations on the same values, so the same bits (tested): the
    sampled rows are taken (``np.take``, one contiguous row per index) from a row-major
    copy of ``X`` into a buffer reused across steps, instead of fancy-indexing the
    column-major table into a fresh array every step; the row norms
    :math:`\|x_i\|` are computed once per row of ``X`` by the same ``einsum``
    reduction over a contiguous row that the reference applies to each gathered copy,
    and taken at the sampled positions.
    """

    def __init__(self, X: np.ndarray, y: np.ndarray) -> None:
        self.X = np.ascontiguousarray(X)
        self.y = np.ascontiguousarray(y)
        self.norms = np.sqrt(np.einsum("id,id->i", self.X, self.X))
        self.buf = np.empty((0, X.shape[1]))

    def step(
        self, pos: np.ndarray, mask: np.ndarray, W: np.ndarray, clip: float,
        clipped: np.ndarray, seen: np.ndarray,
    ) -> np.ndarray:  # fmt: skip
        """Return the step's sums (trials, d) and update the counts, as the reference."""
        d = self.X.shape[1]
        if self.buf.shape[0] < pos.size:
            self.buf = np.empty((pos.size + pos.size // 8, d))
        # mode="clip": unbuffered (positions are in [0, n): the same rows)
        Xb = np.take(self.X, pos, axis=0, out=self.buf[: pos.size].reshape(*pos.shape, d),
                     mode="clip")  # fmt: skip
        r = np.einsum("kmd,kd->km", Xb, W) - np.take(self.y, pos)
        gnorm = np.abs(r) * np.take(self.norms, pos)
        over = (gnorm > clip) & mask
        clipped += over.sum(axis=1)
        seen += mask.sum(axis=1)
        coef = np.where(mask, r * (clip / np.maximum(gnorm, clip)), 0.0)
        return np.einsum("kmd,km->kd", Xb, coef)


def poisson_positions(
    n: int, q: float, trials: int, rng: np.random.Generator, *, compiled: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Draw the indices of a Poisson(q) subsample of ``range(n)`` for each trial.

    Returns ``(positions, mask)`` of shape (trials, M): row k's valid entries
    (``mask``) are its sampled indices in increasing order; others are padding (0).

    ``compiled=True`` draws the geometric gaps and their cumulative sums in one compiled
    pass (:func:`dpreg.data._pcg64_jit.geometric_cumsum`: numpy's exponential ziggurat and
    ``random_geometric_inversion`` on the inlined PCG64, about 3x faster per draw) when
    ``rng`` is a plain PCG64 Generator and ``q < 1/3``; otherwise, and with
    ``compiled=False`` (the reference), numpy's ``rng.geometric`` and ``np.cumsum``. The
    same positions, mask and generator state either way (issue 18, session 25;
    ``tests/unit/test_dpsgd_poisson_kernel.py``).
    """
    M = int(q * n + 8.0 * math.sqrt(q * n + 1.0) + 16)
    pos, width = _compiled_cumsum(n, q, trials, M, rng) if compiled else (None, -1)
    if pos is None:
        gaps = rng.geometric(q, size=(trials, M))
        pos = np.cumsum(gaps, axis=1) - 1
    if width < 0:
        while np.any(pos[:, -1] < n):  # rare: the draw did not reach the end of the data
            more = rng.geometric(q, size=(trials, M))
            pos = np.concatenate([pos, pos[:, -1:] + np.cumsum(more, axis=1)], axis=1)
        mask = pos < n
        width = int(mask.sum(axis=1).max()) if mask.any() else 1
        pos, mask = pos[:, :width], mask[:, :width]
    else:  # the kernel counted the positions below n: the same width, from fewer columns
        pos = pos[:, : max(width, 1)]
        mask = pos < n
    return np.where(mask, pos, 0), mask


def _compiled_cumsum(
    n: int, q: float, trials: int, M: int, rng: np.random.Generator
) -> tuple[np.ndarray | None, int]:
    """``np.cumsum(rng.geometric(q, size=(trials, M)), axis=1) - 1`` compiled, and its width.

    Returns ``(None, -1)`` where the compiled draw does not apply (not a plain PCG64
    Generator, or ``q >= 1/3``, where numpy searches instead of inverting), else the
    positions and the largest number below ``n`` in a row (-1 if a row ends below ``n``).
    """
    if type(rng) is not np.random.Generator or not 0.0 < q < 0.333333333333333333333333:
        return None, -1
    from dpreg.data.normal_kernel import pcg64_state, set_pcg64_state

    pcg = pcg64_state(rng)
    if pcg is None:
        return None, -1
    from dpreg.data import _pcg64_jit

    pos = np.empty((trials, M), dtype=np.int64)
    # numpy's npy_log1p(-p) is libm's log1p, as math.log1p
    width = int(_pcg64_jit.geometric_cumsum(pcg[1], math.log1p(-q), n, pos))
    set_pcg64_state(rng, *pcg)
    return pos, width


def poisson_positions_one(n: int, q: float, rng: np.random.Generator) -> np.ndarray:
    """Return the sampled indices of one Poisson(q) subsample of ``range(n)``, increasing.

    The valid entries of ``poisson_positions(n, q, 1, rng)`` (the same geometric draws,
    the same calls on ``rng``) without its padding and mask: the positions are strictly
    increasing, so the sample is a prefix cut by one binary search (half the numpy calls
    of one DP-SGD step's draw; tested equal, ``tests/unit/test_dpsgd_poisson_kernel.py``).

    Examples
    --------
    >>> import numpy as np
    >>> a = poisson_positions_one(100, 0.1, np.random.default_rng(0))
    >>> pos, mask = poisson_positions(100, 0.1, 1, np.random.default_rng(0))
    >>> bool(np.array_equal(a, pos[0][mask[0]]))
    True
    """
    M = int(q * n + 8.0 * math.sqrt(q * n + 1.0) + 16)
    pos = np.cumsum(rng.geometric(q, size=(1, M))[0])
    pos -= 1
    while pos[-1] < n:  # rare: the draw did not reach the end of the data
        more = np.cumsum(rng.geometric(q, size=(1, M))[0])
        pos = np.concatenate([pos, pos[-1] + more])
    return pos[: int(np.searchsorted(pos, n))]


def dp_sgd_poisson_runs(
    X: np.ndarray,
    base: np.ndarray,
    noise: np.ndarray | None,
    *,
    sigma: np.ndarray,
    clip: np.ndarray,
    eta: np.ndarray,
    noise_multiplier: np.ndarray,
    batch_size: float,
    steps: int,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    r"""DP-SGD with Poisson subsampling for R runs that share the data and the subsamples.

    The study's grid version of :func:`fit_dp_sgd_poisson`: run r uses the response
    ``base + sigma[r] * noise``, clip norm ``clip[r]``, step ``eta[r]`` and noise
    multiplier ``noise_multiplier[r]`` (calibrated by the caller); all runs read the same
    Poisson subsample at each step. Each run on its own is exactly the algorithm of
    :func:`fit_dp_sgd_poisson` (the shared subsamples only correlate runs), so each run
    has the privacy guarantee its multiplier was calibrated for. No validation.

    Returns
    -------
    (theta, clip_fraction)
        Tail averages of the last half of the iterates, (R, d), and the fraction of
        sampled per-example gradients that were clipped, (R,).
    """
    n = X.shape[0]
    buf = np.empty((0, X.shape[1]), dtype=X.dtype)

    def gather(pos: np.ndarray):
        # into one reused buffer (the step reads it before the next call): a fresh copy
        # per step was returned to the OS and faulted in again every step (issue 18)
        nonlocal buf
        if buf.shape[0] < pos.size:
            buf = np.empty((pos.size + pos.size // 8, X.shape[1]), dtype=X.dtype)
        # mode="clip": unbuffered (positions are in [0, n): the same rows)
        Xb = np.take(X, pos, axis=0, out=buf[: pos.size], mode="clip")
        return Xb, base[pos], None if noise is None else noise[pos]

    return dp_sgd_poisson_stream_runs(
        gather, n, X.shape[1], sigma=sigma, clip=clip, eta=eta,
        noise_multiplier=noise_multiplier, batch_size=batch_size, steps=steps, rng=rng,
    )  # fmt: skip


def dp_sgd_poisson_stream_runs(
    rows: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray | None]],
    n: int,
    d: int,
    *,
    sigma: np.ndarray,
    clip: np.ndarray,
    eta: np.ndarray,
    noise_multiplier: np.ndarray,
    batch_size: float,
    steps: int,
    rng: np.random.Generator,
    kernel: str = "auto",
) -> tuple[np.ndarray, np.ndarray]:
    r""":func:`dp_sgd_poisson_runs` reading each step's subsample through ``rows(positions)``.

    The N rows are never held: step t draws its Poisson(q) positions, ``q = batch_size / n``,
    and asks ``rows`` for ``(X, base, noise)`` at those positions, (M, d), (M,), (M,) or
    None (e.g. :meth:`dpreg.data.streams.CounterGaussianRows.rows`, which regenerates them
    from the seed). :func:`dp_sgd_poisson_runs` is this function with an in-memory
    ``rows``; the random draws are the same, in the same order, so equal rows give
    bit-identical results and the privacy calibration (the caller's, from the public n) is
    unchanged. Memory: one subsample, O(batch_size d + d R). No validation.

    ``kernel``: how each step's residuals are formed and clipped after the product
    :math:`X_b W` (BLAS either way): ``"numba"`` in one compiled pass over the (M, R)
    lanes, the reference's elementwise operations in its order (bit-identical,
    ``tests/unit/test_dpsgd_poisson_kernel.py``); ``"numpy"`` the reference; ``"auto"``
    compiled when numba is already loaded or ``steps * batch_size * R`` reaches
    :data:`AUTO_MIN_ROWS`. The compiled path runs the lanes in SIMD registers
    (:mod:`dpreg.estimators._dpsgd_lanes_jit`) and, from d = 100, forms
    :math:`X_b^\top r` as :math:`(r^\top X_b)^\top`
    (:func:`~dpreg.estimators.blas_order.at_b`; the same bits with this machine's
    OpenBLAS, tested at the study's shapes).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(1).normal(size=(200, 2))
    >>> def rows(pos):
    ...     return X[pos], X[pos] @ np.ones(2), None
    >>> theta, cf = dp_sgd_poisson_stream_runs(
    ...     rows, 200, 2, sigma=np.zeros(1), clip=np.ones(1), eta=np.full(1, 0.5),
    ...     noise_multiplier=np.ones(1), batch_size=20, steps=10, rng=np.random.default_rng(0))
    >>> theta.shape, cf.shape
    ((1, 2), (1,))
    """
    clip = np.asarray(clip, dtype=np.float64)
    eta = np.asarray(eta, dtype=np.float64)
    sig = np.asarray(sigma, dtype=np.float64)
    noise_std = np.asarray(noise_multiplier, dtype=np.float64) * clip  # on the sum
    R = clip.size
    q = batch_size / n
    W = np.zeros((d, R))
    W_sum = np.zeros((d, R))
    clipped = np.zeros(R)
    seen = 0
    tail_start = steps // 2 + 1
    check_choice(kernel, "kernel", POISSON_KERNELS)
    if kernel == "auto":
        big = steps * batch_size * R >= AUTO_MIN_ROWS
        kernel = "numba" if big or "numba" in sys.modules else "numpy"
    clip_lanes = _clip_kernel_simd() if kernel == "numba" else None
    sig_c = np.ascontiguousarray(np.broadcast_to(sig, (R,)))
    r_buf = np.empty((0, R))
    count = np.empty(R, dtype=np.int64)  # the compiled pass's scratch counts
    for t in range(steps):
        pos = poisson_positions_one(n, q, rng)  # poisson_positions' sampled indices
        Xb, base_b, noise_b = rows(pos)  # (M, d), (M,), (M,) or None
        if clip_lanes is not None:
            if r_buf.shape[0] < pos.size:  # reused, as the rows of ``gather`` above
                r_buf = np.empty((pos.size + pos.size // 8, R))
            r = np.matmul(Xb, W, out=r_buf[: pos.size])  # (M, R), the product of Xb @ W
            xnorm = np.sqrt(np.einsum("md,md->m", Xb, Xb))
            has_noise = noise_b is not None
            noise_c = np.ascontiguousarray(noise_b) if has_noise else base_b
            clip_lanes(r, np.ascontiguousarray(base_b), noise_c, sig_c, xnorm, clip, clipped,
                       has_noise, count)  # fmt: skip
            seen += pos.size
            # Xb' r as (r' Xb)': the same sums, faster from d = 100 (blas_order)
            xtr = at_b(Xb, r, swap=swap_pays(pos.size, d, R, min_cols=100))
        else:
            y = base_b[:, None] if noise_b is None else base_b[:, None] + noise_b[:, None] * sig
            r = Xb @ W - y  # (M, R)
            gnorm = np.abs(r) * np.sqrt(np.einsum("md,md->m", Xb, Xb))[:, None]
            clipped += (gnorm > clip).sum(axis=0)
            seen += pos.size
            r *= clip / np.maximum(gnorm, clip)  # r min{1, C/||g||}
            xtr = Xb.T @ r
        total = xtr + noise_std * rng.standard_normal((d, R))
        W -= eta * total / batch_size
        if t + 1 >= tail_start:
            W_sum += W
    return (W_sum / (steps - steps // 2)).T, clipped / max(seen, 1)


def fit_dp_sgd_poisson(
    X: Any,
    y: Any,
    *,
    budget: ApproxDP,
    rng: np.random.Generator,
    trials: int = 1,
    clip: float,
    eta: float,
    batch_size: float,
    n_public: int,
    epochs: float = 1.0,
    accountant: str = "rdp",
    bound_X: float | None = None,
    bound_y: float | None = None,
    kernel: str = "auto",
) -> Fit:
    r"""DP-SGD with Poisson subsampling, calibrated by dp-accounting.

    Parameters
    ----------
    X, y : ndarray
        Data, (n, d) and (n,).
    budget : ApproxDP
        Target (add-or-remove-one). ``epsilon = inf``: no noise (clipping kept).
    rng : numpy.random.Generator
    trials : int
        Independent repetitions, vectorised.
    clip : float
        Per-example clip norm C (public).
    eta : float
        Step size.
    batch_size : float
        Expected batch size L (1 <= L <= ``n_public``).
    n_public : int
        Public dataset size N (declared by the analyst, not read off the data): the
        sampling rate is ``q = L / N`` and the step count ``ceil(epochs * N / L)``, so
        the mechanism is the same on neighbouring datasets of n and n + 1 rows.
    epochs : float
        Expected passes over N rows; ``steps = ceil(epochs * N / L)``.
    accountant : {"rdp", "pld"}
    bound_X, bound_y : float or None, default None
        Public data bounds (``max ||x_i|| <= bound_X``, ``max |y_i| <= bound_y``),
        accepted like every other estimator's and checked against the data (never
        clipped); the mechanism is set by ``clip``, so they change nothing else.
        ``None``: no bound declared.
    kernel : {"auto", "numba", "numpy", "numpy_reference"}, default "auto"
        How each step's clipped gradients are summed: compiled, reading the sampled
        rows in place, or numpy on gathered copies (``"numpy"``: rows taken from a
        row-major copy into a reused buffer, row norms computed once; bit for bit the
        values of ``"numpy_reference"``, the former gathers); ``"auto"`` is
        ``"numba"`` when ``trials * steps * batch_size >= AUTO_MIN_ROWS``
        (:math:`2^{22}`), else ``"numpy"``. Same draws, same result up to rounding.

    Returns
    -------
    Fit
        ``budget_spent`` recomputed by the accountant from the calibrated multiplier;
        diagnostics ``noise_multiplier``, ``steps``, ``sampling_rate``,
        ``clip_fraction`` (trials,), ``neighbours = "add_remove_one"``.

    Examples
    --------
    >>> import numpy as np
    >>> from dpreg import ApproxDP
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(1000, 3)) / 3
    >>> y = X @ np.array([0.5, -0.3, 0.2])
    >>> fit = fit_dp_sgd_poisson(X, y, budget=ApproxDP(1.0, 1e-6), rng=rng, trials=2, clip=1.0,
    ...                          eta=0.5, batch_size=100, n_public=1000)
    >>> fit.theta.shape
    (2, 3)
    """
    epsilon, delta = check_approx_dp_budget(budget)
    X, y = check_regression(X, y, require_full_rank=False)
    check_optional_bounds(X, y, bound_X, bound_y)
    trials = check_trials(trials, bytes_per_trial=8 * (X.shape[0] * (X.shape[1] + 3)))
    check_rng(rng)
    clip = check_positive(clip, "clip")
    eta = check_positive(eta, "eta")
    batch_size = check_positive(batch_size, "batch_size")
    epochs = check_positive(epochs, "epochs")
    check_choice(accountant, "accountant", ACCOUNTANTS)
    check_choice(kernel, "kernel", POISSON_KERNELS)
    if isinstance(n_public, bool) or not isinstance(n_public, int | np.integer) or n_public < 1:
        raise ValueError(f"n_public must be a positive integer; got {n_public!r}")
    n_public = int(n_public)
    n, d = X.shape  # n is private: nothing below but the sampling itself depends on it
    if batch_size > n_public:
        raise ValueError(f"batch_size must be <= n_public={n_public}; got {batch_size!r}")
    q = batch_size / n_public
    steps = math.ceil(epochs / q)
    if math.isinf(epsilon):
        sigma_dp, spent = 0.0, ApproxDP(math.inf, delta)
    else:
        from dpreg.estimators.ambssgd_privacy import poisson_dpsgd_epsilon

        sigma_dp = calibrate_poisson_dpsgd(epsilon, delta, q, steps, accountant)
        spent = ApproxDP(poisson_dpsgd_epsilon(sigma_dp, q, steps, delta, accountant), delta)
    W = np.zeros((trials, d))
    W_sum = np.zeros((trials, d))
    clipped = np.zeros(trials)
    seen = np.zeros(trials)
    tail_start = steps // 2 + 1
    if kernel == "auto":
        kernel = "numba" if trials * steps * batch_size >= AUTO_MIN_ROWS else "numpy"
    if kernel == "numba":
        step_kernel = _step_kernel()
        norms = np.sqrt(np.einsum("id,id->i", X, X))
        # rows contiguous for the kernel (a prepared table's X is column-major: row i
        # of it spans d cache lines); the same values, so the same sums (issue 18)
        X_rows = np.ascontiguousarray(X)
    elif kernel == "numpy":
        gathered = _GatheredSums(X, y)
    # the positions' compiled draw where numba is loaded anyway (the same bits)
    compiled = kernel != "numpy_reference" and (kernel == "numba" or "numba" in sys.modules)
    for t in range(steps):
        pos, mask = poisson_positions(n, q, trials, rng, compiled=compiled)
        if kernel == "numba":
            total = np.zeros((trials, d))
            step_kernel(X_rows, y, norms, pos, mask, W, clip, total, clipped, seen)
        elif kernel == "numpy":
            total = gathered.step(pos, mask, W, clip, clipped, seen)
        else:
            total = _numpy_step_reference(X, y, pos, mask, W, clip, clipped, seen)
        total += sigma_dp * clip * rng.standard_normal((trials, d))
        W = W - eta * total / batch_size
        if t + 1 >= tail_start:
            W_sum += W
    theta = W_sum / (steps - steps // 2)
    diagnostics = {
        "noise_multiplier": sigma_dp,
        "steps": steps,
        "sampling_rate": q,
        "n_public": n_public,
        "clip": clip,
        "eta": eta,
        "accountant": accountant,
        "clip_fraction": clipped / np.maximum(seen, 1),
        "neighbours": "add_remove_one",
    }
    return Fit(theta=theta, budget_spent=spent, estimator="dp_sgd_poisson", diagnostics=diagnostics)
