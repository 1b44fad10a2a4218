"""The data plane: every table with data is an Apache Iceberg table in a
warehouse (Parquet files whose field ids are column ids, metadata written
with pyiceberg), published by atomic data commits that the catalog's
metastore records.

Metastore keys (values are ASCII or compact JSON; the pointer and the
records in the update log's checksummed frame, see ``snapshots``):

* ``data.table.<table_id>`` - the current snapshot id; the compare-and-swap
  target of every commit to the table;
* ``data.snapshot.<table_id>.<snapshot_id:012d>`` - one snapshot's record:
  parent, commit time, catalog version, operation, write id, the Iceberg
  ``metadata.json`` whose current snapshot it is, and the catalog version
  and commit time of the table's first snapshot (so a read can tell "no
  data yet" from "expired");
* ``data.write.<write_id>`` - ``<table_id>.<snapshot_id>`` once the write
  committed (idempotency), or ``aborted`` (under a week-long lease) so that a
  late commit of an aborted write fails;
* ``data.staging.<write_id>`` - the write directory of a write in progress,
  under the writer's lease.

Files (see ``warehouse``), by ids only: ``<root>/<table_id>/<write_id>/
tablet=<t>/part-<uuid>.crc32-<crc>.parquet`` and the Iceberg metadata in
``<root>/<table_id>/metadata/``. Parquet field ids are catalog column ids,
so files survive renames, drops, additions and widenings.

A write: ``new_write_id`` → ``TableData.staging.stage`` → ``conform`` + ``write_files``
(anywhere, any number of tasks) → ``TableData.commit`` with the
``CommitShape`` it was written against (or ``staging.abort``).
A read: ``plan_scan`` → ``read_file`` per kept file.
Compaction (``compact``) is a staged write whose commit is an Iceberg
``replace`` of exactly the small files it read.
"""

from almanac.data.arrow import arrow_schema, arrow_type, output_schema
from almanac.data.commits import CommitShape, TableData
from almanac.data.compaction import compact
from almanac.data.conform import conform
from almanac.data.files import ColumnStats, DataFile, write_files
from almanac.data.janitor import JanitorReport, expire_data, run_janitor
from almanac.data.reading import Predicate, ScanPlan, plan_scan, read_file, read_table
from almanac.data.snapshots import DataSnapshot
from almanac.data.tablets import (
    file_tablet,
    iceberg_bucket_values,
    partition_column,
    table_partitions,
    tablets_of,
)
from almanac.data.warehouse import Warehouse, new_write_id
from almanac.data.writing import create_table_as, write_table
from almanac.errors import DataError, SnapshotExpiredError, WriteStateError

__all__ = [
    "ColumnStats",
    "CommitShape",
    "DataError",
    "DataFile",
    "DataSnapshot",
    "JanitorReport",
    "Predicate",
    "ScanPlan",
    "SnapshotExpiredError",
    "TableData",
    "Warehouse",
    "WriteStateError",
    "arrow_schema",
    "arrow_type",
    "compact",
    "conform",
    "create_table_as",
    "expire_data",
    "file_tablet",
    "iceberg_bucket_values",
    "new_write_id",
    "output_schema",
    "partition_column",
    "plan_scan",
    "read_file",
    "read_table",
    "run_janitor",
    "table_partitions",
    "tablets_of",
    "write_files",
    "write_table",
]
