r"""Rows that cannot clip near the last point where their residual was computed.

A helper of :class:`dpreg.estimators.dpgd.GramRowGradient` (one run, ``trials = 1``).
Its fixed certificate works around OLS, which a run from :math:`\theta_0 = 0` reaches
only after several steps (Brown et al. 2024, Figs. 2 and 8: every row computed for the
first 7 of T = 20 steps at n = 5e5, p = 100). The same Cauchy-Schwarz bound holds
around any point: with :math:`\theta_s` a point where row i's residual
:math:`r_i(\theta_s)` was computed,

.. math:: |r_i(\theta)| \le |r_i(\theta_s)| + \|x_i\|\,\|\theta - \theta_s\|,

so row i cannot be clipped at :math:`\theta` while :math:`\|\theta - \theta_s\| \le
\tau_i = (B_i - |r_i(\theta_s)|)/\|x_i\|` (:math:`B_i = C/\|x_i\|` under gradient
clipping, :math:`C` under residual clipping). The slacks are those of the fixed
certificate (:class:`~dpreg.estimators.dpgd.ClippedGradientKernel`): :math:`10^{-9}`
relative on the residual (:math:`|y_i| + \|x_i\|\|\theta_s\| + B_i`) and on the distance
(:math:`\|\theta\| + \|\theta_s\|`), :math:`10^{-6}` on the norm. A certified row adds
no clip correction and no count, exactly as when its residual is computed and found
unclipped. Zero rows are left to the fixed certificate (their residual does not depend
on :math:`\theta`).

:meth:`RecentCertificate.corrections` visits the rows neither certificate covers in
increasing order: compiled (:func:`recent_corrections`: each such row's residual as a
dot product, its clip, correction and new radius in one pass over the rows, without the
gathered copy of ``X`` a product needs) or by numpy (the reference: the rows gathered,
one product, :func:`~dpreg.estimators.dpgd_kernel.row_clip_corrections_reference`).
The two differ by the rounding of the residuals' sums (the compiled dot product is
reassociated); counts and certified rows agree except for a residual within rounding of
the clip level or a radius.
"""

from __future__ import annotations

import math
from functools import cache
from typing import Any

import numpy as np

from dpreg.estimators.dpgd_kernel import row_clip_corrections_reference

_CERTIFY_SLACK = 1e-9  # as dpreg.estimators.dpgd's fixed certificate
_METRIC_SLACK = 1e-6
_PRODUCT_MIN_D = 32  # rows at least this long: count the rows left first
_PRODUCT_FRACTION = 0.75  # rows left above which one product over all rows is taken


#: "compiled": the rows left before a product are counted by one compiled pass;
#: "reference": by numpy (a gather and three boolean temporaries; tests: the same counts)
_COUNT_PATH = "compiled"


@cache
def _kernel() -> Any:
    """Load the compiled pass (numba, cached on disk; imported on first use)."""
    from dpreg.estimators._dpgd_recent_jit import corrections

    return corrections


@cache
def radii_kernel() -> Any:
    """Load the compiled radii of the fixed certificate (:class:`GramRowGradient`)."""
    from dpreg.estimators._dpgd_recent_jit import fixed_radii

    return fixed_radii


@cache
def _count_kernel() -> Any:
    """Load the compiled count of the rows left (numba, cached on disk)."""
    from dpreg.estimators._dpgd_recent_jit import uncertified

    return uncertified


class RecentCertificate:
    r"""Each row's certified radius around the last point its residual was computed at.

    Parameters
    ----------
    X : ndarray, shape (n, d)
    y : ndarray, shape (n,)
    norms : ndarray, shape (n,)
        :math:`\|x_i\|_2`.
    clip : float
        Finite clipping level :math:`C`.
    clip_mode : {"gradient", "residual"}

    Examples
    --------
    >>> import numpy as np
    >>> X, y = np.eye(3), np.array([0.0, 0.5, 2.0])
    >>> cert = RecentCertificate(X, y, np.ones(3), 1.0, "gradient")
    >>> no_fixed = np.full(3, -np.inf)  # no row certified near OLS
    >>> count, corr = np.zeros(1, dtype=np.int64), np.zeros((1, 3))
    >>> cert.corrections(np.zeros(3), no_fixed, np.inf, count, corr, compiled=False)
    3
    >>> count.tolist(), corr.tolist()  # row 2's residual 2 clipped to 1
    ([1], [[0.0, 0.0, -1.0]])
    >>> cert.corrections(np.array([0.0, 0.3, 0.0]), no_fixed, np.inf, count, corr,
    ...                  compiled=False)  # moved by 0.3: rows 0 and 1 certified
    1
    """

    def __init__(
        self, X: np.ndarray, y: np.ndarray, norms: np.ndarray, clip: float, clip_mode: str
    ) -> None:
        n = len(y)
        self.X, self.y, self.norms = X, y, norms
        self.clip, self.residual_mode = float(clip), clip_mode == "residual"
        self.tau = np.full(n, -math.inf)  # never computed: not certified
        self.point = np.zeros(n, dtype=np.int64)  # index of the row's last point
        self.points = np.empty((0, X.shape[1]))  # the computed points (the first ``stored``)
        self._point_norms = np.empty(0)
        self.stored = 0

    def corrections(
        self,
        theta: np.ndarray,
        tau_fixed: np.ndarray,
        worst: float,
        count: np.ndarray,
        corr: np.ndarray,
        *,
        compiled: bool,
    ) -> int:
        """Add the clipped rows' corrections at ``theta (d,)``; return the rows computed.

        Rows with ``tau_fixed[i] >= worst`` (the fixed certificate) or within their
        radius of their last point are skipped; the others' residuals are computed in
        increasing row order, their clipped pairs counted in ``count[0]`` and their
        terms :math:`x_i (w_i - r_i)` added to ``corr[0]`` (as
        :func:`~dpreg.estimators.dpgd_kernel.row_clip_corrections`), and their radii
        stored around ``theta``.
        """
        theta = np.ascontiguousarray(theta, dtype=np.float64)
        theta_norm = float(np.linalg.norm(theta))
        index = self.stored
        if index == len(self.points):  # grow the store of points
            grown = np.empty((max(8, 2 * index), theta.size))
            grown[:index] = self.points
            self.points = grown
            self._point_norms = np.resize(self._point_norms, len(grown))
        self.points[index] = theta
        self._point_norms[index] = theta_norm
        self.stored = index + 1
        dist = np.linalg.norm(self.points[: index + 1] - theta, axis=1)
        dist += _CERTIFY_SLACK * (theta_norm + self._point_norms[: index + 1])
        n = len(self.y)
        # at theta = 0 (every run's start) the fitted values are zeros (a product with
        # zeros is +-0, and y - (+-0) = y): no product
        full = np.zeros(n) if not np.any(theta) else None
        if compiled and full is None and self.X.shape[1] >= _PRODUCT_MIN_D:
            # long rows: where most rows are left, one product over all rows (BLAS) is
            # cheaper than a dot product per row (about 1.3x a product's time per row)
            if _COUNT_PATH == "compiled":
                left = int(_count_kernel()(tau_fixed, float(worst), dist, self.point, self.tau))
            else:
                with np.errstate(invalid="ignore"):
                    certified = (tau_fixed >= worst) | (dist[self.point] <= self.tau)
                left = n - np.count_nonzero(certified)
            if left > _PRODUCT_FRACTION * n:
                full = self.X @ theta
        if compiled:
            args = (
                self.X, self.y, self.norms, theta, np.empty(0) if full is None else full,
                self.clip, self.residual_mode, tau_fixed, float(worst), dist, self.point,
                self.tau, index, theta_norm, count, corr,
            )  # fmt: skip
            return int(_kernel()(*args))
        with np.errstate(invalid="ignore"):
            rows = np.flatnonzero(~((tau_fixed >= worst) | (dist[self.point] <= self.tau)))
        if rows.size:
            Xb = self.X[rows]
            fitted = Xb @ theta if full is None else full[rows]
            mode = "residual" if self.residual_mode else "gradient"
            row_clip_corrections_reference(
                fitted[:, None], self.y[rows], self.norms[rows], Xb, self.clip, mode, count, corr
            )
            ni = self.norms[rows]
            with np.errstate(divide="ignore", invalid="ignore"):
                B = np.full(rows.size, self.clip) if self.residual_mode else self.clip / ni
                slack = _CERTIFY_SLACK * (np.abs(self.y[rows]) + ni * theta_norm + B)
                tau = (B - np.abs(self.y[rows] - fitted) - slack) / (ni * (1.0 + _METRIC_SLACK))
            self.tau[rows] = np.where(ni == 0.0, -math.inf, tau)
            self.point[rows] = index
        return int(rows.size)
