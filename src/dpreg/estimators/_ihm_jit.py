r"""IHM's per-iteration pass over the sketched Hessians, fused (issue 18; numba).

Imported on first use only. At each iteration IHM (Lev et al. 2026, Algorithm 1, lines
4-5) scales the ``(trials, d, d)`` sketch Gram matrices by ``1 / k`` and adds ``1 / T``
of them to the released mean (``sketch_hessian_mean``). The numpy reference
(:func:`dpreg.estimators.ihm._scale_and_accumulate` with ``_HESSIAN_PATH =
"reference"``) takes three passes and a temporary: ``H /= k`` then
``hessian_mean += H / T``. :func:`scale_and_accumulate` takes one pass with the same
IEEE operations in the same order on every entry (``h = H / k``, ``H = h``,
``M = M + h / T``; no fast-math flags, so no reciprocal, reassociation or fused
multiply-add): the same bits (``tests/unit/test_ihm_hessian_pass.py``).

One file with a module-level kernel, so numba's on-disk cache checks its source.
"""

import numba


@numba.njit(cache=True, nogil=True)
def scale_and_accumulate(H, M, k, T):  # pragma: no cover - compiled; tested against numpy
    """``H /= k; M += H / T`` on C-contiguous float64 arrays of one shape, in one pass."""
    h = H.reshape(-1)
    m = M.reshape(-1)
    kf = float(k)
    tf = float(T)
    for i in range(h.size):
        v = h[i] / kf
        h[i] = v
        m[i] = m[i] + v / tf
