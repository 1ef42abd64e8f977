from __future__ import annotations

import pandas as pd
import pytest

from dpreg.io import atomic_write, sha256_file, write_csv, write_json


def test_atomic_write_leaves_nothing_when_the_writer_fails(tmp_path):
    dest = tmp_path / "out" / "table.csv"

    def failing(tmp):
        tmp.write_text("half")
        raise RuntimeError("killed")

    with pytest.raises(RuntimeError):
        atomic_write(dest, failing)
    assert list((tmp_path / "out").iterdir()) == []


def test_writers_are_deterministic(tmp_path):
    frame = pd.DataFrame({"a": [0.1 + 0.2, 1e-12], "b": ["x", "y"]})
    write_csv(frame, tmp_path / "1.csv")
    write_csv(frame, tmp_path / "2.csv")
    assert sha256_file(tmp_path / "1.csv") == sha256_file(tmp_path / "2.csv")
    write_json({"b": 1, "a": [1.5]}, tmp_path / "x.json")
    assert (tmp_path / "x.json").read_text() == '{\n  "a": [\n    1.5\n  ],\n  "b": 1\n}\n'
