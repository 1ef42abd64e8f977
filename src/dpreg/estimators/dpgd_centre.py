r"""A certificate around the parameters' own centre for the clipped-gradient kernel.

:class:`~dpreg.estimators.dpgd.ClippedGradientKernel` certifies (row, parameter) pairs
that cannot be clipped by their distance to one fixed reference point (the ridge
solution). Many trials of one iterative estimator at one iteration sit close to each other
but not to that point: IHM's iterates on Pol at eps = 0.1 are about 0.39 from it in the
design metric and within 0.03 of their own mean, so the fixed certificate certifies no
pair while one around their mean certifies 80% of the rows for every trial (the other
20% are rows at the response bound, clipped for some trials). :class:`CentredCertificate`
is that second certificate, recomputed per call around :math:`c`, the coordinate-wise
median of the parameters (robust to a few far ones):

* with the scaled residuals :math:`u_i(\theta) = a_i^\top[\theta; -1]`,
  :math:`a_i = [x_i, y_i]/B_i`, clipping means :math:`|u_i| > 1`; by Cauchy-Schwarz in
  the kernel's metric :math:`M`, :math:`|u_i(\theta)| \le |u_i(c)| + q_i\,\|\theta -
  c\|_M` with :math:`q_i = \|x_i\|_{M^{-1}}/B_i`, so row i is not clipped at
  :math:`\theta` when :math:`\|\theta - c\|_M \le \tau_i(c) = (1 - |u_i(c)| - s_i)/q_i`;
  the slacks against rounding are the fixed certificate's (relative :math:`10^{-9}` on
  the residual at :math:`c` through :math:`s_i`, :math:`10^{-6}` on both norms, and
  :math:`10^{-9}(\|\theta\|_M + \|c\|_M)` on the distance);
* the parameters nearest to :math:`c` (the *near* set, chosen by a cost model,
  :meth:`CentredCertificate.plan`) are evaluated together: the rows certified for all of
  them contribute through the data's Gram matrix, :math:`G - \sum_{i \in H} (x_iB_i)
  a_i^\top` with :math:`G = \sum_i (x_i B_i) a_i^\top = [X^\top X,\ X^\top y]`, and
  the other rows' residuals are computed in double precision, clipped and counted
  (:meth:`CentredCertificate.gradient`); the rows clipped for some near parameter
  (the set H) add :math:`x_i B_i\,\mathrm{clip}(u_i)`;
* the other (far) parameters go through the fixed certificate's block pass.

Which pairs go which way changes only the rounding of the sums (and the time): the clip
counts are those of the definition, the gradients equal to rounding
(``tests/unit/test_dpgd_centre.py``). The centre is computed from the parameters, never
from the data alone.
"""

from __future__ import annotations

import numpy as np

__all__ = ["CENTRE_COSTS", "CentredCertificate"]

_CERTIFY_SLACK = 1e-9  # as dpreg.estimators.dpgd's fixed certificate
_METRIC_SLACK = 1e-6
_BLOCK_ELEMENTS = 2**17  # rows x parameters per block of the near pass (L2-sized buffers)
_MIN_ROWS = 64

#: Cost model of :meth:`CentredCertificate.plan`, in nanoseconds on the machine of
#: docs/scaling.md (only the ratios matter): per uncertified (row, parameter) pair and
#: per entry of ``[theta; -1]``, in the near pass (the residual in double precision and,
#: for rows clipped somewhere, the second product) and in the fixed certificate's block
#: pass (single-precision screen, recomputed rows); and the near pass's fixed cost, per
#: row of the data (the residuals at the centre and the radii) and per call (the median,
#: the distances, the sorting; 40-70 us measured on data sets of 155-1,202 rows).
CENTRE_COSTS = {"near_pair": 0.135, "far_pair": 0.09, "per_row": 25.0, "per_call": 150_000.0}


class CentredCertificate:
    r"""Per-call certificate of unclipped rows around the parameters' median.

    Parameters
    ----------
    A : ndarray, shape (n, d + 1)
        The kernel's scaled rows :math:`[x_i, y_i]/B_i` (its sorted order).
    XB_T : ndarray, shape (d, n)
        :math:`(x_i B_i)` by columns, the same order.
    q : ndarray, shape (n,)
        :math:`\|x_i\|_{M^{-1}}/B_i` with the metric slack applied (0 for a zero row).
    s0, s1 : ndarray, shape (n,)
        Residual slacks in scaled units: :math:`s_i = s0_i + s1_i \|c\|_2`.
    metric_factor : ndarray, shape (d, d), or None
        Lower Cholesky factor :math:`L` of :math:`M` (None: the Euclidean metric).
    """

    def __init__(
        self,
        A: np.ndarray,
        XB_T: np.ndarray,
        q: np.ndarray,
        s0: np.ndarray,
        s1: np.ndarray,
        metric_factor: np.ndarray | None,
    ) -> None:
        self.A, self.XB_T, self.q, self.s1 = A, XB_T, q, s1
        self.one_minus_s0 = 1.0 - s0
        self.zero_rows = np.flatnonzero(q == 0.0)
        self.L = metric_factor
        self.n, self.d = XB_T.shape[1], XB_T.shape[0]
        self.gram = XB_T @ A  # [X'X, X'y] in the scaled units: sum_i (x_i B_i) a_i'
        self._buffers = (np.empty(0), np.empty(0), np.empty(0, dtype=np.uint8))

    def _norms(self, v: np.ndarray) -> np.ndarray:
        """``||v_j||_M`` of the columns of ``v`` (d, m) (Euclidean without a factor)."""
        if self.L is None:
            return np.sqrt(np.einsum("ij,ij->j", v, v))
        w = self.L.T @ v
        return np.sqrt(np.einsum("ij,ij->j", w, w))

    def radii(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        r"""Return ``(dist, tau)``: bounds on :math:`\|\theta_j - c\|_M` and the rows' radii.

        Row i is certainly not clipped at column j when ``dist[j] <= tau[i]``.
        """
        c = np.median(theta, axis=1)  # robust to a few far columns
        tau = self.A @ np.append(c, -1.0)  # u_i(c), then the margins, then the radii
        np.abs(tau, out=tau)
        tau += self.s1 * float(np.linalg.norm(c))
        np.subtract(self.one_minus_s0, tau, out=tau)  # 1 - s_i - |u_i(c)|
        zero_margin = tau[self.zero_rows]
        with np.errstate(divide="ignore", invalid="ignore"):
            np.divide(tau, self.q, out=tau)
        # a zero row (q = 0): never clipped if its margin is positive, else always checked
        tau[self.zero_rows] = np.where(zero_margin > 0.0, np.inf, -np.inf)
        diff = theta - c[:, None]
        dist = self._norms(diff)
        if self.L is not None:
            dist *= 1.0 + _METRIC_SLACK
        dist += _CERTIFY_SLACK * (self._norms(theta) + self._norms(c[:, None])[0])
        return dist, tau

    def plan(self, theta: np.ndarray, far_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """Choose the near parameters and the rows to compute for them, or None (none near).

        Parameters
        ----------
        theta : ndarray, shape (d, m)
        far_rows : ndarray, shape (m,)
            How many rows the fixed certificate leaves uncertified for each column (the
            cost of the column in its pass).

        Returns
        -------
        (near, rows) or None
            ``near``: column indices (nearest to the centre first); ``rows``: the rows not
            certified for all of them, increasing. None where the cost model prefers the
            fixed certificate's pass for every column (decided before the radii are
            computed when even their cost exceeds that pass's).
        """
        d1 = self.d + 1
        far_pair = CENTRE_COSTS["far_pair"] * d1
        fixed = CENTRE_COSTS["per_row"] * self.n + CENTRE_COSTS["per_call"]
        if fixed >= far_pair * float(far_rows.sum()):
            return None
        dist, tau = self.radii(theta)
        if not np.all(np.isfinite(dist)) or np.isnan(tau).any():
            return None
        width = theta.shape[1]
        order = np.argsort(dist, kind="stable")
        dist_sorted = dist[order]
        # row i is certified for the nearest cnt[i] columns: the rows with tau_i below the
        # largest distance are counted, the others are certified for every column
        low = np.flatnonzero(tau < dist_sorted[-1])
        cnt = np.searchsorted(dist_sorted, tau[low], side="right")
        # uncertified[m]: rows not certified for all of the m nearest columns
        uncertified = np.zeros(width + 1, dtype=np.int64)
        np.cumsum(np.bincount(cnt, minlength=width)[:width], out=uncertified[1:])
        m = np.arange(width + 1)
        far = far_rows[order].astype(np.float64)
        far_suffix = np.zeros(width + 1)
        np.cumsum(far[::-1], out=far_suffix[:width][::-1])
        cost = far_pair * far_suffix
        cost[1:] += fixed
        cost += CENTRE_COSTS["near_pair"] * d1 * (m * uncertified)
        best = int(np.argmin(cost))
        if best == 0:
            return None
        return order[:best], low[cnt < best]

    def gradient(
        self, ext: np.ndarray, rows: np.ndarray, clip_pass, count: np.ndarray
    ) -> tuple[np.ndarray, int]:
        r"""Return the kernel's gradient sums of the near columns from the planned rows.

        :math:`\sum_i x_i B_i\,\mathrm{clip}_{[-1,1]}(a_i^\top e_j)` for the columns
        :math:`e_j = [\theta_j; -1]` of ``ext`` (d + 1, m) (``n`` times the averaged
        clipped gradient), given that no row outside ``rows`` is clipped for any column.
        ``clip_pass`` is :func:`~dpreg.estimators.dpgd_kernel.clip_block` or its
        reference; ``count`` (m,) is incremented by the clipped pairs. Returns the sums
        (d, m) and how many rows were clipped for some column.
        """
        d, m = self.d, ext.shape[1]
        block = max(_MIN_ROWS, _BLOCK_ELEMENTS // max(m, 1))
        U_buf, W_buf, hit_buf = self._buffers
        if U_buf.size < block * m or hit_buf.size < block:
            U_buf, W_buf = np.empty(block * m), np.empty(block * m)
            hit_buf = np.zeros(block, dtype=np.uint8)
            self._buffers = (U_buf, W_buf, hit_buf)
        gram = self.gram.copy()
        grad = np.zeros((d, m))
        clipped = 0
        for start in range(0, rows.size, block):
            idx = rows[start : start + block]
            size = idx.size
            A_b = self.A[idx]
            U = np.matmul(A_b, ext, out=U_buf[: size * m].reshape(size, m))
            W = W_buf[: size * m].reshape(size, m)
            hits = clip_pass(U, W, count, hit_buf)
            if hits == 0:  # W = U: these rows stay in the Gram product
                continue
            clipped += hits
            if 2 * hits > size:  # most rows: take the whole block out of the Gram product
                XB_b = self.XB_T[:, idx]
                gram -= XB_b @ A_b
                grad += XB_b @ W
                continue
            hit = np.flatnonzero(hit_buf[:size])
            XB_hit = self.XB_T[:, idx[hit]]
            gram -= XB_hit @ A_b[hit]
            grad += XB_hit @ W[hit]
        grad += gram @ ext
        return grad, clipped
