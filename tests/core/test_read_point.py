"""One read point for every front end (``almanac.model.read_point``)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import httpx
import pytest

import almanac
from almanac.errors import ValidationError, VersionNotFoundError
from almanac.model.read_point import ReadPoint, parse_instant, read_point
from almanac.server.background import BackgroundServer


def test_a_read_point_names_a_version_an_instant_or_the_latest() -> None:
    with almanac.connect("memory://") as cat:
        for i in range(4):
            cat.sql(f"CREATE TABLE t{i} (id INT64 PRIMARY KEY)")
        history = cat.history()
        for info in history:
            assert ReadPoint(version=info.version).resolve(cat).version == info.version
            at = ReadPoint(timestamp=info.activation_time).resolve(cat)
            assert at.version == info.version
        assert ReadPoint().latest and ReadPoint().resolve(cat).version == cat.latest_version
        with pytest.raises(VersionNotFoundError, match="versions start at 1"):
            ReadPoint(version=0).resolve(cat)
        with pytest.raises(VersionNotFoundError, match="did not exist yet"):
            ReadPoint(timestamp=dt.datetime(1971, 1, 1, tzinfo=dt.UTC)).resolve(cat)
        with pytest.raises(VersionNotFoundError):
            ReadPoint(version=cat.latest_version + 1).resolve(cat)


def test_both_a_version_and_an_instant_is_refused() -> None:
    with pytest.raises(ValidationError, match="not both"):
        ReadPoint(version=1, timestamp=2)
    with pytest.raises(ValidationError, match="Give Option 'version' or Option 'timestamp'"):
        read_point("1", "2", what="Option")


@pytest.mark.parametrize(
    ("version", "timestamp", "expected"),
    [
        (None, None, ReadPoint()),
        ("7", None, ReadPoint(version=7)),
        (" 7 ", None, ReadPoint(version=7)),
        (7, None, ReadPoint(version=7)),
        (None, "123", ReadPoint(timestamp=123)),
        (
            None,
            "2026-11-23T01:02:03Z",
            ReadPoint(timestamp=dt.datetime(2026, 11, 23, 1, 2, 3, tzinfo=dt.UTC)),
        ),
    ],
)
def test_front_end_text_parses_into_a_read_point(
    version: object, timestamp: object, expected: ReadPoint
) -> None:
    assert read_point(version, timestamp, what="Option") == expected


@pytest.mark.parametrize(
    ("version", "timestamp", "message"),
    [
        ("x", None, "Option 'version' must be a catalog version number, got 'x'"),
        ("-1", None, "Option 'version' must be a catalog version number"),
        (True, None, "Option 'version' must be an int"),
        (1.5, None, "Option 'version' must be an int"),
        (None, "soon", "Option 'timestamp' must be an ISO-8601 instant"),
        (None, "2026-11-23T01:02:03", "has no UTC offset: end it with Z or +HH:MM"),
        (None, "1960-01-01T00:00:00Z", "is outside the hybrid clock's range"),
        (None, dt.datetime(2026, 1, 1), "naive datetimes are refused"),
        (None, b"1", "Option 'timestamp' must be a hybrid timestamp"),
    ],
)
def test_bad_front_end_input_is_a_validation_error_naming_it(
    version: object, timestamp: object, message: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        read_point(version, timestamp, what="Option")
    assert message in caught.value.message


def test_an_instant_keeps_the_context_its_front_end_gives() -> None:
    with pytest.raises(ValidationError) as caught:
        parse_instant("noon", "Query parameter 'timestamp'", parameter="timestamp")
    assert caught.value.context["parameter"] == "timestamp"


def test_the_console_reads_a_version_as_sql_does(tmp_path: Path) -> None:
    """Version 0 is the empty catalog before ``init``: a console page or diff
    that names it is a 404 saying so, as ``AS OF VERSION 0`` is in SQL."""
    with almanac.connect(tmp_path / "catalog") as cat:
        cat.sql("CREATE TABLE t (id INT64 PRIMARY KEY)")
        with pytest.raises(VersionNotFoundError, match="versions start at 1"):
            cat.sql("SHOW TABLES AS OF VERSION 0")
        server = BackgroundServer(cat).start()
        auth = {"Authorization": f"Bearer {server.token}"}
        try:
            with httpx.Client(base_url=server.url, headers=auth) as http:
                assert http.get("/?version=1").status_code == 200
                for path in ("/?version=0", "/tables/PUBLIC/T?version=0", "/diff?from=0&to=2"):
                    page = http.get(path)
                    assert page.status_code == 404, (path, page.status_code)
                    assert "versions start at 1" in page.text, path
        finally:
            server.stop()
