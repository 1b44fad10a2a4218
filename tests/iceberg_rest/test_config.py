"""``GET /v1/config``: the endpoints it advertises are the ones served, its
defaults keep engines from deleting files (``gc.enabled=false``), and its
``warehouse`` query is the spec's: the catalog's own warehouse, however
spelled, or a 404 NoSuchWarehouse."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from pyiceberg.catalog.rest import ConfigResponse, RestCatalog
from pyiceberg.exceptions import RESTError

from almanac.data import TableData
from almanac.node.catalog import Catalog
from tests.server.support import Server

from .conftest import ADMIN_TOKEN, PREFIX, READ_TOKEN, rest_catalog, spec_error
from .tables import SCHEMA

Client = Callable[[str | None], httpx.Client]
NS = "CFG"


def _config(client: httpx.Client, **params: str) -> ConfigResponse:
    response = client.get("/v1/config", params=params)
    assert response.status_code == 200, response.text
    return ConfigResponse.model_validate_json(response.text)


def test_every_advertised_endpoint_is_served_and_every_served_one_advertised(
    server: Server, http: Client, admin: RestCatalog, cat: Catalog
) -> None:
    admin.create_namespace(NS)
    admin.create_table((NS, "T"), SCHEMA)
    client = http(ADMIN_TOKEN)
    advertised = sorted(
        _config(client).endpoints or (), key=lambda e: (e.http_method == "DELETE", str(e))
    )
    documented = server.client().get("/openapi.json").json()["paths"]
    routes = {
        f"{method.upper()} /v1/{{prefix}}{path.removeprefix(PREFIX + '/v1')}"
        for path, operations in documented.items()
        if path.startswith(f"{PREFIX}/v1/") and path != f"{PREFIX}/v1/config"
        for method in operations
    }
    assert {str(e) for e in advertised} == routes
    cat.catch_up()
    pinned = f"v{cat.latest_version}"
    for endpoint in advertised:  # deletes last: they name the table the others use
        path = endpoint.path.replace("{namespace}", NS).replace("{table}", "T")
        method = endpoint.http_method.value
        body: dict[str, object] | None = {} if method == "POST" else None
        # At a pinned prefix too: a read answers, a change is refused as read-only.
        response = client.request(method, path.replace("{prefix}", pinned), json=body)
        assert response.status_code == (
            200 if method == "GET" else 204 if method == "HEAD" else 403
        ), (str(endpoint), response.text)
        response = client.request(method, path.replace("/{prefix}", ""), json=body)
        assert response.status_code not in (404, 405), (str(endpoint), response.text)


def test_the_defaults_keep_engines_from_deleting_files(http: Client) -> None:
    config = _config(http(READ_TOKEN))
    assert (config.defaults or {}).get("table-default.gc.enabled") == "false"


def test_the_warehouse_query_names_the_catalogs_own(http: Client, cat: Catalog) -> None:
    client = http(READ_TOKEN)
    served = TableData.for_catalog(cat).warehouse
    root = Path(served.root)
    for spelled in (served.uri, f"{served.uri}/", f"file://{root}", f"file://{root}/./"):
        assert _config(client, warehouse=spelled).endpoints, spelled
    for other in ("elsewhere", str(root.parent), f"{root}-other", "s3://bucket/wh", ""):
        error = spec_error(client.get("/v1/config", params={"warehouse": other}), 404)
        assert error["type"] == "NoSuchWarehouseException", other
        assert repr(other) in error["message"] or f"'{other}'" in error["message"]


def test_a_client_naming_the_warehouse_works_and_another_is_refused(
    server: Server, cat: Catalog
) -> None:
    properties = {**rest_catalog(server).properties}
    properties["warehouse"] = TableData.for_catalog(cat).warehouse.uri
    RestCatalog("almanac", **properties).list_namespaces()
    properties["warehouse"] = "elsewhere"
    with pytest.raises(RESTError, match="'elsewhere' is not served here"):
        RestCatalog("almanac", **properties)
