"""Writing Parquet data files and the statistics that let scans skip them.

Each file Almanac writes carries the CRC-32 of its bytes in its name
(``part-<uuid>.crc32-<8 hex>.parquet``): the name is what the Iceberg
manifests record of a file, and every engine that rewrites a manifest keeps
it, so the checksum travels with the file's entry without a field Iceberg
lacks. Readers check it (and the size, which Iceberg records for every file)
before parsing a byte; files named otherwise (Spark's, Iceberg clients')
have their size checked only."""

from __future__ import annotations

import itertools
import math
import re
import uuid
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from almanac import _check as check
from almanac.data.arrow import FIELD_ID, arrow_schema
from almanac.data.iceberg_schema import PARTITION_FIELD_ID, spec_fields
from almanac.data.tablets import file_tablet, tablet_column, tablet_position, tablets_of
from almanac.data.transforms import (
    internal_value,
    source_column,
    source_values,
    transform_values,
)
from almanac.data.warehouse import Warehouse
from almanac.errors import CatalogError, DataError
from almanac.model.descriptors import Table
from almanac.model.partitioning import PartitionField

__all__ = [
    "ColumnStats",
    "DataFile",
    "DeleteFile",
    "checksum_in_name",
    "column_stats",
    "sort_rows",
    "write_files",
]

DEFAULT_MAX_ROWS_PER_FILE = 1_000_000
MAX_STAT_BYTES = 256
"""Longer text or byte bounds are dropped (unknown) rather than stored."""
_CHECKSUM_NAME = re.compile(r"\.crc32-([0-9a-f]{8})\.parquet\Z")


@dataclass(frozen=True, slots=True)
class ColumnStats:
    """Bounds of one column in one file. ``min``/``max`` are Python values of
    the column's type, ``None`` when unknown (all NULL, no order, too long to
    keep, or nanosecond times); a float column holding NaN has ``max`` NaN,
    since engines such as Spark sort NaN above every number."""

    min: object
    max: object
    null_count: int


@dataclass(frozen=True, slots=True)
class DeleteFile:
    """An Iceberg position delete file (merge-on-read, written by engines such
    as DuckDB and Spark): its rows ``(file_path, pos)`` delete row ``pos`` of
    data file ``file_path``. ``almanac.data.deletes`` reads and applies it."""

    path: str
    rows: int
    size: int


@dataclass(frozen=True, slots=True)
class DataFile:
    """One Parquet file of a table. ``partition`` is the table's bucket the
    file belongs to (the ``Tablet.partition`` that serves it, below N, the
    zone's partitions); ``stats`` is keyed by column id;
    ``checksum`` is the CRC-32 of its bytes, None when its name carries none
    (see the module). ``spec_id`` is the partition spec it was written
    under and ``partition_values`` its values for that spec's Iceberg fields
    (the hidden tablet field first in a bucketed table; see ``spec_fields``), in
    Iceberg's representation (``almanac.data.transforms``). Picklable: Spark
    ships these from write tasks to the commit. ``deletes`` are the position
    delete files that may delete some of its ``rows`` (planned from the
    snapshot it was read from; none for a file being written)."""

    path: str
    rows: int
    size: int
    partition: int
    stats: Mapping[int, ColumnStats] = field(default_factory=dict, hash=False)
    checksum: int | None = None
    spec_id: int = 0
    partition_values: tuple[object, ...] = ()
    deletes: tuple[DeleteFile, ...] = ()


def checksum_in_name(path: str) -> int | None:
    """The CRC-32 a data file's name records, None when it records none."""
    found = _CHECKSUM_NAME.search(path)
    return None if found is None else int(found.group(1), 16)


def _bounded(value: object) -> object:
    if isinstance(value, str | bytes) and len(value) > MAX_STAT_BYTES:
        return None
    return value


def column_stats(arr: pa.ChunkedArray | pa.Array) -> ColumnStats:
    """Min, max and null count of one column's values."""
    nulls = arr.null_count
    kind = arr.type
    if nulls == len(arr) or (pa.types.is_time64(kind) and kind.unit == "ns"):
        return ColumnStats(None, None, nulls)
    try:
        bounds = pc.min_max(arr)
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid):
        return ColumnStats(None, None, nulls)
    low, high = bounds["min"].as_py(), bounds["max"].as_py()
    if pa.types.is_floating(kind) and pc.any(pc.is_nan(arr)).as_py():
        high = math.nan
    return ColumnStats(_bounded(low), _bounded(high), nulls)


def _write_one(
    warehouse: Warehouse,
    part: pa.Table,
    write_dir: str,
    partitions: int,
    layout: _Layout,
    key: tuple[object, ...],
    tablet: int | None,
) -> DataFile:
    """One file in a ``tablet=<t>`` directory below ``write_dir``: t is the
    file's bucket when its spec has the tablet field, else ``tablet`` when
    given, else the hash of its name (``file_tablet``)."""
    sink = pa.BufferOutputStream()
    pq.write_table(part, sink, compression="zstd")
    payload = sink.getvalue()
    checksum = zlib.crc32(payload)
    name = f"part-{uuid.uuid4().hex}.crc32-{checksum:08x}.parquet"
    if layout.tablet_at is not None:
        t = file_tablet(name, partitions, key[layout.tablet_at])
    else:
        t = file_tablet(name, partitions) if tablet is None else tablet
    directory = f"{write_dir}/tablet={t}"
    _make_dir(warehouse, directory)
    path = f"{directory}/{name}"
    try:
        with warehouse.fs.open_output_stream(path) as out:
            out.write(payload)
    except (OSError, pa.ArrowInvalid) as exc:
        raise CatalogError(f"Cannot write data file '{path}': {exc}", path=path) from exc
    stats = {
        int(f.metadata[FIELD_ID]): column_stats(part.column(i)) for i, f in enumerate(part.schema)
    }
    return DataFile(
        path=path,
        rows=part.num_rows,
        size=payload.size,
        partition=t,
        stats=stats,
        checksum=checksum,
        spec_id=layout.spec_id,
        partition_values=key if layout.fields else (),
    )


@dataclass(frozen=True, slots=True)
class _Layout:
    """How new files of a table are laid out: the default spec's Iceberg
    fields (``spec_fields``) and where among them the tablet is."""

    spec_id: int
    fields: tuple[PartitionField, ...]
    tablet_at: int | None

    @staticmethod
    def of(table: Table, partitions: int) -> _Layout:
        fields = spec_fields(table, partitions)[table.default_spec_id]
        for f in fields:
            source = source_column(table, f.source_id)[1]
            if f.transform == "void" and not source.nullable:
                raise DataError(
                    f"Table '{table.name}': partition field '{f.name}' is void on NOT NULL "
                    f"column '{source.name}', and the Iceberg manifest writer records a NOT NULL "
                    "column's partition values as required, so its NULL cannot be written; drop "
                    "the field from the spec",
                    table=table.name,
                    field=f.name,
                    rule="void-not-null",
                )
        column = tablet_column(table)
        at = tablet_position(
            [(f.source_id, f.transform) for f in fields],
            None if column is None else column.id,
            partitions,
        )
        return _Layout(table.default_spec_id, fields, at)


def _keys(table: Table, partitions: int, layout: _Layout, data: pa.Table) -> list[pa.Array]:
    """Per row, the values files are split by: the tablet of a bucketed
    table (also when its Iceberg spec cannot hold it, see ``tablets_of``),
    then every field of the default spec other than the hidden one."""
    keys: list[pa.Array] = []
    fields = layout.fields
    if table.bucketed:
        keys.append(pa.array(tablets_of(data, table, partitions), pa.int32()))
        if fields and fields[0].field_id == PARTITION_FIELD_ID:
            fields = fields[1:]
    for f in fields:
        column, values = source_values(table, data, f.source_id)
        keys.append(transform_values(f.transform, column, values))
    return keys


def sort_rows(table: Table, data: pa.Table) -> pa.Table:
    """The rows in the table's default sort order (Iceberg's: each field's
    transform of its column, ascending or descending, NULLs first or last);
    unchanged when the order is unsorted."""
    order = table.sort_order
    if not order.fields or data.num_rows < 2:
        return data
    arrays, keys = [], []
    for i, f in enumerate(order.fields):
        column, values = source_values(table, data, f.source_id)
        arrays.append(transform_values(f.transform, column, values))
        keys.append(
            (
                f"k{i}",
                "descending" if f.descending else "ascending",
                "at_start" if f.nulls_first else "at_end",
            )
        )
    try:
        indices = pc.sort_indices(pa.table(arrays, names=[k[0] for k in keys]), sort_keys=keys)
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise DataError(
            f"Table '{table.name}' cannot be sorted by its sort order {order.order_id}: {exc}",
            table=table.name,
            rule="sort-order",
        ) from exc
    return data.take(indices)


def _groups(keys: list[pa.Array], rows: int) -> tuple[pa.Array | None, list[_Group]]:
    """The rows' order grouped by key (None when no key: one group in the
    given order) and each group's key and place in that order. A stable
    sort on the keys keeps each group's rows in the order they came, so a
    sorted write stays sorted per file."""
    if not keys:
        return None, [_Group((), 0, rows)]
    names = [f"k{i}" for i in range(len(keys))]
    table = pa.table(keys, names=names)
    order = pc.sort_indices(table, sort_keys=[(n, "ascending") for n in names])
    ordered = [c.combine_chunks() for c in table.take(order).columns]
    starts = np.zeros(rows, dtype=bool)
    starts[0] = True
    for column in ordered:
        after, before = column.slice(1), column.slice(0, rows - 1)
        differs = pc.or_(
            pc.fill_null(pc.not_equal(after, before), False),
            pc.not_equal(pc.is_valid(after), pc.is_valid(before)),
        )
        starts[1:] |= np.asarray(differs.to_numpy(zero_copy_only=False), dtype=bool)
    bounds = [*np.flatnonzero(starts).tolist(), rows]
    return order, [
        _Group(tuple(internal_value(c[lo].as_py()) for c in ordered), lo, hi)
        for lo, hi in itertools.pairwise(bounds)
    ]


@dataclass(frozen=True, slots=True)
class _Group:
    """Rows ``begin`` to ``end`` (exclusive) of a grouped order share ``key``."""

    key: tuple[object, ...]
    begin: int
    end: int


def _make_dir(warehouse: Warehouse, directory: str) -> None:
    try:
        warehouse.fs.create_dir(directory, recursive=True)
    except (OSError, pa.ArrowInvalid) as exc:  # ArrowInvalid: not a path of this fs
        raise CatalogError(f"Cannot create '{directory}': {exc}", path=directory) from exc


def write_files(
    warehouse: Warehouse,
    table: Table,
    partitions: int,
    data: pa.Table,
    write_dir: str,
    *,
    max_rows_per_file: int = DEFAULT_MAX_ROWS_PER_FILE,
    tablet: int | None = None,
) -> list[DataFile]:
    """Write already conformed rows below ``write_dir``
    (``<write_dir>/tablet=<t>/part-<uuid>.crc32-<crc>.parquet``), with field
    ids, per-column statistics and the file's checksum in its name.

    Rows are split by the values of the table's default partition spec (and
    by tablet in a bucketed table) into as few files per partition as
    ``max_rows_per_file`` allows, each file sorted by the default sort order
    and recording its spec id and partition values. A file's tablet is its
    bucket when the spec buckets the tablet column into ``partitions``;
    otherwise ``tablet`` when given (a compaction's merged file stays in the
    tablet whose files it merges), else the one its name hashes to
    (``file_tablet``). The path records the tablet either way. Nothing is
    visible until a commit names them."""
    what = "Parameter '{}' of write_files"
    check.instance(warehouse, Warehouse, what.format("warehouse"))
    check.instance(table, Table, what.format("table"))
    check.integer(partitions, what.format("partitions"), lo=1)
    check.instance(data, pa.Table, what.format("data"), "a pyarrow Table")
    check.string(write_dir, what.format("write_dir"), nonblank=True)
    check.integer(max_rows_per_file, what.format("max_rows_per_file"), lo=1)
    if tablet is not None:
        check.integer(tablet, what.format("tablet"), lo=0, hi=partitions - 1)
    expected = arrow_schema(table)
    if not data.schema.equals(expected, check_metadata=True):
        raise DataError(
            f"Data for table '{table.name}' does not have the table's schema; pass it through "
            f"conform() first (got {data.schema}, expected {expected})",
            table=table.name,
        )
    if data.num_rows == 0:
        return []
    layout = _Layout.of(table, partitions)
    rows = sort_rows(table, data)
    order, groups = _groups(_keys(table, partitions, layout, rows), rows.num_rows)
    # One gather for all groups, then zero-copy slices per file.
    grouped = rows if order is None or len(groups) == 1 else rows.take(order)
    hidden = bool(layout.fields) and layout.fields[0].field_id == PARTITION_FIELD_ID
    files: list[DataFile] = []
    for group in groups:
        key = group.key
        if table.bucketed:  # the tablet leads the key; it is a partition value when hidden
            tablet = int(key[0])  # type: ignore[call-overload]
            key = key if hidden else key[1:]
        for start in range(group.begin, group.end, max_rows_per_file):
            chunk = grouped.slice(start, min(max_rows_per_file, group.end - start))
            files.append(_write_one(warehouse, chunk, write_dir, partitions, layout, key, tablet))
    return files
