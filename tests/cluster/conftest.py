"""One real 3-member etcd cluster for the whole run; every test gets its own
key namespace on it and finds all members running again afterwards."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from almanac.etcd_local import LocalEtcd
from almanac.metastore import Metastore, open_metastore
from tests.cluster.harness import NodeProcess

TIMEOUT_S = 3
"""The metastore bound every node of these tests runs with (``?timeout=``)."""


@pytest.fixture(scope="session")
def etcd_cluster() -> Iterator[LocalEtcd]:
    with LocalEtcd(3, fsync=False) as cluster:
        yield cluster


@pytest.fixture
def etcd(etcd_cluster: LocalEtcd) -> Iterator[LocalEtcd]:
    """The shared cluster, whole again after the test whatever it killed."""
    yield etcd_cluster
    for index in range(len(etcd_cluster.members)):
        etcd_cluster.restart(index, wait=False)
    etcd_cluster.wait_healthy()


@pytest.fixture
def target(etcd: LocalEtcd) -> str:
    return f"{etcd.uri}/t-{uuid.uuid4().hex[:12]}?timeout={TIMEOUT_S}"


@pytest.fixture
def store(target: str) -> Iterator[Metastore]:
    """The test's own view of the store, for the audit."""
    with open_metastore(target) as opened:
        yield opened


class Nodes:
    """Starts catalog node processes on the target and kills what is left."""

    def __init__(self, target: str, directory: Path) -> None:
        self.target = target
        self.directory = directory
        self.started: list[NodeProcess] = []

    def start(self, name: str) -> NodeProcess:
        node = NodeProcess(self.target, name, self.directory / f"{name}.jsonl")
        self.started.append(node)
        return node

    def outcome_files(self) -> list[Path]:
        return sorted(self.directory.glob("*.jsonl"))


@pytest.fixture
def nodes(target: str, tmp_path: Path) -> Iterator[Nodes]:
    started = Nodes(target, tmp_path)
    try:
        yield started
    finally:
        for node in started.started:
            node.close()
