"""A data file an Iceberg client commits through REST carries no checksum
Almanac can check, but its manifest entry records its size: a read of a
file that grew or shrank since is a ``CorruptDataError`` naming it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pyiceberg.catalog.rest import RestCatalog

from almanac import CorruptDataError
from almanac.data import TableData, read_table
from almanac.node.catalog import Catalog

from .tables import SCHEMA, arrow_rows, batch


def test_a_client_file_is_checked_against_its_recorded_size(
    admin: RestCatalog, cat: Catalog
) -> None:
    admin.create_namespace("SIZED")
    admin.create_table(("SIZED", "T"), SCHEMA).append(batch([(1, "a", 1), (2, "b", 2)]))
    cat.catch_up()
    table = cat.catalog().table("T", "SIZED")
    assert table is not None
    current = TableData.for_catalog(cat).current(table.id)
    assert current is not None
    file = current.files[0]
    path = Path(re.sub(r"^file:(//)?", "", file.path))
    good = path.read_bytes()
    assert file.checksum is None and file.size == len(good)
    try:
        for damaged in (good + b"\0", good[:-1]):
            path.write_bytes(damaged)
            with pytest.raises(CorruptDataError, match=re.escape(path.name)):
                read_table(cat, "T", "SIZED")
    finally:
        path.write_bytes(good)
    assert arrow_rows(read_table(cat, "T", "SIZED")) == [(1, "a", 1), (2, "b", 2)]
