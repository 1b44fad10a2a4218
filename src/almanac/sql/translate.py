"""Syntax trees of the Almanac dialect → catalog commands.

One small function per statement kind. Translation checks only what the
text says (shape, names, types, literals); catalog rules (does the table
exist, is the default in range, …) stay with the commands, which check them
against a snapshot. Anything a tree holds that no command can express is
refused with :class:`~almanac.sql.dialect.Untranslatable`, naming the node
so that the caller can point at it in the source.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from sqlglot import exp

from almanac.commands import (
    AddColumns,
    AlterColumn,
    AlterField,
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
    PurgeTable,
    RecoverTable,
    RenameColumn,
    RenameIndex,
    RenameTable,
    RenameZone,
    SetDefaultZone,
    SetPrimaryKey,
    SetTableProperties,
)
from almanac.model.datatypes import ColumnType
from almanac.model.descriptors import Collation, ConsistencyMode, DefaultValue, IndexKind
from almanac.model.nested import ELEMENT, KEY, VALUE
from almanac.sql.dialect import (
    AlterIndexStatement,
    AlterZoneStatement,
    ColocateProperty,
    CreateZoneStatement,
    DropZoneStatement,
    KeyColumn,
    PartitionFieldStatement,
    PurgeTableStatement,
    RecoverTableStatement,
    StorageProfileProperty,
    TablePrimaryKey,
    Untranslatable,
    WriteOrderStatement,
    ZoneProperty,
    check_clauses,
)
from almanac.sql.layout import partition_field_statement, partitioned_by, write_order_statement
from almanac.sql.literals import (
    column_type,
    default_value,
    duration_seconds,
    integer_literal,
    number_text,
)
from almanac.sql.names import ident, schema_name, table_name, words

__all__ = ["translate"]


def translate(tree: exp.Expr, *, default_schema: str) -> list[Command]:
    """The commands of one statement, in order."""
    kind = str(tree.args.get("kind") or "").upper() if isinstance(tree, _KINDED) else ""
    handler = _HANDLERS.get((type(tree), kind))
    if handler is None and isinstance(tree, exp.Condition | exp.Alias | exp.Tuple | exp.Star):
        raise Untranslatable("Expecting a statement such as CREATE, ALTER or DROP")
    if handler is None:
        raise Untranslatable(f"Unsupported statement {words(type(tree).__name__)} {kind}".rstrip())
    return handler(tree, default_schema)


# -- columns -------------------------------------------------------------------


def _column_def(node: exp.ColumnDef) -> tuple[ColumnDef, exp.Expr | None, bool]:
    """A column definition, its column-level PRIMARY KEY (if any) and whether
    NULL was written explicitly."""
    check_clauses(node, ("this", "kind", "constraints", "exists"), "A column definition")
    name = ident(node.this, "column")
    kind_node = node.args.get("kind")
    ctype, precision, scale, length = column_type(kind_node, name)
    fields = _nested_fields(kind_node, ctype, name)
    nullable: bool | None = None
    default: DefaultValue | None = None
    doc: str | None = None
    primary_key: exp.Expr | None = None
    for constraint in node.args.get("constraints") or []:
        check_clauses(constraint, ("kind",), f"Column '{name}'")
        kind = constraint.args.get("kind")
        if isinstance(kind, exp.NotNullColumnConstraint):
            allow_null = bool(kind.args.get("allow_null"))
            if nullable is not None and nullable != allow_null:
                raise Untranslatable(f"Column '{name}' is declared both NULL and NOT NULL", node)
            nullable = allow_null
        elif isinstance(kind, exp.DefaultColumnConstraint):
            if default is not None:
                raise Untranslatable(f"Column '{name}' has more than one DEFAULT", constraint)
            default = default_value(kind.this, ctype, name)
        elif isinstance(kind, exp.CommentColumnConstraint):
            if doc is not None or not isinstance(kind.this, exp.Literal) or not kind.this.is_string:
                raise Untranslatable(f"Column '{name}' takes one COMMENT 'text'", constraint)
            doc = str(kind.this.this)
        elif isinstance(kind, exp.PrimaryKeyColumnConstraint) and not kind.args.get("desc"):
            check_clauses(kind, (), "A column-level PRIMARY KEY")
            if primary_key is not None:
                raise Untranslatable(f"Column '{name}' declares PRIMARY KEY twice", kind)
            primary_key = kind
        else:
            what = words(type(kind).__name__) if kind is not None else "constraint"
            raise Untranslatable(f"Unsupported {what} on column '{name}'", constraint)
    column = ColumnDef(
        name=name,
        type=ctype,
        nullable=nullable is not False,
        precision=precision,
        scale=scale,
        length=length,
        default=default,
        doc=doc,
        fields=fields,
    )
    return column, primary_key, nullable is True


def _nested_fields(node: object, ctype: ColumnType, name: str) -> tuple[ColumnDef, ...]:
    """The fields a STRUCT<…>, ARRAY<…> or MAP<…> type spells: a struct's
    ``name: TYPE [NOT NULL] [COMMENT '…']`` fields, an array's ``element``
    and a map's ``key`` (never NULL) and ``value``, each ``[NOT NULL]``."""
    if not ctype.nested or not isinstance(node, exp.DataType):
        return ()
    inner = list(node.expressions)
    if ctype is ColumnType.STRUCT:
        fields: list[ColumnDef] = []
        for field in inner:
            if not isinstance(field, exp.ColumnDef):
                raise Untranslatable(f"Expecting 'name: TYPE' in STRUCT column '{name}'", field)
            column, key, _ = _column_def(field)
            if key is not None or column.default is not None:
                raise Untranslatable(
                    f"Field '{column.name}' of STRUCT column '{name}' takes no PRIMARY KEY or "
                    "DEFAULT",
                    field,
                )
            fields.append(column)
        return tuple(fields)
    names = (ELEMENT,) if ctype is ColumnType.LIST else (KEY, VALUE)
    if len(inner) != len(names):
        raise Untranslatable(
            f"Type {ctype.sql_name} of column '{name}' takes {len(names)} type(s) in <…>", node
        )
    out: list[ColumnDef] = []
    for field_name, field_type in zip(names, inner, strict=True):
        path = f"{name}.{field_name}"
        kind, precision, scale, length = column_type(field_type, path)
        out.append(
            ColumnDef(
                name=field_name,
                type=kind,
                nullable=field_name != KEY and field_type.args.get("nullable") is not False,
                precision=precision,
                scale=scale,
                length=length,
                fields=_nested_fields(field_type, kind, path),
            )
        )
    return tuple(out)


def _key_columns(
    nodes: list[exp.Expr], kind: IndexKind, what: str
) -> tuple[tuple[str, ...], tuple[Collation, ...] | None]:
    """Names and (for SORTED) sort orders of a key column list."""
    names: list[str] = []
    collations: list[Collation] = []
    for node in nodes:
        if not isinstance(node, KeyColumn):
            raise Untranslatable(f"Expecting a column name in {what}", node)
        desc = node.args.get("desc")
        nulls_first = node.args.get("nulls_first")
        if kind is IndexKind.HASH and (desc is not None or nulls_first is not None):
            raise Untranslatable(f"A HASH {what} takes no ASC/DESC or NULLS FIRST/LAST", node)
        names.append(ident(node.this, "column"))
        collations.append(Collation.of(not desc, nulls_first))
    return tuple(names), (tuple(collations) if kind is IndexKind.SORTED else None)


def _index_kind(node: object, default: IndexKind) -> IndexKind:
    if node is None:
        return default
    name = str(node.this).upper() if isinstance(node, exp.Var) else ""
    if name not in IndexKind.__members__:
        raise Untranslatable("Expecting HASH or SORTED", node)
    return IndexKind[name]


# -- schemas -------------------------------------------------------------------


def _create_schema(tree: exp.Expr, default_schema: str) -> list[Command]:
    check_clauses(tree, ("this", "kind", "exists"), "CREATE SCHEMA")
    return [CreateSchema(schema_name(tree.this), if_not_exists=bool(tree.args.get("exists")))]


def _drop_schema(tree: exp.Expr, default_schema: str) -> list[Command]:
    check_clauses(tree, ("tables", "kind", "exists", "cascade", "restrict"), "DROP SCHEMA")
    return [
        DropSchema(
            schema_name(node),
            if_exists=bool(tree.args.get("exists")),
            cascade=bool(tree.args.get("cascade")),
        )
        for node in tree.args.get("tables") or []
    ]


# -- tables --------------------------------------------------------------------


def _create_table(tree: exp.Expr, default_schema: str) -> list[Command]:
    check_clauses(tree, ("this", "kind", "exists", "properties"), "CREATE TABLE")
    body = tree.this
    if not isinstance(body, exp.Schema):
        raise Untranslatable("CREATE TABLE needs a column list", tree)
    schema, name = table_name(body.this, default_schema, "table")
    columns: list[ColumnDef] = []
    column_keys: list[tuple[str, exp.Expr]] = []
    explicit_null: dict[str, exp.Expr] = {}
    table_key: TablePrimaryKey | None = None
    for element in body.expressions:
        if isinstance(element, exp.ColumnDef):
            column, key, null = _column_def(element)
            if element.args.get("exists"):
                raise Untranslatable("IF NOT EXISTS is not allowed on a column here", element)
            columns.append(column)
            if key is not None:
                column_keys.append((column.name, key))
            if null:
                explicit_null[column.name] = element
        elif isinstance(element, TablePrimaryKey):
            if table_key is not None:
                raise Untranslatable(f"Table '{name}' declares PRIMARY KEY twice", element)
            table_key = element
        elif isinstance(element, exp.Identifier):
            raise Untranslatable(f"Column '{ident(element, 'column')}' needs a type", element)
        else:
            what = words(type(element).__name__)
            raise Untranslatable(f"Unsupported {what} in CREATE TABLE", element)
    pk, kind, collations = _primary_key(name, column_keys, table_key)
    for column_name in pk:
        if column_name in explicit_null:
            raise Untranslatable(
                f"Primary key column '{column_name}' of table '{name}' cannot be NULL",
                explicit_null[column_name],
            )
    return [
        CreateTable(
            name=name,
            schema=schema,
            columns=tuple(
                dataclasses.replace(c, nullable=False) if c.name in pk else c for c in columns
            ),
            primary_key=pk,
            primary_key_kind=kind,
            primary_key_collations=collations,
            if_not_exists=bool(tree.args.get("exists")),
            **_table_options(tree.args.get("properties")),
        )
    ]


def _primary_key(
    table: str, column_keys: list[tuple[str, exp.Expr]], table_key: TablePrimaryKey | None
) -> tuple[tuple[str, ...], IndexKind, tuple[Collation, ...] | None]:
    """One PRIMARY KEY per table: on one column, or as a table element."""
    if len(column_keys) > 1 or (column_keys and table_key is not None):
        raise Untranslatable(
            f"Table '{table}' declares more than one PRIMARY KEY; list several key columns "
            "in one table-level PRIMARY KEY (…)",
            column_keys[-1][1] if table_key is None else table_key,
        )
    if column_keys:
        return (column_keys[0][0],), IndexKind.HASH, None
    if table_key is None:
        return (), IndexKind.HASH, None
    kind = _index_kind(table_key.args.get("kind"), IndexKind.HASH)
    names, collations = _key_columns(table_key.expressions, kind, "primary key")
    return names, kind, collations


def _table_options(node: object) -> dict[str, Any]:
    """``COLOCATE BY``, ``ZONE``, ``STORAGE PROFILE`` and ``PARTITIONED BY``
    as CreateTable fields."""
    options: dict[str, Any] = {}
    for prop in node.expressions if isinstance(node, exp.Properties) else []:
        value: object
        if isinstance(prop, ColocateProperty):
            field, value = "colocation", tuple(ident(c, "column") for c in prop.expressions)
        elif isinstance(prop, ZoneProperty):
            field, value = "zone", ident(prop.this, "zone")
        elif isinstance(prop, StorageProfileProperty):
            field, value = "storage_profile", str(prop.this.this)
        elif isinstance(prop, exp.PartitionedByProperty):
            field, value = "partitioned_by", partitioned_by(prop)
        else:
            what = words(type(prop).__name__)
            raise Untranslatable(f"Unsupported {what} in CREATE TABLE", prop)
        if field in options:
            raise Untranslatable(f"CREATE TABLE gives {field.replace('_', ' ')} twice", prop)
        options[field] = value
    return options


def _drop_table(tree: exp.Expr, default_schema: str) -> list[Command]:
    """``DROP TABLE … [WITH (RESERVE = '1h')]``: a reserve soft-deletes."""
    reserve: float | None = None
    for node in tree.args.get("options") or []:
        key = ident(node.this, "DROP TABLE option")
        if key != "RESERVE":
            raise Untranslatable(f"Unknown DROP TABLE option {key}; expecting RESERVE", node.this)
        if reserve is not None:
            raise Untranslatable("DROP TABLE option RESERVE is given twice", node.this)
        reserve = duration_seconds(node.args["value"], "DROP TABLE option RESERVE")
    check_clauses(tree, ("tables", "kind", "exists", "options"), "DROP TABLE")
    tree = tree.copy()
    tree.set("options", None)
    return _drop_relations(
        tree,
        default_schema,
        "table",
        lambda name, schema, if_exists: DropTable(name, schema, if_exists, reserve_s=reserve),
    )


def _recover_table(tree: RecoverTableStatement, default_schema: str) -> list[Command]:
    schema, name = table_name(tree.this, default_schema, "table")
    new_name = tree.args.get("rename_to")
    return [RecoverTable(name, schema, None if new_name is None else ident(new_name, "table"))]


def _purge_table(tree: PurgeTableStatement, default_schema: str) -> list[Command]:
    schema, name = table_name(tree.this, default_schema, "table")
    return [PurgeTable(name, schema, if_exists=bool(tree.args.get("exists")))]


def _drop_relations(
    tree: exp.Expr, default_schema: str, what: str, command: Callable[..., Command]
) -> list[Command]:
    """``DROP TABLE|INDEX [IF EXISTS] a, b`` → one command per name."""
    check_clauses(tree, ("tables", "kind", "exists"), f"DROP {what.upper()}")
    commands: list[Command] = []
    for node in tree.args.get("tables") or []:
        schema, name = table_name(node, default_schema, what)
        commands.append(command(name, schema, if_exists=bool(tree.args.get("exists"))))
    return commands


# -- ALTER TABLE -----------------------------------------------------------------


def _alter_table(tree: exp.Expr, default_schema: str) -> list[Command]:
    """Each action becomes a command, in order."""
    check_clauses(tree, ("this", "kind", "exists", "actions"), "ALTER TABLE")
    schema, table = table_name(tree.this, default_schema, "table")
    if_exists = bool(tree.args.get("exists"))
    runs: list[list[Command]] = []
    for action in tree.args.get("actions") or []:
        for command in _alter_actions(action, schema, table, if_exists):
            if runs and _mergeable(runs[-1][0], command):
                runs[-1].append(command)
            else:
                runs.append([command])
    return [_merged(run) for run in runs]


def _alter_actions(action: exp.Expr, schema: str, table: str, if_exists: bool) -> list[Command]:
    """The commands of one action: a nested field's change (a dotted path,
    ``s.x``) is an ``AlterField``, a column's the column commands."""
    if isinstance(action, exp.ColumnDef) and isinstance(action.this, exp.Dot):
        *parent, name = _path(action.this)
        node = action.copy()
        node.set("this", exp.to_identifier(name, quoted=True))
        column, key, _ = _column_def(node)
        if key is not None or action.args.get("exists"):
            raise Untranslatable(
                "A nested field is added without PRIMARY KEY or IF NOT EXISTS", action
            )
        return [
            AlterField(
                table=table,
                schema=schema,
                path=tuple(parent),
                add=column,
                if_table_exists=if_exists,
            )
        ]
    if isinstance(action, exp.Drop) and str(action.args.get("kind")).upper() == "COLUMN":
        paths = [_path(node) for node in _listed(action.args.get("tables") or [])]
        if any(len(p) > 1 for p in paths):
            check_clauses(action, ("tables", "kind", "exists"), "ALTER TABLE DROP COLUMN")
            if action.args.get("exists"):
                raise Untranslatable("DROP COLUMN IF EXISTS takes no nested field", action)
            return [
                AlterField(table=table, schema=schema, path=p, drop=True, if_table_exists=if_exists)
                if len(p) > 1
                else DropColumns(table=table, schema=schema, columns=p, if_table_exists=if_exists)
                for p in paths
            ]
    if isinstance(action, exp.RenameColumn) and len(_path(action.this)) > 1:
        check_clauses(action, ("this", "to", "exists"), "ALTER TABLE RENAME COLUMN")
        (new,) = _dropped_columns([action.args["to"]])
        path = _path(action.this)
        return [
            AlterField(
                table=table, schema=schema, path=path, new_name=new, if_table_exists=if_exists
            )
        ]
    if isinstance(action, exp.AlterColumn) and (
        isinstance(action.this, exp.Dot) or action.args.get("comment") is not None
    ):
        return [_alter_field(action, schema, table, if_exists)]
    return [_alter_action(action, schema, table, if_exists)]


def _listed(nodes: list[exp.Expr]) -> list[exp.Expr]:
    return [
        c for node in nodes for c in (node.expressions if isinstance(node, exp.Tuple) else [node])
    ]


def _path(node: object) -> tuple[str, ...]:
    """The names of a column or a dotted path to a nested field."""
    if isinstance(node, exp.Dot):
        return (*_path(node.this), *_path(node.expression))
    if isinstance(node, exp.Column):
        return tuple(ident(part, "field") for part in node.parts)
    return (ident(node, "column"),)


def _alter_field(action: exp.AlterColumn, schema: str, table: str, if_exists: bool) -> Command:
    """``ALTER COLUMN s.x TYPE … | DROP NOT NULL | COMMENT '…'``, and a
    column's ``COMMENT``: one ``AlterField``."""
    check_clauses(action, ("this", "dtype", "drop", "allow_null", "comment"), "ALTER COLUMN")
    path = _path(action.this)
    shown = ".".join(path)
    changes: dict[str, Any] = {}
    comment = action.args.get("comment")
    if comment is not None:
        if not isinstance(comment, exp.Literal) or not comment.is_string:
            raise Untranslatable(f"Field '{shown}' takes COMMENT 'text'", comment)
        changes["comment"] = str(comment.this)
    elif action.args.get("dtype") is not None:
        ctype, precision, scale, _ = column_type(action.args["dtype"], shown)
        if ctype.nested:
            raise Untranslatable(
                f"Field '{shown}' cannot change to a {ctype.sql_name} type; add or drop its "
                "fields one by one",
                action.args["dtype"],
            )
        changes.update(type=ctype, precision=precision, scale=scale)
    elif action.args.get("allow_null") is not None:
        changes["not_null"] = not action.args["allow_null"]
    else:
        raise Untranslatable(
            f"Field '{shown}' takes TYPE, DROP NOT NULL or COMMENT here; a nested field's "
            "default is not set in SQL",
            action,
        )
    return AlterField(table=table, schema=schema, path=path, if_table_exists=if_exists, **changes)


def _alter_action(action: exp.Expr, schema: str, table: str, if_exists: bool) -> Command:
    if isinstance(action, exp.ColumnDef):
        column, key, _ = _column_def(action)
        if key is not None:
            raise Untranslatable("ALTER TABLE cannot add a PRIMARY KEY column", key)
        return AddColumns(
            table=table,
            schema=schema,
            columns=(column,),
            if_column_not_exists=bool(action.args.get("exists")),
            if_table_exists=if_exists,
        )
    if isinstance(action, exp.Drop) and str(action.args.get("kind")).upper() == "COLUMN":
        check_clauses(action, ("tables", "kind", "exists"), "ALTER TABLE DROP COLUMN")
        return DropColumns(
            table=table,
            schema=schema,
            columns=_dropped_columns(action.args.get("tables") or []),
            if_column_exists=bool(action.args.get("exists")),
            if_table_exists=if_exists,
        )
    if isinstance(action, exp.AlterColumn):
        return _alter_column(action, schema, table, if_exists)
    if isinstance(action, exp.RenameColumn):
        check_clauses(action, ("this", "to", "exists"), "ALTER TABLE RENAME COLUMN")
        (old,) = _dropped_columns([action.this])
        (new,) = _dropped_columns([action.args["to"]])
        return RenameColumn(
            table=table,
            column=old,
            new_name=new,
            schema=schema,
            if_column_exists=bool(action.args.get("exists")),
            if_table_exists=if_exists,
        )
    if isinstance(action, exp.AlterRename):
        new_schema, new_name = table_name(action.this, schema, "table")
        moved = None if new_schema == schema else new_schema  # RENAME TO other.t moves it
        return RenameTable(table, new_name, schema, if_exists=if_exists, new_schema=moved)
    if isinstance(action, exp.Drop) and action.args.get("kind") == "PRIMARY KEY":
        return SetPrimaryKey(name=table, schema=schema, primary_key=(), if_exists=if_exists)
    if isinstance(action, exp.AlterSet):
        key = _set_primary_key(action)
        if key is not None:
            kind = _index_kind(key.args.get("kind"), IndexKind.HASH)
            names, collations = _key_columns(key.expressions, kind, "primary key")
            return SetPrimaryKey(
                name=table,
                schema=schema,
                primary_key=names,
                primary_key_kind=kind,
                primary_key_collations=collations,
                if_exists=if_exists,
            )
        return _table_properties(action, schema, table, if_exists)
    what = words(type(action).__name__)
    if isinstance(action, exp.Drop):
        what = f"DROP {action.args.get('kind') or ''}".rstrip()
    raise Untranslatable(f"Unsupported ALTER TABLE action {what}", action)


_TABLE_PROPERTIES = ("STALE_ROWS_FRACTION", "MIN_STALE_ROWS")


def _set_primary_key(action: exp.Expr) -> TablePrimaryKey | None:
    """The key of ``ALTER TABLE t SET PRIMARY KEY [USING kind] (c, …)``."""
    items = action.expressions
    if len(items) == 1 and isinstance(items[0], exp.Properties):
        props = items[0].expressions
        if len(props) == 1 and isinstance(props[0], TablePrimaryKey):
            return props[0]
    return None


def _table_properties(action: exp.Expr, schema: str, table: str, if_exists: bool) -> Command:
    """``ALTER TABLE t SET (STALE_ROWS_FRACTION=f, MIN_STALE_ROWS=n)``."""
    check_clauses(action, ("expressions",), "ALTER TABLE SET")
    values: dict[str, float | int] = {}
    for item in action.expressions:
        if not isinstance(item, exp.EQ) or not isinstance(item.this, exp.Column | exp.Identifier):
            raise Untranslatable("Expecting NAME=value in ALTER TABLE SET", item)
        key = item.this.name.upper()
        if key not in _TABLE_PROPERTIES:
            raise Untranslatable(
                f"Unknown table property {key}; expecting one of {', '.join(_TABLE_PROPERTIES)}",
                item,
            )
        if key in values:
            raise Untranslatable(f"Table property {key} is given twice", item)
        values[key] = _property_number(item.expression, key, integer=key == "MIN_STALE_ROWS")
    if not values:
        raise Untranslatable("ALTER TABLE SET needs at least one property", action)
    fraction = values.get("STALE_ROWS_FRACTION")
    rows = values.get("MIN_STALE_ROWS")
    if rows is not None and not isinstance(rows, int):
        raise Untranslatable(f"MIN_STALE_ROWS must be an integer, got {rows}", action)
    return SetTableProperties(
        name=table,
        schema=schema,
        stale_rows_fraction=None if fraction is None else float(fraction),
        min_stale_rows=rows,
        if_exists=if_exists,
    )


def _property_number(node: exp.Expr, key: str, *, integer: bool) -> float | int:
    """An integer literal as ``int`` where the property takes integers, any
    other number as ``float`` (beyond its range: infinite)."""
    text = number_text(node)
    if text is None:
        raise Untranslatable(f"{key} takes a number", node)
    value = integer_literal(node) if integer else None
    if value is not None:
        return value
    try:
        return float(text)
    except ValueError as exc:
        raise Untranslatable(f"{key} takes a number, got {text}", node) from exc


def _alter_index(tree: exp.Expr, default_schema: str) -> list[Command]:
    schema, name = table_name(tree.this, default_schema, "index")
    new_name = ident(tree.args["rename_to"], "index")
    return [RenameIndex(name, new_name, schema, if_exists=bool(tree.args.get("exists")))]


def _dropped_columns(nodes: list[exp.Expr]) -> tuple[str, ...]:
    names: list[str] = []
    for node in nodes:
        for column in node.expressions if isinstance(node, exp.Tuple) else [node]:
            if not isinstance(column, exp.Column) or len(column.parts) != 1:
                raise Untranslatable("Expecting a column name", column)
            names.append(ident(column.this, "column"))
    return tuple(names)


def _alter_column(action: exp.AlterColumn, schema: str, table: str, if_exists: bool) -> Command:
    """SET DATA TYPE / SET|DROP NOT NULL / SET|DROP DEFAULT on one column."""
    check_clauses(action, ("this", "dtype", "default", "drop", "allow_null"), "ALTER COLUMN")
    column = ident(action.this, "column")
    changes: dict[str, Any] = {}
    if action.args.get("dtype") is not None:
        ctype, precision, scale, length = column_type(action.args["dtype"], column)
        if ctype.nested:
            raise Untranslatable(
                f"Column '{column}' cannot change to a {ctype.sql_name} type in SQL; evolve "
                "nested fields through an Iceberg client's schema update (EvolveColumn)",
                action.args["dtype"],
            )
        changes.update(type=ctype, precision=precision, scale=scale, length=length)
    allow_null = action.args.get("allow_null")
    if allow_null is not None:
        changes["not_null"] = not allow_null
    elif action.args.get("drop"):
        changes["drop_default"] = True
    if action.args.get("default") is not None:
        changes["default"] = default_value(action.args["default"], None, column)
    return AlterColumn(
        table=table, column=column, schema=schema, if_table_exists=if_exists, **changes
    )


def _mergeable(first: Command, command: Command) -> bool:
    """Neighbouring ADDs (or DROPs) with the same IF [NOT] EXISTS make one command."""
    if isinstance(first, AddColumns) and isinstance(command, AddColumns):
        return first.if_column_not_exists == command.if_column_not_exists
    if isinstance(first, DropColumns) and isinstance(command, DropColumns):
        return first.if_column_exists == command.if_column_exists
    return False


def _merged(run: list[Command]) -> Command:
    """One command for a run of mergeable ones, built once: growing it one
    action at a time re-checked every column so far (quadratic)."""
    first = run[0]
    if len(run) == 1:
        return first
    if isinstance(first, AddColumns):
        added = [c for command in run if isinstance(command, AddColumns) for c in command.columns]
        return dataclasses.replace(first, columns=tuple(added))
    assert isinstance(first, DropColumns)
    dropped = [c for command in run if isinstance(command, DropColumns) for c in command.columns]
    return dataclasses.replace(first, columns=tuple(dropped))


# -- indexes -------------------------------------------------------------------


def _create_index(tree: exp.Expr, default_schema: str) -> list[Command]:
    """The index lives in its table's schema."""
    check_clauses(tree, ("this", "kind", "exists", "unique"), "CREATE INDEX")
    index = tree.this
    if not isinstance(index, exp.Index) or index.this is None:
        raise Untranslatable("CREATE INDEX needs an index name", tree)
    check_clauses(index, ("this", "table", "params"), "CREATE INDEX")
    params = index.args.get("params")
    if not isinstance(params, exp.IndexParameters) or not params.args.get("columns"):
        raise Untranslatable("CREATE INDEX needs a column list", index)
    check_clauses(params, ("using", "columns"), "CREATE INDEX")
    schema, table = table_name(index.args.get("table"), default_schema, "table")
    kind = _index_kind(params.args.get("using"), IndexKind.SORTED)
    columns, collations = _key_columns(params.args["columns"], kind, "index")
    return [
        CreateIndex(
            name=ident(index.this, "index"),
            table=table,
            schema=schema,
            columns=columns,
            kind=kind,
            unique=bool(tree.args.get("unique")),
            collations=collations,
            if_not_exists=bool(tree.args.get("exists")),
        )
    ]


def _drop_index(tree: exp.Expr, default_schema: str) -> list[Command]:
    return _drop_relations(tree, default_schema, "index", DropIndex)


# -- zones ---------------------------------------------------------------------


def _int_option(node: exp.Expr, key: str) -> int:
    value = integer_literal(node)
    if value is None:
        raise Untranslatable(f"Zone option {key} takes an integer", node)
    return value


def _str_option(node: exp.Expr, key: str) -> str:
    if not isinstance(node, exp.Literal) or not node.is_string:
        raise Untranslatable(f"Zone option {key} takes a quoted string", node)
    return str(node.this)


def _profiles_option(node: exp.Expr, key: str) -> tuple[str, ...]:
    return tuple(p.strip() for p in _str_option(node, key).split(","))


_CONSISTENCY = {"STRONG": ConsistencyMode.STRONG, "HIGH_AVAILABILITY": ConsistencyMode.HA}
_CONSISTENCY["HA"] = ConsistencyMode.HA


def _consistency_option(node: exp.Expr, key: str) -> ConsistencyMode:
    if isinstance(node, exp.Column) and len(node.parts) == 1:
        text = str(node.name)
    else:
        text = _str_option(node, key)
    mode = _CONSISTENCY.get(text.upper())
    if mode is None:
        raise Untranslatable(
            f"Zone option {key} takes 'STRONG', 'HIGH_AVAILABILITY' or 'HA', got '{text}'", node
        )
    return mode


_ZONE_OPTIONS: dict[str, tuple[str, Callable[[exp.Expr, str], object]]] = {
    "PARTITIONS": ("partitions", _int_option),
    "REPLICAS": ("replicas", _int_option),
    "QUORUM_SIZE": ("quorum_size", _int_option),
    "STORAGE_PROFILES": ("storage_profiles", _profiles_option),
    "DATA_NODES_FILTER": ("node_filter", _str_option),
    "DATA_NODES_AUTO_ADJUST_SCALE_UP": ("scale_up_seconds", _int_option),
    "DATA_NODES_AUTO_ADJUST_SCALE_DOWN": ("scale_down_seconds", _int_option),
    "CONSISTENCY_MODE": ("consistency_mode", _consistency_option),
}


def _zone_options(nodes: list[exp.Expr]) -> dict[str, Any]:
    """``KEY=value`` options → CreateZone / AlterZone fields."""
    options: dict[str, Any] = {}
    for node in nodes:
        key = ident(node.this, "zone option")
        known = _ZONE_OPTIONS.get(key)
        if known is None:
            raise Untranslatable(
                f"Unknown zone option {key}; expecting one of {', '.join(_ZONE_OPTIONS)}", node.this
            )
        field, convert = known
        if field in options:
            raise Untranslatable(f"Zone option {key} is given twice", node.this)
        options[field] = convert(node.args["value"], key)
    return options


def _create_zone(tree: exp.Expr, default_schema: str) -> list[Command]:
    options = _zone_options(tree.expressions)
    name = ident(tree.this, "zone")
    return [CreateZone(name=name, if_not_exists=bool(tree.args.get("exists")), **options)]


def _alter_zone(tree: exp.Expr, default_schema: str) -> list[Command]:
    name = ident(tree.this, "zone")
    if_exists = bool(tree.args.get("exists"))
    if tree.args.get("rename_to") is not None:
        return [RenameZone(name, ident(tree.args["rename_to"], "zone"), if_exists=if_exists)]
    if tree.args.get("set_default"):
        return [SetDefaultZone(name, if_exists=if_exists)]
    return [AlterZone(name=name, if_exists=if_exists, **_zone_options(tree.expressions))]


def _drop_zone(tree: exp.Expr, default_schema: str) -> list[Command]:
    return [DropZone(ident(tree.this, "zone"), if_exists=bool(tree.args.get("exists")))]


_KINDED = (exp.Create, exp.Drop, exp.Alter)

_HANDLERS: dict[tuple[type[exp.Expr], str], Callable[[Any, str], list[Command]]] = {
    (exp.Create, "SCHEMA"): _create_schema,
    (exp.Drop, "SCHEMA"): _drop_schema,
    (exp.Create, "TABLE"): _create_table,
    (exp.Drop, "TABLE"): _drop_table,
    (exp.Alter, "TABLE"): _alter_table,
    (exp.Create, "INDEX"): _create_index,
    (exp.Drop, "INDEX"): _drop_index,
    (CreateZoneStatement, ""): _create_zone,
    (AlterZoneStatement, ""): _alter_zone,
    (AlterIndexStatement, ""): _alter_index,
    (DropZoneStatement, ""): _drop_zone,
    (RecoverTableStatement, ""): _recover_table,
    (PurgeTableStatement, ""): _purge_table,
    (PartitionFieldStatement, ""): partition_field_statement,
    (WriteOrderStatement, ""): write_order_statement,
}
