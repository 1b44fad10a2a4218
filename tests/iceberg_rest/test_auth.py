"""The Iceberg endpoints take the API's bearer tokens and roles: without a
valid token every endpoint is a 401, a read token loads but never changes,
and a refused request changes nothing."""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import ForbiddenError, UnauthorizedError

from almanac.node.catalog import Catalog
from tests.server.support import Server

from .conftest import ADMIN_TOKEN, READ_TOKEN, rest_catalog, spec_error
from .tables import SCHEMA, batch, scanned

NS = "AUTH"
TABLE = f"/v1/namespaces/{NS}/tables/T"


@pytest.fixture(scope="module")
def location(admin: RestCatalog) -> str:
    """The namespace and table the matrix aims at; the table's metadata location."""
    admin.create_namespace(NS)
    table = admin.create_table((NS, "T"), SCHEMA)
    table.append(batch([(1, "a", 1)]))
    return str(admin.load_table((NS, "T")).metadata_location)


READS: list[tuple[str, str]] = [
    ("GET", "/v1/config"),
    ("GET", "/v1/namespaces"),
    ("GET", f"/v1/namespaces/{NS}"),
    ("HEAD", f"/v1/namespaces/{NS}"),
    ("GET", f"/v1/namespaces/{NS}/tables"),
    ("GET", TABLE),
    ("GET", TABLE + "?snapshots=all"),
    ("HEAD", TABLE),
]

_CREATE = {
    "name": "NEW",
    "schema": json.loads(SCHEMA.model_dump_json(by_alias=True)),
}
WRITES: list[tuple[str, str, object]] = [
    ("POST", "/v1/namespaces", {"namespace": ["AUTH_NEW"], "properties": {}}),
    ("POST", f"/v1/namespaces/{NS}/properties", {"removals": [], "updates": {"k": "v"}}),
    ("DELETE", f"/v1/namespaces/{NS}", None),
    ("POST", f"/v1/namespaces/{NS}/tables", _CREATE),
    ("POST", f"/v1/namespaces/{NS}/tables", {**_CREATE, "stage-create": True}),
    (
        "POST",
        TABLE,
        {"requirements": [], "updates": [{"action": "set-properties", "updates": {"k": "v"}}]},
    ),
    ("DELETE", TABLE, None),
    ("DELETE", TABLE + "?purgeRequested=true", None),
    (
        "POST",
        "/v1/tables/rename",
        {
            "source": {"namespace": [NS], "name": "T"},
            "destination": {"namespace": [NS], "name": "U"},
        },
    ),
    ("POST", f"/v1/namespaces/{NS}/register", {"name": "R", "metadata-location": "LOCATION"}),
    (
        "POST",
        "/v1/transactions/commit",
        {
            "table-changes": [
                {
                    "identifier": {"namespace": [NS], "name": "T"},
                    "requirements": [],
                    "updates": [{"action": "set-properties", "updates": {"k": "v"}}],
                }
            ]
        },
    ),
]


def _send(
    client: httpx.Client, method: str, path: str, body: object, location: str
) -> httpx.Response:
    content = None
    if body is not None:
        content = json.dumps(body).replace("LOCATION", location).encode()
    headers = {"content-type": "application/json"} if content is not None else {}
    return client.request(method, path, content=content, headers=headers)


def _state(admin: RestCatalog, cat: Catalog) -> tuple[object, ...]:
    cat.catch_up()
    table = admin.load_table((NS, "T"))
    return (
        cat.latest_version,
        sorted(admin.list_namespaces()),
        sorted(admin.list_tables(NS)),
        admin.load_namespace_properties(NS),
        table.metadata_location,
        table.properties,
    )


@pytest.mark.parametrize("token", [None, "not-a-token", READ_TOKEN + "x", "Basic"])
def test_without_a_valid_token_every_endpoint_is_401_and_changes_nothing(
    token: str | None,
    http: Callable[[str | None], httpx.Client],
    admin: RestCatalog,
    cat: Catalog,
    location: str,
) -> None:
    client = http(token)
    before = _state(admin, cat)
    for method, path in READS:
        response = client.request(method, path)
        if method == "HEAD":
            assert response.status_code == 401, (method, path)
        else:
            spec_error(response, 401)
    for method, path, body in WRITES:
        spec_error(_send(client, method, path, body, location), 401)
    assert _state(admin, cat) == before


def test_a_read_token_reads_every_endpoint_but_changes_none(
    http: Callable[[str | None], httpx.Client], admin: RestCatalog, cat: Catalog, location: str
) -> None:
    client = http(READ_TOKEN)
    before = _state(admin, cat)
    for method, path in READS:
        response = client.request(method, path)
        assert response.status_code in ((204,) if method == "HEAD" else (200,)), (
            method,
            path,
            response.text,
        )
    for method, path, body in WRITES:
        error = spec_error(_send(client, method, path, body, location), 403)
        assert "read" in error["message"].lower(), error
    assert _state(admin, cat) == before


def test_an_admin_token_reads_every_endpoint(
    http: Callable[[str | None], httpx.Client], location: str
) -> None:
    client = http(ADMIN_TOKEN)
    for method, path in READS:
        response = client.request(method, path)
        assert response.status_code in ((204,) if method == "HEAD" else (200,)), (method, path)


def test_pyiceberg_clients_get_their_own_auth_errors(
    server: Server, reader: RestCatalog, admin: RestCatalog, location: str
) -> None:
    with pytest.raises(UnauthorizedError):
        rest_catalog(server, None)
    with pytest.raises(UnauthorizedError):
        rest_catalog(server, "wrong-token")
    table = reader.load_table((NS, "T"))
    rows = scanned(table)
    with pytest.raises(ForbiddenError):
        table.append(batch([(99, "z", 9)]))
    with pytest.raises(ForbiddenError):
        reader.create_namespace("AUTH_READER")
    with pytest.raises(ForbiddenError), table.update_schema() as update:
        update.delete_column("QTY")
    assert scanned(admin.load_table((NS, "T"))) == rows
    assert not admin.namespace_exists("AUTH_READER")
