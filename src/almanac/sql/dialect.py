"""The Almanac SQL dialect: sqlglot's standard DDL grammar plus our own clauses.

sqlglot parses standard DDL well but turns anything it does not know into an
opaque ``Command``. This dialect teaches its parser the clauses Almanac adds
(``COLOCATE BY``, ``ZONE``, ``STORAGE PROFILE``, ``PRIMARY KEY USING …``, the
zone statements, ``ADD COLUMN (…)``) and turns every fallback into a syntax
error that points at the first token it could not place. The trees it
produces are translated into commands by :mod:`almanac.sql.translate`.

What parses but means nothing here is refused with :class:`Untranslatable`;
what type names and literals mean is :mod:`almanac.sql.literals`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from typing import Any, ClassVar, NoReturn

from sqlglot import exp, parser, tokens
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ParseError
from sqlglot.tokenizer_core import Token, TokenType

__all__ = [
    "AlmanacDialect",
    "AlmanacParser",
    "AlmanacTokenizer",
    "AlterIndexStatement",
    "AlterZoneStatement",
    "AsOfClause",
    "ColocateProperty",
    "PartitionFieldStatement",
    "CreateZoneStatement",
    "DropZoneStatement",
    "INDEX_KINDS",
    "KeyColumn",
    "READ_KINDS",
    "PurgeTableStatement",
    "ReadStatementTree",
    "RecoverTableStatement",
    "StorageProfileProperty",
    "TablePrimaryKey",
    "Untranslatable",
    "WriteOrderStatement",
    "ZoneProperty",
    "check_clauses",
]

INDEX_KINDS = ("HASH", "SORTED")


class KeyColumn(exp.Expression):
    """``c [ASC|DESC] [NULLS FIRST|LAST]`` in a key or index column list.

    ``desc`` and ``nulls_first`` are absent unless written: the default null
    order depends on the direction, so "not written" must stay visible.
    """

    arg_types: ClassVar[dict[str, bool]] = {"this": True, "desc": False, "nulls_first": False}


class TablePrimaryKey(exp.PrimaryKey):
    """``PRIMARY KEY [USING HASH|SORTED] (key columns)``; ``kind`` is a ``Var``."""

    arg_types: ClassVar[dict[str, bool]] = {"expressions": True, "kind": False}


class ColocateProperty(exp.Property):
    """``COLOCATE [BY] (c, …)``."""

    arg_types: ClassVar[dict[str, bool]] = {"expressions": True}


class ZoneProperty(exp.Property):
    """``ZONE z`` of a table."""

    arg_types: ClassVar[dict[str, bool]] = {"this": True}


class StorageProfileProperty(exp.Property):
    """``STORAGE PROFILE 'p'`` of a table."""

    arg_types: ClassVar[dict[str, bool]] = {"this": True}


class CreateZoneStatement(exp.Expression):
    """``CREATE ZONE [IF NOT EXISTS] z [WITH (k=v, …)]``; options are ``Property`` nodes."""

    arg_types: ClassVar[dict[str, bool]] = {"this": True, "exists": False, "expressions": False}


class AlterZoneStatement(exp.Expression):
    """``ALTER ZONE [IF EXISTS] z`` then ``SET (k=v, …)``, ``SET DEFAULT`` or ``RENAME TO y``."""

    arg_types: ClassVar[dict[str, bool]] = {
        "this": True,
        "exists": False,
        "expressions": False,
        "set_default": False,
        "rename_to": False,
    }


class PartitionFieldStatement(exp.Expression):
    """``ALTER TABLE [IF EXISTS] t ADD|DROP|REPLACE PARTITION FIELD term
    [WITH term] [AS name]``: ``action`` is ADD, DROP or REPLACE; ``expression``
    the field (a column or a transform call), ``replacement`` REPLACE's new
    one and ``alias`` the name ADD or REPLACE gives it."""

    arg_types: ClassVar[dict[str, bool]] = {
        "this": True,
        "exists": False,
        "action": True,
        "expression": True,
        "replacement": False,
        "alias": False,
    }


class WriteOrderStatement(exp.Expression):
    """``ALTER TABLE [IF EXISTS] t WRITE [LOCALLY] ORDERED BY term [ASC|DESC]
    [NULLS FIRST|LAST], …`` (``KeyColumn`` items over a term) or ``WRITE
    UNORDERED`` (none)."""

    arg_types: ClassVar[dict[str, bool]] = {"this": True, "exists": False, "expressions": False}


class AlterIndexStatement(exp.Expression):
    """``ALTER INDEX [IF EXISTS] [s.]i RENAME TO j``."""

    arg_types: ClassVar[dict[str, bool]] = {"this": True, "exists": False, "rename_to": True}


READ_KINDS = (
    "SCHEMAS",
    "TABLES",
    "DROPPED",
    "INDEXES",
    "ZONES",
    "HISTORY",
    "TABLETS",
    "SERVERS",
    "DIFF",
)
"""What ``SHOW`` shows; ``DESCRIBE [TABLE]`` is the read of kind ``DESCRIBE``,
``SELECT * FROM SYSTEM.x`` the read of kind ``SELECT``."""


class AsOfClause(exp.Expression):
    """``AS OF VERSION n`` or ``AS OF TIMESTAMP '…'``; ``kind`` is ``VERSION``
    or ``TIMESTAMP``, ``this`` the value as written."""

    arg_types: ClassVar[dict[str, bool]] = {"this": True, "kind": True}


class ReadStatementTree(exp.Expression):
    """``SHOW kind …``, ``DESCRIBE [TABLE] t`` or ``SELECT * FROM t``, then an
    optional ``AS OF``.

    ``kind`` is one of ``READ_KINDS``, ``DESCRIBE`` or ``SELECT``; ``this`` is
    the schema (an identifier, ``SHOW TABLES IN s``) or table (``SHOW INDEXES
    ON t``, ``SHOW TABLETS ON t``, ``DESCRIBE t``, ``SELECT * FROM t``) named;
    ``limit`` is ``SHOW HISTORY``'s, ``expressions`` the two versions of
    ``SHOW DIFF``.
    """

    arg_types: ClassVar[dict[str, bool]] = {
        "kind": True,
        "this": False,
        "limit": False,
        "expressions": False,
        "as_of": False,
    }


class RecoverTableStatement(exp.Expression):
    """``RECOVER TABLE [s.]t [AS t2]``: a soft-deleted table back, renamed with ``AS``."""

    arg_types: ClassVar[dict[str, bool]] = {"this": True, "rename_to": False}


class PurgeTableStatement(exp.Expression):
    """``PURGE TABLE [IF EXISTS] [s.]t``: a soft-deleted table removed for good."""

    arg_types: ClassVar[dict[str, bool]] = {"this": True, "exists": False}


class DropZoneStatement(exp.Expression):
    """``DROP ZONE [IF EXISTS] z``."""

    arg_types: ClassVar[dict[str, bool]] = {"this": True, "exists": False}


_FOREIGN_TYPE_NAMES = frozenset(
    {"BOOL", "BYTE", "SHORT", "LONG", "INT1", "INT2", "INT4", "FLOAT4", "FLOAT8", "NUMBER"}
    | {"STR", "TEXT", "CLOB", "LONGVARCHAR", "VARCHAR2", "BLOB", "BYTEA"}
    | {"TIMESTAMPLTZ", "TIMESTAMP_LTZ"}
)
"""Other dialects' names that sqlglot maps onto our types. They stay unknown
here: ``INT4`` (4 bytes) next to our ``INT8`` (8 bits), or ``BYTE`` (an
integer) next to ``BYTES``, would mislead."""


class AlmanacTokenizer(tokens.Tokenizer):
    """Adds ``X'…'`` byte literals and the ``BYTES`` / ``BINARY VARYING`` /
    ``FIXED`` type names; drops other dialects' type names. ``SHOW`` is a statement like any
    other here, not an opaque command whose rest is one string."""

    COMMANDS: ClassVar[set[TokenType]] = tokens.Tokenizer.COMMANDS - {TokenType.SHOW}

    HEX_STRINGS: ClassVar[list[str | tuple[str, str]]] = [("x'", "'"), ("X'", "'")]
    KEYWORDS: ClassVar[dict[str, TokenType]] = {
        name: token
        for name, token in {
            **tokens.Tokenizer.KEYWORDS,
            "BYTES": TokenType.VARBINARY,
            "BINARY VARYING": TokenType.VARBINARY,
            "FIXED": TokenType.FIXEDSTRING,  # Iceberg's fixed(L), not a DECIMAL
        }.items()
        if name not in _FOREIGN_TYPE_NAMES
    }


_NESTING = {TokenType.ARRAY: "args", TokenType.MAP: "args", TokenType.STRUCT: "struct"}
"""What the types inside ``<…>`` of a nested type are: ARRAY's and MAP's
arguments, which may say NOT NULL, or a STRUCT's fields, whose NOT NULL is a
column constraint."""


class AlmanacParser(parser.Parser):
    """sqlglot's parser with Almanac's clauses and without the ``Command`` fallback."""

    ALTER_TABLE_MIXED_ACTIONS: ClassVar[bool] = True
    ALTER_DROP_REQUIRES_COLUMN: ClassVar[bool] = False

    STATEMENT_PARSERS: ClassVar[dict[TokenType, Callable[..., Any]]] = {
        **parser.Parser.STATEMENT_PARSERS,
        TokenType.CREATE: lambda self: self._parse_create_statement(),
        TokenType.ALTER: lambda self: self._parse_alter_statement(),
        TokenType.DROP: lambda self: self._parse_drop_statement(),
        TokenType.SHOW: lambda self: self._parse_show_statement(),
        TokenType.DESCRIBE: lambda self: self._parse_describe_statement(),
        TokenType.SELECT: lambda self: self._parse_select_statement(),
    }

    FUNCTIONS: ClassVar[dict[str, Callable[..., Any]]] = {}
    """No function has a meaning in DDL beyond its name (``DEFAULT RAND_UUID()``):
    every call stays an ``Anonymous`` node. sqlglot's builders for other
    dialects' functions fail on wrong arguments with IndexError and the like."""

    PROPERTY_PARSERS: ClassVar[dict[str, Callable[..., Any]]] = {
        **parser.Parser.PROPERTY_PARSERS,
        "COLOCATE": lambda self: self._parse_colocate(),
        "ZONE": lambda self: self._parse_zone_property(),
        "STORAGE": lambda self: self._parse_storage_profile(),
    }

    # -- errors ---------------------------------------------------------------

    def raise_error(self, message: str, token: Token | None = None) -> NoReturn:
        """Always raises, and records the offending token's offsets, which sqlglot's
        error (line and *end* column only) does not carry."""
        token = token or self._curr or self._prev
        start, end = (token.start, token.end) if token else (0, 0)
        message = self._plain(message, token)
        raise ParseError(
            message,
            errors=[{"description": message, "start": start, "end": end, "at_end": not self._curr}],
        )

    @staticmethod
    def _plain(message: str, token: Token) -> str:
        """sqlglot's messages without the reprs of its tokens and classes."""
        if message.startswith("Expected ") and " but got <Token" in message:
            expected = message[len("Expected ") :].split(" but got ")[0]
            return "Expecting a " + expected.replace("database", "schema")
        if "<Token" in message or "<class" in message or message.startswith("Invalid expression"):
            return f"Unexpected {token.text!r}" if token else "Unexpected end of statement"
        return message

    def _parse_as_command(self, start: Token) -> exp.Command:
        """sqlglot gives up on a statement here; we report where it stopped."""
        if self._curr:
            self.raise_error(f"Unexpected {self._curr.text!r}")
        self.raise_error("Unexpected end of statement")

    def _parse_command(self) -> exp.Command:
        """Statements sqlglot only knows as opaque commands (SHOW, GRANT, …)."""
        self.raise_error(f"Unsupported statement {self._prev.text.upper()}", self._prev)

    def _parse_statement(self) -> exp.Expr | None:
        """Adds ``RECOVER TABLE`` and ``PURGE TABLE``, whose first words are
        no keywords of sqlglot's."""
        curr, following = self._curr, self._next
        if (
            curr
            and following
            and curr.token_type == TokenType.VAR
            and curr.text.upper() in ("RECOVER", "PURGE")
            and following.token_type == TokenType.TABLE
        ):
            self._advance(2)
            if curr.text.upper() == "PURGE":
                exists = self._parse_exists()
                table = self._parse_statement_table()
                return self.expression(PurgeTableStatement(this=table, exists=exists), token=curr)
            table = self._parse_statement_table()
            new_name = None
            if self._match(TokenType.ALIAS):
                new_name = self._parse_id_var(any_token=False)
                if new_name is None:
                    self.raise_error("Expecting a table name after AS")
            return self.expression(
                RecoverTableStatement(this=table, rename_to=new_name), token=curr
            )
        return super()._parse_statement()

    def _parse_statement_table(self) -> exp.Expr:
        table = self._parse_table_parts() if self._curr else None
        if table is None:
            self.raise_error("Expecting a table name")
        return table

    # -- nested field paths ---------------------------------------------------

    _field_path = False
    """Set for one ``_parse_field``: the column of ``ALTER TABLE … ADD|ALTER
    COLUMN`` may be a dotted path to a nested field."""

    def _parse_field(
        self,
        any_token: bool = False,
        tokens: Collection[TokenType] | None = None,
        anonymous_func: bool = False,
    ) -> exp.Expr | None:
        field = super()._parse_field(any_token, tokens, anonymous_func)
        if not self._field_path:
            return field
        self._field_path = False
        parts: list[exp.Expr] = []
        while isinstance(field, exp.Identifier) and self._match(TokenType.DOT):
            parts.append(field)
            field = self._parse_id_var(any_token=True)
            if field is None:
                self.raise_error("Expecting a field name after '.'")
        return exp.Dot.build([*parts, field]) if parts and field is not None else field

    def _parse_column_def_with_exists(self) -> exp.Expr | None:
        self._field_path = True
        try:
            return super()._parse_column_def_with_exists()  # type: ignore[no-untyped-call,no-any-return]
        finally:
            self._field_path = False

    def _parse_alter_table_alter(self) -> exp.Expr | None:
        self._field_path = not self._match_texts(self.ALTER_ALTER_PARSERS, advance=False)
        try:
            return super()._parse_alter_table_alter()
        finally:
            self._field_path = False

    # -- reads ----------------------------------------------------------------

    def _parse_show_statement(self) -> exp.Expr:
        if not self._match_texts(READ_KINDS):
            self.raise_error(
                f"Expecting {', '.join(READ_KINDS[:-1])} or {READ_KINDS[-1]} after SHOW"
            )
        kind = self._prev.text.upper()
        target: exp.Expr | None = None
        limit: exp.Expr | None = None
        versions: list[exp.Expr] | None = None
        if kind == "DROPPED" and not self._match_texts(("TABLES",)):
            self.raise_error("Expecting TABLES after SHOW DROPPED")
        if kind in ("TABLES", "DROPPED") and self._match(TokenType.IN):
            target = self._parse_id_var(any_token=False)
            if target is None:
                self.raise_error("Expecting a schema name")
        elif kind in ("INDEXES", "TABLETS") and self._match(TokenType.ON):
            target = self._parse_table_parts()
        elif kind == "HISTORY":
            if self._match(TokenType.ON):
                target = self._parse_table_parts()
            if self._match(TokenType.LIMIT):
                limit = self._parse_read_number("Expecting the number of versions after LIMIT")
        elif kind == "DIFF":
            versions = [
                self._parse_read_number(f"Expecting the {which} version of SHOW DIFF")
                for which in ("first", "second")
            ]
        return self.expression(
            ReadStatementTree(
                kind=exp.var(kind),
                this=target,
                limit=limit,
                expressions=versions,
                as_of=self._parse_as_of(),
            )
        )

    def _parse_describe_statement(self) -> exp.Expr:
        self._match(TokenType.TABLE)
        if not self._curr:
            self.raise_error("Expecting a table name")
        table = self._parse_table_parts()
        return self.expression(
            ReadStatementTree(kind=exp.var("DESCRIBE"), this=table, as_of=self._parse_as_of())
        )

    def _parse_select_statement(self) -> exp.Expr:
        """``SELECT * FROM t [AS OF …]``: a whole table, the one query the
        catalog answers (of the system tables; any other table's rows live in
        the data plane). Any other query parses as sqlglot has it, and is then
        named as an unsupported statement (also after ``WITH``)."""
        start = self._index - 1
        whole = start == 0 and self._match(TokenType.STAR) and self._match(TokenType.FROM)
        if whole and self._curr and self._curr.token_type != TokenType.L_PAREN:
            table = self._parse_table_parts()
            if not self._curr or self._match_text_seq("AS", "OF", advance=False):
                as_of = self._parse_as_of()
                if self._curr:
                    self.raise_error(f"Unexpected {self._curr.text!r}: the read ends here")
                tree = ReadStatementTree(kind=exp.var("SELECT"), this=table, as_of=as_of)
                return self.expression(tree)
        self._retreat(start)
        query = self._parse_query_modifiers(self._parse_set_operations(self._parse_select()))
        if query is None:
            self.raise_error("Unsupported statement SELECT", self._tokens[start])
        return query

    def _parse_read_number(self, message: str) -> exp.Expr:
        if not self._curr or self._curr.token_type not in (TokenType.NUMBER, TokenType.DASH):
            self.raise_error(message)
        start = self._curr
        number = self._parse_unary()
        if number is None:
            self.raise_error(message, start)
        return number.update_positions(start)

    def _parse_as_of(self) -> exp.Expr | None:
        if not self._match_text_seq("AS", "OF"):
            return None
        if self._match_text_seq("VERSION"):
            value = self._parse_read_number("Expecting a version number after AS OF VERSION")
            return self.expression(AsOfClause(this=value, kind="VERSION"))
        if not self._match_text_seq("TIMESTAMP"):
            self.raise_error("Expecting VERSION or TIMESTAMP after AS OF")
        start = self._curr
        if not start or start.token_type != TokenType.STRING:
            self.raise_error("Expecting a quoted timestamp such as '2026-11-23T01:02:03Z'")
        self._advance()
        text = exp.Literal.string(start.text).update_positions(start)
        return self.expression(AsOfClause(this=text, kind="TIMESTAMP"))

    # -- statements -----------------------------------------------------------

    def _parse_create_statement(self) -> exp.Expr:
        if self._match_text_seq("ZONE"):
            exists = self._parse_exists(not_=True)
            name = self._parse_zone_name()
            options = self._parse_zone_options() if self._match(TokenType.WITH) else None
            return self.expression(
                CreateZoneStatement(this=name, exists=exists, expressions=options)
            )
        return self._parse_create()

    def _parse_alter_statement(self) -> exp.Expr:
        if self._match_text_seq("INDEX"):
            exists = self._parse_exists()
            index = self._parse_table_parts()
            if not self._match_text_seq("RENAME", "TO"):
                self.raise_error("Expecting RENAME TO")
            new_name = self._parse_id_var(any_token=False)
            if new_name is None:
                self.raise_error("Expecting an index name")
            return self.expression(
                AlterIndexStatement(this=index, exists=exists, rename_to=new_name)
            )
        if not self._match_text_seq("ZONE"):
            start = self._index
            if self._match(TokenType.TABLE):
                exists = self._parse_exists()
                table = self._parse_table_parts() if self._curr else None
                layout = self._parse_layout_action(table, exists)
                if layout is not None:
                    return layout
                self._retreat(start)
            return self._parse_alter()
        exists = self._parse_exists()
        name = self._parse_zone_name()
        if self._match_text_seq("RENAME", "TO"):
            new_name = self._parse_zone_name()
            return self.expression(AlterZoneStatement(this=name, exists=exists, rename_to=new_name))
        if not self._match(TokenType.SET):
            self.raise_error("Expecting SET or RENAME TO")
        if self._match(TokenType.DEFAULT):
            return self.expression(AlterZoneStatement(this=name, exists=exists, set_default=True))
        options = self._parse_zone_options()
        return self.expression(AlterZoneStatement(this=name, exists=exists, expressions=options))

    def _parse_layout_action(self, table: exp.Expr | None, exists: object) -> exp.Expr | None:
        """The partition-field and write-order actions of ALTER TABLE (Spark's
        Iceberg extensions); None when the action is another one."""
        if table is None:
            return None
        for action in ("ADD", "DROP", "REPLACE"):
            if self._match_text_seq(action, "PARTITION", "FIELD"):
                term = self._parse_layout_term("a partition field")
                replacement = None
                if action == "REPLACE":
                    if not self._match(TokenType.WITH):
                        self.raise_error("Expecting WITH after the partition field to replace")
                    replacement = self._parse_layout_term("a partition field")
                alias = None
                if action != "DROP" and self._match(TokenType.ALIAS):
                    alias = self._parse_id_var(any_token=False)
                    if alias is None:
                        self.raise_error("Expecting a partition field name after AS")
                return self.expression(
                    PartitionFieldStatement(
                        this=table,
                        exists=exists,
                        action=action,
                        expression=term,
                        replacement=replacement,
                        alias=alias,
                    )
                )
        if not self._match_text_seq("WRITE"):
            return None
        if self._match_text_seq("UNORDERED"):
            return self.expression(WriteOrderStatement(this=table, exists=exists, expressions=[]))
        self._match_text_seq("LOCALLY")
        if not self._match_text_seq("ORDERED", "BY"):
            self.raise_error("Expecting ORDERED BY or UNORDERED after WRITE")
        items = self._parse_csv(self._parse_write_order_item)
        return self.expression(WriteOrderStatement(this=table, exists=exists, expressions=items))

    def _parse_partitioned_by(self) -> exp.PartitionedByProperty:
        """``PARTITIONED BY (term, …)``, each term a column, a struct field
        (``s.f``) or a transform call (see ``almanac.sql.layout``)."""
        self._match(TokenType.EQ)
        terms = self._parse_wrapped_csv(lambda: self._parse_layout_term("a partition field"))
        return self.expression(exp.PartitionedByProperty(this=exp.Tuple(expressions=terms)))

    def _parse_layout_term(self, what: str) -> exp.Expr:
        term = self._parse_bitwise()
        if term is None:
            self.raise_error(f"Expecting {what}: a column or a transform such as bucket(16, c)")
        return term

    def _parse_write_order_item(self) -> exp.Expr:
        term = self._parse_layout_term("a sort column")
        desc = self._match(TokenType.DESC)
        if not desc:
            self._match(TokenType.ASC)
        nulls_first = None
        if self._match_text_seq("NULLS", "FIRST"):
            nulls_first = True
        elif self._match_text_seq("NULLS", "LAST"):
            nulls_first = False
        return self.expression(KeyColumn(this=term, desc=bool(desc), nulls_first=nulls_first))

    def _parse_drop_statement(self) -> exp.Expr:
        if not self._match_text_seq("ZONE"):
            drop = self._parse_drop()
            if self._match(TokenType.WITH):
                # DROP TABLE … WITH (RESERVE = '1h'): the translation checks the kind.
                drop.set("options", self._parse_zone_options("a DROP option name"))
            return drop
        exists = self._parse_exists()
        return self.expression(DropZoneStatement(this=self._parse_zone_name(), exists=exists))

    def _parse_zone_name(self) -> exp.Expr:
        name = self._parse_id_var(any_token=False)
        if name is None:
            self.raise_error("Expecting a zone name")
        return name

    def _parse_zone_options(self, what: str = "a zone option name") -> list[exp.Expr]:
        """``(k=v, …)`` or, without parentheses, ``k=v, …``."""
        wrapped = self._match(TokenType.L_PAREN)
        options = self._parse_csv(lambda: self._parse_zone_option(what))
        if wrapped:
            self._match_r_paren()
        return options

    def _parse_zone_option(self, what: str) -> exp.Expr:
        key = self._parse_id_var(any_token=False)
        if key is None:
            self.raise_error(f"Expecting {what}")
        if not self._match(TokenType.EQ):
            self.raise_error("Expecting =")
        value = self._parse_unary()
        if value is None:
            self.raise_error("Expecting a value")
        return self.expression(exp.Property(this=key, value=value))

    # -- CREATE TABLE clauses -------------------------------------------------

    def _parse_column_constraint(self) -> exp.Expr | None:
        return self._located(self._curr, super()._parse_column_constraint())

    def _parse_property(self) -> exp.Expr | list[exp.Expr] | None:
        """sqlglot parses ``DEFAULT <property>`` by passing ``default=True`` to
        the property's parser, which most of them (ours too) do not take; no
        property here has a DEFAULT form."""
        start = self._curr
        if (
            start
            and start.token_type == TokenType.DEFAULT
            and self._next
            and self._next.text.upper() in self.PROPERTY_PARSERS
        ):
            self.raise_error(f"Unexpected DEFAULT before {self._next.text.upper()}", self._next)
        prop = super()._parse_property()
        return self._located(start, prop) if isinstance(prop, exp.Expr) else prop

    @staticmethod
    def _located(start: Token, node: exp.Expr | None) -> exp.Expr | None:
        """Gives ``node`` the position of its first token if sqlglot gave it none,
        so that errors about it point at it."""
        if node is not None and start and "start" not in node.meta:
            node.update_positions(start)
        return node

    def _parse_colocate(self) -> exp.Expr:
        self._match_text_seq("BY")
        columns = self._parse_wrapped_id_vars()
        if not columns:
            self.raise_error("Expecting at least one colocation column", self._prev)
        return self.expression(ColocateProperty(expressions=columns))

    def _parse_zone_property(self) -> exp.Expr:
        return self.expression(ZoneProperty(this=self._parse_zone_name()))

    def _parse_storage_profile(self) -> exp.Expr:
        if not self._match_text_seq("PROFILE"):
            self.raise_error("Expecting PROFILE after STORAGE")
        if not self._match(TokenType.STRING):
            self.raise_error("Expecting a quoted storage profile name")
        profile = self.expression(exp.Literal.string(self._prev.text), token=self._prev)
        return self.expression(StorageProfileProperty(this=profile))

    def _parse_primary_key(
        self,
        wrapped_optional: bool = False,
        in_props: bool = False,
        named_primary_key: bool = False,
    ) -> exp.PrimaryKeyColumnConstraint | exp.PrimaryKey:
        """Adds ``USING HASH|SORTED`` and per-column order to the table-level key."""
        key_token = self._prev
        kind = None
        if self._match(TokenType.USING):
            kind = self._parse_index_kind()
            if not self._match(TokenType.L_PAREN, advance=False):
                self.raise_error("Expecting ( after the primary key kind")
        elif not self._match(TokenType.L_PAREN, advance=False):
            key = super()._parse_primary_key(wrapped_optional, in_props, named_primary_key)
            return key.update_positions(key_token)
        columns = self._parse_wrapped_csv(self._parse_indexed_column)
        return self.expression(TablePrimaryKey(expressions=columns, kind=kind), token=key_token)

    def _parse_index_kind(self) -> exp.Expr:
        if not self._match_texts(INDEX_KINDS):
            self.raise_error("Expecting HASH or SORTED")
        return self.expression(exp.var(self._prev.text.upper()), token=self._prev)

    def _parse_index_params(self) -> exp.IndexParameters:
        if self._curr.token_type == TokenType.USING and (
            not self._next or self._next.text.upper() not in INDEX_KINDS
        ):
            self._advance()
            self.raise_error("Expecting HASH or SORTED")
        return super()._parse_index_params()

    def _parse_indexed_column(self) -> exp.Expr | None:
        name = self._parse_id_var(any_token=False)
        if name is None:
            self.raise_error("Expecting a column name")
        desc = (
            True if self._match(TokenType.DESC) else (False if self._match(TokenType.ASC) else None)
        )
        nulls_first = None
        if self._match_text_seq("NULLS", "FIRST"):
            nulls_first = True
        elif self._match_text_seq("NULLS", "LAST"):
            nulls_first = False
        return self.expression(KeyColumn(this=name, desc=desc, nulls_first=nulls_first))

    # -- ALTER TABLE ----------------------------------------------------------

    def _parse_alter_table_add(self) -> list[exp.Expr]:
        """Adds ``ADD [COLUMN] [IF NOT EXISTS] (c TYPE …, …)``."""
        index = self._index
        self._match(TokenType.COLUMN)
        exists = self._parse_exists(not_=True)
        if not self._match(TokenType.L_PAREN, advance=False):
            self._retreat(index)
            return super()._parse_alter_table_add()
        columns = self._parse_wrapped_csv(self._parse_field_def)
        for column in columns:
            if isinstance(column, exp.ColumnDef):
                column.set("exists", exists)
        return columns

    def _parse_drop_column(self) -> exp.Drop | exp.Command | None:
        """Adds ``DROP [IF EXISTS] (c, …)`` without the COLUMN keyword, and
        ``DROP PRIMARY KEY``."""
        index = self._index
        if self._match(TokenType.DROP):
            if self._match(TokenType.PRIMARY_KEY):
                return self.expression(exp.Drop(kind="PRIMARY KEY"))
            self._parse_exists()
            if self._match(TokenType.L_PAREN, advance=False):
                self._retreat(index + 1)
                return self._parse_drop(kind="COLUMN")
        self._retreat(index)
        return super()._parse_drop_column()

    # -- types ----------------------------------------------------------------

    def _parse_types(
        self,
        check_func: bool = False,
        schema: bool = False,
        allow_identifiers: bool = True,
        with_collation: bool = False,
    ) -> exp.Expr | None:
        """Records where a type starts (for error messages) and accepts
        ``TIMESTAMP WITH LOCAL TIME ZONE(p)``, with the precision after the name,
        and Iceberg's ``TIMESTAMPTZ`` as its other spelling.

        A quoted name is a user-defined type, never a built-in one: sqlglot
        would tokenize its text again, which need not be valid SQL on its own
        (``"a""b"``, ``"a'b"``) and whose errors point into that text."""
        start = self._curr
        if allow_identifiers and start and start.token_type == TokenType.IDENTIFIER:
            self._advance()
            udt = self._parse_user_defined_type(exp.to_identifier(start.text, quoted=True))
            return udt.update_positions(start) if udt is not None else None
        inside = _NESTING.get(start.token_type) if start else None
        stack: list[str] = self.__dict__.setdefault("_nesting", [])
        if inside:
            stack.append(inside)
        try:
            dtype = super()._parse_types(check_func, schema, allow_identifiers, with_collation)
        finally:
            if inside:
                stack.pop()
        if not isinstance(dtype, exp.DataType):
            return dtype
        if stack and stack[-1] == "args" and self._match_text_seq("NOT", "NULL"):
            # ARRAY<INT NOT NULL>, MAP<STRING, INT NOT NULL>: a required element
            # or value. A struct field's NOT NULL stays its column constraint.
            dtype.set("nullable", False)
        if dtype.this == exp.DType.TIMESTAMPTZ and start and start.text.upper() == "TIMESTAMPTZ":
            # Iceberg's timestamptz is an instant shown in UTC: WITH LOCAL TIME
            # ZONE, unlike SQL's TIMESTAMP WITH TIME ZONE, which stays unknown.
            dtype.set("this", exp.DType.TIMESTAMPLTZ)
        if (
            dtype.this == exp.DType.TIMESTAMPLTZ
            and not dtype.expressions
            and self._match(TokenType.L_PAREN)
        ):
            dtype.set("expressions", [self._parse_type_size()])
            self._match_r_paren()
        if start:
            dtype.update_positions(start)
        return dtype

    def _parse_struct_types(self, type_required: bool = False) -> exp.Expr | None:
        """A STRUCT's field is always ``name[:] TYPE …``. sqlglot reads a
        field whose type is one of Iceberg's names it lacks (``a:
        TIMESTAMP_NS``, ``a: ICEBERG_UUID``) as a bare type named ``a``."""
        name = self._parse_id_var(any_token=True)
        if name is None:
            return super()._parse_struct_types(type_required)
        self._match(TokenType.COLON)
        return self._parse_column_def(name)

    def _parse_type_size(self) -> exp.DataTypeParam | None:
        """sqlglot turns a name parameter into a ``Var``, which an empty quoted
        name (``VARCHAR("")``) cannot be."""
        if self._curr and self._curr.token_type == TokenType.IDENTIFIER and not self._curr.text:
            self.raise_error("Expecting a type parameter")
        return super()._parse_type_size()

    def _parse_user_defined_type(self, identifier: exp.Identifier) -> exp.Expr | None:
        """``name[.name…]`` as an unknown type, built from the parts' text rather
        than by parsing their concatenation again."""
        parts = [identifier.name]
        while self._match(TokenType.DOT):
            if not self._curr:
                self.raise_error("Expecting a type name")
            self._advance()
            parts.append(self._prev.text)
        return exp.DataType(this=exp.DType.USERDEFINED, kind=".".join(parts))


class AlmanacDialect(Dialect):
    """The dialect ``parse_script`` reads; only parsing is customized."""

    Tokenizer = AlmanacTokenizer
    Parser = AlmanacParser


# -- what translating a parsed statement may refuse (shared by the translators) --


class Untranslatable(Exception):
    """A parsed statement says something no command can express; ``node`` is
    the part of the tree to blame (``None``: the whole statement)."""

    def __init__(self, message: str, node: object = None) -> None:
        super().__init__(message)
        self.message = message
        self.node = node if isinstance(node, exp.Expr) else None


_CLAUSES = {"expression": "AS", "replace": "OR REPLACE", "actions": "these actions"}


def check_clauses(node: exp.Expr, allowed: Iterable[str], what: str) -> None:
    """Refuses any clause sqlglot parsed into ``node`` beyond ``allowed``:
    sqlglot knows many dialects' clauses, and none may be silently dropped."""
    for key, value in node.args.items():
        if key in allowed or value is None or value is False or value == "" or value == []:
            continue
        clause = _CLAUSES.get(key, key.upper().replace("_", " "))
        raise Untranslatable(f"{what} does not support {clause}", value)
