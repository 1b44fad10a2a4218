"""Writing a DataFrame into a table: plan once, write in tasks, commit once.

``plan_write`` runs when Spark asks the source for a writer (a planning
worker on the driver): it fixes the table descriptor, checks the incoming
column types against it, picks a write id and stages the write directory
under a lease. Tasks conform their Arrow batches and write Parquet files
into that directory; nothing is visible until ``commit`` publishes them in
one data commit (idempotent by write id, so a commit retried after a crash
applies once). ``abort`` marks the write aborted and deletes its directory;
a task still writing after that only adds files to a directory the janitor
removes.

CREATE TABLE AS SELECT uses the same writer with a *staged* plan made by the
driver: the table does not exist yet, so ``commit`` only hands the file list
to the driver (a metastore key under the job's reservation lease) and the
driver publishes table and data in one catalog version.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage

from almanac.data import (
    DataFile,
    TableData,
    Warehouse,
    conform,
    new_write_id,
    table_partitions,
    write_files,
)
from almanac.data.commits import CommitShape
from almanac.descriptors import Table
from almanac.errors import ValidationError
from almanac.metastore import open_metastore
from almanac.spark.names import catalog_session, store_uri
from almanac.table_names import resolve_table

__all__ = [
    "DEFAULT_FLUSH_BYTES",
    "DEFAULT_WRITE_LEASE_S",
    "AlmanacCommitMessage",
    "AlmanacWriter",
    "WritePlan",
    "check_types",
    "collect_files",
    "column_renames",
    "plan_write",
    "publish",
]

DEFAULT_WRITE_LEASE_S = 3600.0
"""How long a write may run before its staging lease expires (option
``write_lease_seconds``); afterwards it cannot commit and the janitor may
remove its files."""

DEFAULT_FLUSH_BYTES = 128 * 1024 * 1024
"""A task buffers conformed rows up to this size before writing files, so a
task writes few large files rather than one per Arrow batch."""


@dataclass(frozen=True, slots=True)
class WritePlan:
    """Everything tasks and the commit need; picklable, no open handles."""

    store: str
    warehouse: str
    full_name: str
    table: Table
    partitions: int
    catalog_version: int
    write_id: str
    write_dir: str
    operation: str
    renames: tuple[tuple[str, str], ...] = ()
    flush_bytes: int = DEFAULT_FLUSH_BYTES
    activated_at: int = 0

    @property
    def shape(self) -> CommitShape:
        return CommitShape(self.table, self.partitions, self.catalog_version, self.activated_at)


@dataclass(frozen=True)
class AlmanacCommitMessage(WriterCommitMessage):
    """The files one task wrote."""

    write_id: str
    files: tuple[DataFile, ...] = field(default=())


def column_renames(
    spark_names: Sequence[str], table: Table, by_id: dict[str, int] | None = None
) -> tuple[tuple[str, str], ...]:
    """Incoming column name → catalog column name, for names that differ.

    Spark matches names ignoring case; so does this (an exact match wins).
    ``by_id`` maps the names of an attached Spark table to column ids, so a
    column renamed in the catalog since the attach still lands in its column.
    """
    exact = {c.name for c in table.columns}
    folded: dict[str, list[str]] = {}
    for column in table.columns:
        folded.setdefault(column.name.lower(), []).append(column.name)
    out = []
    for name in spark_names:
        if by_id is not None and name in by_id:
            bound = table.column_by_id(by_id[name])
            if bound is not None:
                if bound.name != name:
                    out.append((name, bound.name))
                continue
        if name in exact:
            continue
        candidates = folded.get(name.lower(), [])
        if len(candidates) == 1:
            out.append((name, candidates[0]))
    return tuple(out)


def _renamed(data: pa.RecordBatch, renames: tuple[tuple[str, str], ...]) -> pa.RecordBatch:
    if not renames:
        return data
    mapping = dict(renames)
    return data.rename_columns([mapping.get(name, name) for name in data.schema.names])


def check_types(spark_arrow: pa.Schema, plan: WritePlan) -> None:
    """Refuse incompatible column types before any task runs: ``conform`` on
    zero rows of the incoming schema raises the ``DataError`` naming the column."""
    empty = pa.RecordBatch.from_pylist([], schema=spark_arrow)
    conform(_renamed(empty, plan.renames), plan.table)


def plan_write(
    target: str,
    warehouse: str | None,
    name: Any,
    spark_arrow: pa.Schema,
    *,
    overwrite: bool,
    table_id: int | None = None,
    column_ids: dict[str, int] | None = None,
    lease_s: float = DEFAULT_WRITE_LEASE_S,
) -> WritePlan:
    """Resolve the table at the latest version, check the types, stage the write."""
    with catalog_session(target, warehouse) as cat:
        snap = cat.catalog()
        if table_id is not None:
            table = snap.table_by_id(table_id)
            if table is None:
                raise ValidationError(
                    f"Table '{name}' (id {table_id}) was dropped from the catalog; attach again",
                    table=str(name),
                    rule="attached-table-dropped",
                )
            schema = snap.schema_by_id(table.schema_id)
            assert schema is not None
        else:
            schema, table = resolve_table(snap, name)
        data = TableData.for_catalog(cat)
        write_id = new_write_id()
        plan = WritePlan(
            store=store_uri(target),
            warehouse=data.warehouse.uri,
            full_name=f"{schema.name}.{table.name}",
            table=table,
            partitions=table_partitions(snap, table),
            catalog_version=snap.version,
            write_id=write_id,
            write_dir=data.warehouse.write_dir(table.id, write_id),
            activated_at=snap.activation_time,
            operation="overwrite" if overwrite else "append",
            renames=column_renames(spark_arrow.names, table, column_ids),
        )
        check_types(spark_arrow, plan)
        data.stage(write_id, plan.write_dir, ttl_s=lease_s)
        return plan


class AlmanacWriter(DataSourceArrowWriter):
    """Pickled at planning; ``write`` runs in tasks, ``commit``/``abort`` in a
    fresh worker on the driver side."""

    def __init__(self, plan: WritePlan) -> None:
        self.plan = plan

    def write(self, iterator: Iterator[pa.RecordBatch]) -> AlmanacCommitMessage:
        plan = self.plan
        warehouse = Warehouse.open(plan.warehouse)
        files: list[DataFile] = []
        pending: list[pa.Table] = []
        size = 0
        for batch in iterator:
            if batch.num_rows == 0:
                continue
            rows = conform(_renamed(batch, plan.renames), plan.table)
            pending.append(rows)
            size += rows.nbytes
            if size >= plan.flush_bytes:
                files += self._flush(warehouse, pending)
                pending, size = [], 0
        if pending:
            files += self._flush(warehouse, pending)
        return AlmanacCommitMessage(plan.write_id, tuple(files))

    def _flush(self, warehouse: Warehouse, pending: list[pa.Table]) -> list[DataFile]:
        plan = self.plan
        rows = pending[0] if len(pending) == 1 else pa.concat_tables(pending)
        return write_files(warehouse, plan.table, plan.partitions, rows, plan.write_dir)

    def commit(self, messages: Sequence[WriterCommitMessage | None]) -> None:
        publish(self.plan, messages)

    def abort(self, messages: Sequence[WriterCommitMessage | None]) -> None:
        plan = self.plan
        store = open_metastore(plan.store)
        try:
            TableData(store, Warehouse.open(plan.warehouse)).abort(plan.write_id, plan.write_dir)
        finally:
            store.close()


def collect_files(messages: Sequence[WriterCommitMessage | None]) -> list[DataFile]:
    files: list[DataFile] = []
    for message in messages:
        if isinstance(message, AlmanacCommitMessage):
            files.extend(message.files)
    return files


def publish(plan: WritePlan, messages: Sequence[WriterCommitMessage | None]) -> None:
    """The commit step: one data commit. Calling it again with the same
    messages changes nothing."""
    files = collect_files(messages)
    store = open_metastore(plan.store)
    try:
        TableData(store, Warehouse.open(plan.warehouse)).commit(
            plan.shape, plan.write_id, files, operation=plan.operation
        )
    finally:
        store.close()
