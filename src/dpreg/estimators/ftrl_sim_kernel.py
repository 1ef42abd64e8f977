r"""Compiled step loop of the Fig. 2 simulation (Choquette-Choo et al. 2023, §2.2).

:func:`~dpreg.estimators.ftrl.simulate_streaming_regression` makes :math:`T` (up to
600,000) sequential rank-one steps per seed, vectorised over a few seeds only, so the
numpy loop costs about ten numpy dispatches per step. :func:`sim_block` runs one block of
steps for all the seeds of a group in compiled code (numba), from the standard normals
``z`` and the correlated noise that the caller **drew beforehand with its numpy
Generator**, exactly as the numpy loop draws them: the draws and the output law are
unchanged. Per step :math:`t` and seed, in the order of the numpy loop
(``kernel="numpy"``, the reference),

.. math::

    x = \texttt{float64}(z_t)\odot\sqrt\lambda, \quad r = \langle x, \delta_t\rangle
    - \xi_t, \quad \delta_{t+1} = \delta_t - \big((x\eta)\, r + \tilde w_t\big),

adds :math:`\delta_{t+1}^2` to the tail sum when :math:`t \ge` ``start_tail`` and records
:math:`\frac12\sum_k\lambda_k\delta_{t+1,k}^2` when :math:`t` is a multiple of
``record_every``. Every elementwise operation rounds as numpy's; only the order of the
additions inside the two sums over coordinates differs, so the kernel agrees with the
reference to round-off (``tests/unit/test_ftrl_sim_kernel.py``). numba is imported on
first use (compilation is cached on disk).
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np

__all__ = ["sim_block"]


@cache
def _kernel() -> Any:
    """Compile (or load from numba's cache) the block kernel."""
    import numba

    @numba.njit(cache=True, nogil=True)
    def block_kernel(
        z,
        sqrt_lam,
        eta,
        noise,
        xi,
        use_xi,
        lam,
        delta,
        acc,
        trace,
        first,
        rec,
        block,
        start_tail,
        record_every,
    ):
        m, g, d = z.shape
        for i in range(m):
            t = block + i
            in_tail = t >= start_tail
            for k in range(g):
                r = 0.0
                for j in range(d):
                    r += (np.float64(z[i, k, j]) * sqrt_lam[j]) * delta[k, j]
                if use_xi:
                    r -= xi[i, k]
                for j in range(d):
                    x_eta = (np.float64(z[i, k, j]) * sqrt_lam[j]) * eta
                    grad = x_eta * r
                    grad += np.float64(noise[i, k, j])
                    delta[k, j] -= grad
                    if in_tail:
                        acc[k, j] += delta[k, j] * delta[k, j]
            if t % record_every == 0:
                for k in range(g):
                    s = 0.0
                    for j in range(d):
                        s += (delta[k, j] * delta[k, j]) * lam[j]
                    trace[first + k, rec] = 0.5 * s
                rec += 1
        return rec

    return block_kernel


def sim_block(
    z: np.ndarray,
    noise: np.ndarray,
    xi: np.ndarray | None,
    delta: np.ndarray,
    acc: np.ndarray,
    trace: np.ndarray,
    *,
    sqrt_lam: np.ndarray,
    lam: np.ndarray,
    eta: float,
    first: int,
    rec: int,
    block: int,
    start_tail: int,
    record_every: int,
) -> int:
    r"""Run steps ``block .. block + m - 1`` of one seed group in place; return ``rec``.

    ``z`` (m, g, d) float32 standard normals of the inputs, ``noise`` (m, g, d) the
    correlated noise :math:`\tilde w` already scaled by :math:`\eta` (any float dtype),
    ``xi`` (m, g) the label noise or None; ``delta``, ``acc`` (g, d) float64 and the rows
    ``first .. first + g - 1`` of ``trace`` are updated; ``rec`` is the next column of
    ``trace`` (returned advanced). No validation.

    Examples
    --------
    >>> import numpy as np
    >>> delta, acc, trace = np.ones((1, 2)), np.zeros((1, 2)), np.zeros((1, 1))
    >>> z = np.array([[[1.0, 0.0]]], dtype=np.float32)
    >>> sim_block(z, np.zeros((1, 1, 2), np.float32), None, delta, acc, trace,
    ...           sqrt_lam=np.ones(2), lam=np.ones(2), eta=0.5, first=0, rec=0, block=0,
    ...           start_tail=0, record_every=1)
    1
    >>> delta.tolist(), acc.tolist(), trace.tolist()
    ([[0.5, 1.0]], [[0.25, 1.0]], [[0.625]])
    """
    use_xi = xi is not None
    xi_arr = xi if use_xi else np.zeros((1, 1))
    return int(
        _kernel()(
            z,
            sqrt_lam,
            float(eta),
            noise,
            xi_arr,
            use_xi,
            lam,
            delta,
            acc,
            trace,
            int(first),
            int(rec),
            int(block),
            int(start_tail),
            int(record_every),
        )
    )
