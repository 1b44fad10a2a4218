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
from almanac.data.tablets import file_tablet, tablets_of
from almanac.data.warehouse import Warehouse
from almanac.descriptors import Table
from almanac.errors import CatalogError, DataError

__all__ = ["ColumnStats", "DataFile", "checksum_in_name", "column_stats", "write_files"]

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
class DataFile:
    """One Parquet file of a table. ``stats`` is keyed by column id;
    ``checksum`` is the CRC-32 of its bytes, None when its name carries none
    (see the module). Picklable: Spark ships these from write tasks to the commit."""

    path: str
    rows: int
    size: int
    tablet: int
    stats: Mapping[int, ColumnStats] = field(default_factory=dict, hash=False)
    checksum: int | None = None


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
    table: Table,
    part: pa.Table,
    directory: str,
    partitions: int = 0,
    tablet: int | None = None,
) -> DataFile:
    """One file in ``directory``; with ``partitions`` (an unpartitioned
    table) in a ``tablet=<t>`` directory below it, t being ``tablet`` or
    else following from the file's name."""
    sink = pa.BufferOutputStream()
    pq.write_table(part, sink, compression="zstd")
    payload = sink.getvalue()
    checksum = zlib.crc32(payload)
    name = f"part-{uuid.uuid4().hex}.crc32-{checksum:08x}.parquet"
    if partitions:
        t = file_tablet(name, partitions) if tablet is None else tablet
        directory = f"{directory}/tablet={t}"
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
    tablet = int(path.rsplit("/tablet=", 1)[1].split("/", 1)[0])
    return DataFile(
        path=path,
        rows=part.num_rows,
        size=payload.size,
        tablet=tablet,
        stats=stats,
        checksum=checksum,
    )


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
    """Write already conformed rows below ``write_dir``, one or more files per
    tablet (``<write_dir>/tablet=<t>/part-<uuid>.crc32-<crc>.parquet``), with
    field ids, per-column statistics and the file's checksum in its name.
    An unpartitioned table's rows go to as few files as ``max_rows_per_file``
    allows, each in the tablet its name hashes to (``file_tablet``), or in
    ``tablet`` when given: a compaction's merged file stays in the tablet
    whose files it merges. The path records the tablet either way. Nothing
    is visible until a commit names them."""
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
    if not table.bucketed:
        return [
            _write_one(
                warehouse,
                table,
                data.slice(start, max_rows_per_file),
                write_dir,
                partitions,
                tablet,
            )
            for start in range(0, data.num_rows, max_rows_per_file)
        ]
    tablets = tablets_of(data, table, partitions)
    order = np.argsort(tablets, kind="stable")
    sorted_tablets = tablets[order]
    # One gather for all tablets, then zero-copy slices per tablet.
    grouped = data if bool(np.all(order[1:] > order[:-1])) else data.take(pa.array(order))
    bounds = [0, *(np.flatnonzero(np.diff(sorted_tablets)) + 1).tolist(), len(order)]
    files: list[DataFile] = []
    for begin, end in itertools.pairwise(bounds):
        tablet = int(sorted_tablets[begin])
        directory = f"{write_dir}/tablet={tablet}"
        _make_dir(warehouse, directory)
        for start in range(begin, end, max_rows_per_file):
            part = grouped.slice(start, min(max_rows_per_file, end - start))
            files.append(_write_one(warehouse, table, part, directory))
    return files
