"""A server's error reply becomes the same ``CatalogError`` subclass on the
client, with its message, its context and the fields its class sets."""

from __future__ import annotations

import inspect

import pytest

import almanac
from almanac import errors
from almanac.access.remote import error_from_reply
from almanac.server.errors import error_body, status_of

URL = "http://127.0.0.1:1"


def _examples() -> list[errors.CatalogError]:
    return [
        almanac.NotFoundError("Table 'PUBLIC.T' does not exist", kind="table", name="T"),
        almanac.AlreadyExistsError("Schema 'S' already exists", name="S"),
        almanac.SqlParseError("Unexpected token", line=2, column=5, text="CREAT"),
        almanac.VersionNotFoundError("Catalog version 9 does not exist", version=9, earliest=1),
        almanac.VersionNotFoundError("Catalog version 1 is gone", version=1, earliest=4),
        almanac.ConflictError("Gave up after 3 attempts", attempts=3),
        almanac.WaitTimeoutError("Not ready within 1 s", awaited="ready", timeout=1.0),
        almanac.MetastoreUnavailableError("No quorum", outcome="unknown"),
        almanac.ValidationError("Column 'A' is bad", rule="type"),
        almanac.CatalogError("The catalog is closed"),
    ]


@pytest.mark.parametrize("exc", _examples(), ids=lambda e: type(e).__name__)
def test_a_server_error_comes_back_as_itself(exc: errors.CatalogError) -> None:
    status = status_of(exc)
    back = error_from_reply(status, error_body(type(exc).__name__, exc.message, exc.context), URL)
    assert type(back) is type(exc)
    assert str(back) == str(exc) and back.message == exc.message
    assert back.context == {**exc.context, "status": status}
    for name in list(inspect.signature(type(exc).__init__).parameters)[1:]:
        if name not in ("message", "context"):
            assert getattr(back, name) == getattr(exc, name), name


def test_every_error_class_can_be_rebuilt_by_name() -> None:
    for name in errors.__all__:
        back = error_from_reply(400, {"error": name, "message": "m", "details": {}}, URL)
        assert type(back) is getattr(errors, name) and back.message == "m"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"error": "Unauthorized", "message": "This request needs a bearer token"}, "bearer"),
        ({"error": "__class__", "message": "odd name"}, "odd name"),
        ({"error": "Exception", "message": "not ours"}, "not ours"),
        ({"message": 3}, "without an error body"),
        ("<html>Bad gateway</html>", "without an error body"),
        (None, "without an error body"),
    ],
)
def test_unknown_or_broken_replies_are_plain_catalog_errors(body: object, expected: str) -> None:
    back = error_from_reply(401, body, URL)
    assert type(back) is almanac.CatalogError
    assert expected in str(back) and back.context["status"] == 401


def test_auth_errors_keep_their_status() -> None:
    back = error_from_reply(403, error_body("Forbidden", "A read token cannot make changes"), URL)
    assert back.context == {"status": 403}
