"""Aggregate a study's trials into its tidy table, then draw its figure from that table."""

import gc
import sys

sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
# No collection while the modules are imported: they are collected once, then frozen.
gc.disable()

# SciPy (through its array-API layer) would execute numpy.f2py and numpy.testing: deferred.
from dpreg._lazy import defer_numpy_tool_modules  # noqa: E402

defer_numpy_tool_modules()

# Before matplotlib is imported: its artist classes skip their `set` docstrings (~0.15 s).
from dpreg.plotting.figure_job import defer_artist_set_docstrings  # noqa: E402

defer_artist_set_docstrings()

import pandas as pd  # noqa: E402

from dpreg._collector import YOUNG_THRESHOLD, freeze_survivors  # noqa: E402
from dpreg.experiments.studies import summarise_study  # noqa: E402
from dpreg.io import (  # noqa: E402
    read_artifact_parquet,
    read_json,
    write_csv,
    write_markdown,
    write_trial_rows,
)
from dpreg.plotting.figure_job import share_mathtext_parses  # noqa: E402
from dpreg.plotting.studies import (  # noqa: E402
    defer_pdf_font_subsetting,
    import_seaborn_without_scipy,
)

# The figure draws no KDE: seaborn, when the figure imports it, skips scipy.stats (~0.8 s).
import_seaborn_without_scipy()
# The PDF embeds Type 3 fonts: fontTools' subsetter (Type 42 only) loads on first use.
defer_pdf_font_subsetting()
# Each mathtext label (log-axis ticks) is parsed once per dpi, not once per renderer.
share_mathtext_parses()
# The imported modules live until the job ends: no later collection walks them again, and
# the youngest generation is collected less often (docs/scaling.md; same outputs).
freeze_survivors(YOUNG_THRESHOLD, collect=True)

params = snakemake.params.study  # noqa: F821
# a damaged chunk is named with how to rebuild it, not left to pyarrow's message
chunks = [read_artifact_parquet(p) for p in snakemake.input.chunks]  # noqa: F821
runs = pd.concat(chunks, ignore_index=True)
del chunks  # the concatenated copy is all that is needed (peak memory: docs/scaling.md)
references = [read_json(p) for p in snakemake.input.references]  # noqa: F821
table = summarise_study(params["kind"], runs, references)
table.insert(0, "study", params["study"])
write_trial_rows(runs, snakemake.output.trials)  # noqa: F821
write_csv(table, snakemake.output.csv)  # noqa: F821
write_markdown(table, snakemake.output.md, title=params["title"] or params["study"])  # noqa: F821

# The figure is drawn from the table as written (what a reader of the csv gets), in the
# same job: a separate job would be mostly Python start-up (docs/scaling.md).
from dpreg.experiments.studies import draw_study_figure  # noqa: E402
from dpreg.plotting.studies import save_figure  # noqa: E402

written = pd.read_csv(snakemake.output.csv)  # noqa: F821
figure = draw_study_figure(params["kind"], written, title=params["title"])
save_figure(figure, snakemake.output.png, snakemake.output.pdf)  # noqa: F821
# Everything is written: the interpreter's teardown skips rescanning what is left alive.
freeze_survivors()
