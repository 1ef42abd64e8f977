"""Evaluate a paper's claims on its study tables; write one csv + md per result table."""

import sys

sys.stderr = open(snakemake.log[0], "w")  # noqa: F821

# SciPy (through its array-API layer) would execute numpy.f2py and numpy.testing: deferred.
from dpreg._lazy import defer_numpy_tool_modules  # noqa: E402

defer_numpy_tool_modules()

from pathlib import Path  # noqa: E402

import pandas as pd  # noqa: E402

from dpreg.experiments.claims import check_claims  # noqa: E402
from dpreg.io import write_csv, write_markdown  # noqa: E402

tables = {Path(p).stem: pd.read_csv(p) for p in snakemake.input}  # noqa: F821
out = Path(snakemake.output[0])  # noqa: F821
for name, table in check_claims(snakemake.params.paper, tables).items():  # noqa: F821
    write_csv(table, out / f"{name}.csv")
    write_markdown(table, out / f"{name}.md", title=f"{snakemake.params.paper}: {name}")  # noqa: F821

# Every output is written: the interpreter's teardown does not rescan the objects left
# alive (dpreg._collector; ~0.1-0.35 s of CPU per job, docs/scaling.md).
from dpreg._collector import freeze_survivors  # noqa: E402

freeze_survivors()
