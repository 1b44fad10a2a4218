"""The DDL the catalog benchmarks commit, so that their figures compare."""

from __future__ import annotations

import almanac
from almanac import ColumnDef, ColumnType

__all__ = ["create_table"]


def create_table(name: str) -> almanac.CreateTable:
    """A two-column table with a primary key."""
    return almanac.CreateTable(
        name=name,
        columns=(
            ColumnDef(name="ID", type=ColumnType.INT64, nullable=False),
            ColumnDef(name="V", type=ColumnType.STRING, length=32),
        ),
        primary_key=("ID",),
    )
