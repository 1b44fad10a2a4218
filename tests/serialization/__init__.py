"""Serialization tests, and what they share: hypothesis strategies for every
serialized type and the fixed example objects the golden files are made from.

The strategies build well-typed but otherwise arbitrary values (a snapshot's
maps need not agree with each other): the format must carry any value of the
declared types, not only the ones today's commands produce.
"""

from __future__ import annotations

import datetime as dt
import decimal
import struct
import uuid
from dataclasses import replace
from typing import Any

from hypothesis import strategies as st
from immutables import Map

from almanac.model import entries as e
from almanac.model.catalog_version import CatalogVersion
from almanac.model.datatypes import ColumnType
from almanac.model.descriptors import (
    Collation,
    Column,
    ConsistencyMode,
    ConstantDefault,
    FunctionDefault,
    Index,
    IndexKind,
    IndexStatus,
    Schema,
    Table,
    TableProperties,
    Zone,
)
from almanac.model.partitioning import PartitionField, PartitionSpec, SortField, SortOrder
from almanac.model.request_ids import Checkpoint, RequestRecord
from almanac.serialization import encode
from almanac.serialization.io import INT64_MAX, INT64_MIN

# -- strategies -----------------------------------------------------------------------

int64s = st.one_of(st.integers(-3, 300), st.integers(INT64_MIN, INT64_MAX))
opt_int64s = st.none() | int64s
names = st.text(max_size=12)
name_tuples = st.lists(names, max_size=4).map(tuple)

_offsets = st.timedeltas(
    min_value=dt.timedelta(hours=-24) + dt.timedelta(microseconds=1),
    max_value=dt.timedelta(hours=24) - dt.timedelta(microseconds=1),
)
fixed_timezones = st.none() | st.just(dt.UTC) | _offsets.map(dt.timezone)

column_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(2**200), max_value=2**200),
    st.floats(allow_nan=False),
    st.decimals(allow_nan=False),
    st.tuples(
        st.integers(0, 1),
        st.lists(st.integers(0, 9), min_size=1, max_size=40).map(tuple),
        st.integers(-(10**6), 10**6),
    ).map(decimal.Decimal),
    st.sampled_from(["1E-1999999999999999997", "-9E+999999999999999999"]).map(decimal.Decimal),
    st.text(),
    st.binary(),
    st.dates(),
    st.times(timezones=fixed_timezones),
    st.datetimes(timezones=fixed_timezones),
    st.uuids(),
)
"""Every Python value type a column can hold; NaNs are tested apart (NaN != NaN)."""

nan_values = st.one_of(
    st.integers(0, 2**64 - 1).map(lambda bits: struct.unpack(">d", bits.to_bytes(8, "big"))[0]),
    st.sampled_from(["NaN", "-NaN", "sNaN", "-sNaN", "NaN123", "sNaN7"]).map(decimal.Decimal),
)

defaults = st.one_of(st.builds(ConstantDefault, column_values), st.builds(FunctionDefault, names))
schemas = st.builds(Schema, int64s, names, int64s)
columns = st.builds(
    Column,
    id=int64s,
    name=names,
    type=st.sampled_from(ColumnType),
    nullable=st.booleans(),
    precision=opt_int64s,
    scale=opt_int64s,
    length=opt_int64s,
    default=st.none() | defaults,
    initial_default=st.none() | st.builds(ConstantDefault, column_values),
)
nested_columns = st.recursive(
    columns,
    lambda inner: st.builds(
        replace,
        columns,
        doc=st.none() | names,
        fields=st.lists(inner, max_size=3).map(tuple),
    ),
    max_leaves=6,
)
"""Columns with docs and nested fields at any depth (Column v3 and later)."""
collations = st.lists(st.sampled_from(Collation), max_size=3).map(tuple)
table_properties = st.builds(
    TableProperties, st.floats(allow_nan=False, allow_infinity=False), int64s
)
partition_specs = st.builds(
    PartitionSpec,
    int64s,
    st.lists(st.builds(PartitionField, int64s, int64s, names, names), max_size=3).map(tuple),
)
sort_orders = st.builds(
    SortOrder,
    int64s,
    st.lists(st.builds(SortField, int64s, names, st.booleans(), st.booleans()), max_size=3).map(
        tuple
    ),
)
tables = st.builds(
    Table,
    id=int64s,
    schema_id=int64s,
    name=names,
    zone_id=int64s,
    columns=st.lists(columns, max_size=4).map(tuple),
    primary_key=name_tuples,
    primary_key_kind=st.sampled_from(IndexKind),
    primary_key_collations=collations,
    colocation=name_tuples,
    primary_key_index_id=opt_int64s,
    storage_profile=names,
    table_version=int64s,
    properties=table_properties,
    next_column_id=int64s,
    created_version=int64s,
    update_version=int64s,
    dropped_at=opt_int64s,
    reserve_ms=int64s,
    bucketed=st.booleans(),
    partition_specs=st.lists(partition_specs, max_size=3).map(tuple),
    default_spec_id=int64s,
    last_partition_id=int64s,
    sort_orders=st.lists(sort_orders, max_size=3).map(tuple),
    default_sort_order_id=int64s,
)
indexes = st.builds(
    Index,
    id=int64s,
    name=names,
    table_id=int64s,
    schema_id=int64s,
    unique=st.booleans(),
    kind=st.sampled_from(IndexKind),
    columns=name_tuples,
    collations=collations,
    status=st.sampled_from(IndexStatus),
    primary_key=st.booleans(),
    created_version=int64s,
    update_version=int64s,
)
zones = st.builds(
    Zone,
    id=int64s,
    name=names,
    partitions=int64s,
    replicas=int64s,
    quorum_size=int64s,
    scale_up_seconds=int64s,
    scale_down_seconds=int64s,
    node_filter=names,
    storage_profiles=name_tuples,
    consistency_mode=st.sampled_from(ConsistencyMode),
    update_version=int64s,
)

ENTRY_STRATEGIES: dict[type, st.SearchStrategy[Any]] = {
    e.ObjectIdsReserved: st.builds(e.ObjectIdsReserved, int64s),
    e.SchemaCreated: st.builds(e.SchemaCreated, schemas),
    e.SchemaDropped: st.builds(e.SchemaDropped, int64s),
    e.ZoneCreated: st.builds(e.ZoneCreated, zones),
    e.ZoneAltered: st.builds(e.ZoneAltered, zones),
    e.ZoneDropped: st.builds(e.ZoneDropped, int64s),
    e.DefaultZoneSet: st.builds(e.DefaultZoneSet, int64s),
    e.TableCreated: st.builds(e.TableCreated, tables),
    e.TableDropped: st.builds(e.TableDropped, int64s),
    e.TableRenamed: st.builds(e.TableRenamed, int64s, names),
    e.TableSoftDropped: st.builds(e.TableSoftDropped, int64s, int64s, int64s),
    e.TableRecovered: st.builds(e.TableRecovered, int64s),
    e.ColumnsAdded: st.builds(e.ColumnsAdded, int64s, st.lists(columns, max_size=3).map(tuple)),
    e.ColumnsDropped: st.builds(e.ColumnsDropped, int64s, name_tuples),
    e.ColumnAltered: st.builds(e.ColumnAltered, int64s, columns),
    e.TablePropertiesSet: st.builds(e.TablePropertiesSet, int64s, table_properties),
    e.IndexCreated: st.builds(e.IndexCreated, indexes),
    e.IndexRenamed: st.builds(e.IndexRenamed, int64s, names),
    e.IndexBuildStarted: st.builds(e.IndexBuildStarted, int64s),
    e.IndexMadeAvailable: st.builds(e.IndexMadeAvailable, int64s),
    e.IndexStopped: st.builds(e.IndexStopped, int64s),
    e.IndexRemoved: st.builds(e.IndexRemoved, int64s),
    e.PrimaryKeySet: st.builds(
        e.PrimaryKeySet, int64s, name_tuples, st.sampled_from(IndexKind), collations, opt_int64s
    ),
    e.PartitionSpecAdded: st.builds(e.PartitionSpecAdded, int64s, partition_specs),
    e.DefaultPartitionSpecSet: st.builds(e.DefaultPartitionSpecSet, int64s, int64s),
    e.SortOrderAdded: st.builds(e.SortOrderAdded, int64s, sort_orders),
    e.DefaultSortOrderSet: st.builds(e.DefaultSortOrderSet, int64s, int64s),
    e.TableMoved: st.builds(e.TableMoved, int64s, int64s, names),
    e.TableDataCommitted: st.builds(
        e.TableDataCommitted,
        int64s,
        int64s,
        st.sampled_from(e.DATA_OPERATIONS),
        names,
        int64s,
        int64s,
        int64s,
        int64s,
    ),
}
update_entries: st.SearchStrategy[e.UpdateEntry] = st.one_of(*ENTRY_STRATEGIES.values())
versioned_updates = st.builds(
    e.VersionedUpdate,
    int64s,
    int64s,
    int64s,
    st.lists(update_entries, max_size=6).map(tuple),
    node=names,
    request_id=st.none() | names,
    request_digest=st.binary(max_size=40),
    applied=st.lists(st.booleans(), max_size=8).map(tuple),
)
request_records = st.builds(
    RequestRecord,
    names,
    int64s,
    int64s,
    st.binary(max_size=40),
    st.lists(st.booleans(), max_size=8).map(tuple),
)


def _maps(keys: st.SearchStrategy[Any], values: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.dictionaries(keys, values, max_size=4).map(Map)


_scoped_names = st.tuples(int64s, names)
snapshots = st.builds(
    CatalogVersion,
    version=int64s,
    activation_time=int64s,
    object_id_gen=int64s,
    default_zone_id=opt_int64s,
    schemas_by_id=_maps(int64s, schemas),
    schema_names=_maps(names, int64s),
    tables_by_id=_maps(int64s, tables),
    table_names=_maps(_scoped_names, int64s),
    indexes_by_id=_maps(int64s, indexes),
    index_names=_maps(_scoped_names, int64s),
    table_indexes=_maps(int64s, st.lists(int64s, max_size=4).map(tuple)),
    zones_by_id=_maps(int64s, zones),
    zone_names=_maps(names, int64s),
    table_data=_maps(int64s, int64s),
)

checkpoints = st.builds(
    Checkpoint,
    snapshots,
    st.lists(request_records, max_size=4, unique_by=lambda r: r.request_id).map(
        lambda rs: tuple(sorted(rs, key=lambda r: r.request_id))
    ),
)

STRATEGIES: dict[type, st.SearchStrategy[Any]] = {
    Schema: schemas,
    Column: nested_columns,
    Table: tables,
    TableProperties: table_properties,
    Index: indexes,
    Zone: zones,
    ConstantDefault: st.builds(ConstantDefault, column_values),
    FunctionDefault: st.builds(FunctionDefault, names),
    PartitionSpec: partition_specs,
    SortOrder: sort_orders,
    **ENTRY_STRATEGIES,
    e.VersionedUpdate: versioned_updates,
    CatalogVersion: snapshots,
    Checkpoint: checkpoints,
}
"""One strategy per serialized type; a test checks it covers the registry."""

# -- fixed examples (the golden files) ----------------------------------------------

_PLUS_0530 = dt.timezone(dt.timedelta(hours=5, minutes=30))
_MINUS_0800 = dt.timezone(dt.timedelta(hours=-8))

CONSTANTS: dict[str, object] = {
    "none": None,
    "false": False,
    "true": True,
    "int": -123_456_789_012_345_678_901_234_567_890,
    "float": 6.02214076e23,
    "float_negative_zero": -0.0,
    "float_nan_payload": struct.unpack(">d", bytes.fromhex("7ff8dead00c0ffee"))[0],
    "decimal": decimal.Decimal("-12.50"),
    "decimal_exponent": decimal.Decimal("7.25E+40"),
    "decimal_infinity": decimal.Decimal("-Infinity"),
    "str": "déjà vu ✓ 𝄞",
    "bytes": b"\x00\xffalmanac",
    "date": dt.date(2024, 2, 29),
    "time": dt.time(23, 59, 58, 123_456),
    "time_tz": dt.time(9, 30, 0, 5, tzinfo=_PLUS_0530),
    "datetime": dt.datetime(2024, 2, 29, 13, 14, 15, 161_718),
    "datetime_tz": dt.datetime(1999, 12, 31, 23, 59, 59, 999_999, tzinfo=_MINUS_0800),
    "uuid": uuid.UUID("12345678-9abc-4def-8123-456789abcdef"),
}

SCHEMA = Schema(id=7, name="SALES", update_version=3)
PRICE = Column(
    id=2,
    name="PRICE",
    type=ColumnType.DECIMAL,
    nullable=False,
    precision=12,
    scale=2,
    length=64,
    default=ConstantDefault(decimal.Decimal("-12.50")),
    initial_default=ConstantDefault(decimal.Decimal("-12.50")),
)
KEY = Column(id=3, name="KEY", type=ColumnType.UUID, default=FunctionDefault("RAND_UUID"))
ID = Column(id=0, name="ID", type=ColumnType.INT64, nullable=False)
REGION = Column(
    id=1,
    name="REGION",
    type=ColumnType.STRING,
    length=16,
    default=ConstantDefault("EU"),
    initial_default=ConstantDefault("EU"),
)
# The examples above read the same from Column v1 and v2 (a v1 column's
# initial default is its constant default); these two need v2.
REDEFAULTED = Column(
    id=4,
    name="QTY",
    type=ColumnType.INT32,
    default=ConstantDefault(8),
    initial_default=ConstantDefault(7),
)
"""Added with DEFAULT 7, then SET DEFAULT 8: old rows still read 7."""
CREATED_WITH_DEFAULT = Column(
    id=5, name="STATUS", type=ColumnType.STRING, default=ConstantDefault("new")
)
"""Created with the table: no row predates it, so it has no initial default."""
NESTED = Column(
    id=6,
    name="ADDRESS",
    type=ColumnType.STRUCT,
    doc="Where to deliver",
    fields=(
        Column(id=7, name="STREET", type=ColumnType.STRING, nullable=False, doc="Street"),
        Column(
            id=8,
            name="TAGS",
            type=ColumnType.LIST,
            fields=(Column(id=10, name="element", type=ColumnType.FIXED, length=4),),
        ),
        Column(
            id=9,
            name="CODES",
            type=ColumnType.MAP,
            fields=(
                Column(id=11, name="key", type=ColumnType.STRING, nullable=False),
                Column(id=12, name="value", type=ColumnType.TIMESTAMPTZ_NS, precision=9),
            ),
        ),
    ),
)
"""Column v3: a doc and nested fields at every depth."""
ICEBERG_UUID = Column(
    id=13,
    name="TOKEN",
    type=ColumnType.ICEBERG_UUID,
    default=ConstantDefault(uuid.UUID("0b7c4f86-6a3f-4e0c-9b0f-2d6f0f3b8c11")),
    initial_default=ConstantDefault(uuid.UUID("0b7c4f86-6a3f-4e0c-9b0f-2d6f0f3b8c11")),
)
"""Iceberg's own uuid type (column type 22) with a UUID default."""
PROPERTIES = TableProperties(stale_rows_fraction=0.35, min_stale_rows=1000)
TABLE = Table(
    id=10,
    schema_id=7,
    name="ORDERS",
    zone_id=2,
    columns=(ID, REGION, PRICE, KEY),
    primary_key=("ID", "REGION"),
    primary_key_kind=IndexKind.SORTED,
    primary_key_collations=(Collation.ASC_NULLS_LAST, Collation.DESC_NULLS_FIRST),
    colocation=("REGION",),
    primary_key_index_id=11,
    storage_profile="ssd",
    table_version=3,
    properties=PROPERTIES,
    next_column_id=5,
    created_version=4,
    update_version=9,
)
SOFT_DELETED_TABLE = replace(
    TABLE, dropped_at=1_700_000_360_000 << 16 | 3, reserve_ms=3_600_000, update_version=12
)
"""Dropped WITH (RESERVE = '1h'); only Table v2 carries it."""
KEYLESS_TABLE = replace(
    TABLE,
    primary_key=(),
    primary_key_kind=IndexKind.HASH,
    primary_key_collations=(),
    colocation=(),
    primary_key_index_id=None,
    bucketed=False,
)
"""Without a primary key, unpartitioned: only Table v3 carries it."""
SPEC = PartitionSpec(
    1,
    (
        PartitionField(source_id=0, field_id=1001, name="ID_BUCKET", transform="bucket[16]"),
        PartitionField(source_id=1, field_id=1003, name="REGION", transform="identity"),
        PartitionField(source_id=2, field_id=1004, name="PRICE_TRUNC", transform="truncate[10]"),
    ),
)
ORDER = SortOrder(
    2,
    (
        SortField(source_id=1),
        SortField(source_id=2, transform="bucket[4]", descending=True, nulls_first=False),
    ),
)
PARTITIONED_TABLE = replace(
    TABLE,
    partition_specs=(PartitionSpec(0), SPEC),
    default_spec_id=1,
    last_partition_id=1004,
    sort_orders=(SortOrder(0), SortOrder(1, (SortField(0),)), ORDER),
    default_sort_order_id=2,
)
"""Two specs and three sort orders: only Table v4 carries them."""
PK_INDEX = Index(
    id=11,
    name="ORDERS_PK",
    table_id=10,
    schema_id=7,
    unique=True,
    kind=IndexKind.SORTED,
    columns=("ID", "REGION"),
    collations=(Collation.ASC_NULLS_LAST, Collation.DESC_NULLS_FIRST),
    status=IndexStatus.AVAILABLE,
    primary_key=True,
    created_version=4,
    update_version=4,
)
INDEX = Index(
    id=12,
    name="ORDERS_BY_KEY",
    table_id=10,
    schema_id=7,
    unique=False,
    kind=IndexKind.HASH,
    columns=("KEY",),
    collations=(),
    status=IndexStatus.BUILDING,
    created_version=6,
    update_version=8,
)
STOPPING_INDEX = Index(
    id=13,
    name="ORDERS_BY_PRICE",
    table_id=10,
    schema_id=7,
    unique=False,
    kind=IndexKind.SORTED,
    columns=("PRICE",),
    collations=(Collation.DESC_NULLS_LAST,),
    status=IndexStatus.STOPPING,
    created_version=7,
    update_version=9,
)
ZONE = Zone(
    id=2,
    name="EU",
    partitions=64,
    replicas=3,
    quorum_size=2,
    scale_up_seconds=30,
    scale_down_seconds=600,
    node_filter='$[?(@.region == "eu")]',
    storage_profiles=("ssd", "hdd"),
    consistency_mode=ConsistencyMode.HA,
    update_version=8,
)
DEFAULT_ZONE = Zone(3, "Default", 25, 1, 1, 0, 0, "", ("default",), ConsistencyMode.STRONG)
ENTRY_EXAMPLES: dict[type, e.UpdateEntry] = {
    e.ObjectIdsReserved: e.ObjectIdsReserved(5),
    e.SchemaCreated: e.SchemaCreated(SCHEMA),
    e.SchemaDropped: e.SchemaDropped(7),
    e.ZoneCreated: e.ZoneCreated(ZONE),
    e.ZoneAltered: e.ZoneAltered(ZONE),
    e.ZoneDropped: e.ZoneDropped(2),
    e.DefaultZoneSet: e.DefaultZoneSet(2),
    e.TableCreated: e.TableCreated(TABLE),
    e.TableDropped: e.TableDropped(10),
    e.TableRenamed: e.TableRenamed(10, "ORDERS_2024"),
    e.ColumnsAdded: e.ColumnsAdded(10, (PRICE, KEY)),
    e.ColumnsDropped: e.ColumnsDropped(10, ("PRICE", "KEY")),
    e.ColumnAltered: e.ColumnAltered(10, PRICE),
    e.TablePropertiesSet: e.TablePropertiesSet(10, PROPERTIES),
    e.IndexCreated: e.IndexCreated(INDEX),
    e.IndexRenamed: e.IndexRenamed(12, "BY_KEY"),
    e.IndexBuildStarted: e.IndexBuildStarted(12),
    e.IndexMadeAvailable: e.IndexMadeAvailable(12),
    e.IndexStopped: e.IndexStopped(13),
    e.IndexRemoved: e.IndexRemoved(13),
}
SOFT_DELETE_ENTRY_EXAMPLES: dict[type, e.UpdateEntry] = {
    e.TableSoftDropped: e.TableSoftDropped(10, 1_700_000_360_000 << 16 | 3, 3_600_000),
    e.TableRecovered: e.TableRecovered(10),
}
"""Entries of release 0.3.0; kept out of ``UPDATE``, whose released files
predate them."""
PRIMARY_KEY_ENTRY_EXAMPLES: dict[str, e.UpdateEntry] = {
    "PrimaryKeySet": e.PrimaryKeySet(
        10, ("ID", "REGION"), IndexKind.SORTED, (Collation.ASC_NULLS_LAST,) * 2, 14
    ),
    "PrimaryKeySet-dropped": e.PrimaryKeySet(10, (), IndexKind.HASH, (), None),
}
"""Entries of release 0.4.0, kept out of ``UPDATE`` likewise."""
LAYOUT_ENTRY_EXAMPLES: dict[str, e.UpdateEntry] = {
    "PartitionSpecAdded": e.PartitionSpecAdded(10, SPEC),
    "DefaultPartitionSpecSet": e.DefaultPartitionSpecSet(10, 1),
    "SortOrderAdded": e.SortOrderAdded(10, ORDER),
    "DefaultSortOrderSet": e.DefaultSortOrderSet(10, 2),
}
"""Entries of release 0.5.0, kept out of ``UPDATE`` likewise."""
MOVE_ENTRY_EXAMPLES: dict[str, e.UpdateEntry] = {
    "TableMoved": e.TableMoved(10, 7, "ORDERS_2024"),
}
"""Entries of release 0.6.0, kept out of ``UPDATE`` likewise."""
DATA_ENTRY_EXAMPLES: dict[str, e.UpdateEntry] = {
    "TableDataCommitted": e.TableDataCommitted(
        10, 4, "append", "/warehouse/10/metadata/00004-a.metadata.json", 1_000, 0, 3, 0
    ),
}
"""Entries of release 0.7.0, kept out of ``UPDATE`` likewise."""
UPDATE = e.VersionedUpdate(
    version=9,
    commit_time=1_700_000_000_123 << 16 | 7,
    delay_ms=250,
    entries=tuple(ENTRY_EXAMPLES.values()),
    node="node-a",
    request_id="req-0042",
    request_digest=bytes(range(32)),
    applied=(True, False, True),
)
SNAPSHOT = CatalogVersion(
    version=9,
    activation_time=(1_700_000_000_123 + 250) << 16 | 7,
    object_id_gen=14,
    default_zone_id=2,
    schemas_by_id=Map({1: Schema(1, "PUBLIC", 1), 7: SCHEMA}),
    schema_names=Map({"PUBLIC": 1, "SALES": 7}),
    tables_by_id=Map({10: TABLE}),
    table_names=Map({(7, "ORDERS"): 10}),
    indexes_by_id=Map({11: PK_INDEX, 12: INDEX, 13: STOPPING_INDEX}),
    index_names=Map({(7, "ORDERS_PK"): 11, (7, "ORDERS_BY_KEY"): 12}),
    table_indexes=Map({10: (11, 13, 12)}),
    zones_by_id=Map({2: ZONE, 3: DEFAULT_ZONE}),
    zone_names=Map({"EU": 2, "Default": 3}),
    table_data=Map({10: 4}),
)

CHECKPOINT = Checkpoint(
    SNAPSHOT,
    (
        RequestRecord("a-1", 8, (1_700_000_000_000 + 250) << 16, bytes(32), (True,)),
        RequestRecord("req-0042", 9, SNAPSHOT.activation_time, bytes(range(32)), (True, False)),
    ),
)

EXAMPLES: dict[str, object] = {
    "Schema": SCHEMA,
    "Column": PRICE,
    "Column-function_default": KEY,
    "Column-initial_default": REDEFAULTED,
    "Column-no_initial_default": CREATED_WITH_DEFAULT,
    "Column-nested": NESTED,
    "Column-iceberg_uuid": ICEBERG_UUID,
    "Table": TABLE,
    "Table-soft_deleted": SOFT_DELETED_TABLE,
    "Table-keyless": KEYLESS_TABLE,
    "Table-partitioned": PARTITIONED_TABLE,
    "PartitionSpec": SPEC,
    "PartitionSpec-unpartitioned": PartitionSpec(0),
    "SortOrder": ORDER,
    "SortOrder-unsorted": SortOrder(0),
    "TableProperties": PROPERTIES,
    "Index": INDEX,
    "Zone": ZONE,
    **{f"ConstantDefault-{k}": ConstantDefault(v) for k, v in CONSTANTS.items()},
    "FunctionDefault": FunctionDefault("RAND_UUID"),
    **{cls.__name__: entry for cls, entry in ENTRY_EXAMPLES.items()},
    **{cls.__name__: entry for cls, entry in SOFT_DELETE_ENTRY_EXAMPLES.items()},
    **PRIMARY_KEY_ENTRY_EXAMPLES,
    **LAYOUT_ENTRY_EXAMPLES,
    **MOVE_ENTRY_EXAMPLES,
    **DATA_ENTRY_EXAMPLES,
    "VersionedUpdate": UPDATE,
    "CatalogVersion": SNAPSHOT,
    "Checkpoint": CHECKPOINT,
}
"""Golden-file name stem (``Type`` or ``Type-variant``) → fully populated example."""


def assert_same(actual: object, expected: object) -> None:
    """Equality, except that NaN never equals itself: then repr and bytes must agree."""
    if actual == expected:
        return
    assert repr(actual) == repr(expected)
    assert encode(actual) == encode(expected)
