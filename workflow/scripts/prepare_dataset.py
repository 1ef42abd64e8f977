"""Fetch (mirror first, sha256-verified) and preprocess one dataset."""

import sys

sys.stderr = open(snakemake.log[0], "w")  # noqa: F821

from dpreg.data.pipeline import prepare_dataset  # noqa: E402
from dpreg.io import sha256_file, write_json, write_parquet  # noqa: E402

frame, meta = prepare_dataset(
    snakemake.wildcards.dataset,  # noqa: F821
    snakemake.params.spec,  # noqa: F821
    mirror=snakemake.params.mirror,  # noqa: F821
    allow_download=snakemake.params.allow_download,  # noqa: F821
    download_dir=snakemake.params.download_dir,  # noqa: F821
    seed=snakemake.params.seed,  # noqa: F821
)
write_parquet(frame, snakemake.output.table)  # noqa: F821
meta["table_sha256"] = sha256_file(snakemake.output.table)  # noqa: F821  (checked on read)
write_json(meta, snakemake.output.meta)  # noqa: F821
