"""Loaders for the ``treforevans/uci_datasets`` regression benchmarks.

File layout (commit ``f073752``): ``uci_datasets/<name>/data.csv.gz`` has no header and
the target in the last column; ``uci_datasets/<name>/test_mask.csv.gz`` has no header and
10 columns of 0/1 test masks (one per predefined split, ``1`` = test row). Used by the
Iterative Hessian Mixing experiments (docs/notes/lev2026.md §5.1) for the mask datasets.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

from dpreg.data.acquire import fetch, sha256_file
from dpreg.data.datasets import Dataset

__all__ = ["UCI_NAMES", "load_uci"]

#: Every uci_datasets set whose ``data.csv.gz`` is in the manifest. 3droad, buzz and
#: slice are unpinned (no offline copy); houseelectric and song have only their masks
#: in the mirror and are not loadable.
UCI_NAMES: tuple[str, ...] = (
    "3droad",
    "airfoil",
    "autompg",
    "autos",
    "bike",
    "breastcancer",
    "buzz",
    "challenger",
    "concrete",
    "concreteslump",
    "elevators",
    "energy",
    "fertility",
    "forest",
    "gas",
    "housing",
    "keggdirected",
    "keggundirected",
    "kin40k",
    "machine",
    "parkinsons",
    "pendulum",
    "pol",
    "protein",
    "pumadyn32nm",
    "servo",
    "skillcraft",
    "slice",
    "sml",
    "solar",
    "stock",
    "tamielectric",
    "wine",
    "yacht",
)

Fetcher = Callable[[str], Path]


def load_uci(name: str, *, fetcher: Fetcher = fetch, split: int | None = None) -> Dataset:
    """Load a raw ``uci_datasets`` regression set, optionally with a predefined split.

    Parameters
    ----------
    name : str
        One of :data:`UCI_NAMES`, e.g. ``"airfoil"``.
    fetcher : callable, default :func:`dpreg.data.fetch`
        ``fetcher(entry_id) -> Path`` returning a verified local file; use e.g.
        ``functools.partial(fetch, mirror=..., dest_dir=...)``.
    split : int or None, default None
        Index of the test-mask column (0-9). ``None``: no split (``train_mask`` is
        ``None``). The training rows are those with a 0 in that column.

    Returns
    -------
    Dataset
        Unprocessed data: ``X`` all columns but the last, ``y`` the last; feature
        names ``x0 ... x{d-1}`` (the files have no header). Sources are
        ``uci/<name>/data`` and ``uci/<name>/test_mask`` with their sha256.

    Raises
    ------
    ValueError
        Unknown name, invalid split, a mask that is not 0/1, or row counts of data and
        mask that differ.
    """
    if name not in UCI_NAMES:
        raise ValueError(f"unknown uci_datasets name {name!r}; known: {', '.join(UCI_NAMES)}")
    data_id, mask_id = f"uci/{name}/data", f"uci/{name}/test_mask"
    data_path, mask_path = Path(fetcher(data_id)), Path(fetcher(mask_id))
    data = pd.read_csv(data_path, header=None, compression="gzip").to_numpy(dtype=np.float64)
    masks = pd.read_csv(mask_path, header=None, compression="gzip").to_numpy()
    if data.ndim != 2 or data.shape[1] < 2:
        raise ValueError(f"{data_path}: expected at least 2 columns (features, target)")
    if masks.shape[0] != data.shape[0]:
        raise ValueError(
            f"uci {name!r}: {data_path.name} has {data.shape[0]} rows but {mask_path.name} has "
            f"{masks.shape[0]}; the files do not belong together (check the manifest entries)"
        )
    if not np.isin(masks, (0, 1)).all():
        raise ValueError(f"{mask_path}: test masks must contain only 0 and 1")
    train_mask = None
    split_desc = None
    if split is not None:
        n_splits = masks.shape[1]
        if isinstance(split, bool) or not isinstance(split, int | np.integer):
            raise ValueError(f"split must be an int in [0, {n_splits}) or None; got {split!r}")
        if not 0 <= split < n_splits:
            raise ValueError(f"split must be in [0, {n_splits}) for {name!r}; got {split}")
        train_mask = masks[:, int(split)] == 0
        split_desc = f"uci_datasets test_mask column {int(split)} (0 = train, 1 = test)"
    d = data.shape[1] - 1
    return Dataset(
        name=name,
        X=data[:, :-1],
        y=data[:, -1],
        feature_names=tuple(f"x{j}" for j in range(d)),
        target_name="y",
        train_mask=train_mask,
        split=split_desc,
        sources=((data_id, sha256_file(data_path)), (mask_id, sha256_file(mask_path))),
        description=(
            f"UCI {name} regression data from treforevans/uci_datasets (no header; last column "
            "is the target); raw, unprocessed"
        ),
    )


#: The loaders of this module by dataset name (the registry is :mod:`dpreg.data.loaders`).
LOADERS: dict[str, Callable[..., Dataset]] = {name: partial(load_uci, name) for name in UCI_NAMES}
