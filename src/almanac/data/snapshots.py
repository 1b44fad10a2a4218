"""Data snapshots: their metastore records and their manifests.

A record (``data.snapshot.<table>.<id>``) is small JSON with everything but
the file list; the manifest (an immutable JSON file in the warehouse) holds
the files with typed statistics. Statistic values are tagged so they round
trip exactly: ``["i", 1]``, ``["f", float.hex()]`` (NaN and infinities
included), ``["d", "1.50"]``, ``["date"|"time"|"ts", iso]``,
``["bytes", base64]``, ``["s", text]``, ``["b", true]``.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
from dataclasses import dataclass
from typing import Any

from almanac.data.files import ColumnStats, DataFile
from almanac.errors import CorruptLogError

__all__ = [
    "MANIFEST_FORMAT",
    "OPERATIONS",
    "DataSnapshot",
    "Record",
    "decode_manifest",
    "decode_record",
    "decode_value",
    "encode_manifest",
    "encode_record",
    "encode_value",
    "snapshot_key",
    "snapshot_prefix",
    "staging_key",
    "table_key",
    "write_key",
]

OPERATIONS = ("append", "overwrite")
MANIFEST_FORMAT = 1

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
    manifest: str
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
    manifest: str
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
            self.manifest,
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
        "manifest": record.manifest,
        "origin": list(record.origin),
    }
    return json.dumps(body, separators=(",", ":"), sort_keys=True).encode()


def decode_record(key: str, raw: bytes) -> Record:
    try:
        body = json.loads(raw)
        origin = body["origin"]
        return Record(
            table_id=int(body["table"]),
            snapshot_id=int(body["id"]),
            parent_id=None if body["parent"] is None else int(body["parent"]),
            commit_time=int(body["time"]),
            catalog_version=int(body["version"]),
            operation=str(body["op"]),
            write_id=str(body["write"]),
            manifest=str(body["manifest"]),
            origin=(int(origin[0]), int(origin[1])),
        )
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        raise CorruptLogError(f"Data snapshot record '{key}' is corrupted: {exc}", key=key) from exc


# --------------------------------------------------------------------------- typed values


def encode_value(value: object) -> list[Any] | None:
    """A statistic value as a tagged JSON value that decodes to an equal one."""
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


def decode_value(tagged: object) -> object:
    if tagged is None:
        return None
    if not isinstance(tagged, list) or len(tagged) != 2:
        raise ValueError(f"not a tagged value: {tagged!r}")
    tag, raw = tagged
    decoders: dict[str, Any] = {
        "b": bool,
        "i": int,
        "f": float.fromhex,
        "d": decimal.Decimal,
        "ts": dt.datetime.fromisoformat,
        "date": dt.date.fromisoformat,
        "time": dt.time.fromisoformat,
        "bytes": lambda text: base64.b64decode(text, validate=True),
        "s": str,
    }
    if tag not in decoders:
        raise ValueError(f"unknown value tag {tag!r}")
    return decoders[tag](raw)


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
                "tablet": f.tablet,
                "stats": {
                    str(cid): [encode_value(s.min), encode_value(s.max), s.null_count]
                    for cid, s in sorted(f.stats.items())
                },
            }
            for f in files
        ],
    }
    return json.dumps(body, separators=(",", ":")).encode()


def decode_manifest(path: str, raw: bytes) -> tuple[DataFile, ...]:
    try:
        body = json.loads(raw)
        if body.get("format") != MANIFEST_FORMAT:
            raise ValueError(f"unknown manifest format {body.get('format')!r}")
        return tuple(
            DataFile(
                path=str(f["path"]),
                rows=int(f["rows"]),
                size=int(f["size"]),
                tablet=int(f["tablet"]),
                stats={
                    int(cid): ColumnStats(decode_value(lo), decode_value(hi), int(nulls))
                    for cid, (lo, hi, nulls) in f["stats"].items()
                },
            )
            for f in body["files"]
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise CorruptLogError(f"Manifest '{path}' is corrupted: {exc}", path=path) from exc
