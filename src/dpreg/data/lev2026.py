"""The 33 datasets of Lev et al. (2026), "Iterative Hessian Mixing", prepared as the authors do.

Every loader is registered as ``lev_<name>`` (e.g. ``lev_pol``, ``lev_crime``) and returns
the **training rows** after the authors' pipeline (docs/notes/lev2026.md §5.1,
§8 items 8-10 and 14; authors' code ``omrilev1/HessianMix`` at ``3765136``):

* **Mask datasets** (20; :data:`MASK_DATASETS`): the provided ``<name>_mask.txt`` (the
  ``uci_datasets`` test masks, 10 columns, 1 = test); the column is chosen with ``split``
  (the code draws it with ``np.random.randint(10)``; we make it an argument). Features are
  z-scored with the **training** mean and standard deviation (``ddof=0``, std 0 -> 1).
* **Permutation datasets** (13; :data:`PERMUTATION_DATASETS`): a random permutation of the
  rows from ``numpy.random.default_rng(seed)``, the first ``int(0.8 m)`` rows are the
  training rows (as the code, which uses the global ``np.random`` state seeded with 50).
  Not standardised, except TamiElectric (training statistics) and Crime (the code
  z-scores Crime on **all** rows with pandas' ``ddof=1`` before filtering; kept).
* Then the bounds ``C_X = C_Y = 1`` are made to hold in one of two ways (option
  ``bounds``):

  - ``"public"`` (default): features not z-scored above are divided by their training
    root mean square (no centring; :func:`~dpreg.data.preprocess.rms_scale`), ``y`` by
    its training root mean square, so that the mean squared row norm is ``d`` and
    ``E y^2 = 1``; then each row is divided by the **public** bounds
    ``C_X = bound_X_per_sqrt_d * sqrt(d)`` (default ``2 sqrt(d)``) and ``C_Y = bound_y``
    (default 3) and projected onto the unit ball if it exceeds them
    (:func:`~dpreg.data.preprocess.clip_to_public_bounds`). The bounds are fixed before
    seeing the data; the standardisation statistics (means, standard deviations, root
    mean squares: aggregate statistics) remain data-derived and outside the guarantee,
    as recorded in ``preprocessing`` (docs/lev2026-data.md, "Bounds").
  - ``"data_derived"`` (the paper's experiments and code): ``y / max|y_train|`` and
    ``X / max_i ||x_i,train||`` -- bounds read off single rows, **non-private**, flagged
    ``data_derived_nonprivate`` in ``preprocessing``. The lev2026 studies of
    ``config/config.yaml`` reproduce the paper with this option.

Per-dataset specifics (code): Bike feature engineering (d = 18), Crime column and row
selection (d = 99), Tecator target ``fat`` with the other 124 columns as features,
BreastCancer ``X = cols [0, 1] + [3 .. end-1]`` / ``y = col 2``, Wine drop duplicates,
Gas ``drop_duplicates().dropna()``; the CSV files read with pandas' default header
(Gas, TamiElectric) lose their first data row as the code does. Energy: the file holds
both targets; by default the other target (heating load, column 8) is dropped so that
d = 8 as in Table 2 (docs/notes/lev2026.md §8 item 14); ``keep_heating_load=True`` gives
the code's d = 9.

3droad, Buzz and Slice have no offline copy (their ``uci/<name>/data`` manifest entries
are unpinned); their loaders fetch them like any other file (so only with downloads
allowed) and are listed in :data:`LARGE_OFFLINE_UNAVAILABLE` (and carry the attribute
``large_offline_unavailable = True``) so that a configuration can switch them off.

The number of held-out (test) rows is recorded in the last ``preprocessing`` step
(``{"step": "lev2026", "held_out_rows": ...}``); see :func:`held_out_rows`. The held-out
rows themselves, transformed with the training rows' statistics (and, with public bounds,
clipped like them), come from :func:`load_lev2026_split`, which returns ``(train, test)``
with ``train`` identical to the loader's output.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpreg.data.acquire import fetch, sha256_file
from dpreg.data.datasets import Dataset
from dpreg.data.preprocess import (
    clip_to_public_bounds,
    rms_scale,
    scale_by_data_derived_bounds,
    split_by_mask,
    zscore,
)

__all__ = [
    "BOUNDS",
    "BoundsSpec",
    "LARGE_OFFLINE_UNAVAILABLE",
    "LEV2026_DATASETS",
    "MASK_DATASETS",
    "PERMUTATION_DATASETS",
    "LevDatasetInfo",
    "held_out_rows",
    "is_lev2026",
    "lev2026_kind",
    "load_lev2026",
    "load_lev2026_split",
]

Fetcher = Callable[[str], Path]

#: Fraction of rows in the training part of the random permutation (code: ``int(0.8 m)``).
TRAIN_FRACTION = 0.8
#: The two ways to obtain ``C_X = C_Y = 1`` (module docstring).
BOUNDS = ("public", "data_derived")
#: Default public bounds in standardised units: ``C_X = 2 sqrt(d)``, ``C_Y = 3``.
DEFAULT_BOUND_X_PER_SQRT_D = 2.0
DEFAULT_BOUND_Y = 3.0


@dataclass(frozen=True)
class BoundsSpec:
    """How the loaders make ``C_X = C_Y = 1`` hold (module docstring, option ``bounds``)."""

    bounds: str = "public"
    bound_X_per_sqrt_d: float = DEFAULT_BOUND_X_PER_SQRT_D
    bound_y: float = DEFAULT_BOUND_Y

    def __post_init__(self) -> None:
        if self.bounds not in BOUNDS:
            raise ValueError(f"bounds must be one of {BOUNDS}; got {self.bounds!r}")
        for name in ("bound_X_per_sqrt_d", "bound_y"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"{name} must be a positive number; got {value!r}")
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a finite positive number; got {value!r}")


@dataclass(frozen=True)
class LevDatasetInfo:
    """One dataset of the paper: registry key, title in Table 2 and split kind."""

    key: str  # short name, registry name is f"lev_{key}"
    title: str  # as in Table 2
    kind: str  # "mask" or "permutation"
    large_offline_unavailable: bool = False

    @property
    def registry_name(self) -> str:
        """The registry name, ``lev_<key>``."""
        return f"lev_{self.key}"


_MASK_KEYS = (
    "3droad", "autos", "buzz", "concreteslump", "elevators", "fertility", "forest",
    "keggdirected", "keggundirected", "kin40k", "machine", "pendulum", "pol", "protein",
    "pumadyn32nm", "servo", "slice", "sml", "solar", "yacht",
)  # fmt: skip
_PERM_KEYS = (
    "airfoil", "autompg", "bike", "breastcancer", "concrete", "crime", "energy", "gas",
    "housing", "parkinsons", "tamielectric", "tecator", "wine",
)  # fmt: skip
_TITLES = {
    "3droad": "3droad", "airfoil": "Airfoil", "autompg": "AutoMPG", "autos": "Autos",
    "bike": "Bike", "breastcancer": "BreastCancer", "buzz": "Buzz",
    "crime": "Communities & Crime", "concrete": "Concrete", "concreteslump": "Concrete Slump",
    "elevators": "Elevators", "energy": "Energy", "fertility": "Fertility", "forest": "Forest",
    "gas": "Gas", "housing": "Housing", "keggdirected": "KEGG (Directed)",
    "keggundirected": "KEGG (Undirected)", "kin40k": "Kin40K", "machine": "Machine",
    "parkinsons": "Parkinsons", "pendulum": "Pendulum", "pol": "Pol", "protein": "Protein",
    "pumadyn32nm": "Pumadyn32nm", "servo": "Servo", "slice": "Slice", "sml": "SML",
    "solar": "Solar", "tamielectric": "TamiElectric", "tecator": "Tecator", "wine": "Wine",
    "yacht": "Yacht",
}  # fmt: skip
_LARGE = ("3droad", "buzz", "slice")

#: registry name -> :class:`LevDatasetInfo`, for all 33 datasets.
LEV2026_DATASETS: dict[str, LevDatasetInfo] = {
    f"lev_{k}": LevDatasetInfo(k, _TITLES[k], kind, k in _LARGE)
    for kind, keys in (("mask", _MASK_KEYS), ("permutation", _PERM_KEYS))
    for k in keys
}
#: Registry names of the 20 datasets split by a provided test mask (``split=`` argument).
MASK_DATASETS: tuple[str, ...] = tuple(f"lev_{k}" for k in _MASK_KEYS)
#: Registry names of the 13 datasets split by a random 80/20 permutation (``seed=``).
PERMUTATION_DATASETS: tuple[str, ...] = tuple(f"lev_{k}" for k in _PERM_KEYS)
#: Registry names without an offline copy (downloaded on demand; large).
LARGE_OFFLINE_UNAVAILABLE: tuple[str, ...] = tuple(f"lev_{k}" for k in _LARGE)


def is_lev2026(name: str) -> bool:
    """Whether ``name`` is one of the ``lev_*`` registry names."""
    return name in LEV2026_DATASETS


def lev2026_kind(name: str) -> str:
    """``"mask"`` or ``"permutation"`` for a ``lev_*`` registry name."""
    try:
        return LEV2026_DATASETS[name].kind
    except KeyError:
        raise ValueError(f"{name!r} is not a lev2026 dataset") from None


def held_out_rows(ds: Dataset) -> int:
    """Return the number of held-out test rows recorded by a ``lev_*`` loader."""
    for step in reversed(ds.preprocessing):
        if step.get("step") == "lev2026":
            return int(step["held_out_rows"])
    raise ValueError(f"{ds.name}: no lev2026 step in preprocessing")


# --------------------------------------------------------------------------- raw readers


@dataclass
class _Raw:
    X: np.ndarray
    y: np.ndarray
    feature_names: tuple[str, ...]
    target_name: str
    sources: list[tuple[str, str | None]]
    steps: list[dict[str, Any]]
    description: str


def _get(fetcher: Fetcher, entry_id: str, sources: list[tuple[str, str | None]]) -> Path:
    path = Path(fetcher(entry_id))
    sources.append((entry_id, sha256_file(path)))
    return path


def _numeric_table(path: Path, *, sep: str) -> np.ndarray:
    # pandas' C parser is much faster than np.loadtxt and accepts \r line endings
    # (Concrete.txt); values are identical.
    return pd.read_csv(path, header=None, sep=sep).to_numpy(dtype=np.float64)


def _names(d: int) -> tuple[str, ...]:
    return tuple(f"x{j}" for j in range(d))


def _last_column_target(data: np.ndarray) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    return data[:, :-1], data[:, -1], _names(data.shape[1] - 1)


_HM = "hessianmix"


def _read_whitespace(key: str, stem: str, fetcher: Fetcher) -> _Raw:
    """housing, autompg, airfoil, concrete, parkinsons, energy: last column is y."""
    sources: list[tuple[str, str | None]] = []
    data = _numeric_table(_get(fetcher, f"{_HM}/{stem}", sources), sep=r"\s+")
    X, y, names = _last_column_target(data)
    return _Raw(X, y, names, "y", sources, [], f"{stem} from omrilev1/HessianMix datasets/")


def _read_energy(fetcher: Fetcher, keep_heating_load: bool) -> _Raw:
    raw = _read_whitespace("energy", "energy", fetcher)
    names = (*(f"X{j + 1}" for j in range(8)), "Y1_heating_load")
    if raw.X.shape[1] != 9:
        raise ValueError(f"energy.txt: expected 10 columns, got {raw.X.shape[1] + 1}")
    step = {
        "step": "energy_other_target",
        "keep_heating_load": bool(keep_heating_load),
        "note": (
            "energy.txt holds both targets (Y1 heating, Y2 cooling); the code uses the last "
            "column (Y2) as y and keeps Y1 as a feature (d = 9); Table 2 has d = 8"
        ),
    }
    if keep_heating_load:
        X = raw.X
    else:
        X, names = raw.X[:, :8], names[:8]
    return _Raw(X, raw.y, names, "Y2_cooling_load", raw.sources, [step], raw.description)


def _read_breastcancer(fetcher: Fetcher) -> _Raw:
    sources: list[tuple[str, str | None]] = []
    data = _numeric_table(_get(fetcher, f"{_HM}/breastcancer", sources), sep=",")
    m = data.shape[1]
    cols = [0, 1, *range(3, m - 1)]
    X, y = data[:, cols], data[:, 2]
    step = {"step": "select_columns", "X": "[0, 1] + [3 .. end-1]", "y": "column 2"}
    return _Raw(X, y, tuple(f"c{j}" for j in cols), "c2", sources, [step], "breastcancer.txt")


def _read_csv_header(
    fetcher: Fetcher, entry: str, *, dedupe: bool, dropna: bool, target: str | None
) -> _Raw:
    """Gas, Wine, TamiElectric: read with pandas' default header (first line)."""
    sources: list[tuple[str, str | None]] = []
    df = pd.read_csv(_get(fetcher, entry, sources))
    steps: list[dict[str, Any]] = [{"step": "read_csv", "header": "first line", "rows": len(df)}]
    if dedupe:
        before = len(df)
        df = df.drop_duplicates()
        steps.append({"step": "drop_duplicates", "rows_before": before, "rows_after": len(df)})
    if dropna:
        before = len(df)
        df = df.dropna()
        steps.append({"step": "dropna_rows", "rows_before": before, "rows_after": len(df)})
    if target is None:
        target = str(df.columns[-1])
    y = df[target].to_numpy(dtype=np.float64)
    feats = df.drop(columns=[target])
    names = tuple(str(c) for c in feats.columns)
    if len(set(names)) != len(names) or target in names:
        names = _names(feats.shape[1])
        target = "y"
    return _Raw(feats.to_numpy(dtype=np.float64), y, names, str(target), sources, steps, entry)


def _read_bike(fetcher: Fetcher) -> _Raw:
    sources: list[tuple[str, str | None]] = []
    df = pd.read_csv(_get(fetcher, f"{_HM}/bike_train", sources))
    df = pd.concat([df, pd.get_dummies(df["season"], prefix="season")], axis=1)
    df = pd.concat([df, pd.get_dummies(df["weather"], prefix="weather")], axis=1)
    df = df.drop(columns=["season", "weather"])
    when = pd.DatetimeIndex(df["datetime"])
    df["hour"] = when.hour
    df["day"] = when.day_of_week
    df["month"] = when.month
    df["year"] = when.year.map({2011: 0, 2012: 1})
    df = df.drop(columns=["datetime", "casual", "registered"])
    y = df.pop("count").to_numpy(dtype=np.float64)
    step = {
        "step": "bike_features",
        "note": "one-hot season and weather; hour, dayofweek, month, year in {0,1}; "
        "drop datetime, casual, registered; y = count",
    }
    return _Raw(
        df.to_numpy(dtype=np.float64), y, tuple(df.columns), "count", sources, [step],
        "Kaggle Bike Sharing Demand train.csv",
    )  # fmt: skip


def _read_tecator(fetcher: Fetcher) -> _Raw:
    sources: list[tuple[str, str | None]] = []
    df = pd.read_csv(_get(fetcher, "tecator", sources))
    y = df.pop("fat").to_numpy(dtype=np.float64)
    step = {
        "step": "tecator_target",
        "note": "OpenML Tecator (v1) default target fat; the other 124 columns (100 "
        "absorbances, 22 PCs, moisture, protein) are the features",
    }
    return _Raw(
        df.to_numpy(dtype=np.float64), y, tuple(df.columns), "fat", sources, [step],
        "Tecator (StatLib) via ChemometricsTools.jl data/tecator.csv",
    )  # fmt: skip


def _read_crime(fetcher: Fetcher, zscore_on: str) -> tuple[_Raw, np.ndarray]:
    """Return the crime data (all 1994 rows, z-scored as configured) and racepctblack."""
    sources: list[tuple[str, str | None]] = []
    data_path = _get(fetcher, f"{_HM}/communities_data", sources)
    names_path = _get(fetcher, f"{_HM}/communities_names", sources)
    names = [
        line.split(" ")[1]
        for line in names_path.read_text(encoding="latin-1").splitlines()
        if line.startswith("@attribute")
    ]
    df = pd.read_csv(data_path, names=names, na_values=["?"])
    df = df.drop(columns=["state", "county", "community", "fold", "communityname"])
    df["OtherPerCap"] = df["OtherPerCap"].fillna(df["OtherPerCap"].astype(float).mean())
    n_cols = df.shape[1]
    df = df.dropna(axis=1)
    y = df.pop("ViolentCrimesPerPop").to_numpy(dtype=np.float64)
    z = df.pop("racepctblack").to_numpy(dtype=np.float64)
    X = df.to_numpy(dtype=np.float64)
    steps: list[dict[str, Any]] = [
        {
            "step": "crime_columns",
            "note": "drop state, county, community, fold, communityname; fill OtherPerCap "
            "with its mean; drop columns with NaN; y = ViolentCrimesPerPop; racepctblack "
            "removed from the features",
            "columns_with_nan_dropped": n_cols - df.shape[1] - 2,
        }
    ]
    if zscore_on == "all":
        mean, std = X.mean(axis=0), X.std(axis=0, ddof=1)
        X = (X - mean) / std
        steps.append(
            {
                "step": "zscore",
                "stats_from": "all rows (before the racepctblack filter), as the code",
                "ddof": 1,
                "data_derived_nonprivate": True,
            }
        )
    return (
        _Raw(X, y, tuple(df.columns), "ViolentCrimesPerPop", sources, steps, "UCI communities"),
        z,
    )


def _read_mask_data(key: str, fetcher: Fetcher) -> tuple[_Raw, np.ndarray]:
    """Read a mask dataset and its test masks.

    The authors' ``<key>_train.txt``/``<key>_mask.txt`` where the manifest has them, else
    the identical ``uci_datasets`` files (KEGG data, 3droad, buzz, slice).
    """
    from dpreg.data.manifest import load_manifest

    entries = load_manifest()
    sources: list[tuple[str, str | None]] = []
    if f"{_HM}/{key}_train" in entries:
        data = _numeric_table(_get(fetcher, f"{_HM}/{key}_train", sources), sep=",")
    else:
        path = _get(fetcher, f"uci/{key}/data", sources)
        data = pd.read_csv(path, header=None).to_numpy(dtype=np.float64)
    if f"{_HM}/{key}_mask" in entries:
        masks = _numeric_table(_get(fetcher, f"{_HM}/{key}_mask", sources), sep=",")
    else:
        masks = pd.read_csv(_get(fetcher, f"uci/{key}/test_mask", sources), header=None)
        masks = masks.to_numpy()
    if masks.shape[0] != data.shape[0] or not np.isin(masks, (0, 1)).all():
        raise ValueError(f"{key}: mask file does not match the data ({masks.shape}, {data.shape})")
    X, y, names = _last_column_target(data)
    return _Raw(X, y, names, "y", sources, [], f"{key} (uci_datasets format)"), masks == 1


# --------------------------------------------------------------------------- pipeline


def _finish(
    info: LevDatasetInfo,
    raw: _Raw,
    train: np.ndarray,
    *,
    standardise: bool,
    split_desc: str,
    summary: dict[str, Any],
    bounds: BoundsSpec,
) -> tuple[Dataset, Dataset]:
    """Standardise, bound and split: return ``(train, test)``.

    Every statistic (z-score means and standard deviations, root mean squares,
    data-derived maxima) is taken from the training rows and applied to all rows before
    the split, so the test rows are transformed exactly as the training rows; the public
    bounds clip test rows too. Both parts end with the same ``lev2026`` step.
    """
    ds = Dataset(
        name=info.registry_name,
        X=raw.X,
        y=raw.y,
        feature_names=raw.feature_names,
        target_name=raw.target_name,
        train_mask=train,
        split=split_desc,
        sources=tuple(raw.sources),
        description=(
            f"Lev et al. (2026) IHM experiments, {info.title}: training rows after the "
            f"authors' preprocessing ({raw.description})"
        ),
        preprocessing=tuple(raw.steps),
    )
    if standardise:
        ds = zscore(ds)
    if bounds.bounds == "data_derived":
        ds = scale_by_data_derived_bounds(ds)
    else:
        ds = rms_scale(ds, columns=not standardise, target=True)
        d = ds.X.shape[1]
        ds = clip_to_public_bounds(
            ds, bound_X=bounds.bound_X_per_sqrt_d * math.sqrt(d), bound_y=bounds.bound_y
        )
    tr, te = split_by_mask(ds)
    step = {
        "step": "lev2026",
        "paper_dataset": info.title,
        "split_kind": info.kind,
        "n_total": int(raw.X.shape[0]),
        "n_train": tr.n,
        "held_out_rows": te.n,
        "large_offline_unavailable": info.large_offline_unavailable,
        "bounds": bounds.bounds,
        "data_derived_nonprivate": True,
        **summary,
    }
    test_desc = ds.description.replace("training rows", "held-out test rows", 1)
    return (
        tr.with_(preprocessing=tr.preprocessing + (step,)),
        te.with_(preprocessing=te.preprocessing + (step,), description=test_desc),
    )


def _bounds_summary(spec: BoundsSpec) -> dict[str, Any]:
    if spec.bounds == "data_derived":
        return {}
    return {"bound_X_per_sqrt_d": spec.bound_X_per_sqrt_d, "bound_y": spec.bound_y}


def _permutation(m: int, seed: int | np.random.Generator) -> tuple[np.ndarray, int]:
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    return rng.permutation(m), int(TRAIN_FRACTION * m)


def _check_seed(seed: Any) -> None:
    if isinstance(seed, np.random.Generator):
        return
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"seed must be a non-negative int or a numpy Generator; got {seed!r}")


def _split_permutation(
    key: str,
    *,
    fetcher: Fetcher = fetch,
    seed: int | np.random.Generator = 0,
    keep_heating_load: bool = False,
    crime_zscore_on: str = "all",
    bounds: str = "public",
    bound_X_per_sqrt_d: float = DEFAULT_BOUND_X_PER_SQRT_D,
    bound_y: float = DEFAULT_BOUND_Y,
) -> tuple[Dataset, Dataset]:
    info = LEV2026_DATASETS[f"lev_{key}"]
    spec = BoundsSpec(bounds, bound_X_per_sqrt_d, bound_y)
    _check_seed(seed)
    extra: dict[str, Any] = {}
    standardise = False
    z = None
    if key in ("housing", "autompg", "airfoil", "parkinsons"):
        raw = _read_whitespace(key, key, fetcher)
    elif key == "concrete":
        raw = _read_whitespace(key, "concrete", fetcher)
    elif key == "energy":
        raw = _read_energy(fetcher, keep_heating_load)
        extra["keep_heating_load"] = bool(keep_heating_load)
    elif key == "breastcancer":
        raw = _read_breastcancer(fetcher)
    elif key == "gas":
        raw = _read_csv_header(fetcher, f"{_HM}/gasdataset", dedupe=True, dropna=True, target=None)
    elif key == "wine":
        raw = _read_csv_header(
            fetcher, f"{_HM}/winequality-red", dedupe=True, dropna=False, target="quality"
        )
    elif key == "tamielectric":
        raw = _read_csv_header(
            fetcher, f"{_HM}/tamielectric", dedupe=False, dropna=False, target=None
        )
        standardise = True
    elif key == "bike":
        raw = _read_bike(fetcher)
    elif key == "tecator":
        raw = _read_tecator(fetcher)
    elif key == "crime":
        if crime_zscore_on not in ("all", "train"):
            raise ValueError(f"crime_zscore_on must be 'all' or 'train'; got {crime_zscore_on!r}")
        raw, z = _read_crime(fetcher, crime_zscore_on)
        standardise = crime_zscore_on == "train"
        extra["crime_zscore_on"] = crime_zscore_on
    else:  # pragma: no cover - the registry only holds the keys above
        raise ValueError(key)
    if z is not None:
        keep = z >= 0.1
        raw.steps.append(
            {"step": "filter_rows", "rule": "racepctblack >= 0.1", "rows_before": len(z),
             "rows_after": int(keep.sum())}
        )  # fmt: skip
        raw.X, raw.y = raw.X[keep], raw.y[keep]
    m = raw.X.shape[0]
    perm, n_train = _permutation(m, seed)
    raw.X, raw.y = raw.X[perm], raw.y[perm]
    train = np.zeros(m, dtype=bool)
    train[:n_train] = True
    seed_rec = None if isinstance(seed, np.random.Generator) else int(seed)
    return _finish(
        info,
        raw,
        train,
        standardise=standardise,
        split_desc=f"random permutation (numpy default_rng, seed {seed_rec}); first "
        f"int(0.8*{m}) = {n_train} rows train",
        summary={"seed": seed_rec, **extra, **_bounds_summary(spec)},
        bounds=spec,
    )


def _split_mask(
    key: str,
    *,
    fetcher: Fetcher = fetch,
    split: int = 0,
    bounds: str = "public",
    bound_X_per_sqrt_d: float = DEFAULT_BOUND_X_PER_SQRT_D,
    bound_y: float = DEFAULT_BOUND_Y,
) -> tuple[Dataset, Dataset]:
    info = LEV2026_DATASETS[f"lev_{key}"]
    spec = BoundsSpec(bounds, bound_X_per_sqrt_d, bound_y)
    raw, test = _read_mask_data(key, fetcher)
    n_splits = test.shape[1]
    if isinstance(split, bool) or not isinstance(split, int | np.integer):
        raise ValueError(f"split must be an int in [0, {n_splits}); got {split!r}")
    if not 0 <= split < n_splits:
        raise ValueError(f"split must be in [0, {n_splits}) for {key!r}; got {split}")
    return _finish(
        info,
        raw,
        ~test[:, int(split)],
        standardise=True,
        split_desc=f"provided test mask column {int(split)} (1 = test)",
        summary={"split": int(split), **_bounds_summary(spec)},
        bounds=spec,
    )


def _train_part(split: Callable[..., tuple[Dataset, Dataset]]) -> Callable[..., Dataset]:
    """Make the registry loader of a split function: its training part, same keywords.

    ``__signature__`` is the split function's, so the workflow's config check of loader
    options (``inspect.signature``) sees the same keywords as before the split existed.
    """

    def load(key: str, **options: Any) -> Dataset:
        return split(key, **options)[0]

    load.__signature__ = inspect.signature(split).replace(  # type: ignore[attr-defined]
        return_annotation="Dataset"
    )
    load.__name__ = load.__qualname__ = split.__name__.replace("_split_", "_load_")
    return load


_load_mask = _train_part(_split_mask)
_load_permutation = _train_part(_split_permutation)


def _registry_name(name: str) -> str:
    reg = name if name.startswith("lev_") else f"lev_{name}"
    if reg not in LEV2026_DATASETS:
        raise ValueError(f"unknown lev2026 dataset {name!r}; known: {sorted(LEV2026_DATASETS)}")
    return reg


def load_lev2026_split(name: str, **options: Any) -> tuple[Dataset, Dataset]:
    """Load one of the 33 datasets as ``(train, test)``: the split and its held-out rows.

    ``train`` is exactly what :func:`load_lev2026` returns for the same options (same
    arrays, bit for bit, and the same ``preprocessing`` record). ``test`` holds the
    held-out rows of the same split (mask column ``split`` or the permutation of
    ``seed``), transformed **with the training rows' statistics**, exactly as the
    training rows are:

    * z-scored (where the dataset is) with the training mean and standard deviation
      (Crime with the ``crime_zscore_on="all"`` default: the statistics of all rows, as
      for the training rows);
    * ``bounds="public"``: divided by the training root mean squares, then by the public
      bounds, and **clipped** like the training rows (rows beyond ``C_X`` projected onto
      the unit ball, ``y`` clipped to ``[-1, 1]``), so ``||x_i|| <= 1`` and
      ``|y_i| <= 1`` hold for the test rows too;
    * ``bounds="data_derived"``: divided by the factors read off the **training** rows
      (``max ||x_i,train||``, ``max |y_i,train|``); the test rows are not clipped and
      **may exceed 1** in norm.

    Parameters
    ----------
    name : str
        E.g. ``"lev_pol"`` or ``"pol"``.
    **options
        As :func:`load_lev2026`.

    Returns
    -------
    train, test : Dataset
        Disjoint; together ``n_total`` rows (the ``lev2026`` step of ``preprocessing``,
        which both carry). The test part's ``split`` step says ``"part": "test"``.
    """
    return _SPLITS[_registry_name(name)](**options)


def load_lev2026(name: str, **options: Any) -> Dataset:
    """Load one of the 33 datasets (registry name ``lev_<key>`` or ``<key>``).

    Parameters
    ----------
    name : str
        E.g. ``"lev_pol"`` or ``"pol"``.
    **options
        ``fetcher`` (``entry_id -> Path``); ``split`` (mask datasets: test-mask column,
        default 0); ``seed`` (permutation datasets: int or ``numpy.random.Generator``,
        default 0); ``keep_heating_load`` (Energy, default False);
        ``crime_zscore_on`` (Crime: ``"all"`` as the code, default, or ``"train"``);
        ``bounds`` (``"public"``, default, or ``"data_derived"`` as the paper),
        ``bound_X_per_sqrt_d`` (default 2) and ``bound_y`` (default 3): the public
        bounds in standardised units (module docstring).

    Returns
    -------
    Dataset
        The training rows with ``||x_i|| <= 1`` and ``|y_i| <= 1`` (with
        ``bounds="data_derived"``: ``max ||x_i|| = 1`` and ``max |y_i| = 1``); the
        held-out row count is in the final ``preprocessing`` step (:func:`held_out_rows`);
        :func:`load_lev2026_split` returns the held-out rows too.
    """
    return _LOADERS[_registry_name(name)](**options)


def _make_loader(info: LevDatasetInfo) -> Callable[..., Dataset]:
    base = _load_mask if info.kind == "mask" else _load_permutation
    loader = partial(base, info.key)
    loader.large_offline_unavailable = info.large_offline_unavailable  # type: ignore[attr-defined]
    loader.lev2026_kind = info.kind  # type: ignore[attr-defined]
    return loader


_LOADERS: dict[str, Callable[..., Dataset]] = {
    reg: _make_loader(info) for reg, info in LEV2026_DATASETS.items()
}
_SPLITS: dict[str, Callable[..., tuple[Dataset, Dataset]]] = {
    reg: partial(_split_mask if info.kind == "mask" else _split_permutation, info.key)
    for reg, info in LEV2026_DATASETS.items()
}

#: The loaders of this module by dataset name (the registry is :mod:`dpreg.data.loaders`).
LOADERS = _LOADERS
