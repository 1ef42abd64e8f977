"""Deterministic saving of figures (no timestamps, atomic), and lighter imports for a job."""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType

import matplotlib.pyplot as plt

from dpreg._lazy import defer_module
from dpreg.io import atomic_write

#: What seaborn imports from SciPy when it is there: ``scipy.stats`` for its KDE
#: (``gaussian_kde``; without it seaborn uses its bundled copy) and ``scipy.cluster`` for
#: ``clustermap``. No figure of the workflow draws either.
SEABORN_OPTIONAL_SCIPY = ("scipy.stats", "scipy.cluster")


def save_figure(
    figure: plt.Figure, png: str | os.PathLike[str], pdf: str | os.PathLike[str]
) -> None:
    """Save PNG and PDF without timestamps, so reruns are byte-identical."""
    atomic_write(
        png,
        lambda tmp: figure.savefig(
            tmp, format="png", dpi=150, bbox_inches="tight", metadata={"Software": None}
        ),
    )
    atomic_write(
        pdf,
        lambda tmp: figure.savefig(
            tmp,
            format="pdf",
            bbox_inches="tight",
            metadata={"CreationDate": None, "ModDate": None, "Producer": None, "Creator": None},
        ),
    )
    plt.close(figure)


class _SeabornWithoutScipy:
    """Meta-path finder: the first ``import seaborn`` runs with ``hidden`` unimportable."""

    def __init__(self, hidden: Sequence[str]) -> None:
        self.hidden = tuple(hidden)

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> ModuleSpec | None:
        if fullname != "seaborn":
            return None
        sys.meta_path.remove(self)  # one import only; the real finders locate seaborn
        spec = importlib.util.find_spec("seaborn")
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module
        hidden = self.hidden

        def exec_without(module: ModuleType) -> None:
            absent = [name for name in hidden if name not in sys.modules]
            for name in absent:
                sys.modules[name] = None  # type: ignore[assignment]  # ImportError on import
            try:
                exec_module(module)
            finally:
                for name in absent:
                    if name in sys.modules and sys.modules[name] is None:
                        del sys.modules[name]

        spec.loader.exec_module = exec_without  # type: ignore[method-assign]
        return spec


def import_seaborn_without_scipy() -> bool:
    """Make the process's first ``import seaborn`` skip SciPy's statistics (job start-up).

    seaborn imports ``scipy.stats`` at import time only for its kernel density estimate
    (and ``scipy.cluster`` for ``clustermap``), about 0.8 s of CPU, more than half of
    what importing seaborn costs; every other function (``set_theme``, ``color_palette``,
    ``heatmap``, ``scatterplot``, ``FacetGrid``, ...) is the same code either way, so a
    figure that draws no KDE and no clustermap comes out byte-identical. For the
    workflow's figure jobs (``workflow/scripts/study_table.py``), which call it before
    drawing; a library user's process is never changed. seaborn is still imported only
    when a figure needs it (a meta-path finder intercepts that import), and ``scipy.stats``
    stays importable by everything else, before and after (docs/scaling.md).

    Returns
    -------
    bool
        Whether the finder was installed (not when seaborn or ``scipy.stats`` is already
        imported, or the finder already is).

    Examples
    --------
    >>> import subprocess, sys
    >>> code = (
    ...     "import sys; from dpreg.plotting.studies import import_seaborn_without_scipy;"
    ...     "installed = import_seaborn_without_scipy(); import seaborn;"
    ...     "print(installed, 'scipy.stats' in sys.modules);"
    ...     "import scipy.stats; print(scipy.stats.norm.cdf(0.0))"
    ... )
    >>> print(subprocess.run([sys.executable, "-c", code], capture_output=True,
    ...                      text=True, check=True).stdout.strip())
    True False
    0.5
    """
    if "seaborn" in sys.modules or "scipy.stats" in sys.modules:
        return False
    if any(isinstance(finder, _SeabornWithoutScipy) for finder in sys.meta_path):
        return False
    sys.meta_path.insert(0, _SeabornWithoutScipy(SEABORN_OPTIONAL_SCIPY))
    return True


def defer_pdf_font_subsetting() -> bool:
    """Load ``fontTools.subset`` on its first use, not when the PDF backend is imported.

    matplotlib's PDF backend imports ``fontTools.subset`` at import time (about 0.06 s
    of CPU with the ``fontTools.varLib`` and table modules it pulls in) but uses it only
    to subset a TrueType font embedded as Type 42 (``pdf.fonttype: 42``); the default
    Type 3 embedding, which every figure of the workflow uses, never touches it. This
    puts a lazy module (``importlib.util.LazyLoader``) in its place: the real module is
    executed on the first attribute access, so a Type 42 figure works as before, and
    the PDF bytes are the same either way. For the workflow's figure jobs
    (``workflow/scripts/study_table.py``, ``study_view_figure.py``), which call it before
    saving; a library user's process is never changed (docs/scaling.md).

    Returns
    -------
    bool
        Whether the lazy module was installed (not when ``fontTools.subset`` is already
        imported or fontTools is missing).

    Examples
    --------
    >>> import subprocess, sys
    >>> code = (
    ...     "import sys; from dpreg.plotting.studies import defer_pdf_font_subsetting;"
    ...     "deferred = defer_pdf_font_subsetting();"
    ...     "import matplotlib.backends.backend_pdf;"
    ...     "print(deferred, 'fontTools.varLib' in sys.modules);"
    ...     "from fontTools import subset; print(subset.Options().layout_closure)"
    ... )
    >>> print(subprocess.run([sys.executable, "-c", code], capture_output=True,
    ...                      text=True, check=True).stdout.strip())
    True False
    True
    """
    return defer_module("fontTools.subset")
