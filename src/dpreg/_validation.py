"""Shared input validation for every public estimator (the ``_check_*`` layer).

Each check raises ``ValueError`` (or ``TypeError``) with a message naming the
argument and the fix; none of them modifies data silently.

:func:`check_bounded_design`, the validation of every one-shot DP regression (AdaSSP,
linear mixing, the Sheffet sketch, IHM, DP-GD), has two paths with the same decisions:
the numpy reference (a finiteness pass over ``X`` and ``y``, a row-norm pass, an
``|y|`` pass) and a compiled one-pass kernel (:func:`_scan_kernel`, numba) that reads
each row once. The compiled pass only ever *accepts*: whenever it finds a non-finite
value, a bound not proven to hold, or an unusual input (not a C-contiguous float64
array), the reference runs and raises its own error, so messages and argument names are
those of the reference by construction (``tests/unit/test_validation_fused.py``).
"""

from __future__ import annotations

import functools
import math
import numbers
import os
import sys
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
    if arr.dtype == np.float64:
        # one pass, no temporary: a NaN or infinite entry makes the sum NaN or infinite,
        # so a finite sum proves every entry finite (an overflowing sum of finite values
        # falls through to the exact check)
        with np.errstate(over="ignore", invalid="ignore"):
            if math.isfinite(float(np.add.reduce(arr, axis=None))):
                return
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


VALIDATION_METHODS = ("auto", "compiled", "reference")
"""Paths of :func:`check_bounded_design`: ``"reference"`` (numpy), ``"compiled"`` (one
numba pass, falling back to the reference on anything it does not accept), ``"auto"``."""

#: ``method="auto"`` takes the compiled pass from this many entries of ``[X, y]`` on, and
#: only when numba is already loaded in the process (by another kernel): importing it for
#: validation alone (about 0.15 s of CPU plus the kernel's cache load) would cost more
#: than the pass saves (about 0.3 ms per 4 * 10^5 entries).
COMPILED_MIN_ELEMENTS = 2**15


@functools.cache
def _scan_kernel() -> Any:
    """Compile (or load from numba's cache) the one-pass row scan."""
    import numba

    @numba.njit(cache=True, nogil=True)
    def scan_rows(X, y):  # pragma: no cover - compiled; tested against the reference
        # One pass over the rows of X (n, d) and y (n,): the largest squared row norm of X
        # and the largest |y_i|, and whether all of them (hence every entry) are finite.
        n, d = X.shape
        worst_x = 0.0
        worst_y = 0.0
        finite = True
        for i in range(n):
            s = 0.0
            for j in range(d):
                v = X[i, j]
                s += v * v
            a = abs(y[i])
            if not (s < np.inf and a < np.inf):  # NaN or inf, or ||x_i||^2 overflowing
                finite = False
            if s > worst_x:
                worst_x = s
            if a > worst_y:
                worst_y = a
        return worst_x, worst_y, finite

    return scan_rows


#: :func:`check_bounded_design_gram` takes the fused compiled pass (validation and Gram)
#: from this many trials on: the number from which the estimators' solvers load numba
#: anyway (``dpreg.estimators._linalg.COMPILED_MIN_BATCH``), so the choice depends on the
#: call's arguments only, never on what the process has imported.
GRAM_COMPILED_MIN_TRIALS = 64
_GRAM_BLOCK = 128  # rows per transposed block of the fused pass (128 x 24 floats: L1)


@functools.cache
def _scan_gram_kernel() -> Any:
    """Compile (or load from numba's cache) the fused row scan and Gram kernel."""
    import numba

    @numba.njit(cache=True, nogil=True, fastmath={"reassoc", "contract"})
    def scan_gram(X, y, G, block):  # pragma: no cover - compiled; tested against numpy
        # One pass over the rows of [X y] in blocks of `block` rows, each copied transposed
        # into T (columns contiguous, zero-padded to a multiple of 3): the scan of
        # scan_rows (squared row norms of X, |y|, finiteness) and the upper triangle of
        # G += T T' in 3 x 3 tiles (nine independent sums in registers). Only
        # reassociation and fused multiply-adds are allowed (no assumption that values
        # are finite): sums are reordered, NaN and inf still propagate and compare.
        n, d = X.shape
        P = G.shape[0]  # d + 1 rounded up to a multiple of 3
        T = np.zeros((P, block))
        norms = np.empty(block)
        worst_x = 0.0
        worst_y = 0.0
        finite = True
        for i0 in range(0, n, block):
            m = min(block, n - i0)
            # four rows per sweep over the columns (four stores per line of T): the
            # same T as one row at a time (_scan_gram_rows_kernel), in 0.85 of the time
            r = 0
            while r + 4 <= m:
                for j in range(d):
                    T[j, r] = X[i0 + r, j]
                    T[j, r + 1] = X[i0 + r + 1, j]
                    T[j, r + 2] = X[i0 + r + 2, j]
                    T[j, r + 3] = X[i0 + r + 3, j]
                r += 4
            while r < m:
                for j in range(d):
                    T[j, r] = X[i0 + r, j]
                r += 1
            for r in range(m):
                T[d, r] = y[i0 + r]
            for r in range(m):
                norms[r] = 0.0
            for j in range(d):
                for r in range(m):
                    norms[r] += T[j, r] * T[j, r]
            for r in range(m):
                s = norms[r]
                a = abs(T[d, r])
                if not (s < np.inf and a < np.inf):
                    finite = False
                if s > worst_x:
                    worst_x = s
                if a > worst_y:
                    worst_y = a
            for j in range(0, P, 3):
                for k in range(j, P, 3):
                    s00 = s01 = s02 = s10 = s11 = s12 = s20 = s21 = s22 = 0.0
                    for r in range(m):
                        a0, a1, a2 = T[j, r], T[j + 1, r], T[j + 2, r]
                        b0, b1, b2 = T[k, r], T[k + 1, r], T[k + 2, r]
                        s00 += a0 * b0
                        s01 += a0 * b1
                        s02 += a0 * b2
                        s10 += a1 * b0
                        s11 += a1 * b1
                        s12 += a1 * b2
                        s20 += a2 * b0
                        s21 += a2 * b1
                        s22 += a2 * b2
                    G[j, k] += s00
                    G[j, k + 1] += s01
                    G[j, k + 2] += s02
                    G[j + 1, k] += s10
                    G[j + 1, k + 1] += s11
                    G[j + 1, k + 2] += s12
                    G[j + 2, k] += s20
                    G[j + 2, k + 1] += s21
                    G[j + 2, k + 2] += s22
        return worst_x, worst_y, finite

    return scan_gram


@functools.cache
def _scan_gram_rows_kernel() -> Any:
    """Compile the reference of :func:`_scan_gram_kernel`: each row copied on its own."""
    import numba

    @numba.njit(cache=True, nogil=True, fastmath={"reassoc", "contract"})
    def scan_gram(X, y, G, block):  # pragma: no cover - compiled; tested against numpy
        # One pass over the rows of [X y] in blocks of `block` rows, each copied transposed
        # into T (columns contiguous, zero-padded to a multiple of 3): the scan of
        # scan_rows (squared row norms of X, |y|, finiteness) and the upper triangle of
        # G += T T' in 3 x 3 tiles (nine independent sums in registers). Only
        # reassociation and fused multiply-adds are allowed (no assumption that values
        # are finite): sums are reordered, NaN and inf still propagate and compare.
        n, d = X.shape
        P = G.shape[0]  # d + 1 rounded up to a multiple of 3
        T = np.zeros((P, block))
        norms = np.empty(block)
        worst_x = 0.0
        worst_y = 0.0
        finite = True
        for i0 in range(0, n, block):
            m = min(block, n - i0)
            for r in range(m):
                for j in range(d):
                    T[j, r] = X[i0 + r, j]
                T[d, r] = y[i0 + r]
            for r in range(m):
                norms[r] = 0.0
            for j in range(d):
                for r in range(m):
                    norms[r] += T[j, r] * T[j, r]
            for r in range(m):
                s = norms[r]
                a = abs(T[d, r])
                if not (s < np.inf and a < np.inf):
                    finite = False
                if s > worst_x:
                    worst_x = s
                if a > worst_y:
                    worst_y = a
            for j in range(0, P, 3):
                for k in range(j, P, 3):
                    s00 = s01 = s02 = s10 = s11 = s12 = s20 = s21 = s22 = 0.0
                    for r in range(m):
                        a0, a1, a2 = T[j, r], T[j + 1, r], T[j + 2, r]
                        b0, b1, b2 = T[k, r], T[k + 1, r], T[k + 2, r]
                        s00 += a0 * b0
                        s01 += a0 * b1
                        s02 += a0 * b2
                        s10 += a1 * b0
                        s11 += a1 * b1
                        s12 += a1 * b2
                        s20 += a2 * b0
                        s21 += a2 * b1
                        s22 += a2 * b2
                    G[j, k] += s00
                    G[j, k + 1] += s01
                    G[j, k + 2] += s02
                    G[j + 1, k] += s10
                    G[j + 1, k + 1] += s11
                    G[j + 1, k + 2] += s12
                    G[j + 2, k] += s20
                    G[j + 2, k + 1] += s21
                    G[j + 2, k + 2] += s22
        return worst_x, worst_y, finite

    return scan_gram


def _positive_or_none(value: Any) -> float | None:
    try:
        return check_positive(value, "bound")
    except (TypeError, ValueError):
        return None


def _bounded_design_compiled(
    X: Any, y: Any, bound_X: Any, bound_y: Any, gram: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray] | None:
    r"""``(X, y)`` if one compiled pass proves every check of the reference passes, else None.

    With ``gram`` (zeros of shape (P, P), P = d + 1 rounded up to a multiple of 3) the
    pass is :func:`_scan_gram_kernel`'s and adds the upper triangle of
    :math:`[X, y]^\top [X, y]` to ``gram`` (meaningful only when accepted).

    Accepts only C-contiguous float64 ``X`` (n, d) and contiguous float64 ``y`` (n,) with
    ``n >= d >= 1``, positive finite bounds, finite data and

    * ``sqrt(max_i s_i) <= bound_X (1 + 1e-12) (1 - 4 (d + 1) eps)``, with ``s_i`` the
      kernel's sum of squares of row ``i``: ``s_i`` and the reference's ``einsum`` are two
      floating-point sums of the same ``d`` rounded squares, each within a relative
      ``gamma_d = d u / (1 - d u)`` of the exact sum (Higham, *Accuracy and Stability of
      Numerical Algorithms*, 2nd ed., eq. (3.5)), so they differ by a relative
      ``2 gamma_d`` and their square roots (each rounded once more) by about
      ``gamma_d + u < (d + 1) eps``: outside the band, four times that, both paths decide
      alike;
    * ``max_i |y_i| <= bound_y (1 + 1e-12)``: ``|y_i|`` and the maximum are exact, the
      very test of the reference.

    Everything else (including rows within the band) returns ``None``: the reference
    decides.
    """
    if not (isinstance(X, np.ndarray) and isinstance(y, np.ndarray)):
        return None
    if X.dtype != np.float64 or y.dtype != np.float64 or X.ndim != 2 or y.ndim != 1:
        return None
    n, d = X.shape
    if d == 0 or n < d or y.shape[0] != n or not X.flags.c_contiguous:
        return None
    if not y.flags.c_contiguous:
        return None
    bx, by = _positive_or_none(bound_X), _positive_or_none(bound_y)
    if bx is None or by is None:
        return None
    if gram is None:
        worst_x, worst_y, finite = _scan_kernel()(X, y)
    else:
        worst_x, worst_y, finite = _scan_gram_kernel()(X, y, gram, _GRAM_BLOCK)
    if not finite:
        return None
    band = 1.0 - 4.0 * (d + 1) * np.finfo(np.float64).eps
    if math.sqrt(worst_x) > bx * (1 + 1e-12) * band or worst_y > by * (1 + 1e-12):
        return None
    return X, y


def _use_compiled(X: Any, method: str) -> bool:
    if method == "reference":
        return False
    if method == "compiled":
        return True
    return (
        "numba" in sys.modules
        and isinstance(X, np.ndarray)
        and X.ndim == 2
        and X.shape[0] * (X.shape[1] + 1) >= COMPILED_MIN_ELEMENTS
    )


def check_bounded_design(
    X: Any,
    y: Any,
    *,
    bound_X: Any,
    bound_y: Any,
    trials: Any,
    rng: Any,
    method: str = "auto",
) -> tuple[np.ndarray, np.ndarray, int, np.random.Generator]:
    """Validate a DP regression call on bounded data (rank deficiency allowed).

    Shapes and finite values, n >= d, the public bounds ``max ||x_i|| <= bound_X`` and
    ``max |y_i| <= bound_y`` (never clipped silently), ``trials`` and ``rng``.

    ``method`` (one of :data:`VALIDATION_METHODS`) picks the path: ``"reference"``
    (numpy passes), ``"compiled"`` (one numba pass that only accepts, see
    :func:`_bounded_design_compiled`; the reference runs whenever it does not) or
    ``"auto"`` (compiled from :data:`COMPILED_MIN_ELEMENTS` entries when numba is
    loaded). All paths return the same arrays and raise the same errors.

    Examples
    --------
    >>> import numpy as np
    >>> X, y = np.full((4, 2), 0.5), np.zeros(4)
    >>> check_bounded_design(X, y, bound_X=1.0, bound_y=1.0, trials=2,
    ...                      rng=np.random.default_rng(0), method="compiled")[2]
    2
    >>> check_bounded_design(X, y, bound_X=0.5, bound_y=1.0, trials=2,
    ...                      rng=np.random.default_rng(0), method="compiled")
    Traceback (most recent call last):
    ...
    ValueError: X violates its public bound: max row norm 0.707107 > bound_X=0.5; ...
    """
    check_choice(method, "method", VALIDATION_METHODS)
    accepted = (
        _bounded_design_compiled(X, y, bound_X, bound_y) if _use_compiled(X, method) else None
    )
    if accepted is None:
        X, y = check_regression(X, y, require_full_rank=False)
        check_row_norm_bound(X, bound_X, "X", "bound_X")
        check_row_norm_bound(y, bound_y, "y", "bound_y")
    else:
        X, y = accepted
    n, d = X.shape  # per trial: Gram-sized releases and one residual per row
    return X, y, check_trials(trials, bytes_per_trial=8 * (3 * d * d + n + 4 * d)), check_rng(rng)


def _blas_gram(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    r""":math:`[X, y]^\top [X, y]` from the unstacked blocks by BLAS (the reference)."""
    d = X.shape[1]
    gram = np.empty((d + 1, d + 1))
    gram[:d, :d] = X.T @ X
    xty = X.T @ y
    gram[:d, d] = xty
    gram[d, :d] = xty
    gram[d, d] = y @ y
    return gram


@functools.cache
def _upper_mask(D: int) -> np.ndarray:
    """Read-only boolean mask of the upper triangle (diagonal included) of a D x D matrix."""
    mask = np.triu(np.ones((D, D), dtype=bool))
    mask.flags.writeable = False
    return mask


def _triu_mirror(upper: np.ndarray) -> np.ndarray:
    """Mirror the upper triangle of ``upper`` below the diagonal (the reference, tests)."""
    upper = np.triu(upper)
    return upper + np.triu(upper, 1).T


def check_bounded_design_gram(
    X: Any,
    y: Any,
    *,
    bound_X: Any,
    bound_y: Any,
    trials: Any,
    rng: Any,
    method: str = "auto",
) -> tuple[np.ndarray, np.ndarray, int, np.random.Generator, np.ndarray]:
    r""":func:`check_bounded_design` and the Gram matrix :math:`[X, y]^\top [X, y]`.

    ``method="compiled"`` (``"auto"``: from :data:`GRAM_COMPILED_MIN_TRIALS` trials and
    :data:`COMPILED_MIN_ELEMENTS` entries of ``[X, y]`` on) reads the rows once: the
    validation of :func:`_bounded_design_compiled` and the Gram's upper triangle in the
    same compiled pass (:func:`_scan_gram_kernel`), mirrored. Otherwise, or whenever the
    pass does not accept, the reference: :func:`check_bounded_design` then
    :math:`X^\top X`, :math:`X^\top y`, :math:`y^\top y` by BLAS. The arrays returned
    and the errors raised are the reference's; the Gram matrices agree to round-off
    (the sums are taken in another order; ``tests/unit/test_validation_fused.py``). The
    choice depends on the arguments only.

    Returns
    -------
    X, y, trials, rng
        As :func:`check_bounded_design`.
    gram : ndarray, shape (d + 1, d + 1)
        Exactly symmetric.

    Examples
    --------
    >>> import numpy as np
    >>> X, y = np.full((4, 2), 0.5), np.ones(4)
    >>> check_bounded_design_gram(X, y, bound_X=1.0, bound_y=1.0, trials=2,
    ...                           rng=np.random.default_rng(0), method="compiled")[4]
    array([[1., 1., 2.],
           [1., 1., 2.],
           [2., 2., 4.]])
    """
    check_choice(method, "method", VALIDATION_METHODS)
    accepted = None
    compiled = method == "compiled" or (
        method == "auto"
        and isinstance(trials, int | np.integer)
        and not isinstance(trials, bool)
        and trials >= GRAM_COMPILED_MIN_TRIALS
        and isinstance(X, np.ndarray)
        and X.ndim == 2
        and X.shape[0] * (X.shape[1] + 1) >= COMPILED_MIN_ELEMENTS
    )
    if compiled and isinstance(X, np.ndarray) and X.ndim == 2:
        D = X.shape[1] + 1
        P = D + (-D) % 3
        tiles = np.zeros((P, P))
        accepted = _bounded_design_compiled(X, y, bound_X, bound_y, gram=tiles)
    if accepted is None:
        X, y, trials, rng = check_bounded_design(
            X, y, bound_X=bound_X, bound_y=bound_y, trials=trials, rng=rng, method="reference"
        )
        return X, y, trials, rng, _blas_gram(X, y)
    X, y = accepted
    # mirror the upper triangle; "+ 0.0" makes every entry the same bits as the reference
    # mirror _triu_mirror (entry + 0.0 or 0.0 + entry) without its two triu temporaries
    gram = np.where(_upper_mask(D), tiles[:D, :D], tiles[:D, :D].T)
    gram += 0.0
    n, d = X.shape
    return (
        X,
        y,
        check_trials(trials, bytes_per_trial=8 * (3 * d * d + n + 4 * d)),
        check_rng(rng),
        gram,
    )
