"""List every artifact with its sha256 (the verified-supplement manifest)."""

import sys

sys.stderr = open(snakemake.log[0], "w")  # noqa: F821

from dpreg.io import atomic_write, sha256_file  # noqa: E402

lines = [f"{sha256_file(p)}  {p}\n" for p in sorted(snakemake.input)]  # noqa: F821
atomic_write(snakemake.output[0], lambda tmp: tmp.write_text("".join(lines)))  # noqa: F821
