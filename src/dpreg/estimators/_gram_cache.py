r"""A per-process cache of :func:`dpreg._validation.check_bounded_design_gram` (issue 18).

Linear mixing (:mod:`dpreg.estimators.sketch`) and AdaSSP
(:mod:`dpreg.estimators.adassp`) validate their data and form the non-private statistic
:math:`[X, y]^\top [X, y]` at every fit; a study fits the same rows at every epsilon,
variant and seed block (Lev et al.'s studies: 6 epsilons x 5 seed blocks per data set,
see ``docs/lev.md``). The result depends only on the values of ``X`` and ``y``, the
public bounds and which pass computed it (compiled or BLAS, chosen from the arguments),
so it is kept under a key of exactly these: the sha256 of the values
(:func:`dpreg.estimators.dpgd._digest`; of ``X.T`` for a column-major ``X``, with its
layout), their shapes, the bounds' floats and the pass.
A hit returns a copy of the same Gram matrix (the same bits; the bounds were checked
on the same values), then validates ``trials`` and ``rng`` as the reference does.
``_GRAM_CACHE_PATH = "reference"`` calls the validation every time (tests: the same
arrays and errors, ``tests/unit/test_gram_cache.py``).

Keying a call costs two sha256 digests and up to eight bitwise comparisons of the data
(about 2.7 ms per call of the coverage study at n = 10^4, d = 10, where every trial
draws fresh rows and nothing is ever served: about 6 % of its job; issue 18,
docs/scaling.md). After :data:`_BYPASS_AFTER` misses in a row the calls are not keyed
(the reference runs, as for an uncacheable call) except every
:data:`_PROBE_EVERY`-th, which is keyed and stored as before; a hit resumes keying every
call. A call not keyed returns what the reference returns, so the bits never depend on
this, only the time does.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import numpy as np

from dpreg._validation import (
    GRAM_COMPILED_MIN_TRIALS,
    check_bounded_design_gram,
    check_rng,
    check_trials,
)
from dpreg.estimators.dpgd import _digest

#: "cache": keep the last few Gram matrices by the data's digest; "reference": none
_GRAM_CACHE_PATH = "cache"
_GRAM_CACHE_SIZE = 8  # Gram matrices are (d + 1)^2 floats: 8 x 130^2 x 8 bytes = 1 MB
_GRAM_CACHE: OrderedDict[tuple, np.ndarray] = OrderedDict()
_BYPASS_AFTER = 16
"""Misses in a row after which calls are keyed only every :data:`_PROBE_EVERY`-th."""
_PROBE_EVERY = 16
"""While bypassing, every this-many-th call is keyed (a hit there resumes the cache)."""
_STREAK = {"misses": 0, "skipped": 0}


def _keyed() -> bool:
    """Whether this call is keyed: below the miss streak, or a probe while bypassing."""
    if _STREAK["misses"] < _BYPASS_AFTER:
        return True
    _STREAK["skipped"] += 1
    if _STREAK["skipped"] >= _PROBE_EVERY:
        _STREAK["skipped"] = 0
        return True
    return False


def reset() -> None:
    """Empty the cache and its miss streak (tests)."""
    _GRAM_CACHE.clear()
    _STREAK.update(misses=0, skipped=0)


def _key(X: Any, y: Any, bound_X: Any, bound_y: Any, trials: Any) -> tuple | None:
    """Return the cache key, or None when the call is not cacheable (the reference runs)."""
    if not (
        isinstance(X, np.ndarray)
        and isinstance(y, np.ndarray)
        and X.dtype == np.float64
        and y.dtype == np.float64
        and X.ndim == 2
        and y.ndim == 1
        and (X.flags.c_contiguous or X.flags.f_contiguous)
        and y.flags.c_contiguous
        and X.size > 0  # an empty X or y is refused by the reference, naming it
        and y.size > 0
        and isinstance(bound_X, float)  # float or numpy.float64: keyed by value
        and isinstance(bound_y, float)
        and isinstance(trials, int | np.integer)
        and not isinstance(trials, bool)
    ):
        return None
    # the pass the reference takes with method="auto" depends on trials and the shape
    # only (check_bounded_design_gram); the key names it, so the bits are that pass's
    compiled = bool(trials >= GRAM_COMPILED_MIN_TRIALS)
    # a column-major X (a data table's columns) is keyed by its transpose's values, which
    # are contiguous (no copy), and its layout (the pass the reference takes depends on it)
    layout, values = ("C", X) if X.flags.c_contiguous else ("F", X.T)
    return (
        _digest(values),
        layout,
        X.shape,
        _digest(y),
        y.shape,
        float(bound_X),
        float(bound_y),
        compiled,
    )


def bounded_design_gram(
    X: Any, y: Any, *, bound_X: Any, bound_y: Any, trials: Any, rng: Any
) -> tuple[np.ndarray, np.ndarray, int, np.random.Generator, np.ndarray]:
    """:func:`dpreg._validation.check_bounded_design_gram` (``method="auto"``), cached.

    Returns the same values and raises the same errors as the reference; the Gram
    matrix is a fresh array (callers may change it).

    Examples
    --------
    >>> import numpy as np
    >>> X, y = np.full((4, 2), 0.5), np.ones(4)
    >>> bounded_design_gram(X, y, bound_X=1.0, bound_y=1.0, trials=2,
    ...                     rng=np.random.default_rng(0))[4]
    array([[1., 1., 2.],
           [1., 1., 2.],
           [2., 2., 4.]])
    """
    key = None
    if _GRAM_CACHE_PATH != "reference" and _keyed():
        key = _key(X, y, bound_X, bound_y, trials)
    if key is not None and key in _GRAM_CACHE:
        _STREAK["misses"] = 0
        _GRAM_CACHE.move_to_end(key)
        n, d = X.shape
        return (
            X,
            y,
            check_trials(trials, bytes_per_trial=8 * (3 * d * d + n + 4 * d)),
            check_rng(rng),
            _GRAM_CACHE[key].copy(),
        )
    X, y, trials, rng, gram = check_bounded_design_gram(
        X, y, bound_X=bound_X, bound_y=bound_y, trials=trials, rng=rng
    )
    if key is not None:
        _STREAK["misses"] += 1
        _GRAM_CACHE[key] = gram.copy()
        while len(_GRAM_CACHE) > _GRAM_CACHE_SIZE:
            _GRAM_CACHE.popitem(last=False)
    return X, y, trials, rng, gram
