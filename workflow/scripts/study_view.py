"""Compute an extra table of a study (a view of its kind) from the study's table."""

import sys

sys.stderr = open(snakemake.log[0], "w")  # noqa: F821

# SciPy (through its array-API layer) would execute numpy.f2py and numpy.testing: deferred.
from dpreg._lazy import defer_numpy_tool_modules  # noqa: E402

defer_numpy_tool_modules()

import pandas as pd  # noqa: E402

from dpreg.experiments.studies import study_view  # noqa: E402
from dpreg.io import write_csv, write_markdown  # noqa: E402

params = snakemake.params.study  # noqa: F821
view = snakemake.wildcards.view  # noqa: F821
table = pd.read_csv(snakemake.input.table)  # noqa: F821
frame = study_view(params["kind"], view, table)
frame.insert(0, "study", params["study"])
write_csv(frame, snakemake.output.csv)  # noqa: F821
write_markdown(frame, snakemake.output.md, title=f"{params['title'] or params['study']}: {view}")  # noqa: F821

# Every output is written: the interpreter's teardown does not rescan the objects left
# alive (dpreg._collector; ~0.1-0.35 s of CPU per job, docs/scaling.md).
from dpreg._collector import freeze_survivors  # noqa: E402

freeze_survivors()
