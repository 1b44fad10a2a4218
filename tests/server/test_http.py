"""The HTTP API through a real uvicorn process: auth, endpoints, error
statuses, the event stream, and what the server logs."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest

from almanac.access.connection import open_catalog
from almanac.serialization import decode_catalog
from tests.waiting import PATIENCE, wait_for

from .conftest import ADMIN_TOKEN, READ_TOKEN
from .support import EventReader, Server, reached

WRONG_TOKEN = "admin-0000000000000000"


@pytest.fixture(scope="module")
def admin(server: Server) -> Iterator[httpx.Client]:
    with server.client(ADMIN_TOKEN) as client:
        yield client


@pytest.fixture(scope="module")
def reader(server: Server) -> Iterator[httpx.Client]:
    with server.client(READ_TOKEN) as client:
        yield client


@pytest.fixture(scope="module")
def table_t(admin: httpx.Client) -> int:
    r = admin.post(
        "/v1/sql",
        json={"sql": "CREATE TABLE IF NOT EXISTS T (ID INT64 PRIMARY KEY, NAME VARCHAR(20))"},
    )
    assert r.status_code == 200, r.text
    return int(r.json()["version"])


def _sql(client: httpx.Client, text: str, **extra: object) -> httpx.Response:
    return client.post("/v1/sql", json={"sql": text, **extra})


# --------------------------------------------------------------------------- service


def test_health_and_ready_need_no_token(server: Server) -> None:
    with server.client() as anon:
        assert anon.get("/health").json() == {"status": "ok"}
        ready = anon.get("/ready")
        assert ready.status_code == 200
        assert ready.json()["ready"] is True and ready.json()["version"] >= 1


# --------------------------------------------------------------------------- auth matrix

READS: list[tuple[str, str, object]] = [
    ("GET", "/v1/catalog", None),
    ("GET", "/v1/catalog/snapshot", None),
    ("GET", "/v1/tables/PUBLIC/T", None),
    ("GET", "/v1/history", None),
    ("GET", "/v1/diff?from=1", None),
    ("POST", "/v1/sql", {"sql": ""}),  # an empty script changes nothing: a read token may
    ("POST", "/v1/sql", {"sql": "SHOW TABLES"}),
    ("POST", "/v1/sql", {"sql": "DESCRIBE TABLE T"}),
]
CHANGES: list[tuple[str, str, object]] = [
    ("POST", "/v1/sql", {"sql": "CREATE SCHEMA IF NOT EXISTS AUTH_S"}),
    (
        "POST",
        "/v1/commands",
        {"commands": [{"kind": "CreateSchema", "name": "AUTH_S", "if_not_exists": True}]},
    ),
]


def _call(server: Server, method: str, path: str, body: object, **kwargs: Any) -> httpx.Response:
    with httpx.Client(base_url=server.url, timeout=PATIENCE) as client:
        return client.request(method, path, json=body, **kwargs)


@pytest.mark.parametrize(("method", "path", "body"), READS + CHANGES)
def test_no_token_and_a_wrong_token_are_401(
    server: Server, table_t: int, method: str, path: str, body: object
) -> None:
    for headers in (
        {},
        {"Authorization": f"Bearer {WRONG_TOKEN}"},
        {"Authorization": f"Basic {ADMIN_TOKEN}"},
    ):
        r = _call(server, method, path, body, headers=headers)
        assert r.status_code == 401, (headers, r.text)
        assert r.headers["WWW-Authenticate"].startswith("Bearer")
        assert r.json()["error"] == "Unauthorized"


@pytest.mark.parametrize(("method", "path", "body"), READS)
def test_read_and_admin_tokens_may_read(
    server: Server, table_t: int, method: str, path: str, body: object
) -> None:
    for token in (READ_TOKEN, ADMIN_TOKEN):
        r = _call(server, method, path, body, headers={"Authorization": f"Bearer {token}"})
        assert r.status_code == 200, r.text


@pytest.mark.parametrize(("method", "path", "body"), CHANGES)
def test_a_read_token_cannot_change_and_an_admin_token_can(
    server: Server, method: str, path: str, body: object
) -> None:
    r = _call(server, method, path, body, headers={"Authorization": f"Bearer {READ_TOKEN}"})
    assert r.status_code == 403, r.text
    assert r.json()["error"] == "Forbidden"
    assert "insufficient_scope" in r.headers["WWW-Authenticate"]
    r = _call(server, method, path, body, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    assert r.status_code == 200, r.text


def test_the_cookie_is_honoured_for_reads_only(server: Server, table_t: int) -> None:
    cookies = {"almanac_token": ADMIN_TOKEN}
    with httpx.Client(base_url=server.url, timeout=PATIENCE, cookies=cookies) as browser:
        assert browser.get("/v1/catalog").status_code == 200
        change = browser.post("/v1/sql", json={"sql": "CREATE SCHEMA IF NOT EXISTS COOKIE_S"})
        assert change.status_code == 401, change.text
    with httpx.Client(
        base_url=server.url, timeout=PATIENCE, cookies={"almanac_token": WRONG_TOKEN}
    ) as browser:
        assert browser.get("/v1/catalog").status_code == 401


def test_the_event_stream_needs_a_token(server: Server) -> None:
    with httpx.Client(base_url=server.url, timeout=PATIENCE) as anon:
        assert anon.get("/v1/events").status_code == 401
    with server.client(READ_TOKEN) as reader, reader.stream("GET", "/v1/events?after=0") as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")


# --------------------------------------------------------------------------- endpoints


def test_sql_and_commands_make_versions(admin: httpx.Client, reader: httpx.Client) -> None:
    r = _sql(admin, "CREATE SCHEMA EP; CREATE TABLE EP.A (ID INT64 PRIMARY KEY)")
    assert r.status_code == 200 and r.json()["columns"] == [] and r.json()["rows"] == []
    v = r.json()["version"]
    body = {
        "commands": [
            {
                "kind": "CreateTable",
                "schema": "EP",
                "name": "B",
                "columns": [
                    {"name": "ID", "type": "INT64", "nullable": False},
                    {
                        "name": "PRICE",
                        "type": "DECIMAL",
                        "precision": 10,
                        "scale": 2,
                        "default": {"value": "1.50", "as": "decimal"},
                    },
                ],
                "primary_key": ["ID"],
            },
            {
                "kind": "CreateIndex",
                "schema": "EP",
                "name": "B_PRICE",
                "table": "B",
                "columns": ["PRICE"],
                "index_kind": "SORTED",
            },
            {"kind": "CreateSchema", "name": "EP", "if_not_exists": True},
        ]
    }
    r = admin.post("/v1/commands", json=body)
    assert r.status_code == 200, r.text
    assert r.json() == {"version": v + 1, "applied": [True, True, False], "created": True}
    table = reader.get("/v1/tables/EP/B").json()
    assert table["version"] == v + 1 and table["schema"] == "EP"
    columns = {c["name"]: c for c in table["table"]["columns"]}
    assert columns["PRICE"]["default"] == {"value": "1.50", "as": "decimal"}
    assert [i["name"] for i in table["indexes"]] == ["B_PK", "B_PRICE"]
    summary = reader.get("/v1/catalog").json()
    assert {"EP.A", "EP.B"} <= {f"{t['schema']}.{t['name']}" for t in summary["tables"]}
    before = reader.get("/v1/catalog", params={"version": v}).json()
    assert "B" not in {t["name"] for t in before["tables"] if t["schema"] == "EP"}
    at = reader.get("/v1/catalog", params={"timestamp": summary["activated_at"]}).json()
    assert at["version"] == summary["version"]


def test_read_statements_answer_rows(reader: httpx.Client, table_t: int) -> None:
    r = _sql(reader, f"DESCRIBE TABLE T AS OF VERSION {table_t}")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["version"] == table_t
    assert body["columns"][:3] == ["NAME", "TYPE", "NULLABLE"]
    assert [row[0] for row in body["rows"]] == ["ID", "NAME"]
    history = _sql(reader, "SHOW HISTORY LIMIT 2").json()
    assert history["columns"] == ["VERSION", "ACTIVATED_AT", "NODE", "SUMMARY"]
    assert len(history["rows"]) == 2 and history["rows"][0][0] > history["rows"][1][0]
    assert _sql(reader, "SHOW TABLES; SHOW SCHEMAS").status_code == 400


def test_the_snapshot_is_the_version_byte_for_byte(
    server_dir: Path, reader: httpx.Client, table_t: int
) -> None:
    r = reader.get("/v1/catalog/snapshot", params={"version": table_t})
    assert r.headers["content-type"] == "application/octet-stream"
    assert int(r.headers["X-Almanac-Version"]) == table_t
    with open_catalog(str(server_dir / "catalog")) as local:
        assert decode_catalog(r.content) == local.catalog(table_t)


def test_history_and_diff(admin: httpx.Client, reader: httpx.Client) -> None:
    v = _sql(admin, "CREATE TABLE HD (ID INT64 PRIMARY KEY)", request_id="hist-1").json()["version"]
    w = _sql(admin, "ALTER TABLE HD ADD COLUMN X INT32").json()["version"]
    history = reader.get("/v1/history", params={"since": v, "limit": 2}).json()
    assert [e["version"] for e in history["versions"]] == [v, w]
    first = history["versions"][0]
    assert first["request_id"] == "hist-1" and first["node"]
    assert "PUBLIC.HD" in first["summary"]
    assert {
        "type": "TABLE_CREATE",
        "object_id": first["events"][0]["object_id"],
        "data_commit": None,
    } in first["events"]
    newest = reader.get("/v1/history", params={"limit": 1}).json()["versions"]
    assert [e["version"] for e in newest] == [w]
    diff = reader.get("/v1/diff", params={"from": v, "to": w}).json()
    assert diff["added"] == [
        {"kind": "column", "id": 1, "name": "PUBLIC.HD.X", "definition": "INT32"}
    ]
    back = reader.get("/v1/diff", params={"from": w, "to": v}).json()
    assert back["removed"] == diff["added"]


def test_a_request_id_applies_once(admin: httpx.Client) -> None:
    first = _sql(admin, "CREATE SCHEMA ONCE", request_id="once-1")
    again = _sql(admin, "CREATE SCHEMA ONCE", request_id="once-1")
    assert first.status_code == again.status_code == 200
    assert again.json() == first.json()
    other = _sql(admin, "CREATE SCHEMA TWICE", request_id="once-1")
    assert other.status_code == 409, other.text
    assert other.json()["error"] == "ConflictError" and "once-1" in other.json()["message"]


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "error"),
    [
        ("POST", "/v1/sql", {"sql": "CREATE TABLE ("}, 400, "SqlParseError"),
        ("POST", "/v1/sql", {"sql": "DROP TABLE NOPE"}, 404, "NotFoundError"),
        (
            "POST",
            "/v1/sql",
            {"sql": "CREATE TABLE T (ID INT64 PRIMARY KEY)"},
            409,
            "AlreadyExistsError",
        ),
        ("POST", "/v1/sql", {"sql": 5}, 400, "ValidationError"),
        ("POST", "/v1/sql", {"sql": "CREATE SCHEMA X", "request_id": ""}, 400, "ValidationError"),
        ("POST", "/v1/sql", {}, 400, "ValidationError"),
        ("POST", "/v1/commands", {"commands": [{"kind": "Nope"}]}, 400, "ValidationError"),
        (
            "POST",
            "/v1/commands",
            {"commands": [{"kind": "CreateSchema", "name": ""}]},
            400,
            "ValidationError",
        ),
        (
            "POST",
            "/v1/commands",
            {"commands": [{"kind": "DropTable", "name": "NOPE"}]},
            404,
            "NotFoundError",
        ),
        ("GET", "/v1/catalog?version=999999", None, 404, "VersionNotFoundError"),
        ("GET", "/v1/catalog?version=x", None, 400, "ValidationError"),
        ("GET", "/v1/catalog?version=99999999999999999999", None, 400, "ValidationError"),
        (
            "GET",
            "/v1/catalog?version=1&timestamp=2026-01-01T00:00:00Z",
            None,
            400,
            "ValidationError",
        ),
        ("GET", "/v1/catalog?timestamp=yesterday", None, 400, "ValidationError"),
        ("GET", "/v1/catalog?timestamp=2026-01-01T00:00:00", None, 400, "ValidationError"),
        ("GET", "/v1/tables/PUBLIC/NOPE", None, 404, "NotFoundError"),
        ("GET", "/v1/tables/NOPE/T", None, 404, "NotFoundError"),
        ("GET", "/v1/history?limit=0", None, 400, "ValidationError"),
        ("GET", "/v1/diff", None, 400, "ValidationError"),
        ("GET", "/v1/diff?from=1&to=999999", None, 404, "VersionNotFoundError"),
        ("GET", "/v1/nothing", None, 404, "NotFoundError"),
    ],
)
def test_errors_have_their_status_and_shape(
    admin: httpx.Client, table_t: int, method: str, path: str, body: object, status: int, error: str
) -> None:
    r = admin.request(method, path, json=body)
    assert r.status_code == status, r.text
    payload = r.json()
    assert set(payload) == {"error", "message", "details"}
    assert payload["error"] == error and payload["message"]
    assert isinstance(payload["details"], dict)


def test_a_malformed_json_body_is_400(admin: httpx.Client) -> None:
    r = admin.post("/v1/sql", content=b"{not json", headers={"content-type": "application/json"})
    assert r.status_code == 400 and r.json()["error"] == "ValidationError"


# --------------------------------------------------------------------------- events


def test_events_resume_without_loss_or_duplicate_while_ddl_runs(
    server: Server, server_dir: Path, admin: httpx.Client
) -> None:
    start = admin.get("/v1/catalog").json()["version"]
    total = 30
    done = threading.Event()

    def ddl() -> None:
        # Half through the server, half from another node on the same catalog,
        # which reaches the server through its log follower.
        with open_catalog(str(server_dir / "catalog")) as other:
            for i in range(total // 2):
                assert (
                    _sql(admin, f"CREATE TABLE EV_H{i} (ID INT64 PRIMARY KEY)").status_code == 200
                )
                other.sql(f"CREATE TABLE EV_O{i} (ID INT64 PRIMARY KEY)")
        done.set()

    writer = threading.Thread(target=ddl)
    end = start + total
    seen: list[int] = []
    first = EventReader(server, READ_TOKEN, params={"after": start})
    writer.start()
    try:
        wait_for(lambda: len(first.events) >= 2, "the first events")
        first.close()
        seen.extend(v for v, _ in first.events)
        reconnects = 0
        while seen[-1] < end:
            # ?after=0 is there to show that the header wins on a reconnect.
            stream = EventReader(
                server, READ_TOKEN, headers={"Last-Event-ID": str(seen[-1])}, params={"after": 0}
            )
            wait_for(partial(reached, stream, 3, end), "events after a reconnect")
            stream.close()
            seen.extend(v for v, _ in stream.events)
            reconnects += 1
    finally:
        writer.join(PATIENCE)
    assert done.is_set()
    assert seen == list(range(start + 1, end + 1)), seen
    assert reconnects >= 3
    assert all(data["summary"] for _, data in stream.events)


def test_a_stream_without_a_resume_point_starts_after_the_latest_version(
    server: Server, admin: httpx.Client
) -> None:
    stream = EventReader(server, READ_TOKEN)
    try:
        wait_for(lambda: stream.comments >= 1, "the stream to be open")  # the first keep-alive
        made = _sql(admin, "CREATE SCHEMA FROM_NOW").json()["version"]
        wait_for(lambda: bool(stream.events), "the new version's event")
    finally:
        stream.close()
    assert stream.events[0][0] == made


def test_an_idle_stream_sends_keep_alive_comments(server: Server) -> None:
    stream = EventReader(server, READ_TOKEN, params={"keepalive": 0.1, "after": 10**9})
    try:
        wait_for(lambda: stream.comments >= 2, "keep-alive comments")
    finally:
        stream.close()


def _raw_stream(server: Server) -> socket.socket:
    """An event stream on a bare socket, read up to its first bytes; an idle
    stream (no keep-alive for minutes) that only the disconnect can end."""
    url = httpx.URL(server.url)
    sock = socket.create_connection((url.host, url.port), timeout=PATIENCE)
    sock.sendall(
        f"GET /v1/events?after=1000000000&keepalive=300 HTTP/1.1\r\nHost: {url.host}\r\n"
        f"Authorization: Bearer {READ_TOKEN}\r\n\r\n".encode()
    )
    assert sock.recv(4096).startswith(b"HTTP/1.1 200")
    return sock


def test_a_client_that_goes_away_ends_its_stream(server: Server) -> None:
    with server.client() as anon:

        def open_streams() -> int:
            return int(anon.get("/ready").json()["event_streams"])

        wait_for(lambda: open_streams() == 0, "earlier streams to end")
        socks = [_raw_stream(server) for _ in range(3)]
        wait_for(lambda: open_streams() == 3, "three open streams")
        for sock in socks:
            sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        wait_for(lambda: open_streams() == 0, "the server to notice the clients left")


def test_a_truncated_resume_point_gets_an_error_event_and_the_stream_ends(
    server: Server, server_dir: Path, admin: httpx.Client, reader: httpx.Client
) -> None:
    assert _sql(admin, "CREATE SCHEMA TRUNC1").status_code == 200
    with open_catalog(str(server_dir / "catalog")) as other:
        earliest = other.checkpoint_log()
    assert earliest > 2
    wait_for(
        lambda: reader.get("/v1/history", params={"limit": 1}).json()["earliest"] >= earliest,
        "the server to see the checkpoint",
    )
    stream = EventReader(server, READ_TOKEN, params={"after": 1})
    try:
        wait_for(lambda: stream.ended, "the stream to end")
    finally:
        stream.close()
    assert stream.events == []
    [error] = stream.errors
    assert error["status"] == 410 and error["error"] == "VersionNotFoundError"
    gone = reader.get("/v1/catalog", params={"version": 1})
    assert gone.status_code == 410 and gone.json()["details"]["earliest"] >= earliest
    assert reader.get("/v1/diff", params={"from": 1}).status_code == 410


# --------------------------------------------------------------------------- logs


def test_tokens_never_reach_the_log(server: Server, table_t: int) -> None:
    """Runs after the auth tests in this module: every token was sent."""
    for token in (ADMIN_TOKEN, READ_TOKEN, WRONG_TOKEN):
        _call(server, "GET", "/v1/catalog", None, headers={"Authorization": f"Bearer {token}"})
        _call(server, "GET", f"/v1/catalog?token={token}", None)
    log = server.log_text()
    assert "GET /v1/catalog 200" in log and "GET /v1/catalog 401" in log  # the log is there
    for token in (ADMIN_TOKEN, READ_TOKEN, WRONG_TOKEN):
        assert token not in log
        assert token[-8:] not in log


def test_soft_delete_and_recover_over_http(admin: httpx.Client) -> None:
    r = _sql(admin, "CREATE TABLE SOFT (ID INT64 PRIMARY KEY)")
    assert r.status_code == 200, r.text
    drop = {"kind": "DropTable", "name": "SOFT", "reserve_s": 3600}
    r = admin.post("/v1/commands", json={"commands": [drop]})
    assert r.status_code == 200, r.text
    assert admin.get("/v1/tables/PUBLIC/SOFT").status_code == 404
    r = _sql(admin, "CREATE TABLE SOFT (ID INT64 PRIMARY KEY)")
    assert r.status_code == 409 and "soft-deleted" in r.text, r.text
    r = admin.post(
        "/v1/commands",
        json={"commands": [{"kind": "RecoverTable", "name": "SOFT", "new_name": "SOFT2"}]},
    )
    assert r.status_code == 200, r.text
    assert admin.get("/v1/tables/PUBLIC/SOFT2").status_code == 200
    r = _sql(admin, "DROP TABLE SOFT2 WITH (RESERVE = '1m'); PURGE TABLE SOFT2")
    assert r.status_code == 200, r.text
    assert admin.get("/v1/tables/PUBLIC/SOFT2").status_code == 404


def test_any_spelling_of_a_table_finds_it(admin: httpx.Client, reader: httpx.Client) -> None:
    """SQL folds ``sales.orders`` to ``SALES.ORDERS``; the HTTP API finds
    it by any spelling and shows its stored names, and a command making a
    case-only twin is a 409 that changes nothing."""
    r = _sql(admin, "CREATE SCHEMA sales; CREATE TABLE sales.orders (id INT64 PRIMARY KEY)")
    assert r.status_code == 200, r.text
    version = r.json()["version"]
    for schema, name in [("sales", "orders"), ("SALES", "ORDERS"), ("Sales", "Orders")]:
        found = reader.get(f"/v1/tables/{schema}/{name}")
        assert found.status_code == 200, (schema, name, found.text)
        assert found.json()["schema"] == "SALES" and found.json()["table"]["name"] == "ORDERS"
    twin = admin.post(
        "/v1/commands", json={"commands": [{"kind": "CreateSchema", "name": "sales"}]}
    )
    assert twin.status_code == 409, twin.text
    assert "already exists as 'SALES'" in twin.text
    assert reader.get("/v1/catalog").json()["version"] == version
