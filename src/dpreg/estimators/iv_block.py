r"""The first stage of one IV block in one compiled pass, used where it is numpy's bits.

Per trial and block of rows, the reference gradients of DP-2S-GD (Liang et al. 2025,
Algorithm 1, lines 5-6; ``dpreg.estimators.iv._batched_block_per_trial``) form
:math:`W = Z_b\Theta` by BLAS, then the norms :math:`\|w_i\|` (``np.einsum``),
:math:`R = W - X_b` (``np.subtract``), the norms :math:`\|r_i\|` (``np.einsum``) and the
clipping :math:`r_i \leftarrow r_i\min(1, \gamma_1/(\|z_i\|\|r_i\|))`: four passes over
the block, about 90 us of a 560 us block at Fig. 3b's 1,677 x 50 values
(docs/scaling.md, "Cost of a paper-scale run", session 25). :func:`first_stage` does
them in one pass (:func:`dpreg.estimators._iv_block_jit.residual_clip_first_stage`),
with numpy's two-lane einsum summation, so every value is the reference's **bit for
bit**.

It vouches for numpy's bits only where it has checked them: at first use,
:func:`available` runs the compiled pass and the reference (passed in by the caller) on
small blocks (``p`` from 2 to 67, clipped and unclipped rows, scales from
:math:`10^{-3}` to :math:`10^3`, both norms and the residual's alone) and compares every
value; on any difference (e.g. a numpy build whose einsum has more SIMD lanes) it
declines and the caller runs the reference.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

import numpy as np

__all__ = ["available", "first_stage", "usable"]

Reference = Callable[[np.ndarray, np.ndarray, np.ndarray, float, bool], tuple[np.ndarray, int]]
"""``(W, X, zn, clip, want_w) -> (w_norm, count)``: the reference's lines, ``R`` in ``W``."""


def first_stage(
    W: np.ndarray, X: np.ndarray, zn: np.ndarray, clip: float, want_w: bool
) -> tuple[np.ndarray, int]:
    r"""One block's first stage in place of ``W``: :math:`\|w_i\|` and the clipped count.

    Parameters
    ----------
    W : ndarray, shape (m, p), C-ordered
        :math:`Z_b\Theta`; overwritten by the clipped residuals
        :math:`r_i\min(1, \gamma/(\|z_i\|\|r_i\|))`, :math:`r_i = w_i - x_i`.
    X : ndarray, shape (m, p), C-ordered
        The block's regressors :math:`x_i`.
    zn : ndarray, shape (m,), C-ordered
        :math:`\|z_i\|`.
    clip : float
        :math:`\gamma_1 > 0`.
    want_w : bool
        Whether to compute :math:`\|w_i\|` (the second stage's norms).

    Returns
    -------
    w_norm : ndarray, shape (m,)
        :math:`\|w_i\|` (uninitialised if ``want_w`` is false).
    count : int
        Rows with :math:`\|z_i\|\|r_i\| > \gamma`.

    Notes
    -----
    Call it only where :func:`usable` holds.
    """
    from dpreg.estimators import _iv_block_jit as jit

    w_norm = np.empty(W.shape[0])
    count = jit.residual_clip_first_stage(
        W.reshape(-1), X.reshape(-1), zn, float(clip), w_norm, bool(want_w)
    )
    return w_norm, int(count)


def usable(W: np.ndarray, X: np.ndarray, zn: np.ndarray, reference: Reference) -> bool:
    """Whether :func:`first_stage` applies to these arrays and equals ``reference``.

    Float64, C-ordered arrays of matching shapes with ``p >= 2`` (``_norm_last`` takes an
    ``abs`` at ``p = 1``), ``m >= 1``, and :func:`available` for ``reference``.
    """
    return (
        W.ndim == 2
        and W.shape[1] >= 2
        and W.shape[0] >= 1
        and X.shape == W.shape
        and zn.shape == W.shape[:1]
        and W.dtype == X.dtype == zn.dtype == np.float64
        and W.flags.c_contiguous
        and X.flags.c_contiguous
        and zn.flags.c_contiguous
        and available(reference)
    )


@cache
def available(reference: Reference) -> bool:
    """Whether the compiled pass reproduces ``reference`` bit for bit (checked once).

    ``reference`` is ``dpreg.estimators.iv._first_stage_reference`` (passed in by its
    caller: this module does not import :mod:`dpreg.estimators.iv`).
    """
    try:
        import numba  # noqa: F401
    except ImportError:  # pragma: no cover - numba is a dependency
        return False
    rng = np.random.default_rng(20261127)
    for p in (2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 24, 31, 50, 51, 67):
        for m in (1, 3, 4, 9, 37):
            scale = 10.0 ** rng.uniform(-3, 3, size=p)
            W = rng.standard_normal((m, p)) * scale
            X = W + rng.standard_normal((m, p)) * scale * rng.uniform(0, 2, size=(m, 1))
            zn = np.abs(rng.standard_normal(m)) * 10.0
            clip = float(np.median(zn * np.sqrt(np.einsum("ij,ij->i", W - X, W - X))))
            for want_w in (True, False):
                R_ref = W.copy()
                w_ref, c_ref = reference(R_ref, X, zn, clip, want_w)
                R = W.copy()
                w_new, c_new = first_stage(R, X, zn, clip, want_w)
                if c_new != c_ref or not _same_bits(R, R_ref):
                    return False
                if want_w and not _same_bits(w_new, w_ref):
                    return False
    return True


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and bool(np.array_equal(a.view(np.int64), b.view(np.int64)))
