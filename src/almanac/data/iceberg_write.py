"""Writing a commit's next ``metadata.json`` with pyiceberg's own metadata
update code (fast append, overwrite, replace), and the metadata files that
change only a table's schema, layout or snapshots. pyiceberg only writes
files here: Almanac publishes a ``metadata.json`` by its own
compare-and-swap in the metastore, so the writer below is a pyiceberg
catalog that stages and never publishes. Reading the metadata back is
``iceberg_read``; the schema and spec mapping is ``iceberg_schema``.
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from pyiceberg.catalog import MetastoreCatalog
from pyiceberg.exceptions import CommitFailedException, ValidationException
from pyiceberg.expressions.visitors import manifest_evaluator
from pyiceberg.io import FileIO
from pyiceberg.manifest import DataFile as IcebergFile
from pyiceberg.manifest import ManifestContent, ManifestFile, ManifestWriterV2
from pyiceberg.partitioning import PartitionSpec as IcebergSpec
from pyiceberg.table import CommitTableResponse
from pyiceberg.table import Table as IcebergTable
from pyiceberg.table.metadata import TableMetadata, TableMetadataV2
from pyiceberg.table.snapshots import Operation, Summary
from pyiceberg.table.sorting import SortOrder as IcebergSortOrder
from pyiceberg.table.update import (
    AddPartitionSpecUpdate,
    AddSchemaUpdate,
    AddSortOrderUpdate,
    RemoveSnapshotsUpdate,
    SetCurrentSchemaUpdate,
    SetDefaultSortOrderUpdate,
    SetDefaultSpecUpdate,
    SetPropertiesUpdate,
    TableRequirement,
    TableUpdate,
)
from pyiceberg.table.update.snapshot import _OverwriteFiles

from almanac.data.files import DataFile
from almanac.data.iceberg_files import to_iceberg_file
from almanac.data.iceberg_read import IcebergReader
from almanac.data.iceberg_schema import (
    CATALOG_VERSION_PROPERTY,
    TABLE_ID_PROPERTY,
    WRITE_ID_PROPERTY,
    CommitShape,
    iceberg_layout,
    iceberg_schema,
    iceberg_sort_orders,
    iceberg_specs,
    layout_properties,
    partition_fields,
    partition_spec,
    spec_fields,
)
from almanac.errors import CatalogError, ConflictError

__all__ = ["IcebergWriter"]

_Layout = TypeVar("_Layout", IcebergSpec, IcebergSortOrder)


def _grow(
    held: dict[int, _Layout], wanted: list[_Layout], renumber: Callable[[_Layout, int], _Layout]
) -> tuple[list[_Layout], dict[int, int]]:
    """The specs (or sort orders) of ``wanted`` that ``held`` lacks, and the
    id in ``held`` (or among the added) of each wanted one. An id is kept
    unless ``held`` has another one under it: then the held one with the
    same fields is it, or it is added under the next free id."""
    held = dict(held)
    added: list[_Layout] = []
    ids: dict[int, int] = {}
    for item in wanted:
        wanted_id = _layout_id(item)
        same = [i for i, h in held.items() if h.fields == item.fields]
        if wanted_id in same or (same and wanted_id in held):
            ids[wanted_id] = wanted_id if wanted_id in same else min(same)
            continue
        if wanted_id in held:
            item = renumber(item, max(held) + 1)
        added.append(item)
        held[_layout_id(item)] = item
        ids[wanted_id] = _layout_id(item)
    return added, ids


_REFUSALS = (ValidationException, CommitFailedException)
"""What pyiceberg raises when the metadata it is asked to write does not
follow from its parent (a file to remove not found, a requirement not met)."""


def _refused(exc: Exception, table_id: int, name: str | None = None) -> ConflictError:
    """A refusal of pyiceberg's as the ``ConflictError`` of the commit it
    stopped: nothing was written or published, and planning again on the
    table's current data may succeed."""
    what = f"'{name}' (id {table_id})" if name is not None else str(table_id)
    reason = str(exc).strip().splitlines()
    return ConflictError(
        f"The next Iceberg metadata of table {what} could not be written on its current data "
        f"snapshot ({type(exc).__name__}: {reason[0][:300] if reason else ''}); nothing was "
        "published: plan the commit again",
        attempts=1,
        table_id=table_id,
        rule="iceberg-refused",
    )


def _layout_id(item: IcebergSpec | IcebergSortOrder) -> int:
    return item.spec_id if isinstance(item, IcebergSpec) else item.order_id


def _layout_updates(base: TableMetadata, shape: CommitShape) -> list[TableUpdate]:
    """The updates that give ``base`` every partition spec and sort order of
    the catalog table, and its default ones. Specs and orders only ever
    grow, and the Iceberg ids are the catalog's, except in a table whose
    metadata already holds another spec under that id (one converted by
    ``upgrade_warehouse`` registers its old files unpartitioned as spec 0;
    see ``_grow``)."""
    table = shape.table
    specs, spec_ids = _grow(
        base.specs(),
        iceberg_specs(table, shape.partitions),
        lambda spec, i: IcebergSpec(*spec.fields, spec_id=i),
    )
    orders, order_ids = _grow(
        {o.order_id: o for o in base.sort_orders},
        iceberg_sort_orders(table),
        lambda order, i: IcebergSortOrder(*order.fields, order_id=i),
    )
    updates: list[TableUpdate] = [AddPartitionSpecUpdate(spec=spec) for spec in specs]
    default_spec = spec_ids[table.default_spec_id]
    if base.default_spec_id != default_spec:
        updates.append(SetDefaultSpecUpdate.model_validate({"spec-id": default_spec}))
    updates += [AddSortOrderUpdate.model_validate({"sort-order": o}) for o in orders]
    default_order = order_ids[table.default_sort_order_id]
    if base.default_sort_order_id != default_order:
        updates.append(SetDefaultSortOrderUpdate.model_validate({"sort-order-id": default_order}))
    return updates


class _StagingWriter(MetastoreCatalog):
    """A pyiceberg catalog whose commit writes the new ``metadata.json`` and
    stops: publishing it is the metastore's compare-and-swap, not ours."""

    def __init__(self, io: FileIO, *, fresh: bool) -> None:
        super().__init__("almanac")
        self._io = io
        self._fresh = fresh
        self.written: list[tuple[str, TableMetadata]] = []

    def _load_file_io(self, properties: Any = None, location: str | None = None) -> FileIO:
        return self._io

    def commit_table(
        self,
        table: IcebergTable,
        requirements: tuple[TableRequirement, ...],
        updates: tuple[TableUpdate, ...],
    ) -> CommitTableResponse:
        staged = self._update_and_stage_table(table, table.name(), requirements, updates)
        metadata = staged.metadata
        if self._fresh:  # the empty table it started from was never written
            metadata = metadata.model_copy(update={"metadata_log": []})
        self._write_metadata(metadata, self._io, staged.metadata_location)
        self.written.append((staged.metadata_location, metadata))
        return CommitTableResponse.model_validate(
            {"metadata": metadata, "metadata-location": staged.metadata_location}
        )

    def load_table(self, identifier: Any) -> IcebergTable:
        """pyiceberg reloads the table to retry a commit whose requirement
        failed; a staged commit's parent is Almanac's, so the refusal stands
        and the caller plans again (``_refused``)."""
        raise CommitFailedException(
            f"Iceberg table {identifier} is not reloaded to retry a staged commit"
        )

    def _refuse(self, *_: Any, **__: Any) -> Any:
        """pyiceberg's catalog interface demands these; a staging sink is no
        catalog to browse (Almanac is: ``almanac.iceberg.load_table``), so
        each is a refusal by design, never a missing feature."""
        raise CatalogError(
            "Almanac's Iceberg metadata writer only stages a commit's metadata.json; "
            "open tables through almanac.iceberg.load_table",
            rule="staging-writer",
        )

    create_table = register_table = drop_table = rename_table = _refuse
    list_tables = list_namespaces = create_namespace = drop_namespace = _refuse
    load_namespace_properties = update_namespace_properties = _refuse
    list_views = drop_view = view_exists = load_view = register_view = _refuse


def _current_only(metadata: TableMetadata) -> TableMetadata:
    """The metadata with its current snapshot and the snapshots its branches
    and tags point at as its only snapshots and no metadata log, so that the
    next ``metadata.json`` holds those and its own (its parent stays
    readable by any Iceberg reader) and names only its parent's file. Time travel goes through the
    metastore's records, each naming its own ``metadata.json``; a history
    copied into every one would make each commit cost, and the kept
    metadata grow with, the number of commits before it (and pyiceberg
    deep-copies the whole metadata many times per commit)."""
    current = metadata.current_snapshot()
    if current is None:
        return metadata
    # Every branch and tag stays, with the snapshot it points at.
    kept = {current.snapshot_id} | {r.snapshot_id for r in metadata.refs.values()}
    if {s.snapshot_id for s in metadata.snapshots} <= kept and not metadata.metadata_log:
        return metadata
    return metadata.model_copy(
        update={
            "metadata_log": [],
            "snapshots": [s for s in metadata.snapshots if s.snapshot_id in kept],
            "snapshot_log": [
                e for e in metadata.snapshot_log if e.snapshot_id == current.snapshot_id
            ][-1:],
        }
    )


class _DeleteManifestWriter(ManifestWriterV2):
    """A format v2 delete manifest: pyiceberg 0.12 writes data manifests
    only, and a delete manifest differs from one in its content alone."""

    def content(self) -> ManifestContent:
        return ManifestContent.DELETES

    @property
    def _meta(self) -> dict[str, str]:
        return {**super()._meta, "content": "deletes"}


class _RewriteFiles(_OverwriteFiles):
    """An overwrite that also removes the position delete files in
    ``dropped`` (by path): those no data file left in the table needs.
    pyiceberg's own overwrite keeps every delete manifest as it is, so the
    delete files of rewritten data files would stay referenced forever."""

    dropped: dict[str, IcebergFile]

    def _build_manifest_evaluator(self, spec_id: int) -> Callable[[ManifestFile], bool]:
        """An evaluator per thread: pyiceberg shares one per spec among the
        threads that judge a snapshot's manifests by their partition bounds,
        and it keeps the manifest being judged on itself, so two threads at
        once could judge a manifest by another's bounds and prune one that
        holds a file to remove (the commit then fails: "Missing required
        files to delete")."""
        spec, schema = self.spec(spec_id), self.schema()
        partition_filter = self.partition_filters[spec_id]
        own = threading.local()

        def evaluate(manifest: ManifestFile) -> bool:
            judge: Callable[[ManifestFile], bool] | None = getattr(own, "judge", None)
            if judge is None:
                judge = own.judge = manifest_evaluator(
                    spec, schema, partition_filter, self._case_sensitive
                )
            return judge(manifest)

        return evaluate

    def _process_manifests(self, manifests: list[ManifestFile]) -> list[ManifestFile]:
        manifests = super()._process_manifests(manifests)
        dropped = getattr(self, "dropped", {})
        if not dropped:
            return manifests
        out: list[ManifestFile] = []
        for manifest in manifests:
            if manifest.content != ManifestContent.DELETES:
                out.append(manifest)
                continue
            entries = manifest.fetch_manifest_entry(self._io, discard_deleted=True)
            if not any(e.data_file.file_path in dropped for e in entries):
                out.append(manifest)
                continue
            with _DeleteManifestWriter(
                self.spec(manifest.partition_spec_id),
                self.schema(),
                self.new_manifest_output(),
                self._snapshot_id,
                self._compression,
            ) as writer:
                for entry in entries:
                    if entry.data_file.file_path in dropped:
                        writer.delete(entry)
                    else:
                        writer.existing(entry)
            out.append(writer.to_manifest_file())
        return out

    def _summary(self, snapshot_properties: dict[str, str] = {}) -> Summary:  # noqa: B006
        summary = super()._summary(snapshot_properties)
        dropped = getattr(self, "dropped", {})
        if not dropped:
            return summary
        totals = summary.model_dump()
        operation = totals.pop("operation")
        files, rows = len(dropped), sum(int(f.record_count) for f in dropped.values())
        for total, removed, by in (
            ("total-delete-files", "removed-delete-files", files),
            ("total-position-deletes", "removed-position-deletes", rows),
        ):
            if total in totals:
                totals[total] = str(max(0, int(totals[total]) - by))
            totals[removed] = str(int(totals.get(removed, "0")) + by)
        totals["removed-position-delete-files"] = str(files)
        return Summary(operation, **totals)


class _ReplaceFiles(_RewriteFiles):
    """An Iceberg ``replace`` snapshot: files rewritten, rows unchanged
    (compaction, which folds the deletes of the files it rewrites in).
    pyiceberg writes the manifests as for an overwrite but its
    summary code only knows append, overwrite and delete, so the totals are
    computed as an overwrite's and the operation is then named ``replace``."""

    def _summary(self, snapshot_properties: dict[str, str] = {}) -> Summary:  # noqa: B006
        totals = super()._summary(snapshot_properties).model_dump()
        totals.pop("operation", None)
        return Summary(Operation.REPLACE, **totals)


class IcebergWriter(IcebergReader):
    """Reading (``IcebergReader``) and writing Iceberg metadata in one
    warehouse: every ``metadata.json`` written here is cached as read."""

    def initial(self, shape: CommitShape, location: str, table_id: int) -> TableMetadata:
        """The table before its first snapshot (never written: the first
        snapshot's ``metadata.json`` is the table's first file). Its uuid
        follows from its location, so every reader of the empty table, and
        the first commit to it, agree on it."""
        schema = iceberg_schema(shape.table)
        table = shape.table
        fields: dict[str, Any] = {
            "location": location,
            "table-uuid": uuid.uuid5(uuid.NAMESPACE_URL, location),
            "last-updated-ms": int(time.time() * 1000),
            # Every id the table ever gave, nested fields' too: Iceberg
            # clients number new fields after it.
            "last-column-id": max(shape.table.next_column_id - 1, 0),
            "schemas": [schema],
            "current-schema-id": schema.schema_id,
            **iceberg_layout(shape.table, shape.partitions),
            "properties": {
                TABLE_ID_PROPERTY: str(table_id),
                CATALOG_VERSION_PROPERTY: str(shape.catalog_version),
                **layout_properties(table, shape.partitions),
            },
        }
        return TableMetadataV2.model_validate(fields)

    def write_commit(
        self,
        table_id: int,
        location: str,
        parent: str | None,
        shape: CommitShape,
        files: Sequence[DataFile],
        *,
        replace_all: bool,
        write_id: str,
        snapshot_version: int,
        replaces: Sequence[DataFile] = (),
    ) -> tuple[str, list[str]]:
        """Write the ``metadata.json`` of the next snapshot: ``files`` appended
        to (or, with ``replace_all``, replacing) the current snapshot of
        ``parent``, under the newer of the parent's schema and the shape's.
        With ``replaces`` it is an Iceberg ``replace`` snapshot: exactly those
        files (all live in ``parent``, else ``CatalogError``) give way to
        ``files`` and every other file stays.
        Returns its location and every file written (to delete them should
        the publish fail). Nothing is visible until the caller publishes;
        a refusal of pyiceberg's is a ``ConflictError`` naming the table."""
        writer = _StagingWriter(self.io, fresh=parent is None)
        written: list[str] = []
        if parent is None:
            # The empty table is never written: its first snapshot's
            # metadata.json is the first file of the table.
            base = self.initial(shape, location, table_id)
            base_location = f"{location}/metadata/00000-{uuid.uuid4()}.metadata.json"
        else:
            base, base_location = _current_only(self.metadata(parent)), parent
            self.manifests(base)  # a damaged manifest list is a CatalogError, here
        table = IcebergTable(
            identifier=("almanac", str(table_id)),
            metadata=base,
            metadata_location=base_location,
            io=self.io,
            catalog=writer,
        )
        try:
            tx = table.transaction()
            updates = self._evolve(base, shape)
            if updates:
                tx._apply(tuple(updates), ())
            spec = tx.table_metadata.spec()
            properties = {
                WRITE_ID_PROPERTY: write_id,
                CATALOG_VERSION_PROPERTY: str(snapshot_version),
            }
            written_under = spec_fields(shape.table, shape.partitions)
            stale = [f for f in files if written_under.get(f.spec_id) != partition_fields(spec)]
            if stale:
                raise ConflictError(
                    f"Table {table_id}: data file '{stale[0].path}' was written under partition "
                    f"spec {stale[0].spec_id}, but the table's spec is now {spec} (its "
                    "partitioning changed during the write); write the rows again",
                    attempts=1,
                    table_id=table_id,
                    rule="partition-spec-changed",
                )
            new = [to_iceberg_file(f, shape.table, spec) for f in files]
            producer = tx.update_snapshot(snapshot_properties=properties)
            if replaces:
                live = {} if parent is None else {f.path: e for f, e in self.entries(parent)}
                gone = sorted(f.path for f in replaces if f.path not in live)
                if gone:
                    raise CatalogError(
                        f"Table {table_id}: the files to replace are not all in the current "
                        f"snapshot ({', '.join(gone[:3])}{', ...' if len(gone) > 3 else ''})",
                        table_id=table_id,
                        rule="replace-live-files",
                    )
                replace = _ReplaceFiles(
                    operation=Operation.OVERWRITE,
                    transaction=tx,
                    io=self.io,
                    snapshot_properties=properties,
                )
                assert parent is not None  # else every file to replace is gone
                rewritten = {f.path for f in replaces}
                needed = {
                    d.path
                    for f, _ in self.entries(parent)
                    if f.path not in rewritten
                    for d in f.deletes
                }
                replace.dropped = {
                    d.file_path: d for d in self.delete_files(parent) if d.file_path not in needed
                }
                with replace:
                    for gone_file in replaces:
                        replace.delete_data_file(live[gone_file.path])
                    for added in new:
                        replace.append_data_file(added)
            elif replace_all and parent is not None:
                overwrite = _RewriteFiles(
                    operation=Operation.OVERWRITE,
                    transaction=tx,
                    io=self.io,
                    snapshot_properties=properties,
                )
                overwrite.dropped = {d.file_path: d for d in self.delete_files(parent)}
                with overwrite:
                    for _, old in self.entries(parent):
                        overwrite.delete_data_file(old)
                    for f in new:
                        overwrite.append_data_file(f)
            else:
                with producer.fast_append() as append:
                    for f in new:
                        append.append_data_file(f)
            tx.commit_transaction()
        except BaseException as exc:
            for path, _ in writer.written:
                written.append(path)
            self.remove(written)
            if isinstance(exc, _REFUSALS):
                raise _refused(exc, table_id, shape.table.name) from exc
            raise
        new_location, new_metadata = writer.written[-1]
        self._remember(self._metadata, new_location, new_metadata)
        written.append(new_location)
        snapshot = new_metadata.current_snapshot()
        if snapshot is not None:
            written.append(snapshot.manifest_list)
            written.extend(
                m.manifest_path
                for m in snapshot.manifests(self.io)
                if m.added_snapshot_id == snapshot.snapshot_id
            )
        return new_location, written

    def write_schema(
        self, table_id: int, parent: str, shape: CommitShape
    ) -> tuple[str, list[str]] | None:
        """Write a ``metadata.json`` that is ``parent`` under the shape's
        schema and spec, same snapshots; None when nothing would change."""
        updates = self._evolve(self.metadata(parent), shape)
        if not any(not isinstance(u, SetPropertiesUpdate) for u in updates):
            return None
        return self._rewrite(table_id, parent, updates, shape.table.name)

    def write_without(
        self, table_id: int, parent: str, snapshot_ids: Iterable[int]
    ) -> tuple[str, list[str]] | None:
        """Write a ``metadata.json`` that is ``parent`` without the given
        (expired) snapshots, so that no Iceberg reader is offered a snapshot
        whose files are gone; None when it has none of them."""
        metadata = self.metadata(parent)
        known = {s.snapshot_id for s in metadata.snapshots}
        # A snapshot a branch or tag points at stays, and so do its files.
        known -= {r.snapshot_id for r in metadata.refs.values()}
        doomed = sorted(known & set(snapshot_ids))
        if not doomed:
            return None
        update = RemoveSnapshotsUpdate.model_validate({"snapshot-ids": doomed})
        return self._rewrite(table_id, parent, [update])

    def _rewrite(
        self, table_id: int, parent: str, updates: Sequence[TableUpdate], name: str | None = None
    ) -> tuple[str, list[str]]:
        writer = _StagingWriter(self.io, fresh=False)
        table = IcebergTable(
            identifier=("almanac", str(table_id)),
            metadata=self.metadata(parent),
            metadata_location=parent,
            io=self.io,
            catalog=writer,
        )
        try:
            tx = table.transaction()
            tx._apply(tuple(updates), ())
            tx.commit_transaction()
        except BaseException as exc:
            self.remove(path for path, _ in writer.written)
            if isinstance(exc, _REFUSALS):
                raise _refused(exc, table_id, name) from exc
            raise
        location, metadata = writer.written[-1]
        self._remember(self._metadata, location, metadata)
        return location, [location]

    def write_adopted(
        self, location: str, metadata: TableMetadata, *, write_id: str, snapshot_version: int
    ) -> str:
        """Write ``metadata`` (an Iceberg client's commit, applied by
        pyiceberg's own update code) as the next ``metadata.json`` of the table
        at ``location``, its current snapshot carrying ``write_id`` and the
        catalog version in its summary as every snapshot Almanac writes does
        (``check_current`` relies on it). Returns the file's location."""
        current = metadata.current_snapshot()
        if current is None or current.summary is None:
            raise CatalogError(
                f"Iceberg metadata for '{location}' has no current snapshot to publish",
                path=location,
            )
        extra = {
            **current.summary.additional_properties,
            WRITE_ID_PROPERTY: write_id,
            CATALOG_VERSION_PROPERTY: str(snapshot_version),
        }
        stamped = current.model_copy(
            update={"summary": Summary(current.summary.operation, **extra)}
        )
        metadata = metadata.model_copy(
            update={
                "snapshots": [
                    stamped if s.snapshot_id == stamped.snapshot_id else s
                    for s in metadata.snapshots
                ]
            }
        )
        number = len(metadata.metadata_log) + 1
        path = f"{location}/metadata/{number:05d}-{uuid.uuid4()}.metadata.json"
        MetastoreCatalog._write_metadata(metadata, self.io, path)
        self._remember(self._metadata, path, metadata)
        return path

    def write_unpublished(self, location: str, metadata: TableMetadata) -> str:
        """Write ``metadata`` of a table that has no data snapshot yet as a
        ``metadata.json`` below ``location`` and return its path: the Iceberg
        REST spec answers every commit with a metadata file, and such a
        table's state lives in the catalog, not in a file. No record names
        it, so nothing reads it back and the janitor collects it."""
        path = f"{location}/metadata/00000-{uuid.uuid4()}.metadata.json"
        MetastoreCatalog._write_metadata(metadata, self.io, path)
        self._remember(self._metadata, path, metadata)
        return path

    def _evolve(self, base: TableMetadata, shape: CommitShape) -> list[TableUpdate]:
        """Schema, spec and sort order changes that bring ``base`` to
        ``shape`` when the shape is newer than the schema ``base`` has: a
        commit written against an older catalog version never rolls the
        schema back. A ``base`` that never had the shape's default spec (a
        table ``upgrade_warehouse`` converted, its old files registered
        unpartitioned) gets the catalog's specs whatever the shape's age."""
        try:
            current_version = int(base.properties.get(CATALOG_VERSION_PROPERTY, "-1"))
        except ValueError:
            current_version = -1
        if shape.catalog_version <= current_version:
            wanted = partition_spec(shape.table, shape.partitions).fields
            if any(s.fields == wanted for s in base.partition_specs):
                return []  # the metadata has the shape's layout, or a newer one
            return _layout_updates(base, shape)
        updates: list[TableUpdate] = []
        schema = iceberg_schema(shape.table, 0)
        if schema != base.schema():  # fields, or identifier fields (the primary key)
            # A schema the table had before becomes current again, as
            # Iceberg's own catalogs do (the client asked for that one).
            seen = [s.schema_id for s in base.schemas if s == schema]
            next_id = seen[0] if seen else max(s.schema_id for s in base.schemas) + 1
            if not seen:
                updates.append(
                    AddSchemaUpdate.model_validate({"schema": iceberg_schema(shape.table, next_id)})
                )
            updates.append(SetCurrentSchemaUpdate.model_validate({"schema-id": next_id}))
        updates += _layout_updates(base, shape)
        properties = {
            CATALOG_VERSION_PROPERTY: str(shape.catalog_version),
            **layout_properties(shape.table, shape.partitions),
        }
        updates.append(SetPropertiesUpdate(updates=properties))
        return updates

    def remove(self, paths: Iterable[str]) -> None:
        for path in paths:
            with contextlib.suppress(FileNotFoundError, OSError):
                self.io.delete(path)
