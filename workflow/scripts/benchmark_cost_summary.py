"""Seconds per fit of a benchmark study's methods beside their accuracy (from two tables).

The timings are ``benchmark_cost``'s table as written (10 significant digits), measured
in a job of their own that needs no study table (docs/scaling.md).
"""

import sys

sys.stderr = open(snakemake.log[0], "w")  # noqa: F821

# SciPy (through its array-API layer) would execute numpy.f2py and numpy.testing: deferred.
from dpreg._lazy import defer_numpy_tool_modules  # noqa: E402

defer_numpy_tool_modules()

import pandas as pd  # noqa: E402

from dpreg.experiments.benchmark import cost_beside_accuracy  # noqa: E402
from dpreg.io import write_csv, write_markdown  # noqa: E402

params = snakemake.params.cost  # noqa: F821
cost = pd.read_csv(snakemake.input.per_dataset)  # noqa: F821
summary = cost_beside_accuracy(cost, pd.read_csv(snakemake.input.table))  # noqa: F821
summary.insert(0, "study", params["study"])
write_csv(summary, snakemake.output.summary)  # noqa: F821
write_markdown(
    summary,
    snakemake.output.md,  # noqa: F821
    title=f"{params['title']}: seconds per fit (one thread) beside accuracy at"
    f" epsilon = {params['epsilon']:g}",
)

# Every output is written: the interpreter's teardown does not rescan the objects left
# alive (dpreg._collector; ~0.1-0.35 s of CPU per job, docs/scaling.md).
from dpreg._collector import freeze_survivors  # noqa: E402

freeze_survivors()
