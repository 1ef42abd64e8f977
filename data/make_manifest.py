"""Generate ``data/manifest.yaml`` from the data mirror's ``SHA256SUMS``.

Usage (from the repository root)::

    python data/make_manifest.py [--sums ../shared/data/mirror/SHA256SUMS]

The mirror is laid out as ``<owner>/<repo>/<commit>/<path>``, so every line of
``SHA256SUMS`` gives one pinned GitHub file whose canonical URL is
``https://raw.githubusercontent.com/<owner>/<repo>/<commit>/<path>``. Files that
have no offline copy (the three largest UCI sets and the Angrist-Evans extract)
are added from the ``UNPINNED`` table below with ``sha256: null``.

The script writes two byte-identical files: the canonical ``data/manifest.yaml``
and the copy shipped inside the package, ``src/dpreg/data/manifest.yaml`` (so that
``import dpreg`` users can fetch files outside the repository). A unit test checks
that the two are identical and that every ``SHA256SUMS`` line is covered.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from pathlib import Path

import yaml

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SUMS = REPO_ROOT.parent / "shared" / "data" / "mirror" / "SHA256SUMS"
OUTPUTS = (
    REPO_ROOT / "data" / "manifest.yaml",
    REPO_ROOT / "src" / "dpreg" / "data" / "manifest.yaml",
)

UCI_REPO = "treforevans/uci_datasets"
UCI_COMMIT = "f0737523712fe66a1640e4b980b927e8490b58eb"
HM_REPO = "omrilev1/HessianMix"
HM_COMMIT = "37651364bdfa9814fa3220dd2512cdb94f6c213a"
CT_REPO = "caseykneale/ChemometricsTools.jl"
CT_COMMIT = "0403cd4014af9b9d1dcac20c42ca3543ca56a9d5"

UCI_CITATION = (
    "Evans, T. W. uci_datasets: UCI regression benchmarks with fixed train/test splits "
    f"(GitHub {UCI_REPO}, commit {UCI_COMMIT[:7]}). Original data: Dua, D. and Graff, C. "
    "(2019). UCI Machine Learning Repository. University of California, Irvine."
)
HM_CITATION = (
    "Lev, O., Shenfeld, M., Srinivasan, V., Ligett, K. and Wilson, A. C. Near-Optimal Private "
    "Linear Regression via Iterative Hessian Mixing; code and data files at GitHub "
    f"{HM_REPO}, commit {HM_COMMIT[:7]}. Original data: UCI Machine Learning Repository "
    "(Dua and Graff, 2019); bike_train.csv is the Kaggle 'Bike Sharing Demand' train.csv."
)
CT_CITATION = (
    "Borggaard, C. and Thodberg, H. H. (1992). Optimal minimal neural interpretation of "
    "spectra. Analytical Chemistry 64(5), 545-551 (Tecator meat data, StatLib). File from "
    f"Kneale, C. ChemometricsTools.jl (GitHub {CT_REPO}, commit {CT_COMMIT[:7]})."
)
AE_CITATION = (
    "Angrist, J. D. and Evans, W. N. (1998). Children and Their Parents' Labor Supply: "
    "Evidence from Exogenous Variation in Family Size. American Economic Review 88(3), "
    "450-477. Data: Angrist Data Archive, MIT Department of Economics."
)

SOURCES = {
    "uci_datasets": {
        "homepage": f"https://github.com/{UCI_REPO}",
        "commit": UCI_COMMIT,
        "licence": "MIT (repository, LICENSE included); UCI data CC BY 4.0",
        "citation": UCI_CITATION,
        "description": (
            "UCI regression sets as uci_datasets/<name>/data.csv.gz (no header, last column "
            "= target) and test_mask.csv.gz (no header, 10 columns of 0/1 test masks)"
        ),
    },
    "hessianmix": {
        "homepage": f"https://github.com/{HM_REPO}",
        "commit": HM_COMMIT,
        "licence": "no licence on the repository; the files are UCI data (CC BY 4.0)",
        "citation": HM_CITATION,
        "description": (
            "datasets/*: the raw files the Iterative Hessian Mixing experiments read, incl. "
            "<name>_train.txt / <name>_mask.txt copies of uci_datasets"
        ),
    },
    "chemometricstools": {
        "homepage": f"https://github.com/{CT_REPO}",
        "commit": CT_COMMIT,
        "licence": "MIT (ChemometricsTools.jl, LICENSE.md included)",
        "citation": CT_CITATION,
        "description": (
            "data/tecator.csv: 240 rows; 100 absorbances, 22 principal components, "
            "moisture, fat, protein"
        ),
    },
    "angrist_data_archive": {
        "homepage": "https://economics.mit.edu/people/faculty/josh-angrist/angrist-data-archive",
        "commit": None,
        "licence": "not stated; posted by the authors for replication (Angrist Data Archive, MIT)",
        "citation": AE_CITATION,
        "description": (
            "AngEv98.zip: the authors' 1980 and 1990 Census PUMS extracts (about 78 MB); "
            "not pinned, no offline copy"
        ),
    },
}

GROUP_OF_REPO = {UCI_REPO: "uci_datasets", HM_REPO: "hessianmix", CT_REPO: "chemometricstools"}

#: Files with no offline copy: (id, path in the mirror layout, url, source, note).
UNPINNED = [
    *(
        (
            f"uci/{name}/data",
            f"{UCI_REPO}/{UCI_COMMIT}/uci_datasets/{name}/data.csv.gz",
            f"https://raw.githubusercontent.com/{UCI_REPO}/{UCI_COMMIT}/uci_datasets/{name}/data.csv.gz",
            "uci_datasets",
            "no offline copy in the data mirror; sha256 recorded in a sidecar on first download",
        )
        for name in ("3droad", "buzz", "slice")
    ),
    (
        "angev98",
        "economics.mit.edu/sites/default/files/publications/AngEv98.zip",
        "https://economics.mit.edu/sites/default/files/publications/AngEv98.zip",
        "angrist_data_archive",
        "not pinned (no offline copy); download on request only, e.g. "
        "load_angev98(download=True); the observed sha256 is recorded in a sidecar",
    ),
]

HEADER = """\
# dpreg data manifest: every external file, pinned by sha256.
# GENERATED by data/make_manifest.py from the data mirror's SHA256SUMS; do not edit by hand.
# src/dpreg/data/manifest.yaml is a byte-identical copy shipped with the package.
# Entry ids: uci/<name>/data, uci/<name>/test_mask, uci/license, hessianmix/<file stem>,
# tecator, chemometricstools/license, angev98. See data/README.md.
"""


def read_sums(path: Path) -> list[tuple[str, str]]:
    """Parse ``SHA256SUMS`` lines ``<sha256>  <relative path>``."""
    rows = []
    for lineno, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        m = re.fullmatch(r"([0-9a-f]{64}) [ *](\S.*)", line)
        if m is None:
            raise ValueError(f"{path}:{lineno}: not a '<sha256>  <path>' line: {line!r}")
        rows.append((m.group(1), m.group(2)))
    return rows


def entry_id(owner_repo: str, rel: str) -> str:
    """Stable id of one mirrored file (``rel`` is the path inside the repository)."""
    group = GROUP_OF_REPO[owner_repo]
    if group == "uci_datasets":
        if rel == "LICENSE":
            return "uci/license"
        m = re.fullmatch(r"uci_datasets/([^/]+)/(data|test_mask)\.csv\.gz", rel)
        if m is None:
            raise ValueError(f"unexpected uci_datasets file {rel!r}")
        return f"uci/{m.group(1)}/{m.group(2)}"
    if group == "hessianmix":
        m = re.fullmatch(r"datasets/([^/]+)", rel)
        if m is None:
            raise ValueError(f"unexpected HessianMix file {rel!r}")
        return f"hessianmix/{Path(m.group(1)).stem.lower()}"
    if rel == "data/tecator.csv":
        return "tecator"
    if rel == "LICENSE.md":
        return "chemometricstools/license"
    raise ValueError(f"unexpected ChemometricsTools.jl file {rel!r}")


def build(sums: Path) -> dict:
    """Return the manifest as a plain dict."""
    entries: dict[str, dict] = {}
    rows = read_sums(sums)
    ids = []
    for _, path in rows:
        owner, repo, _commit, rel = path.split("/", 3)
        ids.append(entry_id(f"{owner}/{repo}", rel))
    # Stems that collide (communities.data / communities.names) keep their extension.
    dup = {i for i, c in Counter(ids).items() if c > 1}
    for (sha, path), eid in zip(rows, ids, strict=True):
        owner, repo, commit, rel = path.split("/", 3)
        if eid in dup:
            eid = f"{eid}_{Path(rel).suffix.lstrip('.').lower()}"
        if eid in entries:
            raise ValueError(f"duplicate entry id {eid!r} for {path}")
        group = GROUP_OF_REPO[f"{owner}/{repo}"]
        entries[eid] = {
            "path": path,
            "url": f"https://raw.githubusercontent.com/{owner}/{repo}/{commit}/{rel}",
            "sha256": sha,
            "licence": SOURCES[group]["licence"],
            "citation": SOURCES[group]["citation"],
            "source": group,
        }
    for eid, path, url, group, note in UNPINNED:
        if eid in entries:
            raise ValueError(f"{eid!r} is in SHA256SUMS; remove it from UNPINNED")
        entries[eid] = {
            "path": path,
            "url": url,
            "sha256": None,
            "licence": SOURCES[group]["licence"],
            "citation": SOURCES[group]["citation"],
            "source": group,
            "note": note,
        }
    return {"version": 1, "sources": SOURCES, "entries": dict(sorted(entries.items()))}


def render(manifest: dict) -> str:
    """Render the manifest as deterministic YAML text."""
    body = yaml.safe_dump(manifest, sort_keys=False, width=4096, allow_unicode=False)
    return HEADER + body


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sums", type=Path, default=DEFAULT_SUMS, help="path to SHA256SUMS")
    parser.add_argument(
        "--check", action="store_true", help="exit 1 if the committed files are out of date"
    )
    args = parser.parse_args(argv)
    text = render(build(args.sums))
    stale = [p for p in OUTPUTS if not p.exists() or p.read_text() != text]
    if args.check:
        for p in stale:
            print(f"out of date: {p}", file=sys.stderr)
        return 1 if stale else 0
    for p in OUTPUTS:
        p.write_text(text)
        print(f"wrote {p}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
