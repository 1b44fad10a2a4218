"""Collecting what writes, drops and retention leave behind in the warehouse.

The janitor lists the warehouse *before* it reads the metastore, so that
every file it sees either was registered by then (a live staging lease
protects it) or had already stopped being written. It never deletes a file
that a kept snapshot references (data files, ``metadata.json``, manifest
lists, manifests), and it deletes no metadata of a table while any write to
that table holds a staging lease: every commit is staged, so the metadata a
commit in flight is about to publish is never collected, whatever the
grace. A table whose metadata cannot be read is reported and left alone;
the others are still cleaned.

Iceberg clients commit files they wrote without a lease: the janitor
publishes its cutoff first (``sweep``) and deletes only files modified
before it, and their commits refuse files older than it. It deletes only
inside this catalog's warehouse (its marker proves it), each file only
below its own table's directory (``Warehouse.remove_file``): the files of a
registered table outside the warehouse are never deleted.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import functools
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import pyarrow.fs as pafs

from almanac import _check as check
from almanac.data.commits import TableData, select_record
from almanac.data.expired import EXPIRED_PREFIX, collect, expired_key, unread
from almanac.data.snapshots import (
    SNAPSHOT_PREFIX,
    STAGING_PREFIX,
    TABLE_PREFIX,
    WRITE_PREFIX,
    DataSnapshot,
    Record,
    decode_record,
    pointer_unchanged,
    snapshot_key,
    snapshot_prefix,
    table_key,
    write_key,
)
from almanac.data.staging import ABORTED
from almanac.data.sweep import begin_sweep
from almanac.data.warehouse import METADATA_DIR, STAGED_MARKER, Warehouse
from almanac.errors import (
    CatalogError,
    ConflictError,
    NotFoundError,
    SnapshotExpiredError,
    VersionNotFoundError,
)
from almanac.metastore import Compare, Delete, DeleteRange, Op
from almanac.model.catalog_version import DEFAULT_SCHEMA, CatalogVersion
from almanac.model.entries import TableDataCommitted
from almanac.node.catalog import Catalog
from almanac.node.catalog_types import HookWork

__all__ = ["DEFAULT_GRACE_S", "JanitorReport", "expire_data", "run_janitor"]

DEFAULT_GRACE_S = 3 * 24 * 3600.0
"""How old a write directory that never held a staging lease, or an
unreferenced file of an Iceberg client, must be before the janitor removes
it: younger ones may belong to a commit in flight (an engine's job writes
for as long as it runs). Three days, as Iceberg's own orphan cleanup."""
_MAX_ATTEMPTS = 10


@dataclass
class JanitorReport:
    """What one janitor run removed: uncommitted write directories, files
    (data files and manifests) no kept snapshot references, dropped tables."""

    staging_removed: list[str] = field(default_factory=list)
    files_removed: list[str] = field(default_factory=list)
    tables_purged: list[int] = field(default_factory=list)
    errors: dict[int, str] = field(default_factory=dict)
    """Tables left alone because their stored state cannot be read, with why."""
    kept: list[str] = field(default_factory=list)
    """Unreferenced files outside their table's directory (a registered
    table's, say): never deleted."""


@dataclass
class _State:
    """The data keys at one metastore revision."""

    pointers: dict[int, bytes] = field(default_factory=dict)
    records: dict[int, list[Record]] = field(default_factory=lambda: defaultdict(list))
    writes: dict[str, bytes] = field(default_factory=dict)
    staging: dict[str, str] = field(default_factory=dict)
    expired: set[int] = field(default_factory=set)
    """Tables with snapshots an Iceberg client expired (``almanac.data.expired``)."""


def _read_state(data: TableData) -> _State:
    state = _State()
    for kv in data.store.range("data.").kvs:
        key = kv.key
        if key.startswith(TABLE_PREFIX):
            state.pointers[int(key[len(TABLE_PREFIX) :])] = kv.value
        elif key.startswith(SNAPSHOT_PREFIX):
            record = decode_record(key, kv.value)
            state.records[record.table_id].append(record)
        elif key.startswith(WRITE_PREFIX):
            state.writes[key[len(WRITE_PREFIX) :]] = kv.value
        elif key.startswith(STAGING_PREFIX):
            state.staging[key[len(STAGING_PREFIX) :]] = kv.value.decode("utf-8", "replace")
        elif key.startswith(EXPIRED_PREFIX):
            state.expired.add(int(key[len(EXPIRED_PREFIX) :]))
    return state


def _dropped(cat: Catalog, table_ids: Iterable[int]) -> list[int]:
    """Tables that no available catalog version contains."""
    cat.catch_up()  # every stored version, applied on this thread
    candidates = {t for t in table_ids if cat.catalog().table_by_id(t) is None}
    for version in range(cat.latest_version, cat.earliest_version - 1, -1):
        if not candidates:
            break
        with contextlib.suppress(VersionNotFoundError):
            tables = cat.catalog(version).tables_by_id
            candidates = {t for t in candidates if t not in tables}
    return sorted(candidates)


def _write_dir(path: str) -> str:
    return path.split("/tablet=", 1)[0]


def _files(data: TableData, record: Record) -> set[str]:
    """Every warehouse file the record's snapshot needs: its data files and
    its Iceberg metadata; empty if the record vanished meanwhile (an expiry
    or purge running at the same time already decided about them)."""
    try:
        paths = {f.path for f in data.files_of(record)}
        return paths | data.iceberg.referenced(record.metadata).all()
    except CatalogError:
        if data.record(record.table_id, record.snapshot_id) is None:
            return set()
        raise


def _delete(
    warehouse: Warehouse,
    table_id: int,
    paths: Iterable[str],
    report: list[str],
    kept: list[str] | None = None,
    *,
    older_than_ns: int | None = None,
) -> None:
    """Delete the table's files through the warehouse's guard: those outside
    the table's directory are kept (and listed in ``kept``), and with
    ``older_than_ns`` those modified since (see ``Warehouse.remove_file``)."""
    for path in sorted(paths):
        if warehouse.remove_file(path, table_id, older_than_ns=older_than_ns):
            report.append(path)
        elif kept is not None:
            kept.append(path)


def _purge(
    data: TableData, state: _State, table_id: int, busy: set[int], report: JanitorReport
) -> None:
    """Delete a dropped table's keys, then its files: the whole table
    directory, unless a write to it is still staged (then only what its
    snapshots referenced)."""
    records = state.records.get(table_id, [])
    paths: set[str] = set()
    for record in records:
        with contextlib.suppress(CatalogError):
            paths |= _files(data, record)
    pointer = state.pointers.get(table_id)
    compares = [
        Compare.absent(table_key(table_id))
        if pointer is None
        else Compare.value(table_key(table_id), "==", pointer)
    ]
    ops: list[Op] = [
        Delete(table_key(table_id)),
        DeleteRange(snapshot_prefix(table_id)),
        Delete(expired_key(table_id)),
    ]
    owned = f"{table_id}.".encode()
    ops.extend(Delete(write_key(w)) for w, v in state.writes.items() if v.startswith(owned))
    if not data.store.txn(compares, ops).succeeded:
        return
    report.tables_purged.append(table_id)
    warehouse = data.warehouse
    if table_id in busy:
        _delete(warehouse, table_id, paths, report.files_removed, report.kept)
        return
    inside = {p for p in paths if warehouse.inside(p, table_id)}
    report.kept.extend(sorted(paths - inside))
    if warehouse.remove_dir(warehouse.table_dir(table_id), table_id, itself=True):
        report.files_removed.extend(sorted(inside))


def run_janitor(cat: Catalog, *, grace_s: float = DEFAULT_GRACE_S) -> JanitorReport:
    """Remove staging directories of writes that never committed (lease gone,
    aborted, or never registered and older than ``grace_s``), the data
    snapshots no available catalog version reads (every data commit is a
    version, so the log's retention trims data too; expired or not by an
    Iceberg client, ``almanac.data.expired``), files and manifests no kept
    snapshot references, and all data and keys of tables that no available
    catalog version contains."""
    check.instance(cat, Catalog, "Parameter 'cat' of run_janitor")
    grace_s = check.number(grace_s, "Parameter 'grace_s' of run_janitor", lo=0)
    data = TableData.for_catalog(cat)
    warehouse = data.warehouse
    warehouse.check_owner()
    report = JanitorReport()
    # The cutoff is published before the listing: a commit that lands after
    # the state read below saw it, and refused files older than it.
    cutoff = begin_sweep(data.store, grace_s)
    selector = pafs.FileSelector(warehouse.root, recursive=True, allow_not_found=True)
    listing = [i for i in warehouse.fs.get_file_info(selector) if i.type == pafs.FileType.File]
    state = _read_state(data)
    busy = {t for t in map(warehouse.table_of, state.staging.values()) if t is not None}
    for table_id in _dropped(cat, {*state.pointers, *state.records}):
        _purge(data, state, table_id, busy, report)
        state.records.pop(table_id, None)
    for table_id in sorted(state.records):
        # What only versions the log's retention trimmed read.
        if not unread(cat, state.records[table_id]):
            continue
        try:
            gone = {s.snapshot_id for s in _expire_unread(cat, data, table_id, report)}
            if gone:
                # The listed files of both the records read before and the
                # kept ones now (a rewritten metadata.json) stay this run.
                before = [r for r in state.records[table_id] if r.snapshot_id not in gone]
                now = [r for r in data.records(table_id) if r not in before]
                state.records[table_id] = before + now
        except CatalogError as exc:
            report.errors[table_id] = str(exc)
    for table_id in sorted(state.expired & set(state.records)):
        try:
            gone = {r.snapshot_id for r in collect(cat, data, table_id)}
        except CatalogError as exc:
            report.errors[table_id] = str(exc)
            continue
        state.records[table_id] = [r for r in state.records[table_id] if r.snapshot_id not in gone]
    referenced: set[str] = set()
    for table_id, records in state.records.items():
        try:
            table_files: set[str] = set()
            for record in records:
                table_files |= _files(data, record)
            referenced |= table_files
        except CatalogError as exc:
            report.errors[table_id] = str(exc)

    def old(infos: Iterable[pafs.FileInfo]) -> bool:
        times = [i.mtime_ns for i in infos]
        return all(t is not None and t < cutoff for t in times)

    purged = {warehouse.table_dir(t) + "/" for t in report.tables_purged if t not in busy}
    by_dir: dict[str, list[pafs.FileInfo]] = defaultdict(list)
    depth = warehouse.root.rstrip("/").count("/")
    for info in listing:
        owner = warehouse.table_of(info.path)
        if owner is None or owner in report.errors:
            continue
        if any(info.path.startswith(p) for p in purged):
            continue
        parts = info.path.split("/")
        if len(parts) < depth + 4:
            continue
        if parts[depth + 2] == METADATA_DIR:
            if owner not in busy and info.path not in referenced and old([info]):
                _delete(warehouse, owner, [info.path], report.files_removed, older_than_ns=cutoff)
            continue
        by_dir["/".join(parts[: depth + 3])].append(info)
    for directory, infos in sorted(by_dir.items()):
        write_id = directory.rsplit("/", 1)[1]
        owner = warehouse.table_of(directory)
        assert owner is not None  # listed below a table directory
        if write_id in state.staging:
            continue
        status = state.writes.get(write_id)
        committed = status is not None and status != ABORTED
        staged = any(i.base_name == STAGED_MARKER for i in infos)
        if not (status is not None or staged or old(infos)):
            continue
        garbage = [i.path for i in infos if i.path not in referenced]
        # A whole directory goes only for a write of Almanac's, which can no
        # longer add to it; any other (an Iceberg client's ``data/``) may be
        # gaining files right now, so only the files listed old go.
        almanacs = status is not None or staged
        whole = len(garbage) == len(infos)
        if whole and almanacs:
            if not warehouse.remove_dir(directory, owner):
                continue
        else:
            age = None if almanacs else cutoff
            garbage = [p for p in garbage if warehouse.remove_file(p, owner, older_than_ns=age)]
            whole = len(garbage) == len(infos) and warehouse.remove_empty_dirs(directory, owner)
        if whole and not committed:
            report.staging_removed.append(directory)
            continue
        report.files_removed.extend(p for p in garbage if not p.endswith(f"/{STAGED_MARKER}"))
    return report


def _expired_ids(data: TableData, removed: list[Record], kept: list[Record]) -> set[int]:
    """The Iceberg snapshots the current ``metadata.json`` drops in an expiry:
    those the removed records had as current, and those it lists that no
    kept record has as current (a removed tag's, one of several snapshots
    of one commit), since their files are not kept either. Those a kept
    record still has as current stay, and ``write_without`` keeps every
    snapshot a branch or tag points at."""
    expired: set[int | None] = set()
    for record in removed:
        with contextlib.suppress(CatalogError):
            expired.add(data.iceberg.snapshot_id(record.metadata))
    with contextlib.suppress(CatalogError):
        expired |= {s.snapshot_id for s in data.iceberg.metadata(kept[-1].metadata).snapshots}
    for record in kept:
        with contextlib.suppress(CatalogError):
            expired.discard(data.iceberg.snapshot_id(record.metadata))
    return {i for i in expired if i is not None}


def expire_data(
    cat: Catalog,
    name: str,
    schema: str = DEFAULT_SCHEMA,
    *,
    older_than: int | dt.datetime,
) -> list[DataSnapshot]:
    """Remove the table's snapshots that stopped being current at or before
    ``older_than`` (so a read at any later time still works), except those a
    pinned catalog version reads, and the files only they referenced.
    Returns the removed snapshots. Expiry removes a prefix of the chain."""
    check.instance(cat, Catalog, "Parameter 'cat' of expire_data")
    check.string(name, "Parameter 'name' of expire_data", nonblank=True)
    check.string(schema, "Parameter 'schema' of expire_data", nonblank=True)
    table = cat.catalog().table(name, schema)
    if table is None:
        raise NotFoundError(
            f"Table '{schema}.{name}' does not exist", kind="table", name=f"{schema}.{name}"
        )
    data = TableData.for_catalog(cat)
    data.warehouse.check_owner()
    cutoff = check.timestamp(older_than, "Parameter 'older_than' of expire_data")

    def stopped_before_cutoff(records: list[Record]) -> int:
        keep = 0
        while keep < len(records) - 1 and records[keep + 1].commit_time <= cutoff:
            keep += 1
        return keep

    return _expire(
        cat, data, table.id, f"'{schema}.{name}'", stopped_before_cutoff, as_version=True
    )


def _attached(
    compares: list[Compare],
    ops: list[Op],
    entry: TableDataCommitted,
    _base: CatalogVersion,
    _new: CatalogVersion,
) -> HookWork:
    return HookWork(compares, ops, None, (entry,))


def _attached_latest(
    data: TableData,
    compares: list[Compare],
    ops: list[Op],
    entry: TableDataCommitted,
    _base: CatalogVersion,
    _new: CatalogVersion,
) -> HookWork:
    """An expiry that rewrites no ``metadata.json`` names the table's data as
    it is when the version commits (read inside the commit, and required
    unchanged): naming the snapshot it planned on would hide an append that
    landed meanwhile from every read at that version and after."""
    latest = data.current_record(entry.table_id)
    if latest is None:
        raise ConflictError(f"Table {entry.table_id} lost its data during an expiry", attempts=1)
    named = dataclasses.replace(entry, snapshot_id=latest.snapshot_id, metadata=latest.metadata)
    guard = pointer_unchanged(data.store, entry.table_id, latest.snapshot_id)
    return HookWork([*compares, guard], ops, None, (named,))


def _expire_unread(
    cat: Catalog, data: TableData, table_id: int, report: JanitorReport
) -> list[DataSnapshot]:
    """Remove the table's snapshots that no available catalog version reads
    (those only versions the log's retention trimmed read), and their files."""
    return _expire(
        cat,
        data,
        table_id,
        f"with id {table_id}",
        lambda records: len(unread(cat, records)),
        removed_to=report.files_removed,
        kept_to=report.kept,
    )


def _expire(
    cat: Catalog,
    data: TableData,
    table_id: int,
    what: str,
    keep_from: Callable[[list[Record]], int],
    *,
    removed_to: list[str] | None = None,
    kept_to: list[str] | None = None,
    as_version: bool = False,
) -> list[DataSnapshot]:
    """Remove the prefix of the table's chain before ``keep_from(records)``,
    never a snapshot a pinned catalog version reads, nor the current one,
    and the files only they referenced (listed in ``removed_to``; those
    outside the table's directory are kept, listed in ``kept_to``); the
    current ``metadata.json`` stops offering them. Returns the removed
    snapshots. ``as_version``: the expiry is a catalog version of its own
    (an ``expire`` data commit), as a user's expiry is; the janitor's
    collection of what no available version reads changes no version's
    reads and makes none."""
    for _ in range(_MAX_ATTEMPTS):
        oldest_pin, pins_unchanged = cat.oldest_pinned()
        records = data.records(table_id)
        keep = min(keep_from(records), len(records) - 1)
        if oldest_pin is not None:
            with contextlib.suppress(SnapshotExpiredError):
                needed = select_record(records, version=oldest_pin)
                if needed is not None:
                    keep = min(keep, records.index(needed))
        removed, kept = records[: max(keep, 0)], records[max(keep, 0) :]
        if not removed:
            return []
        snapshots = [data.load(r) for r in removed]
        compares = [pins_unchanged]
        ops: list[Op] = [Delete(snapshot_key(r.table_id, r.snapshot_id)) for r in removed]
        ops.extend(Delete(write_key(r.write_id)) for r in removed)
        # The current metadata.json drops the expired snapshots too, so an
        # Iceberg reader is never offered one whose files are gone.
        current = kept[-1]
        if data.record(table_id, current.snapshot_id) is None:
            continue
        expired = _expired_ids(data, removed, kept)
        hold = data.staging.hold(table_id)
        rewritten: tuple[str, list[str]] | None = None
        ok = False
        try:
            rewritten = data.iceberg.write_without(table_id, current.metadata, expired)
            if rewritten is not None:
                more = data.repoint(current, rewritten[0], hold)
                compares += more[0]
                ops += more[1]
            if as_version:
                entry = TableDataCommitted(
                    table_id,
                    current.snapshot_id,
                    "expire",
                    current.metadata if rewritten is None else rewritten[0],
                    files_removed=len(removed),
                )
                attach = functools.partial(_attached, compares, ops, entry)
                if rewritten is None:
                    attach = functools.partial(_attached_latest, data, compares, ops, entry)
                try:
                    cat.execute([], attach=attach)
                    ok = True
                except ConflictError:
                    ok = False
            else:
                ok = data.store.txn(compares, ops).succeeded
        finally:
            data.staging.release(hold.lease)
            if not ok and rewritten is not None:
                data.iceberg.remove(rewritten[1])
        if not ok:
            continue
        if rewritten is not None:
            kept[-1] = dataclasses.replace(current, metadata=rewritten[0])
        live: set[str] = set()
        for record in kept:
            live |= _files(data, record)
        doomed = {f.path for s in snapshots for f in s.files} - live
        # The current snapshot's replaced metadata.json is left to the
        # janitor's listing, which spares the metadata of a table that a
        # write in flight (one that may have read it) holds.
        removed_metadata: set[str] = set()
        for record in removed:
            with contextlib.suppress(CatalogError):
                removed_metadata |= data.iceberg.referenced(record.metadata).all()
        sink = [] if removed_to is None else removed_to
        _delete(data.warehouse, table_id, doomed, sink, kept_to)
        _delete(data.warehouse, table_id, removed_metadata - live, sink, kept_to)
        live_dirs = {_write_dir(p) for p in live}
        for directory in {_write_dir(p) for p in doomed} - live_dirs:
            data.warehouse.remove_dir(directory, table_id)
        return snapshots
    raise CatalogError(
        f"Could not expire data of table {what}: new pins kept arriving", table=what.strip("'")
    )
