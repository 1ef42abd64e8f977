"""Full-batch DP gradient descent for least squares (Brown et al. 2024; Lev et al. 2026).

One DP-GD core serves both papers:

* Brown et al. (2024), Algorithm 1: ``theta_t = theta_{t-1} - eta g_t + eta z_t`` with
  ``g_t`` the average of per-example gradients ``-x_i (y_i - x_i' theta)`` each clipped
  to L2 norm ``gamma``, ``z_t ~ N(0, lambda^2 I)``, ``lambda^2 = 2 T gamma^2 / (rho n^2)``
  for rho-zCDP, ``theta_0 = 0``, every iterate released;
* Lev et al. (2026), Algorithm 7 (their DP-GD baseline, "implementation from Brown et
  al."): the same recursion with ``T = 3``, learning rate ``b = 0.25``, clip ``C = 1``,
  ``theta_0 = 0`` and the noise of their eq. (157).

The module is layered as the project's conventions ask:

* :func:`clipped_mean_gradient` -- the averaged clipped gradient (the only query that
  touches private data), vectorised over trials;
* :func:`dp_gd_sensitivity` and :func:`dp_gd_noise_std` -- the L2 sensitivity of that
  query and the zCDP noise calibration;
* :func:`dp_gd_path` -- the numerical core (no privacy logic), every iterate and the
  clip fraction of every step;
* :func:`fit_dp_gd` -- the validated public estimator (registry name ``"dp_gd"``).
"""

from __future__ import annotations

import hashlib
import math
import sys
from collections import OrderedDict
from collections.abc import Callable, Sequence

import numpy as np

from dpreg._validation import (
    check_bounded_design,
    check_choice,
    check_positive,
    check_probability,
    check_regression,
    check_rng,
    check_row_norm_bound,
    check_trials,
)
from dpreg.estimators._dpgd_fused_step import fused_evaluate
from dpreg.estimators._dpgd_recent import RecentCertificate, radii_kernel
from dpreg.estimators.dpgd_centre import CentredCertificate
from dpreg.estimators.dpgd_kernel import (
    FUSED_MAX_D,
    clip_block,
    clip_block_reference,
    clipped_residual_weights,
    clipped_residual_weights_reference,
    clipped_rows_fused,
    fused_entries,
    row_clip_corrections,
    row_clip_corrections_reference,
    row_norms,
    row_norms_reference,
    screen_block,
    screen_block_reference,
)
from dpreg.privacy.budgets import ZCDP, ApproxDP, check_budget
from dpreg.privacy.conversions import CONVERSIONS, eps_to_zcdp, zcdp_to_approx_dp
from dpreg.privacy.gaussian import gaussian_zcdp, zcdp_gaussian_sigma
from dpreg.results import Fit

CLIP_MODES = ("gradient", "residual")
_BLOCK_ELEMENTS = 2**19
_FAST_BLOCK_ELEMENTS = 2**17  # rows x parameters per block of the fast kernel
_FAST_MIN_ROWS = 256
_SPARSE_FRACTION = 0.5  # clipped rows' share of a block's work below which they are split off
_SCREEN_FACTOR = 2.0**-23  # 2 x unit roundoff of float32 (see ClippedGradientKernel._screened)
_SCREEN_RANGE = 2.0**60  # largest |entry| of the data and parameters screened in float32
_COMPILED_MIN_PAIRS = 2**20  # (row, parameter) pairs per call from which numba is loaded
_CERTIFY_SLACK = 1e-9
_METRIC_SLACK = 1e-6  # relative, on the certificate's two metric norms
_METRIC_RIDGE = 1e-10  # relative to the largest eigenvalue of X'X/n
CERTIFICATE_METRICS = ("design", "euclidean")
_NOISE_BLOCK_ELEMENTS = 2**18
# entries of the rows the fixed certificate leaves from which GramRowGradient also tries
# the recent certificate (below it, its per-call cost, ~30 us, is not repaid)
_RECENT_MIN_WORK = 2**17
_KERNEL_CACHE_SIZE = 2  # kernels kept (e.g. one dataset's gradient- and residual-clip ones)
_KERNEL_CACHE: OrderedDict[tuple, ClippedGradientKernel] = OrderedDict()
NEIGHBOURS = ("replace_one", "zero_out")
KERNELS = ("fast", "rows", "gram", "fused")

__all__ = [
    "CLIP_MODES",
    "KERNELS",
    "NEIGHBOURS",
    "ClippedGradientKernel",
    "GramRowGradient",
    "clipped_gradient_kernel",
    "clipped_mean_gradient",
    "dp_gd_noise_std",
    "dp_gd_path",
    "dp_gd_sensitivity",
    "fit_dp_gd",
]


def clipped_mean_gradient(
    X: np.ndarray,
    y: np.ndarray,
    theta: np.ndarray,
    clip: float,
    *,
    clip_mode: str = "gradient",
    row_norms: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    r"""Average of clipped per-example squared-loss gradients, for many parameters at once.

    Pure numerical core, no validation.

    Parameters
    ----------
    X : ndarray, shape (n, d)
    y : ndarray, shape (n,)
    theta : ndarray, shape (d, trials)
        One parameter vector per column.
    clip : float
        Clipping level; ``math.inf`` disables clipping.
    clip_mode : {"gradient", "residual"}
        ``"gradient"``: clip each per-example gradient
        :math:`g_i = -x_i (y_i - x_i^\top\theta)` to L2 norm ``clip``,
        :math:`g_i \min\{1, C/\|g_i\|\}` (Brown et al. 2024, Alg. 1; Lev et al. 2026,
        Alg. 7). Since :math:`\|g_i\| = \|x_i\|\,|r_i|` this is computed as a rescaling
        of the residual :math:`r_i` -- no (n, d, trials) tensor is formed.
        ``"residual"``: clip each residual to :math:`[-C, C]`,
        :math:`-x_i\,\mathrm{clip}_C(r_i)` (Lev et al.'s released code,
        docs/notes/lev2026.md §8 item 20).
    row_norms : ndarray, shape (n,), optional
        Precomputed :math:`\|x_i\|_2` (used by ``"gradient"``).

    Returns
    -------
    grad : ndarray, shape (d, trials)
        :math:`\frac1n\sum_i \mathrm{clip}(g_i)` for each column of ``theta``.
    clip_fraction : ndarray, shape (trials,)
        Fraction of the n examples that were clipped (norm or abs(residual) > ``clip``).
    """
    n = X.shape[0]
    trials = theta.shape[1]
    if clip_mode == "gradient" and row_norms is None and not math.isinf(clip):
        row_norms = np.linalg.norm(X, axis=1)
    grad = np.zeros((X.shape[1], trials))
    count = np.zeros(trials, dtype=np.int64)
    # Row blocks of about 2**19 residuals keep the working set in cache; in-place ops
    # avoid (n, trials) temporaries.
    block = max(1, _BLOCK_ELEMENTS // max(trials, 1))
    for start in range(0, n, block):
        stop = min(start + block, n)
        Xb = X[start:stop]
        R = Xb @ theta
        if clip_mode == "gradient" and not math.isinf(clip):
            # W = r_i min{1, C/||g_i||} = r_i C / max{||g_i||, C}, ||g_i|| = ||x_i|| |r_i|:
            # one compiled pass (the same bits as numpy's five) where it pays
            weights = (
                clipped_residual_weights
                if _use_compiled(R.size)
                else clipped_residual_weights_reference
            )
            W = weights(R, y[start:stop], row_norms[start:stop], clip, count)
            grad -= Xb.T @ W
            continue
        np.subtract(y[start:stop, None], R, out=R)  # residuals r_i
        if math.isinf(clip):
            W = R
        else:
            count += np.count_nonzero(np.abs(R) > clip, axis=0)
            W = np.clip(R, -clip, clip, out=R)
        grad -= Xb.T @ W
    grad /= n
    frac = count / n
    return grad, frac


class ClippedGradientKernel:
    r"""Precomputed fast evaluation of :func:`clipped_mean_gradient` for many parameters.

    The same quantity as :func:`clipped_mean_gradient` (up to floating-point rounding;
    clip counts exact), rearranged for speed (``kernel="fast"`` of :func:`dp_gd_path`).

    *Scaled residuals.* With :math:`r_i = y_i - x_i^\top\theta` and the per-row residual
    threshold :math:`B_i = C/\|x_i\|` (gradient clipping: :math:`\|g_i\| = \|x_i\||r_i|
    > C` iff :math:`|r_i| > B_i`) or :math:`B_i = C` (residual clipping), the clipped
    per-example gradient is :math:`-x_i B_i\,\mathrm{clip}_{[-1,1]}(u_i)` with
    :math:`u_i = r_i/B_i`. Precomputing :math:`A = [X/B,\ y/B]` and :math:`(XB)^\top`
    turns the residuals of a row block into one product with :math:`[\theta; -1]`; row
    ``i`` is clipped iff :math:`|u_i| > 1` (counted exactly) and a second product gives
    the block's gradient. Rows with :math:`x_i = 0` have zero gradient and are never
    clipped.

    *Certified rows skip both products.* For a reference point :math:`\theta_{\rm ref}`
    (the ridge solution :math:`M^{-1}X^\top y/n` under the default metric, OLS under
    the Euclidean one; any point is valid) with residuals :math:`r^{\rm ref}_i` and any
    symmetric positive definite :math:`M`, Cauchy-Schwarz in the metric of :math:`M` gives
    :math:`|r_i(\theta)| \le |r^{\rm ref}_i| + \|x_i\|_{M^{-1}}\,\|\theta -
    \theta_{\rm ref}\|_M`, so row i cannot be clipped at :math:`\theta` when
    :math:`\|\theta - \theta_{\rm ref}\|_M \le \tau_i = (B_i - |r^{\rm ref}_i|)/
    \|x_i\|_{M^{-1}}` (with relative slacks of :math:`10^{-9}` on the residuals and
    :math:`10^{-6}` on both norms against rounding). :math:`M` is the design's
    second-moment matrix :math:`X^\top X/n` plus a ridge of :math:`10^{-10}` times its
    largest eigenvalue (so :math:`\|\theta-\theta_{\rm ref}\|_M` is about the root
    mean square difference of the fitted values, small near OLS even where
    :math:`\|\theta - \theta_{\rm ref}\|_2` is large for a badly conditioned design;
    the ridge bounds the condition number of its Cholesky factor by :math:`10^5`, so
    the computed norms are accurate far below the slack). ``metric="euclidean"``
    uses :math:`M = I`. For such (row, parameter) pairs the clipped
    gradient equals the plain one, whose block sum is the block Gram product
    :math:`[X_b^\top X_b,\ X_b^\top y_b]\,[\theta; -1]` (:math:`O(d^2)`). Rows are
    sorted by :math:`\tau_i` (descending) and parameters by their distance to
    :math:`\theta_{\rm ref}`, so in every row block the certified parameters are a
    prefix and their Gram products over consecutive blocks are prefix sums. Only the
    remaining pairs go through the first product; blocks where none of them is clipped
    then use the Gram product too, and blocks where few rows are clipped (for any of the
    parameters) use it for the other rows, :math:`(G_b - \sum_{i\in H}(x_iB_i)a_i^\top)
    [\theta; -1] + \sum_{i\in H} x_iB_i\,\mathrm{clip}(u_i)` over the set :math:`H` of
    such rows (the same sum, regrouped); only the other blocks take the second product
    over all their rows. A parameter repeated in every column (every run's
    :math:`\theta_0 = 0`) is evaluated once.

    With ``clip = inf`` the averaged gradient is exactly
    :math:`\hat\Sigma\theta - X^\top y/n` (precomputed): :math:`O(d^2)` per parameter.

    ``pairs`` counts the (row, parameter) pairs handled so far by the certificate
    (``"certified"``), by the Gram product of a block without clipping (``"gram"``), by
    the Gram product with the clipped rows split off (``"sparse"``), by the two products
    (``"dense"``) and as copies of a repeated parameter (``"shared"``).

    Parameters
    ----------
    X : ndarray, shape (n, d)
    y : ndarray, shape (n,)
    clip : float
        Clipping level :math:`C` (``math.inf``: none).
    clip_mode : {"gradient", "residual"}
        See :func:`clipped_mean_gradient`.
    metric : {"design", "euclidean"}, default "design"
        The metric :math:`M` of the certificate (above); results are the same, only
        how many pairs are certified changes.
    screen : bool, default False
        Compute each uncertified block's residuals first in single precision (half the
        cost of the product) and recompute in double precision only the rows that may
        be clipped given a bound on the rounding error (:meth:`_screened`); blocks where
        many rows may clip fall back to the double-precision pass. The results are the
        same to rounding (clip counts exactly); worth it where few rows clip (IHM near
        the solution), not where many do.
    fused : bool, default False
        For ``d <= 11`` (:data:`~dpreg.estimators.dpgd_kernel.FUSED_MAX_D`): every
        parameter's uncertified rows (a suffix of the sorted rows) go through one
        compiled pass computing residuals, clips, counts and the gradient sum with the
        rows as SIMD lanes (:func:`~dpreg.estimators.dpgd_kernel.clipped_rows_fused`)
        instead of the block loop's two products, clip pass and Gram shortcuts: for
        many parameters far from the reference point where many rows clip (Brown et
        al.'s confidence-interval chains, ``kernel="fused"``). Equal to the block loop
        to rounding (sums reassociated); clip counts equal except for a residual within
        rounding of the clip level. For ``d <= 10`` the pass's narrow variant runs
        (parameters padded to 11 entries instead of 12; the same bits). The bookkeeping
        around the pass (distances, order, certified Gram terms) runs compiled for two
        or more columns (:mod:`dpreg.estimators._dpgd_fused_step`; the same bits as the
        numpy path, which ``compiled_step = False`` selects).
    centre : bool, default False
        Also certify around the (coordinate-wise) median of each call's parameters
        (:class:`~dpreg.estimators.dpgd_centre.CentredCertificate`): where a cost model
        says it pays, the parameters nearest that centre are evaluated together, the rows
        certified for all of them through the Gram matrix and the others in double
        precision; the remaining parameters take the block pass. For many trials of one
        iteration clustered away from the reference point (IHM on Pol). Equal to the
        block pass to rounding, clip counts exactly. Not with ``fused``. In ``pairs``,
        the pairs it certifies count as ``"certified"``, the ones it computes as
        ``"sparse"``.
    """

    def __init__(
        self,
        X: np.ndarray,
        y: np.ndarray,
        clip: float,
        *,
        clip_mode: str = "gradient",
        metric: str = "design",
        screen: bool = False,
        fused: bool = False,
        centre: bool = False,
    ) -> None:
        import scipy.linalg  # lazy: job start-up (docs/scaling.md)

        check_choice(metric, "metric", CERTIFICATE_METRICS)
        n, d = X.shape
        self.n, self.d, self.clip = n, d, float(clip)
        self.screen = False
        self.fused = False
        self.centre: CentredCertificate | None = None
        if math.isinf(clip):
            self.gram = (X.T @ X) / n
            self.moment = (X.T @ y) / n
            return
        norms = np.linalg.norm(X, axis=1)
        zero = norms == 0.0
        if clip_mode == "gradient":
            # residual threshold; rows x_i = 0 have zero gradient and never clip
            B = np.where(zero, 0.0, clip / np.where(zero, 1.0, norms))
            inv_B = np.where(zero, 0.0, norms / clip)
        else:
            B = np.full(n, float(clip))
            inv_B = np.full(n, 1.0 / clip)
        # certificate radii tau_i (rows that cannot clip within tau_i of theta_ref, in
        # the metric ||v||_M = ||L^T v||, M = L L^T; dual norms ||x_i||_{M^-1})
        self.metric_factor = _certificate_factor(X) if metric == "design" else None
        if self.metric_factor is None:
            self.theta_ref = np.linalg.lstsq(X, y, rcond=None)[0]
        else:  # the ridge solution M^{-1} X'y / n: near OLS in fit, small in norm
            self.theta_ref = scipy.linalg.cho_solve((self.metric_factor, True), X.T @ y / n)
        ref_norm = float(np.linalg.norm(self.theta_ref))
        r_ref = np.abs(y - X @ self.theta_ref)
        slack = _CERTIFY_SLACK * (np.abs(y) + norms * ref_norm + B)
        margin = B - r_ref - slack
        if self.metric_factor is None:
            dual = norms
        else:
            dual = np.linalg.norm(
                scipy.linalg.solve_triangular(self.metric_factor, X.T, lower=True), axis=0
            )
            dual = np.where(zero, 0.0, dual * (1.0 + _METRIC_SLACK))
        with np.errstate(divide="ignore", invalid="ignore"):
            tau = margin / dual
        # a zero row's residual is y_i whatever theta: never clipped (gradient mode: its
        # gradient is 0) or clipped for every theta (residual mode with |y_i| > C)
        never = zero & ((clip_mode == "gradient") | (margin > 0.0))
        tau = np.where(never, math.inf, np.where(zero, -math.inf, tau))
        order = np.argsort(-tau, kind="stable")
        self.tau = tau[order]
        ys, Bs, inv_Bs = y[order], B[order], inv_B[order]
        self.A = np.empty((n, d + 1))
        self.A[:, d] = ys * inv_Bs
        if _BUILD_PATH == "reference" or X.dtype != np.float64:
            Xs = X[order]
            np.multiply(Xs, inv_Bs[:, None], out=self.A[:, :d])
            self.XB_T = np.ascontiguousarray((Xs * Bs[:, None]).T)
        else:
            self.XB_T = _scaled_sorted_rows(X, order, inv_Bs, Bs, self.A)
        self.screen = bool(screen) and float(np.abs(self.A).max(initial=0.0)) <= _SCREEN_RANGE
        if self.screen:  # single-precision copy and the rows' L1 norms (rounding bounds)
            self.A32 = self.A.astype(np.float32)
            self.a1 = np.abs(self.A).sum(axis=1)
        self.fused = bool(fused) and d <= FUSED_MAX_D
        if self.fused:  # zero-padded transposed copies for the compiled pass
            k = fused_entries(d)  # 11 (the narrow pass) for d <= 10, else 12
            self.AT = np.zeros((k, n))
            self.AT[: d + 1] = self.A.T
            self.XBT = np.zeros((k - 1, n))
            self.XBT[:d] = self.XB_T
        if centre and not self.fused:  # radii around each call's centre: dual norms, slacks
            self._neg_tau = -self.tau  # increasing: counts rows by their fixed radius
            self.centre = CentredCertificate(
                self.A,
                self.XB_T,
                (dual * inv_B)[order],
                (_CERTIFY_SLACK * (np.abs(y) + B) * inv_B)[order],
                (_CERTIFY_SLACK * norms * inv_B)[order],
                self.metric_factor,
            )
        # fused: the bookkeeping around the pass compiled (_dpgd_fused_step), the same
        # bits as the numpy path below (False: that path, the tests' reference)
        self.compiled_step = True
        self._layouts: dict[int, _BlockLayout] = {}
        self._zero: tuple[np.ndarray, np.ndarray, dict[str, int]] | None = None
        # (row, parameter) pairs, by how they were handled
        self.pairs = {"certified": 0, "gram": 0, "sparse": 0, "dense": 0, "shared": 0}

    def _layout(self, trials: int) -> _BlockLayout:
        layout = self._layouts.get(trials)
        if layout is None:
            layout = _BlockLayout(self, trials)
            self._layouts[trials] = layout
        return layout

    def _distance(self, theta: np.ndarray) -> np.ndarray:
        """Upper bounds on ``||theta_j - theta_ref||_M`` for the columns of ``theta``."""
        diff = theta - self.theta_ref[:, None]
        L = self.metric_factor
        if L is None:
            dist = np.linalg.norm(diff, axis=0)
            dist += _CERTIFY_SLACK * (
                np.linalg.norm(theta, axis=0) + np.linalg.norm(self.theta_ref)
            )
            return dist
        dist = np.linalg.norm(L.T @ diff, axis=0) * (1.0 + _METRIC_SLACK)
        dist += _CERTIFY_SLACK * (
            np.linalg.norm(L.T @ theta, axis=0) + np.linalg.norm(L.T @ self.theta_ref)
        )
        return dist

    def _screened(self, k, lo, part, ext32, e_inf, lay, grad, count, clip_pass) -> bool:
        r"""Block k for the parameters lo.. from single-precision residuals, if few rows clip.

        Single-precision residuals :math:`\tilde u_{ij}` are within
        :math:`c\,\|a_i\|_1\,\|[\theta_j; -1]\|_\infty` of the exact ones, with
        :math:`c = 2(d + 4)\,2^{-24}` (twice the classical bound :math:`\gamma_{d+1}` on a
        sum of d + 1 products plus the rounding of both factors to single precision;
        entries up to :math:`2^{60}`, so underflow adds at most :math:`(d+1)2^{-88}`).
        Rows with every :math:`|\tilde u_{ij}| \le 1 -` that bound are certainly not
        clipped; the other rows' residuals are recomputed in double precision. Returns
        False (nothing done) when more than a few rows are flagged.
        """
        start, stop = lay.spans[k]
        rows, width, d = stop - start, part.shape[1], self.d
        U32 = np.matmul(
            self.A32[start:stop], ext32[:, lo:], out=lay.u32[: rows * width].reshape(rows, width)
        )
        bound = _SCREEN_FACTOR * (d + 4) * lay.a1_max[k] * max(float(e_inf[lo]), 1.0)
        screen_pass = screen_block if clip_pass is clip_block else screen_block_reference
        flagged = screen_pass(U32, 1.0 - bound - (d + 1) * 2.0**-88, lay.hit)
        if flagged == 0:  # no row clipped: the Gram product, exactly as without screening
            grad[:, lo:] += lay.gram[k] @ part
            self.pairs["gram"] += rows * width
            return True
        if flagged * (2 * width + d + 1) > _SPARSE_FRACTION * rows * width:
            return False
        rows_hit = start + np.flatnonzero(lay.hit[:rows])
        A_hit = self.A[rows_hit]
        U = A_hit @ part  # the flagged rows in double precision
        W = np.empty_like(U)
        clip_pass(U, W, count[lo:], lay.hit)  # counts: unflagged rows never clip
        XB_hit = self.XB_T[:, rows_hit]
        grad[:, lo:] += (lay.gram[k] - XB_hit @ A_hit) @ part
        grad[:, lo:] += XB_hit @ W
        self.pairs["sparse"] += rows * width
        return True

    def __call__(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return ``(grad (d, trials), clip_fraction (trials,))`` at ``theta (d, trials)``."""
        d, trials = theta.shape
        if math.isinf(self.clip):
            return self.gram @ theta - self.moment[:, None], np.zeros(trials)
        if trials > 1 and not np.any(theta[:, 1:] != theta[:, :1]):
            # one parameter repeated (e.g. every run's theta_0 = 0): evaluate it once
            grad, frac = self(theta[:, :1])
            self.pairs["shared"] += self.n * (trials - 1)
            return np.repeat(grad, trials, axis=1), np.repeat(frac, trials)
        if trials == 1 and not np.any(theta) and not np.signbit(theta).any():
            return self._at_zero()
        if self.centre is not None and trials > 1:
            out = self._centred(theta)
            if out is not None:
                return out
        return self._evaluate(theta)

    def _at_zero(self) -> tuple[np.ndarray, np.ndarray]:
        """Return the gradient at theta = 0 (every run's start): computed once, then reused.

        The evaluation is deterministic (either clip pass gives the same bits), so the
        stored result is the one a new evaluation would give; ``pairs`` grows by the
        first evaluation's counts at every call.
        """
        if self._zero is None:
            before = dict(self.pairs)
            grad, frac = self._evaluate(np.zeros((self.d, 1)))
            self._zero = (grad, frac, {key: self.pairs[key] - before[key] for key in before})
        else:
            for key, count in self._zero[2].items():
                self.pairs[key] += count
        return self._zero[0].copy(), self._zero[1].copy()

    def _centred(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """Evaluate the parameters near the call's centre together, the far ones by blocks.

        None when the cost model puts every parameter in the block pass (or a distance is
        not finite).
        """
        d, trials = theta.shape
        dist = self._distance(theta)
        if not np.all(np.isfinite(dist)) or not np.all(np.isfinite(theta)):
            return None
        # rows the fixed certificate leaves to each parameter (rows with tau_i < dist_j)
        far_rows = self.n - np.searchsorted(self._neg_tau, -dist, side="right")
        plan = self.centre.plan(theta, far_rows)
        if plan is None:
            return None
        near, rows = plan
        width = near.size
        ext = np.empty((d + 1, width))
        np.take(theta, near, axis=1, out=ext[:d])
        ext[d] = -1.0
        compiled = _use_compiled(self.n * trials + sum(self.pairs.values()))
        count = np.zeros(trials, dtype=np.int64)
        near_count = np.zeros(width, dtype=np.int64)
        sums, _ = self.centre.gradient(
            ext, rows, clip_block if compiled else clip_block_reference, near_count
        )
        self.pairs["certified"] += (self.n - rows.size) * width
        self.pairs["sparse"] += rows.size * width
        grad = np.empty((d, trials))
        grad[:, near] = sums / self.n
        count[near] = near_count
        frac = count / self.n
        if width < trials:
            far = np.ones(trials, dtype=bool)
            far[near] = False
            # the layout of the call's width (its buffers hold any narrower one)
            grad[:, far], frac[far] = self._evaluate(theta[:, far], self._layout(trials))
        return grad, frac

    def _evaluate(
        self, theta: np.ndarray, lay: _BlockLayout | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Evaluate by the block pass around the fixed reference point (class docstring)."""
        d, trials = theta.shape
        lay = self._layout(trials) if lay is None else lay
        if self.fused and self.compiled_step:  # the same bits, bookkeeping compiled
            out = fused_evaluate(self, theta, lay, _CERTIFY_SLACK, _METRIC_SLACK)
            if out is not None:
                return out
        dist = self._distance(theta)
        order = np.argsort(dist, kind="stable")
        ext = np.empty((d + 1, trials))
        np.take(theta, order, axis=1, out=ext[:d])
        ext[d] = -1.0
        # first[k]: parameters 0..first[k]-1 (sorted) are certified in row block k
        first = np.searchsorted(dist[order], lay.tau_min, side="right")
        # parameter j is certified in blocks 0..cert[j]-1 (first is non-increasing)
        cert = np.cumsum(np.bincount(first, minlength=trials + 1)[::-1])[::-1][1:]
        # cert is non-increasing: the parameters certified somewhere are a prefix
        certified = int(np.count_nonzero(cert))
        grad = np.zeros((d, trials))
        if certified:
            grad[:, :certified] = np.einsum(
                "jab,bj->aj", lay.gram_prefix[cert[:certified]], ext[:, :certified]
            )
        if self.fused:
            count = self._fused(ext, cert, lay, grad)
        else:
            count = self._blocks(ext, first, theta, lay, grad)
        out_grad = np.empty_like(grad)
        out_grad[:, order] = grad
        out_count = np.empty(trials, dtype=np.int64)
        out_count[order] = count
        out_grad /= self.n
        return out_grad, out_count / self.n

    def _fused(
        self, ext: np.ndarray, cert: np.ndarray, lay: _BlockLayout, grad: np.ndarray
    ) -> np.ndarray:
        """Every parameter's uncertified rows in one compiled pass (``fused=True``)."""
        d, trials = self.d, ext.shape[1]
        # parameter j (sorted) is certified in blocks 0..cert[j]-1: its other rows are the
        # suffix from the start of block cert[j]
        starts = np.array([start for start, _ in lay.spans] + [self.n], dtype=np.int64)
        row_start = starts[cert]
        k = self.AT.shape[0]
        E = np.zeros((trials, k))
        E[:, : d + 1] = ext.T
        G = np.empty((trials, k - 1))
        count = np.empty(trials, dtype=np.int64)
        clipped_rows_fused(self.AT, self.XBT, E, row_start, G, count)
        grad += G[:, :d].T
        certified = int(row_start.sum())
        self.pairs["certified"] += certified
        self.pairs["dense"] += self.n * trials - certified
        return count

    def _blocks(
        self,
        ext: np.ndarray,
        first: np.ndarray,
        theta: np.ndarray,
        lay: _BlockLayout,
        grad: np.ndarray,
    ) -> np.ndarray:
        """Run the row blocks' products, clip passes and Gram shortcuts; return the counts."""
        d, trials = self.d, ext.shape[1]
        count = np.zeros(trials, dtype=np.int64)
        pairs = self.pairs
        # both passes give the same bits; the compiled one once this kernel's work so far
        # (a DP-GD run calls it at every step) pays numba's start-up
        compiled = _use_compiled(self.n * trials + sum(self.pairs.values()))
        clip_pass = clip_block if compiled else clip_block_reference
        screen = self.screen and float(np.abs(theta).max()) <= _SCREEN_RANGE
        if screen:
            ext32 = ext.astype(np.float32)
            # largest |entry| of the parameters lo.. (suffix maxima, sorted order)
            e_inf = np.maximum.accumulate(np.abs(ext).max(axis=0)[::-1])[::-1]
        for k, (start, stop) in enumerate(lay.spans):
            lo = int(first[k])
            pairs["certified"] += (stop - start) * lo
            if lo >= trials:
                continue
            rows, width = stop - start, trials - lo
            part = ext[:, lo:]
            if screen and self._screened(k, lo, part, ext32, e_inf, lay, grad, count, clip_pass):
                continue
            U = np.matmul(self.A[start:stop], part, out=lay.u[: rows * width].reshape(rows, width))
            W = lay.w[: rows * width].reshape(rows, width)
            # one pass: W = clip(U), clipped pairs counted, rows clipped somewhere flagged
            if clip_pass(U, W, count[lo:], lay.hit) == 0:  # W = U: the Gram product
                grad[:, lo:] += lay.gram[k] @ part
                pairs["gram"] += rows * width
                continue
            hit = np.flatnonzero(lay.hit[:rows])
            if hit.size * (width + d + 1) <= _SPARSE_FRACTION * rows * width:
                # few such rows: the block's Gram product over the other rows (where
                # W = U), plus the clipped rows' terms
                rows_hit = start + hit
                XB_hit = self.XB_T[:, rows_hit]
                gram = lay.gram[k] - XB_hit @ self.A[rows_hit]
                grad[:, lo:] += gram @ part
                grad[:, lo:] += XB_hit @ W[hit]
                pairs["sparse"] += rows * width
                continue
            pairs["dense"] += rows * width
            grad[:, lo:] += self.XB_T[:, start:stop] @ W
        return count


class GramRowGradient:
    r"""The averaged clipped gradient from the Gram matrix and one product per evaluation.

    :math:`\frac1n\sum_i \mathrm{clip}(g_i) = \frac1n\bigl(G\theta - X^\top y -
    \sum_{i\ \mathrm{clipped}} x_i (w_i - r_i)\bigr)` with :math:`G = X^\top X` formed
    once: each evaluation takes the residuals (one :math:`(n, d)` by :math:`(d,
    \text{trials})` product, the same values as :func:`clipped_mean_gradient`, so the
    clip counts are identical) and one compiled pass over them that corrects the
    clipped pairs (:func:`~dpreg.estimators.dpgd_kernel.row_clip_corrections`), instead of
    a second product over all rows. No copy of ``X`` is made (``kernel="gram"`` of
    :func:`dp_gd_path`, for few trials on a large design: Brown et al. 2024, Figs. 2 and 8,
    one run per data set). Equal to :func:`clipped_mean_gradient` up to rounding.

    *Certified rows are skipped.* With the OLS fit :math:`\theta_{\rm ref}` (from
    :math:`G`) and its residuals :math:`r^{\rm ref}_i`, :math:`|r_i(\theta)| \le
    |r^{\rm ref}_i| + \|x_i\|\,\|\theta - \theta_{\rm ref}\|`, so row i cannot be
    clipped while :math:`\|\theta_j - \theta_{\rm ref}\| \le \tau_i = (B_i -
    |r^{\rm ref}_i|)/\|x_i\|` for every column j (the radii and slacks of
    :class:`ClippedGradientKernel` under ``metric="euclidean"``); such rows add no
    correction and no count. An evaluation where at most half of the rows are
    uncertified gathers only those (in increasing row order, so the corrections are
    added in the same order: the same bits as the full pass wherever BLAS rounds the
    gathered rows' residuals as in the full product, else within an ulp of the terms;
    ``tests/unit/test_dpgd_fused.py``); ``rows_computed``
    counts the rows whose residuals were computed (at :math:`\theta = 0`, every run's
    start, the fitted values are zeros and no product is taken). Brown et al.'s runs approach
    :math:`\hat\theta` geometrically, so most of their 20 steps skip most rows.

    *And rows certified near their last computed point* (``recent=True``, one column per
    call): the same bound around the point where row i's residual was last computed
    (:class:`~dpreg.estimators._dpgd_recent.RecentCertificate`), which certifies rows in
    the first steps, far from OLS, where the fixed certificate certifies none; the rows
    neither certificate covers are then visited in increasing order by one compiled
    pass (each residual as a dot product: no gathered copy of ``X``), so the
    residuals, hence the corrections, move by rounding against ``recent=False``; clip
    counts are the same unless a residual lies within rounding of the clip level
    (``tests/unit/test_dpgd_recent.py``). Calls with several columns, before numba is
    loaded or where the fixed certificate leaves fewer than 2^17 entries of ``X`` take
    the fixed certificate's pass above (the stored radii stay valid: any computed
    point may serve).

    Parameters
    ----------
    X : ndarray, shape (n, d)
    y : ndarray, shape (n,)
    clip : float
        Finite clipping level.
    clip_mode : {"gradient", "residual"}
    recent : bool, default True
        Also certify rows around their last computed point (above); ``False`` is the
        reference path (the fixed certificate and BLAS products only).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X, y = rng.normal(size=(200, 3)), rng.normal(size=200)
    >>> theta = rng.normal(size=(3, 2))
    >>> g, frac = GramRowGradient(X, y, 1.0)(theta)
    >>> g_ref, frac_ref = clipped_mean_gradient(X, y, theta, 1.0)
    >>> bool(np.allclose(g, g_ref, rtol=0, atol=1e-13)), bool(np.array_equal(frac, frac_ref))
    (True, True)
    """

    def __init__(
        self,
        X: np.ndarray,
        y: np.ndarray,
        clip: float,
        clip_mode: str = "gradient",
        *,
        recent: bool = True,
    ):
        check_choice(clip_mode, "clip_mode", CLIP_MODES)
        self.X, self.y, self.clip, self.clip_mode = X, y, float(clip), clip_mode
        self.gram = X.T @ X
        self.moment = X.T @ y
        if clip_mode == "gradient":  # the same bits either way; compiled: no (n, d) temporary
            norms = row_norms if _use_compiled(X.size) else row_norms_reference
            self.norms = norms(X)
        else:
            self.norms = np.ones(len(y))
        self.rows_computed = 0
        # the certificates' row norms (residual clipping: not those of the clip)
        self._row_norm = self.norms if clip_mode == "gradient" else row_norms_reference(X)
        self._certificate(X, y)
        self.use_recent = bool(recent)
        self.recent: RecentCertificate | None = None  # built at its first use

    def _certificate(self, X: np.ndarray, y: np.ndarray) -> None:
        """Set the radii tau_i of rows that cannot clip near OLS (none if X'X is singular)."""
        n = X.shape[0]
        self.tau = self.tau_sorted = self.theta_ref = None
        try:
            theta_ref = np.linalg.solve(self.gram, self.moment)
        except np.linalg.LinAlgError:
            return
        if not np.all(np.isfinite(theta_ref)):
            return
        row_norm = self._row_norm
        ref_norm = self._ref_norm = float(np.linalg.norm(theta_ref))
        if _RADII_PATH == "compiled" and _use_compiled(n):  # one pass, the same bits
            tau = np.empty(n)
            radii_kernel()(
                y, X @ theta_ref, row_norm, self.clip, self.clip_mode == "gradient", ref_norm, tau
            )
        else:
            tau = self._radii_reference(X, y, theta_ref, ref_norm)
        self.tau = tau
        if _UNCERTIFIED_PATH == "sorted":  # values only: how many rows a distance leaves
            self.tau_sorted = np.sort(tau)
        self.theta_ref = theta_ref

    def _radii_reference(
        self, X: np.ndarray, y: np.ndarray, theta_ref: np.ndarray, ref_norm: float
    ) -> np.ndarray:
        """Return the radii tau_i computed by numpy (the compiled pass's reference)."""
        n = X.shape[0]
        row_norm = self._row_norm
        zero = row_norm == 0.0
        if self.clip_mode == "gradient":  # residual threshold B_i = C/||x_i||
            B = np.where(zero, math.inf, self.clip / np.where(zero, 1.0, row_norm))
        else:
            B = np.full(n, self.clip)
        r_ref = np.abs(y - X @ theta_ref)
        slack = _CERTIFY_SLACK * (np.abs(y) + row_norm * ref_norm + np.where(zero, 0.0, B))
        with np.errstate(divide="ignore", invalid="ignore"):
            tau = (B - r_ref - slack) / (row_norm * (1.0 + _METRIC_SLACK))
        # a zero row never clips in gradient mode; in residual mode it clips for every
        # theta iff |y_i| > C
        tau = np.where(zero, np.where(B - r_ref - slack > 0.0, math.inf, -math.inf), tau)
        return np.where(np.isnan(tau), -math.inf, tau)

    def _uncertified(self, theta: np.ndarray) -> tuple[float, int]:
        """Return the bound on the columns' distance to OLS and how many rows it leaves."""
        n = len(self.y)
        if self.tau is None:
            return math.inf, n
        diff = theta - self.theta_ref[:, None]
        dist = np.sqrt(np.einsum("ij,ij->j", diff, diff))
        dist += _CERTIFY_SLACK * (
            np.sqrt(np.einsum("ij,ij->j", theta, theta)) + self._ref_norm
        )  # fmt: skip
        worst = float(dist.max())
        if not math.isfinite(worst):
            return math.inf, n
        # row i is certified iff dist <= tau_i; the others are those with tau_i < worst
        # (tau has no NaN): counted in one pass, or, the reference, by a search of the
        # sorted radii (one sort per data set, ~30 ms at n = 5e5 against ~0.3 ms a count)
        if _UNCERTIFIED_PATH == "sorted":
            return worst, int(np.searchsorted(self.tau_sorted, worst, side="left"))
        return worst, int(np.count_nonzero(self.tau < worst))

    def _corrections(
        self,
        theta: np.ndarray,
        worst: float,
        uncertified: int,
        count: np.ndarray,
        corr: np.ndarray,
    ) -> None:
        """Add the corrections of the rows the fixed certificate leaves, by products over X."""
        X, y = self.X, self.y
        n = X.shape[0]
        trials = theta.shape[1]
        passes = (
            row_clip_corrections if _use_compiled(n * trials) else row_clip_corrections_reference
        )
        block = max(1, _BLOCK_ELEMENTS // max(trials, 1))
        self.rows_computed += n if 2 * uncertified > n else uncertified
        # theta = 0 (every run's start): the fitted values are zeros (a product with zeros
        # is +-0, and y - (+-0) = y), so the pass over X is skipped
        zero = not np.any(theta)
        if 2 * uncertified > n:  # most rows: the full pass
            for start in range(0, n, block):
                stop = min(start + block, n)
                R = np.zeros((stop - start, trials)) if zero else X[start:stop] @ theta
                passes(
                    R, y[start:stop], self.norms[start:stop], X[start:stop], self.clip,
                    self.clip_mode, count, corr,
                )  # fmt: skip
        elif uncertified:  # the uncertified rows only, gathered in increasing order
            rows = np.flatnonzero(self.tau < worst)  # increasing, `uncertified` of them
            for start in range(0, uncertified, block):
                sub = rows[start : start + block]
                Xb = X[sub]
                R = np.zeros((len(sub), trials)) if zero else Xb @ theta
                passes(R, y[sub], self.norms[sub], Xb, self.clip, self.clip_mode, count, corr)

    def __call__(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return ``(grad (d, trials), clip_fraction (trials,))`` at ``theta (d, trials)``."""
        n, d = self.X.shape
        trials = theta.shape[1]
        count = np.zeros(trials, dtype=np.int64)
        corr = np.zeros((trials, d))
        worst, uncertified = self._uncertified(theta)
        if (
            self.use_recent
            and trials == 1
            and uncertified * d >= _RECENT_MIN_WORK
            and _use_compiled(n)
        ):
            # both certificates, the other rows' residuals in one compiled pass
            if self.recent is None:
                self.recent = RecentCertificate(
                    self.X, self.y, self._row_norm, self.clip, self.clip_mode
                )
            tau_fixed = self.tau if self.tau is not None else np.full(n, -math.inf)
            self.rows_computed += self.recent.corrections(
                theta[:, 0], tau_fixed, worst, count, corr, compiled=_use_compiled(n)
            )
        else:
            self._corrections(theta, worst, uncertified, count, corr)
        grad = self.gram @ theta
        grad -= self.moment[:, None]
        grad -= corr.T
        grad /= n
        return grad, count / n


#: "count": :meth:`GramRowGradient._uncertified` counts the radii below the distance;
#: "sorted": it searches them sorted once per data set (tests: the same counts)
_UNCERTIFIED_PATH = "count"
#: "compiled": the fixed certificate's radii in one compiled pass (numba loaded);
#: "reference": numpy's expressions (tests: the same bits)
_RADII_PATH = "compiled"


def _use_compiled(pairs: int) -> bool:
    """Whether the kernel's elementwise pass runs compiled.

    Yes once numba's start-up (~0.4 s of CPU) is paid in this process, or when ``pairs``
    is large enough to pay it. Both passes give the same results bit for bit (comparisons
    only).
    """
    return "numba" in sys.modules or pairs >= _COMPILED_MIN_PAIRS


#: "memo": :func:`_digest` first compares the values with the last arrays it hashed;
#: "reference": it hashes every call (tests: the same digests)
_DIGEST_PATH = "memo"
_DIGEST_MEMO_SIZE = 4  # e.g. one dataset's X and y as IHM and DP-GD key them
#: arrays above this many bytes are hashed every time and never copied into the memo, so
#: the memo holds at most 4 x 32 MB (a 1e6 x 200 design is not duplicated in memory;
#: the largest Lev et al. table, lev_keggundirected, is 12 MB)
_DIGEST_MEMO_MAX_BYTES = 32 * 2**20
_DIGEST_MEMO: list[tuple[np.ndarray, bytes]] = []  # (copy of the bits, sha256), newest first


def _digest(a: np.ndarray) -> bytes:
    """sha256 of an array's float64 values in C order (the cache key of its contents).

    A study fits the same rows many times (every epsilon, variant and seed block), and
    each fit hashes them again (about 20 ms for the 1.5 million values of
    ``lev_keggundirected``). So the last few arrays hashed are kept (a private copy of
    their bits with their digest), and an array whose bits equal one of them (a bitwise
    comparison, ~20x cheaper than the hash) gets that digest: equal bytes have equal
    sha256, so the value is the reference's (``_DIGEST_PATH = "reference"``) whatever
    the array's identity or history (an array changed in place no longer matches).
    Arrays above ``_DIGEST_MEMO_MAX_BYTES`` are hashed every call and never copied (the
    memo must not double the memory of a large design).
    """
    a = np.ascontiguousarray(a, dtype=np.float64)
    if _DIGEST_PATH == "reference" or a.nbytes > _DIGEST_MEMO_MAX_BYTES:
        return _sha256(a)
    bits = a.view(np.uint64)  # bitwise: -0.0 and 0.0 or two NaN payloads differ, as bytes
    for i, (kept, digest) in enumerate(_DIGEST_MEMO):
        if kept.shape == bits.shape and np.array_equal(kept, bits):
            _DIGEST_MEMO.insert(0, _DIGEST_MEMO.pop(i))
            return digest
    digest = _sha256(a)
    _DIGEST_MEMO.insert(0, (bits.copy(), digest))
    del _DIGEST_MEMO[_DIGEST_MEMO_SIZE:]
    return digest


def _sha256(a: np.ndarray) -> bytes:
    """sha256 of a C-contiguous float64 array's bytes (the reference of :func:`_digest`)."""
    return hashlib.sha256(memoryview(a).cast("B")).digest()


def clipped_gradient_kernel(
    X: np.ndarray,
    y: np.ndarray,
    clip: float,
    *,
    clip_mode: str = "gradient",
    metric: str = "design",
    screen: bool = False,
    fused: bool = False,
    centre: bool = False,
    x_digest: bytes | None = None,
) -> ClippedGradientKernel:
    r"""Return a :class:`ClippedGradientKernel` for ``(X, y, clip)``, built once and reused.

    Building the kernel (the certificate's reference fit and radii, the sorted and scaled
    copies of the data, the block Gram matrices) costs about as much as several gradient
    evaluations; studies fit the same data many times (every epsilon, estimator variant
    and seed block). The last two kernels are kept, keyed by the sha256 of the data's
    values, ``clip``, ``clip_mode``, ``metric``, ``screen``, ``fused`` and ``centre``: a
    later call with equal data returns the same object (whose gradients do not depend on
    how often it was called). The key is the data themselves, so nothing private is
    decided by it; the kernel's ``pairs`` counters accumulate over its calls (take
    differences for one fit).

    Parameters
    ----------
    X : ndarray, shape (n, d)
    y : ndarray, shape (n,)
    clip : float
    clip_mode : {"gradient", "residual"}, default "gradient"
    metric : {"design", "euclidean"}, default "design"
    screen, fused, centre : bool, default False
        As for :class:`ClippedGradientKernel`.
    x_digest : bytes, optional
        The sha256 of ``X``'s values as the key takes it (``_digest(X)``), when the caller
        has computed it already (IHM keys its own data cache by it); computed here
        otherwise.

    Returns
    -------
    ClippedGradientKernel

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X, y = rng.normal(size=(50, 2)), rng.normal(size=50)
    >>> kernel = clipped_gradient_kernel(X, y, 1.0)
    >>> kernel is clipped_gradient_kernel(X.copy(), y.copy(), 1.0)
    True
    >>> kernel is clipped_gradient_kernel(X, y, 2.0)
    False
    """
    build = ClippedGradientKernel  # in the key: a replaced class (a test's) builds anew
    x_key = _digest(X) if x_digest is None else x_digest
    key = (
        build, X.shape, x_key, _digest(y), float(clip), clip_mode, metric, bool(screen),
        bool(fused), bool(centre),
    )  # fmt: skip
    kernel = _KERNEL_CACHE.get(key)
    if kernel is None:
        kernel = build(
            X, y, clip, clip_mode=clip_mode, metric=metric, screen=screen, fused=fused,
            centre=centre,
        )  # fmt: skip
        _KERNEL_CACHE[key] = kernel
        while len(_KERNEL_CACHE) > _KERNEL_CACHE_SIZE:
            _KERNEL_CACHE.popitem(last=False)
    else:
        _KERNEL_CACHE.move_to_end(key)
    return kernel


#: "blocks": the kernel's sorted, scaled copies of the rows are built a block of rows at
#: a time (no sorted copy of X, no n x d temporary); "reference": whole-array expressions
#: (tests: the same bits)
_BUILD_PATH = "blocks"
_BUILD_BLOCK_ELEMENTS = 2**18  # entries of X per block (2 MB)


def _scaled_sorted_rows(
    X: np.ndarray, order: np.ndarray, inv_Bs: np.ndarray, Bs: np.ndarray, A: np.ndarray
) -> np.ndarray:
    """Fill ``A[:, :d] = X[order] * inv_Bs[:, None]``; return ``(X[order] * Bs[:, None]).T``.

    The same products as the whole-array expressions of
    :class:`ClippedGradientKernel` (``_BUILD_PATH = "reference"``), one entry at a time
    and each rounded once, so the same bits; a block of rows at a time, so the build
    holds no sorted copy of ``X`` and no ``(n, d)`` temporary beside the two results
    (the peak memory of ``lev_fig7``'s IHM fits, docs/scaling.md).
    """
    n, d = X.shape
    XB_T = np.empty((d, n))
    rows = max(1, _BUILD_BLOCK_ELEMENTS // max(d, 1))
    block = np.empty((min(rows, n), d))
    for start in range(0, n, rows):
        stop = min(start + rows, n)
        Xb = np.take(X, order[start:stop], axis=0, out=block[: stop - start])
        np.multiply(Xb, inv_Bs[start:stop, None], out=A[start:stop, :d])
        np.multiply(Xb, Bs[start:stop, None], out=Xb)
        XB_T[:, start:stop] = Xb.T
    return XB_T


def _certificate_factor(X: np.ndarray) -> np.ndarray | None:
    """Cholesky factor L of M = X'X/n + 1e-10 lambda_max I (None for an all-zero X)."""
    n, d = X.shape
    M = X.T @ X / n
    M = 0.5 * (M + M.T)
    top = float(np.linalg.eigvalsh(M)[-1])
    if not top > 0.0:
        return None
    M[np.diag_indices(d)] += _METRIC_RIDGE * top
    return np.linalg.cholesky(M)


class _BlockLayout:
    """Row blocks, block Gram matrices and work buffers of a kernel for ``trials`` columns."""

    def __init__(self, kernel: ClippedGradientKernel, trials: int) -> None:
        n, d = kernel.n, kernel.d
        rows = min(n, max(_FAST_MIN_ROWS, _FAST_BLOCK_ELEMENTS // max(trials, 1)))
        self.spans = [(s, min(s + rows, n)) for s in range(0, n, rows)]
        self.tau_min = np.array([kernel.tau[stop - 1] for _, stop in self.spans])
        # Gram blocks [X_b' X_b, X_b' y_b] = (XB)_b' A_b, and prefix sums over blocks
        self.gram = np.stack([kernel.XB_T[:, s:e] @ kernel.A[s:e] for s, e in self.spans])
        self.gram_prefix = np.zeros((len(self.spans) + 1, d, d + 1))
        np.cumsum(self.gram, axis=0, out=self.gram_prefix[1:])
        self.u = np.empty(rows * trials)
        self.w = np.empty(rows * trials)
        self.hit = np.zeros(rows, dtype=np.uint8)
        if kernel.screen:
            self.u32 = np.empty(rows * trials, dtype=np.float32)
            self.a1_max = np.array([kernel.a1[s:e].max() for s, e in self.spans])


def dp_gd_sensitivity(
    clip: float,
    n: int,
    *,
    neighbours: str = "replace_one",
    clip_mode: str = "gradient",
    bound_X: float = 1.0,
) -> float:
    r"""L2 sensitivity of the averaged clipped gradient :func:`clipped_mean_gradient`.

    Parameters
    ----------
    clip : float
        Clipping level :math:`C` (finite).
    n : int
        Number of rows (fixed under both neighbouring relations).
    neighbours : {"replace_one", "zero_out"}
        ``"replace_one"``: one row :math:`(x_i, y_i)` replaced by an arbitrary one
        (Brown et al. 2024; the sensitivity behind Lev et al.'s eq. (157)).
        ``"zero_out"``: one row replaced by zeros (Lev et al. 2026, §2).
    clip_mode : {"gradient", "residual"}
        See :func:`clipped_mean_gradient`.
    bound_X : float
        Public bound :math:`C_X \ge \max_i\|x_i\|` (used by ``"residual"`` only).

    Returns
    -------
    float
        :math:`\Delta = m\,B/n` with :math:`m = 2` (replace-one) or 1 (zero-out) and
        :math:`B = C` (gradient clipping) or :math:`C\,C_X` (residual clipping).

    Notes
    -----
    Every clipped per-example term has norm at most :math:`B`: :math:`C` by
    construction for gradient clipping, :math:`\|x_i\|\,|\mathrm{clip}_C(r_i)| \le C_X C`
    for residual clipping. The average over the fixed :math:`n` changes in one term.
    Replacing it moves the average by at most :math:`\|a - b\|/n \le 2B/n`; zeroing the
    row turns its term into :math:`-0\cdot\mathrm{clip}(y_i - 0) = 0`, so the average
    moves by at most :math:`B/n`. The zero-out noise variance is therefore 4 times
    smaller at the same rho. (Add/remove-one neighbours change n and are not covered.)
    """
    factor = 2.0 if neighbours == "replace_one" else 1.0
    per_example = clip * (bound_X if clip_mode == "residual" else 1.0)
    return factor * per_example / n


def dp_gd_noise_std(rho: float, T: int, sensitivity: float) -> float:
    r"""Per-step std of the noise on the averaged gradient for rho-zCDP over T steps.

    Each step is a Gaussian mechanism with :math:`\rho_{\rm step} = \Delta^2/(2\lambda^2)`
    (Bun & Steinke 2016, Prop. 1.6); T steps compose to :math:`T\rho_{\rm step}`
    (Lemma 2.3). Setting :math:`T\rho_{\rm step} = \rho` gives
    :math:`\lambda = \Delta\sqrt{T/(2\rho)}`. With replace-one gradient clipping
    (:math:`\Delta = 2\gamma/n`) this is :math:`\lambda^2 = 2T\gamma^2/(\rho n^2)`, Brown
    et al. (2024), Lemma 2.1, exactly. The returned value is nudged up (by ulps) so
    that ``T * gaussian_zcdp(lambda, Delta) <= rho`` holds in floating point.

    Returns 0 for ``rho = inf``.
    """
    if math.isinf(rho):
        return 0.0
    sigma = zcdp_gaussian_sigma(rho / T, sensitivity)
    for _ in range(64):  # a few ulps at most
        if T * gaussian_zcdp(sigma, sensitivity) <= rho:
            return sigma
        sigma = float(np.nextafter(sigma, math.inf))
    raise ValueError(f"dp_gd: cannot calibrate rho={rho!r} with T={T} in float64")


def _noise_source(
    rng: np.random.Generator | Sequence[np.random.Generator], trials: int, d: int, T: int
) -> Callable[[int], np.ndarray]:
    """``noise(t) -> (trials, d)`` standard normals of step t (called for t = 0, 1, ...)."""
    if isinstance(rng, np.random.Generator):
        return lambda t: rng.standard_normal((trials, d))
    streams = list(rng)
    steps = max(1, min(T, _NOISE_BLOCK_ELEMENTS // max(trials * d, 1)))
    buffer = np.empty((trials, steps, d))
    state = {"start": -steps}

    def noise(t: int) -> np.ndarray:
        offset = t - state["start"]
        if offset >= steps:
            state["start"] = t
            count = min(steps, T - t)
            for j, stream in enumerate(streams):
                stream.standard_normal(out=buffer[j, :count])
            offset = 0
        return buffer[:, offset]

    return noise


def dp_gd_path(
    X: np.ndarray,
    y: np.ndarray,
    *,
    rng: np.random.Generator | Sequence[np.random.Generator],
    trials: int,
    T: int,
    step: float,
    clip: float,
    noise_std: float,
    theta0: np.ndarray | None = None,
    clip_mode: str = "gradient",
    return_path: bool = True,
    kernel: str | GramRowGradient = "fast",
) -> tuple[np.ndarray, np.ndarray]:
    r"""Run DP-GD on the squared loss for ``trials`` independent noise draws.

    Numerical core (no validation, no privacy logic): for :math:`t = 0,\dots,T-1`

    .. math::

        \theta_{t+1} = \theta_t - b\,\bar g_t(\theta_t) + b\,\lambda z_t,
        \qquad z_t \sim \mathcal N(0, I_d),

    with :math:`\bar g_t` from :func:`clipped_mean_gradient`. This is Brown et al.
    (2024), Algorithm 1 (:math:`b = \eta`, noise :math:`z_t\sim N(0,\lambda^2 I)`) and
    Lev et al. (2026), Algorithm 7 (:math:`\hat\theta_{t+1} = \hat\theta_t +
    b(Z_t - \bar G_t)`, :math:`Z_t\sim N(0,\sigma^2 I)`; the
    :math:`\hat\theta_{t-1}` inside :math:`\bar G_t` is read as :math:`\hat\theta_t`,
    docs/notes/lev2026.md §2.9).

    Parameters
    ----------
    X : ndarray, shape (n, d)
    y : ndarray, shape (n,)
    rng : numpy.random.Generator or sequence of Generators
        One Generator: one ``(trials, d)`` standard-normal block per step (none when
        ``noise_std == 0``), so runs with the same seed share their noise whatever the
        clipping (the coupling of Brown et al., Lemma 2.2). A sequence of ``trials``
        Generators: one independent stream per run, run ``j`` reading its noise
        :math:`z_0, z_1, \dots` (each of shape ``(d,)``) in order from ``rng[j]``, so a
        run's path does not depend on which other runs are vectorised with it (the same
        stream gives the same run in any batch, up to floating-point rounding).
    trials : int
        Independent runs, vectorised as the columns of a ``(d, trials)`` parameter
        matrix: each step is two ``(n, d) @ (d, trials)``-sized products.
    T : int
        Number of steps (>= 0).
    step : float
        Step size (learning rate) :math:`b`.
    clip : float
        Clipping level (``math.inf``: no clipping).
    noise_std : float
        :math:`\lambda`, std of the noise added to the averaged gradient (the noise on
        :math:`\theta` has std ``step * noise_std``).
    theta0 : ndarray, shape (d,) or (trials, d), optional
        Initial point; default zero.
    clip_mode : {"gradient", "residual"}
        See :func:`clipped_mean_gradient`.
    return_path : bool
        Return all iterates (default) or only the last one.
    kernel : {"fast", "rows", "gram", "fused"}
        ``"fast"`` (default): :class:`ClippedGradientKernel` (the same gradients and
        clip counts up to floating-point rounding; 5-20x faster than ``"rows"`` on
        Lev et al.'s large datasets, ``benchmarks/results/anchors.md``, and
        :math:`O(d^2)` per trial and step without clipping, ``clip = inf``).
        ``"rows"``: :func:`clipped_mean_gradient` at every step (the reference).
        ``"gram"``: :class:`GramRowGradient` (one product over the rows per step
        instead of two, no copy of ``X``: for one or a few runs on a large design;
        ``"rows"`` when ``clip = inf``). ``"fused"``: :class:`ClippedGradientKernel`
        with ``fused=True`` (one compiled pass over the uncertified rows for ``d <=
        11``: many runs far from the solution with many rows clipped, Brown et al.
        2024, Figs. 5/6 and 10/11). The noise draws are identical, so all kernels
        give the same path to rounding error, with the same clip counts. A
        :class:`GramRowGradient` built on these ``X``, ``y``, ``clip`` and ``clip_mode``
        is used as it is (its Gram matrix formed once and shared with the caller, e.g.
        for the OLS fit beside the run; :func:`fit_dp_gd` checks that it was built on
        the same arrays).

    Returns
    -------
    path : ndarray, shape (trials, T + 1, d) or (trials, d)
        All iterates :math:`\theta_0,\dots,\theta_T` (``return_path=True``), else
        :math:`\theta_T`.
    clip_fraction : ndarray, shape (trials, T)
        Fraction of examples clipped at each step.
    """
    n, d = X.shape
    if theta0 is None:
        theta = np.zeros((d, trials))
    else:
        theta = np.array(np.broadcast_to(np.asarray(theta0, dtype=np.float64), (trials, d)).T)
    if isinstance(kernel, GramRowGradient):  # built by the caller on these X, y, clip
        gradient = kernel
    elif kernel in ("fast", "fused"):
        fused = kernel == "fused"
        gradient = clipped_gradient_kernel(X, y, clip, clip_mode=clip_mode, fused=fused)
    elif kernel == "gram" and not math.isinf(clip):
        gradient = GramRowGradient(X, y, clip, clip_mode)
    else:
        row_norms = np.linalg.norm(X, axis=1)

        def gradient(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            return clipped_mean_gradient(
                X, y, theta, clip, clip_mode=clip_mode, row_norms=row_norms
            )

    path = np.empty((trials, T + 1, d)) if return_path else None
    if path is not None:
        path[:, 0, :] = theta.T
    clip_fraction = np.empty((trials, T))
    noise = _noise_source(rng, trials, d, T) if noise_std > 0.0 else None
    for t in range(T):
        grad, frac = gradient(theta)
        clip_fraction[:, t] = frac
        theta = theta - step * grad
        if noise is not None:
            theta += (step * noise_std) * noise(t).T
        if path is not None:
            path[:, t + 1, :] = theta.T
    if path is not None:
        return path, clip_fraction
    return np.ascontiguousarray(theta.T), clip_fraction


def _check_streams(rng: object) -> list[np.random.Generator] | None:
    """``None`` for a single Generator; the list for a sequence of Generators."""
    if isinstance(rng, np.random.Generator) or not isinstance(rng, list | tuple):
        return None
    streams = list(rng)
    if not streams or not all(isinstance(g, np.random.Generator) for g in streams):
        raise TypeError(
            "rng must be a numpy.random.Generator or a non-empty list of Generators (one per trial)"
        )
    return streams


def fit_dp_gd(
    X: np.ndarray,
    y: np.ndarray,
    *,
    budget: ApproxDP | ZCDP,
    rng: np.random.Generator | Sequence[np.random.Generator],
    trials: int = 1,
    bound_X: float | None = 1.0,
    bound_y: float | None = 1.0,
    T: int = 3,
    step: float = 0.25,
    clip: float = 1.0,
    sensitivity: str = "replace_one",
    conversion: str = "simple",
    clip_mode: str = "gradient",
    theta0: np.ndarray | None = None,
    return_path: bool = False,
    accounting_steps: int | None = None,
    kernel: str | GramRowGradient = "fast",
) -> Fit:
    r"""DP-GD for least squares (Brown et al. 2024, Alg. 1; Lev et al. 2026, Alg. 7).

    Defaults are Lev et al.'s baseline (App. H/J): ``T = 3``, ``step = 0.25``,
    ``clip = 1``, :math:`\theta_0 = 0`, replace-one sensitivity and the simple
    zCDP conversion, i.e. their eq. (157). For Brown et al. pass a ``ZCDP`` budget,
    ``clip = gamma`` (e.g. :math:`5\sqrt p`), ``step = eta`` and ``T``.

    Parameters
    ----------
    X : array_like, shape (n, d)
        Design, rows with :math:`\|x_i\|_2 \le` ``bound_X``; ``n >= d``.
    y : array_like, shape (n,)
        Responses with :math:`|y_i| \le` ``bound_y``.
    budget : ZCDP or ApproxDP
        Total budget of one run (all T steps). A ``ZCDP`` budget is used as is; an
        ``ApproxDP`` one is converted to :math:`\rho` = ``eps_to_zcdp(epsilon, delta,
        method=conversion)``. Infinite budgets give noiseless (plain, clipped) GD.
    rng : numpy.random.Generator or sequence of Generators
        Source of all noise (see :func:`dp_gd_path` for the draw order). A sequence of
        ``trials`` Generators gives every trial its own stream, so a trial's result does
        not depend on how trials are batched.
    trials : int, default 1
        Independent runs, vectorised.
    bound_X, bound_y : float or None, default 1.0
        Public data bounds. They are checked (never used to clip the data); only
        ``clip_mode="residual"`` uses ``bound_X`` in its sensitivity. ``None``: no
        bound is assumed or checked. Gradient clipping bounds every per-example term by
        ``clip`` whatever the data, so it needs no data bound (Brown et al. 2024,
        Lemma 2.1, on unbounded Gaussian data); residual clipping needs ``bound_X``.
    T : int, default 3
        Number of noisy gradient steps (all of them are released).
    step : float, default 0.25
        Learning rate (:math:`b` in Lev et al., :math:`\eta` in Brown et al.).
    clip : float, default 1.0
        Clipping level (:math:`C`, :math:`\gamma`). ``math.inf`` (no clipping) has
        unbounded sensitivity and is only allowed with an infinite budget.
    sensitivity : {"replace_one", "zero_out"}, default "replace_one"
        Neighbouring relation, see :func:`dp_gd_sensitivity`: :math:`\Delta = 2C/n`
        (the paper's eq. (157), Brown et al.'s Lemma 2.1) or :math:`C/n` (Lev et al.'s
        zero-out relation, under which eq. (157) is 4 times too large in variance).
    conversion : {"simple", "tight"}, default "simple"
        zCDP -> (epsilon, delta) conversion for ``ApproxDP`` budgets: ``"simple"`` is
        Bun & Steinke (2016), Prop. 1.3, as in eq. (157) (docs/notes/lev2026.md §3.3);
        ``"tight"`` is Canonne, Kamath & Steinke (2020), Cor. 13 (less noise, same
        guarantee).
    clip_mode : {"gradient", "residual"}, default "gradient"
        Per-example gradient-norm clipping as in Algorithm 7 / Brown et al. (default),
        or entrywise residual clipping as in Lev et al.'s released code
        (docs/notes/lev2026.md §8 item 20); with ``bound_X = 1`` both have the same
        sensitivity.
    theta0 : array_like, shape (d,), optional
        Initial point; default zero (both papers).
    return_path : bool, default False
        Store all iterates in ``Fit.path`` (Algorithm 1 releases every iterate; they
        are post-processing of the noisy gradients, so storing them costs no budget).
    accounting_steps : int, optional
        Number of noisy steps the budget is spread over, ``>= T`` (default ``T``). The
        noise is calibrated as if ``accounting_steps`` steps were run,
        :math:`\lambda^2 = 2\,\text{accounting\_steps}\,\gamma^2/(\rho n^2)`, and this
        run spends ``T / accounting_steps`` of the budget. This is how a confidence
        interval built from m runs of T steps, or from one run whose budget covers all
        of its iterations, stays rho-zCDP in total (Brown et al. 2024, §3 and
        App. B; docs/notes/brown2024.md §8 item 3).
    kernel : {"fast", "rows", "gram", "fused"} or GramRowGradient, default "fast"
        Gradient evaluation, see :func:`dp_gd_path`. A :class:`GramRowGradient` must
        have been built on the very arrays ``X`` and ``y`` passed here (the same
        objects, float64 and C-contiguous, so that validation returns them unchanged)
        with the same ``clip`` and ``clip_mode``; it computes its Gram matrix itself,
        so the caller can reuse ``kernel.gram`` (e.g. for OLS) without forming it twice.

    Returns
    -------
    Fit
        ``theta`` (trials, d) the final iterate :math:`\theta_T`; ``path`` (trials,
        T + 1, d) with :math:`\theta_0,\dots,\theta_T` if ``return_path``;
        ``budget_spent = ZCDP(T * rho_step)`` (what the Gaussian accountant certifies,
        <= the requested rho; ``T / accounting_steps`` of it with ``accounting_steps``);
        diagnostics: ``accounting_steps``, ``noise_std`` (:math:`\lambda`, on the
        averaged gradient), ``noise_std_theta`` (``step * noise_std``),
        ``sensitivity`` (:math:`\Delta`), ``rho_step``, ``rho_total``,
        ``approx_dp`` (the ``ApproxDP`` it converts to at the budget's delta, for
        ``ApproxDP`` budgets, else ``None``), ``clip_fraction`` (trials, T),
        ``neighbours``, ``conversion``, ``clip_mode``, ``T``, ``step``, ``clip``.

    Raises
    ------
    TypeError
        If ``budget`` is not a ``ZCDP``/``ApproxDP`` or ``rng`` is not a Generator.
    ValueError
        On bad shapes, non-finite data, ``n < d``, data outside the public bounds, a
        bad ``T``/``step``/``clip``/``trials``/``theta0``, an unknown option, or
        ``clip = inf`` with a finite budget.

    Notes
    -----
    *Privacy.* Step t releases :math:`\bar g_t(\theta_t) + \lambda z_t`; given the
    (public) past iterates this is a Gaussian mechanism on a query of sensitivity
    :math:`\Delta` (:func:`dp_gd_sensitivity`), hence :math:`\Delta^2/(2\lambda^2)`-zCDP
    (Bun & Steinke 2016, Prop. 1.6); adaptive composition over T steps adds (Lemma
    2.3), and every iterate is post-processing. :math:`\lambda` is set by
    :func:`dp_gd_noise_std` so that :math:`T\Delta^2/(2\lambda^2) = \rho`.

    *Equivalence with the papers.* Replace-one, gradient clipping:
    :math:`\lambda^2 = T\Delta^2/(2\rho) = 2TC^2/(\rho n^2)`, which is Brown et al.'s
    Lemma 2.1 (:math:`\lambda^2 = 2T\gamma^2/(\rho n^2)`) with :math:`\gamma = C`.
    With the simple conversion :math:`\sqrt\rho = \sqrt{\varepsilon + \log(1/\delta)}
    - \sqrt{\log(1/\delta)}`, which turns it into Lev et al.'s eq. (157),
    :math:`\sigma^2 = 2TC^2/(n^2(\sqrt{\varepsilon+\log(1/\delta)}-\sqrt{\log(1/\delta)})^2)`.
    Both identities are tested.

    References
    ----------
    - G. Brown, K. Dvijotham, G. Evans, D. Liu, A. Smith, A. Thakurta, "Private
      gradient descent for linear regression: tighter error bounds and
      instance-specific uncertainty estimation", ICML 2024, Algorithm 1, Lemma 2.1.
    - O. Lev et al., "Near-optimal private linear regression via iterative Hessian
      mixing", 2026, Algorithm 7, eq. (157), Appendices H and J.
    - M. Bun, T. Steinke, "Concentrated differential privacy: simplifications,
      extensions, and lower bounds", TCC 2016, Props. 1.3 and 1.6, Lemma 2.3.

    Examples
    --------
    >>> import numpy as np
    >>> from dpreg import ZCDP
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(1000, 3))
    >>> y = X @ np.array([0.5, -0.3, 0.2]) + rng.normal(size=1000)
    >>> fit = fit_dp_gd(X, y, budget=ZCDP(0.5), rng=rng, trials=4, bound_X=None, bound_y=None,
    ...                 T=20, step=0.5, clip=5.0)  # Brown et al.: clipping, no data bounds
    >>> fit.theta.shape, fit.budget_spent
    ((4, 3), ZCDP(rho=0.5))
    """
    check_budget(budget, (ZCDP, ApproxDP))
    streams = _check_streams(rng)
    if streams is not None:
        rng = streams[0]  # the checks below need one Generator
    if bound_X is None and clip_mode == "residual":
        raise ValueError(
            "bound_X=None is only allowed with clip_mode='gradient': residual clipping"
            " needs a public bound on the row norms for its sensitivity"
        )
    if bound_X is None or bound_y is None:
        X, y = check_regression(X, y, require_full_rank=False)
        if bound_X is not None:
            check_row_norm_bound(X, bound_X, "X", "bound_X")
        if bound_y is not None:
            check_row_norm_bound(y, bound_y, "y", "bound_y")
        trials, rng = check_trials(trials, bytes_per_trial=8 * (X.shape[0] + 16)), check_rng(rng)
    else:
        X, y, trials, rng = check_bounded_design(
            X, y, bound_X=bound_X, bound_y=bound_y, trials=trials, rng=rng
        )
    if streams is not None:
        if len(streams) != trials:
            raise ValueError(
                f"rng is a sequence of {len(streams)} Generators but trials={trials}; pass"
                " one Generator per trial (or a single Generator)"
            )
        rng = streams
    if isinstance(T, bool) or not isinstance(T, int | np.integer) or T < 1:
        raise ValueError(f"T must be a positive integer (number of steps); got {T!r}")
    T = int(T)
    if accounting_steps is None:
        accounting_steps = T
    if (
        isinstance(accounting_steps, bool)
        or not isinstance(accounting_steps, int | np.integer)
        or accounting_steps < T
    ):
        raise ValueError(
            f"accounting_steps must be an integer >= T={T} (the number of steps the"
            f" budget is spread over); got {accounting_steps!r}"
        )
    accounting_steps = int(accounting_steps)
    if not isinstance(kernel, GramRowGradient):
        check_choice(kernel, "kernel", KERNELS)
    step = check_positive(step, "step")
    clip = check_positive(clip, "clip", allow_inf=True)
    check_choice(sensitivity, "sensitivity", NEIGHBOURS)
    check_choice(conversion, "conversion", CONVERSIONS)
    check_choice(clip_mode, "clip_mode", CLIP_MODES)
    if isinstance(kernel, GramRowGradient) and not (
        kernel.X is X and kernel.y is y and kernel.clip == clip and kernel.clip_mode == clip_mode
    ):
        raise ValueError(
            "kernel: a GramRowGradient must be built on the same X and y arrays (float64,"
            f" C-contiguous), clip={clip!r} and clip_mode={clip_mode!r} as the fit"
        )
    n, d = X.shape
    if theta0 is not None:
        theta0 = np.asarray(theta0, dtype=np.float64)
        if theta0.shape != (d,) or not np.all(np.isfinite(theta0)):
            raise ValueError(f"theta0 must be a finite vector of shape ({d},); got {theta0!r}")

    if isinstance(budget, ZCDP):
        rho = budget.rho
    else:
        check_probability(budget.delta, "budget.delta")
        rho = eps_to_zcdp(budget.epsilon, budget.delta, method=conversion)
    if math.isinf(clip) and not math.isinf(rho):
        raise ValueError(
            "clip=inf (no clipping) has unbounded sensitivity, so no finite budget can be"
            " certified; use a finite clip, or an infinite budget for noiseless GD"
        )

    if math.isinf(clip):
        delta_sens = math.inf
        noise_std = 0.0
        rho_step = math.inf
    else:
        delta_sens = dp_gd_sensitivity(
            clip, n, neighbours=sensitivity, clip_mode=clip_mode, bound_X=bound_X
        )
        noise_std = dp_gd_noise_std(rho, accounting_steps, delta_sens)
        rho_step = math.inf if noise_std == 0.0 else gaussian_zcdp(noise_std, delta_sens)
    spent = ZCDP(T * rho_step)
    approx = None
    if isinstance(budget, ApproxDP):
        approx = (
            ApproxDP(math.inf, budget.delta)
            if spent.is_infinite
            else zcdp_to_approx_dp(spent, budget.delta, conversion)
        )

    out, clip_fraction = dp_gd_path(
        X,
        y,
        rng=rng,
        trials=trials,
        T=T,
        step=step,
        clip=clip,
        noise_std=noise_std,
        theta0=theta0,
        clip_mode=clip_mode,
        return_path=return_path,
        kernel=kernel,
    )
    theta = np.ascontiguousarray(out[:, -1, :]) if return_path else out
    return Fit(
        theta=theta,
        budget_spent=spent,
        estimator="dp_gd",
        path=out if return_path else None,
        diagnostics={
            "noise_std": float(noise_std),
            "noise_std_theta": float(step * noise_std),
            "sensitivity": float(delta_sens),
            "rho_step": float(rho_step),
            "rho_total": float(spent.rho),
            "approx_dp": approx,
            "clip_fraction": clip_fraction,
            "neighbours": sensitivity,
            "conversion": conversion,
            "clip_mode": clip_mode,
            "T": T,
            "accounting_steps": accounting_steps,
            "step": float(step),
            "clip": float(clip),
            "kernel": "gram" if isinstance(kernel, GramRowGradient) else kernel,
        },
    )
