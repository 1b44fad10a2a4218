"""Small-file compaction: rewrite a tablet's small files into files of about
a target size, published as an Iceberg ``replace`` snapshot.

Many small appends leave many small files, and a scan pays per file. A
compaction reads the small files of each tablet and partition (by column
id, at the latest catalog version), writes their rows back as a few large
files of the same tablet under the table's default spec and sort order,
and commits a snapshot that swaps exactly those files. Files with merge-on-read deletes
are rewritten whatever their size, without their deleted rows, and the
delete files no remaining file needs leave the snapshot. Appends
that land meanwhile stay: the commit rebuilds on the newest parent and
deletes only the files it read. If another commit removed one of them (an
overwrite, another compaction), the compaction publishes nothing and its
files are aborted, so no row is ever lost or doubled.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa

from almanac import _check as check
from almanac.data.arrow import arrow_schema, output_schema
from almanac.data.commits import CommitShape, TableData
from almanac.data.files import DataFile, write_files
from almanac.data.reading import read_file
from almanac.data.snapshots import DataSnapshot
from almanac.data.warehouse import new_write_id
from almanac.data.writing import STAGE_TTL_S
from almanac.errors import DataError, NotFoundError, ValidationError
from almanac.model.catalog_version import DEFAULT_SCHEMA
from almanac.model.descriptors import Table
from almanac.node.catalog import Catalog

__all__ = [
    "DEFAULT_TARGET_FILE_MB",
    "SMALL_FRACTION",
    "CompactionPlan",
    "compact",
    "plan_compaction",
    "run_compaction",
]

DEFAULT_TARGET_FILE_MB = 128.0
SMALL_FRACTION = 0.75
"""A file under this fraction of the target size is small (Iceberg's own
``min-file-size-bytes`` default); larger ones are left as they are."""
_MB = 1024 * 1024
_ONE_FILE = 2**62
"""``max_rows_per_file`` that keeps one group's rows in one file per tablet."""


@dataclass(frozen=True, slots=True)
class CompactionPlan:
    """What one compaction rewrites: ``groups`` of small files, each of one
    tablet and together about the target size, becoming one new file each;
    planned against data snapshot ``snapshot_id`` and catalog ``shape``."""

    shape: CommitShape
    snapshot_id: int | None
    groups: tuple[tuple[DataFile, ...], ...]

    @property
    def table(self) -> Table:
        return self.shape.table

    @property
    def files(self) -> tuple[DataFile, ...]:
        """Every file the compaction replaces."""
        return tuple(f for group in self.groups for f in group)


def _groups(files: Sequence[DataFile], target_bytes: int) -> list[tuple[DataFile, ...]]:
    """Greedy bins of consecutive small files, and of files with deletes
    whatever their size (a rewrite folds the deletes in), up to
    ``target_bytes`` each; a bin of one file without deletes would only copy
    it, so it is left out."""
    small = [f for f in files if f.size < target_bytes * SMALL_FRACTION or f.deletes]
    bins: list[list[DataFile]] = []
    size = 0
    for f in small:
        if not bins or size + f.size > target_bytes:
            bins.append([])
            size = 0
        bins[-1].append(f)
        size += f.size
    return [tuple(b) for b in bins if len(b) > 1 or b[0].deletes]


def plan_compaction(
    cat: Catalog,
    data: TableData,
    name: str,
    schema: str = DEFAULT_SCHEMA,
    *,
    target_file_mb: float = DEFAULT_TARGET_FILE_MB,
    tablet: int | None = None,
) -> CompactionPlan:
    """Pick the small files of ``tablet`` (of every tablet when None) in the
    table's data snapshot of the latest catalog version, grouped per tablet
    into groups of about ``target_file_mb``. Nothing is written."""
    check.instance(cat, Catalog, "Parameter 'cat' of compact")
    check.instance(data, TableData, "Parameter 'data' of compact")
    check.string(name, "Parameter 'name' of compact", nonblank=True)
    check.string(schema, "Parameter 'schema' of compact", nonblank=True)
    target_mb = check.number(target_file_mb, "Parameter 'target_file_mb' of compact", positive=True)
    check.optional_int(tablet, "Parameter 'tablet' of compact")
    cat.catch_up()  # DDL another node finished is there "now", followed or not
    version = cat.catalog()
    table = version.table(name, schema)
    if table is None:
        raise NotFoundError(
            f"Table '{schema}.{name}' does not exist", kind="table", name=f"{schema}.{name}"
        )
    shape = CommitShape.of(version, table)
    if tablet is not None and not 0 <= tablet < shape.partitions:
        raise ValidationError(
            f"Table '{schema}.{name}' has tablets 0 to {shape.partitions - 1}; there is no "
            f"tablet {tablet} to compact",
            table=f"{schema}.{name}",
            tablet=tablet,
            rule="tablet-in-range",
        )
    # The data of the plan's own version, not the newest: a file committed
    # since may hold a column this version lacks, which a rewrite would drop.
    current = data.snapshot_at(table.id, version=version.version)
    if current is None:
        return CompactionPlan(shape, None, ())
    # Files merge with files of their tablet, spec and partition only: a
    # merged file is one partition's, as every file of a partitioned table.
    by_partition: dict[tuple[int, int, tuple[object, ...]], list[DataFile]] = defaultdict(list)
    for f in current.files:
        if tablet is None or f.partition == tablet:
            by_partition[(f.partition, f.spec_id, f.partition_values)].append(f)
    target_bytes = max(1, int(target_mb * _MB))
    keys = sorted(by_partition, key=lambda k: k[0])
    groups = [g for k in keys for g in _groups(by_partition[k], target_bytes)]
    return CompactionPlan(shape, current.snapshot_id, tuple(groups))


def _rows(plan: CompactionPlan, group: tuple[DataFile, ...], data: TableData) -> pa.Table:
    """The group's rows as the table's write schema, exactly as a read at the
    plan's version returns them (stored rows are not validated again as a
    new write would be, except that a NOT NULL column must hold no NULL)."""
    table = plan.table
    batches = [b for f in group for b in read_file(table, f, data.warehouse)]
    read = pa.Table.from_batches(batches, schema=output_schema(table))
    for column in table.columns:
        if not column.nullable and read.column(column.name).null_count:
            raise DataError(
                f"Column '{column.name}' of table '{table.name}' is NOT NULL, but the files "
                "being compacted read NULL for it; they cannot be rewritten",
                table=table.name,
                column=column.name,
            )
    return pa.Table.from_arrays(read.columns, schema=arrow_schema(table))


def run_compaction(data: TableData, plan: CompactionPlan) -> DataSnapshot | None:
    """Rewrite the plan's groups as one staged write and publish it as a
    ``replace`` snapshot; None when the plan has nothing to rewrite.
    ``ConflictError`` (nothing published, the new files removed) when a
    file of the plan left the table meanwhile."""
    check.instance(data, TableData, "Parameter 'data' of run_compaction")
    check.instance(plan, CompactionPlan, "Parameter 'plan' of run_compaction")
    if not plan.groups:
        return None
    table = plan.table
    write_id = new_write_id()
    write_dir = data.warehouse.write_dir(table.id, write_id)
    lease = data.staging.stage(write_id, write_dir, ttl_s=STAGE_TTL_S)
    try:
        written: list[DataFile] = []
        for group in plan.groups:
            rows = _rows(plan, group, data)
            written += write_files(
                data.warehouse,
                table,
                plan.shape.partitions,
                rows,
                write_dir,
                max_rows_per_file=_ONE_FILE,
                tablet=group[0].partition,
            )
            data.staging.keep_alive(lease)
        return data.commit(plan.shape, write_id, written, operation="replace", replaces=plan.files)
    except BaseException:
        data.staging.abort(write_id, write_dir)
        raise
    finally:
        data.staging.release(lease)


def compact(
    cat: Catalog,
    name: str,
    schema: str = DEFAULT_SCHEMA,
    *,
    target_file_mb: float = DEFAULT_TARGET_FILE_MB,
    tablet: int | None = None,
) -> DataSnapshot | None:
    """Rewrite the small files of one tablet (every tablet when ``tablet`` is
    None) into files of about ``target_file_mb`` as one ``replace`` data
    snapshot; None when no tablet has two small files to merge. Concurrent
    appends are kept; ``ConflictError`` when a concurrent commit removed a
    file being compacted (nothing was published; run it again)."""
    data = TableData.for_catalog(check.instance(cat, Catalog, "Parameter 'cat' of compact"))
    plan = plan_compaction(cat, data, name, schema, target_file_mb=target_file_mb, tablet=tablet)
    return run_compaction(data, plan)
