r"""Noisy-SGD, Noisy-FTRL and DP-FTRL with any Toeplitz noise correlation.

Choquette-Choo, Dvijotham, Pillutla, Ganesh, Steinke & Thakurta (2023), "Correlated
Noise Provably Beats Independent Noise for Differentially Private Learning" (ICLR
2024). Algorithm 1 with a lower-triangular Toeplitz :math:`B` (Eq. 13):

.. math::

    \theta_{t+1} = \theta_t - \eta\Big(g_t + \sum_{\tau=0}^{t}\beta_\tau w_{t-\tau}\Big),
    \qquad w_\tau \sim \mathcal N(0, \sigma_{dp}^2 G^2 I_d).

The correlated noise :math:`\tilde w = \beta * w` does not depend on the iterates, so it
is generated for all :math:`T` steps at once by FFT convolution along time
(:func:`correlated_noise`, :math:`O(T\log T)` per coordinate) instead of the
:math:`O(T^2)` sum.

Layers:

* :func:`correlated_noise` -- :math:`\tilde w_t = \sum_{\tau\le t}\beta_\tau w_{t-\tau}`
  by FFT (pure numerical core, :mod:`dpreg.estimators.ftrl_noise`, re-exported here);
* :func:`simulate_streaming_regression` -- Noisy-SGD / Noisy-FTRL on the streaming
  linear-regression model of §2.2 (:math:`x_t \sim \mathcal N(0, H)`,
  :math:`y_t = \langle\theta^\star, x_t\rangle + \xi_t`), vectorised over seeds, in the
  eigenbasis of :math:`H`; returns the empirical asymptotic suboptimality (Fig. 2);
* :func:`fit_dp_ftrl` -- DP-FTRL (clipped) or Noisy-FTRL (``clip=inf``) for least
  squares on a dataset: one shuffled pass (each example used once, Theorem 1.1) or
  ``epochs`` passes in one fixed order (each example used once per epoch, with the
  multi-participation sensitivity of :func:`multi_epoch_sensitivity_sq`), vectorised over
  trials (registry ``"dp_ftrl"``; ``"dp_sgd_stream"`` is the same with independent
  noise).

Correlations are :class:`~dpreg.estimators.ftrl_correlations.ToeplitzCorrelation`
objects (:mod:`dpreg.estimators.ftrl_correlations`); noise multipliers come from
:mod:`dpreg.privacy.correlated`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
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
from dpreg.estimators.ftrl_correlations import (
    CORRELATIONS,
    ToeplitzCorrelation,
    correlation_from_name,
    independent,
)
from dpreg.estimators.ftrl_factorizations import FFTFactorization, MatrixFactorization
from dpreg.estimators.ftrl_kernel import data_steps_compiled
from dpreg.estimators.ftrl_noise import (
    DIRECT_TAPS,
    NoiseWorkspace,
    correlated_noise,
    correlated_noise_rows,
    unit_normals,
)
from dpreg.estimators.ftrl_sim_kernel import sim_block
from dpreg.estimators.normal32_kernel import normal32_fill, normal32_fill_columns
from dpreg.estimators.permutations import uniform_key_permutations
from dpreg.privacy.budgets import ZCDP, ApproxDP, check_budget
from dpreg.privacy.conversions import CONVERSIONS, DEFAULT_CONVERSION
from dpreg.privacy.correlated import (
    CALIBRATIONS,
    NEIGHBOURS,
    ftrl_epsilon,
    ftrl_noise_multiplier,
    ftrl_zcdp,
    multi_participation_sensitivity_sq,
)
from dpreg.results import Fit

__all__ = [
    "DIRECT_TAPS",
    "FTRL_KERNELS",
    "KERNEL_AUTO_MIN_ROWS",
    "KERNEL_AUTO_MIN_STEPS",
    "MAX_STEPS",
    "SENSITIVITIES",
    "SIM_KERNELS",
    "StreamingResult",
    "correlated_noise",
    "fit_dp_ftrl",
    "fit_dp_sgd_stream",
    "multi_epoch_sensitivity_sq",
    "check_epochs",
    "resolve_correlation",
    "simulate_streaming_regression",
    "stream_calibration",
    "stream_certificate",
    "stream_noise",
]

FTRL_KERNELS: tuple[str, ...] = ("auto", "numba", "numpy", "numpy_compiled")
"""Step loops of :func:`fit_dp_ftrl`: compiled (:mod:`dpreg.estimators.ftrl_kernel`), the
numpy reference, the numpy loop's arithmetic compiled
(:mod:`dpreg.estimators.ftrl_numpy_order`: the reference's bits), or ``"auto"``
(``"numba"`` from :data:`KERNEL_AUTO_MIN_ROWS` row-steps or :data:`KERNEL_AUTO_MIN_STEPS`
steps, ``"numpy_compiled"`` below)."""

KERNEL_AUTO_MIN_ROWS = 1 << 19
"""``kernel="auto"`` compiles when trials x T x batch size reaches this (a public count):
from here the compiled loop saves 0.05-0.3 s per call (0.04 -> 0.02 s per 10^5 row-steps
at d = 18, 0.04 -> 0.014 s at d = 128), which pays for numba's one-time start in a
fresh process (its import and cache load, about 1 s) within a few calls."""

KERNEL_AUTO_MIN_STEPS = 1 << 13
"""``kernel="auto"`` also compiles from this many steps T (a public count), whatever the
trials and batch size: the numpy loop costs about 20 µs a step in numpy calls alone
(issue 18: at batch 1, 10 trials, d = 128, T = 10^4 its 10^5 row-steps took 0.2 s
against 0.01 s compiled), so from 8,192 steps the compiled loop saves about 0.15 s per
call, as much as the row-step rule's smallest saving."""

SIM_KERNELS: tuple[str, ...] = ("numba", "numpy")
"""Step loops of :func:`simulate_streaming_regression`: compiled or the numpy reference."""

SENSITIVITIES: tuple[str, ...] = ("finite", "infinite")
"""Calibrate with :math:`\\gamma_T` (finite horizon) or :math:`\\gamma_\\infty` (anytime)."""

MAX_STEPS = 1_000_000
r"""Most steps :math:`T = E\lfloor n/b\rfloor` one :func:`fit_dp_ftrl` call takes.

The steps are a Python loop (vectorised over trials, about 10-50 µs each), so a larger
``epochs * (n // batch_size)`` is refused before any work instead of running for minutes.
"""
_BRUTE_FORCE_STEPS = 2048
_DEFAULT_NOISE_BYTES = 512 * 2**20
_INPUT_BLOCK = 2048
#: Gathered row elements per block of steps in :func:`_data_steps` (8 MB of float64).
_GATHER_ELEMENTS = 2**20


def _rowdot_einsum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.einsum("sd,sd->s", a, b)


_rowdot = getattr(np, "vecdot", _rowdot_einsum)


@dataclass(frozen=True)
class StreamingResult:
    r"""Output of :func:`simulate_streaming_regression`.

    Attributes
    ----------
    suboptimality : ndarray, shape (trials,)
        Time average of :math:`F(\theta_t) - F(\theta^\star) =
        \frac12\|\theta_t - \theta^\star\|_H^2` over the tail steps of each seed: the
        empirical asymptotic suboptimality :math:`F_\infty` (Eq. 4).
    trace : ndarray, shape (trials, n_records)
        :math:`F(\theta_t) - F^\star` every ``record_every`` steps.
    record_steps : ndarray, shape (n_records,)
        The steps :math:`t` of ``trace``.
    noise_multiplier : float
        :math:`\sigma_{dp}` used (per unit of :math:`G`).
    sensitivity_sq : float
        :math:`\gamma^2` used for the calibration.
    n_tail : int
        Number of steps averaged.
    """

    suboptimality: np.ndarray
    trace: np.ndarray
    record_steps: np.ndarray
    noise_multiplier: float
    sensitivity_sq: float
    n_tail: int


def simulate_streaming_regression(
    eigenvalues: np.ndarray,
    *,
    correlation: ToeplitzCorrelation,
    eta: float,
    T: int,
    rng: np.random.Generator,
    trials: int = 1,
    rho: float = 1.0,
    clip: float = 1.0,
    sigma_sgd: float = 0.0,
    sensitivity: str = "infinite",
    tail_fraction: float = 0.5,
    record_every: int = 100,
    initial_distance: float = 0.0,
    max_noise_bytes: int = _DEFAULT_NOISE_BYTES,
    kernel: str = "numba",
    workspace: NoiseWorkspace | None = None,
) -> StreamingResult:
    r"""Noisy-FTRL / Noisy-SGD on streaming linear regression (§2.2, Fig. 2).

    The model: :math:`x_t \sim \mathcal N(0, H)`, :math:`y_t = \langle\theta^\star,
    x_t\rangle + \xi_t`, :math:`\xi_t \sim \mathcal N(0, \sigma_{sgd}^2)`, stochastic
    gradient :math:`g_t = x_t(\langle x_t, \theta_t\rangle - y_t)`, no clipping
    (Noisy-FTRL, the paper's analysis vehicle; it is not DP), noise
    :math:`w_t \sim \mathcal N(0, \sigma_{dp}^2G^2 I)` with
    :math:`\sigma_{dp}^2 = \gamma^2/(2\rho)` (Theorem 2.2 uses
    :math:`\gamma = \gamma_\infty`).

    The law of :math:`F(\theta_t) - F^\star` depends on :math:`H` only through its
    eigenvalues (rotation invariance of the Gaussian inputs and of the isotropic noise),
    so the simulation runs in the eigenbasis: :math:`x_t = \sqrt\lambda \odot z_t` and
    :math:`\delta_t = \theta_t - \theta^\star`,

    .. math::

        \delta_{t+1} = \delta_t - \eta\big(x_t(\langle x_t,\delta_t\rangle - \xi_t)
        + \tilde w_t\big),

    a rank-one update per seed, vectorised over seeds; :math:`\tilde w` is
    precomputed by :func:`correlated_noise`, in place of the draws (one float32
    ``(T, g, d)`` array per group of ``g`` seeds, on one buffer reused by the groups:
    ``workspace``). Seeds are processed in groups whose
    noise array fits ``max_noise_bytes``; inputs and label noise are drawn 2048 steps at
    a time, so the rest of the working memory does not grow with :math:`T`.

    Parameters
    ----------
    eigenvalues : array_like, shape (d,)
        Eigenvalues :math:`\lambda_k > 0` of :math:`H`.
    correlation : ToeplitzCorrelation
        Noise correlation (e.g. :func:`~dpreg.estimators.ftrl_correlations.nu_ftrl`).
    eta : float
        Learning rate; stability needs :math:`\eta < 1/R^2`,
        :math:`R^2 = \mathrm{Tr}H + 2\|H\|_2` for Gaussian inputs.
    T : int
        Number of steps.
    rng : numpy.random.Generator
        Source of inputs, label noise and DP noise.
    trials : int
        Independent seeds.
    rho : float
        zCDP parameter of the calibration, > 0.
    clip : float
        :math:`G` (scales the noise only; nothing is clipped).
    sigma_sgd : float
        Label-noise standard deviation :math:`\sigma_{sgd} \ge 0`.
    sensitivity : {"infinite", "finite"}
        Calibrate with :math:`\gamma_\infty` (paper, Thm 2.2) or :math:`\gamma_T`.
    tail_fraction : float
        Fraction of the last steps averaged (0, 1].
    record_every : int
        Thinning of the recorded trace.
    initial_distance : float
        :math:`\|\theta_0 - \theta^\star\|`, along :math:`(1,\dots,1)/\sqrt d` (0: start
        at the optimum, so only the stationary noise is measured).
    max_noise_bytes : int
        Memory cap of the precomputed noise of one seed group (4 T d bytes per seed;
        at least one seed per group). The default, 512 MB, gives the groups, hence the
        draws, of the former two-array implementation with its 1 GB cap.
    kernel : {"numba", "numpy"}
        :data:`SIM_KERNELS`: the step loop in compiled code
        (:func:`~dpreg.estimators.ftrl_sim_kernel.sim_block`, the default) or the numpy
        loop (the reference). Same draws (``"numba"`` also draws the float32 normals in
        compiled code, :func:`~dpreg.estimators.normal32_kernel.normal32_fill`: numpy's
        values and generator state, bit for bit); the two agree to round-off (only the
        order of the additions in the two sums over coordinates differs).
    workspace : NoiseWorkspace, optional
        Buffer for the noise of the compiled path (``kernel="numba"``), reused by every
        seed group of this call; pass one workspace to successive calls of the same
        ``T`` and ``d`` (e.g. the mechanisms of one Fig. 2 cell) to reuse it across calls
        too. Default: a workspace of this call only. The values do not depend on it.

    Returns
    -------
    StreamingResult
    """
    lam = np.asarray(eigenvalues, dtype=np.float64).ravel()
    if lam.size == 0 or not np.all(np.isfinite(lam)) or np.any(lam <= 0):
        raise ValueError("eigenvalues must be a non-empty vector of finite positive numbers")
    if not isinstance(correlation, ToeplitzCorrelation):
        raise TypeError(f"correlation must be a ToeplitzCorrelation; got {correlation!r}")
    eta = check_positive(eta, "eta")
    T = check_trials(T, name="T")
    trials = check_trials(trials)
    check_rng(rng)
    rho = check_positive(rho, "rho")
    clip = check_positive(clip, "clip")
    if not (sigma_sgd >= 0) or math.isinf(sigma_sgd):
        raise ValueError(f"sigma_sgd must be a finite number >= 0; got {sigma_sgd!r}")
    check_choice(sensitivity, "sensitivity", SENSITIVITIES)
    if not (0.0 < tail_fraction <= 1.0):
        raise ValueError(f"tail_fraction must lie in (0, 1]; got {tail_fraction!r}")
    record_every = check_trials(record_every, name="record_every")
    check_choice(kernel, "kernel", SIM_KERNELS)
    d = lam.size
    gamma_sq = correlation.gamma_inf_sq if sensitivity == "infinite" else None
    if gamma_sq is None:
        gamma_sq = correlation.sensitivity_sq(T)
    if math.isinf(gamma_sq):
        raise ValueError(
            f"correlation {correlation.label()} has gamma_inf = inf (F_inf is infinite);"
            " use sensitivity='finite' or a damped correlation"
        )
    sigma_dp = math.sqrt(gamma_sq / (2.0 * rho))
    noise_std = sigma_dp * clip
    beta = correlation.coefficients(T)
    sqrt_lam = np.sqrt(lam)
    start_tail = T - max(1, int(round(tail_fraction * T)))
    n_tail = T - start_tail
    record_steps = np.arange(0, T, record_every)
    group = max(1, min(trials, int(max_noise_bytes // (4 * T * d))))
    taps = np.flatnonzero(beta)
    by_fft = taps.size > 0 and int(taps[-1]) + 1 > DIRECT_TAPS  # correlated_noise's FFT path
    subopt = np.empty(trials)
    trace = np.empty((trials, record_steps.size))
    # the noise of every group in one buffer (fresh pages cost the kernel's zeroing)
    ws = NoiseWorkspace() if workspace is None else workspace
    for first in range(0, trials, group):
        g = min(group, trials - first)
        # one float32 (T, g d) array: the draws, then (in place) the correlated noise
        if kernel == "numba" and by_fft:
            # numpy's draws and products, bit for bit, in compiled code, stored with time
            # last (each series contiguous for its FFT); the loop reads the (T, g, d) view
            noise_t = ws.array((g * d, T))
            normal32_fill_columns(rng, noise_t, eta * noise_std)
            correlated_noise_rows(beta, noise_t, precision="single", out=noise_t)
            noise = noise_t.reshape(g, d, T).transpose(2, 0, 1)
            del noise_t
        else:
            if kernel == "numba":
                noise = normal32_fill(rng, ws.array((T, g * d)), eta * noise_std)
            else:
                noise = rng.standard_normal((T, g * d), dtype=np.float32)
                noise *= np.float32(eta * noise_std)
            noise = correlated_noise(beta, noise, precision="single", out=noise)
            noise = noise.reshape(T, g, d)
        delta = np.full((g, d), initial_distance / math.sqrt(d))
        acc = np.zeros((g, d))
        sq = np.empty((g, d))
        grad = np.empty((g, d))
        rec = 0
        # block buffers, reused (no fresh pages per block); same values as fresh arrays
        shape = (min(_INPUT_BLOCK, T), g, d)
        z_buf, X_buf = np.empty(shape, np.float32), np.empty(shape)
        X_eta_buf, N_buf = np.empty(shape), np.empty(shape)
        for block in range(0, T, _INPUT_BLOCK):
            stop = min(block + _INPUT_BLOCK, T)
            m = stop - block
            if kernel == "numba":
                z = normal32_fill(rng, z_buf[:m])
                xi = sigma_sgd * rng.standard_normal((m, g)) if sigma_sgd > 0 else None
                rec = sim_block(
                    z,
                    noise[block:stop],
                    xi,
                    delta,
                    acc,
                    trace,
                    sqrt_lam=sqrt_lam,
                    lam=lam,
                    eta=eta,
                    first=first,
                    rec=rec,
                    block=block,
                    start_tail=start_tail,
                    record_every=record_every,
                )
                continue
            z = rng.standard_normal(dtype=np.float32, out=z_buf[:m])
            X = np.multiply(z, sqrt_lam, out=X_buf[:m])
            X_eta = np.multiply(X, eta, out=X_eta_buf[:m])
            N = N_buf[:m]
            np.copyto(N, noise[block:stop])
            if sigma_sgd > 0:
                xi = sigma_sgd * rng.standard_normal((stop - block, g))
            for i, t in enumerate(range(block, stop)):
                r = _rowdot(X[i], delta)
                if sigma_sgd > 0:
                    r -= xi[i]
                np.multiply(X_eta[i], r[:, None], out=grad)
                grad += N[i]
                delta -= grad
                if t >= start_tail:
                    np.multiply(delta, delta, out=sq)
                    acc += sq
                if t % record_every == 0:
                    trace[first : first + g, rec] = 0.5 * ((delta * delta) @ lam)
                    rec += 1
        # one noise array alive at a time (the workspace's, or numpy's draws freed here)
        del noise, z_buf, X_buf, X_eta_buf, N_buf
        subopt[first : first + g] = 0.5 * (acc @ lam) / n_tail
        if not np.all(np.isfinite(subopt[first : first + g])):
            raise FloatingPointError(
                f"the iterates diverged (eta={eta:g} too large for Tr H={lam.sum():g})"
            )
    return StreamingResult(subopt, trace, record_steps, sigma_dp, float(gamma_sq), n_tail)


# ------------------------------------------------------------------- DP-FTRL on data


_Factorization = MatrixFactorization | FFTFactorization


def _resolve_correlation(
    correlation: ToeplitzCorrelation | _Factorization | str, nu: float | None, eta: float
) -> ToeplitzCorrelation | _Factorization:
    if isinstance(correlation, ToeplitzCorrelation | MatrixFactorization | FFTFactorization):
        return correlation
    if not isinstance(correlation, str) or correlation not in CORRELATIONS:
        raise ValueError(
            f"correlation must be a ToeplitzCorrelation or one of {CORRELATIONS};"
            f" got {correlation!r}"
        )
    return correlation_from_name(correlation, nu=nu, eta=eta)


def _check_epochs(epochs: object) -> int:
    if isinstance(epochs, bool) or not isinstance(epochs, int | np.integer) or epochs < 1:
        raise ValueError(f"epochs must be an integer >= 1 (passes over the rows); got {epochs!r}")
    return int(epochs)


def multi_epoch_sensitivity_sq(
    correlation: ToeplitzCorrelation | _Factorization, steps_per_epoch: int, epochs: int
) -> float:
    r"""Squared sensitivity :math:`\gamma^2` of ``epochs`` passes in one fixed order.

    A row in batch :math:`i` of the first epoch is in batch :math:`i + jS` of epoch
    :math:`j` (:math:`S` = ``steps_per_epoch``): the ``"fixed_epoch"`` participation
    pattern :math:`\{i, i+S, \dots, i+(E-1)S\}` of
    :func:`~dpreg.privacy.correlated.participation_patterns` with :math:`k = E` and
    separation :math:`S`, over the horizon :math:`T = ES`. The worst case over
    :math:`i` and over the (clipped, any direction) gradient changes is
    :func:`~dpreg.privacy.correlated.multi_participation_sensitivity_sq` of the encoder
    (docs/notes/choquettechoo2023.md §2.5 item 3; not in Choquette-Choo et al. 2023,
    whose Theorem 1.1 covers one participation):

    * a :class:`~dpreg.estimators.ftrl_correlations.ToeplitzCorrelation` whose encoder
      :math:`c = \beta^{-1}` is non-negative (SGD, ν-FTRL, Optimal CC, optimal mean
      estimation, anti-PGD with or without damping): the pattern from step 0 is the
      worst, :math:`\gamma^2 = \sum_{t<T}(\sum_{j<E,\ jS\le t} c_{t-jS})^2` (the
      squared norm of the sum of the encoder columns :math:`0, S, \dots`), in
      :math:`O(ET)` time and :math:`O(T)` memory -- no :math:`T\times T` matrix;
    * a Toeplitz encoder with negative entries: brute force over the :math:`S`
      patterns with the explicit encoder, for :math:`T \le 2048` only;
    * a :class:`~dpreg.estimators.ftrl_factorizations.MatrixFactorization` or
      :class:`~dpreg.estimators.ftrl_factorizations.FFTFactorization` built for
      :math:`T`: its ``multi_participation_sensitivity_sq(E, S, schema="fixed_epoch")``.

    ``epochs = 1`` is the single-participation :math:`\gamma_T^2` (Theorem 1.1).

    Parameters
    ----------
    correlation : ToeplitzCorrelation, MatrixFactorization or FFTFactorization
    steps_per_epoch : int
        :math:`S = \lfloor n / \text{batch size}\rfloor`, the separation of a row's
        participations.
    epochs : int
        :math:`E`, the participations of each row.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        For a factorization whose horizon is not :math:`ES`, or a Toeplitz encoder with
        negative entries beyond the brute-force horizon.

    Examples
    --------
    >>> from dpreg.estimators.ftrl_correlations import independent, nu_ftrl
    >>> multi_epoch_sensitivity_sq(independent(), 100, 3)  # DP-SGD: k participations
    3.0
    >>> single = nu_ftrl(0.05).sensitivity_sq(300)
    >>> single < multi_epoch_sensitivity_sq(nu_ftrl(0.05), 100, 3) < 9 * single
    True
    """
    b = check_trials(steps_per_epoch, name="steps_per_epoch")
    epochs = _check_epochs(epochs)
    T = epochs * b
    if isinstance(correlation, _Factorization):
        if correlation.T != T:
            raise ValueError(
                f"the factorization has horizon T={correlation.T} but epochs={epochs} passes"
                f" of {b} steps take {T} steps; build it for T={T}"
            )
        if epochs == 1:
            return float(correlation.sensitivity_sq)
        return float(
            correlation.multi_participation_sensitivity_sq(epochs, b, schema="fixed_epoch")
        )
    if not isinstance(correlation, ToeplitzCorrelation):
        raise TypeError(
            "correlation must be a ToeplitzCorrelation, MatrixFactorization or"
            f" FFTFactorization; got {correlation!r}"
        )
    if epochs == 1:
        return correlation.sensitivity_sq(T)
    c = correlation.encoder(T)
    if np.any(c < 0) and T > _BRUTE_FORCE_STEPS:
        raise ValueError(
            f"epochs={epochs}: the encoder of {correlation.label()} has negative entries, so"
            f" its multi-epoch sensitivity needs the brute force over participation patterns,"
            f" limited to T <= {_BRUTE_FORCE_STEPS} steps (here T = {T}); use fewer epochs,"
            " a larger batch_size or a correlation with a non-negative encoder"
        )
    return multi_participation_sensitivity_sq(c, epochs, b, schema="fixed_epoch")


def resolve_correlation(
    correlation: ToeplitzCorrelation | _Factorization | str,
    nu: float | None = None,
    eta: float | None = None,
) -> ToeplitzCorrelation | _Factorization:
    """Return a correlation object from an object or a name of :data:`CORRELATIONS`.

    Parameters
    ----------
    correlation : ToeplitzCorrelation, MatrixFactorization, FFTFactorization or str
        Returned as is if an object; a name is built by
        :func:`~dpreg.estimators.ftrl_correlations.correlation_from_name`.
    nu, eta : float, optional
        The damping (``"nu_ftrl"``, ``"damped_anti_pgd"``) and the learning rate
        (``"optimal_mean_estimation"``).

    Returns
    -------
    ToeplitzCorrelation or MatrixFactorization or FFTFactorization

    Examples
    --------
    >>> resolve_correlation("nu_ftrl", nu=0.1).label()
    'nu_ftrl (nu=0.1)'
    """
    return _resolve_correlation(correlation, nu, eta)


def check_epochs(epochs: object) -> int:
    """Return ``epochs`` as an int after checking it is an integer >= 1 (named in the error).

    Examples
    --------
    >>> check_epochs(3)
    3
    """
    return _check_epochs(epochs)


def stream_calibration(
    corr: ToeplitzCorrelation | _Factorization,
    *,
    steps_per_epoch: int,
    epochs: int,
    sensitivity: str,
    budget: ZCDP | ApproxDP | None,
    noise_multiplier: float | None,
    method: str,
    conversion: str,
    neighbours: str,
    allow_zero_noise: bool = False,
) -> tuple[float, float]:
    r"""Sensitivity :math:`\gamma^2` and noise multiplier :math:`\sigma_{dp}` of a DP-FTRL stream.

    The stream takes :math:`T = ES` steps (``epochs`` :math:`E` passes of
    ``steps_per_epoch`` :math:`S` steps in one fixed order). :math:`\gamma^2` is
    :func:`multi_epoch_sensitivity_sq` (the fixed-epoch multi-participation sensitivity;
    :math:`\gamma_T^2` of Theorem 1.1 for :math:`E = 1`, or :math:`\gamma_\infty^2` with
    ``sensitivity="infinite"``), and :math:`\sigma_{dp}` is
    :func:`~dpreg.privacy.correlated.ftrl_noise_multiplier` of ``budget`` at that
    sensitivity, or ``noise_multiplier`` as given (then ``budget`` must be ``None``).
    Shared by :func:`fit_dp_ftrl` and the other trainers on the same stream
    (:mod:`dpreg.estimators.ftrl_logistic`).

    Parameters
    ----------
    corr : ToeplitzCorrelation, MatrixFactorization or FFTFactorization
        A factorization must be built for :math:`T = ES`.
    steps_per_epoch, epochs : int
    sensitivity : {"finite", "infinite"}
    budget : ZCDP or ApproxDP or None
    noise_multiplier : float or None
    method, conversion, neighbours : str
        See :func:`~dpreg.privacy.correlated.ftrl_noise_multiplier`.
    allow_zero_noise : bool
        Accept ``noise_multiplier=0`` (no noise: a non-private run).

    Returns
    -------
    (float, float)
        :math:`(\gamma^2, \sigma_{dp})`.

    Examples
    --------
    >>> from dpreg import ZCDP
    >>> from dpreg.estimators.ftrl_correlations import independent
    >>> stream_calibration(independent(), steps_per_epoch=10, epochs=2, sensitivity="finite",
    ...     budget=ZCDP(1.0), noise_multiplier=None, method="zcdp", conversion="tight",
    ...     neighbours="zero_out")
    (2.0, 1.0)
    """
    T = epochs * steps_per_epoch
    if isinstance(corr, _Factorization):
        if corr.T != T:
            raise ValueError(
                f"the factorization has horizon T={corr.T} but epochs={epochs} passes of"
                f" n // batch_size = {steps_per_epoch} steps take {T}; build it for T={T}"
            )
        if sensitivity != "finite":
            raise ValueError("a matrix factorization has a finite horizon: sensitivity='finite'")
        gamma_sq = multi_epoch_sensitivity_sq(corr, steps_per_epoch, epochs)
    elif epochs > 1:
        gamma_sq = multi_epoch_sensitivity_sq(corr, steps_per_epoch, epochs)
    else:
        gamma_sq = corr.sensitivity_sq(T) if sensitivity == "finite" else corr.gamma_inf_sq
    if math.isinf(gamma_sq):
        raise ValueError(
            f"correlation {corr.name} has infinite gamma_inf; use sensitivity='finite'"
        )
    gamma = math.sqrt(gamma_sq)
    if noise_multiplier is not None:
        if budget is not None:
            raise ValueError("give either budget or noise_multiplier, not both")
        if allow_zero_noise and noise_multiplier == 0:
            return gamma_sq, 0.0
        sigma_dp = check_positive(noise_multiplier, "noise_multiplier")
    else:
        if budget is None:
            raise ValueError("budget is required (or pass noise_multiplier)")
        check_budget(budget)
        sigma_dp = ftrl_noise_multiplier(
            budget, gamma, method=method, conversion=conversion, neighbours=neighbours
        )
    return gamma_sq, sigma_dp


def stream_noise(
    corr: ToeplitzCorrelation | _Factorization, T: int, columns: int, rng: np.random.Generator
) -> np.ndarray:
    r"""Correlated noise :math:`Bz` of unit scale for ``T`` steps and ``columns`` coordinates.

    Toeplitz :math:`B`: :math:`z \sim \mathcal N(0, I)` of shape ``(T, columns)``
    convolved with :math:`\beta` (:func:`correlated_noise`); a factorization: its own
    ``noise``. Multiply by :math:`\sigma_{dp}G` (and divide by the batch size for a mean
    gradient) to get the noise of Algorithm 1.

    Returns
    -------
    ndarray, shape (T, columns)

    Examples
    --------
    >>> import numpy as np
    >>> from dpreg.estimators.ftrl_correlations import independent
    >>> stream_noise(independent(), 4, 3, np.random.default_rng(0)).shape
    (4, 3)
    """
    if isinstance(corr, _Factorization):
        return corr.noise(rng, columns)
    w = unit_normals(rng, (T, columns))
    return correlated_noise(corr.coefficients(T), w, out=w)


def stream_certificate(
    sigma_dp: float,
    gamma: float,
    budget: ZCDP | ApproxDP | None,
    *,
    private: bool,
    method: str,
    conversion: str,
    neighbours: str,
) -> tuple[ZCDP | ApproxDP | None, float, float]:
    r"""Return the budget certified by the noise actually added: ``(spent, rho, epsilon)``.

    :math:`\rho = \gamma^2/(2\sigma_{dp}^2)`
    (:func:`~dpreg.privacy.correlated.ftrl_zcdp`) and, for an :class:`ApproxDP` request,
    the :math:`\varepsilon` at its :math:`\delta`
    (:func:`~dpreg.privacy.correlated.ftrl_epsilon`); recomputed from ``sigma_dp``,
    never echoed from the request. ``private=False`` (no clipping or no noise): ``None``,
    ``inf``, ``nan``.

    Examples
    --------
    >>> from dpreg import ZCDP
    >>> stream_certificate(1.0, 2.0, ZCDP(2.0), private=True, method="zcdp",
    ...     conversion="tight", neighbours="zero_out")
    (ZCDP(rho=2.0), 2.0, nan)
    """
    rho_certified = ftrl_zcdp(sigma_dp, gamma, neighbours).rho if private else math.inf
    epsilon_certified = math.nan
    if private and isinstance(budget, ApproxDP):
        epsilon_certified = ftrl_epsilon(
            sigma_dp,
            gamma,
            budget.delta,
            method=method,
            conversion=conversion,
            neighbours=neighbours,
        ).epsilon
    if not private:
        spent = None
    elif isinstance(budget, ApproxDP):
        # a certificate of 0 means (0, delta)-DP, which implies the requested (eps, delta)
        spent = ApproxDP(
            epsilon_certified if epsilon_certified > 0 else budget.epsilon, budget.delta
        )
    else:
        spent = ZCDP(rho_certified)
    return spent, rho_certified, epsilon_certified


def _data_steps_reference(
    X: np.ndarray,
    y: np.ndarray,
    order: np.ndarray,
    theta: np.ndarray,
    *,
    epochs: int,
    eta: float,
    clip: float,
    ridge: float,
    noise: np.ndarray | None,
    path: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray]:
    """Run the steps of :func:`fit_dp_ftrl` one at a time (the simple reference path).

    ``order`` (trials, steps per epoch, b) holds each trial's rows; returns the last
    iterate (trials, d) and the count of clipped row-steps per trial.
    """
    trials, steps_per_epoch, batch_size = order.shape
    clipped = np.zeros(trials)
    for t in range(epochs * steps_per_epoch):
        idx = order[:, t % steps_per_epoch, :]
        Xb = X[idx]  # (trials, b, d)
        resid = np.einsum("tbd,td->tb", Xb, theta) - y[idx]
        if not math.isinf(clip):
            norms = np.abs(resid) * np.linalg.norm(Xb, axis=2)
            clipped += np.count_nonzero(norms > clip, axis=1)
            resid = resid * (clip / np.maximum(norms, clip))
        grad = np.einsum("tbd,tb->td", Xb, resid) / batch_size
        if ridge > 0:
            grad += ridge * theta
        if noise is not None:
            grad += noise[t]
        theta = theta - eta * grad
        if path is not None:
            path[:, t] = theta
    return theta, clipped


def _data_steps(
    X: np.ndarray,
    y: np.ndarray,
    order: np.ndarray,
    theta: np.ndarray,
    *,
    epochs: int,
    eta: float,
    clip: float,
    ridge: float,
    noise: np.ndarray | None,
    path: np.ndarray | None,
    gather_elements: int = _GATHER_ELEMENTS,
) -> tuple[np.ndarray, np.ndarray]:
    r""":func:`_data_steps_reference` with the batches gathered many steps at a time.

    The same arithmetic on the same arrays (bit for bit, tested): the rows of up to
    ``gather_elements`` / (trials b d) steps are gathered at once into a
    (steps, trials, b, d) array, whose step slices are the contiguous (trials, b, d)
    batches of the reference, and the row norms :math:`\|x_i\|` are computed once
    per row instead of once per row-step (the same reduction over the same d values).
    """
    trials, steps_per_epoch, batch_size = order.shape
    d = X.shape[1]
    # rows contiguous (a prepared table's X is column-major): faster gathers, and the
    # norms reduce over contiguous rows as on the reference's gathered batches
    X = np.ascontiguousarray(X)
    clipped = np.zeros(trials)
    finite = not math.isinf(clip)
    row_norms = np.linalg.norm(X, axis=1) if finite else None
    by_step = np.ascontiguousarray(order.transpose(1, 0, 2))  # (steps, trials, b)
    block = max(1, min(steps_per_epoch, gather_elements // max(1, trials * batch_size * d)))
    t = 0
    for _ in range(epochs):
        for start in range(0, steps_per_epoch, block):
            idx = by_step[start : start + block]
            # np.take: the same rows as X[idx], 2-4x faster at these sizes (issue 18)
            X_block = np.take(X, idx, axis=0)  # (k, trials, b, d)
            y_block = np.take(y, idx)  # (k, trials, b)
            n_block = np.take(row_norms, idx) if finite else None
            for k in range(idx.shape[0]):
                Xb = X_block[k]
                resid = np.einsum("tbd,td->tb", Xb, theta) - y_block[k]
                if finite:
                    norms = np.abs(resid) * n_block[k]
                    clipped += np.count_nonzero(norms > clip, axis=1)
                    resid = resid * (clip / np.maximum(norms, clip))
                grad = np.einsum("tbd,tb->td", Xb, resid) / batch_size
                if ridge > 0:
                    grad += ridge * theta
                if noise is not None:
                    grad += noise[t]
                theta = theta - eta * grad
                if path is not None:
                    path[:, t] = theta
                t += 1
    return theta, clipped


def fit_dp_ftrl(
    X: np.ndarray,
    y: np.ndarray,
    *,
    budget: ZCDP | ApproxDP | None,
    rng: np.random.Generator,
    trials: int = 1,
    eta: float,
    clip: float,
    correlation: ToeplitzCorrelation | _Factorization | str = "nu_ftrl",
    nu: float | None = None,
    batch_size: int = 1,
    ridge: float = 0.0,
    theta0: np.ndarray | None = None,
    sensitivity: str = "finite",
    method: str = "zcdp",
    conversion: str = DEFAULT_CONVERSION,
    neighbours: str = "zero_out",
    noise_multiplier: float | None = None,
    return_path: bool = False,
    shuffle: bool = True,
    bound_X: float | None = None,
    bound_y: float | None = None,
    epochs: int = 1,
    kernel: str = "auto",
) -> Fit:
    r"""DP-FTRL (Algorithm 1) for least squares on a dataset: one or several passes.

    Each trial shuffles the rows (its own permutation), then takes
    :math:`T = E\lfloor n / b\rfloor` steps with batches of ``batch_size`` rows: ``epochs``
    :math:`= E` passes over the rows in that one order, each row used once per pass
    (:math:`E = 1`, the default: single participation, as Theorem 1.1 requires):

    .. math::

        g_t = \frac1b\sum_{i\in\text{batch}_t}\mathrm{clip}\big(x_i(x_i^\top\theta_t -
        y_i), G\big) + \lambda\theta_t,\qquad
        \theta_{t+1} = \theta_t - \eta\Big(g_t + \frac{1}{b}\sum_{\tau\le t}\beta_\tau
        w_{t-\tau}\Big),

    :math:`w_\tau \sim \mathcal N(0, \sigma_{dp}^2G^2 I_d)`. The ridge term
    :math:`\lambda\theta` (the regulariser :math:`r`) is not clipped (Alg. 1).

    Privacy: the released iterates are post-processing of the Gaussian mechanism
    :math:`C(\sum_{i\in\text{batch}_t}\mathrm{clip}(\cdot))_t + w` whose sensitivity
    under zero-out neighbours is :math:`G\gamma_T` (one row changes one batch sum by at
    most :math:`G`), so :math:`\sigma_{dp} = \gamma_T/\sqrt{2\rho}` gives
    :math:`\rho`-zCDP (Theorem 1.1). ``clip=inf`` is Noisy-FTRL: not private,
    ``budget_spent=None``.

    Several epochs (not in the paper; docs/notes/choquettechoo2023.md §2.5 item 3): the
    order is drawn once, before the first epoch, and kept, so the row in batch :math:`i`
    of epoch 0 is in batches :math:`i + j\lfloor n/b\rfloor`, :math:`j < E`: the
    ``"fixed_epoch"`` participation schema with :math:`k = E` participations
    :math:`\lfloor n/b\rfloor` steps apart, whose worst case over the rows' positions and
    gradient directions replaces :math:`\gamma_T^2`
    (:func:`multi_epoch_sensitivity_sq`). The rows are *not* reshuffled between epochs:
    with a fresh order a row could sit in the last batch of one epoch and the first of
    the next (participations one step apart), which this sensitivity does not cover.

    Parameters
    ----------
    X : array_like, shape (n, d)
    y : array_like, shape (n,)
    budget : ZCDP or ApproxDP or None
        Target guarantee per trial; ``None`` with ``noise_multiplier`` given instead.
    rng : numpy.random.Generator
    trials : int
        Independent runs (own shuffle and noise), vectorised.
    eta : float
        Learning rate.
    clip : float
        Per-example gradient clip norm :math:`G` (``inf``: no clipping, Noisy-FTRL).
    correlation : ToeplitzCorrelation, MatrixFactorization or str
        ``"nu_ftrl"`` (default; needs ``nu``), ``"sgd"`` (DP-SGD), ``"optimal_cc"``,
        ``"anti_pgd"``, ``"damped_anti_pgd"`` (needs ``nu``),
        ``"optimal_mean_estimation"`` (uses ``eta``), a Toeplitz object, or any
        :class:`~dpreg.estimators.ftrl_factorizations.MatrixFactorization` or
        :class:`~dpreg.estimators.ftrl_factorizations.FFTFactorization` built for
        :math:`T = E\lfloor n/b\rfloor` (tree aggregation, Full Honaker, FFT, the
        optimal factorization of Table 3, the multi-participation ME of
        :func:`~dpreg.estimators.ftrl_factorizations.optimal_multi_participation_factorization`
        with ``schema="fixed_epoch"``; noise :math:`Bz`, sensitivity its largest encoder
        column norm, or its fixed-epoch multi-participation sensitivity for :math:`E > 1`).
    nu : float, optional
        Damping of ν-FTRL / damped anti-PGD; theory uses :math:`\nu = \eta\mu`
        (not estimable privately, so it is a required public input).
    batch_size : int
        Rows per step :math:`b`; :math:`\lfloor n/b\rfloor` steps per epoch (the last
        :math:`n \bmod b` rows of the order are not used).
    ridge : float
        :math:`\lambda \ge 0` of :math:`r(\theta) = \frac\lambda2\|\theta\|^2`.
    theta0 : array_like, shape (d,), optional
        Initial iterate (default 0).
    sensitivity : {"finite", "infinite"}
        :math:`\gamma_T` (default, exact for this horizon) or :math:`\gamma_\infty`
        (anytime; conservative; single participation only, so ``epochs=1``).
    method, conversion : str
        Calibration of an :class:`ApproxDP` budget, see
        :func:`dpreg.privacy.correlated.ftrl_noise_multiplier`.
    neighbours : {"zero_out", "replace_one"}
        Neighbouring relation of the guarantee (replace-one doubles the noise).
    noise_multiplier : float, optional
        Use this :math:`\sigma_{dp}` instead of calibrating (then ``budget`` must be
        ``None``; the certified budget is reported as zCDP).
    return_path : bool
        Keep every iterate in ``Fit.path`` (trials, T, d).
    shuffle : bool, default True
        Shuffle the rows per trial, once, before the first epoch (``False``: the rows'
        own order, e.g. a stream in arrival order). Every epoch uses the same order. The
        guarantee does not rely on the shuffle (the sensitivity is the worst case over
        positions), so both are covered by ``budget_spent``; the audit uses ``False`` to
        place a canary at the worst position.
    bound_X, bound_y : float or None, default None
        Public data bounds (``max ||x_i|| <= bound_X``, ``max |y_i| <= bound_y``),
        accepted like every other estimator's and checked against the data (never
        clipped); the mechanism is set by ``clip``, so they change nothing else.
        ``None``: no bound declared.
    epochs : int, default 1
        Passes :math:`E \ge 1` over the rows (a public input), each row participating
        :math:`E` times, :math:`\lfloor n/b\rfloor` steps apart. At most
        :data:`MAX_STEPS` steps in all.
    kernel : {"auto", "numba", "numpy", "numpy_compiled"}, default "auto"
        The step loop (:data:`FTRL_KERNELS`): ``"numpy"`` the reference, ``"numba"``
        the compiled loop (:mod:`dpreg.estimators.ftrl_kernel`; same draws, iterates
        equal to the reference's up to the order of floating-point additions),
        ``"numpy_compiled"`` the reference's arithmetic compiled
        (:mod:`dpreg.estimators.ftrl_numpy_order`; the reference's bits, or the
        reference itself where it cannot vouch for them, e.g. ``d = 1``), ``"auto"``
        ``"numba"`` when trials x T x ``batch_size`` reaches
        :data:`KERNEL_AUTO_MIN_ROWS` or T reaches :data:`KERNEL_AUTO_MIN_STEPS`, else
        ``"numpy_compiled"``.

    Returns
    -------
    Fit
        ``theta`` (trials, d); ``budget_spent`` (ZCDP or ApproxDP as requested,
        ``None`` without clipping), computed from the noise multiplier actually used and
        the correlation's sensitivity (:func:`~dpreg.privacy.correlated.ftrl_zcdp`,
        :func:`~dpreg.privacy.correlated.ftrl_epsilon`), so it is at most the request;
        diagnostics ``noise_multiplier``, ``sensitivity_sq`` (:math:`\gamma^2` of the
        participation schema), ``steps`` (:math:`T`), ``epochs``, ``participations``
        (:math:`k = E`), ``separation`` (:math:`\lfloor n/b\rfloor`),
        ``participation_schema`` (``"fixed_epoch"``), ``correlation``, ``nu``,
        ``rho_certified``; non-private ``clip_fraction`` (trials,) over all
        :math:`Tb` row-steps.

    Raises
    ------
    ValueError
        For bad input, named before any work: e.g. ``epochs`` not an integer >= 1, or
        :math:`T > ` :data:`MAX_STEPS`.

    Examples
    --------
    >>> import numpy as np
    >>> from dpreg import ZCDP
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(500, 3)) / 3
    >>> y = X @ np.array([0.5, -0.3, 0.2])
    >>> fit = fit_dp_ftrl(X, y, budget=ZCDP(1.0), rng=rng, trials=2, eta=0.1, clip=1.0, nu=0.1)
    >>> fit.theta.shape
    (2, 3)
    >>> three = fit_dp_ftrl(X, y, budget=ZCDP(1.0), rng=rng, eta=0.1, clip=1.0, nu=0.1, epochs=3)
    >>> three.diagnostics["steps"], three.diagnostics["participations"]
    (1500, 3)
    """
    X, y = check_regression(X, y, require_full_rank=False)
    check_optional_bounds(X, y, bound_X, bound_y)
    n, d = X.shape
    epochs = _check_epochs(epochs)
    batch_size = check_trials(batch_size, name="batch_size") if batch_size is not None else 1
    if batch_size > n:
        raise ValueError(f"batch_size={batch_size} exceeds the number of rows n={n}")
    steps_per_epoch = n // batch_size
    T = epochs * steps_per_epoch
    if T > MAX_STEPS:
        raise ValueError(
            f"epochs={epochs} passes of n // batch_size = {steps_per_epoch} steps make"
            f" T = {T} steps, more than MAX_STEPS = {MAX_STEPS}; use fewer epochs or a"
            " larger batch_size"
        )
    # noise, path (T d each), order (n)
    trials = check_trials(trials, bytes_per_trial=8 * (2 * epochs * n * d + n))
    check_rng(rng)
    eta = check_positive(eta, "eta")
    clip = check_positive(clip, "clip", allow_inf=True)
    corr = _resolve_correlation(correlation, nu, eta)
    if not (ridge >= 0) or math.isinf(ridge):
        raise ValueError(f"ridge must be a finite number >= 0; got {ridge!r}")
    check_choice(sensitivity, "sensitivity", SENSITIVITIES)
    check_choice(method, "method", CALIBRATIONS)
    check_choice(conversion, "conversion", CONVERSIONS)
    check_choice(neighbours, "neighbours", NEIGHBOURS)
    check_choice(kernel, "kernel", FTRL_KERNELS)
    if not isinstance(shuffle, bool | np.bool_):
        raise TypeError(f"shuffle must be True or False; got {shuffle!r}")
    if epochs > 1 and sensitivity != "finite":
        raise ValueError(
            f"epochs={epochs}: sensitivity='infinite' (gamma_inf) is a single-participation"
            " guarantee; several epochs are calibrated with sensitivity='finite'"
        )
    gamma_sq, sigma_dp = stream_calibration(
        corr,
        steps_per_epoch=steps_per_epoch,
        epochs=epochs,
        sensitivity=sensitivity,
        budget=budget,
        noise_multiplier=noise_multiplier,
        method=method,
        conversion=conversion,
        neighbours=neighbours,
    )
    gamma = math.sqrt(gamma_sq)
    theta = np.zeros((trials, d))
    if theta0 is not None:
        t0 = np.asarray(theta0, dtype=np.float64).ravel()
        if t0.shape != (d,) or not np.all(np.isfinite(t0)):
            raise ValueError(f"theta0 must be a finite vector of length d={d}")
        theta[:] = t0
    # Noisy-FTRL (clip = inf) keeps the paper's noise scale sigma_dp * G with G = 1.
    noise_std = sigma_dp * (1.0 if math.isinf(clip) else clip) / batch_size
    if noise_std > 0:
        noise = stream_noise(corr, T, trials * d, rng).reshape(T, trials, d)
        noise *= noise_std
    else:
        noise = None
    # one order for every epoch (drawn once): the fixed-epoch schema of the sensitivity
    used = steps_per_epoch * batch_size
    if shuffle:
        # argsort(rng.random((trials, n))): the same permutations and rng state
        order = uniform_key_permutations(rng, trials, n)[:, :used]
    else:
        order = np.broadcast_to(np.arange(used), (trials, used))
    order = order.reshape(trials, steps_per_epoch, batch_size)
    path = np.empty((trials, T, d)) if return_path else None
    if kernel == "auto":
        large = trials * T * batch_size >= KERNEL_AUTO_MIN_ROWS or T >= KERNEL_AUTO_MIN_STEPS
        kernel = "numba" if large else "numpy_compiled"
    step_args = dict(epochs=epochs, eta=eta, clip=clip, ridge=ridge, noise=noise, path=path)
    result = None
    if kernel == "numpy_compiled":
        from dpreg.estimators.ftrl_numpy_order import data_steps_numpy_order

        result = data_steps_numpy_order(X, y, order, theta, reference=_data_steps, **step_args)
    if result is None:
        steps = data_steps_compiled if kernel == "numba" else _data_steps
        result = steps(X, y, order, theta, **step_args)
    theta, clipped = result
    private = not math.isinf(clip) and sigma_dp > 0
    spent, rho_certified, epsilon_certified = stream_certificate(
        sigma_dp,
        gamma,
        budget,
        private=private,
        method=method,
        conversion=conversion,
        neighbours=neighbours,
    )
    diagnostics: dict[str, Any] = {
        "noise_multiplier": sigma_dp,
        "sensitivity_sq": gamma_sq,
        "sensitivity": sensitivity,
        "steps": T,
        "epochs": epochs,
        "participations": epochs,
        "separation": steps_per_epoch,
        "participation_schema": "fixed_epoch",
        "batch_size": batch_size,
        "correlation": corr.name,
        "nu": getattr(corr, "nu", math.nan),
        "clip": clip,
        "clip_fraction": clipped / (T * batch_size),
        "rho_certified": rho_certified,
        "neighbours": neighbours,
    }
    if private and isinstance(budget, ApproxDP):
        diagnostics["epsilon_certified"] = epsilon_certified
    return Fit(
        theta=theta, budget_spent=spent, estimator="dp_ftrl", path=path, diagnostics=diagnostics
    )


def fit_dp_sgd_stream(
    X: np.ndarray,
    y: np.ndarray,
    *,
    budget: ZCDP | ApproxDP | None,
    rng: np.random.Generator,
    trials: int = 1,
    **hyper: Any,
) -> Fit:
    r"""DP-SGD on a dataset (one pass or ``epochs``): :func:`fit_dp_ftrl` with B = I.

    Every keyword of :func:`fit_dp_ftrl` but ``correlation`` is forwarded, ``epochs``
    included: :math:`E` passes in one fixed order have sensitivity :math:`\sqrt E`
    (each row's :math:`E` clipped gradients, independent noise).

    Examples
    --------
    >>> import numpy as np
    >>> from dpreg import ZCDP
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(500, 3)) / 3
    >>> y = X @ np.array([0.5, -0.3, 0.2])
    >>> fit = fit_dp_sgd_stream(X, y, budget=ZCDP(1.0), rng=rng, trials=2, eta=0.1, clip=1.0)
    >>> fit.theta.shape
    (2, 3)
    """
    if "correlation" in hyper:
        raise ValueError("dp_sgd_stream fixes correlation='sgd'; use dp_ftrl to choose one")
    fit = fit_dp_ftrl(
        X, y, budget=budget, rng=rng, trials=trials, correlation=independent(), **hyper
    )
    return Fit(
        theta=fit.theta,
        budget_spent=fit.budget_spent,
        estimator="dp_sgd_stream",
        path=fit.path,
        diagnostics=fit.diagnostics,
        nonprivate_diagnostics=fit.nonprivate_diagnostics,
    )
