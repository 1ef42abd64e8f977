"""Bit-for-bit equality of arrays, as the fast paths' first-use checks compare them.

Four fast paths check themselves once per process against the reference they replace
before any job uses them, and are used only if every result is the reference's to the
bit (docs/scaling.md, "Cost of a paper-scale run"): numpy's BLAS called from numba
(:func:`dpreg.estimators.numpy_blas_kernel.blas_available`), DP-FTRL's compiled numpy-order
loop (:func:`dpreg.estimators.ftrl_numpy_order.available`), DP-GD's tiled narrow pass
(:mod:`dpreg.estimators._dpgd_tiled`) and the FFT convolution's ``out=`` buffers
(:func:`dpreg.estimators.ftrl_noise._pocketfft`). They all compare with :func:`same_bits`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["same_bits"]


def same_bits(a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` have the same shape, dtype and bytes.

    Stricter than ``np.array_equal``: ``-0.0`` and ``0.0`` differ, as do two NaN payloads,
    and a NaN equals the same NaN. Scalars are compared as 0-d arrays.

    Examples
    --------
    >>> import numpy as np
    >>> same_bits(np.array([0.0, np.nan]), np.array([0.0, np.nan]))
    True
    >>> same_bits(np.array([0.0]), np.array([-0.0])), same_bits(1.0, np.float32(1.0))
    (False, False)
    """
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()
