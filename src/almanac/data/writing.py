"""Writes: one-call appends and overwrites for Python callers, and the one
CREATE/REPLACE TABLE AS SELECT core that the Python path and Spark share
(Spark supplies only the step that writes files)."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Sequence

import pyarrow as pa

from almanac import _check as check
from almanac.commands import Command, CreateTable
from almanac.commands.preview import preview
from almanac.data.arrow import check_rows
from almanac.data.commits import CommitShape, TableData
from almanac.data.conform import conform
from almanac.data.files import DataFile, write_files
from almanac.data.snapshots import DataSnapshot
from almanac.data.tablets import table_partitions
from almanac.data.warehouse import new_write_id
from almanac.errors import CatalogError, ConflictError, NotFoundError
from almanac.metastore import Compare, Op
from almanac.model.catalog_version import DEFAULT_SCHEMA, CatalogVersion
from almanac.model.descriptors import Table
from almanac.node.catalog import Catalog
from almanac.node.catalog_types import ExecuteResult, HookWork

__all__ = [
    "STAGE_TTL_S",
    "Guard",
    "WriteStep",
    "commit_table_as",
    "create_table_as",
    "write_table",
]

STAGE_TTL_S = 600.0


def _table(version: CatalogVersion, name: str, schema: str) -> Table:
    table = version.table(name, schema)
    if table is None:
        raise NotFoundError(
            f"Table '{schema}.{name}' does not exist", kind="table", name=f"{schema}.{name}"
        )
    return table


def write_table(
    cat: Catalog,
    name: str,
    data: pa.Table | pa.RecordBatch,
    schema: str = DEFAULT_SCHEMA,
    *,
    operation: str = "append",
) -> DataSnapshot:
    """Append (or overwrite with) ``data`` as one data commit against the
    latest catalog version; any failure before the commit aborts the write."""
    check.instance(cat, Catalog, "Parameter 'cat' of write_table")
    check.string(name, "Parameter 'name' of write_table", nonblank=True)
    check_rows(data, "Parameter 'data' of write_table")
    check.string(schema, "Parameter 'schema' of write_table", nonblank=True)
    check.string(operation, "Parameter 'operation' of write_table")
    store = TableData.for_catalog(cat)
    cat.catch_up()  # DDL another node finished is there "now", followed or not
    version = cat.catalog()
    table = _table(version, name, schema)
    rows = conform(data, table)
    shape = CommitShape.of(version, table)
    write_id = new_write_id()
    write_dir = store.warehouse.write_dir(table.id, write_id)
    lease = store.staging.stage(write_id, write_dir, ttl_s=STAGE_TTL_S)
    try:
        files = write_files(store.warehouse, table, shape.partitions, rows, write_dir)
        result = store.commit(shape, write_id, files, operation=operation)
    except BaseException:
        store.staging.abort(write_id, write_dir)
        raise
    finally:
        store.staging.release(lease)
    return result


WriteStep = Callable[[Table, int, str], Sequence[DataFile]]
"""``write(table, partitions, write_dir) -> files``: the one engine-specific
step of a CREATE/REPLACE TABLE AS SELECT (Arrow in this process, or a Spark
job): write the rows for ``table`` into the staged ``write_dir``."""
Guard = Callable[[], tuple[Sequence[Compare], Sequence[Op]]]


def commit_table_as(
    cat: Catalog,
    commands: Sequence[Command],
    schema: str,
    name: str,
    write: WriteStep,
    *,
    ttl_s: float = STAGE_TTL_S,
    guard: Guard | None = None,
    on_stage: Callable[[int], None] | None = None,
) -> tuple[ExecuteResult, DataSnapshot | None]:
    """The core of every CREATE/REPLACE TABLE AS SELECT: ``commands`` (a
    CreateTable, after a DropTable for a replace) and the new table's first
    data snapshot appear in one metastore transaction, or neither does.

    Validates the commands against the latest version to learn the table
    they make (ids included), stages a write for it (``on_stage`` gets the
    lease, to renew it), runs ``write``, then commits the version with the
    snapshot riding in its transaction, plus the ``guard``'s compares and
    writes (a reservation still held, say). The table must come out of the
    commit with the id and shape it was written for, else ``ConflictError``.
    When the commands change nothing (IF NOT EXISTS on an existing table),
    nothing is written and the snapshot is None."""
    data = TableData.for_catalog(cat)
    planned = preview(cat.catalog(), commands)
    if not planned.entries:
        return cat.execute(commands), None
    table = _table(planned.catalog, name, schema)
    partitions = table_partitions(planned.catalog, table)
    write_id = new_write_id()
    write_dir = data.warehouse.write_dir(table.id, write_id)
    lease = data.staging.stage(write_id, write_dir, ttl_s=ttl_s)
    made: list[DataSnapshot] = []
    files: tuple[DataFile, ...] = ()

    def attach(_base: CatalogVersion, new: CatalogVersion) -> HookWork:
        created = new.table(name, schema)
        if (
            created is None
            or created.id != table.id
            or created.columns != table.columns
            or table_partitions(new, created) != partitions
        ):
            raise ConflictError(
                f"Table '{schema}.{name}' would be created with another id or shape than its "
                "data was written for (a concurrent change); run the statement again",
                attempts=len(made) + 1,
            )
        more = guard() if guard is not None else ((), ())
        work, snapshot = data.commit_ops(
            CommitShape.of(new, created), write_id, files, operation="append", parent=None, at=new
        )
        made.append(snapshot)
        return dataclasses.replace(
            work, compares=[*work.compares, *more[0]], ops=[*work.ops, *more[1]]
        )

    try:
        if on_stage is not None:
            on_stage(lease)
        files = tuple(write(table, partitions, write_dir))
        result = cat.execute(commands, attach=attach)
    except BaseException:
        with contextlib.suppress(CatalogError):
            data.staging.abort(write_id, write_dir)
        raise
    finally:
        data.staging.release(lease)
    return result, made[-1]


def create_table_as(
    cat: Catalog, create: CreateTable, data: pa.Table | pa.RecordBatch
) -> tuple[ExecuteResult, DataSnapshot | None]:
    """CREATE TABLE AS SELECT from Arrow rows (see ``commit_table_as``)."""
    check.instance(cat, Catalog, "Parameter 'cat' of create_table_as")
    check.instance(create, CreateTable, "Parameter 'create' of create_table_as")
    check_rows(data, "Parameter 'data' of create_table_as")
    warehouse = TableData.for_catalog(cat).warehouse

    def write(table: Table, partitions: int, write_dir: str) -> list[DataFile]:
        return write_files(warehouse, table, partitions, conform(data, table), write_dir)

    return commit_table_as(cat, [create], create.schema, create.name, write)
