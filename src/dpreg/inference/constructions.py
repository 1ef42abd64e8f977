r"""The three estimate builders of Brown et al. (2024), §3.1, from stored DP-GD paths.

Every builder maps iterates to m estimates :math:`\theta^{(1)},\dots,\theta^{(m)}`, which
:func:`~dpreg.inference.intervals.t_interval` turns into eq. (12). Paths hold
:math:`\theta_0,\dots,\theta_N` (index t is iterate t, :math:`\theta_0` the initial
point); the burn-in discards :math:`\theta_1,\dots,\theta_b` (and :math:`\theta_0` is never
an estimate). Indexing choices the paper leaves open (docs/notes/brown2024.md §8 items 6-7):

* **independent runs** -- m runs of :math:`T` steps each; the estimate of a run is its
  final iterate :math:`\theta_T` (``run_estimate="final"``, Theorem 3.1) or the mean of its
  post-burn-in iterates :math:`\theta_{b+1},\dots,\theta_T`
  (``"post_burn_in_mean"``; the experiments' "average of the final few iterates");
* **checkpoints** -- one run of N steps; with :math:`L = \lfloor (N-b)/m \rfloor` and
  :math:`r = N - b - mL`, the estimates are :math:`\theta_{b + r + \ell L}`,
  :math:`\ell = 1..m`, so the last is :math:`\theta_N` and, with ``burn_in = 0`` and
  :math:`N = mT`, they are the theorem's :math:`\theta_{\ell T}`;
* **batched means** -- one run of N steps; the :math:`mL` iterates
  :math:`\theta_{b+r+1},\dots,\theta_N` are split into m contiguous batches of length L
  and each estimate is a batch mean (the remainder r is dropped right after the burn-in).
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "METHODS",
    "RUN_ESTIMATES",
    "batch_windows",
    "batched_means_estimates",
    "checkpoint_estimates",
    "checkpoint_indices",
    "independent_runs_estimates",
]

METHODS = ("independent_runs", "checkpoints", "batched_means")
RUN_ESTIMATES = ("final", "post_burn_in_mean")


def _spacing(total_steps: int, m: int, burn_in: int) -> tuple[int, int]:
    if m < 2:
        raise ValueError(f"m must be >= 2 (t-interval with m - 1 df); got {m}")
    if burn_in < 0:
        raise ValueError(f"burn_in must be >= 0; got {burn_in}")
    usable = total_steps - burn_in
    L = usable // m
    if L < 1:
        raise ValueError(
            f"total_steps={total_steps} leaves {usable} iterates after burn_in={burn_in};"
            f" need at least m={m}"
        )
    return L, usable - m * L


def checkpoint_indices(total_steps: int, m: int, burn_in: int) -> np.ndarray:
    """Iterate indices of the m checkpoints (the last is ``total_steps``)."""
    L, rem = _spacing(total_steps, m, burn_in)
    return burn_in + rem + L * np.arange(1, m + 1)


def batch_windows(total_steps: int, m: int, burn_in: int) -> tuple[int, int]:
    """``(first, L)``: batch l covers iterates ``first + l L, ..., first + (l+1) L - 1``."""
    L, rem = _spacing(total_steps, m, burn_in)
    return burn_in + rem + 1, L


def checkpoint_estimates(path: np.ndarray, m: int, burn_in: int) -> np.ndarray:
    """Checkpoint estimates from paths of shape ``(..., N + 1, d)`` -> ``(..., m, d)``."""
    N = path.shape[-2] - 1
    return path[..., checkpoint_indices(N, m, burn_in), :]


def batched_means_estimates(path: np.ndarray, m: int, burn_in: int) -> np.ndarray:
    """Batch means from paths of shape ``(..., N + 1, d)`` -> ``(..., m, d)``."""
    N = path.shape[-2] - 1
    first, L = batch_windows(N, m, burn_in)
    window = path[..., first : first + m * L, :]
    shape = window.shape[:-2] + (m, L, window.shape[-1])
    return window.reshape(shape).mean(axis=-2)


def independent_runs_estimates(
    paths: np.ndarray, burn_in: int, run_estimate: str = "final"
) -> np.ndarray:
    r"""One estimate per run from paths of shape ``(..., m, T + 1, d)`` -> ``(..., m, d)``.

    ``run_estimate="final"``: :math:`\theta_T`; ``"post_burn_in_mean"``: the mean of
    :math:`\theta_{b+1},\dots,\theta_T` (needs ``T > burn_in``).
    """
    T = paths.shape[-2] - 1
    if run_estimate == "final":
        return paths[..., T, :]
    if run_estimate == "post_burn_in_mean":
        if T <= burn_in:
            raise ValueError(
                f"runs of T={T} steps leave no iterate after burn_in={burn_in}; independent"
                " runs need total_steps / m > burn_in"
            )
        return paths[..., burn_in + 1 :, :].mean(axis=-2)
    raise ValueError(f"run_estimate must be one of {RUN_ESTIMATES}; got {run_estimate!r}")
