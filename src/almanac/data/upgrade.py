"""Converting a warehouse written in the JSON-manifest format to Iceberg.

Before table data moved onto Apache Iceberg, a snapshot record named a JSON
manifest (``<root>/<schema>/<table>/_manifests/<tid>-<sid>-<uuid>.json``)
listing the snapshot's whole file set with tagged statistics. ``upgrade_warehouse``
replays each such chain, oldest first, as Iceberg snapshots written by the
new core (``IcebergWriter.write_commit``): an append for the files a record
added when it removed none, else an overwrite with its whole file set. The
data files stay where they are (an Iceberg data file may live anywhere),
except those whose old path would lie under a table-id directory of the new
layout (a schema named with digits), which are copied into the table's own
directory: the janitor owns id directories and would otherwise collect them.

A table switches in ONE metastore transaction that compares every old
record's exact bytes, the table's pointer and the conversion's staging key,
so a concurrent change makes it fail cleanly (its metadata is deleted and
the table is converted again). A run killed before the switch leaves the old
records intact; the metadata it wrote is garbage the janitor collects once
the conversion's staging lease is gone. After the switch the old manifests
are deleted. A table that cannot be converted is reported and left as it
was. A table no available catalog version holds (dropped) is purged, as the
janitor would: its keys, then its old manifests and files.

Converted files are registered unpartitioned: the old format placed rows in
tablets by its own hash, not by Iceberg's bucket, so a ``bucket`` partition
value would make Iceberg readers prune wrongly.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import decimal
import json
from dataclasses import dataclass, field
from typing import Any

import pyarrow.fs as pafs

from almanac import _check as check
from almanac.data.commits import TableData
from almanac.data.files import ColumnStats, DataFile
from almanac.data.iceberg_schema import CommitShape
from almanac.data.snapshots import (
    SNAPSHOT_PREFIX,
    Record,
    decode_record,
    encode_record,
    snapshot_key,
    snapshot_prefix,
    staging_key,
    table_key,
    write_key,
)
from almanac.data.tablets import table_partitions
from almanac.data.warehouse import STAGED_MARKER, new_write_id
from almanac.errors import CatalogError, ConflictError, CorruptLogError, VersionNotFoundError
from almanac.metastore import Compare, Delete, DeleteRange, KeyValue, Op, Put
from almanac.model.descriptors import Table
from almanac.node.catalog import Catalog

__all__ = ["UpgradeReport", "convert_table", "legacy_tables", "upgrade_warehouse"]

MANIFEST_FORMAT = 1
UPGRADE_TTL_S = 600.0
"""Staging lease of one table's conversion, renewed after every snapshot."""
MAX_ATTEMPTS = 5


@dataclass
class UpgradeReport:
    """What one run did: snapshots converted per table id, tables purged
    (in no available catalog version: dropped), data files copied out of
    id directories (old path to new), old manifests deleted."""

    converted: dict[int, int] = field(default_factory=dict)
    purged: list[int] = field(default_factory=list)
    relocated: dict[str, str] = field(default_factory=dict)
    manifests_removed: list[str] = field(default_factory=list)
    errors: dict[int, str] = field(default_factory=dict)
    """Tables left in the old format, with why; the others were converted."""


# --------------------------------------------------------------------------- the old format


def _decode_value(tagged: object) -> object:
    """A tagged statistic of the old manifests: ``["i", 1]``, ``["f", hex]``,
    ``["d", "1.50"]``, ``["ts"|"date"|"time", iso]``, ``["bytes", b64]``,
    ``["s", text]``, ``["b", bool]``."""
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


def _decode_manifest(path: str, raw: bytes) -> tuple[DataFile, ...]:
    try:
        body = json.loads(raw)
        if body.get("format") != MANIFEST_FORMAT:
            raise ValueError(f"unknown manifest format {body.get('format')!r}")
        return tuple(
            DataFile(
                path=str(f["path"]),
                rows=int(f["rows"]),
                size=int(f["size"]),
                partition=int(f["tablet"]),
                stats={
                    int(cid): ColumnStats(_decode_value(lo), _decode_value(hi), int(nulls))
                    for cid, (lo, hi, nulls) in f["stats"].items()
                },
            )
            for f in body["files"]
        )
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise CorruptLogError(f"Manifest '{path}' is corrupted: {exc}", path=path) from exc


@dataclass(frozen=True, slots=True)
class _Legacy:
    """An old-format record, kept with its exact stored bytes."""

    kv: KeyValue
    record: Record
    """The record with ``metadata`` holding the old manifest's path."""


def _is_legacy(raw: bytes) -> bool:
    try:
        body = json.loads(raw)
    except ValueError:
        return False
    return isinstance(body, dict) and "manifest" in body and "metadata" not in body


def _decode_legacy(kv: KeyValue) -> _Legacy:
    record = decode_record(kv.key, kv.value, legacy=True)
    if kv.key != snapshot_key(record.table_id, record.snapshot_id):
        raise CorruptLogError(
            f"Data snapshot record '{kv.key}' describes snapshot {record.snapshot_id} of table "
            f"{record.table_id}, which belongs under another key",
            key=kv.key,
        )
    return _Legacy(kv, record)


def legacy_tables(data: TableData) -> list[int]:
    """Ids of the tables that hold old-format records."""
    found: set[int] = set()
    for kv in data.store.range(SNAPSHOT_PREFIX).kvs:
        if _is_legacy(kv.value):
            head = kv.key[len(SNAPSHOT_PREFIX) :].split(".", 1)[0]
            if not head.isdigit():
                raise CorruptLogError(
                    f"Data snapshot record '{kv.key}' names no table id", key=kv.key
                )
            found.add(int(head))
    return sorted(found)


# --------------------------------------------------------------------------- converting


def _read_manifest(data: TableData, record: Record) -> tuple[DataFile, ...]:
    path = record.metadata
    try:
        with data.warehouse.fs.open_input_stream(path) as stream:
            raw = stream.read()
    except FileNotFoundError as exc:
        raise CatalogError(
            f"Manifest '{path}' of data snapshot {record.snapshot_id} of table "
            f"{record.table_id} is missing from the warehouse; the table cannot be upgraded",
            path=path,
            table_id=record.table_id,
        ) from exc
    return _decode_manifest(path, raw)


def _shape(cat: Catalog, table_id: int, version: int) -> CommitShape | None:
    """The table at ``version``, or at the oldest available version when the
    log was truncated past it; None if the table is not there (dropped).
    The shape has no colocation, so its Iceberg spec is unpartitioned."""
    try:
        at = cat.catalog(version)
    except VersionNotFoundError:
        at = cat.catalog(cat.earliest_version)
    table = at.table_by_id(table_id)
    if table is None:
        return None
    unpartitioned: Table = table.evolve(colocation=())
    return CommitShape(unpartitioned, table_partitions(at, table), at.version)


@dataclass
class Conversion:
    """One table's conversion, written and not yet published."""

    table_id: int
    compares: list[Compare]
    ops: list[Op]
    written: list[str]
    """Every Iceberg metadata file and copied data file it wrote."""
    manifests: list[str]
    """The old manifests, deleted once the records switched."""
    relocated: dict[str, str]
    write_dir: str
    lease: int
    snapshots: int


def convert_table(cat: Catalog, data: TableData, table_id: int) -> Conversion | None:
    """Write the Iceberg metadata of every old-format snapshot of the table and
    return the transaction that switches its records, or None when it has
    none left. A table in no available catalog version gets a purge instead."""
    kvs = data.store.range(snapshot_prefix(table_id)).kvs
    if not any(_is_legacy(kv.value) for kv in kvs):
        return None
    mixed = [kv.key for kv in kvs if not _is_legacy(kv.value)]
    if mixed:
        raise CorruptLogError(
            f"Table {table_id} holds old-format data snapshot records beside others "
            f"(for example '{mixed[0]}'); it cannot be upgraded",
            table_id=table_id,
        )
    legacy = [_decode_legacy(kv) for kv in kvs]
    pointer = data.store.get(table_key(table_id))
    compares = [Compare.value(kv.key, "==", kv.value) for kv in kvs]
    compares.append(
        Compare.absent(table_key(table_id))
        if pointer is None
        else Compare.value(pointer.key, "==", pointer.value)
    )
    shapes = [_shape(cat, table_id, old.record.catalog_version) for old in legacy]
    manifests = [old.record.metadata for old in legacy]
    if any(shape is None for shape in shapes):
        return _purge(data, table_id, legacy, compares, manifests)
    write_id = new_write_id()
    write_dir = data.warehouse.write_dir(table_id, write_id)
    lease = data.staging.stage(write_id, write_dir, ttl_s=UPGRADE_TTL_S)
    staging = data.store.get(staging_key(write_id))
    conversion = Conversion(table_id, compares, [], [], manifests, {}, write_dir, lease, 0)
    if staging is None:
        data.staging.release(lease)
        raise ConflictError(
            f"The staging lease of the upgrade of table {table_id} expired at once", attempts=1
        )
    compares.append(Compare.mod_revision(staging.key, "==", staging.mod_revision))
    try:
        _write_chain(data, legacy, shapes, conversion)
    except BaseException:
        abandon(data, conversion)
        raise
    conversion.ops.append(Delete(staging.key))
    return conversion


def _write_chain(
    data: TableData,
    legacy: list[_Legacy],
    shapes: list[CommitShape | None],
    conversion: Conversion,
) -> None:
    location = data.warehouse.table_dir(conversion.table_id)
    parent: tuple[Record, str, tuple[DataFile, ...]] | None = None
    for old, shape in zip(legacy, shapes, strict=True):
        assert shape is not None
        record = old.record
        files = tuple(_relocate(data, f, conversion) for f in _read_manifest(data, record))
        if parent is not None and parent[0].snapshot_id != record.parent_id:
            parent = None  # the chain starts after an expired snapshot
        if parent is None:
            added, replace_all = files, False
        else:
            before = {f.path for f in parent[2]}
            now = {f.path for f in files}
            replace_all = bool(before - now)
            added = files if replace_all else tuple(f for f in files if f.path not in before)
        metadata, written = data.iceberg.write_commit(
            conversion.table_id,
            location,
            None if parent is None else parent[1],
            shape,
            added,
            replace_all=replace_all,
            write_id=record.write_id,
            snapshot_version=record.catalog_version,
        )
        conversion.written.extend(written)
        new = Record(
            table_id=record.table_id,
            snapshot_id=record.snapshot_id,
            parent_id=record.parent_id,
            commit_time=record.commit_time,
            catalog_version=record.catalog_version,
            operation=record.operation,
            write_id=record.write_id,
            metadata=metadata,
            origin=record.origin,
        )
        conversion.ops.append(Put(old.kv.key, encode_record(new)))
        conversion.snapshots += 1
        parent = (record, metadata, files)
        data.staging.keep_alive(conversion.lease)


def _relocate(data: TableData, file: DataFile, conversion: Conversion) -> DataFile:
    """The file where it is, unless its old path lies under a table-id
    directory (a schema named with digits): then a copy in this table's own
    directory, which the janitor only collects when nothing references it."""
    warehouse = data.warehouse
    if warehouse.table_of(file.path) is None:
        return file
    done = conversion.relocated.get(file.path)
    if done is None:
        name = file.path.rsplit("/", 1)[1]
        done = f"{conversion.write_dir}/tablet={file.partition}/{len(conversion.relocated)}-{name}"
        try:
            warehouse.fs.create_dir(done.rsplit("/", 1)[0], recursive=True)
            warehouse.fs.copy_file(file.path, done)
        except OSError as exc:
            raise CatalogError(
                f"Cannot copy data file '{file.path}' of table {conversion.table_id} out of "
                f"a table-id directory: {exc}",
                path=file.path,
            ) from exc
        conversion.relocated[file.path] = done
        conversion.written.append(done)
    return DataFile(done, file.rows, file.size, file.partition, file.stats)


def _purge(
    data: TableData,
    table_id: int,
    legacy: list[_Legacy],
    compares: list[Compare],
    manifests: list[str],
) -> Conversion:
    """A table no available catalog version holds can never be read again,
    so its keys go (what the janitor does to a dropped table) and, after,
    its old manifests and data files."""
    files: set[str] = set()
    for old in legacy:
        with contextlib.suppress(CatalogError):
            files |= {f.path for f in _read_manifest(data, old.record)}
    ops: list[Op] = [Delete(table_key(table_id)), DeleteRange(snapshot_prefix(table_id))]
    ops.extend(Delete(write_key(old.record.write_id)) for old in legacy)
    return Conversion(table_id, compares, ops, [], [*manifests, *sorted(files)], {}, "", 0, 0)


def publish(data: TableData, conversion: Conversion, report: UpgradeReport) -> bool:
    """Run the switch; on success delete what the old format no longer needs
    and return True, else delete what the conversion wrote and return False."""
    try:
        succeeded = data.store.txn(conversion.compares, conversion.ops).succeeded
    except BaseException:
        abandon(data, conversion)
        raise
    if not succeeded:
        abandon(data, conversion)
        return False
    # The old layout's files lie in the warehouse but below no table-id
    # directory of their own: the guard admits anywhere inside (None).
    for path in conversion.manifests:
        data.warehouse.remove_file(path, None)
    for directory in {path.rsplit("/", 1)[0] for path in conversion.manifests}:
        _remove_if_empty(data, directory)
    for path in conversion.relocated:
        data.warehouse.remove_file(path, None)
    if conversion.write_dir:
        table_id = conversion.table_id
        data.warehouse.remove_file(f"{conversion.write_dir}/{STAGED_MARKER}", table_id)
        if not conversion.relocated:
            data.warehouse.remove_dir(conversion.write_dir, table_id)
        data.staging.release(conversion.lease)
        report.converted[conversion.table_id] = conversion.snapshots
        report.relocated.update(conversion.relocated)
        report.manifests_removed.extend(conversion.manifests)
    else:
        report.purged.append(conversion.table_id)
    return True


def _remove_if_empty(data: TableData, directory: str) -> None:
    """An old ``_manifests`` directory once its manifests are gone."""
    fs = data.warehouse.fs
    with contextlib.suppress(OSError):
        selector = pafs.FileSelector(directory, allow_not_found=True)
        if not fs.get_file_info(selector):
            data.warehouse.remove_dir(directory, None)


def abandon(data: TableData, conversion: Conversion) -> None:
    """Delete what an unpublished conversion wrote and give up its lease."""
    data.iceberg.remove(conversion.written)
    if conversion.write_dir:
        data.warehouse.remove_dir(conversion.write_dir, conversion.table_id)
        data.staging.release(conversion.lease)


def upgrade_warehouse(cat: Catalog) -> UpgradeReport:
    """Convert every table whose data snapshot records are in the old
    JSON-manifest format; a second run finds nothing to do. A table changed
    while it was converted is converted again, up to ``MAX_ATTEMPTS`` times.
    A table that cannot be converted (a manifest missing, a type Iceberg
    cannot hold, races lost) stays as it was and is reported in ``errors``;
    one broken table never stops the others."""
    check.instance(cat, Catalog, "Parameter 'cat' of upgrade_warehouse")
    data = TableData.for_catalog(cat)
    data.warehouse.check_owner()
    cat.catch_up()
    report = UpgradeReport()
    for table_id in legacy_tables(data):
        try:
            _upgrade_table(cat, data, table_id, report)
        except CatalogError as exc:
            report.errors[table_id] = str(exc)
    return report


def _upgrade_table(cat: Catalog, data: TableData, table_id: int, report: UpgradeReport) -> None:
    for _ in range(MAX_ATTEMPTS):
        conversion = convert_table(cat, data, table_id)
        if conversion is None or publish(data, conversion, report):
            return
    raise ConflictError(
        f"Gave up upgrading the data of table {table_id} after {MAX_ATTEMPTS} attempts: "
        "its snapshot records kept changing",
        attempts=MAX_ATTEMPTS,
    )
