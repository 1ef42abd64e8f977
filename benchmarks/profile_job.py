"""One workflow job in one process, as ``run_chunk`` runs it: its CPU, wall time and memory.

Run from the repository root (after a run has prepared the job's data tables)::

    .venv/bin/python benchmarks/profile_job.py varshney_e3_dscaling 8
    .venv/bin/python benchmarks/profile_job.py benchmark 3 --profile /tmp/b3.prof
    .venv/bin/python benchmarks/profile_job.py liang_fig3b 0 --out /tmp/rows.parquet
    .venv/bin/python benchmarks/profile_job.py cc_table1 0 --config config/smoke.yaml

The job's chunks (``dpreg.config.find_job``: the same cells, seed blocks and trial
ranges as the workflow's ``run_chunk`` job ``results/runs/<study>/job~<job>.parquet``)
are run through :func:`dpreg.experiments.studies.run_chunk` with one BLAS thread, as the
workflow runs them (``threads: 1``). Printed on one line: the process's CPU seconds
(user + system, imports included), wall seconds and peak resident memory (MB), and the
number of rows. ``--profile FILE`` runs the chunks under :mod:`cProfile` (read the file
with :mod:`pstats`); ``--out FILE`` writes the per-trial rows, e.g. to check that a change
keeps them byte for byte (``pandas.DataFrame.equals`` against the same command on the
parent commit). The tables are read from ``--data-root`` (default ``.``:
``resources/data/<dataset>.parquet`` and, for a kind with test rows, ``.test.parquet``).

How the speed passes of issue 18 measured jobs (docs/scaling.md, "Cost of a paper-scale
run"): the parent commit (``git archive`` into a folder) and the change side by side or
interleaved, ``PYTHONPATH`` pointing at each one's ``src``, the minimum of two or more
rounds, the host's load stated.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # before numpy is imported: one BLAS thread, as the jobs

import argparse  # noqa: E402
import cProfile  # noqa: E402
import resource  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main(argv: list[str] | None = None) -> int:
    """Run the job; print its cost; return the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("study", help="a study of the config (e.g. varshney_e3_dscaling)")
    parser.add_argument("job", type=int, help="the job's number (the NNN of job~NNN)")
    parser.add_argument("--config", default="config/config.yaml", help="the config file")
    parser.add_argument("--data-root", default=".", help="folder holding resources/data/")
    parser.add_argument("--profile", metavar="FILE", help="write a cProfile of the chunks")
    parser.add_argument("--out", metavar="FILE", help="write the per-trial rows (parquet)")
    args = parser.parse_args(argv)

    # The process set up as run_chunk's (workflow/scripts/run_chunk.py): numpy's tool
    # modules deferred, freed memory kept for reuse (docs/scaling.md).
    from dpreg._allocator import keep_freed_memory
    from dpreg._lazy import defer_numpy_tool_modules

    defer_numpy_tool_modules()
    keep_freed_memory()

    import yaml

    from dpreg.config import check_no_duplicate_keys, find_job
    from dpreg.experiments.kinds import get_kind
    from dpreg.experiments.studies import run_chunk
    from dpreg.io import read_prepared_table

    config_path = Path(args.config)
    if not config_path.is_file():
        parser.error(f"--config: no such file: {config_path}")
    check_no_duplicate_keys([config_path])
    config = yaml.safe_load(config_path.read_text())
    if args.study not in config.get("studies", {}):
        parser.error(f"study {args.study!r} is not in {config_path}")
    kind = config["studies"][args.study]["kind"]
    uses_test_rows = get_kind(kind).uses_test_rows
    try:
        cells = find_job(config, args.study, args.job)
    except ValueError as err:
        parser.error(f"job: {err}")
    data = Path(args.data_root) / "resources" / "data"

    def table_path(cell, suffix: str) -> Path | None:
        name = cell.params(config).get("dataset")
        if name is None or (suffix == ".test.parquet" and not uses_test_rows):
            return None
        path = data / f"{name}{suffix}"
        if not path.is_file():
            parser.error(f"{path} is missing: run the workflow's data jobs first ({path.name})")
        return path

    needed = [(table_path(c, ".parquet"), table_path(c, ".test.parquet")) for c in cells]
    tables: dict[Path, object] = {}

    def table(path: Path | None):
        if path is None:
            return None
        if path not in tables:
            if len(tables) >= 2:  # as run_chunk.py: a training table and its held-out rows
                tables.clear()
            tables[path] = read_prepared_table(path)
        return tables[path]

    import pandas as pd

    def run_all() -> pd.DataFrame:
        frames = [
            run_chunk(
                kind,
                cell.params(config),
                blocks=cell.seeded_blocks(config["seed"]),
                frame=table(train),
                test_frame=table(test),
            )
            for cell, (train, test) in zip(cells, needed, strict=True)
        ]
        return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]

    wall = time.perf_counter()
    if args.profile:
        profiler = cProfile.Profile()
        rows = profiler.runcall(run_all)
        profiler.dump_stats(args.profile)
    else:
        rows = run_all()
    wall = time.perf_counter() - wall
    if args.out:
        rows.to_parquet(args.out)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"{args.study} job {args.job}: CPU {_cpu_seconds():.2f} s (process, imports included), "
        f"wall {wall:.2f} s (chunks), peak RSS {peak_mb:.0f} MB, rows {len(rows)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
