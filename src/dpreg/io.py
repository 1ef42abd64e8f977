"""Deterministic, atomic writers for workflow artifacts (the only file I/O of the library).

Atomic: write to a temporary file in the destination folder, then ``os.replace``, so a
killed job never leaves a half-written artifact. Deterministic: sorted JSON keys, fixed
float formatting, no timestamps, so reruns are byte-identical.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pandas is imported by the readers: a job that only hashes or writes
    import pandas as pd  # text (artifact_manifest) does not load it (docs/scaling.md)


def atomic_write(path: str | os.PathLike[str], write: Callable[[Path], None]) -> Path:
    """Call ``write(tmp_path)`` then move the temporary file onto ``path``."""
    dest = Path(path)
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        write(tmp)
        os.replace(tmp, dest)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return dest


STALE_TEMPORARY_PATTERNS = (".*.tmp", ".*.part")
"""Names of the temporaries of :func:`atomic_write` and of verified downloads."""


def remove_stale_temporaries(*roots: str | os.PathLike[str]) -> list[Path]:
    """Delete temporaries a killed job left under ``roots``; return what was removed.

    A job killed by SIGKILL (or a node failure) cannot run :func:`atomic_write`'s clean-up,
    so its ``.<name>.<random>.tmp`` stays beside the artifact. The workflow calls this once
    at start-up (``onstart``, main process only: Snakemake passes ``--no-hooks`` to the jobs
    it spawns), when no job of this working directory can be running (Snakemake's lock).
    """
    removed = []
    for root in map(Path, roots):
        if not root.is_dir():
            continue
        for pattern in STALE_TEMPORARY_PATTERNS:
            for path in sorted(root.rglob(pattern)):
                if path.is_file():
                    path.unlink()
                    removed.append(path)
    return removed


def write_parquet(
    frame: pd.DataFrame, path: str | os.PathLike[str], metadata: dict[str, str] | None = None
) -> Path:
    """Write a DataFrame to parquet atomically (no index), with optional schema metadata."""
    if not metadata:
        return atomic_write(path, lambda tmp: frame.to_parquet(tmp, index=False))
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(frame, preserve_index=False)
    merged = {
        **(table.schema.metadata or {}),
        **{k.encode(): v.encode() for k, v in metadata.items()},
    }
    table = table.replace_schema_metadata(merged)
    return atomic_write(path, lambda tmp: pq.write_table(table, tmp))


def write_trial_rows(frame: pd.DataFrame, path: str | os.PathLike[str]) -> Path:
    """Write per-trial rows with the list of columns outside the privacy guarantee.

    Schema metadata ``dpreg.nonprivate_columns`` (JSON list,
    :func:`dpreg.results.nonprivate_columns`) names the columns computed from the data
    without noise, so a reader of the file knows which values no budget covers.
    """
    from dpreg.results import nonprivate_columns

    return write_parquet(
        frame,
        path,
        metadata={"dpreg.nonprivate_columns": json.dumps(nonprivate_columns(frame.columns))},
    )


def write_csv(frame: pd.DataFrame, path: str | os.PathLike[str]) -> Path:
    """Write a DataFrame to CSV atomically with 10 significant digits."""
    return atomic_write(
        path, lambda tmp: frame.to_csv(tmp, index=False, float_format="%.10g", lineterminator="\n")
    )


def write_markdown(frame: pd.DataFrame, path: str | os.PathLike[str], title: str = "") -> Path:
    """Write a DataFrame as a GitHub markdown table (6 significant digits).

    A ``|`` inside a cell is escaped and a line break becomes a space, so every row stays
    one row of the table.
    """

    def _cell(value: Any) -> str:
        if isinstance(value, float):
            return f"{value:.6g}"
        return " ".join(str(value).splitlines()).replace("|", "\\|")

    lines = [f"# {title}", ""] if title else []
    from dpreg.results import nonprivate_columns

    outside = nonprivate_columns(frame.columns)
    if outside:
        lines += [
            "Computed from the data without noise, outside the privacy guarantee: "
            + ", ".join(f"`{c}`" for c in outside),
            "",
        ]
    lines.append("| " + " | ".join(map(str, frame.columns)) + " |")
    lines.append("|" + "---|" * len(frame.columns))
    for row in frame.itertuples(index=False):
        lines.append("| " + " | ".join(_cell(v) for v in row) + " |")
    text = "\n".join(lines) + "\n"
    return atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def write_json(data: Any, path: str | os.PathLike[str]) -> Path:
    """Write JSON atomically with sorted keys and a trailing newline."""
    text = json.dumps(data, indent=2, sort_keys=True, allow_nan=True) + "\n"
    return atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


REBUILD_HINT = "delete it and rerun snakemake, which rebuilds what is missing"
"""How to rebuild a damaged workflow artifact (Snakemake reruns the job of a missing file)."""


def read_json(path: str | os.PathLike[str]) -> Any:
    """Read a JSON file; a damaged one raises ``ValueError`` naming it and how to rebuild it."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{path} is damaged: not valid JSON ({err}); {REBUILD_HINT}") from None


def read_artifact_parquet(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read a parquet file the workflow wrote (e.g. a chunk of per-trial rows).

    A truncated or overwritten file raises ``ValueError`` naming it and how to rebuild it
    instead of pyarrow's own error (which names neither).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "job~000.parquet"
    >>> _ = path.write_bytes(b"PAR1 truncated")
    >>> read_artifact_parquet(path)
    Traceback (most recent call last):
    ...
    ValueError: .../job~000.parquet is damaged and cannot be read (...); delete it and rerun ...
    """
    import pandas as pd

    try:
        return pd.read_parquet(path)
    except FileNotFoundError:
        raise
    except Exception as err:  # pyarrow raises several types for a corrupt file
        raise ValueError(
            f"{path} is damaged and cannot be read ({type(err).__name__}: {err}); {REBUILD_HINT}"
        ) from None


def sha256_file(path: str | os.PathLike[str]) -> str:
    """Hex sha256 of a file, streamed."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_prepared_table(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read a prepared dataset, verified against the sha256 recorded when it was built.

    The preparation step writes ``table_sha256`` into the dataset's ``.json`` sidecar
    (same name, next to the parquet file: ``{dataset}.json`` for ``{dataset}.parquet``,
    ``{dataset}.test.json`` for the test rows' ``{dataset}.test.parquet``). A file
    damaged or replaced after it was built is refused with a message naming it and how
    to rebuild it, instead of a raw pyarrow error (or, worse, a silently different
    dataset).
    """
    path = Path(path)
    meta_path = path.with_suffix(".json")  # x.test.parquet -> x.test.json
    rule = (
        "prepare_dataset_with_test_rows"
        if path.name.endswith(".test.parquet")
        else "prepare_dataset"
    )
    rebuild = (
        f"delete it (and {meta_path.name}) and rerun snakemake, or add"
        f" `--forcerun {path}` to your snakemake command (the {rule} rule rebuilds it)"
    )
    if meta_path.is_file():
        try:
            expected = read_json(meta_path).get("table_sha256")
        except ValueError:
            raise ValueError(
                f"{meta_path} (the record of {path.name}) is damaged: not valid JSON; {rebuild}"
            ) from None
        if expected is not None:
            actual = sha256_file(path)
            if actual != expected:
                raise ValueError(
                    f"{path} is damaged: its sha256 {actual[:12]}... differs from"
                    f" {expected[:12]}... recorded when it was built; {rebuild}"
                )
    import pandas as pd

    try:
        return pd.read_parquet(path)
    except Exception as err:  # pyarrow raises several types for a corrupt file
        raise ValueError(f"{path} cannot be read ({err}); {rebuild}") from None
