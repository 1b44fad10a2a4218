"""Bad input to the tablet-server API and the Flight client, without
servers: each is a ``CatalogError`` naming the rule, and changes nothing."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import almanac
from almanac.errors import (
    AlreadyExistsError,
    CatalogError,
    CorruptDataError,
    NotFoundError,
    ValidationError,
)
from almanac.placement import (
    ServerInfo,
    Tablet,
    TabletState,
    read_reports,
    read_servers,
    server_key,
)
from almanac.tserver.client import read_table
from almanac.tserver.instance import INSTANCE_FILE, DataDirLock, decode_instance
from almanac.tserver.server import TabletServer, TabletServerSettings
from almanac.tserver.ticket import TabletTicket
from tests.tserver.support import place, spread


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": None}, "Parameter 'name' of read_table must be a str"),
        ({"name": ""}, "must be a non-blank str"),
        ({"name": "a.b.c"}, "expected TABLE or SCHEMA.TABLE"),
        ({"version": -1}, "Parameter 'version' of read_table must be an int of at least 0"),
        ({"version": True}, "Parameter 'version' of read_table must be an int"),
        ({"timeout_s": math.nan}, "Parameter 'timeout_s' of read_table must be a finite"),
        ({"progress": 5}, "Parameter 'progress' of read_table must be callable"),
        ({"filter": "ID > 1"}, "Parameter 'filter' of read_table must be a pyarrow.compute"),
        ({"name": "T\x00"}, "without NUL characters"),
        ({}, "Table 'PUBLIC.T' has no tablet route"),
    ],
)
def test_read_table_refuses_bad_arguments(
    tmp_path: Path, kwargs: dict[str, Any], message: str
) -> None:
    with almanac.connect(str(tmp_path / "c")) as cat:
        cat.sql("CREATE TABLE T (ID BIGINT PRIMARY KEY, V VARCHAR)")
        args = {"name": "T", **kwargs}
        with pytest.raises(CatalogError) as info:
            read_table(cat, **args)
        assert message in str(info.value)


def test_read_table_does_not_create_a_catalog(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="No catalog at"):
        read_table(str(tmp_path / "nope"), "T")
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ValidationError, match="Parameter 'target' of read_table"):
        read_table(123, "T")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": "bad name"}, "Tablet server name must be 1 to 128 letters"),
        ({"flight_port": 70000}, "is not a TCP port"),
        ({"flight_port": -1}, "Parameter 'flight_port' of TabletServerSettings"),
        ({"attributes": (("a", "1"), ("a", "2"))}, "repeated attribute"),
        ({"attributes": ("a=1",)}, "a (name, value) pair of strings"),
        ({"storage_profiles": "ssd"}, "Storage profiles must be a list or tuple"),
        ({"compact_small_files": 1}, "--compact-small-files must be an int of at least 2"),
        ({"report_interval_s": 0}, "report_interval_s' of TabletServerSettings must be positive"),
        ({"lease_ttl_s": math.inf}, "lease_ttl_s' of TabletServerSettings must be a finite"),
        ({"batch_rows": 0}, "Parameter 'batch_rows' of TabletServerSettings"),
        ({"tokens": "read t0k"}, "Parameter 'tokens' of TabletServerSettings"),
        ({"insecure": "yes"}, "Parameter 'insecure' of TabletServerSettings"),
        ({"host": "10.0.0.1"}, "non-loopback address '10.0.0.1' without tokens"),
    ],
)
def test_server_settings_name_the_rule(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError) as info:
        TabletServerSettings(**{"name": "ts1", "data_dir": "d", **kwargs})
    assert message in str(info.value)


def test_tickets_round_trip_canonically() -> None:
    ticket = TabletTicket(12, 3, 40)
    assert ticket.encode() == b'{"table_id":12,"tablet_id":3,"version":40}'
    assert TabletTicket.decode(ticket.encode()) == ticket
    for bad in (b"", b"[]", b'{"table_id":1,"tablet_id":2,"version":3,"x":4}', b"\x80"):
        with pytest.raises(ValidationError, match="A tablet ticket is the JSON object"):
            TabletTicket.decode(bad)
    with pytest.raises(ValidationError, match="Field 'version' of a tablet ticket"):
        TabletTicket.decode(b'{"table_id":1,"tablet_id":2,"version":1.5}')


def test_unplaced_or_unserved_tablets_are_named(tmp_path: Path) -> None:
    with almanac.connect(str(tmp_path / "c")) as cat:
        cat.sql("CREATE ZONE Z WITH (PARTITIONS=2, REPLICAS=2)")
        cat.sql("CREATE TABLE T (ID BIGINT PRIMARY KEY, V VARCHAR) ZONE Z")
        table = cat.catalog().table("T")
        assert table is not None
        preparing = [Tablet(i, i, TabletState.PREPARING) for i in range(2)]
        place(cat.metastore, table.id, preparing)
        with pytest.raises(CatalogError, match="no readable tablet for partition 0"):
            read_table(cat, "T")
        place(cat.metastore, table.id, spread(2, ("gone1", "gone2"), 2))
        with pytest.raises(CatalogError) as info:
            read_table(cat, "T", timeout_s=0.5)
        message = str(info.value)
        assert (
            "Tablet 0 (partition 0) of table 'PUBLIC.T' has no live replica that serves it "
            "within 0.5 s" in message
        )
        assert "'gone1' is not registered" in message and "'gone2' is not registered" in message


def test_a_route_missing_a_partition_is_an_error_not_missing_rows(tmp_path: Path) -> None:
    with almanac.connect(str(tmp_path / "c")) as cat:
        cat.sql("CREATE ZONE Z WITH (PARTITIONS=3, REPLICAS=1)")
        cat.sql("CREATE TABLE T (ID BIGINT PRIMARY KEY, V VARCHAR) ZONE Z")
        table = cat.catalog().table("T")
        assert table is not None
        place(cat.metastore, table.id, spread(2, ("a", "b"), 1))
        with pytest.raises(CatalogError, match="no readable tablet for partition 2"):
            read_table(cat, "T")
        place(cat.metastore, table.id, spread(4, ("a", "b"), 1))
        with pytest.raises(CatalogError, match="names partition 3; the table has 3"):
            read_table(cat, "T")


@given(st.integers(0, 2**63 - 1), st.integers(0, 2**63 - 1), st.integers(0, 2**63 - 1))
def test_every_ticket_round_trips_and_encodes_canonically(a: int, b: int, c: int) -> None:
    ticket = TabletTicket(a, b, c)
    data = ticket.encode()
    assert TabletTicket.decode(data) == ticket
    assert (
        data
        == json.dumps(
            {"table_id": a, "tablet_id": b, "version": c}, sort_keys=True, separators=(",", ":")
        ).encode()
    )


@settings(deadline=None)
@given(st.binary(max_size=80))
def test_any_bytes_decode_to_a_ticket_or_a_validation_error(data: bytes) -> None:
    try:
        ticket = TabletTicket.decode(data)
    except ValidationError:
        return
    assert TabletTicket.decode(ticket.encode()) == ticket


def test_a_data_directory_gets_one_instance_id_and_one_live_server(tmp_path: Path) -> None:
    first = DataDirLock(tmp_path / "d")
    try:
        stored = (tmp_path / "d" / INSTANCE_FILE).read_bytes()
        assert decode_instance(stored, "x") == first.instance_id
        assert len(first.instance_id) == 32
        with pytest.raises(AlreadyExistsError, match="is in use by another live process"):
            DataDirLock(tmp_path / "d")
    finally:
        first.close()
    again = DataDirLock(tmp_path / "d")
    again.close()
    assert again.instance_id == first.instance_id
    other = DataDirLock(tmp_path / "e")
    other.close()
    assert other.instance_id != first.instance_id


def test_every_damaged_instance_file_is_refused_and_left_as_it_is(tmp_path: Path) -> None:
    lock = DataDirLock(tmp_path / "d")
    lock.close()
    path = tmp_path / "d" / INSTANCE_FILE
    good = path.read_bytes()
    damaged = [good[:cut] for cut in range(len(good))]
    damaged += [
        bytes(b ^ (1 << bit) if i == at else b for i, b in enumerate(good))
        for at in range(len(good))
        for bit in range(8)
    ]
    damaged += [good.replace(b'"instance_id"', b'"instance"'), b"[]\n", b"\xff" * 70]
    for data in damaged:
        path.write_bytes(data)
        with pytest.raises(CorruptDataError, match=r"Instance file .* is damaged") as info:
            DataDirLock(tmp_path / "d")
        assert str(path) in str(info.value)
        assert path.read_bytes() == data, "a damaged file is not replaced"
    # A crash while writing the first id leaves only a part file: ignored.
    path.unlink()
    (tmp_path / "d" / (INSTANCE_FILE + ".part")).write_bytes(b"half")
    fresh = DataDirLock(tmp_path / "d")
    fresh.close()
    assert fresh.instance_id != lock.instance_id
    assert decode_instance(path.read_bytes(), "x") == fresh.instance_id


def test_a_registration_is_taken_over_only_from_the_same_data_directory(tmp_path: Path) -> None:
    with almanac.connect(str(tmp_path / "c"), delay_ms=0, max_clock_skew_ms=0) as cat:
        store = cat.metastore
        held = store.grant_lease(600)
        old = ServerInfo("ts1", "127.0.0.1", 9, (), (), 0.0, held)  # before instance ids
        store.put(server_key("ts1"), old.encode(), lease=held)
        settings = TabletServerSettings("ts1", str(tmp_path / "d"), lease_ttl_s=0.3)
        with pytest.raises(AlreadyExistsError, match="is taken by a live server"):
            TabletServer(cat, settings)
        assert store.get(server_key("ts1")).value == old.encode()  # type: ignore[union-attr]
        lock = DataDirLock(tmp_path / "d")  # a refused server let its directory go
        lock.close()
        # The previous process on this directory: taken over, its lease revoked.
        mine = dataclasses.replace(old, instance_id=lock.instance_id)
        store.put(server_key("ts1"), mine.encode(), lease=held)
        with TabletServer(cat, settings) as server:
            info = read_servers(store)["ts1"]
            assert info.instance_id == lock.instance_id and info.lease == server.lease != held
            assert store.lease_ttl(held) is None
            assert "ts1" in read_reports(store)
