"""Run code in a fresh interpreter with this test process's import path.

For the tests of what a process imports, how it sets itself up and what it measures
(start-up, the collector, the allocator, figure bytes): ``sys.modules`` and process
settings of the test process itself already hold everything.
"""

from __future__ import annotations

import os
import subprocess
import sys


def run_python(code: str, *args: str, env: dict[str, str] | None = None) -> str:
    """Run ``python -c code *args`` in a new interpreter; return its standard output.

    The child gets this process's ``sys.path`` as ``PYTHONPATH`` (so it imports the same
    dpreg) and ``env`` on top of this process's environment; a non-zero exit raises
    :class:`subprocess.CalledProcessError`.
    """
    out = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), **(env or {})},
    )
    return out.stdout
