"""Wall time of the smoke run, of its no-op rerun, and the per-job resource peaks.

Run from the repository root::

    .venv/bin/python benchmarks/workflow.py                  # smoke run in a temp copy
    .venv/bin/python benchmarks/workflow.py --workdir /tmp/paper --name paper_jobs

Default mode copies ``Snakefile``, ``workflow/``, ``config/`` and ``data/`` into a
temporary directory and times, with ``time.perf_counter`` around the whole process,

(a) the smoke run ``snakemake --cores 2 --configfile config/smoke.yaml`` (wall seconds,
    including Snakemake's own start-up and DAG building);
(b) the same command again, which must answer "Nothing to be done" (the no-op rerun);

then reads the per-job benchmark TSVs Snakemake wrote (``benchmarks/**/*.tsv`` in that
directory: rules with a ``benchmark:`` directive) and reports, per rule and overall, the
number of jobs, their summed and largest wall time, the slowest job, the peak resident
memory (``max_rss``, MB) and the job that reached it (:mod:`dpreg.benchmarks`).
``--workdir DIR`` only reads the TSVs of an existing run (e.g. a paper-scale one).

Data come from ``$DPREG_DATA_MIRROR`` when set, else from ``../shared/data/mirror`` next
to the repository when it exists (as the test suite does), else from the network.
Outputs ``benchmarks/results/<name>.csv`` (one row per measure), ``<name>_rules.csv``
(per rule) and ``<name>.md`` (both, the slowest and largest jobs, machine facts).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _machine import facts_markdown, load_average, machine_facts

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DEFAULT_OUT = HERE / "results"
COPY = ("Snakefile", "workflow", "config", "data")
SHARED_MIRROR = REPO.parent / "shared" / "data" / "mirror"
NOTHING_TO_DO = "Nothing to be done"
SUMMARY_COLUMNS = ["measure", "value", "unit", "note"]


def copy_repo(dest: Path) -> Path:
    """Copy the workflow's inputs (:data:`COPY`) of this repository into ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in COPY:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
        elif src.is_file():
            shutil.copy2(src, dest / name)
    return dest


def data_environment() -> tuple[dict[str, str], str]:
    """Return the environment for Snakemake and where its data come from."""
    env = dict(os.environ)
    mirror = env.get("DPREG_DATA_MIRROR")
    if not mirror and SHARED_MIRROR.is_dir():
        env["DPREG_DATA_MIRROR"] = mirror = str(SHARED_MIRROR)
    return env, (f"mirror {mirror}" if mirror else "network (no DPREG_DATA_MIRROR)")


def timed_snakemake(workdir: Path, args: list[str], env: dict[str, str], log: Path):
    """Run Snakemake in ``workdir``; return (wall seconds, combined output)."""
    snakemake = str(Path(sys.executable).parent / "snakemake")
    start = time.perf_counter()
    proc = subprocess.run(
        [snakemake, *args], cwd=workdir, env=env, capture_output=True, text=True, check=False
    )
    seconds = time.perf_counter() - start
    output = proc.stdout + proc.stderr
    log.write_text(output)
    if proc.returncode != 0:
        tail = "\n".join(output.splitlines()[-40:])
        raise RuntimeError(f"snakemake {' '.join(args)} failed (log {log}):\n{tail}")
    return seconds, output


def steps_done(output: str) -> int | None:
    """Return Y of Snakemake's last "X of Y steps (100%) done" line (None if absent)."""
    found = re.findall(r"(\d+) of (\d+) steps \(\d+%\) done", output)
    return int(found[-1][1]) if found else None


def benchmark_rules(workflow_dir: Path) -> list[tuple[str, str]]:
    """Return (benchmark path prefix, rule) for every rule with a ``benchmark:`` directive.

    The prefix is the path up to its first wildcard, e.g.
    ``("benchmarks/runs/", "run_chunk")``; longest prefixes first.
    """
    pairs = []
    for smk in sorted((workflow_dir / "rules").glob("*.smk")) + [workflow_dir / "Snakefile"]:
        if not smk.is_file():
            continue
        rule = None
        lines = smk.read_text().splitlines()
        for i, line in enumerate(lines):
            head = re.match(r"\s*(?:rule|checkpoint)\s+(\w+)\s*:", line)
            if head:
                rule = head.group(1)
            if rule and re.match(r"\s+benchmark\s*:", line):
                following = " ".join(lines[i : i + 3])
                path = re.search(r"benchmark\s*:\s*(?:repeat\()?\s*[\"']([^\"']+)", following)
                if path:
                    pairs.append((path.group(1).split("{")[0], rule))
    return sorted(pairs, key=lambda pair: -len(pair[0]))


def rule_namer(run_dir: Path, prefixes: list[tuple[str, str]]):
    """Return path -> rule, matching the path (relative to ``run_dir``) to the prefixes."""
    from dpreg.benchmarks import benchmark_group

    def rule_of(path: Path) -> str:
        rel = path.resolve().relative_to(run_dir.resolve()).as_posix()
        for prefix, rule in prefixes:
            if rel.startswith(prefix):
                return rule
        return benchmark_group(path)

    return rule_of


def measure(name: str, value: object, unit: str = "", note: object = "") -> dict[str, object]:
    """Return one row of the summary table."""
    return {"measure": name, "value": value, "unit": unit, "note": note}


def smoke_measures(run_dir: Path, snake_args: list[str], command: str) -> list[dict]:
    """Time the smoke run and its no-op rerun in ``run_dir``; return summary rows."""
    env, source = data_environment()
    print(f"smoke run in {run_dir} (data: {source}) ...", flush=True)
    smoke_s, smoke_out = timed_snakemake(run_dir, snake_args, env, run_dir / "smoke.log")
    print(f"smoke run: {smoke_s:.1f} s; no-op rerun ...", flush=True)
    noop_s, noop_out = timed_snakemake(run_dir, snake_args, env, run_dir / "noop.log")
    nothing = NOTHING_TO_DO in noop_out
    print(f"no-op rerun: {noop_s:.1f} s ({'nothing to be done' if nothing else 'RAN JOBS'})")
    return [
        measure("smoke_wall_s", smoke_s, "s", command),
        measure("smoke_jobs", steps_done(smoke_out), "jobs", "Snakemake's 'steps done' count"),
        measure("noop_wall_s", noop_s, "s", "same command"),
        measure("noop_nothing_to_be_done", nothing, "bool", f"'{NOTHING_TO_DO}' in output"),
        measure("data_source", source),
    ]


def job_measures(jobs, rules, prefixes: list[tuple[str, str]]) -> list[dict]:
    """Summary rows from the job table (:func:`dpreg.benchmarks.job_benchmarks`)."""
    declared = ", ".join(f"{rule} ({prefix}...)" for prefix, rule in prefixes) or "none"
    rows = [
        measure("benchmarked_rules", declared, "", "rules with a benchmark: directive"),
        measure("benchmarked_jobs", len(jobs), "jobs", "benchmark TSVs found"),
    ]
    total = rules[rules["rule"] == "all rules"]
    if len(total):
        t = total.iloc[0]
        rows += [
            measure("job_seconds_total", t["total_s"], "s", "sum of the jobs' wall times"),
            measure("slowest_job_s", t["max_s"], "s", t["slowest_job"]),
            measure("peak_max_rss_mb", t["max_rss_mb"], "MB", t["largest_job"]),
        ]
    cpu = jobs["cpu_time"]
    if cpu.notna().any():
        rows += [
            measure("job_cpu_seconds_total", float(cpu.sum()), "s", "sum of the jobs' CPU time"),
            measure("job_cpu_seconds_min", float(cpu.min()), "s", "cheapest job: ~start-up cost"),
            measure("job_cpu_seconds_median", float(cpu.median()), "s"),
        ]
    return rows


def fmt(value, digits: int = 4) -> str:
    """Format a number for the markdown tables (other values as text)."""
    if isinstance(value, float):
        return "NA" if value != value else f"{value:.{digits}g}"
    return "NA" if value is None else str(value)


def markdown(frame, columns: list[str]) -> str:
    """Render ``frame[columns]`` as a markdown table."""
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for _, row in frame[columns].iterrows():
        lines.append("| " + " | ".join(fmt(row[c]).replace("|", "/") for c in columns) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", type=Path, default=None, help="read an existing run only")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--configfile", default="config/smoke.yaml")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output directory")
    parser.add_argument("--name", default="workflow", help="output file stem")
    parser.add_argument("--keep", action="store_true", help="keep the temporary run dir")
    parser.add_argument("--top", type=int, default=10, help="jobs listed in the markdown")
    args = parser.parse_args(argv)

    import pandas as pd

    from dpreg.benchmarks import job_benchmarks, summarise_job_benchmarks

    load_start = load_average()
    summary: list[dict[str, object]] = []
    snake_args = ["--cores", str(args.cores), "--configfile", args.configfile]
    command = "snakemake " + " ".join(snake_args)
    if args.workdir is None:
        run_dir = copy_repo(Path(tempfile.mkdtemp(prefix="dpreg_wfbench_")) / "repo")
        summary += smoke_measures(run_dir, snake_args, command)
        workflow_dir = run_dir / "workflow"
    else:
        run_dir = args.workdir
        own = run_dir / "workflow"
        workflow_dir = own if own.is_dir() else REPO / "workflow"
        command = f"read {run_dir}"
    prefixes = benchmark_rules(workflow_dir)
    paths = sorted((run_dir / "benchmarks").rglob("*.tsv"))
    jobs = job_benchmarks(paths, rule_of=rule_namer(run_dir, prefixes))
    rules = summarise_job_benchmarks(jobs)
    summary += job_measures(jobs, rules, prefixes)
    load_end = load_average()
    summary += [
        measure("load_1min_start", load_start, "", "shared host"),
        measure("load_1min_end", load_end),
    ]
    facts = {**machine_facts(), "load_1min_start": f"{load_start:.2f}",
             "load_1min_end": f"{load_end:.2f}"}  # fmt: skip

    args.out.mkdir(parents=True, exist_ok=True)
    summary_frame = pd.DataFrame(summary, columns=SUMMARY_COLUMNS)
    summary_frame.to_csv(args.out / f"{args.name}.csv", index=False)
    rules.to_csv(args.out / f"{args.name}_rules.csv", index=False)
    slowest = jobs.sort_values(["s", "job"], ascending=[False, True]).head(args.top)
    largest = jobs.sort_values(["max_rss_mb", "job"], ascending=[False, True]).head(args.top)
    job_cols = ["rule", "job", "s", "max_rss_mb", "cpu_time"]
    text = [
        f"# Workflow benchmark: {command}",
        "",
        "Wall times of whole Snakemake processes (`time.perf_counter`); per-job seconds and "
        "peak resident memory (MB) from Snakemake's `benchmark:` files. Only rules with a "
        "`benchmark:` directive are covered. Produced by `benchmarks/workflow.py`.",
        "",
        markdown(summary_frame, SUMMARY_COLUMNS),
        "",
        "## Per rule",
        "",
        markdown(rules, list(rules.columns)),
        "",
        f"## Slowest {len(slowest)} jobs",
        "",
        markdown(slowest, job_cols),
        "",
        f"## Largest {len(largest)} jobs (max_rss)",
        "",
        markdown(largest, job_cols),
        "",
        "## Machine",
        "",
        facts_markdown(facts),
        "",
    ]
    (args.out / f"{args.name}.md").write_text("\n".join(text))
    print(markdown(rules, list(rules.columns)))
    print(f"wrote {args.out / args.name}.csv, {args.name}_rules.csv and {args.name}.md")
    if args.workdir is None and not args.keep:
        shutil.rmtree(run_dir.parent, ignore_errors=True)
    elif args.workdir is None:
        print(f"kept {run_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
