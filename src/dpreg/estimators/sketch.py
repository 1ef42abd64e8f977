r"""Gaussian sketch-and-solve estimators: Linear Mixing and Sheffet's sketch.

* Linear Mixing (Lev et al. 2025), as run in Lev et al. (2026): Algorithm 4 (fixed
  sketch size, the "LinMix" of the experiments) and Algorithm 5 (dynamic sketch size,
  analysed in Theorem 2) -- :func:`fit_linear_mixing`, registry name
  ``"linear_mixing"``;
* Sheffet's (2017, 2019) generic Gaussian sketch with additive noise, Lev et al.
  (2026), eq. (7) -- :func:`fit_sheffet_sketch`, registry name ``"sheffet_sketch"``.

Both release a Gaussian sketch of the augmented matrix :math:`A = [X, Y]/s`,
:math:`s = \sqrt{C_X^2 + C_Y^2}`, so that every row has :math:`\|a_i\| \le 1`
(docs/notes/lev2026.md §8 items 4--6: normalise, then run Algorithms 2--4 with
:math:`C = 1`). The estimate
:math:`\hat\theta = (\widetilde X^\top\widetilde X)^{-1}\widetilde X^\top\widetilde Y`
is invariant to the common scale :math:`s`, so it is returned in the original units.

**Privacy accounting** (Lev et al. 2026; docs/notes/lev2026.md §3):

* Gaussian mixing RDP (Lev et al. 2025, Lemma 1): if :math:`\max\|a_i\|\le1` and
  :math:`\lambda_{\min}(A^\top A)\ge\bar\lambda`, then :math:`SA + \sigma\xi`
  (:math:`S\sim N(0,I_{k\times n})`) is :math:`(\alpha,\varphi(\alpha;k,\gamma))`-RDP for
  :math:`1<\alpha<\gamma = \sigma^2+\bar\lambda`, with
  :math:`\varphi(\alpha;k,\zeta) = \frac{k\alpha}{2(\alpha-1)}\log(1-\frac1\zeta)
  - \frac{k}{2(\alpha-1)}\log(1-\frac\alpha\zeta)` -- :func:`~dpreg.privacy.mixing.mixing_rdp`.
  (It is k times the Renyi divergence between :math:`N(0,\zeta)` and :math:`N(0,\zeta-1)`.)
* RDP -> DP (Canonne, Kamath & Steinke 2020, Prop. 12):
  :math:`\varepsilon = \varepsilon(\alpha) + \frac{\log(1/\delta)+(\alpha-1)\log(1-1/\alpha)
  -\log\alpha}{\alpha-1}`, minimised over :math:`\alpha` --
  :func:`~dpreg.privacy.mixing.mixing_epsilon`.
* Linear Mixing (Prop. 5, eq. (17)): the eigenvalue test (classic Gaussian mechanism,
  noise :math:`\eta`, sensitivity 1, at :math:`\delta/3`) plus the mixing step converted
  at :math:`\delta/3`, plus :math:`\delta/3` for the failure event
  :math:`\tilde\lambda>\lambda_{\min}` -- :func:`linear_mixing_epsilon`.

**Sampling.** The estimator depends on the sketch only through
:math:`\widetilde A^\top\widetilde A`. Rows of :math:`SA + \tilde\eta\xi` are iid
:math:`N(0, A^\top A + \tilde\eta^2 I)`, so :math:`\widetilde A^\top\widetilde A
\overset{d}{=} F W F^\top` with :math:`FF^\top = A^\top A + \tilde\eta^2 I` and
:math:`W\sim\mathrm{Wishart}_{d+1}(k, I)` (Bartlett decomposition). This exact sampler
(``sampler="wishart"``, the default) costs :math:`O(d^3)` per trial, independent of n
and k; ``sampler="direct"`` draws :math:`S` explicitly (in row blocks) for validation.
Both are :mod:`dpreg.estimators.gram_sketch`'s samplers (with one sketch size per trial).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from dpreg._validation import check_choice, check_probability
from dpreg.estimators._gram_cache import bounded_design_gram
from dpreg.estimators._linalg import solve_symmetric_batch
from dpreg.estimators.gram_sketch import GramFactor, direct_sketch_gram, sample_sketch_gram
from dpreg.privacy.budgets import ApproxDP, check_approx_dp_budget
from dpreg.privacy.gaussian import gaussian_epsilon
from dpreg.privacy.mixing import mixing_epsilon, smallest_gamma
from dpreg.results import Fit

FAITHFUL = ("best", "code")
SAMPLERS = ("wishart", "direct")
SHEFFET_CALIBRATIONS = ("rdp", "seed")
_DIRECT_BLOCK_ELEMENTS = 4_000_000  # S entries per block of the direct sampler (32 MB)

__all__ = [
    "FAITHFUL",
    "SAMPLERS",
    "SHEFFET_CALIBRATIONS",
    "default_sketch_size",
    "fit_linear_mixing",
    "fit_sheffet_sketch",
    "linear_mixing_epsilon",
    "linear_mixing_gamma",
    "sheffet_gamma",
    "sketch_gram",
]

# ------------------------------------------------------------------------ accounting


def linear_mixing_epsilon(
    gamma: float,
    k: float,
    delta: float,
    *,
    eta: float | None = None,
    eig_sensitivity: float = 1.0,
    refine: bool = True,
) -> float:
    r"""Epsilon of Linear Mixing, Lev et al. (2025) Prop. 5 / Lev et al. (2026) eq. (17).

    .. math::

        \tilde\varepsilon(\eta,\gamma,k,\delta) = \frac{\sqrt{2\log(3.75/\delta)}\,
        \Delta_\lambda}{\eta} + \min_{1<\alpha<\gamma}\Big\{\varphi(\alpha;k,\gamma) +
        \frac{\log(3/\delta)+(\alpha-1)\log(1-1/\alpha)-\log\alpha}{\alpha-1}\Big\}.

    Parameters
    ----------
    gamma, k, delta : float
        As in eq. (17), units with :math:`\max\|a_i\| = 1`.
    eta : float, optional
        Std of the eigenvalue-test noise; default :math:`\gamma/\sqrt k` (Alg. 4, line 2).
    eig_sensitivity : float
        :math:`\Delta_\lambda`, the sensitivity the first term is charged for
        (1 for normalised rows; see ``faithful="code"`` in :func:`fit_linear_mixing`).
    refine : bool
        See :func:`~dpreg.privacy.mixing.mixing_epsilon`.

    Notes
    -----
    The first term as printed is the classic Gaussian mechanism (Dwork & Roth 2014,
    Thm A.1) at :math:`\delta/3` (:math:`1.25/(\delta/3) = 3.75/\delta`). That theorem is
    proved for :math:`\varepsilon < 1`; the formula stays an upper bound on the exact cost
    up to about :math:`\varepsilon \approx 20` and then understates it (at a total budget
    of 30 it charges 11.24 where the exact cost is 11.91). The first term used here is
    therefore :math:`\max\{\text{classic}, \varepsilon_{\rm exact}\}`, with
    :math:`\varepsilon_{\rm exact}` the exact epsilon of the Gaussian mechanism with noise
    :math:`\eta` and sensitivity :math:`\Delta_\lambda` at :math:`\delta/3` (Balle & Wang
    2018, Thm. 8; :func:`~dpreg.privacy.gaussian.gaussian_epsilon`): it equals the
    printed eq. (17) wherever the classic bound holds (every budget of the paper's
    experiments) and is the exact cost where it does not (``docs/deviations.md``).
    """
    if eta is None:
        eta = gamma / math.sqrt(k)
    classic = math.sqrt(2.0 * math.log(3.75 / delta)) * eig_sensitivity / eta
    exact = gaussian_epsilon(eta, delta / 3.0, eig_sensitivity)
    return max(classic, exact) + mixing_epsilon(gamma, k, delta / 3.0, refine=refine)[0]


@functools.lru_cache(maxsize=256)  # pure in its (public) arguments; fits call it per call
def _linear_mixing_epsilon_cached(
    gamma: float, k: int, delta: float, eta: float | None, eig_sensitivity: float
) -> float:
    """:func:`linear_mixing_epsilon` (``refine=True``), memoised for the fits."""
    return linear_mixing_epsilon(gamma, k, delta, eta=eta, eig_sensitivity=eig_sensitivity)


@functools.lru_cache(maxsize=256)  # pure in its (public) arguments; fits call it per call
def _mixing_epsilon_cached(gamma: float, k: int, delta: float) -> tuple[float, float]:
    """:func:`~dpreg.privacy.mixing.mixing_epsilon` at the full delta, memoised."""
    return mixing_epsilon(gamma, k, delta)


@functools.lru_cache(maxsize=1024)  # pure in its arguments; studies call it per trial
def linear_mixing_gamma(
    epsilon: float, k: int, delta: float, *, eig_sensitivity: float = 1.0
) -> float:
    r"""Smallest gamma > 5/2 meeting eq. (17) at ``epsilon`` (Algorithm 4, line 2).

    The smallest :math:`\gamma > 5/2` with :math:`\tilde\varepsilon(\gamma/\sqrt k,\gamma,k,
    \delta)\le\varepsilon`, by bisection in :math:`\log\gamma`.

    ``eig_sensitivity`` scales the eigenvalue-test term (see :func:`linear_mixing_epsilon`);
    the authors' code effectively uses :math:`1/(1+C_Y^2)` (docs/notes/lev2026.md §8 item 6).
    """
    return smallest_gamma(
        lambda g: linear_mixing_epsilon(g, k, delta, eig_sensitivity=eig_sensitivity),
        epsilon,
        2.5,
    )


@functools.lru_cache(maxsize=1024)  # pure in its arguments; studies call it per trial
def sheffet_gamma(epsilon: float, k: int, delta: float) -> float:
    r"""Smallest :math:`\gamma = \eta^2 > 1` making the noisy sketch (eq. (7)) (eps, delta)-DP.

    Lev et al. (2025), Lemma 1 with :math:`\bar\lambda_{\min} = 0` (valid for every
    dataset) and the CKS conversion at the full :math:`\delta`
    (:func:`~dpreg.privacy.mixing.mixing_epsilon`).
    """
    return smallest_gamma(lambda g: mixing_epsilon(g, k, delta)[0], epsilon, 1.0)


def default_sketch_size(d: int, failure_prob: float, multiplier: float = 2.5) -> int:
    r"""Lev et al. (2026) §5 sketch size for Linear Mixing.

    :math:`k = \max\{\lfloor cd\rfloor, \lfloor c\log(2/\varrho)\rfloor\}` with c = 2.5
    (the authors' code truncates each term).
    """
    return max(int(multiplier * d), int(multiplier * math.log(2.0 / failure_prob)))


# -------------------------------------------------------------------------- sampling


def sketch_gram(
    A: np.ndarray,
    gram_eig: tuple[np.ndarray, np.ndarray],
    noise_std: np.ndarray,
    k: np.ndarray,
    *,
    rng: np.random.Generator,
    sampler: str = "wishart",
) -> np.ndarray:
    r"""Sample the Gram matrix of a noisy Gaussian sketch, one per trial.

    :math:`\widetilde A_t^\top\widetilde A_t` with :math:`\widetilde A_t = S_t A +
    \tilde\eta_t\xi_t`, :math:`S_t\sim N(0, I_{k_t\times n})`, :math:`\xi_t\sim N(0,
    I_{k_t\times p})`.

    Parameters
    ----------
    A : ndarray, shape (n, p)
        The (normalised) data matrix; used by ``sampler="direct"`` only.
    gram_eig : (ndarray (p,), ndarray (p, p))
        Eigendecomposition ``(w, V)`` of :math:`A^\top A`.
    noise_std : ndarray, shape (trials,)
        :math:`\tilde\eta_t` (0 allowed).
    k : ndarray of int, shape (trials,)
        Sketch size per trial, each >= p for ``"wishart"``.
    rng : numpy.random.Generator
        ``"wishart"``: :func:`~dpreg.estimators.gram_sketch.sample_sketch_gram` (Bartlett;
        per call, chi-square diagonals (trials, p), then the strictly-lower entries
        (trials, p(p-1)/2)). ``"direct"``:
        :func:`~dpreg.estimators.gram_sketch.direct_sketch_gram` (per trial, S in row
        blocks of A, then xi).
    sampler : {"wishart", "direct"}

    Returns
    -------
    ndarray, shape (trials, p, p)

    Notes
    -----
    Both samplers are exact; see :mod:`dpreg.estimators.gram_sketch`. The eigenvectors
    ``V`` are used as given (their signs fix which sketch a seed produces).
    """
    if sampler == "wishart":
        w, V = gram_eig
        factor = GramFactor(eigenvalues=np.maximum(w, 0.0), eigenvectors=V)
        return sample_sketch_gram(factor, noise_std, k, rng)
    return direct_sketch_gram(A, noise_std, k, rng, block_elements=_DIRECT_BLOCK_ELEMENTS)


def _solve_from_gram(M: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r""":math:`\hat\theta = M_{XX}^{-1}M_{XY}` per trial; pseudo-inverse when singular.

    Returns ``(theta (trials, d), robust (trials,))``; ``robust`` flags the numerically
    singular systems (:func:`dpreg.estimators._linalg.solve_symmetric_batch`), which get the
    minimum-norm least-squares solution.
    """
    d = M.shape[-1] - 1
    theta, robust, _ = solve_symmetric_batch(M[:, :d, :d], M[:, :d, d])
    return theta, robust


def _stacked_gram(X: np.ndarray, y: np.ndarray, scale: float) -> np.ndarray:
    r"""Return :math:`A^\top A` with :math:`A = [X, y]/s` materialised (the reference path)."""
    A = np.column_stack([X, y]) / scale
    return A.T @ A


def _prepare(X, y, budget, rng, trials, bound_X, bound_y, sampler):
    """Shared validation and normalisation: A = [X, y] / sqrt(C_X^2 + C_Y^2).

    ``A`` is materialised only for the direct sampler (``None`` for the Wishart
    sampler, which needs the Gram matrix only).
    """
    epsilon, delta = check_approx_dp_budget(budget)
    # validation and [X, y]'[X, y] in one compiled pass over the rows from 64 trials on,
    # else the numpy checks and BLAS on the unstacked blocks (no [X, y] copy): equal to
    # the stacked reference _stacked_gram to round-off (tests/unit/test_sketch.py)
    X, y, trials, rng, gram = bounded_design_gram(
        X, y, bound_X=bound_X, bound_y=bound_y, trials=trials, rng=rng
    )
    check_choice(sampler, "sampler", SAMPLERS)
    scale = math.sqrt(float(bound_X) ** 2 + float(bound_y) ** 2)
    A = np.column_stack([X, y]) / scale if sampler == "direct" else None
    gram = gram / (scale * scale)
    gram = 0.5 * (gram + gram.T)
    w, V = np.linalg.eigh(gram)
    # Fix the eigenvector signs (largest-|entry| positive) so that draws are a
    # continuous function of the data: rescaled inputs give the same sketches.
    pivot = V[np.argmax(np.abs(V), axis=0), np.arange(V.shape[1])]
    V = V * np.where(pivot < 0, -1.0, 1.0)[None, :]
    return epsilon, delta, X, y, trials, rng, scale, A, (w, V)


def _sketch_size(k, failure_prob, delta: float, d: int) -> tuple[int, float]:
    """Validate ``(k, varrho)``; varrho defaults to delta / 10, k to the §5 rule."""
    varrho = (
        delta / 10.0 if failure_prob is None else check_probability(failure_prob, "failure_prob")
    )
    if k is None:
        k = default_sketch_size(d, varrho)
        if k < d + 1:
            raise ValueError(
                f"the default sketch size k={k} is < d + 1 = {d + 1}; pass a larger k explicitly"
            )
    elif isinstance(k, bool) or not isinstance(k, int | np.integer) or k < d + 1:
        raise ValueError(
            f"k must be an integer sketch size >= d + 1 = {d + 1} (so that the"
            f" sketched [X, y] has full column rank); got {k!r}"
        )
    return int(k), varrho


# ------------------------------------------------------------------------ estimators


def fit_linear_mixing(
    X: np.ndarray,
    y: np.ndarray,
    *,
    budget: ApproxDP,
    rng: np.random.Generator,
    trials: int = 1,
    bound_X: float = 1.0,
    bound_y: float = 1.0,
    k: int | None = None,
    failure_prob: float | None = None,
    dynamic_k: bool = False,
    faithful: str = "best",
    sampler: str = "wishart",
) -> Fit:
    r"""Linear Mixing (Lev et al. 2025; Lev et al. 2026, Algorithms 4 and 5).

    Parameters
    ----------
    X : array_like, shape (n, d)
        Design with :math:`\|x_i\|\le` ``bound_X``; ``n >= d``; rank deficiency allowed.
    y : array_like, shape (n,)
        Responses with :math:`|y_i|\le` ``bound_y``.
    budget : ApproxDP
        :math:`(\varepsilon,\delta)` of one trial. ``epsilon=inf``: noiseless limit
        (plain Gaussian sketch-and-solve with k rows, no eigenvalue test).
    rng : numpy.random.Generator
        Source of all randomness. Draw order: eigenvalue-test noise z (trials,), then
        the sketches (:func:`sketch_gram`).
    trials : int, default 1
        Independent repetitions, vectorised.
    bound_X, bound_y : float, default 1.0
        Public bounds :math:`C_X`, :math:`C_Y`.
    k : int, optional
        Sketch size (>= d + 1); default :func:`default_sketch_size`,
        :math:`\max\{\lfloor 2.5d\rfloor,\lfloor2.5\log(2/\varrho)\rfloor\}` (§5). For
        ``dynamic_k`` it is the minimum size.
    failure_prob : float, optional
        :math:`\varrho`; default ``delta / 10`` (§5.1).
    dynamic_k : bool, default False
        Algorithm 5 (dynamic sketch size) instead of Algorithm 4.
    faithful : {"best", "code"}, default "best"
        ``"best"``: run Algorithms 2--4 on :math:`[X,Y]/\sqrt{C_X^2+C_Y^2}` with
        :math:`C=1` (docs/notes/lev2026.md §8 items 4--6). ``"code"``: the authors'
        released scaling
        (Algorithm 4 only); see Notes for its :math:`\sqrt 2` privacy gap.
    sampler : {"wishart", "direct"}, default "wishart"
        Exact Gram sampler or explicit :math:`S` (:func:`sketch_gram`).

    Returns
    -------
    Fit
        ``theta`` (trials, d). ``budget_spent``: ``ApproxDP(eps_cert, delta)`` with
        ``eps_cert`` what eq. (17) certifies for the noise actually used (<= epsilon
        for ``"best"``; *larger* than epsilon for ``"code"``, see Notes; epsilon itself
        for ``dynamic_k``, where each branch is certified below it). Diagnostics:
        ``gamma``, ``k`` (int, or (trials,) for ``dynamic_k``), ``tau``,
        ``eig_noise_std``, ``lambda_tilde`` and ``eta_tilde`` (trials,), ``scale``
        (:math:`s`), ``failure_prob``, ``epsilon_accounted`` (eq. (17) as the method
        accounts it), ``epsilon_certified``, ``dynamic`` (trials,) bool (Alg. 5 took
        the no-noise branch), ``sketch_gram`` (trials, d + 1, d + 1): the released
        :math:`\widetilde A^\top\widetilde A` in the normalised units of
        :math:`A = [X, Y]/s` (a function of the sketch, hence public), ``n_robust_solves``,
        ``faithful``, ``sampler``.

    Raises
    ------
    TypeError
        Bad ``budget`` or ``rng`` type.
    ValueError
        Bad shapes or values, data outside the bounds, ``k < d + 1``, unknown options,
        or ``faithful="code"`` with ``dynamic_k``.

    Notes
    -----
    *Algorithm 4 (``faithful="best"``).* With :math:`A = [X,Y]/s`,
    :math:`s=\sqrt{C_X^2+C_Y^2}` (rows of norm <= 1), :math:`\gamma` the smallest
    value > 5/2 with :math:`\tilde\varepsilon(\gamma/\sqrt k,\gamma,k,\delta)\le\varepsilon`
    (eq. (17), :func:`linear_mixing_gamma`), :math:`\eta=\gamma/\sqrt k`,
    :math:`\tau = \sqrt{2\log\max\{3/\delta,2/\varrho\}}`:

    .. math::

        \tilde\lambda = \max\{\lambda_{\min}(A^\top A) - \eta(\tau - z), 0\},\quad
        \tilde\eta = \sqrt{\max\{\gamma-\tilde\lambda, 0\}},\quad
        \widetilde A = SA + \tilde\eta\xi,\quad
        \hat\theta = (\widetilde X^\top\widetilde X)^{-1}\widetilde X^\top\widetilde Y.

    This is Algorithm 3 with :math:`C = 1` and noise std :math:`\tilde\eta` (not
    :math:`\tilde\eta C_X`, docs/notes/lev2026.md §8 item 4). *Privacy:*
    :math:`\lambda_{\min}(A^\top A)`
    has zero-out sensitivity :math:`\max\|a_i\|^2\le1` (Weyl), so the test is the
    Gaussian mechanism charged in the first term of eq. (17) at :math:`\delta/3`;
    :math:`\Pr(\tilde\lambda>\lambda_{\min}) = \Pr(z>\tau)\le\delta/3`; on the
    complement :math:`\lambda_{\min}+\tilde\eta^2\ge\gamma`, so by Lemma 1 the sketch is
    :math:`(\alpha,\varphi(\alpha;k,\gamma))`-RDP, converted at :math:`\delta/3`.
    Neighbours are zero-out (Lev et al. §2).

    *Algorithm 5 (``dynamic_k=True``).* :math:`\tau=\sqrt{8\log\max\{3/\delta,4/\varrho\}}`;
    same :math:`\gamma,\eta,\tilde\lambda`. If :math:`\tilde\lambda\ge\gamma` (in the
    normalised units this *is* :math:`\tilde\lambda\ge\gamma(C_X^2+C_Y^2)` of the raw
    data, docs/notes/lev2026.md §8 item 5) the sketch has no additive noise and size
    :math:`\tilde k`,
    the largest :math:`\tilde k\ge k` with :math:`\tilde\varepsilon(\gamma/\sqrt{\tilde k},
    \tilde\lambda,\tilde k,\delta) < \varepsilon` (line 6, literally: charging the test
    at :math:`\gamma/\sqrt{\tilde k}` is conservative since it ran at
    :math:`\gamma/\sqrt k`); the search evaluates the :math:`\alpha`-minimum on a grid
    only (an upper bound, so :math:`\tilde k` is certified). Otherwise line 9 (as Alg. 4).

    *``faithful="code"``.* The authors' code works on the raw data with
    :math:`\gamma_{\rm code} = (1+C_Y^2)\gamma` and eigenvalue-test noise
    :math:`\sqrt{1+C_Y^2}\,\gamma_{\rm code}/\sqrt k`, but charges the test as
    :math:`\sqrt{2\log(1.25/\delta')}\sqrt k/\gamma_{\rm code}`. In normalised units
    (with :math:`C_X = 1`, as the code assumes; here :math:`c^2 = C_Y^2/C_X^2`) this is
    the test noise :math:`\sqrt{1+c^2}\,\gamma/\sqrt k` charged as if it were
    :math:`(1+c^2)\gamma/\sqrt k`: the true cost of the test is :math:`\sqrt{1+c^2}`
    (:math:`=\sqrt2`) times the accounted one. The mixing step is identical.
    ``epsilon_accounted`` is the code's value (= epsilon); ``budget_spent`` is the
    correct, larger value.

    References
    ----------
    - O. Lev, V. Srinivasan, M. Shenfeld, K. Ligett, A. Sekhari, A. C. Wilson,
      "The Gaussian mixing mechanism: Renyi differential privacy via Gaussian sketches",
      2025, Lemma 1, Prop. 5, Algorithms 2--5.
    - O. Lev et al., "Near-optimal private linear regression via iterative Hessian
      mixing", 2026, Algorithms 2--5, eq. (17), Theorem 2, Lemma 13, Appendix H.

    Examples
    --------
    >>> import numpy as np
    >>> from dpreg import ApproxDP
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, size=(2000, 3)) / np.sqrt(3)
    >>> y = np.clip(X @ np.array([0.5, -0.3, 0.2]) + 0.1 * rng.normal(size=2000), -1, 1)
    >>> fit = fit_linear_mixing(X, y, budget=ApproxDP(1.0, 1e-6), rng=rng, trials=4)
    >>> fit.theta.shape
    (4, 3)
    """
    epsilon, delta, X, y, trials, rng, scale, A, gram_eig = _prepare(
        X, y, budget, rng, trials, bound_X, bound_y, sampler
    )
    check_choice(faithful, "faithful", FAITHFUL)
    if not isinstance(dynamic_k, bool):
        raise ValueError(f"dynamic_k must be True or False; got {dynamic_k!r}")
    if faithful == "code" and dynamic_k:
        raise ValueError("faithful='code' reproduces Algorithm 4 only; use dynamic_k=False")
    d = X.shape[1]
    k, varrho = _sketch_size(k, failure_prob, delta, d)

    ratio2 = (float(bound_y) / float(bound_X)) ** 2  # c^2 of the code scaling
    lam_min = float(gram_eig[0][0])
    ks = np.full(trials, k, dtype=np.int64)
    dynamic = np.zeros(trials, dtype=bool)

    if math.isinf(epsilon):
        gamma = eig_noise = tau = math.nan
        lam_tilde = np.full(trials, math.nan)
        eta_tilde = np.zeros(trials)
        eps_acc = eps_cert = math.inf
    else:
        if faithful == "best":
            gamma = linear_mixing_gamma(epsilon, k, delta)
            eig_noise = gamma / math.sqrt(k)
            eps_acc = _linear_mixing_epsilon_cached(gamma, k, delta, None, 1.0)
            eps_cert = eps_acc
        else:
            gamma = linear_mixing_gamma(epsilon, k, delta, eig_sensitivity=1.0 / (1.0 + ratio2))
            eig_noise = math.sqrt(1.0 + ratio2) * gamma / math.sqrt(k)
            eps_acc = _linear_mixing_epsilon_cached(gamma, k, delta, None, 1.0 / (1.0 + ratio2))
            eps_cert = _linear_mixing_epsilon_cached(gamma, k, delta, eig_noise, 1.0)
        if dynamic_k:
            tau = math.sqrt(8.0 * math.log(max(3.0 / delta, 4.0 / varrho)))
        else:
            tau = math.sqrt(2.0 * math.log(max(3.0 / delta, 2.0 / varrho)))
        z = rng.standard_normal(trials)
        lam_tilde = np.maximum(lam_min - eig_noise * (tau - z), 0.0)
        eta_tilde = np.sqrt(np.maximum(gamma - lam_tilde, 0.0))
        if dynamic_k:
            dynamic = lam_tilde >= gamma
            for t in np.flatnonzero(dynamic):
                ks[t] = _dynamic_sketch_size(epsilon, delta, k, gamma, float(lam_tilde[t]))
                eta_tilde[t] = 0.0
            eps_cert = epsilon if dynamic.any() else eps_cert

    M = sketch_gram(A, gram_eig, eta_tilde, ks, rng=rng, sampler=sampler)
    theta, robust = _solve_from_gram(M)
    return Fit(
        theta=theta,
        budget_spent=ApproxDP(eps_cert, delta),
        estimator="linear_mixing",
        diagnostics={
            "gamma": float(gamma),
            "k": ks if dynamic_k else k,
            "tau": float(tau),
            "eig_noise_std": float(eig_noise),
            "lambda_tilde": lam_tilde,
            "eta_tilde": eta_tilde,
            "scale": scale,
            "failure_prob": float(varrho),
            "epsilon_accounted": float(eps_acc),
            "epsilon_certified": float(eps_cert),
            "dynamic": dynamic,
            "sketch_gram": M,
            "n_robust_solves": int(robust.sum()),
            "faithful": faithful,
            "sampler": sampler,
        },
    )


def _dynamic_sketch_size(
    epsilon: float, delta: float, k: int, gamma: float, lam_tilde: float
) -> int:
    """Largest integer k' >= k with eq. (17) at (gamma/sqrt(k'), lam_tilde, k') < epsilon."""

    def ok(kk: int) -> bool:
        return (
            linear_mixing_epsilon(lam_tilde, kk, delta, eta=gamma / math.sqrt(kk), refine=False)
            < epsilon
        )

    if not ok(k):  # cannot happen when lam_tilde >= gamma (phi decreases in gamma)
        return k
    lo, hi = k, 2 * k
    while ok(hi):
        lo, hi = hi, 2 * hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid
    return lo


def fit_sheffet_sketch(
    X: np.ndarray,
    y: np.ndarray,
    *,
    budget: ApproxDP,
    rng: np.random.Generator,
    trials: int = 1,
    bound_X: float = 1.0,
    bound_y: float = 1.0,
    k: int | None = None,
    failure_prob: float | None = None,
    calibration: str = "rdp",
    sampler: str = "wishart",
) -> Fit:
    r"""Gaussian sketch with additive noise, Sheffet (2017, 2019); Lev et al. (2026) eq. (7).

    .. math::

        \hat\theta_{\rm Sketch} = ((SX+\eta\xi)^\top(SX+\eta\xi))^{-1}(SX+\eta\xi)^\top
        (SY+\eta\zeta),

    run on :math:`[X, Y]/s`, :math:`s = \sqrt{C_X^2+C_Y^2}` (so the noise std is
    :math:`\eta` in normalised units, :math:`s\eta` in raw units), with a fixed,
    data-independent :math:`\eta` -- no eigenvalue test.

    Parameters
    ----------
    X, y, budget, rng, trials, bound_X, bound_y, sampler
        As in :func:`fit_linear_mixing`.
    k : int, optional
        Sketch size (>= d + 1); default the Linear-Mixing rule
        :func:`default_sketch_size` (the paper gives none for this method).
    failure_prob : float, optional
        Only used by the default ``k``; default ``delta / 10``.
    calibration : {"rdp", "seed"}, default "rdp"
        ``"rdp"``: :math:`\eta^2 = \gamma`, the smallest value with
        :math:`\min_\alpha\{\varphi(\alpha;k,\gamma)+\mathrm{conv}_\delta(\alpha)\}
        \le\varepsilon` (:func:`sheffet_gamma`): Lev et al. (2025) Lemma 1 with
        :math:`\bar\lambda_{\min} = 0`, exact for this mechanism and matching the
        :math:`\eta^2 = \Theta(\sqrt{k\log(1/\delta)}(1+C_Y^2)/\varepsilon)` scale of
        eq. (7) (raw units). ``"seed"``: :math:`\eta^2 = W_2 = \frac4\varepsilon
        (\sqrt{2k\log(8/\delta)}+\log(8/\delta))` in normalised units, the noise level
        of the Sheffet implementation in Lev et al.'s GaussMix repository
        (docs/notes/lev2026.md §2.6),
        without its threshold test; its epsilon is then certified with the same RDP
        accountant.

    Returns
    -------
    Fit
        ``theta`` (trials, d); ``budget_spent = ApproxDP(eps_cert, delta)`` with
        ``eps_cert`` the RDP-certified epsilon of the noise used (<= epsilon for
        ``"rdp"``); diagnostics ``gamma`` (:math:`\eta^2`), ``noise_std`` (:math:`\eta`,
        normalised units), ``k``, ``scale``, ``alpha_opt``, ``epsilon_certified``,
        ``calibration``, ``sketch_gram`` (trials, d + 1, d + 1; the released
        :math:`\widetilde A^\top\widetilde A`, normalised units), ``n_robust_solves``,
        ``sampler``.

    Notes
    -----
    *Privacy.* Rows of :math:`A` have norm <= 1, :math:`\lambda_{\min}(A^\top A)\ge0`
    for every dataset, and the release :math:`SA + \eta\xi` is therefore
    :math:`(\alpha,\varphi(\alpha;k,\eta^2))`-RDP for all :math:`1<\alpha<\eta^2`
    (Lemma 1, zero-out neighbours), converted to :math:`(\varepsilon,\delta)` by
    Canonne, Kamath & Steinke (2020), Prop. 12 at the full :math:`\delta` (no test, no
    failure event). Since :math:`\eta` does not adapt to :math:`\lambda^{XY}_{\min}`, the
    error saturates at about :math:`L(\theta^*)` plus the noise term (Lev et al. 2026,
    after Theorem 2).

    Examples
    --------
    >>> import numpy as np
    >>> from dpreg import ApproxDP
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, size=(2000, 3)) / np.sqrt(3)
    >>> y = np.clip(X @ np.array([0.5, -0.3, 0.2]) + 0.1 * rng.normal(size=2000), -1, 1)
    >>> fit = fit_sheffet_sketch(X, y, budget=ApproxDP(1.0, 1e-6), rng=rng, trials=4)
    >>> fit.theta.shape
    (4, 3)
    """
    epsilon, delta, X, y, trials, rng, scale, A, gram_eig = _prepare(
        X, y, budget, rng, trials, bound_X, bound_y, sampler
    )
    check_choice(calibration, "calibration", SHEFFET_CALIBRATIONS)
    d = X.shape[1]
    k, varrho = _sketch_size(k, failure_prob, delta, d)
    if math.isinf(epsilon):
        gamma, eps_cert, alpha = 0.0, math.inf, math.nan
    else:
        if calibration == "rdp":
            gamma = sheffet_gamma(epsilon, k, delta)
        else:
            log8 = math.log(8.0 / delta)
            gamma = 4.0 / epsilon * (math.sqrt(2.0 * k * log8) + log8)
        if gamma <= 1.0:
            eps_cert, alpha = math.inf, math.nan
        else:
            eps_cert, alpha = _mixing_epsilon_cached(gamma, k, delta)
    noise = math.sqrt(gamma)
    M = sketch_gram(
        A,
        gram_eig,
        np.full(trials, noise),
        np.full(trials, k, dtype=np.int64),
        rng=rng,
        sampler=sampler,
    )
    theta, robust = _solve_from_gram(M)
    return Fit(
        theta=theta,
        budget_spent=ApproxDP(eps_cert, delta),
        estimator="sheffet_sketch",
        diagnostics={
            "gamma": float(gamma),
            "noise_std": float(noise),
            "k": k,
            "scale": scale,
            "alpha_opt": float(alpha),
            "epsilon_certified": float(eps_cert),
            "calibration": calibration,
            "sketch_gram": M,
            "n_robust_solves": int(robust.sum()),
            "sampler": sampler,
        },
    )
