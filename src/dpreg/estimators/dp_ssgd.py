r"""DP-SSGD (Varshney, Thakurta & Jain 2022, Algorithm 1): one-pass shuffled SGD.

.. math::
    w_{t+1} = w_t - \eta\big(\mathrm{clip}_\zeta(x_t(\langle x_t, w_t\rangle - y_t))
    + 2\zeta\alpha\, g_t\big),\quad t = 0..N-1,\qquad
    \bar w = \frac{2}{N}\sum_{t=N/2+1}^{N} w_t,

on a uniformly permuted data set. Privacy by amplification by shuffling (Theorem 3.1;
Feldman, McMillan & Talwar 2021, Thm 3.8), calibrated concretely by
:func:`dpreg.estimators.ambssgd_privacy.calibrate_dp_ssgd`: **valid only in the small-
epsilon regime** (local :math:`\varepsilon_0 \le \ln(N/(16\ln(2/\hat\delta)))`, and
:math:`\varepsilon_0 < 1` for the classic Gaussian of Lemma A.1). The calibration refuses
N too small for any amplification and warns (:class:`ShufflingRegimeWarning`) when the
target epsilon cannot be reached, certifying the smaller epsilon it does reach.

Steps are inherently sequential (N of them); trials are vectorised inside each step.
``kernel="numba"`` (default) runs each chunk of steps in compiled code
(:mod:`dpreg.estimators.dp_ssgd_kernel`); ``kernel="numpy"`` is the reference loop. Both
draw the noise of a chunk with the caller's Generator before its steps, in the same order,
and agree to round-off (``tests/unit/test_dp_ssgd_kernel.py``).
Odd N: the tail averages :math:`w_t` for :math:`t\in\{\lfloor N/2\rfloor+1, \dots, N\}`.
"""

from __future__ import annotations

import math
from collections.abc import Generator
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
from dpreg.data.normal_kernel import standard_normal_fill
from dpreg.estimators.ambssgd_privacy import LOCAL_MECHANISMS, calibrate_dp_ssgd
from dpreg.estimators.dp_ssgd_kernel import path_chunk, stream_chunk
from dpreg.estimators.permutations import uniform_key_permutations
from dpreg.privacy.budgets import ApproxDP, check_approx_dp_budget
from dpreg.results import Fit

__all__ = [
    "DP_SSGD_C1",
    "DP_SSGD_C2",
    "DP_SSGD_ETA_RULES",
    "DP_SSGD_KERNELS",
    "DpSsgdFeed",
    "dp_ssgd_hyperparameters",
    "dp_ssgd_path",
    "dp_ssgd_stream_pass",
    "fit_dp_ssgd",
    "STREAM_KERNEL_ROWS",
    "stream_chunk_rows",
]

DP_SSGD_C1 = 1.0 / 13440.0
"""c1 of Theorem 3.2's step size, from eq. (30): 1/(64 * 210) (docs/notes/varshney2022.md §2.1)."""
DP_SSGD_C2 = 1.0 / 4200.0
"""c2 of Theorem 3.2's step size, from eq. (30): 1/(4 * 1050)."""
DP_SSGD_ETA_RULES: tuple[str, ...] = ("theorem", "corollary", "lemma")
"""Step-size rules of :func:`dp_ssgd_hyperparameters`."""
DP_SSGD_KERNELS: tuple[str, ...] = ("numba", "numpy")
"""Inner loops: compiled (:mod:`dpreg.estimators.dp_ssgd_kernel`) or the numpy reference."""


def dp_ssgd_hyperparameters(
    n: int,
    d: int,
    *,
    x_norm_sq: float,
    H_norm: float,
    kappa: float,
    w_star_norm: float,
    sigma: float,
    noise_multiplier: float,
    K2: float = 1.0,
    a: float = 0.5,
    rule: str = "theorem",
) -> tuple[float, float]:
    r"""Step size and clip norm of DP-SSGD: ``(eta, zeta)``.

    ``"theorem"`` (Theorem 3.2 with eq. (30)'s explicit constants and eq. (31)):

    .. math::
        \eta = \min\Big\{\frac1{2R_x^2}, \frac{c_1}{\ln^{4a+2}N}\frac{1}{K_2^2R_x^2\kappa
        d\alpha^2}, \frac{c_2}{\ln^{2a+2}N}\frac1{R_x^2}\Big\},\quad
        \zeta = 4K_2R_x\ln^{2a}N(\sqrt{\|H\|}\|w^*\| + \sqrt\kappa\sigma);

    ``"corollary"`` (Corollary 3.3, Gaussian): :math:`\eta = 1/(4d)`,
    :math:`\zeta = \sqrt d\sqrt{\|w^*\|^2 + \sigma^2}\ln N` (inconsistent with the
    theorem, docs/notes/varshney2022.md §8 item 9; kept as a named option).

    ``"lemma"`` (non-paper option): the theorem's :math:`\zeta` with the largest step
    Lemma 3.5 allows, :math:`\eta = 1/(2R_x^2)` (Theorem 3.2's other two terms, with
    eq. (30)'s constants, make :math:`\eta` so small that the iterate barely moves).
    """
    check_choice(rule, "rule", DP_SSGD_ETA_RULES)
    log_n = math.log(n)
    if rule == "corollary":
        return 1.0 / (4.0 * d), math.sqrt(d) * math.hypot(w_star_norm, sigma) * log_n
    rx2 = x_norm_sq
    alpha2 = max(noise_multiplier, 1e-300) ** 2
    eta = min(
        1.0 / (2.0 * rx2),
        DP_SSGD_C1 / log_n ** (4 * a + 2) / (K2**2 * rx2 * kappa * d * alpha2),
        DP_SSGD_C2 / log_n ** (2 * a + 2) / rx2,
    )
    if rule == "lemma":
        eta = 1.0 / (2.0 * rx2)
    zeta = (
        4.0
        * K2
        * math.sqrt(rx2)
        * log_n ** (2 * a)
        * (math.sqrt(H_norm) * w_star_norm + math.sqrt(kappa) * sigma)
    )
    return eta, zeta


def dp_ssgd_path(
    X: np.ndarray,
    y: np.ndarray,
    perm: np.ndarray,
    *,
    eta: float,
    clip: float,
    noise_multiplier: float,
    rng: np.random.Generator,
    chunk: int = 4096,
    kernel: str = "numba",
) -> tuple[np.ndarray, np.ndarray]:
    """Numerical core of Algorithm 1 for ``trials`` permutations ``perm`` (trials, n).

    Per chunk of steps the noise is one draw of shape (chunk, trials, d); ``kernel``
    (``"numba"`` or the ``"numpy"`` reference) runs the chunk's steps. Returns the tail
    averages (trials, d) and the fraction of clipped steps (trials,).
    """
    trials, n = perm.shape
    d = X.shape[1]
    W = np.zeros((trials, d))
    W_sum = np.zeros((trials, d))
    clipped = np.zeros(trials)
    tail_start = n // 2 + 1
    noise_scale = 2.0 * clip * noise_multiplier
    if kernel == "numba":
        Xf = np.ascontiguousarray(X, dtype=np.float64)
        yf = np.ascontiguousarray(y, dtype=np.float64)
        pf = np.ascontiguousarray(perm, dtype=np.int64)
        buf = np.empty((min(chunk, n), trials, d))
    for start in range(0, n, chunk):
        stop = min(n, start + chunk)
        if kernel == "numba":  # the draw below (numpy's values, compiled); the kernel scales
            G = standard_normal_fill(rng, buf[: stop - start])  # it and reads rows in place
            path_chunk(
                Xf, yf, pf, G, W, W_sum, clipped, noise_scale=float(noise_scale), start=start,
                stop=stop, eta=float(eta), clip=float(clip), tail_start=tail_start,
            )  # fmt: skip
            continue
        Xc = X[perm[:, start:stop]]  # (trials, c, d)
        yc = y[perm[:, start:stop]]
        norms = np.sqrt(np.einsum("kcd,kcd->kc", Xc, Xc))
        G = rng.standard_normal((stop - start, trials, d)) * noise_scale
        for j in range(stop - start):
            x = Xc[:, j]
            r = np.einsum("kd,kd->k", x, W) - yc[:, j]
            gnorm = np.abs(r) * norms[:, j]
            over = gnorm > clip
            clipped += over
            coef = np.where(over, r * (clip / np.maximum(gnorm, clip)), r)
            W = W - eta * (x * coef[:, None] + G[j])
            if start + j + 1 >= tail_start:
                W_sum += W
    return W_sum / (n - n // 2), clipped / n


def dp_ssgd_stream_pass(
    source: Any,
    n_steps: int,
    *,
    eta: np.ndarray,
    clip: np.ndarray,
    noise_multiplier: np.ndarray,
    sigma: np.ndarray,
    rng: np.random.Generator,
    chunk: int | None = None,
    kernel: str = "numba",
) -> tuple[np.ndarray, np.ndarray]:
    r"""Algorithm 1 on a row stream for D replicates x R runs that share each replicate's rows.

    The study's version of :func:`dp_ssgd_path`: rows come from a
    :class:`~dpreg.estimators.ambssgd_core.RowSource` (already in a uniformly random
    order, e.g. i.i.d. synthetic rows), and R runs with their own step size, clip norm,
    noise multiplier and response noise scale (``y = base + sigma_r * noise``) read the
    same rows. No validation (the caller validates).

    Parameters
    ----------
    source : RowSource
        ``take(k)`` returns ``X`` (D, k, d), ``base`` (D, k), ``noise`` (D, k) or None.
    n_steps : int
        N: rows read, one step each.
    eta, clip, noise_multiplier, sigma : ndarray (R,)
        Per-run :math:`\eta`, :math:`\zeta`, :math:`\alpha`, response noise scale.
    rng : numpy.random.Generator
        DP noise: per chunk of rows one draw of shape (chunk, D, d, R).
    chunk : int or None
        Rows read (and noise drawn) at a time; ``None``: :data:`STREAM_KERNEL_ROWS` for
        the compiled kernel (it draws each normal where it is used, no buffer), else
        :func:`stream_chunk_rows` (the reference's noise buffer of about 512 KB). The
        results do not depend on it: the chunks' draws from ``rng`` concatenate to the
        same sequence of normals.
    kernel : {"numba", "numpy"}
        Inner loop over the chunk's steps: compiled, or the numpy reference (same draws,
        equal to round-off).

    Returns
    -------
    (w_bar, clip_fraction)
        Tail averages over :math:`t \in \{\lfloor N/2\rfloor+1..N\}`, shape (D, d, R),
        and the fraction of clipped steps, shape (D, R).
    """
    steps = _stream_steps(
        source.n_replicates, source.d, n_steps, eta=eta, clip=clip,
        noise_multiplier=noise_multiplier, sigma=sigma, rng=rng, chunk=chunk, kernel=kernel,
    )  # fmt: skip
    try:
        want = next(steps)
        while True:
            want = steps.send(source.take(want))
    except StopIteration as done:
        return done.value


class DpSsgdFeed:
    r""":func:`dp_ssgd_stream_pass` fed the rows by the stream's producer (push, not pull).

    Call it with each block of rows as it is produced, ``(X, base, z)`` of shapes
    (D, m, d), (D, m), (D, m) (any m; rows past ``n_steps`` are ignored); :attr:`result`
    is ``(w_bar, clip_fraction)`` once ``n_steps`` rows have been fed. The steps, their
    chunks of ``chunk`` rows and the noise draws are those of :func:`dp_ssgd_stream_pass`
    on the same rows, so the results are bit-identical
    (``tests/unit/test_varshney2022_shared_stream.py``). Used as an observer of
    :class:`dpreg.data.streams.GaussianStream`, it reads the chunks another consumer draws.

    Examples
    --------
    >>> import numpy as np
    >>> feed = DpSsgdFeed(1, 2, 3, eta=np.ones(1), clip=np.ones(1),
    ...                   noise_multiplier=np.zeros(1), sigma=np.zeros(1),
    ...                   rng=np.random.default_rng(0))
    >>> feed(np.ones((1, 4, 2)), np.ones((1, 4)), np.zeros((1, 4)))
    >>> feed.result[0].shape, feed.result[1].tolist()
    ((1, 2, 1), [[0.3333333333333333]])
    """

    def __init__(self, n_replicates: int, d: int, n_steps: int, **options: Any):
        self._steps = _stream_steps(n_replicates, d, n_steps, **options)
        self._pending: list[tuple[np.ndarray, np.ndarray, np.ndarray | None]] = []
        self._held = 0
        self.result: tuple[np.ndarray, np.ndarray] | None = None
        try:
            self._want = next(self._steps)
        except StopIteration as done:
            self.result = done.value

    def __call__(self, X: np.ndarray, base: np.ndarray, z: np.ndarray | None) -> None:
        """Take the next block of rows; run every step whose chunk is complete."""
        if self.result is not None:
            return
        self._pending.append((X, base, z))
        self._held += X.shape[1]
        while self.result is None and self._held >= self._want:
            k = self._want
            parts, got = [], 0
            while got < k:  # the first k pending rows, as GaussianStream.take slices them
                Xp, bp, zp = self._pending[0]
                need = k - got
                if Xp.shape[1] <= need:
                    parts.append(self._pending.pop(0))
                    got += Xp.shape[1]
                else:
                    parts.append((Xp[:, :need], bp[:, :need], None if zp is None else zp[:, :need]))
                    self._pending[0] = (
                        Xp[:, need:],
                        bp[:, need:],
                        None if zp is None else zp[:, need:],
                    )
                    got += need
            self._held -= k
            if len(parts) == 1:
                rows = parts[0]
            else:
                rows = (
                    np.concatenate([p[0] for p in parts], axis=1),
                    np.concatenate([p[1] for p in parts], axis=1),
                    None if parts[0][2] is None else np.concatenate([p[2] for p in parts], axis=1),
                )
            try:
                self._want = self._steps.send(rows)
            except StopIteration as done:
                self.result = done.value
                self._pending = []


STREAM_KERNEL_ROWS = 1 << 14
"""Rows per call of the compiled stream kernel by default (the study stream's chunk size,
so a :class:`DpSsgdFeed` observer runs each chunk it is given in one call, without copies)."""


def stream_chunk_rows(D: int, d: int, R: int) -> int:
    """Rows per chunk of the numpy reference of :func:`dp_ssgd_stream_pass`: ~512 KB of noise.

    The chunk's noise, shape (rows, D, d, R), is drawn and then read by the steps; at
    about 512 KB it stays in the core's cache between the two (1024 rows at d = 200,
    D = 10, R = 2 were 33 MB). Between 16 and 1024 rows.

    Examples
    --------
    >>> stream_chunk_rows(10, 50, 2), stream_chunk_rows(10, 200, 2), stream_chunk_rows(1, 2, 1)
    (65, 16, 1024)
    """
    return max(16, min(1024, (1 << 19) // (8 * D * d * R)))


def _stream_steps(
    D: int,
    d: int,
    n_steps: int,
    *,
    eta: np.ndarray,
    clip: np.ndarray,
    noise_multiplier: np.ndarray,
    sigma: np.ndarray,
    rng: np.random.Generator,
    chunk: int | None = None,
    kernel: str = "numba",
) -> Generator[
    int, tuple[np.ndarray, np.ndarray, np.ndarray | None], tuple[np.ndarray, np.ndarray]
]:
    """Run the steps of :func:`dp_ssgd_stream_pass`, yielding the rows needed, receiving them."""
    eta = np.asarray(eta, dtype=np.float64)
    clip = np.asarray(clip, dtype=np.float64)
    R = eta.size
    if chunk is None:  # the compiled kernel draws each normal where it is used: no buffer
        chunk = STREAM_KERNEL_ROWS if kernel == "numba" else stream_chunk_rows(D, d, R)
    noise_on_w = eta * 2.0 * clip * np.asarray(noise_multiplier, dtype=np.float64)  # (R,)
    noise_on_w = np.ascontiguousarray(noise_on_w, dtype=np.float64)
    eta_clip = np.ascontiguousarray(eta * clip, dtype=np.float64)
    clip = np.ascontiguousarray(clip, dtype=np.float64)
    sig = np.asarray(sigma, dtype=np.float64)
    W = np.zeros((D, 1, d, R))  # (D, 1, d, R): x (D, 1, 1, d) @ W gives (D, 1, 1, R)
    W_sum = np.zeros((D, 1, d, R))
    clipped = np.zeros((D, R))
    tail_start = n_steps // 2 + 1
    done = 0
    while done < n_steps:
        k = min(chunk, n_steps - done)
        X, base, z = yield k
        norms = np.sqrt(np.einsum("kcd,kcd->kc", X, X))[:, :, None]  # (D, k, 1)
        if kernel == "numba":  # the draw below, made inside the kernel (same values, same
            # order, same products); it forms y = base + sigma z as the lines below do
            stream_chunk(
                X, base, z, sig, norms[:, :, 0], rng, W, W_sum, clipped, noise_scale=noise_on_w,
                eta_clip=eta_clip, clip=clip, first_step=done, tail_start=tail_start,
            )  # fmt: skip
            done += k
            continue
        Y = np.broadcast_to(base[:, :, None], (D, k, R)).copy()
        if z is not None:
            Y += z[:, :, None] * sig
        rows = X[:, :, None, :, None]  # (D, k, 1, d, 1)
        G = rng.standard_normal((k, D, 1, d, R))
        G *= noise_on_w
        resid = np.empty((D, k, R))
        for j in range(k):
            r = np.matmul(X[:, j, None, None, :], W)[:, 0, 0]  # <x_t, w_t>, (D, R)
            r -= Y[:, j]
            resid[:, j] = r
            # eta * clip_zeta(x r) = x * r * eta * min{1, zeta / (|r| ||x||)}
            r *= eta_clip / np.maximum(np.abs(r) * norms[:, j], clip)
            W -= rows[:, j] * r[:, None, None, :]
            W -= G[j]
            if done + j + 1 >= tail_start:
                W_sum += W
        clipped += (np.abs(resid) * norms > clip).sum(axis=1)
        done += k
    return W_sum[:, 0] / (n_steps - n_steps // 2), clipped / n_steps


def fit_dp_ssgd(
    X: Any,
    y: Any,
    *,
    budget: ApproxDP,
    rng: np.random.Generator,
    trials: int = 1,
    clip: float,
    eta: float,
    local_mechanism: str = "classic",
    delta_split: float = 0.5,
    bound_X: float | None = None,
    bound_y: float | None = None,
    kernel: str = "numba",
) -> Fit:
    r"""DP-SSGD (Algorithm 1) with a concrete shuffling calibration.

    Parameters
    ----------
    X, y : ndarray
        Data, (n, d) and (n,).
    budget : ApproxDP
        Central target (replace-one). ``epsilon = inf`` runs without noise.
    rng : numpy.random.Generator
    trials : int
        Independent repetitions (own permutation and noise), vectorised in each step.
    clip : float
        :math:`\zeta` (public; see :func:`dp_ssgd_hyperparameters`).
    eta : float
        Step size.
    local_mechanism : {"classic", "analytic"}
        Per-step Gaussian calibration (classic: the paper's Lemma A.1).
    delta_split : float
        Share of delta given to the shuffling bound.
    bound_X, bound_y : float or None, default None
        Public data bounds (``max ||x_i|| <= bound_X``, ``max |y_i| <= bound_y``),
        accepted like every other estimator's and checked against the data (never
        clipped); the mechanism is set by ``clip``, so they change nothing else.
        ``None``: no bound declared.

    Returns
    -------
    Fit
        ``budget_spent`` is the certified FMT21 (epsilon, delta) (possibly smaller than
        the target outside the regime, with a warning); diagnostics hold
        ``epsilon0``, ``delta0``, ``noise_multiplier``, ``in_regime``,
        ``paper_regime_epsilon`` and ``clip_fraction`` per trial.

    Raises
    ------
    ValueError
        Bad data or hyperparameters, or N too small for amplification by shuffling.

    Notes
    -----
    Step t is a local randomizer of record :math:`x_{\pi(t)}` given the past iterates:
    replacing the record moves the mean by at most :math:`2\eta\zeta`, and the noise std
    is :math:`2\eta\zeta\alpha`, so it is a Gaussian mechanism with multiplier
    :math:`\alpha` (Lemma A.1).

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from dpreg import ApproxDP
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(2000, 2))
    >>> X /= 2 * np.linalg.norm(X, axis=1, keepdims=True)
    >>> y = np.clip(X @ np.ones(2), -1, 1)
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter('ignore')  # outside Theorem 3.1's regime at this small n
    ...     fit = fit_dp_ssgd(X, y, budget=ApproxDP(1.0, 1e-5), rng=rng, clip=1.0, eta=0.1)
    >>> fit.theta.shape, fit.budget_spent.epsilon <= 1.0
    ((1, 2), True)
    """
    epsilon, delta = check_approx_dp_budget(budget)
    X, y = check_regression(X, y, require_full_rank=False)
    check_optional_bounds(X, y, bound_X, bound_y)
    trials = check_trials(trials)
    check_rng(rng)
    clip = check_positive(clip, "clip")
    eta = check_positive(eta, "eta")
    check_choice(local_mechanism, "local_mechanism", LOCAL_MECHANISMS)
    check_choice(kernel, "kernel", DP_SSGD_KERNELS)
    n = X.shape[0]
    if math.isinf(epsilon):
        alpha, spent, diag = 0.0, ApproxDP(math.inf, delta), {}
    else:
        cal = calibrate_dp_ssgd(
            epsilon, delta, n, local_mechanism=local_mechanism, delta_split=delta_split
        )
        alpha = cal.noise_multiplier
        spent = ApproxDP(cal.epsilon, cal.delta)
        diag = {
            "epsilon0": cal.epsilon0,
            "delta0": cal.delta0,
            "in_regime": cal.in_regime,
            "paper_regime_epsilon": cal.paper_regime_epsilon,
        }
    perm = uniform_key_permutations(rng, trials, n)  # argsort(rng.random((trials, n)))
    theta, clip_fraction = dp_ssgd_path(
        X, y, perm, eta=eta, clip=clip, noise_multiplier=alpha, rng=rng, kernel=kernel
    )
    diagnostics = {
        "noise_multiplier": alpha,
        "clip": clip,
        "eta": eta,
        "clip_fraction": clip_fraction,
        "neighbours": "replace_one",
        **diag,
    }
    return Fit(theta=theta, budget_spent=spent, estimator="dp_ssgd", diagnostics=diagnostics)
