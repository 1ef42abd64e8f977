"""Time every method of a benchmark study on its datasets (one thread; a measurement)."""

import sys

sys.stderr = open(snakemake.log[0], "w")  # noqa: F821

# SciPy (through its array-API layer) would execute numpy.f2py and numpy.testing: deferred.
from dpreg._lazy import defer_numpy_tool_modules  # noqa: E402

defer_numpy_tool_modules()

from dpreg.data.datasets import Dataset  # noqa: E402
from dpreg.experiments.benchmark import measure_cost  # noqa: E402
from dpreg.io import read_prepared_table, write_csv  # noqa: E402

params = snakemake.params.cost  # noqa: F821
datasets = {
    name: Dataset.from_frame(read_prepared_table(path))
    for name, path in zip(params["datasets"], snakemake.input.tables, strict=True)  # noqa: F821
}
cost = measure_cost(datasets, params["methods"], epsilon=params["epsilon"])
cost.insert(0, "study", params["study"])
write_csv(cost, snakemake.output.per_dataset)  # noqa: F821

# Every output is written: the interpreter's teardown does not rescan the objects left
# alive (dpreg._collector; ~0.1-0.35 s of CPU per job, docs/scaling.md).
from dpreg._collector import freeze_survivors  # noqa: E402

freeze_survivors()
