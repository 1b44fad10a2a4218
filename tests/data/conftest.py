"""Fixtures of the data-plane tests: a real SQLite catalog with a warehouse."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from almanac import Catalog
from tests.data.support import connect


@pytest.fixture
def cat(tmp_path: Path) -> Iterator[Catalog]:
    with connect(str(tmp_path / "data")) as catalog:
        yield catalog
