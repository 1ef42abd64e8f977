"""A figure job's lazy ``fontTools.subset``: the same PDF bytes, Type 42 still works."""

from __future__ import annotations

import pytest
from fresh_python import run_python

_DRAW = """
import hashlib, io, sys
{setup}
import matplotlib
matplotlib.use("Agg")
matplotlib.rcParams["pdf.fonttype"] = {fonttype}
import matplotlib.pyplot as plt
fig, ax = plt.subplots(figsize=(3, 2))
ax.plot([1, 2, 3], [1, 4, 9], label=r"$\\varepsilon^2$ (mathtext)")
ax.set_title("A title with text"); ax.legend()
buf = io.BytesIO()
fig.savefig(buf, format="pdf", bbox_inches="tight",
            metadata={{"CreationDate": None, "Producer": None, "Creator": None}})
print(hashlib.sha256(buf.getvalue()).hexdigest(), "fontTools.varLib" in sys.modules)
"""

_DEFER = "from dpreg.plotting.studies import defer_pdf_font_subsetting\n" + (
    "assert defer_pdf_font_subsetting()"
)


def _run(setup: str, fonttype: int) -> tuple[str, bool]:
    digest, varlib = run_python(_DRAW.format(setup=setup, fonttype=fonttype)).split()
    return digest, varlib == "True"


@pytest.mark.parametrize("fonttype", [3, 42])
def test_deferred_subsetting_gives_the_same_pdf(fonttype):
    plain, plain_loaded = _run("", fonttype)
    deferred, deferred_loaded = _run(_DEFER, fonttype)
    assert deferred == plain
    assert plain_loaded  # the PDF backend imports it eagerly
    # Type 3 (the default, every workflow figure) never uses the subsetter; Type 42 does
    assert deferred_loaded is (fonttype == 42)


def test_defer_is_a_no_op_once_fonttools_subset_is_imported():
    code = (
        "import fontTools.subset\n"
        "from dpreg.plotting.studies import defer_pdf_font_subsetting\n"
        "print(defer_pdf_font_subsetting())"
    )
    assert run_python(code).strip() == "False"
