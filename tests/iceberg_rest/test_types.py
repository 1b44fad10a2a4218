"""Every Iceberg type a catalog column can be, nested ones included, through
pyiceberg's ``RestCatalog``: a table created with them loads back with the
same schema (field ids at every depth are the catalog's column ids), the
catalog holds the columns SQL would make, and rows written by pyiceberg
read the same in Almanac and the other way round."""

from __future__ import annotations

import datetime as dt
import decimal
import itertools
import uuid
from dataclasses import replace
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import BadRequestError
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.table.update.schema import UpdateSchema
from pyiceberg.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

from almanac.commands import preview
from almanac.data import DataError, read_table, write_table
from almanac.model.descriptor_sql import type_sql
from almanac.model.descriptors import Column
from almanac.model.diff import CatalogDiff, diff_catalogs
from almanac.model.nested import walk
from almanac.node.catalog import Catalog
from almanac.sql.parsing import parse_script

_ids = itertools.count(1)


def _f(name: str, kind: IcebergType, required: bool = False, doc: str | None = None) -> NestedField:
    return NestedField(next(_ids), name, kind, required=required, doc=doc)


def _address() -> StructType:
    return StructType(
        _f("STREET", StringType(), required=True, doc="street and number"),
        _f("ZIP", IntegerType()),
    )


EVERY_TYPE = Schema(
    _f("ID", LongType(), required=True, doc="the key"),
    _f("B", BooleanType()),
    _f("I", IntegerType()),
    _f("F", FloatType()),
    _f("D", DoubleType()),
    _f("DEC", DecimalType(10, 2)),
    _f("DT", DateType()),
    _f("TM", TimeType()),
    _f("TS", TimestampType()),
    _f("TSTZ", TimestamptzType()),
    _f("S", StringType()),
    _f("U", UUIDType()),
    _f("FX", FixedType(4)),
    _f("BIN", BinaryType()),
    _f("ADDR", _address(), doc="where"),
    _f("TAGS", ListType(next(_ids), StringType(), element_required=False)),
    _f("ATTRS", MapType(next(_ids), StringType(), next(_ids), LongType(), value_required=False)),
    _f(
        "DEEP",
        ListType(
            next(_ids),
            MapType(next(_ids), StringType(), next(_ids), _address(), value_required=False),
            element_required=True,
        ),
    ),
    identifier_field_ids=[1],
)

SQL_DDL = """CREATE TABLE TY.SQL_MADE (
    ID BIGINT PRIMARY KEY COMMENT 'the key', B BOOLEAN, I INT, F FLOAT, D DOUBLE,
    DEC DECIMAL(10, 2), DT DATE, TM TIME, TS TIMESTAMP, TSTZ TIMESTAMPTZ, S STRING,
    U ICEBERG_UUID, FX FIXED(4), BIN BINARY,
    ADDR STRUCT<STREET: STRING NOT NULL COMMENT 'street and number', ZIP: INT> COMMENT 'where',
    TAGS ARRAY<STRING>, ATTRS MAP<STRING, BIGINT>,
    DEEP ARRAY<MAP<STRING, STRUCT<STREET: STRING NOT NULL COMMENT 'street and number', ZIP: INT>>
        NOT NULL>
)"""

ROWS: list[dict[str, Any]] = [
    {
        "ID": 1,
        "B": True,
        "I": -7,
        "F": 1.5,
        "D": 2.25,
        "DEC": decimal.Decimal("12.34"),
        "DT": dt.date(2024, 2, 29),
        "TM": dt.time(12, 30, 1, 5),
        "TS": dt.datetime(2024, 1, 2, 3, 4, 5, 6),
        "TSTZ": dt.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=dt.UTC),
        "S": "text",
        "U": uuid.UUID("0b7c4f86-6a3f-4e0c-9b0f-2d6f0f3b8c11"),
        "FX": b"\x00\x01\x02\x03",
        "BIN": b"\xff",
        "ADDR": {"STREET": "Main 1", "ZIP": 1000},
        "TAGS": ["a", None, "b"],
        "ATTRS": [("k", 1), ("v", None)],
        "DEEP": [[("home", {"STREET": "Elm 2", "ZIP": None})], []],
    },
    {"ID": 2, **{k: None for k in ("B", "I", "F", "D", "DEC", "DT", "TM", "TS", "TSTZ")}}
    | {k: None for k in ("S", "U", "FX", "BIN", "ADDR", "TAGS", "ATTRS", "DEEP")},
]


def _shape(fields: Any) -> list[tuple[Any, ...]]:
    """A schema's fields without their ids: what must load back equal."""
    out = []
    for field in fields:
        kind = field.field_type
        inner: Any = str(kind)
        if isinstance(kind, StructType):
            inner = _shape(kind.fields)
        elif isinstance(kind, ListType):
            inner = ("list", _shape([kind.element_field]))
        elif isinstance(kind, MapType):
            inner = ("map", _shape([kind.key_field, kind.value_field]))
        out.append((field.name, inner, field.required, field.doc))
    return out


def _ids_of(fields: Any) -> list[int]:
    ids = []
    for field in fields:
        ids.append(field.field_id)
        kind = field.field_type
        if isinstance(kind, StructType):
            ids += _ids_of(kind.fields)
        elif isinstance(kind, ListType):
            ids += _ids_of([kind.element_field])
        elif isinstance(kind, MapType):
            ids += _ids_of([kind.key_field, kind.value_field])
    return ids


def _columns(columns: tuple[Column, ...]) -> list[tuple[Any, ...]]:
    return [(p, c.type, c.nullable, c.doc, type_sql(c)) for p, c in walk(columns)]


def test_every_type_round_trips_through_rest_and_matches_sql_ddl(
    admin: RestCatalog, cat: Catalog
) -> None:
    admin.create_namespace("TY")
    created = admin.create_table(("TY", "EVERY"), EVERY_TYPE)
    loaded = admin.load_table(("TY", "EVERY")).schema()
    assert _shape(loaded.fields) == _shape(EVERY_TYPE.fields)
    assert _shape(created.schema().fields) == _shape(EVERY_TYPE.fields)

    cat.catch_up()
    table = cat.catalog().table("EVERY", "TY")
    assert table is not None
    # Field ids at every depth are the catalog's column ids, none reused.
    ids = [c.id for _, c in walk(table.columns)]
    assert sorted(_ids_of(loaded.fields)) == sorted(ids)
    assert len(set(ids)) == len(ids) and table.next_column_id > max(ids)
    # The same table written as SQL DDL is the same catalog table.
    cat.execute(parse_script(SQL_DDL))
    made = cat.catalog().table("SQL_MADE", "TY")
    assert made is not None
    assert _columns(made.columns) == _columns(table.columns)
    assert [c.id for _, c in walk(made.columns)] == ids


def _arrow(schema: Schema) -> pa.Schema:
    return schema.as_arrow()


def test_rows_of_every_type_read_the_same_in_almanac_and_pyiceberg(
    admin: RestCatalog, cat: Catalog
) -> None:
    admin.create_namespace("TYW")
    table = admin.create_table(("TYW", "T"), EVERY_TYPE)
    arrow = _arrow(table.schema())
    table.append(pa.Table.from_pylist(ROWS[:1], arrow))
    cat.catch_up()
    written = [{**ROWS[1], "ID": 2}]
    almanac_schema = read_table(cat, "T", "TYW").schema
    write_table(cat, "T", pa.Table.from_pylist(written, almanac_schema), "TYW")

    ours = read_table(cat, "T", "TYW").sort_by("ID").to_pylist()
    theirs = admin.load_table(("TYW", "T")).scan().to_arrow().sort_by("ID").to_pylist()
    assert ours == theirs
    assert [r["ID"] for r in ours] == [1, 2]
    assert ours[0]["ADDR"] == ROWS[0]["ADDR"]
    assert ours[0]["DEEP"] == ROWS[0]["DEEP"]
    assert ours[0]["FX"] == ROWS[0]["FX"]
    assert ours[0]["U"] == ROWS[0]["U"]


_PRIMITIVES = st.sampled_from(
    [
        BooleanType(),
        IntegerType(),
        LongType(),
        FloatType(),
        DoubleType(),
        DecimalType(9, 3),
        DateType(),
        TimeType(),
        TimestampType(),
        TimestamptzType(),
        StringType(),
        UUIDType(),
        FixedType(3),
        BinaryType(),
    ]
)
_NAMES = st.text("ABCXYZ_", min_size=1, max_size=4)
_DOCS = st.none() | st.text("ab c'", min_size=1, max_size=5)


def _types(ids: itertools.count[int]) -> st.SearchStrategy[IcebergType]:
    def extend(inner: st.SearchStrategy[IcebergType]) -> st.SearchStrategy[IcebergType]:
        field = st.tuples(_NAMES, inner, st.booleans(), _DOCS)
        structs = st.lists(field, min_size=1, max_size=3, unique_by=lambda f: f[0]).map(
            lambda fs: StructType(
                *(NestedField(next(ids), n, t, required=r, doc=d) for n, t, r, d in fs)
            )
        )
        lists = st.tuples(inner, st.booleans()).map(
            lambda a: ListType(next(ids), a[0], element_required=a[1])
        )
        maps = st.tuples(_PRIMITIVES, inner, st.booleans()).map(
            lambda a: MapType(next(ids), a[0], next(ids), a[1], value_required=a[2])
        )
        return structs | lists | maps

    return st.recursive(_PRIMITIVES, extend, max_leaves=8)


_tables = itertools.count()


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_random_nested_schemas_created_through_rest_load_back_equal(
    admin: RestCatalog, cat: Catalog, data: st.DataObject
) -> None:
    ids = itertools.count(2)
    fields = data.draw(
        st.lists(
            st.tuples(_NAMES, _types(ids), st.booleans(), _DOCS),
            min_size=1,
            max_size=4,
            unique_by=lambda f: f[0],
        )
    )
    schema = Schema(
        NestedField(1, "KEY", LongType(), required=True),
        *(NestedField(next(ids), "C" + n, t, required=r, doc=d) for n, t, r, d in fields),
        identifier_field_ids=[1],
    )
    namespace = "HYP"
    if (namespace,) not in admin.list_namespaces():
        admin.create_namespace(namespace)
    name = f"T{next(_tables)}"
    admin.create_table((namespace, name), schema)
    loaded = admin.load_table((namespace, name)).schema()
    assert _shape(loaded.fields) == _shape(schema.fields)
    ids_loaded = _ids_of(loaded.fields)
    assert len(set(ids_loaded)) == len(ids_loaded)


NESTED = Schema(
    NestedField(1, "ID", LongType(), required=True),
    NestedField(
        2,
        "S",
        StructType(
            NestedField(4, "A", IntegerType(), required=True),
            NestedField(5, "B", FloatType()),
            NestedField(6, "C", DecimalType(5, 2)),
        ),
    ),
    NestedField(3, "L", ListType(7, IntegerType(), element_required=False)),
    identifier_field_ids=[1],
)


def test_nested_evolution_through_pyiceberg_keeps_ids_and_old_rows(
    admin: RestCatalog, cat: Catalog
) -> None:
    admin.create_namespace("NEVO")
    table = admin.create_table(("NEVO", "T"), NESTED)
    old_row = {"ID": 1, "S": {"A": 7, "B": 1.5, "C": decimal.Decimal("1.25")}, "L": [1, None]}
    table.append(pa.Table.from_pylist([old_row], table.schema().as_arrow()))
    cat.catch_up()
    created = cat.catalog().table("T", "NEVO")
    assert created is not None
    ids_before = {p: c.id for p, c in walk(created.columns)}

    with table.update_schema() as update:
        update.add_column(("S", "D"), StringType(), doc="added")
        update.rename_column("S.A", "A2")
        update.update_column("S.A", required=False)
        update.update_column("S.B", DoubleType())
        update.update_column("S.C", DecimalType(9, 2))
        update.update_column("L.element", LongType())
        update.move_first("S.C")
    with table.update_schema() as update:
        update.delete_column("S.B")

    cat.catch_up()
    evolved = cat.catalog().table("T", "NEVO")
    assert evolved is not None
    shape = [(p, c.id, type_sql(c), c.nullable, c.doc) for p, c in walk(evolved.columns)]
    next_id = max(ids_before.values()) + 1
    assert shape == [
        ("ID", 0, "INT64", False, None),
        ("S", ids_before["S"], shape[1][2], True, None),
        ("S.C", ids_before["S.C"], "DECIMAL(9, 2)", True, None),
        ("S.A2", ids_before["S.A"], "INT32", True, None),
        ("S.D", next_id, "STRING(65536)", True, "added"),
        ("L", ids_before["L"], "ARRAY<INT64>", True, None),
        ("L.element", ids_before["L.element"], "INT64", True, None),
    ]
    assert evolved.next_column_id == next_id + 1
    # The file written before reads in the new shape, by Almanac and pyiceberg.
    expected = {"ID": 1, "S": {"C": decimal.Decimal("1.25"), "A2": 7, "D": None}, "L": [1, None]}
    assert read_table(cat, "T", "NEVO").to_pylist() == [expected]
    assert admin.load_table(("NEVO", "T")).scan().to_arrow().to_pylist() == [expected]


TWO_STRUCTS = Schema(
    NestedField(1, "ID", LongType(), required=True),
    NestedField(2, "S1", StructType(NestedField(5, "A", IntegerType()))),
    NestedField(3, "S2", StructType(NestedField(6, "B", IntegerType()))),
    NestedField(4, "X", IntegerType()),
    identifier_field_ids=[1],
)


def test_fields_added_across_columns_keep_the_ids_pyiceberg_gave_them(
    admin: RestCatalog, cat: Catalog
) -> None:
    """pyiceberg numbers new fields in the order they are added, across
    columns: S2's field before S1's, a new column between S1's two. Each
    keeps its id (a struct field renamed and another column dropped in the
    same change, as the random evolution that found this did)."""
    admin.create_namespace("NIDS")
    table = admin.create_table(("NIDS", "T"), TWO_STRUCTS)
    last = table.metadata.last_column_id
    update = table.update_schema()
    update.rename_column("S1.A", "A2")
    update.delete_column("X")
    update.add_column(("S2", "C"), StringType())
    update.add_column(("S1", "D"), StringType())
    update.add_column("NEW", StructType(NestedField(-1, "E", LongType())))
    update.add_column(("S1", "F"), StringType())
    expected = update._apply()
    update.commit()

    loaded = admin.load_table(("NIDS", "T")).schema()
    assert _shape(loaded.fields) == _shape(expected.fields)
    assert _ids_of(loaded.fields) == _ids_of(expected.fields)
    cat.catch_up()
    made = cat.catalog().table("T", "NIDS")
    assert made is not None
    assert [(p, c.id) for p, c in walk(made.columns)] == [
        ("ID", 0),
        ("S1", 1),
        ("S1.A2", 4),
        ("S1.D", last + 2),
        ("S1.F", last + 5),
        ("S2", 2),
        ("S2.B", 5),
        ("S2.C", last + 1),
        ("NEW", last + 3),
        ("NEW.E", last + 4),
    ]
    assert made.next_column_id == last + 6


def test_a_nested_change_iceberg_forbids_is_refused_naming_the_field(
    admin: RestCatalog, cat: Catalog
) -> None:
    admin.create_namespace("NBAD")
    table = admin.create_table(("NBAD", "T"), NESTED)
    cat.catch_up()
    before = cat.latest_version
    with (
        pytest.raises(
            BadRequestError, match=r"Field 'S\.B' of table 'NBAD\.T' cannot become required"
        ),
        table.update_schema(allow_incompatible_changes=True) as update,
    ):
        update.update_column("S.B", required=True)
    cat.catch_up()
    assert cat.latest_version == before


def test_a_null_in_a_required_nested_field_is_refused_naming_its_path(
    admin: RestCatalog, cat: Catalog
) -> None:
    admin.create_namespace("TYN")
    admin.create_table(("TYN", "T"), NESTED_REQUIRED)
    cat.catch_up()
    arrow = read_table(cat, "T", "TYN").schema
    cases: list[tuple[dict[str, Any], str]] = [
        ({"ID": 1, "S": {"A": None}, "L": [], "M": []}, "S.A"),
        ({"ID": 1, "S": None, "L": [1, None], "M": []}, "L.element"),
        ({"ID": 1, "S": None, "L": [], "M": [("k", None)]}, "M.value"),
    ]
    for row, path in cases:
        with pytest.raises(DataError, match=rf"Field '{path}' of table 'T' is NOT NULL"):
            write_table(cat, "T", pa.Table.from_pylist([row], arrow), "TYN")
    # A NULL struct may hide a NULL in its required field: that is no value.
    write_table(cat, "T", pa.Table.from_pylist([cases[0][0] | {"S": None}], arrow), "TYN")
    assert read_table(cat, "T", "TYN").num_rows == 1


NESTED_REQUIRED = Schema(
    NestedField(1, "ID", LongType(), required=True),
    NestedField(2, "S", StructType(NestedField(5, "A", IntegerType(), required=True))),
    NestedField(3, "L", ListType(6, IntegerType(), element_required=True)),
    NestedField(4, "M", MapType(7, StringType(), 8, LongType(), value_required=True)),
    identifier_field_ids=[1],
)


def _struct_paths(fields: Any, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Paths of the structs under ``fields`` (only through structs, where
    pyiceberg addresses fields by name)."""
    paths = []
    for field in fields:
        if isinstance(field.field_type, StructType):
            path = (*prefix, field.name)
            paths.append(path)
            paths += _struct_paths(field.field_type.fields, path)
    return paths


def _leaves(fields: Any, prefix: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    out = []
    for field in fields:
        path = (*prefix, field.name)
        out.append((path, field))
        if isinstance(field.field_type, StructType):
            out += _leaves(field.field_type.fields, path)
    return out


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _text(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _sql_type(kind: IcebergType) -> str:
    """An Iceberg type in Almanac's SQL, spelled here independently of the
    mapping under test."""
    if isinstance(kind, StructType):
        return "STRUCT<" + ", ".join(_sql_field(f) for f in kind.fields) + ">"
    if isinstance(kind, ListType):
        required = " NOT NULL" if kind.element_required else ""
        return f"ARRAY<{_sql_type(kind.element_type)}{required}>"
    if isinstance(kind, MapType):
        required = " NOT NULL" if kind.value_required else ""
        return f"MAP<{_sql_type(kind.key_type)}, {_sql_type(kind.value_type)}{required}>"
    if isinstance(kind, DecimalType):
        return f"DECIMAL({kind.precision}, {kind.scale})"
    if isinstance(kind, FixedType):
        return f"FIXED({len(kind)})"
    names: dict[type[IcebergType], str] = {
        BooleanType: "BOOLEAN",
        IntegerType: "INT",
        LongType: "BIGINT",
        FloatType: "FLOAT",
        DoubleType: "DOUBLE",
        DateType: "DATE",
        TimeType: "TIME",
        TimestampType: "TIMESTAMP",
        TimestamptzType: "TIMESTAMPTZ",
        StringType: "STRING",
        UUIDType: "ICEBERG_UUID",
        BinaryType: "BINARY",
    }
    return names[type(kind)]


def _sql_field(field: NestedField) -> str:
    required = " NOT NULL" if field.required else ""
    doc = "" if field.doc is None else f" COMMENT {_text(field.doc)}"
    return f"{_q(field.name)}: {_sql_type(field.field_type)}{required}{doc}"


def _random_evolution(
    admin: RestCatalog, data: st.DataObject
) -> tuple[Table, UpdateSchema, list[str]]:
    """A random nested schema created through REST, a random pyiceberg
    update of it (not committed), and the SQL ALTER statements that say the
    same, in the same order (new fields take ids in the order added)."""
    ids = itertools.count(2)
    fields = data.draw(
        st.lists(
            st.tuples(_NAMES, _types(ids), st.booleans(), _DOCS),
            min_size=1,
            max_size=3,
            unique_by=lambda f: f[0],
        )
    )
    schema = Schema(
        NestedField(1, "KEY", LongType(), required=True),
        *(NestedField(next(ids), "C" + n, t, required=r, doc=d) for n, t, r, d in fields),
        identifier_field_ids=[1],
    )
    if ("EVOH",) not in admin.list_namespaces():
        admin.create_namespace("EVOH")
    name = f"T{next(_tables)}"
    table = admin.create_table(("EVOH", name), schema)
    alter = f"ALTER TABLE {_q('EVOH')}.{_q(name)}"
    sql: list[str] = []
    current = table.schema()
    update = table.update_schema()
    # New fields go into structs and new columns in a random order: the
    # client numbers them in that order, across columns.
    places = [(), *_struct_paths(current.fields)]
    grown: set[str] = set()
    for path in data.draw(st.lists(st.sampled_from(places), max_size=4)):
        kind = data.draw(_types(ids)) if not path else StringType()
        new = (*path, f"N{next(ids)}")
        update.add_column(new, kind, doc="new")
        grown.update(path[:1])
        dotted = ".".join(map(_q, new))
        sql.append(f"{alter} ADD COLUMN {dotted} {_sql_type(kind)} COMMENT 'new'")
    touched: set[tuple[str, ...]] = set()
    for path, field in _leaves(current.fields)[1:]:
        if path[:1] in touched or not data.draw(st.booleans()):
            continue
        touched.add(path[:1])
        kind = field.field_type
        dotted = ".".join(map(_q, path))
        if isinstance(kind, IntegerType):
            update.update_column(path, LongType())
            sql.append(f"{alter} ALTER COLUMN {dotted} TYPE BIGINT")
        elif isinstance(kind, FloatType):
            update.update_column(path, DoubleType())
            sql.append(f"{alter} ALTER COLUMN {dotted} TYPE DOUBLE")
        elif field.required:
            update.update_column(path, required=False)
            sql.append(f"{alter} ALTER COLUMN {dotted} DROP NOT NULL")
        elif data.draw(st.booleans()):
            update.update_column(path, doc="changed")
            sql.append(f"{alter} ALTER COLUMN {dotted} COMMENT 'changed'")
        else:
            renamed = f"R{next(ids)}"
            update.rename_column(path, renamed)
            sql.append(f"{alter} RENAME COLUMN {dotted} TO {_q(renamed)}")
    for field in current.fields[1:]:
        if field.name not in grown and (field.name,) not in touched and data.draw(st.booleans()):
            update.delete_column(field.name)
            sql.append(f"{alter} DROP COLUMN {_q(field.name)}")
    return table, update, sql


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_random_nested_evolutions_through_rest_load_back_as_pyiceberg_made_them(
    admin: RestCatalog, cat: Catalog, data: st.DataObject
) -> None:
    table, update, _ = _random_evolution(admin, data)
    expected = update._apply()  # the schema pyiceberg computes and asks the server for
    update.commit()
    loaded = admin.load_table(table.name()).schema()
    assert _shape(loaded.fields) == _shape(expected.fields)
    assert _ids_of(loaded.fields) == _ids_of(expected.fields)


def _changes(diff: CatalogDiff) -> CatalogDiff:
    changed = tuple(
        replace(c, fields=tuple(f for f in c.fields if f.field != "table_version"))
        for c in diff.changed
    )
    return replace(diff, changed=changed)


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_random_pyiceberg_evolutions_make_what_the_same_sql_alter_makes(
    admin: RestCatalog, cat: Catalog, data: st.DataObject
) -> None:
    """A pyiceberg schema update makes the catalog entries the equivalent SQL
    ALTER statements make, previewed on the same version: the same diff
    (but for ``table_version``, which counts statements, and one pyiceberg
    update may take several), and the same columns, ids and counter."""
    table, update, sql = _random_evolution(admin, data)
    cat.catch_up()
    base = cat.catalog()
    if not sql:  # nothing to change: no version either way
        update.commit()
        cat.catch_up()
        assert cat.latest_version == base.version
        return
    planned = preview(base, parse_script(";\n".join(sql))).catalog
    update.commit()
    cat.catch_up()
    after = cat.catalog()
    assert after.version == planned.version
    assert _changes(diff_catalogs(base, after)) == _changes(diff_catalogs(base, planned))
    name = table.name()[-1]
    made, wanted = after.table(name, "EVOH"), planned.table(name, "EVOH")
    assert made is not None and wanted is not None
    assert (made.columns, made.next_column_id) == (wanted.columns, wanted.next_column_id)
