"""A warehouse in the format before Iceberg, written byte for byte as that
release wrote it: JSON records naming JSON manifests that list each
snapshot's whole file set, Parquet files below ``<schema>/<table>/<write_id>/
tablet=<t>/``. The encoders are that release's (``snapshots.py`` at 7a1c4c4);
the running code can no longer write this format, so the tests build it here.
Importable by name: a spawned process runs ``convert_then_die``."""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import os
import signal
import uuid
import zlib
from collections import defaultdict
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import pyarrow as pa
import pyarrow.parquet as pq

from almanac import Catalog
from almanac.access.connection import open_catalog
from almanac.commands import Command
from almanac.data import TableData, Warehouse, conform, new_write_id, table_partitions
from almanac.data.arrow import FIELD_ID
from almanac.data.files import DataFile, column_stats
from almanac.data.snapshots import snapshot_key, table_key, write_key
from almanac.data.upgrade import convert_table
from almanac.metastore import Compare, Put
from almanac.model.catalog_version import DEFAULT_SCHEMA
from almanac.model.descriptors import Table
from tests.data.support import connect

MANIFEST_FORMAT = 1
STAGED_MARKER = "_STAGED"


def encode_value(value: object) -> list[Any] | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return ["b", value]
    if isinstance(value, int):
        return ["i", value]
    if isinstance(value, float):
        return ["f", value.hex()]
    if isinstance(value, decimal.Decimal):
        return ["d", str(value)]
    if isinstance(value, dt.datetime):
        return ["ts", value.isoformat()]
    if isinstance(value, dt.date):
        return ["date", value.isoformat()]
    if isinstance(value, dt.time):
        return ["time", value.isoformat()]
    if isinstance(value, bytes):
        return ["bytes", base64.b64encode(value).decode("ascii")]
    if isinstance(value, str):
        return ["s", value]
    raise TypeError(f"Cannot encode a statistic of type {type(value).__name__}")


def encode_manifest(table_id: int, snapshot_id: int, files: tuple[DataFile, ...]) -> bytes:
    body = {
        "format": MANIFEST_FORMAT,
        "table": table_id,
        "snapshot": snapshot_id,
        "files": [
            {
                "path": f.path,
                "rows": f.rows,
                "size": f.size,
                "tablet": f.partition,
                "stats": {
                    str(cid): [encode_value(s.min), encode_value(s.max), s.null_count]
                    for cid, s in sorted(f.stats.items())
                },
            }
            for f in files
        ],
    }
    return json.dumps(body, separators=(",", ":")).encode()


@dataclass(frozen=True)
class OldRecord:
    table_id: int
    snapshot_id: int
    parent_id: int | None
    commit_time: int
    catalog_version: int
    operation: str
    write_id: str
    manifest: str
    origin: tuple[int, int]


def encode_record(record: OldRecord) -> bytes:
    body = {
        "table": record.table_id,
        "id": record.snapshot_id,
        "parent": record.parent_id,
        "time": record.commit_time,
        "version": record.catalog_version,
        "op": record.operation,
        "write": record.write_id,
        "manifest": record.manifest,
        "origin": list(record.origin),
    }
    return json.dumps(body, separators=(",", ":"), sort_keys=True).encode()


def decode_record(raw: bytes) -> OldRecord:
    body = json.loads(raw)
    return OldRecord(
        body["table"],
        body["id"],
        body["parent"],
        body["time"],
        body["version"],
        body["op"],
        body["write"],
        body["manifest"],
        (body["origin"][0], body["origin"][1]),
    )


def decode_manifest(raw: bytes) -> list[str]:
    return [f["path"] for f in json.loads(raw)["files"]]


def _segment(name: str) -> str:
    return quote(name, safe="") or "%00"


def old_table_dir(warehouse: Warehouse, schema: str, table: str) -> str:
    return f"{warehouse.root}/{_segment(schema)}/{_segment(table)}"


def _tablets(rows: pa.Table, table: Table, partitions: int) -> list[int]:
    """A stable tablet per row from its colocation values: the old release
    had its own hash; which one does not matter to the upgrade, which never
    takes these labels for Iceberg buckets."""
    columns = [rows.column(name).to_pylist() for name in table.colocation]
    return [zlib.crc32(repr(values).encode()) % partitions for values in zip(*columns, strict=True)]


@dataclass(frozen=True)
class Written:
    """One old-format snapshot and the rows of its whole state, keyed by
    column id (what a read at its version must return)."""

    record: OldRecord
    key: str
    rows: tuple[dict[int, object], ...]
    files: tuple[str, ...]


class OldWriter:
    """A process of the release before Iceberg, beside ``cat``: its own
    catalog node with no data plane (that release moved no Iceberg schema on
    ALTER), and commits as it made them: stage marker, files per tablet, a
    manifest of the whole file set, one transaction for pointer, record and
    write key."""

    def __init__(self, cat: Catalog) -> None:
        self.cat = cat
        self.node = open_catalog(cat.target, delay_ms=0)
        cat.on_close(self.node.close)
        self.data = TableData.for_catalog(cat)
        self.states: dict[
            int, tuple[OldRecord, tuple[dict[int, object], ...], tuple[DataFile, ...]]
        ]
        self.states = {}

    def execute(self, commands: list[Command]) -> None:
        """DDL by the old release; ``cat`` has applied it on return."""
        self.node.execute(commands)
        self.cat.catch_up()

    def write(
        self,
        name: str,
        data: pa.Table,
        schema: str = DEFAULT_SCHEMA,
        *,
        operation: str = "append",
    ) -> Written:
        self.node.catch_up()
        at = self.node.catalog()
        table = at.table(name, schema)
        assert table is not None
        rows = conform(data, table)
        partitions = table_partitions(at, table)
        warehouse = self.data.warehouse
        write_id = new_write_id()
        write_dir = f"{old_table_dir(warehouse, schema, name)}/{write_id}"
        warehouse.fs.create_dir(write_dir, recursive=True)
        with warehouse.fs.open_output_stream(f"{write_dir}/{STAGED_MARKER}") as out:
            out.write(write_id.encode())
        by_tablet: dict[int, list[int]] = defaultdict(list)
        for i, tablet in enumerate(_tablets(rows, table, partitions)):
            by_tablet[tablet].append(i)
        new: list[DataFile] = []
        for tablet, indices in sorted(by_tablet.items()):
            directory = f"{write_dir}/tablet={tablet}"
            warehouse.fs.create_dir(directory, recursive=True)
            part = rows.take(pa.array(indices))
            path = f"{directory}/part-{uuid.uuid4().hex}.parquet"
            sink = pa.BufferOutputStream()
            pq.write_table(part, sink, compression="zstd")
            payload = sink.getvalue()
            with warehouse.fs.open_output_stream(path) as out:
                out.write(payload)
            stats = {
                int(f.metadata[FIELD_ID]): column_stats(part.column(i))
                for i, f in enumerate(part.schema)
            }
            new.append(DataFile(path, part.num_rows, payload.size, tablet, stats))
        ids = [int(f.metadata[FIELD_ID]) for f in rows.schema]
        logical = tuple(dict(zip(ids, row.values(), strict=True)) for row in rows.to_pylist())
        parent = self.states.get(table.id)
        clock = self.node.clock
        if parent is None:
            sid, commit_time, version, origin = 1, clock.now(), at.version, None
            merged, state = tuple(new), logical
        else:
            record, prior, prior_files = parent
            sid = record.snapshot_id + 1
            commit_time = clock.update(record.commit_time)
            version = max(at.version, record.catalog_version)
            origin = record.origin
            append = operation == "append"
            merged = (prior_files if append else ()) + tuple(new)
            state = (prior if append else ()) + logical
        base = f"{old_table_dir(warehouse, schema, name)}/_manifests"
        manifest = f"{base}/{table.id}-{sid}-{uuid.uuid4().hex}.json"
        warehouse.fs.create_dir(base, recursive=True)
        with warehouse.fs.open_output_stream(manifest) as out:
            out.write(encode_manifest(table.id, sid, merged))
        record = OldRecord(
            table.id,
            sid,
            None if parent is None else parent[0].snapshot_id,
            commit_time,
            version,
            operation,
            write_id,
            manifest,
            origin or (version, commit_time),
        )
        pointer = table_key(table.id)
        key = snapshot_key(table.id, sid)
        result = self.data.store.txn(
            [
                Compare.absent(pointer)
                if parent is None
                else Compare.value(pointer, "==", str(parent[0].snapshot_id).encode())
            ],
            [
                Put(pointer, str(sid).encode()),
                Put(key, encode_record(record)),
                Put(write_key(write_id), f"{table.id}.{sid}".encode()),
            ],
        )
        assert result.succeeded
        self.states[table.id] = (record, state, merged)
        return Written(record, key, state, tuple(f.path for f in merged))


def convert_then_die(target: str, table_id: int) -> None:
    """Write a table's whole conversion, then die by SIGKILL before the switch."""
    with connect(target) as cat:
        convert_table(cat, TableData.for_catalog(cat), table_id)
        os.kill(os.getpid(), signal.SIGKILL)
