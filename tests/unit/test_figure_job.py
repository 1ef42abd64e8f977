"""A figure job's cheaper matplotlib work (``dpreg.plotting.figure_job``): the same bytes."""

from __future__ import annotations

import matplotlib
import pytest
from fresh_python import run_python
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dpreg.plotting.figure_job import share_mathtext_parses

matplotlib.use("Agg")

_DRAW = """
import hashlib, io, sys
{setup}
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import seaborn as sns
{after}
fig, axes = plt.subplots(1, 2, figsize=(6, 2.5))
for ax, base in zip(axes, (10, 2)):
    ax.loglog([1e-3, 1e-1, 10], [5e2, 3, 1e-2], marker="o", label=r"$\\varepsilon = 1$")
    ax.set_xscale("log", base=base)
    ax.set_xlabel(r"$\\rho$ (zCDP)"); ax.set_title("title $n^{{-1/2}}$"); ax.legend()
sns.scatterplot(x=[1, 2, 3], y=[3, 1, 2], hue=["a", "b", "a"], ax=axes[1])
fig.suptitle("two panels")
fig.tight_layout()
out = []
for fmt, meta in (("png", {{"Software": None}}),
                  ("pdf", {{"CreationDate": None, "Producer": None, "Creator": None}})):
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, dpi=150, bbox_inches="tight", metadata=meta)
    out.append(hashlib.sha256(buf.getvalue()).hexdigest())
from matplotlib.lines import Line2D
line = Line2D([0], [0]); line.set(lw=3, color="r", ls="--")
out.append(f"{{line.get_linewidth()}},{{line.get_color()}},{{line.get_linestyle()}}")
out.append(str(Line2D.set.__doc__ is None))
print(" ".join(out))
"""

_DEFER = (
    "from dpreg.plotting.figure_job import defer_artist_set_docstrings\n"
    "assert defer_artist_set_docstrings()"
)
_SHARE = (
    "from dpreg.plotting.figure_job import share_mathtext_parses\nassert share_mathtext_parses()"
)


def _run(setup: str, after: str) -> list[str]:
    return run_python(_DRAW.format(setup=setup, after=after)).split()


def test_figure_job_changes_give_the_same_png_and_pdf():
    plain = _run("", "")
    changed = _run(_DEFER, _SHARE)
    assert changed[:2] == plain[:2]  # PNG and PDF bytes
    assert changed[2] == plain[2] == "3.0,r,--"  # set() takes properties and aliases
    assert (plain[3], changed[3]) == ("False", "True")  # only the docstring is gone


def test_defer_is_a_no_op_once_matplotlib_defined_its_artists():
    code = (
        "import matplotlib.pyplot\n"
        "from dpreg.plotting.figure_job import defer_artist_set_docstrings\n"
        "import matplotlib.lines as l\n"
        "print(defer_artist_set_docstrings(), l.Line2D.set.__doc__ is not None)"
    )
    assert run_python(code).split() == ["False", "True"]


@pytest.fixture(scope="module")
def shared_parses():
    from matplotlib.mathtext import MathTextParser

    cached = MathTextParser._parse_cached
    assert share_mathtext_parses()
    assert not share_mathtext_parses()  # once per process
    yield MathTextParser
    MathTextParser._parse_cached = cached


_ATOMS = st.sampled_from(["x", "10", r"\rho", r"\varepsilon", r"\mathdefault{2}", "n", "-1/2"])


@settings(max_examples=40, deadline=None)
@given(
    base=_ATOMS,
    exponent=st.one_of(st.none(), _ATOMS),
    dpi=st.sampled_from([72, 100, 150]),
    size=st.sampled_from([8.0, 10.0, 12.5]),
    output=st.sampled_from(["agg", "path"]),
)
def test_shared_parse_equals_a_fresh_parse(shared_parses, base, exponent, dpi, size, output):
    from matplotlib.font_manager import FontProperties
    from matplotlib.mathtext import MathTextParser

    s = f"${base}^{{{exponent}}}$" if exponent else f"${base}$"
    prop = FontProperties(size=size)
    shared = MathTextParser(output).parse(s, dpi, prop)
    again = MathTextParser(output).parse(s, dpi, prop)  # another parser: the same object
    assert again is shared
    fresh = MathTextParser._parse_cached.__wrapped__(  # the uncached parse
        MathTextParser(output),
        s,
        dpi,
        prop.copy(),
        matplotlib.rcParams["text.antialiased"],
        _flags(output),
    )
    assert _fields(shared) == _fields(fresh)


def _flags(output):
    from matplotlib.backends import backend_agg
    from matplotlib.ft2font import LoadFlags

    return LoadFlags.NO_HINTING if output == "path" else backend_agg.get_hinting_flag()


def _fields(parse):
    """The numbers and glyphs of a parse, fonts by file name (comparable across parses)."""
    if hasattr(parse, "image"):  # raster
        return (parse.ox, parse.oy, parse.width, parse.height, parse.depth, parse.image.tobytes())
    return (
        parse.width,
        parse.height,
        parse.depth,
        [tuple(getattr(item, "fname", item) for item in glyph) for glyph in parse.glyphs],
        [tuple(rect) for rect in parse.rects],
    )


def _heatmaps(labels: list[str], rows: int, panels: int, width: float) -> list[object]:
    """A benchmark-like heatmap figure (``plot_heatmap``): PNG and PDF bytes, rotations."""
    import io
    import warnings

    import matplotlib.pyplot as plt
    import numpy as np
    import pandas as pd
    import seaborn as sns

    sns.set_theme(style="white", context="paper")
    rng = np.random.default_rng(len(labels) * 7 + rows)
    fig, axes = plt.subplots(1, panels, figsize=(width, 0.28 * rows + 2.8), squeeze=False)
    for j, ax in enumerate(axes[0]):
        grid = pd.DataFrame(
            rng.uniform(size=(rows, len(labels))),
            index=[f"dataset_{i}" * (1 + i % 3) for i in range(rows)],
            columns=labels,
        )
        grid.iloc[0, 0] = np.nan  # a blank cell, as for a method not run
        sns.heatmap(grid, ax=ax, cmap="viridis", vmin=0.0, vmax=1.0,
                    cbar=j == panels - 1, yticklabels=j == 0,
                    cbar_kws={"label": "log10(ratio)"})  # fmt: skip
        ax.set_title(rf"$\varepsilon = {j + 1:g}$")
    with warnings.catch_warnings():  # a narrow figure may not fit its labels: no matter
        warnings.simplefilter("ignore", UserWarning)
        fig.tight_layout()
    out: list[object] = [
        [(t.get_rotation(), t.get_text()) for ax in fig.axes for t in ax.get_xticklabels()]
    ]
    for fmt, meta in (
        ("png", {"Software": None}),
        ("pdf", {"CreationDate": None, "Producer": None, "Creator": None}),
    ):
        buf = io.BytesIO()
        fig.savefig(buf, format=fmt, dpi=100, bbox_inches="tight", metadata=meta)
        out.append(buf.getvalue())
    plt.close(fig)
    return out


_LONG = [f"method_{c}" * 2 for c in "abcdefgh"]  # labels that overlap in 3 in per panel


@settings(max_examples=8, deadline=None)
@given(
    labels=st.lists(
        st.text("abcdefgh_", min_size=1, max_size=14), min_size=1, max_size=9, unique=True
    ),
    rows=st.integers(1, 12),
    panels=st.integers(1, 3),
    width=st.sampled_from([3.0, 6.0, 12.0]),
)
@example(labels=_LONG, rows=30, panels=2, width=6.0)  # rotated: labels and rows overlap
@example(labels=["a", "b"], rows=2, panels=2, width=12.0)  # nothing rotated
def test_layout_only_heatmap_draws_give_the_same_bytes(labels, rows, panels, width):
    # seaborn rotates tick labels that overlap, measured after a draw of the figure; a
    # layout-only draw gives the same decisions and savefig the same PNG and PDF bytes.
    import seaborn.matrix

    from dpreg.plotting.figure_job import layout_only_heatmap_draws

    draw = seaborn.matrix._draw_figure
    plain = _heatmaps(labels, rows, panels, width)
    try:
        assert layout_only_heatmap_draws()
        assert not layout_only_heatmap_draws()  # once per process
        changed = _heatmaps(labels, rows, panels, width)
    finally:
        seaborn.matrix._draw_figure = draw
    assert changed[0] == plain[0]
    assert changed[1] == plain[1] and changed[2] == plain[2]
    if labels == _LONG:  # the example where seaborn's overlap test rotates
        assert {rotation for rotation, _ in plain[0]} == {90.0}
