"""seaborn imported without scipy.stats by the figure jobs: the same figures, byte for byte.

``dpreg.plotting.studies.import_seaborn_without_scipy`` (docs/scaling.md) makes a job's
first ``import seaborn`` skip ``scipy.stats`` and ``scipy.cluster``. Each check runs fresh
interpreters (this test process has imported both already).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from fresh_python import run_python

# Every seaborn function the figure code calls (set_theme, color_palette, heatmap,
# scatterplot, FacetGrid) on a small table, saved as the workflow saves figures.
DRAW = """
import json, sys
import numpy as np, pandas as pd
import matplotlib.pyplot as plt
from dpreg.plotting.studies import import_seaborn_without_scipy, save_figure
installed = import_seaborn_without_scipy() if {light} else False
from dpreg.plotting.benchmark import plot_heatmap
import seaborn as sns
rng = np.random.default_rng(3)
datasets = [f"set{{i}}" for i in range(4)]
methods = ["adassp", "ihm", "linear_mixing"]
rows = [
    dict(dataset=s, method=m, epsilon=e, ratio_to_best=float(rng.uniform(1, 20)),
         status="ok", private=True, n=100 * (i + 1), d=3 + i, rank=float(j))
    for i, s in enumerate(datasets) for j, m in enumerate(methods) for e in (0.1, 1.0)
]
save_figure(plot_heatmap(pd.DataFrame(rows), title="heatmap"), "{out}/a.png", "{out}/a.pdf")
sns.set_theme(style="whitegrid", context="paper")
frame = pd.DataFrame(dict(x=rng.normal(size=40), y=rng.normal(size=40),
                          series=np.repeat(["a", "b"], 20), panel=np.tile(["p", "q"], 20)))
fig, ax = plt.subplots()
sns.scatterplot(data=frame, x="x", y="y", hue="series", style="series", ax=ax,
                palette=sns.color_palette("colorblind", 2))
save_figure(fig, "{out}/b.png", "{out}/b.pdf")
grid = sns.FacetGrid(frame, col="panel", hue="series")
grid.map(plt.plot, "x", "y")
save_figure(grid.figure, "{out}/c.png", "{out}/c.pdf")
print(json.dumps({{"installed": installed, "scipy_stats": "scipy.stats" in sys.modules}}))
"""


def _run(code: str) -> dict:
    return json.loads(run_python(code, env={"MPLBACKEND": "Agg"}).splitlines()[-1])


def _digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def test_figures_are_byte_identical_with_and_without_scipy_stats(tmp_path):
    light, full = tmp_path / "light", tmp_path / "full"
    light.mkdir()
    full.mkdir()
    with_finder = _run(DRAW.format(light=True, out=light))
    without = _run(DRAW.format(light=False, out=full))
    assert with_finder == {"installed": True, "scipy_stats": False}
    assert without == {"installed": False, "scipy_stats": True}
    assert len(_digests(light)) == 6
    assert _digests(light) == _digests(full)


def test_scipy_stats_stays_importable_and_only_seaborn_is_affected():
    code = (
        "import sys, json\n"
        "from dpreg.plotting.studies import import_seaborn_without_scipy\n"
        "first = import_seaborn_without_scipy()\n"
        "second = import_seaborn_without_scipy()\n"
        "import seaborn, seaborn._statistics as st\n"
        "hidden = 'scipy.stats' in sys.modules or 'scipy.cluster' in sys.modules\n"
        "import scipy.stats, scipy.cluster\n"
        "print(json.dumps([first, second, hidden, st._no_scipy,"
        " float(scipy.stats.norm.ppf(0.5)), any(type(f).__name__ == '_SeabornWithoutScipy'"
        " for f in sys.meta_path)]))"
    )
    # installed once; seaborn fell back to its own KDE; scipy.stats then imports normally;
    # the finder removed itself after the one import
    assert _run(code) == [True, False, False, True, 0.0, False]


@pytest.mark.parametrize("first", ["import seaborn", "import scipy.stats"])
def test_not_installed_when_seaborn_or_scipy_stats_is_loaded(first):
    code = (
        f"{first}\nimport json, seaborn._statistics as st\n"
        "from dpreg.plotting.studies import import_seaborn_without_scipy\n"
        "print(json.dumps([import_seaborn_without_scipy(), st._no_scipy]))"
    )
    assert _run(code) == [False, False]
