"""Catalog objects as frozen values.

A descriptor never changes: an update entry makes a new one with
``dataclasses.replace``. ``update_version`` records the catalog version that
last touched the object, so a reader can tell what a version changed.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import enum
import uuid
from dataclasses import dataclass, field
from typing import Any

from almanac import _check as check
from almanac.errors import AmbiguousNameError
from almanac.model.clock import LOGICAL_BITS
from almanac.model.datatypes import ColumnType
from almanac.model.names import name_key
from almanac.model.partitioning import UNPARTITIONED, UNSORTED, PartitionSpec, SortOrder

__all__ = [
    "Collation",
    "Column",
    "ConsistencyMode",
    "ConstantDefault",
    "DefaultValue",
    "FunctionDefault",
    "Index",
    "IndexKind",
    "IndexStatus",
    "Schema",
    "Table",
    "TableProperties",
    "Zone",
    "is_soft_deleted",
]


class IndexKind(enum.Enum):
    HASH = 1
    SORTED = 2


class Collation(enum.Enum):
    """Sort order of one column of a SORTED index."""

    ASC_NULLS_FIRST = 1
    ASC_NULLS_LAST = 2
    DESC_NULLS_FIRST = 3
    DESC_NULLS_LAST = 4

    @property
    def ascending(self) -> bool:
        return self in (Collation.ASC_NULLS_FIRST, Collation.ASC_NULLS_LAST)

    @property
    def nulls_first(self) -> bool:
        return self in (Collation.ASC_NULLS_FIRST, Collation.DESC_NULLS_FIRST)

    @staticmethod
    def of(ascending: bool = True, nulls_first: bool | None = None) -> Collation:
        """SQL's default puts NULLs last when ascending and first when descending."""
        if nulls_first is None:
            nulls_first = not ascending
        if ascending:
            return Collation.ASC_NULLS_FIRST if nulls_first else Collation.ASC_NULLS_LAST
        return Collation.DESC_NULLS_FIRST if nulls_first else Collation.DESC_NULLS_LAST


class IndexStatus(enum.Enum):
    """REGISTERED → BUILDING → AVAILABLE → STOPPING → removed."""

    REGISTERED = 1
    BUILDING = 2
    AVAILABLE = 3
    STOPPING = 4

    @property
    def alive(self) -> bool:
        return self is not IndexStatus.STOPPING


class ConsistencyMode(enum.Enum):
    STRONG = 1
    HA = 2


@dataclass(frozen=True, slots=True)
class ConstantDefault:
    """A literal default; ``value`` is a Python value of the column's type (or None)."""

    value: Any

    def __post_init__(self) -> None:
        value = self.value
        if value is not None and not isinstance(value, CONSTANT_TYPES):
            raise check.fail(
                "Parameter 'value' of ConstantDefault",
                "None or a bool, int, float, Decimal, str, bytes, date, time, datetime or UUID",
                value,
            )
        if isinstance(value, str) and not check.is_unicode(value):
            raise check.fail("Parameter 'value' of ConstantDefault", "valid Unicode text", value)
        tz = value.tzinfo if isinstance(value, dt.datetime | dt.time) else None
        if tz is not None and type(tz) is not dt.timezone:
            raise check.fail(
                "The time zone of parameter 'value' of ConstantDefault",
                "a fixed UTC offset (datetime.timezone); a named zone has no stable meaning "
                "across machines",
                tz,
            )


CONSTANT_TYPES = (
    bool,
    int,
    float,
    decimal.Decimal,
    str,
    bytes,
    dt.date,
    dt.time,
    uuid.UUID,
)
"""The Python types of constant defaults (a datetime is a date)."""


@dataclass(frozen=True, slots=True)
class FunctionDefault:
    """A default computed per row by a named function such as ``RAND_UUID``."""

    name: str

    def __post_init__(self) -> None:
        check.string(self.name, "Parameter 'name' of FunctionDefault", nul_ok=True)


DefaultValue = ConstantDefault | FunctionDefault

FUNCTION_DEFAULTS = {"RAND_UUID": ColumnType.UUID}
"""Known default functions and the only column type each may fill."""


@dataclass(frozen=True, slots=True)
class Schema:
    id: int
    name: str
    update_version: int = 0


@dataclass(frozen=True, slots=True)
class Column:
    """A table column; ``id`` is unique within its table and never reused.

    ``default`` fills the column in rows written without it from now on
    (Iceberg's ``write-default``); ALTER COLUMN SET/DROP DEFAULT changes it.
    ``initial_default`` is what rows written before the column existed read
    as (Iceberg's ``initial-default``): the constant default the column was
    added with, fixed for the column's life so a changed default never
    rewrites old rows. It is always a constant (or ``None`` for NULL).

    ``doc`` is the column's comment (Iceberg's ``doc``). A STRUCT, LIST or
    MAP column holds its nested fields in ``fields``, each a ``Column``
    with its own id from the table's column-id counter (see
    ``almanac.model.nested``); a primitive column has none.
    """

    id: int
    name: str
    type: ColumnType
    nullable: bool = True
    precision: int | None = None
    scale: int | None = None
    length: int | None = None
    default: DefaultValue | None = None
    initial_default: ConstantDefault | None = None
    doc: str | None = None
    fields: tuple[Column, ...] = ()


def initial_default_of(default: DefaultValue | None) -> ConstantDefault | None:
    """The initial default a column added with ``default`` gets: the constant
    itself, or ``None`` when it is NULL or absent. A function default (which
    ADD COLUMN refuses) gives ``None``: Iceberg requires a constant here."""
    if isinstance(default, ConstantDefault) and default.value is not None:
        return default
    return None


@dataclass(frozen=True, slots=True)
class TableProperties:
    """Statistics tuning: a table is stale once this share (and count) of rows changed."""

    stale_rows_fraction: float = 0.2
    min_stale_rows: int = 500

    def __post_init__(self) -> None:
        check.check_fields(self)


def _columns(held: Column | tuple[Column, ...]) -> tuple[Column, ...]:
    return (held,) if isinstance(held, Column) else held


@dataclass(frozen=True, slots=True)
class Table:
    """A table. ``primary_key`` is empty (and ``primary_key_index_id`` None)
    for a plain table without a key.

    ``bucketed`` records the data layout: rows hashed on the first
    colocation column into the zone's partitions (Iceberg ``bucket[N]``),
    what every table got before keys became optional and what ``COLOCATE
    BY`` asks for; otherwise the table is unpartitioned and a data file's
    tablet is a hash of its name (see ``almanac.data.tablets``).

    ``partition_specs`` and ``sort_orders`` are the table's Iceberg specs
    and sort orders, every one it ever had (files keep the spec they were
    written under), with the ids of the current ones; a bucketed table's
    hidden ``tablet`` field is not among their fields (see
    ``almanac.model.partitioning``). ``last_partition_id`` is the highest
    partition field id ever assigned.
    """

    id: int
    schema_id: int
    name: str
    zone_id: int
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...]
    primary_key_kind: IndexKind
    primary_key_collations: tuple[Collation, ...]
    colocation: tuple[str, ...]
    primary_key_index_id: int | None
    storage_profile: str
    table_version: int = 1
    properties: TableProperties = TableProperties()
    next_column_id: int = 0
    created_version: int = 0
    update_version: int = 0
    dropped_at: int | None = None
    reserve_ms: int = 0
    bucketed: bool = True
    partition_specs: tuple[PartitionSpec, ...] = (UNPARTITIONED,)
    default_spec_id: int = 0
    last_partition_id: int = 1000
    sort_orders: tuple[SortOrder, ...] = (UNSORTED,)
    default_sort_order_id: int = 0
    # Columns by ``name_key``, built on first lookup: a scan per lookup made
    # adding or checking n columns quadratic. One dict, and a bare column per
    # key (a tuple only for an old table's case-only twins): old versions
    # keep their tables, caches included.
    _by_key: dict[str, Column | tuple[Column, ...]] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    @property
    def soft_deleted(self) -> bool:
        """Dropped with a reserve: its name stays taken and its id readable
        until a purge, but name lookups no longer see it."""
        return self.dropped_at is not None

    @property
    def purge_at(self) -> int | None:
        """The hybrid time its reserve ends (None while not soft-deleted):
        RECOVER is refused after it, and a purge may remove it."""
        if self.dropped_at is None:
            return None
        return self.dropped_at + (self.reserve_ms << LOGICAL_BITS)

    def column(self, name: str) -> Column | None:
        """The column ``name`` spells, without regard to case; its exact
        spelling first, which picks one of an old table's case-only twins."""
        by_key = self._by_key
        if by_key is None:
            by_key = {}
            for col in self.columns:
                key = name_key(col.name)
                held = by_key.get(key)
                by_key[key] = col if held is None else (*_columns(held), col)
            object.__setattr__(self, "_by_key", by_key)
        held = by_key.get(name_key(name))
        if held is None or isinstance(held, Column):
            return held
        for col in held:
            if col.name == name:
                return col
        matches = sorted(col.name for col in held)
        raise AmbiguousNameError(
            f"Column name {name!r} of table '{self.name}' matches "
            f"{' and '.join(repr(m) for m in matches)} without regard to case: they were "
            "made before names became case-insensitive; spell one of them exactly "
            "(quoted in SQL) or rename one",
            kind="column",
            name=name,
            table=self.name,
            matches=matches,
            rule="ambiguous-name",
        )

    @property
    def partition_spec(self) -> PartitionSpec:
        """The spec new files are written under."""
        return next(s for s in self.partition_specs if s.spec_id == self.default_spec_id)

    @property
    def sort_order(self) -> SortOrder:
        """The order Almanac's writers sort new files by."""
        return next(o for o in self.sort_orders if o.order_id == self.default_sort_order_id)

    def column_by_id(self, column_id: int) -> Column | None:
        for col in self.columns:
            if col.id == column_id:
                return col
        return None

    def evolve(self, **changes: Any) -> Table:
        return dataclasses.replace(self, **changes)


def is_soft_deleted(table: Table) -> bool:
    """Whether ``table`` is soft-deleted (see ``Table.soft_deleted``)."""
    check.instance(table, Table, "Parameter 'table' of is_soft_deleted")
    return table.dropped_at is not None


@dataclass(frozen=True, slots=True)
class Index:
    """A secondary or primary-key index; ``collations`` is empty for HASH."""

    id: int
    name: str
    table_id: int
    schema_id: int
    unique: bool
    kind: IndexKind
    columns: tuple[str, ...]
    collations: tuple[Collation, ...]
    status: IndexStatus
    primary_key: bool = False
    created_version: int = 0
    update_version: int = 0


@dataclass(frozen=True, slots=True)
class Zone:
    """A placement zone: how a table's partitions are replicated and where."""

    id: int
    name: str
    partitions: int
    replicas: int
    quorum_size: int
    scale_up_seconds: int
    scale_down_seconds: int
    node_filter: str
    storage_profiles: tuple[str, ...]
    consistency_mode: ConsistencyMode
    update_version: int = 0

    @property
    def default_storage_profile(self) -> str:
        return self.storage_profiles[0]
