"""The workflow's data stage: fetch, load and preprocess one configured dataset.

:func:`prepare_dataset` returns the prepared (training) table, or with ``rows="test"`` the
rows held out of it, transformed as the training rows (``resources/data/{dataset}.parquet``
and ``resources/data/{dataset}.test.parquet`` in the workflow).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from dpreg.data.acquire import fetch
from dpreg.data.datasets import Dataset
from dpreg.data.lev2026 import held_out_rows as lev2026_held_out_rows
from dpreg.data.lev2026 import is_lev2026, lev2026_kind, load_lev2026_split
from dpreg.data.loaders import DATASET_LOADERS, load_dataset
from dpreg.data.preprocess import preprocess_lev2026
from dpreg.data.table import LOADERS as TABLE_LOADERS
from dpreg.data.uci import UCI_NAMES

PREPROCESSING = ("none", "lev2026", "liang2025")
#: Which rows :func:`prepare_dataset` returns: the prepared table or its held-out rows.
ROWS = ("train", "test")
#: Why a test table is empty (``no_test_rows`` in its metadata).
NO_TEST_ROWS = (
    "no rows are held out: the prepared table holds every row of the dataset (no split, "
    "a split kept as the is_train column, or a subsample), so there are no test rows"
)


def prepare_dataset(
    name: str,
    spec: Mapping[str, Any],
    *,
    mirror: str | os.PathLike[str] | None = None,
    allow_download: bool = True,
    download_dir: str | os.PathLike[str] = "resources/downloads",
    seed: int = 0,
    rows: str = "train",
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Load the dataset a config entry describes and apply its preprocessing.

    Parameters
    ----------
    name : str
        The dataset's name in the config (used in paths and tables).
    spec : mapping
        The config entry: ``loader``, ``split`` (UCI sets only), ``preprocessing``
        (``none``, ``lev2026`` or ``liang2025``), ``preprocessing_options`` and
        ``options`` (loader keyword arguments).
    mirror, allow_download, download_dir
        Passed to :func:`dpreg.data.fetch` (mirror first, sha256 always verified).
    seed : int
        Seed of random preprocessing steps (the liang2025 subsample, and the 80/20
        permutation of the ``lev_*`` permutation datasets and the held-out rows of a
        ``table`` dataset; ``split`` goes to the ``lev_*`` mask datasets).
    rows : {"train", "test"}, default "train"
        ``"train"``: the prepared table the studies fit on (unchanged by this option).
        ``"test"``: the rows held out of it by the same spec and seed, transformed
        exactly as the training rows (statistics and scale factors of the training
        rows; see :func:`dpreg.data.lev2026.load_lev2026_split`): the ``lev_*`` loaders'
        test part, or the test part of ``preprocessing: lev2026`` (data-derived factors
        of the training rows, so test rows may exceed norm 1). A dataset that holds no
        rows out (no split, ``preprocessing: none`` with the split kept as the
        ``is_train`` column, ``liang2025``) gives an **empty** table: the training
        table's columns, 0 rows, metadata ``n_test: 0`` and ``no_test_rows`` (why), so a
        study can report "no test rows" instead of failing.

    Returns
    -------
    frame : DataFrame
        ``Dataset.to_frame()`` of the rows the studies use (``lev_*`` loaders: the
        training rows as the loader prepares them, see :mod:`dpreg.data.lev2026`;
        for ``lev2026``: the
        training rows, z-scored with training statistics for uci_datasets sets, then
        scaled to max row norm 1 and max abs(y) 1 with data-derived factors, as the
        authors' code does; Lev et al. 2026, Section 5, docs/notes/lev2026.md §5.1).
        With ``rows="test"``: the held-out rows (see ``rows``).
    metadata : dict
        JSON-able: n, d, sources and sha256, preprocessing, and held-out rows. With
        ``rows="test"`` also ``rows: "test"``, ``n_train`` and ``n_test`` (``n_test ==
        n``, 0 for an empty table).
    """
    if rows not in ROWS:
        raise ValueError(f"rows must be one of {ROWS}; got {rows!r}")
    loader = spec["loader"]
    preprocessing = spec.get("preprocessing", "none")
    if preprocessing not in PREPROCESSING:
        raise ValueError(
            f"datasets.{name}.preprocessing must be one of {PREPROCESSING}; got {preprocessing!r}"
        )
    options = dict(spec.get("options") or {})
    fetcher = functools.partial(
        fetch, dest_dir=download_dir, mirror=mirror, allow_download=allow_download
    )
    is_uci = loader in UCI_NAMES
    is_lev = is_lev2026(loader)
    if (is_uci or (is_lev and lev2026_kind(loader) == "mask")) and spec.get("split") is not None:
        options.setdefault("split", int(spec["split"]))
    if is_lev and lev2026_kind(loader) == "permutation":
        # The random 80/20 permutation of the lev2026 loaders, from the dataset's seed.
        options.setdefault("seed", int(seed))
    if loader in TABLE_LOADERS:
        # A user's table is prepared by its codebook alone (public bounds); its held-out
        # rows (test_fraction) are drawn from the dataset's seed.
        if preprocessing != "none":
            raise ValueError(
                f"datasets.{name}: a table is prepared by its codebook (public bounds, rows"
                f" in the unit ball); use preprocessing: none, not {preprocessing!r}"
            )
        options.setdefault("seed", int(seed))
    test: Dataset | None = None
    # A loader that draws its own held-out rows (the synthetic regimes) has ``split``.
    splitter = getattr(DATASET_LOADERS.get(loader), "split", None)
    if is_lev and rows == "test":
        # The same loader's split: its train part is what load_dataset returns.
        data, test = load_lev2026_split(loader, fetcher=fetcher, **options)
    elif splitter is not None:
        data, test = splitter(fetcher=fetcher, **options)
    else:
        data = load_dataset(loader, fetcher=fetcher, **options)
    held_out = 0 if test is None else test.n
    prep_options = dict(spec.get("preprocessing_options") or {})
    if is_lev:
        # lev_* loaders already return the training rows after the authors' pipeline.
        if preprocessing == "liang2025":
            raise ValueError(
                f"datasets.{name}: lev_* loaders are prepared as in lev2026; use "
                "preprocessing lev2026 (or none, equivalent)"
            )
        _check_options(name, prep_options, set())
        held_out = lev2026_held_out_rows(data)
    elif preprocessing == "lev2026":
        _check_options(name, prep_options, set())
        data, test = preprocess_lev2026(data, standardise=is_uci)
        held_out = test.n
    elif preprocessing == "liang2025":
        # Liang et al. 2025, Section 4.2: a random subsample, then every variable centred.
        from dpreg.data.preprocess import preprocess_liang2025

        _check_options(name, prep_options, {"n_subsample"})
        n_sub = int(prep_options.get("n_subsample", data.n))
        data = preprocess_liang2025(data, n_subsample=n_sub, rng=np.random.default_rng(seed))
    else:
        _check_options(name, prep_options, set())
    data = data.with_(name=name)
    metadata = {**data.metadata(), "config_name": name, "loader": loader, "held_out_rows": held_out}
    if rows == "test":
        return _test_table(data, test, metadata)
    return data.to_frame(), metadata


def _test_table(
    train: Dataset, test: Dataset | None, train_metadata: dict[str, Any]
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Return the held-out rows' frame and metadata (empty when no rows are held out)."""
    extra = {key: train_metadata[key] for key in ("config_name", "loader", "held_out_rows")}
    if test is None:
        frame = train.to_frame().iloc[:0].copy()
        meta = {**train.metadata(), "n": 0, "n_train": train.n, "n_test": 0}
        meta["no_test_rows"] = NO_TEST_ROWS
        frame.attrs = {"dpreg": meta}
        return frame, {**meta, **extra, "rows": "test"}
    if test.n != train_metadata["held_out_rows"]:  # pragma: no cover - a loader bug
        raise AssertionError(f"{train.name}: {test.n} test rows, {extra['held_out_rows']} held out")
    test = test.with_(name=train.name)
    meta = {**test.metadata(), "n_train": train.n, "n_test": test.n}
    return test.to_frame(), {**meta, **extra, "rows": "test"}


def _check_options(name: str, options: Mapping[str, Any], allowed: set[str]) -> None:
    unknown = set(options) - allowed
    if unknown:
        raise ValueError(
            f"datasets.{name}.preprocessing_options: unknown key(s) {sorted(unknown)};"
            f" allowed: {sorted(allowed) or 'none'}"
        )
