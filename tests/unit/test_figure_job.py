"""A figure job's cheaper matplotlib work (``dpreg.plotting.figure_job``): the same bytes."""

from __future__ import annotations

import os
import subprocess
import sys

import matplotlib
import pytest
from hypothesis import given, settings
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
    out = subprocess.run(
        [sys.executable, "-c", _DRAW.format(setup=setup, after=after)],
        capture_output=True,
        text=True,
        check=True,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)),
    )
    return out.stdout.split()


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
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)),
    )
    assert out.stdout.split() == ["False", "True"]


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
