"""The data-commit protocol: pointers and records in the metastore, Iceberg
metadata in the warehouse, one compare-and-swap transaction per commit.

A commit writes the next Iceberg ``metadata.json`` (with its manifest list
and a manifest of the new files only, so a commit costs the size of what it
adds), then publishes it: its transaction compares ``data.table.<id>`` with
the parent it read (so two commits never both build on one parent),
requires ``data.write.<write_id>`` to be absent (so a write applies once)
and its staging key to be the one under its live lease. Every commit is
staged (``staging``): the janitor collects nothing of a table while a
staging lease under it lives, and a write whose lease expired (its files
may be gone) can never publish.
"""

from __future__ import annotations

import dataclasses
import random
import threading
import time
import weakref
from collections.abc import Callable, Sequence

from pyiceberg.table.metadata import TableMetadata

from almanac import _check as check
from almanac.data.deletes import live_rows
from almanac.data.file_checks import (
    check_files_belong,
    check_files_exist,
    check_tablets,
    files_arg,
    unique,
)
from almanac.data.files import DataFile
from almanac.data.iceberg_schema import CommitShape
from almanac.data.iceberg_write import IcebergWriter
from almanac.data.snapshots import (
    OPERATIONS,
    REFS,
    DataSnapshot,
    Record,
    decode_pointer,
    decode_record,
    encode_pointer,
    encode_record,
    pointer_unchanged,
    record_unchanged,
    snapshot_key,
    snapshot_prefix,
    staging_key,
    table_key,
    write_key,
)
from almanac.data.staging import ABORTED, Hold, Staging
from almanac.data.warehouse import Warehouse, new_write_id
from almanac.errors import (
    CatalogError,
    ConflictError,
    SnapshotExpiredError,
    ValidationError,
    WriteStateError,
)
from almanac.metastore import Compare, Delete, Metastore, Op, Put
from almanac.model.catalog_version import CatalogVersion
from almanac.model.clock import HybridClock
from almanac.model.entries import TableDataCommitted
from almanac.model.read_point import ReadPoint
from almanac.node.catalog import Catalog
from almanac.node.catalog_types import HookWork

__all__ = ["DEFAULT_MAX_ATTEMPTS", "CommitShape", "TableData", "select_record"]

DEFAULT_MAX_ATTEMPTS = 20
COMMIT_SECTION_TIMEOUT_S = 60.0
"""How long a data commit waits for the store's writer section."""
_tables: weakref.WeakKeyDictionary[Catalog, TableData] = weakref.WeakKeyDictionary()
_tables_lock = threading.Lock()


def select_record(
    records: Sequence[Record], *, version: int | None = None, timestamp: int | None = None
) -> Record | None:
    """The newest record with ``catalog_version <= version`` (or ``commit_time
    <= timestamp``) among ``records`` (kept snapshots, oldest first); None when
    the table had no data then; ``SnapshotExpiredError`` when it was expired."""
    if (version is None) == (timestamp is None):
        raise ValidationError("Give exactly one of version and timestamp")
    by_version = version is not None
    bound = version if version is not None else timestamp
    assert bound is not None
    chosen = None
    for record in records:
        if (record.catalog_version if by_version else record.commit_time) <= bound:
            chosen = record
    if chosen is not None or not records or records[0].snapshot_id == 1:
        return chosen
    first = records[0]
    if first.origin[0 if by_version else 1] <= bound:
        what = f"catalog version {version}" if by_version else f"timestamp {timestamp}"
        raise SnapshotExpiredError(
            f"The data of table {first.table_id} at {what} was expired; the oldest kept "
            f"data snapshot is {first.snapshot_id} (catalog version {first.catalog_version})",
            table_id=first.table_id,
            version=version,
            timestamp=timestamp,
        )
    return None


def _check_operation(operation: str) -> None:
    if operation not in OPERATIONS:
        raise ValidationError(
            f"Data commit operation must be one of {', '.join(OPERATIONS)}, not {operation!r}",
            operation=operation,
        )


class TableData:
    """The data-commit protocol for all tables of one catalog: pointers in the
    metastore, Iceberg tables in the warehouse. Safe to share between threads;
    every process builds its own (``for_catalog``) from the catalog target."""

    def __init__(
        self, store: Metastore, warehouse: Warehouse, clock: HybridClock | None = None
    ) -> None:
        if not isinstance(store, Metastore):
            raise check.fail("Parameter 'store' of TableData", "a Metastore", store)
        check.instance(warehouse, Warehouse, "Parameter 'warehouse' of TableData")
        check.optional_instance(clock, HybridClock, "Parameter 'clock' of TableData")
        self.store = store
        self.warehouse = warehouse
        self.clock = clock or HybridClock()
        self.iceberg = IcebergWriter()
        self.staging = Staging(store, warehouse)
        """The staging leases of this catalog's writes and holds."""
        self.versions: Callable[[int], CatalogVersion | None] | None = None
        """The catalog version of a number, None if this node does not hold
        it; set by the data plane so commits check their shape against it."""
        self._catalog: weakref.ref[Catalog] | None = None
        self._written: dict[str, list[str]] = {}
        self._lock = threading.Lock()

    @property
    def catalog(self) -> Catalog | None:
        """The catalog node whose versions publish this data's commits; set
        by the data plane (``attach``). Held weakly: the registry that finds
        this protocol by its catalog must not keep the catalog alive."""
        return None if self._catalog is None else self._catalog()

    @staticmethod
    def for_catalog(cat: Catalog) -> TableData:
        """The protocol of the catalog's data plane (one per catalog node, so
        its caches are shared); ``CatalogError`` when it has no warehouse."""
        check.instance(cat, Catalog, "Parameter 'cat' of TableData.for_catalog")
        with _tables_lock:
            data = _tables.get(cat)
        if data is None:
            raise CatalogError(
                f"Catalog '{cat.target}' has no warehouse for table data; pass "
                "connect(..., warehouse=...)",
                target=cat.target,
            )
        return data

    def attach(self, cat: Catalog) -> None:
        """Make this the protocol of ``cat``'s table data (its data plane
        does, once): its commits become versions of ``cat``, and
        ``for_catalog(cat)`` returns it."""
        self._catalog = weakref.ref(
            check.instance(cat, Catalog, "Parameter 'cat' of TableData.attach")
        )
        with _tables_lock:
            _tables[cat] = self

    # -- reading ---------------------------------------------------------------

    def records(self, table_id: int, *, revision: int | None = None) -> list[Record]:
        """The kept snapshots' records, oldest first."""
        result = self.store.range(snapshot_prefix(table_id), revision=revision)
        return [decode_record(kv.key, kv.value) for kv in result.kvs]

    def record(self, table_id: int, snapshot_id: int) -> Record | None:
        key = snapshot_key(table_id, snapshot_id)
        kv = self.store.get(key)
        return None if kv is None else decode_record(key, kv.value)

    def files_of(self, record: Record) -> tuple[DataFile, ...]:
        """The snapshot's files, from the Iceberg manifests of its metadata
        (``CorruptLogError`` if its current snapshot is not the record's)."""
        self.iceberg.check_current(record.metadata, record.write_id)
        return self.iceberg.files(record.metadata)

    def load(self, record: Record) -> DataSnapshot:
        return record.with_files(self.files_of(record))

    def current_record(self, table_id: int) -> Record | None:
        """The record of the table's latest data snapshot, None before its first commit."""
        kv = self.store.get(table_key(table_id))
        if kv is None:
            return None
        return self.record(table_id, decode_pointer(kv.key, kv.value))

    def current(self, table_id: int) -> DataSnapshot | None:
        """The table's latest data snapshot, or None before its first commit."""
        record = self.current_record(table_id)
        return None if record is None else self.load(record)

    def metadata_location(self, table_id: int) -> str | None:
        """Where an Iceberg reader finds the table's current ``metadata.json``."""
        record = self.current_record(table_id)
        return None if record is None else record.metadata

    def history(self, table_id: int) -> list[DataSnapshot]:
        """Every kept snapshot, oldest first."""
        return [self.load(r) for r in self.records(table_id)]

    def record_at(
        self, table_id: int, at: CatalogVersion, *, timestamp: int | None = None
    ) -> Record | None:
        """The record of the table's data at catalog version ``at``: the
        snapshot that version pins (``CatalogVersion.data_snapshot``), or, for
        a table whose data commits were not catalog versions yet then (data
        written before they were), the newest record stamped at or before it
        (with ``timestamp``, the instant ``at`` was resolved from: the newest
        committed by then, as such data was always read by time). None when
        the table had no data then; ``SnapshotExpiredError`` when that data
        was expired. Every reader goes through here, so a read at a version,
        at a time and at the latest agree on the rows."""
        pinned = at.data_snapshot(table_id)
        if pinned is None:
            records = self.records(table_id)
            if timestamp is not None:
                return select_record(records, timestamp=timestamp)
            return select_record(records, version=at.version)
        record = self.record(table_id, pinned)
        if record is None:
            raise SnapshotExpiredError(
                f"The data of table {table_id} at catalog version {at.version} (data "
                f"snapshot {pinned}) was expired",
                table_id=table_id,
                version=at.version,
                timestamp=timestamp,
            )
        return record

    def snapshot_at(
        self,
        table_id: int,
        *,
        version: CatalogVersion | int | None = None,
        timestamp: int | None = None,
    ) -> DataSnapshot | None:
        """The table's data at a catalog version (a ``CatalogVersion``, or its
        number) or at a hybrid ``timestamp`` (exactly one; both when the
        version is the one the timestamp resolved to), by ``record_at``: a
        number or a time is first resolved to the catalog version this node
        holds for it by ``ReadPoint``, the rule every read shares
        (``VersionNotFoundError`` when it holds none), so a read
        at a time sees what a read at the version active then sees. A
        ``TableData`` without a catalog node picks by the records' stamps."""
        if isinstance(version, CatalogVersion):
            record = self.record_at(table_id, version, timestamp=timestamp)
        elif (version is None) == (timestamp is None):
            raise ValidationError("Give exactly one of version and timestamp")
        elif self.catalog is not None:
            at = ReadPoint(version=version, timestamp=timestamp).resolve(self.catalog)
            record = self.record_at(table_id, at, timestamp=timestamp)
        else:
            record = select_record(self.records(table_id), version=version, timestamp=timestamp)
        return None if record is None else self.load(record)

    # -- committing ------------------------------------------------------------

    def commit(
        self,
        shape: CommitShape,
        write_id: str,
        files: Sequence[DataFile],
        *,
        operation: str,
        replaces: Sequence[DataFile] = (),
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    ) -> DataSnapshot:
        """Publish ``files`` as the table's next snapshot: ``append`` keeps the
        parent's files, ``overwrite`` replaces them, ``replace`` swaps exactly
        the files in ``replaces`` for ``files`` (same rows; see ``commit_ops``)
        and keeps every other file, so appends racing it both land. One CAS transaction on
        ``data.table.<id>``; a lost race re-reads the new parent and retries, so
        no concurrent commit loses a file. Idempotent by ``write_id``: a second
        commit returns the first one's snapshot and changes nothing.
        ``ConflictError`` after ``max_attempts``; ``WriteStateError`` for an
        aborted write, one never staged, or one whose staging lease expired."""
        _check_operation(operation)
        check_shape(shape)
        check.string(write_id, "Parameter 'write_id' of TableData.commit", nonblank=True)
        check.integer(max_attempts, "Parameter 'max_attempts' of TableData.commit", lo=1)
        files = files_arg(files, "TableData.commit")
        table_id = shape.table.id
        replaces = files_arg(replaces, "TableData.commit", "replaces")
        cat = self._node()
        made: list[DataSnapshot] = []
        done: list[DataSnapshot] = []
        planning: list[ConflictError] = []

        def attach(_base: CatalogVersion, new: CatalogVersion) -> HookWork:
            # Inside the catalog's commit: on a store that serialises its
            # writers no other commit runs between this read of the
            # parent and the transaction that swaps it.
            already = self.committed_snapshot(table_id, write_id)
            if already is not None:
                done.append(already)
                return HookWork()
            parent = self.current_record(table_id)
            try:
                work, snapshot = self.commit_ops(
                    shape,
                    write_id,
                    files,
                    operation=operation,
                    parent=parent,
                    at=new,
                    replaces=replaces,
                )
            except ConflictError as exc:  # no retry can cure it (see commit_ops)
                planning.append(exc)
                raise
            made.append(snapshot)
            return work

        for attempt in range(max_attempts):
            made.clear()
            done.clear()
            try:
                cat.execute([], attach=attach, timeout=COMMIT_SECTION_TIMEOUT_S)
            except ConflictError:
                if planning:
                    raise
                if self.staging.is_committed(write_id):
                    return self._committed(table_id, write_id)
                time.sleep(random.uniform(0, min(0.25, 0.002 * 2**attempt)))
                continue
            return done[-1] if done else made[-1]
        raise ConflictError(
            f"Gave up committing write {write_id} to table {table_id} after {max_attempts} "
            "attempts: other commits to the table won every race",
            attempts=max_attempts,
        )

    def _committed(self, table_id: int, write_id: str) -> DataSnapshot:
        snapshot = self.committed_snapshot(table_id, write_id)
        assert snapshot is not None
        return snapshot

    def _node(self) -> Catalog:
        cat = self.catalog
        if cat is None:
            raise CatalogError(
                "This TableData has no catalog node, and every data commit is a catalog "
                "version: use TableData.for_catalog(cat)"
            )
        return cat

    def committed_snapshot(self, table_id: int, write_id: str) -> DataSnapshot | None:
        """The snapshot a committed ``write_id`` made, None if it did not commit."""
        kv = self.store.get(write_key(write_id))
        if kv is None:
            return None
        if kv.value == ABORTED:
            raise WriteStateError(
                f"Write {write_id} was aborted; it cannot commit", write_id=write_id
            )
        owner, _, sid = kv.value.decode("ascii").partition(".")
        if int(owner) != table_id:
            raise WriteStateError(
                f"Write {write_id} was committed to table {owner}, not to table {table_id}",
                write_id=write_id,
            )
        record = self.record(table_id, int(sid))
        if record is None:
            raise WriteStateError(
                f"Write {write_id} committed snapshot {sid} of table {table_id}, which is gone",
                write_id=write_id,
            )
        return self.load(record)

    def commit_ops(
        self,
        shape: CommitShape,
        write_id: str,
        files: Sequence[DataFile],
        *,
        operation: str,
        parent: Record | None,
        at: CatalogVersion,
        replaces: Sequence[DataFile] = (),
    ) -> tuple[HookWork, DataSnapshot]:
        """The commit as the work an ``execute(attach=...)`` callback returns
        for catalog version ``at`` (the version it is making): compares,
        writes, the entry that publishes the snapshot, and a finish that
        forgets its metadata files once published or deletes them if not.
        Writes the Iceberg metadata first (immutable, uniquely named); the
        version's transaction makes it visible or not.

        A ``replace`` is planned against an older snapshot than ``parent``
        when appends landed meanwhile; it goes ahead as long as every file in
        ``replaces`` is still live in ``parent``, and otherwise (another
        compaction or an overwrite removed one) raises ``ConflictError``,
        which no retry can cure, before writing anything."""
        _check_operation(operation)
        check_shape(shape)
        check.string(write_id, "Parameter 'write_id' of TableData.commit_ops", nonblank=True)
        table_id = shape.table.id
        new = files_arg(files, "TableData.commit_ops")
        old = unique(files_arg(replaces, "TableData.commit_ops", "replaces"))
        if (operation == "replace") != bool(old):
            raise ValidationError(
                f"A data commit to table {table_id} names the files it replaces exactly when "
                f"its operation is 'replace' (operation {operation!r}, {len(old)} replaced)",
                operation=operation,
                rule="replace-names-files",
            )
        kept = live_rows(old, self.warehouse, str(table_id)) if old else 0
        if old and sum(f.rows for f in new) != kept:
            raise ValidationError(
                f"A replace commit to table {table_id} must keep the rows it rewrites: its "
                f"{len(new)} new files hold {sum(f.rows for f in new)} rows, the {len(old)} files "
                f"it replaces {kept} (once their deletes apply)",
                rule="replace-keeps-rows",
            )
        if old:
            self._check_still_live(table_id, write_id, parent, old)
        staging = self.store.get(staging_key(write_id))
        if staging is None:
            raise WriteStateError(
                f"Write {write_id} holds no staging lease (it was never staged, or its lease "
                "expired and its files may already be collected), so it cannot commit",
                write_id=write_id,
            )
        self._check_shape_fits(shape)
        check_files_belong(self.warehouse, table_id, write_id, staging.value.decode(), new)
        check_tablets(shape, new)
        check_files_exist(self.warehouse, write_id, new)
        if parent is not None:
            self.iceberg.check_current(parent.metadata, parent.write_id)
        snapshot_id, commit_time, version, origin = self._stamp(parent, at)
        metadata, written = self.iceberg.write_commit(
            table_id,
            self.warehouse.table_dir(table_id),
            None if parent is None else parent.metadata,
            shape,
            unique(new),
            replace_all=operation == "overwrite",
            write_id=write_id,
            snapshot_version=version,
            replaces=old,
        )
        with self._lock:
            self._written[metadata] = written
        record = Record(
            table_id=table_id,
            snapshot_id=snapshot_id,
            parent_id=None if parent is None else parent.snapshot_id,
            commit_time=commit_time,
            catalog_version=version,
            operation=operation,
            write_id=write_id,
            metadata=metadata,
            origin=origin or (version, commit_time),
        )
        compares, ops = self._publish_ops(record, parent)
        compares.append(Compare.mod_revision(staging.key, "==", staging.mod_revision))
        ops.append(Delete(staging.key))
        snapshot = self.load(record)
        removed = old if operation == "replace" else ()
        if operation == "overwrite" and parent is not None:
            removed = self.files_of(parent)
        entry = TableDataCommitted(
            table_id,
            snapshot_id,
            operation,
            metadata,
            rows_added=sum(f.rows for f in new),
            rows_removed=kept if old else sum(f.rows for f in removed),
            files_added=len(unique(new)),
            files_removed=len(removed),
        )

        def finish(ok: bool) -> None:
            (self.published if ok else self.discard)(snapshot)

        return HookWork(compares, ops, finish, (entry,)), snapshot

    @staticmethod
    def _stamp(
        parent: Record | None, at: CatalogVersion
    ) -> tuple[int, int, int, tuple[int, int] | None]:
        """(snapshot id, commit time, catalog version, origin) of the snapshot
        after ``parent`` published by catalog version ``at``: the version's
        number and activation time, so a read at a version or a time finds
        exactly the data committed at or before it (a parent stamped before
        data commits were versions may carry a later time: the chain's times
        still increase)."""
        if parent is None:
            return 1, at.activation_time, at.version, None
        return (
            parent.snapshot_id + 1,
            max(at.activation_time, parent.commit_time + 1),
            at.version,
            parent.origin,
        )

    def _publish_ops(self, record: Record, parent: Record | None) -> tuple[list[Compare], list[Op]]:
        """What makes ``record`` the table's current snapshot, on ``parent``
        as read: the pointer still names it, and its record still names the
        metadata the commit built on (an expiry or the janitor re-points it
        to metadata without the snapshots they collected)."""
        pointer = table_key(record.table_id)
        compares = [
            pointer_unchanged(
                self.store, record.table_id, None if parent is None else parent.snapshot_id
            ),
            Compare.absent(write_key(record.write_id)),
        ]
        if parent is not None:
            compares.append(record_unchanged(self.store, parent))
        ops: list[Op] = [
            Put(pointer, encode_pointer(record.table_id, record.snapshot_id)),
            Put(snapshot_key(record.table_id, record.snapshot_id), encode_record(record)),
            Put(write_key(record.write_id), f"{record.table_id}.{record.snapshot_id}".encode()),
        ]
        return compares, ops

    def adopt_ops(
        self,
        table_id: int,
        parent: Record | None,
        metadata: TableMetadata,
        *,
        operation: str,
        at: CatalogVersion,
    ) -> tuple[list[Compare], list[Op], Record, TableDataCommitted]:
        """Publish what an Iceberg client's commit made: ``metadata`` (its new
        snapshot's files and manifests are the client's, written where the
        table's location said) becomes the snapshot after ``parent``. Writes
        its ``metadata.json``, its current snapshot stamped with a new write
        id and its catalog version like every snapshot Almanac writes, and
        returns the transaction and the entry of catalog version ``at`` that
        publish it (``Catalog.execute(attach=...)``); on failure the caller
        removes ``record.metadata``."""
        if operation != REFS:
            _check_operation(operation)
        write_id = new_write_id()
        snapshot_id, commit_time, version, origin = self._stamp(parent, at)
        location = self.iceberg.write_adopted(
            self.warehouse.table_dir(table_id),
            metadata,
            write_id=write_id,
            snapshot_version=version,
        )
        record = Record(
            table_id=table_id,
            snapshot_id=snapshot_id,
            parent_id=None if parent is None else parent.snapshot_id,
            commit_time=commit_time,
            catalog_version=version,
            operation=operation,
            write_id=write_id,
            metadata=location,
            origin=origin or (version, commit_time),
        )
        compares, ops = self._publish_ops(record, parent)
        return compares, ops, record, adopted_entry(record, metadata)

    def repoint(self, record: Record, location: str, hold: Hold) -> tuple[list[Compare], list[Op]]:
        """The transaction that makes ``location`` (a new ``metadata.json`` of
        the same snapshot: an ALTER's schema, an Iceberg client's properties
        or expiry) the metadata of the table's current snapshot ``record``,
        under ``hold`` (taken before the file was written): it holds only
        while the pointer and the record are as read."""
        moved = dataclasses.replace(record, metadata=location)
        compares = [
            pointer_unchanged(self.store, record.table_id, record.snapshot_id),
            record_unchanged(self.store, record),
            hold.compare(),
        ]
        ops: list[Op] = [
            Put(snapshot_key(record.table_id, record.snapshot_id), encode_record(moved)),
            hold.delete(),
        ]
        return compares, ops

    def published(self, snapshot: DataSnapshot) -> None:
        """Forget the files written for a snapshot that was published."""
        with self._lock:
            self._written.pop(snapshot.metadata, None)

    def discard(self, snapshot: DataSnapshot) -> None:
        """Delete the metadata files written for a snapshot that was not
        published (its data files belong to the write, not to the attempt)."""
        with self._lock:
            written = self._written.pop(snapshot.metadata, [])
        self.iceberg.remove(written)

    def _check_still_live(
        self, table_id: int, write_id: str, parent: Record | None, old: tuple[DataFile, ...]
    ) -> None:
        live = {} if parent is None else {f.path: f for f in self.files_of(parent)}
        gone = [f.path for f in old if f.path not in live]
        if gone:
            raise ConflictError(
                f"Write {write_id} replaces {len(old)} files of table {table_id}, but "
                f"{len(gone)} of them (first '{gone[0]}') are no longer in its current data "
                "snapshot: another commit removed them, so nothing was published; plan again",
                attempts=1,
            )
        deleted = [f.path for f in old if set(live[f.path].deletes) != set(f.deletes)]
        if deleted:
            raise ConflictError(
                f"Write {write_id} replaces {len(old)} files of table {table_id}, but rows of "
                f"{len(deleted)} of them (first '{deleted[0]}') were deleted since it read them "
                "(a merge-on-read delete), so nothing was published; plan again",
                attempts=1,
            )

    def _check_shape_fits(self, shape: CommitShape) -> None:
        """A shape built by hand must have the table and tablet count that
        ``CommitShape.of`` gives for its version, when this node holds it: files bucketed for one
        tablet count but declared under another would make Iceberg readers
        prune away rows they hold."""
        version = None if self.versions is None else self.versions(shape.catalog_version)
        if version is None:
            return
        table = version.tables_by_id.get(shape.table.id)
        expected = None if table is None else CommitShape.of(version, table)
        # The activation time may be later (a version activating ahead).
        if expected is None or (expected.table, expected.partitions) != (
            shape.table,
            shape.partitions,
        ):
            raise ValidationError(
                f"The shape of a commit to table '{shape.table.name}' (id {shape.table.id}) "
                f"does not match catalog version {shape.catalog_version}"
                + (
                    ", where that table does not exist"
                    if expected is None
                    else f" (partitions {expected.partitions}); build it with CommitShape.of"
                ),
                table=shape.table.name,
                version=shape.catalog_version,
            )


def adopted_entry(record: Record, metadata: TableMetadata) -> TableDataCommitted:
    """The entry of an Iceberg client's commit, its counts from the summary
    of the snapshot it made (what every Iceberg writer records)."""
    current = metadata.current_snapshot()
    summary = {} if current is None or current.summary is None else current.summary
    operation = record.operation
    if operation == "overwrite" and summary.get("operation") == "delete":
        operation = "delete"

    def count(key: str) -> int:
        """The summary's count, or 0 for one that is not plain ASCII decimal
        in the 64-bit range the log stores: the client writes it as free
        text, and its bookkeeping must not refuse its commit."""
        value = str(summary.get(key, "0") if current is not None and operation != REFS else "0")
        if not (value.isascii() and value.isdigit()) or len(value) > 19:
            return 0
        return int(value) if int(value) <= check.INT64_MAX else 0

    return TableDataCommitted(
        record.table_id,
        record.snapshot_id,
        operation,
        record.metadata,
        rows_added=count("added-records"),
        rows_removed=count("deleted-records"),
        files_added=count("added-data-files") + count("added-delete-files"),
        files_removed=count("deleted-data-files") + count("removed-delete-files"),
    )


def check_shape(shape: object) -> None:
    if not isinstance(shape, CommitShape):
        raise ValidationError(
            f"A data commit needs a CommitShape (CommitShape.of(version, table)), not {shape!r}"
        )
