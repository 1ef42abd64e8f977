r"""Independent reference implementation of DP-AMBSSGD and DP-STAT (Varshney et al. 2022).

Written straight from the paper's pseudo-code (Algorithm 2, DP-AMBSSGD; Algorithm 3,
DP-STAT; Theorem 3.7's hyperparameters) to check :mod:`dpreg.estimators` independently.
Nothing here imports ``dpreg.estimators.ambssgd*`` or ``dpreg.estimators.dp_stat``: one
run at a time, a Python loop over blocks and over DP-STAT queries, the count of each query
taken directly (``residual <= gamma_i``), the noise drawn query by query.

The readings of the paper's ambiguities are the documented ones (docs/varshney2022.md,
docs/notes/varshney2022.md §8): stat sample ``[tau, tau + s)``, batch
``[tau + s, tau + s + b)`` (item 3); ``K`` queries ``i = 0..K-1`` with variance
``K alpha^2`` and ``gamma = 2^K Delta`` when no query passes (items 4-5);
``Delta = B / 2^K`` (item 6); ``min`` in the clip (item 2); floors and the tail
``w_{floor(T/2)+1..T}`` (item 15); natural logarithms (item 13).

Run as a script (``python tests/unit/varshney_reference.py``) for the E1 cell comparison
reported in docs/varshney2022.md ("Independent check of one E1 cell").
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

# ------------------------------------------------------------------------------ privacy


def alpha_by_bisection(epsilon: float, delta: float) -> float:
    r"""Noise multiplier of a :math:`1/\alpha^2`-zCDP pass that is (epsilon, delta)-DP.

    Theorem 3.6: the pass is :math:`\rho = 1/\alpha^2`-zCDP; Bun & Steinke (2016, Prop.
    1.3) converts :math:`\rho`-zCDP to :math:`(\rho + 2\sqrt{\rho\ln(1/\delta)}, \delta)`.
    The largest :math:`\rho` meeting epsilon is found by bisection (no closed form used).
    """
    L = math.log(1.0 / delta)

    def eps_of(rho: float) -> float:
        return rho + 2.0 * math.sqrt(rho * L)

    lo, hi = 0.0, 1.0
    while eps_of(hi) < epsilon:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if eps_of(mid) <= epsilon:
            lo = mid
        else:
            hi = mid
    return 1.0 / math.sqrt(lo)


# --------------------------------------------------------------------- hyperparameters


@dataclass(frozen=True)
class Setup:
    """Theorem 3.7's hyperparameters for Gaussian x ~ N(0, diag(lam)) (oracle constants)."""

    n: int
    T: int
    s: int
    b: int
    x_norm: float  # R_x
    eta: float
    domain: float  # B
    n_queries: int  # K
    grid_width: float  # Delta = B / 2^K
    log_a: float  # ln^a N, in zeta_t = R_x gamma_t ln^a N

    @property
    def tail(self) -> list[int]:
        """Indices t' of the averaged iterates w_{t'} (Algorithm 2, line 12)."""
        return list(range(self.T // 2 + 1, self.T + 1))


def theorem_3_7_setup(
    n: int,
    lam: np.ndarray,
    *,
    w_star_H_norm: float,
    sigma: float,
    c1: float = 1.0,
    K2: float = 1.0,
    a: float = 0.5,
    n_queries: int = 20,
) -> Setup:
    r"""Theorem 3.7: :math:`T = c_1\kappa\ln N`, :math:`s = b/10`, :math:`b + s = N/T`.

    :math:`\eta = b/(R_x^2 + (b-1)\|H\|)`, :math:`B = K_2R_x(\|w^*\|_H + \sigma)\ln^{2a}N`.
    :math:`R_x` is the smallest R with :math:`E[\|x\|^2xx^\top] \preceq R^2 H`; for Gaussian
    x, :math:`E[\|x\|^2 x x^\top] = \mathrm{Tr}(H) H + 2H^2`, so coordinate i needs
    :math:`R^2 \ge \mathrm{Tr}(H) + 2\lambda_i`.
    """
    lam = np.asarray(lam, dtype=float)
    kappa = float(lam.max() / lam.min())
    T = math.ceil(c1 * kappa * math.log(n))
    per_block = n // T  # b + s
    s = per_block // 11  # s = b/10  <=>  s = (b + s)/11
    b = per_block - s
    rx2 = max(float(lam.sum()) + 2.0 * li for li in lam)
    eta = b / (rx2 + (b - 1) * float(lam.max()))
    x_norm = math.sqrt(rx2)
    B = K2 * x_norm * (w_star_H_norm + sigma) * math.log(n) ** (2 * a)
    return Setup(
        n=n,
        T=T,
        s=s,
        b=b,
        x_norm=x_norm,
        eta=eta,
        domain=B,
        n_queries=n_queries,
        grid_width=B / 2**n_queries,
        log_a=math.log(n) ** a,
    )


# ------------------------------------------------------------------------------- noise


class SequentialNoise:
    """Standard normals drawn one query at a time, as Algorithm 3 is written."""

    def __init__(self, rng: np.random.Generator, d: int):
        self.rng, self.d = rng, d

    def begin_block(self, t: int) -> None:
        """Nothing to prepare."""

    def stat(self) -> float:
        """One standard normal for the next DP-STAT query."""
        return float(self.rng.standard_normal())

    def grad(self) -> np.ndarray:
        """g_t ~ N(0, I_d) (Algorithm 2, line 9)."""
        return self.rng.standard_normal(self.d)


class FedNoise:
    """Given draws: ``stat_draws[t]`` (K values, read in order) and ``grad_draws[t]`` (d)."""

    def __init__(self, stat_draws: np.ndarray, grad_draws: np.ndarray):
        self.stat_draws, self.grad_draws = stat_draws, grad_draws
        self.t, self.i = 0, 0

    def begin_block(self, t: int) -> None:
        """Move to block t's draws."""
        self.t, self.i = t, 0

    def stat(self) -> float:
        """The next DP-STAT draw of the current block."""
        v = float(self.stat_draws[self.t][self.i])
        self.i += 1
        return v

    def grad(self) -> np.ndarray:
        """The gradient draw of the current block."""
        return self.grad_draws[self.t]


def zero_noise(T: int, K: int, d: int) -> FedNoise:
    """All draws 0: alpha is effectively 0 (used for deterministic comparisons)."""
    return FedNoise(np.zeros((T, K)), np.zeros((T, d)))


# ---------------------------------------------------------------------------- DP-STAT


@dataclass
class StatOutput:
    """What Algorithm 3 returns (gamma) and how it got there."""

    gamma: float
    stop_index: int  # i at which the loop broke; K if it never broke
    no_break: bool
    counts: list[int] = field(default_factory=list)


def dp_stat_reference(
    abs_residuals: np.ndarray,
    *,
    domain: float,
    n_queries: int,
    s: int,
    alpha: float,
    draw: Callable[[], float],
    threshold: float | None = None,
) -> StatOutput:
    r"""Algorithm 3 (DP-STAT): noisy doubling search from :math:`\gamma_0 = \Delta`.

    For i = 0..K-1: :math:`c = |\{j : |\langle x_j, w\rangle - y_j| \le \gamma_i\}|`,
    :math:`c_{priv} = c + N(0, K\alpha^2)`; if :math:`c_{priv} < s` double gamma, else
    break and return :math:`\gamma_i`. ``threshold`` (default s) is the break level.
    """
    K = n_queries
    gamma = domain / 2**K  # Delta
    level = float(s) if threshold is None else threshold
    out = StatOutput(gamma=math.nan, stop_index=K, no_break=True)
    for i in range(K):
        c = int(np.count_nonzero(abs_residuals <= gamma))
        out.counts.append(c)
        c_priv = c + math.sqrt(K) * alpha * draw()
        if c_priv < level:
            gamma = 2.0 * gamma
        else:
            out.gamma, out.stop_index, out.no_break = gamma, i, False
            return out
    out.gamma = gamma  # 2^K Delta = B
    return out


# ------------------------------------------------------------------------ DP-AMBSSGD


@dataclass
class Block:
    """Per-block record of Algorithm 2."""

    t: int
    stat_rows: range
    batch_rows: range
    gamma: float
    stop_index: int
    no_break: bool
    zeta: float
    gradient_noise_std: float  # on the averaged gradient: alpha * 2 zeta_t / b
    iterate_noise_std: float  # on w: eta * alpha * 2 zeta_t / b
    clipped: int


@dataclass
class PassOutput:
    """Output of :func:`dp_ambssgd_reference`."""

    w_bar: np.ndarray
    iterates: list[np.ndarray]  # w_0..w_T
    blocks: list[Block]
    setup: Setup


def dp_ambssgd_reference(
    X: np.ndarray,
    y: np.ndarray,
    setup: Setup,
    *,
    alpha: float,
    noise: SequentialNoise | FedNoise,
    permute: np.random.Generator | None = None,
    stat_margin: float = 0.0,
) -> PassOutput:
    r"""Algorithm 2 (DP-AMBSSGD), one run, one block at a time.

    ``permute``: if given, the rows are first put in a uniformly random order (line 2).
    ``stat_margin`` > 0 is the non-paper variant: DP-STAT breaks at
    ``s - stat_margin * alpha * sqrt(K)``.
    """
    if permute is not None:
        order = permute.permutation(X.shape[0])
        X, y = X[order], y[order]
    T, s, b, K = setup.T, setup.s, setup.b, setup.n_queries
    w = np.zeros(X.shape[1])
    iterates = [w]
    blocks = []
    for t in range(T):
        noise.begin_block(t)
        tau = (b + s) * t
        stat_rows = range(tau, tau + s)
        batch_rows = range(tau + s, tau + s + b)
        abs_res = np.abs(
            X[stat_rows.start : stat_rows.stop] @ w - y[stat_rows.start : stat_rows.stop]
        )
        stat = dp_stat_reference(
            abs_res, domain=setup.domain, n_queries=K, s=s, alpha=alpha, draw=noise.stat,
            threshold=s - stat_margin * alpha * math.sqrt(K),
        )  # fmt: skip
        zeta = setup.x_norm * stat.gamma * setup.log_a  # line 8
        g = noise.grad()  # line 9
        Xb, yb = X[batch_rows.start : batch_rows.stop], y[batch_rows.start : batch_rows.stop]
        grads = Xb * (Xb @ w - yb)[:, None]  # row i: x_i (<x_i, w_t> - y_i)
        norms = np.linalg.norm(grads, axis=1)
        with np.errstate(divide="ignore"):
            factor = np.minimum(1.0, zeta / norms)  # clip_zeta(v) = v min{1, zeta/||v||}
        clipped = int(np.count_nonzero(factor < 1.0))
        total = (grads * factor[:, None]).sum(axis=0)
        w = w - setup.eta * (total / b + alpha * 2.0 * zeta / b * g)  # line 10
        iterates.append(w)
        blocks.append(
            Block(
                t=t, stat_rows=stat_rows, batch_rows=batch_rows, gamma=stat.gamma,
                stop_index=stat.stop_index, no_break=stat.no_break, zeta=zeta,
                gradient_noise_std=alpha * 2.0 * zeta / b,
                iterate_noise_std=setup.eta * alpha * 2.0 * zeta / b, clipped=clipped,
            )
        )  # fmt: skip
    w_bar = np.mean([iterates[t] for t in setup.tail], axis=0)  # line 12
    return PassOutput(w_bar=w_bar, iterates=iterates, blocks=blocks, setup=setup)


def excess_risk(w: np.ndarray, w_star: np.ndarray, lam: np.ndarray) -> float:
    r""":math:`\frac12\|w - w^*\|_H^2` for :math:`H = \mathrm{diag}(\lambda)`."""
    diff = np.asarray(w) - w_star
    return 0.5 * float(diff @ (lam * diff))


def gaussian_sample(
    rng: np.random.Generator, n: int, lam: np.ndarray, w_star: np.ndarray, sigma: float
) -> tuple[np.ndarray, np.ndarray]:
    """x ~ N(0, diag(lam)), y = <x, w*> + sigma z, drawn by the reference itself."""
    X = rng.standard_normal((n, lam.size)) * np.sqrt(lam)
    return X, X @ w_star + sigma * rng.standard_normal(n)


def reference_runs(
    *, n: int, d: int, sigma: float, epsilon: float, delta: float, runs: int, seed: int,
    stat_margin: float = 0.0,
) -> dict[str, np.ndarray]:  # fmt: skip
    """Independent replicates of one isotropic E1 cell (own data, own noise, own w*)."""
    lam = np.ones(d)
    w_star = np.ones(d) / math.sqrt(d)  # ||w*||_H = 1; kappa = 1 makes the direction moot
    setup = theorem_3_7_setup(n, lam, w_star_H_norm=1.0, sigma=sigma)
    alpha = alpha_by_bisection(epsilon, delta)
    risk, stop, log_zeta, no_break, clip, last = [], [], [], [], [], []
    for r in range(runs):
        rng = np.random.default_rng([seed, r])
        X, y = gaussian_sample(rng, n, lam, w_star, sigma)
        out = dp_ambssgd_reference(
            X, y, setup, alpha=alpha, noise=SequentialNoise(rng, d), permute=rng,
            stat_margin=stat_margin,
        )  # fmt: skip
        risk.append(excess_risk(out.w_bar, w_star, lam))
        stop.append(np.mean([blk.stop_index for blk in out.blocks]))
        log_zeta.append(np.mean([math.log(blk.zeta) for blk in out.blocks]))
        no_break.append(np.mean([blk.no_break for blk in out.blocks]))
        clip.append(np.mean([blk.clipped / setup.b for blk in out.blocks]))
        last.append(math.log(out.blocks[-1].zeta))
    return {
        "excess_risk": np.array(risk),
        "stop_index_mean": np.array(stop),
        "log_zeta_mean": np.array(log_zeta),
        "no_break_fraction": np.array(no_break),
        "clip_fraction": np.array(clip),
        "log_zeta_last": np.array(last),
    }


# ------------------------------------------------------------------------- statistics


def z_mean_difference(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sample z statistic of the difference of means (independent samples)."""
    se = math.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size)
    return (a.mean() - b.mean()) / se if se > 0 else (0.0 if a.mean() == b.mean() else math.inf)


def z_median_difference(a: np.ndarray, b: np.ndarray, *, boot: int = 2000, seed: int = 0) -> float:
    """Difference of medians over its bootstrap standard error."""
    rng = np.random.default_rng(seed)
    ma = np.median(a[rng.integers(0, a.size, (boot, a.size))], axis=1)
    mb = np.median(b[rng.integers(0, b.size, (boot, b.size))], axis=1)
    se = math.sqrt(ma.var(ddof=1) + mb.var(ddof=1))
    diff = float(np.median(a) - np.median(b))
    return diff / se if se > 0 else (0.0 if diff == 0 else math.inf)


if __name__ == "__main__":  # pragma: no cover - the documented E1 cell comparison
    import argparse
    import time

    from dpreg.experiments.varshney2022 import run_sim_cell

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--d", type=int, default=50)
    parser.add_argument("--sigma", type=float, default=0.1)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    cell = {"n": args.n, "d": args.d, "sigma": [args.sigma], "epsilon": [args.epsilon],
            "delta": 1e-6, "methods": ["ambssgd"]}  # fmt: skip
    start = time.perf_counter()
    ref = reference_runs(n=args.n, d=args.d, sigma=args.sigma, epsilon=args.epsilon,
                         delta=1e-6, runs=args.runs, seed=2022)  # fmt: skip
    t_ref = time.perf_counter() - start
    start = time.perf_counter()
    parts = [
        run_sim_cell(cell, trials=25, first_trial=k, seed=11 + k) for k in range(0, args.runs, 25)
    ]
    t_pkg = time.perf_counter() - start
    import pandas as pd

    pkg = pd.concat(parts)
    pr, rr = pkg["excess_risk"].to_numpy(), ref["excess_risk"]
    print(f"cell N={args.n} d={args.d} sigma={args.sigma} eps={args.epsilon}, {args.runs} runs")
    print(f"time: reference {t_ref:.1f} s, package {t_pkg:.1f} s")
    for name, p, r in [
        ("log excess risk", np.log(pr), np.log(rr)),
        ("mean stop index", pkg["stop_index_mean"].to_numpy(), ref["stop_index_mean"]),
        ("no-break fraction", pkg["no_break_fraction"].to_numpy(), ref["no_break_fraction"]),
    ]:
        print(
            f"{name:>18}: package mean {p.mean():.4g} median {np.median(p):.4g} | reference"
            f" mean {r.mean():.4g} median {np.median(r):.4g}"
            f" | z(mean) {z_mean_difference(p, r):+.2f}"
            f" z(median) {z_median_difference(p, r):+.2f}"
        )
    ratio = np.median(pr) / (args.sigma**2 * args.d / args.n)
    print(f"median excess / (sigma^2 d/N): package {ratio:.4g},"
          f" reference {np.median(rr) / (args.sigma**2 * args.d / args.n):.4g}")  # fmt: skip
