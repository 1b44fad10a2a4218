"""Name limits through the Iceberg REST API: a name over the length limit,
or with nothing visible in it, is a 400 that changes nothing; the longest
legal names can be created, loaded and written through REST."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import NamespaceAlreadyExistsError, TableAlreadyExistsError

from almanac.commands.base import MAX_NAME_BYTES
from almanac.node.catalog import Catalog

from .conftest import ADMIN_TOKEN, spec_error
from .tables import SCHEMA, batch, scanned

Client = Callable[[str | None], httpx.Client]

TOO_LONG = "N" * (MAX_NAME_BYTES + 1)
REFUSED = [
    (TOO_LONG, "name-length"),
    ("T" * 100_000, "name-length"),
    ("\u200b", "name-visible"),
    ("\ufeff\u200b", "name-visible"),
]


@pytest.fixture(scope="module")
def client(http: Client) -> httpx.Client:
    return http(ADMIN_TOKEN)


@pytest.fixture(scope="module")
def names_namespace(admin: RestCatalog) -> str:
    admin.create_namespace("NAMES")
    return "NAMES"


def _create_table_body(name: str) -> dict[str, Any]:
    return {"name": name, "schema": SCHEMA.model_dump(by_alias=True)}


@pytest.mark.parametrize(("name", "rule"), REFUSED, ids=["256-bytes", "100k", "zwsp", "bom"])
def test_a_bad_name_is_a_400_through_rest_and_changes_nothing(
    client: httpx.Client, cat: Catalog, names_namespace: str, name: str, rule: str
) -> None:
    cat.catch_up()
    version = cat.latest_version
    error = spec_error(client.post("/v1/namespaces", json={"namespace": [name]}), 400)
    assert "Schema name" in error["message"]
    created = client.post(f"/v1/namespaces/{names_namespace}/tables", json=_create_table_body(name))
    error = spec_error(created, 400)
    assert "Table name" in error["message"]
    assert len(error["message"]) < 400  # the start of a long name, not all of it
    expected = "at most" if rule == "name-length" else "no visible character"
    assert expected in error["message"]
    cat.catch_up()
    assert cat.latest_version == version


def test_the_longest_names_are_reachable_through_rest(admin: RestCatalog, cat: Catalog) -> None:
    """255 UTF-8 bytes each (a 2-byte character repeated, then one byte):
    percent-encoded in the URL path, the namespace and table still route."""
    longest = "\u00e9" * (MAX_NAME_BYTES // 2) + "x"
    namespace = "\u00e9" * (MAX_NAME_BYTES // 2) + "y"
    admin.create_namespace(namespace)
    table = admin.create_table((namespace, longest), SCHEMA)
    table.append(batch([(1, "a", 1)]))
    assert scanned(admin.load_table((namespace, longest))) == [(1, "a", 1)]
    assert (namespace, longest) in admin.list_tables(namespace)
    cat.catch_up()
    assert cat.catalog().table(longest, namespace) is not None


@pytest.mark.parametrize("name", [".", ".."])
def test_a_dot_segment_name_is_a_400_through_rest_and_changes_nothing(
    client: httpx.Client, admin: RestCatalog, cat: Catalog, names_namespace: str, name: str
) -> None:
    """``.`` and ``..`` travel in a JSON body but no URL path can carry them:
    clients resolve them as dot segments, so ``load_table(("NS", ".."))``
    asked for ``GET /namespaces/NS`` and ``drop_table`` became a DROP of
    the namespace. Created through REST, such a table could never be
    reached again through it."""
    source = f"DOTS{len(name)}"
    admin.create_table((names_namespace, source), SCHEMA)
    cat.catch_up()
    version = cat.latest_version
    error = spec_error(client.post("/v1/namespaces", json={"namespace": [name]}), 400)
    assert "Namespace name" in error["message"]
    created = client.post(f"/v1/namespaces/{names_namespace}/tables", json=_create_table_body(name))
    error = spec_error(created, 400)
    assert f"Table name '{name}'" in error["message"] and "path" in error["message"]
    renamed = client.post(
        "/v1/tables/rename",
        json={
            "source": {"namespace": [names_namespace], "name": source},
            "destination": {"namespace": [names_namespace], "name": name},
        },
    )
    spec_error(renamed, 400)
    cat.catch_up()
    assert cat.latest_version == version


def test_sql_and_iceberg_clients_share_one_name_rule(
    admin: RestCatalog, client: httpx.Client, cat: Catalog
) -> None:
    """``CREATE SCHEMA sales`` (stored as ``SALES``) and pyiceberg's
    ``create_namespace("sales")`` are one schema; a table SQL made is found
    by its lower-case spelling through REST and pyiceberg; a table pyiceberg
    made is found by SQL's folded spelling; case-only twins are refused."""
    cat.sql("CREATE SCHEMA rule_sales; CREATE TABLE rule_sales.orders (id BIGINT PRIMARY KEY)")
    version = cat.latest_version
    with pytest.raises(NamespaceAlreadyExistsError, match="already exists as 'RULE_SALES'"):
        admin.create_namespace("rule_sales")
    assert [n for n in admin.list_namespaces() if n[0].lower() == "rule_sales"] == [("RULE_SALES",)]
    assert client.get("/v1/namespaces/rule_sales").status_code == 200
    for path in ("rule_sales/tables/orders", "Rule_Sales/tables/ORDERS"):
        assert client.get(f"/v1/namespaces/{path}").status_code == 200, path
        assert client.head(f"/v1/namespaces/{path}").status_code == 204, path
    loaded = admin.load_table("rule_sales.orders")
    assert loaded.name() == ("rule_sales", "orders")
    assert [f.name for f in loaded.schema().fields] == ["ID"]
    with pytest.raises(TableAlreadyExistsError, match=r"already exists as 'RULE_SALES\.ORDERS'"):
        admin.create_table(("rule_sales", "Orders"), SCHEMA)
    cat.catch_up()
    assert cat.latest_version == version
    admin.create_table(("rule_sales", "events"), SCHEMA)
    cat.catch_up()
    described = cat.sql("DESCRIBE TABLE rule_sales.events")
    assert [row[0] for row in described.rows] == [f.name for f in SCHEMA.fields]
    assert [t.name for t in cat.catalog().tables("RULE_SALES")] == ["ORDERS", "events"]
