"""pyiceberg's ``RestCatalog`` against a real ``almanac serve``: rows an
Iceberg client writes read the same through pyiceberg and through
Almanac's Spark path; an Iceberg schema change is the catalog version the
equivalent ALTER TABLE makes, and time travel reaches the version before
it; two clients racing on one table lose no snapshot."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import BadRequestError, CommitFailedException
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.types import LongType, StringType

import almanac
import almanac.spark
from almanac.data import read_table
from almanac.iceberg import metadata_location
from almanac.model.datatypes import ColumnType
from almanac.node.catalog import Catalog
from almanac.sql.parsing import parse_script
from tests.server.support import Server
from tests.waiting import PATIENCE

from .conftest import ADMIN_TOKEN, rest_catalog
from .tables import ARROW, SCHEMA, Row, arrow_rows, batch, ordered, scanned


def _spark_rows(spark: Any, server: Server, name: str) -> list[Row]:
    """The rows Apache Iceberg's Spark runtime reads through the server."""
    if spark.conf.get("spark.sql.catalog.rest_rows", None) is None:
        almanac.spark.add_catalog(spark, "rest_rows", server.url, token=ADMIN_TOKEN)
    return ordered([tuple(r) for r in spark.sql(f"SELECT * FROM rest_rows.{name}").collect()])


def test_rows_written_through_rest_read_the_same_in_pyiceberg_almanac_and_spark(
    admin: RestCatalog,
    reader: RestCatalog,
    cat: Catalog,
    spark: Any,
    server: Server,
    target: str,
) -> None:
    admin.create_namespace("RT", {"owner": "sales"})
    table = admin.create_table(("RT", "ORDERS"), SCHEMA)
    table.append(batch([(1, "a", 1), (2, "b", 2), (3, "c", 3), (4, "d", 4), (5, None, None)]))
    table.overwrite(batch([(2, "b2", 20)]), overwrite_filter="ID = 2")
    table.delete("ID = 4")
    expected = [(1, "a", 1), (2, "b2", 20), (3, "c", 3), (5, None, None)]

    assert scanned(table) == expected
    assert scanned(admin.load_table(("RT", "ORDERS"))) == expected
    assert scanned(reader.load_table(("RT", "ORDERS"))) == expected

    cat.catch_up()
    described = cat.catalog().table("ORDERS", "RT")
    assert described is not None
    assert [(c.name, c.type, c.nullable) for c in described.columns] == [
        ("ID", ColumnType.INT64, False),
        ("NAME", ColumnType.STRING, True),
        ("QTY", ColumnType.INT32, True),
    ]
    assert described.primary_key == ("ID",)
    # Iceberg field ids are the catalog's column ids.
    fields = admin.load_table(("RT", "ORDERS")).schema()
    assert [(f.field_id, f.name) for f in fields.fields] == [
        (c.id, c.name) for c in described.columns
    ]
    assert fields.identifier_field_ids == [described.columns[0].id]
    assert arrow_rows(read_table(cat, "ORDERS", "RT")) == expected
    assert _spark_rows(spark, server, "RT.ORDERS") == expected
    # Almanac's Iceberg pointer is the one the REST catalog hands out.
    loaded = admin.load_table(("RT", "ORDERS"))
    assert metadata_location(target, "RT.ORDERS") == loaded.metadata_location
    assert len(loaded.snapshots()) >= 3  # append, overwrite, delete


_EVOLUTION: list[tuple[str, Callable[[Any], None], str]] = [
    ("add", lambda u: u.add_column("EMAIL", StringType()), "ADD COLUMN EMAIL STRING"),
    ("rename", lambda u: u.rename_column("NAME", "LABEL"), "RENAME COLUMN NAME TO LABEL"),
    ("widen", lambda u: u.update_column("QTY", LongType()), "ALTER COLUMN QTY SET DATA TYPE INT64"),
    ("drop", lambda u: u.delete_column("EMAIL"), "DROP COLUMN EMAIL"),
]


def test_a_schema_change_through_rest_is_the_version_alter_table_makes(
    admin: RestCatalog, cat: Catalog
) -> None:
    admin.create_namespace("EVO")
    table = admin.create_table(("EVO", "T"), SCHEMA)
    table.append(batch([(1, "a", 1), (2, "b", 2)]))
    cat.catch_up()
    versions = {"created": cat.latest_version}
    for step, change, alter in _EVOLUTION:
        cat.catch_up()
        before = cat.latest_version
        with table.update_schema() as update:
            change(update)
        cat.catch_up()
        assert cat.latest_version == before + 1, f"{step}: one catalog version per commit"
        (made,) = cat.history(before + 1)
        equivalent = almanac.preview(
            cat.catalog(before), parse_script(f"ALTER TABLE EVO.T {alter}")
        ).entries
        assert made.update.entries == equivalent, step
        versions[step] = before + 1
        if step == "add":
            table.append(batch([(3, "c", 3, "c@x")], ARROW.append(pa.field("EMAIL", pa.string()))))

    final = cat.catalog().table("T", "EVO")
    assert final is not None
    assert [(c.name, c.type) for c in final.columns] == [
        ("ID", ColumnType.INT64),
        ("LABEL", ColumnType.STRING),
        ("QTY", ColumnType.INT64),
    ]
    now = [(1, "a", 1), (2, "b", 2), (3, "c", 3)]
    assert scanned(admin.load_table(("EVO", "T"))) == now
    assert arrow_rows(read_table(cat, "T", "EVO")) == now
    # Time travel through Almanac to the version before each change.
    # (Python reads here: Spark reads the same plan, see the test above.)
    old = read_table(cat, "T", "EVO", version=versions["created"])
    assert old.column_names == ["ID", "NAME", "QTY"]
    assert arrow_rows(old) == [(1, "a", 1), (2, "b", 2)]
    # A data commit is a catalog version of its own: the ADD COLUMN's version
    # reads the rows before the append that followed it.
    at_add = arrow_rows(read_table(cat, "T", "EVO", version=versions["add"]))
    assert at_add == [(1, "a", 1, None), (2, "b", 2, None)]
    before_drop = read_table(cat, "T", "EVO", version=versions["widen"])
    assert before_drop.column_names == ["ID", "LABEL", "QTY", "EMAIL"]
    assert arrow_rows(before_drop) == [(1, "a", 1, None), (2, "b", 2, None), (3, "c", 3, "c@x")]

    # The primary key keeps its name: renaming it is refused, not dropped.
    latest = cat.latest_version
    with pytest.raises(BadRequestError, match="ID"), table.update_schema() as update:
        update.rename_column("ID", "KEY")
    cat.catch_up()
    assert cat.latest_version == latest
    assert admin.load_table(("EVO", "T")).schema().find_field("ID").name == "ID"

    # An ALTER made through Almanac shows in the next load, field id = column id.
    cat.sql("ALTER TABLE EVO.T ADD COLUMN NOTE INT32")
    altered = cat.catalog().table("T", "EVO")
    assert altered is not None
    note = altered.column("NOTE")
    assert note is not None
    field = admin.load_table(("EVO", "T")).schema().find_field("NOTE")
    assert field.field_id == note.id and not field.required


def _race(clients: list[RestCatalog], attempt: Callable[[Table, int], None]) -> list[str]:
    """Both clients load the table, then commit at once; each loser refreshes
    and retries until it lands. Returns what happened, per client."""
    barrier = threading.Barrier(len(clients), timeout=PATIENCE)
    outcomes: list[str] = ["" for _ in clients]
    failures: list[BaseException] = []

    def run(i: int) -> None:
        try:
            table = clients[i].load_table(("RACE", "T"))
            barrier.wait()
            try:
                attempt(table, i)
                outcomes[i] = "won"
            except CommitFailedException:
                for _ in range(20):
                    table.refresh()
                    try:
                        attempt(table, i)
                        outcomes[i] = "retried"
                        return
                    except CommitFailedException:
                        continue
                outcomes[i] = "gave up"
        except BaseException as exc:  # reported by the test thread
            failures.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(clients))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(PATIENCE)
    assert not failures, failures
    return outcomes


def test_two_clients_committing_at_once_one_wins_the_other_retries_and_nothing_is_lost(
    server: Server, admin: RestCatalog, cat: Catalog
) -> None:
    admin.create_namespace("RACE")
    # pyiceberg retries a lost append by itself; the race is seen without it.
    admin.create_table(("RACE", "T"), SCHEMA, properties={"commit.retry.num-retries": "0"})
    clients = [rest_catalog(server), rest_catalog(server)]
    expected: list[Row] = []
    for round_ in range(3):
        rows: list[list[Row]] = [[(round_ * 10 + i, f"r{round_}c{i}", i)] for i in range(2)]

        def append(table: Table, i: int, rows: list[list[Row]] = rows) -> None:
            table.append(batch(rows[i]))

        outcomes = _race(clients, append)
        assert sorted(outcomes) == ["retried", "won"], outcomes
        expected += rows[0] + rows[1]
    table = admin.load_table(("RACE", "T"))
    assert scanned(table) == ordered(expected)
    # Every commit is on the current branch: one chain of six appends.
    chain = []
    snapshot = table.current_snapshot()
    while snapshot is not None:
        chain.append(snapshot)
        parent = snapshot.parent_snapshot_id
        snapshot = None if parent is None else table.snapshot_by_id(parent)
    assert len(chain) == 6 and all(s.summary is not None for s in chain)
    assert {s.summary.operation.value for s in chain if s.summary is not None} == {"append"}

    # A schema race: both add a column against the same schema; one version each.
    cat.catch_up()
    before = cat.latest_version
    names = ["A0", "A1"]

    def add(table: Table, i: int) -> None:
        with table.update_schema() as update:
            update.add_column(names[i], StringType())

    outcomes = _race(clients, add)
    assert sorted(outcomes) == ["retried", "won"], outcomes
    cat.catch_up()
    assert cat.latest_version == before + 2
    described = cat.catalog().table("T", "RACE")
    assert described is not None
    assert {"A0", "A1"} <= {c.name for c in described.columns}
    schema: Schema = admin.load_table(("RACE", "T")).schema()
    assert {schema.find_field(n).field_id for n in names} == {
        c.id for c in described.columns if c.name in names
    }


_OPS = st.lists(
    st.tuples(
        st.sampled_from(["append", "overwrite", "delete"]),
        st.lists(st.integers(0, 15), min_size=1, max_size=4, unique=True),
    ),
    min_size=1,
    max_size=4,
)


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(ops=_OPS)
def test_any_sequence_of_client_writes_reads_the_same_in_pyiceberg_and_almanac(
    admin: RestCatalog, cat: Catalog, ops: list[tuple[str, list[int]]]
) -> None:
    """The rows a model of the writes predicts, through both readers."""
    if not admin.namespace_exists("SEQ"):
        admin.create_namespace("SEQ")
    name = f"T{len(admin.list_tables('SEQ'))}"
    table = admin.create_table(("SEQ", name), SCHEMA)
    model: dict[int, Row] = {}
    for step, (op, keys) in enumerate(ops):
        if op == "append":
            new = [(k, f"s{step}", k) for k in keys if k not in model]
            if new:
                table.append(batch(new))
                model.update((r[0], r) for r in new)
        elif op == "overwrite":
            rows = [(k, f"o{step}", -k) for k in keys]
            table.overwrite(batch(rows), overwrite_filter=f"ID IN ({', '.join(map(str, keys))})")
            model.update((r[0], r) for r in rows)
        else:
            table.delete(f"ID IN ({', '.join(map(str, keys))})")
            for k in keys:
                model.pop(k, None)
    expected = ordered(list(model.values()))
    assert scanned(admin.load_table(("SEQ", name))) == expected
    cat.catch_up()
    assert arrow_rows(read_table(cat, name, "SEQ")) == expected
