"""Data commits in the history and the diff: ``SHOW HISTORY`` (whole, and
``ON`` one table), ``almanac history --table`` and ``almanac diff``, and the
console's history of a table and its diff page, all in plain words."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pyarrow as pa
import pytest

import almanac
from almanac import Catalog, FieldChange, ObjectChange
from almanac.data import write_table
from almanac.model.entries import TableDataCommitted
from tests.cli.support import almanac as run
from tests.console.test_pages import parse
from tests.server.support import Server
from tests.waiting import PATIENCE


@dataclass(frozen=True)
class Shop:
    path: str
    cat: Catalog
    created: int
    appended: int
    other: int
    altered: int
    replaced: int
    dropped: int


def _ids(count: int) -> pa.Table:
    return pa.table({"ID": pa.array(range(count), pa.int64())})


def _files(cat: Catalog, version: int) -> int:
    (entry,) = cat.history(version)[0].update.entries
    assert isinstance(entry, TableDataCommitted)
    return entry.files_added


@pytest.fixture
def shop(tmp_path: Path) -> Iterator[Shop]:
    path = str(tmp_path / "shop")
    with almanac.connect(path, delay_ms=0) as cat:
        created = cat.sql(
            "CREATE SCHEMA SALES; CREATE TABLE SALES.ORDERS (ID INT64 PRIMARY KEY);"
            "CREATE TABLE SALES.OTHER (ID INT64 PRIMARY KEY)"
        ).version
        appended = write_table(cat, "ORDERS", _ids(1000), "SALES").catalog_version
        other = write_table(cat, "OTHER", _ids(5), "SALES").catalog_version
        altered = cat.sql("ALTER TABLE SALES.ORDERS ADD COLUMN NOTE VARCHAR(10)").version
        replaced = write_table(
            cat, "ORDERS", _ids(10), "SALES", operation="overwrite"
        ).catalog_version
        dropped = cat.sql("DROP TABLE SALES.OTHER").version
        assert [created, appended, other, altered, replaced, dropped] == list(
            range(created, created + 6)
        )
        yield Shop(path, cat, created, appended, other, altered, replaced, dropped)


def _files_text(count: int) -> str:
    return f"{count} file" if count == 1 else f"{count} files"


def _words(shop: Shop) -> dict[int, str]:
    """What the history should say of each version after the tables were made."""
    appended, other = _files(shop.cat, shop.appended), _files(shop.cat, shop.other)
    replaced = _files(shop.cat, shop.replaced)
    return {
        shop.appended: f"append 1,000 rows to SALES.ORDERS ({_files_text(appended)})",
        shop.other: f"append 5 rows to SALES.OTHER ({_files_text(other)})",
        shop.altered: "added column NOTE STRING(10) to SALES.ORDERS",
        shop.replaced: f"overwrite SALES.ORDERS: 10 rows ({_files_text(replaced)}) "
        f"replace 1,000 rows ({_files_text(appended)})",
        shop.dropped: "dropped table SALES.OTHER",
    }


def test_history_says_each_data_commit_in_words(shop: Shop) -> None:
    rows = shop.cat.sql("SHOW HISTORY").rows
    said = {row[0]: row[3] for row in rows}
    for version, words in _words(shop).items():
        assert said[version] == words
    assert shop.other < shop.dropped, "named although the table is gone now"


def test_history_of_one_table_holds_its_ddl_and_data_commits(shop: Shop, tmp_path: Path) -> None:
    rows = shop.cat.sql("SHOW HISTORY ON SALES.ORDERS").rows
    words = _words(shop)
    assert [row[0] for row in rows] == [shop.replaced, shop.altered, shop.appended, shop.created]
    assert [row[3] for row in rows[:3]] == [
        words[v] for v in (shop.replaced, shop.altered, shop.appended)
    ]
    limited = shop.cat.sql(f"SHOW HISTORY ON SALES.ORDERS LIMIT 2 AS OF VERSION {shop.other}")
    assert [row[0] for row in limited.rows] == [shop.appended, shop.created]

    done = run("--store", shop.path, "history", "--table", "sales.orders", "--json", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (0, "")
    assert [tuple(row) for row in json.loads(done.stdout)["rows"]] == list(rows)


def test_a_diff_shows_the_tables_whose_data_changed(shop: Shop, tmp_path: Path) -> None:
    cat = shop.cat
    orders, other = (
        cat.catalog().table("ORDERS", "SALES"),
        cat.catalog(shop.other).table("OTHER", "SALES"),
    )
    assert orders is not None and other is not None
    first = cat.catalog(shop.appended).data_snapshot(orders.id)
    last = cat.catalog(shop.replaced).data_snapshot(orders.id)
    assert first is not None and last is not None and first != last

    one = cat.diff(shop.altered, shop.replaced)
    assert one.changed == (
        ObjectChange(
            "table", orders.id, "SALES.ORDERS", (FieldChange("data_snapshot", first, last),)
        ),
    )
    assert (one.added, one.removed) == ((), ())
    back = cat.diff(shop.replaced, shop.altered)
    assert back.changed[0].fields == (FieldChange("data_snapshot", last, first),)
    span = cat.diff(shop.created, shop.other)
    assert [(c.name, c.fields) for c in span.changed] == [
        ("SALES.ORDERS", (FieldChange("data_snapshot", None, first),)),
        (
            "SALES.OTHER",
            (FieldChange("data_snapshot", None, cat.catalog(shop.other).data_snapshot(other.id)),),
        ),
    ]

    done = run("--store", shop.path, "diff", str(shop.altered), str(shop.replaced), cwd=tmp_path)
    assert (done.returncode, done.stderr) == (0, "")
    lines = [line.split() for line in done.stdout.splitlines()]
    assert lines[1:] == [
        ["changed", "table", "SALES.ORDERS", "data_snapshot", str(first), str(last)]
    ]
    gone = cat.diff(shop.other, shop.dropped).removed
    assert [(r.name, r.definition.rsplit(", ", 1)[-1]) for r in gone if r.kind == "table"] == [
        ("SALES.OTHER", f"data snapshot {cat.catalog(shop.other).data_snapshot(other.id)}")
    ]
    fresh = run("--store", shop.path, "diff", str(shop.created), str(shop.appended), cwd=tmp_path)
    assert ["changed", "table", "SALES.ORDERS", "data_snapshot", "none", str(first)] in [
        line.split() for line in fresh.stdout.splitlines()
    ]


def test_the_console_shows_a_tables_history_and_data_diff(shop: Shop, tmp_path: Path) -> None:
    server = Server(shop.path, log=tmp_path / "server.log")
    try:
        with httpx.Client(base_url=server.url, timeout=PATIENCE) as client:
            table = parse(client.get("/tables/SALES/ORDERS").text)
            [link] = table.find("a", id="table-history")
            history = parse(client.get(link.attrs["href"]).text)
            items = history.find("li", **{"data-version": str(shop.appended)})
            shown = [
                li.attrs["data-version"] for li in history.find("li") if "data-version" in li.attrs
            ]
            summaries = [n.all_text() for li in items for n in li.find("span", class_="summary")]
            diff = parse(
                client.get("/diff", params={"from": shop.altered, "to": shop.replaced}).text
            )
    finally:
        assert server.stop() == 0, server.log_text()
    assert link.attrs["href"] == "/history?schema=SALES&table=ORDERS"
    assert shown == [str(v) for v in (shop.replaced, shop.altered, shop.appended, shop.created)]
    assert summaries == [_words(shop)[shop.appended]]
    rows = [[td.all_text() for td in tr.children] for tr in diff.find("tr", class_="changed")]
    orders = shop.cat.catalog().table("ORDERS", "SALES")
    assert orders is not None
    first = shop.cat.catalog(shop.altered).data_snapshot(orders.id)
    last = shop.cat.catalog(shop.replaced).data_snapshot(orders.id)
    assert rows == [["changed", "table", "SALES.ORDERS", "data_snapshot", str(first), str(last)]]
