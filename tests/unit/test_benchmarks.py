from __future__ import annotations

import math

import pandas as pd
import pytest
from fresh_python import run_python

from dpreg.benchmarks import (
    ALL_RULES,
    TABLE_COLUMNS,
    benchmark_group,
    job_benchmark_table,
    job_benchmarks,
    job_name,
    read_benchmark_file,
)

HEADER = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time"


def _write(path, *records: str, header: str = HEADER):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join([header, *records]) + "\n")
    return path


def _record(s: float, rss: str | float, cpu: str | float = 1.0) -> str:
    # the layout Snakemake 9 writes: floats with two decimals, NA when not sampled
    rss_text = rss if isinstance(rss, str) else f"{rss:.2f}"
    cpu_text = cpu if isinstance(cpu, str) else f"{cpu:.2f}"
    fixed = "1579.80\t142.66\t170.39\t0.00\t0.04\t67.48"
    return f"{s:.4f}\t0:00:{int(s):02d}\t{rss_text}\t{fixed}\t{cpu_text}"


@pytest.fixture
def run(tmp_path):
    """A run directory with two benchmark groups and known values."""
    root = tmp_path / "run" / "benchmarks"
    files = {
        "runs/study_a/cell~1/chunk~000.tsv": _record(2.21, 223.83),
        "runs/study_a/cell~2/chunk~000.tsv": _record(7.5, 180.0),
        "runs/study_b/all/chunk~000.tsv": _record(0.3, "NA", "NA"),  # too short to sample
        "runs/study_b/all/chunk~001.tsv": _record(7.5, 415.6),  # ties study_a's 7.5 s
        "tables/study_a.tsv": _record(1.0, "-", "-"),  # '-' is how Snakemake writes None
    }
    for rel, record in files.items():
        _write(root / rel, record)
    return root


def test_read_benchmark_file_parses_numbers_and_missing_markers(run):
    frame = read_benchmark_file(run / "runs/study_b/all/chunk~000.tsv")
    assert list(frame.columns) == HEADER.split("\t")
    assert frame.loc[0, "s"] == pytest.approx(0.3)
    assert math.isnan(frame.loc[0, "max_rss"]) and math.isnan(frame.loc[0, "cpu_time"])
    assert frame.loc[0, "h:m:s"] == "0:00:00"
    dash = read_benchmark_file(run / "tables/study_a.tsv")
    assert math.isnan(dash.loc[0, "max_rss"])


def test_group_and_job_names_come_from_the_path():
    path = "/x/run/benchmarks/runs/liang_fig4a/rho1~0.01/T~10/chunk~000.tsv"
    assert benchmark_group(path) == "runs"
    assert job_name(path) == "liang_fig4a/rho1~0.01/T~10/chunk~000"
    assert benchmark_group("/x/elsewhere/job.tsv") == "elsewhere"
    assert job_name("/x/elsewhere/job.tsv") == "job"


def test_table_matches_a_hand_computation(run):
    table = job_benchmark_table(sorted(run.rglob("*.tsv")))
    assert list(table.columns) == TABLE_COLUMNS
    assert list(table["rule"]) == ["runs", "tables", ALL_RULES]
    runs = table.set_index("rule").loc["runs"]
    assert runs["jobs"] == 4
    assert runs["total_s"] == pytest.approx(2.21 + 7.5 + 0.3 + 7.5)
    assert runs["max_s"] == pytest.approx(7.5)
    assert runs["slowest_job"] == "study_a/cell~2/chunk~000"  # tie -> first in name order
    assert runs["max_rss_mb"] == pytest.approx(415.6)
    assert runs["largest_job"] == "study_b/all/chunk~001"
    tables = table.set_index("rule").loc["tables"]
    assert tables["jobs"] == 1 and tables["slowest_job"] == "study_a"
    assert math.isnan(tables["max_rss_mb"]) and pd.isna(tables["largest_job"])
    total = table.set_index("rule").loc[ALL_RULES]
    assert total["jobs"] == 5
    assert total["total_s"] == pytest.approx(2.21 + 7.5 + 0.3 + 7.5 + 1.0)
    assert total["largest_job"] == "runs:study_b/all/chunk~001"


def test_rule_mapping_and_rule_of_name_the_rules(run):
    paths = sorted((run / "runs").rglob("*.tsv"))
    by_mapping = job_benchmark_table({"run_chunk": paths}, total=False)
    assert list(by_mapping["rule"]) == ["run_chunk"] and by_mapping["jobs"].item() == 4
    by_function = job_benchmark_table(paths, rule_of=lambda p: p.parts[-3], total=False)
    assert list(by_function["rule"]) == ["study_a", "study_b"]
    assert list(by_function["max_s"]) == pytest.approx([7.5, 7.5])


def test_repeats_and_extended_format(tmp_path):
    extended = HEADER + "\tjobid\trule_name\twildcards"
    path = _write(
        tmp_path / "benchmarks/runs/a.tsv",
        _record(3.0, 100.0) + "\t7\trun_chunk\tstudy=a",
        _record(5.0, 90.0) + "\t7\trun_chunk\tstudy=a",
        header=extended,
    )
    jobs = job_benchmarks([path])
    assert jobs.loc[0, "rule"] == "run_chunk"  # the file's rule_name wins over the folder
    assert jobs.loc[0, "records"] == 2
    assert jobs.loc[0, "s"] == pytest.approx(5.0)  # maxima over the repeats
    assert jobs.loc[0, "max_rss_mb"] == pytest.approx(100.0)


def test_no_files_gives_an_empty_table():
    table = job_benchmark_table([])
    assert list(table.columns) == TABLE_COLUMNS and table.empty
    assert isinstance(table, pd.DataFrame)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "is empty"),
        ("time\tmemory\n1\t2\n", "expected Snakemake's columns"),
        (HEADER + "\n", "no records"),
        (HEADER + "\n1.0\t0:00:01\t12\n", "fields"),
        (HEADER + "\n" + _record(1.0, "lots"), "neither a number"),
    ],
)
def test_bad_files_raise_naming_the_problem(tmp_path, content, message):
    path = tmp_path / "bad.tsv"
    path.write_text(content)
    with pytest.raises(ValueError, match=message):
        job_benchmark_table([path])


def test_a_single_path_is_refused(tmp_path):
    path = _write(tmp_path / "benchmarks/runs/a.tsv", _record(1.0, 10.0))
    with pytest.raises(ValueError, match="list of benchmark files"):
        job_benchmark_table(path)


def test_a_job_measures_its_own_peak_memory_and_cpu(tmp_path):
    """write_process_benchmark records the process's true peak and CPU (what Snakemake's
    sampling directive missed), in a file the job tables read like Snakemake's."""
    import datetime

    path = tmp_path / "benchmarks" / "runs" / "s" / "job~000.tsv"
    code = (
        "import time, numpy as np\n"
        "from dpreg.benchmarks import write_process_benchmark\n"
        "a = np.ones(40_000_000); del a\n"  # a 320 MB peak, freed before the record
        "t = time.process_time()\n"
        "while time.process_time() - t < 0.3: pass\n"
        f"write_process_benchmark({str(path)!r})\n"
    )
    # one BLAS thread, as a workflow job runs (threads: 1): its wall time is then >= its CPU
    one_thread = {v: "1" for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    run_python(code, env=one_thread)
    record = read_benchmark_file(path).iloc[0]
    assert record["max_rss"] >= 305  # MiB: the freed array's peak is kept
    assert record["cpu_time"] >= 0.3
    assert record["s"] >= record["cpu_time"] - 0.05  # one thread: wall >= CPU
    assert math.isnan(record["max_uss"])
    assert record["h:m:s"] == str(datetime.timedelta(seconds=int(record["s"])))
    assert not list(path.parent.glob(".*.tmp"))
    table = job_benchmark_table({"run_chunk": [path]})
    assert table.loc[table["rule"] == "run_chunk", "max_rss_mb"].item() == record["max_rss"]
