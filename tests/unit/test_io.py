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


def test_a_damaged_prepared_table_is_named_with_how_to_rebuild(tmp_path):
    import pandas as pd
    import pytest

    from dpreg.io import read_prepared_table, sha256_file, write_json, write_parquet

    table = tmp_path / "toy.parquet"
    write_parquet(pd.DataFrame({"x": [1.0, 2.0]}), table)
    write_json({"table_sha256": sha256_file(table)}, tmp_path / "toy.json")
    assert read_prepared_table(table)["x"].tolist() == [1.0, 2.0]
    data = bytearray(table.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one flipped byte after the build
    table.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=r"toy.parquet is damaged.*--forcerun .*toy.parquet"):
        read_prepared_table(table)
    (tmp_path / "toy.json").unlink()  # no record: still a clear message, not pyarrow's
    table.write_bytes(b"not a parquet file")
    with pytest.raises(ValueError, match="toy.parquet cannot be read"):
        read_prepared_table(table)


def test_a_damaged_record_or_chunk_is_named_with_how_to_rebuild(tmp_path):
    import pandas as pd
    import pytest

    from dpreg.io import (
        read_artifact_parquet,
        read_json,
        read_prepared_table,
        write_json,
        write_parquet,
    )

    table = tmp_path / "toy.parquet"
    write_parquet(pd.DataFrame({"x": [1.0, 2.0]}), table)
    (tmp_path / "toy.json").write_text('{"table_sha256": "ab')  # truncated record
    with pytest.raises(ValueError, match=r"toy.json \(the record of toy.parquet\) is damaged"):
        read_prepared_table(table)
    write_json({"a": 1}, tmp_path / "ref.json")
    assert read_json(tmp_path / "ref.json") == {"a": 1}
    (tmp_path / "ref.json").write_bytes(b"\xff\xfe{")
    with pytest.raises(ValueError, match="ref.json is damaged: not valid JSON.*rerun snakemake"):
        read_json(tmp_path / "ref.json")
    assert read_artifact_parquet(table)["x"].tolist() == [1.0, 2.0]
    table.write_bytes(table.read_bytes()[:-20])  # a truncated chunk
    with pytest.raises(ValueError, match="toy.parquet is damaged and cannot be read.*rerun"):
        read_artifact_parquet(table)
    with pytest.raises(FileNotFoundError):
        read_artifact_parquet(tmp_path / "missing.parquet")
