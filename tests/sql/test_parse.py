"""Every supported statement form → the exact command it produces."""

from __future__ import annotations

import pytest

from almanac.commands import (
    AddColumns,
    AlterColumn,
    AlterZone,
    ColumnDef,
    Command,
    CreateIndex,
    CreateSchema,
    CreateTable,
    CreateZone,
    DropColumns,
    DropIndex,
    DropSchema,
    DropTable,
    DropZone,
    RenameTable,
    RenameZone,
    SetDefaultZone,
)
from almanac.errors import SqlParseError
from almanac.model.datatypes import ColumnType
from almanac.model.descriptors import Collation, ConsistencyMode, ConstantDefault, IndexKind
from almanac.sql.parsing import parse_script

INT = ColumnType.INT32


def one(sql: str, **kwargs: str) -> Command:
    commands = parse_script(sql, **kwargs)
    assert len(commands) == 1, commands
    return commands[0]


def col(name: str, ctype: ColumnType = INT, **kwargs: object) -> ColumnDef:
    return ColumnDef(name=name, type=ctype, **kwargs)  # type: ignore[arg-type]


def key(name: str, ctype: ColumnType = INT) -> ColumnDef:
    return ColumnDef(name=name, type=ctype, nullable=False)


# -- schemas ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("CREATE SCHEMA s", CreateSchema("S")),
        ("create schema IF NOT EXISTS Sales", CreateSchema("SALES", if_not_exists=True)),
        ('CREATE SCHEMA "Mixed"', CreateSchema("Mixed")),
        ("DROP SCHEMA s", DropSchema("S")),
        ("DROP SCHEMA IF EXISTS s", DropSchema("S", if_exists=True)),
        ("DROP SCHEMA s CASCADE", DropSchema("S", cascade=True)),
        ("DROP SCHEMA IF EXISTS s RESTRICT", DropSchema("S", if_exists=True, cascade=False)),
    ],
)
def test_schema_statements(sql: str, expected: Command) -> None:
    assert one(sql) == expected


# -- CREATE TABLE ----------------------------------------------------------------


def test_create_table_with_a_column_level_key() -> None:
    assert one("CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(20))") == CreateTable(
        name="T",
        columns=(key("ID"), col("NAME", ColumnType.STRING, length=20)),
        primary_key=("ID",),
    )


def test_primary_key_columns_are_implicitly_not_null() -> None:
    command = one("CREATE TABLE t (a INT, b INT NOT NULL, c INT NULL, PRIMARY KEY (a, b))")
    assert isinstance(command, CreateTable)
    assert command.columns == (key("A"), key("B"), col("C"))
    assert command.primary_key == ("A", "B")
    assert command.primary_key_kind is IndexKind.HASH
    assert command.primary_key_collations is None


def test_create_table_with_every_clause() -> None:
    sql = """
        CREATE TABLE IF NOT EXISTS sales.orders (
            id BIGINT,
            region VARCHAR(8) NOT NULL DEFAULT 'EU',
            note STRING,
            PRIMARY KEY USING SORTED (id DESC, region NULLS FIRST)
        ) COLOCATE BY (region) ZONE "Default" STORAGE PROFILE 'Fast_SSD'
    """
    assert one(sql) == CreateTable(
        name="ORDERS",
        schema="SALES",
        columns=(
            key("ID", ColumnType.INT64),
            ColumnDef(
                name="REGION",
                type=ColumnType.STRING,
                nullable=False,
                length=8,
                default=ConstantDefault("EU"),
            ),
            col("NOTE", ColumnType.STRING),
        ),
        primary_key=("ID", "REGION"),
        primary_key_kind=IndexKind.SORTED,
        primary_key_collations=(Collation.DESC_NULLS_FIRST, Collation.ASC_NULLS_FIRST),
        colocation=("REGION",),
        zone="Default",
        storage_profile="Fast_SSD",
        if_not_exists=True,
    )


@pytest.mark.parametrize(
    ("order", "collation"),
    [
        ("", Collation.ASC_NULLS_LAST),
        ("ASC", Collation.ASC_NULLS_LAST),
        ("DESC", Collation.DESC_NULLS_FIRST),
        ("NULLS FIRST", Collation.ASC_NULLS_FIRST),
        ("NULLS LAST", Collation.ASC_NULLS_LAST),
        ("ASC NULLS FIRST", Collation.ASC_NULLS_FIRST),
        ("ASC NULLS LAST", Collation.ASC_NULLS_LAST),
        ("DESC NULLS FIRST", Collation.DESC_NULLS_FIRST),
        ("DESC NULLS LAST", Collation.DESC_NULLS_LAST),
    ],
)
def test_sorted_primary_key_collations(order: str, collation: Collation) -> None:
    command = one(f"CREATE TABLE t (a INT, PRIMARY KEY USING SORTED (a {order}))")
    assert isinstance(command, CreateTable)
    assert command.primary_key_kind is IndexKind.SORTED
    assert command.primary_key_collations == (collation,)


@pytest.mark.parametrize(
    "sql",
    [
        "CREATE TABLE t (a INT, b INT, PRIMARY KEY (a, b))",
        "CREATE TABLE t (a INT, b INT, PRIMARY KEY USING HASH (a, b))",
    ],
)
def test_hash_primary_key(sql: str) -> None:
    assert one(sql) == CreateTable(name="T", columns=(key("A"), key("B")), primary_key=("A", "B"))


@pytest.mark.parametrize(
    ("clause", "expected"),
    [
        ("COLOCATE BY (b, a)", {"colocation": ("B", "A")}),
        ("COLOCATE (a)", {"colocation": ("A",)}),
        ("ZONE z", {"zone": "Z"}),
        ('ZONE "MyZone"', {"zone": "MyZone"}),
        ("STORAGE PROFILE 'default'", {"storage_profile": "default"}),
        (
            "ZONE z, STORAGE PROFILE 'p', COLOCATE BY (a)",
            {"zone": "Z", "storage_profile": "p", "colocation": ("A",)},
        ),
    ],
)
def test_table_clauses(clause: str, expected: dict[str, object]) -> None:
    command = one(f"CREATE TABLE t (a INT, b INT, PRIMARY KEY (a, b)) {clause}")
    assert command == CreateTable(
        name="T",
        columns=(key("A"), key("B")),
        primary_key=("A", "B"),
        **expected,  # type: ignore[arg-type]
    )


def test_a_table_without_key_is_left_to_the_command_to_refuse() -> None:
    assert one("CREATE TABLE t (a INT)") == CreateTable(
        name="T", columns=(col("A"),), primary_key=()
    )


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("DROP TABLE t", [DropTable("T")]),
        ("DROP TABLE IF EXISTS s.t", [DropTable("T", "S", if_exists=True)]),
        ('DROP TABLE "s"."Mixed"', [DropTable("Mixed", "s")]),
        ("DROP TABLE a, s.b", [DropTable("A"), DropTable("B", "S")]),
    ],
)
def test_drop_table(sql: str, expected: list[Command]) -> None:
    assert parse_script(sql) == expected


# -- ALTER TABLE -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("ALTER TABLE t ADD COLUMN c INT", AddColumns(table="T", columns=(col("C"),))),
        ("ALTER TABLE t ADD c INT", AddColumns(table="T", columns=(col("C"),))),
        (
            "ALTER TABLE IF EXISTS s.t ADD COLUMN IF NOT EXISTS c INT NOT NULL DEFAULT 0",
            AddColumns(
                table="T",
                schema="S",
                columns=(col("C", nullable=False, default=ConstantDefault(0)),),
                if_column_not_exists=True,
                if_table_exists=True,
            ),
        ),
        (
            "ALTER TABLE t ADD (c INT, d VARCHAR(5))",
            AddColumns(table="T", columns=(col("C"), col("D", ColumnType.STRING, length=5))),
        ),
        (
            "ALTER TABLE t ADD COLUMN IF NOT EXISTS (c INT, d INT)",
            AddColumns(table="T", columns=(col("C"), col("D")), if_column_not_exists=True),
        ),
        (
            "ALTER TABLE t ADD COLUMN c INT, ADD COLUMN d INT",
            AddColumns(table="T", columns=(col("C"), col("D"))),
        ),
    ],
)
def test_add_columns(sql: str, expected: Command) -> None:
    assert one(sql) == expected


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("ALTER TABLE t DROP COLUMN c", DropColumns(table="T", columns=("C",))),
        ("ALTER TABLE t DROP c", DropColumns(table="T", columns=("C",))),
        (
            "ALTER TABLE t DROP COLUMN IF EXISTS c",
            DropColumns(table="T", columns=("C",), if_column_exists=True),
        ),
        ("ALTER TABLE t DROP COLUMN (c, d)", DropColumns(table="T", columns=("C", "D"))),
        ("ALTER TABLE t DROP (c, d)", DropColumns(table="T", columns=("C", "D"))),
        (
            'ALTER TABLE IF EXISTS s.t DROP IF EXISTS (c, "d")',
            DropColumns(
                table="T",
                schema="S",
                columns=("C", "d"),
                if_column_exists=True,
                if_table_exists=True,
            ),
        ),
        (
            "ALTER TABLE t DROP COLUMN c, DROP COLUMN d",
            DropColumns(table="T", columns=("C", "D")),
        ),
    ],
)
def test_drop_columns(sql: str, expected: Command) -> None:
    assert one(sql) == expected


@pytest.mark.parametrize(
    ("action", "changes"),
    [
        ("ALTER COLUMN c SET DATA TYPE BIGINT", {"type": ColumnType.INT64}),
        ("ALTER COLUMN c BIGINT", {"type": ColumnType.INT64}),
        ("ALTER c TYPE BIGINT", {"type": ColumnType.INT64}),
        (
            "ALTER COLUMN c SET DATA TYPE DECIMAL(12, 3)",
            {"type": ColumnType.DECIMAL, "precision": 12, "scale": 3},
        ),
        ("ALTER COLUMN c SET DATA TYPE VARCHAR(100)", {"type": ColumnType.STRING, "length": 100}),
        ("ALTER COLUMN c SET NOT NULL", {"not_null": True}),
        ("ALTER COLUMN c DROP NOT NULL", {"not_null": False}),
        ("ALTER COLUMN c SET DEFAULT 5", {"default": ConstantDefault(5)}),
        ("ALTER COLUMN c SET DEFAULT 'x'", {"default": ConstantDefault("x")}),
        ("ALTER COLUMN c SET DEFAULT NULL", {"default": ConstantDefault(None)}),
        ("ALTER COLUMN c DROP DEFAULT", {"drop_default": True}),
    ],
)
def test_alter_column(action: str, changes: dict[str, object]) -> None:
    assert one(f"ALTER TABLE t {action}") == AlterColumn(
        table="T",
        column="C",
        **changes,  # type: ignore[arg-type]
    )


def test_alter_column_keeps_table_options() -> None:
    assert one('ALTER TABLE IF EXISTS s.t ALTER COLUMN "c" DROP NOT NULL') == AlterColumn(
        table="T", column="c", schema="S", not_null=False, if_table_exists=True
    )


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("ALTER TABLE t RENAME TO u", RenameTable("T", "U")),
        ("ALTER TABLE s.t RENAME TO s.u", RenameTable("T", "U", "S")),
        ("ALTER TABLE s.t RENAME TO o.u", RenameTable("T", "U", "S", new_schema="O")),
        ("ALTER TABLE t RENAME TO o.t", RenameTable("T", "T", new_schema="O")),
        ('ALTER TABLE IF EXISTS t RENAME TO "u"', RenameTable("T", "u", if_exists=True)),
    ],
)
def test_rename_table(sql: str, expected: Command) -> None:
    assert one(sql) == expected


def test_alter_table_with_several_actions_keeps_their_order() -> None:
    assert parse_script(
        "ALTER TABLE t ADD a INT, DROP COLUMN b, DROP COLUMN c, ADD d INT, ADD e INT"
    ) == [
        AddColumns(table="T", columns=(col("A"),)),
        DropColumns(table="T", columns=("B", "C")),
        AddColumns(table="T", columns=(col("D"), col("E"))),
    ]


def test_adds_with_different_if_not_exists_stay_apart() -> None:
    assert parse_script("ALTER TABLE t ADD a INT, ADD IF NOT EXISTS b INT") == [
        AddColumns(table="T", columns=(col("A"),)),
        AddColumns(table="T", columns=(col("B"),), if_column_not_exists=True),
    ]


# -- indexes ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        (
            "CREATE INDEX i ON t (a)",
            CreateIndex(
                name="I", table="T", columns=("A",), collations=(Collation.ASC_NULLS_LAST,)
            ),
        ),
        (
            "CREATE UNIQUE INDEX IF NOT EXISTS i ON s.t USING HASH (a, b)",
            CreateIndex(
                name="I",
                table="T",
                schema="S",
                columns=("A", "B"),
                kind=IndexKind.HASH,
                unique=True,
                if_not_exists=True,
            ),
        ),
        (
            "CREATE INDEX i ON t USING SORTED (a DESC, b ASC NULLS FIRST, c NULLS LAST, "
            "d DESC NULLS LAST)",
            CreateIndex(
                name="I",
                table="T",
                columns=("A", "B", "C", "D"),
                collations=(
                    Collation.DESC_NULLS_FIRST,
                    Collation.ASC_NULLS_FIRST,
                    Collation.ASC_NULLS_LAST,
                    Collation.DESC_NULLS_LAST,
                ),
            ),
        ),
        (
            'CREATE INDEX "Idx" ON "S"."T" ("a")',
            CreateIndex(
                name="Idx",
                table="T",
                schema="S",
                columns=("a",),
                collations=(Collation.ASC_NULLS_LAST,),
            ),
        ),
        ("DROP INDEX i", DropIndex("I")),
        ("DROP INDEX IF EXISTS s.i", DropIndex("I", "S", if_exists=True)),
    ],
)
def test_index_statements(sql: str, expected: Command) -> None:
    assert one(sql) == expected


def test_ascending_order_on_a_hash_index_is_refused() -> None:
    sql = "CREATE INDEX i ON t USING HASH (a, b ASC)"
    with pytest.raises(SqlParseError, match="HASH index takes no ASC/DESC") as info:
        parse_script(sql)
    assert (info.value.line, info.value.column, info.value.text) == (1, sql.index("b ASC") + 1, "b")


# -- zones -----------------------------------------------------------------------


def test_create_zone_with_every_option() -> None:
    sql = """
        CREATE ZONE IF NOT EXISTS "Hot" WITH (
            PARTITIONS=16, REPLICAS=3, QUORUM_SIZE=2,
            STORAGE_PROFILES=' ssd , Default ',
            DATA_NODES_FILTER='$[?(@.region == "eu")]',
            DATA_NODES_AUTO_ADJUST_SCALE_UP=5,
            data_nodes_auto_adjust_scale_down=0,
            CONSISTENCY_MODE='HIGH_AVAILABILITY'
        )
    """
    assert one(sql) == CreateZone(
        name="Hot",
        partitions=16,
        replicas=3,
        quorum_size=2,
        storage_profiles=("ssd", "Default"),
        node_filter='$[?(@.region == "eu")]',
        scale_up_seconds=5,
        scale_down_seconds=0,
        consistency_mode=ConsistencyMode.HA,
        if_not_exists=True,
    )


@pytest.mark.parametrize(
    ("value", "mode"),
    [
        ("'STRONG'", ConsistencyMode.STRONG),
        ("'HIGH_AVAILABILITY'", ConsistencyMode.HA),
        ("'HA'", ConsistencyMode.HA),
        ("'ha'", ConsistencyMode.HA),
        ("STRONG", ConsistencyMode.STRONG),
    ],
)
def test_consistency_modes(value: str, mode: ConsistencyMode) -> None:
    assert one(f"CREATE ZONE z WITH (CONSISTENCY_MODE={value})") == CreateZone(
        name="Z", consistency_mode=mode
    )


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("CREATE ZONE z", CreateZone(name="Z")),
        ("CREATE ZONE z WITH PARTITIONS=2", CreateZone(name="Z", partitions=2)),
        ("CREATE ZONE z WITH (REPLICAS=-1)", CreateZone(name="Z", replicas=-1)),
        (
            "ALTER ZONE z SET (REPLICAS=3, QUORUM_SIZE=2)",
            AlterZone(name="Z", replicas=3, quorum_size=2),
        ),
        ("ALTER ZONE IF EXISTS z SET REPLICAS=3", AlterZone(name="Z", replicas=3, if_exists=True)),
        (
            "ALTER ZONE z SET (STORAGE_PROFILES='a,b', DATA_NODES_FILTER='$..*')",
            AlterZone(name="Z", storage_profiles=("a", "b"), node_filter="$..*"),
        ),
        (
            "ALTER ZONE z SET PARTITIONS=4, CONSISTENCY_MODE='HA'",
            AlterZone(name="Z", partitions=4, consistency_mode=ConsistencyMode.HA),
        ),
        ("ALTER ZONE z RENAME TO y", RenameZone("Z", "Y")),
        ('ALTER ZONE IF EXISTS "Default" RENAME TO "Old"', RenameZone("Default", "Old", True)),
        ('ALTER ZONE "Default" SET DEFAULT', SetDefaultZone("Default")),
        ("ALTER ZONE IF EXISTS z SET DEFAULT", SetDefaultZone("Z", if_exists=True)),
        ("DROP ZONE z", DropZone("Z")),
        ('DROP ZONE IF EXISTS "z"', DropZone("z", if_exists=True)),
    ],
)
def test_zone_statements(sql: str, expected: Command) -> None:
    assert one(sql) == expected


# -- names and scripts -----------------------------------------------------------


@pytest.mark.parametrize(
    ("sql", "schema", "table", "column"),
    [
        ("CREATE TABLE orders (id INT PRIMARY KEY)", "PUBLIC", "ORDERS", "ID"),
        ("CREATE TABLE Orders (Id INT PRIMARY KEY)", "PUBLIC", "ORDERS", "ID"),
        ('CREATE TABLE "Orders" ("Id" INT PRIMARY KEY)', "PUBLIC", "Orders", "Id"),
        ('CREATE TABLE "orders" ("id" INT PRIMARY KEY)', "PUBLIC", "orders", "id"),
        ("CREATE TABLE sales.orders (id INT PRIMARY KEY)", "SALES", "ORDERS", "ID"),
        ('CREATE TABLE "Sales".orders (id INT PRIMARY KEY)', "Sales", "ORDERS", "ID"),
        ('CREATE TABLE "a b"."c.d" ("e""f" INT PRIMARY KEY)', "a b", "c.d", 'e"f'),
    ],
)
def test_identifier_casing(sql: str, schema: str, table: str, column: str) -> None:
    command = one(sql)
    assert isinstance(command, CreateTable)
    assert (command.schema, command.name, command.columns[0].name) == (schema, table, column)
    assert command.primary_key == (column,)


def test_default_schema_names_unqualified_objects_only() -> None:
    commands = parse_script(
        "CREATE TABLE t (a INT PRIMARY KEY); CREATE INDEX i ON t (a); DROP TABLE other.u",
        default_schema="Work",
    )
    assert commands == [
        CreateTable(name="T", schema="Work", columns=(key("A"),), primary_key=("A",)),
        CreateIndex(
            name="I",
            table="T",
            schema="Work",
            columns=("A",),
            collations=(Collation.ASC_NULLS_LAST,),
        ),
        DropTable("U", "OTHER"),
    ]


def test_keywords_can_be_quoted_names() -> None:
    command = one('CREATE TABLE "TABLE" ("SELECT" INT PRIMARY KEY, "zone" INT)')
    assert command == CreateTable(
        name="TABLE", columns=(key("SELECT"), col("zone")), primary_key=("SELECT",)
    )


def test_script_of_several_statements_keeps_their_order() -> None:
    script = """
        -- set up a schema
        CREATE SCHEMA app;
        CREATE TABLE app.users (id UUID DEFAULT RAND_UUID PRIMARY KEY, name VARCHAR(64));;
        /* an index */ CREATE INDEX users_name ON app.users (name);
        ALTER TABLE app.users ADD COLUMN age INT;
    """
    assert [type(c) for c in parse_script(script)] == [
        CreateSchema,
        CreateTable,
        CreateIndex,
        AddColumns,
    ]


@pytest.mark.parametrize("script", ["", "   ", ";", " ; ;\n;", "-- nothing\n", "/* x */;"])
def test_empty_scripts_have_no_commands(script: str) -> None:
    assert parse_script(script) == []
