"""Run one chunk of trials of one study cell."""

import sys

sys.stderr = open(snakemake.log[0], "w")  # noqa: F821


from dpreg.experiments.studies import run_chunk  # noqa: E402
from dpreg.io import read_prepared_table, write_trial_rows  # noqa: E402

run = snakemake.params.run  # noqa: F821
frame = read_prepared_table(snakemake.input.table) if "table" in snakemake.input.keys() else None  # noqa: F821
runs = run_chunk(run["kind"], run["cell"], blocks=run["blocks"], frame=frame)
runs.insert(0, "study", snakemake.wildcards.study)  # noqa: F821
write_trial_rows(runs, snakemake.output[0])  # noqa: F821
