"""Fetch (mirror first, sha256-verified) and preprocess one dataset's held-out (test) rows."""

import sys

sys.stderr = open(snakemake.log[0], "w")  # noqa: F821

from dpreg.data.acquire import source_settings  # noqa: E402
from dpreg.data.pipeline import prepare_dataset  # noqa: E402
from dpreg.io import sha256_file, write_json, write_parquet  # noqa: E402

# Where files come from is not a rule parameter (see workflow/rules/data.smk).
source = source_settings(snakemake.config.get("data"))  # noqa: F821
frame, meta = prepare_dataset(
    snakemake.wildcards.dataset,  # noqa: F821
    snakemake.params.spec,  # noqa: F821
    seed=snakemake.params.seed,  # noqa: F821
    mirror=source["mirror"],
    allow_download=source["allow_download"],
    download_dir=source["dest_dir"],
    rows="test",
)
write_parquet(frame, snakemake.output.table)  # noqa: F821
meta["table_sha256"] = sha256_file(snakemake.output.table)  # noqa: F821  (checked on read)
write_json(meta, snakemake.output.meta)  # noqa: F821
