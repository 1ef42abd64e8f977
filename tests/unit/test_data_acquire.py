from __future__ import annotations

import hashlib
import logging
import os
import shutil
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from dpreg.data import (
    DataDownloadError,
    DataIntegrityError,
    DataUnavailableError,
    ManifestEntry,
    fetch,
    load_manifest,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
GOOD = b"a,b,c\n1,2,3\n" * 100
BAD = GOOD[:-5] + b"9,9,9"


def _sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def _entry(eid: str, url: str, sha: str | None, path: str | None = None) -> ManifestEntry:
    return ManifestEntry(
        id=eid,
        path=path or f"owner/repo/commit/{eid.replace('/', '_')}.csv",
        url=url,
        sha256=sha,
        licence="test",
        citation="test",
        source="test",
    )


def _all_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


@pytest.fixture(autouse=True)
def _no_env_mirror(monkeypatch):
    # tests/conftest.py points DPREG_DATA_MIRROR at the shared mirror; isolate from it.
    monkeypatch.delenv("DPREG_DATA_MIRROR", raising=False)


# --------------------------------------------------------------------------- local server


class _Handler(BaseHTTPRequestHandler):
    routes: dict[str, bytes] = {}

    def do_GET(self):  # noqa: N802
        if self.path == "/truncated":
            self.send_response(200)
            self.send_header("Content-Length", str(len(GOOD)))
            self.end_headers()
            self.wfile.write(GOOD[:50])
            self.wfile.flush()
            self.close_connection = True
            return
        body = self.routes.get(self.path)
        if body is None:
            self.send_error(404, "Not Found")
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{httpd.server_address[1]}"
    _Handler.routes = {"/good.csv": GOOD, "/corrupt.csv": BAD, "/unpinned.csv": GOOD}
    yield base
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def manifest(server):
    entries = [
        _entry("t/good", f"{server}/good.csv", _sha(GOOD)),
        _entry("t/corrupt", f"{server}/corrupt.csv", _sha(GOOD)),
        _entry("t/missing", f"{server}/missing.csv", _sha(GOOD)),
        _entry("t/truncated", f"{server}/truncated", _sha(GOOD)),
        _entry("t/truncated_unpinned", f"{server}/truncated", None),
        _entry("t/unpinned", f"{server}/unpinned.csv", None),
        _entry("t/refused", "http://127.0.0.1:9/none.csv", _sha(GOOD)),
    ]
    return {e.id: e for e in entries}


@pytest.mark.network
def test_download_good_file_lands_verified(manifest, tmp_path):
    dest = tmp_path / "dl"
    out = fetch("t/good", dest_dir=dest, manifest=manifest)
    assert out == dest / "owner/repo/commit/t_good.csv"
    assert out.read_bytes() == GOOD
    assert _all_files(dest) == [out]  # no temp files, no sidecar for pinned entries


@pytest.mark.network
@pytest.mark.parametrize("eid", ["t/corrupt", "t/truncated"])
def test_download_corrupt_file_raises_and_leaves_nothing(manifest, tmp_path, eid):
    dest = tmp_path / "dl"
    with pytest.raises((DataIntegrityError, DataDownloadError)) as info:
        fetch(eid, dest_dir=dest, manifest=manifest)
    if isinstance(info.value, DataIntegrityError):
        err = info.value
        assert err.expected == _sha(GOOD)
        assert err.actual == _sha(BAD)
        assert _sha(GOOD) in str(err) and _sha(BAD) in str(err)
        assert manifest[eid].url in str(err)
    assert not dest.exists() or _all_files(dest) == []
    assert not dest.exists(), "directories created by the failed fetch must be removed"


@pytest.mark.network
def test_corrupt_download_is_an_integrity_error(manifest, tmp_path):
    with pytest.raises(DataIntegrityError, match="failed verification"):
        fetch("t/corrupt", dest_dir=tmp_path, manifest=manifest)
    assert _all_files(tmp_path) == []


@pytest.mark.network
def test_download_404_names_the_url(manifest, tmp_path):
    with pytest.raises(DataDownloadError, match=r"missing\.csv.*HTTP 404") as info:
        fetch("t/missing", dest_dir=tmp_path, manifest=manifest)
    assert info.value.url == manifest["t/missing"].url
    assert _all_files(tmp_path) == []


@pytest.mark.network
def test_network_error_names_the_url(manifest, tmp_path):
    with pytest.raises(DataDownloadError, match=r"127\.0\.0\.1:9/none\.csv"):
        fetch("t/refused", dest_dir=tmp_path, manifest=manifest, timeout=5)
    assert _all_files(tmp_path) == []


@pytest.mark.network
def test_truncated_transfer_of_unpinned_file_is_detected(manifest, tmp_path):
    with pytest.raises(DataDownloadError, match="IncompleteRead"):
        fetch("t/truncated_unpinned", dest_dir=tmp_path, manifest=manifest)
    assert _all_files(tmp_path) == []


@pytest.mark.network
def test_unpinned_entry_records_a_sidecar(manifest, tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="dpreg.data.acquire"):
        out = fetch("t/unpinned", dest_dir=tmp_path, manifest=manifest)
    sidecar = out.with_name(out.name + ".sha256")
    assert sidecar.read_text() == f"{_sha(GOOD)}  {out.name}\n"
    assert _sha(GOOD) in caplog.text
    assert _all_files(tmp_path) == [out, sidecar]
    # A later fetch verifies the cached file against the sidecar.
    assert fetch("t/unpinned", dest_dir=tmp_path, manifest=manifest) == out
    out.write_bytes(BAD)
    with pytest.raises(DataIntegrityError, match="sidecar"):
        fetch("t/unpinned", dest_dir=tmp_path, manifest=manifest)
    # Deleting only the file: a new download must match the recorded hash.
    out.unlink()
    _Handler.routes["/unpinned.csv"] = BAD
    try:
        with pytest.raises(DataIntegrityError, match="sidecar") as info:
            fetch("t/unpinned", dest_dir=tmp_path, manifest=manifest)
    finally:
        _Handler.routes["/unpinned.csv"] = GOOD
    assert info.value.expected == _sha(GOOD) and info.value.actual == _sha(BAD)
    assert _all_files(tmp_path) == [sidecar]


def test_unpinned_cached_file_without_sidecar_gets_one(tmp_path):
    entry = _entry("t/u", "http://127.0.0.1:9/u.csv", None)
    dest = tmp_path / entry.path
    dest.parent.mkdir(parents=True)
    dest.write_bytes(GOOD)
    out = fetch("t/u", dest_dir=tmp_path, manifest={"t/u": entry}, allow_download=False)
    assert out.with_name(out.name + ".sha256").read_text().split()[0] == _sha(GOOD)


def test_unpinned_not_available_without_download(tmp_path):
    entry = _entry("t/u", "http://127.0.0.1:9/u.csv", None)
    with pytest.raises(DataUnavailableError, match="downloading is disabled"):
        fetch("t/u", dest_dir=tmp_path, manifest={"t/u": entry}, allow_download=False)
    assert _all_files(tmp_path) == []


# --------------------------------------------------------------------------- mirror


@pytest.fixture
def mini_mirror(tmp_path):
    env = os.environ.get("DPREG_DATA_MIRROR")
    shared = REPO_ROOT.parent / "shared" / "data" / "mirror"
    source = Path(env) if env else shared
    if not source.is_dir():
        source = shared
    if not source.is_dir():
        pytest.skip("no data mirror (set DPREG_DATA_MIRROR to shared/data/mirror)")
    entries = load_manifest()
    mirror = tmp_path / "mirror"
    for eid in ("uci/airfoil/data", "uci/airfoil/test_mask"):
        rel = entries[eid].path
        (mirror / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / rel, mirror / rel)
    return mirror


def test_fetch_from_mirror(mini_mirror, tmp_path):
    dest = tmp_path / "dl"
    out = fetch("uci/airfoil/data", dest_dir=dest, mirror=mini_mirror, allow_download=False)
    entry = load_manifest()["uci/airfoil/data"]
    assert out == dest / entry.path
    assert hashlib.sha256(out.read_bytes()).hexdigest() == entry.sha256
    # Cached: works without the mirror.
    assert fetch("uci/airfoil/data", dest_dir=dest, allow_download=False) == out


def test_fetch_from_mirror_env(mini_mirror, tmp_path, monkeypatch):
    monkeypatch.setenv("DPREG_DATA_MIRROR", str(mini_mirror))
    out = fetch("uci/airfoil/test_mask", dest_dir=tmp_path / "dl", allow_download=False)
    assert out.is_file()


def test_corrupt_mirror_file_raises_and_leaves_nothing(mini_mirror, tmp_path):
    entry = load_manifest()["uci/airfoil/data"]
    victim = mini_mirror / entry.path
    victim.write_bytes(victim.read_bytes()[:-100])
    dest = tmp_path / "dl"
    with pytest.raises(DataIntegrityError, match=entry.sha256) as info:
        fetch("uci/airfoil/data", dest_dir=dest, mirror=mini_mirror, allow_download=False)
    assert str(victim) in str(info.value)
    assert not dest.exists()


def test_truncated_cached_file_is_detected(mini_mirror, tmp_path):
    dest = tmp_path / "dl"
    out = fetch("uci/airfoil/data", dest_dir=dest, mirror=mini_mirror)
    out.write_bytes(out.read_bytes()[:1000])
    with pytest.raises(DataIntegrityError, match=r"Delete .*data\.csv\.gz"):
        fetch("uci/airfoil/data", dest_dir=dest, mirror=mini_mirror)
    assert out.stat().st_size == 1000  # never replaced silently


def test_missing_in_mirror_without_download(mini_mirror, tmp_path):
    with pytest.raises(DataUnavailableError, match="DPREG_DATA_MIRROR"):
        fetch(
            "uci/autompg/data", dest_dir=tmp_path / "dl", mirror=mini_mirror, allow_download=False
        )
    assert not (tmp_path / "dl").exists()


def test_bad_mirror_dir_and_unknown_id(tmp_path):
    with pytest.raises(NotADirectoryError, match="not a directory"):
        fetch("uci/airfoil/data", dest_dir=tmp_path, mirror=tmp_path / "typo")
    with pytest.raises(KeyError, match="uci/airfoil/data"):
        fetch("uci/airfoil/dat", dest_dir=tmp_path)
    with pytest.raises(TypeError, match="manifest"):
        fetch("uci/airfoil/data", dest_dir=tmp_path, manifest=42)
