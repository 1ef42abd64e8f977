r"""Iterative Hessian Mixing (IHM; Lev et al. 2026, Algorithm 1).

IHM is a private iterative Hessian sketch (Pilanci & Wainwright 2016). After a private
test of the smallest eigenvalue of :math:`X^\top X` (Algorithm 2) fixes a mixing noise
:math:`\eta`, each of :math:`T` iterations draws a fresh Gaussian-mixing sketch
:math:`\widetilde X_t = S_t X + \eta\,\xi_t` (:math:`k\times d`), a residual-clipped
Gaussian-noised gradient :math:`\widetilde G_t`, and takes the Newton-like step
:math:`\hat\theta_{t+1} = \hat\theta_t + (\tfrac1k \widetilde X_t^\top\widetilde X_t)^{-1}
\widetilde G_t`.

The module is layered as the project's conventions ask:

* :func:`ihm_sketch_size`, :func:`ihm_tau` -- public hyperparameters (§5, Theorem 1);
* :func:`ihm_privacy_pieces` -- the accountant (Lemma 1, Lemma 3, eqs. 39--42) for
  given noise levels, with the mixing RDP of :mod:`dpreg.privacy.mixing`;
* :func:`ihm_gamma`, :func:`ihm_sigma`, :func:`ihm_calibration` -- the noise levels
  for a budget, exact (numeric), Theorem 1's closed forms, or the authors' code's
  accounting (:func:`ihm_code_half_epsilon`);
* :func:`fit_ihm` -- the validated public estimator (registry name ``"ihm"``).

The sketches are sampled exactly from the Gram matrix (:mod:`dpreg.estimators.gram_sketch`)
or, for reference, explicitly.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from dpreg._validation import check_bounded_design, check_choice, check_positive, check_probability
from dpreg.estimators._linalg import solve_symmetric_batch
from dpreg.estimators.dpgd import _digest, clipped_gradient_kernel
from dpreg.estimators.gram_sketch import (
    GramFactor,
    direct_sketch_gram,
    gram_factor,
    sample_sketch_gram,
)
from dpreg.privacy.budgets import ApproxDP, check_approx_dp_budget, check_budget
from dpreg.privacy.gaussian import analytic_gaussian_sigma, gaussian_epsilon
from dpreg.privacy.mixing import mixing_epsilon, smallest_gamma
from dpreg.results import Fit

GAMMA_METHODS = ("rdp", "closed_form", "code")
VARIANTS = ("experiments", "paper")
SAMPLERS = ("gram", "direct")
KERNELS = ("fast", "rows")

#: Smallest admissible mixing level: Proposition 5 (Lev et al. 2025) needs gamma > 5/2.
GAMMA_MIN = 2.5

__all__ = [
    "GAMMA_METHODS",
    "GAMMA_MIN",
    "SAMPLERS",
    "VARIANTS",
    "IHMCalibration",
    "fit_ihm",
    "ihm_calibration",
    "ihm_code_half_epsilon",
    "ihm_gamma",
    "ihm_privacy_pieces",
    "ihm_sigma",
    "ihm_sketch_size",
    "ihm_tau",
]


# ------------------------------------------------------------------- hyperparameters


def _check_int(value: object, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {value!r}")
    return int(value)


def ihm_sketch_size(d: int, T: int, failure_prob: float) -> int:
    r"""Default sketch size :math:`k = \lfloor 6\max\{d, \log(4T/\varrho)\}\rfloor`.

    Lev et al. (2026), §5 (the factor 6 is Pilanci & Wainwright's rule of thumb); the
    authors' code truncates with ``int()`` (docs/notes/lev2026.md §8 item 1; App. H's
    :math:`\log(2T/\varrho)` is not used). ``int(6 max(a, b)) == max(int(6a), int(6b))``.
    """
    return int(6.0 * max(float(d), math.log(4.0 * T / failure_prob)))


def ihm_tau(delta: float, failure_prob: float) -> float:
    r"""Shift of the eigenvalue test, :math:`\tau = \sqrt{2\log\max\{4/\delta, 4/\varrho\}}`.

    Lev et al. (2026), Theorem 1. Algorithm 2 then gives
    :math:`\Pr(\tilde\lambda > \lambda_{\min}) \le \tfrac12 e^{-\tau^2/2}
    \le \min\{\delta, \varrho\}/8`.
    """
    return math.sqrt(2.0 * math.log(max(4.0 / delta, 4.0 / failure_prob)))


# ------------------------------------------------------------------------ accountant


#: "memo": :func:`_mixing_term` keeps its values; "reference": computes every call
_MIXING_PATH = "memo"


def _mixing_term(gamma: float, kT: float, dq: float) -> tuple[float, float]:
    """:func:`~dpreg.privacy.mixing.mixing_epsilon` ``(gamma, k T, delta / 4)``, memoised.

    The T sketches' term of eq. (42) (App. C.1.1), shared by the accountant and both
    calibrations (``"rdp"``, ``"code"``): the gamma searches of a data set (one
    ``(k, T, delta)``) at every epsilon and method start with the same doubling points
    (:func:`~dpreg.privacy.mixing.smallest_gamma`), and the accountant evaluates the
    gamma a search returned. The function is pure in its public arguments (floats keyed
    by value), so the memo returns the reference's floats
    (``tests/unit/test_ihm_mixing_memo.py``).
    """
    if _MIXING_PATH == "reference":
        return mixing_epsilon(gamma, kT, dq)
    return _mixing_term_cached(gamma, kT, dq)


@functools.lru_cache(maxsize=4096)  # two floats per entry; pure in public inputs
def _mixing_term_cached(gamma: float, kT: float, dq: float) -> tuple[float, float]:
    """Compute :func:`_mixing_term` (the cached call)."""
    return mixing_epsilon(gamma, kT, dq)


def ihm_privacy_pieces(
    gamma: float, sigma: float, *, k: int, T: int, clip: float, delta: float
) -> dict[str, float]:
    r"""Certified :math:`(\varepsilon, \delta)` of one IHM run with noise levels ``(gamma, sigma)``.

    Basic composition (Lev et al. 2026, App. C.1.1, eq. 41) of three pieces, with the
    delta split of docs/notes/lev2026.md §8 item 2 (:math:`\delta/4` each for the
    eigenvalue test, the failure event :math:`\{\tilde\lambda > \lambda_{\min}\}`, the
    RDP-to-DP conversion of the sketches and that of the gradients):

    * **eigenvalue test** (Algorithm 2 with noise :math:`\gamma/\sqrt k`, sensitivity
      :math:`C_X^2 = 1` by Weyl's inequality): the *exact* Gaussian privacy profile
      (Balle & Wang 2018, Thm 8) at :math:`\delta/4`. The paper (eq. 42) and the code use
      the classic bound :math:`\sqrt{2k\log(5/\delta)}/\gamma`, which is larger whenever it
      is valid (it needs that value below 1);
    * **T sketches** (line 5): on the good event :math:`\lambda_{\min}+\eta^2 \ge \gamma`
      each is :math:`(\alpha, \varphi(\alpha;k,\gamma))`-RDP (Lemma 1), composition adds,
      and Canonne--Kamath--Steinke (2020, Prop. 12; Lemma 3) converts at :math:`\delta/4`:
      :math:`\min_{1<\alpha<\gamma} T\varphi(\alpha;k,\gamma) +
      \frac{\log(4/\delta)+(\alpha-1)\log(1-1/\alpha)-\log\alpha}{\alpha-1}` (eq. 39);
    * **T gradients** (line 6): under zero-out,
      :math:`\|X^\top\mathrm{clip}_C(Y - X\theta) - X'^\top\mathrm{clip}_C(Y'-X'\theta)\|
      = \|x_i\|\,|\mathrm{clip}_C(y_i - x_i^\top\theta)| \le C` for every :math:`\theta`
      (eq. 35), so T Gaussian steps of scale :math:`\sigma` are one Gaussian mechanism
      with sensitivity :math:`\sqrt T C`; its exact profile is used at :math:`\delta/4`.

    Parameters
    ----------
    gamma, sigma : float
        Mixing level and gradient noise scale (> 0).
    k, T : int
        Sketch size and iterations.
    clip : float
        Residual clip level :math:`C`.
    delta : float
        Total delta.

    Returns
    -------
    dict
        ``epsilon_eigen``, ``epsilon_mixing``, ``epsilon_gradient``, ``epsilon`` (sum),
        ``alpha_mixing`` (optimal order), ``delta_eigen``, ``delta_failure``,
        ``delta_mixing``, ``delta_gradient`` and ``delta`` (sum).
    """
    if not gamma > 1.0:
        raise ValueError(f"gamma must exceed 1 (Lemma 1 needs 1 < alpha < gamma); got {gamma!r}")
    return dict(_privacy_pieces(float(gamma), float(sigma), int(k), int(T), float(clip), delta))


@functools.lru_cache(maxsize=1024)  # pure in public inputs; every fit certifies its noise
def _privacy_pieces(
    gamma: float, sigma: float, k: int, T: int, clip: float, delta: float
) -> tuple[tuple[str, float], ...]:
    """Compute the items of :func:`ihm_privacy_pieces` (cached: its alpha search is ~1 ms)."""
    dq = delta / 4.0
    eps_eig = gaussian_epsilon(gamma / math.sqrt(k), dq, 1.0)
    eps_mix, alpha = _mixing_term(gamma, k * T, dq)
    eps_grad = gaussian_epsilon(sigma, dq, math.sqrt(T) * clip)
    return (
        ("epsilon_eigen", eps_eig),
        ("epsilon_mixing", eps_mix),
        ("epsilon_gradient", eps_grad),
        ("epsilon", math.fsum((eps_eig, eps_mix, eps_grad))),
        ("alpha_mixing", alpha),
        ("delta_eigen", dq),
        ("delta_failure", dq),
        ("delta_mixing", dq),
        ("delta_gradient", dq),
        ("delta", 4.0 * dq),
    )


# ----------------------------------------------------------------------- calibration


def ihm_code_half_epsilon(gamma: float, delta: float, k: int, T: int) -> float:
    r"""Epsilon of the eigenvalue test + T sketches as the authors' code accounts it.

    Eq. (42)'s first two terms with the *classic* Gaussian bound for the eigenvalue test
    (Dwork & Roth 2014, Thm A.1) and :math:`\delta' = \delta/4` for both the test and
    the RDP-to-DP conversion (App. C.1.1; docs/notes/lev2026.md §3.2, "(code) Exact
    solve"):

    .. math::

        \varepsilon_{\rm code}(\gamma) = \frac{\sqrt{2\log(1.25/\delta')}\,\sqrt k}{\gamma}
        + \min_{1<\alpha<\gamma}\Big\{T\varphi(\alpha;k,\gamma)
        + \frac{\log(1/\delta')+(\alpha-1)\log(1-1/\alpha)-\log\alpha}{\alpha-1}\Big\},

    with :math:`\varphi` of Lemma 1 (:func:`~dpreg.privacy.mixing.mixing_rdp`); since
    :math:`1.25/\delta' = 5/\delta`, the first term is eq. (42)'s
    :math:`\sqrt{2k\log(5/\delta)}/\gamma`. The second term is the same as in
    :func:`ihm_privacy_pieces` (``epsilon_mixing``); only the first differs.

    *Validity.* The classic bound certifies a Gaussian release at :math:`(\varepsilon_e,
    \delta')` only for :math:`\varepsilon_e = \sqrt{2\log(1.25/\delta')}\sqrt k/\gamma
    < 1`. Below 1 it is an over-estimate of the exact profile, so the value returned here
    is then an upper bound on the epsilon certified by :func:`ihm_privacy_pieces`; at
    or above 1 it certifies nothing, and the exact epsilon at this gamma may exceed it.

    Parameters
    ----------
    gamma : float
        Mixing level (> 1).
    delta : float
        Total delta of the IHM run (the test and the conversion each get delta/4).
    k, T : int
        Sketch size and iterations.

    Returns
    -------
    float

    Examples
    --------
    >>> e = ihm_code_half_epsilon(546.48, 1.0 / 14_000**2, 156, 3)
    >>> round(e, 3)
    0.316
    """
    if not gamma > 1.0:
        raise ValueError(f"gamma must exceed 1 (Lemma 1 needs 1 < alpha < gamma); got {gamma!r}")
    dq = delta / 4.0
    classic = math.sqrt(2.0 * math.log(1.25 / dq)) * math.sqrt(k) / gamma
    return classic + _mixing_term(gamma, k * T, dq)[0]


@functools.lru_cache(maxsize=1024)  # pure in its arguments; studies call it per trial
def ihm_gamma(epsilon: float, delta: float, k: int, T: int, method: str = "rdp") -> float:
    r"""Mixing level :math:`\gamma` for the (eigenvalue test + sketches) half of the budget.

    Parameters
    ----------
    epsilon, delta : float
        The *total* budget of one IHM run; this part gets :math:`(\varepsilon/2, 3\delta/4)`.
    k, T : int
        Sketch size and iterations.
    method : {"rdp", "closed_form", "code"}
        ``"rdp"``: the smallest :math:`\gamma \ge 5/2` with
        ``epsilon_eigen + epsilon_mixing <= epsilon / 2`` in
        :func:`ihm_privacy_pieces` (eq. 42's form with the exact eigenvalue-test term),
        found by bisection on :math:`\log\gamma` (both terms decrease in
        :math:`\gamma`; :func:`~dpreg.privacy.mixing.smallest_gamma`); the returned
        value certifies.
        ``"closed_form"``: Theorem 1,
        :math:`\gamma = \frac{\sqrt{kT}}{\sqrt{8\log(5/\delta)}\,
        (-1+\sqrt{1+\varepsilon/(8\log(5/\delta))})}`, which solves
        :math:`\frac{kT}{2\gamma^2}+\frac{2\sqrt{2kT\log(5/\delta)}}{\gamma}=\frac\varepsilon2`
        (eqs. 18, 44), floored at 5/2.
        ``"code"``: the authors' code's accounting, the smallest :math:`\gamma \ge 5/2`
        with :func:`ihm_code_half_epsilon` :math:`\le \varepsilon/2` (eq. 42 with the
        classic Gaussian bound for the eigenvalue test), found by the same bisection.
        Where that classic term is below 1 (small epsilon relative to
        :math:`\sqrt{k\log(5/\delta)}/\gamma`) this gamma is larger than the
        ``"rdp"`` one and certifies the target with room to spare; where it is not,
        the classic bound is not a DP guarantee and the exact epsilon at this gamma
        (:func:`ihm_privacy_pieces`, which :func:`fit_ihm` reports as
        ``budget_spent``) can exceed the target. Used to reproduce the paper's
        figures with the authors' noise levels (docs/lev2026.md).

    Returns
    -------
    float

    Examples
    --------
    >>> k, T, delta = 156, 3, 1.0 / 14_000**2
    >>> ihm_gamma(0.631, delta, k, T, "code") > ihm_gamma(0.631, delta, k, T, "rdp")
    True
    """
    check_choice(method, "gamma_method", GAMMA_METHODS)
    if method == "closed_form":
        L = 8.0 * math.log(5.0 / delta)
        root = epsilon / L / (1.0 + math.sqrt(1.0 + epsilon / L))  # sqrt(1+x)-1, stably
        return max(math.sqrt(k * T) / (math.sqrt(L) * root), GAMMA_MIN)

    dq = delta / 4.0

    def half_epsilon(g: float) -> float:
        if method == "code":
            return ihm_code_half_epsilon(g, delta, k, T)
        return gaussian_epsilon(g / math.sqrt(k), dq, 1.0) + _mixing_term(g, k * T, dq)[0]

    return smallest_gamma(half_epsilon, epsilon / 2.0, GAMMA_MIN)


@functools.lru_cache(maxsize=1024)  # pure in its arguments; studies call it per trial
def ihm_sigma(epsilon: float, delta: float, T: int, clip: float, method: str = "rdp") -> float:
    r"""Gradient noise scale :math:`\sigma` for the gradient half :math:`(\varepsilon/2, \delta/4)`.

    ``"rdp"`` (exact): :math:`\sqrt T\,\mathrm{AGM}(\varepsilon/2, \delta/4, C)`, the
    analytic Gaussian mechanism (Balle & Wang 2018, Alg. 1) for the T-fold composition,
    which is one Gaussian mechanism with sensitivity :math:`\sqrt T C` (Lev et al. 2026,
    App. H; docs/notes/lev2026.md §3.1); ``"code"`` gives the same, as the authors' code
    calibrates the gradients with the analytic Gaussian mechanism too. ``"closed_form"``:
    Theorem 1,
    :math:`\sigma = \sqrt T C / (\sqrt{2\log(4/\delta)}\,
    (-1+\sqrt{1+\varepsilon/(2\log(4/\delta))}))`.
    """
    check_choice(method, "gamma_method", GAMMA_METHODS)
    if method == "closed_form":
        L = 2.0 * math.log(4.0 / delta)
        root = epsilon / L / (1.0 + math.sqrt(1.0 + epsilon / L))
        return math.sqrt(T) * clip / (math.sqrt(L) * root)
    return math.sqrt(T) * analytic_gaussian_sigma(epsilon / 2.0, delta / 4.0, clip)


@dataclass(frozen=True)
class IHMCalibration:
    r"""Public noise parameters of one IHM configuration (data independent).

    Attributes
    ----------
    gamma, sigma, tau : float
        Mixing level, gradient noise scale, eigenvalue-test shift (0, 0, tau when
        epsilon is infinite).
    k, T : int
        Sketch size, iterations.
    failure_prob : float
        :math:`\varrho`.
    pieces : dict
        :func:`ihm_privacy_pieces` at ``(gamma, sigma)`` (empty when epsilon is infinite).
    """

    gamma: float
    sigma: float
    tau: float
    k: int
    T: int
    failure_prob: float
    pieces: dict


def ihm_calibration(
    budget: ApproxDP,
    d: int,
    *,
    T: int = 3,
    clip: float = 1.0,
    k: int | None = None,
    failure_prob: float | None = None,
    gamma_method: str = "rdp",
) -> IHMCalibration:
    """Noise parameters of IHM for a budget (see :func:`fit_ihm` for the arguments)."""
    check_budget(budget, ApproxDP)
    T = _check_int(T, "T", 1)
    clip = check_positive(clip, "clip")
    delta = budget.delta
    rho = delta / 10.0 if failure_prob is None else check_probability(failure_prob, "failure_prob")
    k = ihm_sketch_size(d, T, rho) if k is None else k
    tau = ihm_tau(delta, rho)
    if budget.is_infinite:
        return IHMCalibration(0.0, 0.0, tau, k, T, rho, {})
    gamma = ihm_gamma(budget.epsilon, delta, k, T, gamma_method)
    sigma = ihm_sigma(budget.epsilon, delta, T, clip, gamma_method)
    pieces = ihm_privacy_pieces(gamma, sigma, k=k, T=T, clip=clip, delta=delta)
    return IHMCalibration(gamma, sigma, tau, k, T, rho, pieces)


def _override_gamma(
    cal: IHMCalibration, gamma: object, *, epsilon: float, delta: float, clip: float
) -> IHMCalibration:
    """``cal`` with a hand-set mixing level, refused below the smallest certifying one.

    Both the eigenvalue-test and the sketches' epsilon decrease in gamma
    (:func:`ihm_privacy_pieces`), so every gamma at or above
    ``ihm_gamma(epsilon, delta, k, T, "rdp")`` keeps that half within epsilon / 2.
    """
    gamma = check_positive(gamma, "gamma")
    if math.isinf(epsilon):
        raise ValueError("gamma: no mixing noise is added at epsilon = inf; leave gamma None")
    smallest = ihm_gamma(epsilon, delta, cal.k, cal.T, "rdp")
    if gamma < smallest:
        raise ValueError(
            f"gamma={gamma!r} is below {smallest!r}, the smallest mixing level that keeps the"
            f" eigenvalue test and the {cal.T} sketches within epsilon/2 = {epsilon / 2!r}"
            f" (k = {cal.k}, delta = {delta!r}); a smaller gamma would spend more than the budget"
        )
    pieces = ihm_privacy_pieces(gamma, cal.sigma, k=cal.k, T=cal.T, clip=clip, delta=delta)
    return dataclasses.replace(cal, gamma=gamma, pieces=pieces)


# ------------------------------------------------------------------------- estimator


def _solve(H: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, int]:
    """``H[t]^{-1} g[t]``; minimum-norm least squares for (numerically) singular ``H[t]``.

    The rule of :func:`dpreg.estimators._linalg.solve_symmetric_batch`; returns the
    steps and the number of singular systems.
    """
    step, singular, _ = solve_symmetric_batch(H, g)
    return step, int(singular.sum())


def _clipped_gradients(
    X: np.ndarray, y: np.ndarray, theta: np.ndarray, clip: float
) -> tuple[np.ndarray, np.ndarray]:
    r""":math:`X^\top\mathrm{clip}_C(y - X\theta_j)` for every row ``theta_j``, and clip fractions.

    Vectorised over trials with matmuls, in chunks of trials so the (n, chunk)
    residual block stays around 4 MB: :math:`O(n d)` per trial.
    """
    n = X.shape[0]
    trials = theta.shape[0]
    grad = np.empty_like(theta)
    frac = np.empty(trials)
    chunk = max(1, (1 << 19) // n)
    for s in range(0, trials, chunk):
        e = min(trials, s + chunk)
        R = X @ theta[s:e].T  # (n, c)
        np.subtract(y[:, None], R, out=R)
        clipped = np.count_nonzero(R > clip, axis=0) + np.count_nonzero(R < -clip, axis=0)
        np.clip(R, -clip, clip, out=R)
        grad[s:e] = (X.T @ R).T
        frac[s:e] = clipped / n
    return grad, frac


_DATA_CACHE_SIZE = 2
#: whether ``kernel="rows"`` fits hash the rows for the data cache too (tests: the same fits)
_DIGEST_ROWS_KERNEL = False
#: "same": with bound_X = 1 the fit reads X itself instead of the copy X / 1.0 (the same
#: bits for finite X; no n x d copy per fit: lev_fig7's peak memory, docs/scaling.md);
#: "reference": it divides
_UNIT_SCALE_PATH = "same"
_DATA_CACHE: OrderedDict[tuple, tuple[GramFactor, float]] = OrderedDict()


def _data_quantities(Xn: np.ndarray, digest: bytes | None) -> tuple[GramFactor, float]:
    """Return the Gram factor and smallest eigenvalue of ``Xn' Xn``, once per data set.

    Pure functions of the rows (no noise, no budget): every epsilon, variant and seed
    block of a study fits the same rows, so the last two results are kept, keyed by the
    sha256 of the values (as :func:`~dpreg.estimators.dpgd.clipped_gradient_kernel`); a
    hit returns the arrays of the first computation (the same bits as a fresh one).
    ``digest`` is ``_digest(Xn)`` (shared with the kernel's key); ``None`` computes them
    afresh without the cache (``kernel="rows"``: no kernel needs the digest, and at
    d <= 20 the Gram product costs less than hashing the rows).
    """
    if digest is None:
        return _fresh_data_quantities(Xn)
    key = (Xn.shape, digest)
    hit = _DATA_CACHE.get(key)
    if hit is None:
        hit = _fresh_data_quantities(Xn)
        _DATA_CACHE[key] = hit
        while len(_DATA_CACHE) > _DATA_CACHE_SIZE:
            _DATA_CACHE.popitem(last=False)
    else:
        _DATA_CACHE.move_to_end(key)
    return hit


def _fresh_data_quantities(Xn: np.ndarray) -> tuple[GramFactor, float]:
    """Return the Gram factor and smallest eigenvalue of ``Xn' Xn`` (:func:`_data_quantities`)."""
    gram = Xn.T @ Xn
    gram = 0.5 * (gram + gram.T)
    return gram_factor(gram=gram), float(np.linalg.eigvalsh(gram)[0])


#: "fused": :func:`_scale_and_accumulate` takes the compiled one-pass kernel
#: (:mod:`dpreg.estimators._ihm_jit`) from :data:`_HESSIAN_FUSED_MIN` entries on;
#: "reference": always the numpy passes. The same bits either way (tested).
_HESSIAN_PATH = "fused"
_HESSIAN_FUSED_MIN = 2**16  # below: numpy's passes are in cache and the call is short


def _scale_and_accumulate(H: np.ndarray, hessian_mean: np.ndarray, k: int, T: int) -> None:
    """``H /= k`` then ``hessian_mean += H / T`` in place (Algorithm 1, lines 4-5).

    The reference is the two numpy statements; from :data:`_HESSIAN_FUSED_MIN` entries
    on, one compiled pass with the same IEEE operations per entry in the same order
    (the same bits; ``tests/unit/test_ihm_hessian_pass.py``).
    """
    if (
        _HESSIAN_PATH == "fused"
        and H.size >= _HESSIAN_FUSED_MIN
        and H.shape == hessian_mean.shape
        and H.dtype == hessian_mean.dtype == np.float64
        and H.flags.c_contiguous
        and hessian_mean.flags.c_contiguous
        and not np.may_share_memory(H, hessian_mean)
    ):
        from dpreg.estimators._ihm_jit import scale_and_accumulate

        scale_and_accumulate(H, hessian_mean, k, T)
        return
    H /= k
    hessian_mean += H / T


def fit_ihm(
    X: np.ndarray,
    y: np.ndarray,
    *,
    budget: ApproxDP,
    rng: np.random.Generator,
    trials: int = 1,
    bound_X: float = 1.0,
    bound_y: float = 1.0,
    T: int = 3,
    clip: float = 1.0,
    k: int | None = None,
    failure_prob: float | None = None,
    gamma_method: str = "rdp",
    gamma: float | None = None,
    variant: str = "experiments",
    sampler: str = "gram",
    kernel: str = "fast",
) -> Fit:
    r"""Fit linear regression by Iterative Hessian Mixing (Lev et al. 2026, Algorithm 1).

    Parameters
    ----------
    X : array_like, shape (n, d)
        Design, rows with :math:`\|x_i\|_2 \le` ``bound_X``; ``n >= d``. Rank deficiency
        is allowed (the mixing noise then regularises the sketched Hessian).
    y : array_like, shape (n,)
        Responses with :math:`|y_i| \le` ``bound_y``.
    budget : ApproxDP
        Total :math:`(\varepsilon, \delta)` of one run: :math:`(\varepsilon/2, 3\delta/4)`
        for the eigenvalue test and sketches, :math:`(\varepsilon/2, \delta/4)` for the
        gradients (see :func:`ihm_privacy_pieces`). ``epsilon=inf`` is the noiseless
        iterative Hessian sketch (:math:`\gamma=\sigma=\eta=0`).
    rng : numpy.random.Generator
        Source of all randomness.
    trials : int, default 1
        Independent repetitions, vectorised over a trials axis.
    bound_X : float, default 1.0
        Public :math:`C_X \ge \max_i\|x_i\|_2`; violations raise. The algorithm runs on
        :math:`X/C_X` (so the paper's :math:`C_X = 1` holds) and returns
        :math:`\hat\theta/C_X` (§2: :math:`\theta' = C_X\theta`).
    bound_y : float, default 1.0
        Public :math:`C_Y \ge \max_i|y_i|`; violations raise. Privacy does not depend on
        it (the gradient is clipped at ``clip``); the paper sets ``clip`` :math:`= C_Y`.
    T : int, default 3
        Iterations (§5).
    clip : float, default 1.0
        Residual clip level :math:`C` (entrywise, in the units of ``y``).
    k : int, optional
        Sketch size; default :func:`ihm_sketch_size`, :math:`\lfloor 6\max\{d,
        \log(4T/\varrho)\}\rfloor`. Must be >= d.
    failure_prob : float, optional
        :math:`\varrho` in (0, 1); default ``delta / 10`` (§5). Enters ``k`` and ``tau``.
    gamma_method : {"rdp", "closed_form", "code"}, default "rdp"
        ``"rdp"``: :math:`\gamma` solved numerically from the RDP accountant and
        :math:`\sigma` from the analytic Gaussian mechanism (the experiments' exact
        calibration, :func:`ihm_gamma`, :func:`ihm_sigma`). ``"closed_form"``: both from
        Theorem 1's closed forms. ``"code"``: :math:`\gamma` as the authors' code
        accounts it (eq. 42 with the classic Gaussian bound for the eigenvalue test,
        :func:`ihm_code_half_epsilon`), :math:`\sigma` as ``"rdp"``; this reproduces
        the paper's noise levels. Whatever the method, ``budget_spent`` is the exact
        epsilon of the noise actually added, which under ``"code"`` differs from the
        target (smaller where the classic bound is valid, possibly larger where it
        is not).
    gamma : float, optional
        Mixing level :math:`\gamma` set by hand, for analysis runs (e.g. sweeping the
        mixing noise between the exact and the code's value, docs/lev2026.md); replaces
        the ``gamma_method`` value (``sigma`` still follows ``gamma_method``). A public
        input: it must not be chosen from the data. It must be at least the smallest
        level that certifies the (eigenvalue test + sketches) half :math:`\varepsilon/2`
        (``ihm_gamma(epsilon, delta, k, T, "rdp")``); a smaller value raises, since it
        would spend more than the budget. A larger one adds more mixing noise and spends
        less: ``budget_spent`` is the exact epsilon at this gamma. Not allowed with an
        infinite epsilon (no mixing noise).
    variant : {"experiments", "paper"}, default "experiments"
        ``"paper"``: line 6 as printed,
        :math:`\widetilde G_t = X^\top\mathrm{clip}_C(Y-X\hat\theta_t) - \eta^2\hat\theta_t
        + \sigma\zeta_t` (fixed point: ridge :math:`\theta^*(\eta^2)`).
        ``"experiments"``: without :math:`-\eta^2\hat\theta_t`, as in all of the paper's
        experiments and the authors' code (§5, App. H); privacy is unchanged (it is
        post-processing of :math:`\eta^2`, itself a release).
    sampler : {"gram", "direct"}, default "gram"
        ``"gram"``: :math:`\widetilde X_t^\top\widetilde X_t` sampled exactly in
        distribution from :math:`X^\top X`
        (:func:`~dpreg.estimators.gram_sketch.sample_sketch_gram`, Bartlett),
        :math:`O(d^3)` per trial and iteration. ``"direct"``: explicit :math:`S_t` of
        shape (k, n), :math:`O(knd)` (reference).
    kernel : {"fast", "rows"}, default "fast"
        How the clipped gradients :math:`X^\top\mathrm{clip}_C(Y - X\hat\theta_t)` are
        computed; both give the same values to rounding error (clip fractions exactly)
        from the same random draws. ``"rows"``: every row for every trial,
        :math:`O(nd)` per trial and iteration (reference). ``"fast"``:
        :class:`~dpreg.estimators.dpgd.ClippedGradientKernel` with residual clipping,
        which certifies the rows whose residual cannot reach :math:`C` anywhere within
        a distance of the OLS solution and sums those through block Gram matrices
        (:math:`O(d^2)` per block); after the first iterate most pairs of (row, trial)
        are certified (``kernel_pairs`` in the diagnostics counts them). The kernel is
        built once per data set and clip level
        (:func:`~dpreg.estimators.dpgd.clipped_gradient_kernel`) and reused by later fits;
        it screens the uncertified rows in single precision (``screen=True``: rows that
        may be clipped are recomputed in double precision) and, where a cost model says
        it pays, certifies rows around the median of each iteration's parameters instead
        (``centre=True``, :mod:`~dpreg.estimators.dpgd_centre`: the trials of one
        iteration cluster, often far from the kernel's fixed reference point).

    Returns
    -------
    Fit
        ``theta`` (trials, d); ``path`` (trials, T, d) of :math:`\hat\theta_1..\hat\theta_T`;
        ``budget_spent`` = ApproxDP(exact epsilon of the noise added, delta) (the
        target up to the solve tolerance under ``"rdp"``; under ``"code"`` below it, or
        above it outside the classic bound's range); diagnostics: ``gamma``, ``sigma``
        (gradient noise scale), ``tau``, ``k``, ``T``, ``clip``, ``failure_prob``,
        ``lambda_min_noisy`` (trials,) (:math:`\tilde\lambda`), ``eta2`` (trials,)
        (:math:`\eta^2`), ``sketch_hessian_mean`` (trials, d, d) (the mean over t of the
        released :math:`\tfrac1k\widetilde X_t^\top\widetilde X_t`, units of
        :math:`X/C_X`: a post-processing of the sketches),
        ``clip_fraction`` (trials, T) (fraction of rows whose residual
        was clipped at iteration t), ``n_robust_solves``, ``privacy`` (the pieces of
        :func:`ihm_privacy_pieces`: eps and delta of the eigenvalue test, sketches and
        gradients), ``epsilon_certified``, ``gamma_method``, ``gamma_given`` (whether
        ``gamma`` was set by hand), ``variant``, ``sampler``, ``kernel``, ``kernel_pairs``
        (``"fast"``: how many (row, trial, iteration) terms were certified, summed by a
        Gram product, or computed row by row).
        All in the units of the original (un-normalised) data except ``gamma``,
        ``eta2`` and ``lambda_min_noisy``, which are in the units of :math:`X/C_X`.

    Raises
    ------
    TypeError
        If ``budget`` is not an :class:`~dpreg.privacy.budgets.ApproxDP` (e.g. a ZCDP)
        or ``rng`` is not a Generator.
    ValueError
        On bad shapes, non-finite data, ``n < d``, data outside the public bounds, or
        bad ``trials``, ``T``, ``clip``, ``k``, ``failure_prob`` or option names, or a
        ``gamma`` below the smallest certifying level (or given with an infinite epsilon).

    Notes
    -----
    With :math:`X` normalised to :math:`C_X = 1`, :math:`z\sim\mathcal N(0,1)` and, at every
    iteration, fresh :math:`S_t\sim\mathcal N(0, I_{k\times n})`,
    :math:`\xi_t\sim\mathcal N(0, I_{k\times d})`, :math:`\zeta_t\sim\mathcal N(0, I_d)`:

    .. math::

        \tilde\lambda &= \max\{\lambda_{\min}(X^\top X) - \tfrac{\gamma}{\sqrt k}(\tau - z), 0\},
        \qquad \eta^2 = \max\{\gamma - \tilde\lambda, 0\}
        \quad\text{(Algorithm 2 with noise } \gamma/\sqrt k\text{)},\\
        \widetilde X_t &= S_t X + \eta\,\xi_t,\qquad
        \widetilde G_t = X^\top \mathrm{clip}_C(Y - X\hat\theta_t)
        \,[-\,\eta^2\hat\theta_t] + \sigma\zeta_t,\\
        \hat\theta_{t+1} &= \hat\theta_t + (\tfrac1k\widetilde X_t^\top\widetilde X_t)^{-1}
        \widetilde G_t,\qquad \hat\theta_0 = 0.

    *Sensitivities* (zero-out neighbours, §1): :math:`\lambda_{\min}(X^\top X)` moves by at
    most :math:`\|x_i\|^2 \le 1` (Weyl); the clipped gradient by at most :math:`C`
    (eq. 35); the sketch is private by Lemma 1 on the event :math:`\tilde\lambda \le
    \lambda_{\min}`, whose complement has probability
    :math:`\le\tfrac12e^{-\tau^2/2}\le\delta/8` (Algorithm 2). The accounting is in
    :func:`ihm_privacy_pieces`.

    *Cost.* One :math:`O(nd^2)` Gram pass; per trial and iteration :math:`O(d^3)` for the
    sketch (``sampler="gram"``) and :math:`O(nd)` for the clipped residuals, which need
    the real data; the latter are batched over trials as (n, d) @ (d, trials) matmuls.

    References
    ----------
    - O. Lev, M. Shenfeld, V. Srinivasan, K. Ligett, A. C. Wilson, "Near-optimal
      private linear regression via iterative Hessian mixing", 2026, Algorithms 1--2,
      Theorem 1, eqs. (35)--(44), §5, App. H.
    - M. Pilanci, M. J. Wainwright, "Iterative Hessian sketch", JMLR 17 (2016).
    - B. Balle, Y.-X. Wang, ICML 2018, Alg. 1 and Thm 8 (analytic Gaussian).
    - C. Canonne, G. Kamath, T. Steinke, "The discrete Gaussian for differential
      privacy", NeurIPS 2020, Prop. 12 (RDP to DP).

    Examples
    --------
    >>> import numpy as np
    >>> from dpreg import ApproxDP
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, size=(2000, 3)) / np.sqrt(3)
    >>> y = np.clip(X @ np.array([0.5, -0.3, 0.2]) + 0.1 * rng.normal(size=2000), -1, 1)
    >>> fit = fit_ihm(X, y, budget=ApproxDP(1.0, 1e-6), rng=rng, trials=4, T=3)
    >>> fit.theta.shape, fit.diagnostics['T']
    ((4, 3), 3)
    """
    epsilon, delta = check_approx_dp_budget(budget)
    X, y, trials, rng = check_bounded_design(
        X, y, bound_X=bound_X, bound_y=bound_y, trials=trials, rng=rng
    )
    T = _check_int(T, "T", 1)
    clip = check_positive(clip, "clip")
    check_choice(gamma_method, "gamma_method", GAMMA_METHODS)
    check_choice(variant, "variant", VARIANTS)
    check_choice(sampler, "sampler", SAMPLERS)
    check_choice(kernel, "kernel", KERNELS)
    rho = delta / 10.0 if failure_prob is None else check_probability(failure_prob, "failure_prob")
    n, d = X.shape
    if k is not None:
        k = _check_int(k, "k", d)

    cal = ihm_calibration(
        ApproxDP(epsilon, delta),
        d,
        T=T,
        clip=clip,
        k=k,
        failure_prob=rho,
        gamma_method=gamma_method,
    )
    k = cal.k  # the default is >= 6 d; a user-given k was checked to be >= d above
    if gamma is not None:
        cal = _override_gamma(cal, gamma, epsilon=epsilon, delta=delta, clip=clip)

    # C_X = 1 (§1); theta' = C_X theta. X / 1.0 is X bit for bit (finite, validated) and
    # keeps a contiguous X's layout, so a unit bound takes X itself ("reference": always
    # divide; tests: the same fits)
    same = (
        _UNIT_SCALE_PATH == "same"
        and float(bound_X) == 1.0
        and X.dtype == np.float64
        and (X.flags.c_contiguous or X.flags.f_contiguous)
    )
    Xn = X if same else X / bound_X
    # the rows' key, for the data cache and the kernel's; the reference gradient pass
    # keys nothing (a study that draws fresh data per trial passes kernel="rows")
    digest = _digest(Xn) if kernel == "fast" or _DIGEST_ROWS_KERNEL else None
    factor, lambda_min = _data_quantities(Xn, digest)
    factor = factor if sampler == "gram" else None
    fast = (
        clipped_gradient_kernel(
            Xn, y, clip, clip_mode="residual", screen=True, centre=True, x_digest=digest
        )
        if kernel == "fast"
        else None
    )
    pairs_before = dict(fast.pairs) if fast is not None else None  # the kernel is reused

    # Algorithm 2 with C_X = 1 and noise gamma / sqrt(k) (line 2 of Algorithm 1).
    z = rng.standard_normal(trials)
    lambda_noisy = np.maximum(lambda_min - cal.gamma / math.sqrt(k) * (cal.tau - z), 0.0)
    eta2 = np.maximum(cal.gamma - lambda_noisy, 0.0)
    eta = np.sqrt(eta2)

    theta = np.zeros((trials, d))
    path = np.empty((trials, T, d))
    hessian_mean = np.zeros((trials, d, d))  # released: the mean of the T sketched Hessians
    clip_fraction = np.empty((trials, T))
    n_robust = 0
    for t in range(T):
        if sampler == "gram":
            H = sample_sketch_gram(factor, eta, k, rng)
        else:
            H = direct_sketch_gram(Xn, eta, k, rng)
        _scale_and_accumulate(H, hessian_mean, k, T)  # H /= k; hessian_mean += H / T
        if fast is None:
            grad, clip_fraction[:, t] = _clipped_gradients(Xn, y, theta, clip)
        else:  # the kernel returns -(1/n) X^T clip_C(y - X theta) by columns
            mean_grad, clip_fraction[:, t] = fast(theta.T)
            grad = -n * mean_grad.T
        if variant == "paper":
            grad -= eta2[:, None] * theta
        grad += cal.sigma * rng.standard_normal((trials, d))
        step, bad = _solve(H, grad)
        n_robust += bad
        theta = theta + step
        path[:, t, :] = theta

    theta = theta / bound_X
    path /= bound_X
    if not np.all(np.isfinite(theta)):  # pragma: no cover - solve/lstsq of finite input
        raise FloatingPointError("IHM produced non-finite estimates")

    # What the noise actually used certifies (eq. 41 with exact Gaussian profiles), not
    # the request: a wrong gamma or sigma shows up here.
    spent = (
        ApproxDP(math.inf, delta)
        if math.isinf(epsilon)
        else ApproxDP(
            ihm_privacy_pieces(cal.gamma, cal.sigma, k=k, T=T, clip=clip, delta=delta)["epsilon"],
            delta,
        )
    )
    return Fit(
        theta=theta,
        budget_spent=spent,
        estimator="ihm",
        path=path,
        diagnostics={
            "gamma": float(cal.gamma),
            "sigma": float(cal.sigma),
            "tau": float(cal.tau),
            "k": int(k),
            "T": int(T),
            "clip": float(clip),
            "failure_prob": float(rho),
            "lambda_min_noisy": lambda_noisy,
            "eta2": eta2,
            "sketch_hessian_mean": hessian_mean,
            "clip_fraction": clip_fraction,
            "n_robust_solves": int(n_robust),
            "privacy": dict(cal.pieces),
            "epsilon_certified": float(cal.pieces.get("epsilon", math.inf)),
            "gamma_method": gamma_method,
            "gamma_given": gamma is not None,
            "variant": variant,
            "sampler": sampler,
            "kernel": kernel,
            "kernel_pairs": (
                {key: count - pairs_before[key] for key, count in fast.pairs.items()}
                if fast is not None
                else None
            ),
        },
    )
