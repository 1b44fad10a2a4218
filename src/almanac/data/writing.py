"""One-call writes for Python callers, tests and the CLI: conform, stage,
write files, commit. Spark runs the same steps across its tasks."""

from __future__ import annotations

import pyarrow as pa

from almanac import _check as check
from almanac.catalog import Catalog, ExecuteResult
from almanac.catalog_version import DEFAULT_SCHEMA, CatalogVersion
from almanac.commands import CreateTable
from almanac.commands.preview import preview
from almanac.data.arrow import check_rows, conform
from almanac.data.commits import CommitShape, TableData
from almanac.data.files import write_files
from almanac.data.snapshots import DataSnapshot
from almanac.data.tablets import table_partitions
from almanac.data.warehouse import new_write_id
from almanac.descriptors import Table
from almanac.errors import ConflictError, NotFoundError
from almanac.metastore import Compare, Op

__all__ = ["STAGE_TTL_S", "create_table_as", "write_table"]

STAGE_TTL_S = 600.0


def _table(snapshot: CatalogVersion, name: str, schema: str) -> Table:
    table = snapshot.table(name, schema)
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
    snapshot = cat.catalog()
    table = _table(snapshot, name, schema)
    rows = conform(data, table)
    shape = CommitShape.of(snapshot, table)
    write_id = new_write_id()
    write_dir = store.warehouse.write_dir(table.id, write_id)
    lease = store.stage(write_id, write_dir, ttl_s=STAGE_TTL_S)
    try:
        files = write_files(store.warehouse, table, shape.partitions, rows, write_dir)
        result = store.commit(shape, write_id, files, operation=operation)
    except BaseException:
        store.abort(write_id, write_dir)
        raise
    finally:
        store.release(lease)
    return result


def create_table_as(
    cat: Catalog, create: CreateTable, data: pa.Table | pa.RecordBatch
) -> tuple[ExecuteResult, DataSnapshot | None]:
    """CREATE TABLE AS SELECT: the table and its first data snapshot appear in
    one metastore transaction, or neither does. With ``if_not_exists`` on an
    existing table nothing is written and the snapshot is None."""
    check.instance(cat, Catalog, "Parameter 'cat' of create_table_as")
    check.instance(create, CreateTable, "Parameter 'create' of create_table_as")
    check_rows(data, "Parameter 'data' of create_table_as")
    store = TableData.for_catalog(cat)
    base = cat.catalog()
    planned = preview(base, [create])
    if not planned.entries:
        return cat.execute([create]), None
    working = planned.catalog
    planned_table = _table(working, create.name, create.schema)
    partitions = table_partitions(working, planned_table)
    rows = conform(data, planned_table)
    write_id = new_write_id()
    write_dir = store.warehouse.write_dir(planned_table.id, write_id)
    lease = store.stage(write_id, write_dir, ttl_s=STAGE_TTL_S)
    made: list[DataSnapshot] = []

    def attach(_base: CatalogVersion, new: CatalogVersion) -> tuple[list[Compare], list[Op]]:
        table = _table(new, create.name, create.schema)
        if (
            table.id != planned_table.id
            or table.columns != planned_table.columns
            or table_partitions(new, table) != partitions
        ):
            raise ConflictError(
                f"Table '{create.schema}.{create.name}' changed shape while its data was "
                "written; run the statement again",
                attempts=len(made) + 1,
            )
        compares, ops, snapshot = store.commit_ops(
            CommitShape.of(new, table), write_id, files, operation="overwrite", parent=None
        )
        made.append(snapshot)
        return compares, ops

    try:
        files = write_files(store.warehouse, planned_table, partitions, rows, write_dir)
        result = cat.execute([create], attach=attach)
    except BaseException:
        store.abort(write_id, write_dir)
        for snapshot in made:
            store.discard(snapshot)
        raise
    finally:
        store.release(lease)
    if not made:
        store.abort(write_id, write_dir)
        return result, None
    for stale in made[:-1]:
        store.discard(stale)
    store.published(made[-1])
    return result, made[-1]
