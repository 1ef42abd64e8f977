"""Run one chunk of trials of one study cell."""

import sys

sys.stderr = open(snakemake.log[0], "w")  # noqa: F821

import pandas as pd  # noqa: E402

from dpreg.experiments.studies import run_cell  # noqa: E402
from dpreg.io import write_parquet  # noqa: E402

frame = pd.read_parquet(snakemake.input.table)  # noqa: F821
runs = run_cell(frame, snakemake.params.cell, seed=snakemake.params.seed)  # noqa: F821
write_parquet(runs, snakemake.output[0])  # noqa: F821
