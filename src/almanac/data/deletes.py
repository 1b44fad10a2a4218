"""Merge-on-read deletes: Iceberg position delete files, planned onto the
data files they apply to and applied by every read.

Engines such as DuckDB and Spark (``write.delete.mode=merge-on-read``) delete
rows by committing position delete files, whose rows ``(file_path, pos)``
name the deleted rows, instead of rewriting data files. A delete file
applies to a data file (Iceberg spec, "Scan Planning") when its data
sequence number is not older than the data file's and its partition is the
data file's (or its spec is unpartitioned); planning also skips it when its
``file_path`` bounds exclude the data file. The planned files ride on
``DataFile.deletes``, so every reader that reads a ``DataFile`` (``read_file``,
tablet servers, Spark's Python source) applies them, and compaction folds
them in. Equality deletes and deletion vectors (Iceberg format v3; Almanac
tables are format v2) are not planned: a table holding one is refused.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict, defaultdict
from collections.abc import Iterable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from pyiceberg.manifest import DataFile as IcebergFile
from pyiceberg.manifest import DataFileContent, FileFormat
from pyiceberg.partitioning import PartitionSpec

from almanac.data.arrow import FIELD_ID
from almanac.data.files import DataFile, DeleteFile
from almanac.data.warehouse import Warehouse
from almanac.errors import CatalogError, CorruptDataError

__all__ = [
    "FILE_PATH_ID",
    "POS_ID",
    "apply_deletes",
    "check_delete_file",
    "deleted_positions",
    "live_rows",
    "plan_deletes",
]

FILE_PATH_ID = 2147483546
"""Field id of a position delete file's ``file_path`` column (Iceberg spec)."""
POS_ID = 2147483545
"""Field id of a position delete file's ``pos`` column (Iceberg spec)."""
_CACHE = 256
"""Parsed delete files kept (they are immutable)."""

_cache: OrderedDict[str, dict[str, np.ndarray]] = OrderedDict()
_lock = threading.Lock()


def check_delete_file(file: IcebergFile, table: str) -> CatalogError | None:
    """Why ``file`` (a delete manifest's entry) cannot be applied by Almanac,
    None when it can: only Parquet position delete files are."""
    if file.content == DataFileContent.EQUALITY_DELETES:
        return CatalogError(
            f"Table '{table}': equality delete file '{file.file_path}' cannot be applied; "
            "Almanac applies position deletes only (write position deletes, e.g. "
            "write.delete.mode=merge-on-read with position deletes, or copy-on-write)",
            table=table,
            path=file.file_path,
            rule="equality-deletes",
        )
    if file.file_format != FileFormat.PARQUET:
        return CatalogError(
            f"Table '{table}': delete file '{file.file_path}' is {file.file_format.name}; "
            "Almanac tables are Iceberg format version 2 and read Parquet position delete "
            "files only (deletion vectors need format version 3)",
            table=table,
            path=file.file_path,
            rule="delete-file-format",
        )
    return None


def _path_bounds(file: IcebergFile) -> tuple[str | None, str | None]:
    """The bounds of the ``file_path`` column, None where unknown."""
    found = []
    for bounds in (file.lower_bounds, file.upper_bounds):
        raw = (bounds or {}).get(FILE_PATH_ID)
        try:
            found.append(None if raw is None else bytes(raw).decode("utf-8"))
        except UnicodeDecodeError:
            found.append(None)
    return found[0], found[1]


_Planned = tuple[DeleteFile, int, str | None, str | None]
"""A delete file, its data sequence number and its ``file_path`` bounds."""


def plan_deletes(
    data: Sequence[tuple[DataFile, IcebergFile, int]],
    deletes: Sequence[tuple[IcebergFile, int]],
    specs: dict[int, PartitionSpec],
    table: str,
) -> list[tuple[DataFile, IcebergFile]]:
    """The data files of ``data`` (each with its data sequence number), each
    with those of ``deletes`` (each with its own) that apply to it on its
    ``deletes``; a ``CatalogError`` for a delete file Almanac cannot apply."""
    by_partition: dict[tuple[int, object], list[_Planned]] = defaultdict(list)
    everywhere: list[_Planned] = []
    for file, sequence in deletes:
        problem = check_delete_file(file, table)
        if problem is not None:
            raise problem
        low, high = _path_bounds(file)
        delete = DeleteFile(file.file_path, int(file.record_count), int(file.file_size_in_bytes))
        planned = (delete, sequence, low, high)
        spec = specs.get(file.spec_id)
        if spec is None or spec.is_unpartitioned():
            everywhere.append(planned)
        else:
            by_partition[(file.spec_id, file.partition)].append(planned)
    out: list[tuple[DataFile, IcebergFile]] = []
    for mine, theirs, sequence in data:
        found = [
            delete
            for delete, delete_sequence, low, high in (
                *by_partition.get((theirs.spec_id, theirs.partition), ()),
                *everywhere,
            )
            if delete_sequence >= sequence
            and (low is None or low <= mine.path)
            and (high is None or mine.path <= high)
        ]
        if found:
            mine = dataclasses.replace(mine, deletes=tuple(sorted(found, key=lambda d: d.path)))
        out.append((mine, theirs))
    return out


def _damaged(delete: DeleteFile, table: str, problem: str) -> CorruptDataError:
    return CorruptDataError(
        f"Delete file '{delete.path}' of table '{table}' is damaged: {problem}",
        path=delete.path,
        table=table,
    )


def _read(delete: DeleteFile, warehouse: Warehouse, table: str) -> dict[str, np.ndarray]:
    """The positions one delete file deletes, by data file path (sorted)."""
    key = f"{delete.path}\0{delete.size}"
    with _lock:
        cached = _cache.get(key)
        if cached is not None:
            _cache.move_to_end(key)
            return cached
    try:
        info = warehouse.fs.get_file_info(delete.path)
        if info.type == pafs.FileType.NotFound:
            raise CatalogError(
                f"Delete file '{delete.path}' of table '{table}' is missing from the warehouse",
                path=delete.path,
                table=table,
            )
        if info.type != pafs.FileType.File:
            raise _damaged(delete, table, "it is not a regular file")
        if delete.size > 0 and info.size != delete.size:
            raise _damaged(
                delete, table, f"it holds {info.size} bytes, its commit recorded {delete.size}"
            )
        with warehouse.fs.open_input_file(delete.path) as source:
            parquet = pq.ParquetFile(source)
            by_id = {
                int(f.metadata[FIELD_ID]): f.name
                for f in parquet.schema_arrow
                if f.metadata and FIELD_ID in f.metadata
            }
            names = [by_id.get(FILE_PATH_ID, "file_path"), by_id.get(POS_ID, "pos")]
            rows = parquet.read(columns=names)
    except CatalogError:
        raise
    except (pa.ArrowException, OSError, ValueError, KeyError) as exc:
        raise _damaged(delete, table, f"not a readable position delete file: {exc}") from exc
    if rows.num_rows != delete.rows:
        raise _damaged(
            delete, table, f"it holds {rows.num_rows} rows, its commit recorded {delete.rows}"
        )
    paths = np.asarray(rows.column(0).cast(pa.string()).to_numpy(zero_copy_only=False))
    positions = np.asarray(rows.column(1).cast(pa.int64()).to_numpy(), dtype=np.int64)
    found: dict[str, np.ndarray] = {}
    if len(paths):
        order = np.argsort(paths, kind="stable")
        paths, positions = paths[order], positions[order]
        names_at, starts = np.unique(paths, return_index=True)
        ends = [*starts[1:], len(paths)]
        for name, start, end in zip(names_at, starts, ends, strict=True):
            found[str(name)] = np.sort(positions[start:end])
    with _lock:
        _cache[key] = found
        while len(_cache) > _CACHE:
            _cache.popitem(last=False)
    return found


def deleted_positions(file: DataFile, warehouse: Warehouse, table: str) -> np.ndarray:
    """The sorted, distinct positions of ``file``'s deleted rows."""
    if not file.deletes:
        return np.empty(0, dtype=np.int64)
    parts = [_read(d, warehouse, table).get(file.path) for d in file.deletes]
    found = [p for p in parts if p is not None and len(p)]
    if not found:
        return np.empty(0, dtype=np.int64)
    positions = np.unique(np.concatenate(found))
    return positions[(positions >= 0) & (positions < file.rows)]


def live_rows(files: Iterable[DataFile], warehouse: Warehouse, table: str) -> int:
    """How many rows ``files`` hold once their deletes are applied."""
    return sum(f.rows - len(deleted_positions(f, warehouse, table)) for f in files)


def apply_deletes(batch: pa.RecordBatch, start: int, positions: np.ndarray) -> pa.RecordBatch:
    """``batch`` (the file's rows from ``start`` on) without its deleted rows."""
    if not len(positions):
        return batch
    count = batch.num_rows
    low, high = np.searchsorted(positions, [start, start + count])
    if low == high:
        return batch
    keep = np.ones(count, dtype=bool)
    keep[positions[low:high] - start] = False
    return batch.filter(pa.array(keep))
