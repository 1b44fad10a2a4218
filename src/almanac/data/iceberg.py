"""Table data as Apache Iceberg tables.

The catalog table becomes an Iceberg schema whose field ids are its column
ids and a ``bucket[N]`` partition spec on its partition column (the tablet);
our ``DataFile``s become Iceberg data files with their partition and
bounds; a data commit becomes a new ``metadata.json`` that pyiceberg's own
metadata update code writes (fast append or overwrite). pyiceberg only
writes files here: Almanac publishes a ``metadata.json`` by its own
compare-and-swap in the metastore, so the writer below is a pyiceberg
catalog that stages and never publishes.

Types Iceberg lacks get the nearest wider one (INT8 and INT16 are ``int``,
a STRING length is dropped, UUID is ``string`` because that is how the
Parquet files hold it); the catalog stays the source of truth.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import decimal
import struct
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyiceberg.catalog import MetastoreCatalog
from pyiceberg.conversions import from_bytes, to_bytes
from pyiceberg.io import FileIO
from pyiceberg.io.pyarrow import PyArrowFileIO
from pyiceberg.manifest import DataFile as IcebergFile
from pyiceberg.manifest import DataFileContent, FileFormat, ManifestFile
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.serializers import FromInputFile
from pyiceberg.table import CommitTableResponse
from pyiceberg.table import Table as IcebergTable
from pyiceberg.table.metadata import TableMetadata, TableMetadataV2
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER
from pyiceberg.table.update import (
    AddPartitionSpecUpdate,
    AddSchemaUpdate,
    RemoveSnapshotsUpdate,
    SetCurrentSchemaUpdate,
    SetDefaultSpecUpdate,
    SetPropertiesUpdate,
    TableRequirement,
    TableUpdate,
)
from pyiceberg.transforms import BucketTransform
from pyiceberg.typedef import Record as PartitionRecord
from pyiceberg.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IcebergType,
    IntegerType,
    LongType,
    NestedField,
    PrimitiveType,
    StringType,
    TimestampType,
    TimestamptzType,
    TimeType,
)

from almanac.catalog_version import CatalogVersion
from almanac.data.arrow import column_defaults
from almanac.data.files import ColumnStats, DataFile
from almanac.data.tablets import partition_column, table_partitions
from almanac.datatypes import ColumnType
from almanac.descriptors import Column, Table
from almanac.errors import CatalogError, CorruptLogError, DataError

__all__ = [
    "CATALOG_VERSION_PROPERTY",
    "TABLET_FIELD",
    "WRITE_ID_PROPERTY",
    "CommitShape",
    "IcebergFiles",
    "MetadataFiles",
    "from_iceberg_file",
    "iceberg_schema",
    "iceberg_type",
    "partition_spec",
    "to_iceberg_file",
]

TABLET_FIELD = "tablet"
"""Name of the partition field that holds a file's tablet."""
PARTITION_FIELD_ID = 1000
WRITE_ID_PROPERTY = "almanac.write-id"
CATALOG_VERSION_PROPERTY = "almanac.catalog-version"
"""On a snapshot: the catalog version its rows were written against; on the
table: the catalog version whose schema is the current Iceberg schema."""
TABLE_ID_PROPERTY = "almanac.table-id"
_MAX_ICEBERG_DECIMAL = 38
_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_UTC = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_METADATA_CACHE = 64
"""Parsed metadata.json files kept (each lists every snapshot of its table)."""
_MANIFEST_CACHE = 4096

_SIMPLE: dict[ColumnType, PrimitiveType] = {
    ColumnType.BOOLEAN: BooleanType(),
    ColumnType.INT8: IntegerType(),
    ColumnType.INT16: IntegerType(),
    ColumnType.INT32: IntegerType(),
    ColumnType.INT64: LongType(),
    ColumnType.FLOAT: FloatType(),
    ColumnType.DOUBLE: DoubleType(),
    ColumnType.STRING: StringType(),
    ColumnType.BYTES: BinaryType(),
    ColumnType.DATE: DateType(),
    ColumnType.TIME: TimeType(),
    ColumnType.TIMESTAMP: TimestampType(),
    ColumnType.TIMESTAMP_WITH_LOCAL_TIME_ZONE: TimestamptzType(),
    ColumnType.UUID: StringType(),
}


def iceberg_type(column: Column) -> PrimitiveType:
    """The Iceberg type of a column; ``DataError`` for a DECIMAL wider than
    Iceberg's 38 digits, which no Iceberg reader could read."""
    if column.type is ColumnType.DECIMAL:
        precision = column.precision or _MAX_ICEBERG_DECIMAL + 1
        if precision > _MAX_ICEBERG_DECIMAL:
            raise DataError(
                f"Column '{column.name}' is DECIMAL({column.precision}, {column.scale or 0}); an "
                f"Iceberg table holds decimals of at most {_MAX_ICEBERG_DECIMAL} digits, so this "
                "table cannot hold data",
                column=column.name,
                rule="iceberg-decimal-precision",
            )
        return DecimalType(precision, column.scale or 0)
    return _SIMPLE[column.type]


def iceberg_schema(table: Table, schema_id: int = 0) -> Schema:
    """The table's columns as an Iceberg schema whose field ids are column ids."""
    return Schema(*(_field(c) for c in table.columns), schema_id=schema_id)


def _field(column: Column) -> NestedField:
    """A column as an Iceberg field, with its ``initial-default`` (what rows
    written before it existed read) and ``write-default``."""
    initial, write = column_defaults(column)
    defaults: dict[str, Any] = {"initial_default": initial, "write_default": write}
    return NestedField(
        field_id=column.id,
        name=column.name,
        field_type=iceberg_type(column),
        required=not column.nullable,
        **defaults,
    )


def partition_spec(table: Table, partitions: int, spec_id: int = 0) -> PartitionSpec:
    """``bucket[partitions]`` on the partition column, named ``tablet``, or
    unpartitioned when no colocation column can be bucketed (then the tablet
    is only in the file's path)."""
    column = partition_column(table)
    if column is None:
        return PartitionSpec(spec_id=spec_id)
    field = PartitionField(
        source_id=column.id,
        field_id=PARTITION_FIELD_ID,
        transform=BucketTransform(partitions),
        name=TABLET_FIELD,
    )
    return PartitionSpec(field, spec_id=spec_id)


def _same_spec(a: PartitionSpec, b: PartitionSpec) -> bool:
    return [(f.source_id, str(f.transform), f.name) for f in a.fields] == [
        (f.source_id, str(f.transform), f.name) for f in b.fields
    ]


# --------------------------------------------------------------------------- statistics


def _internal(kind: IcebergType, value: object) -> object:
    """A statistic value (as Arrow gives it) in the form ``to_bytes`` takes."""
    if isinstance(kind, DateType) and isinstance(value, dt.date):
        return (value - dt.date(1970, 1, 1)).days
    if isinstance(kind, TimeType) and isinstance(value, dt.time):
        return ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + (
            value.microsecond
        )
    if isinstance(kind, TimestampType | TimestamptzType) and isinstance(value, dt.datetime):
        delta = value - (_EPOCH if value.tzinfo is None else _EPOCH_UTC)
        return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    if isinstance(kind, StringType) and isinstance(value, uuid.UUID):
        return str(value)
    return value


def _bound(kind: PrimitiveType, value: object) -> bytes | None:
    if value is None or (isinstance(value, float) and value != value):
        return None
    try:
        return to_bytes(kind, _internal(kind, value))  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError, struct.error, decimal.InvalidOperation):
        return None  # a bound Iceberg cannot hold is an unknown bound


def _from_internal(kind: IcebergType, value: Any) -> object:
    if isinstance(kind, DateType):
        return dt.date(1970, 1, 1) + dt.timedelta(days=int(value))
    if isinstance(kind, TimeType):
        micros = int(value)
        seconds, micro = divmod(micros, 1_000_000)
        minutes, second = divmod(seconds, 60)
        hour, minute = divmod(minutes, 60)
        return dt.time(hour, minute, second, micro)
    if isinstance(kind, TimestampType):
        return _EPOCH + dt.timedelta(microseconds=int(value))
    if isinstance(kind, TimestamptzType):
        return _EPOCH_UTC + dt.timedelta(microseconds=int(value))
    return value


def _decode_bound(kind: PrimitiveType, raw: bytes) -> object:
    """A bound written with the type of its time (an INT32 column widened to
    BIGINT since, or FLOAT to DOUBLE, still has 4-byte bounds)."""
    if isinstance(kind, LongType) and len(raw) == 4:
        kind = IntegerType()
    elif isinstance(kind, DoubleType) and len(raw) == 4:
        kind = FloatType()
    try:
        return _from_internal(kind, from_bytes(kind, raw))
    except (TypeError, ValueError, OverflowError, struct.error, UnicodeDecodeError):
        return None


def to_iceberg_file(file: DataFile, table: Table, spec: PartitionSpec) -> IcebergFile:
    """An Iceberg data file with the file's tablet as its partition and its
    statistics as bounds (NaN-holding float columns get no upper bound: an
    Iceberg bound never is NaN)."""
    types = {c.id: iceberg_type(c) for c in table.columns}
    lower: dict[int, bytes] = {}
    upper: dict[int, bytes] = {}
    nulls: dict[int, int] = {}
    values: dict[int, int] = {}
    for cid, stats in file.stats.items():
        kind = types.get(cid)
        if kind is None:
            continue
        nulls[cid] = stats.null_count
        values[cid] = file.rows
        low, high = _bound(kind, stats.min), _bound(kind, stats.max)
        if low is not None:
            lower[cid] = low
        if high is not None:
            upper[cid] = high
    iceberg_file = IcebergFile.from_args(
        content=DataFileContent.DATA,
        file_path=file.path,
        file_format=FileFormat.PARQUET,
        partition=PartitionRecord(file.tablet) if spec.fields else PartitionRecord(),
        record_count=file.rows,
        file_size_in_bytes=file.size,
        value_counts=values,
        null_value_counts=nulls,
        lower_bounds=lower,
        upper_bounds=upper,
    )
    iceberg_file.spec_id = spec.spec_id
    return iceberg_file


def _tablet_from_path(path: str) -> int:
    marker = "/tablet="
    if marker not in path:
        return 0
    try:
        return int(path.rsplit(marker, 1)[1].split("/", 1)[0])
    except ValueError:
        return 0


def from_iceberg_file(
    iceberg_file: IcebergFile, types: Mapping[int, PrimitiveType], partitioned: bool
) -> DataFile:
    """Our view of an Iceberg data file: statistics keyed by column id, one
    entry per column the file holds (so a reader knows which columns a file
    predates)."""
    lower = iceberg_file.lower_bounds or {}
    upper = iceberg_file.upper_bounds or {}
    nulls = iceberg_file.null_value_counts or {}
    ids = set(nulls) | set(iceberg_file.value_counts or {}) | set(lower) | set(upper)
    stats: dict[int, ColumnStats] = {}
    for cid in sorted(ids):
        kind = types.get(cid)
        low = None if kind is None or cid not in lower else _decode_bound(kind, lower[cid])
        high = None if kind is None or cid not in upper else _decode_bound(kind, upper[cid])
        stats[cid] = ColumnStats(low, high, int(nulls.get(cid, 0)))
    if partitioned and len(iceberg_file.partition) and iceberg_file.partition[0] is not None:
        tablet = int(iceberg_file.partition[0])
    else:
        tablet = _tablet_from_path(iceberg_file.file_path)
    return DataFile(
        path=iceberg_file.file_path,
        rows=int(iceberg_file.record_count),
        size=int(iceberg_file.file_size_in_bytes),
        tablet=tablet,
        stats=stats,
    )


# --------------------------------------------------------------------------- metadata files


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

    def _refuse(self, *_: Any, **__: Any) -> Any:
        raise NotImplementedError("Almanac's Iceberg writer only stages metadata files")

    create_table = register_table = load_table = drop_table = rename_table = _refuse
    list_tables = list_namespaces = create_namespace = drop_namespace = _refuse
    load_namespace_properties = update_namespace_properties = _refuse
    list_views = drop_view = view_exists = load_view = register_view = _refuse


@dataclass(frozen=True, slots=True)
class CommitShape:
    """What a data commit writes against: the catalog table (schema and
    partition column), its tablet count, the catalog version, and that
    version's activation time (a commit is never stamped before it, so a
    read by timestamp never pairs the rows with an older schema)."""

    table: Table
    partitions: int
    catalog_version: int
    activated_at: int = 0

    @staticmethod
    def of(version: CatalogVersion, table: Table) -> CommitShape:
        return CommitShape(
            table, table_partitions(version, table), version.version, version.activation_time
        )


@dataclass(frozen=True, slots=True)
class MetadataFiles:
    """Every warehouse file one ``metadata.json`` needs: itself, its
    snapshots' manifest lists and their manifests."""

    metadata: str
    manifest_lists: frozenset[str]
    manifests: frozenset[str]

    def all(self) -> frozenset[str]:
        return frozenset({self.metadata}) | self.manifest_lists | self.manifests


class IcebergFiles:
    """Reading and writing Iceberg metadata in one warehouse. Parsed metadata
    files and manifests are immutable, so they are cached (bounded)."""

    def __init__(self, io: FileIO | None = None) -> None:
        self.io = io or PyArrowFileIO()
        self._metadata: OrderedDict[str, TableMetadata] = OrderedDict()
        self._manifests: OrderedDict[str, tuple[tuple[DataFile, IcebergFile], ...]] = OrderedDict()
        self._lock = threading.Lock()

    def _cached(self, cache: OrderedDict[str, Any], key: str) -> Any:
        with self._lock:
            value = cache.get(key)
            if value is not None:
                cache.move_to_end(key)
            return value

    def _remember(self, cache: OrderedDict[str, Any], key: str, value: Any) -> None:
        limit = _METADATA_CACHE if cache is self._metadata else _MANIFEST_CACHE
        with self._lock:
            cache[key] = value
            while len(cache) > limit:
                cache.popitem(last=False)

    def metadata(self, location: str) -> TableMetadata:
        """The parsed ``metadata.json``; ``CatalogError`` if it is missing and
        ``CorruptLogError`` if it does not parse."""
        cached = self._cached(self._metadata, location)
        if cached is not None:
            return cached  # type: ignore[no-any-return]
        try:
            metadata = FromInputFile.table_metadata(self.io.new_input(location))
        except FileNotFoundError as exc:
            raise CatalogError(
                f"Iceberg metadata file '{location}' is missing from the warehouse",
                path=location,
            ) from exc
        except (ValueError, KeyError, TypeError, OSError) as exc:
            raise CorruptLogError(
                f"Iceberg metadata file '{location}' cannot be read: {exc}", path=location
            ) from exc
        self._remember(self._metadata, location, metadata)
        return metadata

    def _types(self, metadata: TableMetadata) -> dict[int, PrimitiveType]:
        types: dict[int, PrimitiveType] = {}
        for schema in sorted(metadata.schemas, key=lambda s: s.schema_id):
            for f in schema.fields:
                if isinstance(f.field_type, PrimitiveType):
                    types[f.field_id] = f.field_type
        current = metadata.schema()
        for f in current.fields:
            if isinstance(f.field_type, PrimitiveType):
                types[f.field_id] = f.field_type
        return types

    def manifests(self, metadata: TableMetadata) -> list[ManifestFile]:
        snapshot = metadata.current_snapshot()
        return [] if snapshot is None else list(snapshot.manifests(self.io))

    def _entries(
        self, manifest: ManifestFile, metadata: TableMetadata
    ) -> tuple[tuple[DataFile, IcebergFile], ...]:
        cached = self._cached(self._manifests, manifest.manifest_path)
        if cached is not None:
            return cached  # type: ignore[no-any-return]
        types = self._types(metadata)
        spec = metadata.specs().get(manifest.partition_spec_id)
        partitioned = bool(spec is not None and spec.fields)
        try:
            entries = manifest.fetch_manifest_entry(self.io, discard_deleted=True)
        except FileNotFoundError as exc:
            raise CatalogError(
                f"Iceberg manifest '{manifest.manifest_path}' is missing from the warehouse",
                path=manifest.manifest_path,
            ) from exc
        result = tuple(
            (from_iceberg_file(e.data_file, types, partitioned), e.data_file) for e in entries
        )
        self._remember(self._manifests, manifest.manifest_path, result)
        return result

    def entries(self, location: str) -> list[tuple[DataFile, IcebergFile]]:
        """The live data files of the current snapshot of ``location``."""
        metadata = self.metadata(location)
        out: list[tuple[DataFile, IcebergFile]] = []
        for manifest in self.manifests(metadata):
            out.extend(self._entries(manifest, metadata))
        return out

    def files(self, location: str) -> tuple[DataFile, ...]:
        return tuple(f for f, _ in self.entries(location))

    def referenced(self, location: str) -> MetadataFiles:
        """The metadata files the current snapshot of ``location`` needs."""
        metadata = self.metadata(location)
        snapshot = metadata.current_snapshot()
        if snapshot is None:
            return MetadataFiles(location, frozenset(), frozenset())
        manifests = frozenset(m.manifest_path for m in self.manifests(metadata))
        return MetadataFiles(location, frozenset({snapshot.manifest_list}), manifests)

    # -- writing ---------------------------------------------------------------

    def _initial(self, shape: CommitShape, location: str, table_id: int) -> TableMetadata:
        schema = iceberg_schema(shape.table)
        spec = partition_spec(shape.table, shape.partitions)
        fields: dict[str, Any] = {
            "location": location,
            "table-uuid": uuid.uuid4(),
            "last-updated-ms": int(time.time() * 1000),
            "last-column-id": max([c.id for c in shape.table.columns], default=0),
            "schemas": [schema],
            "current-schema-id": schema.schema_id,
            "partition-specs": [spec],
            "default-spec-id": spec.spec_id,
            "last-partition-id": PARTITION_FIELD_ID if spec.fields else PARTITION_FIELD_ID - 1,
            "sort-orders": [UNSORTED_SORT_ORDER],
            "default-sort-order-id": UNSORTED_SORT_ORDER.order_id,
            "properties": {
                TABLE_ID_PROPERTY: str(table_id),
                CATALOG_VERSION_PROPERTY: str(shape.catalog_version),
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
    ) -> tuple[str, list[str]]:
        """Write the ``metadata.json`` of the next snapshot: ``files`` appended
        to (or, with ``replace_all``, replacing) the current snapshot of
        ``parent``, under the newer of the parent's schema and the shape's.
        Returns its location and every file written (to delete them should
        the publish fail). Nothing is visible until the caller publishes."""
        writer = _StagingWriter(self.io, fresh=parent is None)
        written: list[str] = []
        if parent is None:
            # The empty table is never written: its first snapshot's
            # metadata.json is the first file of the table.
            base = self._initial(shape, location, table_id)
            base_location = f"{location}/metadata/00000-{uuid.uuid4()}.metadata.json"
        else:
            base, base_location = self.metadata(parent), parent
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
            new = [to_iceberg_file(f, shape.table, spec) for f in files]
            producer = tx.update_snapshot(snapshot_properties=properties)
            if replace_all and parent is not None:
                with producer.overwrite() as overwrite:
                    for _, old in self.entries(parent):
                        overwrite.delete_data_file(old)
                    for f in new:
                        overwrite.append_data_file(f)
            else:
                with producer.fast_append() as append:
                    for f in new:
                        append.append_data_file(f)
            tx.commit_transaction()
        except BaseException:
            for path, _ in writer.written:
                written.append(path)
            self.remove(written)
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
        return self._rewrite(table_id, parent, updates)

    def write_without(
        self, table_id: int, parent: str, snapshot_ids: Iterable[int]
    ) -> tuple[str, list[str]] | None:
        """Write a ``metadata.json`` that is ``parent`` without the given
        (expired) snapshots, so that no Iceberg reader is offered a snapshot
        whose files are gone; None when it has none of them."""
        known = {s.snapshot_id for s in self.metadata(parent).snapshots}
        doomed = sorted(known & set(snapshot_ids))
        if not doomed:
            return None
        update = RemoveSnapshotsUpdate.model_validate({"snapshot-ids": doomed})
        return self._rewrite(table_id, parent, [update])

    def _rewrite(
        self, table_id: int, parent: str, updates: Sequence[TableUpdate]
    ) -> tuple[str, list[str]]:
        writer = _StagingWriter(self.io, fresh=False)
        table = IcebergTable(
            identifier=("almanac", str(table_id)),
            metadata=self.metadata(parent),
            metadata_location=parent,
            io=self.io,
            catalog=writer,
        )
        tx = table.transaction()
        tx._apply(tuple(updates), ())
        try:
            tx.commit_transaction()
        except BaseException:
            self.remove(path for path, _ in writer.written)
            raise
        location, metadata = writer.written[-1]
        self._remember(self._metadata, location, metadata)
        return location, [location]

    def snapshot_id(self, location: str) -> int | None:
        """The Iceberg id of the current snapshot of ``location``."""
        return self.metadata(location).current_snapshot_id

    def _evolve(self, base: TableMetadata, shape: CommitShape) -> list[TableUpdate]:
        """Schema and spec changes that bring ``base`` to ``shape`` when the
        shape is newer than the schema ``base`` has: a commit written against
        an older catalog version never rolls the schema back."""
        try:
            current_version = int(base.properties.get(CATALOG_VERSION_PROPERTY, "-1"))
        except ValueError:
            current_version = -1
        if shape.catalog_version <= current_version:
            return []
        updates: list[TableUpdate] = []
        schema = iceberg_schema(shape.table, 0)
        if schema.fields != base.schema().fields:
            next_id = max(s.schema_id for s in base.schemas) + 1
            updates += [
                AddSchemaUpdate.model_validate({"schema": iceberg_schema(shape.table, next_id)}),
                SetCurrentSchemaUpdate.model_validate({"schema-id": next_id}),
            ]
        spec = partition_spec(shape.table, shape.partitions)
        if not _same_spec(spec, base.spec()):
            known = [s for s in base.partition_specs if _same_spec(s, spec)]
            if known:
                updates.append(SetDefaultSpecUpdate.model_validate({"spec-id": known[0].spec_id}))
            else:
                next_spec = max(s.spec_id for s in base.partition_specs) + 1
                updates += [
                    AddPartitionSpecUpdate(
                        spec=partition_spec(shape.table, shape.partitions, next_spec)
                    ),
                    SetDefaultSpecUpdate.model_validate({"spec-id": next_spec}),
                ]
        updates.append(
            SetPropertiesUpdate(updates={CATALOG_VERSION_PROPERTY: str(shape.catalog_version)})
        )
        return updates

    def remove(self, paths: Iterable[str]) -> None:
        for path in paths:
            with contextlib.suppress(FileNotFoundError, OSError):
                self.io.delete(path)
