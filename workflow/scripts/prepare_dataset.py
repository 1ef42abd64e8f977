"""Fetch (mirror first, sha256-verified) and preprocess one dataset; its non-private reference.

One job per dataset writes the prepared table, its held-out (test) rows when the rule asks
for them (``prepare_dataset_with_test_rows``), and the non-private OLS (and 2SLS) reference
computed from the table as written: each was a job of its own, mostly Python start-up
(docs/scaling.md).
"""

import sys

sys.stderr = open(snakemake.log[0], "w")  # noqa: F821

# SciPy (through its array-API layer) would execute numpy.f2py and numpy.testing: deferred.
from dpreg._lazy import defer_numpy_tool_modules  # noqa: E402

defer_numpy_tool_modules()

from dpreg.data.acquire import source_settings  # noqa: E402
from dpreg.data.pipeline import prepare_dataset  # noqa: E402
from dpreg.io import (  # noqa: E402
    read_prepared_table,
    sha256_file,
    write_json,
    write_parquet,
)

output = snakemake.output  # noqa: F821
# Where files come from is not a rule parameter (see workflow/rules/data.smk).
source = source_settings(snakemake.config.get("data"))  # noqa: F821
fetch = {
    "seed": snakemake.params.seed,  # noqa: F821
    "mirror": source["mirror"],
    "allow_download": source["allow_download"],
    "download_dir": source["dest_dir"],
}
parts = [("train", output.table, output.meta)]
if hasattr(output, "test_table"):  # the rows held out of it: same spec and seed, same split
    parts.append(("test", output.test_table, output.test_meta))
for rows, table, meta_path in parts:
    frame, meta = prepare_dataset(
        snakemake.wildcards.dataset,  # noqa: F821
        snakemake.params.spec,  # noqa: F821
        rows=rows,
        **fetch,
    )
    write_parquet(frame, table)
    meta["table_sha256"] = sha256_file(table)  # checked on read
    write_json(meta, meta_path)
    del frame

# The reference reads the table as written (what every later job reads), as its own job did.
from dpreg.experiments.references import reference_summary  # noqa: E402

write_json(reference_summary(read_prepared_table(output.table)), output.reference)

# Every output is written: the interpreter's teardown does not rescan the objects left
# alive (dpreg._collector; ~0.1-0.35 s of CPU per job, docs/scaling.md).
from dpreg._collector import freeze_survivors  # noqa: E402

freeze_survivors()
