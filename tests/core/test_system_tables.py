"""System tables: SYSTEM.TABLES/COLUMNS/HISTORY against the catalog they
describe, at every version; SYSTEM.TABLETS/SERVERS against placement keys
written under real SQLite leases; the SQL reads of the same rows."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import almanac
from almanac import Catalog, CatalogError, NotFoundError, ValidationError, VersionNotFoundError
from almanac.errors import CorruptDataError
from almanac.model.clock import to_datetime
from almanac.model.descriptor_sql import partition_field_sql, sort_field_sql
from almanac.model.summary import CHECKPOINT_SUMMARY
from almanac.model.targets import parse_target
from almanac.placement import (
    LEADER_KEY,
    PlacementReasons,
    ServerIndex,
    ServerInfo,
    ServerReport,
    TableRoute,
    Tablet,
    TabletReport,
    TabletState,
    reason_key,
    report_key,
    route_key,
    server_index_key,
    server_key,
)
from almanac.placement.state import NO_LEADER
from almanac.system_tables import SYSTEM_COLUMNS, SYSTEM_TABLES, arrow_schema, system_table
from tests.waiting import wait_for

# -- TABLES / COLUMNS over random DDL ---------------------------------------------------

_NAMES = st.sampled_from(["A", "B", "C", "D"])
_TYPES = st.sampled_from(["INT", "BIGINT", "VARCHAR", "DOUBLE", "BOOLEAN", "DATE"])


@st.composite
def _statement(draw: st.DrawFn) -> str:
    schema = draw(st.sampled_from(["PUBLIC", "S1", "S2"]))
    table = f"{schema}.{draw(_NAMES)}"
    column = draw(st.sampled_from(["X", "Y", "Z"]))
    return draw(
        st.sampled_from(
            [
                f"CREATE SCHEMA IF NOT EXISTS {schema}",
                f"CREATE TABLE {table} (ID INT PRIMARY KEY, {column} {draw(_TYPES)})",
                f"CREATE TABLE {table} (K1 BIGINT, K2 VARCHAR, {column} {draw(_TYPES)}, "
                "PRIMARY KEY (K1, K2)) COLOCATE BY (K1)",
                f"ALTER TABLE {table} ADD COLUMN {column} {draw(_TYPES)} DEFAULT NULL",
                f"ALTER TABLE {table} DROP COLUMN {column}",
                f"ALTER TABLE {table} RENAME TO {draw(_NAMES)}",
                f"DROP TABLE {table}",
                f"DROP SCHEMA {schema} CASCADE",
            ]
        )
    )


def _expected_tables(version: almanac.CatalogVersion) -> list[dict[str, Any]]:
    """SYSTEM.TABLES as the catalog's objects say, written without the SHOW code."""
    rows = []
    for t in version.tables():
        schema = version.schemas_by_id[t.schema_id]
        zone = version.zones_by_id[t.zone_id]
        rows.append(
            {
                "SCHEMA": schema.name,
                "NAME": t.name,
                "ID": t.id,
                "TABLE_VERSION": t.table_version,
                "ZONE": zone.name,
                "COLUMNS": len(t.columns),
                "PRIMARY_KEY": ", ".join(t.primary_key),
                "SCHEMA_ID": schema.id,
                "COLOCATION": ", ".join(t.colocation),
                "STORAGE_PROFILE": t.storage_profile,
                "CREATED_VERSION": t.created_version,
                "UPDATE_VERSION": t.update_version,
                "PARTITION_SPEC": ", ".join(
                    partition_field_sql(t, f) for f in t.partition_spec.fields
                ),
                "SORT_ORDER": ", ".join(sort_field_sql(t, f) for f in t.sort_order.fields),
            }
        )
    return sorted(rows, key=lambda r: (r["SCHEMA"], r["NAME"]))


def _expected_columns(version: almanac.CatalogVersion) -> list[tuple[Any, ...]]:
    rows = []
    for t in version.tables():
        schema = version.schemas_by_id[t.schema_id].name
        for position, c in enumerate(t.columns, start=1):
            key = t.primary_key.index(c.name) + 1 if c.name in t.primary_key else None
            rows.append((schema, t.name, t.id, position, c.name, c.nullable, key, c.id))
    return sorted(rows, key=lambda r: (r[0], r[1], r[3]))


def _columns_seen(table: pa.Table) -> list[tuple[Any, ...]]:
    keys = ("SCHEMA", "TABLE", "TABLE_ID", "POSITION", "NAME", "NULLABLE", "PRIMARY_KEY", "ID")
    return [tuple(row[k] for k in keys) for row in table.to_pylist()]


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.lists(_statement(), min_size=1, max_size=14))
def test_tables_and_columns_describe_every_version(statements: list[str]) -> None:
    with almanac.connect("memory://") as cat:
        seen: dict[int, tuple[pa.Table, pa.Table]] = {}
        for statement in statements:
            try:
                cat.sql(statement)
            except CatalogError:
                continue  # a refused statement changes nothing: checked below all the same
            at = cat.catalog()
            tables = system_table(cat, "SYSTEM.TABLES")
            columns = system_table(cat, "system.columns")
            assert tables.schema == arrow_schema("SYSTEM.TABLES")
            assert columns.schema == arrow_schema("SYSTEM.COLUMNS")
            assert tables.to_pylist() == _expected_tables(at)
            assert _columns_seen(columns) == _expected_columns(at)
            seen[at.version] = (tables, columns)
        for version, (tables, columns) in seen.items():
            assert system_table(cat, "SYSTEM.TABLES", version=version).equals(tables)
            assert system_table(cat, "SYSTEM.COLUMNS", version=version).equals(columns)


def test_columns_show_types_and_defaults_as_describe_does() -> None:
    with almanac.connect("memory://") as cat:
        cat.sql(
            "CREATE TABLE T (ID BIGINT PRIMARY KEY, NAME VARCHAR(20) NOT NULL DEFAULT 'n', "
            "AMOUNT DECIMAL(10, 2))"
        )
        columns = system_table(cat, "SYSTEM.COLUMNS").to_pylist()
        describe = cat.sql("DESCRIBE TABLE T")
        shown = [
            {
                k: row[k]
                for k in ("NAME", "TYPE", "NULLABLE", "DEFAULT", "PRIMARY_KEY", "ID", "COMMENT")
            }
            for row in columns
        ]
        assert shown == [dict(zip(describe.columns, row, strict=True)) for row in describe.rows]
        assert [c["TYPE"] for c in columns] == ["INT64", "STRING(20)", "DECIMAL(10, 2)"]


# -- HISTORY ------------------------------------------------------------------------------


def test_history_lists_the_versions_at_any_version_or_instant() -> None:
    with almanac.connect("memory://") as cat:
        cat.sql("CREATE SCHEMA S")
        cat.execute([almanac.CreateSchema("T")], request_id="make-t")
        cat.sql("CREATE TABLE S.X (ID INT PRIMARY KEY)")
        history = system_table(cat, "SYSTEM.HISTORY")
        assert history.schema == arrow_schema("SYSTEM.HISTORY")
        infos = cat.history()
        assert history.column("VERSION").to_pylist() == [i.version for i in reversed(infos)]
        assert history.column("ACTIVATED_AT").to_pylist() == [
            to_datetime(i.activation_time) for i in reversed(infos)
        ]
        assert history.column("REQUEST_ID").to_pylist() == [None, "make-t", None, None]
        shown = cat.sql("SHOW HISTORY")
        assert history.column("SUMMARY").to_pylist() == [row[3] for row in shown.rows]
        assert set(history.column("NODE").to_pylist()) == {cat.history()[0].node}

        old = system_table(cat, "SYSTEM.HISTORY", version=2)
        assert old.column("VERSION").to_pylist() == [2, 1]
        # an instant reads the version catalog_at says was active then (versions
        # made within one millisecond share it: the instant has no finer grain)
        at = to_datetime(infos[1].activation_time)
        active = cat.catalog_at(at).version
        then = system_table(cat, "SYSTEM.HISTORY", timestamp=at)
        assert then.column("VERSION").to_pylist() == list(range(active, 0, -1))
        assert then.equals(system_table(cat, "SYSTEM.HISTORY", version=active))


def test_sql_reads_answer_the_same_rows_as_text() -> None:
    with almanac.connect("memory://") as cat:
        cat.sql("CREATE TABLE T (ID INT PRIMARY KEY)")
        for name in SYSTEM_TABLES:
            result = cat.sql(f"SELECT * FROM {name}")
            assert result.columns == tuple(n for n, _ in SYSTEM_COLUMNS[name.split(".")[1]])
        tables = cat.sql("SELECT * FROM system.tables AS OF VERSION 1")
        assert (tables.version, tables.rows) == (1, ())
        history = cat.sql("SELECT * FROM SYSTEM.HISTORY")
        assert history.rows[0][1] == cat.sql("SHOW HISTORY").rows[0][1]  # ISO text, UTC


# -- bad input ------------------------------------------------------------------------------


def test_bad_names_versions_and_targets_are_refused(tmp_path: Path) -> None:
    with almanac.connect("memory://") as cat:
        with pytest.raises(NotFoundError, match=r"SYSTEM\.TABLES, SYSTEM\.COLUMNS") as caught:
            system_table(cat, "SYSTEM.NOPE")
        assert "SYSTEM.NOPE" in str(caught.value)
        for name in ("TABLES", "PUBLIC.TABLES", "SYSTEM.TABLES.X", ""):
            with pytest.raises(NotFoundError):
                system_table(cat, name)
        with pytest.raises(ValidationError, match="'name'"):
            system_table(cat, 7)  # type: ignore[arg-type]
        for placement in ("SYSTEM.TABLETS", "SYSTEM.SERVERS"):
            with pytest.raises(ValidationError, match="placement state as it is now"):
                system_table(cat, placement, version=1)
            with pytest.raises(ValidationError, match="placement state"):
                system_table(cat, placement, timestamp=dt.datetime.now(dt.UTC))
        with pytest.raises(VersionNotFoundError, match="version 0 does not exist"):
            system_table(cat, "SYSTEM.TABLES", version=0)
        with pytest.raises(VersionNotFoundError):
            system_table(cat, "SYSTEM.TABLES", version=99)
        with pytest.raises(ValidationError):
            system_table(cat, "SYSTEM.TABLES", version=-1)
        with pytest.raises(ValidationError, match="not both"):
            system_table(cat, "SYSTEM.TABLES", version=1, timestamp=dt.datetime.now(dt.UTC))
        with pytest.raises(ValidationError, match="aware"):
            system_table(cat, "SYSTEM.TABLES", timestamp=dt.datetime(2026, 1, 1))
        with pytest.raises(ValidationError, match="aware datetime"):
            system_table(cat, "SYSTEM.TABLES", timestamp=12345)  # type: ignore[arg-type]
    for target, error in (
        ("memory://", ValidationError),
        ("http://127.0.0.1:1", ValidationError),
        ("foo://x", ValidationError),
        (str(tmp_path / "nothing"), NotFoundError),
    ):
        with pytest.raises(error):
            system_table(target, "SYSTEM.TABLES")
    assert not (tmp_path / "nothing").exists()


def test_a_target_is_opened_for_the_read(tmp_path: Path) -> None:
    target = str(tmp_path / "catalog")
    with almanac.connect(target, delay_ms=0) as cat:
        cat.sql("CREATE TABLE T (ID INT PRIMARY KEY)")
        expected = system_table(cat, "SYSTEM.TABLES")
        assert system_table(target, "SYSTEM.TABLES").equals(expected)
        assert system_table(parse_target(target), "SYSTEM.TABLES").equals(expected)


# -- TABLETS / SERVERS from placement keys under real leases -----------------------------


@pytest.fixture
def sqlite_cat(tmp_path: Path) -> Iterator[Catalog]:
    with almanac.connect(str(tmp_path / "catalog"), delay_ms=0) as cat:
        yield cat


def _route(table_id: int, table_version: int, tablets: list[Tablet]) -> TableRoute:
    return TableRoute(
        table_id=table_id,
        version=3,
        table_version=table_version,
        tablets=tuple(tablets),
        next_tablet_id=len(tablets),
        state=TabletState.RUNNING,
    )


def _register(cat: Catalog, name: str, port: int, ttl: float = 60.0) -> int:
    store = cat.metastore
    lease = store.grant_lease(ttl)
    info = ServerInfo(
        name, "127.0.0.1", port, (("rack", "r1"), ("zone", "a")), ("ssd",), 1_000_000.0, lease
    )
    store.put(server_key(name), info.encode(), lease)
    report = ServerReport(name, (TabletReport(2, 0, TabletState.RUNNING, 1),), 1, 1_000_010.0)
    store.put(report_key(name), report.encode(), lease)
    return lease


def test_a_waiting_tablet_with_no_placement_leader_says_so(sqlite_cat: Catalog) -> None:
    """Without a node running placement, nobody writes a reason: the read
    says a leader is missing rather than leave the stall silent, and stops
    saying it once a leader holds its key."""
    cat = sqlite_cat
    cat.sql("CREATE TABLE T (ID INT PRIMARY KEY)")
    t = cat.catalog().table("T")
    assert t is not None
    store = cat.metastore
    tablets = [Tablet(0, 0, TabletState.PREPARING), Tablet(1, 1, TabletState.DELETED)]
    store.put(route_key(t.id), _route(t.id, 1, tablets).encode())
    reasons = system_table(cat, "SYSTEM.TABLETS").column("REASON").to_pylist()
    assert reasons == [NO_LEADER, None]
    assert cat.sql("SHOW TABLETS ON T").rows[0][-1] == NO_LEADER

    store.put(LEADER_KEY, b"node-1")
    assert system_table(cat, "SYSTEM.TABLETS").column("REASON").to_pylist() == [None, None]


def test_tablets_and_servers_follow_the_placement_keys(sqlite_cat: Catalog) -> None:
    cat = sqlite_cat
    cat.sql("CREATE TABLE T (ID INT PRIMARY KEY); CREATE SCHEMA S")
    cat.sql("CREATE TABLE S.U (K INT PRIMARY KEY)")
    t, u = cat.catalog().table("T"), cat.catalog().table("U", "S")
    assert t is not None and u is not None
    store = cat.metastore
    running = TabletState.RUNNING
    store.put(
        route_key(t.id),
        _route(
            t.id,
            2,
            [
                Tablet(0, 0, running, ("ts1", "ts2"), "ts1", 2, 5.0),
                Tablet(1, 1, running, ("ts2", "ts3"), "ts3", 1, 5.0),  # behind: ALTERING
                Tablet(2, 1, TabletState.REPLACED, ("ts1",), "ts1", 0, 1.0),
            ],
        ).encode(),
    )
    store.put(route_key(u.id), _route(u.id, 1, [Tablet(0, 0, TabletState.PREPARING)]).encode())
    store.put(route_key(999), _route(999, 1, [Tablet(0, 0, TabletState.DELETED)]).encode())
    store.put(server_index_key("ts4"), ServerIndex("ts4", (), 1).encode())
    waits = "zone 'Z' needs 3 replicas, 2 tablet servers live"
    store.put(reason_key(u.id), PlacementReasons(u.id, ((0, waits),)).encode())
    leases = {n: _register(cat, n, 7000 + i) for i, n in enumerate(("ts1", "ts2"))}

    tablets = system_table(cat, "SYSTEM.TABLETS")
    assert tablets.schema == arrow_schema("SYSTEM.TABLETS")
    rows = [
        (r["TABLE_ID"], r["SCHEMA"], r["TABLE"], r["TABLET_ID"], r["STATE"], r["REPLICAS"])
        for r in tablets.to_pylist()
    ]
    assert rows == [
        (t.id, "PUBLIC", "T", 0, "RUNNING", ["ts1", "ts2"]),
        (t.id, "PUBLIC", "T", 1, "RUNNING", ["ts2", "ts3"]),
        (t.id, "PUBLIC", "T", 2, "REPLACED", ["ts1"]),
        (u.id, "S", "U", 0, "PREPARING", []),
        (999, None, None, 0, "DELETED", []),
    ]
    first = tablets.to_pylist()[1]
    assert (first["LEADER"], first["REPORTED_TABLE_VERSION"], first["TABLE_VERSION"]) == (
        "ts3",
        1,
        2,
    )
    assert tablets.column("ALTERING").to_pylist() == [True, True, True, False, False]
    assert tablets.column("ROUTE_VERSION").to_pylist() == [3] * 5
    assert tablets.column("REASON").to_pylist() == [None, None, None, waits, None]
    shown = cat.sql("SHOW TABLETS ON S.U")
    assert [row[-1] for row in shown.rows] == [waits]

    servers = {r["NAME"]: r for r in system_table(cat, "SYSTEM.SERVERS").to_pylist()}
    assert list(servers) == ["ts1", "ts2", "ts3", "ts4"]  # ts3 in a route, ts4 indexed
    ts1 = servers["ts1"]
    assert ts1["LIVE"] and ts1["HOST"] == "127.0.0.1" and ts1["FLIGHT_PORT"] == 7000
    assert ts1["ATTRIBUTES"] == [("rack", "r1"), ("zone", "a")]
    assert ts1["STORAGE_PROFILES"] == ["ssd"]
    assert ts1["STARTED_AT"] == dt.datetime.fromtimestamp(1_000_000.0, dt.UTC)
    assert ts1["REPORTED_AT"] == dt.datetime.fromtimestamp(1_000_010.0, dt.UTC)
    assert (ts1["TABLETS"], ts1["LEADERS"]) == (1, 1)  # the REPLACED tablet is not counted
    assert (servers["ts2"]["TABLETS"], servers["ts2"]["LEADERS"]) == (2, 0)
    assert servers["ts3"]["LIVE"] is False and servers["ts3"]["HOST"] is None
    assert (servers["ts3"]["TABLETS"], servers["ts3"]["LEADERS"]) == (1, 1)
    assert servers["ts4"]["LIVE"] is False and servers["ts4"]["TABLETS"] == 0

    # SQL: the same rows as text; ON keeps one table's tablets
    shown = cat.sql("SHOW TABLETS ON T")
    assert [row[3] for row in shown.rows] == [0, 1, 2]
    assert shown.rows[0][6] == "ts1, ts2"
    assert cat.sql("SHOW TABLETS ON S.U").rows[0][5] == "PREPARING"
    listed = cat.sql("SHOW SERVERS")
    assert listed.rows[0][3] == "rack=r1, zone=a" and str(listed.rows[0][5]).endswith("Z")

    # a server's lease ends: it is no longer live, but the routes still name it
    cat.metastore.revoke_lease(leases["ts2"])
    servers = {r["NAME"]: r for r in system_table(cat, "SYSTEM.SERVERS").to_pylist()}
    assert servers["ts2"]["LIVE"] is False and servers["ts2"]["REPORTED_AT"] is None
    assert servers["ts2"]["TABLETS"] == 2


def test_a_lease_that_is_not_kept_alive_expires_from_servers(sqlite_cat: Catalog) -> None:
    _register(sqlite_cat, "ts9", 7100, ttl=0.5)  # never kept alive

    def live() -> list[bool]:
        return list(system_table(sqlite_cat, "SYSTEM.SERVERS").column("LIVE").to_pylist())

    assert live() == [True]
    wait_for(lambda: not live(), "the dead server's lease to expire")
    assert live() == []  # no route names it: it is gone once its lease is


def test_a_time_past_any_date_is_damage(sqlite_cat: Catalog) -> None:
    lease = sqlite_cat.metastore.grant_lease(60.0)
    info = ServerInfo("ts1", "127.0.0.1", 1, (), (), 1e300, lease)
    sqlite_cat.metastore.put(server_key("ts1"), info.encode(), lease)
    with pytest.raises(CorruptDataError, match="ts1's start time"):
        system_table(sqlite_cat, "SYSTEM.SERVERS")


def test_damaged_placement_bytes_are_a_catalog_error(sqlite_cat: Catalog) -> None:
    sqlite_cat.metastore.put(route_key(5), b'{"table_id": 5, "vers')
    with pytest.raises(CorruptDataError, match="__table_route/5"):
        system_table(sqlite_cat, "SYSTEM.TABLETS")
    with pytest.raises(CorruptDataError):
        sqlite_cat.sql("SHOW SERVERS")
    sqlite_cat.metastore.delete(route_key(5))
    good = _route(6, 1, [Tablet(0, 0, TabletState.RUNNING)]).encode()
    sqlite_cat.metastore.put(route_key(7), good)  # the key names another table
    with pytest.raises(CorruptDataError, match="holds the record"):
        system_table(sqlite_cat, "SYSTEM.TABLETS")


@pytest.mark.parametrize(
    ("sql", "error", "message"),
    [
        ("SELECT * FROM T", ValidationError, "SELECT reads the system tables only"),
        ("SELECT * FROM SYSTEM.NOPE", NotFoundError, "No system table 'SYSTEM.NOPE'"),
        ("SELECT ID FROM SYSTEM.TABLES", almanac.SqlParseError, "Unsupported statement SELECT"),
        ("SELECT * FROM SYSTEM.TABLES t", almanac.SqlParseError, "Unsupported statement SELECT"),
        ("SELECT * FROM (SELECT 1)", almanac.SqlParseError, "Unsupported statement SELECT"),
        ("SELECT * FROM SYSTEM.TABLES AS OF VERSION 1 x", almanac.SqlParseError, "'x'"),
        ("SELECT * FROM SYSTEM.TABLES AS OF", almanac.SqlParseError, "VERSION or TIMESTAMP"),
        ("SELECT * FROM SYSTEM.TABLETS AS OF VERSION 1", ValidationError, "as it is now"),
        ("SHOW SERVERS AS OF VERSION 1", ValidationError, "as it is now"),
        ("SHOW TABLETS ON NOPE", NotFoundError, "Table 'PUBLIC.NOPE' does not exist"),
        ("SHOW SERVERS ON T", almanac.SqlParseError, "Unexpected 'ON'"),
        ("SELECT * FROM SYSTEM.TABLES; CREATE SCHEMA X", almanac.SqlParseError, "only statement"),
        ("CREATE SCHEMA system", ValidationError, "reserved"),
    ],
)
def test_system_reads_refuse_what_they_do_not_answer(
    sql: str, error: type[CatalogError], message: str
) -> None:
    with almanac.connect("memory://") as cat:
        cat.sql("CREATE TABLE T (ID INT PRIMARY KEY)")
        before = cat.latest_version
        with pytest.raises(error, match=re.escape(message)):
            cat.sql(sql)
        assert cat.latest_version == before


def test_history_after_a_checkpoint_lists_what_is_left() -> None:
    with almanac.connect("memory://") as cat:
        for name in ("A", "B", "C"):
            cat.sql(f"CREATE SCHEMA {name}")
        cat.checkpoint_log(3)
        history = system_table(cat, "SYSTEM.HISTORY")
        # version 3 is the checkpoint: listed and readable, but what it changed is gone
        assert history.column("VERSION").to_pylist() == [4, 3]
        assert history.column("SUMMARY").to_pylist()[1] == CHECKPOINT_SUMMARY
        assert [row[0] for row in cat.sql("SHOW HISTORY").rows] == [4, 3]
        assert system_table(cat, "SYSTEM.TABLES", version=3).num_rows == 0
        assert system_table(cat, "SYSTEM.HISTORY", version=3).column("VERSION").to_pylist() == [3]
        with pytest.raises(VersionNotFoundError, match="no longer available"):
            system_table(cat, "SYSTEM.TABLES", version=2)


def test_a_closed_catalog_is_refused() -> None:
    cat = almanac.connect("memory://")
    cat.close()
    with pytest.raises(ValidationError, match="closed"):
        system_table(cat, "SYSTEM.TABLES")
