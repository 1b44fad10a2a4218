"""Every wait honours its timeout and ends in a typed, retryable error that
names what it waited for. Nothing here asserts how long anything took."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import almanac
from almanac import Catalog, CreateSchema, EventType, RetryableError, WaitTimeoutError
from almanac.metastore import MemoryMetastore, SqliteMetastore, TxnResult
from almanac.model.clock import from_datetime
from almanac.model.schema_sync import MAX_DELAY_MS
from almanac.node.log import UpdateLog
from tests.durable.support import table


@pytest.fixture(params=["memory", "sqlite"])
def cat(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Catalog]:
    target = "memory://" if request.param == "memory" else str(tmp_path / "data")
    with almanac.connect(target, delay_ms=0) as opened:
        yield opened


def test_the_error_is_retryable_and_a_timeout_error() -> None:
    assert issubclass(WaitTimeoutError, RetryableError)
    assert issubclass(WaitTimeoutError, TimeoutError)
    assert "WaitTimeoutError" in almanac.__all__


def test_metadata_completeness_a_day_ahead_honours_its_timeout(cat: Catalog) -> None:
    ahead = dt.datetime.now(dt.UTC) + dt.timedelta(days=1)
    with pytest.raises(
        WaitTimeoutError, match=r"Metadata completeness .* within 1(\.0)? s"
    ) as info:
        cat.wait_for_metadata_completeness(ahead, timeout=1)
    assert info.value.awaited == "metadata completeness"
    assert info.value.timeout == 1
    assert info.value.context["timestamp"] == from_datetime(ahead)
    # A timestamp already past completes at once.
    assert cat.wait_for_metadata_completeness(cat.clock.now(), timeout=10)


def test_catalog_ready_of_a_future_version_times_out(cat: Catalog) -> None:
    with pytest.raises(WaitTimeoutError, match=r"version 99 was not ready .* within 0\.01 s"):
        cat.catalog_ready(99, timeout=0.01)
    assert cat.catalog_ready(cat.latest_version, timeout=0)


def test_schema_sync_wait_of_execute_honours_its_timeout(tmp_path: Path) -> None:
    # A version activates a minute (the longest delay) after its commit:
    # execute cannot see it visible everywhere within its timeout, though it
    # did commit.
    with almanac.connect("memory://", delay_ms=MAX_DELAY_MS) as cat:
        with pytest.raises(WaitTimeoutError, match=r"schema sync.* within 0\.05 s") as info:
            cat.execute([CreateSchema("S")], timeout=0.05)
        assert info.value.awaited == "schema sync"
        assert info.value.context["committed"] is True
        assert cat.catalog().schema("S") is not None
        assert cat.catalog_at(cat.clock.now()).schema("S") is None, "not active yet"


def test_execute_async_future_times_out_with_a_typed_error(cat: Catalog) -> None:
    release = threading.Event()

    def held(event: almanac.Event) -> None:
        release.wait(60)

    cat.listen(EventType.TABLE_CREATE, held)
    future = cat.execute_async([table("T")])
    try:
        with pytest.raises(WaitTimeoutError, match=r"asynchronous execute .* within 0\.01 s"):
            future.result(timeout=0.01)
        with pytest.raises(TimeoutError):
            future.exception(timeout=0)
    finally:
        release.set()
    result = future.result(timeout=60)
    assert result.created and cat.catalog().table("T") is not None


def test_execute_async_passes_its_timeout_to_execute(cat: Catalog) -> None:
    release = threading.Event()

    def held(event: almanac.Event) -> None:
        release.wait(60)

    cat.listen(EventType.TABLE_CREATE, held)
    future = cat.execute_async([table("T")], timeout=0.05)
    try:
        error = future.exception(timeout=60)
    finally:
        release.set()
    assert isinstance(error, WaitTimeoutError) and error.context["committed"] is True


def test_a_pin_that_keeps_losing_to_checkpoints_times_out(cat: Catalog) -> None:
    with cat.pin(1):  # the node's pin lease exists from here on
        pass
    store = cat.log.store
    original = store.txn

    def always_raced(*args: object, **kwargs: object) -> TxnResult:
        return TxnResult(False, store.revision, ())

    store.txn = always_raced  # type: ignore[method-assign]
    try:
        with (
            pytest.raises(WaitTimeoutError, match=r"Pinning catalog version 1 .* within 0\.05 s"),
            cat.pin(1, timeout=0.05),
        ):
            pass
    finally:
        store.txn = original  # type: ignore[method-assign]
    with cat.pin(1, timeout=10) as pinned:
        assert pinned.version == 1


def test_a_writer_section_held_by_another_thread_times_out(cat: Catalog) -> None:
    store = cat.log.store
    held = threading.Event()
    release = threading.Event()

    def holder() -> None:
        with store.exclusive(timeout=10):
            held.set()
            release.wait(60)

    thread = threading.Thread(target=holder)
    thread.start()
    try:
        assert held.wait(60)
        before = cat.latest_version
        with pytest.raises(WaitTimeoutError, match=r"writer section within 0\.05 s"):
            cat.execute([CreateSchema("S")], timeout=0.05)
        assert cat.latest_version == before
    finally:
        release.set()
        thread.join()
    assert cat.execute([CreateSchema("S")], timeout=60).created


HOLD_FLOCK = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.readline()
"""


def test_a_writer_section_held_by_another_process_times_out(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    cat = Catalog(UpdateLog(SqliteMetastore(path)))
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_FLOCK, f"{path}-writer"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(WaitTimeoutError, match="writer section"):
            cat.execute([CreateSchema("S")], timeout=0.1)
        assert cat.log.latest_version() == 1
    finally:
        holder.kill()  # the operating system drops the dead holder's lock
        holder.wait()
    try:
        assert cat.execute([CreateSchema("S")], timeout=60).version == 2
    finally:
        cat.close()


def test_memory_store_without_serialisation_takes_no_section() -> None:
    store = MemoryMetastore(serialize_writers=False)
    with store.exclusive(timeout=0), store.exclusive(timeout=0):
        assert not store.serializes_writers
    store.close()
