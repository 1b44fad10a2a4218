"""The remote client pointed at something that is not a catalog server (a
plain ``http.server`` answering what each test sets): every call fails with
a ``CatalogError`` naming the server, within its bounds, and the event
stream's thread ends with a recorded error instead of dying."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from almanac import CatalogError, EventType, MetastoreUnavailableError
from almanac.access.remote import RemoteCatalog
from tests.waiting import wait_for

Reply = tuple[int, str, bytes]


class _Impostor(http.server.ThreadingHTTPServer):
    daemon_threads = True
    replies: dict[str, Reply]
    default: Reply = (200, "text/html", b"<html><body>It works!</body></html>")
    release: threading.Event


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _Impostor

    def _answer(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        path = self.path.partition("?")[0]
        status, ctype, body = self.server.replies.get(path, self.server.default)
        if status == 0:  # hang until the test ends
            self.server.release.wait()
            return
        self.send_response(status)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def impostor() -> Iterator[_Impostor]:
    srv = _Impostor(("127.0.0.1", 0), _Handler)
    srv.replies = {}
    srv.release = threading.Event()
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.release.set()
        srv.shutdown()
        srv.server_close()
        thread.join()


@pytest.fixture
def remote(impostor: _Impostor) -> Iterator[RemoteCatalog]:
    impostor.replies = {}
    url = f"http://127.0.0.1:{impostor.server_address[1]}"
    with RemoteCatalog(url, token="t0k3n", timeout_s=5, retry_s=0) as cat:
        yield cat


_CALLS: dict[str, Callable[[RemoteCatalog], object]] = {
    "latest_version": lambda r: r.latest_version,
    "catalog": lambda r: r.catalog(1),
    "sql-read": lambda r: r.sql("SHOW TABLES"),
    "sql-ddl": lambda r: r.sql("CREATE SCHEMA S"),
    "history": lambda r: r.history(),
    "diff": lambda r: r.diff(1, 2),
    "execute": lambda r: r.execute([]),
}
_JSON = "application/json"


@pytest.mark.parametrize(
    "reply",
    [
        (200, "text/html", b"<html>It works!</html>"),
        (200, _JSON, b"{}"),
        (200, _JSON, b"[1, 2]"),
        (200, _JSON, b'{"version": "x", "latest": "x", "versions": [{"version": "a"}]}'),
        (200, _JSON, b'{"version": 1, "columns": 5, "rows": 7, "applied": 3, "versions": 1}'),
        (404, "text/html", b"<h1>Not Found</h1>"),
        (500, _JSON, b'{"error": "NotFoundError", "message": 5}'),
        (400, _JSON, b'{"error": "__class__", "message": "m", "details": []}'),
    ],
    ids=["html", "empty-object", "array", "wrong-types", "wrong-shapes", "404", "500", "bad-error"],
)
@pytest.mark.parametrize("call", list(_CALLS), ids=list(_CALLS))
def test_a_reply_of_the_wrong_shape_is_a_catalog_error(
    impostor: _Impostor, remote: RemoteCatalog, reply: Reply, call: str
) -> None:
    impostor.default = reply
    with pytest.raises(CatalogError):
        _CALLS[call](remote)


def test_a_server_that_never_answers_is_unavailable_within_the_bounds(
    impostor: _Impostor,
) -> None:
    impostor.replies = {"/v1/sql": (0, "", b"")}
    url = f"http://127.0.0.1:{impostor.server_address[1]}"
    with (
        RemoteCatalog(url, timeout_s=0.5, retry_s=0) as remote,
        pytest.raises(MetastoreUnavailableError, match="did not answer") as caught,
    ):
        remote.sql("CREATE SCHEMA S", request_id="hang-1")
    assert caught.value.context["outcome"] == "unknown"


@pytest.mark.parametrize(
    "stream",
    [
        b"id: 5\ndata: <html>\n\n",
        b"id: 5\ndata: {}\n\n",
        b'data: {"version": 5, "events": [{"type": "TABLE_CREATE"}]}\n\n',
        b'event: error\ndata: {"status": "gone", "message": "m"}\n\n',
    ],
    ids=["not-json", "no-version", "event-without-object", "error-with-a-text-status"],
)
def test_a_garbled_event_stream_stops_with_an_error_and_close_leaves_no_thread(
    impostor: _Impostor, remote: RemoteCatalog, stream: bytes
) -> None:
    impostor.replies = {
        "/v1/history": (200, _JSON, b'{"earliest": 0, "latest": 1, "versions": []}'),
        "/v1/events": (200, "text/event-stream", stream),
    }
    heard: list[object] = []
    remote.listen(EventType.TABLE_CREATE, heard.append)
    wait_for(lambda: remote.stream_error is not None, "the stream to record its error")
    assert isinstance(remote.stream_error, CatalogError)
    assert heard == []
    remote.close()
    assert not [t for t in threading.enumerate() if t.name == "almanac-remote-events"]
