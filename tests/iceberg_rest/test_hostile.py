"""The Iceberg endpoints against hostile requests: every answer is a 4xx in
the spec's error model, nothing changes, and no name escapes the warehouse."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from pyiceberg.catalog.rest import RestCatalog

from almanac.node.catalog import Catalog
from almanac.server.app import MAX_BODY_BYTES
from tests.server.support import Server

from .conftest import ADMIN_TOKEN, spec_error
from .tables import SCHEMA, batch, scanned

Client = Callable[[str | None], httpx.Client]
JSON = {"content-type": "application/json"}


@pytest.fixture(scope="module")
def client(http: Client) -> httpx.Client:
    return http(ADMIN_TOKEN)


@pytest.fixture(scope="module")
def host(admin: RestCatalog) -> None:
    """The namespace and table the hostile requests aim at."""
    admin.create_namespace("HOST")
    admin.create_table(("HOST", "T"), SCHEMA).append(batch([(1, "a", 1)]))


@pytest.fixture(autouse=True)
def nothing_changes(
    host: None, admin: RestCatalog, cat: Catalog, server: Server
) -> Iterator[list[int]]:
    """Every hostile request leaves the catalog and the table as they were,
    and puts no traceback in the server's log. Yields a counter of the
    versions a test makes on purpose (a legal odd name)."""
    cat.catch_up()
    version = cat.latest_version
    logged = len(server.log_text())
    made = [0]
    yield made
    cat.catch_up()
    assert cat.latest_version == version + made[0]
    assert scanned(admin.load_table(("HOST", "T"))) == [(1, "a", 1)]
    assert "Traceback" not in server.log_text()[logged:]


@pytest.mark.parametrize(
    "path",
    [
        "/v1/namespaces/..%2F..%2Fetc/tables/T",
        "/v1/namespaces/HOST/tables/..%2F..%2Fpasswd",
        "/v1/namespaces/HOST%00/tables/T",
        "/v1/namespaces/HOST/tables/T%00",
        "/v1/namespaces/%1F/tables/T",
        "/v1/namespaces/HOST%1FX%1FY/tables/T",
        "/v1/namespaces/" + "N" * 20_000 + "/tables/T",
        "/v1/namespaces/%FF%FE/tables/T",
    ],
)
def test_a_hostile_path_is_a_4xx_in_the_error_model(client: httpx.Client, path: str) -> None:
    response = client.get(path)
    assert 400 <= response.status_code < 500, (path[:80], response.status_code)
    spec_error(response, response.status_code)
    dropped = client.delete(path)
    assert 400 <= dropped.status_code < 500, path[:80]
    spec_error(dropped, dropped.status_code)


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"{",
        b"[]",
        b"null",
        b'{"namespace": "HOST2"}',
        b'{"namespace": [1]}',
        b'{"namespace": []}',
        b'{"namespace": ["A\\u0000B"]}',
        b'{"namespace": ["\\ud800"]}',
        b'{"namespace": ["P"], "properties": {"k": 1}}',
        b'{"namespace": ["P"], "properties": []}',
        b"\xff\xfe{}",
        b"[" * 100_000 + b"]" * 100_000,
    ],
    ids=lambda b: repr(b[:30]),
)
def test_a_malformed_namespace_body_is_a_400(client: httpx.Client, body: bytes) -> None:
    response = client.post("/v1/namespaces", content=body, headers=JSON)
    spec_error(response, 400)


@pytest.mark.parametrize(
    "change",
    [
        {"updates": [{"action": "no-such-action"}]},
        {"updates": [{"action": "set-properties", "updates": "x"}]},
        {"requirements": [{"type": "no-such-requirement"}], "updates": []},
        {"updates": [{"action": "remove-schemas", "schema-ids": [0]}]},
        {"updates": [{"action": "set-location", "location": "/tmp/elsewhere"}]},
        {"updates": [{"action": "upgrade-format-version", "format-version": 1}]},
        {"updates": [{"action": "assign-uuid", "uuid": "00000000-0000-0000-0000-000000000000"}]},
    ],
    ids=lambda c: json.dumps(c)[:60],
)
def test_a_commit_the_catalog_cannot_take_is_a_4xx_and_changes_nothing(
    http: Client, change: dict[str, object]
) -> None:
    response = http(ADMIN_TOKEN).post(
        "/v1/namespaces/HOST/tables/T", content=json.dumps(change).encode(), headers=JSON
    )
    assert response.status_code in (400, 409), response.text
    spec_error(response, response.status_code)


def test_a_body_over_the_limit_is_a_413_in_the_error_model(client: httpx.Client) -> None:
    big = b'{"namespace": ["BIG"], "properties": {"x": "' + b"x" * MAX_BODY_BYTES + b'"}}'
    spec_error(client.post("/v1/namespaces", content=big, headers=JSON), 413)

    def chunks() -> Iterator[bytes]:  # no Content-Length: chunked
        for start in range(0, len(big), 2**20):
            yield big[start : start + 2**20]

    spec_error(client.post("/v1/namespaces", content=chunks(), headers=JSON), 413)


def test_a_name_like_a_path_stays_inside_the_warehouse(
    admin: RestCatalog, client: httpx.Client, target: str, nothing_changes: list[int]
) -> None:
    """``../x`` is a legal quoted name: the table's files go under ids, never
    under the name; or the name is refused with a 400. (A bare ``..`` cannot
    be sent: HTTP clients resolve it as a dot segment of the URL.)"""
    created = client.post("/v1/namespaces", json={"namespace": ["../x"]})
    if created.status_code == 400:
        spec_error(created, 400)
        return
    assert created.status_code == 200, created.text
    nothing_changes[0] = 1  # CREATE SCHEMA
    table = admin.create_table(("../x", "../y"), SCHEMA)
    table.append(batch([(5, "e", 5)]))
    nothing_changes[0] = 2  # CREATE SCHEMA, CREATE TABLE
    assert scanned(admin.load_table(("../x", "../y"))) == [(5, "e", 5)]
    assert ("../x", "../y") in admin.list_tables("../x")
    root = (Path(target) / "warehouse").resolve()
    locations = [table.metadata_location] + [
        task.file.file_path for task in table.scan().plan_files()
    ]
    for location in locations:
        path = Path(location.removeprefix("file://")).resolve()
        assert path.is_relative_to(root), location
    assert not (Path(target) / "x").exists() and not (Path(target) / "y").exists()
