"""Run one chunk of trials of one study cell."""

import sys

sys.stderr = open(snakemake.log[0], "w")  # noqa: F821


from dpreg.experiments.studies import run_chunk  # noqa: E402
from dpreg.io import read_prepared_table, write_trial_rows  # noqa: E402

run = snakemake.params.run  # noqa: F821
inputs = snakemake.input  # noqa: F821
frame = read_prepared_table(inputs.table) if "table" in inputs.keys() else None
# The held-out rows: only for a kind with uses_test_rows (chunk_input in common.smk).
test_frame = read_prepared_table(inputs.test_table) if "test_table" in inputs.keys() else None
runs = run_chunk(run["kind"], run["cell"], blocks=run["blocks"], frame=frame, test_frame=test_frame)
runs.insert(0, "study", snakemake.wildcards.study)  # noqa: F821
write_trial_rows(runs, snakemake.output[0])  # noqa: F821
