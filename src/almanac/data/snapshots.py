"""Data snapshots and their metastore records.

A record (``data.snapshot.<table>.<id>``) is small JSON: the snapshot's
place in the chain, its commit time and catalog version, its write id, and
the Iceberg ``metadata.json`` whose current snapshot it is (which lists the
files). Records written before table data moved onto Iceberg named a JSON
manifest instead; those are refused with ``WarehouseFormatError``.

Both the record and the table's pointer (``data.table.<table>``, the
current snapshot id in decimal) are stored in the update log's checksummed
frame (``almanac.node.log_format.frame``), kind 'R' bound to the snapshot id and
kind 'P' bound to the table id, so a flipped bit, a truncation or a value
moved to another key is a ``CorruptDataError`` naming the key, never another
snapshot. Values written before the frame (bare decimal, bare JSON) still
read: a frame starts with the magic ``A1 4D C3 7E``, which differs in at
least 2 bits from a digit in its first byte and 5 from ``{``, and in at
least 4 from any digit in its third, so no handful of flips turns a frame into a
legacy value; ``decode_pointer`` and ``decode_record`` are the one way in.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Final

from almanac.data.files import DataFile
from almanac.errors import CorruptDataError, WarehouseFormatError
from almanac.metastore import Compare, Metastore
from almanac.node.log_format import frame, open_frame

__all__ = [
    "OPERATIONS",
    "REFS",
    "DataSnapshot",
    "Record",
    "decode_pointer",
    "decode_record",
    "encode_pointer",
    "encode_record",
    "pointer_unchanged",
    "record_unchanged",
    "snapshot_key",
    "snapshot_prefix",
    "staging_key",
    "table_key",
    "write_key",
]

OPERATIONS = ("append", "overwrite", "replace")
"""``replace`` rewrites files without changing rows (compaction)."""
REFS = "refs"
"""The operation of a snapshot that changes only the table's branches and
tags (an Iceberg client's commit): what its main branch reads stays."""

TABLE_PREFIX = "data.table."
SNAPSHOT_PREFIX = "data.snapshot."
WRITE_PREFIX = "data.write."
STAGING_PREFIX = "data.staging."
KIND_POINTER: Final = ord("P")
KIND_RECORD: Final = ord("R")


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

    ``catalog_version`` is the catalog version that published it (its
    ``TableDataCommitted`` entry) and ``commit_time`` that version's
    activation time, so reads by version or by time pick a prefix of the
    chain. A snapshot published before data commits were versions carries
    the newest version its rows were written against instead (shared by the
    appends between two DDL) and its node's clock reading. ``files`` is the
    whole file set of this state.
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


def _corrupt(key: str, problem: str) -> CorruptDataError:
    return CorruptDataError(f"Data key '{key}' is corrupted: {problem}", key=key)


def _unframe(key: str, raw: bytes, kind: int, number: int) -> bytes | None:
    """The checked payload of a framed value; None for a value of the format
    before frames (the caller parses it strictly)."""
    opened = open_frame(raw, lambda problem: _corrupt(key, problem))
    if opened is None:
        return None
    found_kind, found_number, payload = opened
    if found_kind != kind:
        raise _corrupt(key, f"it holds a value of kind {found_kind}, not {kind}")
    if found_number != number:
        raise _corrupt(
            key, f"it holds the value of id {found_number}, not {number}: copied from another key"
        )
    return payload


def _key_id(key: str, prefix: str) -> int:
    """The id a data key ends with (a table id, a snapshot id)."""
    tail = key.rsplit(".", 1)[-1] if key.startswith(prefix) else ""
    if not tail.isdigit() or not tail.isascii():
        raise _corrupt(key, f"the key does not end with an id under '{prefix}'")
    return int(tail)


def _decimal(key: str, raw: bytes) -> int:
    if raw.isdigit() and raw.isascii() and (raw == b"0" or not raw.startswith(b"0")):
        return int(raw)
    raise _corrupt(key, f"it holds {bytes(raw[:32])!r}, not a snapshot id")


def encode_pointer(table_id: int, snapshot_id: int) -> bytes:
    """The stored form of ``data.table.<table_id>`` naming ``snapshot_id``."""
    return frame(KIND_POINTER, table_id, str(snapshot_id).encode())


def decode_pointer(key: str, raw: bytes) -> int:
    """The snapshot id the pointer at ``key`` names, framed or of the format
    before frames; ``CorruptDataError`` naming the key otherwise."""
    payload = _unframe(key, raw, KIND_POINTER, _key_id(key, TABLE_PREFIX))
    return _decimal(key, raw if payload is None else payload)


def pointer_unchanged(store: Metastore, table_id: int, snapshot_id: int | None) -> Compare:
    """The compare that holds while the table's pointer still names
    ``snapshot_id`` (is absent for None), in whichever format it is stored:
    a pointer written before frames is matched as it is, and the commit's
    own put replaces it by a framed one."""
    key = table_key(table_id)
    if snapshot_id is None:
        return Compare.absent(key)
    legacy = str(snapshot_id).encode()
    stored = store.get(key)
    expected = legacy if stored is not None and stored.value == legacy else None
    return Compare.value(key, "==", expected or encode_pointer(table_id, snapshot_id))


def record_unchanged(store: Metastore, record: Record) -> Compare:
    """The compare that holds while ``record`` is stored unchanged, in
    whichever format (see ``pointer_unchanged``)."""
    key = snapshot_key(record.table_id, record.snapshot_id)
    legacy = _body(record)
    stored = store.get(key)
    expected = legacy if stored is not None and stored.value == legacy else None
    return Compare.value(key, "==", expected or encode_record(record))


def encode_record(record: Record) -> bytes:
    """The stored form of ``record``: its JSON in a checksummed frame."""
    return frame(KIND_RECORD, record.snapshot_id, _body(record))


def _body(record: Record) -> bytes:
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
    gets the manifest's path as ``metadata``). ``CorruptDataError`` naming the
    key for a value that fails its checksum, does not parse, or belongs to
    another key."""
    payload = _unframe(key, raw, KIND_RECORD, _key_id(key, SNAPSHOT_PREFIX))
    if payload is None and not raw.startswith(b"{"):
        raise _corrupt(
            key,
            f"it starts with {bytes(raw[:8]).hex(' ')}, neither a checksummed frame nor "
            "a record of an older release",
        )
    try:
        body = json.loads(raw if payload is None else payload)
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
        record = Record(
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
    except (ValueError, KeyError, TypeError, IndexError, RecursionError) as exc:
        # RecursionError: bare JSON (the format before frames) nested past
        # the parser's limit is as corrupt as any other unparsable value.
        raise _corrupt(key, f"{type(exc).__name__}: {exc}") from exc
    if not legacy and key != snapshot_key(record.table_id, record.snapshot_id):
        raise _corrupt(
            key,
            f"it holds the record of snapshot {record.snapshot_id} of table "
            f"{record.table_id}: copied from another key",
        )
    return record
