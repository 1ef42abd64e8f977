"""The :class:`Dataset` container and the registry of named dataset loaders."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from dpreg._validation import check_matrix, check_vector

__all__ = [
    "Dataset",
]

_ATTRS_KEY = "dpreg"
TRAIN_COLUMN = "is_train"


@dataclass(frozen=True, eq=False)
class Dataset:
    """A regression (or IV regression) data set with its provenance.

    Attributes
    ----------
    name : str
        Registry name, e.g. ``"airfoil"``.
    X : ndarray of shape (n, d)
        Features (regressors), float64, finite.
    y : ndarray of shape (n,)
        Response, float64, finite.
    Z : ndarray of shape (n, q) or None
        Instruments (for IV data), float64, finite.
    feature_names : tuple of str
        ``d`` column names of ``X`` (default ``x0, x1, ...``).
    target_name : str
        Name of ``y``.
    instrument_names : tuple of str
        ``q`` column names of ``Z`` (default ``z0, ...``; empty without ``Z``).
    train_mask : ndarray of shape (n,), bool, or None
        ``True`` for training rows; ``None`` when no split was chosen.
    split : str or None
        Human-readable description of the split (e.g. which mask column).
    sources : tuple of (str, str or None)
        ``(source id, sha256)`` of every input file; ids are manifest ids where the
        file comes from the manifest.
    description : str
        Free text.
    preprocessing : tuple of dict
        JSON-able record of every transformation applied, in order.

    Notes
    -----
    Instances are immutable; transformations return new instances. ``eq=False``:
    instances compare by identity (arrays have no scalar equality).
    """

    name: str
    X: np.ndarray
    y: np.ndarray
    Z: np.ndarray | None = None
    feature_names: tuple[str, ...] = ()
    target_name: str = "y"
    instrument_names: tuple[str, ...] = ()
    train_mask: np.ndarray | None = None
    split: str | None = None
    sources: tuple[tuple[str, str | None], ...] = ()
    description: str = ""
    preprocessing: tuple[dict[str, Any], ...] = field(default=())

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"name must be a non-empty string; got {self.name!r}")
        X = check_matrix(self.X, "X")
        n, d = X.shape
        y = check_vector(self.y, n, "y")
        object.__setattr__(self, "X", X)
        object.__setattr__(self, "y", y)
        fnames = tuple(self.feature_names) or tuple(f"x{j}" for j in range(d))
        if len(fnames) != d:
            raise ValueError(f"feature_names has {len(fnames)} names but X has d={d} columns")
        object.__setattr__(self, "feature_names", tuple(str(s) for s in fnames))
        if self.Z is not None:
            Z = check_matrix(self.Z, "Z")
            if Z.shape[0] != n:
                raise ValueError(f"Z has {Z.shape[0]} rows but X has {n}; they must match")
            object.__setattr__(self, "Z", Z)
            znames = tuple(self.instrument_names) or tuple(f"z{j}" for j in range(Z.shape[1]))
            if len(znames) != Z.shape[1]:
                raise ValueError(
                    f"instrument_names has {len(znames)} names but Z has {Z.shape[1]} columns"
                )
            object.__setattr__(self, "instrument_names", tuple(str(s) for s in znames))
        elif self.instrument_names:
            raise ValueError("instrument_names given but Z is None")
        if self.train_mask is not None:
            mask = np.asarray(self.train_mask)
            if mask.dtype != np.bool_:
                if not np.isin(mask, (0, 1)).all():
                    raise ValueError("train_mask must be boolean (or 0/1)")
                mask = mask.astype(bool)
            if mask.shape != (n,):
                raise ValueError(f"train_mask must have shape ({n},); got {mask.shape}")
            object.__setattr__(self, "train_mask", mask)
        self._check_names()
        object.__setattr__(
            self, "sources", tuple((str(i), None if h is None else str(h)) for i, h in self.sources)
        )
        object.__setattr__(self, "preprocessing", tuple(dict(p) for p in self.preprocessing))

    def _check_names(self) -> None:
        fn, zn = self.feature_names, self.instrument_names
        for label, names in (("feature_names", fn), ("instrument_names", zn)):
            dup = sorted({s for s in names if names.count(s) > 1})
            if dup:
                raise ValueError(f"{label} must be unique; duplicates: {dup}")
        if self.target_name in fn or self.target_name in zn or self.target_name == TRAIN_COLUMN:
            raise ValueError(
                f"target_name {self.target_name!r} clashes with a feature, instrument or "
                f"the reserved column {TRAIN_COLUMN!r}"
            )
        if TRAIN_COLUMN in fn or TRAIN_COLUMN in zn:
            raise ValueError(f"{TRAIN_COLUMN!r} is reserved for the train mask column")
        # A name in both X and Z is an exogenous regressor that instruments itself: the
        # columns must be identical (to_frame writes it once).
        for name in set(fn) & set(zn):
            assert self.Z is not None
            if not np.array_equal(self.X[:, fn.index(name)], self.Z[:, zn.index(name)]):
                raise ValueError(
                    f"column {name!r} is in both X and Z but with different values; "
                    "rename one of them"
                )

    @property
    def n(self) -> int:
        """Number of rows."""
        return int(self.X.shape[0])

    @property
    def d(self) -> int:
        """Number of features."""
        return int(self.X.shape[1])

    @property
    def q(self) -> int:
        """Number of instruments (0 without ``Z``)."""
        return 0 if self.Z is None else int(self.Z.shape[1])

    def with_(self, **changes: Any) -> Dataset:
        """Return a copy with some fields replaced (validated again)."""
        return replace(self, **changes)

    def subset(self, rows: np.ndarray, *, step: Mapping[str, Any] | None = None) -> Dataset:
        """Return the rows selected by a boolean mask or index array.

        The train mask is carried along; ``step`` is appended to ``preprocessing``.
        """
        rows = np.asarray(rows)
        if rows.dtype == np.bool_ and rows.shape != (self.n,):
            raise ValueError(f"a boolean row mask must have shape ({self.n},); got {rows.shape}")
        return replace(
            self,
            X=self.X[rows],
            y=self.y[rows],
            Z=None if self.Z is None else self.Z[rows],
            train_mask=None if self.train_mask is None else self.train_mask[rows],
            preprocessing=self.preprocessing + ((dict(step),) if step else ()),
        )

    def metadata(self) -> dict[str, Any]:
        """Return a JSON-able summary: sizes, names, sources with sha256, preprocessing."""
        meta: dict[str, Any] = {
            "name": self.name,
            "n": self.n,
            "d": self.d,
            "q": self.q,
            "feature_names": list(self.feature_names),
            "target_name": self.target_name,
            "instrument_names": list(self.instrument_names),
            "split": self.split,
            "n_train": None if self.train_mask is None else int(self.train_mask.sum()),
            "n_test": None if self.train_mask is None else int((~self.train_mask).sum()),
            "sources": [{"id": i, "sha256": h} for i, h in self.sources],
            "description": self.description,
            "preprocessing": [dict(p) for p in self.preprocessing],
        }
        # Fail here, not later in the workflow, if something is not JSON-able.
        json.dumps(meta)
        return meta

    def to_frame(self) -> pd.DataFrame:
        """Return a DataFrame: features, instruments, target and (if split) ``is_train``.

        The column roles and :meth:`metadata` are stored in ``DataFrame.attrs["dpreg"]``
        (pyarrow keeps ``attrs`` in Parquet files), so :meth:`from_frame` inverts this.
        """
        cols: dict[str, np.ndarray] = {}
        for j, c in enumerate(self.feature_names):
            cols[c] = self.X[:, j]
        if self.Z is not None:
            for j, c in enumerate(self.instrument_names):
                cols.setdefault(c, self.Z[:, j])  # shared exogenous columns appear once
        cols[self.target_name] = self.y
        if self.train_mask is not None:
            cols[TRAIN_COLUMN] = self.train_mask
        df = pd.DataFrame(cols)
        df.attrs[_ATTRS_KEY] = self.metadata()
        return df

    @classmethod
    def from_frame(
        cls,
        df: pd.DataFrame,
        *,
        name: str | None = None,
        target: str | None = None,
        features: Sequence[str] | None = None,
        instruments: Sequence[str] | None = None,
        train_column: str | None = TRAIN_COLUMN,
        sources: Sequence[tuple[str, str | None]] | None = None,
        description: str | None = None,
    ) -> Dataset:
        """Build a Dataset from a DataFrame (the inverse of :meth:`to_frame`).

        Column roles default to those stored by :meth:`to_frame` in
        ``df.attrs["dpreg"]``; without them ``name`` and ``target`` are required and
        ``features`` defaults to every other column except instruments and
        ``train_column``.

        Parameters
        ----------
        df : pandas.DataFrame
            Numeric columns.
        name, target : str, optional
            Dataset name and response column.
        features, instruments : sequence of str, optional
            Feature and instrument columns.
        train_column : str or None, default ``"is_train"``
            Boolean train-mask column, used if present.
        sources : sequence of (str, str or None), optional
            Provenance; default from ``attrs`` or empty.
        description : str, optional
            Default from ``attrs`` or empty.

        Returns
        -------
        Dataset
        """
        meta = df.attrs.get(_ATTRS_KEY) or {}
        name = name or meta.get("name")
        target = target or meta.get("target_name")
        if not name or not target:
            raise ValueError("from_frame needs name= and target= (no dpreg metadata in df.attrs)")
        if instruments is None:
            instruments = meta.get("instrument_names") or []
        instruments = list(instruments)
        if features is None:
            features = meta.get("feature_names") or [
                c for c in df.columns if c != target and c not in instruments and c != train_column
            ]
        features = list(features)
        missing = [c for c in [*features, *instruments, target] if c not in df.columns]
        if missing:
            raise ValueError(f"columns {missing} are not in the DataFrame ({list(df.columns)})")
        mask = None
        if train_column is not None and train_column in df.columns:
            mask = df[train_column].to_numpy()
        if sources is None:
            sources = [(s["id"], s["sha256"]) for s in meta.get("sources", [])]
        return cls(
            name=name,
            X=df[features].to_numpy(dtype=np.float64),
            y=df[target].to_numpy(dtype=np.float64),
            Z=df[instruments].to_numpy(dtype=np.float64) if instruments else None,
            feature_names=tuple(features),
            target_name=target,
            instrument_names=tuple(instruments),
            train_mask=mask,
            split=meta.get("split"),
            sources=tuple(tuple(s) for s in sources),
            description=description if description is not None else meta.get("description", ""),
            preprocessing=tuple(meta.get("preprocessing", [])),
        )
