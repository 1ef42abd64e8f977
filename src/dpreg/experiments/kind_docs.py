"""Regenerate the key tables of the study kinds in ``config/README.md``.

``python -m dpreg.experiments.kind_docs`` rewrites every block between
``<!-- generated from <Spec> ... -->`` and ``<!-- end generated -->`` with
:meth:`dpreg.experiments.params.KindParams.markdown_table` of that spec, and appends a
section for a kind whose spec has no block yet. ``tests/unit/test_kind_params.py`` fails
when the README is stale.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from dpreg.experiments.kinds import BUILTIN_KINDS
from dpreg.experiments.params import KindParams

__all__ = ["main", "render"]

_END = "<!-- end generated -->"


def _block(spec: type[KindParams]) -> str:
    module = spec.__module__
    return (
        f"<!-- generated from {spec.__name__} ({module}); tests/unit/test_kind_params.py -->\n"
        f"{spec.markdown_table()}\n{_END}"
    )


def render(readme: str) -> str:
    """Return ``readme`` with every kind's generated key table up to date."""
    for name, kind in BUILTIN_KINDS.items():
        spec = kind.params
        if spec is None:
            continue
        pattern = re.compile(rf"<!-- generated from {spec.__name__} [^\n]*-->\n.*?{_END}", re.S)
        if pattern.search(readme):
            readme = pattern.sub(lambda _m, s=spec: _block(s), readme)
        else:
            readme = readme.rstrip("\n") + f"\n\n### Keys of the `{name}` kind\n\n{_block(spec)}\n"
    return readme


def main(argv: list[str] | None = None) -> int:
    """Rewrite ``config/README.md`` (or the file given) in place."""
    argv = sys.argv[1:] if argv is None else argv
    path = Path(argv[0]) if argv else Path("config/README.md")
    path.write_text(render(path.read_text()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
