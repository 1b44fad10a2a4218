"""Catalogs with a placement manager that runs only when a test says so
(``run_pass(now=...)``), on memory and on SQLite."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

import almanac
from almanac import Catalog
from almanac.dev.etcd_local import LocalEtcd
from almanac.placement.manager import PlacementManager, attach_placement
from almanac.placement.settings import PlacementSettings

SETTINGS = PlacementSettings(
    interval_s=0.05,
    assignment_timeout_s=30.0,
    leader_ttl_s=2.0,
    create_wait_s=0.0,
    clean_after_s=60.0,
)


@pytest.fixture(scope="session")
def etcd() -> Iterator[LocalEtcd]:
    """One single-member cluster for the placement tests of a worker; each
    test takes a namespace of its own."""
    with LocalEtcd(1, fsync=False) as cluster:
        yield cluster


def namespace() -> str:
    return f"p{uuid.uuid4().hex[:12]}"


@pytest.fixture(params=["memory", "sqlite"])
def cat(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Catalog]:
    target = "memory://" if request.param == "memory" else str(tmp_path / "catalog")
    with almanac.connect(target, delay_ms=0, max_clock_skew_ms=0) as catalog:
        yield catalog


@pytest.fixture
def manager(cat: Catalog) -> PlacementManager:
    return attach_placement(cat, SETTINGS, run=False)
