"""Seeded synthetic data-generating processes (DGPs).

A DGP holds its ground-truth parameters (drawn once, e.g. per configuration) and
samples data sets from them with an explicit ``numpy.random.Generator``::

    rng = np.random.default_rng(2025)
    dgp = make_dgp("iv_linear", rng=rng, p=5, q=5, r=5)   # draws beta, Theta, Phi, phi
    ds = dgp.sample(1000, rng=rng)                          # draws z, u, noise

The Section 4.1 model of Liang et al. (2025) is also drawn in batches of trials
(:func:`draw_iv_truth_batch`, :func:`sample_iv_batch`), in the same order of draws as
:class:`IVLinearDGP`.

Papers add DGPs by subclassing :class:`SyntheticDGP` (a frozen dataclass with a
``draw`` classmethod and a ``sample`` method) and calling :func:`register_dgp`.
No global random state is used anywhere.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from dpreg._validation import check_matrix, check_positive, check_rng
from dpreg.data.datasets import Dataset

_COMPILED_MIN_DRAWS = 2**20  # normals per draw from which numba's start-up (~0.4 s) pays
_ACCUMULATE = "in_place"  # sample_iv_batch: "in_place", or "expression" (the reference)

__all__ = [
    "BROWN_DESIGNS",
    "BrownDGP",
    "IVLinearDGP",
    "LevClippingMLPDGP",
    "LinearGaussianDGP",
    "SyntheticDGP",
    "dgp_names",
    "draw_iv_truth_batch",
    "make_dgp",
    "register_dgp",
    "sample_iv_batch",
]


def _check_n(n: Any) -> int:
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise ValueError(f"n must be a positive integer; got {n!r}")
    return int(n)


def _standard_normal(
    rng: np.random.Generator, shape: tuple[int, ...], out: np.ndarray | None = None
) -> np.ndarray:
    """``rng.standard_normal(shape)``: the same values and generator state, compiled if large.

    Large draws (from :data:`_COMPILED_MIN_DRAWS`, or once numba is loaded in this process)
    use :func:`dpreg.data.normal_kernel.standard_normal_fill` (numpy's ziggurat on the same
    bit generator, about 2.5x faster); both paths give identical arrays. ``out`` (checked
    by the caller: C-contiguous float64 of ``shape``) is written instead of a new array.
    """
    from dpreg.data.normal_kernel import standard_normals

    buf = np.empty(shape) if out is None else out
    return standard_normals(rng, buf, compiled_from=_COMPILED_MIN_DRAWS)


def _check_buffer(buf: Any, name: str, n: int, p: int) -> None:
    """Require ``buf`` (unless None) to be a writeable C-contiguous float64 (n, p) array."""
    if buf is None:
        return
    ok = isinstance(buf, np.ndarray) and buf.dtype == np.float64
    if not (ok and buf.flags.c_contiguous and buf.shape == (n, p)):
        raise ValueError(
            f"{name} must be a C-contiguous float64 ndarray of shape ({n}, {p}); got "
            f"{getattr(buf, 'dtype', type(buf).__name__)} {getattr(buf, 'shape', '')}"
        )
    if not buf.flags.writeable:
        raise ValueError(f"{name} must be writeable")


def _check_dim(v: Any, name: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 1:
        raise ValueError(f"{name} must be a positive integer; got {v!r}")
    return int(v)


class SyntheticDGP(ABC):
    """Base class of synthetic data-generating processes.

    Subclasses are frozen dataclasses holding the ground truth, with

    * ``name`` (class variable): registry key;
    * ``draw(*, rng, **params)`` (classmethod): draw the ground truth;
    * ``sample(n, *, rng)``: draw a :class:`Dataset` of ``n`` rows;
    * ``truth()``: ground-truth arrays (e.g. ``{"theta": ...}``);
    * ``params()``: JSON-able scalar settings.
    """

    name: ClassVar[str]

    @classmethod
    @abstractmethod
    def draw(cls, *, rng: np.random.Generator, **params: Any) -> SyntheticDGP:
        """Draw the ground-truth parameters and return a DGP."""

    @abstractmethod
    def sample(self, n: int, *, rng: np.random.Generator) -> Dataset:
        """Sample ``n`` rows."""

    @abstractmethod
    def truth(self) -> dict[str, np.ndarray]:
        """Return the ground-truth parameters."""

    @abstractmethod
    def params(self) -> dict[str, Any]:
        """Return the JSON-able scalar settings."""

    def _record(self, n: int) -> tuple[tuple[tuple[str, None], ...], tuple[dict[str, Any], ...]]:
        return ((f"synthetic:{self.name}", None),), (
            {"step": "generate", "dgp": self.name, "n": n, "params": self.params()},
        )


@dataclass(frozen=True, eq=False)
class LinearGaussianDGP(SyntheticDGP):
    """Linear model with Gaussian design: ``x ~ N(0, Sigma)``, ``y = x^T theta + sigma e``.

    Attributes
    ----------
    theta : ndarray of shape (d,)
        True coefficients.
    sigma : float
        Noise standard deviation (``e ~ N(0, 1)``).
    cov : ndarray of shape (d, d) or None
        Design covariance ``Sigma``; ``None`` is the identity.
    """

    name: ClassVar[str] = "linear_gaussian"

    theta: np.ndarray
    sigma: float = 1.0
    cov: np.ndarray | None = None

    def __post_init__(self) -> None:
        theta = np.asarray(self.theta, dtype=np.float64)
        if theta.ndim != 1 or theta.size == 0 or not np.isfinite(theta).all():
            raise ValueError(f"theta must be a finite 1-D array; got shape {theta.shape}")
        object.__setattr__(self, "theta", theta)
        if not (isinstance(self.sigma, int | float | np.floating) and self.sigma >= 0):
            raise ValueError(f"sigma must be a non-negative number; got {self.sigma!r}")
        object.__setattr__(self, "sigma", float(self.sigma))
        if self.cov is not None:
            cov = check_matrix(self.cov, "cov")
            d = theta.size
            if cov.shape != (d, d) or not np.allclose(cov, cov.T):
                raise ValueError(f"cov must be a symmetric ({d}, {d}) matrix; got {cov.shape}")
            try:
                chol = np.linalg.cholesky(cov)
            except np.linalg.LinAlgError:
                raise ValueError("cov must be positive definite") from None
            object.__setattr__(self, "cov", cov)
            object.__setattr__(self, "_chol", chol)

    @property
    def d(self) -> int:
        """Dimension."""
        return int(self.theta.size)

    @classmethod
    def draw(
        cls,
        *,
        rng: np.random.Generator,
        d: int,
        sigma: float = 1.0,
        covariance: str = "isotropic",
        condition_number: float = 10.0,
        theta_norm: float | None = 1.0,
    ) -> LinearGaussianDGP:
        """Draw ``theta`` (and a rotation for an anisotropic design).

        Parameters
        ----------
        rng : numpy.random.Generator
            Source of randomness.
        d : int
            Dimension.
        sigma : float, default 1
            Noise standard deviation.
        covariance : {"isotropic", "anisotropic"}
            ``"isotropic"``: ``Sigma = I``. ``"anisotropic"``: ``Sigma = Q diag(lam) Q^T``
            with a random orthogonal ``Q`` and eigenvalues geometrically spaced from 1
            down to ``1 / condition_number``.
        condition_number : float, default 10
            Ratio of the largest to smallest eigenvalue (anisotropic only).
        theta_norm : float or None, default 1
            ``theta ~ N(0, I_d)`` rescaled to this Euclidean norm (``None``: unscaled).
        """
        rng = check_rng(rng)
        d = _check_dim(d, "d")
        if covariance not in ("isotropic", "anisotropic"):
            raise ValueError(f"covariance must be 'isotropic' or 'anisotropic'; got {covariance!r}")
        theta = rng.standard_normal(d)
        if theta_norm is not None:
            theta *= check_positive(theta_norm, "theta_norm") / np.linalg.norm(theta)
        cov = None
        if covariance == "anisotropic":
            kappa = check_positive(condition_number, "condition_number")
            if kappa < 1:
                raise ValueError(f"condition_number must be >= 1; got {condition_number!r}")
            lam = kappa ** (-np.arange(d) / max(d - 1, 1))
            Q, R = np.linalg.qr(rng.standard_normal((d, d)))
            Q *= np.sign(np.diag(R))
            cov = (Q * lam) @ Q.T
            cov = (cov + cov.T) / 2
        return cls(theta=theta, sigma=sigma, cov=cov)

    def sample(self, n: int, *, rng: np.random.Generator) -> Dataset:
        """Sample ``n`` rows: ``X`` (n, d), ``y`` (n,)."""
        rng = check_rng(rng)
        n = _check_n(n)
        G = rng.standard_normal((n, self.d))
        X = G if self.cov is None else G @ self._chol.T  # type: ignore[attr-defined]
        y = X @ self.theta + self.sigma * rng.standard_normal(n)
        sources, steps = self._record(n)
        return Dataset(
            name=self.name,
            X=X,
            y=y,
            sources=sources,
            description="synthetic linear Gaussian model y = X theta + sigma * N(0, 1)",
            preprocessing=steps,
        )

    def truth(self) -> dict[str, np.ndarray]:
        """Return ``{"theta": theta}`` (and ``"cov"`` if not the identity)."""
        out = {"theta": self.theta.copy()}
        if self.cov is not None:
            out["cov"] = self.cov.copy()
        return out

    def params(self) -> dict[str, Any]:
        """Return ``d``, ``sigma`` and whether the design is isotropic."""
        return {"d": self.d, "sigma": self.sigma, "isotropic": self.cov is None}


@dataclass(frozen=True, eq=False)
class IVLinearDGP(SyntheticDGP):
    """Linear IV model with confounding (liang2025 section 4.1, eq. 1).

    ``z ~ N(0, I_q)``, ``u ~ N(0, I_r)`` (confounder),
    ``x = Theta^T z + Phi^T u + sigma_x eps_x`` with ``eps_x ~ N(0, I_p)``,
    ``y = beta^T x + phi^T u + sigma_y eps_y`` with ``eps_y ~ N(0, 1)``.
    The confounding is ``Cov(x-error, y-error) = Phi^T phi``.

    Attributes
    ----------
    beta : ndarray of shape (p,)
        Structural coefficients (the estimand).
    Theta : ndarray of shape (q, p)
        First-stage coefficients.
    Phi : ndarray of shape (r, p)
        Confounder loadings of ``x``.
    phi : ndarray of shape (r,)
        Confounder loadings of ``y``.
    sigma_x, sigma_y : float
        Idiosyncratic noise scales (1 in the paper).
    """

    name: ClassVar[str] = "iv_linear"

    beta: np.ndarray
    Theta: np.ndarray
    Phi: np.ndarray
    phi: np.ndarray
    sigma_x: float = 1.0
    sigma_y: float = 1.0

    def __post_init__(self) -> None:
        beta = np.asarray(self.beta, dtype=np.float64)
        Theta = np.asarray(self.Theta, dtype=np.float64)
        Phi = np.asarray(self.Phi, dtype=np.float64)
        phi = np.asarray(self.phi, dtype=np.float64)
        if beta.ndim != 1:
            raise ValueError(f"beta must be 1-D of length p; got shape {beta.shape}")
        p = beta.size
        if Theta.ndim != 2 or Theta.shape[1] != p:
            raise ValueError(f"Theta must have shape (q, p={p}); got {Theta.shape}")
        if Theta.shape[0] < p:
            raise ValueError(
                f"need at least as many instruments as regressors: q={Theta.shape[0]} < p={p}"
            )
        if Phi.ndim != 2 or Phi.shape[1] != p:
            raise ValueError(f"Phi must have shape (r, p={p}); got {Phi.shape}")
        if phi.shape != (Phi.shape[0],):
            raise ValueError(f"phi must have shape (r={Phi.shape[0]},); got {phi.shape}")
        for arr, nm in ((beta, "beta"), (Theta, "Theta"), (Phi, "Phi"), (phi, "phi")):
            if not np.isfinite(arr).all():
                raise ValueError(f"{nm} contains NaN or infinite values")
        for nm in ("sigma_x", "sigma_y"):
            v = getattr(self, nm)
            if not (isinstance(v, int | float | np.floating) and v >= 0):
                raise ValueError(f"{nm} must be a non-negative number; got {v!r}")
            object.__setattr__(self, nm, float(v))
        for nm, arr in (("beta", beta), ("Theta", Theta), ("Phi", Phi), ("phi", phi)):
            object.__setattr__(self, nm, arr)

    @property
    def p(self) -> int:
        """Number of endogenous regressors."""
        return int(self.beta.size)

    @property
    def q(self) -> int:
        """Number of instruments."""
        return int(self.Theta.shape[0])

    @property
    def r(self) -> int:
        """Dimension of the confounder."""
        return int(self.Phi.shape[0])

    @classmethod
    def draw(
        cls,
        *,
        rng: np.random.Generator,
        p: int,
        q: int,
        r: int,
        instrument_strength: float = 5.0,
        sigma_x: float = 1.0,
        sigma_y: float = 1.0,
    ) -> IVLinearDGP:
        """Draw the ground truth as in liang2025 section 4.1.

        ``beta ~ N(0, I_p)``; ``Theta = s I_{q x p} + E`` with ``E_ij ~ N(0, 1)`` and
        ``s = instrument_strength`` (5 in the paper; ``I_{q x p}`` is the rectangular
        identity); ``Phi_ij ~ N(0, 1)``; ``phi ~ N(0, I_r)``.
        """
        rng = check_rng(rng)
        p, q, r = _check_dim(p, "p"), _check_dim(q, "q"), _check_dim(r, "r")
        if q < p:
            raise ValueError(f"need q >= p for identification; got q={q}, p={p}")
        s = float(instrument_strength)
        if not np.isfinite(s):
            raise ValueError(f"instrument_strength must be finite; got {instrument_strength!r}")
        beta = rng.standard_normal(p)
        Theta = s * np.eye(q, p) + rng.standard_normal((q, p))
        Phi = rng.standard_normal((r, p))
        phi = rng.standard_normal(r)
        return cls(beta=beta, Theta=Theta, Phi=Phi, phi=phi, sigma_x=sigma_x, sigma_y=sigma_y)

    def sample(self, n: int, *, rng: np.random.Generator) -> Dataset:
        """Sample ``n`` rows: ``X`` (n, p), ``y`` (n,), ``Z`` (n, q); ``u`` is not returned."""
        rng = check_rng(rng)
        n = _check_n(n)
        Z = rng.standard_normal((n, self.q))
        U = rng.standard_normal((n, self.r))
        X = Z @ self.Theta + U @ self.Phi + self.sigma_x * rng.standard_normal((n, self.p))
        y = X @ self.beta + U @ self.phi + self.sigma_y * rng.standard_normal(n)
        sources, steps = self._record(n)
        return Dataset(
            name=self.name,
            X=X,
            y=y,
            Z=Z,
            sources=sources,
            description=(
                "synthetic linear IV model with confounder u: x = Theta^T z + Phi^T u + "
                "sigma_x eps_x, y = beta^T x + phi^T u + sigma_y eps_y (liang2025 sec. 4.1)"
            ),
            preprocessing=steps,
        )

    def truth(self) -> dict[str, np.ndarray]:
        """Return ``beta``, ``Theta``, ``Phi``, ``phi``."""
        return {
            "beta": self.beta.copy(),
            "Theta": self.Theta.copy(),
            "Phi": self.Phi.copy(),
            "phi": self.phi.copy(),
        }

    def params(self) -> dict[str, Any]:
        """Return ``p``, ``q``, ``r``, ``sigma_x``, ``sigma_y``."""
        return {
            "p": self.p,
            "q": self.q,
            "r": self.r,
            "sigma_x": self.sigma_x,
            "sigma_y": self.sigma_y,
        }

    def truth_batch(self) -> dict[str, np.ndarray]:
        """Return :meth:`truth` with a leading axis of length 1 (one truth for every trial).

        The input of :func:`sample_iv_batch` when all data sets share this truth.
        """
        return {k: v[None] for k, v in self.truth().items()}


def draw_iv_truth_batch(
    rng: np.random.Generator,
    *,
    p: int,
    q: int,
    r: int,
    trials: int,
    instrument_strength: float = 5.0,
) -> dict[str, np.ndarray]:
    r"""Draw ``trials`` independent ground truths of Section 4.1 at once.

    :math:`\beta \sim N(0, I_p)`, :math:`\Theta = s I_{q\times p} + E` with
    :math:`E_{ij} \sim N(0, 1)`, :math:`\Phi_{ij} \sim N(0, 1)`,
    :math:`\phi \sim N(0, I_r)` -- the distribution of :meth:`IVLinearDGP.draw`,
    batched (Liang et al. (2025), Section 4.1; used when the truth is redrawn per trial,
    docs/notes/liang2025.md P12). All ``beta`` are drawn first, then all ``Theta``
    noise, all ``Phi``, all ``phi``.

    Parameters
    ----------
    rng : numpy.random.Generator
        Source of the truths.
    p, q, r : int
        Regressors, instruments and confounder dimension.
    trials : int
        Number of truths.
    instrument_strength : float
        The ``s`` of :math:`\Theta = sI + E` (5 in the paper).

    Returns
    -------
    dict
        ``beta`` (trials, p), ``Theta`` (trials, q, p), ``Phi`` (trials, r, p),
        ``phi`` (trials, r).
    """
    rng = check_rng(rng)
    beta = rng.standard_normal((trials, p))
    Theta = instrument_strength * np.eye(q, p)[None] + rng.standard_normal((trials, q, p))
    Phi = rng.standard_normal((trials, r, p))
    phi = rng.standard_normal((trials, r))
    return {"beta": beta, "Theta": Theta, "Phi": Phi, "phi": phi}


def sample_iv_batch(
    truth: Mapping[str, np.ndarray],
    *,
    n: int,
    trials: int,
    rng: np.random.Generator,
    sigma_x: float = 1.0,
    sigma_y: float = 1.0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Sample ``trials`` independent data sets of the Section 4.1 model at once.

    :math:`z_i \sim N(0, I_q)`, :math:`u_i \sim N(0, I_r)`,
    :math:`x_i = \Theta^\top z_i + \Phi^\top u_i + \sigma_x\epsilon_{x,i}`,
    :math:`y_i = \beta^\top x_i + \phi^\top u_i + \sigma_y\epsilon_{y,i}` (Liang et al.
    (2025), eq. (1) with a confounder; the paper swaps the labels of the two errors in
    its text, docs/notes/liang2025.md §5.1). ``u`` is not returned. The draws come in
    the order of :meth:`IVLinearDGP.sample` (all ``z``, all ``u``, all
    :math:`\epsilon_x`, all :math:`\epsilon_y`), so one trial from a generator gives
    the data set that :meth:`IVLinearDGP.sample` draws from the same generator.

    Parameters
    ----------
    truth : mapping
        ``beta`` (k, p), ``Theta`` (k, q, p), ``Phi`` (k, r, p), ``phi`` (k, r) with
        ``k = 1`` (shared truth, :meth:`IVLinearDGP.truth_batch`) or ``k = trials``
        (:func:`draw_iv_truth_batch`).
    n, trials : int
        Rows per data set and number of data sets.
    rng : numpy.random.Generator
        Source of the data.
    sigma_x, sigma_y : float
        Idiosyncratic noise scales (1 in the paper).

    Returns
    -------
    Z : ndarray (trials, n, q)
    X : ndarray (trials, n, p)
    y : ndarray (trials, n)
    """
    rng = check_rng(rng)
    Theta, Phi = truth["Theta"], truth["Phi"]
    q, p = Theta.shape[-2:]
    r = Phi.shape[-2]
    # numpy's normals, compiled for large draws (the same values and generator state)
    Z = _standard_normal(rng, (trials, n, q))
    U = _standard_normal(rng, (trials, n, r))
    if _ACCUMULATE == "in_place":
        # The reference's sums and products, left to right, accumulated in place: the
        # same elementwise operations on the same operands (so the same bits) without
        # three temporaries of the data's size (issue 18, docs/scaling.md).
        X = Z @ Theta
        X += U @ Phi
        noise = _standard_normal(rng, (trials, n, p))
        noise *= sigma_x
        X += noise
        del noise
        y = (X @ truth["beta"][..., None])[..., 0]
        y += (U @ truth["phi"][..., None])[..., 0]
        noise = _standard_normal(rng, (trials, n))
        noise *= sigma_y
        y += noise
        return Z, X, y
    X = Z @ Theta + U @ Phi + sigma_x * _standard_normal(rng, (trials, n, p))
    y = (
        (X @ truth["beta"][..., None])[..., 0]
        + (U @ truth["phi"][..., None])[..., 0]
        + sigma_y * _standard_normal(rng, (trials, n))
    )
    return Z, X, y


#: Presets of :class:`LevClippingMLPDGP`: the authors' notebook and the paper's text.
LEV_CLIPPING_VARIANTS: dict[str, dict[str, Any]] = {
    # Clipping_Test_IHM.ipynb (docs/notes/lev2026.md §5.3, §8 item 18)
    "code": {"n_layers": 3, "latent": "lognormal", "noise_std": 0.2},
    # Lev et al. (2026), App. L: "two-layer MLP", Gaussian latents, sigma = 0.1
    "paper": {"n_layers": 2, "latent": "gaussian", "noise_std": 0.1},
}


def _sigmoid(z: np.ndarray) -> np.ndarray:
    from scipy.special import expit

    return expit(z, out=z)


@dataclass(frozen=True, eq=False)
class LevClippingMLPDGP(SyntheticDGP):
    r"""Lev et al. (2026), App. L / Figure 7: random-MLP features of a 1-D latent.

    ``x ~ LogNormal(1, 1)`` (code) or ``N(0, 1)`` (paper), one-dimensional, is mapped
    through ``n_layers`` fully connected layers of width ``width`` with sigmoid
    activations (weights ``N(0, 1)``, biases ``0.001 N(0, 1)``); the features
    :math:`\phi(x)` are the last hidden layer. The response is
    :math:`y = \phi(x)^\top\theta_0 + b + \sigma z` with ``(theta_0, b)`` a standard
    Gaussian vector of length ``width + 1`` normalised to unit norm (the notebook's
    "normalised Gaussian plus a bias"; our reading: the bias is the last entry and is
    not a feature column; ``intercept=False`` drops it, the paper's text has none).
    ``clip_y`` clips ``y`` to ``[-1, 1]``, what the notebook intended; its ``==`` bug
    makes the clip a no-op there, hence the default ``False``.

    Attributes
    ----------
    weights, biases : tuple of ndarray
        Layer ``l`` maps ``h -> sigmoid(h @ weights[l] + biases[l])``.
    theta : ndarray of shape (width,)
        :math:`\theta_0`.
    intercept : float
        :math:`b` (0 without an intercept).
    noise_std : float
        :math:`\sigma`.
    latent : {"lognormal", "gaussian"}
        Law of the latent: ``LogNormal(latent_mean, latent_std)`` or
        ``N(latent_mean, latent_std^2)``.
    latent_mean, latent_std : float
    clip_y : bool
    """

    name: ClassVar[str] = "lev_clipping_mlp"

    weights: tuple[np.ndarray, ...]
    biases: tuple[np.ndarray, ...]
    theta: np.ndarray
    intercept: float = 0.0
    noise_std: float = 0.2
    latent: str = "lognormal"
    latent_mean: float = 1.0
    latent_std: float = 1.0
    clip_y: bool = False

    def __post_init__(self) -> None:
        if self.latent not in ("lognormal", "gaussian"):
            raise ValueError(f"latent must be 'lognormal' or 'gaussian'; got {self.latent!r}")
        if len(self.weights) == 0 or len(self.weights) != len(self.biases):
            raise ValueError("weights and biases must be non-empty and of equal length")
        width_in = 1
        for W, b in zip(self.weights, self.biases, strict=True):
            if W.shape[0] != width_in or b.shape != (W.shape[1],):
                raise ValueError("layer shapes do not chain from a 1-D latent")
            width_in = W.shape[1]
        if self.theta.shape != (width_in,):
            raise ValueError(f"theta must have shape ({width_in},); got {self.theta.shape}")
        if not self.noise_std >= 0:
            raise ValueError(f"noise_std must be non-negative; got {self.noise_std!r}")

    @property
    def d(self) -> int:
        """Feature dimension (the last layer's width)."""
        return int(self.theta.size)

    @classmethod
    def draw(
        cls,
        *,
        rng: np.random.Generator,
        variant: str = "code",
        n_layers: int | None = None,
        width: int = 128,
        latent: str | None = None,
        noise_std: float | None = None,
        latent_mean: float | None = None,
        latent_std: float = 1.0,
        bias_scale: float = 1e-3,
        intercept: bool = True,
        clip_y: bool = False,
    ) -> LevClippingMLPDGP:
        """Draw the network and ``(theta_0, b)`` (``None`` arguments follow ``variant``).

        Parameters
        ----------
        rng : numpy.random.Generator
            Source of the network weights and of ``theta_0`` (the study's ``net_seed``).
        variant : {"code", "paper"}, default "code"
            Preset of :data:`LEV_CLIPPING_VARIANTS`: ``"code"`` = 3 layers, lognormal
            latent, sigma 0.2 (the notebook); ``"paper"`` = 2 layers, Gaussian, 0.1.
        n_layers, latent, noise_std : optional
            Override the preset.
        width : int, default 128
            Hidden width = feature dimension (``2^7``).
        latent_mean : float, optional
            Default 1 for ``lognormal`` (``mu = 1``), 0 for ``gaussian``.
        latent_std : float, default 1
        bias_scale : float, default 0.001
            Layer biases are ``bias_scale * N(0, 1)``.
        intercept : bool, default True
            Draw ``(theta_0, b)`` jointly normalised (else ``b = 0``, ``theta_0`` unit).
        clip_y : bool, default False
            Clip ``y`` to ``[-1, 1]`` (the notebook's intent; a no-op there).
        """
        rng = check_rng(rng)
        if variant not in LEV_CLIPPING_VARIANTS:
            raise ValueError(
                f"variant must be one of {sorted(LEV_CLIPPING_VARIANTS)}; got {variant!r}"
            )
        preset = LEV_CLIPPING_VARIANTS[variant]
        n_layers = _check_dim(preset["n_layers"] if n_layers is None else n_layers, "n_layers")
        width = _check_dim(width, "width")
        latent = preset["latent"] if latent is None else latent
        noise_std = float(preset["noise_std"] if noise_std is None else noise_std)
        if latent_mean is None:
            latent_mean = 1.0 if latent == "lognormal" else 0.0
        weights, biases = [], []
        width_in = 1
        for _ in range(n_layers):
            weights.append(rng.standard_normal((width_in, width)))
            biases.append(bias_scale * rng.standard_normal(width))
            width_in = width
        g = rng.standard_normal(width + 1 if intercept else width)
        g /= np.linalg.norm(g)
        return cls(
            weights=tuple(weights),
            biases=tuple(biases),
            theta=g[:width].copy(),
            intercept=float(g[width]) if intercept else 0.0,
            noise_std=noise_std,
            latent=latent,
            latent_mean=float(latent_mean),
            latent_std=check_positive(latent_std, "latent_std"),
            clip_y=bool(clip_y),
        )

    def features(self, x: np.ndarray) -> np.ndarray:
        """Map latents ``x`` (n,) to the features (n, width)."""
        h = np.asarray(x, dtype=np.float64).reshape(-1, 1)
        for W, b in zip(self.weights, self.biases, strict=True):
            z = h @ W
            z += b
            h = _sigmoid(z)
        return h

    def sample(self, n: int, *, rng: np.random.Generator) -> Dataset:
        """Sample ``n`` rows: latents, then noise; ``X`` (n, width), ``y`` (n,)."""
        rng = check_rng(rng)
        n = _check_n(n)
        if self.latent == "lognormal":
            x = rng.lognormal(self.latent_mean, self.latent_std, n)
        else:
            x = self.latent_mean + self.latent_std * rng.standard_normal(n)
        X = self.features(x)
        y = X @ self.theta + self.intercept + self.noise_std * rng.standard_normal(n)
        if self.clip_y:
            np.clip(y, -1.0, 1.0, out=y)
        sources, steps = self._record(n)
        return Dataset(
            name=self.name,
            X=X,
            y=y,
            sources=sources,
            description="Lev et al. (2026) App. L: random sigmoid-MLP features of a 1-D latent",
            preprocessing=steps,
        )

    def truth(self) -> dict[str, np.ndarray]:
        """Return ``theta`` (``theta_0``), ``intercept`` and the layer weights/biases."""
        out = {"theta": self.theta.copy(), "intercept": np.array(self.intercept)}
        for i, (W, b) in enumerate(zip(self.weights, self.biases, strict=True)):
            out[f"W{i}"] = W.copy()
            out[f"b{i}"] = b.copy()
        return out

    def params(self) -> dict[str, Any]:
        """Return the JSON-able settings."""
        return {
            "d": self.d,
            "n_layers": len(self.weights),
            "latent": self.latent,
            "latent_mean": self.latent_mean,
            "latent_std": self.latent_std,
            "noise_std": self.noise_std,
            "clip_y": self.clip_y,
            "intercept": self.intercept != 0.0,
        }


#: Designs of :class:`BrownDGP`.
BROWN_DESIGNS: tuple[str, ...] = ("isotropic", "anisotropic")


@dataclass(frozen=True, eq=False)
class BrownDGP(SyntheticDGP):
    r"""Brown et al. (2024), Section 4 / App. B: linear model, isotropic or rotated design.

    :math:`\theta^*` is uniform on the unit sphere (drawn once by :meth:`draw`). Each data
    set (:meth:`sample`) has rows :math:`x_i \sim N(0, I_p)` (``isotropic``) or
    :math:`N(0, U\Lambda U^\top)` with :math:`\Lambda = \mathrm{diag}(2, 1, u_3, \dots,
    u_p)`, :math:`u_i \sim U[1, 2]` and :math:`U` Haar on SO(p), drawn anew per data set
    (``anisotropic``), and :math:`y_i = x_i^\top\theta^* + \xi_i` with
    :math:`\xi_i \sim N(\mu_\xi, \sigma^2)` (the paper: :math:`\mu_\xi = 0`; the
    authors' scripts use 1).

    Draw order (the study's results depend on it): :meth:`draw` takes :math:`\theta^*`
    (normalised :math:`N(0, I_p)`); :meth:`sample` takes the standard normal design
    matrix, then (anisotropic) :math:`u_3..u_p` and the rotation, then the noise.

    Attributes
    ----------
    theta : ndarray of shape (p,)
        :math:`\theta^*`.
    design : {"isotropic", "anisotropic"}
    sigma : float
        :math:`\sigma`, the noise standard deviation.
    noise_mean : float
        :math:`\mu_\xi`.
    """

    name: ClassVar[str] = "brown2024"

    theta: np.ndarray
    design: str = "isotropic"
    sigma: float = 1.0
    noise_mean: float = 0.0

    def __post_init__(self) -> None:
        if self.design not in BROWN_DESIGNS:
            raise ValueError(f"design must be one of {BROWN_DESIGNS}; got {self.design!r}")
        theta = np.asarray(self.theta, dtype=np.float64)
        if theta.ndim != 1 or theta.size == 0 or not np.isfinite(theta).all():
            raise ValueError(f"theta must be a finite 1-D array; got shape {theta.shape}")
        object.__setattr__(self, "theta", theta)
        for nm in ("sigma", "noise_mean"):
            v = getattr(self, nm)
            if isinstance(v, bool) or not isinstance(v, int | float | np.floating):
                raise ValueError(f"{nm} must be a number; got {v!r}")
            if not np.isfinite(v) or (nm == "sigma" and v < 0):
                raise ValueError(f"{nm} must be finite{' and >= 0' * (nm == 'sigma')}; got {v!r}")
            object.__setattr__(self, nm, float(v))

    @property
    def p(self) -> int:
        """Dimension."""
        return int(self.theta.size)

    @classmethod
    def draw(
        cls,
        *,
        rng: np.random.Generator,
        p: int,
        design: str = "isotropic",
        sigma: float = 1.0,
        noise_mean: float = 0.0,
    ) -> BrownDGP:
        r"""Draw :math:`\theta^*` (one ``standard_normal(p)``, normalised)."""
        rng = check_rng(rng)
        p = _check_dim(p, "p")
        if design not in BROWN_DESIGNS:
            raise ValueError(f"design must be one of {BROWN_DESIGNS}; got {design!r}")
        theta = rng.standard_normal(p)
        theta /= np.linalg.norm(theta)
        return cls(theta=theta, design=design, sigma=sigma, noise_mean=noise_mean)

    def sample(
        self,
        n: int,
        *,
        rng: np.random.Generator,
        out: np.ndarray | None = None,
        rotated: np.ndarray | None = None,
    ) -> Dataset:
        r"""Sample ``n`` rows: the design, (anisotropic) its covariance, then the noise.

        ``out``: an optional C-contiguous float64 (n, p) buffer the design's standard
        normals are drawn into (overwritten; the isotropic design is then ``out`` itself),
        so that a loop over many data sets of one shape touches the same memory instead
        of faulting in fresh pages per data set (docs/scaling.md). ``rotated``: the same
        for the anisotropic design, the normals times :math:`(U\Lambda^{1/2})^\top`
        (the same product written into it; not ``out``; ignored for the isotropic
        design). The same values and generator state as without them.
        """
        rng = check_rng(rng)
        n = _check_n(n)
        p = self.p
        _check_buffer(out, "out", n, p)
        if self.design == "anisotropic":
            _check_buffer(rotated, "rotated", n, p)
            if rotated is not None and out is not None and np.shares_memory(out, rotated):
                raise ValueError("rotated must not share memory with out")
        X = _standard_normal(rng, (n, p), out=out)
        if self.design == "anisotropic":
            from scipy.stats import special_ortho_group

            lam = np.concatenate([[2.0, 1.0], rng.uniform(1.0, 2.0, size=max(p - 2, 0))])[:p]
            U = special_ortho_group.rvs(p, random_state=rng) if p > 1 else np.ones((1, 1))
            # rows ~ N(0, U diag(lam) U^T)
            X = np.matmul(X, (U * np.sqrt(lam)).T, out=rotated)
        y = X @ self.theta + self.noise_mean + self.sigma * _standard_normal(rng, (n,))
        sources, steps = self._record(n)
        return Dataset(
            name=self.name,
            X=X,
            y=y,
            sources=sources,
            description=(
                "Brown et al. (2024) Section 4: y = X theta* + N(noise_mean, sigma^2), rows"
                f" N(0, I) or N(0, U Lambda U^T) ({self.design})"
            ),
            preprocessing=steps,
        )

    def truth(self) -> dict[str, np.ndarray]:
        """Return ``{"theta": theta*}``."""
        return {"theta": self.theta.copy()}

    def params(self) -> dict[str, Any]:
        """Return ``p``, ``design``, ``sigma`` and ``noise_mean``."""
        return {
            "p": self.p,
            "design": self.design,
            "sigma": self.sigma,
            "noise_mean": self.noise_mean,
        }


_DGPS: dict[str, type[SyntheticDGP]] = {}


def register_dgp(cls: type[SyntheticDGP], *, replace_existing: bool = False) -> type[SyntheticDGP]:
    """Register a :class:`SyntheticDGP` subclass under ``cls.name`` (usable as a decorator)."""
    if not (isinstance(cls, type) and issubclass(cls, SyntheticDGP)):
        raise TypeError(f"expected a SyntheticDGP subclass; got {cls!r}")
    if cls.name in _DGPS and not replace_existing:
        raise ValueError(f"DGP {cls.name!r} is already registered")
    _DGPS[cls.name] = cls
    return cls


def dgp_names() -> list[str]:
    """Return the registered DGP names, sorted."""
    return sorted(_DGPS)


def make_dgp(name: str, *, rng: np.random.Generator, **params: Any) -> SyntheticDGP:
    """Draw a registered DGP's ground truth: ``cls.draw(rng=rng, **params)``.

    Raises
    ------
    ValueError
        Unknown name (the message lists the known ones).
    """
    cls = _DGPS.get(name)
    if cls is None:
        raise ValueError(f"unknown DGP {name!r}; known DGPs: {', '.join(dgp_names())}")
    return cls.draw(rng=rng, **params)


register_dgp(LinearGaussianDGP)
register_dgp(IVLinearDGP)
register_dgp(LevClippingMLPDGP)
register_dgp(BrownDGP)
