r"""Synthetic regression designs that stress the regimes of private regression.

The benchmark (``docs/benchmark.md``) runs every method on the 30 offline datasets of
Lev et al. (2026) and on these designs, which vary one thing at a time that decides
which private method wins: the ratio n/d, the conditioning of the design and the tails
of the residuals. Each design is a linear model

.. math::

    x \sim N(0, \Sigma),\quad \operatorname{tr}\Sigma = d, \qquad
    y = x^\top\theta + \sigma e,\quad \|\theta\| = 1,

with :math:`\Sigma = I` (``covariance: isotropic``) or eigenvalues spaced geometrically
over ``condition_number`` (``anisotropic``, rescaled to trace d), and :math:`e` standard
Gaussian or Student-t with 3 degrees of freedom scaled to unit variance
(``noise: student_t3``: heavy tails). The public bounds are fixed by the design, not
read off the draw, exactly like the ``lev_*`` loaders' public bounds: rows are divided
by :math:`C_X = 2\sqrt d` and :math:`y` by :math:`C_Y = 3\sqrt{1 + \sigma^2}` (its
standard deviation when :math:`\Sigma` is isotropic), then projected onto the unit ball
and :math:`[-1, 1]` when beyond them. ``n`` training rows and ``n_test`` held-out rows
are drawn independently from ``default_rng(seed)``; the loader returns the training
rows and :func:`load_regime_split` both.

Examples
--------
>>> train, test = load_regime_split(n=200, d=5, n_test=50, seed=1)
>>> train.n, test.n, bool((np.linalg.norm(train.X, axis=1) <= 1).all())
(200, 50, True)
"""

from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np

from dpreg.data.datasets import Dataset
from dpreg.data.synthetic import _standard_normal

__all__ = [
    "COVARIANCES",
    "LOADERS",
    "NOISES",
    "load_regime",
    "load_regime_split",
    "regime_bounds",
    "regime_rows",
    "regime_theta",
]

COVARIANCES = ("isotropic", "anisotropic")
NOISES = ("gaussian", "student_t3")


def _int(value: Any, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {value!r}")
    return int(value)


def _real(value: Any, name: str, minimum: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.floating):
        raise ValueError(f"{name} must be a number; got {value!r}")
    value = float(value)
    if not (math.isfinite(value) and value >= minimum):
        raise ValueError(f"{name} must be a finite number >= {minimum:g}; got {value!r}")
    return value


def _project(
    X: np.ndarray, y: np.ndarray, bound_X: float, bound_y: float, *, in_place: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Divide by the public bounds and project onto the unit ball and [-1, 1].

    ``in_place=True`` (``X`` is a scratch array of the caller's) overwrites ``X`` by the
    compiled pass of :func:`dpreg.data.regime_kernel.project_rows` once numba is loaded
    or ``X`` is large: the same bits as the numpy reference (``_PATH = "reference"``).
    """
    if in_place and _PATH == "fast" and (_compiled() or X.size >= _COMPILED_MIN_ENTRIES):
        from dpreg.data.regime_kernel import project_rows

        X = project_rows(X, bound_X)
    else:
        from dpreg.data.regime_kernel import project_rows_reference

        X = project_rows_reference(X, bound_X)
    return X, np.clip(y / bound_y, -1.0, 1.0)


#: "fast" (the compiled projection, bit for bit) or "reference" (numpy), for tests
_PATH = "fast"
#: entries from which the projection loads numba itself (else only once it is loaded)
_COMPILED_MIN_ENTRIES = 1 << 22


def _compiled() -> bool:
    """Whether numba is loaded in this process (then its passes cost nothing to start)."""
    return "numba" in sys.modules


def regime_theta(*, d: int, seed: int) -> np.ndarray:
    r"""Return the unit coefficient vector :math:`\theta` that :func:`load_regime_split` draws.

    It is the first draw of ``default_rng(seed)`` (a standard normal vector, normalised),
    in the units of the unbounded model :math:`y = x^\top\theta + \sigma e`. Public for
    studies that evaluate intervals against the truth of a synthetic design.

    Examples
    --------
    >>> float(np.linalg.norm(regime_theta(d=4, seed=0)))
    1.0
    """
    return _unit_theta(np.random.default_rng(_int(seed, "seed", 0)), _int(d, "d", 1))


def _unit_theta(rng: np.random.Generator, d: int) -> np.ndarray:
    """Return the generator's next ``d`` standard normals, normalised (the design's theta)."""
    theta = rng.standard_normal(d)
    return theta / np.linalg.norm(theta)


def _design_options(
    covariance: str, noise: str, condition_number: Any, sigma: Any
) -> tuple[float, float]:
    """Check a design's covariance and noise names; return its (kappa, sigma) as floats."""
    if covariance not in COVARIANCES:
        raise ValueError(f"covariance must be one of {COVARIANCES}; got {covariance!r}")
    if noise not in NOISES:
        raise ValueError(f"noise must be one of {NOISES}; got {noise!r}")
    return _real(condition_number, "condition_number", 1.0), _real(sigma, "sigma", 0.0)


def regime_bounds(*, d: int, sigma: float) -> tuple[float, float]:
    r"""Return the public bounds :math:`(C_X, C_Y) = (2\sqrt d, 3\sqrt{1+\sigma^2})` of a design.

    Rows are divided by them (then projected onto the unit ball and :math:`[-1, 1]`).
    """
    sigma = _real(sigma, "sigma", 0.0)
    return 2.0 * math.sqrt(_int(d, "d", 1)), 3.0 * math.sqrt(1.0 + sigma**2)


def regime_rows(
    *,
    n: int,
    d: int,
    covariance: str = "isotropic",
    condition_number: float = 1.0,
    noise: str = "gaussian",
    sigma: float = 0.5,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Draw a design's truth and ``n`` bounded rows as arrays: ``(theta, X, y)``.

    The draws of :func:`load_regime_split` with ``n`` its training plus held-out rows (it
    splits these rows; the same values, bit for bit), without the :class:`Dataset`
    wrappers: a study that draws a fresh design per trial (the coverage study,
    :mod:`dpreg.experiments.ci_coverage`) pays neither their validation nor a second
    generator for :func:`regime_theta`. ``theta`` is that function's vector (the
    generator's first draw, normalised; module docstring), ``X`` (n, d) the rows within
    the unit ball and ``y`` (n,) within :math:`[-1, 1]`, after division by the public
    bounds of :func:`regime_bounds`.

    Examples
    --------
    >>> theta, X, y = regime_rows(n=50, d=3, seed=2)
    >>> bool(np.array_equal(theta, regime_theta(d=3, seed=2))), X.shape, y.shape
    (True, (50, 3), (50,))
    """
    n, d = _int(n, "n", 1), _int(d, "d", 1)
    kappa, sigma = _design_options(covariance, noise, condition_number, sigma)
    rng = np.random.default_rng(_int(seed, "seed", 0))
    theta = _unit_theta(rng, d)  # regime_theta's draw, so the rows follow it
    scales = np.ones(d)
    rotation = None
    if covariance == "anisotropic":
        scales = np.sqrt(kappa ** (-np.arange(d) / max(d - 1, 1)))
        scales *= math.sqrt(d) / np.linalg.norm(scales)  # trace d
        rotation, r = np.linalg.qr(rng.standard_normal((d, d)))
        rotation *= np.sign(np.diag(r))
    # numpy's normals, compiled once numba is loaded (the same values and generator state)
    X = _standard_normal(rng, (n, d))  # a fresh array: projected in place below
    if rotation is not None:  # (isotropic: scales are 1.0, x * 1.0 == x bit for bit)
        X = (X * scales) @ rotation.T
    e = _standard_normal(rng, (n,))
    if noise == "student_t3":
        e = rng.standard_t(3, size=n) / math.sqrt(3.0)
    y = X @ theta + sigma * e
    bound_X, bound_y = regime_bounds(d=d, sigma=sigma)
    X, y = _project(X, y, bound_X, bound_y, in_place=True)
    return theta, X, y


def load_regime_split(
    *,
    n: int,
    d: int,
    n_test: int | None = None,
    covariance: str = "isotropic",
    condition_number: float = 1.0,
    noise: str = "gaussian",
    sigma: float = 0.5,
    seed: int = 0,
    fetcher: Any = None,
) -> tuple[Dataset, Dataset]:
    """Draw a design's training and held-out rows (module docstring).

    Parameters
    ----------
    n, d : int
        Training rows and dimension.
    n_test : int, optional
        Held-out rows (default ``max(n // 4, 1)``).
    covariance : {"isotropic", "anisotropic"}
    condition_number : float
        Largest over smallest eigenvalue of an anisotropic design (>= 1).
    noise : {"gaussian", "student_t3"}
    sigma : float
        Noise standard deviation (>= 0).
    seed : int
        Seed of theta, the rotation, the rows and the noise.
    fetcher : ignored
        Accepted like every loader's (nothing is downloaded).

    Returns
    -------
    train, test : Dataset
        Rows within the unit ball, ``|y| <= 1``; ``preprocessing`` records the design
        and the public bounds. The rows of :func:`regime_rows` (``n + n_test`` of them),
        split.
    """
    del fetcher
    n, d = _int(n, "n", 2), _int(d, "d", 1)
    n_test = max(n // 4, 1) if n_test is None else _int(n_test, "n_test", 1)
    kappa, sigma = _design_options(covariance, noise, condition_number, sigma)
    seed = _int(seed, "seed", 0)
    m = n + n_test
    _, X, y = regime_rows(
        n=m, d=d, covariance=covariance, condition_number=kappa, noise=noise, sigma=sigma,
        seed=seed,
    )  # fmt: skip
    bound_X, bound_y = regime_bounds(d=d, sigma=sigma)
    design = {
        "step": "regime",
        "n": n,
        "n_test": n_test,
        "d": d,
        "covariance": covariance,
        "condition_number": kappa,
        "noise": noise,
        "sigma": sigma,
        "seed": seed,
        "public_bound_X": bound_X,
        "public_bound_y": bound_y,
        "clipped_rows": "rows beyond the public bounds are projected onto them",
    }
    name = f"regime_n{n}_d{d}"
    desc = (
        f"synthetic design: n = {n}, d = {d}, {covariance} (condition {kappa:g}), "
        f"{noise} noise, sigma = {sigma:g}, seed {seed}"
    )

    def part(rows: slice, label: str) -> Dataset:
        return Dataset(
            name=name,
            X=X[rows],
            y=y[rows],
            description=f"{desc}: {label} rows",
            preprocessing=({**design, "rows": label},),
        )

    return part(slice(0, n), "train"), part(slice(n, m), "test")


def load_regime(**options: Any) -> Dataset:
    """Return the training rows of :func:`load_regime_split` (the registered loader)."""
    return load_regime_split(**options)[0]


load_regime.split = load_regime_split  # type: ignore[attr-defined]

#: The loaders of this module by dataset name (the registry is :mod:`dpreg.data.loaders`).
LOADERS = {"regime": load_regime}
