"""Test-wide set-up: find the offline data mirror like .ci/run does."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_MIRROR = REPO_ROOT.parent / "shared" / "data" / "mirror"

if not os.environ.get("DPREG_DATA_MIRROR") and SHARED_MIRROR.is_dir():
    os.environ["DPREG_DATA_MIRROR"] = str(SHARED_MIRROR)


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def data_mirror() -> Path:
    mirror = os.environ.get("DPREG_DATA_MIRROR")
    if not mirror or not Path(mirror).is_dir():
        pytest.skip("no offline data mirror: set DPREG_DATA_MIRROR to shared/data/mirror")
    return Path(mirror)
