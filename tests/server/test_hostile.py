"""The HTTP API against hostile requests: whatever arrives, the answer is a
4xx in the ``{error, message, details}`` shape and the log holds no traceback."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import httpx
import pytest

from almanac.server.app import MAX_BODY_BYTES
from tests.waiting import wait_for

from .conftest import ADMIN_TOKEN
from .support import Server


@pytest.fixture(scope="module")
def admin(server: Server) -> Iterator[httpx.Client]:
    with server.client(ADMIN_TOKEN) as client:
        yield client


def _error(r: httpx.Response, status: int, error: str) -> str:
    assert r.status_code == status, r.text
    payload = r.json()
    assert set(payload) == {"error", "message", "details"} and payload["error"] == error
    return str(payload["message"])


def _padded_script(size: int) -> bytes:
    return b'{"sql": "CREATE SCHEMA BIG -- ' + b"x" * size + b'"}'


def test_a_body_over_the_limit_is_413_whether_declared_or_streamed(
    server: Server, admin: httpx.Client
) -> None:
    declared = admin.post(
        "/v1/sql",
        content=_padded_script(MAX_BODY_BYTES),
        headers={"content-type": "application/json"},
    )
    assert str(MAX_BODY_BYTES) in _error(declared, 413, "PayloadTooLarge")

    def chunks() -> Iterator[bytes]:  # no Content-Length: chunked
        body = _padded_script(MAX_BODY_BYTES)
        for start in range(0, len(body), 2**20):
            yield body[start : start + 2**20]

    streamed = admin.post("/v1/sql", content=chunks(), headers={"content-type": "application/json"})
    _error(streamed, 413, "PayloadTooLarge")
    assert admin.get("/v1/tables/BIG/T").json()["error"] == "NotFoundError"
    under = admin.post(
        "/v1/sql",
        content=_padded_script(MAX_BODY_BYTES - 100),
        headers={"content-type": "application/json"},
    )
    assert under.status_code == 200 and under.json()["version"] > 0, "the limit is the limit"
    schemas = admin.post("/v1/sql", json={"sql": "SHOW SCHEMAS"}).json()["rows"]
    assert "BIG" in [row[0] for row in schemas]


def test_deeply_nested_json_is_a_400(admin: httpx.Client) -> None:
    for body in (b"[" * 100_000 + b"]" * 100_000, b'{"commands": ' + b"[" * 5000 + b"]" * 5000):
        r = admin.post("/v1/commands", content=body, headers={"content-type": "application/json"})
        _error(r, 400, "ValidationError")


@pytest.mark.parametrize(
    ("params", "headers"),
    [
        ({"after": str(2**63 - 1)}, {}),
        ({}, {"Last-Event-ID": str(2**63 - 1)}),
        ({}, {"Last-Event-ID": "9" * 5000}),
        ({}, {"Last-Event-ID": "-1"}),
        ({"after": "-1"}, {}),
    ],
    ids=[
        "after-int64-max",
        "header-int64-max",
        "header-5000-digits",
        "header-negative",
        "after-negative",
    ],
)
def test_a_resume_point_no_version_can_follow_is_a_400(
    admin: httpx.Client, params: dict[str, str], headers: dict[str, str]
) -> None:
    with admin.stream("GET", "/v1/events", params=params, headers=headers) as r:
        r.read()
        assert "Last-Event-ID" in _error(r, 400, "ValidationError") or "after" in r.text


def test_head_answers_the_headers_of_get(server: Server, admin: httpx.Client) -> None:
    for path in ("/health", "/v1/catalog", "/v1/tables/PUBLIC/NOPE"):
        got, head = admin.get(path), admin.head(path)
        assert head.status_code == got.status_code, path
        assert head.content == b"" and head.headers["content-type"] == got.headers["content-type"]
    with server.client() as anonymous:
        assert anonymous.head("/v1/catalog").status_code == 401
    assert admin.head("/v1/events").status_code == 405


def test_a_path_no_endpoint_answers_is_named(admin: httpx.Client) -> None:
    for path in ("/v1/tables/..%2F../x", "/v1/tables/PUBLIC", "/v1/nothing"):
        message = _error(admin.get(path), 404, "NotFoundError")
        assert message.startswith("No endpoint answers GET /v1/"), message
    message = _error(admin.put("/v1/sql"), 405, "MethodNotAllowed")
    assert "PUT /v1/sql" in message


def test_a_query_parameter_given_twice_is_a_400(admin: httpx.Client) -> None:
    for query in ("version=1&version=2", "limit=1&since=0&limit=5", "from=1&to=2&from=1"):
        path = {"v": "/v1/catalog", "l": "/v1/history", "f": "/v1/diff"}[query[0]]
        message = _error(admin.get(f"{path}?{query}"), 400, "ValidationError")
        assert "given more than once" in message and query.split("=")[0] in message
    assert admin.get("/v1/history?limit=1&since=0").status_code == 200


def _assert_the_log_holds_no_traceback(server: Server, admin: httpx.Client) -> None:
    """A request of our own is logged after every request before it, so once
    it shows, every earlier answer is in the log too."""
    marker = f"/v1/no-such-path-{uuid.uuid4().hex}"
    assert admin.get(marker).status_code == 404
    wait_for(lambda: marker in server.log_text(), what="the server to log the marker request")
    log = server.log_text()
    assert "Traceback" not in log and "Exception in ASGI" not in log, log[-3000:]


@pytest.fixture(scope="module", autouse=True)
def _no_traceback_in_the_end(server: Server, admin: httpx.Client) -> Iterator[None]:
    """After this module's tests on this worker (pytest-xdist may share them
    out between workers, each with its own server): no traceback."""
    yield
    _assert_the_log_holds_no_traceback(server, admin)


def test_the_log_holds_no_traceback(server: Server, admin: httpx.Client) -> None:
    """Whichever hostile requests ran before this one on its server were
    answered without a traceback (the module's teardown checks the rest)."""
    _assert_the_log_holds_no_traceback(server, admin)
