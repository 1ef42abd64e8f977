"""Run the chunks of trials of one job (consecutive cells of one study) in one process."""

import sys

sys.stderr = open(snakemake.log[0], "w")  # noqa: F821

# SciPy (through its array-API layer) would execute numpy.f2py and numpy.testing: deferred.
from dpreg._lazy import defer_numpy_tool_modules  # noqa: E402

defer_numpy_tool_modules()

# Large temporaries made again at every step reuse the job's freed memory (no page faults).
from dpreg._allocator import keep_freed_memory  # noqa: E402

keep_freed_memory()

import pandas as pd  # noqa: E402

from dpreg.experiments.studies import run_chunk  # noqa: E402
from dpreg.io import read_prepared_table, write_trial_rows  # noqa: E402

run = snakemake.params.run  # noqa: F821
# The last tables read, kept while consecutive chunks use them (cells in grid order: the
# chunks of one dataset follow each other), never every table of a long job at once.
tables = {}


def table(path):
    if path is None:
        return None
    if path not in tables:
        if len(tables) >= 2:  # a training table and its held-out rows
            tables.clear()
        tables[path] = read_prepared_table(path)
    return tables[path]


frames = []
for chunk in run["chunks"]:
    first = chunk["blocks"][0]["first_trial"]
    trials = sum(block["trials"] for block in chunk["blocks"])
    print(f"cell {chunk['path']}: trials {first} to {first + trials - 1}", file=sys.stderr)
    # The held-out rows: only for a kind with uses_test_rows (chunk_params in common.smk).
    frames.append(
        run_chunk(
            run["kind"],
            chunk["cell"],
            blocks=chunk["blocks"],
            frame=table(chunk["table"]),
            test_frame=table(chunk["test_table"]),
        )
    )
runs = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
runs.insert(0, "study", snakemake.wildcards.study)  # noqa: F821
write_trial_rows(runs, snakemake.output.rows)  # noqa: F821

# The job's own wall time, CPU and peak memory, in Snakemake's benchmark format.
from dpreg.benchmarks import write_process_benchmark  # noqa: E402

write_process_benchmark(snakemake.output.usage)  # noqa: F821

# Every output is written: the interpreter's teardown does not rescan the objects left
# alive (dpreg._collector; ~0.1-0.35 s of CPU per job, docs/scaling.md).
from dpreg._collector import freeze_survivors  # noqa: E402

freeze_survivors()
