"""The remote client across server failures: the event stream resumes after a
restart without losing or repeating an event, and a DDL whose server died
between its commit and its reply is retried into the original result."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import almanac
from almanac import EventType, RemoteEvent
from tests.waiting import PATIENCE, wait_for

from .support import ServerProcess, free_port


def _wait(cond: threading.Condition, done: Callable[[], bool], what: str) -> None:
    with cond:
        assert cond.wait_for(done, PATIENCE), f"not within {PATIENCE} s: {what}"


def _table(name: str) -> str:
    return f"CREATE TABLE {name} (ID INT64 PRIMARY KEY)"


def test_listeners_hear_every_version_once_across_a_server_restart(tmp_path: Path) -> None:
    store = tmp_path / "data"
    server = ServerProcess(str(store), free_port(), tmp_path / "server.log")
    server.start()
    heard: list[tuple[int, int]] = []
    dropped: list[int] = []
    cond = threading.Condition()

    def on_create(event: RemoteEvent) -> None:
        assert event.type is EventType.TABLE_CREATE
        with cond:
            heard.append((event.version, event.object_id))
            cond.notify_all()

    def broken(event: RemoteEvent) -> None:
        raise RuntimeError("a listener that fails does not stop the others")

    def dropped_later(event: RemoteEvent) -> None:
        with cond:
            dropped.append(event.version)
            cond.notify_all()

    try:
        with almanac.connect(server.url, token=None) as remote:
            remote.sql(_table("BEFORE"))  # made before listening: never heard
            remote.listen(EventType.TABLE_CREATE, broken)
            remote.listen(EventType.TABLE_CREATE, on_create)
            remote.listen(EventType.TABLE_CREATE, dropped_later)
            first = remote.sql(_table("A1")).version
            _wait(cond, lambda: len(heard) == len(dropped) == 1, "the first event")
            remote.unlisten(EventType.TABLE_CREATE, dropped_later)
            server.stop()  # the stream breaks; versions are made while no server runs
            with almanac.connect(str(store)) as local:
                local.sql(_table("A2"))
                local.sql(f"{_table('A3')}; {_table('A4')}")
            server.start()
            remote.sql(_table("A5"))
            _wait(cond, lambda: len(heard) >= 5, "five events")
            assert remote.stream_error is None
            server.stop()
            with almanac.connect(str(store)) as local:
                expected = [
                    (info.version, entry.object_id())
                    for info in local.history(since=first)
                    for entry in info.update.entries
                    if entry.event_type is EventType.TABLE_CREATE
                ]
                # the versions after the last one delivered are truncated away
                local.sql(_table("A6"))
                local.checkpoint_log()
            server.start()
            wait_for(lambda: remote.stream_error is not None, "the event stream's error")
            assert isinstance(remote.stream_error, almanac.VersionNotFoundError)
            assert remote.stream_error.context["status"] == 410
        assert len(expected) == 5 and heard == expected and dropped == [first]
    finally:
        server.stop()


def test_a_ddl_whose_server_died_after_committing_is_retried_into_its_result(
    tmp_path: Path,
) -> None:
    store = tmp_path / "data"
    server = ServerProcess(str(store), free_port(), tmp_path / "server.log")
    server.start(kill_on_table="DOOMED")

    def restart_after_the_kill() -> None:
        server.wait_exit()
        server.start()

    restarter = threading.Thread(target=restart_after_the_kill)
    try:
        # longer than a restart may take on a loaded machine
        with almanac.RemoteCatalog(server.url, retry_s=2 * PATIENCE) as remote:
            before = remote.latest_version
            restarter.start()
            result = remote.execute(
                [
                    almanac.CreateTable(
                        name="DOOMED",
                        columns=(
                            almanac.ColumnDef(
                                name="ID", type=almanac.ColumnType.INT64, nullable=False
                            ),
                        ),
                        primary_key=("ID",),
                    )
                ],
                request_id="doomed-1",
            )
            restarter.join(PATIENCE)
            assert server.proc is not None and server.proc.poll() is None  # the restarted one
            assert (result.version, result.applied, result.created) == (before + 1, (True,), True)
            assert remote.latest_version == before + 1
        with almanac.connect(str(store)) as local:
            assert local.latest_version == before + 1
            assert [v.version for v in local.history() if v.request_id == "doomed-1"] == [
                before + 1
            ]
            assert local.catalog().table("DOOMED") is not None
    finally:
        restarter.join(PATIENCE)
        server.stop()
