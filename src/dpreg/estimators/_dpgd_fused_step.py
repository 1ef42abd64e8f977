r"""One evaluation of the fused clipped-gradient kernel with its bookkeeping compiled.

:meth:`ClippedGradientKernel._evaluate <dpreg.estimators.dpgd.ClippedGradientKernel>`
with ``fused=True`` (Brown et al. 2024, Figs. 5/6 and 10/11: 100 or 1,000 chains of up
to :math:`10^4` steps on :math:`n = 10^4` rows) spends most of a step in the compiled
pass over the rows (:func:`~dpreg.estimators.dpgd_kernel.clipped_rows_fused`) and the
rest, 10-20% of a job, in about fifty small numpy calls around it: the certificate's
distances, their stable order, the certified blocks' Gram terms, the padded
parameters, and the results put back in the callers' order (docs/scaling.md, "Cost of
a paper-scale run"). :func:`fused_evaluate` does the same arithmetic in the same order
in two compiled calls (:mod:`dpreg.estimators._dpgd_fused_step_jit`), keeping numpy's
matrix products (the metric's :math:`L^\top(\theta - \theta_{\rm ref})` and
:math:`L^\top\theta`, whose BLAS rounding fixes the bits) and the pass itself: the
same gradients, clip fractions and pair counts, bit for bit, as the numpy path
(``tests/unit/test_dpgd_fused_step.py``). Nothing private decides anything here that
the numpy path does not: the same certificate, the same rows, the same sums.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpreg.estimators._dpgd_tiled import tiled_pass
from dpreg.estimators.dpgd_kernel import FUSED_NARROW_D, _fused_kernel

__all__ = ["fused_evaluate"]


def _constants(kernel: Any, lay: Any, metric_slack: float) -> tuple[Any, ...] | None:
    """Per-(kernel, layout) constants, computed once; None where the numpy path must run.

    The reference term of the distance (a 1-D norm, numpy's ``dot``), the blocks' first
    rows, the metric's scale, and the pass (narrow or wide) for the kernel's padding;
    the narrow one over row tiles where that has its bits (:mod:`dpreg.estimators._dpgd_tiled`).
    """
    const = getattr(lay, "fused_step", False)
    if const is not False:
        return const
    const = None
    if not np.isnan(lay.tau_min).any():
        L = kernel.metric_factor
        if L is None:
            ref_term, scale = float(np.linalg.norm(kernel.theta_ref)), 1.0
        else:
            ref_term = float(np.linalg.norm(L.T @ kernel.theta_ref))
            scale = 1.0 + metric_slack
        starts = np.array([start for start, _ in lay.spans] + [kernel.n], dtype=np.int64)
        wide, narrow = _fused_kernel()
        run = narrow if kernel.AT.shape[0] == FUSED_NARROW_D + 1 else wide
        if run is narrow:  # the same bits over row tiles, where checked (_dpgd_tiled)
            run = tiled_pass() or narrow
        const = (ref_term, scale, starts, run)
    lay.fused_step = const
    return const


def fused_evaluate(
    kernel: Any, theta: np.ndarray, lay: Any, slack: float, metric_slack: float
) -> tuple[np.ndarray, np.ndarray] | None:
    """Return ``(grad, clip_fraction)`` of a fused kernel at ``theta (d, trials)``, or None.

    The same bits as the numpy path of ``_evaluate`` (the module docstring); None (the
    caller runs the numpy path) for one column (numpy's ``einsum`` then sums the Gram
    terms with SIMD partial sums), a NaN distance or a NaN radius.

    Parameters
    ----------
    kernel : ClippedGradientKernel
        Built with ``fused=True``.
    theta : ndarray, shape (d, trials)
    lay : _BlockLayout
        The kernel's layout for ``trials`` columns.
    slack, metric_slack : float
        The certificate's slacks (``dpreg.estimators.dpgd._CERTIFY_SLACK`` and
        ``_METRIC_SLACK``), as its distances take them.
    """
    d, trials = theta.shape
    if trials < 2:
        return None
    const = _constants(kernel, lay, metric_slack)
    if const is None:
        return None
    ref_term, scale, starts, run = const
    from dpreg.estimators._dpgd_fused_step_jit import epilogue, prologue

    L = kernel.metric_factor
    diff = theta - kernel.theta_ref[:, None]
    if L is None:
        M1, M2 = diff, theta
    else:  # the same products as ClippedGradientKernel._distance
        M1, M2 = L.T @ diff, L.T @ theta
    k = kernel.AT.shape[0]
    order = np.empty(trials, dtype=np.int64)
    ext = np.empty((d + 1, trials))
    E = np.empty((trials, k))
    grad = np.empty((d, trials))
    row_start = np.empty(trials, dtype=np.int64)
    theta_c = np.ascontiguousarray(theta)
    certified = prologue(
        np.ascontiguousarray(M1), np.ascontiguousarray(M2), scale, slack, ref_term,
        theta_c, lay.tau_min, lay.gram_prefix, starts, order, ext, E, grad, row_start,
    )  # fmt: skip
    if certified < 0:
        return None
    G = np.empty((trials, k - 1))
    count = np.empty(trials, dtype=np.int64)
    run(kernel.AT, kernel.XBT, E, row_start, G, count)
    kernel.pairs["certified"] += certified
    kernel.pairs["dense"] += kernel.n * trials - certified
    out_grad = np.empty((d, trials))
    frac = np.empty(trials)
    epilogue(grad, G, count, order, kernel.n, out_grad, frac)
    return out_grad, frac
