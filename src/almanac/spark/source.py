"""The ``almanac`` Spark data source.

``spark.read.format("almanac").option("catalog", TARGET).load("S.T")`` and
``df.write.format("almanac").option("catalog", TARGET).mode(...).save("S.T")``.
Options: ``catalog`` (required), ``version`` or ``timestamp`` (reads),
``max_partition_bytes`` / ``min_partitions`` (how reads pack files into
partitions; 0 bytes: one file per partition), ``warehouse`` (when the
catalog was opened with a non-default one), ``write_lease_seconds`` (writes).

Spark gives a table created with ``CREATE TABLE ... USING <source>`` no
options at all, so ``attach`` registers one subclass per catalog table whose
``bound`` attribute holds what the options would have said; Spark's
cloudpickle ships the class by value to its workers. CREATE TABLE AS SELECT
binds a subclass to its staged write the same way.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pyspark.sql.datasource import DataSource

from almanac.errors import ValidationError
from almanac.read_point import ReadPoint
from almanac.spark.names import catalog_session, read_point
from almanac.spark.reader import DEFAULT_MAX_PARTITION_BYTES, AlmanacReader, ReadSpec, locate
from almanac.spark.types import spark_arrow_schema, spark_schema
from almanac.spark.writer import (
    DEFAULT_WRITE_LEASE_S,
    AlmanacWriter,
    WritePlan,
    check_types,
    plan_write,
)
from almanac.table_names import TableName, parse_name

__all__ = ["SOURCE_NAME", "AlmanacDataSource", "Binding", "bound_source"]

SOURCE_NAME = "almanac"


@dataclass(frozen=True, slots=True)
class Binding:
    """A data source fixed to one table (``attach``) or one staged write (CTAS)."""

    target: str
    warehouse: str | None
    name: TableName
    point: ReadPoint = field(default_factory=ReadPoint)
    table_id: int | None = None
    column_ids: tuple[int, ...] | None = None
    columns: tuple[str, ...] = ()
    staged: WritePlan | None = None
    signature: str = ""
    """The Spark column list it was attached with, so a type change rebinds."""

    def key(self) -> str:
        """A short stable digest; equal bindings register the same source."""
        return hashlib.sha1(repr(self).encode()).hexdigest()[:12]


def _int_option(options: Mapping[str, str], key: str, default: int, *, minimum: int) -> int:
    raw = options.get(key)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = minimum - 1
    if value < minimum:
        raise ValidationError(
            f"Option '{key}' must be an integer of at least {minimum}, got {raw!r}", rule=key
        )
    return value


def _lease_seconds(options: Mapping[str, str]) -> float:
    raw = options.get("write_lease_seconds")
    if raw is None:
        return DEFAULT_WRITE_LEASE_S
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise ValidationError(
            f"Option 'write_lease_seconds' must be a positive number, got {raw!r}",
            rule="write-lease",
        )
    return value


class AlmanacDataSource(DataSource):
    """Tables of an Almanac catalog, read and written through Arrow batches."""

    bound: ClassVar[Binding | None] = None

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def _binding(self) -> Binding:
        if self.bound is not None:
            return self.bound
        options: Mapping[str, str] = self.options
        target = options.get("catalog")
        if not target:
            raise ValidationError(
                "The almanac data source needs option 'catalog' (the catalog target)",
                rule="catalog-option",
            )
        path = options.get("path") or options.get("table")
        if not path:
            raise ValidationError(
                "The almanac data source needs a table: load('SCHEMA.TABLE') or "
                "save('SCHEMA.TABLE')",
                rule="table-option",
            )
        return Binding(target, options.get("warehouse"), parse_name(path), read_point(options))

    def _read_spec(self) -> ReadSpec:
        b = self._binding()
        options: Mapping[str, str] = {} if self.bound is not None else self.options
        return ReadSpec(
            b.target,
            b.warehouse,
            b.name,
            b.point,
            b.table_id,
            b.column_ids,
            max_partition_bytes=_int_option(
                options, "max_partition_bytes", DEFAULT_MAX_PARTITION_BYTES, minimum=0
            ),
            min_partitions=_int_option(options, "min_partitions", 0, minimum=0),
        )

    def schema(self) -> Any:
        spec = self._read_spec()
        with catalog_session(spec.target, spec.warehouse) as cat:
            schema_name, table = locate(spec.point.resolve(cat), spec)
        return spark_schema(table, f"{schema_name}.{table.name}")

    def reader(self, schema: Any) -> AlmanacReader:
        return AlmanacReader(self._read_spec(), schema)

    def writer(self, schema: Any, overwrite: bool) -> AlmanacWriter:
        b = self._binding()
        arrow = spark_arrow_schema(schema)
        if b.staged is not None:
            check_types(arrow, b.staged)
            return AlmanacWriter(b.staged)
        if b.point.version is not None or b.point.timestamp is not None:
            raise ValidationError(
                f"Table '{b.name}' is read at a fixed catalog version or time and cannot be "
                "written",
                table=str(b.name),
                rule="read-only-version",
            )
        by_id = None
        if b.column_ids is not None:
            by_id = dict(zip(b.columns, b.column_ids, strict=True))
        plan = plan_write(
            b.target,
            b.warehouse,
            b.name,
            arrow,
            overwrite=overwrite,
            table_id=b.table_id,
            column_ids=by_id,
            lease_s=_lease_seconds({} if self.bound is not None else self.options),
        )
        return AlmanacWriter(plan)


def bound_source(binding: Binding, prefix: str) -> type[AlmanacDataSource]:
    """A subclass of the source fixed to ``binding``, named ``<prefix>_<digest>``."""
    short = f"{prefix}_{binding.key()}"
    return type(
        f"AlmanacBound_{binding.key()}",
        (AlmanacDataSource,),
        {"bound": binding, "name": classmethod(lambda cls: short), "__module__": __name__},
    )
