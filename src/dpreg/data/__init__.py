"""Data: manifest, verified acquisition, loaders, preprocessing and synthetic DGPs.

* :func:`load_manifest` / :class:`ManifestEntry` -- every external file with URL and sha256.
* :func:`fetch` -- a verified local copy (mirror first, then download; atomic writes).
* :class:`Dataset`, :func:`load_dataset` -- named loaders (UCI, Angrist-Evans).
* :mod:`dpreg.data.preprocess` -- splits, z-scoring, bounds (data-derived or public).
* :func:`make_dgp` -- seeded synthetic data-generating processes.
* :func:`read_codebook`, :func:`load_table` -- a user's own table with a codebook of public
  bounds (docs/user-data.md); :class:`PublicScaling` maps fits back to original units.

Each name is imported from its module on first use (PEP 562): a job that reads a prepared
table does not import the loaders, the codebooks and their SciPy calibration
(``docs/scaling.md``, "Start-up of a job").
"""

from dpreg._lazy import lazy_attributes

#: Public name -> the module of ``dpreg.data`` that defines it (imported on first use).
_LAZY: dict[str, str] = {
    "MIRROR_ENV": "acquire",
    "DataDownloadError": "acquire",
    "DataIntegrityError": "acquire",
    "DataUnavailableError": "acquire",
    "fetch": "acquire",
    "sha256_file": "acquire",
    "load_angev98": "angrist",
    "load_angrist_fertility": "angrist",
    "Codebook": "codebook",
    "CodebookError": "codebook",
    "PublicScaling": "codebook",
    "read_codebook": "codebook",
    "Dataset": "datasets",
    "DATASET_LOADERS": "loaders",
    "dataset_names": "loaders",
    "load_dataset": "loaders",
    "register_dataset": "loaders",
    "MANIFEST_ENV": "manifest",
    "ManifestEntry": "manifest",
    "load_manifest": "manifest",
    "center": "preprocess",
    "clip_to_public_bounds": "preprocess",
    "preprocess_lev2026": "preprocess",
    "rms_scale": "preprocess",
    "scale_by_data_derived_bounds": "preprocess",
    "scale_by_public_bounds": "preprocess",
    "split_by_mask": "preprocess",
    "zscore": "preprocess",
    "BROWN_DESIGNS": "synthetic",
    "BrownDGP": "synthetic",
    "IVLinearDGP": "synthetic",
    "LinearGaussianDGP": "synthetic",
    "SyntheticDGP": "synthetic",
    "dgp_names": "synthetic",
    "make_dgp": "synthetic",
    "register_dgp": "synthetic",
    "TableError": "table",
    "load_table": "table",
    "load_table_split": "table",
    "table_scaling": "table",
    "UCI_NAMES": "uci",
    "load_uci": "uci",
}

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

__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, globals(), __all__)
