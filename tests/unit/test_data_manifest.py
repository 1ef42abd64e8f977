from __future__ import annotations

import copy
import importlib.util
import os
from pathlib import Path

import pytest
import yaml

from dpreg.data import ManifestEntry, load_manifest
from dpreg.data.manifest import default_manifest_path, parse_manifest

REPO_ROOT = Path(__file__).resolve().parents[2]
CANONICAL = REPO_ROOT / "data" / "manifest.yaml"
PACKAGED = REPO_ROOT / "src" / "dpreg" / "data" / "manifest.yaml"


def _mirror() -> Path:
    env = os.environ.get("DPREG_DATA_MIRROR")
    mirror = Path(env) if env else REPO_ROOT.parent / "shared" / "data" / "mirror"
    if not (mirror / "SHA256SUMS").is_file():
        pytest.skip(f"no data mirror with SHA256SUMS at {mirror} (set DPREG_DATA_MIRROR)")
    return mirror


def _sums(mirror: Path) -> dict[str, str]:
    out = {}
    for line in (mirror / "SHA256SUMS").read_text().splitlines():
        if line.strip():
            sha, path = line.split(maxsplit=1)
            out[path.lstrip("*")] = sha
    return out


def test_packaged_copy_is_byte_identical_to_canonical():
    assert PACKAGED.read_bytes() == CANONICAL.read_bytes(), (
        "src/dpreg/data/manifest.yaml differs from data/manifest.yaml; "
        "run `python data/make_manifest.py`"
    )


def test_default_manifest_is_the_packaged_copy(monkeypatch):
    monkeypatch.delenv("DPREG_MANIFEST", raising=False)
    assert default_manifest_path().resolve() == PACKAGED.resolve()
    assert set(load_manifest()) == set(load_manifest(CANONICAL))


def test_fast_loader_reads_the_same_manifest_as_the_pure_python_one():
    """load_manifest parses with libyaml when available: the same objects as safe_load."""
    from dpreg.data import manifest

    text = CANONICAL.read_text(encoding="utf-8")
    assert yaml.load(text, Loader=manifest._SAFE_LOADER) == yaml.safe_load(text)  # noqa: S506
    assert load_manifest(CANONICAL) == parse_manifest(yaml.safe_load(text), origin=str(CANONICAL))


def test_manifest_covers_every_mirror_file():
    sums = _sums(_mirror())
    assert len(sums) == 116
    entries = load_manifest(CANONICAL)
    by_path = {e.path: e for e in entries.values()}
    missing = sorted(set(sums) - set(by_path))
    assert not missing, f"SHA256SUMS files without a manifest entry: {missing}"
    for path, sha in sums.items():
        e = by_path[path]
        assert e.sha256 == sha, e.id
        owner, repo, commit, rel = path.split("/", 3)
        assert e.url == f"https://raw.githubusercontent.com/{owner}/{repo}/{commit}/{rel}"
        assert e.licence and e.citation and e.source
    unpinned = sorted(e.id for e in entries.values() if e.sha256 is None)
    assert unpinned == ["angev98", "uci/3droad/data", "uci/buzz/data", "uci/slice/data"]
    assert len(entries) == 120


def test_manifest_ids_and_groups():
    entries = load_manifest(CANONICAL)
    assert entries["uci/airfoil/data"].path.endswith("uci_datasets/airfoil/data.csv.gz")
    assert entries["uci/airfoil/test_mask"].filename == "test_mask.csv.gz"
    assert entries["hessianmix/housing"].source == "hessianmix"
    assert entries["tecator"].path.endswith("data/tecator.csv")
    assert entries["tecator"].licence.startswith("MIT")
    assert entries["uci/airfoil/data"].licence == (
        "MIT (repository, LICENSE included); UCI data CC BY 4.0"
    )
    assert "no licence" in entries["hessianmix/housing"].licence
    ang = entries["angev98"]
    assert ang.url == "https://economics.mit.edu/sites/default/files/publications/AngEv98.zip"
    assert ang.sha256 is None and not ang.pinned
    assert "3droad" in entries["uci/3droad/data"].url
    for e in entries.values():
        assert isinstance(e, ManifestEntry)
        assert e.id == e.id.lower()


def test_make_manifest_is_reproducible():
    mirror = _mirror()
    spec = importlib.util.spec_from_file_location(
        "make_manifest", REPO_ROOT / "data" / "make_manifest.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    text = mod.render(mod.build(mirror / "SHA256SUMS"))
    assert text == CANONICAL.read_text(), "data/manifest.yaml is stale; run data/make_manifest.py"


def test_env_var_selects_the_manifest(tmp_path, monkeypatch):
    raw = yaml.safe_load(CANONICAL.read_text())
    raw["entries"] = {"uci/airfoil/data": raw["entries"]["uci/airfoil/data"]}
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump(raw))
    monkeypatch.setenv("DPREG_MANIFEST", str(path))
    assert list(load_manifest()) == ["uci/airfoil/data"]


def test_missing_manifest_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="make_manifest"):
        load_manifest(tmp_path / "nope.yaml")


@pytest.fixture(scope="module")
def raw_manifest():
    return yaml.safe_load(CANONICAL.read_text())


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda e: e.update(sha256="abc"), r"'uci/airfoil/data'.*sha256 must be 64"),
        (lambda e: e.update(sha256="A" * 64), r"'uci/airfoil/data'.*sha256"),
        (lambda e: e.update(mirror_url="x"), r"'uci/airfoil/data'.*unknown keys \['mirror_url'\]"),
        (lambda e: e.pop("licence"), r"'uci/airfoil/data'.*missing keys \['licence'\]"),
        (lambda e: e.update(path="../etc/passwd"), r"'uci/airfoil/data'.*relative POSIX path"),
        (lambda e: e.update(path="/abs/file"), r"'uci/airfoil/data'.*relative POSIX path"),
        (lambda e: e.update(url="ftp://x"), r"'uci/airfoil/data'.*http"),
        (lambda e: e.update(source="nowhere"), r"'uci/airfoil/data'.*not declared"),
        (lambda e: e.update(citation=""), r"'uci/airfoil/data'.*citation"),
    ],
)
def test_bad_entries_raise_naming_the_entry(raw_manifest, mutate, message):
    raw = copy.deepcopy(raw_manifest)
    mutate(raw["entries"]["uci/airfoil/data"])
    with pytest.raises(ValueError, match=message):
        parse_manifest(raw)


def test_bad_top_level(raw_manifest):
    raw = copy.deepcopy(raw_manifest)
    raw["extra"] = 1
    with pytest.raises(ValueError, match="unknown top-level keys"):
        parse_manifest(raw)
    raw = copy.deepcopy(raw_manifest)
    raw["version"] = 99
    with pytest.raises(ValueError, match="version"):
        parse_manifest(raw)
    raw = copy.deepcopy(raw_manifest)
    raw["entries"]["Bad Id"] = raw["entries"]["uci/airfoil/data"]
    with pytest.raises(ValueError, match="'Bad Id'"):
        parse_manifest(raw)
