"""Real tablet servers and catalog nodes on a SQLite catalog and on a
namespace of one real 3-member etcd cluster; the Spark session of the run."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from almanac.dev.etcd_local import LocalEtcd
from tests.spark.conftest import spark
from tests.tablets.support import Settings, TabletCluster

__all__ = ["spark"]


@pytest.fixture(scope="session")
def tablet_etcd() -> Iterator[LocalEtcd]:
    with LocalEtcd(3, fsync=False) as cluster:
        yield cluster


def open_cluster(
    request: pytest.FixtureRequest, directory: Path, settings: Settings
) -> TabletCluster:
    etcd = request.getfixturevalue("tablet_etcd") if request.param == "etcd" else None
    return TabletCluster.open(str(request.param), directory, settings, etcd)


@pytest.fixture(params=["sqlite", "etcd"])
def cluster(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[TabletCluster]:
    """A fresh catalog with nothing started on it; whatever the test starts
    is killed after it."""
    opened = open_cluster(request, tmp_path, Settings())
    try:
        yield opened
    finally:
        opened.close()
