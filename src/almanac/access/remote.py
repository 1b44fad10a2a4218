"""A catalog on another machine, reached over the HTTP API of ``almanac serve``.

``almanac.connect("http://host:8181", token=...)`` returns a
``RemoteCatalog``: the calls of a local catalog (``sql``, ``execute``,
``catalog``, ``catalog_at``, ``history``, ``diff``, ``listen``), answered by
the server. Catalog versions arrive in the binary serialization the nodes
store, so ``remote.catalog(v)`` equals the server's ``cat.catalog(v)``; they
are immutable, so a few are kept by version.

Errors the server reports arrive as the same ``CatalogError`` subclass, by
name, with its message and context: ``except almanac.NotFoundError`` works
remotely. A server that cannot be reached, or answers 502/503/504, is tried
again with backoff for ``retry_s`` seconds; after that the call raises
``MetastoreUnavailableError`` (a ``RetryableError``: the catalog was not
reachable, try again later), the server's own error for a 503.

Retries never apply a change twice: every ``execute`` and ``sql`` carries a
request id (a fresh uuid4 unless the caller gives one), and the server
answers a request id it already committed with the original result. A
server killed between its commit and its reply is thus retried safely.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import inspect
import json
import logging
import random
import socket
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any

from almanac import _check as check
from almanac import errors
from almanac.access.sse import parse_sse
from almanac.access.tokens import check_token
from almanac.commands.base import Command
from almanac.commands.preview import command_batch
from almanac.errors import (
    CatalogError,
    MetastoreUnavailableError,
    ValidationError,
    VersionNotFoundError,
)
from almanac.model.catalog_version import DEFAULT_SCHEMA, CatalogVersion
from almanac.model.clock import physical_ms
from almanac.model.diff import CatalogDiff
from almanac.model.entries import TableDataCommitted
from almanac.model.events import EventType
from almanac.model.targets import Target, parse_target
from almanac.node.catalog_types import ExecuteResult
from almanac.serialization import decode_catalog
from almanac.sql.results import SqlResult

if TYPE_CHECKING:
    import httpx

__all__ = [
    "RemoteCatalog",
    "RemoteEvent",
    "RemoteListener",
    "RemoteVersionInfo",
    "error_from_reply",
]

_log = logging.getLogger("almanac.remote")

DEFAULT_TIMEOUT_S = 60.0
"""The bound of one HTTP request (a DDL waits for its version to be visible)."""
DEFAULT_RETRY_S = 30.0
"""How long a call keeps retrying an unreachable or unavailable server."""
_CACHED_VERSIONS = 32
_BACKOFF_FIRST_S = 0.05
_BACKOFF_MAX_S = 2.0
_RETRY_STATUS = frozenset({502, 503, 504})
_STREAM_READ_S = 300.0
_HISTORY_PAGE = 1000
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


@dataclass(frozen=True, slots=True)
class RemoteVersionInfo:
    """One version of ``RemoteCatalog.history``: the fields of a local
    ``VersionInfo`` and its ``node`` and ``request_id``, with the one-line
    ``summary`` of what it changed and its ``events``, each an event type and
    object id (a local ``VersionInfo`` holds the stored update instead, which
    the HTTP API does not send). ``data_commits`` are the version's data
    commits, one per ``DATA_COMMIT`` event, in the same order."""

    version: int
    commit_time: int
    activation_time: int
    node: str
    request_id: str | None
    summary: str
    events: tuple[tuple[EventType, int], ...] = ()
    data_commits: tuple[TableDataCommitted, ...] = ()


@dataclass(frozen=True, slots=True)
class RemoteEvent:
    """One change of one object in one version, from the server's event
    stream (a local ``Event`` also holds the update entry and the metastore
    revision, which the stream does not send)."""

    type: EventType
    version: int
    object_id: int
    node: str
    request_id: str | None
    data_commit: TableDataCommitted | None = None
    """A ``DATA_COMMIT`` event's commit: snapshot, metadata, operation, counts."""


RemoteListener = Callable[[RemoteEvent], None]


def error_from_reply(status: int, body: object, url: str) -> CatalogError:
    """The ``CatalogError`` a server's error reply stands for: the class it
    names (``CatalogError`` for a name this release does not know), with the
    server's message and context, and the fields its constructor sets."""
    if not isinstance(body, Mapping) or not isinstance(body.get("message"), str):
        return CatalogError(
            f"The catalog server at {url} answered HTTP {status} without an error body",
            status=status,
            url=url,
        )
    name = body.get("error")
    found = getattr(errors, name, None) if isinstance(name, str) else None
    cls = (
        found
        if isinstance(found, type) and issubclass(found, CatalogError) and name in errors.__all__
        else CatalogError
    )
    details = body.get("details")
    context: dict[str, Any] = dict(details) if isinstance(details, Mapping) else {}
    exc = cls.__new__(cls)
    Exception.__init__(exc, body["message"])
    exc.message = body["message"]
    exc.context = context
    for param in list(inspect.signature(cls.__init__).parameters)[1:]:
        if param in context:
            setattr(exc, param, context[param])
        elif param not in ("message", "context") and not hasattr(exc, param):
            setattr(exc, param, None)
    exc.context.setdefault("status", status)
    return exc


class RemoteCatalog:
    """A catalog served by ``almanac serve``, over HTTP; safe to share
    between threads. ``token`` is sent as ``Authorization: Bearer``;
    ``timeout_s`` bounds one HTTP request, ``retry_s`` how long a call keeps
    retrying a server that is down or unavailable. ``on_retry(failure,
    seconds_left)`` hears of each retry before its pause, so that a front end
    can say it is still trying instead of staying silent."""

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        retry_s: float = DEFAULT_RETRY_S,
        on_retry: Callable[[str, float], object] | None = None,
    ) -> None:
        target = parse_target(url)
        if target.kind != "http":
            raise ValidationError(
                f"A remote catalog needs an http:// or https:// target, got '{target}'",
                target=str(target),
                rule="remote-target",
            )
        if token is not None:
            check_token(token, "Parameter 'token' of RemoteCatalog")
        check.number(timeout_s, "Parameter 'timeout_s' of RemoteCatalog", positive=True)
        check.number(retry_s, "Parameter 'retry_s' of RemoteCatalog", lo=0)
        if on_retry is not None:
            check.callable_(on_retry, "Parameter 'on_retry' of RemoteCatalog")
        self._on_retry = on_retry
        self.target: Target = target
        self.url = target.url
        """The server's base address."""
        self.retry_s = float(retry_s)
        import httpx  # here, not at the top: ``import almanac`` stays light

        self._headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
        self._timeout = httpx.Timeout(float(timeout_s), connect=min(float(timeout_s), 10.0))
        self._http = httpx.Client(base_url=self.url, headers=self._headers, timeout=self._timeout)
        self._cache: OrderedDict[int, CatalogVersion] = OrderedDict()
        self._lock = threading.Lock()
        self._listeners: dict[EventType, tuple[RemoteListener, ...]] = {}
        self._stream: _EventStream | None = None
        self._closed = False

    # -- plumbing ------------------------------------------------------------

    def _request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str | int] | None = None,
        body: object = None,
    ) -> httpx.Response:
        """One call: retried on a broken connection or 502/503/504 until
        ``retry_s``; an error reply becomes its ``CatalogError``."""
        import httpx

        self._check_open()
        deadline = time.monotonic() + self.retry_s
        backoff = _BACKOFF_FIRST_S
        attempts = 0
        while True:
            attempts += 1
            failure: str
            reply: httpx.Response | None = None
            try:
                reply = self._http.request(method, path, params=params, json=body)
            except httpx.TransportError as exc:
                failure = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            else:
                if reply.status_code < 400:
                    return reply
                if reply.status_code not in _RETRY_STATUS:
                    raise self._error(reply)
                failure = f"HTTP {reply.status_code}"
            self._check_open()
            left = deadline - time.monotonic()
            if left <= 0:
                if reply is not None and _json(reply) is not None:
                    raise self._error(reply)
                raise MetastoreUnavailableError(
                    f"The catalog server at {self.url} did not answer {method} {path} "
                    f"after {attempts} attempts in {self.retry_s:g} s ({failure})",
                    url=self.url,
                    attempts=attempts,
                    outcome="unknown" if method == "POST" else "none",
                )
            if self._on_retry is not None:
                self._on_retry(failure, left)
            pause = max(random.uniform(backoff / 2, backoff), _retry_after(reply))
            time.sleep(min(pause, left))
            backoff = min(backoff * 2, _BACKOFF_MAX_S)

    def _error(self, reply: httpx.Response) -> CatalogError:
        return error_from_reply(reply.status_code, _json(reply), self.url)

    def _json(self, reply: httpx.Response) -> dict[str, Any]:
        body = _json(reply)
        if not isinstance(body, dict):
            raise CatalogError(
                f"The catalog server at {self.url} answered {reply.request.url.path} "
                "with something that is not a JSON object",
                url=self.url,
            )
        return body

    def _check_open(self) -> None:
        if self._closed:
            raise CatalogError(f"The remote catalog {self.url} is closed")

    # -- writing -------------------------------------------------------------

    def execute(
        self, commands: Iterable[Command], *, request_id: str | None = None
    ) -> ExecuteResult:
        """Apply the commands in order as one version on the server, or not
        at all (see ``Catalog.execute``). Retried under one request id, so
        the version is made once however often the request is sent."""
        from almanac.serialization.commands_json import command_to_json

        batch = command_batch(commands, "RemoteCatalog.execute")
        rid = _request_id(request_id, "RemoteCatalog.execute")
        body = {"commands": [command_to_json(c) for c in batch], "request_id": rid}
        out = self._json(self._request("POST", "/v1/commands", body=body))
        with _readable(self.url, "/v1/commands"):
            return ExecuteResult(
                version=int(out["version"]),
                applied=tuple(bool(a) for a in out["applied"]),
                created=bool(out["created"]),
            )

    def sql(
        self, text: str, *, default_schema: str = DEFAULT_SCHEMA, request_id: str | None = None
    ) -> SqlResult:
        """Run a DDL script as one version, or one read statement, on the
        server (see ``Catalog.sql``); a script is retried under one request id."""
        check.string(text, "Parameter 'text' of RemoteCatalog.sql", nul_ok=True)
        check.string(
            default_schema, "Parameter 'default_schema' of RemoteCatalog.sql", nonblank=True
        )
        rid = _request_id(request_id, "RemoteCatalog.sql")
        body = {"sql": text, "default_schema": default_schema, "request_id": rid}
        out = self._json(self._request("POST", "/v1/sql", body=body))
        with _readable(self.url, "/v1/sql"):
            return SqlResult(
                version=int(out["version"]),
                columns=tuple(str(c) for c in out.get("columns") or ()),
                rows=tuple(tuple(row) for row in out.get("rows") or ()),
            )

    # -- reading -------------------------------------------------------------

    @property
    def latest_version(self) -> int:
        """The server's latest version (asked for on every read)."""
        reply = self._request("GET", "/v1/history", params={"limit": 1})
        with _readable(self.url, "/v1/history"):
            return int(self._json(reply)["latest"])

    @property
    def earliest_version(self) -> int:
        """The server's earliest available version (asked for on every read)."""
        reply = self._request("GET", "/v1/history", params={"limit": 1})
        with _readable(self.url, "/v1/history"):
            return int(self._json(reply)["earliest"])

    def catalog(self, version: int | None = None) -> CatalogVersion:
        """The latest version, or exactly ``version``, as the server holds it."""
        check.optional_int(version, "Parameter 'version' of RemoteCatalog.catalog")
        if version is None:
            version = self.latest_version  # a small answer; the version may be cached
        with self._lock:
            cached = self._cache.get(version)
            if cached is not None:
                self._cache.move_to_end(version)
                return cached
        reply = self._request("GET", "/v1/catalog/snapshot", params={"version": version})
        found = decode_catalog(reply.content)
        if found.version != version:
            raise CatalogError(
                f"The catalog server at {self.url} answered version {found.version} "
                f"when asked for version {version}",
                url=self.url,
                version=version,
            )
        with self._lock:
            kept = self._cache.setdefault(found.version, found)
            self._cache.move_to_end(found.version)
            while len(self._cache) > _CACHED_VERSIONS:
                self._cache.popitem(last=False)
        return kept

    def catalog_at(self, timestamp: int | dt.datetime) -> CatalogVersion:
        """The newest version active at ``timestamp`` (a hybrid timestamp, or
        an aware datetime), as the server finds it."""
        what = "Parameter 'timestamp' of RemoteCatalog.catalog_at"
        ts = check.timestamp(timestamp, what)
        # The API takes an instant to the millisecond (the newest version active
        # by its end, as a local catalog reads a datetime); a hybrid timestamp
        # within that millisecond may come before that version's activation.
        moment = timestamp if isinstance(timestamp, dt.datetime) else _instant(ts)
        try:
            reply = self._request("GET", "/v1/catalog", params={"timestamp": moment.isoformat()})
        except VersionNotFoundError as exc:
            if exc.context.get("version") != 0:
                raise
            return self.catalog(0)  # before the first version, as Catalog.catalog_at
        out = self._json(reply)
        with _readable(self.url, "/v1/catalog"):
            version = int(out["version"])
            activation_time = int(out["activation_time"])
        if activation_time > ts:
            version = self._active_before(version, ts)
        return self.catalog(version)

    def _active_before(self, newer: int, ts: int) -> int:
        """The newest version before ``newer`` active at ``ts``, from the
        history of the versions just before it."""
        while True:
            since = max(newer - 16, 0)
            reply = self._request("GET", "/v1/history", params={"since": since, "limit": 16})
            out = self._json(reply)
            with _readable(self.url, "/v1/history"):
                infos = [_version_info(v) for v in out["versions"]]
                earliest = int(out["earliest"])
            active = [i.version for i in infos if i.version < newer and i.activation_time <= ts]
            if active:
                return max(active)
            if since <= earliest:
                raise VersionNotFoundError(
                    f"No available catalog version was active at timestamp {ts}; the earliest "
                    f"available version is {earliest}",
                    version=-1,
                    earliest=earliest,
                )
            newer = since

    def history(self, since: int = 1) -> list[RemoteVersionInfo]:
        """What each available version from ``since`` on changed, oldest first."""
        check.integer(since, "Parameter 'since' of RemoteCatalog.history")
        found: list[RemoteVersionInfo] = []
        while True:
            params = {"since": since, "limit": _HISTORY_PAGE}
            out = self._json(self._request("GET", "/v1/history", params=params))
            with _readable(self.url, "/v1/history"):
                page = [_version_info(v) for v in out["versions"]]
                latest = int(out["latest"])
            found += page
            if not page or page[-1].version >= latest or page[-1].version < since:
                return found
            since = page[-1].version + 1

    def diff(self, v1: int, v2: int) -> CatalogDiff:
        """What changed between two available versions (see ``Catalog.diff``)."""
        check.integer(v1, "Parameter 'v1' of RemoteCatalog.diff")
        check.integer(v2, "Parameter 'v2' of RemoteCatalog.diff")
        reply = self._request("GET", "/v1/diff", params={"from": v1, "to": v2})
        return CatalogDiff.from_json(self._json(reply))

    # -- events --------------------------------------------------------------

    def listen(self, event_type: EventType, listener: RemoteListener) -> None:
        """Call ``listener`` with a ``RemoteEvent`` for every event of
        ``event_type`` of the versions made from now on.

        Listeners run on one thread that follows the server's event stream,
        version after version in entry order. When the stream breaks (the
        server restarts, a proxy drops it) the thread reconnects from the
        last version it delivered, so no event is lost or repeated."""
        check.enum_member(event_type, EventType, "Parameter 'event_type' of RemoteCatalog.listen")
        check.callable_(listener, "Parameter 'listener' of RemoteCatalog.listen")
        self._check_open()
        with self._lock:
            start = self._stream is None
        after = self.latest_version if start else 0
        with self._lock:
            self._listeners[event_type] = (*self._listeners.get(event_type, ()), listener)
            if self._stream is None:
                self._stream = _EventStream(self, after)

    def unlisten(self, event_type: EventType, listener: RemoteListener) -> None:
        check.enum_member(event_type, EventType, "Parameter 'event_type' of RemoteCatalog.unlisten")
        check.callable_(listener, "Parameter 'listener' of RemoteCatalog.unlisten")
        with self._lock:
            current = self._listeners.get(event_type, ())
            self._listeners[event_type] = tuple(x for x in current if x != listener)

    @property
    def stream_error(self) -> CatalogError | None:
        """Why the event stream stopped for good (the server no longer holds
        the versions it would resume from), or None while it runs."""
        stream = self._stream
        return None if stream is None else stream.error

    def _deliver(self, message: dict[str, Any]) -> None:
        version = int(message["version"])
        node = str(message.get("node") or "")
        rid = message.get("request_id")
        for item in message.get("events") or ():
            try:
                kind = EventType(item["type"])
            except ValueError:
                continue  # an event type of a newer server release
            object_id = int(item["object_id"])
            data = _data_commit(item, object_id)
            for listener in self._listeners.get(kind, ()):
                event = RemoteEvent(kind, version, object_id, node, rid, data)
                try:
                    listener(event)
                except BaseException:
                    _log.exception(
                        "Listener %r failed on %s of version %d", listener, kind.value, version
                    )

    # -- lifecycle -----------------------------------------------------------

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            stream, self._stream = self._stream, None
        if stream is not None:
            stream.stop()
        self._http.close()

    def __enter__(self) -> RemoteCatalog:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"RemoteCatalog({self.url!r})"


class _EventStream:
    """The thread that follows ``GET /v1/events`` for a remote catalog's
    listeners, resuming after the last version it delivered."""

    def __init__(self, owner: RemoteCatalog, after: int) -> None:
        self._owner = owner
        self.after = after
        self.error: CatalogError | None = None
        self._stopped = threading.Event()
        self._socket: socket.socket | None = None
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="almanac-remote-events", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        import httpx

        owner = self._owner
        timeout = httpx.Timeout(owner._timeout.connect, read=_STREAM_READ_S)
        backoff = _BACKOFF_FIRST_S
        with httpx.Client(base_url=owner.url, headers=owner._headers, timeout=timeout) as http:
            while not self._stopped.is_set():
                try:
                    self._follow(http)
                    backoff = _BACKOFF_FIRST_S
                except httpx.TransportError as exc:
                    _log.debug("Event stream of %s broke: %s", owner.url, exc)
                except CatalogError as exc:
                    self.error = exc
                    _log.error("Event stream of %s stopped: %s", owner.url, exc)
                    return
                if self._stopped.wait(random.uniform(backoff / 2, backoff)):
                    return
                backoff = min(backoff * 2, _BACKOFF_MAX_S)

    def _follow(self, http: httpx.Client) -> None:
        """One connection: deliver each version after ``after`` until it breaks."""
        import httpx

        headers = {"Last-Event-ID": str(self.after), "Accept": "text/event-stream"}
        with http.stream("GET", "/v1/events", headers=headers) as reply:
            if reply.status_code >= 400:
                reply.read()
                if reply.status_code in _RETRY_STATUS:
                    raise httpx.RemoteProtocolError(f"HTTP {reply.status_code}")
                raise self._owner._error(reply)
            stream = reply.extensions.get("network_stream")
            with self._lock:
                self._socket = None if stream is None else stream.get_extra_info("socket")
            if self._stopped.is_set():
                return
            for message in parse_sse(reply.iter_lines()):
                if self._stopped.is_set():
                    return
                if message.event == "error":
                    raise _stream_error(message.data, self._owner.url)
                if message.event != "message":
                    continue
                with _readable(self._owner.url, "/v1/events"):
                    body = json.loads(message.data)
                    version = int(body["version"])
                    if version <= self.after:
                        continue  # already delivered before a reconnect
                    self._owner._deliver(body)
                self.after = version

    def stop(self) -> None:
        self._stopped.set()
        with self._lock:
            sock = self._socket
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)  # wakes the thread blocked reading it
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=10)


def _stream_error(data: str, url: str) -> CatalogError:
    try:
        body = json.loads(data)
    except ValueError:
        body = None
    status = body.get("status") if isinstance(body, dict) else None
    return error_from_reply(status if type(status) is int else 410, body, url)


@contextlib.contextmanager
def _readable(url: str, path: str) -> Iterator[None]:
    """Reading a reply's fields: one of the wrong shape (another service on
    that port, a proxy's page, a newer server) is a ``CatalogError`` naming
    the server, not a ``KeyError`` from deep inside the client."""
    try:
        yield
    except CatalogError:
        raise
    except (AttributeError, KeyError, IndexError, TypeError, ValueError) as exc:
        raise CatalogError(
            f"The catalog server at {url} answered {path} with a reply this client cannot "
            f"read ({type(exc).__name__}: {str(exc)[:100]})",
            url=url,
            path=path,
        ) from exc


def _instant(ts: int) -> dt.datetime:
    """The millisecond of a hybrid timestamp, exactly (no float on the way)."""
    return _EPOCH + dt.timedelta(milliseconds=physical_ms(ts))


def _retry_after(reply: httpx.Response | None) -> float:
    """The seconds a 503's ``Retry-After`` asks for (0 when it names none, or
    a date, or an unreasonable wait: the caller's deadline bounds it anyway)."""
    text = "" if reply is None else reply.headers.get("retry-after", "")
    return float(text) if text.isascii() and text.isdigit() and len(text) < 6 else 0.0


def _json(reply: httpx.Response) -> object:
    try:
        return reply.json()
    except ValueError:
        return None


def _request_id(request_id: object, what: str) -> str:
    given = check.optional_str(request_id, f"Parameter 'request_id' of {what}")
    return str(uuid.uuid4()) if given is None else given


def _version_info(item: Mapping[str, Any]) -> RemoteVersionInfo:
    return RemoteVersionInfo(
        version=int(item["version"]),
        commit_time=int(item["commit_time"]),
        activation_time=int(item["activation_time"]),
        node=str(item.get("node") or ""),
        request_id=item.get("request_id"),
        summary=str(item.get("summary") or ""),
        events=tuple(
            (EventType(event["type"]), int(event["object_id"])) for event in item.get("events", ())
        ),
        data_commits=tuple(
            data
            for event in item.get("events", ())
            if (data := _data_commit(event, int(event["object_id"]))) is not None
        ),
    )


def _data_commit(event: Mapping[str, Any], table_id: int) -> TableDataCommitted | None:
    """The data commit an event of the API carries (``events.event_json``),
    None for other events and from a server that does not send it."""
    data = event.get("data_commit")
    if not isinstance(data, Mapping):
        return None
    return TableDataCommitted(
        table_id,
        int(data["snapshot_id"]),
        str(data["operation"]),
        str(data["metadata"]),
        rows_added=int(data["rows_added"]),
        rows_removed=int(data["rows_removed"]),
        files_added=int(data["files_added"]),
        files_removed=int(data["files_removed"]),
    )
