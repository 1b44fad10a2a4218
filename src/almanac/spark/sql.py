"""SQL through Spark with atomic CREATE/REPLACE TABLE ... AS SELECT and
INSERT on Spark's native Parquet writer.

``sql(spark, target, text)`` recognises::

    CREATE [OR REPLACE] TABLE [IF NOT EXISTS] name [(PRIMARY KEY (c, ...))]
        [ZONE zone] AS <query>
    REPLACE TABLE name [(PRIMARY KEY (c, ...))] [ZONE zone] AS <query>
    INSERT { INTO | OVERWRITE } [TABLE] name [(c, ...) | BY NAME] <query>

runs ``<query>`` with ``spark.sql`` and hands the DataFrame to the matching
``almanac.spark.ctas`` function (then attaches the new table so the session
can query it at once), or to ``almanac.spark.write`` for an INSERT into a
catalog table: columns by position as in Spark, by the listed names, or
``BY NAME``. Any other text, and an INSERT into a table the catalog does
not have, goes to ``spark.sql`` unchanged. The
header is read from sqlglot's Spark tokens, so quoting and comments behave
as Spark's own parser has them; the query is passed on as written.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot.tokenizer_core import Token, TokenType

from almanac import _check as check
from almanac.errors import NotFoundError, SqlParseError
from almanac.read_point import ReadPoint
from almanac.spark.ctas import (
    CtasResult,
    create_or_replace_table_as_select,
    create_table_as_select,
    replace_table_as_select,
)
from almanac.spark.names import catalog_session
from almanac.spark.native_write import write
from almanac.spark.session import activate, attach_tables, check_session
from almanac.table_names import parse_name, resolve_table

__all__ = ["CtasStatement", "InsertStatement", "parse_ctas", "parse_insert", "sql"]

_DIALECT = sqlglot.Dialect.get_or_raise("spark")
_PUNCTUATION = {
    TokenType.DOT,
    TokenType.COMMA,
    TokenType.L_PAREN,
    TokenType.R_PAREN,
    TokenType.SEMICOLON,
    TokenType.ALIAS,
}


@dataclass(frozen=True, slots=True)
class CtasStatement:
    """``mode`` is ``create``, ``replace`` or ``create_or_replace``; ``name``
    is in ``parse_name`` form (quoted parts in double quotes)."""

    mode: str
    name: str
    primary_key: tuple[str, ...]
    zone: str | None
    if_not_exists: bool
    query: str
    colocation: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class InsertStatement:
    """``columns`` empty means by position unless ``by_name``; ``name`` is in
    ``parse_name`` form."""

    overwrite: bool
    name: str
    columns: tuple[str, ...]
    by_name: bool
    query: str


class _Tokens:
    def __init__(self, text: str, tokens: list[Token]) -> None:
        self.text = text
        self.tokens = tokens
        self.i = 0

    def peek(self) -> Token | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def accept(self, kind: TokenType, word: str | None = None) -> bool:
        token = self.peek()
        if token is None or token.token_type != kind:
            return False
        if word is not None and token.text.upper() != word:
            return False
        self.i += 1
        return True

    def expect(self, kind: TokenType, what: str) -> Token:
        token = self.peek()
        if token is None or token.token_type != kind:
            raise self.error(f"Expected {what}")
        self.i += 1
        return token

    def identifier(self, what: str) -> str:
        """An identifier, upper-cased unless quoted (double quotes mark quoted)."""
        token = self.peek()
        if token is None or token.token_type in _PUNCTUATION:
            raise self.error(f"Expected {what}")
        self.i += 1
        if token.token_type == TokenType.IDENTIFIER:
            return '"' + token.text + '"'
        return token.text

    def error(self, message: str) -> SqlParseError:
        token = self.peek()
        start = token.start if token is not None else len(self.text)
        line = self.text.count("\n", 0, start) + 1
        column = start - (self.text.rfind("\n", 0, start) + 1) + 1
        shown = token.text if token is not None else ""
        return SqlParseError(message, line=line, column=column, text=shown)


def parse_ctas(text: str) -> CtasStatement | None:
    """The CREATE/REPLACE ... AS SELECT in ``text``, or None for other SQL."""
    tokens = _Tokens(text, _DIALECT.tokenize(text))
    if tokens.accept(TokenType.CREATE):
        mode = "create_or_replace" if tokens.accept(TokenType.OR) else "create"
        if mode == "create_or_replace" and not tokens.accept(TokenType.REPLACE):
            return None
    elif tokens.accept(TokenType.REPLACE):
        mode = "replace"
    else:
        return None
    if not tokens.accept(TokenType.TABLE):
        return None
    start = tokens.i
    if_not_exists = False
    if tokens.accept(TokenType.VAR, "IF"):
        if not (tokens.accept(TokenType.NOT) and tokens.accept(TokenType.EXISTS)):
            tokens.i = start
        elif mode != "create":
            raise tokens.error("IF NOT EXISTS applies to CREATE TABLE only")
        else:
            if_not_exists = True
    parts = [tokens.identifier("a table name")]
    if tokens.accept(TokenType.DOT):
        parts.append(tokens.identifier("a table name"))
    primary_key: list[str] = []
    if tokens.accept(TokenType.L_PAREN):
        if not tokens.accept(TokenType.PRIMARY_KEY):
            return None  # a column list: Spark's own CREATE TABLE, not ours
        tokens.expect(TokenType.L_PAREN, "'(' after PRIMARY KEY")
        primary_key.append(tokens.identifier("a primary key column"))
        while tokens.accept(TokenType.COMMA):
            primary_key.append(tokens.identifier("a primary key column"))
        tokens.expect(TokenType.R_PAREN, "')' after the primary key columns")
        tokens.expect(TokenType.R_PAREN, "')' closing the table definition")
    colocation: list[str] | None = None
    if tokens.accept(TokenType.VAR, "COLOCATE"):
        if not tokens.accept(TokenType.VAR, "BY"):
            raise tokens.error("Expected BY after COLOCATE")
        tokens.expect(TokenType.L_PAREN, "'(' after COLOCATE BY")
        colocation = [tokens.identifier("a colocation column")]
        while tokens.accept(TokenType.COMMA):
            colocation.append(tokens.identifier("a colocation column"))
        tokens.expect(TokenType.R_PAREN, "')' after the colocation columns")
    zone = None
    if tokens.accept(TokenType.VAR, "ZONE"):
        zone = tokens.identifier("a zone name").strip('"')
    if not tokens.accept(TokenType.ALIAS):
        return None
    rest = tokens.peek()
    if rest is None:
        raise tokens.error("Expected a query after AS")
    query = text[rest.start :].strip().rstrip(";").strip()
    return CtasStatement(
        mode,
        ".".join(parts),
        tuple(c.strip('"') for c in primary_key),
        zone,
        if_not_exists,
        query,
        None if colocation is None else tuple(c.strip('"') for c in colocation),
    )


def _insert_part(token: Token) -> str:
    """A name part; Spark ignores case even in backticks, so only a part that
    needs quoting to parse (a dot, a double quote) keeps its quotes."""
    text = token.text
    if token.token_type == TokenType.IDENTIFIER and ("." in text or '"' in text):
        return '"' + text + '"'
    return text


def parse_insert(text: str) -> InsertStatement | None:
    """The INSERT INTO/OVERWRITE in ``text``, or None for other SQL (and for
    INSERT forms left to Spark: PARTITION clauses, INSERT ... DIRECTORY)."""
    tokens = _Tokens(text, _DIALECT.tokenize(text))
    if not tokens.accept(TokenType.INSERT):
        return None
    if tokens.accept(TokenType.OVERWRITE):
        overwrite = True
    elif tokens.accept(TokenType.INTO):
        overwrite = False
    else:
        return None
    tokens.accept(TokenType.TABLE)
    parts = []
    for _ in range(2):
        token = tokens.peek()
        if token is None or token.token_type not in (TokenType.VAR, TokenType.IDENTIFIER):
            return None
        tokens.i += 1
        parts.append(_insert_part(token))
        if not tokens.accept(TokenType.DOT):
            break
    columns: list[str] = []
    by_name = False
    if tokens.accept(TokenType.L_PAREN):
        columns.append(tokens.identifier("a column name").strip('"'))
        while tokens.accept(TokenType.COMMA):
            columns.append(tokens.identifier("a column name").strip('"'))
        tokens.expect(TokenType.R_PAREN, "')' after the column list")
    elif tokens.accept(TokenType.VAR, "BY"):
        if not tokens.accept(TokenType.VAR, "NAME"):
            raise tokens.error("Expected NAME after BY")
        by_name = True
    rest = tokens.peek()
    if rest is None:
        raise tokens.error("Expected a query after the table name")
    if rest.token_type not in (
        TokenType.SELECT,
        TokenType.VALUES,
        TokenType.WITH,
        TokenType.FROM,
        TokenType.L_PAREN,
        TokenType.TABLE,
    ):
        return None
    query = text[rest.start :].strip().rstrip(";").strip()
    return InsertStatement(overwrite, ".".join(parts), tuple(columns), by_name, query)


def _insert(spark: Any, target: str, statement: InsertStatement, warehouse: str | None) -> Any:
    with catalog_session(target, warehouse) as cat:
        try:
            schema, table = resolve_table(cat.catalog(), parse_name(statement.name))
        except NotFoundError:
            return None
    df = spark.sql(statement.query)
    if statement.columns:
        if len(statement.columns) != len(df.columns):
            raise SqlParseError(
                f"INSERT into '{schema.name}.{table.name}' lists {len(statement.columns)} "
                f"column(s) but the query yields {len(df.columns)}",
                line=1,
                column=1,
                text=statement.name,
            )
        df = df.toDF(*statement.columns)
    elif not statement.by_name:
        if len(df.columns) > len(table.columns):
            raise SqlParseError(
                f"INSERT into '{schema.name}.{table.name}' gives {len(df.columns)} values per "
                f"row; the table has {len(table.columns)} columns",
                line=1,
                column=1,
                text=statement.name,
            )
        df = df.toDF(*[c.name for c in table.columns[: len(df.columns)]])
    full = '"' + schema.name + '"."' + table.name + '"'
    return write(
        df,
        target,
        full,
        "overwrite" if statement.overwrite else "append",
        warehouse=warehouse,
    )


def sql(spark: Any, target: str, text: str, *, warehouse: str | None = None) -> Any:
    """Run ``text``: a CREATE/REPLACE ... AS SELECT atomically against the
    catalog (returns a ``CtasResult``), an INSERT into a catalog table with
    the native writer (returns a ``WriteResult``), anything else with
    ``spark.sql`` (returns its DataFrame)."""
    check_session(spark, "Parameter 'spark' of sql")
    check.string(text, "Parameter 'text' of sql", nul_ok=True)
    check.optional_str(warehouse, "Parameter 'warehouse' of sql")
    activate(spark)
    insert = parse_insert(text)
    if insert is not None:
        done = _insert(spark, target, insert, warehouse)
        return spark.sql(text) if done is None else done
    statement = parse_ctas(text)
    if statement is None:
        return spark.sql(text)
    df = spark.sql(statement.query)
    result: CtasResult
    if statement.mode == "create":
        result = create_table_as_select(
            target,
            statement.name,
            df,
            statement.primary_key,
            statement.zone,
            statement.if_not_exists,
            warehouse=warehouse,
            colocation=statement.colocation,
        )
    elif statement.mode == "replace":
        result = replace_table_as_select(
            target,
            statement.name,
            df,
            statement.primary_key,
            statement.zone,
            warehouse=warehouse,
            colocation=statement.colocation,
        )
    else:
        result = create_or_replace_table_as_select(
            target,
            statement.name,
            df,
            statement.primary_key,
            statement.zone,
            warehouse=warehouse,
            colocation=statement.colocation,
        )
    with catalog_session(target, warehouse) as cat:
        snap = cat.catalog()
        _, table = resolve_table(snap, parse_name(f'"{result.schema}"."{result.name}"'))
    attach_tables(spark, target, warehouse, snap, ReadPoint(), [table], prune=False)
    return result
