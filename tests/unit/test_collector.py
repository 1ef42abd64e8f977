"""A job's frozen collector (``dpreg._collector``): same figure bytes, settings as asked."""

from __future__ import annotations

import ast
import gc

from fresh_python import run_python
from hypothesis import given, settings
from hypothesis import strategies as st

from dpreg._collector import YOUNG_THRESHOLD, freeze_survivors

# A table job's figure in miniature: seaborn facets on log axes (mathtext tick labels), a
# legend and a suptitle, saved as PNG and PDF with a tight bounding box as the job does.
_DRAW = """
import hashlib, io, sys
{pause}
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns
{freeze}
rows = [(d, e, eps, (1 + i) / eps)
        for i, (d, e) in enumerate([(d, e) for d in "abc" for e in ("x", "y")])
        for eps in (0.1, 1.0, 10.0)]
table = pd.DataFrame(rows, columns=["dataset", "estimator", "epsilon", "mse"])
grid = sns.FacetGrid(table, col="dataset", hue="estimator", sharey=False, height=2.0)
grid.map_dataframe(sns.lineplot, x="epsilon", y="mse", marker="o")
grid.set(xscale="log", yscale="log", xlabel=r"$\\varepsilon$")
grid.add_legend()
grid.figure.suptitle("facets", y=1.03)
out = []
for fmt, meta in (("png", {{"Software": None}}),
                  ("pdf", {{"CreationDate": None, "Producer": None, "Creator": None}})):
    buf = io.BytesIO()
    grid.figure.savefig(buf, format=fmt, dpi=150, bbox_inches="tight", metadata=meta)
    out.append(hashlib.sha256(buf.getvalue()).hexdigest())
plt.close(grid.figure)
{end}
import gc
out.append(str(gc.get_freeze_count() > 0))
out.append(str(gc.get_threshold()[0]))
print(" ".join(out))
"""


def _run(pause: str = "", freeze: str = "", end: str = "") -> list[str]:
    return run_python(_DRAW.format(pause=pause, freeze=freeze, end=end)).split()


def test_a_frozen_collector_gives_the_same_png_and_pdf():
    plain = _run()
    frozen = _run(
        "import gc; gc.disable()",
        "from dpreg._collector import YOUNG_THRESHOLD, freeze_survivors\n"
        "freeze_survivors(YOUNG_THRESHOLD, collect=True)",
        "freeze_survivors()",
    )
    assert frozen[:2] == plain[:2]  # PNG and PDF bytes
    assert plain[2:] == ["False", "700"]  # CPython's defaults
    assert frozen[2:] == ["True", str(YOUNG_THRESHOLD)]


@settings(max_examples=25, deadline=None)
@given(young=st.one_of(st.none(), st.integers(1, 10**6)), collect=st.booleans())
def test_freeze_survivors_freezes_and_sets_only_the_youngest_threshold(young, collect):
    before = gc.get_threshold()
    enabled = gc.isenabled()
    try:
        gc.disable()
        frozen = freeze_survivors(young, collect=collect)
        assert frozen == gc.get_freeze_count() > 0
        assert gc.isenabled()  # a job's paused collector runs again
        expected = before if young is None else (young, *before[1:])
        assert gc.get_threshold() == expected
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
        if not enabled:
            gc.disable()


def test_collect_frees_the_garbage_made_while_paused_instead_of_freezing_it():
    code = (
        "import gc; gc.disable()\n"
        "class Node: pass\n"
        "for _ in range(20000):\n"
        "    a = Node(); b = Node(); a.b = b; b.a = a\n"
        "del a, b\n"
        "from dpreg._collector import freeze_survivors\n"
        "import sys; print(freeze_survivors(collect=sys.argv[1] == 'collect'))"
    )

    def frozen(mode: str) -> int:
        return int(run_python(code, mode))

    # 20,000 cycles of two instances and their dicts: frozen only without the collection
    assert frozen("keep") - frozen("collect") >= 40000


def test_the_table_job_pauses_then_freezes_its_collector(repo_root):
    path = repo_root / "workflow/scripts/study_table.py"
    text = path.read_text()
    pause = text.find("gc.disable()")
    assert -1 < pause < text.find("from dpreg")  # before the first heavy import
    freeze = text.find("freeze_survivors(YOUNG_THRESHOLD, collect=True)")
    assert freeze != -1
    assert freeze < text.find("params = snakemake")  # after the imports, before the work
    last = ast.parse(text).body[-1]
    assert ast.unparse(last) == "freeze_survivors()"  # after the last output is written


def test_every_job_script_freezes_its_collector_last(repo_root):
    """Each workflow job ends with ``freeze_survivors()`` once its outputs are written, so
    the interpreter's teardown does not walk the heap again (docs/scaling.md)."""
    scripts = sorted((repo_root / "workflow/scripts").glob("*.py"))
    assert len(scripts) >= 10
    for path in scripts:
        last = ast.parse(path.read_text()).body[-1]
        assert ast.unparse(last) == "freeze_survivors()", path.name
