r"""The IV reference's clipping of one block of rows, compiled (issue 18; numba).

Imported on first use only, and only in a process that has numba loaded already
(:func:`dpreg.estimators.iv._compiled_rows`). The reference gradients of DP-2S-GD
(Liang et al. 2025, Algorithm 1, lines 5-6; :func:`dpreg.estimators.iv._stage_gradients`)
clip each row's gradient by :math:`f_i = \min(1, \gamma / a_i)` with
:math:`a_i = \|z_i\|\|r_i\|` (first stage) or :math:`\|w_i\||e_i|` (second stage),
then sum :math:`Z^\top \mathrm{diag}(f) R` and :math:`Z^\top (f \odot e)`. Per trial and
block of rows, numpy takes ten calls for the products, the count, the maximum, the
division and the scaling (``R *= f[:, None]`` alone about 22 us for 1000 x 50 values).
:func:`clip_first_stage` and :func:`clip_second_stage` do them in one pass each, with the
same IEEE operations in the same order on every entry (no fast-math flags, so no fused
multiply-add, reciprocal or reassociation; numpy's ``maximum`` keeps a NaN, as the
comparison here does): the same bits (``tests/unit/test_iv_row_scaling.py``). The
norms themselves stay numpy's ``einsum`` (its summation order fixes their bits).

One file with module-level kernels, so numba's on-disk cache checks its source.
"""

import numba


@numba.njit(cache=True, nogil=True)
def clip_first_stage(R, a, zn, clip):  # pragma: no cover - compiled; tested against numpy
    """Clip the first stage's rows of one block; return the count of clipped rows.

    With ``a`` the residual norms ``||r_i||``: ``a *= zn``, the count of ``a > clip``,
    ``f = clip / maximum(a, clip)`` (NaN stays NaN) and ``R *= f[:, None]``, each entry by
    the reference's IEEE operations in its order; ``a`` ends holding ``f``.
    """
    m, p = R.shape
    count = 0
    for i in range(m):
        x = a[i] * zn[i]
        if x > clip:
            count += 1
        if x < clip:  # numpy.maximum(x, clip): x unless below (NaN kept)
            x = clip
        f = clip / x
        a[i] = f
        for j in range(p):
            R[i, j] = R[i, j] * f
    return count


@numba.njit(cache=True, nogil=True)
def clip_second_stage(e, w_norm, clip):  # pragma: no cover - compiled; tested against numpy
    """Clip the second stage's rows of one block; return the count of clipped rows.

    ``a = |e| * w_norm``, the count of ``a > clip``, ``f = clip / maximum(a, clip)`` and
    ``e *= f``, each entry by the reference's IEEE operations in its order.
    """
    count = 0
    for i in range(e.shape[0]):
        x = abs(e[i]) * w_norm[i]
        if x > clip:
            count += 1
        if x < clip:  # numpy.maximum(x, clip): x unless below (NaN kept)
            x = clip
        e[i] = e[i] * (clip / x)
    return count
