r"""Compiled step loop of DP-FTRL / DP-SGD on a dataset (Choquette-Choo et al. 2023, Alg. 1).

:func:`dpreg.estimators.ftrl.fit_dp_ftrl` runs its :math:`T` steps either through numpy
(``kernel="numpy"``, the reference: each step gathers its batches into a
(trials, b, d) copy and multiplies, bit for bit the one-step-at-a-time loop) or, with
``kernel="numba"``, through :func:`data_steps_compiled`: one compiled pass per trial that
reads each batch's rows in place through the order's indices and does the residual, the
clip test, the gradient sum, the noise and the step row by row, with no copies. The
random draws are untouched (the kernel draws nothing: the order and the noise are the
reference's arrays); the iterates equal the reference's up to the order of the
floating-point additions in the dot products and the batch sums
(``tests/unit/test_ftrl_kernel.py``).
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np

__all__ = ["data_steps_compiled"]


@cache
def _kernel() -> Any:
    """Compile (or load from numba's cache) the step loop."""
    import numba

    @numba.njit(cache=True, nogil=True)
    def steps(X, y, norms, by_step, theta, epochs, eta, clip, finite, ridge, noise, path,
              clipped):  # fmt: skip
        # by_step (S, trials, b) rows of X (n, d); theta (trials, d) in place; noise
        # (T, trials, d) or empty; path (trials, T, d) or empty. Per trial and step:
        # r_i = <x_i, theta> - y_i, clipped to r_i clip / max(|r_i| ||x_i||, clip),
        # g = sum_i x_i r_i / b (+ ridge theta) (+ noise_t), theta -= eta g.
        S, trials, b = by_step.shape
        d = X.shape[1]
        has_noise = noise.shape[0] > 0
        has_path = path.shape[0] > 0
        grad = np.empty(d)
        for k in range(trials):
            t = 0
            for _ in range(epochs):
                for s in range(S):
                    grad[:] = 0.0
                    for j in range(b):
                        i = by_step[s, k, j]
                        r = 0.0
                        for c in range(d):
                            r += X[i, c] * theta[k, c]
                        r -= y[i]
                        if finite:
                            g = abs(r) * norms[i]
                            if g > clip:
                                clipped[k] += 1.0
                            r = r * (clip / max(g, clip))
                        for c in range(d):
                            grad[c] += X[i, c] * r
                    for c in range(d):
                        gc = grad[c] / b
                        if ridge > 0:
                            gc += ridge * theta[k, c]
                        if has_noise:
                            gc += noise[t, k, c]
                        theta[k, c] = theta[k, c] - eta * gc
                        if has_path:
                            path[k, t, c] = theta[k, c]
                    t += 1

    return steps


def data_steps_compiled(
    X: np.ndarray,
    y: np.ndarray,
    order: np.ndarray,
    theta: np.ndarray,
    *,
    epochs: int,
    eta: float,
    clip: float,
    ridge: float,
    noise: np.ndarray | None,
    path: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray]:
    r"""Run the steps of :func:`~dpreg.estimators.ftrl.fit_dp_ftrl` in compiled code.

    The arguments and results of ``dpreg.estimators.ftrl._data_steps`` (the numpy
    reference): ``order`` (trials, steps per epoch, b) holds each trial's rows, every
    epoch reuses it; ``noise`` (T, trials, d) is added to the step's mean clipped
    gradient (Alg. 1 of Choquette-Choo et al. 2023, the correlated noise already
    formed); ``path`` (trials, T, d), if given, receives every iterate.

    Returns
    -------
    theta : numpy.ndarray
        The last iterate (trials, d) (a new array).
    clipped : numpy.ndarray
        Clipped row-steps per trial (trials,).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> y = np.array([1.0, -1.0])
    >>> order = np.array([[[0, 1]]])  # one trial, one step of both rows
    >>> theta, clipped = data_steps_compiled(X, y, order, np.zeros((1, 2)), epochs=2,
    ...                                      eta=1.0, clip=10.0, ridge=0.0, noise=None,
    ...                                      path=None)
    >>> theta.tolist(), clipped.tolist()
    ([[0.75, -0.75]], [0.0])
    """
    finite = not np.isinf(clip)
    X = np.ascontiguousarray(X, dtype=np.float64)
    norms = np.linalg.norm(X, axis=1) if finite else np.zeros(X.shape[0])
    by_step = np.ascontiguousarray(np.asarray(order, dtype=np.int64).transpose(1, 0, 2))
    theta = np.array(theta, dtype=np.float64, order="C")
    clipped = np.zeros(theta.shape[0])
    empty = np.empty((0, 0, 0))
    _kernel()(
        X, np.ascontiguousarray(y, dtype=np.float64), norms, by_step, theta, int(epochs),
        float(eta), float(clip), finite, float(ridge),
        empty if noise is None else np.ascontiguousarray(noise, dtype=np.float64),
        empty if path is None else path, clipped,
    )  # fmt: skip
    return theta, clipped
