"""Test-wide set-up: find the offline data mirror like .ci/run does; Hypothesis's CI profile."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

# Under CI (the CI environment variable, which .ci/run sets) Hypothesis draws the same
# examples on every run and keeps no example database: a red CI is then the code's, never
# the luck of a draw. Local runs keep exploring new examples (and replay the failures they
# found from .hypothesis/); a failure found there becomes an @example (CONTRIBUTING.md).
settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    settings.load_profile("ci")

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
