"""Our ``DataFile`` as an Iceberg data file and back: its spec id and
partition values as the manifest entry's, column statistics as Iceberg
bounds (serialized with the type of their time, so a widened column still
decodes old bounds)."""

from __future__ import annotations

import datetime as dt
import decimal
import struct
import uuid
from collections.abc import Mapping
from typing import Any

from pyiceberg.conversions import from_bytes, to_bytes
from pyiceberg.manifest import DataFile as IcebergFile
from pyiceberg.manifest import DataFileContent, FileFormat
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.typedef import Record as PartitionRecord
from pyiceberg.types import (
    DateType,
    DoubleType,
    FloatType,
    IcebergType,
    IntegerType,
    LongType,
    PrimitiveType,
    StringType,
    TimestampType,
    TimestamptzType,
    TimeType,
)

from almanac.data.files import ColumnStats, DataFile, checksum_in_name
from almanac.data.iceberg_schema import iceberg_type
from almanac.data.tablets import file_tablet
from almanac.data.transforms import internal_value
from almanac.errors import CatalogError
from almanac.model.descriptors import Table

__all__ = ["from_iceberg_file", "to_iceberg_file"]

_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_UTC = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


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


def _partition_values(file: DataFile, table: Table, spec: PartitionSpec) -> tuple[object, ...]:
    """The file's values for ``spec`` (the spec of its id). A file that
    records none in a spec whose only field is the hidden tablet (written
    by a writer that knows only tablets) has its tablet there."""
    if len(file.partition_values) == len(spec.fields):
        return file.partition_values
    if not file.partition_values and len(spec.fields) == 1 and spec.fields[0].field_id == 1000:
        return (file.partition,)
    raise CatalogError(
        f"Data file '{file.path}' of table '{table.name}' has "
        f"{len(file.partition_values)} partition values, but its spec {spec.spec_id} "
        f"has {len(spec.fields)} fields",
        table=table.name,
        path=file.path,
        rule="partition-values",
    )


def to_iceberg_file(file: DataFile, table: Table, spec: PartitionSpec) -> IcebergFile:
    """An Iceberg data file under ``spec`` (the spec ``file.spec_id``
    names) with the file's partition values and its statistics as bounds
    (NaN-holding float columns get no upper bound: an Iceberg bound never
    is NaN)."""
    types = {c.id: iceberg_type(c) for c in table.columns}
    lower: dict[int, bytes] = {}
    upper: dict[int, bytes] = {}
    nulls: dict[int, int] = {}
    values: dict[int, int] = {}
    for cid, stats in file.stats.items():
        kind = types.get(cid)
        if not isinstance(kind, PrimitiveType):  # absent, or nested: no bounds
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
        partition=PartitionRecord(*_partition_values(file, table, spec)),
        record_count=file.rows,
        file_size_in_bytes=file.size,
        value_counts=values,
        null_value_counts=nulls,
        lower_bounds=lower,
        upper_bounds=upper,
    )
    iceberg_file.spec_id = spec.spec_id
    return iceberg_file


def _tablet_from_path(path: str, partitions: int) -> int:
    """The tablet its ``tablet=<t>`` directory names; without one, the hash
    of its name when the table's partition count is known, else 0."""
    marker = "/tablet="
    if marker not in path:
        return file_tablet(path, partitions) if partitions else 0
    try:
        return int(path.rsplit(marker, 1)[1].split("/", 1)[0])
    except ValueError:
        return 0


def from_iceberg_file(
    iceberg_file: IcebergFile,
    types: Mapping[int, IcebergType],
    tablet_at: int | None,
    partitions: int = 0,
) -> DataFile:
    """Our view of an Iceberg data file: statistics keyed by column id, one
    entry per column the file holds (so a reader knows which columns a file
    predates), its spec id and partition values as its manifest has them.
    Its tablet is the partition value at ``tablet_at`` (the field of its
    spec that is the tablet, see ``tablet_position``), else what its path
    says (``_tablet_from_path``)."""
    lower = iceberg_file.lower_bounds or {}
    upper = iceberg_file.upper_bounds or {}
    nulls = iceberg_file.null_value_counts or {}
    ids = set(nulls) | set(iceberg_file.value_counts or {}) | set(lower) | set(upper)
    stats: dict[int, ColumnStats] = {}
    for cid in sorted(ids):
        found = types.get(cid)
        kind = found if isinstance(found, PrimitiveType) else None  # a nested one has no bounds
        low = None if kind is None or cid not in lower else _decode_bound(kind, lower[cid])
        high = None if kind is None or cid not in upper else _decode_bound(kind, upper[cid])
        stats[cid] = ColumnStats(low, high, int(nulls.get(cid, 0)))
    record = iceberg_file.partition
    partition = tuple(internal_value(record[i]) for i in range(len(record)))
    bucket = None if tablet_at is None or tablet_at >= len(partition) else partition[tablet_at]
    if isinstance(bucket, int) and bucket >= 0 and (not partitions or bucket < partitions):
        tablet = bucket
    else:
        tablet = _tablet_from_path(iceberg_file.file_path, partitions)
    return DataFile(
        path=iceberg_file.file_path,
        rows=int(iceberg_file.record_count),
        size=int(iceberg_file.file_size_in_bytes),
        partition=tablet,
        stats=stats,
        checksum=checksum_in_name(iceberg_file.file_path),
        spec_id=int(iceberg_file.spec_id or 0),
        partition_values=partition,
    )
