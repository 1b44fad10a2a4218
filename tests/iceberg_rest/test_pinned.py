"""The catalog pinned at a version over Iceberg REST: pyiceberg's own
``RestCatalog`` with ``warehouse=@v<V>`` reads every table as of catalog
version V while writers go on, and every change through it is refused as
read-only; a version that is not held is a clear refusal."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import ForbiddenError, NoSuchTableError, RESTError

from almanac.data import TableData
from almanac.iceberg_rest.pinned import split_warehouse
from almanac.node.catalog import Catalog
from tests.server.support import Server
from tests.waiting import wait_for

from .conftest import ADMIN_TOKEN, PREFIX, own_server, rest_catalog, spec_error
from .tables import SCHEMA, batch, scanned

Client = Callable[[str | None], httpx.Client]
NS = "PIN"


def _pinned(server: Server, warehouse: str) -> RestCatalog:
    """pyiceberg's client of the pinned warehouse, with the admin token: the
    refusals are the pin's, not the token's."""
    properties = {**rest_catalog(server).properties, "warehouse": warehouse}
    with warnings.catch_warnings():  # a token without an OAuth2 server URI is deprecated
        warnings.simplefilter("ignore", DeprecationWarning)
        return RestCatalog("pinned", **properties)


def _latest(cat: Catalog) -> int:
    cat.catch_up()
    return cat.latest_version


def test_a_pinned_warehouse_reads_every_table_as_of_its_version(
    server: Server, admin: RestCatalog, cat: Catalog
) -> None:
    admin.create_namespace(NS)
    a = admin.create_table((NS, "A"), SCHEMA)
    b = admin.create_table((NS, "B"), SCHEMA)
    empty = admin.create_table((NS, "E"), SCHEMA)
    a.append(batch([(1, "a1", 1), (2, "a2", 2)]))
    b.append(batch([(10, "b1", 10)]))
    v = _latest(cat)
    at_v = {"A": scanned(a), "B": scanned(b)}
    pinned = _pinned(server, f"@v{v}")

    # Writers go on: appends, a delete, a first append, a new table, a rename.
    a.append(batch([(3, "a3", 3)]))
    b.append(batch([(11, "b2", 11)]))
    b.delete("ID = 10")
    empty.append(batch([(20, "e", 20)]))
    admin.create_table((NS, "C"), SCHEMA)
    admin.rename_table((NS, "B"), (NS, "B2"))
    admin.create_namespace(f"{NS}_LATER")
    a.transaction().set_properties({"stage": "later"}).commit_transaction()

    assert scanned(pinned.load_table((NS, "A"))) == at_v["A"] == [(1, "a1", 1), (2, "a2", 2)]
    assert scanned(pinned.load_table((NS, "B"))) == at_v["B"] == [(10, "b1", 10)]
    not_yet = pinned.load_table((NS, "E"))  # no data at V: no current snapshot
    assert not_yet.current_snapshot() is None and scanned(not_yet) == []
    assert sorted(t for _, t in pinned.list_tables(NS)) == ["A", "B", "E"]
    assert "stage" not in pinned.load_table((NS, "A")).properties
    assert admin.load_table((NS, "A")).properties["stage"] == "later"
    assert (f"{NS}_LATER",) not in pinned.list_namespaces()
    assert (f"{NS}_LATER",) in admin.list_namespaces()
    with pytest.raises(NoSuchTableError):
        pinned.load_table((NS, "C"))
    assert pinned.table_exists((NS, "B")) and not pinned.table_exists((NS, "B2"))
    # The latest catalog goes on beside it.
    assert scanned(admin.load_table((NS, "A"))) == [(1, "a1", 1), (2, "a2", 2), (3, "a3", 3)]
    assert scanned(admin.load_table((NS, "B2"))) == [(11, "b2", 11)]
    # The warehouse may be spelled out before the version.
    served = TableData.for_catalog(cat).warehouse.uri
    assert scanned(_pinned(server, f"{served}@v{v}").load_table((NS, "B"))) == at_v["B"]


def test_every_change_at_a_pinned_prefix_is_refused_as_read_only(
    server: Server, admin: RestCatalog, cat: Catalog
) -> None:
    namespace = f"{NS}_RO"
    admin.create_namespace(namespace)
    admin.create_table((namespace, "T"), SCHEMA).append(batch([(1, "x", 1)]))
    v = _latest(cat)
    pinned = _pinned(server, f"@v{v}")
    loaded = pinned.load_table((namespace, "T"))
    read_only = f"catalog pinned at version {v} is read-only"
    changes: list[Callable[[], object]] = [
        lambda: loaded.append(batch([(2, "y", 2)])),
        lambda: pinned.create_table((namespace, "U"), SCHEMA),
        lambda: pinned.drop_table((namespace, "T")),
        lambda: pinned.rename_table((namespace, "T"), (namespace, "V")),
        lambda: pinned.create_namespace(f"{namespace}_NEW"),
        lambda: pinned.update_namespace_properties(namespace, updates={"k": "v"}),
        lambda: pinned.register_table((namespace, "R"), loaded.metadata_location),
    ]
    for change in changes:
        with pytest.raises(ForbiddenError, match=read_only):
            change()
    assert _latest(cat) == v  # nothing changed
    assert scanned(admin.load_table((namespace, "T"))) == [(1, "x", 1)]


def test_a_version_not_available_is_refused_clearly(http: Client, cat: Catalog) -> None:
    client = http(ADMIN_TOKEN)
    future = _latest(cat) + 1000
    error = spec_error(client.get("/v1/config", params={"warehouse": f"@v{future}"}), 404)
    assert error["type"] == "NoSuchWarehouseException"
    assert f"Catalog version {future} does not exist" in error["message"]
    error = spec_error(client.get(f"/v1/v{future}/namespaces"), 400)
    assert f"Catalog version {future} does not exist" in error["message"]
    served = TableData.for_catalog(cat).warehouse.uri
    for other in ("elsewhere@v1", f"{served}-other@v1"):  # the warehouse part still counts
        error = spec_error(client.get("/v1/config", params={"warehouse": other}), 404)
        assert error["type"] == "NoSuchWarehouseException", other


@pytest.mark.parametrize("version", ["0", "9223372036854775808", "99999999999999999999999"])
def test_a_version_no_catalog_can_hold_is_refused_as_missing(http: Client, version: str) -> None:
    """``v0`` is not an empty catalog and a number past 64 bits is not an
    argument error: both are versions that do not exist, as a future one is."""
    client = http(ADMIN_TOKEN)
    error = spec_error(client.get("/v1/config", params={"warehouse": f"@v{version}"}), 404)
    assert error["type"] == "NoSuchWarehouseException"
    assert f"Catalog version {version} does not exist" in error["message"]
    error = spec_error(client.get(f"/v1/v{version}/namespaces"), 400)
    assert f"Catalog version {version} does not exist" in error["message"]


def test_a_pin_keeps_the_version_through_a_checkpoint_and_without_one_it_goes(
    tmp_path: Path,
) -> None:
    with own_server(tmp_path) as (server, node):
        admin = rest_catalog(server)
        admin.create_namespace(NS)
        table = admin.create_table((NS, "T"), SCHEMA)
        table.append(batch([(1, "a", 1)]))
        v = _latest(node)
        table.append(batch([(2, "b", 2)]))
        pinned = _pinned(server, f"@v{v}")
        with node.pin(v):
            assert node.checkpoint_log() == v  # no further than the pin
            assert scanned(pinned.load_table((NS, "T"))) == [(1, "a", 1)]
        assert node.checkpoint_log() > v
        client = server.client(ADMIN_TOKEN)

        def gone() -> bool:
            response = client.get(f"{PREFIX}/v1/v{v}/namespaces/{NS}/tables/T")
            return response.status_code != 200

        wait_for(gone, f"the server to drop version {v}")
        error = spec_error(client.get(f"{PREFIX}/v1/v{v}/namespaces/{NS}/tables/T"), 400)
        assert f"Catalog version {v} is no longer available" in error["message"]
        with pytest.raises(RESTError, match=f"Catalog version {v} is no longer available"):
            _pinned(server, f"@v{v}")


def test_a_warehouse_names_a_pin_only_by_its_suffix() -> None:
    assert split_warehouse("@v12") == ("", 12)
    assert split_warehouse("file:///w@v3") == ("file:///w", 3)
    assert split_warehouse("/data/w@vx") == ("/data/w@vx", None)
    assert split_warehouse("/data/w") == ("/data/w", None)


def test_a_pinned_load_shows_the_schema_of_its_version_after_later_alters(
    server: Server, admin: RestCatalog, cat: Catalog
) -> None:
    """An ALTER re-points the current snapshot's record to metadata with the
    new schema; a load pinned before it still names the schema it had."""
    admin.create_namespace(f"{NS}_ALTER")
    table = admin.create_table((f"{NS}_ALTER", "T"), SCHEMA)
    table.append(batch([(1, "a", 1)]))
    v = _latest(cat)
    cat.sql(f"ALTER TABLE {NS}_ALTER.T RENAME COLUMN NAME TO LABEL")
    cat.sql(f"ALTER TABLE {NS}_ALTER.T ADD COLUMN EXTRA INT")
    latest = admin.load_table((f"{NS}_ALTER", "T"))
    assert [f.name for f in latest.schema().fields] == ["ID", "LABEL", "QTY", "EXTRA"]
    then = _pinned(server, f"@v{v}").load_table((f"{NS}_ALTER", "T"))
    assert [f.name for f in then.schema().fields] == ["ID", "NAME", "QTY"]
    assert scanned(then) == [(1, "a", 1)]
    assert then.current_snapshot() is not None
    assert then.current_snapshot().snapshot_id == latest.current_snapshot().snapshot_id
