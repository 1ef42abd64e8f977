"""Shared input validation for every public estimator (the ``_check_*`` layer).

Each check raises ``ValueError`` (or ``TypeError``) with a message naming the
argument and the fix; none of them modifies data silently.
"""

from __future__ import annotations

import math
import numbers
import os
from typing import Any

import numpy as np


def _as_real_array(value: Any, name: str) -> np.ndarray:
    """``value`` as float64, refusing complex, boolean-only confusion, strings and objects.

    Numbers passed as text, complex values (whose imaginary part numpy would drop with a
    mere warning) and columns that do not convert (a string column, ``pd.NA``) raise a
    ``TypeError`` naming the argument instead of numpy's or pandas' own message.
    """
    raw = np.asarray(value)
    if np.iscomplexobj(raw):
        raise TypeError(f"{name} must be real; got a complex array (dtype {raw.dtype})")
    if raw.dtype.kind in "USV":
        raise TypeError(f"{name} must be numeric; got text (dtype {raw.dtype})")
    try:
        arr = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise TypeError(
            f"{name} must be numeric: it holds values that are not numbers ({err});"
            " convert or drop non-numeric columns and missing values first"
        ) from None
    if raw.dtype.kind == "O" and any(isinstance(v, complex | str | bytes) for v in raw.flat):
        raise TypeError(f"{name} must hold real numbers only; got strings or complex values")
    return arr


def check_matrix(X: Any, name: str = "X") -> np.ndarray:
    """Return ``X`` as a finite float64 array of shape (n, d)."""
    arr = _as_real_array(X, name)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array of shape (n, d); got shape {arr.shape}")
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"{name} must be non-empty; got shape {arr.shape}")
    _check_finite(arr, name)
    return arr


def check_vector(y: Any, n: int, name: str = "y") -> np.ndarray:
    """Return ``y`` as a finite float64 vector of length ``n`` (a column (n, 1) is accepted)."""
    arr = _as_real_array(y, name)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array of length n={n}; got shape {arr.shape}")
    if arr.shape[0] != n:
        raise ValueError(f"{name} has {arr.shape[0]} rows but X has {n}; they must match")
    _check_finite(arr, name)
    return arr


def _check_finite(arr: np.ndarray, name: str) -> None:
    if not np.all(np.isfinite(arr)):
        bad = np.argwhere(~np.isfinite(arr))
        where = bad[0].tolist()
        raise ValueError(
            f"{name} contains NaN or infinite values ({len(bad)} entries, first at index {where});"
            " drop or impute them before fitting"
        )


def check_regression(
    X: Any, y: Any, *, require_full_rank: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """Validate a regression design: shapes, finite values, n >= d and (optionally) full rank."""
    X = check_matrix(X, "X")
    y = check_vector(y, X.shape[0], "y")
    n, d = X.shape
    if n < d:
        raise ValueError(
            f"need at least as many rows as columns: X has n={n} rows and d={d} columns"
        )
    if require_full_rank:
        rank = np.linalg.matrix_rank(X)
        if rank < d:
            raise ValueError(
                f"X is rank deficient (rank {rank} < d={d}); drop collinear columns first"
            )
    return X, y


def check_row_norm_bound(
    X: np.ndarray, bound: float, name: str = "X", bound_name: str = "bound_X"
) -> None:
    """Require max_i ||x_i||_2 <= bound: the public bound must hold, never silently clipped."""
    check_positive(bound, bound_name)
    if X.ndim == 2:  # the largest squared row norm (einsum: one pass, no (n, d) temporary)
        worst = math.sqrt(float(np.einsum("ij,ij->i", X, X).max()))
    else:
        worst = float(np.abs(X).max())
    if worst > bound * (1 + 1e-12):
        raise ValueError(
            f"{name} violates its public bound: max row norm {worst:.6g}"
            f" > {bound_name}={bound:.6g}; rescale or clip {name} to the bound before fitting"
        )


def check_optional_bounds(X: np.ndarray, y: np.ndarray, bound_X: Any, bound_y: Any) -> None:
    """Check the public bounds an estimator was given (``None``: no bound declared).

    For estimators whose mechanism is set by a clip threshold rather than by the data
    bounds (DP-SGD, DP-FTRL, DP-SSGD, DP-AMBSSGD): the bounds are still accepted, like
    every other estimator's, and checked against the data (never clipped silently).
    """
    if bound_X is not None:
        check_row_norm_bound(X, bound_X, "X", "bound_X")
    if bound_y is not None:
        check_row_norm_bound(y, bound_y, "y", "bound_y")


def check_real(value: Any, name: str) -> float:
    """Return ``value`` as a float if it is a real number; ``TypeError`` naming ``name`` if not.

    Booleans, strings (``"1.0"``), ``None`` and complex numbers are refused: a number
    written as text or a flag passed for a number is a mistake, never a value.

    Examples
    --------
    >>> check_real(2, "clip")
    2.0
    >>> check_real("1.0", "clip")
    Traceback (most recent call last):
    ...
    TypeError: clip must be a real number; got '1.0' (str)
    """
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number; got {value!r} ({type(value).__name__})")
    return float(value)


def check_positive(value: Any, name: str, *, allow_inf: bool = False) -> float:
    """Return ``value`` as a float > 0 (finite unless ``allow_inf``)."""
    v = check_real(value, name)
    if math.isnan(v) or v <= 0 or (math.isinf(v) and not allow_inf):
        kind = "a positive number" if allow_inf else "a finite positive number"
        raise ValueError(f"{name} must be {kind}; got {value!r}")
    return v


def check_probability(value: Any, name: str) -> float:
    """Return ``value`` as a float in the open interval (0, 1)."""
    v = check_real(value, name)
    if not (0.0 < v < 1.0):
        raise ValueError(f"{name} must lie in the open interval (0, 1); got {value!r}")
    return v


MEMORY_LIMIT_BYTES = int(os.environ.get("DPREG_MEMORY_LIMIT_BYTES", 0)) or (
    os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    if hasattr(os, "sysconf") and "SC_PHYS_PAGES" in os.sysconf_names
    else 64 * 2**30
)
"""Memory an estimator call may plan to use: the machine's physical memory, or the
environment variable ``DPREG_MEMORY_LIMIT_BYTES``."""


def check_trials(trials: Any, *, bytes_per_trial: int = 64, name: str = "trials") -> int:
    """Return ``trials`` as a positive int whose arrays fit in memory.

    ``bytes_per_trial`` is the caller's estimate of what one trial holds at once (default:
    a few float64 scalars, the least any estimator keeps); a request whose total exceeds
    :data:`MEMORY_LIMIT_BYTES` is refused before any work, naming ``trials`` and the memory
    it needs, instead of ending in numpy's ``MemoryError``.
    """
    if isinstance(trials, bool) or not isinstance(trials, int | np.integer) or trials < 1:
        raise ValueError(f"{name} must be a positive integer; got {trials!r}")
    need = int(trials) * max(int(bytes_per_trial), 1)
    if need > MEMORY_LIMIT_BYTES:
        raise ValueError(
            f"{name}={int(trials)} needs at least {need / 2**30:.3g} GiB"
            f" ({bytes_per_trial} bytes per trial), more than the"
            f" {MEMORY_LIMIT_BYTES / 2**30:.3g} GiB available; run fewer trials per call"
        )
    return int(trials)


def check_rng(rng: Any) -> np.random.Generator:
    """Require an explicit ``numpy.random.Generator`` (SPEC 7); no global state."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            "rng must be a numpy.random.Generator (use np.random.default_rng(seed));"
            f" got {type(rng).__name__}"
        )
    return rng


def check_choice(value: Any, name: str, choices: tuple[str, ...]) -> str:
    """Require ``value`` to be one of ``choices``."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}; got {value!r}")
    return value


def check_bounded_design(
    X: Any, y: Any, *, bound_X: Any, bound_y: Any, trials: Any, rng: Any
) -> tuple[np.ndarray, np.ndarray, int, np.random.Generator]:
    """Validate a DP regression call on bounded data (rank deficiency allowed).

    Shapes and finite values, n >= d, the public bounds ``max ||x_i|| <= bound_X`` and
    ``max |y_i| <= bound_y`` (never clipped silently), ``trials`` and ``rng``.
    """
    X, y = check_regression(X, y, require_full_rank=False)
    check_row_norm_bound(X, bound_X, "X", "bound_X")
    check_row_norm_bound(y, bound_y, "y", "bound_y")
    n, d = X.shape  # per trial: Gram-sized releases and one residual per row
    return X, y, check_trials(trials, bytes_per_trial=8 * (3 * d * d + n + 4 * d)), check_rng(rng)
