r"""Roofline bound of every benchmarked estimator (issue 18): the work its algorithm must do.

For a workload (n rows, d parameters, T steps, m vectorised trials) :func:`work` returns
the floating-point operations, the bytes of memory traffic and the random normal draws
one call must do, counting only what the algorithm specifies and cannot avoid, and
:func:`bound_seconds` turns them into a time at the machine's rates measured in the same
run by :func:`measure_rates` (one core, one BLAS thread):

.. math::
    t_{\rm bound} = \max\Big(\frac{\rm flops}{R_{\rm GEMM}},
    \frac{\rm bytes}{B_{\rm stream}}\Big) + \frac{\rm draws}{R_{\rm normal}},

a roofline (compute or memory, whichever binds) plus the Gaussian noise, which numpy
generates serially and which is required work of every private estimator.
``ratio = measured / bound`` is >= 1 for an implementation that does at least the
counted work; 1 is the machine's limit, the goal is <= 3.

Counting conventions
--------------------
* A multiply-add is 2 flops. ``GRAM(n, p) = n p (p + 1)`` (the symmetric half of
  :math:`A^\top A`, :math:`A` n x p); ``EIG(p) = 4p^3/3`` (reduction to tridiagonal form,
  eigenvalues only); ``SOLVE(p) = p^3/3 + 2p^2`` (Cholesky and two triangular solves);
  ``WISHART(p) = 2p^3/3`` flops and ``p(p+1)/2`` draws (Bartlett: a lower-triangular
  normal/chi matrix, multiplied by the Gram's factor, then by its transpose).
* Bytes: 8 per float64 read of the data (``D = d + 1`` columns with the response; for
  the IV estimators ``q + p + 1``). Trials share a pass over the data whenever the
  algorithm lets all trials use the same rows at the same step (full-batch and
  fixed-order stream methods); per-trial orders (shuffles, Poisson batches) read the
  rows once per trial. Per-trial d x d matrices and the noise arrays are counted when
  they must be written and read back (stream noise of FTRL).
* Deterministic estimators (no ``rng``: ``ols``, ``2s_gd``) give the same answer in
  every trial: the work is counted once per call.
* Sampling a Gaussian sketch :math:`SA + \eta\xi` is counted at its cheapest exact form,
  the Gram matrix once and a Bartlett Wishart draw per trial (the distribution the
  algorithm specifies, not the explicit k x n matrix S).
* Per-example clipping (DP-GD, IHM's residual clip, the 2S-GD family, the SGD family)
  is counted as the algorithm states it: every (row, trial) pair at every step, 4 d
  flops (residual, scaled row added to the gradient) plus 3 for the clip.

Per-estimator formulas, flops; bytes; normal draws per call (m trials, D = d + 1):

* ``ols``: GRAM(n, D) + EIG(d) + SOLVE(d) flops; 8 n D bytes; no draws (the eigenvalues
  certify full rank and cond <= 1e6 before the Cholesky solve replaces ``lstsq``).
* ``adassp``: GRAM(n, D) + EIG(d) + m (SOLVE(d) + d^2); 8 n D + 8 m d^2;
  m (d(d+1)/2 + d + 1).
* ``linear_mixing``: GRAM(n, D) + EIG(D) + D^3/3 + m (WISHART(D) + SOLVE(d));
  8 n D + 8 m D^2; m (D(D+1)/2 + 1) (the last for the private eigenvalue test). One
  factor of the covariance ``A'A + eta_t^2 I``: a trial's ``eta_t`` follows its noisy
  eigenvalue, so in general each distinct ``eta_t`` needs its own factor, but at the
  benchmark's workload (n = 20,000, d = 20) the noisy eigenvalue is clamped at 0 in
  every trial, ``eta_t = sqrt(gamma)`` throughout, and one factor is all it needs.
* ``sheffet_sketch``: GRAM(n, D) + D^3/3 + m (WISHART(D) + SOLVE(d)); 8 n D + 8 m D^2;
  m D(D+1)/2 (a fixed added identity, no private test).
* ``ihm``: GRAM(n, D) + EIG(d) + d^3/3 + m T (n (4d + 3) + WISHART(d) + SOLVE(d));
  8 n D (T + 1) + 8 m T d^2; m (1 + T (d(d+1)/2 + d)).
* ``dp_gd``: m T n (4d + 3); 8 n D T; m T d.
* ``2s_gd`` (p = q): GRAM(n, q+p+1) + T (2 q^2 p + 2 q p); 8 n (q+p+1); no draws.
* ``dp_2s_gd``: m T n (4 q p + 4 q + 3p + 6); 8 n (q+p+1) T; m T (q p + p).
* ``dp_2s_gd_beta``: GRAM(n, q+p+1) + m T (n (4q + 3 + N) + 4 q^2 p),
  N = min(2p(q+1), 3q(q+1)/2); 8 n (q+p+1) (T + 1); m T p.
* ``dp_ambssgd*``: m T (s (2d + 1) + b (4d + 3)); 8 T (s + b) D m; m (n + T (d + K)).
* ``ambssgd_sgd``: m T b (4d + 3); 8 T (s + b) D m; m n.
* ``dp_ssgd``: m n (4d + 3); 8 n D m; m n (d + 1).
* ``dp_sgd_poisson``: m n (4d + 3); 8 n D m; m (n + T d).
* ``dp_sgd_stream``: m n (4d + 3); 8 n D + 16 m n d; m n d.
* ``dp_ftrl``: m n (4d + 3) + (2 m d + 1) FFT(n); 8 n D + 32 m n d; m n d.

Notes: the shuffled SGD family (``dp_ambssgd*``, ``ambssgd_sgd``: T blocks of s DP-STAT
rows and b mini-batch rows, K = 20 DP-STAT queries at most, the other rows dropped;
``dp_ssgd``: n single-row steps) and Poisson DP-SGD give every trial its own order or
batches, so each trial reads the data once and draws n random numbers for its
permutation or Poisson sampling (counted as draws). ``FFT(n) = 2.5 L log2 L`` is one
real FFT of the zero-padded length ``L = 2n``; the Toeplitz correlation applied to the
m d noise columns takes a forward and an inverse transform per column and one transform
of the coefficients per call (issue 18, s21: until then 3 transforms per column were
counted, the coefficients' transform once per column; the bound was 8% too long at the
benchmark's workload; ``tests/unit/test_roofline.py`` counts the transforms
``correlated_noise`` does).
Two-stage IV: ``dp_2s_gd`` clips both stages (first stage residual ``Z Theta - X``
is n x p per trial: 4qp flops a row, the second 4q); ``dp_2s_gd_beta`` clips the second
stage only, the first is a Gram update; its clip needs ``||w_i|| = ||Theta' z_i||`` of
every row, counted at its cheapest, ``N`` flops a row: ``Theta' z_i`` and its squared
norm (2p(q+1)) or the symmetric form ``z_i' (Theta Theta') z_i`` (q(q+1)/2 terms of 3
flops; ``Theta Theta'`` once per step: 2 q^2 p), whichever is fewer (issue 18, s21:
until then the norm was left out, while ``dp_2s_gd`` counts it, 3p a row from its
first-stage residual). Workloads not listed here raise ``KeyError``.

What each bound leaves optimistic (kept: the bound is the machine's limit for the
counted work, never shrunk to flatter a ratio; reviewed for every formula in s21): the
FFT flops of ``dp_ftrl`` at the square-GEMM rate (pocketfft's real transforms run at
about a tenth of it), and the rows that the shuffled and Poisson-sampled SGD family read
at random at the streaming bandwidth (a random 160-byte row costs three cache-line
misses whose latency the copy bandwidth does not see).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "FORMULAS",
    "Rates",
    "Shape",
    "Work",
    "bound_seconds",
    "measure_rates",
    "roofline_ratio",
    "work",
]


@dataclass(frozen=True)
class Work:
    """Work of one call: ``flops``, ``bytes`` of memory traffic, normal ``draws``."""

    flops: float
    bytes: float
    draws: float

    def __post_init__(self) -> None:
        for name in ("flops", "bytes", "draws"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be a finite number >= 0; got {value!r}")


@dataclass(frozen=True)
class Rates:
    """Measured single-core rates: GEMM flop/s, stream bytes/s, normal draws/s."""

    gemm_flops_per_s: float
    bandwidth_bytes_per_s: float
    normals_per_s: float

    def __post_init__(self) -> None:
        for name in ("gemm_flops_per_s", "bandwidth_bytes_per_s", "normals_per_s"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a finite positive number; got {value!r}")


@dataclass(frozen=True)
class Shape:
    """A workload's sizes: n rows, d parameters, T steps (None: one-shot), trials.

    ``batch``: the expected Poisson batch size (``dp_sgd_poisson``); ``K``: DP-STAT's
    query count (``dp_ambssgd*``).
    """

    n: int
    d: int
    T: int | None
    trials: int
    batch: int | None = None
    K: int = 20

    def __post_init__(self) -> None:
        for name in ("n", "d", "trials", "K"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer; got {value!r}")
        for name in ("T", "batch"):
            value = getattr(self, name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 1
            ):
                raise ValueError(f"{name} must be a positive integer or None; got {value!r}")


# ------------------------------------------------------------------ building blocks


def gram(n: int, p: int) -> float:
    """Flops of the symmetric half of ``A'A`` for ``A`` n x p (2 per multiply-add)."""
    return float(n * p * (p + 1))


def eig(p: int) -> float:
    """Flops of the eigenvalues of a symmetric p x p matrix (tridiagonal reduction)."""
    return 4.0 * p**3 / 3.0


def solve(p: int) -> float:
    """Flops of a Cholesky factorisation and two triangular solves (p x p)."""
    return p**3 / 3.0 + 2.0 * p**2


def wishart(p: int) -> float:
    """Flops of a Bartlett Wishart draw given the Gram's factor (L A, then (L A)(L A)')."""
    return 2.0 * p**3 / 3.0


def fft_flops(n: int) -> float:
    """Flops of one real FFT (or inverse) of the zero-padded length ``L = 2n``."""
    L = 2 * n
    return 2.5 * L * math.log2(L)


def _steps(s: Shape) -> int:
    if s.T is None:
        raise ValueError("T must be given for an iterative estimator; got None")
    return s.T


def _row_step(d: int) -> int:
    """Flops of one clipped per-example gradient: residual 2d, accumulate 2d, clip 3."""
    return 4 * d + 3


# ------------------------------------------------------------------ per estimator


def _ols(s: Shape) -> Work:
    """Count the Gram, its eigenvalues (the full-rank and cond certificate), a solve."""
    D = s.d + 1
    return Work(gram(s.n, D) + eig(s.d) + solve(s.d), 8.0 * s.n * D, 0.0)


def _adassp(s: Shape) -> Work:
    n, d, m = s.n, s.d, s.trials
    flops = gram(n, d + 1) + eig(d) + m * (solve(d) + d**2)
    return Work(flops, 8.0 * n * (d + 1) + 8.0 * m * d**2, m * (d * (d + 1) / 2 + d + 1))


def _mixing(s: Shape) -> Work:
    n, d, m = s.n, s.d, s.trials
    D = d + 1
    flops = gram(n, D) + eig(D) + D**3 / 3.0 + m * (wishart(D) + solve(d))
    return Work(flops, 8.0 * n * D + 8.0 * m * D**2, m * (D * (D + 1) / 2 + 1))


def _sheffet(s: Shape) -> Work:
    """As :func:`_mixing` without the private eigenvalue test (a fixed added identity)."""
    n, d, m = s.n, s.d, s.trials
    D = d + 1
    flops = gram(n, D) + D**3 / 3.0 + m * (wishart(D) + solve(d))
    return Work(flops, 8.0 * n * D + 8.0 * m * D**2, m * D * (D + 1) / 2)


def _ihm(s: Shape) -> Work:
    n, d, m, T = s.n, s.d, s.trials, _steps(s)
    D = d + 1
    once = gram(n, D) + eig(d) + d**3 / 3.0
    per_step = n * _row_step(d) + wishart(d) + solve(d)
    draws = m * (1 + T * (d * (d + 1) / 2 + d))
    return Work(once + m * T * per_step, 8.0 * n * D * (T + 1) + 8.0 * m * T * d**2, draws)


def _dp_gd(s: Shape) -> Work:
    n, d, m, T = s.n, s.d, s.trials, _steps(s)
    return Work(float(m * T * n * _row_step(d)), 8.0 * n * (d + 1) * T, float(m * T * d))


def _two_stage_gd(s: Shape) -> Work:
    n, p, T = s.n, s.d, _steps(s)
    q = p
    flops = gram(n, q + p + 1) + T * (2 * q * q * p + 2 * q * p)
    return Work(flops, 8.0 * n * (q + p + 1), 0.0)


def _dp_two_stage_gd(s: Shape) -> Work:
    n, p, m, T = s.n, s.d, s.trials, _steps(s)
    q = p
    flops = m * T * n * (4 * q * p + 4 * q + 3 * p + 6)
    return Work(float(flops), 8.0 * n * (q + p + 1) * T, float(m * T * (q * p + p)))


def _dp_two_stage_gd_beta(s: Shape) -> Work:
    n, p, m, T = s.n, s.d, s.trials, _steps(s)
    q = p
    # ||Theta' z||^2 per row: directly, or as z' (Theta Theta') z in its symmetric form
    norm_sq = min(2 * p * (q + 1), 3 * q * (q + 1) // 2)
    flops = gram(n, q + p + 1) + m * T * (n * (4 * q + 3 + norm_sq) + 4 * q * q * p)
    return Work(flops, 8.0 * n * (q + p + 1) * (T + 1), float(m * T * p))


def _layout(s: Shape) -> tuple[int, int, int]:
    """AMBSSGD's blocks: T blocks of ``s`` DP-STAT rows and ``b`` batch rows (1/11 split)."""
    T = _steps(s)
    rows = s.n // T
    stat = rows // 11
    return T, stat, rows - stat


def _ambssgd(s: Shape) -> Work:
    T, stat, b = _layout(s)
    d, m = s.d, s.trials
    flops = m * T * (stat * (2 * d + 1) + b * _row_step(d))
    rows = 8.0 * T * (stat + b) * (d + 1) * m  # an own permutation per trial
    return Work(float(flops), rows, float(m * (s.n + T * (d + s.K))))


def _ambssgd_sgd(s: Shape) -> Work:
    T, stat, b = _layout(s)
    d, m = s.d, s.trials
    rows = 8.0 * T * (stat + b) * (d + 1) * m  # an own permutation per trial
    return Work(float(m * T * b * _row_step(d)), rows, float(m * s.n))


def _dp_ssgd(s: Shape) -> Work:
    n, d, m = s.n, s.d, s.trials
    return Work(float(m * n * _row_step(d)), 8.0 * n * (d + 1) * m, float(m * n * (d + 1)))


def _dp_sgd_poisson(s: Shape) -> Work:
    n, d, m, T = s.n, s.d, s.trials, _steps(s)
    if s.batch is None:
        raise ValueError("batch must be given for dp_sgd_poisson; got None")
    return Work(float(m * n * _row_step(d)), 8.0 * n * (d + 1) * m, float(m * (n + T * d)))


def _dp_sgd_stream(s: Shape) -> Work:
    n, d, m = s.n, s.d, s.trials
    flops = m * n * _row_step(d)
    return Work(float(flops), 8.0 * n * (d + 1) + 16.0 * m * n * d, float(m * n * d))


def _dp_ftrl(s: Shape) -> Work:
    n, d, m = s.n, s.d, s.trials
    flops = m * n * _row_step(d) + (2 * m * d + 1) * fft_flops(n)
    return Work(float(flops), 8.0 * n * (d + 1) + 32.0 * m * n * d, float(m * n * d))


#: Registry name -> work of one call at a :class:`Shape`.
FORMULAS: dict[str, Callable[[Shape], Work]] = {
    "ols": _ols,
    "adassp": _adassp,
    "linear_mixing": _mixing,
    "sheffet_sketch": _sheffet,
    "ihm": _ihm,
    "dp_gd": _dp_gd,
    "2s_gd": _two_stage_gd,
    "dp_2s_gd": _dp_two_stage_gd,
    "dp_2s_gd_beta": _dp_two_stage_gd_beta,
    "dp_ambssgd": _ambssgd,
    "dp_ambssgd_fixedclip": _ambssgd,
    "dp_ambssgd_oracleclip": _ambssgd,
    "ambssgd_sgd": _ambssgd_sgd,
    "dp_ssgd": _dp_ssgd,
    "dp_sgd_poisson": _dp_sgd_poisson,
    "dp_sgd_stream": _dp_sgd_stream,
    "dp_ftrl": _dp_ftrl,
}


def work(estimator: str, shape: Shape) -> Work:
    """Return the work of one call of ``estimator`` at ``shape``.

    Raises
    ------
    KeyError
        If ``estimator`` has no formula (add one to :data:`FORMULAS`).
    """
    if estimator not in FORMULAS:
        raise KeyError(f"estimator {estimator!r} has no roofline formula; add it to FORMULAS")
    if not isinstance(shape, Shape):
        raise TypeError(f"shape must be a Shape; got {type(shape).__name__}")
    return FORMULAS[estimator](shape)


# ------------------------------------------------------------------ bound and ratio


def bound_seconds(w: Work, rates: Rates) -> float:
    """``max(flops / GEMM rate, bytes / bandwidth) + draws / normal rate`` in seconds."""
    if not isinstance(w, Work) or not isinstance(rates, Rates):
        raise TypeError("bound_seconds needs a Work and a Rates")
    compute = w.flops / rates.gemm_flops_per_s
    memory = w.bytes / rates.bandwidth_bytes_per_s
    return max(compute, memory) + w.draws / rates.normals_per_s


def roofline_ratio(measured_seconds: float, bound: float) -> float:
    """``measured / bound`` (>= 1 when at least the counted work was done)."""
    for name, value in (("measured_seconds", measured_seconds), ("bound", bound)):
        if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
            raise ValueError(f"{name} must be a finite positive number; got {value!r}")
    return measured_seconds / bound


# ------------------------------------------------------------------ machine rates


def _best(fn: Callable[[], None], repeats: int) -> float:
    fn()  # warm-up: first-touch allocation, BLAS initialisation
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def measure_rates(*, quick: bool = False, repeats: int = 5) -> Rates:
    """Measure this process's GEMM, stream-copy and normal-draw rates (best of repeats).

    * GEMM: float64 ``A @ B`` of two 1024 x 1024 matrices (256 in ``quick``),
      ``2 k^3`` flops.
    * Bandwidth: ``np.copyto`` of a 256 MB float64 array (16 MB in ``quick``, larger
      than the caches of the reference machine in the full run), counting the bytes
      read plus written.
    * Normal draws: ``Generator.standard_normal(out=)`` of 2^22 doubles (the PCG64
      generator every estimator uses).

    Run it in the process that is benchmarked (pinned, one BLAS thread).
    """
    import numpy as np

    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be a positive integer; got {repeats!r}")
    rng = np.random.default_rng(0)
    k = 256 if quick else 1024
    A, B = rng.standard_normal((k, k)), rng.standard_normal((k, k))
    C = np.empty((k, k))
    gemm = 2.0 * k**3 / _best(lambda: np.matmul(A, B, out=C), repeats)
    size = (16 if quick else 256) * 2**20 // 8
    src, dst = np.ones(size), np.empty(size)
    bandwidth = 16.0 * size / _best(lambda: np.copyto(dst, src), repeats)
    buf = np.empty(2**18 if quick else 2**22)
    normals = buf.size / _best(lambda: rng.standard_normal(out=buf), repeats)
    return Rates(gemm, bandwidth, normals)
