"""Aggregate Snakemake's per-job benchmark files into per-rule tables (issue 8).

A rule with ``benchmark: "benchmarks/<group>/{wildcards}.tsv"`` makes Snakemake write one
tab-separated file per job, header

``s  h:m:s  max_rss  max_vms  max_uss  max_pss  io_in  io_out  mean_load  cpu_time``

(wall seconds, then memory in MB, I/O in MB, load in percent, CPU seconds), one row per
repeat (``repeat("...", k)``), with ``NA`` for what it could not sample (jobs shorter than
its sampling interval) and ``-`` for ``None``. The extended format adds ``rule_name``
and other columns. :func:`job_benchmark_table` turns any set of such files into one row
per rule: number of jobs, total and largest wall time, the slowest job, peak resident
memory (``max_rss``) and the job that reached it. These are measurements of a run on
some machine, for reports, never inputs to a result.

The workflow's run jobs write such a file themselves (:func:`write_process_benchmark`,
one record measured by the process at its end) instead of using the directive, whose
samples miss what happens between them (docs/scaling.md).
"""

from __future__ import annotations

import datetime
import math
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

import pandas as pd

#: Header Snakemake writes (``snakemake.benchmark.BenchmarkRecord.get_header``).
SNAKEMAKE_COLUMNS: tuple[str, ...] = (
    "s",
    "h:m:s",
    "max_rss",
    "max_vms",
    "max_uss",
    "max_pss",
    "io_in",
    "io_out",
    "mean_load",
    "cpu_time",
)
#: Columns read as numbers (``NA``, ``-`` and empty cells become NaN).
NUMERIC_COLUMNS: tuple[str, ...] = tuple(c for c in SNAKEMAKE_COLUMNS if c != "h:m:s")
MISSING_VALUES: tuple[str, ...] = ("NA", "-", "")
#: Columns of :func:`job_benchmarks` and :func:`job_benchmark_table`.
JOB_COLUMNS: list[str] = ["rule", "job", "s", "max_rss_mb", "cpu_time", "records", "path"]
TABLE_COLUMNS: list[str] = [
    "rule",
    "jobs",
    "total_s",
    "max_s",
    "slowest_job",
    "max_rss_mb",
    "largest_job",
]
#: ``rule`` value of the row that summarises every job.
ALL_RULES = "all rules"

PathLike = str | Path


def read_benchmark_file(path: PathLike) -> pd.DataFrame:
    """Read one Snakemake benchmark TSV; numeric columns as floats (missing: NaN).

    Parameters
    ----------
    path : str or Path
        A file written by a rule's ``benchmark:`` directive.

    Returns
    -------
    DataFrame
        One row per record (repeat), the file's columns; :data:`NUMERIC_COLUMNS` as
        float64.

    Raises
    ------
    ValueError
        The file has no header with an ``s`` column, no records, or a value that is
        neither a number nor one of :data:`MISSING_VALUES`.
    """
    path = Path(path)
    lines = [line for line in path.read_text().splitlines() if line.strip()]
    if not lines:
        raise ValueError(f"benchmark file {path} is empty; expected Snakemake's TSV header")
    header = lines[0].split("\t")
    if "s" not in header:
        raise ValueError(
            f"benchmark file {path} has header {header!r}; expected Snakemake's columns "
            f"{list(SNAKEMAKE_COLUMNS)!r}"
        )
    if len(lines) == 1:
        raise ValueError(f"benchmark file {path} has a header but no records")
    records = []
    for number, line in enumerate(lines[1:], start=2):
        cells = line.split("\t")
        if len(cells) != len(header):
            raise ValueError(
                f"benchmark file {path}, line {number}: {len(cells)} fields, header has "
                f"{len(header)}"
            )
        records.append(dict(zip(header, cells, strict=True)))
    frame = pd.DataFrame.from_records(records, columns=header)
    for column in NUMERIC_COLUMNS:
        if column in frame:
            frame[column] = [_number(v, path, column) for v in frame[column]]
    return frame


def _number(value: str, path: Path, column: str) -> float:
    text = value.strip()
    if text in MISSING_VALUES:
        return math.nan
    try:
        return float(text)
    except ValueError:
        raise ValueError(
            f"benchmark file {path}: column {column!r} holds {value!r}, neither a number nor "
            f"one of {MISSING_VALUES!r}"
        ) from None


def benchmark_group(path: PathLike) -> str:
    """Return the folder right under the last ``benchmarks`` folder of ``path``.

    ``results/../benchmarks/runs/study/job~000.tsv`` -> ``"runs"``; a path with
    no ``benchmarks`` folder (or a file directly in it) gives its parent's name.
    """
    parts = Path(path).parts
    hits = [i for i, part in enumerate(parts[:-1]) if part == "benchmarks"]
    if hits and hits[-1] + 2 < len(parts):
        return parts[hits[-1] + 1]
    return Path(path).parent.name


def job_name(path: PathLike) -> str:
    """Return the job's name: its path below the group folder, without ``.tsv``.

    ``benchmarks/runs/study/job~000.tsv`` -> ``"study/job~000"``.
    """
    path = Path(path)
    parts = path.parts
    hits = [i for i, part in enumerate(parts[:-1]) if part == "benchmarks"]
    below = parts[hits[-1] + 2 :] if hits and hits[-1] + 2 < len(parts) else parts[-1:]
    name = "/".join(below)
    return name[: -len(".tsv")] if name.endswith(".tsv") else name


def _labelled_paths(
    paths: Iterable[PathLike] | Mapping[str, Iterable[PathLike]],
    rule_of: Callable[[Path], str] | None,
) -> list[tuple[str | None, Path]]:
    if isinstance(paths, str | Path):
        raise ValueError("paths must be a list of benchmark files (or rule -> files), not one")
    if isinstance(paths, Mapping):
        return [(str(rule), Path(p)) for rule, group in paths.items() for p in group]
    return [(rule_of(Path(p)) if rule_of else None, Path(p)) for p in paths]


def job_benchmarks(
    paths: Iterable[PathLike] | Mapping[str, Iterable[PathLike]],
    *,
    rule_of: Callable[[Path], str] | None = None,
) -> pd.DataFrame:
    """Read benchmark files into one row per job.

    Parameters
    ----------
    paths : iterable of paths, or mapping rule -> iterable of paths
        Benchmark TSVs, one per job.
    rule_of : callable, optional
        Path -> rule name (ignored for a mapping). Default: the file's ``rule_name``
        column (extended format) if present, else :func:`benchmark_group` (the folder
        under ``benchmarks/``, e.g. ``runs``).

    Returns
    -------
    DataFrame
        Columns :data:`JOB_COLUMNS`, sorted by rule and job: ``s`` and ``max_rss_mb``
        (MB, as Snakemake reports it) and ``cpu_time`` are the maxima over the file's
        records (repeats); ``records`` is their number.
    """
    rows = []
    for rule, path in _labelled_paths(paths, rule_of):
        frame = read_benchmark_file(path)
        if rule is None:
            names = frame["rule_name"].dropna().unique() if "rule_name" in frame else []
            rule = str(names[0]) if len(names) == 1 else benchmark_group(path)
        rows.append(
            {
                "rule": rule,
                "job": job_name(path),
                "s": _max(frame["s"]),
                "max_rss_mb": _max(frame.get("max_rss")),
                "cpu_time": _max(frame.get("cpu_time")),
                "records": len(frame),
                "path": str(path),
            }
        )
    jobs = pd.DataFrame(rows, columns=JOB_COLUMNS)
    return jobs.sort_values(["rule", "job"], kind="stable").reset_index(drop=True)


def _max(values: pd.Series | None) -> float:
    if values is None:
        return math.nan
    finite = values.dropna()
    return float(finite.max()) if len(finite) else math.nan


def summarise_job_benchmarks(jobs: pd.DataFrame, *, total: bool = True) -> pd.DataFrame:
    """Aggregate :func:`job_benchmarks` rows per rule (columns :data:`TABLE_COLUMNS`).

    ``max_rss_mb`` and ``largest_job`` are missing (NaN) for a rule none of whose jobs
    had its memory sampled; ties go to the first job in name order. ``total`` appends a
    row :data:`ALL_RULES` over every job (job names then prefixed ``rule:``).
    """
    rows = [_summary(rule, group) for rule, group in jobs.groupby("rule", sort=True)]
    if total and len(jobs):
        everything = jobs.assign(job=jobs["rule"] + ":" + jobs["job"])
        rows.append(_summary(ALL_RULES, everything))
    return pd.DataFrame(rows, columns=TABLE_COLUMNS)


def _summary(rule: str, group: pd.DataFrame) -> dict[str, object]:
    group = group.sort_values("job", kind="stable")
    seconds = group["s"]
    rss = group["max_rss_mb"]
    has_s, has_rss = seconds.notna().any(), rss.notna().any()
    return {
        "rule": rule,
        "jobs": len(group),
        "total_s": float(seconds.sum(min_count=1)),
        "max_s": float(seconds.max()) if has_s else math.nan,
        "slowest_job": group["job"].loc[seconds.idxmax()] if has_s else None,
        "max_rss_mb": float(rss.max()) if has_rss else math.nan,
        "largest_job": group["job"].loc[rss.idxmax()] if has_rss else None,
    }


def job_benchmark_table(
    paths: Iterable[PathLike] | Mapping[str, Iterable[PathLike]],
    *,
    rule_of: Callable[[Path], str] | None = None,
    total: bool = True,
) -> pd.DataFrame:
    """Per-rule table of a run's job benchmark files.

    For a workflow rule: ``job_benchmark_table(snakemake.input)`` with the TSVs as
    input (e.g. collected with ``glob_wildcards`` or from the rules' ``benchmark``
    paths), written as CSV by the caller.

    Parameters
    ----------
    paths : iterable of paths, or mapping rule -> iterable of paths
        Snakemake benchmark TSVs, one per job.
    rule_of : callable, optional
        Path -> rule name; see :func:`job_benchmarks`.
    total : bool, default True
        Append the :data:`ALL_RULES` row.

    Returns
    -------
    DataFrame
        Columns ``rule, jobs, total_s, max_s, slowest_job, max_rss_mb, largest_job``:
        wall seconds summed and maximal over the rule's jobs, the slowest job's name,
        peak resident memory in MB and the job that reached it. Rules in name order.

    Raises
    ------
    ValueError
        A file that is not a Snakemake benchmark TSV (see :func:`read_benchmark_file`).
    """
    return summarise_job_benchmarks(job_benchmarks(paths, rule_of=rule_of), total=total)


def _process_seconds() -> float:
    """Wall seconds since this process started (Linux ``/proc``), else NaN."""
    try:
        with open("/proc/self/stat") as fh:  # field 22: start time, clock ticks after boot
            started = int(fh.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as fh:
            uptime = float(fh.read().split()[0])
    except (OSError, ValueError, IndexError):
        return math.nan
    return max(uptime - started / os.sysconf("SC_CLK_TCK"), 0.0)


def _io_megabytes() -> tuple[float, float]:
    """Bytes this process read from and wrote to storage, in MB (``/proc/self/io``)."""
    try:
        with open("/proc/self/io") as fh:
            fields = dict(line.split(": ") for line in fh.read().splitlines())
        return int(fields["read_bytes"]) / 2**20, int(fields["write_bytes"]) / 2**20
    except (OSError, ValueError, KeyError):
        return math.nan, math.nan


def process_usage() -> dict[str, float | str]:
    """Return this process's usage so far, as a record of Snakemake's benchmark file.

    Measured by the process itself, at the end of a workflow job, instead of sampled by
    Snakemake's ``benchmark:`` directive. The directive polls the job every 0.5 s for 15 s,
    then every 30 s, so it misses what happens between samples (a 1 s job was recorded with
    the 6 MB and 0.2 s of CPU of its interpreter's first instants; a 73 s job with the CPU
    seconds of its last sample, 44 s), and each sample reads the job's memory map in the
    main Snakemake process, about 0.15 s of CPU per long job (docs/scaling.md). Here:
    ``s`` the wall seconds since the process started, ``max_rss`` the peak resident memory
    (``getrusage``'s ``ru_maxrss``, MiB), ``io_in``/``io_out`` from ``/proc/self/io`` (MiB),
    ``cpu_time`` the user + system seconds of the process and its waited-for children, and
    ``mean_load`` = 100 ``cpu_time`` / ``s``. ``max_vms``, ``max_uss`` and ``max_pss``
    are not measured (``NA``).

    Examples
    --------
    >>> usage = process_usage()
    >>> sorted(usage) == sorted(SNAKEMAKE_COLUMNS), usage["max_rss"] > 1, usage["max_uss"]
    (True, True, 'NA')
    """
    import resource  # POSIX only: imported where it is used

    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
    seconds = _process_seconds()
    io_in, io_out = _io_megabytes()
    whole = int(seconds) if math.isfinite(seconds) else 0
    return {
        "s": seconds,
        "h:m:s": str(datetime.timedelta(seconds=whole)),
        "max_rss": max(own.ru_maxrss, children.ru_maxrss) / 1024,  # KiB on Linux
        "max_vms": "NA",
        "max_uss": "NA",
        "max_pss": "NA",
        "io_in": io_in,
        "io_out": io_out,
        "mean_load": 100.0 * cpu / seconds if seconds > 0 else math.nan,
        "cpu_time": cpu,
    }


def write_process_benchmark(path: PathLike) -> Path:
    """Write :func:`process_usage` to ``path`` as a Snakemake benchmark TSV (one record).

    A workflow job calls this once its outputs are written (``workflow/scripts/run_chunk.py``);
    :func:`read_benchmark_file` and :func:`job_benchmark_table` read the file as they read
    Snakemake's own. Written to a temporary file and renamed into place.

    Examples
    --------
    >>> import tempfile
    >>> path = write_process_benchmark(Path(tempfile.mkdtemp()) / "job.tsv")
    >>> frame = read_benchmark_file(path)
    >>> list(frame.columns) == list(SNAKEMAKE_COLUMNS), bool(frame["cpu_time"].iloc[0] > 0)
    (True, True)
    """
    usage = process_usage()

    def cell(value: float | str) -> str:
        if isinstance(value, str):
            return value
        return "NA" if math.isnan(value) else f"{value:.2f}"

    text = "\t".join(SNAKEMAKE_COLUMNS) + "\n"
    text += "\t".join(cell(usage[c]) for c in SNAKEMAKE_COLUMNS) + "\n"
    dest = Path(path)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, dest)
    return dest
