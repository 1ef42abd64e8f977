"""dpreg.io.write_markdown: one table row per frame row, whatever the cells contain."""

from __future__ import annotations

import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from dpreg.io import write_markdown


@given(st.lists(st.text(max_size=20), min_size=1, max_size=5))
def test_every_row_is_one_table_row_with_its_columns(tmp_path_factory, texts):
    frame = pd.DataFrame({"a": texts, "b": range(len(texts))})
    path = write_markdown(frame, tmp_path_factory.mktemp("md") / "t.md")
    rows = path.read_text(encoding="utf-8").splitlines()
    assert len(rows) == 2 + len(texts)
    for line in rows:
        # unescaped pipes separate the 2 columns: 3 per row
        assert line.replace("\\|", "").count("|") == 3
