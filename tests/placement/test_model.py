"""The placement codecs: canonical bytes that round-trip, and damage that
is refused with a CorruptDataError instead of a half-valid value."""

from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from almanac import CatalogError, CorruptDataError
from almanac.metastore.memory import MemoryMetastore
from almanac.placement import (
    PlacementReasons,
    ServerIndex,
    ServerInfo,
    ServerReport,
    TableRoute,
    Tablet,
    TabletReport,
    TabletState,
    read_reason,
    read_reasons,
    read_route,
    read_routes,
    read_servers,
    reason_key,
    route_key,
    server_key,
)

names = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,12}", fullmatch=True)
ints = st.integers(min_value=0, max_value=2**53)
times = st.floats(min_value=0, max_value=1e12, allow_nan=False, allow_infinity=False)
states = st.sampled_from(list(TabletState))


@st.composite
def tablets(draw: st.DrawFn, tablet_id: int) -> Tablet:
    replicas = tuple(sorted(draw(st.sets(names, max_size=4))))
    leader = draw(st.sampled_from((None, *replicas)))
    return Tablet(tablet_id, draw(ints), draw(states), replicas, leader, draw(ints), draw(times))


@st.composite
def routes(draw: st.DrawFn) -> TableRoute:
    ids = sorted(draw(st.sets(st.integers(0, 1000), max_size=6)))
    next_id = draw(st.integers(max(ids, default=-1) + 1, 2000))
    return TableRoute(
        table_id=draw(ints),
        version=draw(ints),
        table_version=draw(ints),
        tablets=tuple(draw(tablets(i)) for i in ids),
        next_tablet_id=next_id,
        state=draw(states),
    )


indexes = st.builds(
    ServerIndex,
    server=names,
    tablets=st.sets(st.tuples(ints, ints), max_size=8).map(lambda s: tuple(sorted(s))),
    version=ints,
)
infos = st.builds(
    ServerInfo,
    name=names,
    host=names,
    flight_port=st.integers(0, 65535),
    attributes=st.dictionaries(names, names, max_size=4).map(lambda d: tuple(sorted(d.items()))),
    storage_profiles=st.lists(names, max_size=3).map(tuple),
    started_at=times,
    lease=ints,
    instance_id=st.one_of(st.just(""), names),
)
reports = st.builds(
    ServerReport,
    server=names,
    tablets=st.lists(st.builds(TabletReport, ints, ints, states, ints), max_size=5).map(tuple),
    sequence=ints,
    reported_at=times,
)
reasons = st.builds(
    PlacementReasons,
    table_id=ints,
    tablets=st.dictionaries(ints, st.text(min_size=1), max_size=5).map(
        lambda d: tuple(sorted(d.items()))
    ),
)
values = st.one_of(routes(), indexes, infos, reports, reasons)


@given(values)
def test_every_value_round_trips_through_canonical_bytes(value: object) -> None:
    data = value.encode()  # type: ignore[attr-defined]
    again = type(value).decode(data)  # type: ignore[attr-defined]
    assert again == value
    assert again.encode() == data
    canonical = json.dumps(json.loads(data), sort_keys=True, separators=(",", ":"))
    assert data == canonical.encode()


@given(values, st.data())
def test_damaged_bytes_raise_a_catalog_error_or_decode_to_a_valid_value(
    value: object, data: st.DataObject
) -> None:
    raw = bytearray(value.encode())  # type: ignore[attr-defined]
    kind = data.draw(st.sampled_from(("flip", "truncate", "insert")))
    at = data.draw(st.integers(0, len(raw) - 1))
    if kind == "flip":
        raw[at] ^= 1 << data.draw(st.integers(0, 7))
    elif kind == "truncate":
        del raw[at:]
    else:
        raw.insert(at, data.draw(st.integers(0, 255)))
    try:
        decoded = type(value).decode(bytes(raw))  # type: ignore[attr-defined]
    except CorruptDataError as exc:
        assert "damaged" in str(exc)
    else:
        # A flip inside a number or a name can still make a valid record:
        # then it is a valid value, and its bytes are canonical again.
        assert type(decoded).decode(decoded.encode()) == decoded


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"null",
        b"[]",
        b"\xff\xfe",
        b'{"table_id":1}',
        b'{"next_tablet_id":1,"state":"RUNNING","table_id":1,"table_version":1,"tablets":[],'
        b'"version":-1}',
        b'{"next_tablet_id":1,"state":"BOGUS","table_id":1,"table_version":1,"tablets":[],'
        b'"version":1}',
        b'{"next_tablet_id":1,"state":"RUNNING","table_id":1,"table_version":1,"tablets":[],'
        b'"version":NaN}',
        # a tablet id at or past next_tablet_id
        b'{"next_tablet_id":1,"state":"RUNNING","table_id":1,"table_version":1,"tablets":[{'
        b'"assigned_at":0,"id":1,"leader":null,"partition":0,"replicas":[],"state":"RUNNING",'
        b'"table_version":0}],"version":1}',
        # a leader that is not a replica
        b'{"next_tablet_id":2,"state":"RUNNING","table_id":1,"table_version":1,"tablets":[{'
        b'"assigned_at":0,"id":1,"leader":"b","partition":0,"replicas":["a"],"state":"RUNNING",'
        b'"table_version":0}],"version":1}',
        # replicas out of order
        b'{"next_tablet_id":2,"state":"RUNNING","table_id":1,"table_version":1,"tablets":[{'
        b'"assigned_at":0,"id":1,"leader":null,"partition":0,"replicas":["b","a"],'
        b'"state":"RUNNING","table_version":0}],"version":1}',
        b"[" * 100000,
    ],
)
def test_malformed_routes_are_refused(data: bytes) -> None:
    with pytest.raises(CorruptDataError) as caught:
        TableRoute.decode(data)
    assert isinstance(caught.value, CatalogError)


def test_a_registration_without_an_instance_id_still_decodes() -> None:
    """Records written before servers had instance ids stay readable, and
    their bytes are what an id-less value encodes to."""
    old = (
        b'{"attributes":[["rack","r1"]],"flight_port":5,"host":"h","lease":9,"name":"ts1",'
        b'"started_at":1.5,"storage_profiles":[]}'
    )
    info = ServerInfo.decode(old)
    assert info == ServerInfo("ts1", "h", 5, (("rack", "r1"),), (), 1.5, 9)
    assert info.instance_id == "" and info.encode() == old
    new = dataclasses.replace(info, instance_id="a" * 32).encode()
    assert json.loads(new) == {**json.loads(old), "instance_id": "a" * 32}
    assert ServerInfo.decode(new).instance_id == "a" * 32
    for bad in (b'"instance_id":""', b'"instance_id":7', b'"instance_id":null'):
        with pytest.raises(CorruptDataError, match="instance_id"):
            ServerInfo.decode(old[:-1] + b"," + bad + b"}")


def test_altering_counts_running_tablets_behind_the_target_only() -> None:
    run = Tablet(0, 0, TabletState.RUNNING, ("a",), "a", table_version=2)
    creating = Tablet(1, 1, TabletState.CREATING, ("a",), "a", table_version=0)
    route = TableRoute(7, 3, 2, (run, creating), 2, TabletState.RUNNING)
    assert not route.altering
    behind = TableRoute(7, 4, 3, (run, creating), 2, TabletState.RUNNING)
    assert behind.altering


@pytest.mark.parametrize(
    "data",
    [
        b'{"table_id":1}',
        b'{"table_id":1,"tablets":[[0,""]]}',  # an empty reason
        b'{"table_id":1,"tablets":[[1,"b"],[0,"a"]]}',  # out of order
        b'{"table_id":1,"tablets":[[0,"a"],[0,"b"]]}',  # a tablet with two reasons
        b'{"table_id":1,"tablets":[[0]]}',
    ],
)
def test_malformed_reasons_are_refused(data: bytes) -> None:
    with pytest.raises(CorruptDataError, match="placement reasons is damaged"):
        PlacementReasons.decode(data)


def test_reads_check_each_record_against_its_key() -> None:
    store = MemoryMetastore()
    route = TableRoute(5, 1, 1, (), 0, TabletState.PREPARING)
    store.put(route_key(5), route.encode())
    assert read_route(store, 5) == route
    assert read_routes(store) == {5: route}
    assert read_route(store, 6) is None
    store.put(route_key(6), route.encode())  # table 5's route under table 6's key
    with pytest.raises(CorruptDataError, match="__table_route/6"):
        read_routes(store)
    info = ServerInfo("ts1", "127.0.0.1", 1, (), (), 0.0, 1)
    store.put(server_key("ts2"), info.encode())
    with pytest.raises(CorruptDataError, match="__tserver/ts2"):
        read_servers(store)
    said = PlacementReasons(5, ((0, "no live tablet server"),))
    store.put(reason_key(5), said.encode())
    assert read_reason(store, 5) == said and said.reason(0) == "no live tablet server"
    assert said.reason(1) is None and read_reason(store, 6) is None
    store.put(reason_key(6), said.encode())
    with pytest.raises(CorruptDataError, match="__placement_reason/6"):
        read_reasons(store)
