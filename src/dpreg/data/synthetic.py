"""Seeded synthetic data-generating processes (DGPs).

A DGP holds its ground-truth parameters (drawn once, e.g. per configuration) and
samples data sets from them with an explicit ``numpy.random.Generator``::

    rng = np.random.default_rng(2025)
    dgp = make_dgp("iv_linear", rng=rng, p=5, q=5, r=5)   # draws beta, Theta, Phi, phi
    ds = dgp.sample(1000, rng=rng)                          # draws z, u, noise

Papers add DGPs by subclassing :class:`SyntheticDGP` (a frozen dataclass with a
``draw`` classmethod and a ``sample`` method) and calling :func:`register_dgp`.
No global random state is used anywhere.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from dpreg._validation import check_matrix, check_positive, check_rng
from dpreg.data.datasets import Dataset

__all__ = [
    "IVLinearDGP",
    "LinearGaussianDGP",
    "SyntheticDGP",
    "dgp_names",
    "make_dgp",
    "register_dgp",
]


def _check_n(n: Any) -> int:
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise ValueError(f"n must be a positive integer; got {n!r}")
    return int(n)


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
