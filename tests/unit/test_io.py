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


def test_remove_stale_temporaries_removes_only_temporaries(tmp_path):
    from dpreg.io import remove_stale_temporaries, write_csv

    write_csv(pd.DataFrame({"a": [1]}), tmp_path / "results" / "t.csv")
    (tmp_path / "results" / "deep").mkdir()
    stale = [
        tmp_path / "results" / "deep" / ".chunk~000.parquet.x1y2.tmp",
        tmp_path / "resources" / ".file.csv.abc.part",
    ]
    stale[1].parent.mkdir()
    for path in stale:
        path.write_bytes(b"partial")
    keep = [tmp_path / "results" / "t.csv", tmp_path / "results" / "notes.tmp.txt"]
    keep[1].write_text("not ours")
    removed = remove_stale_temporaries(
        tmp_path / "results", tmp_path / "resources", tmp_path / "no"
    )
    assert sorted(removed) == sorted(stale)
    assert all(not p.exists() for p in stale) and all(p.exists() for p in keep)
