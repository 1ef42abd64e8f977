"""Data: manifest, verified acquisition, loaders, preprocessing and synthetic DGPs.

* :func:`load_manifest` / :class:`ManifestEntry` -- every external file with URL and sha256.
* :func:`fetch` -- a verified local copy (mirror first, then download; atomic writes).
* :class:`Dataset`, :func:`load_dataset` -- named loaders (UCI, Angrist-Evans).
* :mod:`dpreg.data.preprocess` -- splits, z-scoring, bounds (data-derived or public).
* :func:`make_dgp` -- seeded synthetic data-generating processes.
* :func:`read_codebook`, :func:`load_table` -- a user's own table with a codebook of public
  bounds (docs/user-data.md); :class:`PublicScaling` maps fits back to original units.
"""

from dpreg.data.acquire import (
    MIRROR_ENV,
    DataDownloadError,
    DataIntegrityError,
    DataUnavailableError,
    fetch,
    sha256_file,
)
from dpreg.data.angrist import load_angev98, load_angrist_fertility
from dpreg.data.codebook import Codebook, CodebookError, PublicScaling, read_codebook
from dpreg.data.datasets import Dataset
from dpreg.data.loaders import DATASET_LOADERS, dataset_names, load_dataset, register_dataset
from dpreg.data.manifest import MANIFEST_ENV, ManifestEntry, load_manifest
from dpreg.data.preprocess import (
    center,
    clip_to_public_bounds,
    preprocess_lev2026,
    rms_scale,
    scale_by_data_derived_bounds,
    scale_by_public_bounds,
    split_by_mask,
    zscore,
)
from dpreg.data.synthetic import (
    BROWN_DESIGNS,
    BrownDGP,
    IVLinearDGP,
    LinearGaussianDGP,
    SyntheticDGP,
    dgp_names,
    make_dgp,
    register_dgp,
)
from dpreg.data.table import TableError, load_table, load_table_split, table_scaling
from dpreg.data.uci import UCI_NAMES, load_uci

__all__ = [
    "BROWN_DESIGNS",
    "DATASET_LOADERS",
    "MANIFEST_ENV",
    "MIRROR_ENV",
    "UCI_NAMES",
    "DataDownloadError",
    "DataIntegrityError",
    "BrownDGP",
    "Codebook",
    "CodebookError",
    "DataUnavailableError",
    "Dataset",
    "IVLinearDGP",
    "LinearGaussianDGP",
    "ManifestEntry",
    "PublicScaling",
    "SyntheticDGP",
    "TableError",
    "center",
    "clip_to_public_bounds",
    "dataset_names",
    "dgp_names",
    "fetch",
    "load_angev98",
    "load_angrist_fertility",
    "load_dataset",
    "load_manifest",
    "load_table",
    "load_table_split",
    "load_uci",
    "make_dgp",
    "preprocess_lev2026",
    "read_codebook",
    "register_dataset",
    "register_dgp",
    "rms_scale",
    "scale_by_data_derived_bounds",
    "scale_by_public_bounds",
    "sha256_file",
    "split_by_mask",
    "table_scaling",
    "zscore",
]
