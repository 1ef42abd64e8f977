"""Draw an extra figure of a study (a view figure of its kind) from the study's table."""

import sys

sys.stderr = open(snakemake.log[0], "w")  # noqa: F821

# SciPy (through its array-API layer) would execute numpy.f2py and numpy.testing: deferred.
from dpreg._lazy import defer_numpy_tool_modules  # noqa: E402

defer_numpy_tool_modules()

# Before matplotlib is imported: its artist classes skip their `set` docstrings (~0.15 s).
from dpreg.plotting.figure_job import defer_artist_set_docstrings  # noqa: E402

defer_artist_set_docstrings()

import pandas as pd  # noqa: E402

from dpreg.experiments.studies import draw_study_view_figure  # noqa: E402
from dpreg.plotting.figure_job import (  # noqa: E402
    layout_only_heatmap_draws,
    share_mathtext_parses,
)
from dpreg.plotting.studies import (  # noqa: E402
    defer_pdf_font_subsetting,
    import_seaborn_without_scipy,
    save_figure,
)

# The figure draws no KDE: seaborn, when the figure imports it, skips scipy.stats (~0.8 s).
import_seaborn_without_scipy()
# seaborn's heatmap measures its tick labels on a layout-only draw, not a rasterized one.
layout_only_heatmap_draws()
# The PDF embeds Type 3 fonts: fontTools' subsetter (Type 42 only) loads on first use.
defer_pdf_font_subsetting()
# Each mathtext label (log-axis ticks) is parsed once per dpi, not once per renderer.
share_mathtext_parses()

params = snakemake.params.study  # noqa: F821
view = snakemake.wildcards.view  # noqa: F821
table = pd.read_csv(snakemake.input.table)  # noqa: F821
figure = draw_study_view_figure(params["kind"], view, table, title=params["title"])
save_figure(figure, snakemake.output.png, snakemake.output.pdf)  # noqa: F821

# Every output is written: the interpreter's teardown does not rescan the objects left
# alive (dpreg._collector; ~0.1-0.35 s of CPU per job, docs/scaling.md).
from dpreg._collector import freeze_survivors  # noqa: E402

freeze_survivors()
