"""Fixtures shared by the catalog core tests: every test that takes ``cat``
runs once on an in-memory catalog and once on a SQLite catalog in a fresh
directory (no activation delay, so that the suite stays quick)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import almanac
from almanac import Catalog

BACKENDS = ("memory", "sqlite")


def open_catalog(backend: str, directory: Path) -> Catalog:
    """A fresh catalog at version 1 (only the PUBLIC schema) on ``backend``."""
    if backend == "memory":
        return almanac.connect("memory://")
    if backend == "sqlite":
        return almanac.connect(str(directory / "catalog"), delay_ms=0)
    raise ValueError(f"unknown backend {backend!r}")


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def cat(backend: str, tmp_path: Path) -> Iterator[Catalog]:
    """A fresh catalog at version 1 (only the PUBLIC schema), per backend."""
    with open_catalog(backend, tmp_path) as catalog:
        yield catalog
