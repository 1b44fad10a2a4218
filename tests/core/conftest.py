"""Fixtures shared by the catalog core tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import almanac
from almanac import Catalog


@pytest.fixture
def cat() -> Iterator[Catalog]:
    """A fresh in-memory catalog at version 1 (only the PUBLIC schema)."""
    with almanac.connect("memory://") as catalog:
        yield catalog
