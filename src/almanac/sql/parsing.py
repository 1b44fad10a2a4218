"""Parsing SQL: a script of DDL statements → catalog commands, or one read statement.

Parsing is sqlglot's, extended by :mod:`almanac.sql.dialect` for Almanac's own
clauses; :mod:`almanac.sql.translate` turns the trees into commands. Every
failure, whatever the input, is a :class:`~almanac.errors.SqlParseError`
whose 1-based line and column point at the offending token.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sqlglot import exp
from sqlglot.errors import ParseError, SqlglotError, TokenError
from sqlglot.tokenizer_core import Token, TokenType

from almanac.commands import Command
from almanac.errors import SqlParseError
from almanac.model.catalog_version import DEFAULT_SCHEMA
from almanac.sql.dialect import AlmanacDialect, ReadStatementTree, Untranslatable
from almanac.sql.reads import ReadStatement
from almanac.sql.translate import translate
from almanac.sql.translate_reads import translate_read

__all__ = ["has_statements", "parse_script", "parse_sql"]

_DIALECT = AlmanacDialect()
_MAX_SHOWN = 60
"""Longest offending text an error quotes."""
_MAX_MESSAGE = 200
"""Longest message before the position (it may quote a whole token)."""


def parse_script(text: str, *, default_schema: str = DEFAULT_SCHEMA) -> list[Command]:
    """The commands of a ``;``-separated DDL script, in statement order.

    Unqualified names go to ``default_schema``. Nothing is executed: the caller
    runs the commands, atomically, as one catalog version. A read statement
    is refused here; ``parse_sql`` takes it.
    """
    parsed = parse_sql(text, default_schema=default_schema)
    if isinstance(parsed, ReadStatement):
        raise SqlParseError(
            f"{parsed.kind} reads the catalog: run it through Catalog.sql",
            line=1,
            column=1,
            text=text[:_MAX_SHOWN],
        )
    return parsed


def parse_sql(text: str, *, default_schema: str = DEFAULT_SCHEMA) -> list[Command] | ReadStatement:
    """A DDL script's commands (as ``parse_script``), or the one read statement
    (``SHOW …``, ``DESCRIBE …``) the script holds. A read must be alone in
    its script: it answers from one version, while DDL makes a new one."""
    if not isinstance(text, str):
        raise SqlParseError(
            f"SQL text must be a string, not {type(text).__name__}", line=1, column=1, text=""
        )
    statements = list(_statements(_tokenize(text)))
    commands: list[Command] = []
    for statement in statements:
        first = statement[0]
        try:
            tree = _parse(text, statement)
            if isinstance(tree, ReadStatementTree):
                read = translate_read(tree, default_schema=default_schema)
                if len(statements) > 1:
                    raise Untranslatable(
                        f"{read.kind} must be the only statement of its script: a read "
                        "answers from one version, and DDL makes a new one"
                    )
                return read
            commands.extend(translate(tree, default_schema=default_schema))
        except Untranslatable as exc:
            start, end = _node_span(exc.node) or (first.start, first.end)
            raise _error(exc.message, text, start, end) from None
        except RecursionError:
            raise _error("Statement is nested too deeply", text, first.start, first.end) from None
        except SqlglotError as exc:
            # Our parser reports its own errors as ParseErrors with offsets
            # (handled in _parse); anything else sqlglot raises has no usable
            # position in this text, so it points at the statement. The
            # fuzzer (tests/sql/sqlfuzz.py) reports every input that gets here.
            reason = str(exc).split("\n", 1)[0][:_MAX_SHOWN]
            raise _error(f"Invalid statement ({reason})", text, first.start, first.end) from None
    return commands


def has_statements(text: str) -> bool:
    """Whether ``text`` holds any statement, not only blanks, comments and
    ``;``: a front end refuses an empty script rather than answer with the
    current version, which reads as if it had made one. A script opening
    with a word holds one at once; any other is tokenized."""
    if text.lstrip(" \t\r\n;")[:1].isalnum():
        return True
    return any(token.token_type != TokenType.SEMICOLON for token in _tokenize(text))


def _tokenize(text: str) -> list[Token]:
    tokenizer = _DIALECT.tokenizer()
    try:
        return tokenizer.tokenize(text)
    except TokenError:
        # sqlglot's message quotes 100 characters around the failure; the bad
        # token starts at the first non-blank after the last token it read.
        done = tokenizer.tokens
        start = done[-1].end + 1 if done else 0
        while start < len(text) - 1 and text[start].isspace():
            start += 1
        line_end = text.find("\n", start)
        end = (len(text) if line_end < 0 else line_end) - 1
        raise _error(_token_failure(text[start:]), text, start, end) from None


def _token_failure(rest: str) -> str:
    if rest.startswith("/*"):
        return "Unterminated comment"
    if rest[:2].upper() == "X'":
        return "Invalid or unterminated byte literal"
    if rest[:1] in ("'", '"', "`"):
        return "Unterminated quoted text"
    return "Invalid token"


def _statements(tokens: list[Token]) -> Iterator[list[Token]]:
    """Token lists of the non-empty statements."""
    statement: list[Token] = []
    for token in tokens:
        if token.token_type == TokenType.SEMICOLON:
            if statement:
                yield statement
            statement = []
        else:
            statement.append(token)
    if statement:
        yield statement


def _parse(text: str, statement: list[Token]) -> exp.Expr:
    try:
        trees = _DIALECT.parser().parse(statement, text)
    except ParseError as exc:
        info: dict[str, Any] = exc.errors[0] if exc.errors else {}
        start, end = info.get("start"), info.get("end", info.get("start"))
        if not (
            isinstance(start, int)
            and isinstance(end, int)
            and statement[0].start <= start <= end <= statement[-1].end
        ):
            # Not one of our parser's errors (or one from parsing other text):
            # no position in this statement.
            start, end = statement[0].start, statement[0].end
        message = str(info.get("description") or exc)
        if info.get("at_end") and "end of statement" not in message:
            message += " (at the end of the statement)"
        raise _error(message, text, start, end) from None
    except ValueError as exc:
        # sqlglot's node builders refuse malformed parts with ValueError
        # (``exp.var("")``); the parser lets those through.
        raise SqlglotError(str(exc)) from exc
    tree = trees[0] if trees else None
    if tree is None:
        raise _error("Expecting a statement", text, statement[0].start, statement[0].end)
    return tree


def _node_span(node: exp.Expr | None) -> tuple[int, int] | None:
    """Source offsets of the node's leftmost located part, else of its nearest
    located ancestor."""
    if node is None:
        return None
    spans = [_span(part) for part in node.walk()]
    located = [span for span in spans if span is not None]
    if located:
        return min(located)
    return next((span for a in _ancestors(node) if (span := _span(a)) is not None), None)


def _span(node: exp.Expr) -> tuple[int, int] | None:
    start, end = node.meta.get("start"), node.meta.get("end")
    return (start, end) if isinstance(start, int) and isinstance(end, int) else None


def _ancestors(node: exp.Expr) -> Iterator[exp.Expr]:
    parent = node.parent
    while parent is not None:
        yield parent
        parent = parent.parent


def _error(message: str, text: str, start: int, end: int) -> SqlParseError:
    if len(message) > _MAX_MESSAGE:  # it may quote a token of any length
        message = message[: _MAX_MESSAGE - 1] + "…"
    line = text.count("\n", 0, start) + 1
    column = start - (text.rfind("\n", 0, start) + 1) + 1
    shown = text[start : end + 1]
    if len(shown) > _MAX_SHOWN:
        shown = shown[: _MAX_SHOWN - 1] + "…"
    return SqlParseError(message, line=line, column=column, text=shown)
