"""Data snapshots and their metastore records.

A record (``data.snapshot.<table>.<id>``) is small JSON: the snapshot's
place in the chain, its commit time and catalog version, its write id, and
the Iceberg ``metadata.json`` whose current snapshot it is (which lists the
files). Records written before table data moved onto Iceberg named a JSON
manifest instead; those are refused with ``WarehouseFormatError``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from almanac.data.files import DataFile
from almanac.errors import CorruptLogError, WarehouseFormatError

__all__ = [
    "OPERATIONS",
    "DataSnapshot",
    "Record",
    "decode_record",
    "encode_record",
    "snapshot_key",
    "snapshot_prefix",
    "staging_key",
    "table_key",
    "write_key",
]

OPERATIONS = ("append", "overwrite", "replace")
"""``replace`` rewrites files without changing rows (compaction)."""

TABLE_PREFIX = "data.table."
SNAPSHOT_PREFIX = "data.snapshot."
WRITE_PREFIX = "data.write."
STAGING_PREFIX = "data.staging."


def table_key(table_id: int) -> str:
    return f"{TABLE_PREFIX}{table_id}"


def snapshot_prefix(table_id: int) -> str:
    return f"{SNAPSHOT_PREFIX}{table_id}."


def snapshot_key(table_id: int, snapshot_id: int) -> str:
    return f"{snapshot_prefix(table_id)}{snapshot_id:012d}"


def write_key(write_id: str) -> str:
    return f"{WRITE_PREFIX}{write_id}"


def staging_key(write_id: str) -> str:
    return f"{STAGING_PREFIX}{write_id}"


@dataclass(frozen=True, slots=True)
class DataSnapshot:
    """One published state of a table's data.

    ``catalog_version`` is the newest catalog version its rows were written
    against (never lower than its parent's, so that reads by version pick a
    prefix of the chain); ``commit_time`` is a hybrid timestamp, increasing
    along the chain. ``files`` is the whole file set of this state.
    """

    table_id: int
    snapshot_id: int
    parent_id: int | None
    commit_time: int
    catalog_version: int
    operation: str
    write_id: str
    metadata: str
    files: tuple[DataFile, ...]


@dataclass(frozen=True, slots=True)
class Record:
    """A snapshot as the metastore holds it: no files. ``origin`` is the
    (catalog version, commit time) of the table's first snapshot."""

    table_id: int
    snapshot_id: int
    parent_id: int | None
    commit_time: int
    catalog_version: int
    operation: str
    write_id: str
    metadata: str
    origin: tuple[int, int]

    def with_files(self, files: tuple[DataFile, ...]) -> DataSnapshot:
        return DataSnapshot(
            self.table_id,
            self.snapshot_id,
            self.parent_id,
            self.commit_time,
            self.catalog_version,
            self.operation,
            self.write_id,
            self.metadata,
            files,
        )


def encode_record(record: Record) -> bytes:
    body = {
        "table": record.table_id,
        "id": record.snapshot_id,
        "parent": record.parent_id,
        "time": record.commit_time,
        "version": record.catalog_version,
        "op": record.operation,
        "write": record.write_id,
        "metadata": record.metadata,
        "origin": list(record.origin),
    }
    return json.dumps(body, separators=(",", ":"), sort_keys=True).encode()


def decode_record(key: str, raw: bytes, *, legacy: bool = False) -> Record:
    """The record stored at ``key``; ``WarehouseFormatError`` for a record of
    the JSON-manifest format, unless ``legacy`` (the upgrade reads those, and
    gets the manifest's path as ``metadata``)."""
    try:
        body = json.loads(raw)
        old = isinstance(body, dict) and "manifest" in body and "metadata" not in body
        if old and not legacy:
            raise WarehouseFormatError(
                f"Data snapshot record '{key}' describes its files with a JSON manifest, the "
                "format before table data moved onto Apache Iceberg; convert the warehouse with "
                "`almanac upgrade-warehouse <catalog>` before reading or writing it",
                key=key,
                rule="old-warehouse-format",
            )
        origin = body["origin"]
        return Record(
            table_id=int(body["table"]),
            snapshot_id=int(body["id"]),
            parent_id=None if body["parent"] is None else int(body["parent"]),
            commit_time=int(body["time"]),
            catalog_version=int(body["version"]),
            operation=str(body["op"]),
            write_id=str(body["write"]),
            metadata=str(body["manifest" if legacy else "metadata"]),
            origin=(int(origin[0]), int(origin[1])),
        )
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        raise CorruptLogError(f"Data snapshot record '{key}' is corrupted: {exc}", key=key) from exc
