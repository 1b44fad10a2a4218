"""What ``Catalog.sql`` returns: a version, and for a read statement its rows.

One value for both kinds of statement, so that every front end (the Python
API, the HTTP API, the CLI) answers a script the same way. Cells are JSON
scalars as they are: a row can cross any wire without a codec.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Cell", "SqlResult"]

Cell = str | int | float | bool | None
"""One value of a result row."""


@dataclass(frozen=True, slots=True)
class SqlResult:
    """``version``: the version a DDL script made (or the current one when it
    changed nothing), or the catalog version a read statement read.
    ``columns`` and ``rows`` hold a read statement's answer; both are empty
    for DDL."""

    version: int
    columns: tuple[str, ...] = ()
    rows: tuple[tuple[Cell, ...], ...] = ()

    @property
    def is_query(self) -> bool:
        return bool(self.columns)
