"""Write an example user table from an installed package (dpreg.data.examples), atomically."""

import sys

sys.stderr = open(snakemake.log[0], "w")  # noqa: F821

from dpreg.data.examples import example_table_csv  # noqa: E402
from dpreg.io import atomic_write  # noqa: E402

text = example_table_csv(snakemake.wildcards.example)  # noqa: F821
atomic_write(snakemake.output[0], lambda tmp: tmp.write_text(text, encoding="utf-8"))  # noqa: F821

# Every output is written: the interpreter's teardown does not rescan the objects left
# alive (dpreg._collector; ~0.1-0.35 s of CPU per job, docs/scaling.md).
from dpreg._collector import freeze_survivors  # noqa: E402

freeze_survivors()
