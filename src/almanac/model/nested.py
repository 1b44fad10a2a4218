"""Nested columns: STRUCT, LIST and MAP as a tree of frozen ``Column`` values.

A nested column's ``fields`` are columns too: a STRUCT's named fields, a
LIST's one field ``element``, a MAP's ``key`` (never NULL) and ``value``,
as in Iceberg. Every field has its own id, taken from the table's
column-id counter and never reused, so an Iceberg field id is a column id
at any depth. The rules here are pure: commands, SQL, the Iceberg REST
mapping and the data plane all ask them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Protocol

from almanac.errors import ValidationError
from almanac.model.datatypes import ColumnType, can_widen
from almanac.model.descriptor_sql import type_sql
from almanac.model.descriptors import Column

__all__ = [
    "ELEMENT",
    "KEY",
    "VALUE",
    "assign_ids",
    "check_evolution",
    "check_key_column",
    "check_shape",
    "field_ids",
    "walk",
]

ELEMENT = "element"
KEY = "key"
VALUE = "value"


class ColumnSource(Protocol):
    """What ``assign_ids`` numbers: a column definition and its nested ones."""

    @property
    def fields(self) -> Sequence[ColumnSource]: ...

    def to_flat_column(self, column_id: int) -> Column: ...


def assign_ids(defs: Sequence[ColumnSource], next_id: int) -> tuple[tuple[Column, ...], int]:
    """Columns for ``defs`` numbered from ``next_id``, and the next free id.

    Iceberg's order: the fields of one struct take consecutive ids, then each
    one's nested fields do, depth first; a flat table's columns are still
    numbered 0, 1, 2, ... as before nesting existed."""
    first = next_id
    next_id += len(defs)
    out: list[Column] = []
    for offset, definition in enumerate(defs):
        column = definition.to_flat_column(first + offset)
        if definition.fields:
            children, next_id = assign_ids(definition.fields, next_id)
            column = replace(column, fields=children)
        out.append(column)
    return tuple(out), next_id


def walk(columns: Sequence[Column], prefix: str = "") -> Iterator[tuple[str, Column]]:
    """Every column and nested field, depth first, with its dotted path
    (``s.a``, ``tags.element``, ``attrs.value``)."""
    for column in columns:
        path = f"{prefix}{column.name}"
        yield path, column
        if column.fields:
            yield from walk(column.fields, f"{path}.")


def field_ids(columns: Sequence[Column]) -> list[int]:
    """The ids of every column and nested field."""
    return [column.id for _, column in walk(columns)]


def _refuse(table: str, path: str, rule: str, why: str) -> ValidationError:
    return ValidationError(
        f"Field '{path}' of table '{table}' {why}", table=table, column=path, rule=rule
    )


class _Shaped(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def type(self) -> ColumnType: ...
    @property
    def nullable(self) -> bool: ...
    @property
    def fields(self) -> Sequence[_Shaped]: ...


def check_shape(table: str, column: _Shaped, path: str | None = None) -> None:
    """Refuse a malformed tree: fields on a primitive, a LIST without exactly
    one ``element``, a MAP without exactly ``key`` and ``value`` or with a
    nullable key, a STRUCT repeating a field name."""
    path = column.name if path is None else path
    kind = column.type
    names = [f.name for f in column.fields]
    if not kind.nested:
        if names:
            raise _refuse(table, path, "nested-fields", f"is {kind.sql_name}, which has no fields")
        return
    if kind is ColumnType.LIST and names != [ELEMENT]:
        raise _refuse(
            table, path, "list-shape", f"is an ARRAY; it has one field '{ELEMENT}', not {names}"
        )
    if kind is ColumnType.MAP:
        if names != [KEY, VALUE]:
            raise _refuse(
                table,
                path,
                "map-shape",
                f"is a MAP; it has fields '{KEY}' and '{VALUE}', not {names}",
            )
        if column.fields[0].nullable:
            raise _refuse(table, f"{path}.{KEY}", "map-key", "is a map key, which cannot be NULL")
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise _refuse(table, f"{path}.{name}", "duplicate-field", "is given more than once")
        seen.add(name)
    for field in column.fields:
        check_shape(table, field, f"{path}.{field.name}")


def check_key_column(table: str, column: Column, what: str) -> None:
    """Refuse a STRUCT, ARRAY or MAP column as a key or index column (``what``):
    Iceberg's identifier fields are primitive, and keys are compared as values."""
    if column.type.nested:
        raise _refuse(
            table,
            column.name,
            "nested-key",
            f"is {column.type.sql_name}; {what} holds only columns of primitive types",
        )


def _decimal_widens(old: Column, new: Column) -> bool:
    return (
        old.type is new.type is ColumnType.DECIMAL
        and old.scale == new.scale
        and (old.precision or 0) <= (new.precision or 0)
    )


def _same_type(old: Column, new: Column) -> bool:
    return (old.type, old.precision, old.scale, old.length) == (
        new.type,
        new.precision,
        new.scale,
        new.length,
    )


def check_evolution(
    table: str,
    old: Column,
    new: Column,
    path: str | None = None,
    known: frozenset[int] | None = None,
) -> None:
    """Refuse a change of one column's tree that Iceberg's schema evolution
    does not allow. Fields are matched by id: a field may be added (NULL or
    with a default for old rows, so optional), dropped, renamed and
    reordered within its struct, widened (INT to BIGINT, FLOAT to DOUBLE, a
    DECIMAL's precision), and made optional; never narrowed, changed to
    another kind, made required, or moved to another struct."""
    path = new.name if path is None else path
    known = frozenset(field_ids((old,))) if known is None else known
    widens = can_widen(old.type, new.type) or _decimal_widens(old, new)
    if not _same_type(old, new) and not widens:
        raise _refuse(
            table,
            path,
            "type-change",
            f"cannot change from {type_sql(old)} to {type_sql(new)}: only INT to "
            "BIGINT, FLOAT to DOUBLE and a wider DECIMAL precision are safe",
        )
    if old.nullable and not new.nullable:
        raise _refuse(
            table, path, "required", "cannot become required: rows already written may be NULL"
        )
    before = {f.id: f for f in old.fields}
    for field in new.fields:
        was = before.get(field.id)
        where = f"{path}.{field.name}"
        if was is None:
            if field.id in known:
                raise _refuse(
                    table,
                    where,
                    "nested-move",
                    f"has the id {field.id} of a field elsewhere: a field stays in its struct",
                )
            if old.type is not ColumnType.STRUCT:
                raise _refuse(
                    table, where, "nested-add", "cannot be added: only a STRUCT gains fields"
                )
            if not field.nullable and field.initial_default is None:
                raise _refuse(
                    table,
                    where,
                    "required-add",
                    "is added as required without a default: rows already written have no value",
                )
            continue
        check_evolution(table, was, field, where, known)
    if old.type is not ColumnType.STRUCT and {f.id for f in new.fields} != set(before):
        raise _refuse(
            table, path, "nested-drop", f"is {old.type.sql_name}; its fields cannot be dropped"
        )
