"""What a data commit checks of the files it publishes, before it writes
anything: each lies in its own write's directory, exists with the size and
checksum recorded, and sits in the tablet its keys belong to. Pure
functions of the commit's shape, its files and the warehouse."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.fs as pafs

from almanac.data.arrow import arrow_type
from almanac.data.files import DataFile, checksum_in_name
from almanac.data.iceberg_schema import CommitShape
from almanac.data.tablets import partition_column, tablets_of
from almanac.data.warehouse import Warehouse
from almanac.errors import ValidationError, WriteStateError

__all__ = ["check_files_belong", "check_files_exist", "check_tablets", "files_arg", "unique"]


def check_tablets(shape: CommitShape, files: tuple[DataFile, ...]) -> None:
    """Each file's tablet is a bucket of the shape's ``bucket[N]``, and the
    smallest and largest partition keys it holds (its statistics) fall in
    that bucket: files bucketed for another tablet count would be skipped
    by every Iceberg reader's key filter."""
    column = partition_column(shape.table)
    found = _bound_tablets(shape, files) if column is not None else {}
    for f in files:
        if not 0 <= f.partition < shape.partitions:
            raise WriteStateError(
                f"Data file '{f.path}' is in tablet {f.partition}, but table "
                f"'{shape.table.name}' has {shape.partitions} tablets",
                path=f.path,
            )
        if column is not None and f.path in found:
            _refuse_misplaced(shape, column.name, f, found[f.path])


def _bound_tablets(shape: CommitShape, files: tuple[DataFile, ...]) -> dict[str, list[int]]:
    """The tablets of each file's smallest and largest partition key, in
    one bucket computation for all files (a commit may carry thousands);
    bounds that cannot be rebuilt prove nothing and are left out."""
    column = partition_column(shape.table)
    assert column is not None
    kind = arrow_type(column)
    checked: list[DataFile] = []
    bounds: list[object] = []
    for f in files:
        stats = f.stats.get(column.id)
        if stats is None or stats.min is None or stats.max is None:
            continue
        try:
            pa.array([stats.min, stats.max], kind)
        except (pa.ArrowException, TypeError, ValueError, OverflowError):
            continue
        checked.append(f)
        bounds += [stats.min, stats.max]
    if not checked:
        return {}
    keys = pa.table({column.name: pa.array(bounds, kind)})
    tablets = tablets_of(keys, shape.table, shape.partitions).tolist()
    return {f.path: tablets[2 * i : 2 * i + 2] for i, f in enumerate(checked)}


def _refuse_misplaced(shape: CommitShape, column: str, file: DataFile, tablets: list[int]) -> None:
    found = set(tablets)
    if found != {file.partition}:
        raise WriteStateError(
            f"Data file '{file.path}' holds keys of column '{column}' that belong "
            f"to tablets {sorted(found)} of the {shape.partitions} of table "
            f"'{shape.table.name}', not to its tablet {file.partition}; it was written "
            "for another tablet count",
            path=file.path,
        )


def check_files_belong(
    warehouse: Warehouse, table_id: int, write_id: str, write_dir: str, files: tuple[DataFile, ...]
) -> None:
    """A write publishes only files in its own directory of the table: a
    file of another write would vanish when that write aborts, one of
    another table when that table is purged."""
    expected = warehouse.write_dir(table_id, write_id)
    if write_dir != expected:
        raise WriteStateError(
            f"Write {write_id} was staged in '{write_dir}', not in the directory of "
            f"table {table_id} ('{expected}'); it cannot commit to that table",
            write_id=write_id,
            table_id=table_id,
        )
    for f in files:
        inside = f.path.startswith(f"{write_dir}/")
        if not inside or "/../" in f.path or "/./" in f.path:
            raise WriteStateError(
                f"Data file '{f.path}' is not in the directory of write {write_id} "
                f"('{write_dir}'); a write commits only the files it wrote",
                write_id=write_id,
                path=f.path,
            )


def check_files_exist(warehouse: Warehouse, write_id: str, files: tuple[DataFile, ...]) -> None:
    """A write whose files are gone (collected, deleted by hand) must not
    publish a snapshot that every later read would fail on; nor one whose
    recorded size or checksum is not the file's (readers verify both)."""
    if not files:
        return
    infos = warehouse.fs.get_file_info([f.path for f in files])
    for f, info in zip(files, infos, strict=True):
        if info.type != pafs.FileType.File:
            raise WriteStateError(
                f"Data file '{info.path}' of write {write_id} is missing from the "
                "warehouse; the write cannot commit",
                write_id=write_id,
                path=info.path,
            )
        if info.size != f.size or f.checksum != checksum_in_name(f.path):
            raise ValidationError(
                f"Data file '{f.path}' of write {write_id} is recorded with {f.size} bytes "
                f"and checksum {f.checksum}, but holds {info.size} bytes and its name "
                f"records checksum {checksum_in_name(f.path)}; the write cannot commit",
                write_id=write_id,
                path=f.path,
            )


def files_arg(files: object, where: str, name: str = "files") -> tuple[DataFile, ...]:
    """``files`` as a tuple of ``DataFile``, or a ``ValidationError``."""
    if isinstance(files, str | bytes) or not isinstance(files, Sequence):
        raise ValidationError(
            f"Parameter '{name}' of {where} must be a sequence of DataFile, got "
            f"{type(files).__name__}"
        )
    for f in files:
        if not isinstance(f, DataFile):
            raise ValidationError(f"Not a DataFile: {f!r}")
    return tuple(files)


def unique(files: tuple[DataFile, ...]) -> tuple[DataFile, ...]:
    seen: set[str] = set()
    out: list[DataFile] = []
    for f in files:
        if f.path not in seen:
            seen.add(f.path)
            out.append(f)
    return tuple(out)
