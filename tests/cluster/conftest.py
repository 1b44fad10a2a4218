"""Catalog nodes in real processes on one shared store: a SQLite catalog
several processes open, or a namespace of one real 3-member etcd cluster
shared by the whole run; the failure tests find all its members running
again after each test."""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from almanac.dev.etcd_local import LocalEtcd
from almanac.metastore import Metastore, open_metastore
from tests.cluster.support import RecordingNode
from tests.durable.support import child
from tests.waiting import PATIENCE

"""A failure guard for waits on other processes, never a duration."""


class NodeProcess:
    """A ``worker_node`` child: send a request, read its one-line answer."""

    def __init__(self, target: str, name: str, *extra: str) -> None:
        self.proc: subprocess.Popen[str] = child("tests.cluster.worker_node", target, name, *extra)
        ready = self._read()
        assert isinstance(ready, dict), ready
        self.name = ready["ready"]

    def _read(self) -> object:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, f"node process exited with {self.proc.poll()} (see its stderr)"
        return json.loads(line)

    def send(self, op: str, **fields: object) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"op": op, **fields}) + "\n")
        self.proc.stdin.flush()

    def answer(self) -> object:
        return self._read()

    def ask(self, op: str, **fields: object) -> object:
        self.send(op, **fields)
        return self._read()

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.send("exit")
        return self.proc.wait(timeout=PATIENCE)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


@pytest.fixture
def spawn() -> Iterator[list[NodeProcess]]:
    """Started nodes go in this list; whatever is still running is killed after."""
    started: list[NodeProcess] = []
    yield started
    for node in started:
        node.kill()


@pytest.fixture(scope="session")
def etcd_cluster() -> Iterator[LocalEtcd]:
    """One 3-member cluster for every test here; each test takes a namespace."""
    with LocalEtcd(3, fsync=False) as cluster:
        yield cluster


@pytest.fixture(params=["sqlite", "etcd"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A catalog target that several processes share: a SQLite directory,
    or a fresh namespace of the shared etcd cluster."""
    if request.param == "etcd":
        cluster: LocalEtcd = request.getfixturevalue("etcd_cluster")
        return f"{cluster.uri}/n{uuid.uuid4().hex[:12]}"
    return str(tmp_path / "data")


TIMEOUT_S = 3
"""The metastore bound every node of these tests runs with (``?timeout=``)."""


@pytest.fixture
def etcd(etcd_cluster: LocalEtcd) -> Iterator[LocalEtcd]:
    """The shared cluster, whole again after the test whatever it killed."""
    yield etcd_cluster
    for index in range(len(etcd_cluster.members)):
        etcd_cluster.restart(index, wait=False)
    etcd_cluster.wait_healthy()


@pytest.fixture
def etcd_target(etcd: LocalEtcd) -> str:
    """A fresh namespace on the shared cluster."""
    return f"{etcd.uri}/t-{uuid.uuid4().hex[:12]}?timeout={TIMEOUT_S}"


@pytest.fixture
def store(etcd_target: str) -> Iterator[Metastore]:
    """The test's own view of the store, for the audit."""
    with open_metastore(etcd_target) as opened:
        yield opened


class Nodes:
    """Starts catalog node processes on the target and kills what is left."""

    def __init__(self, target: str, directory: Path) -> None:
        self.target = target
        self.directory = directory
        self.started: list[RecordingNode] = []

    def start(self, name: str) -> RecordingNode:
        node = RecordingNode(self.target, name, self.directory / f"{name}.jsonl")
        self.started.append(node)
        return node

    def outcome_files(self) -> list[Path]:
        return sorted(self.directory.glob("*.jsonl"))


@pytest.fixture
def nodes(etcd_target: str, tmp_path: Path) -> Iterator[Nodes]:
    started = Nodes(etcd_target, tmp_path)
    try:
        yield started
    finally:
        for node in started.started:
            node.close()
