"""The README's worked example on a user table runs as written."""

from __future__ import annotations

import contextlib
import io
import os
import re

import numpy as np


def test_the_user_table_example_runs_as_written(repo_root):
    readme = (repo_root / "README.md").read_text()
    marker = "<!-- the block below runs as a test: tests/unit/test_readme_example.py -->"
    block = re.search(re.escape(marker) + r"\n```python\n(.*?)```", readme, re.S)
    assert block, "the README's marked example block is missing"
    namespace: dict = {}
    out = io.StringIO()
    cwd = os.getcwd()
    try:
        os.chdir(repo_root)
        with contextlib.redirect_stdout(out):
            exec(compile(block.group(1), "README.md", "exec"), namespace)  # noqa: S102
    finally:
        os.chdir(cwd)
    assert "DP linear regression" in out.getvalue()
    coef, intercept = namespace["coef"], namespace["intercept"]
    assert coef.shape == (5,) and np.isfinite(coef).all() and np.isfinite(intercept)
