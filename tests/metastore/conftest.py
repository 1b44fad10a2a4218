"""Every conformance test that takes ``store`` runs once per backend."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from almanac.metastore import Metastore

from .support import BACKENDS, make_store


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def store(backend: str, tmp_path: Path) -> Iterator[Metastore]:
    with make_store(backend, tmp_path) as opened:
        yield opened
