"""A catalog table as the Iceberg REST catalog shows it: the metadata of its
current data snapshot (or, before its first one, the table it will start
from), with its primary key as identifier fields, its Iceberg properties
(``gc.enabled=false`` among them: only the catalog deletes files),
and a ``last-column-id`` that never hands out a column id the catalog used
before (ids are never reused)."""

from __future__ import annotations

from dataclasses import dataclass

from pyiceberg.schema import Schema
from pyiceberg.table.metadata import TableMetadata

from almanac.catalog import Catalog
from almanac.catalog_version import CatalogVersion
from almanac.data.commits import TableData
from almanac.data.iceberg_schema import CommitShape, identifier_ids
from almanac.data.snapshots import Record
from almanac.descriptors import Table
from almanac.errors import NotFoundError
from almanac.iceberg_rest.properties import GC_ENABLED, Properties

__all__ = ["Loaded", "find_table", "load", "namespace_of", "shown", "with_snapshots"]


@dataclass(frozen=True, slots=True)
class Loaded:
    """One table as a commit or a load starts from."""

    namespace: str
    table: Table
    version: CatalogVersion
    record: Record | None
    properties: Properties
    metadata: TableMetadata

    @property
    def location(self) -> str | None:
        """Its ``metadata.json``; None before its first snapshot (the spec's
        ``metadata-location`` of a table that is not written yet)."""
        return None if self.record is None else self.record.metadata


def namespace_of(version: CatalogVersion, namespace: str) -> int:
    schema = version.schema(namespace)
    if schema is None:
        raise NotFoundError(
            f"Namespace '{namespace}' does not exist", kind="schema", name=namespace
        )
    return schema.id


def find_table(version: CatalogVersion, namespace: str, name: str) -> Table:
    namespace_of(version, namespace)
    table = version.table(name, namespace)
    if table is None:
        raise NotFoundError(
            f"Table '{namespace}.{name}' does not exist", kind="table", name=f"{namespace}.{name}"
        )
    return table


def load(cat: Catalog, namespace: str, name: str, version: CatalogVersion | None = None) -> Loaded:
    """The table ``namespace.name`` of ``version`` (default: the latest)."""
    version = cat.catalog() if version is None else version
    table = find_table(version, namespace, name)
    data = TableData.for_catalog(cat)
    properties = Properties.read(cat.metastore, "table", table.id)
    record = data.current_record(table.id)
    if record is None:
        # However the table was made (SQL, the API, this API), an engine that
        # learns its location writes below ``metadata/`` before it commits.
        data.warehouse.make_metadata_dir(table.id)
        base = data.iceberg.initial(
            CommitShape.of(version, table), data.warehouse.table_dir(table.id), table.id
        )
    else:
        base = data.iceberg.metadata(record.metadata)
    return Loaded(namespace, table, version, record, properties, shown(base, table, properties))


def shown(metadata: TableMetadata, table: Table, properties: Properties) -> TableMetadata:
    """``metadata`` as clients see it (see the module docstring)."""
    current = metadata.schema()
    schema = Schema(
        *current.fields, schema_id=current.schema_id, identifier_field_ids=identifier_ids(table)
    )
    return metadata.model_copy(
        update={
            "schemas": [schema if s.schema_id == schema.schema_id else s for s in metadata.schemas],
            "last_column_id": max(metadata.last_column_id, table.next_column_id - 1),
            # The metastore key holds the table's own properties (a file
            # can hold one removed since), the file Almanac's.
            "properties": {
                **{k: v for k, v in metadata.properties.items() if k.startswith("almanac.")},
                **properties.values,
                GC_ENABLED: "false",
            },
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
