"""A catalog table as the Iceberg REST catalog shows it: the metadata of its
current data snapshot (or, before its first one, the table it will start
from), with its primary key as identifier fields, its Iceberg properties
(``gc.enabled=false`` among them: only the catalog deletes files),
and a ``last-column-id`` that never hands out a column id the catalog used
before (ids are never reused)."""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass

from pyiceberg.schema import Schema
from pyiceberg.serializers import Compressor, GzipCompressor
from pyiceberg.table.metadata import TableMetadata

from almanac.data.commits import TableData
from almanac.data.iceberg_schema import CommitShape, iceberg_schema, identifier_ids
from almanac.data.snapshots import Record
from almanac.errors import CatalogError, NotFoundError
from almanac.iceberg_rest.properties import GC_ENABLED, Properties, is_reserved
from almanac.model.catalog_version import CatalogVersion
from almanac.model.descriptors import Table
from almanac.node.catalog import Catalog

__all__ = [
    "Loaded",
    "find_table",
    "load",
    "namespace_of",
    "no_namespace",
    "no_table",
    "shown",
    "stored_json",
    "with_snapshots",
]

_log = logging.getLogger("almanac.iceberg_rest")


@dataclass(frozen=True, slots=True)
class Loaded:
    """One table as a commit or a load starts from."""

    namespace: str
    table: Table
    version: CatalogVersion
    record: Record | None
    properties: Properties
    metadata: TableMetadata
    stored: bool = False
    """``metadata`` is the current snapshot's ``metadata.json`` as written:
    a load may answer that file's bytes (see ``stored_json``)."""

    @property
    def location(self) -> str | None:
        """Its ``metadata.json``; None before its first snapshot (the spec's
        ``metadata-location`` of a table that is not written yet)."""
        return None if self.record is None else self.record.metadata


def no_namespace(namespace: str) -> NotFoundError:
    """The 404 NoSuchNamespace of a namespace lookup."""
    return NotFoundError(f"Namespace '{namespace}' does not exist", kind="schema", name=namespace)


def no_table(namespace: str, name: str) -> NotFoundError:
    """The 404 NoSuchTable of a table lookup, its namespace missing or not:
    what the spec answers for a table, and what clients take as "no such
    table" (Iceberg's Java client falls back to a metadata table only then)."""
    full = f"{namespace}.{name}"
    return NotFoundError(f"Table '{full}' does not exist", kind="table", name=full)


def namespace_of(version: CatalogVersion, namespace: str) -> int:
    schema = version.schema(namespace)
    if schema is None:
        raise no_namespace(namespace)
    return schema.id


def find_table(version: CatalogVersion, namespace: str, name: str) -> Table:
    table = version.table(name, namespace)
    if table is None:
        raise no_table(namespace, name)
    return table


def load(
    cat: Catalog,
    namespace: str,
    name: str,
    version: CatalogVersion | None = None,
    *,
    pinned: bool = False,
) -> Loaded:
    """The table ``namespace.name`` of ``version`` (default: the latest)
    with its latest data, or with ``pinned`` its data as of ``version``
    (the properties its ``metadata.json`` had then: they are not versioned
    otherwise)."""
    version = cat.catalog() if version is None else version
    table = find_table(version, namespace, name)
    stored_base = None
    data = TableData.for_catalog(cat)
    properties = Properties.read(cat.metastore, "table", table.id)
    record = data.record_at(table.id, version) if pinned else data.current_record(table.id)
    if record is None:
        # However the table was made (SQL, the API, this API), an engine that
        # learns its location writes below ``metadata/`` before it commits
        # (not into the past: nothing commits to a pinned version).
        try:
            if not pinned:
                data.warehouse.make_metadata_dir(table.id)
        except CatalogError as exc:  # a read-only warehouse: a load still answers
            _log.info(
                "Table '%s.%s' is loaded without its metadata directory: %s", namespace, name, exc
            )
        base = data.iceberg.initial(
            CommitShape.of(version, table), data.warehouse.table_dir(table.id), table.id
        )
    else:
        base = stored_base = data.iceberg.metadata(record.metadata)
        if pinned:
            then = {k: v for k, v in base.properties.items() if not is_reserved(k)}
            properties = Properties(properties.key, then, properties.revision)
            base = schema_then(base, table)
    metadata = shown(base, table, properties)
    stored = record is not None and metadata is stored_base
    return Loaded(namespace, table, version, record, properties, metadata, stored)


class _StoredFiles:
    """The bytes of recently served ``metadata.json`` files by location, up
    to a byte budget: a metadata file is written once under a new name and
    never changes, so a load of an unchanged table reads none."""

    def __init__(self, budget: int) -> None:
        self._budget = budget
        self._size = 0
        self._files: OrderedDict[str, bytes] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, location: str) -> bytes | None:
        with self._lock:
            raw = self._files.get(location)
            if raw is not None:
                self._files.move_to_end(location)
            return raw

    def put(self, location: str, raw: bytes) -> None:
        if len(raw) > self._budget // 8:
            return
        with self._lock:
            if location in self._files:
                return
            self._files[location] = raw
            self._size += len(raw)
            while self._size > self._budget:
                _, dropped = self._files.popitem(last=False)
                self._size -= len(dropped)


_STORED = _StoredFiles(32 << 20)


def stored_json(cat: Catalog, loaded: Loaded) -> bytes | None:
    """The bytes of ``loaded``'s ``metadata.json`` when they are what a load
    shows (an engine's commit wrote them so), None otherwise: a load then
    answers the file as the spec's table metadata, never re-serialized."""
    if not loaded.stored or loaded.record is None:
        return None
    location = loaded.record.metadata
    raw = _STORED.get(location)
    if raw is not None:
        return raw
    if isinstance(Compressor.get_compressor(location), GzipCompressor):
        return None
    try:
        with TableData.for_catalog(cat).iceberg.io.new_input(location).open() as stream:
            raw = stream.read()
    except (OSError, CatalogError):  # gone since it was parsed: answer the parsed copy
        return None
    _STORED.put(location, raw)
    return raw


def schema_then(metadata: TableMetadata, table: Table) -> TableMetadata:
    """``metadata`` with the schema ``table`` had (a pinned version's): an
    ALTER after that version re-points the snapshot's record to metadata
    whose current schema is the later one, but which still lists the
    earlier schema, so a pinned load names that one current again (or adds
    it under a new id, for a schema no metadata file held)."""
    wanted = iceberg_schema(table)
    if metadata.schema().as_struct() == wanted.as_struct():
        return metadata
    for schema in metadata.schemas:
        if schema.as_struct() == wanted.as_struct():
            return metadata.model_copy(update={"current_schema_id": schema.schema_id})
    added = Schema(
        *wanted.fields,
        schema_id=max(s.schema_id for s in metadata.schemas) + 1,
        identifier_field_ids=wanted.identifier_field_ids,
    )
    return metadata.model_copy(
        update={"schemas": [*metadata.schemas, added], "current_schema_id": added.schema_id}
    )


def shown(metadata: TableMetadata, table: Table, properties: Properties) -> TableMetadata:
    """``metadata`` as clients see it (see the module docstring): itself
    when it already is."""
    current = metadata.schema()
    ids = identifier_ids(table)
    last = max(metadata.last_column_id, table.next_column_id - 1)
    # The metastore key holds the table's own properties (a file can hold
    # one removed since), the file Almanac's.
    values = {
        **{k: v for k, v in metadata.properties.items() if is_reserved(k)},
        **properties.values,
        GC_ENABLED: "false",
    }
    if (
        current.identifier_field_ids == ids
        and last == metadata.last_column_id
        and values == metadata.properties
    ):
        return metadata
    schema = Schema(*current.fields, schema_id=current.schema_id, identifier_field_ids=ids)
    return metadata.model_copy(
        update={
            "schemas": [schema if s.schema_id == schema.schema_id else s for s in metadata.schemas],
            "last_column_id": last,
            "properties": values,
        }
    )


def with_snapshots(metadata: TableMetadata, which: str) -> TableMetadata:
    """``snapshots=refs``: only the snapshots a branch or tag points at."""
    if which != "refs":
        return metadata
    kept = {ref.snapshot_id for ref in metadata.refs.values()}
    return metadata.model_copy(
        update={"snapshots": [s for s in metadata.snapshots if s.snapshot_id in kept]}
    )
