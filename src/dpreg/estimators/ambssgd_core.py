r"""Numerical core of DP-AMBSSGD (Varshney, Thakurta & Jain 2022, Algorithm 2).

One pass over a stream of rows split into T blocks of ``s + b`` rows: the first s rows of
block t feed DP-STAT (:mod:`dpreg.estimators.dp_stat`), the next b rows the clipped
noisy mini-batch step

.. math::
    w_{t+1} = w_t - \eta\Big(\frac1b\sum_{i}\mathrm{clip}_{\zeta_t}\big(x_i(\langle x_i,
    w_t\rangle - y_i)\big) + \alpha\frac{2\zeta_t}{b} g_t\Big),\qquad g_t\sim N(0, I_d),

and the output is the tail average of :math:`w_{\lfloor T/2\rfloor+1}, \dots, w_T`.

The core is vectorised twice: over ``D`` data replicates (independent data streams or
independent permutations) and over ``R`` runs that share each replicate's data (different
clip rules, noise multipliers, or noise levels of the response in simulations). Its cost
is one read of the ``T (s + b)`` rows and two batched matrix products per row chunk:
:math:`O(N d R)`.

Clip rules per run (:data:`CLIP_RULES`):

- ``adaptive``: :math:`\zeta_t = R_x \gamma_t \log^a N` with :math:`\gamma_t` from
  DP-STAT (Algorithm 2, line 8);
- ``fixed``: a constant :math:`\zeta` (ablation, docs/notes/varshney2022.md §5.1 method 3);
- ``oracle``: :math:`\zeta_t = R_x K_2 \log^{2a}N(\sqrt\kappa\|w_t - w^*\|_H + \sigma)`
  (Lemma 3.11's requirement with the true :math:`w^*`: a non-private
  reference, docs/notes/varshney2022.md §5.1 method 4);
- ``none``: no clipping and no noise (non-private one-pass mini-batch SGD).

Decisions on the paper's pitfalls (docs/notes/varshney2022.md §8) taken here: ``min`` in
the clip (item 2); disjoint stat/gradient samples :math:`[\tau, \tau+s)`,
:math:`[\tau+s, \tau+s+b)` (item 3); floors for :math:`T`, :math:`s`, :math:`b`, leftover
:math:`N - T(s+b)` rows dropped (data-independent), tail average over
:math:`t \in \{\lfloor T/2\rfloor+1, \dots, T\}` (item 15); :math:`w_0 = 0`.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Protocol

import numpy as np

from dpreg.estimators.ambssgd_kernel import batch_gradient, clip_residuals, stat_magnitudes
from dpreg.estimators.blas_order import at_b, swap_pays
from dpreg.estimators.dp_stat import dp_stat_counts, dp_stat_from_counts
from dpreg.estimators.permutations import uniform_key_permutations

__all__ = [
    "CLIP_RULES",
    "AUTO_MIN_ROWS",
    "PASS_KERNELS",
    "BlockLayout",
    "OracleInfo",
    "PassResult",
    "PermutedRows",
    "RowSource",
    "RunSpec",
    "ambssgd_pass",
    "block_layout",
    "paper_hyperparameters",
]

CLIP_RULES: tuple[str, ...] = ("adaptive", "fixed", "oracle", "none")
PASS_KERNELS: tuple[str, ...] = ("auto", "numba", "numpy")
"""Kernels of :func:`ambssgd_pass` on :class:`PermutedRows`: compiled, the numpy reference,
or ``"auto"`` (compiled from :data:`AUTO_MIN_ROWS` rows read)."""

AUTO_MIN_ROWS = 1 << 22
"""``kernel="auto"`` reads rows with the compiled kernels when replicates x rows reaches
this; below it the numpy reference costs about as much as the kernels' one-time start in a
fresh process (numba's import and cache load, about 1 s)."""
_ADAPTIVE, _FIXED, _ORACLE, _NONE = range(4)
_WORK_ELEMENTS = 2**20


# ------------------------------------------------------------------------------ layout


GRADIENT_SENSITIVITY = 2.0
"""L2 sensitivity of one block's summed clipped gradients, in units of the clip level,
under replace-one neighbours (one row's clipped gradient moves by at most twice the clip):
the block's gradient noise is ``GRADIENT_SENSITIVITY * noise_multiplier * clip / b`` on the
block average (Varshney et al. 2022, Algorithm 2)."""


@dataclass(frozen=True)
class BlockLayout:
    """How the N rows are cut into T blocks of ``s`` stat rows then ``b`` batch rows.

    Attributes
    ----------
    n : int
        Rows available.
    T : int
        Number of blocks (steps).
    s : int
        Stat-sample size (DP-STAT).
    b : int
        Mini-batch size.
    """

    n: int
    T: int
    s: int
    b: int

    @property
    def block(self) -> int:
        """Rows per block, ``s + b``."""
        return self.s + self.b

    @property
    def used(self) -> int:
        """Rows read by the pass, ``T (s + b)``."""
        return self.T * self.block

    @property
    def dropped(self) -> int:
        """Leftover rows that are never read (a data-independent rule)."""
        return self.n - self.used

    @property
    def tail_start(self) -> int:
        """First averaged iterate index: the tail is ``w_{T//2 + 1}, ..., w_T``."""
        return self.T // 2 + 1

    def stat_rows(self, t: int) -> range:
        """Row positions of block t's stat sample, ``[tau, tau + s)``."""
        tau = t * self.block
        return range(tau, tau + self.s)

    def batch_rows(self, t: int) -> range:
        """Row positions of block t's mini-batch, ``[tau + s, tau + s + b)``."""
        tau = t * self.block
        return range(tau + self.s, tau + self.block)


def block_layout(
    n: int,
    *,
    T: int | None = None,
    kappa: float = 1.0,
    c1: float = 1.0,
    stat_fraction: float = 1.0 / 11.0,
) -> BlockLayout:
    r"""Theorem 3.7's layout: :math:`T = \lceil c_1\kappa\ln N\rceil`, :math:`s = b/10`.

    With :math:`b + s = N/T` and :math:`s = b/10`, :math:`s = N/(11T)`. We take
    :math:`m = \lfloor N/T\rfloor`, :math:`s = \lfloor m\cdot\text{stat\_fraction}\rfloor`
    (default 1/11), :math:`b = m - s` and drop the :math:`N - Tm` leftover rows
    (docs/notes/varshney2022.md §2.4, §8 item 15). ``c1`` is the paper's unspecified global
    constant (item 1).

    Raises
    ------
    ValueError
        If the layout leaves ``s < 1`` or ``b < 1``.
    """
    if isinstance(n, bool) or int(n) != n or n < 2:
        raise ValueError(f"n must be an integer >= 2; got {n!r}")
    n = int(n)
    if T is None:
        if not (kappa >= 1 and math.isfinite(kappa)):
            raise ValueError(f"kappa must be a finite number >= 1; got {kappa!r}")
        if not (c1 > 0 and math.isfinite(c1)):
            raise ValueError(f"c1 must be a finite positive number; got {c1!r}")
        T = max(1, math.ceil(c1 * kappa * math.log(n)))
    if isinstance(T, bool) or int(T) != T or T < 1:
        raise ValueError(f"T must be a positive integer; got {T!r}")
    T = int(T)
    if not 0 < stat_fraction < 1:
        raise ValueError(f"stat_fraction must lie in (0, 1); got {stat_fraction!r}")
    m = n // T
    s = int(math.floor(m * stat_fraction))
    b = m - s
    if s < 1 or b < 1:
        raise ValueError(
            f"layout T={T} over n={n} rows leaves s={s} stat rows and b={b} batch rows per"
            " block; both must be >= 1: use fewer blocks (smaller c1 or T) or more rows"
        )
    return BlockLayout(n=n, T=T, s=s, b=b)


@dataclass(frozen=True)
class PaperHyperparameters:
    r"""Theorem 3.7's hyperparameters for known (oracle) distribution constants.

    Attributes
    ----------
    x_norm_sq : float
        :math:`R_x^2`.
    eta : float
        :math:`b/(R_x^2 + (b-1)\\|H\\|_2)`.
    stat_domain : float
        B.
    log_factor : float
        :math:`\\ln^a N` (the factor in :math:`\\zeta_t = R_x\\gamma_t\\ln^a N`).
    fixed_clip : float
        :math:`R_x B \\ln^a N`: the largest adaptive clip, used by the fixed-clip ablation.
    """

    x_norm_sq: float
    eta: float
    stat_domain: float
    log_factor: float
    fixed_clip: float


def paper_hyperparameters(
    n: int,
    b: int,
    *,
    H_eigenvalues: Sequence[float] | np.ndarray,
    w_star_H_norm: float,
    sigma: float,
    K2: float = 1.0,
    a: float = 0.5,
    x_norm_rule: str = "exact",
) -> PaperHyperparameters:
    r"""Theorem 3.7's :math:`\eta`, :math:`B` and :math:`R_x` from oracle constants.

    * :math:`R_x^2 = \mathrm{Tr}(H) + 2\|H\|` (``"exact"``: the smallest R with
      :math:`E[\|x\|^2xx^\top] \preceq R^2 H` for Gaussian x) or :math:`\mathrm{Tr}(H)`
      (``"paper"``: Cor. 3.8's :math:`R_x^2 = d`; docs/notes/varshney2022.md §8 item 12);
    * :math:`\eta = b/(R_x^2 + (b-1)\|H\|_2)`, not Cor. 3.8's :math:`1/(4d)` (item 9);
    * :math:`B = K_2 R_x (\|w^*\|_H + \sigma)\ln^{2a}N` (paper formula kept, item 7);
    * natural logarithms (item 13); :math:`K_2 = 1`, :math:`a = 1/2` for Gaussians
      (item 11).
    """
    lam = np.asarray(H_eigenvalues, dtype=np.float64)
    if lam.ndim != 1 or lam.size == 0 or np.any(~(lam > 0)) or not np.all(np.isfinite(lam)):
        raise ValueError("H_eigenvalues must be a non-empty vector of finite positive numbers")
    if x_norm_rule not in ("exact", "paper"):
        raise ValueError(f"x_norm_rule must be 'exact' or 'paper'; got {x_norm_rule!r}")
    if not (sigma >= 0 and w_star_H_norm >= 0) or sigma + w_star_H_norm <= 0:
        raise ValueError("sigma and w_star_H_norm must be >= 0 and not both 0")
    H_norm = float(lam.max())
    rx2 = float(lam.sum()) + (2.0 * H_norm if x_norm_rule == "exact" else 0.0)
    eta = b / (rx2 + (b - 1) * H_norm)
    log_n = math.log(n)
    B = K2 * math.sqrt(rx2) * (w_star_H_norm + sigma) * log_n ** (2 * a)
    log_factor = log_n**a
    return PaperHyperparameters(
        x_norm_sq=rx2,
        eta=eta,
        stat_domain=B,
        log_factor=log_factor,
        fixed_clip=math.sqrt(rx2) * B * log_factor,
    )


# ------------------------------------------------------------------------ row sources


class RowSource(Protocol):
    """A stream of rows shared by D replicates (consumed once, in order)."""

    n_replicates: int
    d: int

    def take(self, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        r"""Next k rows: ``X`` (D, k, d), ``base`` (D, k), ``noise`` (D, k) or None.

        The response of a run with noise scale :math:`\\sigma_r` is
        ``base + sigma_r * noise`` (``noise is None``: the response is ``base``).
        """


class PermutedRows:
    """Rows of one stored data set, read through D independent uniform permutations.

    The permutations are drawn from ``rng`` once (Algorithm 2, line 2: "randomly
    permute"): ``argsort`` of ``rng.random((D, n))`` per replicate; replicate k reads
    ``X[perm_k[pos:pos+k]]``. ``kernel="numba"`` lets :func:`ambssgd_pass` read the rows
    in place (:meth:`take_indices`) with compiled kernels; ``"numpy"`` is the reference
    (gathered copies, :meth:`take`); ``"auto"`` (default) is ``"numba"`` when
    ``n_replicates * n >= AUTO_MIN_ROWS``, else ``"numpy"`` (``self.kernel`` holds the
    choice). The permutations are the same (with
    ``"numba"`` the same keys are drawn in chunks and sorted in compiled code by
    :func:`dpreg.estimators.permutations.uniform_key_permutations`, and stored as int32:
    half the memory).
    """

    def __init__(
        self,
        X: np.ndarray,
        y: np.ndarray,
        n_replicates: int,
        rng: np.random.Generator,
        *,
        shuffle: bool = True,
        kernel: str = "auto",
    ):
        if kernel not in PASS_KERNELS:
            raise ValueError(f"kernel must be one of {PASS_KERNELS}; got {kernel!r}")
        self.X, self.y = X, y
        self.n_replicates = int(n_replicates)
        self.d = X.shape[1]
        n = X.shape[0]
        if kernel == "auto":
            kernel = "numba" if self.n_replicates * n >= AUTO_MIN_ROWS else "numpy"
        self.kernel = kernel
        if shuffle and kernel == "numpy":
            self.perm = np.argsort(rng.random((self.n_replicates, n)), axis=1)
        elif shuffle:  # the same keys drawn in chunks and sorted compiled, int32 indices
            dtype = np.int32 if n < 2**31 else np.int64
            self.perm = uniform_key_permutations(rng, self.n_replicates, n, dtype=dtype)
        else:
            self.perm = np.broadcast_to(np.arange(n), (self.n_replicates, n))
        self.pos = 0

    @cached_property
    def norms(self) -> np.ndarray:
        """Row norms of ``X`` (n,), for the compiled kernels."""
        return np.sqrt(np.einsum("id,id->i", self.X, self.X))

    @cached_property
    def rows(self) -> np.ndarray:
        """``X`` with contiguous rows, for the compiled kernels (the same values).

        A prepared table's ``X`` is column-major: a kernel reading row ``i`` of it touches
        ``d`` cache lines, one per column (issue 18); one copy makes each row one run.
        """
        return np.ascontiguousarray(self.X)

    def take_indices(self, k: int) -> np.ndarray:
        """Return the next k row indices of every replicate's permutation, (D, k)."""
        idx = self.perm[:, self.pos : self.pos + k]
        self.pos += k
        return idx

    def take(self, k: int) -> tuple[np.ndarray, np.ndarray, None]:
        """Return the next k rows of every replicate's permutation (see RowSource)."""
        idx = self.take_indices(k)
        return self.X[idx], self.y[idx], None


@dataclass(frozen=True)
class RunSpec:
    """Per-run settings (length R) of a vectorised pass.

    Attributes
    ----------
    clip_rule : tuple of str
        One of :data:`CLIP_RULES` per run.
    noise_multiplier : ndarray (R,)
        Gradient-noise multiplier alpha (0 for ``none``).
    stat_noise_multiplier : ndarray (R,)
        DP-STAT multiplier (used by ``adaptive`` runs only).
    fixed_clip : ndarray (R,)
        Clip norm of ``fixed`` runs.
    stat_domain : ndarray (R,)
        DP-STAT range B of ``adaptive`` runs.
    sigma : ndarray (R,)
        Scale of the stream's noise in this run's response (0: response = base).
    stat_margin : ndarray (R,)
        DP-STAT stop margin of ``adaptive`` runs (0: the paper's rule; see
        :func:`ambssgd_pass`).
    """

    clip_rule: tuple[str, ...]
    noise_multiplier: np.ndarray
    stat_noise_multiplier: np.ndarray
    fixed_clip: np.ndarray
    stat_domain: np.ndarray
    sigma: np.ndarray
    stat_margin: np.ndarray | float = 0.0

    def __post_init__(self) -> None:
        R = len(self.clip_rule)
        for name in (
            "noise_multiplier",
            "stat_noise_multiplier",
            "fixed_clip",
            "stat_domain",
            "sigma",
            "stat_margin",
        ):
            arr = np.asarray(getattr(self, name), dtype=np.float64).reshape(-1)
            if arr.size == 1 and R > 1:
                arr = np.full(R, arr[0])
            if arr.size != R:
                raise ValueError(f"RunSpec.{name} has {arr.size} entries for {R} runs")
            object.__setattr__(self, name, arr)
        bad = [c for c in self.clip_rule if c not in CLIP_RULES]
        if bad:
            raise ValueError(f"unknown clip rule(s) {bad}; choose from {CLIP_RULES}")

    @property
    def n_runs(self) -> int:
        """R."""
        return len(self.clip_rule)

    @property
    def codes(self) -> np.ndarray:
        """Integer code of each run's clip rule."""
        return np.array([CLIP_RULES.index(c) for c in self.clip_rule])


@dataclass(frozen=True)
class OracleInfo:
    """Population truth for oracle clipping and exact per-step diagnostics.

    Attributes
    ----------
    w_star : ndarray (d,)
    H : ndarray (d,) or (d, d)
        The eigenvalues of a diagonal H (as :class:`GaussianStream` uses) or H itself.
    kappa, K2 : float
    """

    w_star: np.ndarray
    H: np.ndarray
    kappa: float = 1.0
    K2: float = 1.0

    def h_norm_sq(self, W: np.ndarray) -> np.ndarray:
        r""":math:`\|w - w^*\|_H^2` for W of shape (D, d, R) -> (D, R)."""
        diff = W - self.w_star[None, :, None]
        H = np.asarray(self.H)
        if H.ndim == 1:
            return np.einsum("kdr,d,kdr->kr", diff, H, diff)
        return np.einsum("kdr,de,ker->kr", diff, H, diff)


@dataclass
class PassResult:
    r"""Output of :func:`ambssgd_pass`.

    Attributes
    ----------
    w_bar : ndarray (D, d, R)
        Tail averages.
    w_last : ndarray (D, d, R)
        Final iterates :math:`w_T`.
    steps : dict of ndarray (D, R, T)
        ``zeta``, ``gamma`` (NaN unless adaptive), ``stop_index`` (-1 unless adaptive),
        ``no_break``, ``clip_fraction`` (of the b batch rows), and with an oracle
        ``residual_scale`` :math:`\\sqrt{\\|w_t - w^*\\|_H^2 + \\sigma^2}` and
        ``excess_risk_iterate`` :math:`\\frac12\\|w_t - w^*\\|_H^2` at the iterate each
        step starts from.
    """

    w_bar: np.ndarray
    w_last: np.ndarray
    steps: dict[str, np.ndarray] = field(default_factory=dict)


def ambssgd_pass(
    source: RowSource,
    *,
    layout: BlockLayout,
    runs: RunSpec,
    eta: float,
    x_norm: float,
    log_factor: float,
    n_queries: int,
    rng: np.random.Generator,
    stat_margin: float | None = None,
    oracle: OracleInfo | None = None,
    oracle_log_factor: float | None = None,
    clip_kernel: str = "auto",
) -> PassResult:
    r"""One DP-AMBSSGD pass (Algorithm 2) for D replicates x R runs. No validation.

    A :class:`PermutedRows` source with ``kernel="numba"`` is read in place through its
    permutation by the compiled kernels of :mod:`dpreg.estimators.ambssgd_kernel` (the
    same results up to the order of additions); other sources, and ``kernel="numpy"``,
    go through ``source.take`` (the reference).

    Parameters
    ----------
    source : RowSource
        Rows in the order they are consumed (already permuted).
    layout : BlockLayout
    runs : RunSpec
    eta : float
        Step size.
    x_norm : float
        :math:`R_x` in :math:`\zeta_t = R_x\gamma_t\ln^aN`.
    log_factor : float
        :math:`\ln^a N`.
    n_queries : int
        DP-STAT's K; its grid is :math:`\Delta = B 2^{-K}` per run.
    rng : numpy.random.Generator
        Source of the DP noise (separate from the data).
    stat_margin : float, optional
        Overrides ``runs.stat_margin`` for every run. DP-STAT stops when the noisy
        count reaches ``s - stat_margin * alpha_stat * sqrt(K)`` (0: the paper's rule,
        count >= s). With the paper's rule, once
        :math:`\gamma_i` exceeds every residual each further query stops only with
        probability 1/2, so the clip norm overshoots by a geometric number of doublings
        (:math:`E[\zeta_t^2]` grows like :math:`\sum_j 2^{-j}4^j`, capped by B). A
        positive margin (non-paper, docs/notes/varshney2022.md §8 item 8) removes most of
        the overshoot.
    oracle : OracleInfo, optional
        Needed by ``oracle`` runs; enables the per-step truth diagnostics.
    oracle_log_factor : float, optional
        :math:`\ln^{2a}N` of the oracle rule (default ``log_factor**2``).
    clip_kernel : {"auto", "numba", "numpy"}, default "auto"
        Sources read through ``take``: the elementwise work of each batch chunk after the
        product (response, clip test, count, scaling) in one compiled pass
        (:func:`~dpreg.estimators.ambssgd_kernel.clip_residuals`, the same bits) or in
        numpy (the reference); ``"auto"`` is compiled when numba is already loaded or
        ``D T b >= AUTO_MIN_ROWS``. The compiled path also forms the gradient
        :math:`X^\top R` as :math:`(R^\top X)^\top` at large shapes
        (:func:`~dpreg.estimators.blas_order.at_b`: the same bits with this machine's
        OpenBLAS, tested at the study's shapes).

    Returns
    -------
    PassResult
    """
    D, d, R, T = source.n_replicates, source.d, runs.n_runs, layout.T
    codes = runs.codes
    adaptive = np.flatnonzero(codes == _ADAPTIVE)
    oracle_runs = np.flatnonzero(codes == _ORACLE)
    none_runs = codes == _NONE
    if oracle_runs.size and oracle is None:
        raise ValueError("oracle clip runs need OracleInfo (w_star, H)")
    olog = log_factor**2 if oracle_log_factor is None else oracle_log_factor
    sig = runs.sigma
    margins = runs.stat_margin if stat_margin is None else np.full(R, float(stat_margin))
    deltas = np.ldexp(runs.stat_domain, -int(n_queries))
    W = np.zeros((D, d, R))
    W_sum = np.zeros((D, d, R))
    n_tail = 0
    shape = (D, R, T)
    steps = {
        "zeta": np.empty(shape),
        "gamma": np.full(shape, np.nan),
        "stop_index": np.full(shape, -1, dtype=np.int64),
        "no_break": np.zeros(shape, dtype=bool),
        "clip_fraction": np.empty(shape),
    }
    if oracle is not None:
        steps["residual_scale"] = np.empty(shape)
        steps["excess_risk_iterate"] = np.empty(shape)
    sens = GRADIENT_SENSITIVITY  # read per call, so a test can mutate it
    noise_coef = np.where(none_runs, 0.0, sens * runs.noise_multiplier / layout.b)
    chunk = max(256, _WORK_ELEMENTS // max(1, D * max(d, R)))

    def residuals(X: np.ndarray, base: np.ndarray, z: np.ndarray | None) -> np.ndarray:
        Rm = np.matmul(X, W)  # (D, k, R)
        Rm -= base[:, :, None]
        if z is not None:
            Rm -= z[:, :, None] * sig[None, None, :]
        return Rm

    fast = isinstance(source, PermutedRows) and source.kernel == "numba"
    if clip_kernel not in PASS_KERNELS:
        raise ValueError(f"clip_kernel must be one of {PASS_KERNELS}; got {clip_kernel!r}")
    if clip_kernel == "auto":
        big = D * T * layout.b >= AUTO_MIN_ROWS
        clip_kernel = "numba" if big or "numba" in sys.modules else "numpy"
    products: dict[int, np.ndarray] = {}  # reused (D, k, R) buffers of the compiled path
    for t in range(T):
        # --- DP-STAT on the stat sample [tau, tau + s) -------------------------------
        if fast:
            idx_s = source.take_indices(layout.s)
        else:
            Xs, base_s, z_s = source.take(layout.s)
        zeta = np.empty((D, R))
        if oracle is not None:
            err2 = oracle.h_norm_sq(W)
            steps["residual_scale"][:, :, t] = np.sqrt(err2 + sig[None, :] ** 2)
            steps["excess_risk_iterate"][:, :, t] = 0.5 * err2
        if adaptive.size:
            if fast:
                mags = stat_magnitudes(source.rows, source.y, idx_s, W, adaptive)  # (D, Ra, s)
            else:
                mags = np.abs(residuals(Xs, base_s, z_s)[:, :, adaptive])  # (D, s, Ra)
                mags = np.moveaxis(mags, 1, 2)  # (D, Ra, s)
            # Counting on a / Delta_r against the grid 2^i: each record still adds 0 or 1
            # to each count (sensitivity 1), whatever the rounding of the division.
            mags /= deltas[adaptive][None, :, None]
            counts = dp_stat_counts(mags, 1.0, n_queries)
            alpha_stat = runs.stat_noise_multiplier[adaptive][None, :]
            res = dp_stat_from_counts(
                counts,
                layout.s - margins[adaptive][None, :] * alpha_stat * math.sqrt(n_queries),
                alpha_stat,
                1.0,
                rng,
            )
            gamma = res.gamma * deltas[adaptive][None, :]  # ldexp(1, i) * Delta_r
            zeta[:, adaptive] = x_norm * gamma * log_factor
            steps["gamma"][:, adaptive, t] = gamma
            steps["stop_index"][:, adaptive, t] = res.stop_index
            steps["no_break"][:, adaptive, t] = res.no_break
        fixed = codes == _FIXED
        zeta[:, fixed] = runs.fixed_clip[fixed][None, :]
        if oracle_runs.size:
            err = np.sqrt(oracle.h_norm_sq(W)[:, oracle_runs])
            zeta[:, oracle_runs] = (
                x_norm * oracle.K2 * olog * (math.sqrt(oracle.kappa) * err + sig[oracle_runs])
            )
        zeta[:, none_runs] = np.inf
        steps["zeta"][:, :, t] = zeta

        # --- clipped mini-batch gradient on [tau + s, tau + s + b) ---------------------
        if fast:
            idx = source.take_indices(layout.b)
            grad, clipped = batch_gradient(source.rows, source.y, source.norms, idx, W, zeta)
            left = 0
        else:
            grad = np.zeros((D, d, R))
            clipped = np.zeros((D, R))
            left = layout.b
        while left > 0:
            k = min(chunk, left)
            left -= k
            X, base, z = source.take(k)
            if clip_kernel == "numba":  # the same product and row norms, then one pass
                if k not in products:
                    products[k] = np.empty((D, k, R))
                Rm = np.matmul(X, W, out=products[k])
                norms = np.sqrt(np.einsum("kid,kid->ki", X, X))
                clip_residuals(Rm, base, z, sig, norms, zeta, clipped)
                # X' Rm as (Rm' X)': the same sums, faster at the study's large shapes
                grad += at_b(X, Rm, swap=swap_pays(k, d, R, min_cols=50))
                continue
            Rm = residuals(X, base, z)  # gradient of row i: x_i * Rm_i
            norms = np.sqrt(np.einsum("kid,kid->ki", X, X))
            gnorm = np.abs(Rm) * norms[:, :, None]
            over = gnorm > zeta[:, None, :]
            clipped += over.sum(axis=1)
            if over.any():
                # min{1, zeta/||g||}: zeta/||g|| where clipped, exactly 1 elsewhere
                with np.errstate(divide="ignore", invalid="ignore"):
                    scale = np.where(over, zeta[:, None, :] / gnorm, 1.0)
                Rm *= scale
            grad += np.matmul(np.swapaxes(X, 1, 2), Rm)
        steps["clip_fraction"][:, :, t] = clipped / layout.b
        noise_std = noise_coef[None, :] * np.where(none_runs[None, :], 0.0, zeta)
        step = grad / layout.b + noise_std[:, None, :] * rng.standard_normal((D, d, R))
        W = W - eta * step
        if t + 1 >= layout.tail_start:
            W_sum += W
            n_tail += 1
    return PassResult(w_bar=W_sum / n_tail, w_last=W, steps=steps)
