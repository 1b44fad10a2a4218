"""An Iceberg client writes its snapshot's summary itself, as free text: a
count there that is no plain decimal, or one past 64 bits, is the client's
bookkeeping, not the catalog's. The commit still lands as one catalog
version, whose entry counts what it can read (and 0 for the rest)."""

from __future__ import annotations

import pytest
from pyiceberg.catalog.rest import RestCatalog

from almanac.model.entries import TableDataCommitted
from almanac.node.catalog import Catalog

from .tables import SCHEMA, batch, scanned

NAMESPACE = "COUNTS"


@pytest.mark.parametrize(
    "count",
    ["9223372036854775808", "99999999999999999999999", "-1", " 7", ""],
    ids=["just-past-64-bits", "far-past-64-bits", "negative", "spaced", "empty"],
)
def test_a_summary_count_the_catalog_cannot_read_is_no_count(
    admin: RestCatalog, cat: Catalog, count: str
) -> None:
    if NAMESPACE not in {n[0] for n in admin.list_namespaces()}:
        admin.create_namespace(NAMESPACE)
    name = f"T{abs(hash(count)) % 10**8}"
    table = admin.create_table((NAMESPACE, name), SCHEMA)
    table.append(batch([(1, "a", 1)]))
    cat.catch_up()
    before = cat.latest_version
    # ``deleted-records`` is not among the keys an append's summary computes,
    # so the client's own property goes through as it is.
    table.append(batch([(2, "b", 2)]), snapshot_properties={"deleted-records": count})
    cat.catch_up()
    assert cat.latest_version == before + 1
    entries = cat.history(before + 1)[0].update.entries
    assert len(entries) == 1 and isinstance(entries[0], TableDataCommitted)
    assert entries[0].rows_added == 1
    assert entries[0].rows_removed == 0
    assert scanned(admin.load_table((NAMESPACE, name))) == [(1, "a", 1), (2, "b", 2)]
