"""Trials per second of every registered estimator at a stated, paper-scale workload.

Run from the repository root (the script pins itself to one core with ``taskset``)::

    .venv/bin/python benchmarks/estimators.py            # full workloads, ~5-10 minutes
    .venv/bin/python benchmarks/estimators.py --quick    # tiny workloads, smoke check

For each workload (estimator, paper, n, d, T, trials, setting) the script draws synthetic
data from a fixed seed, calls the estimator once as a warm-up and then ``--repeats``
times (>= 3), each call with ``trials`` vectorised trials and a fresh generator of the
same seed, and records the minimum wall time (``time.perf_counter``) of one call and
``trials / seconds``. Setting up the data and the hyperparameters is not timed; the
calibration each estimator does inside its call (accountants, root finding) is.

Outputs ``benchmarks/results/estimators.csv`` and ``estimators.md`` (table and machine
facts: CPU, nproc, affinity, 1-minute load average at start and end, versions, date).
``--quick`` writes to a temporary directory unless ``--out`` is given. Timings are
measurements on a shared machine, never assertions.
"""

from __future__ import annotations

import argparse
import inspect
import math
import os
import shutil
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _machine import THREAD_VARIABLES, facts_markdown, load_average, machine_facts
from roofline import Rates, Shape, bound_seconds, measure_rates, roofline_ratio, work

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "results"
PINNED_ENV = "DPREG_BENCH_PINNED"
SEED = 20261122
COLUMNS = [
    "estimator",
    "paper",
    "n",
    "d",
    "T",
    "trials",
    "seconds_per_call",
    "trials_per_second",
    "cpu_seconds_per_call",
    "repeats",
    "flops_per_trial",
    "bytes_per_trial",
    "draws_per_trial",
    "bound_seconds_per_call",
    "roofline_ratio",
    "roofline_ratio_cpu",
    "peak_mb_per_call",
    "setting",
    "notes",
]
FLOAT_COLUMNS = (
    "seconds_per_call",
    "trials_per_second",
    "cpu_seconds_per_call",
    "flops_per_trial",
    "bytes_per_trial",
    "draws_per_trial",
    "bound_seconds_per_call",
    "roofline_ratio",
    "roofline_ratio_cpu",
    "peak_mb_per_call",
)


@dataclass(frozen=True)
class Workload:
    """One timed call: ``get_estimator(estimator)(*args, rng=, trials=, **kwargs)``.

    ``build(rng)`` returns ``(args, kwargs)`` (data and hyperparameters, not timed);
    ``T`` is the number of iterations, steps or blocks (None: not iterative);
    ``batch`` the expected batch size where the roofline count needs it
    (``benchmarks/roofline.py``).
    """

    estimator: str
    paper: str
    n: int
    d: int
    T: int | None
    trials: int
    setting: str
    build: Callable[[Any], tuple[tuple, dict[str, Any]]] = field(repr=False)
    batch: int | None = None

    def shape(self) -> Shape:
        """Return the sizes the roofline count needs."""
        return Shape(self.n, self.d, self.T, self.trials, batch=self.batch)


# ------------------------------------------------------------------ synthetic data


def bounded_regression(rng, n: int, d: int):
    """Rows scaled to max norm 1 and ``|y| <= 1`` (Lev et al.'s data-derived bounds)."""
    import numpy as np

    X = rng.standard_normal((n, d))
    X /= np.linalg.norm(X, axis=1).max()
    theta = rng.standard_normal(d)
    y = X @ theta + 0.1 * rng.standard_normal(n)
    y /= np.abs(y).max()
    return X, y


def gaussian_regression(rng, n: int, d: int, sigma: float):
    """``x ~ N(0, I_d)``, unit ``w*``, ``y = x'w* + sigma z`` (Brown, Varshney)."""
    import numpy as np

    w = rng.standard_normal(d)
    w /= np.linalg.norm(w)
    X = rng.standard_normal((n, d))
    return X, X @ w + sigma * rng.standard_normal(n), w


def iv_data(rng, n: int, p: int, q: int):
    """Liang et al. (2025) Sec. 4.1 design: ``Theta = 5 I + E``, endogenous errors."""
    import numpy as np

    Theta = 5.0 * np.eye(q, p) + rng.standard_normal((q, p))
    beta = rng.standard_normal(p)
    Z = rng.standard_normal((n, q))
    common = rng.standard_normal(n)
    X = Z @ Theta + common[:, None] + rng.standard_normal((n, p))
    y = X @ beta + common + rng.standard_normal(n)
    return Z, X, y, Theta


# ------------------------------------------------------------------ workloads


def lev_workloads(n: int, d: int, trials: int) -> list[Workload]:
    """Lev et al. (2026) estimators on bounded data, eps = 1, delta = 1/n^2."""
    from dpreg.privacy.budgets import ApproxDP

    budget = ApproxDP(1.0, 1.0 / n**2)

    def data(rng):
        return bounded_regression(rng, n, d)

    def simple(extra: dict[str, Any]):
        def build(rng):
            return data(rng), {"budget": budget, **extra}

        return build

    bounds = {"bound_X": 1.0, "bound_y": 1.0}
    eps_text = "eps=1, delta=1/n^2"
    return [
        Workload(
            "ols",
            "lev2026",
            n,
            d,
            None,
            trials,
            "non-private reference",
            lambda rng: (data(rng), {}),
        ),
        Workload(
            "adassp",
            "lev2026",
            n,
            d,
            None,
            trials,
            f"{eps_text}, analytic, shift=paper",
            simple({**bounds, "mechanism": "analytic", "shift": "paper"}),
        ),
        Workload("ihm", "lev2026", n, d, 3, trials, f"{eps_text}, sampler=gram", simple(bounds)),
        Workload(
            "linear_mixing",
            "lev2026",
            n,
            d,
            None,
            trials,
            f"{eps_text}, sampler=wishart",
            simple(bounds),
        ),
        Workload(
            "sheffet_sketch",
            "lev2026",
            n,
            d,
            None,
            trials,
            f"{eps_text}, calibration=rdp",
            simple(bounds),
        ),
        Workload(
            "dp_gd",
            "lev2026",
            n,
            d,
            3,
            trials,
            f"{eps_text}, step 0.25, clip 1 (Lev baseline)",
            simple({**bounds, "T": 3, "step": 0.25, "clip": 1.0}),
        ),
    ]


def brown_workload(n: int, p: int, T: int, trials: int) -> Workload:
    """Brown et al. (2024) DP-GD: rho = 0.015, gamma = 5 sqrt(p), step 0.25, fast kernel."""
    from dpreg.privacy.budgets import ZCDP

    def build(rng):
        X, y, _ = gaussian_regression(rng, n, p, 1.0)
        kwargs = {
            "budget": ZCDP(0.015),
            "T": T,
            "step": 0.25,
            "clip": 5.0 * math.sqrt(p),
            "bound_X": None,
            "bound_y": None,
            "kernel": "fast",
        }
        return (X, y), kwargs

    return Workload(
        "dp_gd", "brown2024", n, p, T, trials, "rho=0.015, gamma=5 sqrt(p), kernel=fast", build
    )


def liang_workloads(n: int, p: int, T: int, trials: int) -> list[Workload]:
    """Liang et al. (2025) 2S-GD family: p = q, population steps, c0 = 4 clip, rho = 5+5."""
    from dpreg.estimators.iv import default_clip_threshold, population_step_sizes

    q = p
    clip = default_clip_threshold(n, q, T, c0=4.0)

    def build_for(extra: Callable[[], dict[str, Any]]):
        def build(rng):
            Z, X, y, Theta = iv_data(rng, n, p, q)
            eta, alpha = population_step_sizes(Theta)
            kwargs = {"T": T, "step_theta": eta, "step_beta": alpha, "return_path": False}
            return (Z, X, y), {**kwargs, **extra()}

        return build

    def plain() -> dict[str, Any]:
        return {}

    def both() -> dict[str, Any]:
        return {"rho1": 5.0, "rho2": 5.0, "clip_theta": clip, "clip_beta": clip}

    def beta_only() -> dict[str, Any]:
        return {"rho2": 5.0, "clip_beta": clip}

    setting = f"p=q={p}, population steps, no path"
    return [
        Workload("2s_gd", "liang2025", n, p, T, trials, setting, build_for(plain)),
        Workload(
            "dp_2s_gd",
            "liang2025",
            n,
            p,
            T,
            trials,
            f"{setting}, rho1=rho2=5, c0=4",
            build_for(both),
        ),
        Workload(
            "dp_2s_gd_beta",
            "liang2025",
            n,
            p,
            T,
            trials,
            f"{setting}, rho2=5, c0=4",
            build_for(beta_only),
        ),
    ]


def varshney_workloads(n: int, d: int, trials: int, batch: int) -> list[Workload]:
    """Varshney et al. (2022): x ~ N(0, I_d), sigma = 0.1, eps = 1, delta = 1e-6."""
    import numpy as np

    from dpreg.estimators.ambssgd_core import block_layout, paper_hyperparameters
    from dpreg.estimators.ambssgd_privacy import calibrate_dp_ssgd
    from dpreg.estimators.dp_ssgd import dp_ssgd_hyperparameters
    from dpreg.privacy.budgets import ApproxDP

    sigma = 0.1
    budget = ApproxDP(1.0, 1e-6)
    layout = block_layout(n)
    hp = paper_hyperparameters(
        n, layout.b, H_eigenvalues=np.ones(d), w_star_H_norm=1.0, sigma=sigma
    )
    common = {"x_norm_sq": hp.x_norm_sq, "H_norm": 1.0}

    def build_for(extra: Callable[[Any], dict[str, Any]]):
        def build(rng):
            X, y, w = gaussian_regression(rng, n, d, sigma)
            return (X, y), extra(w)

        return build

    def adaptive(_w) -> dict[str, Any]:
        return {"budget": budget, **common, "stat_domain": hp.stat_domain}

    def fixed(_w) -> dict[str, Any]:
        return {"budget": budget, **common, "stat_domain": hp.stat_domain}

    def oracle(w) -> dict[str, Any]:
        return {"budget": budget, **common, "w_star": w, "H": np.ones(d), "sigma": sigma}

    def sgd(_w) -> dict[str, Any]:
        return dict(common)

    def ssgd(w) -> dict[str, Any]:
        with warnings.catch_warnings():  # outside the shuffling regime: over-noised
            warnings.simplefilter("ignore")
            cal = calibrate_dp_ssgd(1.0, 1e-6, n)
        eta, clip = dp_ssgd_hyperparameters(
            n,
            d,
            x_norm_sq=hp.x_norm_sq,
            H_norm=1.0,
            kappa=1.0,
            w_star_norm=float(np.linalg.norm(w)),
            sigma=sigma,
            noise_multiplier=cal.noise_multiplier,
            rule="lemma",
        )
        return {"budget": budget, "eta": eta, "clip": clip}

    def poisson(_w) -> dict[str, Any]:
        eta = batch / (hp.x_norm_sq + (batch - 1) * 1.0)
        clip = math.sqrt(hp.x_norm_sq) * (1.0 + sigma)
        return {
            "budget": budget,
            "eta": eta,
            "clip": clip,
            "batch_size": batch,
            "n_public": n,
            "epochs": 1.0,
        }

    base = "eps=1, delta=1e-6, sigma=0.1"
    T = layout.T
    return [
        Workload(
            "dp_ambssgd", "varshney2022", n, d, T, trials, f"{base}, K=20", build_for(adaptive)
        ),
        Workload("dp_ambssgd_fixedclip", "varshney2022", n, d, T, trials, base, build_for(fixed)),
        Workload("dp_ambssgd_oracleclip", "varshney2022", n, d, T, trials, base, build_for(oracle)),
        Workload("ambssgd_sgd", "varshney2022", n, d, T, trials, "non-private", build_for(sgd)),
        Workload(
            "dp_ssgd",
            "varshney2022",
            n,
            d,
            n,
            trials,
            f"{base}, one row per step, eta rule=lemma",
            build_for(ssgd),
        ),
        Workload(
            "dp_sgd_poisson",
            "varshney2022",
            n,
            d,
            math.ceil(n / batch),
            trials,
            f"{base}, batch {batch}, 1 epoch, RDP",
            build_for(poisson),
            batch=batch,
        ),
    ]


def ftrl_workloads(T: int, d: int, trials: int) -> list[Workload]:
    """Choquette-Choo et al. (2023): one pass, batch 1, lambda_k = 1/k, eta = 0.02, rho = 1."""
    import numpy as np

    from dpreg.privacy.budgets import ZCDP

    eta = 0.02
    lam = 1.0 / np.arange(1, d + 1)

    def build_for(extra: dict[str, Any]):
        def build(rng):
            w = rng.standard_normal(d)
            w /= np.linalg.norm(w)
            X = rng.standard_normal((T, d)) * np.sqrt(lam)
            y = X @ w + 0.1 * rng.standard_normal(T)
            return (X, y), {"budget": ZCDP(1.0), "eta": eta, "clip": 1.0, **extra}

        return build

    nu = eta * float(lam.min())
    setting = "rho=1, eta=0.02, G=1, batch 1"
    return [
        Workload(
            "dp_ftrl",
            "choquettechoo2023",
            T,
            d,
            T,
            trials,
            f"{setting}, nu-FTRL nu=eta*mu",
            build_for({"correlation": "nu_ftrl", "nu": nu}),
        ),
        Workload("dp_sgd_stream", "choquettechoo2023", T, d, T, trials, setting, build_for({})),
    ]


def workloads(quick: bool) -> list[Workload]:
    """Return the stated workloads (``quick``: tiny ones for a smoke check)."""
    if quick:
        return (
            lev_workloads(500, 5, 4)
            + [brown_workload(500, 5, 5, 4)]
            + liang_workloads(300, 3, 5, 4)
            + varshney_workloads(5000, 5, 4, 100)
            + ftrl_workloads(200, 8, 2)
        )
    return (
        lev_workloads(20_000, 20, 100)
        + [brown_workload(10_000, 10, 100, 100)]
        + liang_workloads(5_000, 5, 100, 100)
        + varshney_workloads(100_000, 20, 100, 1000)
        + ftrl_workloads(10_000, 128, 10)
    )


# ------------------------------------------------------------------ timing


def peak_megabytes(call: Callable[[], Any]) -> float:
    """Peak ``tracemalloc`` memory (MB) allocated during one ``call()`` above its start.

    numpy reports its array buffers to ``tracemalloc``, so this is the peak of the
    Python and numpy heap the call needed on top of its inputs (the data, built before).
    """
    import tracemalloc

    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        call()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return (peak - base) / 2**20


def time_workload(w: Workload, repeats: int, rates: Rates) -> dict[str, Any]:
    """Warm up once, time ``repeats`` calls, trace one more for memory; one result row."""
    import numpy as np

    from dpreg.estimators import get_estimator

    fn = get_estimator(w.estimator)
    takes_rng = "rng" in inspect.signature(fn).parameters  # 2s_gd is deterministic
    args, kwargs = w.build(np.random.default_rng([SEED, 0]))
    caught: list[str] = []

    def call() -> tuple[float, float]:
        rng = {"rng": np.random.default_rng([SEED, 1])} if takes_rng else {}
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            start, cpu_start = time.perf_counter(), time.process_time()
            fit = fn(*args, **rng, trials=w.trials, **kwargs)
            elapsed = time.perf_counter() - start, time.process_time() - cpu_start
        caught.extend(f"{r.category.__name__}: {str(r.message)[:80]}" for r in record)
        if np.shape(fit.theta)[0] != w.trials:
            raise RuntimeError(f"{w.estimator}: theta has {np.shape(fit.theta)[0]} rows")
        return elapsed

    call()  # warm-up: imports, caches, first-touch allocation
    timings = [call() for _ in range(repeats)]
    seconds = min(wall for wall, _ in timings)
    cpu_seconds = min(cpu for _, cpu in timings)
    peak_mb = peak_megabytes(call)  # untimed: tracemalloc slows allocation
    counted = work(w.estimator, w.shape())
    bound = bound_seconds(counted, rates)
    notes = "; ".join(sorted(set(caught)))
    return {
        "estimator": w.estimator,
        "paper": w.paper,
        "n": w.n,
        "d": w.d,
        "T": "NA" if w.T is None else w.T,
        "trials": w.trials,
        "seconds_per_call": seconds,
        "trials_per_second": w.trials / seconds,
        "cpu_seconds_per_call": cpu_seconds,
        "repeats": repeats,
        "flops_per_trial": counted.flops / w.trials,
        "bytes_per_trial": counted.bytes / w.trials,
        "draws_per_trial": counted.draws / w.trials,
        "bound_seconds_per_call": bound,
        "roofline_ratio": roofline_ratio(seconds, bound),
        "roofline_ratio_cpu": roofline_ratio(cpu_seconds, bound),
        "peak_mb_per_call": peak_mb,
        "setting": w.setting,
        "notes": notes,
    }


# ------------------------------------------------------------------ pinning and output


def pin_to_one_core(core: int) -> str:
    """Re-execute this script under ``taskset -c core`` with one BLAS thread.

    Returns a description of the pinning actually in force (in the re-executed process).
    Falls back to ``os.sched_setaffinity`` when ``taskset`` is missing.
    """
    if os.environ.get(PINNED_ENV):
        return os.environ[PINNED_ENV]
    env = dict(os.environ)
    env.update({k: "1" for k in THREAD_VARIABLES})
    taskset = shutil.which("taskset")
    if taskset:
        env[PINNED_ENV] = f"taskset -c {core}"
        os.execvpe(taskset, [taskset, "-c", str(core), sys.executable, *sys.argv], env)
    os.environ.update({k: "1" for k in THREAD_VARIABLES})
    try:
        os.sched_setaffinity(0, {core})
        how = f"os.sched_setaffinity({{{core}}}) (no taskset)"
    except (AttributeError, OSError):
        how = "not pinned (no taskset, no sched_setaffinity)"
    os.environ[PINNED_ENV] = how
    return how


def markdown_table(rows: list[dict[str, Any]]) -> str:
    """Render result rows as a markdown table (times to 4 significant digits)."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for row in rows:
        cells = []
        for col in COLUMNS:
            value = row[col]
            if col in FLOAT_COLUMNS:
                value = f"{value:.2f}" if col.startswith("roofline_ratio") else f"{value:.4g}"
            cells.append(str(value).replace("|", "/"))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def write_outputs(out: Path, rows, facts, pinning: str, quick: bool, elapsed: float) -> None:
    """Write ``estimators.csv`` and ``estimators.md`` into ``out``."""
    import pandas as pd

    out.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows, columns=COLUMNS).to_csv(out / "estimators.csv", index=False)
    text = [
        "# Estimator throughput" + (" (--quick smoke check)" if quick else ""),
        "",
        "Minimum wall time of one vectorised call over the repeats, after one warm-up "
        f"call; synthetic data from seed {SEED}; one process pinned with `{pinning}`, "
        "BLAS/OpenMP threads set to 1. T is the number of iterations, steps or blocks "
        "(NA: not iterative). `cpu_seconds_per_call` is the minimum process CPU time of a "
        "call over the repeats: well below `seconds_per_call` means the core was shared "
        "with other processes. Produced by `benchmarks/estimators.py`; "
        f"total wall time {elapsed:.0f} s.",
        "",
        "Roofline (`benchmarks/roofline.py`, issue 18): `flops_per_trial`, "
        "`bytes_per_trial`, `draws_per_trial` are the work the algorithm must do (call "
        "total / trials; work the trials share is divided among them), "
        "`bound_seconds_per_call` = max(flops / GEMM rate, bytes / bandwidth) + draws / "
        "normal rate at the rates below (measured in this run, same core), "
        "`roofline_ratio` = seconds_per_call / bound (goal <= 3; `roofline_ratio_cpu` with "
        "the CPU time, the better estimate on a shared core). `peak_mb_per_call`: "
        "tracemalloc peak of one extra untimed call (Python and numpy heap above the "
        "call's inputs).",
        "",
        markdown_table(rows),
        "",
        "## Machine",
        "",
        facts_markdown(facts),
        "",
    ]
    (out / "estimators.md").write_text("\n".join(text))


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny workloads (smoke check)")
    parser.add_argument("--repeats", type=int, default=3, help="timed calls (>= 3)")
    parser.add_argument("--out", type=Path, default=None, help="output directory")
    parser.add_argument("--only", nargs="*", default=None, help="estimator names to run")
    parser.add_argument("--core", type=int, default=0, help="CPU to pin to (default 0)")
    parser.add_argument("--no-pin", action="store_true", help="do not pin (not recommended)")
    args = parser.parse_args(argv)
    if args.repeats < 3:
        parser.error("--repeats must be >= 3")
    pinning = "not pinned (--no-pin)" if args.no_pin else pin_to_one_core(args.core)
    out = args.out
    if out is None:
        out = Path(tempfile.mkdtemp(prefix="dpreg_bench_")) if args.quick else DEFAULT_OUT

    from dpreg.estimators import ESTIMATORS

    load_start = load_average()
    t0 = time.perf_counter()
    rates = measure_rates(quick=args.quick)
    print(
        f"rates: GEMM {rates.gemm_flops_per_s / 1e9:.3g} Gflop/s, copy "
        f"{rates.bandwidth_bytes_per_s / 1e9:.3g} GB/s, "
        f"{rates.normals_per_s / 1e6:.3g} M normals/s",
        flush=True,
    )
    todo = [w for w in workloads(args.quick) if args.only is None or w.estimator in args.only]
    missing = sorted(set(ESTIMATORS) - {w.estimator for w in workloads(args.quick)})
    rows = []
    for w in todo:
        print(f"{w.estimator:24s} {w.paper:18s} n={w.n} d={w.d} T={w.T} ...", flush=True)
        row = time_workload(w, args.repeats, rates)
        rows.append(row)
        print(
            f"{'':24s} {row['seconds_per_call']:.4g} s/call, "
            f"{row['trials_per_second']:.4g} trials/s, {row['cpu_seconds_per_call']:.4g} s CPU, "
            f"bound {row['bound_seconds_per_call']:.3g} s, ratio {row['roofline_ratio']:.2f}, "
            f"peak {row['peak_mb_per_call']:.1f} MB",
            flush=True,
        )
    elapsed = time.perf_counter() - t0
    facts = machine_facts()
    facts = {
        **facts,
        "pinning": pinning,
        "load_1min_start": f"{load_start:.2f}",
        "load_1min_end": f"{load_average():.2f}",
        "gemm_gflops": f"{rates.gemm_flops_per_s / 1e9:.4g}",
        "copy_bandwidth_gb_s": f"{rates.bandwidth_bytes_per_s / 1e9:.4g}",
        "normals_per_s": f"{rates.normals_per_s:.4g}",
    }
    if missing:
        facts["estimators_without_workload"] = ", ".join(missing)
        print(f"WARNING: registered estimators without a workload: {', '.join(missing)}")
    write_outputs(out, rows, facts, pinning, args.quick, elapsed)
    print(f"pinning: {pinning}; load {facts['load_1min_start']} -> {facts['load_1min_end']}")
    print(f"wrote {out / 'estimators.csv'} and {out / 'estimators.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
