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
"""

from __future__ import annotations

import math
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
