"""ALTER TABLE … ADD / DROP / ALTER / RENAME COLUMN."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

from almanac.commands.base import (
    DEFAULT_SCHEMA,
    ColumnDef,
    Command,
    check_column_count,
    check_column_def,
    check_column_names,
    check_default,
    check_name,
    find_table,
    qualified,
)
from almanac.commands.partitions import check_drop
from almanac.errors import AlreadyExistsError, NotFoundError, ValidationError
from almanac.model.catalog_version import CatalogVersion
from almanac.model.datatypes import (
    NO_COERCION,
    ColumnType,
    can_widen,
    coerce_constant,
    default_params,
    python_value_fits,
    validate_params,
)
from almanac.model.descriptors import (
    Column,
    ConstantDefault,
    DefaultValue,
    FunctionDefault,
    initial_default_of,
)
from almanac.model.entries import ColumnAltered, ColumnsAdded, ColumnsDropped, UpdateEntry
from almanac.model.names import name_key
from almanac.model.nested import check_evolution, check_shape, field_ids, walk

__all__ = ["AddColumns", "AlterColumn", "AlterField", "DropColumns", "EvolveColumn", "RenameColumn"]


def _typed_default(column: Column, default: DefaultValue) -> DefaultValue:
    """SQL's ``SET DEFAULT`` literal is parsed without the column's type; read
    it as that type when it is a lossless reading (``1.5`` for a DOUBLE)."""
    if not isinstance(default, ConstantDefault) or python_value_fits(
        column.type, default.value, column.precision, column.scale, column.length
    ):
        return default
    coerced = coerce_constant(column.type, default.value)
    return default if coerced is NO_COERCION else ConstantDefault(coerced)


@dataclass(frozen=True, slots=True, kw_only=True)
class AddColumns(Command):
    """Adds columns atomically. ``if_column_not_exists`` skips only the columns whose
    names already exist; ``if_table_exists`` skips a missing table."""

    table: str
    columns: tuple[ColumnDef, ...]
    schema: str = DEFAULT_SCHEMA
    if_column_not_exists: bool = False
    if_table_exists: bool = False

    def validate(self, version: CatalogVersion) -> list[UpdateEntry]:
        table = find_table(version, self.schema, self.table, missing_ok=self.if_table_exists)
        if table is None:
            return []
        full = qualified(self.schema, table.name)
        if not self.columns:
            raise ValidationError(f"No columns to add to table '{full}'", table=full)
        check_column_names(full, [c.name for c in self.columns])
        new: list[Column] = []
        next_id = table.next_column_id
        for col in self.columns:
            existing = table.column(col.name)
            if existing is not None:
                if self.if_column_not_exists:
                    continue
                raise _column_exists(col.name, existing.name, full)
            check_column_def(full, col)
            column = col.to_column(next_id)
            if isinstance(column.default, FunctionDefault):
                raise ValidationError(
                    f"Column '{col.name}' added to table '{full}' cannot default to the "
                    f"function {column.default.name}: rows already in the table read one "
                    "constant initial default, and only primary key columns may have "
                    "function defaults",
                    table=full,
                    column=col.name,
                    rule="initial-default",
                )
            if not column.nullable and (
                not isinstance(column.default, ConstantDefault) or column.default.value is None
            ):
                raise ValidationError(
                    f"Column '{col.name}' added to table '{full}' is NOT NULL and needs a "
                    "non-null default",
                    table=full,
                    column=col.name,
                    rule="not-null-default",
                )
            check_default(full, column, column.default, primary_key=False)
            # Rows written before now read the default given here, whatever
            # later SET/DROP DEFAULT do to the write default.
            new.append(replace(column, initial_default=initial_default_of(column.default)))
            next_id = max(field_ids((column,))) + 1
        check_column_count(full, len(table.columns) + len(new))
        return [ColumnsAdded(table.id, tuple(new))] if new else []


@dataclass(frozen=True, slots=True, kw_only=True)
class DropColumns(Command):
    """Drops columns atomically; ``if_column_exists`` skips only the
    missing ones, ``if_table_exists`` a missing table."""

    table: str
    columns: tuple[str, ...]
    schema: str = DEFAULT_SCHEMA
    if_column_exists: bool = False
    if_table_exists: bool = False

    def validate(self, version: CatalogVersion) -> list[UpdateEntry]:
        table = find_table(version, self.schema, self.table, missing_ok=self.if_table_exists)
        if table is None:
            return []
        full = qualified(self.schema, table.name)
        if not self.columns:
            raise ValidationError(f"No columns to drop from table '{full}'", table=full)
        check_column_names(full, list(self.columns), lookup=True)
        alive = [i for i in version.indexes(table.id) if i.status.alive and not i.primary_key]
        names: list[str] = []
        for given in self.columns:
            found = table.column(given)
            if found is None:
                if self.if_column_exists:
                    continue
                raise NotFoundError(
                    f"Column '{given}' does not exist in table '{full}'",
                    kind="column",
                    name=given,
                    table=full,
                )
            name = found.name
            if name in table.primary_key:
                raise ValidationError(
                    f"Column '{name}' is part of the primary key of table '{full}' and cannot "
                    "be dropped",
                    table=full,
                    column=name,
                    rule="primary-key",
                )
            if name in table.colocation:
                raise ValidationError(
                    f"Column '{name}' is a colocation column of table '{full}' and cannot "
                    "be dropped",
                    table=full,
                    column=name,
                    rule="colocation",
                )
            check_drop(full, table, found)
            for index in alive:
                if name in index.columns:
                    raise ValidationError(
                        f"Column '{name}' is used by index '{index.name}' of table '{full}' and "
                        "cannot be dropped",
                        table=full,
                        column=name,
                        index=index.name,
                        rule="indexed",
                    )
            names.append(name)
        return [ColumnsDropped(table.id, tuple(names))] if names else []


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterColumn(Command):
    """Type widening, DROP NOT NULL and defaults. ``not_null=True`` is SET NOT
    NULL (always refused), ``False`` is DROP NOT NULL. A result equal to the
    current column is a no-op. SET/DROP DEFAULT change only the default of
    future writes; the column's ``initial_default`` never changes."""

    table: str
    column: str
    schema: str = DEFAULT_SCHEMA
    type: ColumnType | None = None
    precision: int | None = None
    scale: int | None = None
    length: int | None = None
    not_null: bool | None = None
    default: DefaultValue | None = None
    drop_default: bool = False
    if_table_exists: bool = False

    def validate(self, version: CatalogVersion) -> list[UpdateEntry]:
        table = find_table(version, self.schema, self.table, missing_ok=self.if_table_exists)
        if table is None:
            return []
        full = qualified(self.schema, table.name)
        old = table.column(self.column)
        if old is None:
            raise NotFoundError(
                f"Column '{self.column}' does not exist in table '{full}'",
                kind="column",
                name=self.column,
                table=full,
            )
        in_pk = old.name in table.primary_key
        new = self._retyped(full, old, in_pk)
        if self.not_null is True and old.nullable:
            raise ValidationError(
                f"Cannot SET NOT NULL on column '{old.name}' of table '{full}': adding a NOT "
                "NULL constraint to an existing column is not supported",
                table=full,
                column=old.name,
                rule="set-not-null",
            )
        if self.not_null is False and not old.nullable:
            if in_pk:
                raise ValidationError(
                    f"Column '{old.name}' is part of the primary key of table '{full}' and "
                    "cannot be made nullable",
                    table=full,
                    column=old.name,
                    rule="primary-key",
                )
            new = replace(new, nullable=True)
        if self.drop_default and self.default is not None:
            raise ValidationError(
                f"Column '{old.name}' of table '{full}': SET DEFAULT and DROP DEFAULT together",
                table=full,
                column=old.name,
            )
        if self.drop_default:
            new = replace(new, default=None)
        elif self.default is not None:
            new = replace(new, default=_typed_default(new, self.default))
        if new.default != old.default or new.type is not old.type:
            check_default(full, new, new.default, primary_key=in_pk)
        if new == old:
            return []
        return [ColumnAltered(table.id, new)]

    def _retyped(self, full: str, old: Column, in_pk: bool) -> Column:
        target = old.type if self.type is None else self.type
        if not isinstance(target, ColumnType):
            raise ValidationError(
                f"Column '{old.name}' of table '{full}' cannot change to {target!r}: "
                "not a column type",
                table=full,
                column=old.name,
                rule="type-change",
            )
        if target is not old.type:
            if in_pk:
                raise ValidationError(
                    f"Column '{old.name}' is part of the primary key of table '{full}' and "
                    "cannot change type",
                    table=full,
                    column=old.name,
                    rule="primary-key",
                )
            if not can_widen(old.type, target):
                raise ValidationError(
                    f"Cannot change type of column '{old.name}' of table '{full}' from "
                    f"{old.type.sql_name} to {target.sql_name}",
                    table=full,
                    column=old.name,
                    rule="type-change",
                )
        problem = validate_params(old.name, target, self.precision, self.scale, self.length)
        if problem is not None:
            raise ValidationError(problem, table=full, column=old.name)
        if target is not old.type:
            dp, ds, dl = default_params(target)
            return replace(old, type=target, precision=dp, scale=ds, length=dl)
        col = old
        if self.precision is not None and self.precision != old.precision:
            if target is not ColumnType.DECIMAL or (
                old.precision is not None and self.precision < old.precision
            ):
                raise ValidationError(
                    f"Precision of column '{old.name}' of table '{full}' ({old.type.sql_name}) "
                    f"cannot change from {old.precision} to {self.precision}"
                    + (": DECIMAL precision may only grow" if target is ColumnType.DECIMAL else ""),
                    table=full,
                    column=old.name,
                    rule="precision",
                )
            col = replace(col, precision=self.precision)
        if self.scale is not None and self.scale != old.scale:
            raise ValidationError(
                f"Scale of column '{old.name}' of table '{full}' cannot change "
                f"(is {old.scale}, asked {self.scale})",
                table=full,
                column=old.name,
                rule="scale",
            )
        if self.length is not None and self.length != old.length:
            if old.length is not None and self.length < old.length:
                raise ValidationError(
                    f"Length of column '{old.name}' of table '{full}' may only grow "
                    f"(is {old.length}, asked {self.length})",
                    table=full,
                    column=old.name,
                    rule="length",
                )
            col = replace(col, length=self.length)
        return col


@dataclass(frozen=True, slots=True, kw_only=True)
class EvolveColumn(Command):
    """Gives a column a new tree by Iceberg's schema-evolution rules (see
    ``nested.check_evolution``): nested fields added, dropped, renamed,
    reordered within their struct, widened or made optional, docs changed.
    ``new`` is the whole column as it should be, under its current name; a
    field whose id the column does not hold is new and gets a fresh id from
    the table's counter, so ids are never reused."""

    table: str
    column: str
    new: Column
    schema: str = DEFAULT_SCHEMA

    def validate(self, version: CatalogVersion) -> list[UpdateEntry]:
        table = find_table(version, self.schema, self.table, missing_ok=False)
        assert table is not None  # not missing_ok: find_table raised
        full = qualified(self.schema, table.name)
        old = table.column(self.column)
        if old is None:
            raise NotFoundError(
                f"Column '{self.column}' does not exist in table '{full}'",
                kind="column",
                name=self.column,
                table=full,
            )
        new = self.new
        if new.name != old.name or new.id != old.id:
            raise ValidationError(
                f"Column '{old.name}' (id {old.id}) of table '{full}' cannot become "
                f"'{new.name}' (id {new.id}) here: rename it with RENAME COLUMN",
                table=full,
                column=old.name,
                rule="evolve-column",
            )
        if new.nullable and old.name in table.primary_key:
            raise ValidationError(
                f"Column '{old.name}' is part of the primary key of table '{full}' and "
                "cannot be made nullable",
                table=full,
                column=old.name,
                rule="primary-key",
            )
        check_shape(full, new)
        seen: set[int] = set()
        for path, field in walk((new,)):
            problem = validate_params(path, field.type, field.precision, field.scale, field.length)
            if problem is not None:
                raise ValidationError(problem, table=full, column=path)
            if field.id in seen:
                raise ValidationError(
                    f"Field '{path}' of table '{full}' repeats field id {field.id}",
                    table=full,
                    column=path,
                    rule="field-id",
                )
            seen.add(field.id)
            if path != new.name:  # the column's own defaults are ALTER COLUMN's
                check_default(full, replace(field, name=path), field.default, primary_key=False)
                check_default(
                    full, replace(field, name=path), field.initial_default, primary_key=False
                )
        new = _fresh_ids(new, set(field_ids((old,))), table.next_column_id)
        check_evolution(full, old, new)
        check_drop(full, table, old, new)
        if new == old:
            return []
        return [ColumnAltered(table.id, new)]


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterField(Command):
    """One change to a nested field named by its ``path`` from the column
    down (``("S", "X")``; a list's field is ``element``, a map's ``key`` and
    ``value``), or to a column's doc: ``add`` a field to the struct at
    ``path``, ``drop`` the field, rename it (``new_name``), change its type
    (``type``, ``precision``, ``scale``), DROP NOT NULL (``not_null=False``)
    or set its ``comment`` (``''`` removes it). Exactly one change. The
    column's new tree is ``EvolveColumn``'s to check and number, so a nested
    change follows the same rules whether SQL or an Iceberg client asks;
    a column itself is added, dropped, renamed and retyped by the column
    commands, so here a one-name ``path`` takes only ``comment``."""

    table: str
    path: tuple[str, ...]
    schema: str = DEFAULT_SCHEMA
    add: ColumnDef | None = None
    drop: bool = False
    new_name: str | None = None
    type: ColumnType | None = None
    precision: int | None = None
    scale: int | None = None
    not_null: bool | None = None
    comment: str | None = None
    if_table_exists: bool = False

    def validate(self, version: CatalogVersion) -> list[UpdateEntry]:
        table = find_table(version, self.schema, self.table, missing_ok=self.if_table_exists)
        if table is None:
            return []
        full = qualified(self.schema, table.name)
        shown = ".".join(self.path)
        changes = [
            self.add is not None,
            self.drop,
            self.new_name is not None,
            self.type is not None or self.precision is not None or self.scale is not None,
            self.not_null is not None,
            self.comment is not None,
        ]
        if sum(changes) != 1:
            raise ValidationError(
                f"Field '{shown}' of table '{full}': give exactly one change "
                "(add, drop, new_name, type, not_null or comment)",
                table=full,
                column=shown,
                rule="alter-field",
            )
        if not self.path or (len(self.path) == 1 and self.comment is None and self.add is None):
            raise ValidationError(
                f"Field '{shown}' of table '{full}' is no nested field: change a column with "
                "ALTER COLUMN, RENAME COLUMN or DROP COLUMN",
                table=full,
                column=shown,
                rule="alter-field",
            )
        top = table.column(self.path[0])
        if top is None:
            raise NotFoundError(
                f"Column '{self.path[0]}' does not exist in table '{full}'",
                kind="column",
                name=self.path[0],
                table=full,
            )
        new = self._changed(full, top, self.path[1:], top.name, table.next_column_id)
        return EvolveColumn(
            table=table.name, column=top.name, new=new, schema=self.schema
        ).validate(version)

    def _changed(
        self, full: str, column: Column, rest: tuple[str, ...], path: str, next_id: int
    ) -> Column:
        """``column`` with the change made at ``rest`` below it."""
        if rest:
            index = _field_index(full, column, rest[0], path)
            field = column.fields[index]
            where = f"{path}.{field.name}"
            if len(rest) == 1 and self.drop:
                return replace(column, fields=column.fields[:index] + column.fields[index + 1 :])
            if len(rest) == 1 and self.new_name is not None:
                for other in column.fields:
                    if other is not field and name_key(other.name) == name_key(self.new_name):
                        raise _column_exists(
                            f"{path}.{self.new_name}", f"{path}.{other.name}", full
                        )
            changed = self._changed(full, field, rest[1:], where, next_id)
            fields = (*column.fields[:index], changed, *column.fields[index + 1 :])
            return replace(column, fields=fields)
        if self.add is not None:
            return self._added(full, column, path, next_id)
        if self.new_name is not None:
            check_name("Field", self.new_name)
            return replace(column, name=self.new_name)
        if self.not_null is not None:
            return replace(column, nullable=not self.not_null)
        if self.comment is not None:
            return replace(column, doc=self.comment or None)
        kind = column.type if self.type is None else self.type
        params = (column.precision, column.scale, column.length)
        precision, scale, length = params if kind is column.type else default_params(kind)
        problem = validate_params(path, kind, self.precision, self.scale, None)
        if problem is not None:
            raise ValidationError(problem, table=full, column=path)
        return replace(
            column,
            type=kind,
            precision=precision if self.precision is None else self.precision,
            scale=scale if self.scale is None else self.scale,
            length=length,
        )

    def _added(self, full: str, struct: Column, path: str, next_id: int) -> Column:
        add = self.add
        assert add is not None
        where = f"{path}.{add.name}"
        check_name("Field", add.name)
        if struct.type is not ColumnType.STRUCT:
            raise ValidationError(
                f"Field '{where}' of table '{full}' cannot be added: '{path}' is "
                f"{struct.type.sql_name}, and only a STRUCT gains fields",
                table=full,
                column=where,
                rule="nested-add",
            )
        for field in struct.fields:
            if name_key(field.name) == name_key(add.name):
                raise _column_exists(where, f"{path}.{field.name}", full)
        check_column_def(full, replace(add, name=where))
        field = add.to_column(next_id)
        field = replace(field, initial_default=initial_default_of(field.default))
        return replace(struct, fields=(*struct.fields, field))


def _field_index(table: str, column: Column, name: str, path: str) -> int:
    """Where field ``name`` (without regard to case, its exact spelling
    first) is among ``column``'s fields; ``NotFoundError`` when it is not."""
    for exact in (True, False):
        for index, field in enumerate(column.fields):
            if field.name == name if exact else name_key(field.name) == name_key(name):
                return index
    where = f"{path}.{name}"
    raise NotFoundError(
        f"Field '{where}' does not exist in table '{table}'",
        kind="column",
        name=where,
        table=table,
    )


_MAX_FIELD_ID = 2**31 - 1
"""Iceberg's field ids are 32-bit."""


def _fresh_ids(column: Column, known: set[int], next_id: int) -> Column:
    """``column`` with the id of every field new to it settled. An id never
    used in the table (``next_id`` or above, as an Iceberg client assigns
    them) is kept, so the client's schema stays exact; any other (a dropped
    field's id, or a placeholder such as -1) is numbered after those, depth
    first. Ids are unique within ``column`` (checked before)."""
    fresh = {
        c.id
        for _, c in walk(column.fields)
        if c.id not in known and next_id <= c.id <= _MAX_FIELD_ID
    }
    counter = itertools.count(max([next_id - 1, *fresh]) + 1)

    def settle(parent: Column) -> Column:
        fields = []
        for field in parent.fields:
            if field.id not in known and field.id not in fresh:
                field = replace(field, id=next(counter))
            fields.append(settle(field))
        return replace(parent, fields=tuple(fields))

    return settle(column)


@dataclass(frozen=True, slots=True, kw_only=True)
class RenameColumn(Command):
    """Renames a column; its id, type and data stay. Keys and indexes name
    their columns, so a column that one of them uses keeps its name (the
    same rule as DROP COLUMN), and a rename never rewrites them."""

    table: str
    column: str
    new_name: str
    schema: str = DEFAULT_SCHEMA
    if_column_exists: bool = False
    if_table_exists: bool = False

    def validate(self, version: CatalogVersion) -> list[UpdateEntry]:
        table = find_table(version, self.schema, self.table, missing_ok=self.if_table_exists)
        if table is None:
            return []
        full = qualified(self.schema, table.name)
        check_name("Column", self.column, lookup=True)
        check_name("Column", self.new_name)
        old = table.column(self.column)
        if old is None:
            if self.if_column_exists:
                return []
            raise NotFoundError(
                f"Column '{self.column}' does not exist in table '{full}'",
                kind="column",
                name=self.column,
                table=full,
            )
        if self.new_name == old.name:
            return []
        existing = table.column(self.new_name)
        if existing is not None and existing.id != old.id:
            raise _column_exists(self.new_name, existing.name, full)
        uses = [("the primary key", old.name in table.primary_key)]
        uses.append(("the colocation columns", old.name in table.colocation))
        uses += [
            (f"index '{index.name}'", old.name in index.columns)
            for index in version.indexes(table.id)
            if index.status.alive and not index.primary_key
        ]
        for what, used in uses:
            if used:
                raise ValidationError(
                    f"Column '{old.name}' is part of {what} of table '{full}' and cannot be "
                    "renamed",
                    table=full,
                    column=old.name,
                    rule="renamed-key",
                )
        return [ColumnAltered(table.id, replace(old, name=self.new_name))]


def _column_exists(name: str, existing: str, table: str) -> AlreadyExistsError:
    """Column names are unique within a table without regard to case."""
    text = f"Column '{name}' already exists in table '{table}'"
    if existing != name:
        text += f" as '{existing}' (names are unique without regard to case)"
    return AlreadyExistsError(text, kind="column", name=name, table=table, existing=existing)
