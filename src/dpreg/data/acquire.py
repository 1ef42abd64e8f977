"""Acquire external files: from a local mirror or by download, always sha256-verified.

Semantics of :func:`fetch` (all documented choices):

* **Destination.** ``<dest_dir>/<entry.path>``, i.e. the mirror layout
  ``<owner>/<repo>/<commit>/<path>``, so files with the same name never collide.
* **Cache.** An existing destination file is re-hashed on every call. If it does not
  match, :class:`DataIntegrityError` is raised and the user is told to delete it: a
  corrupt cached file is never silently replaced (with atomic writes it can only come
  from outside interference, which deserves attention).
* **Mirror first.** ``mirror`` argument, else ``$DPREG_DATA_MIRROR``; the file at
  ``<mirror>/<entry.path>`` is copied (and verified) if present. A mirror directory
  that does not exist is an error (a typo should not silently trigger downloads); a
  file missing from an existing mirror falls through to the download.
* **Download.** The URL is fetched with pooch's ``HTTPDownloader`` (requests, with a
  timeout). HTTP and network errors raise :class:`DataDownloadError` naming the URL.
* **Atomicity.** Data are written to a temporary file in the destination directory,
  verified, then moved into place with :func:`os.replace`. On any failure the
  temporary file, and any directory this call created, are removed: nothing reaches
  the destination.
* **Unpinned entries** (``sha256: null``). Fetched only when asked for explicitly.
  The observed hash is logged (``WARNING``) and recorded in a sidecar
  ``<file>.sha256`` (``sha256sum`` format). Later calls verify the file, or a new
  download, against the sidecar and raise on a difference: two different contents
  are never trusted silently. Delete both file and sidecar to accept new contents.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dpreg.data.manifest import ManifestEntry, load_manifest

__all__ = [
    "MIRROR_ENV",
    "DataDownloadError",
    "DataIntegrityError",
    "DataUnavailableError",
    "fetch",
    "source_settings",
    "sha256_file",
]

logger = logging.getLogger(__name__)

#: Environment variable pointing at a local mirror laid out as ``<owner>/<repo>/<commit>/<path>``.
MIRROR_ENV = "DPREG_DATA_MIRROR"

_CHUNK = 1 << 20

#: Where the workflow keeps downloaded files (the mirror layout, under ``resources/``).
DOWNLOAD_DIR = "resources/downloads"


def source_settings(data_config: Mapping[str, Any] | None) -> dict[str, Any]:
    """Where a workflow job fetches files from: ``mirror``, ``allow_download``, ``dest_dir``.

    The config's ``data`` block and ``$DPREG_DATA_MIRROR`` (which wins) say where files
    come from, never what they are: a file's identity is its manifest sha256, verified on
    every fetch. The workflow therefore reads these settings inside the job rather than
    passing them as rule parameters, which Snakemake would treat as part of the job's
    identity (moving or unsetting the mirror would rebuild every dataset;
    ``docs/architecture.md``, "Data").

    Parameters
    ----------
    data_config : mapping or None
        The config's ``data`` block (keys ``mirror``, ``allow_download``).

    Returns
    -------
    dict
        Keyword arguments for :func:`fetch` (``mirror`` is ``None`` when neither the
        environment nor the config names one).

    Examples
    --------
    >>> settings = source_settings({"mirror": None, "allow_download": False})
    >>> settings["allow_download"], settings["dest_dir"]
    (False, 'resources/downloads')
    """
    data_config = dict(data_config or {})
    mirror = os.environ.get(MIRROR_ENV) or data_config.get("mirror")
    allow_download = data_config.get("allow_download", True)
    if not isinstance(allow_download, bool):
        raise TypeError(f"data.allow_download must be true or false; got {allow_download!r}")
    return {"mirror": mirror, "allow_download": allow_download, "dest_dir": DOWNLOAD_DIR}


class DataIntegrityError(ValueError):
    """A file's sha256 does not match the manifest (or its recorded sidecar hash)."""

    def __init__(self, message: str, *, path: Path | str, expected: str, actual: str) -> None:
        super().__init__(message)
        self.path = str(path)
        self.expected = expected
        self.actual = actual


class DataDownloadError(OSError):
    """A download failed (HTTP error status, network error, timeout)."""

    def __init__(self, message: str, *, url: str) -> None:
        super().__init__(message)
        self.url = url


class DataUnavailableError(FileNotFoundError):
    """The file is neither cached nor in the mirror, and downloading is not allowed."""


def sha256_file(path: str | os.PathLike[str]) -> str:
    """Return the hex sha256 of a file, read in 1 MiB chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def fetch(
    entry_id: str,
    *,
    dest_dir: str | os.PathLike[str] = "resources/downloads",
    mirror: str | os.PathLike[str] | None = None,
    manifest: Mapping[str, ManifestEntry] | str | os.PathLike[str] | None = None,
    allow_download: bool = True,
    timeout: float = 60.0,
) -> Path:
    """Return a local, sha256-verified copy of one manifest entry.

    See the module docstring for the full cache / mirror / sidecar semantics.

    Parameters
    ----------
    entry_id : str
        Manifest id, e.g. ``"uci/airfoil/data"``.
    dest_dir : path-like, default ``"resources/downloads"``
        Download directory (relative paths are relative to the working directory).
        The file lands at ``<dest_dir>/<entry.path>``.
    mirror : path-like, optional
        Local mirror root, tried first. Default: ``$DPREG_DATA_MIRROR`` if set.
    manifest : mapping or path-like, optional
        Entries as returned by :func:`dpreg.data.load_manifest`, or a manifest file.
        Default: :func:`~dpreg.data.load_manifest` with its default resolution.
    allow_download : bool, default True
        If False, only the cache and the mirror are used.
    timeout : float, default 60
        Network timeout in seconds (connect and between bytes).

    Returns
    -------
    pathlib.Path
        Path of the verified file.

    Raises
    ------
    KeyError
        Unknown ``entry_id`` (the message lists close ids).
    DataIntegrityError
        Hash mismatch of a cached file, a mirror file or a download.
    DataDownloadError
        HTTP error status or network failure; names the URL.
    DataUnavailableError
        Not cached, not in the mirror and ``allow_download=False``.
    """
    entries = _resolve_manifest(manifest)
    entry = entries.get(entry_id)
    if entry is None:
        prefix = entry_id.split("/")[0]
        close = sorted(k for k in entries if k.startswith(prefix))[:10]
        raise KeyError(
            f"unknown data manifest entry {entry_id!r}"
            + (f"; similar ids: {close}" if close else f"; {len(entries)} ids are known")
        )
    dest = Path(dest_dir) / Path(*entry.path.split("/"))
    sidecar = dest.with_name(dest.name + ".sha256")
    recorded = _read_sidecar(sidecar) if not entry.pinned else None
    expected = entry.sha256 or recorded

    if dest.exists():
        actual = sha256_file(dest)
        if expected is None:
            _record_unpinned(entry, dest, sidecar, actual)
        elif actual != expected:
            what = "the manifest" if entry.pinned else f"the recorded sidecar {sidecar}"
            raise DataIntegrityError(
                f"cached file {dest} for {entry.id!r} is corrupt or changed: sha256 {actual} "
                f"but {what} expects {expected}. Delete {dest} and fetch again"
                + ("" if entry.pinned else " (delete the sidecar too to accept new contents)"),
                path=dest,
                expected=expected,
                actual=actual,
            )
        return dest

    mirror_root = _resolve_mirror(mirror)
    source_file = None
    if mirror_root is not None:
        candidate = mirror_root / Path(*entry.path.split("/"))
        if candidate.is_file():
            source_file = candidate
        else:
            logger.info("%s not in mirror %s", entry.path, mirror_root)
    if source_file is None and not allow_download:
        where = f"mirror {mirror_root}" if mirror_root is not None else "no mirror configured"
        raise DataUnavailableError(
            f"{entry.id!r} is not cached at {dest} ({where}) and downloading is disabled; "
            f"set ${MIRROR_ENV} to a mirror holding {entry.path}, or allow the download "
            f"of {entry.url}"
        )

    created = _make_parents(dest.parent)
    tmp: Path | None = None
    try:
        fd, tmp_name = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
        tmp = Path(tmp_name)
        if source_file is not None:
            with os.fdopen(fd, "wb") as out, open(source_file, "rb") as src:
                shutil.copyfileobj(src, out, _CHUNK)
            origin = str(source_file)
        else:
            os.close(fd)
            _download(entry.url, tmp, timeout=timeout)
            origin = entry.url
        actual = sha256_file(tmp)
        if expected is not None and actual != expected:
            what = "the manifest" if entry.pinned else f"the recorded sidecar {sidecar}"
            raise DataIntegrityError(
                f"{entry.id!r} from {origin} failed verification (corrupt or truncated): "
                f"sha256 {actual} but {what} expects {expected}; nothing was written to {dest}",
                path=origin,
                expected=expected,
                actual=actual,
            )
        os.replace(tmp, dest)
    except BaseException:
        if tmp is not None:
            tmp.unlink(missing_ok=True)
        for d in reversed(created):
            try:
                d.rmdir()
            except OSError:
                break
        raise
    if expected is None:
        _record_unpinned(entry, dest, sidecar, actual)
    logger.info("fetched %s from %s into %s", entry.id, origin, dest)
    return dest


def _resolve_manifest(
    manifest: Mapping[str, ManifestEntry] | str | os.PathLike[str] | None,
) -> Mapping[str, ManifestEntry]:
    if manifest is None or isinstance(manifest, str | os.PathLike):
        return load_manifest(manifest)
    if isinstance(manifest, Mapping):
        return manifest
    raise TypeError(
        "manifest must be a mapping of ManifestEntry, a path or None; "
        f"got {type(manifest).__name__}"
    )


def _resolve_mirror(mirror: str | os.PathLike[str] | None) -> Path | None:
    if mirror is None:
        env = os.environ.get(MIRROR_ENV)
        if not env:
            return None
        root, origin = Path(env), f"${MIRROR_ENV}"
    else:
        root, origin = Path(mirror), "mirror"
    if not root.is_dir():
        raise NotADirectoryError(
            f"data mirror {root} (from {origin}) is not a directory; fix the path or unset it"
        )
    return root


def _make_parents(directory: Path) -> list[Path]:
    """Create ``directory`` and missing parents; return those created, outermost first."""
    missing = []
    d = directory
    while not d.exists():
        missing.append(d)
        if d.parent == d:
            break
        d = d.parent
    directory.mkdir(parents=True, exist_ok=True)
    return list(reversed(missing))


def _download(url: str, target: Path, *, timeout: float) -> None:
    """Download ``url`` into ``target`` with pooch's HTTP downloader."""
    import pooch
    import requests

    downloader = pooch.HTTPDownloader(progressbar=False, chunk_size=_CHUNK, timeout=timeout)
    try:
        downloader(url, str(target), None)
    except requests.exceptions.HTTPError as exc:
        resp = exc.response
        status = f"HTTP {resp.status_code} {resp.reason}" if resp is not None else str(exc)
        raise DataDownloadError(f"download of {url} failed: {status}", url=url) from exc
    except requests.exceptions.RequestException as exc:
        raise DataDownloadError(
            f"download of {url} failed ({type(exc).__name__}: {exc}); check the network "
            f"or use a local mirror via ${MIRROR_ENV}",
            url=url,
        ) from exc


def _read_sidecar(sidecar: Path) -> str | None:
    if not sidecar.is_file():
        return None
    text = sidecar.read_text().strip()
    digest = text.split()[0] if text else ""
    if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        raise ValueError(
            f"sidecar {sidecar} does not start with a sha256 hex digest; delete it and the "
            "file next to it, then fetch again"
        )
    return digest


def _record_unpinned(entry: ManifestEntry, dest: Path, sidecar: Path, digest: str) -> None:
    if not sidecar.exists():
        fd, tmp = tempfile.mkstemp(dir=sidecar.parent, prefix=f".{sidecar.name}.", suffix=".part")
        try:
            with os.fdopen(fd, "w") as fh:
                fh.write(f"{digest}  {dest.name}\n")
            os.replace(tmp, sidecar)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    logger.warning(
        "%r is not pinned in the manifest; observed sha256 %s for %s (recorded in %s). "
        "Pin it in data/make_manifest.py once the contents are trusted.",
        entry.id,
        digest,
        dest,
        sidecar,
    )
