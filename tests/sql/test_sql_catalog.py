"""End to end: SQL scripts run against an in-memory catalog, one version each."""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Iterator

import pytest

import almanac
from almanac import Catalog
from almanac.errors import AlreadyExistsError, NotFoundError, SqlParseError, ValidationError
from almanac.model.datatypes import ColumnType
from almanac.model.descriptors import (
    Collation,
    ConsistencyMode,
    ConstantDefault,
    FunctionDefault,
    IndexKind,
)


@pytest.fixture
def cat() -> Iterator[Catalog]:
    with almanac.connect("memory://") as catalog:
        yield catalog


def test_a_script_is_one_version(cat: Catalog) -> None:
    before = cat.catalog().version
    version = cat.sql(
        """
        CREATE SCHEMA app;
        CREATE ZONE hot WITH (PARTITIONS=4, REPLICAS=3, STORAGE_PROFILES='ssd,hdd');
        CREATE TABLE app.orders (
            id UUID DEFAULT RAND_UUID,
            region VARCHAR(8) DEFAULT 'EU',
            placed DATE DEFAULT DATE '2024-01-31',
            amount DECIMAL(10, 2) DEFAULT 0.00,
            PRIMARY KEY USING SORTED (region, id DESC)
        ) COLOCATE BY (region) ZONE hot STORAGE PROFILE 'hdd';
        CREATE INDEX orders_placed ON app.orders USING HASH (placed);
        """
    ).version
    assert version == before + 1
    at = cat.catalog()
    table = at.table("ORDERS", "APP")
    assert table is not None
    assert [(c.name, c.type, c.nullable) for c in table.columns] == [
        ("ID", ColumnType.UUID, False),
        ("REGION", ColumnType.STRING, False),
        ("PLACED", ColumnType.DATE, True),
        ("AMOUNT", ColumnType.DECIMAL, True),
    ]
    assert table.columns[0].default == FunctionDefault("RAND_UUID")
    assert table.columns[1].length == 8
    assert table.columns[2].default == ConstantDefault(dt.date(2024, 1, 31))
    assert table.columns[3].default == ConstantDefault(decimal.Decimal("0.00"))
    assert (table.columns[3].precision, table.columns[3].scale) == (10, 2)
    assert table.primary_key == ("REGION", "ID")
    assert table.primary_key_kind is IndexKind.SORTED
    assert table.primary_key_collations == (Collation.ASC_NULLS_LAST, Collation.DESC_NULLS_FIRST)
    assert table.colocation == ("REGION",)
    assert table.storage_profile == "hdd"
    zone = at.zone("HOT")
    assert zone is not None and table.zone_id == zone.id
    assert (zone.partitions, zone.replicas, zone.storage_profiles) == (4, 3, ("ssd", "hdd"))
    index = at.index("ORDERS_PLACED", "APP")
    assert index is not None
    assert (index.kind, index.columns) == (IndexKind.HASH, ("PLACED",))


def test_a_failing_statement_rolls_back_the_whole_script(cat: Catalog) -> None:
    cat.sql("CREATE TABLE t (id INT PRIMARY KEY)")
    before = cat.catalog()
    with pytest.raises(AlreadyExistsError):
        cat.sql("CREATE SCHEMA s; CREATE TABLE s.u (id INT PRIMARY KEY); CREATE TABLE t (x INT)")
    after = cat.catalog()
    assert after.version == before.version
    assert after.schema("S") is None


def test_a_syntax_error_runs_nothing(cat: Catalog) -> None:
    before = cat.catalog().version
    with pytest.raises(SqlParseError) as info:
        cat.sql("CREATE SCHEMA s;\nCREATE TABLE s.t (id INT PRIMARY KEY) ZONE")
    assert info.value.line == 2
    assert cat.catalog().version == before
    assert cat.catalog().schema("S") is None


def test_columns_evolve_through_alter_table(cat: Catalog) -> None:
    cat.sql("CREATE TABLE t (id INT PRIMARY KEY, n SMALLINT NOT NULL DEFAULT 0, s VARCHAR(4))")
    cat.sql(
        """
        ALTER TABLE t ADD COLUMN (flag BOOLEAN DEFAULT FALSE, note STRING);
        ALTER TABLE t ALTER COLUMN n SET DATA TYPE BIGINT;
        ALTER TABLE t ALTER COLUMN n DROP NOT NULL;
        ALTER TABLE t ALTER COLUMN s SET DATA TYPE VARCHAR(16);
        ALTER TABLE t ALTER COLUMN s SET DEFAULT 'none';
        ALTER TABLE t DROP COLUMN note;
        ALTER TABLE t RENAME TO "Things";
        """
    )
    table = cat.catalog().table("Things")
    assert table is not None
    assert [(c.name, c.type, c.nullable, c.length, c.default) for c in table.columns] == [
        ("ID", ColumnType.INT32, False, None, None),
        ("N", ColumnType.INT64, True, None, ConstantDefault(0)),
        ("S", ColumnType.STRING, True, 16, ConstantDefault("none")),
        ("FLAG", ColumnType.BOOLEAN, True, None, ConstantDefault(False)),
    ]


def test_catalog_rules_still_apply_to_sql(cat: Catalog) -> None:
    cat.sql("CREATE TABLE t (id INT PRIMARY KEY, n INT)")
    with pytest.raises(ValidationError, match="SET NOT NULL"):
        cat.sql("ALTER TABLE t ALTER COLUMN n SET NOT NULL")
    with pytest.raises(ValidationError, match="not a valid INT8"):
        cat.sql("CREATE TABLE u (id TINYINT DEFAULT 300 PRIMARY KEY)")


def test_zone_lifecycle(cat: Catalog) -> None:
    cat.sql("CREATE TABLE t (id INT PRIMARY KEY)")  # creates the "Default" zone
    cat.sql(
        """
        ALTER ZONE "Default" SET (REPLICAS=3, DATA_NODES_AUTO_ADJUST_SCALE_UP=10);
        CREATE ZONE IF NOT EXISTS ha WITH (CONSISTENCY_MODE='HIGH_AVAILABILITY');
        ALTER ZONE ha RENAME TO "Ha";
        ALTER ZONE "Ha" SET DEFAULT;
        """
    )
    version = cat.catalog()
    default = version.zone("Default")
    assert default is not None
    assert (default.replicas, default.scale_up_seconds) == (3, 10)
    assert version.zone("HA") == version.zone("Ha")  # renamed: any spelling finds it
    assert version.default_zone is not None and version.default_zone.name == "Ha"
    assert version.default_zone.consistency_mode is ConsistencyMode.HA
    cat.sql('ALTER ZONE "Default" SET DEFAULT; DROP ZONE IF EXISTS "Ha"; DROP ZONE IF EXISTS x')
    assert [z.name for z in cat.catalog().zones()] == ["Default"]


def test_drop_statements(cat: Catalog) -> None:
    cat.sql(
        "CREATE SCHEMA s; CREATE TABLE s.t (id INT PRIMARY KEY, v INT); CREATE INDEX i ON s.t (v)"
    )
    cat.sql("DROP INDEX s.i; DROP TABLE IF EXISTS s.t; DROP TABLE IF EXISTS s.nope")
    version = cat.catalog()
    assert version.table("T", "S") is None
    cat.sql("CREATE TABLE s.u (id INT PRIMARY KEY)")
    cat.sql("DROP SCHEMA s CASCADE")
    assert cat.catalog().schema("S") is None


def test_set_default_literal_is_read_as_the_column_type() -> None:
    with almanac.connect("memory://") as cat:
        cat.sql("CREATE TABLE T (ID INT PRIMARY KEY, D DOUBLE, DT DATE)")
        cat.sql(
            "ALTER TABLE T ALTER COLUMN D SET DEFAULT 1.5; "
            "ALTER TABLE T ALTER COLUMN DT SET DEFAULT '2020-01-02'"
        )
        table = cat.catalog().table("T")
        assert table is not None
        d, day = table.column("D"), table.column("DT")
        assert d is not None and d.default == almanac.ConstantDefault(1.5)
        assert day is not None and day.default == almanac.ConstantDefault(dt.date(2020, 1, 2))
        with pytest.raises(almanac.ValidationError, match="not a valid DATE"):
            cat.sql("ALTER TABLE T ALTER COLUMN DT SET DEFAULT 'soon'")


def test_rename_to_another_schema_moves_the_table_in_one_version(cat: Catalog) -> None:
    cat.sql(
        "CREATE SCHEMA s; CREATE SCHEMA o;"
        "CREATE TABLE s.t (id INT64 PRIMARY KEY, name VARCHAR(10));"
        "CREATE INDEX t_name ON s.t (name)"
    )
    before = cat.catalog()
    table = before.table("T", "S")
    assert table is not None
    moved = cat.sql("ALTER TABLE s.t RENAME TO o.u").version
    assert moved == before.version + 1
    after = cat.catalog()
    assert after.table("T", "S") is None
    made = after.table("U", "O")
    assert made is not None and made.id == table.id
    assert {i.name for i in after.indexes(made.id)} == {"U_PK", "T_NAME"}
    assert cat.catalog(before.version).table("T", "S") is not None  # time travel
    cat.sql("CREATE TABLE s.u (id INT64 PRIMARY KEY)")
    with pytest.raises(AlreadyExistsError):
        cat.sql("ALTER TABLE s.u RENAME TO o.u")
    with pytest.raises(NotFoundError):
        cat.sql("ALTER TABLE s.u RENAME TO nowhere.u")
    assert cat.catalog().version == moved + 1
