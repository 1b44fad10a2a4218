"""The remote client against a real server process: the same answers as a
local catalog on the same store, errors by class, tokens, request ids."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

import almanac
from almanac import Catalog, RemoteCatalog
from almanac.serialization import encode_catalog

from .support import ServerProcess, free_port

ADMIN, READER = "admin-token-0123456789", "read-token-0123456789"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("remote") / "data"


@pytest.fixture(scope="module")
def server(store: Path) -> Iterator[ServerProcess]:
    tokens = store.parent / "tokens"
    tokens.write_text(f"admin {ADMIN}\nread {READER}\n")
    proc = ServerProcess(str(store), free_port(), store.parent / "server.log")
    proc.start(tokens_file=tokens)
    yield proc
    proc.stop()


@pytest.fixture(scope="module")
def remote(server: ServerProcess) -> Iterator[RemoteCatalog]:
    with almanac.connect(server.url, token=ADMIN) as cat:
        yield cat


@pytest.fixture(scope="module")
def local(server: ServerProcess, store: Path) -> Iterator[Catalog]:
    """A node in this process on the server's store: the oracle."""
    with almanac.connect(str(store)) as cat:
        yield cat


def test_ddl_makes_the_versions_a_local_node_reads_byte_for_byte(
    remote: RemoteCatalog, local: Catalog
) -> None:
    first = remote.sql("CREATE TABLE T1 (ID INT64 PRIMARY KEY, NAME VARCHAR(20))")
    assert first.columns == () and not first.is_query
    result = remote.execute(
        [almanac.CreateSchema("S1"), almanac.CreateSchema("S1", if_not_exists=True)]
    )
    assert (result.version, result.applied, result.created) == (
        first.version + 1,
        (True, False),
        True,
    )
    local.catch_up()
    assert remote.latest_version == local.latest_version == result.version
    for v in range(local.earliest_version, local.latest_version + 1):
        assert encode_catalog(remote.catalog(v)) == encode_catalog(local.catalog(v))
    assert remote.catalog() == local.catalog()
    assert remote.catalog(first.version) is remote.catalog(first.version)  # cached
    assert remote.catalog(first.version).table("T1") == local.catalog().table("T1") is not None
    at = local.catalog(first.version).activation_time
    assert remote.catalog_at(at) == local.catalog_at(at) == local.catalog(first.version)
    assert remote.catalog_at(at - 1).version == first.version - 1
    now = dt.datetime.now(dt.timezone(dt.timedelta(hours=5)))
    assert remote.catalog_at(now) == local.catalog_at(now) == local.catalog()


def test_reads_at_version_0_are_refused_and_the_client_still_mirrors_a_node(
    server: ServerProcess, remote: RemoteCatalog, local: Catalog
) -> None:
    """Version 0 is the empty catalog before ``init``: ``/v1/catalog`` and
    ``/v1/tables`` refuse it (404) by the one read point, as SQL's ``AS OF
    VERSION 0`` does; ``RemoteCatalog.catalog(0)`` and ``catalog_at`` before
    version 1 still answer what a local node's do."""
    remote.sql("CREATE TABLE T0 (ID INT64 PRIMARY KEY)")
    with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {READER}"}) as http:
        for path in ("/v1/catalog?version=0", "/v1/tables/PUBLIC/T0?version=0"):
            reply = http.get(path)
            assert reply.status_code == 404, (path, reply.text)
            assert "versions start at 1" in reply.json()["message"], path
        reply = http.get("/v1/catalog", params={"timestamp": "1971-01-01T00:00:00Z"})
        assert reply.status_code == 404 and "did not exist yet" in reply.json()["message"]
        assert http.get("/v1/catalog", params={"version": -1}).status_code == 400
        assert http.get("/v1/tables/PUBLIC/T0", params={"version": 1}).status_code == 404
    local.catch_up()
    assert remote.catalog(0) == local.catalog(0)
    before = dt.datetime(1971, 1, 1, tzinfo=dt.UTC)
    assert remote.catalog_at(before) == local.catalog_at(before)


def test_history_and_diff_are_the_local_ones(remote: RemoteCatalog, local: Catalog) -> None:
    before = remote.sql("CREATE TABLE T2 (ID INT64 PRIMARY KEY)").version
    after = remote.sql("ALTER TABLE T2 ADD COLUMN C VARCHAR(5); CREATE SCHEMA S2").version
    local.catch_up()
    assert remote.diff(before - 1, after) == local.diff(before - 1, after)
    assert remote.diff(after, before) == local.diff(after, before)
    mine = remote.history(since=before)
    theirs = local.history(since=before)
    assert [(v.version, v.node, v.request_id) for v in mine] == [
        (v.version, v.node, v.request_id) for v in theirs
    ]
    assert all(v.request_id for v in mine)  # the client sent one with each DDL
    assert [v.events for v in mine] == [
        tuple((e.event_type, e.object_id()) for e in v.update.entries if e.event_type is not None)
        for v in theirs
    ]
    assert mine[0].events, "a created table has events"
    assert remote.earliest_version == local.earliest_version


def test_read_statements_answer_rows(remote: RemoteCatalog, local: Catalog) -> None:
    remote.sql("CREATE TABLE T3 (ID INT64 PRIMARY KEY)")
    local.catch_up()
    shown = remote.sql("SHOW TABLES")
    assert shown.is_query and shown == local.sql("SHOW TABLES")


def test_errors_arrive_as_their_class_and_change_nothing(
    remote: RemoteCatalog, local: Catalog
) -> None:
    before = remote.latest_version
    with pytest.raises(almanac.NotFoundError, match="NOPE") as missing:
        remote.sql("DROP TABLE NOPE")
    with pytest.raises(almanac.NotFoundError) as missing_here:
        local.sql("DROP TABLE NOPE")
    assert str(missing.value) == str(missing_here.value)
    with pytest.raises(almanac.SqlParseError) as parse:
        remote.sql("CREATE TABLE (")
    assert (parse.value.line, parse.value.column) == (1, parse.value.column)
    with pytest.raises(almanac.AlreadyExistsError):
        remote.execute([almanac.CreateSchema("PUBLIC")])
    with pytest.raises(almanac.VersionNotFoundError) as gone:
        remote.catalog(10**6)
    assert gone.value.version == 10**6
    assert remote.latest_version == before


def test_a_request_id_makes_one_version_however_often_it_is_sent(
    remote: RemoteCatalog, local: Catalog
) -> None:
    commands = [almanac.CreateSchema("ONCE")]
    first = remote.execute(commands, request_id="schema-once-1")
    again = remote.execute(commands, request_id="schema-once-1")
    assert again == first and first.created
    assert remote.sql("CREATE SCHEMA ONCE", request_id="schema-once-1").version == first.version
    assert remote.latest_version == first.version
    with pytest.raises(almanac.ConflictError, match="schema-once-1"):
        remote.execute([almanac.CreateSchema("OTHER")], request_id="schema-once-1")
    with pytest.raises(almanac.ValidationError):
        remote.execute(commands, request_id="x" * 200)


def test_tokens_are_sent_and_refusals_are_catalog_errors(
    server: ServerProcess, remote: RemoteCatalog
) -> None:
    with almanac.connect(server.url, token=READER) as reader:
        assert reader.catalog() == remote.catalog()
        with pytest.raises(almanac.CatalogError, match="read token cannot") as weak:
            reader.sql("CREATE SCHEMA NOT_ALLOWED")
    assert weak.value.context["status"] == 403
    with (
        almanac.connect(server.url, token=None) as anonymous,
        pytest.raises(almanac.CatalogError, match="needs a bearer token") as none,
    ):
        anonymous.catalog()
    assert none.value.context["status"] == 401
