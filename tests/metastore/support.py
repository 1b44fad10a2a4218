"""Helpers for the conformance suite, including the bodies of the child
processes it spawns (they must live in an importable module, and one that
imports nothing heavier than the metastore)."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event
from pathlib import Path

import pytest

from almanac.dev.etcd_local import LocalEtcd
from almanac.metastore import Compare, MemoryMetastore, Metastore, Put, SqliteMetastore
from almanac.metastore.etcd import EtcdMetastore
from tests.waiting import PATIENCE

BACKENDS = ("memory", "sqlite", "etcd")

# Generous bound for anything that waits on another thread or process; tests
# never assert that something happened *fast*, only that it happened.


class ManualClock:
    """A clock in seconds that moves only when a test moves it."""

    def __init__(self, start: float) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def make_store(
    backend: str, directory: Path, *, clock: Callable[[], float] | None = None
) -> Metastore:
    if backend == "memory":
        return MemoryMetastore() if clock is None else MemoryMetastore(clock=clock)
    if backend == "sqlite":
        path = directory / "metastore.db"
        return SqliteMetastore(path) if clock is None else SqliteMetastore(path, clock=clock)
    if backend == "etcd":
        if clock is not None:
            pytest.skip("etcd expires leases on its own clock; see tests/metastore/test_etcd.py")
        return OwnedEtcdStore(LocalEtcd(1, fsync=False))
    raise ValueError(f"unknown backend {backend!r}")


class OwnedEtcdStore(EtcdMetastore):
    """A store on a fresh one-member cluster that it stops when closed, so
    that every test starts at revision 0."""

    def __init__(self, cluster: LocalEtcd, **options: object) -> None:
        self.cluster = cluster
        try:
            super().__init__(cluster.endpoints, **options)  # type: ignore[arg-type]
        except BaseException:
            cluster.close()
            raise

    def close(self) -> None:
        try:
            super().close()
        finally:
            self.cluster.close()


def wait_until(predicate: Callable[[], bool], timeout: float = PATIENCE) -> bool:
    """Poll ``predicate`` until it holds or ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)


def cas_increment(store: Metastore, key: str, times: int) -> int:
    """Add ``times`` to the integer under ``key`` with a compare-and-swap
    loop; returns how many attempts lost a race."""
    conflicts = 0
    for _ in range(times):
        while True:
            kv = store.get(key)
            current = int(kv.value) if kv else 0
            guard = Compare.mod_revision(key, "==", kv.mod_revision if kv else 0)
            if store.txn([guard], [Put(key, str(current + 1).encode())]).succeeded:
                break
            conflicts += 1
    return conflicts


def cas_worker(path: str, key: str, times: int, start: Event) -> None:
    with SqliteMetastore(path) as store:
        if not start.wait(PATIENCE):
            raise RuntimeError("start signal never came")
        cas_increment(store, key, times)


def watch_worker(
    path: str,
    prefix: str,
    from_revision: int,
    count: int,
    ready: Event,
    results: Queue[list[tuple[str, str, bytes, int]]],
) -> None:
    with SqliteMetastore(path) as store, store.watch(prefix, from_revision) as watch:
        ready.set()
        seen: list[tuple[str, str, bytes, int]] = []
        while len(seen) < count:
            event = watch.next(timeout=PATIENCE)
            if event is None:
                break
            seen.append((event.type.value, event.kv.key, event.kv.value, event.revision))
        results.put(seen)


def put_then_die(path: str, count: int) -> None:
    """Commit ``count`` puts, then die without any chance to clean up."""
    store = SqliteMetastore(path)
    for index in range(count):
        store.put(f"k{index}", str(index).encode())
    os.kill(os.getpid(), signal.SIGKILL)
