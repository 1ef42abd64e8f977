r"""Two-stage gradient descent for IV regression, non-private and private (Liang et al. 2025).

Liang, Jin, Balasubramanian & Lai (2025), "Differentially Private Two-Stage Gradient
Descent for Instrumental Variable Regression". The linear IV model is
:math:`y = \beta^\top x + \epsilon_1`, :math:`x = \Theta^\top z + \epsilon_2` with
instruments :math:`z \in \mathbb R^q`, endogenous regressors :math:`x \in \mathbb R^p`
(:math:`q \ge p`) and outcome :math:`y`; the target is the 2SLS solution
:math:`\hat\beta` (eq. 2). All three algorithms run full-batch gradient descent on both
stages *simultaneously* from :math:`\Theta^{(0)} = 0`, :math:`\beta^{(0)} = 0`, for
:math:`t = 0, \dots, T-1`:

.. math::

    \Theta^{(t+1)} &= \Theta^{(t)} - \frac{\eta}{n}\sum_{i=1}^n
        \mathrm{CLIP}_{\gamma_1}\big(z_i(z_i^\top\Theta^{(t)} - x_i^\top)\big)
        + \eta\,\Xi^{(t)}, \\
    \beta^{(t+1)} &= \beta^{(t)} - \frac{\alpha}{n}\sum_{i=1}^n
        \mathrm{CLIP}_{\gamma_2}\big(\Theta^{(t)\top}z_i(z_i^\top\Theta^{(t)}\beta^{(t)}
        - y_i)\big) + \alpha\,\nu^{(t)},

with :math:`\mathrm{vec}(\Xi^{(t)}) \sim \mathcal N(0, \lambda_1^2 I_{qp})`,
:math:`\nu^{(t)} \sim \mathcal N(0, \lambda_2^2 I_p)` and
:math:`\mathrm{CLIP}_\gamma(g) = g\min(1, \gamma/\|g\|)` (Frobenius norm for matrices).

* :func:`fit_two_stage_gd` -- Algorithm 2 (2S-GD): no clipping, no noise
  (registry ``"2s_gd"``).
* :func:`fit_dp_two_stage_gd` -- Algorithm 1 (DP-2S-GD): both stages clipped and noised,
  :math:`(\rho_1 + \rho_2)`-zCDP for the whole trajectory (registry ``"dp_2s_gd"``).
* :func:`fit_dp_two_stage_gd_beta` -- Algorithm 3 (DP-2S-GD-:math:`\beta`, App. F.1):
  noise in the second stage only (registry ``"dp_2s_gd_beta"``). Its
  :math:`\rho_2`-only privacy claim (Lemma F.1) does **not** hold end to end; see the
  function's docstring and ``docs/liang2025.md``.

Neighbouring relation everywhere: **replace-one** -- data sets of the same public size
:math:`n` that differ in one record :math:`(z_i, x_i, y_i)` (Liang et al. 2025, §2).

Implementation. The per-sample gradients are rank one, :math:`g_i^\Theta = z_i r_i^\top`
with :math:`r_i = \Theta^\top z_i - x_i`, and :math:`g_i^\beta = w_i e_i` with
:math:`w_i = \Theta^\top z_i`, :math:`e_i = w_i^\top\beta - y_i`, so
:math:`\|g_i^\Theta\|_F = \|z_i\|\,\|r_i\|`, :math:`\|g_i^\beta\| = \|w_i\|\,|e_i|`, and
with clip factors :math:`f_i = \min(1, \gamma/\|g_i\|)` the clipped sums are
:math:`Z^\top\mathrm{diag}(f)R` and :math:`\Theta^\top Z^\top(f \odot e)`: no
:math:`n \times q \times p` tensor is formed. Trials are a leading axis of every array
(no Python loop over trials); samples are processed in cache-sized blocks. A stage
without clipping uses the sufficient statistics :math:`Z^\top Z, Z^\top X, Z^\top y`.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from dpreg._validation import (
    _as_real_array,
    _check_finite,
    check_choice,
    check_positive,
    check_rng,
    check_trials,
)
from dpreg.estimators.iv_batched import FAST_MAX_WIDTH, BatchedIVGradients
from dpreg.estimators.iv_kernel import CertifiedIVGradients, plain_recursion_trials
from dpreg.privacy.budgets import ZCDP
from dpreg.privacy.gaussian import gaussian_zcdp, zcdp_gaussian_sigma
from dpreg.results import Fit

__all__ = [
    "CALIBRATIONS",
    "AUTO_MIN_WORK",
    "KERNELS",
    "NEIGHBOURING",
    "clipped_gradient_means",
    "default_clip_threshold",
    "fit_dp_two_stage_gd",
    "fit_dp_two_stage_gd_beta",
    "fit_two_stage_gd",
    "noise_scale",
    "population_step_sizes",
]

KERNELS: tuple[str, ...] = ("auto", "fast", "rows")
"""Gradient kernels: ``"fast"`` (certified, :mod:`dpreg.estimators.iv_kernel`, on shared
data; one compiled pass, :mod:`dpreg.estimators.iv_batched`, on batched data), ``"rows"``
(the reference), ``"auto"`` (``"fast"`` from :data:`AUTO_MIN_WORK` row-trial-steps)."""

AUTO_MIN_WORK = 1 << 22
"""``kernel="auto"`` clips with the compiled kernel when n * trials * T reaches this: below
it the reference costs about as much as the kernel's one-time start in a fresh process
(numba's import and cache load, about 1 s), so small calls never import numba."""

CALIBRATIONS: tuple[str, ...] = ("exact", "paper")
"""Noise calibrations: ``"exact"`` meets the stated rho exactly; ``"paper"`` is Prop. 3.1."""

NEIGHBOURING = "replace-one (one record (z_i, x_i, y_i) replaced; n is public)"
"""The neighbouring relation of every guarantee in this module."""

# Per-sample work on shared data is done in blocks of about this many float64 elements per
# array (block rows x trials x p): large enough to amortise numpy's per-call overhead, small
# enough that the temporaries of one block stay in the L2 cache (tuned on one core).
_BLOCK_ELEMENTS = 1 << 16
# Batched data are trial-major: a block of rows is a strided slice of every trial's data,
# which costs more than it saves, so blocks there only bound the temporaries' memory.
_BLOCK_ELEMENTS_BATCHED = 1 << 22
# Batched blocks whose per-trial products reach this many multiply-adds (rows x q x p) are
# evaluated one trial at a time (:func:`_batched_block_per_trial`): the same calls on each
# trial's slice, so the same bits, with one trial's temporaries in cache instead of the
# whole block's (p = q = 50, n = 8000, 50 trials: 0.21 -> 0.15 s per step; issue 18).
_PER_TRIAL_MIN_WORK = 1 << 16
_ROW_SCALE_PATH = "compiled"
"""``"compiled"``: the per-trial blocks clip by numba when loaded (:func:`_compiled_rows`);
``"numpy"``: the reference's numpy calls."""
_ROW_SCALE_MIN = 1 << 12
_STEP_PATH = "fused"
"""``"fused"``: :func:`_iterate` with the tiled batched kernel runs :func:`_fused_steps`
(its per-step bookkeeping compiled); ``"numpy"``: the reference's loop."""
_STATISTICS_PATH = "lazy"
"""``"lazy"``: a batched design's sufficient statistics are computed on first use;
``"eager"`` (the reference): in :func:`_prepare_checked`, before any iteration."""


# ----------------------------------------------------------------------------- defaults


def default_clip_threshold(n: int, q: int, T: int, *, c0: float = 1.0, tau: float = 1.0) -> float:
    r"""Clipping threshold of Theorem 3.1, eq. (4): :math:`c_0(\sqrt q + \sqrt{\tau + \log nT})^2`.

    Liang et al. (2025) use the same value for both stages,
    :math:`\gamma_1 = \gamma_2 = c_0\big(\sqrt q + \sqrt{\tau + \log(nT)}\big)^2`, the
    level above which, with probability :math:`1 - c\,e^{-\tau}`, no per-sample gradient
    is clipped under their sub-Gaussian model (Lemma D.1).

    Parameters
    ----------
    n : int
        Number of records (public under replace-one neighbours).
    q : int
        Number of instruments.
    T : int
        Number of iterations.
    c0 : float, default 1.0
        The unspecified constant of eq. (4). The paper gives no value; 1 is our default
        (docs/notes/liang2025.md P2).
    tau : float, default 1.0
        Confidence parameter of Theorem 3.1 (unspecified in the experiments;
        docs/notes/liang2025.md P2).

    Returns
    -------
    float
        :math:`\gamma`. It depends only on public quantities (:math:`n, q, T` and the
        constants), so using it costs no privacy. It ignores :math:`\|\Theta\|`,
        :math:`\|\beta\|` and the noise levels, which scale the real gradient norms:
        report the clip fractions (the diagnostics of every fit) alongside.

    Examples
    --------
    >>> round(default_clip_threshold(1000, 5, 20), 2)
    30.67
    """
    n = _check_int(n, "n")
    q = _check_int(q, "q")
    T = _check_int(T, "T")
    c0 = check_positive(c0, "c0")
    tau = check_positive(tau, "tau")
    return c0 * (math.sqrt(q) + math.sqrt(tau + math.log(n * T))) ** 2


def population_step_sizes(Theta: Any) -> tuple[float, float]:
    r"""Step sizes from the population Hessians of a known ground truth :math:`\Theta`.

    Returns :math:`\eta = 1` and
    :math:`\alpha = 2 / (\|\Theta\|_2^2 + \sigma_{\min}(\Theta)^2)`.

    For the synthetic design of Liang et al. (2025, §4.1), :math:`\mathbb E[zz^\top] = I_q`,
    so the population Hessian of the first stage is :math:`I` and :math:`\eta = 1` is its
    optimal (one-step) gradient step; the second stage's population Hessian is
    :math:`\Theta^\top\Theta` with eigenvalues :math:`\sigma_i(\Theta)^2`, and
    :math:`\alpha = 2/(\lambda_{\max} + \lambda_{\min})` is the classical optimal constant
    step. Both satisfy the infinite-sample range (3) of Theorem 3.1
    (:math:`0 < \eta < 2`, :math:`0 < \alpha < 4/(2\|\Theta\|^2 + \sigma_{\min}^2)`).
    The paper never reports its step sizes (docs/notes/liang2025.md P1); this is our default.

    Parameters
    ----------
    Theta : array_like, shape (q, p)
        The *ground-truth* first-stage matrix of a simulation, ``q >= p``. Not an
        estimate from private data: ground truth is not data, so these step sizes leak
        nothing. On real data (e.g. Angrist-Evans, docs/notes/liang2025.md P9) choose
        steps from public knowledge or a documented pilot, never from the private sample.

    Returns
    -------
    (float, float)
        ``(eta, alpha)``.
    """
    Theta = np.asarray(Theta, dtype=np.float64)
    if Theta.ndim != 2 or Theta.size == 0:
        raise ValueError(f"Theta must be a non-empty (q, p) matrix; got shape {Theta.shape}")
    _check_finite(Theta, "Theta")
    q, p = Theta.shape
    if q < p:
        raise ValueError(f"Theta must have q >= p (got q={q}, p={p})")
    sv = np.linalg.svd(Theta, compute_uv=False)
    denom = float(sv[0] ** 2 + sv[-1] ** 2)
    if not denom > 0:
        raise ValueError("Theta is zero: the second stage has no curvature")
    return 1.0, 2.0 / denom


def noise_scale(clip: float, n: int, T: int, rho: float, *, calibration: str = "exact") -> float:
    r"""Return the standard deviation :math:`\lambda` of one stage's per-step Gaussian noise.

    Parameters
    ----------
    clip : float
        Clipping threshold :math:`\gamma` of the stage.
    n : int
        Number of records.
    T : int
        Number of iterations.
    rho : float
        zCDP budget of the stage (``math.inf``: no noise, returns 0).
    calibration : {"exact", "paper"}
        ``"exact"``: :math:`\lambda = \frac{\gamma}{n}\sqrt{2T/\rho}`, so that the T
        Gaussian mechanisms compose to exactly :math:`\rho`. ``"paper"``: Prop. 3.1 as
        printed, :math:`\lambda = \frac{2\gamma}{n}\sqrt{T/\rho}`, which certifies only
        :math:`\rho/2` (docs/notes/liang2025.md §3.1).

    Returns
    -------
    float
        :math:`\lambda \ge 0`.

    Notes
    -----
    Under replace-one neighbours, with the current iterates fixed (they are released, so
    the steps compose adaptively), the averaged clipped gradient changes by

    .. math::

        \Big\|\frac1n\sum_i \mathrm{CLIP}_\gamma(g_i) - \frac1n\sum_i
        \mathrm{CLIP}_\gamma(g'_i)\Big\| = \frac1n\big\|\mathrm{CLIP}_\gamma(g_j)
        - \mathrm{CLIP}_\gamma(g'_j)\big\| \le \frac{2\gamma}{n}.

    A Gaussian mechanism with sensitivity :math:`\Delta` and noise :math:`\lambda` is
    :math:`\Delta^2/(2\lambda^2)`-zCDP (Bun & Steinke 2016, Prop. 1.6), and zCDP adds up
    over the T steps (Lemma 2.3):

    .. math::

        \rho = T\,\frac{(2\gamma/n)^2}{2\lambda^2} = \frac{2T\gamma^2}{n^2\lambda^2}
        \iff \lambda = \frac{\gamma}{n}\sqrt{\frac{2T}{\rho}}.

    Prop. 3.1 states the same accounting but sets
    :math:`\lambda = \frac{2\gamma}{n}\sqrt{T/\rho}`, a factor :math:`\sqrt 2` more noise,
    which gives :math:`\frac{2T\gamma^2}{n^2}\cdot\frac{n^2\rho}{4\gamma^2T} = \rho/2`.
    Noise on the mean and a step :math:`\eta` in front (:math:`+\eta\,\Xi`) is
    post-processing of the noisy mean.
    """
    clip = check_positive(clip, "clip")
    n = _check_int(n, "n")
    T = _check_int(T, "T")
    rho = check_positive(rho, "rho", allow_inf=True)
    check_choice(calibration, "calibration", CALIBRATIONS)
    if math.isinf(rho):
        return 0.0
    if calibration == "paper":
        return 2.0 * clip / n * math.sqrt(T / rho)
    # Bun & Steinke (2016), Prop. 1.6, per step: sensitivity 2 gamma / n, budget rho / T.
    return zcdp_gaussian_sigma(rho / T, 2.0 * clip / n)


# ----------------------------------------------------------------------------- validation


def _check_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise ValueError(f"{name} must be a positive integer; got {value!r}")
    return int(value)


def _check_clip(value: Any, name: str, rho: float, rho_name: str) -> float:
    clip = check_positive(value, name, allow_inf=True)
    if math.isinf(clip) and not math.isinf(rho):
        raise ValueError(
            f"{name}=inf (no clipping) needs {rho_name}=inf: with finite {rho_name} the noise"
            f" scale is proportional to {name}; give a finite clipping threshold"
            " (e.g. default_clip_threshold(n, q, T))"
        )
    return clip


def _as_data(value: Any, name: str, base_ndim: int, trials: int) -> tuple[np.ndarray, bool]:
    """Float array with ``base_ndim`` dims (shared) or one more (batched over trials)."""
    arr = _as_real_array(value, name)
    shape = "(n, q)" if name == "Z" else "(n, p)" if name == "X" else "(n,)"
    batched_shape = "(trials, " + shape[1:]
    if arr.ndim == base_ndim:
        batched = False
    elif arr.ndim == base_ndim + 1:
        batched = True
        if arr.shape[0] != trials:
            raise ValueError(
                f"{name} has a leading trials axis of length {arr.shape[0]} but trials={trials};"
                f" pass {name} of shape {shape} (shared by all trials) or {batched_shape}"
            )
    else:
        raise ValueError(
            f"{name} must have shape {shape} or {batched_shape}; got shape {arr.shape}"
        )
    if arr.size == 0:
        raise ValueError(f"{name} must be non-empty; got shape {arr.shape}")
    _check_finite(arr, name)
    return arr, batched


@dataclass(eq=False)  # not frozen: a frozen __init__ costs 1 us of a 60 us call
class _Design:
    """Validated data, in the layout the iteration uses (read-only by convention).

    Shared data (one data set for all trials): ``Z`` (n, q), ``X`` (n, p), ``y`` (n,),
    ``zn`` (n,); per-sample work arrays are sample-major, (rows, trials[, p]).
    Batched data: ``Z`` (trials, n, q), ``X`` (trials, n, p), ``y`` (trials, n), ``zn``
    (trials, n); work arrays are trial-major, (trials, rows[, p]).

    The sufficient statistics ``ZtZ``, ``ZtX``, ``Zty`` are given (shared data: they
    validate it, :func:`_shared_design_unchecked`) or, with ``statistics=None`` (batched
    data, validated by its own checks), computed by :func:`_statistics` on first use:
    a run that clips both stages on the reference path never reads them (issue 18,
    docs/scaling.md: about 3 % of a ``liang_fig3b`` job at p = q = 50). The same call on
    the same arrays, so the same bits whenever they are read.
    """

    Z: np.ndarray
    X: np.ndarray
    y: np.ndarray
    statistics: tuple[np.ndarray, np.ndarray, np.ndarray] | None
    shared: bool
    n: int
    q: int
    p: int

    def _stats(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self.statistics is None:
            self.statistics = _statistics(self.Z, self.X, self.y)
        return self.statistics

    @property
    def ZtZ(self) -> np.ndarray:
        r""":math:`Z^\top Z`, (q, q) or (trials, q, q)."""
        return self._stats()[0]

    @property
    def ZtX(self) -> np.ndarray:
        r""":math:`Z^\top X`, (q, p) or (trials, q, p)."""
        return self._stats()[1]

    @property
    def Zty(self) -> np.ndarray:
        r""":math:`Z^\top y`, (q,) or (trials, q)."""
        return self._stats()[2]

    @cached_property
    def zn(self) -> np.ndarray:
        """Row norms of ``Z`` (computed on first use: only clipping needs them)."""
        return np.sqrt(np.einsum("...q,...q->...", self.Z, self.Z))


def _prepare(Z: Any, X: Any, y: Any, trials: int) -> _Design:
    """Validate (Z, X, y) and precompute the sufficient statistics.

    Shared float64 arrays of valid shapes are validated by their own statistics
    (:func:`_shared_design_unchecked`); anything else, or any doubt, takes the checks
    first (:func:`_prepare_checked`, the reference: same statistics, bit for bit).
    """
    design = _shared_design_unchecked(Z, X, y)
    return _prepare_checked(Z, X, y, trials) if design is None else design


def _statistics(Z: np.ndarray, X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, ...]:
    """``(Z'Z, Z'X, Z'y)``, leading trials axes allowed; the one place they are computed."""
    ZT = np.swapaxes(Z, -1, -2)
    # Z'Z against a copy of Z: numpy sends ``Z.T @ Z`` to BLAS syrk, about twice as slow
    # as the gemm of a thin Z (5000 x 5: 28 vs 13 + 4 us); same value to rounding.
    return ZT @ (Z.copy() if Z.ndim == 2 else Z), ZT @ X, (ZT @ y[..., None])[..., 0]


def _shared_design_unchecked(Z: Any, X: Any, y: Any) -> _Design | None:
    r"""Return the :class:`_Design` of shared data validated by its own statistics, or None.

    For float64 ndarrays ``Z`` (n, q), ``X`` (n, p), ``y`` (n,) with
    ``n >= q >= p >= 1`` the statistics are computed first (the same calls as
    :func:`_prepare_checked`, so the same bits). The diagonal of :math:`Z^\top Z` sums
    non-negative squares, NaN or infinite as soon as one entry of ``Z`` is, so a finite
    trace proves ``Z`` finite; then every product :math:`z_{im}x_{ij}` and
    :math:`z_{im}y_i` enters :math:`Z^\top X` and :math:`Z^\top y` (BLAS multiplies
    zeros too: :math:`0\cdot\infty` is NaN), so finite sums prove ``X`` and ``y`` finite
    (tested with non-finite values on zero rows of ``Z``) without the three separate
    passes (about 15 us at n = 5000, p = q = 5; issue 18). ``None`` (other types,
    shapes or dtypes, a non-finite or overflowing sum): the caller runs the checks, which
    raise their own errors in their own order.
    """
    if type(Z) is not np.ndarray or type(X) is not np.ndarray or type(y) is not np.ndarray:
        return None
    if Z.ndim != 2 or X.ndim != 2 or y.ndim != 1:
        return None
    if Z.dtype != np.float64 or X.dtype != np.float64 or y.dtype != np.float64:
        return None
    n, q = Z.shape
    p = X.shape[1]
    if not n >= q >= p >= 1 or X.shape[0] != n or y.shape[0] != n:
        return None
    with np.errstate(over="ignore", invalid="ignore"):  # the reference warns, if need be
        ZtZ, ZtX, Zty = _statistics(Z, X, y)
        add = np.add.reduce
        if not (
            math.isfinite(float(add(ZtZ.diagonal())))
            and math.isfinite(float(add(ZtX, axis=None)))
            and math.isfinite(float(add(Zty)))
        ):
            return None
    return _Design(Z, X, y, (ZtZ, ZtX, Zty), True, n, q, p)


def _prepare_checked(Z: Any, X: Any, y: Any, trials: int) -> _Design:
    """Validate (Z, X, y), then compute the sufficient statistics (the reference)."""
    Z, bz = _as_data(Z, "Z", 2, trials)
    X, bx = _as_data(X, "X", 2, trials)
    y, by = _as_data(y, "y", 1, trials)
    n, q = Z.shape[-2:]
    if X.shape[-2] != n:
        raise ValueError(f"X has {X.shape[-2]} rows but Z has {n}; they must match")
    if y.shape[-1] != n:
        raise ValueError(f"y has {y.shape[-1]} entries but Z has {n} rows; they must match")
    p = X.shape[-1]
    if q < p:
        raise ValueError(
            f"under-identified: Z has q={q} instruments but X has p={p} endogenous"
            " regressors; IV regression needs q >= p"
        )
    if n < q:
        raise ValueError(f"need at least as many records as instruments: n={n} < q={q}")
    shared = not (bz or bx or by)
    if not shared:  # broadcast shared inputs along the trials axis (views, no copies)
        Z = np.broadcast_to(Z, (trials, n, q)) if not bz else Z
        X = np.broadcast_to(X, (trials, n, p)) if not bx else X
        y = np.broadcast_to(y, (trials, n)) if not by else y
    if _STATISTICS_PATH == "lazy" and not shared:  # computed on first use, if ever
        return _Design(Z, X, y, None, shared, int(n), int(q), int(p))
    return _Design(Z, X, y, _statistics(Z, X, y), shared, int(n), int(q), int(p))


# ----------------------------------------------------------------------------- gradients


def _norm_last(A: np.ndarray) -> np.ndarray:
    """Euclidean norm over the last axis (an abs for a length-one axis)."""
    if A.shape[-1] == 1:
        return np.abs(A[..., 0])
    return np.sqrt(np.einsum("...p,...p->...", A, A))


def _times(Zb: np.ndarray, M: np.ndarray) -> np.ndarray:
    """``Zb @ M`` for shared rows ``Zb`` (m, q); an outer product when q = 1 (faster)."""
    if Zb.shape[1] == 1:
        return Zb * M
    return Zb @ M


def _clip_factors(norms: np.ndarray, clip: float, sample_axis: int) -> tuple[np.ndarray, Any]:
    """``min(1, clip / norms)`` in place of ``norms``, and the count of norms > clip."""
    # bool -> uint8 view summed in int64: about twice as fast as count_nonzero(axis=...)
    count = (norms > clip).view(np.uint8).sum(axis=sample_axis, dtype=np.int64)
    np.maximum(norms, clip, out=norms)  # norms <= clip give clip / clip == 1.0 exactly
    np.divide(clip, norms, out=norms)
    return norms, count


def _compiled_rows(size: int) -> bool:
    """Whether :func:`_batched_block_per_trial` clips through the compiled passes.

    :mod:`dpreg.estimators._iv_rows_jit` performs the reference's elementwise operations
    on every entry (the same bits); it is used only in a process that has imported numba
    (the studies' large data draws do), so it never costs an import, and for blocks of at
    least :data:`_ROW_SCALE_MIN` values, below which numpy's calls are as fast.
    """
    return _ROW_SCALE_PATH == "compiled" and size >= _ROW_SCALE_MIN and "numba" in sys.modules


def _stage_gradients(
    d: _Design, Theta: np.ndarray, beta: np.ndarray, clip_theta: float, clip_beta: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    r"""Averaged clipped gradients of both stages at (Theta, beta), vectorised over trials.

    Returns ``(grad_theta (trials, q, p), grad_beta (trials, p), clip_fraction_theta
    (trials,), clip_fraction_beta (trials,))`` where ``grad_theta`` is
    :math:`\frac1n\sum_i\mathrm{CLIP}_{\gamma_1}(z_i r_i^\top)` and ``grad_beta`` is
    :math:`\frac1n\sum_i\mathrm{CLIP}_{\gamma_2}(w_i e_i)`; an infinite threshold means
    no clipping (computed from the sufficient statistics).
    """
    trials, q, p = Theta.shape
    n = d.n
    do1, do2 = math.isfinite(clip_theta), math.isfinite(clip_beta)
    v = (Theta @ beta[..., None])[..., 0]  # (trials, q): Theta beta, so e = Z v - y
    count1 = np.zeros(trials, dtype=np.int64)
    count2 = np.zeros(trials, dtype=np.int64)
    G1 = np.zeros((trials, q, p)) if do1 else None
    S2 = np.zeros((trials, q)) if do2 else None
    if do1 or do2:
        sample_axis = 0 if d.shared else 1
        block = _BLOCK_ELEMENTS if d.shared else _BLOCK_ELEMENTS_BATCHED
        rows_per_block = max(1, block // (trials * p))
        if d.shared:
            Theta_cols = Theta.transpose(1, 0, 2).reshape(q, trials * p)  # (q, trials * p)
        per_trial = not d.shared and min(rows_per_block, n) * q * p >= _PER_TRIAL_MIN_WORK
        for start in range(0, n, rows_per_block):
            rows = slice(start, min(start + rows_per_block, n))
            if per_trial:
                for k in range(trials):
                    _batched_block_per_trial(
                        d, k, rows, Theta[k], v[k], clip_theta if do1 else None,
                        clip_beta if do2 else None, G1, S2, count1, count2,
                    )  # fmt: skip
                continue
            if d.shared:
                Zb = d.Z[rows]  # (m, q); work arrays are (m, trials[, p])
                m = Zb.shape[0]
                W = _times(Zb, Theta_cols).reshape(m, trials, p)
            else:
                Zb = d.Z[:, rows]  # (trials, m, q); work arrays are (trials, m[, p])
                W = Zb @ Theta
            if do2:
                w_norm = _norm_last(W)  # ||Theta' z_i||
            if do1:
                R = np.subtract(W, d.X[rows][:, None, :] if d.shared else d.X[:, rows], out=W)
                a1 = _norm_last(R)
                a1 *= d.zn[rows][:, None] if d.shared else d.zn[:, rows]  # ||z_i|| ||r_i||
                f1, c1 = _clip_factors(a1, clip_theta, sample_axis)
                count1 += c1
                R *= f1[..., None]
                if d.shared:
                    G1 += (Zb.T @ R.reshape(m, trials * p)).reshape(q, trials, p).transpose(1, 0, 2)
                else:
                    G1 += np.swapaxes(Zb, 1, 2) @ R
            if do2:
                if d.shared:
                    e = _times(Zb, v.T)
                    e -= d.y[rows][:, None]
                else:
                    e = (Zb @ v[..., None])[..., 0]
                    e -= d.y[:, rows]
                a2 = np.abs(e)
                a2 *= w_norm  # ||w_i|| |e_i|
                f2, c2 = _clip_factors(a2, clip_beta, sample_axis)
                count2 += c2
                e *= f2
                if d.shared:
                    S2 += (Zb.T @ e).T
                else:
                    S2 += (np.swapaxes(Zb, 1, 2) @ e[..., None])[..., 0]
    if not do1:  # sum_i z_i (z_i' Theta - x_i') = Z'Z Theta - Z'X
        G1 = d.ZtZ @ Theta - d.ZtX
    if not do2:  # sum_i z_i (z_i' Theta beta - y_i) = Z'Z v - Z'y
        S2 = (d.ZtZ @ v[..., None])[..., 0] - d.Zty
    G2 = (np.swapaxes(Theta, 1, 2) @ S2[..., None])[..., 0]  # Theta' sum_i f_i e_i z_i
    return G1 / n, G2 / n, count1 / n, count2 / n


def _batched_block_per_trial(
    d: _Design,
    k: int,
    rows: slice,
    Theta: np.ndarray,
    v: np.ndarray,
    clip_theta: float | None,
    clip_beta: float | None,
    G1: np.ndarray | None,
    S2: np.ndarray | None,
    count1: np.ndarray,
    count2: np.ndarray,
) -> None:
    """One block of batched rows of :func:`_stage_gradients` for trial ``k`` alone.

    The batched branch's operations on trial ``k``'s slices, with the shapes each slice of
    its stacked calls has (``Zb @ Theta`` as (m, q) @ (q, p), ``e`` as (m, q) @ (q, 1),
    the sums as (q, m) @ (m, p) and (q, m) @ (m, 1)), so numpy runs the same kernels on
    the same operands: the same bits (``tests/unit/test_iv_per_trial_blocks.py``). A
    ``None`` threshold: that stage is not clipped (its sum comes from the statistics).
    """
    Zb = d.Z[k, rows]  # (m, q)
    W = Zb @ Theta  # (m, p)
    compiled = _compiled_rows(W.size)
    if compiled:
        from dpreg.estimators import _iv_rows_jit as jit
    if clip_beta is not None:
        w_norm = _norm_last(W)  # ||Theta' z_i||
    if clip_theta is not None:
        R = np.subtract(W, d.X[k, rows], out=W)
        a1 = _norm_last(R)
        if compiled:  # the four lines below, fused (the same operations per entry)
            count1[k] += jit.clip_first_stage(R, a1, d.zn[k, rows], clip_theta)
        else:
            a1 *= d.zn[k, rows]  # ||z_i|| ||r_i||
            f1, c1 = _clip_factors(a1, clip_theta, 0)
            count1[k] += c1
            R *= f1[..., None]
        G1[k] += Zb.T @ R
    if clip_beta is not None:
        e = (Zb @ v[:, None])[:, 0]
        e -= d.y[k, rows]
        if compiled:  # the five lines below, fused (the same operations per entry)
            count2[k] += jit.clip_second_stage(e, w_norm, clip_beta)
        else:
            a2 = np.abs(e)
            a2 *= w_norm  # ||w_i|| |e_i|
            f2, c2 = _clip_factors(a2, clip_beta, 0)
            count2[k] += c2
            e *= f2
        S2[k] += (Zb.T @ e[:, None])[:, 0]


def clipped_gradient_means(
    Z: Any,
    X: Any,
    y: Any,
    Theta: Any,
    beta: Any,
    *,
    clip_theta: float = math.inf,
    clip_beta: float = math.inf,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    r"""Averaged clipped per-sample gradients of both stages (one step's private query).

    The exact function each iteration of Algorithms 1-3 applies before adding noise,
    exposed for testing and sensitivity analysis.

    Parameters
    ----------
    Z, X, y : array_like
        Data, shared ((n, q), (n, p), (n,)) or batched with a leading trials axis.
    Theta : array_like, shape (q, p) or (trials, q, p)
        Current first-stage iterate(s).
    beta : array_like, shape (p,) or (trials, p)
        Current second-stage iterate(s).
    clip_theta, clip_beta : float, default inf
        Clipping thresholds :math:`\gamma_1, \gamma_2` (``inf``: no clipping).

    Returns
    -------
    grad_theta : ndarray, shape (trials, q, p)
        :math:`\frac1n\sum_i \mathrm{CLIP}_{\gamma_1}\big(z_i(z_i^\top\Theta - x_i^\top)\big)`.
    grad_beta : ndarray, shape (trials, p)
        :math:`\frac1n\sum_i \mathrm{CLIP}_{\gamma_2}\big(\Theta^\top z_i(z_i^\top\Theta\beta
        - y_i)\big)`.
    clip_fraction_theta, clip_fraction_beta : ndarray, shape (trials,)
        Fractions of records whose per-sample gradient norm exceeds the threshold.

    Notes
    -----
    With :math:`r_i = \Theta^\top z_i - x_i`, :math:`w_i = \Theta^\top z_i`,
    :math:`e_i = w_i^\top\beta - y_i` the per-sample gradients are rank one, so
    :math:`\|z_i r_i^\top\|_F = \|z_i\|\|r_i\|` and :math:`\|w_i e_i\| = \|w_i\||e_i|`;
    with :math:`f_i = \min(1, \gamma/\|g_i\|)` the sums are
    :math:`Z^\top \mathrm{diag}(f) R` and :math:`\Theta^\top Z^\top (f \odot e)`.
    """
    Theta = np.asarray(Theta, dtype=np.float64)
    beta = np.asarray(beta, dtype=np.float64)
    if Theta.ndim == 2:
        Theta = Theta[None]
    if beta.ndim == 1:
        beta = beta[None]
    if Theta.ndim != 3 or beta.ndim != 2 or Theta.shape[0] != beta.shape[0]:
        raise ValueError(
            f"Theta must be (q, p) or (trials, q, p) and beta (p,) or (trials, p) with the"
            f" same trials; got {Theta.shape} and {beta.shape}"
        )
    d = _prepare(Z, X, y, Theta.shape[0])
    if Theta.shape[1:] != (d.q, d.p) or beta.shape[1] != d.p:
        raise ValueError(
            f"Theta must have shape (.., {d.q}, {d.p}) and beta (.., {d.p});"
            f" got {Theta.shape} and {beta.shape}"
        )
    clip_theta = check_positive(clip_theta, "clip_theta", allow_inf=True)
    clip_beta = check_positive(clip_beta, "clip_beta", allow_inf=True)
    return _stage_gradients(d, Theta, beta, clip_theta, clip_beta)


# ----------------------------------------------------------------------------- iteration


def _iterate(
    d: _Design,
    *,
    trials: int,
    T: int,
    step_theta: float,
    step_beta: float,
    clip_theta: float,
    clip_beta: float,
    lambda1: float,
    lambda2: float,
    rng: np.random.Generator | None,
    return_path: bool,
    kernel: str = "rows",
) -> dict[str, Any]:
    """Run the simultaneous two-stage recursion; the one code path of Algorithms 1-3.

    ``kernel="fast"`` (or ``"auto"`` from :data:`AUTO_MIN_WORK`) with a clipped stage
    evaluates the clipped gradients with
    :class:`dpreg.estimators.iv_kernel.CertifiedIVGradients` on shared data, with
    :class:`dpreg.estimators.iv_batched.BatchedIVGradients` on batched data with
    ``q * p <= FAST_MAX_WIDTH`` (both equal to the reference :func:`_stage_gradients` up
    to rounding); without clipping and noise on shared data ``"fast"`` and ``"auto"`` run
    the compiled recursion; otherwise the reference runs.

    Noise draws, per step t: ``Xi`` as ``rng.standard_normal((trials, q, p))`` if
    ``lambda1 > 0``, then ``nu`` as ``rng.standard_normal((trials, p))`` if
    ``lambda2 > 0`` (the order of lines 5-6 of Algorithm 1). A zero scale draws nothing
    and adds nothing, so the noiseless run is operation for operation Algorithm 2.
    """
    q, p = d.q, d.p
    plain = not (math.isfinite(clip_theta) or math.isfinite(clip_beta) or lambda1 or lambda2)
    if kernel != "rows" and d.shared and plain:
        return _plain_run(d, trials=trials, T=T, step_theta=step_theta, step_beta=step_beta,
                          return_path=return_path)  # fmt: skip
    Theta = np.zeros((trials, q, p))
    beta = np.zeros((trials, p))
    beta_path = np.empty((trials, T, p)) if return_path else None
    theta_path = np.empty((trials, T, q, p)) if return_path else None
    frac_theta = np.empty((trials, T))
    frac_beta = np.empty((trials, T))
    if kernel == "auto":
        kernel = "fast" if d.n * trials * T >= AUTO_MIN_WORK else "rows"
    gradients = _gradient_function(d, clip_theta, clip_beta, kernel)
    # Noise buffers reused every step (rng.standard_normal(out=...) draws the values of
    # rng.standard_normal(shape)), scaled in place as step * (lambda * xi): the same
    # products (IEEE multiplication is commutative). numba's compiled fill costs more
    # than it saves at these sizes (its dispatch on a Generator is about 13 us).
    xi = np.empty((trials, q, p)) if lambda1 > 0 else None
    nu = np.empty((trials, p)) if lambda2 > 0 else None
    batched = getattr(gradients, "batched", None)
    fused = batched is not None and _STEP_PATH == "fused" and batched.path == "tiles"
    with np.errstate(over="ignore", invalid="ignore"):  # divergent runs are reported, not raised
        if fused:  # the loop below with its bookkeeping compiled (the same bits)
            Theta, beta = _fused_steps(
                batched, Theta, beta, T=T, n=d.n, step_theta=step_theta, step_beta=step_beta,
                lambda1=lambda1, lambda2=lambda2, xi=xi, nu=nu, rng=rng,
                frac_theta=frac_theta, frac_beta=frac_beta, theta_path=theta_path,
                beta_path=beta_path,
            )  # fmt: skip
        else:
            for t in range(T):
                g_theta, g_beta, frac_theta[:, t], frac_beta[:, t] = gradients(Theta, beta)
                # Simultaneous update: the beta step uses Theta^(t), the pre-update value (P14).
                Theta_next = Theta - step_theta * g_theta
                beta_next = beta - step_beta * g_beta
                if xi is not None:
                    rng.standard_normal(out=xi)
                    xi *= lambda1
                    xi *= step_theta
                    Theta_next += xi
                if nu is not None:
                    rng.standard_normal(out=nu)
                    nu *= lambda2
                    nu *= step_beta
                    beta_next += nu
                Theta, beta = Theta_next, beta_next
                if return_path:
                    theta_path[:, t] = Theta
                    beta_path[:, t] = beta
    finite = np.isfinite(beta).all(axis=1) & np.isfinite(Theta).all(axis=(1, 2))
    return {
        "beta": beta,
        "Theta": Theta,
        "beta_path": beta_path,
        "theta_path": theta_path,
        "clip_fraction_theta": frac_theta,
        "clip_fraction_beta": frac_beta,
        "n_nonfinite": int(np.count_nonzero(~finite)),
    }


def _fused_steps(
    batched: BatchedIVGradients,
    Theta: np.ndarray,
    beta: np.ndarray,
    *,
    T: int,
    n: int,
    step_theta: float,
    step_beta: float,
    lambda1: float,
    lambda2: float,
    xi: np.ndarray | None,
    nu: np.ndarray | None,
    rng: np.random.Generator | None,
    frac_theta: np.ndarray,
    frac_beta: np.ndarray,
    theta_path: np.ndarray | None,
    beta_path: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_iterate`'s loop for the tiled batched kernel, its bookkeeping compiled.

    Per step the reference's numpy products ``v = Theta beta`` and ``G2 = Theta' S2``,
    the same draws in the same order (``xi``, then ``nu``), and three compiled calls
    (:meth:`BatchedIVGradients.step_sums`, :func:`dpreg.estimators._iv_step_jit.update`)
    for the forty numpy calls of the reference's step: the same operations on every
    entry, so the same bits (``tests/unit/test_iv_fused_steps.py``). Returns the final
    ``(Theta, beta)``; fills the fractions and paths in place.
    """
    from dpreg.estimators import _iv_step_jit as jit

    trials, q, p = Theta.shape
    G1 = np.empty((trials, q, p))
    S2 = np.empty((trials, q))
    Theta_next, beta_next = np.empty_like(Theta), np.empty_like(beta)
    no_xi, no_nu = np.empty((0, q, p)), np.empty((0, p))
    nf = float(n)  # what numpy divides by: the int n as a float64 (exact below 2**53)
    for t in range(T):
        v = (Theta @ beta[..., None])[..., 0]  # (trials, q)
        batched.step_sums(Theta, v, G1, S2, frac_theta, frac_beta, t)
        G2 = (np.swapaxes(Theta, 1, 2) @ S2[..., None])[..., 0]  # Theta' sum_i f_i e_i z_i
        if xi is not None:
            rng.standard_normal(out=xi)
        if nu is not None:
            rng.standard_normal(out=nu)
        jit.update(
            Theta, beta, G1, G2, nf, step_theta, step_beta, no_xi if xi is None else xi,
            lambda1, no_nu if nu is None else nu, lambda2, Theta_next, beta_next,
        )  # fmt: skip
        Theta, Theta_next = Theta_next, Theta
        beta, beta_next = beta_next, beta
        if theta_path is not None:
            theta_path[:, t] = Theta
            beta_path[:, t] = beta
    return Theta, beta


def _plain_run(
    d: _Design, *, trials: int, T: int, step_theta: float, step_beta: float, return_path: bool
) -> dict[str, Any]:
    """:func:`_iterate` without clipping or noise on shared data, compiled, for ``trials``."""
    Theta, beta, theta_path, beta_path, finite = plain_recursion_trials(
        d.ZtZ, d.ZtX, d.Zty, d.n, T=T, step_theta=step_theta, step_beta=step_beta,
        return_path=return_path, trials=trials,
    )  # fmt: skip
    return {
        "beta": beta,
        "Theta": Theta,
        "beta_path": None if beta_path is None else _repeated(beta_path, trials),
        "theta_path": None if theta_path is None else _repeated(theta_path, trials),
        "clip_fraction_theta": np.zeros((trials, T)),
        "clip_fraction_beta": np.zeros((trials, T)),
        "n_nonfinite": trials * (not finite),
    }


def _repeated(a: np.ndarray, trials: int) -> np.ndarray:
    """Return ``a`` along a new leading trials axis (a view for one trial, else copies)."""
    return a[None] if trials == 1 else np.repeat(a[None], trials, 0)


def _gradient_function(d: _Design, clip_theta: float, clip_beta: float, kernel: str):
    """Return the step's clipped-gradient means as a function of (Theta, beta)."""
    clipped = math.isfinite(clip_theta) or math.isfinite(clip_beta)
    compiled = d.shared or d.q * d.p <= FAST_MAX_WIDTH
    if kernel == "rows" or not clipped or not compiled:
        return lambda Theta, beta: _stage_gradients(d, Theta, beta, clip_theta, clip_beta)
    kernel_class = CertifiedIVGradients if d.shared else BatchedIVGradients
    certified = kernel_class(
        d.Z, d.X, d.y, d.zn, d.ZtZ, d.ZtX, d.Zty, clip_theta=clip_theta, clip_beta=clip_beta
    )
    n = d.n

    def gradients(Theta: np.ndarray, beta: np.ndarray) -> tuple[np.ndarray, ...]:
        G1, S2, count1, count2 = certified(Theta, beta)
        G2 = (np.swapaxes(Theta, 1, 2) @ S2[..., None])[..., 0]  # Theta' sum_i f_i e_i z_i
        return G1 / n, G2 / n, count1 / n, count2 / n

    gradients.batched = None if d.shared else certified  # type: ignore[attr-defined]
    return gradients


def _repeat_run(run: dict[str, Any], trials: int) -> dict[str, Any]:
    """Repeat a one-trial run of :func:`_iterate` along the trials axis."""
    out = {
        key: None if value is None else np.repeat(value, trials, axis=0)
        for key, value in run.items()
        if key != "n_nonfinite"
    }
    out["n_nonfinite"] = run["n_nonfinite"] * trials
    return out


def _check_common(
    T: Any, step_theta: Any, step_beta: Any, trials: Any, return_path: Any
) -> tuple[int, float, float, int, bool]:
    T = _check_int(T, "T")
    step_theta = check_positive(step_theta, "step_theta")
    step_beta = check_positive(step_beta, "step_beta")
    trials = check_trials(trials)
    if not isinstance(return_path, bool | np.bool_):
        raise ValueError(f"return_path must be True or False; got {return_path!r}")
    return T, step_theta, step_beta, trials, bool(return_path)


def _stage_noise(clip: float, n: int, T: int, rho: float, calibration: str) -> float:
    """Noise scale of a stage; 0 (no noise) for rho = inf, whatever the threshold."""
    return 0.0 if math.isinf(rho) else noise_scale(clip, n, T, rho, calibration=calibration)


def _composed_rho(lam: float, sensitivity: float, T: int) -> float:
    """Return the rho-zCDP of T Gaussian mechanisms (Bun & Steinke 2016, Prop. 1.6, Lemma 2.3)."""
    if lam <= 0 or not math.isfinite(sensitivity):
        return math.inf
    return T * gaussian_zcdp(lam, sensitivity)


def _fit(
    estimator: str,
    d: _Design,
    run: dict[str, Any],
    budget: ZCDP | None,
    return_path: bool,
    diagnostics: dict[str, Any],
) -> Fit:
    diag: dict[str, Any] = {
        "theta_path": run["theta_path"],
        "theta_final": run["Theta"],
        "n_nonfinite": run["n_nonfinite"],
        "n": d.n,
        "q": d.q,
        "p": d.p,
        "shared_data": d.shared,
    }
    diag.update(diagnostics)
    # The clip fractions are non-private: given where Fit would move them (the same dict).
    return Fit(
        theta=run["beta"],
        budget_spent=budget,
        estimator=estimator,
        path=run["beta_path"] if return_path else None,
        diagnostics=diag,
        nonprivate_diagnostics={
            "clip_fraction_theta": run["clip_fraction_theta"],
            "clip_fraction_beta": run["clip_fraction_beta"],
        },
    )


# ----------------------------------------------------------------------------- estimators


def fit_two_stage_gd(
    Z: Any,
    X: Any,
    y: Any,
    *,
    T: int,
    step_theta: float,
    step_beta: float,
    trials: int = 1,
    return_path: bool = True,
    kernel: str = "auto",
) -> Fit:
    r"""2S-GD, non-private two-stage gradient descent (Liang et al. 2025, Algorithm 2).

    .. math::

        \Theta^{(t+1)} = \Theta^{(t)} - \frac{\eta}{n} Z^\top(Z\Theta^{(t)} - X), \qquad
        \beta^{(t+1)} = \beta^{(t)} - \frac{\alpha}{n}\Theta^{(t)\top}Z^\top
        (Z\Theta^{(t)}\beta^{(t)} - y),

    from zero, simultaneously (the :math:`\beta` step uses :math:`\Theta^{(t)}`). The
    fixed point is :math:`(\hat\Theta, \hat\beta)`, :math:`\hat\beta` the 2SLS
    estimator; for stable steps the iterates converge to it geometrically.

    Parameters
    ----------
    Z : array_like, shape (n, q) or (trials, n, q)
        Instruments, ``q >= p``, ``n >= q``. A leading trials axis gives each trial its
        own data set (2-D inputs are shared by all trials).
    X : array_like, shape (n, p) or (trials, n, p)
        Endogenous regressors.
    y : array_like, shape (n,) or (trials, n)
        Outcome.
    T : int
        Number of iterations.
    step_theta, step_beta : float
        Step sizes :math:`\eta` and :math:`\alpha` (the paper reports none; see
        :func:`population_step_sizes`).
    trials : int, default 1
        Number of rows of the output (identical unless the data are batched).
    return_path : bool, default True
        Keep :math:`\beta^{(1..T)}` in ``Fit.path`` and :math:`\Theta^{(1..T)}` in
        ``diagnostics["theta_path"]`` (memory ``trials * T * q * p`` floats).
    kernel : {"auto", "fast", "rows"}, default "auto"
        On shared data ``"fast"`` and ``"auto"`` run the recursion compiled from the
        sufficient statistics (:func:`dpreg.estimators.iv_kernel.plain_recursion_trials`);
        ``"rows"`` is the reference numpy loop. Equal up to rounding.

    Returns
    -------
    Fit
        ``theta`` = :math:`\beta^{(T)}` (trials, p); ``path`` (trials, T, p) or None;
        ``budget_spent=None``; diagnostics ``theta_path`` (trials, T, q, p) or None,
        ``theta_final`` (trials, q, p), ``clip_fraction_theta``/``clip_fraction_beta``
        (trials, T) (zeros), ``lambda1 = lambda2 = 0``, step sizes, ``n_nonfinite``.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> Z = rng.normal(size=(2000, 1))
    >>> X = Z + 0.5 * rng.normal(size=(2000, 1))
    >>> y = 2.0 * X[:, 0] + rng.normal(size=2000)
    >>> fit = fit_two_stage_gd(Z, X, y, T=200, step_theta=0.5, step_beta=0.5)
    >>> fit.theta.round(1)
    array([[2.]])
    """
    T, step_theta, step_beta, trials, return_path = _check_common(
        T, step_theta, step_beta, trials, return_path
    )
    check_choice(kernel, "kernel", KERNELS)
    d = _prepare(Z, X, y, trials)
    # Deterministic: on shared data every trial is the same run, so it runs once and is
    # repeated along the trials axis (the same arithmetic as each row of a batched run).
    if d.shared and kernel != "rows":
        run = _plain_run(d, trials=trials, T=T, step_theta=step_theta, step_beta=step_beta,
                         return_path=return_path)  # fmt: skip
    else:
        run = _iterate(
            d,
            trials=1 if d.shared else trials,
            T=T,
            step_theta=step_theta,
            step_beta=step_beta,
            clip_theta=math.inf,
            clip_beta=math.inf,
            lambda1=0.0,
            lambda2=0.0,
            rng=None,
            return_path=return_path,
            kernel=kernel,
        )
        if d.shared and trials > 1:
            run = _repeat_run(run, trials)
    return _fit(
        "2s_gd",
        d,
        run,
        None,
        return_path,
        {
            "algorithm": "Liang et al. 2025, Algorithm 2 (2S-GD)",
            "T": T,
            "step_theta": step_theta,
            "step_beta": step_beta,
            "clip_theta": math.inf,
            "clip_beta": math.inf,
            "lambda1": 0.0,
            "lambda2": 0.0,
            "calibration": None,
            "kernel": kernel,
            "rho_claimed": math.inf,
            "rho_certified": math.inf,
            "privacy_note": "non-private (Algorithm 2)",
        },
    )


def fit_dp_two_stage_gd(
    Z: Any,
    X: Any,
    y: Any,
    *,
    rho1: float,
    rho2: float,
    rng: np.random.Generator,
    T: int,
    step_theta: float,
    step_beta: float,
    clip_theta: float,
    clip_beta: float,
    trials: int = 1,
    calibration: str = "exact",
    return_path: bool = True,
    kernel: str = "auto",
) -> Fit:
    r"""DP-2S-GD, private two-stage gradient descent (Liang et al. 2025, Algorithm 1).

    Each step releases the averaged clipped gradient of each stage plus Gaussian noise,

    .. math::

        \Theta^{(t+1)} = \Theta^{(t)} - \eta\Big(\frac1n\sum_i \mathrm{CLIP}_{\gamma_1}
        (z_i r_i^{(t)\top})\Big) + \eta\,\Xi^{(t)}, \qquad
        \beta^{(t+1)} = \beta^{(t)} - \alpha\Big(\frac1n\sum_i
        \mathrm{CLIP}_{\gamma_2}(w_i^{(t)} e_i^{(t)})\Big) + \alpha\,\nu^{(t)},

    with :math:`\Xi^{(t)}_{jk}, \nu^{(t)}_k \sim \mathcal N(0, \lambda_{1,2}^2)` iid and
    the update simultaneous (:math:`\beta^{(1)} = \alpha\nu^{(0)}` is pure noise).

    Parameters
    ----------
    Z, X, y : array_like
        Data as in :func:`fit_two_stage_gd`; shared or batched with a trials axis.
    rho1, rho2 : float
        zCDP budgets of the :math:`\Theta`- and :math:`\beta`-trajectories, > 0.
        ``math.inf`` means no noise in that stage (see "Privacy" for what is then
        certified).
    rng : numpy.random.Generator
        Source of all noise. Per step: :math:`\Xi^{(t)}` as
        ``standard_normal((trials, q, p))`` (if ``rho1 < inf``), then :math:`\nu^{(t)}`
        as ``standard_normal((trials, p))`` (if ``rho2 < inf``).
    T : int
        Number of iterations (enters the calibration).
    step_theta, step_beta : float
        :math:`\eta, \alpha`.
    clip_theta, clip_beta : float
        Public clipping thresholds :math:`\gamma_1, \gamma_2` (e.g.
        :func:`default_clip_threshold`); ``math.inf`` (no clipping) only with the
        stage's rho infinite. Never read off the data.
    trials : int, default 1
        Independent runs (independent noise; own data if batched), vectorised.
    calibration : {"exact", "paper"}, default "exact"
        Noise scales, see :func:`noise_scale`: ``"exact"``
        :math:`\lambda_k = \frac{\gamma_k}{n}\sqrt{2T/\rho_k}` certifies exactly
        :math:`\rho_1 + \rho_2`; ``"paper"`` (Prop. 3.1 as printed,
        :math:`\lambda_k = \frac{2\gamma_k}{n}\sqrt{T/\rho_k}`) certifies
        :math:`(\rho_1 + \rho_2)/2`.
    return_path : bool, default True
        Keep the trajectories (``Fit.path``, ``diagnostics["theta_path"]``).
    kernel : {"auto", "fast", "rows"}, default "auto"
        How the clipped gradients are evaluated: ``"fast"`` skips, on shared data, the
        rows a certificate shows unclipped (:mod:`dpreg.estimators.iv_kernel`) and, on
        batched data with ``q * p <= 64``, evaluates them in one compiled pass
        (:mod:`dpreg.estimators.iv_batched`); ``"rows"`` (the reference) visits every
        row with numpy, ``"auto"`` is ``"fast"`` when
        ``n * trials * T >= AUTO_MIN_WORK`` (:math:`2^{22}`), else ``"rows"``. Same
        draws, same output to rounding, same clip counts.

    Returns
    -------
    Fit
        ``theta`` = :math:`\beta^{(T)}` (trials, p); ``path`` :math:`\beta^{(1..T)}`
        (trials, T, p) or None; ``budget_spent`` = ``ZCDP`` certified by the accountant
        for the algorithm's output :math:`\{\Theta^{(t)}, \beta^{(t)}\}_{t=1}^T`
        (:math:`\rho = \infty` if a stage is noiseless). Diagnostics: ``theta_path``
        (trials, T, q, p) or None, ``theta_final`` (trials, q, p),
        ``clip_fraction_theta``, ``clip_fraction_beta`` (trials, T), ``lambda1``,
        ``lambda2``, ``sensitivity_theta``, ``sensitivity_beta`` (per-step L2
        sensitivities, :math:`2\gamma_k/n`), ``calibration``, ``rho_claimed``
        (:math:`\rho_1+\rho_2`, Prop. 3.1), ``rho_claimed_beta_path`` (:math:`\rho_2`,
        Lemma F.1), ``rho_certified`` (= ``budget_spent.rho``),
        ``rho_certified_theta_path``, ``rho_certified_beta_path`` (what each trajectory
        alone is certified for), ``neighbouring``, ``privacy_note``, the
        hyperparameters, ``n_nonfinite`` (diverged trials).

    Notes
    -----
    **Privacy** (replace-one neighbours, :math:`n` public). At step :math:`t` the
    iterates :math:`\Theta^{(t)}, \beta^{(t)}` are functions of earlier releases, so by
    adaptive composition they are fixed when bounding the step's sensitivity:

    .. math::

        \Delta_k = \sup_{D \sim D'} \Big\|\frac1n\sum_i \mathrm{CLIP}_{\gamma_k}(g_i)
        - \frac1n\sum_i \mathrm{CLIP}_{\gamma_k}(g'_i)\Big\| = \frac{2\gamma_k}{n},
        \qquad
        \rho = \sum_{k=1,2} T\,\frac{\Delta_k^2}{2\lambda_k^2}.

    ``budget_spent`` evaluates this sum with :func:`dpreg.privacy.gaussian_zcdp`.

    * Both :math:`\rho_k` finite: the whole trajectory is
      :math:`(\rho_1+\rho_2)`-zCDP (``"exact"``) or :math:`(\rho_1+\rho_2)/2`-zCDP
      (``"paper"``). The :math:`\beta`-trajectory *alone* is certified only for the same
      total: it depends on the private data also through the unreleased noisy
      :math:`\Theta^{(t)}`; Lemma F.1's :math:`\rho_2` is not certified
      (docs/notes/liang2025.md §3.4).
    * :math:`\rho_1 = \infty`: :math:`\Theta^{(t)}` is released without noise, so the
      algorithm's output has no guarantee: ``budget_spent = ZCDP(inf)``. If only the
      :math:`\beta`-trajectory is published, :math:`\Theta^{(t)}` is a deterministic
      function of the data, replacing one record can change *all* :math:`n` clipped
      terms, the step's sensitivity is :math:`2\gamma_2`, and the accountant certifies
      :math:`T(2\gamma_2)^2/(2\lambda_2^2) = n^2\rho_2` (``"exact"``) as
      ``rho_certified_beta_path`` -- not Lemma F.1's :math:`\rho_2`.
    * :math:`\rho_2 = \infty`: the :math:`\beta`-trajectory is non-private
      (``budget_spent = ZCDP(inf)``); the :math:`\Theta`-trajectory alone is
      :math:`\rho_1`-zCDP (``rho_certified_theta_path``).
    * :math:`\rho_1 = \rho_2 = \infty` with both thresholds infinite runs exactly the
      operations of :func:`fit_two_stage_gd` (bit for bit; Corollary 3.1).

    Nothing outside the iteration is covered: centring or subsampling the data,
    choosing step sizes or thresholds from the data (docs/notes/liang2025.md P17).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> Z = rng.normal(size=(2000, 1))
    >>> X = Z + 0.5 * rng.normal(size=(2000, 1))
    >>> y = 2.0 * X[:, 0] + rng.normal(size=2000)
    >>> fit = fit_dp_two_stage_gd(Z, X, y, rho1=5.0, rho2=5.0, rng=rng, T=50, step_theta=0.5,
    ...                           step_beta=0.5, clip_theta=5.0, clip_beta=5.0, trials=3)
    >>> fit.theta.shape
    (3, 1)
    """
    T, step_theta, step_beta, trials, return_path = _check_common(
        T, step_theta, step_beta, trials, return_path
    )
    rho1 = check_positive(rho1, "rho1", allow_inf=True)
    rho2 = check_positive(rho2, "rho2", allow_inf=True)
    clip_theta = _check_clip(clip_theta, "clip_theta", rho1, "rho1")
    clip_beta = _check_clip(clip_beta, "clip_beta", rho2, "rho2")
    check_choice(calibration, "calibration", CALIBRATIONS)
    check_choice(kernel, "kernel", KERNELS)
    rng = check_rng(rng)
    d = _prepare(Z, X, y, trials)
    n = d.n
    lambda1 = _stage_noise(clip_theta, n, T, rho1, calibration)
    lambda2 = _stage_noise(clip_beta, n, T, rho2, calibration)

    # The accountant: T Gaussian mechanisms per stage, sensitivity 2 gamma / n each.
    sens_theta, sens_beta = 2.0 * clip_theta / n, 2.0 * clip_beta / n
    rho_theta = _composed_rho(lambda1, sens_theta, T)
    rho_beta_given_theta = _composed_rho(lambda2, sens_beta, T)
    rho_total = rho_theta + rho_beta_given_theta
    if lambda1 > 0:
        rho_beta_path = rho_total  # post-processing of the full release
    else:  # Theta^(t) non-private: one record moves all n clipped terms
        rho_beta_path = _composed_rho(lambda2, 2.0 * clip_beta, T)
    if math.isfinite(rho_total):
        note = (
            "certified for the whole trajectory {Theta^(t), beta^(t)}; the beta-trajectory"
            " alone is certified only for the same total (Lemma F.1's rho2-only claim does"
            " not hold: beta depends on the data through the unreleased noisy Theta)"
        )
    elif lambda1 == 0 and lambda2 > 0:
        note = (
            "rho1=inf: Theta^(t) is released without noise, so the output has no guarantee"
            " (budget_spent rho=inf); publishing only the beta-trajectory is"
            " rho_certified_beta_path-zCDP (= n^2 rho2 with exact calibration), not rho2:"
            " a non-private Theta^(t) lets one record change all n clipped beta-gradients"
            " (sensitivity 2*clip_beta, not 2*clip_beta/n). Lemma F.1's rho2 would hold only"
            " if Theta^(t) were public/data-independent"
        )
    elif lambda2 == 0 and lambda1 > 0:
        note = (
            "rho2=inf: the beta-trajectory is non-private (budget_spent rho=inf); the"
            " Theta-trajectory alone is rho_certified_theta_path-zCDP"
        )
    else:
        note = "rho1=rho2=inf: no noise, no privacy"
    return _fit(
        "dp_2s_gd",
        d,
        _iterate(
            d,
            trials=trials,
            T=T,
            step_theta=step_theta,
            step_beta=step_beta,
            clip_theta=clip_theta,
            clip_beta=clip_beta,
            lambda1=lambda1,
            lambda2=lambda2,
            rng=rng,
            return_path=return_path,
            kernel=kernel,
        ),
        ZCDP(rho_total),
        return_path,
        {
            "algorithm": "Liang et al. 2025, Algorithm 1 (DP-2S-GD)",
            "T": T,
            "step_theta": step_theta,
            "step_beta": step_beta,
            "clip_theta": clip_theta,
            "clip_beta": clip_beta,
            "rho1": rho1,
            "rho2": rho2,
            "lambda1": lambda1,
            "lambda2": lambda2,
            "sensitivity_theta": sens_theta,
            "sensitivity_beta": sens_beta,
            "calibration": calibration,
            "kernel": kernel,
            "rho_claimed": rho1 + rho2,
            "rho_claimed_beta_path": rho2,
            "rho_certified": rho_total,
            "rho_certified_theta_path": rho_theta,
            "rho_certified_beta_path": rho_beta_path,
            "neighbouring": NEIGHBOURING,
            "privacy_note": note,
        },
    )


def fit_dp_two_stage_gd_beta(
    Z: Any,
    X: Any,
    y: Any,
    *,
    rho2: float,
    rng: np.random.Generator,
    T: int,
    step_theta: float,
    step_beta: float,
    clip_beta: float,
    trials: int = 1,
    calibration: str = "exact",
    return_path: bool = True,
    kernel: str = "auto",
) -> Fit:
    r"""DP-2S-GD-:math:`\beta`: noise in the second stage only (Liang et al. 2025, Alg. 3).

    The first stage is plain, unclipped, noiseless GD (Algorithm 3, line 5); the second
    stage is Algorithm 1's clipped, noised :math:`\beta` step with
    :math:`\lambda_2` from :func:`noise_scale` (the paper's Thm F.1 uses
    :math:`\lambda_2 = \frac{2\gamma_2}{n}\sqrt{T/\rho_2}`). Only
    :math:`\beta^{(1..T)}` is the algorithm's output.

    **What it protects.** The paper claims :math:`\rho_2`-zCDP (Lemma F.1, no proof).
    That holds only *if* :math:`\Theta^{(t)}` were public or data-independent. Here
    :math:`\Theta^{(t)}` is a deterministic function of the private data; replacing one
    record changes :math:`\Theta^{(t)}` and with it all :math:`n` clipped terms, and with
    unbounded data each can move anywhere in its :math:`\gamma_2`-ball. The step's
    sensitivity is therefore

    .. math::

        \sup_{D \sim D'}\Big\|\frac1n\sum_i\mathrm{CLIP}_{\gamma_2}(g_i(D;\Theta^{(t)}(D)))
        - \frac1n\sum_i\mathrm{CLIP}_{\gamma_2}(g_i(D';\Theta^{(t)}(D')))\Big\|
        \le 2\gamma_2 \quad(\text{not } 2\gamma_2/n),

    and the accountant certifies :math:`T(2\gamma_2)^2/(2\lambda_2^2)`: :math:`n^2\rho_2`
    with ``"exact"`` calibration, :math:`n^2\rho_2/2` with ``"paper"``. That is
    ``budget_spent``; at realistic :math:`n` it is no meaningful guarantee. To certify a
    target :math:`\rho` end to end, pass ``rho2 = rho / n**2`` (noise :math:`n` times
    larger). Do not present this estimator as :math:`\rho_2`-zCDP.

    Parameters
    ----------
    Z, X, y : array_like
        Data as in :func:`fit_two_stage_gd`; shared or batched with a trials axis.
    rho2 : float
        The paper's budget for the :math:`\beta`-trajectory, > 0 (``math.inf``: no
        noise). Sets :math:`\lambda_2`; see above for what is certified.
    rng : numpy.random.Generator
        Source of the noise: per step :math:`\nu^{(t)}` as
        ``standard_normal((trials, p))``.
    T : int
        Number of iterations.
    step_theta, step_beta : float
        :math:`\eta, \alpha`.
    clip_beta : float
        Public clipping threshold :math:`\gamma_2` (finite unless ``rho2`` is infinite).
    trials : int, default 1
        Independent runs, vectorised.
    calibration : {"exact", "paper"}, default "exact"
        See :func:`noise_scale`.
    return_path : bool, default True
        Keep the trajectories.
    kernel : {"auto", "fast", "rows"}, default "auto"
        See :func:`fit_dp_two_stage_gd`.

    Returns
    -------
    Fit
        As :func:`fit_dp_two_stage_gd`, with ``budget_spent = ZCDP(T (2 clip_beta)^2 /
        (2 lambda2^2))`` for :math:`\beta^{(1..T)}`, ``rho_claimed = rho2``,
        ``rho_if_theta_public`` (the claim's conditional guarantee, sensitivity
        :math:`2\gamma_2/n`), ``sensitivity_beta = 2 clip_beta`` (the one certified),
        ``sensitivity_beta_claimed = 2 clip_beta / n``, ``privacy_note``.
        ``diagnostics["theta_path"]`` and ``["theta_final"]`` are **non-private** (no
        noise at all): never publish them. ``clip_fraction_theta`` is zero (no
        first-stage clipping).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> Z = rng.normal(size=(2000, 1))
    >>> X = Z + 0.5 * rng.normal(size=(2000, 1))
    >>> y = 2.0 * X[:, 0] + rng.normal(size=2000)
    >>> fit = fit_dp_two_stage_gd_beta(Z, X, y, rho2=5.0, rng=rng, T=50, step_theta=0.5,
    ...                                step_beta=0.5, clip_beta=5.0, trials=3)
    >>> fit.theta.shape
    (3, 1)
    """
    T, step_theta, step_beta, trials, return_path = _check_common(
        T, step_theta, step_beta, trials, return_path
    )
    rho2 = check_positive(rho2, "rho2", allow_inf=True)
    clip_beta = _check_clip(clip_beta, "clip_beta", rho2, "rho2")
    check_choice(calibration, "calibration", CALIBRATIONS)
    check_choice(kernel, "kernel", KERNELS)
    rng = check_rng(rng)
    d = _prepare(Z, X, y, trials)
    n = d.n
    lambda2 = _stage_noise(clip_beta, n, T, rho2, calibration)
    rho_certified = _composed_rho(lambda2, 2.0 * clip_beta, T)
    rho_if_public = _composed_rho(lambda2, 2.0 * clip_beta / n, T)
    note = (
        "the paper's rho2-zCDP claim (Lemma F.1) is valid only if Theta^(t) were"
        " public/data-independent; Theta^(t) is computed from the private data without"
        " noise, so one record can change all n clipped beta-gradients (sensitivity"
        " 2*clip_beta, not 2*clip_beta/n) and the beta-trajectory is certified"
        " rho_certified = n^2 * rho2-zCDP (exact calibration; n^2 rho2 / 2 with 'paper')."
        " theta_path/theta_final are non-private"
    )
    return _fit(
        "dp_2s_gd_beta",
        d,
        _iterate(
            d,
            trials=trials,
            T=T,
            step_theta=step_theta,
            step_beta=step_beta,
            clip_theta=math.inf,
            clip_beta=clip_beta,
            lambda1=0.0,
            lambda2=lambda2,
            rng=rng,
            return_path=return_path,
            kernel=kernel,
        ),
        ZCDP(rho_certified),
        return_path,
        {
            "algorithm": "Liang et al. 2025, Algorithm 3 (DP-2S-GD-beta)",
            "T": T,
            "step_theta": step_theta,
            "step_beta": step_beta,
            "clip_theta": math.inf,
            "clip_beta": clip_beta,
            "rho2": rho2,
            "lambda1": 0.0,
            "lambda2": lambda2,
            "sensitivity_beta": 2.0 * clip_beta,
            "sensitivity_beta_claimed": 2.0 * clip_beta / n,
            "calibration": calibration,
            "kernel": kernel,
            "rho_claimed": rho2,
            "rho_if_theta_public": rho_if_public,
            "rho_certified": rho_certified,
            "rho_certified_theta_path": math.inf,
            "rho_certified_beta_path": rho_certified,
            "neighbouring": NEIGHBOURING,
            "privacy_note": note,
        },
    )
