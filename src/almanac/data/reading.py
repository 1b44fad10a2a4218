"""Reading a table as of a catalog version or a timestamp: plan (pick the
schema and data snapshot, prune files by statistics), then read files by
column id so that schema changes made after a file was written resolve."""

from __future__ import annotations

import datetime as dt
import decimal
import math
import uuid
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from almanac import _check as check
from almanac.data.arrow import (
    FIELD_ID,
    arrow_type,
    by_field_id,
    column_fill,
    output_schema,
    project,
)
from almanac.data.commits import TableData
from almanac.data.deletes import apply_deletes, deleted_positions
from almanac.data.files import ColumnStats, DataFile
from almanac.data.iceberg_schema import PARTITION_FIELD_ID, TABLET_FIELD
from almanac.data.snapshots import DataSnapshot
from almanac.data.transforms import UNKNOWN, transform_value
from almanac.data.warehouse import Warehouse
from almanac.errors import (
    CatalogError,
    CorruptDataError,
    DataError,
    NotFoundError,
    ValidationError,
)
from almanac.model.catalog_version import DEFAULT_SCHEMA
from almanac.model.descriptors import Column, ConstantDefault, Table
from almanac.model.partitioning import PartitionField, transform_name
from almanac.model.read_point import ReadPoint
from almanac.node.catalog import Catalog

__all__ = [
    "PREDICATE_OPS",
    "Predicate",
    "ScanPlan",
    "may_match",
    "plan_scan",
    "read_file",
    "read_table",
]

PREDICATE_OPS = ("=", "<", "<=", ">", ">=", "in", "is_null", "is_not_null")
BATCH_ROWS = 65_536
MAIN_REF = "main"
"""The branch every read without a ref reads (Iceberg's current snapshot)."""


@dataclass(frozen=True, slots=True)
class Predicate:
    """A filter on one column by its name at the scan's version. ``value`` is
    a list for ``in`` and ignored for ``is_null``/``is_not_null``. Comparisons
    never match NULL (SQL semantics)."""

    column: str
    op: str
    value: object = None

    def __post_init__(self) -> None:
        check.string(self.column, "Parameter 'column' of Predicate")
        if self.op not in PREDICATE_OPS:
            raise check.fail(
                "Parameter 'op' of Predicate", f"one of {', '.join(PREDICATE_OPS)}", self.op
            )
        if self.op in ("is_null", "is_not_null"):
            return
        what = f"Parameter 'value' of Predicate '{self.op}' on column '{self.column}'"
        if self.op != "in":
            _check_operand(self.value, what)
            return
        if not isinstance(self.value, list | tuple | set | frozenset):
            raise check.fail(what, "a list, tuple or set of values", self.value)
        members = [v for v in self.value if v is not None]
        for i, member in enumerate(members):
            _check_operand(member, f"Item {i} of {what[0].lower()}{what[1:]}")
        try:
            pa.array(members)
        except (pa.ArrowException, OverflowError, TypeError, ValueError) as exc:
            raise check.fail(what, "values of one type", self.value) from exc


_OPERAND_TYPES = (bool, int, float, decimal.Decimal, str, bytes, dt.date, dt.time, uuid.UUID)


def _check_operand(value: object, what: str) -> None:
    """A value a column holds, that Arrow can compare with: 64-bit ints, finite
    decimals of at most 76 digits, aware or naive datetimes as stored."""
    if value is None:
        return
    if not isinstance(value, _OPERAND_TYPES):
        raise check.fail(
            what,
            "None or a bool, int, float, Decimal, str, bytes, date, time, datetime or UUID",
            value,
        )
    if isinstance(value, int) and not isinstance(value, bool):
        check.integer(value, what)
    if isinstance(value, str) and not check.is_unicode(value):
        raise check.fail(what, "valid Unicode text", value)
    if isinstance(value, decimal.Decimal):
        try:
            pc.scalar(value)
        except (pa.ArrowException, OverflowError, ValueError) as exc:
            raise check.fail(what, "a finite Decimal of at most 76 digits", value) from exc


@dataclass(frozen=True, slots=True)
class ScanPlan:
    """What to read; picklable so Spark can ship it to executors. ``table`` is
    the descriptor at the scan's catalog version; ``files`` are those the
    predicates may match, out of ``files_total`` in ``snapshot``."""

    table: Table
    files: tuple[DataFile, ...]
    files_total: int
    snapshot: DataSnapshot | None
    catalog_version: int = 0
    filters: tuple[Predicate, ...] = field(default=())


# --------------------------------------------------------------------------- pruning


def _key(value: object) -> tuple[int, Any]:
    """Order with NaN above every number, as Spark sorts, so pruning stays
    conservative under both IEEE and Spark comparison rules."""
    if isinstance(value, float) and math.isnan(value):
        return (1, 0)
    return (0, value)


def _le(a: object, b: object) -> bool:
    return _key(a) <= _key(b)


def _lt(a: object, b: object) -> bool:
    return _key(a) < _key(b)


def _absent_stats(column: Column, rows: int) -> ColumnStats:
    """What a column added after the file was written reads as in that file:
    its initial default, not the current one (see ``column_fill``)."""
    default = column.initial_default
    if isinstance(default, ConstantDefault) and default.value is not None:
        value = default.value
        value = str(value) if isinstance(value, uuid.UUID) else value
        return ColumnStats(value, value, 0)
    return ColumnStats(None, None, rows)


def _in_range(stats: ColumnStats, value: object) -> bool:
    return (stats.min is None or _le(stats.min, value)) and (
        stats.max is None or _le(value, stats.max)
    )


def may_match(
    predicate: Predicate,
    column: Column,
    file: DataFile,
    fields: Sequence[PartitionField] = (),
) -> bool:
    """False only when the file's statistics, or its partition values for
    ``fields`` (the fields of the Iceberg spec it was written under, see
    ``IcebergReader.spec_fields``), prove no row satisfies ``predicate``."""
    if not _stats_may_match(predicate, column, file):
        return False
    for at, f in enumerate(fields):
        if f.source_id == column.id and at < len(file.partition_values):
            hidden = f.field_id == PARTITION_FIELD_ID and f.name == TABLET_FIELD
            if not _partition_may_match(predicate, column, f, file.partition_values[at], hidden):
                return False
    return True


def _stats_may_match(predicate: Predicate, column: Column, file: DataFile) -> bool:
    stats = file.stats.get(column.id) or _absent_stats(column, file.rows)
    op, value = predicate.op, predicate.value
    if op == "is_null":
        return stats.null_count > 0
    if stats.null_count >= file.rows:
        return False
    if op == "is_not_null":
        return True
    try:
        if op == "in":
            if not isinstance(value, list | tuple | set | frozenset):
                return True
            return any(v is not None and _in_range(stats, v) for v in value)
        if value is None:
            return False
        if op == "=":
            return _in_range(stats, value)
        if op in ("<", "<="):
            compare = _lt if op == "<" else _le
            return stats.min is None or compare(stats.min, value)
        compare = _lt if op == ">" else _le
        return stats.max is None or compare(value, stats.max)
    except TypeError:
        return True  # a value the statistics cannot be compared with proves nothing


def _step(column: Column, value: object, by: int) -> object:
    """The value of ``column``'s type next to ``value`` (below it for -1),
    None for types without one (text, floats)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value + by
    if isinstance(value, dt.datetime):
        return value + dt.timedelta(microseconds=by)
    if isinstance(value, dt.date):
        return value + dt.timedelta(days=by)
    if isinstance(value, decimal.Decimal) and value.is_finite():
        return value + by * decimal.Decimal(1).scaleb(-(column.scale or 0))
    return None


_ORDERED = ("identity", "truncate", "year", "month", "day", "hour")
"""Transforms that keep order: x <= y gives T(x) <= T(y)."""


def _partition_may_match(
    predicate: Predicate, column: Column, field: PartitionField, value: object, hidden: bool
) -> bool:
    """False only when a file whose rows all have ``value`` as ``field``'s
    transform of ``column`` can hold no row satisfying ``predicate``. A NULL
    partition value means every row's column is NULL (but the hidden tablet
    field files NULL keys under 0, so it proves only equalities); ``void``
    proves nothing."""
    transform = field.transform
    name = transform_name(transform)
    op, operand = predicate.op, predicate.value
    if name == "void":
        return True
    if not hidden:
        if op == "is_null":
            return value is None
        if op == "is_not_null":
            return value is not None
        if value is None:
            return False  # a comparison never matches NULL
    if value is None or op in ("is_null", "is_not_null"):
        return True
    try:
        if op == "in":
            if not isinstance(operand, list | tuple | set | frozenset):
                return True
            wanted = [transform_value(transform, column, v) for v in operand if v is not None]
            return any(w is UNKNOWN or w == value for w in wanted)
        if operand is None:
            return True
        target = transform_value(transform, column, operand)
        if target is UNKNOWN:
            return True
        if op == "=":
            return bool(target == value)
        if hidden or name not in _ORDERED:
            return True
        if op in ("<", ">") and name != "identity":
            # x < v is x <= v - 1 where the type has a next value (Iceberg's
            # own projection): day(ts) < day(midnight) then drops that day.
            nearest = _step(column, operand, -1 if op == "<" else 1)
            if nearest is not None:
                op, target = op + "=", transform_value(transform, column, nearest)
                if target is UNKNOWN:
                    return True
        if op == "<":
            return _lt(value, target) if name == "identity" else _le(value, target)
        if op == "<=":
            return _le(value, target)
        if op == ">":
            return _lt(target, value) if name == "identity" else _le(target, value)
        return _le(target, value)
    except TypeError:
        return True  # a value the partition cannot be compared with proves nothing


def _check_predicate(table: Table, predicate: Predicate) -> Column:
    if not isinstance(predicate, Predicate):
        raise ValidationError(f"Not a Predicate: {predicate!r}")
    if predicate.op not in PREDICATE_OPS:
        raise ValidationError(
            f"Predicate operator {predicate.op!r} on column '{predicate.column}' is not one of "
            f"{', '.join(PREDICATE_OPS)}",
            column=predicate.column,
        )
    if predicate.op == "in" and not isinstance(predicate.value, list | tuple | set | frozenset):
        raise ValidationError(
            f"Predicate 'in' on column '{predicate.column}' needs a list of values",
            column=predicate.column,
        )
    column = table.column(predicate.column)
    if column is None:
        raise NotFoundError(
            f"Column '{predicate.column}' of a filter does not exist in table '{table.name}'",
            kind="column",
            table=table.name,
            column=predicate.column,
        )
    return column


def plan_scan(
    cat: Catalog,
    data: TableData,
    name: str,
    schema: str = DEFAULT_SCHEMA,
    *,
    version: int | None = None,
    timestamp: int | dt.datetime | None = None,
    filters: Sequence[Predicate] = (),
    ref: str | None = None,
) -> ScanPlan:
    """Resolve the table at ``version`` or ``timestamp`` (latest by default;
    ``NotFoundError`` if it did not exist then), pick the data snapshot that
    catalog version holds (``TableData.snapshot_at``; with
    ``ref``, the snapshot its branch or tag of that name pointed at then)
    and keep the files whose statistics and partition values (each under
    its own spec) allow a match for every predicate."""
    check.instance(cat, Catalog, "Parameter 'cat' of plan_scan")
    check.instance(data, TableData, "Parameter 'data' of plan_scan")
    check.string(name, "Parameter 'name' of plan_scan", nonblank=True)
    check.string(schema, "Parameter 'schema' of plan_scan", nonblank=True)
    if version is not None and timestamp is not None:
        raise ValidationError("Read a table at a version or at a timestamp, not both")
    check.optional_int(version, "Parameter 'version' of plan_scan")
    check.optional_str(ref, "Parameter 'ref' of plan_scan", nonblank=True)
    ts = (
        None
        if timestamp is None
        else check.timestamp(timestamp, "Parameter 'timestamp' of plan_scan")
    )
    point = ReadPoint(version=version, timestamp=ts)
    if point.latest:
        cat.catch_up()  # the latest stored version: its data may be newer than this node's
    at = point.resolve(cat)
    table = at.table(name, schema)
    if table is None:
        raise NotFoundError(
            f"Table '{schema}.{name}' does not exist at catalog version {at.version}",
            kind="table",
            name=f"{schema}.{name}",
            version=at.version,
        )
    if isinstance(filters, str | bytes) or not isinstance(filters, Sequence):
        raise ValidationError(
            "Parameter 'filters' of plan_scan must be a sequence of Predicate, got "
            f"{type(filters).__name__} {filters!r:.80}"
        )
    checked = [(p, _check_predicate(table, p)) for p in filters]
    current = data.snapshot_at(table.id, version=at, timestamp=ts)
    if ref is not None and ref != MAIN_REF:
        current = _at_ref(data, f"{schema}.{name}", current, ref, at.version)
    files = () if current is None else current.files
    specs = data.iceberg.spec_fields(current.metadata) if checked and current else {}
    kept = tuple(
        f for f in files if all(may_match(p, c, f, specs.get(f.spec_id, ())) for p, c in checked)
    )
    return ScanPlan(table, kept, len(files), current, at.version, tuple(filters))


def _at_ref(
    data: TableData, full: str, snapshot: DataSnapshot | None, ref: str, version: int
) -> DataSnapshot:
    """``snapshot`` with the files of the Iceberg snapshot its branch or tag
    ``ref`` points at (refs live in its ``metadata.json``)."""
    target = None if snapshot is None else data.iceberg.metadata(snapshot.metadata).refs.get(ref)
    if snapshot is None or target is None:
        raise NotFoundError(
            f"Table '{full}' has no branch or tag '{ref}' at catalog version {version}",
            kind="ref",
            table=full,
            ref=ref,
            version=version,
        )
    files = data.iceberg.files(snapshot.metadata, target.snapshot_id)
    return replace(snapshot, files=files)


# --------------------------------------------------------------------------- reading


def read_file(
    plan_table: Table,
    file: DataFile,
    warehouse: Warehouse,
    *,
    columns: Sequence[str] | None = None,
    batch_rows: int = BATCH_ROWS,
    deleted: np.ndarray | None = None,
) -> Iterator[pa.RecordBatch]:
    """The file's rows as ``output_schema(plan_table, columns)``: columns
    resolved by id (a column added later reads as its constant default or
    NULL, a dropped one is gone, a renamed one has its new name, a widened one
    is cast), in catalog order, every field nullable, without the rows its
    position delete files delete (``DataFile.deletes``; ``deleted``, their
    positions, when read already: a cached copy has another path than the
    one they name). ``CorruptDataError``
    naming file and table when its size, checksum, Parquet structure or row
    count is not what its commit recorded: never fewer or other rows."""
    check.instance(plan_table, Table, "Parameter 'plan_table' of read_file")
    check.instance(file, DataFile, "Parameter 'file' of read_file")
    check.instance(warehouse, Warehouse, "Parameter 'warehouse' of read_file")
    check.integer(batch_rows, "Parameter 'batch_rows' of read_file", lo=1)
    if deleted is not None and not (
        isinstance(deleted, np.ndarray) and deleted.ndim == 1 and deleted.dtype.kind in "iu"
    ):
        raise check.fail(
            "Parameter 'deleted' of read_file", "a 1-D numpy array of row positions", deleted
        )
    wanted = project(plan_table, columns)
    schema = output_schema(plan_table, columns)
    if deleted is None:
        deleted = deleted_positions(file, warehouse, plan_table.name)
    else:
        deleted = np.unique(deleted)  # sorted, as applying them needs
    with _verified(plan_table, file, warehouse) as source:
        try:
            parquet = pq.ParquetFile(source)
            by_id = {
                int(f.metadata[FIELD_ID]): f.name
                for f in parquet.schema_arrow
                if f.metadata and FIELD_ID in f.metadata
            }
            names = [by_id[c.id] for c in wanted if c.id in by_id]
            batches = parquet.iter_batches(batch_size=batch_rows, columns=names)
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise _damaged(plan_table, file, f"not readable Parquet: {exc}") from exc
        rows = 0
        while True:
            try:
                batch = next(batches)
            except StopIteration:
                break
            except (pa.ArrowException, OSError, ValueError) as exc:
                raise _damaged(plan_table, file, f"not readable Parquet: {exc}") from exc
            batch, rows = apply_deletes(batch, rows, deleted), rows + batch.num_rows
            if not wanted:
                yield batch
                continue
            arrays = []
            for column in wanted:
                if column.id in by_id:
                    arr = batch.column(by_id[column.id])
                    target = arrow_type(column)
                    # Nested fields go by id whatever the names: equal types
                    # may hold two same-typed fields swapped by renames.
                    same = arr.type == target and not column.type.nested
                    arrays.append(arr if same else _cast(arr, target, column, file, plan_table))
                else:
                    arrays.append(column_fill(column, batch.num_rows, generate=False))
            yield pa.RecordBatch.from_arrays(arrays, schema=schema)
        if rows != file.rows:
            raise _damaged(
                plan_table, file, f"it holds {rows} rows, its commit recorded {file.rows}"
            )


def _damaged(table: Table, file: DataFile, problem: str) -> CorruptDataError:
    return CorruptDataError(
        f"Data file '{file.path}' of table '{table.name}' is damaged: {problem}",
        path=file.path,
        table=table.name,
    )


def _verified(table: Table, file: DataFile, warehouse: Warehouse) -> pa.NativeFile:
    """The file opened for reading once its size (when known) and checksum
    (when its name records one) are what its commit recorded: the whole file
    is read and checked before the Parquet reader sees a byte, since a flip in
    a page header or the footer is as silent as one in the values. Anything
    but a regular file is refused before it is opened: opening a FIFO waits
    for a writer that never comes."""
    try:
        kind = warehouse.fs.get_file_info(file.path).type
        if kind == pafs.FileType.NotFound:
            raise FileNotFoundError(file.path)
        if kind != pafs.FileType.File:
            raise _damaged(table, file, "it is not a regular file")
        source = warehouse.fs.open_input_file(file.path)
    except FileNotFoundError as exc:
        raise CatalogError(
            f"Data file '{file.path}' of table '{table.name}' is missing from the warehouse",
            path=file.path,
            table=table.name,
        ) from exc
    except (OSError, pa.ArrowException) as exc:
        raise CatalogError(
            f"Data file '{file.path}' of table '{table.name}' cannot be opened: {exc}",
            path=file.path,
            table=table.name,
        ) from exc
    try:
        size = source.size()
        if file.size > 0 and size != file.size:
            raise _damaged(table, file, f"it holds {size} bytes, its commit recorded {file.size}")
        if file.checksum is None:
            return source
        content = source.read_buffer()
    except OSError as exc:
        source.close()
        raise _damaged(table, file, f"it cannot be read: {exc}") from exc
    except BaseException:
        source.close()
        raise
    source.close()
    found = zlib.crc32(content)
    if found != file.checksum:
        raise _damaged(
            table,
            file,
            f"its CRC-32 is {found:08x}, its commit recorded {file.checksum:08x}",
        )
    return pa.BufferReader(content)


def _cast(
    arr: pa.Array, target: pa.DataType, column: Column, file: DataFile, table: Table
) -> pa.Array:
    """A file's column in the type the catalog gives it at the read's version.
    Files written against a newer schema than the read's (a widened column
    read at a version before the widen) may not fit: say so, never a raw
    pyarrow error."""
    try:
        if pa.types.is_time(arr.type) and pa.types.is_time(target):
            # A TIME file written in nanoseconds before TIME became Iceberg's
            # microseconds: floored, as Iceberg readers do.
            return arr.cast(target, safe=False)
        if column.type.nested:
            return by_field_id(arr, column)
        return arr.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise DataError(
            f"Data file '{file.path}' holds column '{column.name}' of table '{table.name}' as "
            f"{arr.type}, which does not fit its type {target} at the version read: {exc}",
            path=file.path,
            table=table.name,
            column=column.name,
        ) from exc


def _expression(predicate: Predicate) -> pc.Expression:
    ref = pc.field(predicate.column)
    op, value = predicate.op, predicate.value
    if op == "is_null":
        return ref.is_null()
    if op == "is_not_null":
        return ref.is_valid()
    if op == "in":
        members = value if isinstance(value, list | tuple | set | frozenset) else ()
        kept = [v for v in members if v is not None]
        return ref.isin(kept) if kept else pc.scalar(False)
    if value is None:
        return pc.scalar(False)
    operators = {
        "=": ref.__eq__,
        "<": ref.__lt__,
        "<=": ref.__le__,
        ">": ref.__gt__,
        ">=": ref.__ge__,
    }
    result: pc.Expression = operators[op](pc.scalar(value))
    return result


def read_table(
    cat: Catalog,
    name: str,
    schema: str = DEFAULT_SCHEMA,
    *,
    version: int | None = None,
    timestamp: int | dt.datetime | None = None,
    filters: Sequence[Predicate] = (),
    columns: Sequence[str] | None = None,
    ref: str | None = None,
) -> pa.Table:
    """Plan, read every kept file and keep the rows matching every predicate;
    ``ref`` reads a branch or tag by name (default: ``main``)."""
    check.instance(cat, Catalog, "Parameter 'cat' of read_table")
    data = TableData.for_catalog(cat)
    plan = plan_scan(
        cat, data, name, schema, version=version, timestamp=timestamp, filters=filters, ref=ref
    )
    wanted = [c.name for c in project(plan.table, columns)]
    needed = wanted if columns is None else sorted({*wanted, *(p.column for p in filters)})
    read_schema = output_schema(plan.table, needed)
    batches = [
        batch
        for f in plan.files
        for batch in read_file(plan.table, f, data.warehouse, columns=needed)
    ]
    result = pa.Table.from_batches(batches, schema=read_schema)
    if filters:
        condition = _expression(filters[0])
        for predicate in filters[1:]:
            condition = condition & _expression(predicate)
        try:
            result = result.filter(condition)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
            raise ValidationError(
                f"The filters on table '{plan.table.name}' cannot be evaluated: {exc}",
                table=plan.table.name,
            ) from exc
    return result.select(wanted)
