"""Data commits through every event reader: the HTTP event stream and
history, a ``RemoteCatalog`` listener, and ``almanac watch`` (local and over
HTTP, plain and ``--json``), each telling the table, snapshot, operation
and counts of the commit a local node made on the server's store."""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import almanac
from almanac import Catalog, EventType, RemoteEvent
from almanac.data import write_table
from almanac.model.entries import TableDataCommitted
from tests.cli.support import start
from tests.waiting import PATIENCE, stdout_lines, wait_for

from .conftest import READ_TOKEN
from .support import EventReader, Server


@pytest.fixture(scope="module")
def local(server: Server, server_dir: Path) -> Iterator[Catalog]:
    """A node in this process on the server's store: it writes the data."""
    with almanac.connect(str(server_dir / "catalog"), delay_ms=0) as cat:
        yield cat


def _json(entry: TableDataCommitted) -> dict[str, Any]:
    return {
        "type": "DATA_COMMIT",
        "object_id": entry.table_id,
        "data_commit": {
            "snapshot_id": entry.snapshot_id,
            "metadata": entry.metadata,
            "operation": entry.operation,
            "rows_added": entry.rows_added,
            "rows_removed": entry.rows_removed,
            "files_added": entry.files_added,
            "files_removed": entry.files_removed,
        },
    }


def _entry(cat: Catalog, version: int) -> TableDataCommitted:
    (info,) = cat.history(version)[:1]
    (entry,) = info.update.entries
    assert isinstance(entry, TableDataCommitted)
    return entry


def test_data_commits_reach_every_event_reader(
    server: Server,
    server_dir: Path,
    local: Catalog,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    local.sql("CREATE TABLE DATA_EV (ID INT64 PRIMARY KEY)")
    created = local.latest_version
    table = local.catalog().table("DATA_EV")
    assert table is not None
    monkeypatch.setenv("ALMANAC_TOKEN", READ_TOKEN)
    store = str(server_dir / "catalog")
    procs = [
        start("--store", store, "watch", "--from", str(created + 1), "--json", cwd=tmp_path),
        start("--store", store, "watch", "--from", str(created + 1), cwd=tmp_path),
        start("watch", "--from", str(created + 1), "--json", cwd=tmp_path, store=server.url),
    ]
    stream = EventReader(server, READ_TOKEN, params={"after": created})
    heard: list[RemoteEvent] = []
    remote = almanac.connect(server.url, token=READ_TOKEN)
    try:
        remote.listen(EventType.DATA_COMMIT, heard.append)
        ids = pa.array(range(1000), pa.int64())
        appended = write_table(local, "DATA_EV", pa.table({"ID": ids})).catalog_version
        replaced = write_table(
            local, "DATA_EV", pa.table({"ID": ids[:10]}), operation="overwrite"
        ).catalog_version
        assert (appended, replaced) == (created + 1, created + 2)
        entries = [_entry(local, appended), _entry(local, replaced)]
        assert [e.operation for e in entries] == ["append", "overwrite"]

        wait_for(lambda: len(stream.events) >= 2, "the stream's two data versions")
        sent = dict(stream.events)
        assert [sent[v]["events"] for v in (appended, replaced)] == [[_json(e)] for e in entries]
        files = entries[0].files_added
        words = f"append 1,000 rows to PUBLIC.DATA_EV ({files} file{'s' * (files != 1)})"
        assert sent[appended]["summary"] == words
        assert sent[replaced]["summary"].startswith("overwrite PUBLIC.DATA_EV: 10 rows (")

        with server.client(READ_TOKEN) as client:
            listed = client.get("/v1/history", params={"since": appended, "limit": 2}).json()
        assert [v["events"] for v in listed["versions"]] == [[_json(e)] for e in entries]

        wait_for(lambda: len(heard) >= 2, "the remote listener's two data commits")
        assert [(e.type, e.version, e.object_id) for e in heard] == [
            (EventType.DATA_COMMIT, appended, table.id),
            (EventType.DATA_COMMIT, replaced, table.id),
        ]
        assert [e.data_commit for e in heard] == entries
        assert [v.data_commits for v in remote.history(appended)[:2]] == [(e,) for e in entries]

        local_json, plain, http_json = (stdout_lines(p) for p in procs)
        for lines in (local_json, http_json):
            printed = [json.loads(lines.get(timeout=PATIENCE)) for _ in range(2)]
            assert [p["version"] for p in printed] == [appended, replaced]
            assert [p["events"] for p in printed] == [[_json(e)] for e in entries]
            assert printed[0]["summary"] == words
        head = plain.get(timeout=PATIENCE)
        assert head.startswith(f"version {appended}  ") and head.rstrip("\n").endswith(words)
        e = entries[0]
        assert plain.get(timeout=PATIENCE) == (
            f"  event DATA_COMMIT PUBLIC.DATA_EV (#{table.id}) snapshot {e.snapshot_id}: "
            f"append, +1,000 -0 rows, +{files:,} -0 files\n"
        )
        for proc in procs:
            proc.send_signal(signal.SIGINT)
        assert [proc.wait(timeout=PATIENCE) for proc in procs] == [0, 0, 0]
        assert [p.stderr.read() for p in procs if p.stderr is not None] == ["", "", ""]
    finally:
        remote.close()
        stream.close()
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
