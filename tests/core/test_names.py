"""One rule for names: within its parent a name is unique without regard to
case, and every spelling finds the object, which keeps the name it was
first given (after SQL's folding of unquoted names). A catalog made before
the rule may hold case-only twins: it opens, says so, each twin stays
reachable by its exact spelling, and only an ambiguous spelling is refused."""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from immutables import Map

import almanac
from almanac import Catalog
from almanac.commands import (
    AddColumns,
    ColumnDef,
    CreateIndex,
    CreateSchema,
    CreateTable,
    CreateZone,
    RenameColumn,
    RenameIndex,
    RenameTable,
    RenameZone,
)
from almanac.errors import AlreadyExistsError, AmbiguousNameError, ValidationError
from almanac.model.catalog_version import CatalogVersion
from almanac.model.datatypes import ColumnType
from almanac.model.entries import UpdateEntry, VersionedUpdate, apply_entries
from almanac.model.names import name_key
from almanac.model.table_names import parse_name, resolve_table
from almanac.serialization import decode_catalog, encode_catalog

ID = ColumnDef(name="ID", type=ColumnType.INT64, nullable=False)


def _table(name: str, schema: str = "PUBLIC") -> CreateTable:
    return CreateTable(name=name, schema=schema, columns=(ID,), primary_key=("ID",))


def test_sql_and_python_api_make_one_schema(cat: Catalog) -> None:
    cat.execute([CreateSchema("sales")])
    with pytest.raises(AlreadyExistsError, match=r"Schema 'SALES' already exists as 'sales'"):
        cat.sql("CREATE SCHEMA sales")
    cat.sql("CREATE SCHEMA IF NOT EXISTS Sales")
    assert [s.name for s in cat.catalog().schemas()] == ["PUBLIC", "sales"]
    cat.sql('CREATE TABLE "SALES".orders (id BIGINT PRIMARY KEY)')
    assert [t.name for t in cat.catalog().tables("sales")] == ["ORDERS"]


def test_every_spelling_finds_the_one_table(cat: Catalog) -> None:
    cat.sql("CREATE SCHEMA sales; CREATE TABLE sales.orders (id BIGINT PRIMARY KEY)")
    version = cat.catalog()
    orders = version.table("ORDERS", "SALES")
    assert orders is not None and orders.name == "ORDERS"
    for schema, name in [("sales", "orders"), ("Sales", "Orders"), ("SALES", "orders")]:
        assert version.table(name, schema) == orders
        assert version.schema(schema) == version.schema("SALES")
        assert version.index(f"{name}_pk", schema) == version.index("ORDERS_PK", "SALES")
        assert resolve_table(version, parse_name(f"{schema}.{name}"))[1] == orders
        assert resolve_table(version, parse_name(f'"{schema}"."{name}"'))[1] == orders
    cat.sql('ALTER TABLE "sales"."orders" ADD COLUMN note STRING')
    shown = cat.sql('DESCRIBE TABLE "sales"."Orders"')
    assert "NOTE" in {row[0] for row in shown.rows}
    cat.sql('DROP TABLE "Sales".orders')
    assert cat.catalog().tables("SALES") == []


@pytest.mark.parametrize(
    ("first", "second", "message"),
    [
        (
            _table("orders"),
            _table("ORDERS"),
            r"Table 'PUBLIC.ORDERS' already exists as 'PUBLIC.orders'",
        ),
        (
            _table("orders"),
            CreateIndex(name="Orders", table="orders", columns=("ID",)),
            r"Table 'PUBLIC.Orders' already exists as 'PUBLIC.orders'",
        ),
        (_table("t"), _table("t_Pk"), r"Index 'PUBLIC.t_Pk' already exists as 'PUBLIC.t_PK'"),
        (CreateZone(name="eu"), CreateZone(name="EU"), r"Zone 'EU' already exists as 'eu'"),
        (CreateSchema("Straße"), CreateSchema("STRASSE"), r"Schema 'STRASSE' already exists"),
        (CreateSchema("café"), CreateSchema("CAFÉ"), r"Schema 'CAFÉ' already exists"),
    ],
    ids=["table", "index-vs-table", "index", "zone", "sharp-s", "accent"],
)
def test_a_create_differing_only_by_case_is_refused(
    cat: Catalog, first: object, second: object, message: str
) -> None:
    cat.execute([first])  # type: ignore[list-item]
    version = cat.latest_version
    with pytest.raises(AlreadyExistsError, match=message):
        cat.execute([second])  # type: ignore[list-item]
    assert cat.latest_version == version


def test_renames_that_change_only_case_keep_the_object(cat: Catalog) -> None:
    cat.execute([_table("orders"), CreateIndex(name="by_id", table="orders", columns=("ID",))])
    cat.execute([CreateZone(name="eu")])
    before = cat.catalog()
    cat.execute([RenameTable("ORDERS", "Orders"), RenameIndex("BY_ID", "By_Id")])
    cat.execute([RenameZone("EU", "Eu")])
    after = cat.catalog()
    orders = after.table("orders")
    assert orders is not None and orders.name == "Orders" and orders.id == before.table("orders").id  # type: ignore[union-attr]
    assert after.index("BY_ID") is not None and after.index("by_id").name == "By_Id"  # type: ignore[union-attr]
    assert after.index("orders_pk").name == "Orders_PK"  # type: ignore[union-attr]
    assert after.zone("EU").name == "Eu"  # type: ignore[union-attr]
    with pytest.raises(AlreadyExistsError, match=r"already exists as 'PUBLIC\.Orders'"):
        cat.execute([_table("x"), RenameTable("X", "ORDERS")])


_LETTERS = "abcxyz\u00df\u00e7\u00e9\u0131\u0130"  # ß ç é, dotless i, dotted I


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    name=st.text(alphabet=_LETTERS, min_size=1, max_size=8),
    flips=st.lists(st.booleans(), min_size=8, max_size=8),
    quoted=st.booleans(),
)
def test_any_spelling_finds_the_table_and_collides_with_it(
    name: str, flips: list[bool], quoted: bool
) -> None:
    """Random per-letter case of a name (Unicode letters with odd case
    mappings among them) finds what the name made, through the Python API,
    SQL and Spark's name resolution, and cannot make a second object."""
    spelled = "".join(c.upper() if f else c.lower() for c, f in zip(name, flips, strict=False))
    spelled += name[len(flips) :]
    assert name_key(spelled) == name_key(name)
    with almanac.connect("memory://") as cat:
        cat.execute([CreateSchema(name), _table(name, name)])
        version = cat.catalog()
        made = version.table(name, name)
        assert made is not None
        assert version.table(spelled, spelled) == made
        assert resolve_table(version, parse_name(f'"{spelled}"."{spelled}"'))[1] == made
        with pytest.raises(AlreadyExistsError):
            cat.execute([_table(spelled, spelled)])
        with pytest.raises(AlreadyExistsError):
            cat.execute([CreateSchema(spelled)])
        sql_name = f'"{spelled}"' if quoted else spelled
        if quoted or spelled.isidentifier():
            rows = cat.sql(f'SHOW TABLES IN "{spelled}"').rows
            assert [row[0] for row in rows] == [made.name] or made.name in str(rows)
            with pytest.raises(AlreadyExistsError):
                cat.sql(f'CREATE TABLE "{spelled}".{sql_name} (id BIGINT PRIMARY KEY)')


# -- a catalog made before the rule ------------------------------------------


def _old_rule(version: CatalogVersion, command: CreateSchema | CreateTable) -> list[UpdateEntry]:
    """The entries ``command`` made before the rule: validated against
    ``version`` with every name key forgotten, so only exact names collide."""
    blind = version.evolve(schema_keys=Map(), table_keys=Map(), index_keys=Map(), zone_keys=Map())
    return command.validate(blind)


def _append_twins(node: Catalog) -> None:
    """Schema ``sales`` beside ``SALES``, and table ``Orders`` beside
    ``ORDERS`` in it, appended to the log as one version made by the old rule."""
    version = node.catalog()
    working = version.evolve(version=version.version + 1)
    entries = _old_rule(working, CreateSchema("sales"))
    working = apply_entries(working, entries)
    more = _old_rule(working, _table("Orders", "SALES"))
    update = VersionedUpdate(
        version=working.version,
        commit_time=node.clock.now(),
        delay_ms=0,
        entries=(*entries, *more),
    )
    assert node.log.append(update) is not None


def test_an_old_catalog_with_case_only_twins_opens_and_reaches_each(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    target = str(tmp_path / "catalog")
    with almanac.connect(target, delay_ms=0) as node:
        node.sql("CREATE SCHEMA SALES; CREATE TABLE SALES.ORDERS (ID BIGINT PRIMARY KEY)")
        _append_twins(node)
    with caplog.at_level(logging.WARNING, logger="almanac.catalog"):
        reopened = almanac.connect(target, delay_ms=0)
    with reopened as cat:
        warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert any("'SALES', 'sales'" in m for m in warned), warned
        assert any("'SALES.ORDERS', 'SALES.Orders'" in m for m in warned), warned
        assert any("'SALES.ORDERS_PK', 'SALES.Orders_PK'" in m for m in warned), warned
        version = cat.catalog()
        assert version.name_collisions() == [
            ("index", ["SALES.ORDERS_PK", "SALES.Orders_PK"]),
            ("schema", ["SALES", "sales"]),
            ("table", ["SALES.ORDERS", "SALES.Orders"]),
        ]
        upper, lower = version.schema("SALES"), version.schema("sales")
        assert upper is not None and lower is not None and upper.id != lower.id
        first, second = version.table("ORDERS", "SALES"), version.table("Orders", "SALES")
        assert first is not None and second is not None and first.id != second.id
        with pytest.raises(AmbiguousNameError, match=r"'SALES' and 'sales'") as err:
            version.schema("Sales")
        assert err.value.context["matches"] == ["SALES", "sales"]
        with pytest.raises(AmbiguousNameError, match=r"'SALES.ORDERS' and 'SALES.Orders'"):
            version.table("orders", "SALES")
        with pytest.raises(AmbiguousNameError):
            cat.sql('DESCRIBE TABLE "SALES"."orders"')
        with pytest.raises(AlreadyExistsError, match="already exists"):
            cat.execute([CreateSchema("sAlEs")])
        # A snapshot of it encodes and decodes to the same catalog, key maps included.
        decoded = decode_catalog(encode_catalog(version))
        assert decoded == version and decoded.table_keys == version.table_keys
        # Renaming one twin lifts the ambiguity.
        cat.execute([RenameTable("Orders", "ORDERS_OLD", schema="SALES")])
        assert cat.catalog().table("orders", "SALES") == first
        assert ("table", ["SALES.ORDERS", "SALES.Orders"]) not in cat.catalog().name_collisions()


def test_column_names_are_unique_within_a_table_without_regard_to_case(cat: Catalog) -> None:
    note = ColumnDef(name="note", type=ColumnType.STRING)
    with pytest.raises(ValidationError, match=r"Column 'NOTE' is given more than once"):
        cat.execute(
            [
                CreateTable(
                    name="t", columns=(ID, note, replace(note, name="NOTE")), primary_key=("ID",)
                )
            ]
        )
    cat.execute([CreateTable(name="t", columns=(ID, note), primary_key=("id",))])
    table = cat.catalog().table("T")
    assert table is not None and table.primary_key == ("ID",), "the key as the table spells it"
    with pytest.raises(
        AlreadyExistsError, match=r"Column 'Note' already exists in table 'PUBLIC.t' as 'note'"
    ):
        cat.execute([AddColumns(table="t", columns=(replace(note, name="Note"),))])
    cat.execute([CreateIndex(name="by_note", table="t", columns=("NOTE",))])
    assert cat.catalog().index("by_note").columns == ("note",)  # type: ignore[union-attr]
    cat.execute([AddColumns(table="t", columns=(replace(note, name="extra"),))])
    cat.execute([RenameColumn(table="t", column="EXTRA", new_name="Extra")])
    cat.sql("ALTER TABLE t DROP COLUMN extra")  # SQL folds it to EXTRA
    assert [c.name for c in cat.catalog().table("t").columns] == ["ID", "note"]  # type: ignore[union-attr]


def test_case_only_twin_columns_of_an_old_table_stay_reachable(cat: Catalog) -> None:
    cat.execute([CreateTable(name="t", columns=(ID,), primary_key=("ID",))])
    made = cat.catalog().table("T")
    assert made is not None
    twins = (replace(ID, name="ab"), replace(ID, name="AB"))
    old = replace(made, columns=(*made.columns, *(c.to_column(i + 1) for i, c in enumerate(twins))))
    assert old.column("ab") is not None and old.column("ab").id == 1  # type: ignore[union-attr]
    assert old.column("AB") is not None and old.column("AB").id == 2  # type: ignore[union-attr]
    assert old.column("id") is not None
    with pytest.raises(AmbiguousNameError, match=r"'AB' and 'ab'") as err:
        old.column("Ab")
    assert err.value.context["matches"] == ["AB", "ab"]


def _derived_fields() -> list[str]:
    """The key maps a version derives from its by-name maps when left at their default."""
    fields = {f.name: f for f in dataclasses.fields(CatalogVersion)}
    sentinel = fields["schema_keys"].default
    return [name for name, f in fields.items() if f.default is sentinel]


@pytest.mark.parametrize("derived", _derived_fields())
def test_a_key_map_left_out_is_derived_and_the_others_carried(cat: Catalog, derived: str) -> None:
    cat.sql("CREATE ZONE Z WITH (PARTITIONS = 2); CREATE SCHEMA S")
    cat.sql("CREATE TABLE S.T (ID BIGINT PRIMARY KEY, V INT); CREATE INDEX I ON S.T (V)")
    snap = cat.catalog()
    default = {f.name: f.default for f in dataclasses.fields(CatalogVersion)}[derived]
    made = snap.evolve(version=snap.version + 1, **{derived: default})
    kept = getattr(made, derived)
    assert kept is not default and kept == getattr(snap, derived)
    assert kept, f"{derived} of a catalog holding one of each is empty"
    for other in set(_derived_fields()) - {derived}:
        assert getattr(made, other) is getattr(snap, other)
