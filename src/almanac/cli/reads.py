"""``almanac sql``, and the reads that are SQL underneath: ``show``,
``describe``, ``history``, ``diff``, ``servers`` and ``tablets`` each write
their statement and run it
through ``Catalog.sql`` like any other script, so the command line, the HTTP
API and the library answer a read the same way.

Names are SQL names, as in a script: ``orders`` is ``ORDERS``, and a name
with other cases or characters is double-quoted (``'"Mixed Case"'``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from almanac.cli.app import FullHelpGroup, int64_at_least, open_sql, store_option
from almanac.cli.output import Output

if TYPE_CHECKING:
    from almanac.sql.results import SqlResult

__all__ = [
    "MAX_SCRIPT_BYTES",
    "describe",
    "diff",
    "history",
    "read_script",
    "read_statement",
    "servers",
    "show",
    "show_result",
    "sql",
    "tablets",
]

F = TypeVar("F", bound=Callable[..., Any])

MAX_SCRIPT_BYTES = 8 * 2**20
"""The largest script ``sql`` reads from a file or stdin: what a catalog
server accepts as one request body (``almanac.server.app.MAX_BODY_BYTES``)."""


def read_statement(head: str, *, version: int | None = None, time: str | None = None) -> str:
    """The read statement a subcommand stands for: ``head``, then ``AS OF
    VERSION n`` or ``AS OF TIMESTAMP '…'`` (the instant as a SQL literal).
    Usage error for both: a statement reads one catalog version."""
    if version is not None and time is not None:
        raise click.UsageError("Give --as-of-version or --as-of-time, not both")
    if version is not None:
        return f"{head} AS OF VERSION {version}"
    if time is not None:
        return f"{head} AS OF TIMESTAMP '" + time.replace("'", "''") + "'"
    return head


def show_result(result: SqlResult, out: Output) -> None:
    """``version N`` for a change, the rows for a read; in JSON, the same
    document the HTTP API's ``POST /v1/sql`` answers."""
    if out.as_json:
        out.record(
            {
                "version": result.version,
                "columns": list(result.columns),
                "rows": [list(row) for row in result.rows],
            }
        )
    elif result.is_query:
        out.table(result.columns, result.rows)
    else:
        out.line(f"version {result.version}")


def _json_option(command: F) -> F:
    return click.option(
        "--json", "as_json", is_flag=True, help="Print one JSON document (for scripts)."
    )(command)


def _as_of_options(command: F) -> F:
    command = click.option(
        "--as-of-time",
        metavar="ISO-8601",
        help="Read the catalog active at this instant (e.g. 2026-11-23T01:02:03Z).",
    )(command)
    return click.option(
        "--as-of-version",
        type=int64_at_least(0),
        metavar="N",
        help="Read catalog version N.",
    )(command)


def _run_read(
    store: str | None,
    head: str,
    as_json: bool,
    version: int | None = None,
    time: str | None = None,
) -> int:
    statement = read_statement(head, version=version, time=time)
    with open_sql(store) as cat:
        result = cat.sql(statement)
    show_result(result, Output.for_stdout(as_json))
    return 0


@click.command()
@click.argument("text", required=False)
@click.option(
    "-f",
    "--file",
    "script",
    metavar="FILE",
    help="Read the script from FILE ('-' for stdin).",
)
@click.option(
    "--default-schema", default="PUBLIC", show_default=True, help="The schema of unqualified names."
)
@click.option(
    "--request-id",
    metavar="ID",
    help="Make the script idempotent: a retry with the same id applies nothing again.",
)
@_json_option
@store_option
def sql(
    text: str | None,
    script: str | None,
    default_schema: str,
    request_id: str | None,
    as_json: bool,
    store: str | None,
) -> int:
    """Run a SQL script as one catalog version, or one read statement.

    TEXT is the script; without it (or with '-') the script is read from
    stdin. Prints `version N` for DDL, the rows for a read.
    """
    if text is not None and script is not None:
        raise click.UsageError("Give the script as TEXT or with --file, not both")
    if script is not None and script != "-":
        text = read_script(script)
    elif script == "-" or text is None or text == "-":
        text = _read_stdin()
    if not _has_statements(text):
        from almanac.errors import ValidationError

        raise ValidationError(
            "The script holds no statement (only blanks, comments or ';'): nothing was run",
            rule="empty-script",
        )
    with open_sql(store, data=True) as cat:
        result = cat.sql(text, default_schema=default_schema, request_id=request_id)
    show_result(result, Output.for_stdout(as_json))
    return 0


def _has_statements(text: str) -> bool:
    """Text that does not even tokenize holds something: the catalog then
    reports what is wrong with it, as it does for any script."""
    from almanac.errors import SqlParseError
    from almanac.sql.parsing import has_statements

    try:
        return has_statements(text)
    except SqlParseError:
        return True


def read_script(path: str) -> str:
    """The script in the file ``path``, as ``sql -f`` reads it: a regular
    file of at most ``MAX_SCRIPT_BYTES`` (see ``almanac._files``). Bytes that
    are not UTF-8 are kept as surrogates, which ``Catalog.sql`` then refuses
    as text that is not valid Unicode, naming them."""
    from almanac._files import read_small_file

    data = read_small_file(path, limit=MAX_SCRIPT_BYTES, what="script file")
    return data.decode("utf-8", errors="surrogateescape")


def _read_stdin() -> str:
    from almanac.errors import ValidationError

    if sys.stdin.isatty():
        click.echo("Reading SQL from the terminal; end it with Ctrl-D.", err=True)
    data = sys.stdin.buffer.read(MAX_SCRIPT_BYTES + 1)
    if len(data) > MAX_SCRIPT_BYTES:
        raise ValidationError(
            f"The script on stdin is larger than {MAX_SCRIPT_BYTES} bytes, "
            "the most a script may have",
            rule="file-size",
        )
    return data.decode("utf-8", errors="surrogateescape")


@click.group(cls=FullHelpGroup)
def show() -> None:
    """List the schemas, tables, soft-deleted tables, indexes or zones of a catalog version."""


@show.command("schemas")
@_as_of_options
@_json_option
@store_option
def show_schemas(
    as_of_version: int | None, as_of_time: str | None, as_json: bool, store: str | None
) -> int:
    """The schemas."""
    return _run_read(store, "SHOW SCHEMAS", as_json, as_of_version, as_of_time)


@show.command("tables")
@click.argument("schema", required=False)
@_as_of_options
@_json_option
@store_option
def show_tables(
    schema: str | None,
    as_of_version: int | None,
    as_of_time: str | None,
    as_json: bool,
    store: str | None,
) -> int:
    """The tables, of every schema or of SCHEMA."""
    head = "SHOW TABLES" if schema is None else f"SHOW TABLES IN {schema}"
    return _run_read(store, head, as_json, as_of_version, as_of_time)


@show.command("dropped")
@click.argument("schema", required=False)
@_as_of_options
@_json_option
@store_option
def show_dropped(
    schema: str | None,
    as_of_version: int | None,
    as_of_time: str | None,
    as_json: bool,
    store: str | None,
) -> int:
    """The soft-deleted tables, of every schema or of SCHEMA, until when each can be recovered."""
    head = "SHOW DROPPED TABLES" if schema is None else f"SHOW DROPPED TABLES IN {schema}"
    return _run_read(store, head, as_json, as_of_version, as_of_time)


@show.command("indexes")
@click.argument("table", required=False)
@_as_of_options
@_json_option
@store_option
def show_indexes(
    table: str | None,
    as_of_version: int | None,
    as_of_time: str | None,
    as_json: bool,
    store: str | None,
) -> int:
    """The indexes, of every table or of TABLE."""
    head = "SHOW INDEXES" if table is None else f"SHOW INDEXES ON {table}"
    return _run_read(store, head, as_json, as_of_version, as_of_time)


@show.command("zones")
@_as_of_options
@_json_option
@store_option
def show_zones(
    as_of_version: int | None, as_of_time: str | None, as_json: bool, store: str | None
) -> int:
    """The zones."""
    return _run_read(store, "SHOW ZONES", as_json, as_of_version, as_of_time)


@click.command()
@click.argument("table")
@_as_of_options
@_json_option
@store_option
def describe(
    table: str, as_of_version: int | None, as_of_time: str | None, as_json: bool, store: str | None
) -> int:
    """The columns of TABLE (SCHEMA.TABLE, or a table of PUBLIC)."""
    return _run_read(store, f"DESCRIBE TABLE {table}", as_json, as_of_version, as_of_time)


@click.command()
@click.option("--limit", type=int64_at_least(1), metavar="N", help="Only the newest N.")
@click.option(
    "--table",
    metavar="TABLE",
    help="Only the versions that changed TABLE (SCHEMA.TABLE, or a table of PUBLIC).",
)
@_as_of_options
@_json_option
@store_option
def history(
    limit: int | None,
    table: str | None,
    as_of_version: int | None,
    as_of_time: str | None,
    as_json: bool,
    store: str | None,
) -> int:
    """The catalog's versions, newest first: when, on which node, what changed."""
    head = "SHOW HISTORY"
    if table is not None:
        head += f" ON {table}"
    if limit is not None:
        head += f" LIMIT {limit}"
    return _run_read(store, head, as_json, as_of_version, as_of_time)


@click.command()
@click.argument("v1", type=int64_at_least(0))
@click.argument("v2", type=int64_at_least(0))
@_json_option
@store_option
def diff(v1: int, v2: int, as_json: bool, store: str | None) -> int:
    """What was added, removed and changed from version V1 to V2: an added
    or removed object with its definition, a changed field from before to after."""
    with open_sql(store) as cat:
        result = cat.sql(f"SHOW DIFF {v1} {v2}")
    out = Output.for_stdout(as_json)
    if out.as_json:
        show_result(result, out)
    elif not result.rows:
        out.line(f"No differences between version {v1} and version {v2}.")
    else:
        rows = [(*row[:3], row[3] or "", _plain(row[4]), _plain(row[5])) for row in result.rows]
        out.table(result.columns, rows, [_DIFF_COLOURS.get(str(row[0])) for row in rows])
    return 0


_DIFF_COLOURS = {"added": "green", "removed": "red", "changed": "yellow"}


def _plain(cell: object) -> str:
    """A ``SHOW DIFF`` value (compact JSON text) as a person reads it; blank for none."""
    import json

    from almanac.model.diff import value_text

    if not isinstance(cell, str):
        return ""
    value = json.loads(cell)
    return value_text(tuple(value) if isinstance(value, list) else value)


@click.command()
@_json_option
@store_option
def servers(as_json: bool, store: str | None) -> int:
    """The tablet servers: address, attributes, whether live, how many
    tablets each hosts and leads (SYSTEM.SERVERS, as it is now)."""
    return _run_read(store, "SHOW SERVERS", as_json)


@click.command()
@click.argument("table")
@_json_option
@store_option
def tablets(table: str, as_json: bool, store: str | None) -> int:
    """The tablets of TABLE (SCHEMA.TABLE, or a table of PUBLIC): state,
    replicas, leader, reported table version, and why the placement leader
    cannot place one (SYSTEM.TABLETS, as it is now)."""
    return _run_read(store, f"SHOW TABLETS ON {table}", as_json)
