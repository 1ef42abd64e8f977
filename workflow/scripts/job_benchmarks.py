"""Per-rule wall time and peak memory of this run's chunk jobs (their benchmark files)."""

import sys

sys.stderr = open(snakemake.log[0], "w")  # noqa: F821

from pathlib import Path  # noqa: E402

from dpreg.benchmarks import job_benchmark_table  # noqa: E402
from dpreg.io import write_csv  # noqa: E402

# run_chunk writes benchmarks/runs/<study>/job~NNN.tsv beside results/runs/<study>/job~NNN.parquet
tsvs = [
    Path("benchmarks", *Path(chunk).with_suffix(".tsv").parts[1:])
    for chunk in snakemake.input.chunks  # noqa: F821
]
table = job_benchmark_table({"run_chunk": [p for p in tsvs if p.is_file()]})
write_csv(table, snakemake.output[0])  # noqa: F821

# Every output is written: the interpreter's teardown does not rescan the objects left
# alive (dpreg._collector; ~0.1-0.35 s of CPU per job, docs/scaling.md).
from dpreg._collector import freeze_survivors  # noqa: E402

freeze_survivors()
