r"""AdaSSP in the Varshney et al. (2022) study: public clipping bounds and the streamed rows.

The study (docs/varshney2022.md) runs AdaSSP on rows clipped to public Gaussian-quantile
bounds (:func:`adassp_bounds`). With the rows in memory (E2) it calls
:func:`~dpreg.estimators.adassp.fit_adassp`; with ``adassp_stream`` (E3, N = 10^6 rows of
up to d = 200: 1.6 GB per trial in memory) :func:`streamed_adassp_rows` reads the cell's
:class:`~dpreg.data.streams.GaussianStream` (the rows the in-memory path would hold, in
the same order) block by block, clips each block, accumulates the statistics of all noise
levels at once (:class:`~dpreg.estimators.adassp_stream.AdasspStatistics`: one
:math:`X^\top X`, one :math:`X^\top y` per sigma) and releases each (sigma, epsilon) with
the same release and the same generator, in the same order, as the in-memory path, so
the two give the same rows to round-off (tests/unit/test_varshney2022_adassp_stream.py).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpreg.data.streams import GaussianStream
from dpreg.estimators.adassp import adassp_release, check_adassp_options
from dpreg.estimators.adassp_stream import AdasspStatistics, fit_adassp_streamed
from dpreg.privacy.budgets import ApproxDP
from dpreg.results import Fit

__all__ = ["StreamedAdasspStatistics", "adassp_bounds", "adassp_gram_fit", "streamed_adassp_rows"]

BLOCK_ROWS = 2**14
"""Rows per block of the streamed statistics (the stream's chunk size: 26 MB at d = 200)."""


def adassp_bounds(d: int, lam: np.ndarray, sigma: float) -> tuple[float, float]:
    r"""Public clipping bounds of the study's AdaSSP runs: ``(bound_X, bound_y)``.

    :math:`C_X = \sqrt{\chi^2_{d, 0.999}\,\|H\|}` and :math:`C_Y = (1 + \sigma)
    z_{0.9995}` (``||w*||_H = 1``): quantiles of the data-generating process, never read
    off the data.

    Examples
    --------
    >>> import numpy as np
    >>> bx, by = adassp_bounds(1, np.ones(1), 0.0)
    >>> round(bx, 4), round(by, 4)
    (3.2905, 3.2905)
    """
    from scipy import stats

    bx = math.sqrt(stats.chi2.ppf(0.999, d) * float(np.max(lam)))
    by = (1.0 + sigma) * float(stats.norm.ppf(0.9995))
    return bx, by


def adassp_gram_fit(
    Xc: np.ndarray,
    xtx: np.ndarray,
    yc: np.ndarray,
    *,
    budget: ApproxDP,
    rng: np.random.Generator,
    bound_X: float,
    bound_y: float,
) -> Fit:
    r"""One AdaSSP run (Lev et al. 2026, Algorithm 6) on clipped rows whose Gram the caller holds.

    The fit of ``fit_adassp(Xc, yc, budget=budget, rng=rng, bound_X=bound_X,
    bound_y=bound_y)`` (one trial, its default options) when ``xtx`` is ``Xc.T @ Xc``:
    the statistics are the ones its reference path forms (:math:`X^\top X` by the same
    BLAS product, :math:`X^\top y` as ``Xc.T @ yc``), released by the same
    :func:`~dpreg.estimators.adassp.adassp_release` with the same draws, so the same bits
    (``tests/unit/test_varshney2022_adassp_stream.py``). E2 runs AdaSSP at seven noise
    levels on each trial's rows: :math:`X^\top X` (the same for every level) is formed once
    instead of seven times. No validation: ``Xc`` and ``yc`` are clipped to the public
    bounds (:func:`adassp_bounds`) by the caller.

    Examples
    --------
    >>> import numpy as np
    >>> from dpreg import ApproxDP
    >>> Xc = np.random.default_rng(0).uniform(-0.5, 0.5, size=(500, 2))
    >>> yc = np.clip(Xc @ np.array([1.0, -1.0]), -1, 1)
    >>> fit = adassp_gram_fit(Xc, Xc.T @ Xc, yc, budget=ApproxDP(1.0, 1e-6),
    ...                       rng=np.random.default_rng(1), bound_X=1.0, bound_y=1.0)
    >>> fit.theta.shape
    (1, 2)
    """
    options = check_adassp_options(budget, None, "analytic", "paper", None)
    return adassp_release(
        xtx.copy(), Xc.T @ yc, None, budget=budget, rng=rng, trials=1,
        bound_X=bound_X, bound_y=bound_y, **options,
    )  # fmt: skip


class StreamedAdasspStatistics:
    """AdaSSP's statistics of several trials' streams, accumulated block by block.

    Call it with each block of rows of the trials (in order), ``(X, base, z)`` of shapes
    (D, m, d), (D, m), (D, m); rows past ``n`` are ignored. Per trial it clips each block
    to the public bounds (:func:`adassp_bounds`) and adds it to one
    :class:`~dpreg.estimators.adassp_stream.AdasspStatistics` (one ``X'y`` column per
    sigma), counting the clipped rows. As an observer of the cell's
    :class:`~dpreg.data.streams.GaussianStream` (blocks = its chunks) it reads the rows
    DP-AMBSSGD's pass draws, without a draw of its own. ``kernel``: the clipping pass of
    :meth:`~dpreg.estimators.adassp_stream.AdasspStatistics.add_clipped` (compiled, or
    the numpy reference: the same statistics, bit for bit).
    """

    def __init__(
        self, spec: dict[str, Any], lam: np.ndarray, n_trials: int, *, kernel: str = "numba"
    ):
        self.kernel = kernel
        self.n, d, sigmas = spec["n"], spec["d"], spec["sigmas"]
        bounds = [adassp_bounds(d, lam, s) for s in sigmas]
        self.bx = bounds[0][0]
        self.by = np.array([b[1] for b in bounds])
        self.sig = np.asarray(sigmas, dtype=np.float64)
        self.stats = [
            AdasspStatistics(d, bound_X=self.bx, bound_y=self.by) for _ in range(n_trials)
        ]
        self.clipped = np.zeros((n_trials, self.sig.size))
        self.done = 0

    def __call__(self, X: np.ndarray, base: np.ndarray, z: np.ndarray) -> None:
        """Add the next block of rows of every trial."""
        k = min(X.shape[1], self.n - self.done)
        if k <= 0:
            return
        for t, stats in enumerate(self.stats):
            Y = base[t, :k, None] + z[t, :k, None] * self.sig  # (k, sigmas): y = base + sigma z
            self.clipped[t] += stats.add_clipped(X[t, :k], Y, kernel=self.kernel)
        self.done += k


def streamed_adassp_rows(
    spec: dict[str, Any],
    lam: np.ndarray,
    w_star: np.ndarray,
    trial_ids: list[int],
    seed: int,
    rng: np.random.Generator,
    *,
    block_rows: int = BLOCK_ROWS,
    accumulated: StreamedAdasspStatistics | None = None,
) -> list[dict[str, Any]]:
    """``adassp`` rows of one chunk from statistics accumulated over the cell's stream.

    Per trial: one pass over ``GaussianStream(seed, [trial], ...)`` in blocks of
    ``block_rows`` (or the statistics ``accumulated`` already, e.g. by an observer of
    the stream of all ``trial_ids`` with chunks of ``block_rows``: the same blocks, so the
    same sums), then one AdaSSP release per (sigma, epsilon) drawn from ``rng`` in the
    in-memory path's order (trial, sigma, epsilon). ``clip_fraction`` is the fraction of
    rows whose x or y was clipped, as in the in-memory path.
    """
    n, sigmas = spec["n"], spec["sigmas"]
    rows: list[dict[str, Any]] = []
    for t, trial in enumerate(trial_ids):
        if accumulated is None:
            acc = StreamedAdasspStatistics(spec, lam, 1)
            stream = GaussianStream(seed, [trial], lam, w_star, chunk_rows=block_rows)
            while acc.done < n:
                acc(*stream.take(min(block_rows, n - acc.done)))
            stats, clipped = acc.stats[0], acc.clipped[0]
        else:
            if accumulated.done != n:
                raise ValueError(f"accumulated statistics cover {accumulated.done} of {n} rows")
            stats, clipped = accumulated.stats[t], accumulated.clipped[t]
        for j, sigma in enumerate(sigmas):
            for eps in spec["epsilons"]:
                fit = fit_adassp_streamed(
                    stats, budget=ApproxDP(eps, spec["delta"]), rng=rng, column=j
                )
                diff = fit.theta[0] - w_star
                rows.append(
                    {
                        "trial": trial,
                        "method": "adassp",
                        "sigma": sigma,
                        "epsilon": eps,
                        "excess_risk": float(0.5 * np.einsum("d,d,d->", diff, lam, diff)),
                        "clip_fraction": float(clipped[j] / n),
                    }
                )
    return rows
