r"""AdaSSP on a row stream: sufficient statistics accumulated block by block.

AdaSSP (Wang 2018; Lev et al. 2026, Algorithm 6) reads the data only through
:math:`X^\top X`, :math:`X^\top y` (and, for its optional fourth release,
:math:`y^\top y`); its eigenvalue step reads :math:`\lambda_{\min}(X^\top X)`. These are
sums over rows, so :class:`AdasspStatistics` accumulates them over blocks of rows (each
block checked against the public bounds, as :func:`~dpreg.estimators.adassp.fit_adassp`
checks its rows) and :func:`fit_adassp_streamed` applies **the same release**,
:func:`~dpreg.estimators.adassp.adassp_release`: the same noise scales, draws (same
order from the same generator) and post-processing. On the same rows and seed the two
paths agree to round-off (only the order of the additions in the sums differs;
``tests/unit/test_adassp_stream.py``). Memory: :math:`O(d^2)` plus one block, instead of
the N rows.

Several response columns (e.g. one per noise level sharing the same x rows) share one
:math:`X^\top X`; each column has its own public bound and is released separately.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpreg._validation import (
    check_choice,
    check_positive,
    check_rng,
    check_row_norm_bound,
    check_trials,
)
from dpreg.estimators.adassp import adassp_release, check_adassp_options
from dpreg.estimators.blas_order import at_b
from dpreg.privacy.budgets import ApproxDP
from dpreg.results import Fit

__all__ = ["AdasspStatistics", "fit_adassp_streamed"]


class AdasspStatistics:
    r"""Running :math:`X^\top X`, :math:`X^\top Y`, :math:`\operatorname{diag}(Y^\top Y)` and n.

    Parameters
    ----------
    d : int
        Number of columns of X.
    bound_X : float
        Public bound :math:`C_X \ge \|x_i\|_2`, checked on every row added.
    bound_y : float or array_like, shape (k,)
        Public bound :math:`C_Y \ge |y_i|` of each of the k response columns.

    Examples
    --------
    >>> import numpy as np
    >>> stats = AdasspStatistics(2, bound_X=1.0, bound_y=[1.0, 2.0])
    >>> stats.add(np.array([[0.5, 0.0], [0.0, 0.5]]), np.array([[0.5, 1.5], [-1.0, 0.0]]))
    >>> stats.n, stats.xtx.tolist(), stats.xty[:, 1].tolist()
    (2, [[0.25, 0.0], [0.0, 0.25]], [0.75, 0.0])
    """

    def __init__(self, d: int, *, bound_X: float, bound_y: Any):
        if isinstance(d, bool) or not isinstance(d, int | np.integer) or d < 1:
            raise ValueError(f"d must be a positive integer; got {d!r}")
        self.bound_X = check_positive(bound_X, "bound_X")
        by = np.atleast_1d(np.asarray(bound_y, dtype=np.float64))
        if by.ndim != 1 or not np.all(np.isfinite(by)) or np.any(by <= 0):
            raise ValueError(
                f"bound_y must be positive and finite (one per column); got {bound_y!r}"
            )
        self.bound_y = by
        self.d, self.k = int(d), by.size
        self.n = 0
        self.xtx = np.zeros((self.d, self.d))
        self.xty = np.zeros((self.d, self.k))
        self.yty = np.zeros(self.k)

    def _block_arrays(self, X: Any, Y: Any) -> tuple[np.ndarray, np.ndarray]:
        """Return a block as float64 arrays of shapes (m, d), (m, k), or raise naming it."""
        X = np.asarray(X, dtype=np.float64)
        Y = np.asarray(Y, dtype=np.float64)
        if Y.ndim == 1:
            Y = Y[:, None]
        if X.ndim != 2 or X.shape[1] != self.d:
            raise ValueError(f"X must have shape (m, {self.d}); got {X.shape}")
        if Y.shape != (X.shape[0], self.k):
            raise ValueError(f"Y must have shape ({X.shape[0]}, {self.k}); got {Y.shape}")
        return X, Y

    def add(self, X: Any, Y: Any) -> None:
        """Add a block of rows: ``X`` (m, d), ``Y`` (m,) for one column or (m, k).

        Raises ValueError (naming the argument) on a bad shape, a non-finite value or a row
        outside the public bounds; nothing is added then.
        """
        X, Y = self._block_arrays(X, Y)
        if not (np.all(np.isfinite(X)) and np.all(np.isfinite(Y))):
            raise ValueError("X and Y must be finite")
        if X.shape[0]:  # the checks of fit_adassp, block by block
            check_row_norm_bound(X, self.bound_X, "X", "bound_X")
            for j in range(self.k):
                check_row_norm_bound(Y[:, j], float(self.bound_y[j]), f"Y[:, {j}]", "bound_y")
        self._accumulate(X, Y)

    def add_clipped(self, X: Any, Y: Any, *, kernel: str = "numba") -> np.ndarray:
        r"""Clip a block of rows to the public bounds, add it, return the clipped counts.

        Row i becomes :math:`x_i\min\{1, C_X/\|x_i\|\}` and each response
        :math:`Y_{ij}` is clipped to :math:`[-C_{Y,j}, C_{Y,j}]`; the returned array (k,)
        counts, per column j, the rows whose x or :math:`Y_{ij}` was clipped. Clipping to
        the public bounds before the sums is what makes the statistics bounded
        (rows then satisfy :meth:`add`'s checks by construction). ``kernel="numba"``
        clips in one compiled pass (:mod:`dpreg.estimators.adassp_stream_kernel`; the
        same clipped rows, bit for bit), ``"numpy"`` is the reference (clip, then
        :meth:`add`).

        Examples
        --------
        >>> import numpy as np
        >>> stats = AdasspStatistics(2, bound_X=1.0, bound_y=1.0)
        >>> stats.add_clipped(np.array([[3.0, 4.0], [0.3, 0.4]]), np.array([2.0, -0.5]))
        array([1.])
        >>> np.round(stats.xty[:, 0], 12).tolist()
        [0.45, 0.6]
        """
        check_choice(kernel, "kernel", ("numba", "numpy"))
        X, Y = self._block_arrays(X, Y)
        if kernel == "numpy":
            if not (np.all(np.isfinite(X)) and np.all(np.isfinite(Y))):
                raise ValueError("X and Y must be finite")
            norms = np.linalg.norm(X, axis=1)
            Xc = X * np.minimum(1.0, self.bound_X / norms)[:, None]
            Yc = np.clip(Y, -self.bound_y, self.bound_y)
            self.add(Xc, Yc)
            return ((norms > self.bound_X)[:, None] | (np.abs(Y) > self.bound_y)).sum(axis=0)
        from dpreg.estimators.adassp_stream_kernel import clip_block

        clipped = np.zeros(self.k)
        Xc, Yc, _, finite = clip_block(X, Y, self.bound_X, self.bound_y, clipped)
        if not finite:
            raise ValueError("X and Y must be finite")
        self._accumulate(Xc, Yc, swap=True)
        return clipped

    def _accumulate(self, X: np.ndarray, Y: np.ndarray, *, swap: bool = False) -> None:
        r"""Add checked rows to the sums.

        ``swap``: :math:`X^\top Y` as :math:`(Y^\top X)^\top`
        (:func:`~dpreg.estimators.blas_order.at_b`: the same bits with this machine's
        OpenBLAS, 1.5-3x faster from d = 50 at 16,384 rows; the compiled path's).
        """
        self.xtx += X.T @ X
        self.xty += at_b(X, Y, swap=swap)
        self.yty += np.einsum("ij,ij->j", Y, Y)
        self.n += X.shape[0]


def fit_adassp_streamed(
    stats: AdasspStatistics,
    *,
    budget: ApproxDP,
    rng: np.random.Generator,
    trials: int = 1,
    column: int = 0,
    failure_prob: float | None = None,
    mechanism: str = "analytic",
    shift: str = "paper",
    yty_share: float | None = None,
) -> Fit:
    r"""AdaSSP (Lev et al. 2026, Algorithm 6) from accumulated statistics.

    The same estimator as :func:`~dpreg.estimators.adassp.fit_adassp` (same options,
    diagnostics and noise draws: :func:`~dpreg.estimators.adassp.adassp_release`) for the
    rows added to ``stats`` and response column ``column``, whose ``bound_y`` is the
    column's bound. Each call is one AdaSSP run at ``budget`` (releasing two columns of
    the same rows costs two budgets).

    Raises
    ------
    ValueError
        On bad options, ``trials``, ``column``, or fewer rows than columns (``n < d``).
    TypeError
        If ``budget`` is not an ApproxDP or ``rng`` not a Generator.

    Examples
    --------
    >>> import numpy as np
    >>> from dpreg import ApproxDP
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, size=(2000, 3)) / np.sqrt(3)
    >>> y = np.clip(X @ np.array([0.5, -0.3, 0.2]), -1, 1)
    >>> stats = AdasspStatistics(3, bound_X=1.0, bound_y=1.0)
    >>> for b in range(0, 2000, 512):
    ...     stats.add(X[b:b + 512], y[b:b + 512])
    >>> fit = fit_adassp_streamed(stats, budget=ApproxDP(1.0, 1e-6), rng=rng, trials=4)
    >>> fit.theta.shape
    (4, 3)
    """
    options = check_adassp_options(budget, failure_prob, mechanism, shift, yty_share)
    trials = check_trials(trials)
    check_rng(rng)
    if not isinstance(stats, AdasspStatistics):
        raise TypeError(f"stats must be an AdasspStatistics; got {type(stats).__name__}")
    if isinstance(column, bool) or not isinstance(column, int) or not 0 <= column < stats.k:
        raise ValueError(f"column must be an integer in [0, {stats.k}); got {column!r}")
    if stats.n < stats.d:
        raise ValueError(f"AdaSSP needs n >= d rows; got n = {stats.n} < d = {stats.d}")
    return adassp_release(
        stats.xtx.copy(),
        stats.xty[:, column].copy(),
        float(stats.yty[column]) if yty_share is not None else None,
        budget=budget,
        rng=rng,
        trials=trials,
        bound_X=stats.bound_X,
        bound_y=float(stats.bound_y[column]),
        **options,
    )
