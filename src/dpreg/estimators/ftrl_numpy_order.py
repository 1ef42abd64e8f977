r"""DP-FTRL's numpy step loop compiled with numpy's own arithmetic (issue 18, session 24).

``dpreg.estimators.ftrl._data_steps`` (the numpy loop that ``fit_dp_ftrl(kernel="auto")``
runs below :data:`~dpreg.estimators.ftrl.KERNEL_AUTO_MIN_ROWS` row-steps; Choquette-Choo
et al. 2023, Alg. 1) costs about 20 µs of numpy calls per step. :func:`data_steps_numpy_order`
runs the same steps in one compiled pass per trial
(:mod:`dpreg.estimators._ftrl_numpy_order_jit`) doing numpy's operations in numpy's order,
including the two-lane summation of ``np.einsum``'s dot product in this numpy build, so the
iterates and clip counts are the numpy loop's **bit for bit**; unlike
:mod:`dpreg.estimators.ftrl_kernel` (whose dot products are plain sequential sums and
differ at round-off), it changes no row of any study.

It vouches for numpy's bits only where it has checked them: at first use it runs the
compiled and the numpy loop on small problems (``d`` from 2 to 33, clipping, noise,
ridge, several epochs) and compares every iterate; on any difference (another numpy
build, e.g. one whose einsum has more SIMD lanes), and for ``d = 1`` (where numpy's
einsum sums the gradient over the batch in lanes), it declines: ``None`` is returned and
the caller runs the numpy loop. The check is repeated by ``tests/unit/test_ftrl_numpy_order.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

import numpy as np

from dpreg.estimators._bits import same_bits

__all__ = ["available", "data_steps_numpy_order"]


def _run(X, y, order, theta, *, epochs, eta, clip, ridge, noise, path):
    from dpreg.estimators import _ftrl_numpy_order_jit as jit

    finite = not np.isinf(clip)
    X = np.ascontiguousarray(X, dtype=np.float64)
    # the numpy loop's norms: np.linalg.norm over the rows of the contiguous X
    norms = np.linalg.norm(X, axis=1) if finite else np.zeros(X.shape[0])
    order = np.asarray(order, dtype=np.int64)  # read in place (a strided view is fine)
    theta = np.array(theta, dtype=np.float64, order="C")
    clipped = np.zeros(theta.shape[0])
    empty = np.empty((0, 0, 0))
    jit.steps(
        X, np.ascontiguousarray(y, dtype=np.float64), norms, order, theta, int(epochs),
        float(eta), float(clip), finite, float(ridge),
        empty if noise is None else np.ascontiguousarray(noise, dtype=np.float64),
        empty if path is None else path, clipped,
    )  # fmt: skip
    return theta, clipped


@cache
def available(reference: Callable[..., tuple[np.ndarray, np.ndarray]]) -> bool:
    """Whether the compiled loop reproduces ``reference`` bit for bit (checked once).

    ``reference`` is the numpy loop, ``dpreg.estimators.ftrl._data_steps`` (passed in by
    its caller: this module does not import :mod:`dpreg.estimators.ftrl`).
    """
    try:
        import numba  # noqa: F401
    except ImportError:  # pragma: no cover - numba is a dependency
        return False
    rng = np.random.default_rng(20261127)
    for d in (2, 3, 5, 8, 9, 16, 17, 26, 33):
        n, trials, S, b, epochs = 23, 3, 4, 5, 2
        X = rng.standard_normal((n, d)) * 10.0 ** rng.uniform(-2, 2, size=d)
        X = np.asfortranarray(X)  # a prepared table's layout
        y = rng.standard_normal(n)
        order = np.argsort(rng.random((trials, n)), axis=1)[:, : S * b].reshape(trials, S, b)
        theta0 = rng.standard_normal((trials, d))
        noise = rng.standard_normal((epochs * S, trials, d))
        for clip, ridge in ((0.5, 0.0), (np.inf, 0.1), (3.0, 0.01)):
            kwargs = dict(epochs=epochs, eta=0.3, clip=clip, ridge=ridge, noise=noise)
            path_a = np.empty((trials, epochs * S, d))
            path_b = np.empty((trials, epochs * S, d))
            ta, ca = reference(X, y, order, theta0.copy(), path=path_a, **kwargs)
            tb, cb = _run(X, y, order, theta0.copy(), path=path_b, **kwargs)
            if not (same_bits(ta, tb) and same_bits(path_a, path_b) and same_bits(ca, cb)):
                return False
    return True


def data_steps_numpy_order(
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
    reference: Callable[..., tuple[np.ndarray, np.ndarray]],
) -> tuple[np.ndarray, np.ndarray] | None:
    r"""``_data_steps``'s result computed in compiled code, or ``None`` if it cannot vouch.

    The arguments and results of ``dpreg.estimators.ftrl._data_steps``: ``order``
    (trials, steps per epoch, b) holds each trial's rows, every epoch reuses it;
    ``noise`` (T, trials, d) is added to the step's mean clipped gradient; ``path``
    (trials, T, d), if given, receives every iterate. ``reference``: the numpy loop
    (``_data_steps``) that :func:`available` checks the compiled loop against.

    Returns
    -------
    tuple of (theta, clipped), or None
        The last iterate (trials, d) and the clipped row-steps per trial, equal to the
        numpy loop's bit for bit; ``None`` for ``d < 2`` or when :func:`available` is
        false for ``reference`` (then nothing was computed and ``path`` is untouched).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> order = np.array([[[0, 1]]])  # one trial, one step of both rows
    >>> from dpreg.estimators.ftrl import _data_steps
    >>> theta, clipped = data_steps_numpy_order(X, np.array([1.0, -1.0]), order,
    ...     np.zeros((1, 2)), epochs=2, eta=1.0, clip=10.0, ridge=0.0, noise=None,
    ...     path=None, reference=_data_steps)
    >>> theta.tolist(), clipped.tolist()
    ([[0.75, -0.75]], [0.0])
    """
    if X.ndim != 2 or X.shape[1] < 2 or not available(reference):
        return None
    return _run(
        X, y, order, theta, epochs=epochs, eta=eta, clip=clip, ridge=ridge, noise=noise, path=path
    )
