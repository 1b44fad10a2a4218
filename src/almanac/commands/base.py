"""What every command shares: lookups that raise the right error, id
allocation, name rules and column definitions."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from enum import Enum

from almanac._check import check_fields
from almanac.errors import AlreadyExistsError, NotFoundError, ValidationError
from almanac.model.catalog_version import DEFAULT_SCHEMA, CatalogVersion, NameKind
from almanac.model.clock import to_datetime
from almanac.model.datatypes import (
    ColumnType,
    default_params,
    python_value_fits,
    shown,
    validate_params,
)
from almanac.model.descriptors import (
    FUNCTION_DEFAULTS,
    Column,
    ConstantDefault,
    DefaultValue,
    FunctionDefault,
    Index,
    Schema,
    Table,
    Zone,
)
from almanac.model.entries import ObjectIdsReserved, UpdateEntry
from almanac.model.names import name_key
from almanac.model.nested import assign_ids, check_shape

__all__ = [
    "DEFAULT_SCHEMA",
    "RESERVED_SCHEMAS",
    "MAX_COLUMNS",
    "MAX_NAME_BYTES",
    "ColumnDef",
    "Command",
    "CommitContext",
    "IdAllocator",
]

RESERVED_SCHEMAS = frozenset({"SYSTEM", "INFORMATION_SCHEMA", "DEFINITION_SCHEMA"})


@dataclass(frozen=True, slots=True)
class CommitContext:
    """What the committing node decides for a command before validating it:
    its hybrid time ``now`` and its default soft-delete reserve (seconds).
    Whatever a command takes from here ends up in the entries it makes, so
    the log never depends on a node's local settings."""

    now: int
    soft_delete_reserve_s: float = 0.0


class Command:
    """A frozen description of intent. ``validate`` is pure: the same snapshot
    and command give the same entries or the same error. An empty list means
    the command is a no-op (for example ``IF NOT EXISTS`` on an existing name)."""

    __slots__ = ()

    def __post_init__(self) -> None:
        # Every field is checked against its annotation when the command is
        # built, so a wrong type never reaches validation or the serializer.
        check_fields(self)

    def bind(self, context: CommitContext) -> Command:
        """The command with what the committing node decides filled in (its
        clock, its defaults); most commands need nothing and return themselves."""
        return self

    def validate(self, version: CatalogVersion) -> list[UpdateEntry]:
        raise TypeError(f"{type(self).__name__} does not define validate()")


class IdAllocator:
    """Hands out object ids from the snapshot's generator; ``entries`` prepends
    the generator update so a replay reserves the same ids."""

    def __init__(self, version: CatalogVersion) -> None:
        self._next = version.object_id_gen
        self._count = 0

    def next(self) -> int:
        value = self._next + self._count
        self._count += 1
        return value

    def entries(self, *rest: UpdateEntry) -> list[UpdateEntry]:
        return [ObjectIdsReserved(self._count), *rest]


def check_enum(what: str, value: object, kind: type[Enum], where: str) -> None:
    if not isinstance(value, kind):
        raise ValidationError(
            f"{what} of {where} must be a {kind.__name__}, got {value!r}", where=where
        )


def check_enum_tuple(what: str, values: object, kind: type[Enum], where: str) -> None:
    if not isinstance(values, tuple | list):
        raise ValidationError(f"{what} of {where} must be a sequence, got {values!r}", where=where)
    for value in values:
        check_enum(what, value, kind, where)


def qualified(schema: str, name: str) -> str:
    return f"{schema}.{name}"


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_IGNORABLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0000-\U000e0fff]"
)
"""Unicode's Default_Ignorable_Code_Point: characters a renderer shows as
nothing, such as U+3164 HANGUL FILLER and the variation selectors, which are
letters or marks rather than format characters (Cf)."""


MAX_NAME_BYTES = 255
"""The longest object name, in UTF-8 bytes (a file name's limit on common
file systems): every name must also fit a URL path of the Iceberg REST API."""


def check_name(kind: str, name: object, *, lookup: bool = False) -> str:
    """Names are Unicode text without control characters (C0, DEL, C1) of
    at most ``MAX_NAME_BYTES`` UTF-8 bytes, with at least one visible
    character; any other text, such as ``..`` or ``_manifests``, is a legal
    quoted name. ``lookup``: the name only finds an existing object, which
    may predate the length and visibility rules, so only those are skipped."""
    if not isinstance(name, str) or not name.strip():
        raise ValidationError(f"{kind} name must not be blank", kind=kind, name=name)
    bad = _CONTROL.search(name)
    if bad is not None:
        raise ValidationError(
            f"{kind} name {_shown_name(name)} must not contain control characters "
            f"(U+{ord(bad.group()):04X} at position {bad.start() + 1})",
            kind=kind,
            name=name,
            rule="name-characters",
        )
    check_text(f"{kind} name {_shown_name(name)}", name, kind=kind, name=name)
    if lookup:
        return name
    size = len(name.encode("utf-8"))
    if size > MAX_NAME_BYTES:
        raise ValidationError(
            f"{kind} name {_shown_name(name)} is {size} UTF-8 bytes long; a name has at most "
            f"{MAX_NAME_BYTES} bytes",
            kind=kind,
            name=_shown_name(name),
            rule="name-length",
            length=size,
            limit=MAX_NAME_BYTES,
        )
    if all(ch.isspace() or unicodedata.category(ch) == "Cf" or _IGNORABLE.match(ch) for ch in name):
        raise ValidationError(
            f"{kind} name {name!r} has no visible character: it is empty once whitespace and "
            "invisible characters (Unicode category Cf or default-ignorable, such as U+200B, "
            "U+FEFF and U+3164) are removed",
            kind=kind,
            name=name,
            rule="name-visible",
        )
    return name


def _shown_name(name: str) -> str:
    """The name quoted for a message, cut to a readable length."""
    return repr(name) if len(name) <= 60 else f"{name[:57]!r}... ({len(name)} characters)"


def check_text(what: str, value: str, **context: object) -> None:
    """Stored text is UTF-8: a lone surrogate (which Python strings may hold)
    is not Unicode text and could not be stored."""
    bad = _SURROGATE.search(value)
    if bad is not None:
        raise ValidationError(
            f"{what} is not valid Unicode text: it contains the lone surrogate "
            f"U+{ord(bad.group()):04X} at position {bad.start() + 1}",
            rule="unicode-text",
            **context,
        )


def require_schema(version: CatalogVersion, name: str) -> Schema:
    schema = version.schema(name)
    if schema is None:
        raise NotFoundError(f"Schema '{name}' does not exist", kind="schema", name=name)
    return schema


def find_table(
    version: CatalogVersion, schema: str, name: str, *, missing_ok: bool
) -> Table | None:
    """The table, or ``None`` when it (or its schema) is missing and ``missing_ok``."""
    if missing_ok and version.schema(schema) is None:
        return None
    require_schema(version, schema)
    table = version.table(name, schema)
    if table is None and not missing_ok:
        raise table_not_found(version, schema, name)
    return table


def require_table(version: CatalogVersion, schema: str, name: str) -> Table:
    table = find_table(version, schema, name, missing_ok=True)
    if table is None:
        raise table_not_found(version, schema, name)
    return table


def table_not_found(version: CatalogVersion, schema: str, name: str) -> NotFoundError:
    """ "Does not exist", saying so when a soft-deleted table holds the name."""
    full = qualified(schema, name)
    dropped = version.soft_deleted_table(name, schema)
    if dropped is None:
        return NotFoundError(f"Table '{full}' does not exist", kind="table", name=full)
    return NotFoundError(
        f"Table '{full}' does not exist: it is soft-deleted ({reserve_text(dropped)}); "
        "RECOVER TABLE brings it back",
        kind="table",
        name=full,
        rule="soft-deleted",
    )


def reserve_text(table: Table) -> str:
    """When a soft-deleted table's reserve ends, for messages."""
    end = table.purge_at
    when = "?" if end is None else to_datetime(end).isoformat(timespec="seconds")
    return f"dropped in catalog version {table.update_version}, reserved until {when}"


def find_index(
    version: CatalogVersion, schema: str, name: str, *, missing_ok: bool
) -> Index | None:
    """The alive index, or ``None`` when it (or its schema) is missing and ``missing_ok``."""
    if missing_ok and version.schema(schema) is None:
        return None
    require_schema(version, schema)
    index = version.index(name, schema)
    if index is None and not missing_ok:
        raise NotFoundError(
            f"Index '{qualified(schema, name)}' does not exist",
            kind="index",
            name=qualified(schema, name),
        )
    return index


def require_index_id(version: CatalogVersion, index_id: int) -> Index:
    index = version.index_by_id(index_id)
    if index is None:
        raise NotFoundError(f"Index with id {index_id} does not exist", kind="index", id=index_id)
    return index


def find_zone(version: CatalogVersion, name: str, *, missing_ok: bool) -> Zone | None:
    zone = version.zone(name)
    if zone is None and not missing_ok:
        raise NotFoundError(f"Zone '{name}' does not exist", kind="zone", name=name)
    return zone


def taken_by(
    version: CatalogVersion,
    kind: NameKind,
    name: str,
    schema_id: int | None = None,
    *,
    ignore: int | None = None,
) -> int | None:
    """The id of an object whose name equals ``name`` without regard to case
    (names are unique that way within their parent), ``ignore`` left out:
    what a create or rename collides with."""
    for object_id in version.holders(kind, name, schema_id):
        if object_id != ignore:
            return object_id
    return None


def already_exists(kind: str, name: str, existing: str) -> AlreadyExistsError:
    """``Kind 'name' already exists``, naming the existing spelling when it differs."""
    text = f"{kind} '{name}' already exists"
    if existing != name:
        text += f" as '{existing}' (names are unique without regard to case)"
    return AlreadyExistsError(text, kind=kind.lower(), name=name, existing=existing)


def ensure_relation_name_free(
    version: CatalogVersion,
    schema: Schema,
    name: str,
    *,
    ignore_index: int | None = None,
    ignore_table: int | None = None,
) -> None:
    """Tables and alive indexes share one namespace per schema, without
    regard to case; a soft-deleted table keeps its name and its indexes'
    names taken."""
    full = qualified(schema.name, name)
    table_id = taken_by(version, "table", name, schema.id, ignore=ignore_table)
    if table_id is not None:
        table = version.tables_by_id[table_id]
        if table.soft_deleted:
            raise AlreadyExistsError(
                f"Table name '{full}' is reserved by a soft-deleted table "
                f"({reserve_text(table)}); a reserved name cannot be reused until the table "
                "is recovered under another name or purged",
                kind="table",
                name=full,
                rule="soft-deleted-name",
            )
        raise already_exists("Table", full, qualified(schema.name, table.name))
    index_id = taken_by(version, "index", name, schema.id, ignore=ignore_index)
    if index_id is not None:
        owner = version.tables_by_id.get(version.indexes_by_id[index_id].table_id)
        if owner is not None and owner.soft_deleted:
            raise AlreadyExistsError(
                f"Index name '{full}' is reserved by an index of soft-deleted table "
                f"'{qualified(schema.name, owner.name)}' ({reserve_text(owner)}); it cannot be "
                "reused until that table is recovered or purged",
                kind="index",
                name=full,
                rule="soft-deleted-name",
            )
        existing = version.indexes_by_id[index_id].name
        raise already_exists("Index", full, qualified(schema.name, existing))


@dataclass(frozen=True, slots=True, kw_only=True)
class ColumnDef:
    """A column as a user defines it; the catalog assigns its id."""

    name: str
    type: ColumnType
    nullable: bool = True
    precision: int | None = None
    scale: int | None = None
    length: int | None = None
    default: DefaultValue | None = None
    doc: str | None = None
    fields: tuple[ColumnDef, ...] = ()
    """A STRUCT's fields, a LIST's element or a MAP's key and value (see
    ``almanac.model.nested``); their ids are assigned with the column's."""

    def __post_init__(self) -> None:
        check_fields(self)

    def to_column(self, column_id: int) -> Column:
        """The column with id ``column_id``, its nested fields numbered on from
        ``column_id + 1`` (``nested.assign_ids`` numbers several columns)."""
        return assign_ids((self,), column_id)[0][0]

    def to_flat_column(self, column_id: int) -> Column:
        """This column alone (no nested fields) with id ``column_id``."""
        dp, ds, dl = default_params(self.type)
        return Column(
            id=column_id,
            name=self.name,
            type=self.type,
            nullable=self.nullable,
            precision=dp if self.precision is None else self.precision,
            scale=ds if self.scale is None else self.scale,
            length=dl if self.length is None else self.length,
            default=self.default,
            doc=self.doc,
        )


def check_column_names(table: str, names: list[str], *, lookup: bool = False) -> None:
    seen: set[str] = set()
    for name in names:
        check_name("Column", name, lookup=lookup)
        key = name_key(name)
        if key in seen:
            raise ValidationError(
                f"Column '{name}' is given more than once for table '{table}'",
                kind="column",
                name=name,
                table=table,
            )
        seen.add(key)


MAX_COLUMNS = 4096
"""The most columns a table may have. Iceberg sets no limit, but every
version, schema and data file carries the whole column list, and one ALTER
runs inside the catalog's writer lock: a few thousand columns is far past
any real table (Kudu's default cap is 300)."""


def check_column_count(table: str, count: int) -> None:
    """Refuse a table of more than ``MAX_COLUMNS`` columns."""
    if count > MAX_COLUMNS:
        raise ValidationError(
            f"Table '{table}' would have {count} columns; a table has at most {MAX_COLUMNS}",
            table=table,
            count=count,
            limit=MAX_COLUMNS,
            rule="max-columns",
        )


def check_column_def(table: str, col: ColumnDef) -> None:
    if not isinstance(col.type, ColumnType):
        raise ValidationError(
            f"Column '{col.name}' of table '{table}' has no valid type", column=col.name
        )
    problem = validate_params(col.name, col.type, col.precision, col.scale, col.length)
    if problem is not None:
        raise ValidationError(problem, column=col.name, table=table)
    if col.type is ColumnType.FIXED and col.length is None:
        raise ValidationError(
            f"Type FIXED of column '{col.name}' of table '{table}' needs its length in bytes, "
            "as in FIXED(16)",
            column=col.name,
            table=table,
            rule="fixed-length",
        )
    check_shape(table, col)
    for field in col.fields:
        check_column_def(table, field)


def check_default(
    table: str, column: Column, default: DefaultValue | None, *, primary_key: bool
) -> None:
    """Function defaults only on key columns, each function on its own type;
    constants must be values of the column's type."""
    if default is None:
        return
    if isinstance(default, FunctionDefault):
        fn_type = FUNCTION_DEFAULTS.get(default.name)
        if fn_type is None:
            raise ValidationError(
                f"Unknown default function '{default.name}' for column '{column.name}' "
                f"of table '{table}'",
                column=column.name,
                function=default.name,
            )
        if not primary_key:
            raise ValidationError(
                f"Column '{column.name}' of table '{table}' is not part of the primary key "
                f"and cannot have a function default ('{default.name}')",
                column=column.name,
            )
        if column.type is not fn_type:
            raise ValidationError(
                f"Default function '{default.name}' fills only {fn_type.sql_name} columns, "
                f"but column '{column.name}' of table '{table}' is {column.type.sql_name}",
                column=column.name,
            )
        return
    if not isinstance(default, ConstantDefault):
        raise ValidationError(f"Invalid default for column '{column.name}'", column=column.name)
    if isinstance(default.value, str):
        check_text(
            f"Default of column '{column.name}' of table '{table}'",
            default.value,
            column=column.name,
        )
    if default.value is None and not column.nullable:
        raise ValidationError(
            f"Column '{column.name}' of table '{table}' is NOT NULL and cannot default to NULL",
            column=column.name,
        )
    if not python_value_fits(
        column.type, default.value, column.precision, column.scale, column.length
    ):
        raise ValidationError(
            f"Default {shown(default.value)} is not a valid {column.type.sql_name} value "
            f"for column '{column.name}' of table '{table}'",
            column=column.name,
        )
