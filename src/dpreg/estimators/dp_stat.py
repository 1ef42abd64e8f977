r"""DP-STAT (Varshney, Thakurta & Jain 2022, Algorithm 3): a private doubling search.

Given residual magnitudes :math:`a_j = |\langle x_j, w\rangle - y_j|` of a stat sample,
DP-STAT returns the first :math:`\gamma_i = 2^i\Delta` whose noisy count
:math:`|\{j : a_j \le \gamma_i\}| + N(0, K\alpha^2)` reaches the threshold. Decisions on
the paper's ambiguities (docs/notes/varshney2022.md §8):

* **Query count (item 4).** The paper loops :math:`i = 0..K` (K+1 queries) but its
  proof assumes at most :math:`K = \lceil\log_2(B/\Delta)\rceil` queries with variance
  :math:`K\alpha^2` each. We loop :math:`i = 0..K-1`: exactly at most K queries, total
  :math:`\rho = K \cdot 1/(2K\alpha^2) = 1/(2\alpha^2)` (Lemma 3.10 holds as stated).
* **No break (item 5).** If no noisy count reaches the threshold, the loop ends with
  :math:`\gamma_K = 2^K\Delta \ge B` (the paper's loop would also return
  :math:`2^K\Delta`); we return it and flag ``no_break``. With the practical
  :math:`\Delta = B 2^{-K}` this is exactly B.
* **Stat sample (item 3).** The caller passes the s points :math:`[\tau, \tau+s)`;
  the threshold is s (``threshold_fraction = 1``: "all points", the paper's rule).
  A fraction < 1 is the non-paper "target quantile" variant of item 8.
* **Delta (item 6).** The caller chooses :math:`\Delta` (the paper's :math:`B/N^{200}`
  needs thousands of queries); see :func:`dpreg.estimators.ambssgd_core.stat_grid`.

Vectorisation: every query's count is computed at once from the index
:math:`i_{\min}(a) = \min\{i : a \le 2^i\Delta\}` (exact comparisons against the
:math:`\gamma_i`), then a cumulative histogram. The K Gaussian noises are drawn at once;
only those of the queries actually made influence the output (the others are never
released), so the output distribution equals the sequential algorithm's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpreg._validation import check_positive, check_rng

__all__ = ["DpStatResult", "dp_stat", "dp_stat_counts", "dp_stat_from_counts"]


@dataclass(frozen=True)
class DpStatResult:
    r"""Output of :func:`dp_stat` for a batch of independent calls.

    Attributes
    ----------
    gamma : ndarray
        The released :math:`\\gamma_{\\rm priv}` per call.
    stop_index : ndarray of int
        The i at which the loop broke (K when it never broke).
    no_break : ndarray of bool
        True where no noisy count reached the threshold (gamma = 2^K Delta).
    """

    gamma: np.ndarray
    stop_index: np.ndarray
    no_break: np.ndarray


def dp_stat_counts(magnitudes: np.ndarray, delta_grid: float, n_queries: int) -> np.ndarray:
    r"""Exact counts :math:`c_i = |\{j : a_j \le 2^i\Delta\}|` for :math:`i < K`.

    Parameters
    ----------
    magnitudes : ndarray, shape (..., s)
        Non-negative residual magnitudes (``inf`` allowed: counted nowhere).
    delta_grid : float
        :math:`\Delta` > 0.
    n_queries : int
        K >= 1.

    Returns
    -------
    ndarray of int64, shape (..., K)
    """
    a = np.asarray(magnitudes, dtype=np.float64)
    K = int(n_queries)
    lead = a.shape[:-1]
    flat = a.reshape(-1, a.shape[-1])
    with np.errstate(divide="ignore", invalid="ignore"):
        idx = np.ceil(np.log2(flat / delta_grid))
    idx = np.nan_to_num(idx, nan=0.0, posinf=K, neginf=0.0)
    idx = np.clip(idx, 0, K).astype(np.int64)
    # Exact correction against the grid values gamma_i = ldexp(Delta, i).
    gamma_at = np.ldexp(delta_grid, idx)
    gamma_below = np.ldexp(delta_grid, idx - 1)
    idx = idx + (flat > gamma_at) - ((idx > 0) & (flat <= gamma_below))
    idx = np.clip(idx, 0, K)  # K means "above every queried gamma"
    rows = flat.shape[0]
    offsets = (np.arange(rows, dtype=np.int64) * (K + 1))[:, None]
    hist = np.bincount((idx + offsets).ravel(), minlength=rows * (K + 1)).reshape(rows, K + 1)
    counts = np.cumsum(hist[:, :K], axis=1)
    return counts.reshape(*lead, K)


def dp_stat_from_counts(
    counts: np.ndarray,
    threshold: float,
    noise_multiplier: float | np.ndarray,
    delta_grid: float,
    rng: np.random.Generator,
) -> DpStatResult:
    r"""Run the noisy doubling search on precomputed counts (Algorithm 3, lines 2-7).

    ``counts`` has shape (..., K); ``noise_multiplier`` and ``threshold`` broadcast
    against the leading shape (alpha = 0 gives the noiseless search). Noise
    :math:`N(0, K\alpha^2)` per query.
    """
    counts = np.asarray(counts)
    K = counts.shape[-1]
    alpha = np.asarray(noise_multiplier, dtype=np.float64)[..., None]
    noisy = counts + alpha * math.sqrt(K) * rng.standard_normal(counts.shape)
    passed = noisy >= np.asarray(threshold, dtype=np.float64)[..., None]
    no_break = ~passed.any(axis=-1)
    stop = np.where(no_break, K, passed.argmax(axis=-1))
    gamma = np.ldexp(delta_grid, stop)
    return DpStatResult(gamma=gamma, stop_index=stop, no_break=no_break)


def dp_stat(
    magnitudes: np.ndarray,
    *,
    domain: float,
    n_queries: int,
    noise_multiplier: float,
    rng: np.random.Generator,
    threshold_fraction: float = 1.0,
) -> DpStatResult:
    r"""DP-STAT (Algorithm 3) on a batch of stat samples of residual magnitudes.

    Parameters
    ----------
    magnitudes : ndarray, shape (..., s)
        :math:`|\langle x_j, w\rangle - y_j|` of the s stat points of each call.
    domain : float
        Search range B > 0; the grid is :math:`\Delta = B 2^{-K}`, so the largest
        returned value is B.
    n_queries : int
        K >= 1 (the paper's :math:`\lceil\log_2(B/\Delta)\rceil`).
    noise_multiplier : float
        :math:`\alpha` > 0: each count gets :math:`N(0, K\alpha^2)` noise.
    rng : numpy.random.Generator
    threshold_fraction : float in (0, 1]
        Stop when the noisy count reaches ``threshold_fraction * s`` (1: the paper).

    Returns
    -------
    DpStatResult

    Notes
    -----
    *Privacy* (Lemma 3.10, replace-one): each count has sensitivity 1 and Gaussian noise
    of variance :math:`K\alpha^2`, hence is :math:`1/(2K\alpha^2)`-zCDP (Bun & Steinke
    2016, Prop. 1.6); at most K queries compose to :math:`1/(2\alpha^2)`-zCDP.
    """
    a = np.asarray(magnitudes, dtype=np.float64)
    if a.ndim < 1 or a.shape[-1] < 1:
        raise ValueError(f"magnitudes must have a last axis of s >= 1 points; got {a.shape}")
    if np.any(np.isnan(a)) or np.any(a < 0):
        raise ValueError("magnitudes must be non-negative numbers (no NaN)")
    domain = check_positive(domain, "domain")
    K = int(n_queries)
    if K < 1 or K != n_queries:
        raise ValueError(f"n_queries must be an integer >= 1; got {n_queries!r}")
    check_positive(noise_multiplier, "noise_multiplier")
    if not 0 < threshold_fraction <= 1:
        raise ValueError(f"threshold_fraction must lie in (0, 1]; got {threshold_fraction!r}")
    check_rng(rng)
    delta_grid = math.ldexp(domain, -K)
    counts = dp_stat_counts(a, delta_grid, K)
    return dp_stat_from_counts(
        counts, threshold_fraction * a.shape[-1], noise_multiplier, delta_grid, rng
    )
