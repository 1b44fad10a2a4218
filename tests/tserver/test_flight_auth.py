"""Flight authentication of tablet servers, as real ``almanac tserver``
processes: a server given tokens (by ``--tokens-file`` or by
``$ALMANAC_TOKENS``, as ``almanac serve`` takes them) refuses every call
without one of them, whatever the RPC; a read or an admin token reads, by
hand-made ticket and through ``almanac.tserver.client.read_table``. A server binds
to loopback by default and refuses any other address without tokens."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.flight as flight
import pytest

import almanac
from almanac import Catalog, ColumnDef, ColumnType, CreateTable, CreateZone
from almanac.access.tokens import ENV_VARIABLE, Tokens
from almanac.cli import main
from almanac.data import read_table, tablets_of, write_table
from almanac.errors import AccessDeniedError, ValidationError
from almanac.placement import TabletState, read_reports, read_route, read_servers
from almanac.tserver.client import read_table as flight_read
from almanac.tserver.server import TabletServerSettings
from almanac.tserver.ticket import TabletTicket
from tests.tserver.support import TabletServerProcess, place, spread
from tests.waiting import PATIENCE, wait_for

pytestmark = pytest.mark.xdist_group("tservers-auth")

READ_TOKEN = "reader-8c1f0e2d7b"
ADMIN_TOKEN = "admin-3a9b54e6c1"
TOKENS = f"# roles as almanac serve has them\nread {READ_TOKEN}\nadmin {ADMIN_TOKEN}\n"
NAMES = ("fa1", "fa2")
ROWS = 400


@dataclass
class Cluster:
    target: str
    cat: Catalog
    servers: dict[str, TabletServerProcess]
    table_id: int


def _running(cat: Catalog, table_id: int) -> bool:
    route = read_route(cat.metastore, table_id)
    reports = read_reports(cat.metastore)
    if route is None:
        return False
    for tablet in route.tablets:
        for server in tablet.replicas:
            report = reports.get(server)
            states = {r.tablet_id: r.state for r in report.tablets} if report else {}
            if states.get(tablet.id) is not TabletState.RUNNING:
                return False
    return True


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("flight-auth")
    target = str(root / "catalog")
    tokens = root / "tokens"
    tokens.write_text(TOKENS, encoding="utf-8")
    cat = almanac.connect(target, delay_ms=0, max_clock_skew_ms=0)
    servers: dict[str, TabletServerProcess] = {}
    try:
        cat.execute([CreateZone(name="Z", partitions=2, replicas=1)])
        cat.execute(
            [
                CreateTable(
                    name="T",
                    columns=(
                        ColumnDef(name="ID", type=ColumnType.INT64, nullable=False),
                        ColumnDef(name="V", type=ColumnType.STRING),
                    ),
                    primary_key=("ID",),
                    colocation=("ID",),  # bucketed: a ticket's rows are one bucket
                    zone="Z",
                )
            ]
        )
        ids = list(range(ROWS))
        write_table(
            cat, "T", pa.table({"ID": pa.array(ids, pa.int64()), "V": [f"v{i}" for i in ids]})
        )
        args = ("--report-interval", "0.3", "--lease-ttl", "3")
        # One server reads its tokens from a file, the other from the environment.
        servers["fa1"] = TabletServerProcess(
            target, "fa1", root / "fa1", root / "fa1.log", *args, "--tokens-file", str(tokens)
        )
        with pytest.MonkeyPatch.context() as env:
            env.setenv(ENV_VARIABLE, TOKENS)
            servers["fa2"] = TabletServerProcess(
                target, "fa2", root / "fa2", root / "fa2.log", *args
            )
        for server in servers.values():
            assert server.location.startswith("grpc://127.0.0.1:")
        table = cat.catalog().table("T")
        assert table is not None
        place(cat.metastore, table.id, spread(2, NAMES, 1))
        wait_for(lambda: _running(cat, table.id), "T running on its servers")
        yield Cluster(target, cat, servers, table.id)
    finally:
        for server in servers.values():
            server.close()
        cat.close()


def _options(authorization: str | None) -> flight.FlightCallOptions:
    headers = [] if authorization is None else [(b"authorization", authorization.encode())]
    return flight.FlightCallOptions(timeout=60, headers=headers)


def _tickets(cluster: Cluster) -> list[tuple[str, int, bytes]]:
    """(server, partition, hand-made ticket) of every tablet."""
    route = read_route(cluster.cat.metastore, cluster.table_id)
    assert route is not None
    version = cluster.cat.catalog().version
    return [
        (t.replicas[0], t.partition, TabletTicket(cluster.table_id, t.id, version).encode())
        for t in route.tablets
    ]


def _do_get(location: str, ticket: bytes, authorization: str | None) -> pa.Table:
    client = flight.connect(location)
    try:
        return client.do_get(flight.Ticket(ticket), _options(authorization)).read_all()
    finally:
        client.close()


@pytest.mark.parametrize(
    "authorization",
    [
        None,
        "Bearer wrong-token",
        f"Bearer {READ_TOKEN}x",
        f"Bearer {READ_TOKEN[:-1]}",
        f"Basic {READ_TOKEN}",
        READ_TOKEN,
        "Bearer ",
    ],
    ids=["none", "wrong", "longer", "prefix", "basic", "no-scheme", "empty"],
)
def test_a_hand_made_ticket_without_a_valid_token_is_refused(
    cluster: Cluster, authorization: str | None
) -> None:
    for server, _, ticket in _tickets(cluster):
        with pytest.raises(flight.FlightUnauthenticatedError) as info:
            _do_get(cluster.servers[server].location, ticket, authorization)
        assert f"Tablet server '{server}'" in str(info.value)
        assert "bearer token" in str(info.value)
        assert READ_TOKEN not in str(info.value)


_CALLS: dict[str, Callable[[flight.FlightClient, flight.FlightCallOptions], object]] = {
    "list_flights": lambda c, o: list(c.list_flights(options=o)),
    "get_flight_info": lambda c, o: c.get_flight_info(flight.FlightDescriptor.for_path("T"), o),
    "get_schema": lambda c, o: c.get_schema(flight.FlightDescriptor.for_path("T"), o),
    "list_actions": lambda c, o: c.list_actions(o),
    "do_action": lambda c, o: list(c.do_action(flight.Action("tables", b""), o)),
}


@pytest.mark.parametrize("call", sorted(_CALLS))
def test_every_rpc_is_refused_without_a_token(cluster: Cluster, call: str) -> None:
    for server in NAMES:
        client = flight.connect(cluster.servers[server].location)
        try:
            for authorization in (None, "Bearer wrong-token"):
                # pyarrow's get_schema gives the status as OSError, with its code in the text.
                with pytest.raises((flight.FlightUnauthenticatedError, OSError)) as info:
                    _CALLS[call](client, _options(authorization))
                assert f"Tablet server '{server}'" in str(info.value)
                assert "Unauthenticated" in str(info.value)
        finally:
            client.close()


@pytest.mark.parametrize("token", [READ_TOKEN, ADMIN_TOKEN], ids=["read", "admin"])
def test_a_read_or_admin_token_reads_by_hand_made_ticket(cluster: Cluster, token: str) -> None:
    everything = read_table(cluster.cat, "T")
    table = cluster.cat.catalog().table("T")
    assert table is not None
    buckets = tablets_of(everything, table, 2)
    seen = 0
    for server, partition, ticket in _tickets(cluster):
        got = _do_get(cluster.servers[server].location, ticket, f"Bearer {token}")
        expected = everything.filter(pa.array(buckets == partition))
        assert got.sort_by("ID").equals(expected.sort_by("ID"))
        seen += got.num_rows
    assert seen == ROWS


def test_read_table_with_the_token_reads_every_row(cluster: Cluster) -> None:
    got = flight_read(cluster.target, "PUBLIC.T", token=READ_TOKEN)
    assert got.sort_by("ID").equals(read_table(cluster.cat, "T").sort_by("ID"))
    assert got.num_rows == ROWS
    again = flight_read(cluster.cat, "T", token=ADMIN_TOKEN)
    assert again.num_rows == ROWS


@pytest.mark.parametrize("token", [None, "wrong-token"], ids=["none", "wrong"])
def test_read_table_without_a_valid_token_is_access_denied(
    cluster: Cluster, token: str | None
) -> None:
    # Were a refusal retried like a dead replica, this would end in a plain
    # CatalogError once the timeout ran out: it is final at once.
    with pytest.raises(AccessDeniedError) as info:
        flight_read(cluster.cat, "PUBLIC.T", token=token, timeout_s=PATIENCE)
    message = str(info.value)
    assert "refused to read table 'PUBLIC.T'" in message
    assert ("without a token" if token is None else "with the token given") in message
    assert any(f"Tablet server '{name}' (grpc://127.0.0.1:" in message for name in NAMES)
    assert info.value.context["rule"] == "tablet server reads need a bearer token of its tokens"
    assert "wrong-token" not in message


def test_read_table_checks_its_token_argument(cluster: Cluster) -> None:
    for bad in ("two words", "", 7):
        with pytest.raises(ValidationError, match="Parameter 'token' of read_table"):
            flight_read(cluster.cat, "T", token=bad)  # type: ignore[arg-type]


def test_no_token_reaches_a_server_log(cluster: Cluster) -> None:
    for server, _, ticket in _tickets(cluster):
        with pytest.raises(flight.FlightUnauthenticatedError):
            _do_get(cluster.servers[server].location, ticket, "Bearer secret-guess-42")
    for process in cluster.servers.values():
        text = process.log_text()
        assert "secret-guess-42" not in text
        assert READ_TOKEN not in text and ADMIN_TOKEN not in text


def test_a_tablet_server_binds_to_loopback_by_default(cluster: Cluster) -> None:
    assert TabletServerSettings(name="x", data_dir="d").host == "127.0.0.1"
    for name, info in read_servers(cluster.cat.metastore).items():
        assert info.host == "127.0.0.1"
        assert cluster.servers[name].location == f"grpc://127.0.0.1:{info.flight_port}"


def test_a_non_loopback_address_needs_tokens_or_insecure() -> None:
    with pytest.raises(ValidationError, match=r"non-loopback address '0\.0\.0\.0' without tokens"):
        TabletServerSettings(name="x", data_dir="d", host="0.0.0.0")
    tokens = Tokens.parse(TOKENS, "test tokens")
    assert TabletServerSettings(name="x", data_dir="d", host="0.0.0.0", tokens=tokens).tokens
    assert TabletServerSettings(name="x", data_dir="d", host="::", insecure=True).insecure
    assert TabletServerSettings(name="x", data_dir="d", host="::1").host == "::1"


def test_the_cli_refuses_a_non_loopback_address_without_tokens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(ENV_VARIABLE, raising=False)
    store = str(tmp_path / "catalog")
    almanac.connect(store).close()
    args = ["--store", store, "tserver", "--name", "x", "--data-dir", str(tmp_path / "d")]
    assert main([*args, "--host", "0.0.0.0"]) == 1
    err = capsys.readouterr().err
    assert "refuses to serve Flight on non-loopback address '0.0.0.0' without tokens" in err
    assert not (tmp_path / "d").exists()
