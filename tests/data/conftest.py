"""Fixtures of the data-plane tests: a real SQLite catalog with a warehouse."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from almanac import Catalog
from tests.data.support import connect

# Hypothesis's default deadline (200 ms per example) is an assertion on a
# duration, which fails on a loaded machine: the data tests never assert one.
settings.register_profile("data", deadline=None)
settings.load_profile("data")


@pytest.fixture
def cat(tmp_path: Path) -> Iterator[Catalog]:
    with connect(str(tmp_path / "data")) as catalog:
        yield catalog
