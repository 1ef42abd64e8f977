"""dpreg against the authors' code of Lev et al. (2026), side by side in one process.

Run from the repository root (the script pins itself to one core with ``taskset`` and one
BLAS thread, as ``benchmarks/estimators.py``)::

    .venv/bin/python benchmarks/anchors.py                 # four large datasets, ~10 min
    .venv/bin/python benchmarks/anchors.py --quick         # one small dataset, seconds
    .venv/bin/python benchmarks/anchors.py --datasets pol --epsilons 1

The authors' reference code (GitHub ``omrilev1/HessianMix``, pinned commit and sha256
below) is fetched like a data file: from the anchors directory (``--anchors``,
``$DPREG_ANCHORS`` or a folder ``shared/anchors`` beside the repository, layout
``<owner>/<repo>/<commit>/<path>``), else downloaded from GitHub and checked. It is
**executed, never copied**: its experiment script keeps the estimators inline in one
loop, so this script parses that file (``ast``), finds the loop over Monte Carlo trials
and the section of each method by the script's own section banners, and executes each
section as the authors wrote it, in a namespace prepared by the script's own set-up
statements for the dataset and the epsilon (its ``GetDataset``, delta = 1/n^2, its T and
k, its noise calibration).

For each (dataset, epsilon, method) cell both implementations run on the same training
rows (the authors' ``GetDataset`` output: rows scaled to norm <= 1, responses to
[-1, 1], the split drawn from ``np.random`` seeded per dataset): the authors' section
``their_trials`` times per round, dpreg's estimator once per round with ``our_trials``
vectorised trials and the authors' k, T, step and clip, interleaved over ``--rounds``
rounds. Timed: the minimum over rounds of the wall time per trial, and separately of the
process CPU time per trial (``speedup_cpu``; the better estimate on a shared core);
calibration included on both sides (the authors' is done once per epsilon outside their
trial loop, so it is timed separately and amortised over their 500 trials, as their
script does).

Error laws: the train MSE of every trial, both sides; per cell a two-sample
Kolmogorov-Smirnov test and Welch's t-test on the means; ``laws_agree`` is False where
either p-value is below the Holm-adjusted 1% level over all cells. dpreg's IHM runs
with ``gamma_method="code"`` (the authors' accounting of the eigenvalue test;
``docs/lev2026.md``), its AdaSSP with ``shift="code"`` (the authors' downward shift of the
noisy eigenvalue), its DP-GD with both kernels (``rows``, ``fast``).

Outputs ``benchmarks/results/anchors.csv`` and ``anchors.md`` (``--quick``: a temporary
directory unless ``--out``). Speed is measured here, never asserted in tests.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import importlib.util
import io
import math
import os
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _machine import facts_markdown, load_average, machine_facts  # noqa: E402
from estimators import pin_to_one_core  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO / "benchmarks" / "results"
ANCHORS_ENV = "DPREG_ANCHORS"

#: The authors' code, pinned (``SHA256SUMS`` of the anchors directory).
AUTHORS_REPO = "omrilev1/HessianMix"
AUTHORS_COMMIT = "37651364bdfa9814fa3220dd2512cdb94f6c213a"
AUTHORS_FILES = {
    "IterativeHessianMixing_main.py": (
        "db9b48d529d5ebd678793c48411208a4e4cc3bc9247fbcf0107862c32a6345e6"
    ),
    "utils_Hessian_mixing.py": "8c0c8270c6c28812580837bf7f51c98481e000be858a2cf677e26a3ff6f0b6e4",
}

#: The four large datasets of the issue and the paper's Figs. 2-3.
LARGE_DATASETS = ("protein", "kin40k", "pol", "elevators")

#: dpreg method -> (the authors' section banner, the variable their section sets).
SECTIONS = {
    "linear_mixing": ("Linear Mixing", "theta_LinMix"),
    "ihm": ("IHM with T = iters_IHM", "theta_IHM_T_iter"),
    "adassp": ("AdaSSP", "theta_adassp"),
    "dp_gd": ("DP_GD", "theta_DPGD"),
}

COLUMNS = [
    "dataset",
    "n",
    "d",
    "epsilon",
    "method",
    "their_trials",
    "our_trials",
    "their_seconds_per_trial",
    "their_calibration_seconds",
    "our_seconds_per_trial",
    "speedup",
    "their_cpu_seconds_per_trial",
    "our_cpu_seconds_per_trial",
    "speedup_cpu",
    "their_mean_mse",
    "our_mean_mse",
    "relative_difference",
    "ks_pvalue",
    "welch_pvalue",
    "laws_agree",
]


# ------------------------------------------------------------------ fetching the code


def _anchor_entries():
    """Manifest entries (the data layer's type) for the authors' two files."""
    from dpreg.data.manifest import ManifestEntry

    entries = {}
    for name, digest in AUTHORS_FILES.items():
        path = f"{AUTHORS_REPO}/{AUTHORS_COMMIT}/{name}"
        entries[f"anchors/{name}"] = ManifestEntry(
            id=f"anchors/{name}",
            path=path,
            url=f"https://raw.githubusercontent.com/{path}",
            sha256=digest,
            licence="none stated (executed for benchmarking, never copied)",
            citation="Lev et al. (2026), code at GitHub omrilev1/HessianMix",
            source="anchors",
        )
    return entries


def default_anchors_dir() -> Path | None:
    """``$DPREG_ANCHORS``, else a folder ``shared/anchors`` beside the repository, if present."""
    env = os.environ.get(ANCHORS_ENV)
    if env:
        return Path(env)
    beside = REPO.parent / "shared" / "anchors"
    return beside if beside.is_dir() else None


def default_data_mirror() -> Path | None:
    """``$DPREG_DATA_MIRROR``, else ``../shared/data/mirror`` beside the repository."""
    env = os.environ.get("DPREG_DATA_MIRROR")
    if env:
        return Path(env)
    beside = REPO.parent / "shared" / "data" / "mirror"
    return beside if beside.is_dir() else None


def fetch_authors_code(anchors: Path | None, cache: Path) -> dict[str, Path]:
    """Sha256-verified local paths of the authors' files (anchors dir first, then GitHub)."""
    from dpreg.data.acquire import fetch

    entries = _anchor_entries()
    return {
        name: fetch(f"anchors/{name}", dest_dir=cache, mirror=anchors, manifest=entries)
        for name in AUTHORS_FILES
    }


def datasets_directory(names: list[str], cache: Path, workdir: Path) -> Path:
    """Make a directory holding ``datasets/`` with the authors' data files for ``names``.

    The files come from dpreg's data manifest (``hessianmix/*`` entries, sha256-pinned,
    mirror first); the authors' ``GetDataset`` reads ``<cwd>/datasets/<file>``.
    """
    from dpreg.data.acquire import fetch
    from dpreg.data.manifest import load_manifest

    manifest = load_manifest()
    target = workdir / "datasets"
    target.mkdir(parents=True, exist_ok=True)
    mirror = default_data_mirror()
    for name in names:
        wanted = [
            e
            for e in manifest.values()
            if e.source == "hessianmix"
            and (e.filename.startswith(f"{name}_") or Path(e.filename).stem == name)
        ]
        if not wanted:
            raise SystemExit(f"--datasets: no data file of the authors' code for {name!r}")
        for entry in wanted:
            path = fetch(entry.id, dest_dir=cache, mirror=mirror, manifest=manifest)
            link = target / entry.filename
            if not link.exists():
                link.symlink_to(path.resolve())
    return workdir


# ------------------------------------------------------------------ the authors' script


@dataclass
class AuthorsScript:
    """The authors' experiment script split into the pieces this benchmark executes."""

    constants: list[ast.stmt]  # module-level assignments (T, k multipliers, lr, ...)
    dataset_setup: list[ast.stmt]  # per dataset, before the epsilon loop
    epsilon_setup: list[ast.stmt]  # per epsilon, before the trial loop
    sections: dict[str, list[ast.stmt]]  # trial-loop body by section banner

    def code(self, stmts: list[ast.stmt], label: str):
        """Compile statements (line numbers kept: tracebacks point into their file)."""
        return compile(ast.Module(body=stmts, type_ignores=[]), f"<authors:{label}>", "exec")


def _for_loop(body: list[ast.stmt], target: str) -> int:
    """Index of the ``for`` statement in ``body`` whose target names ``target``."""
    for i, stmt in enumerate(body):
        if isinstance(stmt, ast.For):
            names = {n.id for n in ast.walk(stmt.target) if isinstance(n, ast.Name)}
            if target in names:
                return i
    raise ValueError(f"the authors' script has no loop over {target!r} (changed upstream?)")


BANNER = re.compile(r"^\s*#{5,}\s*(?P<name>.+?)\s*#{5,}\s*$")


def parse_authors_script(source: str) -> AuthorsScript:
    """Split the experiment script into set-up pieces and per-method trial sections."""
    tree = ast.parse(source)
    lines = source.splitlines()
    constants = [s for s in tree.body if isinstance(s, ast.Assign)]
    outer = tree.body[_for_loop(tree.body, "dataset_type")]
    i_eps = _for_loop(outer.body, "eps")
    eps_loop = outer.body[i_eps]
    i_trial = _for_loop(eps_loop.body, "iter")
    trial_loop = eps_loop.body[i_trial]
    banners = [
        (number, m.group("name"))
        for number in range(trial_loop.lineno, trial_loop.end_lineno + 1)
        if (m := BANNER.match(lines[number - 1]))
    ]
    sections: dict[str, list[ast.stmt]] = {}
    for stmt in trial_loop.body:
        above = [name for number, name in banners if number < stmt.lineno]
        if above:
            sections.setdefault(above[-1], []).append(stmt)
    missing = [b for b, _ in SECTIONS.values() if b not in sections]
    if missing:
        raise ValueError(f"the authors' script has no section(s) {missing} (changed upstream?)")
    return AuthorsScript(constants, outer.body[:i_eps], eps_loop.body[:i_trial], sections)


def load_authors_module(path: Path):
    """Import the authors' utilities module from its verified file."""
    spec = importlib.util.spec_from_file_location("lev_authors_utils", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ------------------------------------------------------------------ one cell


@dataclass
class Cell:
    """Timings and train MSEs of one (dataset, epsilon, method) cell, both sides."""

    dataset: str
    epsilon: float
    method: str
    label: str
    their_seconds: list[float]
    our_seconds: list[float]
    their_mse: list[float]
    our_mse: list[float]
    their_calibration: float
    their_cpu: list[float] = field(default_factory=list)  # process CPU time per trial
    our_cpu: list[float] = field(default_factory=list)


def our_fit(method: str, kernel: str | None, ns: dict[str, Any], eps: float, trials: int, rng):
    """Fit dpreg's estimator on the authors' rows with the authors' settings."""
    from dpreg.estimators import get_estimator
    from dpreg.privacy.budgets import ApproxDP

    X, y, n = ns["X_train"], ns["y_train"], int(ns["n"])
    common = {
        "budget": ApproxDP(eps, 1.0 / n**2),
        "rng": rng,
        "trials": trials,
        "bound_X": 1.0,
        "bound_y": float(ns["C_max"]),
    }
    T = int(ns["iters_IHM"])
    if method == "ihm":
        extra = {"T": T, "k": int(ns["k_val_IHM"]), "gamma_method": "code"}
    elif method == "linear_mixing":
        extra = {"k": int(ns["k_val_LinMix"])}
    elif method == "adassp":
        # the code's downward shift sigma^2 of the noisy eigenvalue (the paper's
        # Algorithm 6 prints sigma sqrt(2 log(6/delta)); docs/lev2026.md)
        extra = {"mechanism": "analytic", "shift": "code"}
    else:
        extra = {"T": T, "step": float(ns["lr_dp_gd"]), "clip": float(ns["C_max"])}
        extra["kernel"] = kernel
    return get_estimator(method)(X, y, **common, **extra)


def train_mse(X, y, theta):
    """Train MSE of each row of ``theta`` (shape (trials, d))."""
    import numpy as np

    theta = np.atleast_2d(theta)
    return np.mean((y[None, :] - theta @ X.T) ** 2, axis=1)


def run_dataset(
    script: AuthorsScript,
    utils,
    dataset: str,
    epsilons: list[float],
    their_trials: int,
    our_trials: int,
    rounds: int,
    seed: int,
) -> tuple[list[Cell], tuple[int, int]]:
    """Every (epsilon, method) cell of one dataset, interleaving the two implementations.

    Returns the cells and the training shape (n, d).
    """
    import numpy as np
    from sklearn.linear_model import LinearRegression

    ns: dict[str, Any] = {k: v for k, v in vars(utils).items() if not k.startswith("__")}
    ns.update({"np": np, "LinearRegression": LinearRegression, "dataset_type": dataset})
    np.random.seed(seed)  # noqa: NPY002 (their code draws from the global state)
    with contextlib.redirect_stdout(io.StringIO()):
        exec(script.code(script.constants, "constants"), ns)
        exec(script.code(script.dataset_setup, "dataset"), ns)
    X, y = ns["X_train"], ns["y_train"]
    methods = [(m, None) for m in ("linear_mixing", "ihm", "adassp")]
    methods += [("dp_gd", "rows"), ("dp_gd", "fast")]
    codes = {m: script.code(script.sections[SECTIONS[m][0]], m) for m, _ in methods}
    cells = []
    for eps in epsilons:
        ns["eps"], ns["eps_idx"] = float(eps), 0
        t0 = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            exec(script.code(script.epsilon_setup, "epsilon"), ns)
        calibration = time.perf_counter() - t0
        for method, kernel in methods:
            label = method if kernel is None else f"{method} ({kernel})"
            cell = Cell(dataset, float(eps), method, label, [], [], [], [], calibration)
            rng = np.random.default_rng([seed, int(round(eps * 1e6)), len(cells)])
            our_fit(method, kernel, ns, eps, 2, rng)  # warm-up (imports, caches)
            for _ in range(rounds):
                start, cpu = time.perf_counter(), time.process_time()
                for _ in range(their_trials):
                    exec(codes[method], ns)
                    cell.their_mse.append(float(train_mse(X, y, ns[SECTIONS[method][1]])[0]))
                cell.their_seconds.append((time.perf_counter() - start) / their_trials)
                cell.their_cpu.append((time.process_time() - cpu) / their_trials)
                start, cpu = time.perf_counter(), time.process_time()
                fit = our_fit(method, kernel, ns, eps, our_trials, rng)
                cell.our_seconds.append((time.perf_counter() - start) / our_trials)
                cell.our_cpu.append((time.process_time() - cpu) / our_trials)
                cell.our_mse.extend(train_mse(X, y, fit.theta).tolist())
            cells.append(cell)
            print(
                f"{dataset:10s} eps={eps:<7.4g} {label:16s} theirs "
                f"{min(cell.their_seconds) * 1e3:9.3f} ms/trial, ours "
                f"{min(cell.our_seconds) * 1e3:8.4f} ms/trial, x"
                f"{min(cell.their_seconds) / min(cell.our_seconds):7.1f} (CPU x"
                f"{min(cell.their_cpu) / min(cell.our_cpu):7.1f})",
                flush=True,
            )
    return cells, (int(ns["n"]), int(ns["d"]))


# ------------------------------------------------------------------ tests and output


def holm_reject(pvalues: list[float], level: float) -> list[bool]:
    """Holm's step-down rejections at family-wise ``level``."""
    import numpy as np

    order = np.argsort(pvalues)
    m = len(pvalues)
    reject = [False] * m
    for rank, i in enumerate(order):
        if pvalues[i] > level / (m - rank):
            break
        reject[i] = True
    return reject


def rows_from(cells: list[Cell], n_d: dict[str, tuple[int, int]], level: float):
    """One output row per cell, with the two-sample tests and Holm's decision."""
    import numpy as np
    from scipy import stats

    rows = []
    for c in cells:
        theirs, ours = np.asarray(c.their_mse), np.asarray(c.our_mse)
        ks = stats.ks_2samp(theirs, ours).pvalue
        welch = stats.ttest_ind(theirs, ours, equal_var=False).pvalue
        t_mean, o_mean = float(theirs.mean()), float(ours.mean())
        rows.append(
            {
                "dataset": c.dataset,
                "n": n_d[c.dataset][0],
                "d": n_d[c.dataset][1],
                "epsilon": c.epsilon,
                "method": c.label,
                "their_trials": theirs.size,
                "our_trials": ours.size,
                "their_seconds_per_trial": min(c.their_seconds),
                "their_calibration_seconds": c.their_calibration,
                "our_seconds_per_trial": min(c.our_seconds),
                "speedup": min(c.their_seconds) / min(c.our_seconds),
                "their_cpu_seconds_per_trial": min(c.their_cpu),
                "our_cpu_seconds_per_trial": min(c.our_cpu),
                "speedup_cpu": min(c.their_cpu) / min(c.our_cpu),
                "their_mean_mse": t_mean,
                "our_mean_mse": o_mean,
                "relative_difference": (o_mean - t_mean) / t_mean,
                "ks_pvalue": float(ks) if math.isfinite(ks) else 1.0,
                "welch_pvalue": float(welch) if math.isfinite(welch) else 1.0,
            }
        )
    pvals = [min(r["ks_pvalue"], r["welch_pvalue"]) for r in rows]
    # two tests per cell: Bonferroni inside the cell, Holm over cells
    for r, rejected in zip(rows, holm_reject([min(1.0, 2 * p) for p in pvals], level), strict=True):
        r["laws_agree"] = not rejected
    return rows


def summary(rows: list[dict[str, Any]]) -> list[str]:
    """Per method: the smallest, median and largest speedup over the cells (wall, CPU)."""
    import numpy as np

    out = [
        "| method | cells | min speedup | median speedup | max speedup "
        "| min speedup (CPU) | median speedup (CPU) | max speedup (CPU) | laws agree |"
    ]
    out.append("|---|---|---|---|---|---|---|---|---|")
    for method in dict.fromkeys(r["method"] for r in rows):
        s = np.array([r["speedup"] for r in rows if r["method"] == method])
        c = np.array([r["speedup_cpu"] for r in rows if r["method"] == method])
        agree = sum(r["laws_agree"] for r in rows if r["method"] == method)
        out.append(
            f"| {method} | {s.size} | {s.min():.1f} | {np.median(s):.1f} | {s.max():.1f} "
            f"| {c.min():.1f} | {np.median(c):.1f} | {c.max():.1f} | {agree}/{s.size} |"
        )
    return out


def markdown_table(rows: list[dict[str, Any]]) -> str:
    """Render result rows as a markdown table (floats to 4 significant digits)."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for row in rows:
        cells = [f"{row[c]:.4g}" if isinstance(row[c], float) else str(row[c]) for c in COLUMNS]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def write_outputs(out: Path, rows, facts, pinning: str, args, elapsed: float) -> None:
    """``anchors.csv`` and ``anchors.md``."""
    import pandas as pd

    out.mkdir(parents=True, exist_ok=True)
    frame = pd.DataFrame(rows, columns=COLUMNS)
    frame.to_csv(out / "anchors.csv", index=False)
    table = markdown_table(rows)
    text = [
        "# dpreg against the authors' code (Lev et al. 2026)"
        + (" (--quick)" if args.quick else ""),
        "",
        f"The authors' reference code ({AUTHORS_REPO} at {AUTHORS_COMMIT[:7]}, sha256-"
        "checked, executed section by section from their experiment script, never copied) "
        "and dpreg's estimators on the same training rows (their `GetDataset`), delta = "
        "1/n^2, their T and k, one process pinned with "
        f"`{pinning}`, one BLAS thread, timings interleaved over {args.rounds} rounds "
        "(minimum per trial of the wall time and, separately, of the process CPU time: on a "
        "shared core the CPU time is the better estimate of the cost, and the wall time of "
        f"a short call is the more exposed to pre-emption). Theirs: {args.their_trials} "
        "trials per round, one trial at "
        f"a time as their loop; ours: {args.our_trials} vectorised trials per call. "
        "`their_calibration_seconds` is their per-epsilon noise calibration (once per "
        "epsilon for all trials, not in their per-trial time); ours is inside every call. "
        "Laws: train MSE per trial; Kolmogorov-Smirnov and Welch p-values per cell; "
        "`laws_agree` is False where a cell is rejected at the Holm-adjusted 1% level. "
        f"Produced by `benchmarks/anchors.py`; total wall time {elapsed:.0f} s.",
        "",
        "## Summary",
        "",
        *summary(rows),
        "",
        "## Cells",
        "",
        table,
        "",
        "## Machine",
        "",
        facts_markdown(facts),
        "",
    ]
    (out / "anchors.md").write_text("\n".join(text))


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", nargs="+", default=None, help="the authors' names")
    parser.add_argument("--epsilons", nargs="+", type=float, default=None)
    parser.add_argument("--their-trials", type=int, default=None, help="per round")
    parser.add_argument("--our-trials", type=int, default=None, help="per call")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (>= 1)")
    parser.add_argument("--seed", type=int, default=20261126)
    parser.add_argument("--quick", action="store_true", help="one small dataset, few trials")
    parser.add_argument("--anchors", type=Path, default=None, help="anchors directory")
    parser.add_argument("--out", type=Path, default=None, help="output directory")
    parser.add_argument("--core", type=int, default=0, help="CPU to pin to (default 0)")
    parser.add_argument("--no-pin", action="store_true", help="do not pin (not recommended)")
    args = parser.parse_args(argv)
    if args.quick:
        args.datasets = args.datasets or ["concreteslump"]
        args.epsilons = args.epsilons or [1.0]
        args.their_trials = args.their_trials or 5
        args.our_trials = args.our_trials or 20
        args.rounds = min(args.rounds, 2)
    args.datasets = args.datasets or list(LARGE_DATASETS)
    args.epsilons = args.epsilons or [0.1, 1.0, 10.0]
    args.their_trials = args.their_trials or 20
    args.our_trials = args.our_trials or 500
    for name in ("their_trials", "our_trials", "rounds"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1")
    if any(not (math.isfinite(e) and e > 0) for e in args.epsilons):
        parser.error("--epsilons must be finite and > 0")
    pinning = "not pinned (--no-pin)" if args.no_pin else pin_to_one_core(args.core)
    out = args.out
    if out is None:
        out = Path(tempfile.mkdtemp(prefix="dpreg_anchors_")) if args.quick else DEFAULT_OUT
    anchors = args.anchors or default_anchors_dir()
    cache = REPO / "resources" / "downloads"
    paths = fetch_authors_code(anchors, cache)
    script = parse_authors_script(paths["IterativeHessianMixing_main.py"].read_text())

    load_start = load_average()
    t0 = time.perf_counter()
    cells: list[Cell] = []
    n_d: dict[str, tuple[int, int]] = {}
    with tempfile.TemporaryDirectory(prefix="dpreg_anchors_data_") as tmp:
        workdir = datasets_directory(args.datasets, cache, Path(tmp))
        previous = Path.cwd()
        os.chdir(workdir)  # their GetDataset reads <cwd>/datasets/
        try:
            utils = load_authors_module(paths["utils_Hessian_mixing.py"])
            for j, dataset in enumerate(args.datasets):
                found, n_d[dataset] = run_dataset(
                    script,
                    utils,
                    dataset,
                    args.epsilons,
                    args.their_trials,
                    args.our_trials,
                    args.rounds,
                    args.seed + j,
                )
                cells += found
        finally:
            os.chdir(previous)
    elapsed = time.perf_counter() - t0
    facts = machine_facts()
    facts["load_average_start"] = load_start
    rows = rows_from(cells, n_d, level=0.01)
    write_outputs(out, rows, facts, pinning, args, elapsed)
    print(f"wrote {out / 'anchors.csv'} and {out / 'anchors.md'} ({elapsed:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
