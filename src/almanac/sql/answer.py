"""Answering a read statement: the version it reads, then the answer,
from ``almanac.sql.reads`` for the catalog's objects, its history and
diffs, and from ``almanac.sql.system_rows`` for ``SELECT`` of a system table
and ``SHOW TABLETS``/``SHOW SERVERS``. Above both, so neither imports the
other's caller."""

from __future__ import annotations

from almanac.commands.base import require_table
from almanac.errors import ValidationError
from almanac.model.read_point import existing_version
from almanac.sql.reads import (
    DIFF_COLUMNS,
    HISTORY_COLUMNS,
    ReadSource,
    ReadStatement,
    answer,
    diff_rows,
    history_rows,
)
from almanac.sql.results import SqlResult
from almanac.sql.system_rows import SYSTEM_SCHEMA, SYSTEM_TABLES, sql_cells, system_rows

__all__ = ["run_read"]


def run_read(statement: ReadStatement, source: ReadSource) -> SqlResult:
    """The answer to ``statement``; its ``version`` is the version read (for
    ``SHOW DIFF``, the second version named)."""
    if statement.versions is not None:  # SHOW DIFF
        first, second = (existing_version(v) for v in statement.versions)
        return SqlResult(second, DIFF_COLUMNS, diff_rows(source.diff(first, second)))
    if statement.kind in _SYSTEM_READS:
        return _system_read(statement, source)
    version = statement.as_of.resolve(source)
    if statement.kind == "SHOW HISTORY":
        table_id = None
        if statement.table is not None:
            table_id = require_table(version, statement.schema or "", statement.table).id
        rows = history_rows(source, version.version, statement.limit, table_id)
        return SqlResult(version.version, HISTORY_COLUMNS, rows)
    return answer(statement, version)


_SYSTEM_READS = ("SHOW TABLETS", "SHOW SERVERS", "SELECT")


def _system_read(statement: ReadStatement, source: ReadSource) -> SqlResult:
    """A system table (``SELECT``), or the tablets (of one table) or servers:
    the rows of ``almanac.sql.system_rows``, as JSON scalars."""
    table_id = None
    if statement.kind == "SELECT":
        name = f"{statement.schema}.{statement.table}"
        if (statement.schema or "").upper() != SYSTEM_SCHEMA:
            raise ValidationError(
                f"SELECT reads the system tables only ({', '.join(SYSTEM_TABLES)}), not "
                f"'{name}': a table's rows live in the data plane (read them with Spark or "
                "almanac.tserver.client)",
                name=name,
                rule="system-select",
            )
    else:
        name = statement.kind.removeprefix("SHOW ")
        if statement.table is not None:
            table_id = require_table(source.catalog(), statement.schema or "", statement.table).id
    answer = system_rows(source, name, as_of=statement.as_of, table_id=table_id)
    return SqlResult(answer.version, tuple(n for n, _ in answer.columns), sql_cells(answer))
