"""Bad input to the tablet-server API and the Flight client, without
servers: each is a ``CatalogError`` naming the rule, and changes nothing."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

import almanac
from almanac.errors import CatalogError, NotFoundError, ValidationError
from almanac.flight import read_table
from almanac.tserver import TabletServerSettings, TabletTicket


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
