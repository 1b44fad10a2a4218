"""``http://`` targets, and ``connect`` choosing a remote catalog for them."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

import almanac
from almanac import EventType, Target, ValidationError, parse_target
from almanac.access.connection import open_catalog
from almanac.access.remote import RemoteCatalog
from almanac.metastore import InvalidArgumentError, open_metastore


@pytest.mark.parametrize(
    ("text", "url"),
    [
        ("http://127.0.0.1:8181", "http://127.0.0.1:8181"),
        ("https://catalog.example.com/", "https://catalog.example.com"),
        ("http://[::1]:80/almanac/v2/", "http://[::1]:80/almanac/v2"),
        ("http://localhost", "http://localhost"),
    ],
)
def test_http_targets_name_a_server(text: str, url: str) -> None:
    t = parse_target(text)
    assert t == Target("http", url=url) and str(t) == url and parse_target(url) == t
    assert (t.path, t.store_path, t.root, t.default_warehouse) == (None, None, None, None)
    with pytest.raises(ValidationError, match="is a server: it has no metastore"):
        _ = t.store_uri


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("http://", "not host"),
        ("http://h:0", "outside 1..65535"),
        ("http://h:65536", "outside 1..65535"),
        ("http://user@h", "user, query or fragment"),
        ("http://h/x?y=1", "user, query or fragment"),
        ("http://h#top", "user, query or fragment"),
        ("http://h/a//b", "the path"),
        ("http://h/a b", "the path"),
        ("http://[1.2]:1", "not host"),
        ("HTTP://h", "malformed"),
        ("http:/h", "malformed"),
    ],
)
def test_malformed_http_targets_are_refused(text: str, rule: str) -> None:
    with pytest.raises(ValidationError, match=rule):
        parse_target(text)


def test_connect_returns_a_remote_catalog_for_a_server() -> None:
    # no request is made until a call needs one
    with almanac.connect("http://127.0.0.1:9/x", token="secret") as remote:
        assert isinstance(remote, RemoteCatalog) and remote.url == "http://127.0.0.1:9/x"
    with almanac.connect("http://127.0.0.1:9", token=None) as remote:
        assert isinstance(remote, RemoteCatalog)
    with pytest.raises(almanac.CatalogError, match="is closed"):
        remote.catalog()


@pytest.mark.parametrize(
    ("target", "kwargs", "message"),
    [
        ("http://127.0.0.1:9", {}, "pass token= to connect"),
        ("http://127.0.0.1:9", {"token": None, "delay_ms": 1}, "'delay_ms' of connect belongs"),
        ("http://127.0.0.1:9", {"token": None, "warehouse": "/w"}, "'warehouse' of connect"),
        ("http://127.0.0.1:9", {"token": None, "request_window_s": 5}, "'request_window_s'"),
        ("http://127.0.0.1:9", {"token": ""}, "'token' of connect"),
        ("http://127.0.0.1:9", {"token": b"x"}, "'token' of connect must be a str"),
        ("http://127.0.0.1:9", {"token": "a b"}, "'token' of connect must be printable ASCII"),
        ("http://127.0.0.1:9", {"token": "a\nb"}, "'token' of connect must be printable ASCII"),
        ("http://127.0.0.1:9", {"token": "é"}, "'token' of connect must be printable ASCII"),
        ("memory://", {"token": "t"}, "'token' of connect is for a catalog server"),
        ("memory://", {"token": None}, "'token' of connect is for a catalog server"),
    ],
)
def test_connect_refuses_mixed_up_options(
    target: str, kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        almanac.connect(target, **kwargs)


def test_local_openers_refuse_a_server() -> None:
    with pytest.raises(ValidationError, match="open_catalog opens a local node"):
        open_catalog("http://127.0.0.1:9")
    with pytest.raises(InvalidArgumentError, match="names a catalog server"):
        open_metastore("http://127.0.0.1:9")


def test_a_remote_catalog_checks_its_arguments() -> None:
    with pytest.raises(ValidationError, match="needs an http"):
        RemoteCatalog("memory://")
    with pytest.raises(ValidationError, match="'timeout_s' of RemoteCatalog"):
        RemoteCatalog("http://h", timeout_s=0)
    with pytest.raises(ValidationError, match="'retry_s' of RemoteCatalog"):
        RemoteCatalog("http://h", retry_s=-1)


def test_an_unreachable_server_is_a_retryable_unavailable_error() -> None:
    with (
        RemoteCatalog("http://127.0.0.1:9", retry_s=0.3) as remote,
        pytest.raises(almanac.MetastoreUnavailableError, match="did not answer") as caught,
    ):
        remote.sql("CREATE SCHEMA S", request_id="r-1")
    assert isinstance(caught.value, almanac.RetryableError)
    assert caught.value.context["outcome"] == "unknown"
    assert caught.value.context["attempts"] >= 2


def test_wrong_arguments_are_refused_before_any_request() -> None:
    remote = RemoteCatalog("http://127.0.0.1:9", retry_s=0)
    odd: Any = "1"
    nothing: Any = None
    naive = dt.datetime(2020, 1, 1)
    calls: list[tuple[str, Any]] = [
        ("'version' of RemoteCatalog.catalog", lambda: remote.catalog(odd)),
        ("'timestamp' of RemoteCatalog.catalog_at", lambda: remote.catalog_at(naive)),
        ("'since' of RemoteCatalog.history", lambda: remote.history(True)),
        ("'v2' of RemoteCatalog.diff", lambda: remote.diff(1, odd)),
        ("'text' of RemoteCatalog.sql", lambda: remote.sql(nothing)),
        (
            "'request_id' of RemoteCatalog.sql",
            lambda: remote.sql("X", request_id=b"1" + odd.encode()),
        ),
        ("RemoteCatalog.execute", lambda: remote.execute([odd])),
        ("'event_type' of RemoteCatalog.listen", lambda: remote.listen(odd, print)),
        ("'listener' of RemoteCatalog.listen", lambda: remote.listen(EventType.TABLE_CREATE, odd)),
    ]
    for expected, call in calls:
        with pytest.raises(ValidationError, match=expected):
            call()
    remote.close()
