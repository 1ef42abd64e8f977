r"""Parametric-bootstrap confidence intervals from a private release (post-processing only).

Ferrando, Wang & Sheldon (2022), "Parametric bootstrap for differentially private
confidence intervals" (AISTATS), §3 and §5.2: fit the parameters from the private release;
simulate many times what the mechanism *would* release if the data came from the model at
those parameters; run the estimator's post-processing on every simulated release; form
the interval from the simulated estimates. For linear regression they simulate the
sufficient statistics directly, :math:`X^\top y \mid X \sim \mathcal N(X^\top X\theta,
\sigma^2 X^\top X)` (fixed design), together with the mechanism's noise, never whole
datasets. This module does that for the four estimators whose release is a noisy or
sketched function of :math:`[X, y]^\top[X, y]`: AdaSSP, linear mixing, Sheffet's sketch
and IHM (docs/notes/lev2026.md §2.1--2.6; docs/inference.md for the derivations and the
coverage study).

**What it reads.** :func:`bootstrap_intervals` turns the fit into a
:class:`PrivateRelease` (``theta``, the estimator's name and ``Fit.diagnostics``, the
released quantities) before anything else; ``Fit.nonprivate_diagnostics`` are dropped
and no function here takes the data, so the intervals are post-processing of the release
and cost no budget beyond ``fit.budget_spent``. The other inputs are public: the
:class:`~dpreg.estimators.methods.PublicInputs` (n, d, budget, bounds) and the
bootstrap's own randomness.

**Targets.** ``target="empirical"``: the least-squares fit of the data the release was
computed from, :math:`\hat\theta = (X^\top X)^{-1}X^\top y` (Brown et al. 2024's
target; the data are held fixed and only the mechanism's noise is simulated).
``target="population"``: the coefficient :math:`\theta` of the linear model
:math:`y = X\theta + e`, :math:`e\sim\mathcal N(0,\sigma^2 I)` with :math:`X` fixed; the
bootstrap also draws :math:`X^\top e` and the residual sum of squares, which needs a
private estimate of :math:`\sigma^2` (AdaSSP: its optional noisy :math:`y^\top y`
release, ``yty_share``; linear mixing and Sheffet: derived from the sketch of
:math:`[X, y]`, no extra budget; IHM releases nothing about :math:`y` alone and has no
population target).

**Intervals.** ``interval="basic"`` (the "pivot" interval of Ferrando et al.,
:math:`[2\tilde\theta - q_{1-\alpha/2},\ 2\tilde\theta - q_{\alpha/2}]`, which
corrects the bias of a shrinking estimator to first order) or ``"percentile"``
(:math:`[q_{\alpha/2}, q_{1-\alpha/2}]`), with :math:`q` the quantiles of the simulated
estimates. Coverage is not proven (``proven=False``): it is *checked* by the study kind
``ci_coverage`` and recorded in :data:`CHECKED_INTERVALS`; :func:`bootstrap_intervals`
refuses an (estimator, target) the study has not confirmed and warns outside the checked
regime.
"""

from __future__ import annotations

import functools
import math
import sys
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from dpreg._validation import check_choice, check_probability, check_rng
from dpreg.estimators._linalg import (
    COMPILED_MIN_BATCH,
    solve_symmetric_batch,
    solve_symmetric_shared,
)
from dpreg.estimators._stacked import eigh_stacked
from dpreg.estimators.methods import PublicInputs
from dpreg.inference.bootstrap_kernel import (
    adassp_systems,
    bordered_min_eigenvalue,
    ihm_steps,
    ihm_steps_reference,
    interval_quantiles,
    sketch_solutions,
)
from dpreg.inference.intervals import ConfidenceIntervals
from dpreg.results import Fit

__all__ = [
    "BOOTSTRAP_ESTIMATORS",
    "CHECKED_INTERVALS",
    "INTERVALS",
    "MIN_REPLICATES",
    "TARGETS",
    "BootstrapIntervals",
    "CheckedRegime",
    "PrivateRelease",
    "UncheckedRegimeWarning",
    "bootstrap_intervals",
    "checked_regime",
]

BOOTSTRAP_ESTIMATORS = ("adassp", "linear_mixing", "sheffet_sketch", "ihm")
TARGETS = ("empirical", "population")
INTERVALS = ("basic", "percentile")
MIN_REPLICATES = 10

#: How the sketch and IHM replicates are solved: ``"fast"`` in O(d^2) from the Wishart
#: factors, the solution's random part drawn by its law
#: (:mod:`dpreg.inference.bootstrap_kernel`: the reference's law, not its values), or
#: ``"reference"`` (``eigh``/``eigvalsh`` per replicate, the Wishart matrix formed and
#: solved). An internal switch for the tests (``tests/unit/test_bootstrap_kernel.py``);
#: docs/inference.md, "Replicates without a decomposition per replicate". AdaSSP's
#: replicate systems are formed by one compiled pass on ``"fast"`` (the same bits as the
#: numpy expression of ``"reference"``: its draws and values do not change).
_PATH = "fast"

#: Elements of the largest simulated array per chunk of trials (about 128 MB of float64).
_CHUNK_ELEMENTS = 1 << 24

#: The released diagnostics each estimator's bootstrap reads.
_NEEDS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "adassp": (
            "xtx_noisy",
            "xty_noisy",
            "sigma_lambda_min",
            "sigma_xtx",
            "sigma_xty",
            "lambda_min_shift",
            "ridge_scale",
            "ridge",
            "sensitivities",
        ),
        "linear_mixing": (
            "sketch_gram",
            "k",
            "gamma",
            "tau",
            "eig_noise_std",
            "eta_tilde",
            "scale",
            "dynamic",
        ),
        "sheffet_sketch": ("sketch_gram", "k", "gamma", "scale"),
        "ihm": ("sketch_hessian_mean", "eta2", "gamma", "sigma", "tau", "k", "T", "variant"),
    }
)


class UncheckedRegimeWarning(UserWarning):
    """Intervals computed outside the regime where the coverage study confirmed them."""


# --------------------------------------------------------------------- checked regimes


@dataclass(frozen=True)
class CheckedRegime:
    """Where the coverage study confirmed the bootstrap intervals of one estimator.

    Attributes
    ----------
    estimator, target : str
        The estimator and the target the intervals are for.
    cells : tuple of (n, d, epsilon)
        Cells of the study whose coverage was within 2 standard errors of the nominal
        95%. Public inputs count as checked when they dominate one of them: at least
        that n, at most that d and at least that epsilon (more data, fewer coefficients
        and more budget make the release less noisy relative to the signal).
    design : str
        The synthetic design of the study (the coverage depends on it).
    evidence : str
        The coverage measured, with its standard error, and where it is reported.
    """

    estimator: str
    target: str
    cells: tuple[tuple[int, int, float], ...]
    design: str
    evidence: str

    def covers(self, n: int, d: int, epsilon: float) -> bool:
        """Whether ``(n, d, epsilon)`` dominates a checked cell.

        Examples
        --------
        >>> r = CheckedRegime("adassp", "empirical", ((1000, 10, 1.0),), "toy", "toy")
        >>> r.covers(5000, 3, 1.0), r.covers(500, 3, 1.0)
        (True, False)
        """
        return any(n >= cn and d <= cd and epsilon >= ce for cn, cd, ce in self.cells)

    def describe(self) -> str:
        """One line: the checked cells and the evidence."""
        cells = ", ".join(f"(n={n}, d={d}, eps={e:g})" for n, d, e in self.cells)
        return f"{self.estimator} ({self.target} target) checked at {cells} on {self.design}"


_DESIGN = (
    "the isotropic regime design (dpreg.data.regimes, sigma = 0.5, Gaussian noise, public"
    " bounds 1), delta = 1/n^2, 500 trials per cell"
)

_STUDY = "study dpreg_ci_coverage (config/config.yaml), docs/inference.md"


def _regime(estimator: str, target: str, cells: tuple, evidence: str) -> CheckedRegime:
    return CheckedRegime(estimator, target, cells, _DESIGN, f"{evidence} ({_STUDY})")


#: Every (estimator, target) whose bootstrap coverage the paper-scale study
#: ``dpreg_ci_coverage`` confirmed (basic interval, 500 replicates, alpha = 0.05), with
#: the cells where it did: coverage within 2 standard errors of 95%. Its grid was n in
#: {1000, 10000}, d in {3, 10}, epsilon in {0.3, 1, 3}; every other cell under-covered
#: (docs/inference.md has the whole table).
CHECKED_INTERVALS: Mapping[tuple[str, str], CheckedRegime] = MappingProxyType(
    {
        ("adassp", "empirical"): _regime(
            "adassp",
            "empirical",
            ((1000, 3, 3.0), (10000, 3, 1.0), (10000, 10, 3.0)),
            "coverage 0.950 +/- 0.006, 0.940 +/- 0.006, 0.955 +/- 0.003; the dominated cell"
            " (10000, 3, 3) 0.936 +/- 0.006",
        ),
        ("adassp", "population"): _regime(
            "adassp",
            "population",
            ((1000, 3, 3.0), (10000, 3, 1.0), (10000, 10, 3.0)),
            "yty_share = 0.1; coverage 0.950 +/- 0.006, 0.943 +/- 0.006, 0.956 +/- 0.003;"
            " (10000, 3, 3) 0.945 +/- 0.006",
        ),
        ("ihm", "empirical"): _regime(
            "ihm",
            "empirical",
            ((10000, 3, 1.0), (10000, 10, 3.0)),
            "T = 3, clip = bound_y; coverage 0.955 +/- 0.006, 0.948 +/- 0.004; (10000, 3, 3)"
            " 0.949 +/- 0.006",
        ),
        ("linear_mixing", "empirical"): _regime(
            "linear_mixing",
            "empirical",
            ((10000, 3, 3.0),),
            "coverage 0.939 +/- 0.006",
        ),
        ("linear_mixing", "population"): _regime(
            "linear_mixing",
            "population",
            ((10000, 3, 3.0),),
            "coverage 0.941 +/- 0.006",
        ),
        ("sheffet_sketch", "empirical"): _regime(
            "sheffet_sketch",
            "empirical",
            ((10000, 3, 3.0),),
            "coverage 0.938 +/- 0.006",
        ),
        ("sheffet_sketch", "population"): _regime(
            "sheffet_sketch",
            "population",
            ((10000, 3, 3.0),),
            "coverage 0.941 +/- 0.006",
        ),
    }
)


def checked_regime(estimator: str, target: str) -> CheckedRegime | None:
    """Return the checked regime of ``(estimator, target)``, or ``None`` if unchecked.

    Examples
    --------
    >>> checked_regime("dp_gd", "empirical") is None
    True
    >>> checked_regime("ihm", "empirical").covers(20000, 3, 1.0)
    True
    """
    return CHECKED_INTERVALS.get((estimator, target))


# ----------------------------------------------------------------------------- release


@dataclass(frozen=True)
class PrivateRelease:
    """What the bootstrap may read of a fit: the estimate and the released diagnostics.

    Built by :meth:`from_fit`, which copies ``theta``, the estimator's name and
    ``Fit.diagnostics`` and nothing else (``nonprivate_diagnostics`` are left behind).

    Attributes
    ----------
    estimator : str
    theta : ndarray, shape (trials, d)
    diagnostics : mapping
    """

    estimator: str
    theta: np.ndarray
    diagnostics: Mapping[str, Any]

    @classmethod
    def from_fit(cls, fit: Any) -> PrivateRelease:
        """Keep the released part of ``fit`` (a :class:`~dpreg.results.Fit`)."""
        if isinstance(fit, PrivateRelease):
            return fit
        if not isinstance(fit, Fit):
            raise TypeError(f"fit must be a dpreg.results.Fit; got {type(fit).__name__}")
        if fit.estimator not in BOOTSTRAP_ESTIMATORS:
            raise ValueError(
                f"fit: no parametric bootstrap for estimator {fit.estimator!r}; available for"
                f" {', '.join(BOOTSTRAP_ESTIMATORS)} (DP-GD has its own intervals:"
                " dpreg.inference.dp_gd_confidence_intervals)"
            )
        if fit.intercept is not None:
            raise ValueError(
                "fit: the bootstrap does not cover fits with an intercept (with_intercept);"
                " fit without one"
            )
        missing = [k for k in _NEEDS[fit.estimator] if k not in fit.diagnostics]
        if missing:
            raise ValueError(
                f"fit: the {fit.estimator} fit lacks the released diagnostics {missing}"
                " the bootstrap reads (refit with this version of dpreg)"
            )
        theta = np.array(fit.theta, dtype=np.float64)
        return cls(estimator=fit.estimator, theta=theta, diagnostics=dict(fit.diagnostics))


@dataclass(frozen=True)
class BootstrapIntervals(ConfidenceIntervals):
    """Per-coordinate parametric-bootstrap intervals, one set per trial of the fit.

    The fields of :class:`~dpreg.inference.intervals.ConfidenceIntervals` with
    ``estimates`` the simulated estimates (trials, replicates, d), ``center`` and
    ``half_width`` the midpoint and half length of each interval and ``method``
    ``"parametric_bootstrap_basic"`` or ``"parametric_bootstrap_percentile"``; and:

    Attributes
    ----------
    estimator : str
    target : str
        ``"empirical"`` or ``"population"`` (module docstring).
    replicates : int
        Simulated releases per trial.
    checked : bool
        The public inputs lie in the regime :data:`CHECKED_INTERVALS` records.
    proven : bool
        Always ``False``: no theorem gives the coverage of these intervals.
    """

    estimator: str = ""
    target: str = ""
    replicates: int = 0
    checked: bool = False
    proven: bool = False


# --------------------------------------------------------------------------- helpers


def _psd(S: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Nearest PSD matrices (eigenvalues clamped at 0): ``(S_plus, w_plus, V)``."""
    w, V = np.linalg.eigh(0.5 * (S + np.swapaxes(S, -1, -2)))
    w = np.maximum(w, 0.0)
    return (V * w[..., None, :]) @ np.swapaxes(V, -1, -2), w, V


def _compiled_normals() -> bool:
    """Whether numba is loaded (then its fill of numpy's normals costs nothing to start)."""
    return "numba" in sys.modules


def _standard_normals(rng: np.random.Generator, out: np.ndarray) -> np.ndarray:
    """``rng.standard_normal(out=out)``, compiled once numba is loaded.

    :func:`dpreg.data.normal_kernel.standard_normal_fill`: the same values and generator
    state, about 3x faster per draw (tested equal in ``tests/unit/test_bootstrap_ci.py``).
    """
    from dpreg.data.normal_kernel import standard_normals

    return standard_normals(rng, out, compiled_from=0 if _compiled_normals() else math.inf)


def _bartlett_draws(
    rng: np.random.Generator, lead: tuple[int, ...], p: int, k: int
) -> tuple[np.ndarray, np.ndarray]:
    r"""Draw the Bartlett factor: diagonal :math:`\sqrt{\chi^2_{k-i}}` and the entries below.

    ``(chi (*lead, p), low (*lead, p (p - 1) / 2))``, ``low`` in the row-major order of
    ``numpy.tril_indices(p, -1)``; the chi-squares are drawn first, then the normals.
    """
    idx = np.arange(p)
    chi = np.sqrt(rng.chisquare(np.broadcast_to(k - idx, (*lead, p)).astype(float)))
    low = _standard_normals(rng, np.empty((*lead, p * (p - 1) // 2)))
    return chi, low


def _wishart_from(F: np.ndarray, chi: np.ndarray, low: np.ndarray) -> np.ndarray:
    r"""Form :math:`FBB^\top F^\top` (symmetrised), ``B`` built from :func:`_bartlett_draws`."""
    lead, p = F.shape[:-2], F.shape[-1]
    B = np.zeros((*lead, p, p))
    idx = np.arange(p)
    B[..., idx, idx] = chi
    rows, cols = np.tril_indices(p, -1)
    B[..., rows, cols] = low
    FB = F @ B
    W = FB @ np.swapaxes(FB, -1, -2)
    return 0.5 * (W + np.swapaxes(W, -1, -2))


def _wishart(F: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    r"""Draw :math:`\mathrm{Wishart}_p(k, FF^\top)` for every leading index (Bartlett).

    :math:`FBB^\top F^\top` with :math:`B` lower triangular, :math:`B_{ii}^2\sim
    \chi^2_{k-i}`, :math:`B_{ij}\sim\mathcal N(0,1)` below the diagonal (Anderson 2003,
    Cor. 7.2.1; the sampler of :mod:`dpreg.estimators.gram_sketch`). Needs ``k >= p``.
    Any ``F`` with the same :math:`FF^\top` gives the same law (:math:`BB^\top\sim
    \mathrm{Wishart}_p(k, I)` is invariant under rotations).
    """
    chi, low = _bartlett_draws(rng, F.shape[:-2], F.shape[-1], k)
    return _wishart_from(F, chi, low)


def _factor(S: np.ndarray) -> np.ndarray:
    """``F`` with ``F F^T = S`` for PSD ``S`` (eigen square root; singular allowed).

    One ``eigh`` per distinct matrix of the stack (:func:`eigh_stacked`: the same bits).
    """
    w, V = eigh_stacked(S)
    return V * np.sqrt(np.maximum(w, 0.0))[..., None, :]


def _eigen_factor(S: np.ndarray) -> np.ndarray:
    """:func:`_factor` of a stack without repeated matrices (nothing to deduplicate)."""
    w, V = np.linalg.eigh(S)
    return V * np.sqrt(np.maximum(w, 0.0))[..., None, :]


def _eigvalsh_shared(S: np.ndarray) -> np.ndarray:
    """:func:`numpy.linalg.eigvalsh` of a (t, B, p, p) stack, once per trial.

    The replicates of a trial share its matrix (the empirical target's Gram), so the
    eigenvalues are those of its first replicate: the same bits as per replicate.
    """
    return np.broadcast_to(np.linalg.eigvalsh(S[:, :1]), S.shape[:-1])


def _shifted_factor(base: np.ndarray, shift: np.ndarray) -> np.ndarray:
    r""":func:`_factor` of ``base[t] + shift[t, b] I`` (t, B, p, p), once per distinct shift.

    The matrices are formed as ``gram + shift[..., None, None] * eye`` forms them (the same
    bits), but only for the distinct (trial, shift) pairs: with one Gram per trial they
    repeat wherever the shifts do (linear mixing's :math:`\tilde\eta_b^2 = 0`, Sheffet's
    fixed shift), found from the (t, B) shifts instead of hashing (t, B, p, p) matrices.
    """
    t, B = shift.shape
    p = base.shape[-1]
    bits = np.ascontiguousarray(shift).view(np.uint64).ravel()
    keys = np.stack([np.repeat(np.arange(t, dtype=np.uint64), B), bits], axis=1)
    if np.all(keys[:, 1] == keys[0, 1]):
        first = np.arange(0, t * B, B)
        index = np.repeat(np.arange(t), B)
    else:
        _, first, index = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    trial = first // B
    S = base[trial] + shift.reshape(-1)[first][:, None, None] * np.eye(p)
    return _eigen_factor(S)[index.reshape(-1)].reshape(t, B, p, p)


def _solve(A: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``A^{-1} b`` over any leading shape (the estimators' rule for singular systems)."""
    lead, d = b.shape[:-1], b.shape[-1]
    theta, _, _ = solve_symmetric_batch(A.reshape(-1, d, d), b.reshape(-1, d))
    return theta.reshape(*lead, d)


def _sqrt_psd_apply(w: np.ndarray, V: np.ndarray, z: np.ndarray) -> np.ndarray:
    r""":math:`G^{1/2} z` for :math:`G = V\mathrm{diag}(w)V^\top`; ``z`` (t, B, d)."""
    return np.einsum("tij,tbj->tbi", V * np.sqrt(w)[:, None, :], z)


def _bordered(Gxx: np.ndarray, g: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Form the symmetric ``[[Gxx, g], [g', c]]`` over the leading axes of ``g`` (..., d)."""
    d = g.shape[-1]
    out = np.empty((*g.shape[:-1], d + 1, d + 1))
    out[..., :d, :d] = Gxx
    out[..., :d, d] = g
    out[..., d, :d] = g
    out[..., d, d] = c
    return out


def _bordered_reference(
    V: np.ndarray,
    w: np.ndarray,
    g: np.ndarray,
    c: np.ndarray,
    eta: np.ndarray,
    mask: np.ndarray,
    chi: np.ndarray,
    low: np.ndarray,
) -> np.ndarray:
    r"""Solve the replicates ``mask`` by forming the Wishart matrix (the reference).

    :func:`~dpreg.inference.bootstrap_kernel.sketch_solutions` for the few replicates it
    does not certify: :math:`M = FBB^\top F^\top` with the bordered factor ``F`` formed
    and :math:`M_{xx}\theta = M_{xy}` solved by the estimators' rule; ``chi``, ``low``
    the Bartlett draws of the masked replicates (:func:`_bartlett_draws`).
    """
    trial = np.nonzero(mask)[0]
    d = g.shape[-1]
    e = eta[mask][:, None]
    Vm = V[trial]
    r = np.sqrt(np.maximum(w[trial] + e, 0.0))
    a = np.einsum("mji,mj->mi", Vm, g[mask])
    l = np.divide(a, r, out=np.zeros_like(a), where=r > 0)  # noqa: E741
    F = np.zeros((trial.size, d + 1, d + 1))
    F[:, :d, :d] = Vm * r[:, None, :]
    F[:, d, :d] = l
    F[:, d, d] = np.sqrt(np.maximum(c[mask] + e[:, 0] - (l * l).sum(1), 0.0))
    M = _wishart_from(F, chi, low)
    return _solve(M[:, :d, :d], M[:, :d, d])


# ------------------------------------------------------------------------- simulators


def _adassp(
    rel: PrivateRelease, public: PublicInputs, target: str, B: int, rng: np.random.Generator
) -> tuple[np.ndarray, dict[str, Any]]:
    r"""AdaSSP (Lev et al. 2026, Algorithm 6) re-run on simulated releases.

    Plug-in (one per trial): :math:`G = (\widehat{X^\top X})_+` (the released Gram,
    eigenvalues clamped at 0) and :math:`X^\top y = G\tilde\theta`. Replicate b draws
    :math:`\tilde\lambda^b = \max\{\lambda_{\min}(G)+\sigma_1z - s, 0\}`, the ridge
    :math:`\max\{0, \sigma_1\sqrt{d\log(2d^2/\varrho)} - \tilde\lambda^b\}`, the Gram
    :math:`G + \sigma_1\xi` and :math:`G\tilde\theta [+ \hat\sigma G^{1/2}w] +
    \sigma_2\zeta`, and solves as line 7 does.
    """
    D = rel.diagnostics
    sens = D["sensitivities"]
    if not (
        math.isclose(sens["xtx"], public.bound_X**2, rel_tol=1e-9)
        and math.isclose(sens["xty"], public.bound_X * public.bound_y, rel_tol=1e-9)
    ):
        raise ValueError(
            "public: bound_X and bound_y do not match the bounds the AdaSSP fit was"
            f" calibrated for (sensitivities {sens})"
        )
    theta = rel.theta
    t, d = theta.shape
    G, w, V = _psd(np.asarray(D["xtx_noisy"], dtype=np.float64))
    s1, sG, s2 = D["sigma_lambda_min"], D["sigma_xtx"], D["sigma_xty"]
    extra: dict[str, Any] = {}
    if target == "population":
        if "yty_noisy" not in D:
            raise ValueError(
                "target='population' needs a private residual variance: AdaSSP releases no"
                " statistic of y alone unless fitted with yty_share (a stated share of the"
                " budget for a noisy y'y); refit with e.g. yty_share=0.1, or use"
                " target='empirical'"
            )
        # RSS = y'y - b' A^{-1} b with A the regularised Gram (theta = A^{-1} b); the noise
        # of b adds sigma_2^2 tr(A^{-1}) on average, which is removed.
        b_hat = np.asarray(D["xty_noisy"], dtype=np.float64)
        ridge = np.asarray(D["ridge"], dtype=np.float64)
        wa = np.maximum(w + ridge[:, None], np.finfo(float).tiny)
        rss = D["yty_noisy"] - np.einsum("ti,ti->t", theta, b_hat) + s2**2 * (1.0 / wa).sum(1)
        sigma2 = _residual_variance(rss, public.n, d, public.bound_y**2)
        extra["residual_variance"] = sigma2
    m = d * (d + 1) // 2
    z = rng.standard_normal((t, B))
    upper = _standard_normals(rng, np.empty((t, B, m)))
    zeta = _standard_normals(rng, np.empty((t, B, d)))
    lam = np.maximum(w[:, :1] + s1 * z - D["lambda_min_shift"], 0.0)
    ridge_b = np.maximum(0.0, D["ridge_scale"] - lam)
    b = np.einsum("tij,tj->ti", G, theta)[:, None, :] + s2 * zeta
    if target == "population":
        e = _sqrt_psd_apply(w, V, rng.standard_normal((t, B, d)))
        b = b + np.sqrt(extra["residual_variance"])[:, None, None] * e
    if _PATH == "fast" and t * B >= COMPILED_MIN_BATCH:  # one pass, the same bits
        A = adassp_systems(G, sG, upper, ridge_b)
    else:
        xi = np.take(upper, _symmetric_index(d), axis=-1).reshape(t, B, d, d)
        A = G[:, None] + sG * xi + ridge_b[..., None, None] * np.eye(d)
    return _solve(A, b), extra


@functools.cache
def _symmetric_index(d: int) -> np.ndarray:
    """Where entry (i, j) of a symmetric d x d matrix is in its ``triu_indices(d)`` list."""
    rows, cols = np.triu_indices(d)
    index = np.empty((d, d), dtype=np.intp)
    index[rows, cols] = index[cols, rows] = np.arange(rows.size)
    return index.ravel()


def _residual_variance(rss: np.ndarray, n: int, d: int, bound_y2: float) -> np.ndarray:
    r""":math:`\hat\sigma^2 = \mathrm{RSS}/(n-d)`, clamped to :math:`[0, nC_Y^2/(n-d)]`.

    The upper end holds for every dataset within the bounds (:math:`\mathrm{RSS}\le
    y^\top y\le nC_Y^2`).
    """
    if n <= d:
        raise ValueError(f"public: target='population' needs n > d; got n={n}, d={d}")
    return np.clip(np.asarray(rss, dtype=np.float64), 0.0, n * bound_y2) / (n - d)


def _sketch_plug_in(
    M: np.ndarray, theta: np.ndarray, eta2: np.ndarray, k: int
) -> tuple[np.ndarray, ...]:
    """Compute the sketch bootstrap's plug-in ``(G_xx, w, V, G_xx theta, RSS)``."""
    d = theta.shape[1]
    eye_d = np.eye(d)
    Gxx, w, V = _psd(M[:, :d, :d] / k - eta2[:, None, None] * eye_d)
    mxy = M[:, :d, d]
    schur = (M[:, d, d] - np.einsum("ti,ti->t", mxy, _solve(M[:, :d, :d], mxy))) / k
    gt = np.einsum("tij,tj->ti", Gxx, theta)
    q = np.einsum("ti,ti->t", gt, _solve(Gxx + eta2[:, None, None] * eye_d, theta))
    rss = np.maximum(schur * k / (k - d) - eta2 * (1.0 + q), 0.0)
    return Gxx, w, V, gt, rss


#: The last plug-in computed, by the bytes of its inputs: the coverage study bootstraps
#: each release twice (empirical and population target), and the plug-in is the same
#: deterministic function of the same release, so the second call reuses it (the same
#: bits; about 90 us per trial at d = 10). :func:`_sketch` only reads the arrays (no
#: in-place update; a test runs both targets twice against the plug-in recomputed).
_PLUG_IN_MEMO: dict[tuple[Any, ...], tuple[np.ndarray, ...]] = {}


def _sketch_plug_in_memo(
    M: np.ndarray, theta: np.ndarray, eta2: np.ndarray, k: int
) -> tuple[np.ndarray, ...]:
    """:func:`_sketch_plug_in`, reused when called again on the same inputs (bit for bit)."""
    key = (k, M.shape, theta.shape, theta.dtype.str, M.tobytes(), theta.tobytes(), eta2.tobytes())
    hit = _PLUG_IN_MEMO.get(key)
    if hit is None:
        hit = _sketch_plug_in(M, theta, eta2, k)
        _PLUG_IN_MEMO.clear()
        _PLUG_IN_MEMO[key] = hit
    return hit


def _sketch(
    rel: PrivateRelease, public: PublicInputs, target: str, B: int, rng: np.random.Generator
) -> tuple[np.ndarray, dict[str, Any]]:
    r"""Linear mixing (Algorithm 4) and Sheffet's sketch (eq. (7)) on simulated sketches.

    In the normalised units :math:`A = [X, y]/s` the release is
    :math:`M = \widetilde A^\top\widetilde A\sim\mathrm{Wishart}_{d+1}(k, A^\top A +
    \tilde\eta^2 I)`. Plug-in: :math:`G_{xx} = (M_{xx}/k - \tilde\eta^2 I)_+`,
    :math:`\theta = \tilde\theta`, and the residual sum of squares from the Schur
    complement of :math:`M/k` (:math:`\chi^2_{k-d}/k` times that of its covariance),
    :math:`\widehat{\mathrm{RSS}} = \frac{k}{k-d}\,\mathrm{Schur}(M/k) -
    \tilde\eta^2(1 + \theta^\top G_{xx}(G_{xx}+\tilde\eta^2)^{-1}\theta)`, clamped at 0.
    Replicate b rebuilds :math:`A^\top A` from them (population target: with
    :math:`X^\top e` and :math:`\mathrm{RSS}\sim\hat\sigma^2\chi^2_{n-d}` drawn), reruns
    the eigenvalue test of Algorithm 2 (linear mixing), draws the Wishart and solves.
    """
    D = rel.diagnostics
    scale = math.hypot(public.bound_X, public.bound_y)
    if not math.isclose(D["scale"], scale, rel_tol=1e-9):
        raise ValueError(
            f"public: sqrt(bound_X^2 + bound_y^2) = {scale:g} differs from the fit's scale"
            f" {D['scale']:g}"
        )
    linmix = rel.estimator == "linear_mixing"
    if linmix and (np.ndim(D["k"]) > 0 or np.any(np.asarray(D["dynamic"]))):
        raise ValueError(
            "fit: linear mixing with dynamic_k (Algorithm 5) is not covered: its sketch size"
            " depends on the eigenvalue test; fit with dynamic_k=False"
        )
    theta = rel.theta
    t, d = theta.shape
    p = d + 1
    k = int(D["k"])
    M = np.asarray(D["sketch_gram"], dtype=np.float64)
    eta2 = (
        np.asarray(D["eta_tilde"], dtype=np.float64) ** 2
        if linmix
        else np.full(t, float(D["gamma"]))
    )
    plug_in = _sketch_plug_in_memo if _PATH == "fast" else _sketch_plug_in
    Gxx, w, V, gt, rss = plug_in(M, theta, eta2, k)
    extra: dict[str, Any] = {"rss_normalised": rss}
    if target == "population":
        sigma2 = _residual_variance(rss, public.n, d, 1.0)  # normalised units: |y/s| <= 1
        extra["residual_variance"] = sigma2 * scale**2
        u = np.sqrt(sigma2)[:, None, None] * _sqrt_psd_apply(w, V, rng.standard_normal((t, B, d)))
        gxy = gt[:, None, :] + u
        if _PATH == "fast":  # Gxx factored once per trial, not per replicate: same bits
            theta_ols = theta[:, None, :] + solve_symmetric_shared(Gxx, u)[0]
        else:
            theta_ols = theta[:, None, :] + _solve(np.broadcast_to(Gxx[:, None], (t, B, d, d)), u)
        rss_b = sigma2[:, None] * rng.chisquare(public.n - d, size=(t, B))
        gyy = np.einsum("tbi,tbi->tb", gxy, theta_ols) + rss_b
    else:
        gxy = np.broadcast_to(gt[:, None, :], (t, B, d))
        gyy = np.broadcast_to((np.einsum("ti,ti->t", gt, theta) + rss)[:, None], (t, B))
    population = target == "population"
    fast = _PATH == "fast"
    if fast:
        if linmix and population:  # lambda_min of the bordered Gram in V's basis
            lam = bordered_min_eigenvalue(w, np.einsum("tji,tbj->tbi", V, gxy), gyy)
        elif linmix:  # the empirical Gram is every replicate's: once per trial
            lam = np.linalg.eigvalsh(_bordered(Gxx, gxy[:, 0], gyy[:, 0]))[:, None, 0]
    else:
        gram = _bordered(Gxx[:, None], gxy, gyy)
        if linmix:
            # the population Grams differ per replicate (no repeats to look for); the
            # empirical one is the same for every replicate: decomposed once per trial
            lam = (np.linalg.eigvalsh(gram) if population else _eigvalsh_shared(gram))[..., 0]
    if linmix:
        z = rng.standard_normal((t, B))
        lam_tilde = np.maximum(lam - D["eig_noise_std"] * (D["tau"] - z), 0.0)
        eta2_b = np.maximum(D["gamma"] - lam_tilde, 0.0)
    else:
        eta2_b = np.broadcast_to(eta2[:, None], (t, B))
    if fast:  # x = B_xx^{-T} b drawn by its law, z / sqrt(chi^2_{k-d+1}) (bootstrap_kernel)
        x = _standard_normals(rng, np.empty((t, B, d)))
        x /= np.sqrt(rng.chisquare(k - d + 1, size=(t, B)))[..., None]
        est, ok = sketch_solutions(V, w, gxy, gyy, eta2_b, x)
        if not ok.all():
            chi, low = _bartlett_draws(rng, (int((~ok).sum()),), p, k)
            est[~ok] = _bordered_reference(V, w, gxy, gyy, eta2_b, ~ok, chi, low)
        return est, extra
    if population:
        F = _eigen_factor(gram + eta2_b[..., None, None] * np.eye(p))
    else:
        F = _shifted_factor(gram[:, 0], eta2_b)
    Mb = _wishart(F, k, rng)
    return _solve(Mb[..., :d, :d], Mb[..., :d, d]), extra


def _ihm(
    rel: PrivateRelease, public: PublicInputs, target: str, B: int, rng: np.random.Generator
) -> tuple[np.ndarray, dict[str, Any]]:
    r"""IHM (Lev et al. 2026, Algorithm 1) re-run on simulated sketches and gradients.

    In the units of :math:`X/C_X`: plug-in :math:`G = (\bar H - \eta^2 I)_+` from the mean
    released sketched Hessian (:math:`k\bar H T\sim\mathrm{Wishart}_d(kT, X^\top X +
    \eta^2 I)`) and :math:`\hat\theta = C_X\tilde\theta_T`. Replicate b reruns the
    eigenvalue test (Algorithm 2 with noise :math:`\gamma/\sqrt k`) and T steps from
    :math:`\theta_0 = 0` with fresh :math:`H_t\sim\mathrm{Wishart}_d(k, G +
    \eta_b^2 I)/k` and gradients :math:`G(\hat\theta - \theta_t)\,[-\eta_b^2\theta_t] +
    \sigma\zeta_t`: the clipped gradient of line 6 when no residual is clipped (at
    :math:`\theta_0 = 0` none is when ``clip >= bound_y``).
    """
    if target == "population":
        raise ValueError(
            "target='population' is not available for IHM: it releases no statistic of y"
            " alone (only clipped gradients), so the residual variance has no private"
            " estimate; use target='empirical'"
        )
    D = rel.diagnostics
    theta = rel.theta * public.bound_X
    t, d = theta.shape
    k, T = int(D["k"]), int(D["T"])
    eta2 = np.asarray(D["eta2"], dtype=np.float64)
    G, w, V = _psd(np.asarray(D["sketch_hessian_mean"]) - eta2[:, None, None] * np.eye(d))
    z = rng.standard_normal((t, B))
    lam = np.maximum(w[:, :1] - D["gamma"] / math.sqrt(k) * (D["tau"] - z), 0.0)
    eta2_b = np.maximum(D["gamma"] - lam, 0.0)
    # F F^T = G + eta_b^2 I for every replicate from one eigendecomposition per trial
    r = np.sqrt(w[:, None, :] + eta2_b[..., None])
    F = V[:, None] * r[..., None, :]
    fast = _PATH == "fast"
    th = np.zeros((t, B, d))
    for _ in range(T):
        if fast:  # W^{-1} e_1 drawn by its law (bootstrap_kernel.ihm_solutions)
            q = np.empty((t, B, d))
            if d > 1:
                q[..., 1:] = _standard_normals(rng, np.empty((t, B, d - 1)))
                q[..., 1:] /= np.sqrt(rng.chisquare(k - d + 2, size=(t, B)))[..., None]
            q[..., 0] = 1.0
            q /= rng.chisquare(k - d + 1, size=(t, B))[..., None]
        else:
            chi, low = _bartlett_draws(rng, (t, B), d, k)
        noise = _standard_normals(rng, np.empty((t, B, d)))  # numpy's values and state
        if fast and t * B >= COMPILED_MIN_BATCH:  # one compiled pass (ihm_steps)
            step, ok, g = ihm_steps(
                G, theta, th, eta2_b, D["variant"] == "paper", D["sigma"], noise, V, r, q, k
            )
        elif fast:
            step, ok, g = ihm_steps_reference(
                G, theta, th, eta2_b, D["variant"] == "paper", D["sigma"], noise, V, r, q, k
            )
        else:
            g = np.einsum("tij,tbj->tbi", G, theta[:, None, :] - th)
            if D["variant"] == "paper":
                g = g - eta2_b[..., None] * th
            g = g + D["sigma"] * noise
        if fast:
            if not ok.all():  # near-singular F: the Wishart matrix formed and solved
                chi, low = _bartlett_draws(rng, (int((~ok).sum()),), d, k)
                step[~ok] = _solve(_wishart_from(F[~ok], chi, low) / k, g[~ok])
        else:
            step = _solve(_wishart_from(F, chi, low) / k, g)
        th = th + step
    return th / public.bound_X, {}


_SIMULATORS = {
    "adassp": _adassp,
    "linear_mixing": _sketch,
    "sheffet_sketch": _sketch,
    "ihm": _ihm,
}


# ------------------------------------------------------------------------------ API


def _check_replicates(replicates: Any) -> int:
    if (
        isinstance(replicates, bool)
        or not isinstance(replicates, int | np.integer)
        or replicates < MIN_REPLICATES
    ):
        raise ValueError(f"replicates must be an integer >= {MIN_REPLICATES}; got {replicates!r}")
    return int(replicates)


def bootstrap_intervals(
    fit: Fit | PrivateRelease,
    *,
    public: PublicInputs,
    rng: np.random.Generator,
    alpha: float = 0.05,
    replicates: int = 1000,
    target: str = "empirical",
    interval: str = "basic",
    require_checked: bool = True,
) -> BootstrapIntervals:
    r"""Per-coordinate confidence intervals from a private fit by parametric bootstrap.

    Ferrando, Wang & Sheldon (2022), §3 (Algorithm 1) and §5.2 (linear regression by
    its sufficient statistics): the fit's release is re-simulated at the estimated
    parameters ``replicates`` times and the estimator's post-processing re-run on each
    simulated release (module docstring; docs/inference.md has what each estimator's
    bootstrap simulates). Post-processing only: nothing but the release, the public
    inputs and ``rng`` is used, so no budget is spent.

    Parameters
    ----------
    fit : Fit or PrivateRelease
        A fit of ``adassp``, ``linear_mixing`` (``dynamic_k=False``),
        ``sheffet_sketch`` or ``ihm`` (no intercept). Only ``theta`` and
        ``diagnostics`` are read (:meth:`PrivateRelease.from_fit`).
    public : PublicInputs
        The public inputs of the fit: ``n`` (the population target's degrees of
        freedom and the checked-regime test), ``d`` (must equal the fit's), the budget
        ``(epsilon, delta)`` (the checked-regime test) and the bounds ``bound_X``,
        ``bound_y`` the fit used (checked against its diagnostics where they are
        recorded). The estimator's hyperparameters are read from the diagnostics.
    rng : numpy.random.Generator
        The bootstrap's randomness (a fixed seed gives the same intervals).
    alpha : float, default 0.05
        Intervals of nominal level :math:`1-\alpha`, in (0, 1).
    replicates : int, default 1000
        Simulated releases per trial (>= 10), vectorised.
    target : {"empirical", "population"}, default "empirical"
        The least-squares fit of the data (fixed data, mechanism noise only) or the
        coefficient of the linear model with Gaussian errors (fixed design; needs a
        private residual variance: AdaSSP fitted with ``yty_share``, linear mixing and
        Sheffet from their sketch; not IHM).
    interval : {"basic", "percentile"}, default "basic"
        The pivot interval :math:`[2\tilde\theta - q_{1-\alpha/2}, 2\tilde\theta -
        q_{\alpha/2}]` or the percentile interval :math:`[q_{\alpha/2},
        q_{1-\alpha/2}]`.
    require_checked : bool, default True
        Refuse an (estimator, target) that :data:`CHECKED_INTERVALS` does not list; the
        coverage study passes False to check them.

    Returns
    -------
    BootstrapIntervals
        ``lower``/``upper`` (trials, d), ``estimates`` (trials, replicates, d) the
        simulated estimates, ``checked`` (whether the public inputs lie in the checked
        regime), ``proven`` (False); ``metadata`` holds ``alpha``, ``interval``,
        ``estimate`` (the fit's theta), ``checked_regime`` (text or None) and, for the
        population target, ``residual_variance`` (trials,), the private estimate used.

    Raises
    ------
    TypeError
        ``fit`` is not a Fit, ``public`` not a PublicInputs, ``rng`` not a Generator.
    ValueError
        An estimator without a bootstrap or without a coverage check (unless
        ``require_checked=False``), a fit lacking the released diagnostics, ``d`` or the
        bounds not matching the fit, ``alpha`` outside (0, 1), ``replicates < 10``, an
        unknown ``target`` or ``interval``, or a population target the release cannot
        support.

    Warns
    -----
    UncheckedRegimeWarning
        The estimator is checked, but not at these public inputs (``checked=False``).

    Examples
    --------
    >>> import numpy as np
    >>> from dpreg import ApproxDP
    >>> from dpreg.estimators.adassp import fit_adassp
    >>> from dpreg.estimators.methods import PublicInputs
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, size=(10000, 3)) / np.sqrt(3)
    >>> y = np.clip(X @ np.array([0.5, -0.3, 0.2]) + 0.1 * rng.normal(size=10000), -1, 1)
    >>> fit = fit_adassp(X, y, budget=ApproxDP(1.0, 1e-8), rng=rng, bound_X=1.0, bound_y=1.0)
    >>> public = PublicInputs(n=10000, d=3, epsilon=1.0, delta=1e-8, bound_X=1.0, bound_y=1.0)
    >>> ci = bootstrap_intervals(fit, public=public, rng=np.random.default_rng(1), replicates=200)
    >>> ci.lower.shape, bool(np.all(ci.lower < ci.upper)), ci.checked, ci.proven
    ((1, 3), True, True, False)
    """
    release = PrivateRelease.from_fit(fit)
    del fit  # from here on only the release is in scope
    if not isinstance(public, PublicInputs):
        raise TypeError(
            f"public must be a dpreg.estimators.methods.PublicInputs; got {type(public).__name__}"
        )
    rng = check_rng(rng)
    alpha = check_probability(alpha, "alpha")
    replicates = _check_replicates(replicates)
    check_choice(target, "target", TARGETS)
    check_choice(interval, "interval", INTERVALS)
    if not isinstance(require_checked, bool):
        raise ValueError(f"require_checked must be True or False; got {require_checked!r}")
    trials, d = release.theta.shape
    if public.d != d:
        raise ValueError(f"public: d={public.d} but the fit has d={d} coefficients")

    regime = checked_regime(release.estimator, target)
    if regime is None and require_checked:
        raise ValueError(
            f"no checked coverage for bootstrap intervals of {release.estimator!r} with"
            f" target={target!r}: the study dpreg_ci_coverage (kind ci_coverage) has not"
            " confirmed them (docs/inference.md); pass require_checked=False to compute them"
            " anyway, e.g. to check them"
        )
    checked = regime is not None and regime.covers(public.n, d, public.epsilon)
    if regime is not None and not checked:
        warnings.warn(
            f"bootstrap intervals of {release.estimator!r} ({target} target) are outside the"
            f" regime the coverage study checked (n={public.n}, d={d},"
            f" eps={public.epsilon:g}; {regime.describe()}): their coverage is unknown"
            " (docs/inference.md)",
            UncheckedRegimeWarning,
            stacklevel=2,
        )

    simulate = _SIMULATORS[release.estimator]
    chunk = max(1, _CHUNK_ELEMENTS // (replicates * (d + 1) ** 2))
    sims, extras = [], []
    for start in range(0, trials, chunk):
        part = PrivateRelease(
            release.estimator,
            release.theta[start : start + chunk],
            _slice_diagnostics(release.diagnostics, start, chunk, trials),
        )
        sim, extra = simulate(part, public, target, replicates, rng)
        sims.append(sim)
        extras.append(extra)
    est = np.concatenate(sims, axis=0)
    if _PATH == "fast" and est.shape[0] * replicates >= COMPILED_MIN_BATCH:
        q_lo, q_hi = interval_quantiles(est, alpha / 2.0, 1.0 - alpha / 2.0)  # numpy's bits
    else:
        q_lo, q_hi = np.quantile(est, [alpha / 2.0, 1.0 - alpha / 2.0], axis=1)
    theta = release.theta
    if interval == "basic":
        lower, upper = 2.0 * theta - q_hi, 2.0 * theta - q_lo
    else:
        lower, upper = q_lo, q_hi
    metadata: dict[str, Any] = {
        "alpha": alpha,
        "interval": interval,
        "estimate": theta.copy(),
        "checked_regime": None if regime is None else regime.describe(),
        "reference": "Ferrando, Wang & Sheldon (2022), Algorithm 1; docs/inference.md",
    }
    for key in extras[0]:
        metadata[key] = np.concatenate([e[key] for e in extras])
    return BootstrapIntervals(
        lower=lower,
        upper=upper,
        center=0.5 * (lower + upper),
        half_width=0.5 * (upper - lower),
        estimates=est,
        method=f"parametric_bootstrap_{interval}",
        metadata=metadata,
        estimator=release.estimator,
        target=target,
        replicates=replicates,
        checked=checked,
        proven=False,
    )


def _slice_diagnostics(
    diagnostics: Mapping[str, Any], start: int, size: int, trials: int
) -> dict[str, Any]:
    """Per-trial arrays (leading axis ``trials``) sliced to one chunk; the rest as is."""
    return {
        key: value[start : start + size]
        if isinstance(value, np.ndarray) and value.ndim >= 1 and value.shape[0] == trials
        else value
        for key, value in diagnostics.items()
    }
