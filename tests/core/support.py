"""Helpers for the catalog core tests: command builders and outcome checks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import pytest

from almanac import (
    Catalog,
    CatalogError,
    ColumnDef,
    ColumnType,
    Command,
    CreateTable,
    ExecuteResult,
)
from almanac.model.descriptors import DefaultValue

E = TypeVar("E", bound=CatalogError)

ID = ColumnDef(name="ID", type=ColumnType.INT64, nullable=False)


def col(
    name: str,
    ctype: ColumnType = ColumnType.INT32,
    *,
    nullable: bool = True,
    precision: int | None = None,
    scale: int | None = None,
    length: int | None = None,
    default: DefaultValue | None = None,
) -> ColumnDef:
    """A column of ``ctype``; FIXED gets a length of 16 and ARRAY and MAP
    their INT32 element, key and value unless given."""
    fields: tuple[ColumnDef, ...] = ()
    if ctype is ColumnType.LIST:
        fields = (col("element"),)
    elif ctype is ColumnType.MAP:
        fields = (col("key", nullable=False), col("value"))
    elif ctype is ColumnType.FIXED and length is None:
        length = 16
    return ColumnDef(
        name=name,
        type=ctype,
        nullable=nullable,
        precision=precision,
        scale=scale,
        length=length,
        default=default,
        fields=fields,
    )


def table(
    name: str = "T",
    *extra: ColumnDef,
    schema: str = "PUBLIC",
    zone: str | None = None,
) -> CreateTable:
    """A table with an INT64 key ``ID`` and the given extra columns."""
    return CreateTable(
        name=name, schema=schema, columns=(ID, *extra), primary_key=("ID",), zone=zone
    )


def apply(cat: Catalog, *commands: Command) -> ExecuteResult:
    """Execute and check that exactly one new version was made."""
    before = cat.latest_version
    result = cat.execute(commands)
    assert result.created
    assert result.version == before + 1
    assert cat.latest_version == before + 1
    return result


def noop(cat: Catalog, *commands: Command) -> ExecuteResult:
    """Execute and check that nothing changed and the current version came back."""
    before = cat.catalog()
    result = cat.execute(commands)
    assert not result.created
    assert result.version == before.version
    assert cat.latest_version == before.version
    assert cat.catalog() == before
    return result


def rejected(
    cat: Catalog,
    commands: Command | Sequence[Command],
    error: type[E],
    *fragments: str,
) -> E:
    """Execute, expect exactly ``error`` whose message contains every fragment,
    and check that no version was made and the catalog is unchanged."""
    batch = [commands] if isinstance(commands, Command) else list(commands)
    before = cat.catalog()
    with pytest.raises(CatalogError) as info:
        cat.execute(batch)
    assert type(info.value) is error, f"expected {error.__name__}, got {info.value!r}"
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in {message!r}"
    assert cat.latest_version == before.version
    assert cat.catalog() == before
    caught = info.value
    assert isinstance(caught, error)
    return caught
