"""Writing a DataFrame with Spark's own Parquet writer: rows never leave the JVM.

The driver resolves the table at the latest catalog version and stages a
write (its lease renewed by a daemon thread for as long as the job runs).
Spark then writes the DataFrame, projected onto the table, into the staging
directory: columns cast to the catalog's Spark types (a lossy cast is refused
before the job, naming the column), NOT NULL, length and UUID checks raised
inside the same job, missing columns filled with their default, Parquet field
ids from ``StructField`` metadata, and one directory per bucket
(``tablet=<t>``) computed in the JVM by ``almanac.spark.jvm``'s UDFs exactly
as Iceberg's ``bucket[N]``. A table partitioned by fields of its own gets
one more directory level per partition (``almanac_partition=<key>``, the
key from an Arrow UDF running Iceberg's transforms), and each task sorts its
rows by the table's default sort order. STRUCT columns are written with a
field id on every struct field. Afterwards the driver reads each
file's footer (and a partitioned file's source columns, for its partition
values) into a ``DataFile`` and commits once; any failure aborts the write, which
deletes its directory, so nothing half-written is ever published.

Spark's Parquet writer has no FIXED, no nanosecond timestamp and no field id
for a list element or a map entry, so it cannot write a table with such a
field as Iceberg data (``native_refusal``). Such a table is written by the
same Spark tasks through the data layer instead (``write_by_tasks``: each
task's Arrow batches conformed and written as ``format("almanac")`` does,
the files' descriptions collected by the driver), still in one commit.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import decimal
import pickle
import re
import threading
import uuid
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from pyspark.sql import functions as F
from pyspark.sql import types as st

from almanac import _check as check
from almanac.data import ColumnStats, DataFile, TableData, Warehouse, new_write_id
from almanac.data.arrow import FIELD_ID, arrow_schema
from almanac.data.commits import CommitShape
from almanac.data.files import MAX_STAT_BYTES, column_stats
from almanac.data.iceberg_schema import spec_fields
from almanac.data.tablets import (
    bucket_column,
    table_partitions,
    tablet_column,
    tablet_position,
)
from almanac.data.transforms import partition_keys, single_partition, source_column
from almanac.datatypes import ColumnType
from almanac.descriptors import Column, ConstantDefault, FunctionDefault, Table
from almanac.errors import CatalogError, DataError, ValidationError
from almanac.leases import LeaseKeeper
from almanac.spark import jvm
from almanac.spark.names import catalog_session
from almanac.spark.native_read import with_field_ids
from almanac.spark.types import spark_arrow_schema, spark_type
from almanac.spark.write_types import CATALOG_BITS, check_type, native_refusal
from almanac.spark.writer import (
    DEFAULT_WRITE_LEASE_S,
    AlmanacWriter,
    WritePlan,
    check_types,
    column_renames,
)
from almanac.table_names import parse_name, resolve_table

__all__ = [
    "TABLET_COLUMN",
    "Prepared",
    "WriteResult",
    "bucket_expr",
    "collect_files",
    "prepare",
    "write",
    "write_by_tasks",
    "write_staged",
]

TABLET_COLUMN = "tablet"
"""The bucket column Spark partitions by, hence the ``tablet=<t>`` directories."""
PARTITION_COLUMN = "almanac_partition"
"""The key of a row's partition under the table's spec (``partition_keys``),
by which Spark splits a partitioned table's rows into files."""

_UUID_PATTERN = "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
_TIMESTAMP_CONF = "spark.sql.parquet.outputTimestampType"
_FIELD_ID_CONF = "spark.sql.parquet.fieldId.write.enabled"
_FOOTER_THREADS = 8


@dataclass(frozen=True, slots=True)
class WriteResult:
    """What one ``write`` published: ``rows`` in ``files`` new files of
    ``table`` ("S.T"), written against ``catalog_version``."""

    table: str
    write_id: str
    catalog_version: int
    rows: int
    files: int


# --------------------------------------------------------------------------- buckets


def bucket_expr(value: Any, column: Column, partitions: int) -> Any:
    """The Spark expression of the tablet of ``value`` (a Column already of
    ``column``'s Spark type); NULL goes to tablet 0."""
    kind = column.type
    n = F.lit(partitions)
    udfs = jvm.BUCKET_UDFS
    if kind in CATALOG_BITS or kind is ColumnType.BOOLEAN:
        return F.call_udf(udfs["long"], value.cast("bigint"), n)
    if kind is ColumnType.DATE:
        return F.call_udf(udfs["long"], F.unix_date(value).cast("bigint"), n)
    if kind is ColumnType.TIMESTAMP_WITH_LOCAL_TIME_ZONE:
        return F.call_udf(udfs["long"], F.unix_micros(value), n)
    simple = {
        ColumnType.TIMESTAMP: "local_timestamp",
        ColumnType.STRING: "string",
        ColumnType.UUID: "uuid",
        ColumnType.BYTES: "binary",
        ColumnType.DECIMAL: "decimal",
    }
    if kind in simple:
        return F.call_udf(udfs[simple[kind]], value, n)
    if kind in (ColumnType.FLOAT, ColumnType.DOUBLE):
        return F.call_udf(udfs["double"], value.cast("double"), n)
    raise ValidationError(
        f"Column '{column.name}' of type {kind.sql_name} cannot place rows in tablets in Spark",
        column=column.name,
        rule="spark-type",
    )


def _required_fields(
    value: Any, column: Column, path: str, full: str, checks: dict[str, tuple[str, str]]
) -> Any:
    """``value`` of a STRUCT column, failing the job on a NULL in a NOT NULL
    field of a non-NULL struct, at any depth."""
    for field in column.fields:
        where = f"{path}.{field.name}"
        inner = value.getField(field.name)
        if not field.nullable:
            value = _guard(
                value,
                value.isNotNull() & inner.isNull(),
                f"Field '{where}' of table '{full}' is NOT NULL; the data has a NULL value",
                checks,
                full,
                column,
            )
        if field.type is ColumnType.STRUCT:
            value = _required_fields(value, field, where, full, checks)
    return value


def _literal(value: object, target: Any) -> Any:
    if isinstance(value, uuid.UUID):
        return F.lit(str(value)).cast(target)
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.UTC).replace(tzinfo=None)
        return F.lit(value.isoformat(sep=" ")).cast(st.TimestampNTZType()).cast(target)
    if isinstance(value, decimal.Decimal | dt.time):
        return F.lit(str(value)).cast(target)
    if isinstance(value, bytes):
        return F.lit(bytearray(value)).cast(target)
    return F.lit(value).cast(target)


def _fill(column: Column, target: Any, full: str) -> Any:
    """A column the DataFrame lacks, by ``almanac.data.arrow.column_fill``'s rules."""
    default = column.default
    if not column.nullable and default is None:
        raise DataError(
            f"Column '{column.name}' of table '{full}' is NOT NULL and has no default, but "
            "the data lacks it",
            table=full,
            column=column.name,
        )
    if isinstance(default, ConstantDefault) and default.value is not None:
        value = default.value
        if column.type is ColumnType.TIMESTAMP_WITH_LOCAL_TIME_ZONE and isinstance(
            value, dt.datetime
        ):
            # An instant (a naive default is UTC, as ``conform`` reads it): the
            # offset in the text makes the cast independent of the session zone.
            aware = value.astimezone(dt.UTC) if value.tzinfo else value.replace(tzinfo=dt.UTC)
            return F.lit(aware.isoformat(sep=" ")).cast(target)
        return _literal(value, target)
    if isinstance(default, FunctionDefault) and default.name == "RAND_UUID":
        return F.expr("uuid()")
    return F.lit(None).cast(target)


@dataclass(frozen=True, slots=True)
class Prepared:
    """The DataFrame Spark writes, and the in-job failure messages it may raise."""

    df: Any
    checks: dict[str, tuple[str, str]]  # message -> (table, column)
    order: tuple[Any, ...] = ()
    """The default sort order's keys: each task sorts its rows by them
    (within its tablet) right before writing, so every file is sorted."""
    partitioned: bool = False
    """Whether rows are split by ``PARTITION_COLUMN`` too."""
    partitions: int = 1
    """The zone's partition count the tablets were computed for."""


def _guard(
    value: Any,
    failed: Any,
    message: str,
    checks: dict[str, tuple[str, str]],
    full: str,
    column: Column,
) -> Any:
    checks[message] = (full, column.name)
    return F.when(failed, F.raise_error(F.lit(message))).otherwise(value)


def prepare(
    df: Any,
    table: Table,
    full: str,
    partitions: int,
    *,
    renames: Sequence[tuple[str, str]] | None = None,
) -> Prepared:
    """``df`` projected onto ``table``: catalog names and order, lossless
    casts, defaults, checks, field ids, plus the ``tablet`` column, each
    task's rows sorted by the table's default sort order. Raises
    ``DataError`` naming the column for unknown, duplicate or missing
    columns and for lossy casts, and ``CatalogError`` for a partition spec
    or sort order this writer cannot honour, before any job runs."""
    why = native_refusal(table)
    if why is not None:
        raise ValidationError(
            f"Table '{full}' cannot be written by Spark's Parquet writer: {why} "
            "(write_by_tasks writes it)",
            table=full,
            rule="spark-native-write",
        )
    names = list(df.columns)
    mapping = dict(column_renames(names, table) if renames is None else renames)
    by_catalog: dict[str, str] = {}
    for name in names:
        catalog_name = mapping.get(name, name)
        if table.column(catalog_name) is None:
            raise DataError(
                f"Column '{name}' of the data is not a column of table '{full}' "
                f"(its columns: {', '.join(c.name for c in table.columns)})",
                table=full,
                column=name,
            )
        if catalog_name in by_catalog:
            raise DataError(
                f"Column '{catalog_name}' appears more than once in the data for table '{full}'",
                table=full,
                column=catalog_name,
            )
        by_catalog[catalog_name] = name
    source_types = {f.name: f.dataType for f in df.schema.fields}
    checks: dict[str, tuple[str, str]] = {}
    projected: list[Any] = []
    values: dict[str, Any] = {}
    clash = {c.name for c in table.columns if c.name.lower() in (TABLET_COLUMN, PARTITION_COLUMN)}
    for column in table.columns:
        source = by_catalog.get(column.name)
        if source is None:
            target = spark_type(column, full)
            value = _fill(column, target, full)
        else:
            target = check_type(source_types[source], column, full)
            value = F.col(f"`{source.replace('`', '``')}`").cast(with_field_ids(target, column))
        if column.type is ColumnType.STRUCT:
            value = _required_fields(value, column, column.name, full, checks)
        if column.type is ColumnType.UUID:
            value = F.lower(value)
            value = _guard(
                value,
                value.isNotNull() & ~value.rlike(_UUID_PATTERN),
                f"Column '{column.name}' of table '{full}' has type UUID; a value is not a UUID",
                checks,
                full,
                column,
            )
        if column.length is not None and column.type in (ColumnType.STRING, ColumnType.BYTES):
            unit = "characters" if column.type is ColumnType.STRING else "bytes"
            value = _guard(
                value,
                F.length(value) > column.length,
                f"Column '{column.name}' of table '{full}' allows at most {column.length} "
                f"{unit}; a value is longer",
                checks,
                full,
                column,
            )
        if not column.nullable:
            value = _guard(
                value,
                value.isNull(),
                f"Column '{column.name}' of table '{full}' is NOT NULL; the data has a NULL value",
                checks,
                full,
                column,
            )
        values[column.name] = value
        # A data column named like the bucket column keeps its field id under another name.
        written = f"_col{column.id}" if column.name in clash else column.name
        projected.append(value.alias(written, metadata={"parquet.field.id": column.id}))
    # Without a bucket of its own each task writes its rows to one file (per
    # partition), in a tablet picked by the task, so a write spreads over
    # the tablets; a NULL bucket of the tablet column does the same.
    spread = F.spark_partition_id() % F.lit(partitions)
    by_bucket = tablet_column(table)
    if table.bucketed:
        key = bucket_column(table)
        tablet = bucket_expr(values[key.name], key, partitions)
    elif by_bucket is not None and _tablet_at(table, partitions) is not None:
        bucket = bucket_expr(values[by_bucket.name], by_bucket, partitions)
        tablet = F.when(values[by_bucket.name].isNull(), spread).otherwise(bucket)
    else:
        tablet = spread
    jvm.load(df.sparkSession)
    written_names = {c.id: f"_col{c.id}" if c.name in clash else c.name for c in table.columns}
    keys = tuple(_sort_keys(table, full, written_names))
    extra = [tablet.alias(TABLET_COLUMN)]
    part = _partition_key(table, full, values)
    if part is not None:
        extra.append(part.alias(PARTITION_COLUMN))
    return Prepared(df.select(*projected, *extra), checks, keys, part is not None, partitions)


def _tablet_at(table: Table, partitions: int) -> int | None:
    """Where the default spec's tablet field is (see ``tablet_position``)."""
    column = tablet_column(table)
    fields = spec_fields(table, partitions)[table.default_spec_id]
    return tablet_position(
        [(f.source_id, f.transform) for f in fields],
        None if column is None else column.id,
        partitions,
    )


def _partition_key(table: Table, full: str, values: Mapping[str, Any]) -> Any | None:
    """The Spark column of each row's partition key under the default spec
    (an Arrow UDF running ``partition_keys``, Iceberg's own transforms on
    the catalog's Arrow types); None when the spec has no fields of its own."""
    fields = table.partition_spec.fields
    if not fields:
        return None
    arrow_udf = getattr(F, "arrow_udf", None)  # PySpark 4.1 and later
    if arrow_udf is None:
        raise CatalogError(
            f"Table '{full}' is partitioned; Spark's native writer needs PySpark 4.1 or later "
            "(Arrow UDFs) to place its rows: upgrade PySpark, or write it through the Iceberg "
            "REST catalog or almanac.data.write_table",
            table=full,
            rule="native-write-partitioned",
        )
    tops = sorted({source_column(table, f.source_id)[0][0] for f in fields})
    schema = arrow_schema(table)
    wanted = pa.schema([schema.field(name) for name in tops])

    def keys(*arrays: pa.Array) -> pa.Array:
        rows = pa.table(
            [a.cast(f.type) for a, f in zip(arrays, wanted, strict=True)], schema=wanted
        )
        return pa.array(partition_keys(table, fields, rows), pa.int64())

    return arrow_udf(keys, "long")(*(values[name] for name in tops))


def _column_name(table: Table, column_id: int) -> str:
    column = table.column_by_id(column_id)
    return f"#{column_id}" if column is None else column.name


def _sort_keys(table: Table, full: str, written: Mapping[int, str]) -> list[Any]:
    """Spark sort expressions for the table's default sort order (each
    task's rows sorted, so each file is); only identity keys on top-level
    columns, anything else is refused before any job runs."""
    keys = []
    for f in table.sort_order.fields:
        if f.transform != "identity" or f.source_id not in written:
            raise CatalogError(
                f"Table '{full}' is sorted by {f.transform}({_column_name(table, f.source_id)}); "
                "Spark's native writer sorts by plain top-level columns only: write it through "
                "the Iceberg REST catalog or almanac.data.write_table",
                table=full,
                rule="native-write-sort-order",
            )
        column = F.col(f"`{written[f.source_id].replace('`', '``')}`")
        if f.descending:
            keys.append(column.desc_nulls_first() if f.nulls_first else column.desc_nulls_last())
        else:
            keys.append(column.asc_nulls_first() if f.nulls_first else column.asc_nulls_last())
    return keys


# --------------------------------------------------------------------------- job


def _spark_path(warehouse: Warehouse, path: str) -> str:
    if "://" not in warehouse.uri:
        return "file://" + path
    return warehouse.uri.split("://", 1)[0] + "://" + path


_conf_lock = threading.Lock()
_conf_users: dict[int, tuple[int, dict[str, str | None]]] = {}
"""Per session: how many native writes run, and the settings they replaced."""


@contextlib.contextmanager
def _session_conf(spark: Any, settings: dict[str, str]) -> Iterator[None]:
    """Spark reads the Parquet timestamp type from the session, not from write
    options: set it while any native write of the session runs, and put the
    user's values back when the last one ends."""
    key = id(spark)
    with _conf_lock:
        users, saved = _conf_users.get(key, (0, {}))
        if users == 0:
            saved = {name: spark.conf.get(name, None) for name in settings}
            for name, value in settings.items():
                spark.conf.set(name, value)
        _conf_users[key] = (users + 1, saved)
    try:
        yield
    finally:
        with _conf_lock:
            users, saved = _conf_users.pop(key)
            if users > 1:
                _conf_users[key] = (users - 1, saved)
            else:
                for name, old in saved.items():
                    if old is None:
                        spark.conf.unset(name)
                    else:
                        spark.conf.set(name, old)


def _run_job(prepared: Prepared, path: str, options: Mapping[str, str]) -> None:
    spark = prepared.df.sparkSession
    df = prepared.df
    by = [TABLET_COLUMN, PARTITION_COLUMN] if prepared.partitioned else [TABLET_COLUMN]
    if prepared.order:
        df = df.sortWithinPartitions(*(F.col(c) for c in by), *prepared.order)
    writer = df.write.mode("append").partitionBy(*by)
    for key, value in options.items():
        writer = writer.option(key, value)
    try:
        with _session_conf(spark, {_TIMESTAMP_CONF: "TIMESTAMP_MICROS", _FIELD_ID_CONF: "true"}):
            writer.parquet(path)
    except Exception as exc:
        text = str(exc)
        for message, (full, column) in prepared.checks.items():
            if message in text:
                raise DataError(
                    message + "; nothing was written", table=full, column=column
                ) from None
        raise


def _data_paths(warehouse: Warehouse, write_dir: str) -> list[tuple[str, int]]:
    """``(path, tablet)`` of every data file Spark left in ``write_dir``:
    ``tablet=<t>/<name>.parquet``, or ``tablet=<t>/almanac_partition=<k>/
    <name>.parquet`` for a partitioned table; ``_SUCCESS``, ``_temporary``,
    ``.crc`` and our marker are not data."""
    infos = warehouse.fs.get_file_info(pafs.FileSelector(write_dir, recursive=True))
    out = []
    for info in infos:
        if info.type != pafs.FileType.File:
            continue
        parts = info.path[len(write_dir) + 1 :].split("/")
        if not 2 <= len(parts) <= 3 or not parts[0].startswith(f"{TABLET_COLUMN}="):
            continue
        if len(parts) == 3 and not parts[1].startswith(f"{PARTITION_COLUMN}="):
            continue
        if parts[-1].startswith(("_", ".")) or not parts[-1].endswith(".parquet"):
            continue
        tablet = parts[0].split("=", 1)[1]
        if tablet.isdigit():
            out.append((info.path, int(tablet)))
    return sorted(out)


def _normalize(value: object, column: Column) -> object:
    if value is None:
        return None
    kind = column.type
    if isinstance(value, bytes) and kind in (ColumnType.STRING, ColumnType.UUID):
        value = value.decode("utf-8", "replace")
    if isinstance(value, dt.datetime):
        if kind is ColumnType.TIMESTAMP_WITH_LOCAL_TIME_ZONE:
            value = value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value
            value = value.astimezone(dt.UTC)
        elif value.tzinfo is not None:
            value = value.astimezone(dt.UTC).replace(tzinfo=None)
    if isinstance(value, str | bytes) and len(value) > MAX_STAT_BYTES:
        return None
    return value


def _file_stats(
    warehouse: Warehouse, path: str, metadata: pq.FileMetaData, table: Table
) -> dict[int, ColumnStats]:
    """Per column id, from the footer's row-group statistics; a column whose
    statistics are missing is read (rare: Spark writes them). Float bounds
    are left unknown: Parquet statistics leave NaN out."""
    schema = metadata.schema.to_arrow_schema()
    out: dict[int, ColumnStats] = {}
    for index, field in enumerate(schema):
        if not field.metadata or FIELD_ID not in field.metadata:
            continue
        column_id = int(field.metadata[FIELD_ID])
        column = table.column_by_id(column_id)
        if column is None:
            continue
        nulls, low, high, complete = 0, None, None, True
        for group in range(metadata.num_row_groups):
            stats = metadata.row_group(group).column(index).statistics
            if stats is None or not stats.has_null_count:
                complete = False
                break
            nulls += stats.null_count
            if stats.has_min_max:
                lo, hi = stats.min, stats.max
                low = lo if low is None or lo < low else low
                high = hi if high is None or hi > high else high
        if not complete:
            read = pq.read_table(path, columns=[field.name], filesystem=warehouse.fs)
            out[column_id] = column_stats(read.column(0))
            continue
        if column.type in (ColumnType.FLOAT, ColumnType.DOUBLE) or nulls == metadata.num_rows:
            out[column_id] = ColumnStats(None, None, nulls)
            continue
        out[column_id] = ColumnStats(_normalize(low, column), _normalize(high, column), nulls)
    return out


def _partition(
    warehouse: Warehouse,
    path: str,
    stored: pa.Schema,
    table: Table,
    partitions: int,
    tablet: int,
) -> tuple[object, ...]:
    """A file's values for the default spec's Iceberg fields (the tablet
    first in a bucketed table), computed from its rows' source columns
    with Iceberg's transforms; ``DataError`` if its rows span partitions."""
    fields = spec_fields(table, partitions)[table.default_spec_id]
    own = table.partition_spec.fields
    if not own:
        return ()
    hidden = fields[: len(fields) - len(own)]
    tops = sorted({source_column(table, f.source_id)[0][0] for f in own})
    by_id = {c.id: c for c in table.columns if c.name in tops}
    stored_names = {
        int(f.metadata[FIELD_ID]): f.name for f in stored if f.metadata and FIELD_ID in f.metadata
    }
    wanted = [c for i, c in by_id.items() if i in stored_names]
    read = pq.read_table(
        path, columns=[stored_names[c.id] for c in wanted], filesystem=warehouse.fs
    )
    schema = arrow_schema(table)
    rows = pa.table(
        [read.column(i).cast(schema.field(c.name).type) for i, c in enumerate(wanted)],
        names=[c.name for c in wanted],
    )
    values = single_partition(table, own, rows)
    if values is None:
        raise DataError(
            f"Data file '{path}' of table '{table.name}' holds rows of more than one "
            "partition; nothing was written",
            table=table.name,
            path=path,
        )
    return (tablet,) * len(hidden) + values


def collect_files(
    warehouse: Warehouse, write_dir: str, table: Table, partitions: int = 1
) -> list[DataFile]:
    """The ``DataFile`` of every data file in ``write_dir``, from footers
    (and, for a partitioned table, the partition source columns)."""

    def one(entry: tuple[str, int]) -> DataFile:
        path, tablet = entry
        with warehouse.fs.open_input_file(path) as handle:
            size = handle.size()
            metadata = pq.read_metadata(handle)
        stored = metadata.schema.to_arrow_schema()
        partition = (
            _partition(warehouse, path, stored, table, partitions, tablet)
            if metadata.num_rows
            else ()
        )
        return DataFile(
            path=path,
            rows=metadata.num_rows,
            size=size,
            tablet=tablet,
            stats=_file_stats(warehouse, path, metadata, table),
            spec_id=table.default_spec_id,
            partition=partition,
        )

    paths = _data_paths(warehouse, write_dir)
    with ThreadPoolExecutor(max_workers=_FOOTER_THREADS) as pool:
        return [f for f in pool.map(one, paths) if f.rows > 0]


def write_staged(
    prepared: Prepared,
    warehouse: Warehouse,
    write_dir: str,
    table: Table,
    *,
    options: Mapping[str, str] | None = None,
) -> list[DataFile]:
    """Run the Spark job into a staged ``write_dir`` and describe what it
    wrote; the caller commits or aborts. ``options`` go to Spark's Parquet
    writer (``compression``, ``parquet.*`` settings)."""
    _run_job(prepared, _spark_path(warehouse, write_dir), dict(options or {}))
    return collect_files(warehouse, write_dir, table, prepared.partitions)


def write_by_tasks(
    df: Any,
    table: Table,
    full: str,
    partitions: int,
    warehouse: Warehouse,
    write_dir: str,
    *,
    renames: Sequence[tuple[str, str]] | None = None,
) -> list[DataFile]:
    """Write ``df`` into a staged ``write_dir`` through the data layer, in
    Spark's tasks: each task conforms its Arrow batches and writes files as
    the ``format("almanac")`` writer does, and returns their ``DataFile``s
    to the driver. Column types are checked before the job (``DataError``
    naming the column); the caller commits or aborts."""
    plan = WritePlan(
        store="",  # the tasks never commit: the driver does
        warehouse=warehouse.uri,
        full_name=full,
        table=table,
        partitions=partitions,
        catalog_version=0,
        write_id="",
        write_dir=write_dir,
        operation="append",
        renames=tuple(column_renames(list(df.columns), table) if renames is None else renames),
    )
    check_types(spark_arrow_schema(df.schema), plan)

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        message = AlmanacWriter(plan).write(batches)
        yield pa.RecordBatch.from_pylist(
            [{_FILE: pickle.dumps(f)} for f in message.files], schema=_FILES_SCHEMA
        )

    try:
        described = df.mapInArrow(task, f"{_FILE} binary").collect()
    except Exception as exc:
        # A task's DataError (a NULL in a NOT NULL column, a value that
        # does not fit) reaches the driver as text inside Spark's error.
        found = _TASK_ERROR.search(str(exc))
        if found is None:
            raise
        raise DataError(f"{found.group(1)}; nothing was written", table=full) from None
    return [pickle.loads(row[_FILE]) for row in described]


_TASK_ERROR = re.compile(r"almanac\.errors\.DataError: (.+)")


_FILE = "data_file"
_FILES_SCHEMA = pa.schema([pa.field(_FILE, pa.binary())])


def write(
    df: Any,
    target: str,
    name: str,
    mode: str = "append",
    *,
    warehouse: str | None = None,
    coalesce: int | None = None,
    cluster: bool = False,
    options: Mapping[str, str] | None = None,
    lease_seconds: float = DEFAULT_WRITE_LEASE_S,
) -> WriteResult:
    """Append ``df`` to table ``name`` ("S.T") of catalog ``target``, or
    replace its data (``mode="overwrite"``), with Spark's native Parquet
    writer; one data commit, or nothing at all.

    ``coalesce`` merges the DataFrame into that many tasks first (fewer, larger
    files); ``cluster`` shuffles rows by tablet so each tablet gets one file;
    ``options`` go to Spark's Parquet writer (``compression``, ``parquet.*``).
    ``DataError`` names the column of a lossy cast, an unknown column or (from
    inside the job) a NULL in a NOT NULL column."""
    if not hasattr(df, "sparkSession") or not hasattr(df, "write"):
        raise check.fail("Parameter 'df' of write", "a Spark DataFrame", df)
    check.string(target, "Parameter 'target' of write")
    check.string(name, "Parameter 'name' of write")
    if mode not in ("append", "overwrite"):
        raise ValidationError(
            f"Parameter 'mode' of write must be 'append' or 'overwrite', not {mode!r}",
            rule="write-mode",
        )
    check.optional_str(warehouse, "Parameter 'warehouse' of write")
    if coalesce is not None:
        check.integer(coalesce, "Parameter 'coalesce' of write", lo=1)
    check.boolean(cluster, "Parameter 'cluster' of write")
    if options is not None:
        if not isinstance(options, Mapping):
            raise check.fail("Parameter 'options' of write", "a mapping of str to str", options)
        for key, value in options.items():
            check.string(key, "A key of parameter 'options' of write")
            check.string(value, f"Option '{key}' of write")
    if isinstance(lease_seconds, bool) or not isinstance(lease_seconds, int | float):
        raise check.fail("Parameter 'lease_seconds' of write", "a positive number", lease_seconds)
    if not lease_seconds > 0:
        raise ValidationError(
            f"Parameter 'lease_seconds' of write must be positive, got {lease_seconds}"
        )
    with catalog_session(target, warehouse) as cat:
        snap = cat.catalog()
        schema, table = resolve_table(snap, parse_name(name))
        full = f"{schema.name}.{table.name}"
        partitions = table_partitions(snap, table)
        if coalesce is not None:
            df = df.coalesce(coalesce)
        native = native_refusal(table) is None
        if native:
            prepared = prepare(df, table, full, partitions)
            if cluster:
                prepared = replace(prepared, df=prepared.df.repartition(F.col(TABLET_COLUMN)))
        data = TableData.for_catalog(cat)
        write_id = new_write_id()
        write_dir = data.warehouse.write_dir(table.id, write_id)
        lease = data.stage(write_id, write_dir, ttl_s=lease_seconds)
        try:
            with LeaseKeeper(
                lease_seconds, f"almanac-write:{full}", lambda: data.keep_alive(lease)
            ):
                if native:
                    files = write_staged(
                        prepared, data.warehouse, write_dir, table, options=options
                    )
                else:
                    files = write_by_tasks(df, table, full, partitions, data.warehouse, write_dir)
                data.commit(CommitShape.of(snap, table), write_id, files, operation=mode)
        except BaseException:
            with contextlib.suppress(CatalogError):
                data.abort(write_id, write_dir)
            raise
        finally:
            data.release(lease)
        return WriteResult(full, write_id, snap.version, sum(f.rows for f in files), len(files))
