r"""A user's own table (CSV or parquet) with a codebook of public bounds, as a dataset.

:func:`load_table` reads the table, checks its sha256 (when given), selects the
codebook's columns and applies the codebook (:mod:`dpreg.data.codebook`): every value
outside its public range is clipped to it (``out_of_range: clip``) or the table is
refused (``refuse``); a missing value refuses the table (``missing: refuse``) or drops
its row (``drop``); then the public map :math:`\tilde x = ((x - c)/s)/K`,
:math:`\tilde y = (y - c_y)/s_y` puts every row in the unit ball, so the estimators run
with ``bound_X = bound_y = 1``. Each output row depends on its own input row only and
every factor comes from the codebook, so a DP estimator on the result is DP with respect
to the rows of the table (the codebook is public; ``docs/user-data.md``).

What is **outside** the guarantee, recorded as such in ``Dataset.preprocessing`` and
never written to any result: the numbers of clipped values and rows (counted for the
analyst, ``data_derived_nonprivate: true``), and with ``missing: drop`` the dropped rows
(the remaining ``n`` depends on the data; the estimators treat ``n`` as public).

Coefficients fitted on the scaled rows map back to original units with
:meth:`dpreg.data.codebook.PublicScaling.to_original` (``codebook.scaling()``, or
:func:`table_scaling` of a loaded dataset).

With ``test_fraction`` > 0, ``floor(test_fraction * n)`` rows drawn by
``numpy.random.default_rng(seed).permutation(n)`` are held out (:func:`load_table_split`
returns both parts; the workflow's ``prepare_dataset_with_test_rows`` writes them); the split
depends on ``n`` and the seed only, and the held-out rows get the same public map and clipping.

Examples
--------
>>> import pandas as pd
>>> from dpreg.data.codebook import parse_codebook
>>> book = parse_codebook(
...     {
...         "response": "y",
...         "features": ["a", "b"],
...         "columns": {"y": {"range": [-2, 2]}, "a": {"range": [0, 10]}, "b": {"range": [-1, 1]}},
...     }
... )
>>> frame = pd.DataFrame({"a": [1.0, 12.0, 5.0], "b": [0.5, -0.5, 0.0], "y": [1.0, -1.0, 3.0]})
>>> ds = load_table(frame, book, name="toy")
>>> ds.X.round(4).tolist(), ds.y.tolist()
([[0.0707, 0.3536], [0.7071, -0.3536], [0.3536, 0.0]], [0.5, -0.5, 1.0])
>>> [s["clipped_values"] for s in ds.preprocessing if s["step"] == "clip_counts"]
[{'y': 1, 'a': 1, 'b': 0}]
"""

from __future__ import annotations

import csv
import gzip
import math
import os
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpreg.data.acquire import DataIntegrityError, sha256_file
from dpreg.data.codebook import Codebook, CodebookError, PublicScaling, read_codebook
from dpreg.data.datasets import Dataset
from dpreg.data.private_scaling import PrivateScaling, private_standardisation

__all__ = [
    "LOADERS",
    "MAP",
    "NOT_RELEASED",
    "TABLE_SUFFIXES",
    "TableError",
    "check_table_options",
    "load_table",
    "load_table_split",
    "read_table",
    "standardisation_record",
    "table_columns",
    "table_scaling",
]

#: File names the loader reads: CSV (UTF-8, optionally gzip-compressed) and parquet.
TABLE_SUFFIXES = (".csv", ".csv.gz", ".parquet", ".pq")
#: The exact map applied (recorded in ``preprocessing``; :mod:`dpreg.data.codebook`).
MAP = (
    "x_j clipped to [low_j, high_j] (or refused), u_j = (x_j - c_j) / s_j, x~ = u / K "
    "(rows beyond ||x~|| = 1, possible only with feature_norm, projected onto the unit "
    "ball); y~ = (clip(y, low_y, high_y) - c_y) / s_y; z~ = ((z - c_z) / s_z) / sqrt(q). "
    "c = 0 and s = max(|low|, |high|) without an intercept, c = (low + high)/2 and "
    "s = (high - low)/2 with one; K = sqrt(d), or min(sqrt(d), (R + ||c||) / min s) with "
    "feature_norm R. Back to original units: beta_j = s_y theta_j / (K s_j), "
    "beta_0 = c_y + s_y theta_0 - sum_j beta_j c_j (PublicScaling.to_original)"
)
#: How the counts of clipped values are labelled (they are never part of a release).
NOT_RELEASED = (
    "not private: counted from the data without noise for the analyst, outside the "
    "guarantee; never written to a result"
)
_DROP_PRIVACY = (
    "not private: which rows have a missing value depends on the data, so dropping them is "
    "outside the guarantee (the remaining n is treated as public, like every n)"
)
_MAX_LISTED = 30
#: How the private standardisation's release is labelled (it is part of the release).
STANDARDISATION_PRIVACY = (
    "released with Gaussian noise: rho-zCDP under the zero-out relation (n public), "
    "composed into the fit's budget (dpreg.data.private_scaling, docs/user-data.md); the "
    "clip counts to the released boxes are outside the guarantee"
)


class TableError(ValueError):
    """A table cannot be used with its codebook; the message names the file and column."""


# ----------------------------------------------------------------------------- reading


def _suffix(path: Path) -> str:
    name = path.name.lower()
    for suffix in TABLE_SUFFIXES:
        if name.endswith(suffix):
            return suffix
    raise TableError(
        f"{path}: unknown table format; the table loader reads {', '.join(TABLE_SUFFIXES)}"
    )


def _listed(names: Collection[str]) -> str:
    names = list(names)
    more = f" ... ({len(names)} columns)" if len(names) > _MAX_LISTED else ""
    return str(names[:_MAX_LISTED])[:-1] + more + "]" if more else str(names)


def table_columns(path: str | os.PathLike[str]) -> list[str]:
    """Return the column names of a CSV or parquet table without reading its rows.

    A CSV's header is read as UTF-8 (a byte-order mark is removed); a repeated column
    name, an empty file or a file that is not UTF-8 text raises :class:`TableError`.
    """
    file = Path(path)
    suffix = _suffix(file)
    if suffix in (".parquet", ".pq"):
        import pyarrow.parquet as pq

        try:
            names = list(pq.read_schema(file).names)
        except Exception as err:  # pyarrow raises several types for a damaged file
            raise TableError(f"{file}: not a readable parquet file ({err})") from None
    else:
        opener: Any = gzip.open if suffix == ".csv.gz" else open
        try:
            with opener(file, "rt", encoding="utf-8-sig", newline="") as fh:
                header = next(csv.reader(fh), None)
        except UnicodeDecodeError as err:
            raise TableError(f"{file}: not UTF-8 text ({err}); save the table as UTF-8") from None
        except (OSError, csv.Error) as err:
            raise TableError(f"{file}: cannot read its header line ({err})") from None
        if not header or all(not h.strip() for h in header):
            raise TableError(f"{file}: the file is empty (no header line with column names)")
        names = header
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise TableError(f"{file}: column(s) {dup} appear more than once in the header")
    return names


def read_table(
    path: str | os.PathLike[str] | pd.DataFrame, columns: Collection[str]
) -> pd.DataFrame:
    """Read the given columns of a table as float64 (NaN for a missing value).

    Parameters
    ----------
    path : path-like or DataFrame
        A CSV (UTF-8, comma-separated, header line; ``.csv`` or ``.csv.gz``) or parquet
        (``.parquet``, ``.pq``) file, or a DataFrame already in memory.
    columns : collection of str
        The columns to read (others are never read into the result).

    Returns
    -------
    DataFrame
        The columns, in the given order, as float64, with the file's row order.

    Raises
    ------
    TableError
        Unknown format, unreadable file, a column missing from the table (all named),
        a non-numeric or boolean column (named, with the first offending data row), no
        data rows.
    """
    columns = list(columns)
    if isinstance(path, pd.DataFrame):
        source, frame, names = "<DataFrame>", path, [str(c) for c in path.columns]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise TableError(f"{source}: column(s) {dup} appear more than once")
    else:
        file = Path(path)
        source = os.fspath(path)
        if not file.is_file():
            raise FileNotFoundError(
                f"table {source} not found (relative paths start at {Path.cwd()})"
            )
        names = table_columns(file)
    missing = [c for c in columns if c not in names]
    if missing:
        raise TableError(
            f"{source}: column(s) {missing} named by the codebook are not in the table;"
            f" its columns are {_listed(names)}"
        )
    if not isinstance(path, pd.DataFrame):
        frame = _read_columns(file, columns)
    frame = frame[columns]
    if len(frame) == 0:
        raise TableError(f"{source}: the table has a header but no data rows")
    out = {}
    for name in columns:
        out[name] = _numeric(frame[name], name, source)
    return pd.DataFrame(out)


def _read_columns(file: Path, columns: list[str]) -> pd.DataFrame:
    try:
        if _suffix(file) in (".parquet", ".pq"):
            return pd.read_parquet(file, columns=columns)
        return pd.read_csv(file, usecols=columns, encoding="utf-8-sig", low_memory=False)
    except (ValueError, OSError, pd.errors.ParserError) as err:
        raise TableError(f"{file}: cannot be read as a table ({err})") from None


def _numeric(column: pd.Series, name: str, source: str) -> np.ndarray:
    dtype = column.dtype
    if pd.api.types.is_bool_dtype(dtype):
        raise TableError(
            f"{source}: column {name!r} is boolean; encode it as numbers (0/1) with a range"
        )
    if pd.api.types.is_complex_dtype(dtype):
        raise TableError(f"{source}: column {name!r} holds complex numbers; it must be real")
    if pd.api.types.is_numeric_dtype(dtype):
        return column.to_numpy(dtype=np.float64, na_value=np.nan)
    coerced = pd.to_numeric(column, errors="coerce")
    bad = np.flatnonzero(coerced.isna().to_numpy() & column.notna().to_numpy())
    where = f" (first at data row {bad[0] + 1}, {len(bad)} value(s) in all)" if len(bad) else ""
    raise TableError(
        f"{source}: column {name!r} is not numeric ({dtype}){where}; the codebook's columns"
        " must hold numbers (encode categories as numbers with a public range)"
    )


# ----------------------------------------------------------------------------- loading


def _check_fraction(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.floating):
        raise ValueError(f"test_fraction must be a number in [0, 1); got {value!r}")
    value = float(value)
    if not (0.0 <= value < 1.0):
        raise ValueError(f"test_fraction must lie in [0, 1); got {value!r}")
    return value


def _check_seed(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
        raise ValueError(f"seed must be an integer >= 0; got {value!r}")
    return int(value)


def _check_sha256(value: Any, key: str) -> str | None:
    if value is None:
        return None
    if (
        not isinstance(value, str)
        or len(value) != 64
        or any(c not in "0123456789abcdef" for c in value)
    ):
        raise ValueError(f"{key} must be 64 lower-case hex digits (a sha256); got {value!r}")
    return value


def _resolve_codebook(codebook: Any, codebook_sha256: str | None) -> Codebook:
    if isinstance(codebook, Codebook):
        if codebook_sha256 is not None and codebook.sha256 != codebook_sha256:
            raise DataIntegrityError(
                f"codebook {codebook.source} has sha256 {codebook.sha256} but"
                f" {codebook_sha256} is expected",
                path=codebook.source,
                expected=codebook_sha256,
                actual=str(codebook.sha256),
            )
        return codebook
    if isinstance(codebook, str | os.PathLike):
        return read_codebook(codebook, sha256=codebook_sha256)
    raise TypeError(f"codebook must be a Codebook or a path; got {type(codebook).__name__}")


def _verify(path: Any, sha256: str | None) -> str | None:
    """Return the file's sha256 after checking it against ``sha256`` (before any work)."""
    if isinstance(path, pd.DataFrame):
        if sha256 is not None:
            raise ValueError("sha256 is given but the table is a DataFrame, not a file")
        return None
    file = Path(path)
    if not file.is_file():
        raise FileNotFoundError(
            f"table {os.fspath(path)} not found (relative paths start at {Path.cwd()})"
        )
    actual = sha256_file(file)
    if sha256 is not None and actual != sha256:
        raise DataIntegrityError(
            f"table {os.fspath(path)} has sha256 {actual} but {sha256} is expected: the file"
            " changed since its sha256 was pinned; nothing was read. Check the file and pin"
            " the new sha256 if the change is intended",
            path=os.fspath(path),
            expected=sha256,
            actual=actual,
        )
    return actual


def _apply_ranges(
    A: np.ndarray, names: tuple[str, ...], book: Codebook, source: str, rows: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Clip (or refuse) each column to its range; return the values and the clip flags."""
    out = np.empty_like(A)
    flags = np.zeros_like(A, dtype=bool)
    for j, name in enumerate(names):
        low, high = book.range(name)
        column = A[:, j]
        outside = ~((column >= low) & (column <= high))
        if outside.any() and book.out_of_range == "refuse":
            first = int(rows[np.flatnonzero(outside)[0]])
            raise TableError(
                f"{source}: column {name!r} has {int(outside.sum())} value(s) outside its"
                f" public range [{low:g}, {high:g}] (first at data row {first}) and the"
                f" codebook {book.source} says out_of_range: refuse; fix the data, widen the"
                " range (before looking at the data), or use out_of_range: clip"
            )
        out[:, j] = np.clip(column, low, high)
        flags[:, j] = outside
    return out, flags


def load_table_split(
    path: str | os.PathLike[str] | pd.DataFrame,
    codebook: Codebook | str | os.PathLike[str],
    *,
    sha256: str | None = None,
    codebook_sha256: str | None = None,
    name: str | None = None,
    test_fraction: float = 0.0,
    seed: int = 0,
    fetcher: Any = None,
    standardise_rho: float | None = None,
    rng: np.random.Generator | int | None = None,
) -> tuple[Dataset, Dataset | None]:
    """Load a table with its codebook and split off the held-out rows.

    Parameters as :func:`load_table`.

    Returns
    -------
    train : Dataset
        Every row when ``test_fraction`` is 0, else the rows not held out.
    test : Dataset or None
        The ``floor(test_fraction * n)`` held-out rows (same map, same clipping), or
        ``None`` when ``test_fraction`` is 0.
    """
    del fetcher  # nothing is fetched: the table is a local file
    test_fraction = _check_fraction(test_fraction)
    seed = _check_seed(seed)
    sha256 = _check_sha256(sha256, "sha256")
    codebook_sha256 = _check_sha256(codebook_sha256, "codebook_sha256")
    book = _resolve_codebook(codebook, codebook_sha256)
    if book.standardise is not None and standardise_rho is None:
        raise ValueError(
            f"codebook {book.source}: standardise: a private standardisation spends budget,"
            " so it needs its zCDP level: pass standardise_rho (and rng), or fit with"
            " dpreg.linear_model.fit_table / dpreg fit, which split the budget"
        )
    if standardise_rho is not None and book.standardise is None:
        raise ValueError(
            f"standardise_rho is given but the codebook {book.source} has no standardise:"
            " entry (its k and floor); add one"
        )
    actual = _verify(path, sha256)
    source = "<DataFrame>" if isinstance(path, pd.DataFrame) else os.fspath(path)
    if name is None:
        name = "table" if isinstance(path, pd.DataFrame) else Path(path).name.split(".")[0]
    frame = read_table(path, book.names)
    A = frame.to_numpy(dtype=np.float64)
    rows = np.arange(1, A.shape[0] + 1)  # 1-based data rows, for messages
    steps: list[dict[str, Any]] = []
    nan = np.isnan(A)
    if nan.any():
        counts = {c: int(k) for c, k in zip(book.names, nan.sum(axis=0), strict=True) if k}
        if book.missing == "refuse":
            first = int(rows[np.flatnonzero(nan.any(axis=1))[0]])
            raise TableError(
                f"{source}: missing values in column(s) {sorted(counts)} ({sum(counts.values())}"
                f" in all, first at data row {first}) and the codebook {book.source} says"
                " missing: refuse; fill them in, or use missing: drop (outside the privacy"
                " guarantee)"
            )
        keep = ~nan.any(axis=1)
        A, rows = A[keep], rows[keep]
        steps.append(
            {
                "step": "drop_missing",
                "rows_dropped": int((~keep).sum()),
                "missing_values": counts,
                "data_derived_nonprivate": True,
                "privacy": _DROP_PRIVACY,
            }
        )
        if A.shape[0] == 0:
            raise TableError(f"{source}: no rows left after dropping rows with missing values")
    n = A.shape[0]
    d = len(book.features)
    n_test = math.floor(test_fraction * n + 1e-9)  # the guard absorbs 0.29 * 100 = 28.99...
    if test_fraction > 0 and n_test == 0:
        raise TableError(
            f"{source}: test_fraction {test_fraction:g} of {n} rows holds out no row; raise it"
            " or set it to 0"
        )
    n_train = n - n_test
    need = d + int(book.intercept)
    if n_train < need:
        what = f"{d} feature(s)" + (" and an intercept" if book.intercept else "")
        raise TableError(
            f"{source}: {n_train} training row(s) for {what}: a regression needs n >= d"
            f" (here {need}); use more rows or fewer features"
        )
    # Ranges: clip (or refuse) value by value, in original units.
    y, y_flags = _apply_ranges(A[:, :1], (book.response,), book, source, rows)
    X, x_flags = _apply_ranges(A[:, 1 : 1 + d], book.features, book, source, rows)
    Z = Z_flags = None
    if book.instruments:
        Z, Z_flags = _apply_ranges(A[:, 1 + d :], book.instruments, book, source, rows)
    if test_fraction > 0:
        perm = np.random.default_rng(seed).permutation(n)
        parts = {"train": np.sort(perm[n_test:]), "test": np.sort(perm[:n_test])}
    else:
        parts = {"train": np.arange(n)}
    release = None
    if standardise_rho is not None:
        # The private release uses the training rows only (n_train public); every row is
        # then clipped to the released boxes (always clipped, never refused).
        release = _standardise(y, X, book, parts["train"], standardise_rho, rng)
        y, X, boxed = _clip_to_boxes(y, X, release.codebook)
        book = release.codebook
    scaling = book.scaling()
    if book.feature_norm is not None:
        norms = np.linalg.norm(X, axis=1)
        beyond = norms > book.feature_norm * (1 + 1e-12)
        if beyond.any() and book.out_of_range == "refuse":
            raise TableError(
                f"{source}: {int(beyond.sum())} row(s) have a feature norm above feature_norm"
                f" {book.feature_norm:g} (first at data row {int(rows[np.flatnonzero(beyond)[0]])})"
                f" and the codebook {book.source} says out_of_range: refuse"
            )
    # The public map; np.clip only absorbs rounding at the range ends.
    Xs = np.clip(scaling.transform_X(X) * scaling.feature_norm, -1.0, 1.0) / scaling.feature_norm
    row_norms = np.linalg.norm(Xs, axis=1)
    projected = row_norms > 1.0 + 1e-12  # beyond rounding: only with feature_norm
    Xs = Xs / np.maximum(row_norms, 1.0)[:, None]
    ys = np.clip(scaling.transform_y(y[:, 0]), -1.0, 1.0)
    Zs = None
    if Z is not None:
        Zs = (
            np.clip(scaling.transform_Z(Z) * scaling.instrument_norm, -1.0, 1.0)
            / scaling.instrument_norm
        )
    record = {
        "step": "codebook",
        "file": source,
        "file_sha256": actual,
        "codebook": book.source,
        "codebook_sha256": book.sha256,
        "bounds": "public",
        "data_derived_nonprivate": False,
        "bound_X": 1.0,
        "bound_y": 1.0,
        "intercept": book.intercept,
        "out_of_range": book.out_of_range,
        "missing": book.missing,
        "map": MAP,
        "scaling": scaling.to_dict(),
    }
    flags = np.hstack([y_flags, x_flags] + ([Z_flags] if Z_flags is not None else []))
    description = f"user table {source} with codebook {book.source}" + (
        f": {book.description.rstrip('. ')}" if book.description else ""
    )
    sources: list[tuple[str, str | None]] = []
    if actual is not None:
        sources.append((f"table:{source}", actual))
    if book.sha256 is not None:
        sources.append((f"codebook:{book.source}", book.sha256))
    out: dict[str, Dataset] = {}
    for part, idx in parts.items():
        part_steps = list(steps)
        if release is not None:
            part_steps.append(
                {
                    "step": "private_standardisation",
                    **release.to_dict(),
                    "released_on": "train",
                    "data_derived_nonprivate": False,
                    "privacy": STANDARDISATION_PRIVACY,
                }
            )
        part_steps.append(record)
        if test_fraction > 0:
            part_steps.append(
                {
                    "step": "split",
                    "part": part,
                    "rule": "numpy.random.default_rng(seed).permutation(n); the first"
                    " floor(test_fraction * n) rows held out, each part in file order",
                    "test_fraction": test_fraction,
                    "seed": seed,
                    "n_train": n_train,
                    "n_test": n_test,
                    "data_derived_nonprivate": False,
                }
            )
        if book.out_of_range == "clip":
            part_steps.append(
                {
                    "step": "clip_counts",
                    "counted_on": part,
                    "clipped_values": {
                        c: int(k) for c, k in zip(book.names, flags[idx].sum(axis=0), strict=True)
                    },
                    "clipped_rows": int(flags[idx].any(axis=1).sum()),
                    "rows_projected_to_the_unit_ball": int(projected[idx].sum()),
                    "data_derived_nonprivate": True,
                    "privacy": NOT_RELEASED,
                }
            )
        if release is not None:
            part_steps.append(
                {
                    "step": "private_box_clip_counts",
                    "counted_on": part,
                    "clipped_to_private_box": {
                        c: int(k)
                        for c, k in zip(release.names, boxed[idx].sum(axis=0), strict=True)
                    },
                    "data_derived_nonprivate": True,
                    "privacy": NOT_RELEASED,
                }
            )
        out[part] = Dataset(
            name=name,
            X=Xs[idx],
            y=ys[idx],
            Z=None if Zs is None else Zs[idx],
            feature_names=book.features,
            target_name=book.response,
            instrument_names=book.instruments,
            split=None
            if test_fraction == 0
            else f"random {1 - test_fraction:g}/{test_fraction:g}, seed {seed}",
            sources=tuple(sources),
            description=description
            + ("" if part == "train" or len(parts) == 1 else ": held-out test rows"),
            preprocessing=tuple(part_steps),
        )
    return out["train"], out.get("test")


def _standardise(
    y: np.ndarray,
    X: np.ndarray,
    book: Codebook,
    train: np.ndarray,
    rho: float,
    rng: np.random.Generator | int | None,
) -> PrivateScaling:
    generator = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    values = np.column_stack([y[train, 0], X[train]])
    return private_standardisation(values, book, rho=rho, rng=generator)


def _clip_to_boxes(
    y: np.ndarray, X: np.ndarray, book: Codebook
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Clip the response and features to the released boxes; return them and the flags."""
    A = np.column_stack([y, X])
    ranges = np.array([book.range(name) for name in (book.response, *book.features)])
    clipped = np.clip(A, ranges[:, 0], ranges[:, 1])
    return clipped[:, :1], clipped[:, 1:], clipped != A


def load_table(
    path: str | os.PathLike[str] | pd.DataFrame,
    codebook: Codebook | str | os.PathLike[str],
    *,
    sha256: str | None = None,
    codebook_sha256: str | None = None,
    name: str | None = None,
    test_fraction: float = 0.0,
    seed: int = 0,
    fetcher: Any = None,
    standardise_rho: float | None = None,
    rng: np.random.Generator | int | None = None,
) -> Dataset:
    """Load a user's table with its codebook: rows in the unit ball (module docstring).

    Parameters
    ----------
    path : path-like or DataFrame
        The table: CSV (UTF-8, header line, ``.csv`` or ``.csv.gz``) or parquet
        (``.parquet``, ``.pq``); only the codebook's columns are used. A DataFrame in
        memory is accepted too (then no ``sha256``).
    codebook : Codebook or path-like
        The codebook (:func:`dpreg.data.codebook.read_codebook` reads a path).
    sha256 : str, optional
        The table file's expected sha256: a file whose bytes differ is refused before
        anything is read (:class:`dpreg.data.DataIntegrityError`).
    codebook_sha256 : str, optional
        The same for the codebook file.
    name : str, optional
        Dataset name (default: the file name without its suffixes).
    test_fraction : float, default 0
        Share of the rows held out (``floor(test_fraction * n)`` rows); 0 holds out none.
    seed : int, default 0
        Seed of the held-out rows' permutation (the workflow passes the dataset's seed).
    fetcher : ignored
        Accepted like every loader's (nothing is downloaded).
    standardise_rho : float, optional
        Only with a codebook that has ``standardise:`` (and then required): the zCDP
        level spent on the private means and standard deviations of the training rows
        (:mod:`dpreg.data.private_scaling`); the rows are then clipped to the released
        boxes and mapped with them, and ``preprocessing`` records the release (step
        ``private_standardisation``) and the clip counts to the boxes (step
        ``private_box_clip_counts``, outside the guarantee). The caller composes this
        level into the fit's budget (:func:`dpreg.linear_model.fit_table` does).
    rng : numpy.random.Generator or int, optional
        Source of the standardisation's noise.

    Returns
    -------
    Dataset
        The training rows (every row when ``test_fraction`` is 0): ``X`` with
        ``||x_i|| <= 1``, ``y`` with ``|y_i| <= 1``, ``Z`` (``||z_i|| <= 1``) when the
        codebook has instruments. ``preprocessing`` records the codebook's sha256, the
        public factors and the map (``step: codebook``), the split, the counts of clipped
        values (``step: clip_counts``, outside the guarantee) and, with ``missing:
        drop``, the dropped rows (``step: drop_missing``, outside the guarantee).

    Raises
    ------
    FileNotFoundError
        No table or codebook file.
    DataIntegrityError
        A sha256 differs.
    CodebookError, TableError, ValueError
        A bad codebook, a missing or non-numeric column, a missing value or a value out
        of range under ``refuse``, no rows, fewer rows than features; every message
        names the file and the column or key.
    """
    return load_table_split(
        path,
        codebook,
        sha256=sha256,
        codebook_sha256=codebook_sha256,
        name=name,
        test_fraction=test_fraction,
        seed=seed,
        fetcher=fetcher,
        standardise_rho=standardise_rho,
        rng=rng,
    )[0]


load_table.split = load_table_split  # type: ignore[attr-defined]


def table_scaling(dataset: Dataset) -> PublicScaling:
    """Return the public map of a dataset loaded by :func:`load_table` (from its record).

    Its :meth:`~dpreg.data.codebook.PublicScaling.to_original` maps coefficients fitted
    on ``dataset`` back to original units; works on a dataset read back from a prepared
    table too (``Dataset.from_frame`` keeps ``preprocessing``).
    """
    for step in dataset.preprocessing:
        if step.get("step") == "codebook":
            return PublicScaling.from_dict(step["scaling"])
    raise ValueError(f"{dataset.name}: not loaded from a table with a codebook (no codebook step)")


def standardisation_record(dataset: Dataset) -> dict[str, Any] | None:
    """Return the private standardisation's release recorded on a loaded dataset, or None.

    The step ``private_standardisation`` of ``preprocessing`` (public: part of the
    release; :meth:`dpreg.data.private_scaling.PrivateScaling.to_dict`).

    Examples
    --------
    >>> import pandas as pd
    >>> from dpreg.data.codebook import parse_codebook
    >>> book = parse_codebook({"response": "y", "features": ["x"], "standardise": {"share": 0.1},
    ...     "columns": {"y": {"range": [-9, 9]}, "x": {"range": [-9, 9]}}})
    >>> frame = pd.DataFrame({"x": [0.1, -0.2, 0.3, 0.0] * 50, "y": [0.0, 0.1, -0.1, 0.2] * 50})
    >>> record = standardisation_record(load_table(frame, book, standardise_rho=1.0, rng=0))
    >>> record["columns"], record["n"], len(record["rounds"])
    (['y', 'x'], 200, 3)
    >>> from dataclasses import replace
    >>> standardisation_record(load_table(frame, replace(book, standardise=None))) is None
    True
    """
    for step in dataset.preprocessing:
        if step.get("step") == "private_standardisation":
            return dict(step)
    return None


# ----------------------------------------------------------------------------- config


def check_table_options(
    options: Mapping[str, Any],
    *,
    where: str = "table",
    produced: Collection[str] = (),
    require_sha256: bool = True,
) -> Codebook:
    """Check a ``table`` dataset entry's options before any job runs (``dpreg.config``).

    The codebook is read and verified against ``codebook_sha256``; the table, if it
    exists, is verified against ``sha256`` and its header must hold the codebook's
    columns. A table that does not exist yet is accepted only if the workflow makes it
    (``produced``, e.g. :func:`dpreg.data.examples.example_table_path`); its sha256 is
    then verified when it is loaded, before any work.

    Parameters
    ----------
    options : mapping
        The entry's ``options``: ``path``, ``codebook``, ``sha256``,
        ``codebook_sha256``, ``test_fraction``, ``seed``, ``name``.
    where : str
        Prefix of every message (e.g. ``config datasets.mine.options``).
    produced : collection of str
        Paths a workflow rule writes (relative to the working directory).
    require_sha256 : bool, default True
        Whether ``sha256`` and ``codebook_sha256`` must be given (the workflow: yes).

    Returns
    -------
    Codebook
    """
    for key in ("path", "codebook"):
        value = options.get(key)
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"{where}.{key}: required, a file path (text); got {value!r}")
    path, book_path = options["path"], options["codebook"]
    try:
        if "test_fraction" in options:
            _check_fraction(options["test_fraction"])
        if "seed" in options:
            _check_seed(options["seed"])
        digests = {k: _check_sha256(options.get(k), k) for k in ("sha256", "codebook_sha256")}
    except ValueError as err:
        raise ValueError(f"{where}.{err}") from None
    files = {"sha256": Path(path), "codebook_sha256": Path(book_path)}
    for key, file in files.items():
        if digests[key] is None and require_sha256:
            pin = f" ({key}: {sha256_file(file)})" if file.is_file() else ""
            raise ValueError(
                f"{where}.{key}: required: pin the sha256 of {file}{pin} so that a changed"
                " file stops the run"
            )
    if not Path(book_path).is_file():
        raise ValueError(
            f"{where}.codebook: {book_path} not found (relative paths start at {Path.cwd()})"
        )
    try:
        book = read_codebook(book_path, sha256=digests["codebook_sha256"])
    except (CodebookError, DataIntegrityError) as err:
        raise ValueError(f"{where}.codebook: {err}") from None
    if book.standardise is not None:
        raise ValueError(
            f"{where}.codebook: {book_path}: standardise: the workflow's table loader has no"
            " budget to spend on a private standardisation; remove the entry (it is for"
            " dpreg fit and dpreg.linear_model.fit_table)"
        )
    if Path(path).is_file():
        try:
            _verify(path, digests["sha256"])
            names = table_columns(path)
        except (TableError, DataIntegrityError) as err:
            raise ValueError(f"{where}.path: {err}") from None
        missing = [c for c in book.names if c not in names]
        if missing:
            raise ValueError(
                f"{where}.path: {path}: column(s) {missing} named by the codebook {book_path}"
                f" are not in the table; its columns are {_listed(names)}"
            )
    elif os.path.normpath(path) not in {os.path.normpath(p) for p in produced}:
        raise ValueError(
            f"{where}.path: table {path} not found (relative paths start at {Path.cwd()})"
        )
    return book


#: The loader of this module by name (the registry is :mod:`dpreg.data.loaders`).
LOADERS = {"table": load_table}
