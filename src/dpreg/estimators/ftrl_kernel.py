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

Two compiled loops with the same arithmetic (bit for bit, tested): ``"rowwise"``, one
row at a time (each row's dot product a chain of :math:`d` dependent additions), and
``"blocked"`` (the default; issue 18), four rows of a batch at a time: their four dot
products run side by side (four independent chains, each summed in the same order as
the row-wise loop) and are added into the batch sum in the row order; with several
epochs each trial's rows are first copied in its order into one contiguous buffer, so
that the :math:`E` passes read memory sequentially instead of gathering rows at random
(one buffer of :math:`\lfloor n/b\rfloor b` rows, at most the size of ``X``, refilled
for each trial: the same values).
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np

__all__ = ["COMPILED_VARIANTS", "data_steps_compiled"]

COMPILED_VARIANTS: tuple[str, ...] = ("blocked", "rowwise")
"""Compiled step loops of :func:`data_steps_compiled` (the same values bit for bit)."""


@cache
def _kernel() -> Any:
    """Compile (or load from numba's cache) the step loop."""
    import numba

    @numba.njit(cache=True, nogil=True)
    def steps(X, y, norms, order, theta, epochs, eta, clip, finite, ridge, noise, path,
              clipped):  # fmt: skip
        # order (trials, S, b) rows of X (n, d); theta (trials, d) in place; noise
        # (T, trials, d) or empty; path (trials, T, d) or empty. Per trial and step:
        # r_i = <x_i, theta> - y_i, clipped to r_i clip / max(|r_i| ||x_i||, clip),
        # g = sum_i x_i r_i / b (+ ridge theta) (+ noise_t), theta -= eta g.
        trials, S, b = order.shape
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
                        i = order[k, s, j]
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


@cache
def _blocked_kernel() -> Any:
    """Compile (or load from numba's cache) the step loop, four rows at a time."""
    import numba

    @numba.njit(cache=True, nogil=True)
    def steps(X, y, norms, order, theta, epochs, eta, clip, finite, ridge, noise, path,
              clipped, gather):  # fmt: skip
        # The arithmetic of _kernel's loop, per row and per coordinate in the same order:
        # rows j..j+3 of a batch have their dot products summed side by side (each over
        # c = 0..d-1 as there), then are added into grad[c] in the row order j, j+1, ...
        trials, S, b = order.shape
        d = X.shape[1]
        has_noise = noise.shape[0] > 0
        has_path = path.shape[0] > 0
        grad = np.empty(d)
        b4 = b - b % 4
        m = S * b if gather else 0
        Xk = np.empty((m, d))
        yk = np.empty(m)
        nk = np.empty(m)
        rows = np.empty((S, b), dtype=np.int64)
        for k in range(trials):
            if gather:  # the trial's rows in its order, read sequentially by every epoch
                for s in range(S):
                    for j in range(b):
                        i = order[k, s, j]
                        q = s * b + j
                        for c in range(d):
                            Xk[q, c] = X[i, c]
                        yk[q] = y[i]
                        nk[q] = norms[i]
                        rows[s, j] = q
                XX, yy, nn = Xk, yk, nk
            else:
                for s in range(S):
                    for j in range(b):
                        rows[s, j] = order[k, s, j]
                XX, yy, nn = X, y, norms
            t = 0
            for _ in range(epochs):
                for s in range(S):
                    grad[:] = 0.0
                    for j in range(0, b4, 4):
                        i0 = rows[s, j]
                        i1 = rows[s, j + 1]
                        i2 = rows[s, j + 2]
                        i3 = rows[s, j + 3]
                        r0 = 0.0
                        r1 = 0.0
                        r2 = 0.0
                        r3 = 0.0
                        for c in range(d):
                            tc = theta[k, c]
                            r0 += XX[i0, c] * tc
                            r1 += XX[i1, c] * tc
                            r2 += XX[i2, c] * tc
                            r3 += XX[i3, c] * tc
                        r0 -= yy[i0]
                        r1 -= yy[i1]
                        r2 -= yy[i2]
                        r3 -= yy[i3]
                        if finite:
                            g0 = abs(r0) * nn[i0]
                            g1 = abs(r1) * nn[i1]
                            g2 = abs(r2) * nn[i2]
                            g3 = abs(r3) * nn[i3]
                            clipped[k] += (g0 > clip) + (g1 > clip) + (g2 > clip) + (g3 > clip)
                            r0 = r0 * (clip / max(g0, clip))
                            r1 = r1 * (clip / max(g1, clip))
                            r2 = r2 * (clip / max(g2, clip))
                            r3 = r3 * (clip / max(g3, clip))
                        for c in range(d):
                            acc = grad[c] + XX[i0, c] * r0
                            acc = acc + XX[i1, c] * r1
                            acc = acc + XX[i2, c] * r2
                            grad[c] = acc + XX[i3, c] * r3
                    for j in range(b4, b):
                        i = rows[s, j]
                        r = 0.0
                        for c in range(d):
                            r += XX[i, c] * theta[k, c]
                        r -= yy[i]
                        if finite:
                            g = abs(r) * nn[i]
                            if g > clip:
                                clipped[k] += 1.0
                            r = r * (clip / max(g, clip))
                        for c in range(d):
                            grad[c] += XX[i, c] * r
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
    variant: str = "blocked",
) -> tuple[np.ndarray, np.ndarray]:
    r"""Run the steps of :func:`~dpreg.estimators.ftrl.fit_dp_ftrl` in compiled code.

    The arguments and results of ``dpreg.estimators.ftrl._data_steps`` (the numpy
    reference): ``order`` (trials, steps per epoch, b) holds each trial's rows, every
    epoch reuses it; ``noise`` (T, trials, d) is added to the step's mean clipped
    gradient (Alg. 1 of Choquette-Choo et al. 2023, the correlated noise already
    formed); ``path`` (trials, T, d), if given, receives every iterate. ``variant``
    (:data:`COMPILED_VARIANTS`): ``"blocked"`` (four rows at a time, each trial's rows
    copied in order when ``epochs > 1``) or ``"rowwise"`` (one row at a time, the former
    loop, kept as its reference); the two give the same values bit for bit.

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
    if variant not in COMPILED_VARIANTS:
        raise ValueError(f"variant must be one of {COMPILED_VARIANTS}; got {variant!r}")
    finite = not np.isinf(clip)
    X = np.ascontiguousarray(X, dtype=np.float64)
    norms = np.linalg.norm(X, axis=1) if finite else np.zeros(X.shape[0])
    # read in place, trial by trial (issue 18: no (S, trials, b) transposed copy; a view
    # of the permutations' first S b columns is read through its strides)
    order = np.asarray(order, dtype=np.int64)
    theta = np.array(theta, dtype=np.float64, order="C")
    clipped = np.zeros(theta.shape[0])
    empty = np.empty((0, 0, 0))
    args = (
        X, np.ascontiguousarray(y, dtype=np.float64), norms, order, theta, int(epochs),
        float(eta), float(clip), finite, float(ridge),
        empty if noise is None else np.ascontiguousarray(noise, dtype=np.float64),
        empty if path is None else path, clipped,
    )  # fmt: skip
    if variant == "rowwise":
        _kernel()(*args)
    else:
        _blocked_kernel()(*args, int(epochs) > 1)
    return theta, clipped
