r"""AdaSSP: adaptive sufficient-statistics perturbation (Wang 2018; Lev et al. 2026, Alg. 6).

The estimator privately releases three statistics of the data -- the smallest
eigenvalue of ``X'X``, the Gram matrix ``X'X`` and the moment vector ``X'y`` -- each
with the Gaussian mechanism at ``(epsilon/3, delta/3)``, and returns a ridge solution
built from the noisy statistics, whose ridge is chosen from the noisy eigenvalue.

The module is layered as the project's conventions ask:

* :func:`adassp_sensitivities` -- the L2 sensitivities of the three releases;
* :func:`adassp_noise_scales` -- the Gaussian noise scale of each release;
* :func:`release_sufficient_statistics` -- the three Gaussian releases (the only
  step that touches private data), vectorised over trials;
* :func:`adassp_release` -- the releases and the ridge solution from the statistics
  :math:`X^\top X`, :math:`X^\top y` (shared with the streamed path of
  :mod:`dpreg.estimators.adassp_stream`);
* :func:`fit_adassp` -- the validated public estimator (registry name ``"adassp"``).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpreg._validation import (
    check_choice,
    check_positive,
    check_probability,
)
from dpreg.data.normal_kernel import standard_normals
from dpreg.estimators._gram_cache import bounded_design_gram
from dpreg.estimators._linalg import solve_symmetric_batch, symmetric_from_upper
from dpreg.privacy.budgets import ApproxDP, check_approx_dp_budget, check_budget
from dpreg.privacy.gaussian import (
    analytic_gaussian_sigma,
    gaussian_delta,
    gaussian_epsilon,
    gaussian_zcdp,
)
from dpreg.results import Fit

MECHANISMS = ("analytic", "classic")
SHIFTS = ("paper", "code")

__all__ = [
    "MECHANISMS",
    "SHIFTS",
    "NoisyStatistics",
    "adassp_noise_scales",
    "adassp_release",
    "adassp_sensitivities",
    "check_adassp_options",
    "fit_adassp",
    "release_sufficient_statistics",
]


def adassp_sensitivities(bound_X: float, bound_y: float) -> tuple[float, float, float]:
    r"""L2 sensitivities of the three AdaSSP releases under zero-out neighbours.

    Parameters
    ----------
    bound_X : float
        Public bound :math:`C_X \ge \max_i \|x_i\|_2`.
    bound_y : float
        Public bound :math:`C_Y \ge \max_i |y_i|`.

    Returns
    -------
    (float, float, float)
        Sensitivities of :math:`\lambda_{\min}(X^\top X)`, of :math:`X^\top X` (as the
        vector of its upper triangle, diagonal included, or in Frobenius norm) and of
        :math:`X^\top y`: ``(C_X**2, C_X**2, C_X * C_Y)``.

    Notes
    -----
    Let :math:`(X', y')` equal :math:`(X, y)` with row :math:`i` replaced by zeros
    (zero-out neighbours, Lev et al. 2026, §2; add/remove-one neighbours give the same
    differences since the statistics are sums over rows). Then

    .. math::

        \|X^\top X - X'^\top X'\|_F = \|x_i x_i^\top\|_F = \|x_i\|_2^2 \le C_X^2,
        \qquad
        \|X^\top y - X'^\top y'\|_2 = |y_i|\,\|x_i\|_2 \le C_X C_Y,

    the upper triangle of :math:`x_i x_i^\top` has L2 norm at most its Frobenius norm,
    and by Weyl's inequality
    :math:`0 \le \lambda_{\min}(X'^\top X' + x_i x_i^\top) - \lambda_{\min}(X'^\top X')
    \le \|x_i\|_2^2 \le C_X^2`.
    """
    c_x = check_positive(bound_X, "bound_X")
    c_y = check_positive(bound_y, "bound_y")
    return c_x * c_x, c_x * c_x, c_x * c_y


def adassp_noise_scales(
    budget: ApproxDP, bound_X: float, bound_y: float, mechanism: str = "analytic"
) -> tuple[float, float, float]:
    r"""Gaussian noise scales of the three AdaSSP releases, each at ``(epsilon/3, delta/3)``.

    Parameters
    ----------
    budget : ApproxDP
        Total budget :math:`(\varepsilon, \delta)` of one AdaSSP run.
    bound_X, bound_y : float
        Public data bounds :math:`C_X`, :math:`C_Y`.
    mechanism : {"analytic", "classic"}
        ``"analytic"``: the analytic Gaussian mechanism (Balle & Wang 2018, Alg. 1) at
        :math:`(\varepsilon/3, \delta/3)`, as in Lev et al.'s experiments (App. H).
        ``"classic"``: Lev et al.'s Algorithm 6 as printed,
        :math:`\sigma = \sqrt{2\log(6/\delta)}\,\Delta / (\varepsilon/3)`.

    Returns
    -------
    (float, float, float)
        ``(sigma_lambda_min, sigma_xtx, sigma_xty)``; all zero when
        ``budget.epsilon`` is infinite (the noiseless limit).

    Raises
    ------
    ValueError
        If ``mechanism="classic"`` does not certify :math:`(\varepsilon/3, \delta/3)`
        for each release, which happens for large :math:`\varepsilon` (see Notes).

    Notes
    -----
    The classic Gaussian mechanism at :math:`(\varepsilon', \delta')` (Dwork & Roth
    2014, Thm A.1, proved for :math:`\varepsilon' < 1`) uses
    :math:`\sqrt{2\log(1.25/\delta')}\,\Delta/\varepsilon'`; at :math:`\delta' = \delta/3`
    this is :math:`\sqrt{2\log(3.75/\delta)}`, *not* the printed
    :math:`\sqrt{2\log(6/\delta)} = \sqrt{2\log(2/\delta')}`. The printed constant is
    Wang's (2018) :math:`\sqrt{\log(6/\delta)}` times the :math:`\sqrt 2` Lev et al. add
    (App. G), and is the larger of the two (by 1.5% at :math:`\delta = 10^{-6}`).
    Because Thm A.1 needs :math:`\varepsilon' < 1`, the printed calibration is checked
    against the exact Gaussian privacy profile (Balle & Wang 2018, Thm 8): at
    :math:`\delta = 10^{-6}` it certifies :math:`(\varepsilon/3, \delta/3)` only up to
    :math:`\varepsilon \approx 29.6`; beyond that it would under-noise and is refused.
    """
    check_budget(budget, ApproxDP)
    check_choice(mechanism, "mechanism", MECHANISMS)
    sens = adassp_sensitivities(bound_X, bound_y)
    if budget.is_infinite:
        return 0.0, 0.0, 0.0
    eps_r, delta_r = budget.epsilon / 3.0, budget.delta / 3.0
    if mechanism == "analytic":
        scales = tuple(_agm_sigma(eps_r, delta_r, s) for s in sens)
        return scales  # type: ignore[return-value]
    factor = math.sqrt(2.0 * math.log(6.0 / budget.delta)) / eps_r
    scales = tuple(factor * s for s in sens)
    # sigma / sensitivity is the same for all three releases, so one profile check suffices.
    exact = float(gaussian_delta(scales[0], eps_r, sens[0]))
    if exact > delta_r * (1.0 + 1e-9):
        raise ValueError(
            f"mechanism='classic' (Lev et al. Algorithm 6 as printed) does not give"
            f" (epsilon/3, delta/3)-DP at epsilon={budget.epsilon:g}, delta={budget.delta:g}:"
            f" the exact delta of each release is {exact:.3g} > delta/3={delta_r:.3g}"
            " (the classic Gaussian calibration needs epsilon/3 < 1 in general);"
            " use mechanism='analytic'"
        )
    return scales  # type: ignore[return-value]


@dataclass(frozen=True)
class NoisyStatistics:
    r"""The three Gaussian releases of AdaSSP, one per trial.

    Attributes
    ----------
    lambda_min : ndarray, shape (trials,)
        :math:`\lambda_{\min}(X^\top X) + \sigma_1 z` (before the downward shift and
        the clamp at zero, which are post-processing).
    xtx : ndarray, shape (trials, d, d)
        :math:`X^\top X + \sigma_1 \xi`, exactly symmetric.
    xty : ndarray, shape (trials, d)
        :math:`X^\top y + \sigma_2 \zeta`.
    """

    lambda_min: np.ndarray
    xtx: np.ndarray
    xty: np.ndarray


def release_sufficient_statistics(
    xtx: np.ndarray,
    xty: np.ndarray,
    lambda_min: float,
    *,
    sigma_lambda_min: float,
    sigma_xtx: float,
    sigma_xty: float,
    rng: np.random.Generator,
    trials: int = 1,
) -> NoisyStatistics:
    r"""Release noisy ``lambda_min``, ``X'X`` and ``X'y`` for every trial (Alg. 6, lines 3, 5, 6).

    Pure numerical core, no validation: ``xtx`` must be exactly symmetric.

    Parameters
    ----------
    xtx : ndarray, shape (d, d)
        :math:`X^\top X` (symmetric).
    xty : ndarray, shape (d,)
        :math:`X^\top y`.
    lambda_min : float
        :math:`\lambda_{\min}(X^\top X)`.
    sigma_lambda_min, sigma_xtx, sigma_xty : float
        Gaussian noise standard deviations.
    rng : numpy.random.Generator
        Source of noise. Draw order: ``z`` (trials,), then the upper triangles of
        ``xi`` (trials, d(d+1)/2) in ``numpy.triu_indices`` order, then ``zeta``
        (trials, d).
    trials : int
        Number of independent releases.

    Returns
    -------
    NoisyStatistics
        The three releases with a leading trials axis. ``xi`` is
        :math:`\mathcal N_{\rm sym}(0, I_d)`: upper triangle incl. the diagonal iid
        standard normal, mirrored below the diagonal.
    """
    d = xty.shape[0]
    m = d * (d + 1) // 2
    # the three draws in one fill, in their order: the same values as three calls
    # (numpy's stream is one sequence), by the compiled fill once numba is loaded
    normals = standard_normals(rng, np.empty(trials * (1 + m + d)))
    z = normals[:trials]
    upper = normals[trials : trials * (1 + m)].reshape(trials, m)
    zeta = normals[trials * (1 + m) :].reshape(trials, d)
    # xtx + sigma xi on the upper triangle, mirrored (xtx is exactly symmetric, so entry
    # (i, j) is xtx[i, j] + sigma xi[i, j] either way)
    return NoisyStatistics(
        lambda_min=lambda_min + sigma_lambda_min * z,
        xtx=symmetric_from_upper(xtx, sigma_xtx, upper),
        xty=xty[None, :] + sigma_xty * zeta,
    )


def _solve_batch(
    A: np.ndarray, b: np.ndarray, shift: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Solve the noisy systems (:func:`dpreg.estimators._linalg.solve_symmetric_batch`)."""
    return solve_symmetric_batch(A, b, shift=shift)


@functools.lru_cache(maxsize=1024)  # pure in public inputs; a root search (~0.1 ms) per call
def _agm_sigma(epsilon: float, delta: float, sensitivity: float) -> float:
    """:func:`dpreg.privacy.gaussian.analytic_gaussian_sigma`, cached."""
    return float(analytic_gaussian_sigma(epsilon, delta, sensitivity))


@functools.lru_cache(maxsize=1024)  # pure in the noise scales actually used
def _gaussian_epsilon(sigma: float, delta: float, sensitivity: float) -> float:
    """:func:`dpreg.privacy.gaussian.gaussian_epsilon`, cached."""
    return float(gaussian_epsilon(sigma, delta, sensitivity))


def _certified_budget(
    epsilon: float, delta: float, sigmas: tuple[float, ...], sensitivities: tuple[float, ...]
) -> ApproxDP:
    """(epsilon, delta) that the Gaussian releases actually added certify.

    Each of the m releases (three, or four with the ``y'y`` release) with noise sigma_i
    and sensitivity Delta_i costs its exact epsilon at delta/m (Balle & Wang 2018,
    Thm. 8); basic composition adds them. Computed from the noise scales, never echoed
    from the request, so a wrong scale shows up here.
    """
    if math.isinf(epsilon):
        return ApproxDP(math.inf, delta)
    m = len(sigmas)
    spent = math.fsum(
        _gaussian_epsilon(s, delta / m, c) for s, c in zip(sigmas, sensitivities, strict=True)
    )
    return ApproxDP(spent, delta)


def fit_adassp(
    X: np.ndarray,
    y: np.ndarray,
    *,
    budget: ApproxDP,
    rng: np.random.Generator,
    trials: int = 1,
    bound_X: float,
    bound_y: float,
    failure_prob: float | None = None,
    mechanism: str = "analytic",
    shift: str = "paper",
    yty_share: float | None = None,
) -> Fit:
    r"""AdaSSP, adaptive sufficient-statistics perturbation (Lev et al. 2026, Algorithm 6).

    Parameters
    ----------
    X : array_like, shape (n, d)
        Design matrix, rows with :math:`\|x_i\|_2 \le` ``bound_X``; ``n >= d``. Rank
        deficiency is allowed: the data-dependent ridge (line 4) regularises it.
    y : array_like, shape (n,)
        Responses with :math:`|y_i| \le` ``bound_y``.
    budget : ApproxDP
        Total :math:`(\varepsilon, \delta)` of one trial, split evenly over the three
        releases. ``epsilon=inf`` is the noiseless limit (no noise, zero ridge: OLS,
        minimum-norm if ``X`` is rank deficient).
    rng : numpy.random.Generator
        Source of all noise.
    trials : int, default 1
        Independent repetitions, vectorised (``X'X``, ``X'y`` and
        :math:`\lambda_{\min}` are computed once).
    bound_X : float
        Public bound :math:`C_X \ge \max_i \|x_i\|_2`. Required; never read off the data.
    bound_y : float
        Public bound :math:`C_Y \ge \max_i |y_i|`. Required; never read off the data.
    failure_prob : float, optional
        :math:`\varrho` of line 4; default ``delta / 10`` (Lev et al. 2026, §5).
    mechanism : {"analytic", "classic"}, default "analytic"
        Noise calibration of each release, see :func:`adassp_noise_scales`.
        ``"analytic"`` is what Lev et al.'s experiments use; ``"classic"`` is
        Algorithm 6 as printed.
    shift : {"paper", "code"}, default "paper"
        Downward shift of the noisy eigenvalue in line 3: ``"paper"`` subtracts
        :math:`\sigma_1\sqrt{2\log(6/\delta)}` (Algorithm 6, with the AGM
        :math:`\sigma_1` in place of the printed prefactor when ``mechanism="analytic"``);
        ``"code"`` subtracts :math:`\sigma_1^2` (the authors' released code;
        docs/notes/lev2026.md §8 item 7). The code's shift scales as :math:`C_X^4`, not
        :math:`C_X^2`, so it is only meaningful for data normalised to ``bound_X = 1`` (as
        the authors' are).
    yty_share : float in (0, 1), optional
        Also release :math:`y^\top y + \sigma_3 w` (sensitivity :math:`C_Y^2` under
        zero-out, :math:`w\sim\mathcal N(0,1)`), the statistic a residual variance needs
        (:func:`dpreg.inference.bootstrap.bootstrap_intervals` with
        ``target="population"``). The release gets :math:`(s\varepsilon, \delta/4)`
        with the analytic Gaussian mechanism and the three releases above
        :math:`((1-s)\varepsilon/3, \delta/4)` each, so the total stays
        :math:`(\varepsilon, \delta)` by basic composition. Default ``None``: no such
        release (Algorithm 6; the noise draws are then exactly those of the plain
        estimator).

    Returns
    -------
    Fit
        ``theta`` (trials, d); ``budget_spent = ApproxDP(epsilon, delta)``; diagnostics:
        ``sigma_lambda_min``, ``sigma_xtx``, ``sigma_xty`` (floats), the releases
        ``xtx_noisy`` (trials, d, d) and ``xty_noisy`` (trials, d) (the noisy
        :math:`X^\top X` and :math:`X^\top y` before the ridge),
        ``lambda_min_noisy`` and ``ridge`` (trials,) (:math:`\tilde\lambda_{\min}` and
        :math:`\tilde\lambda`), ``n_indefinite`` (trials whose regularised noisy Gram
        matrix ``xtx_noisy + ridge I`` has a smallest eigenvalue <= 0; its eigenvalues
        are computed only where a Cholesky certificate cannot decide the solve, see
        :func:`dpreg.estimators._linalg.solve_symmetric_batch`, so they are not returned:
        ``numpy.linalg.eigvalsh`` of that matrix gives them),
        ``n_robust_solves`` (trials solved by pseudo-inverse because the matrix was
        numerically singular), ``mechanism``, ``shift``, ``failure_prob``,
        ``lambda_min_shift``, ``ridge_scale``, ``sensitivities``,
        ``budget_per_release`` and ``delta_per_release_exact`` (the exact
        Gaussian-profile delta of each release at ``epsilon/3``); with ``yty_share``
        also ``yty_noisy`` (trials,), ``sigma_yty`` and ``yty_share``.

    Raises
    ------
    TypeError
        If ``budget`` is not an :class:`~dpreg.privacy.budgets.ApproxDP` or ``rng`` is
        not a Generator.
    ValueError
        On bad shapes, non-finite data, ``n < d``, data outside the public bounds,
        bad ``trials``, ``failure_prob``, ``mechanism`` or ``shift``, or a classic
        calibration that does not certify the budget.

    Notes
    -----
    With :math:`\sigma_1` the noise scale for sensitivity :math:`C_X^2` and
    :math:`\sigma_2` that for :math:`C_X C_Y`, each at :math:`(\varepsilon/3,\delta/3)`,
    and :math:`z\sim\mathcal N(0,1)`, :math:`\xi\sim\mathcal N_{\rm sym}(0, I_d)`,
    :math:`\zeta\sim\mathcal N(0, I_d)`:

    .. math::

        \tilde\lambda_{\min} &= \max\{\lambda_{\min}(X^\top X) + \sigma_1 z - s,\ 0\},
        \qquad s = \sigma_1\sqrt{2\log(6/\delta)} \text{ (paper) or } \sigma_1^2
        \text{ (code)},\\
        \tilde\lambda &= \max\{0,\ \sigma_1\sqrt{d\log(2d^2/\varrho)} - \tilde\lambda_{\min}\},\\
        \tilde\theta &= (X^\top X + \sigma_1\xi + \tilde\lambda I_d)^{-1}
                        (X^\top y + \sigma_2\zeta).

    With the classic prefactor :math:`\sigma_1 = \sqrt{2\log(6/\delta)}C_X^2/(\varepsilon/3)`
    these are lines 3--7 of Algorithm 6 verbatim (line 4's
    :math:`\sqrt{2d\log(6/\delta)\log(2d^2/\varrho)}C_X^2/(\varepsilon/3)` equals
    :math:`\sigma_1\sqrt{d\log(2d^2/\varrho)}`).

    *Privacy.* Neighbouring datasets differ by zeroing out one row :math:`(x_i, y_i)`
    (Lev et al. 2026, §2; add/remove-one gives the same sensitivities). Then

    .. math::

        \|X^\top X - X'^\top X'\|_F = \|x_i x_i^\top\|_F = \|x_i\|_2^2 \le C_X^2,\quad
        \|X^\top y - X'^\top y'\|_2 = |y_i|\,\|x_i\|_2 \le C_X C_Y,\quad
        |\lambda_{\min}(X^\top X) - \lambda_{\min}(X'^\top X')| \le C_X^2,

    the last by Weyl's inequality. The matrix release adds iid noise to the
    :math:`d(d+1)/2` upper-triangular entries, whose L2 sensitivity is at most the
    Frobenius one; mirroring is post-processing. Each release is
    :math:`(\varepsilon/3, \delta/3)`-DP and basic composition gives
    :math:`(\varepsilon, \delta)`; :math:`\tilde\theta` is post-processing. Trials are
    independent repetitions, not a composition. (Substitution neighbours would need
    :math:`\sqrt 2 C_X^2` and :math:`2 C_X C_Y` and are not covered.)

    *Numerics.* The regularised noisy Gram matrix can be indefinite (the ridge makes
    that unlikely, with probability about :math:`\varrho`); indefinite but
    non-singular systems are solved exactly as Algorithm 6 states. Numerically
    singular ones get the minimum-norm solution via the pseudo-inverse, counted in
    ``n_robust_solves``.

    References
    ----------
    - Y.-X. Wang, "Revisiting differentially private linear regression: optimal
      and adaptive prediction & estimation in unbounded domain", UAI 2018, pp.
      93--103 (Algorithm 2, AdaSSP).
    - O. Lev, M. Shenfeld, V. Srinivasan, K. Ligett, A. C. Wilson, "Near-optimal
      private linear regression via iterative Hessian mixing", 2026, Algorithm 6,
      eq. (13), Appendices G--H.
    - B. Balle, Y.-X. Wang, "Improving the Gaussian mechanism for differential
      privacy: analytical calibration and optimal denoising", ICML 2018, Alg. 1.

    Examples
    --------
    >>> import numpy as np
    >>> from dpreg import ApproxDP
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, size=(2000, 3)) / np.sqrt(3)  # rows of norm <= 1
    >>> y = np.clip(X @ np.array([0.5, -0.3, 0.2]) + 0.1 * rng.normal(size=2000), -1, 1)
    >>> fit = fit_adassp(X, y, budget=ApproxDP(1.0, 1e-6), rng=rng, trials=4,
    ...                bound_X=1.0, bound_y=1.0)
    >>> fit.theta.shape
    (4, 3)
    >>> fit.budget_spent.epsilon <= 1.0
    True
    """
    check_approx_dp_budget(budget)
    # Validation and the non-private statistics [X, y]'[X, y], once for all trials: one
    # compiled pass over the rows from 64 trials on, else the numpy checks and BLAS
    # (X'X, X'y, y'y as before); equal to round-off (tests/unit/test_adassp.py).
    X, y, trials, rng, gram = bounded_design_gram(
        X, y, bound_X=bound_X, bound_y=bound_y, trials=trials, rng=rng
    )
    options = check_adassp_options(budget, failure_prob, mechanism, shift, yty_share)
    d = X.shape[1]
    return adassp_release(
        gram[:d, :d],
        gram[:d, d],
        float(gram[d, d]) if yty_share is not None else None,
        budget=budget,
        rng=rng,
        trials=trials,
        bound_X=bound_X,
        bound_y=bound_y,
        **options,
    )


def check_adassp_options(
    budget: ApproxDP,
    failure_prob: float | None,
    mechanism: str,
    shift: str,
    yty_share: float | None,
) -> dict[str, Any]:
    """Validate the options of AdaSSP (both paths); return them for :func:`adassp_release`.

    Examples
    --------
    >>> from dpreg import ApproxDP
    >>> check_adassp_options(ApproxDP(1.0, 1e-6), None, "analytic", "paper", None)["shift"]
    'paper'
    """
    _, delta = check_approx_dp_budget(budget)
    check_choice(mechanism, "mechanism", MECHANISMS)
    check_choice(shift, "shift", SHIFTS)
    rho = delta / 10.0 if failure_prob is None else check_probability(failure_prob, "failure_prob")
    if yty_share is not None:
        yty_share = check_probability(yty_share, "yty_share")
    return {"failure_prob": rho, "mechanism": mechanism, "shift": shift, "yty_share": yty_share}


def adassp_release(
    xtx: np.ndarray,
    xty: np.ndarray,
    yty: float | None,
    *,
    budget: ApproxDP,
    rng: np.random.Generator,
    trials: int,
    bound_X: float,
    bound_y: float,
    failure_prob: float,
    mechanism: str,
    shift: str,
    yty_share: float | None,
) -> Fit:
    r"""AdaSSP's releases and ridge solution from the statistics (Algorithm 6, lines 2-7).

    The one release of both AdaSSP paths: :func:`fit_adassp` (rows in memory) and
    :func:`dpreg.estimators.adassp_stream.fit_adassp_streamed` (statistics accumulated
    block by block). Everything private happens here, from :math:`X^\top X` (made exactly
    symmetric, and its smallest eigenvalue computed, here), :math:`X^\top y` and, with
    ``yty_share``, :math:`y^\top y`; the noise is drawn from ``rng`` in the order of
    :func:`release_sufficient_statistics`, then the ``y'y`` noise.

    No validation: the caller has checked the options (:func:`check_adassp_options`,
    whose output ``failure_prob`` is the resolved :math:`\varrho`), ``trials``, ``rng``
    and that every row of the statistics obeys the public bounds.

    Examples
    --------
    >>> import numpy as np
    >>> from dpreg import ApproxDP
    >>> opts = check_adassp_options(ApproxDP(1.0, 1e-6), None, "analytic", "paper", None)
    >>> fit = adassp_release(np.eye(2) * 500, np.array([100.0, -50.0]), None,
    ...                      budget=ApproxDP(1.0, 1e-6), rng=np.random.default_rng(0),
    ...                      trials=2, bound_X=1.0, bound_y=1.0, **opts)
    >>> fit.theta.shape
    (2, 2)
    """
    epsilon, delta = check_approx_dp_budget(budget)
    rho = failure_prob
    d = xty.shape[0]
    sens = adassp_sensitivities(bound_X, bound_y)
    # The three releases of Algorithm 6 share `three`; the optional y'y release gets the rest.
    three = budget if yty_share is None else ApproxDP((1.0 - yty_share) * epsilon, 0.75 * delta)
    sigma1, sigma_xtx, sigma2 = adassp_noise_scales(three, bound_X, bound_y, mechanism)
    per_release = three.split(1.0, 1.0, 1.0)[0]
    # sigma / sensitivity is the same for the three releases: one exact delta for all.
    exact_delta = (
        0.0 if math.isinf(epsilon) else float(gaussian_delta(sigma1, three.epsilon / 3.0, sens[0]))
    )
    sigmas, all_sens = (sigma1, sigma_xtx, sigma2), sens
    if yty_share is not None:
        sens_yty = float(bound_y) ** 2
        sigma3 = (
            0.0 if math.isinf(epsilon) else _agm_sigma(yty_share * epsilon, 0.25 * delta, sens_yty)
        )
        sigmas, all_sens = (*sigmas, sigma3), (*sens, sens_yty)

    xtx = 0.5 * (xtx + xtx.T)  # exact symmetry, so the noisy release is symmetric too
    lambda_min = float(np.linalg.eigvalsh(xtx)[0])

    stats = release_sufficient_statistics(
        xtx,
        xty,
        lambda_min,
        sigma_lambda_min=sigma1,
        sigma_xtx=sigma_xtx,
        sigma_xty=sigma2,
        rng=rng,
        trials=trials,
    )
    extra = {}
    if yty_share is not None:  # drawn after Algorithm 6's noise, which stays unchanged
        yty_noisy = float(yty) + sigma3 * rng.standard_normal(trials)
        extra = {"yty_noisy": yty_noisy, "sigma_yty": sigma3, "yty_share": float(yty_share)}
    shift_amount = (
        sigma1 * math.sqrt(2.0 * math.log(6.0 / delta)) if shift == "paper" else sigma1**2
    )
    ridge_scale = sigma1 * math.sqrt(d * math.log(2.0 * d * d / rho))
    lambda_min_noisy = np.maximum(stats.lambda_min - shift_amount, 0.0)
    ridge = np.maximum(0.0, ridge_scale - lambda_min_noisy)

    # (xtx_noisy + ridge I) theta = xty_noisy, the ridge added inside the solver
    theta, robust, eig = _solve_batch(stats.xtx, stats.xty, shift=ridge)
    if not np.all(np.isfinite(theta)):  # pragma: no cover - solve/pinv of finite input
        bad = int(np.sum(~np.all(np.isfinite(theta), axis=1)))
        raise FloatingPointError(
            f"AdaSSP produced non-finite estimates in {bad} of {trials} trials"
        )

    return Fit(
        theta=theta,
        budget_spent=_certified_budget(epsilon, delta, sigmas, all_sens),
        estimator="adassp",
        diagnostics={
            "sigma_lambda_min": float(sigma1),
            "sigma_xtx": float(sigma_xtx),
            "sigma_xty": float(sigma2),
            "xtx_noisy": stats.xtx,
            "xty_noisy": stats.xty,
            "lambda_min_noisy": lambda_min_noisy,
            "ridge": ridge,
            # certified systems (NaN rows) are positive definite
            "n_indefinite": int(np.sum(eig[:, 0] <= 0.0)),
            "n_robust_solves": int(np.sum(robust)),
            "mechanism": mechanism,
            "shift": shift,
            "failure_prob": float(rho),
            "lambda_min_shift": float(shift_amount),
            "ridge_scale": float(ridge_scale),
            "sensitivities": {
                "lambda_min": sens[0],
                "xtx": sens[1],
                "xty": sens[2],
                **({"yty": all_sens[3]} if yty_share is not None else {}),
            },
            "budget_per_release": per_release,
            "delta_per_release_exact": exact_delta,
            # Exact zCDP of the three Gaussian releases (Bun & Steinke 2016, Prop. 1.6 and
            # Lemma 2.3): a second, independent certificate of the same noise.
            "rho_zcdp": math.inf
            if math.isinf(epsilon)
            else math.fsum(gaussian_zcdp(s, c) for s, c in zip(sigmas, all_sens, strict=True)),
            **extra,
        },
    )
