r"""General (non-Toeplitz) DP-FTRL noise factorizations and Table 3 of the paper.

Choquette-Choo et al. (2023), Table 3 and App. A.1 (Eq. 11-12). A factorization is an
encoder :math:`C \in \mathbb R^{m\times T}` and a gradient-noise decoder
:math:`B \in \mathbb R^{T\times m}` with :math:`BC = I_T`: the noisy gradients are
:math:`B(C g + z) = g + Bz`, :math:`z \sim \mathcal N(0, \sigma^2 I_m)`, and the
single-participation sensitivity is :math:`\max_t\|C_{:,t}\|_2` (Theorem 1.1). The
prefix-sum ("linear counting query") error of Eq. (3) is :math:`\|AB\|_F^2` with
:math:`A` the lower-triangular all-ones matrix; at a fixed privacy level the total
error is :math:`\gamma^2\|AB\|_F^2`.

Implemented here (finite :math:`T`):

* :func:`tree_aggregation` -- Honaker / TreeAgg (Kairouz et al. 2021a): dyadic tree
  encoder, online decoding from the nodes of the dyadic decomposition of
  :math:`[0, t]`; ``full_honaker=True`` decodes with the least-squares left inverse
  :math:`C^+` (Honaker 2015).
* :func:`optimal_factorization` -- the error-optimal square factorization for one
  participation, :math:`\min_{\mathrm{diag}(X)\le1}\mathrm{tr}(AX^{-1}A^\top)`,
  :math:`X = C^\top C` (Denisov et al. 2022), solved as an SDP with cvxpy. It is the
  one-participation case of the multi-epoch (ME) mechanism of Choquette-Choo et al.
  (2023b); the paper's ME for :math:`k` participations is not reproduced.
* :func:`toeplitz_factorization` -- any
  :class:`~dpreg.estimators.ftrl_correlations.ToeplitzCorrelation` as matrices.

The FFT mechanism of Choquette-Choo et al. (2023b) is listed in :func:`table3` but not
built (its construction is not given in this paper).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpreg.estimators.ftrl_correlations import (
    ToeplitzCorrelation,
    independent,
    nu_ftrl,
    optimal_cc,
)

__all__ = [
    "TABLE3",
    "MatrixFactorization",
    "optimal_factorization",
    "prefix_matrix",
    "table3",
    "toeplitz_factorization",
    "tuned_nu",
    "tree_aggregation",
]


def prefix_matrix(T: int) -> np.ndarray:
    """Lower-triangular all-ones matrix ``A`` (T, T): prefix sums (App. A.1, Eq. 12)."""
    return np.tril(np.ones((T, T)))


@dataclass(frozen=True)
class MatrixFactorization:
    r"""A DP-FTRL factorization :math:`(B, C)` with :math:`BC = I` for a horizon ``T``.

    Attributes
    ----------
    name : str
    encoder : ndarray, shape (m, T)
        :math:`C`.
    decoder : ndarray, shape (T, m)
        :math:`B`, the gradient-noise decoder (row ``t`` uses only what is released by
        step ``t`` when the factorization is online).
    anytime : bool
        Whether the construction does not depend on ``T`` (Table 3).
    """

    name: str
    encoder: np.ndarray
    decoder: np.ndarray
    anytime: bool

    def __post_init__(self) -> None:
        C, B = np.asarray(self.encoder, float), np.asarray(self.decoder, float)
        if C.ndim != 2 or B.shape != (C.shape[1], C.shape[0]):
            raise ValueError("need encoder (m, T) and decoder (T, m)")
        if not np.allclose(B @ C, np.eye(C.shape[1]), atol=1e-8):
            raise ValueError("decoder @ encoder must be the identity (unbiased gradients)")

    @property
    def T(self) -> int:
        """Horizon."""
        return int(self.encoder.shape[1])

    @property
    def sensitivity_sq(self) -> float:
        r""":math:`\max_t\|C_{:,t}\|_2^2` (Theorem 1.1, one participation)."""
        return float(np.max(np.sum(self.encoder**2, axis=0)))

    @property
    def prefix_error(self) -> float:
        r""":math:`\|AB\|_F^2`, the prefix-sum error of Eq. (3) per unit noise variance."""
        return float(np.sum((prefix_matrix(self.T) @ self.decoder) ** 2))

    @property
    def total_error(self) -> float:
        r""":math:`\gamma^2\|AB\|_F^2`: Eq. (3) at a fixed privacy level (scale-free)."""
        return self.sensitivity_sq * self.prefix_error

    def noise(self, rng: np.random.Generator, columns: int) -> np.ndarray:
        """Unit-variance correlated noise ``B z`` for ``columns`` coordinates, (T, columns)."""
        z = rng.standard_normal((self.encoder.shape[0], columns))
        return self.decoder @ z


def toeplitz_factorization(correlation: ToeplitzCorrelation, T: int) -> MatrixFactorization:
    """Return a Toeplitz correlation as square matrices ``B = Toeplitz(beta)``, ``C = B^-1``."""
    beta, c = correlation.coefficients(T), correlation.encoder(T)
    B, C = np.zeros((T, T)), np.zeros((T, T))
    for t in range(T):
        B[t:, t] = beta[: T - t]
        C[t:, t] = c[: T - t]
    return MatrixFactorization(correlation.label(), C, B, anytime=True)


def tree_aggregation(T: int, *, full_honaker: bool = False) -> MatrixFactorization:
    r"""Binary-tree aggregation (TreeAgg; Full Honaker with ``full_honaker=True``).

    Nodes are the dyadic intervals :math:`[j2^l, (j+1)2^l)` inside :math:`[0, T)`; the
    encoder row of a node sums its interval. TreeAgg releases prefix sum :math:`t`
    from the at most :math:`\lceil\log_2(t+1)\rceil` nodes of the dyadic decomposition
    of :math:`[0, t]` (online); the gradient decoder is the difference of consecutive
    prefix decoders. Full Honaker decodes with :math:`C^+` (variance-optimal, uses
    future nodes, so not anytime).
    """
    if isinstance(T, bool) or int(T) != T or T < 1:
        raise ValueError(f"T must be a positive integer; got {T!r}")
    T = int(T)
    nodes = []
    level = 0
    while 2**level <= T:
        size = 2**level
        nodes += [(j * size, (j + 1) * size) for j in range(T // size)]
        level += 1
    index = {iv: k for k, iv in enumerate(nodes)}
    C = np.zeros((len(nodes), T))
    for k, (lo, hi) in enumerate(nodes):
        C[k, lo:hi] = 1.0
    if full_honaker:
        B = np.linalg.pinv(C)
        return MatrixFactorization("full_honaker", C, B, anytime=False)
    prefix = np.zeros((T, len(nodes)))
    for t in range(T):
        start, remaining = 0, t + 1
        while remaining:
            size = 2 ** int(math.floor(math.log2(remaining)))
            while start % size:  # dyadic alignment
                size //= 2
            prefix[t, index[(start, start + size)]] = 1.0
            start += size
            remaining -= size
    B = np.diff(np.vstack([np.zeros((1, len(nodes))), prefix]), axis=0)
    return MatrixFactorization("tree_aggregation", C, B, anytime=True)


def optimal_factorization(T: int, *, solver: str = "CLARABEL") -> MatrixFactorization:
    r"""Error-optimal single-participation factorization (lower-triangular, square).

    Solves :math:`\min_X \mathrm{tr}(AX^{-1}A^\top)` s.t. :math:`X \succ 0`,
    :math:`X_{ii} \le 1` (cvxpy ``matrix_frac``), then factors :math:`X = C^\top C` with
    :math:`C` lower triangular (Cholesky of the index-reversed :math:`X`) and sets
    :math:`B = C^{-1}`. Meant for small ``T`` (tens): the SDP has :math:`T^2` variables.
    """
    import cvxpy as cp

    if isinstance(T, bool) or int(T) != T or not 1 <= T <= 128:
        raise ValueError(f"T must be an integer in [1, 128] for the SDP; got {T!r}")
    T = int(T)
    A = prefix_matrix(T)
    X = cp.Variable((T, T), PSD=True)
    prob = cp.Problem(cp.Minimize(cp.matrix_frac(A.T, X)), [cp.diag(X) <= 1])
    prob.solve(solver=solver)
    Xv = np.asarray(X.value)
    Xv = 0.5 * (Xv + Xv.T) + 1e-12 * np.eye(T)
    J = np.eye(T)[::-1]
    L = np.linalg.cholesky(J @ Xv @ J)
    C = (J @ L @ J).T  # lower triangular with C^T C = X
    B = np.linalg.inv(C)
    return MatrixFactorization("optimal_single_participation", C, B, anytime=False)


TABLE3: tuple[dict[str, object], ...] = (
    {
        "variant": "DP-SGD",
        "citation": "Abadi et al. (2016)",
        "matrix": "Identity",
        "anytime": True,
        "generation_cost": "O(1)",
        "training_cost": "O(1)",
        "builder": "sgd",
    },
    {
        "variant": "Honaker/TreeAgg",
        "citation": "Kairouz et al. (2021a)",
        "matrix": "Lower-Triangular",
        "anytime": True,
        "generation_cost": "O(1)",
        "training_cost": "O(log T)",
        "builder": "tree",
    },
    {
        "variant": "Optimal CC",
        "citation": "Fichtenberger et al. (2023)",
        "matrix": "Toeplitz & LT",
        "anytime": True,
        "generation_cost": "O(1)",
        "training_cost": "O(T)",
        "builder": "optimal_cc",
    },
    {
        "variant": "nu-DP-FTRL",
        "citation": "Ours",
        "matrix": "Toeplitz & LT",
        "anytime": True,
        "generation_cost": "O(1)",
        "training_cost": "O(T)",
        "builder": "nu_ftrl",
    },
    {
        "variant": "FFT",
        "citation": "Choquette-Choo et al. (2023b)",
        "matrix": "Toeplitz",
        "anytime": False,
        "generation_cost": "O(1)",
        "training_cost": "O(T log^2 T) (ambiguous)",
        "builder": None,
    },
    {
        "variant": "Full Honaker",
        "citation": "Honaker (2015)",
        "matrix": "Arbitrary",
        "anytime": False,
        "generation_cost": "O(T^2)",
        "training_cost": "O(T^2)",
        "builder": "full_honaker",
    },
    {
        "variant": "Multi-Epoch (ME)",
        "citation": "Choquette-Choo et al. (2023b)",
        "matrix": "Arbitrary",
        "anytime": False,
        "generation_cost": "O(T^3)",
        "training_cost": "O(T^2)",
        "builder": "optimal",
    },
)
"""Table 3 as printed (the "O(T log 2 T)" of FFT is ambiguous, notes §7.12)."""


def tuned_nu(T: int, grid: np.ndarray | None = None) -> float:
    r"""Return the ν of ν-DP-FTRL minimising the prefix-sum error (3) at horizon ``T``.

    The paper tunes ν this way for StackOverflow (§4, App. G.2); grid search over
    ``grid`` (default 60 log-spaced values in :math:`[10^{-4}, 0.5]`).
    """
    grid = np.geomspace(1e-4, 0.5, 60) if grid is None else np.asarray(grid, float)
    errors = [toeplitz_factorization(nu_ftrl(float(v)), T).total_error for v in grid]
    return float(grid[int(np.argmin(errors))])


def table3(T: int, *, nu: float | str = "tuned") -> pd.DataFrame:
    r"""Table 3 with computed sensitivity and prefix-sum error at horizon ``T``.

    Columns of the printed table plus ``sensitivity_sq`` (:math:`\gamma_T^2`),
    ``prefix_error`` (:math:`\|AB\|_F^2`), ``total_error`` (their product, Eq. 3 at a
    fixed privacy level) and ``relative_to_optimal``. ME is its one-participation
    special case (:func:`optimal_factorization`); FFT is not built (NaN). ``nu="tuned"``
    picks ν by :func:`tuned_nu` (recorded in column ``nu``).
    """
    nu = tuned_nu(T) if nu == "tuned" else float(nu)
    builders = {
        "sgd": lambda: toeplitz_factorization(independent(), T),
        "tree": lambda: tree_aggregation(T),
        "optimal_cc": lambda: toeplitz_factorization(optimal_cc(), T),
        "nu_ftrl": lambda: toeplitz_factorization(nu_ftrl(nu), T),
        "full_honaker": lambda: tree_aggregation(T, full_honaker=True),
        "optimal": lambda: optimal_factorization(T),
    }
    rows = []
    best = None
    for entry in TABLE3:
        row = {k: v for k, v in entry.items() if k != "builder"}
        row["T"] = T
        builder = entry["builder"]
        row["nu"] = nu if builder == "nu_ftrl" else math.nan
        if builder is None:
            row.update(
                sensitivity_sq=math.nan, prefix_error=math.nan, total_error=math.nan, built=False
            )
        else:
            f = builders[str(builder)]()
            row.update(
                sensitivity_sq=f.sensitivity_sq,
                prefix_error=f.prefix_error,
                total_error=f.total_error,
                built=True,
            )
            if builder == "optimal":
                best = f.total_error
        rows.append(row)
    out = pd.DataFrame(rows)
    out["relative_to_optimal"] = out["total_error"] / best if best else math.nan
    return out
