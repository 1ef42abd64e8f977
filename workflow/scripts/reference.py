"""Non-private OLS (and 2SLS where the dataset has instruments) with standard errors."""

import sys

sys.stderr = open(snakemake.log[0], "w")  # noqa: F821


from dpreg.experiments.references import reference_summary  # noqa: E402
from dpreg.io import read_prepared_table, write_json  # noqa: E402

frame = read_prepared_table(snakemake.input.table)  # noqa: F821
write_json(reference_summary(frame), snakemake.output[0])  # noqa: F821
