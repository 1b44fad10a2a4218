"""Lookups of a namespace that does not exist, multi-level ones included (a
namespace is one catalog schema), answer the spec's 404s: NoSuchNamespace
where the spec names a namespace, NoSuchTable where it names a table.
Iceberg's Java client (so Spark) reads ``alm.db.t.snapshots`` as table
``snapshots`` of namespace ``db.t`` and falls back to the metadata table
only on NoSuchTable; it sends ``RENAME TO alm.db.x`` with the catalog name
as a first level. Creating a multi-level namespace is a 400."""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import BadRequestError, NoSuchNamespaceError, NoSuchTableError

from almanac.node.catalog import Catalog

from .conftest import ADMIN_TOKEN, spec_error
from .tables import SCHEMA, batch, scanned

Client = Callable[[str | None], httpx.Client]
NS = "NSL"
SEP = "%1F"
MISSING = ["NOPE", f"{NS}{SEP}T", f"ALM{SEP}{NS}", f"{NS}{SEP}T{SEP}X"]
"""A missing namespace, a table's name as a second level (Spark's
``db.t.snapshots``), the catalog name as a first level, three levels."""


@pytest.fixture(scope="module")
def table(admin: RestCatalog) -> None:
    admin.create_namespace(NS)
    admin.create_table((NS, "T"), SCHEMA).append(batch([(1, "a", 1)]))


def _body(namespace: str, name: str) -> dict[str, object]:
    return {"namespace": namespace.split(SEP), "name": name}


@pytest.mark.usefixtures("table")
@pytest.mark.parametrize("namespace", MISSING)
def test_every_lookup_in_a_missing_namespace_is_the_specs_404(
    http: Client, cat: Catalog, namespace: str
) -> None:
    client = http(ADMIN_TOKEN)
    cat.catch_up()
    version = cat.latest_version
    path = f"/v1/namespaces/{namespace}"
    calls: list[tuple[httpx.Response, str]] = [
        (client.get(path), "NoSuchNamespaceException"),
        (client.delete(path), "NoSuchNamespaceException"),
        (
            client.post(f"{path}/properties", json={"updates": {"a": "1"}}),
            "NoSuchNamespaceException",
        ),
        (client.get(f"{path}/tables"), "NoSuchNamespaceException"),
        (
            client.get("/v1/namespaces", params={"parent": namespace.replace(SEP, "\x1f")}),
            "NoSuchNamespaceException",
        ),
        (
            client.post(
                f"{path}/tables",
                json={"name": "U", "schema": json.loads(SCHEMA.model_dump_json(by_alias=True))},
            ),
            "NoSuchNamespaceException",
        ),
        (
            client.post(
                f"{path}/register",
                json={"name": "U", "metadata-location": "/nowhere.json", "overwrite": False},
            ),
            "NoSuchNamespaceException",
        ),
        (client.get(f"{path}/tables/snapshots"), "NoSuchTableException"),
        (
            client.post(f"{path}/tables/snapshots", json={"updates": [], "requirements": []}),
            "NoSuchTableException",
        ),
        (client.delete(f"{path}/tables/snapshots"), "NoSuchTableException"),
        (
            client.delete(f"{path}/tables/snapshots", params={"purgeRequested": "true"}),
            "NoSuchTableException",
        ),
        (
            client.post(
                "/v1/tables/rename",
                json={"source": _body(namespace, "T"), "destination": _body(NS, "U")},
            ),
            "NoSuchTableException",
        ),
        (
            client.post(
                "/v1/tables/rename",
                json={"source": _body(NS, "T"), "destination": _body(namespace, "U")},
            ),
            "NoSuchNamespaceException",
        ),
        (
            client.post(
                "/v1/transactions/commit",
                json={
                    "table-changes": [
                        {
                            "identifier": _body(namespace, "snapshots"),
                            "requirements": [],
                            "updates": [],
                        }
                    ]
                },
            ),
            "NoSuchTableException",
        ),
    ]
    for response, kind in calls:
        where = f"{response.request.method} {response.request.url}"
        assert spec_error(response, 404)["type"] == kind, where
    assert client.head(path).status_code == 404
    assert client.head(f"{path}/tables/snapshots").status_code == 404
    cat.catch_up()
    assert cat.latest_version == version


@pytest.mark.usefixtures("table")
def test_a_table_name_as_a_namespace_level_is_no_such_table(admin: RestCatalog) -> None:
    """What Iceberg's Java client does with ``db.t.snapshots``: a load that
    raises NoSuchTable, then the base table loads."""
    with pytest.raises(NoSuchTableError):
        admin.load_table((NS, "T", "snapshots"))
    assert not admin.table_exists((NS, "T", "snapshots"))
    with pytest.raises(NoSuchTableError):
        admin.drop_table((NS, "T", "snapshots"))
    assert scanned(admin.load_table((NS, "T"))) == [(1, "a", 1)]
    with pytest.raises(NoSuchNamespaceError):
        admin.list_tables((NS, "T"))
    with pytest.raises(NoSuchNamespaceError):
        admin.load_namespace_properties((NS, "T"))
    assert not admin.namespace_exists((NS, "T"))


@pytest.mark.usefixtures("table")
def test_a_rename_to_the_catalog_qualified_name_is_no_such_namespace(
    http: Client, cat: Catalog
) -> None:
    """Spark's ``ALTER TABLE alm.NSL.T RENAME TO alm.NSL.X`` sends the
    destination ``alm.NSL`` / ``X`` (pyiceberg checks the namespace first,
    so the request goes out raw)."""
    body = {"source": _body(NS, "T"), "destination": {"namespace": ["ALM", NS], "name": "X"}}
    renamed = http(ADMIN_TOKEN).post("/v1/tables/rename", json=body)
    error = spec_error(renamed, 404)
    assert error["type"] == "NoSuchNamespaceException" and "'ALM.NSL'" in error["message"]
    cat.catch_up()
    assert cat.catalog().table("T", NS) is not None and cat.catalog().table("X", NS) is None


def test_a_multi_level_namespace_is_not_created(
    admin: RestCatalog, http: Client, cat: Catalog
) -> None:
    cat.catch_up()
    version = cat.latest_version
    with pytest.raises(BadRequestError, match="exactly one level"):
        admin.create_namespace(("NSA", "B"))
    refused = http(ADMIN_TOKEN).post("/v1/namespaces", json={"namespace": []})
    assert "exactly one level" in spec_error(refused, 400)["message"]
    cat.catch_up()
    assert cat.latest_version == version and cat.catalog().schema("NSA") is None
