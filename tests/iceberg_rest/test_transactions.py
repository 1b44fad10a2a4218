"""``POST /v1/transactions/commit``: every table's requirements are checked
first, then all the changes commit as one catalog version, or none does.
pyiceberg 0.12 has no client call for it, so the body is built from
pyiceberg's own request, requirement and update models."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.schema import Schema
from pyiceberg.table import CommitTableRequest, Table, TableIdentifier
from pyiceberg.table.update import (
    AddSchemaUpdate,
    AssertCurrentSchemaId,
    AssertTableUUID,
    SetCurrentSchemaUpdate,
)
from pyiceberg.types import NestedField, StringType

import almanac
from almanac.node.catalog import Catalog
from almanac.sql.parsing import parse_script

from .conftest import ADMIN_TOKEN, spec_error
from .tables import SCHEMA, batch, scanned

NAMESPACE = "TX"


def _identifier(name: str) -> TableIdentifier:
    return TableIdentifier.model_validate({"namespace": [NAMESPACE], "name": name})


def _add_column(table: Table, name: str, *, schema_id: int | None = None) -> CommitTableRequest:
    """The request pyiceberg's ``update_schema().add_column`` would send:
    a new schema with one more optional string field, made current."""
    current = table.schema()
    field_id = table.metadata.last_column_id + 1
    new = Schema(
        *current.fields,
        NestedField(field_id, name, StringType(), required=False),
        schema_id=max(s.schema_id for s in table.schemas().values()) + 1,
        identifier_field_ids=current.identifier_field_ids,
    )
    return CommitTableRequest(
        identifier=_identifier(table.name()[-1]),
        requirements=(
            AssertTableUUID(uuid=table.metadata.table_uuid),
            AssertCurrentSchemaId.model_validate(
                {"current-schema-id": current.schema_id if schema_id is None else schema_id}
            ),
        ),
        updates=(
            AddSchemaUpdate(schema=new),
            SetCurrentSchemaUpdate.model_validate({"schema-id": -1}),
        ),
    )


def _body(*changes: CommitTableRequest) -> bytes:
    """A ``CommitTransactionRequest``: ``{"table-changes": [...]}``."""
    parts = b",".join(c.model_dump_json(by_alias=True).encode() for c in changes)
    return b'{"table-changes": [' + parts + b"]}"


def _post(client: httpx.Client, body: bytes) -> httpx.Response:
    return client.post(
        "/v1/transactions/commit", content=body, headers={"content-type": "application/json"}
    )


@pytest.fixture(scope="module")
def tables(admin: RestCatalog) -> tuple[Table, Table]:
    admin.create_namespace(NAMESPACE)
    a = admin.create_table((NAMESPACE, "A"), SCHEMA)
    b = admin.create_table((NAMESPACE, "B"), SCHEMA)
    a.append(batch([(1, "a", 1)]))
    b.append(batch([(2, "b", 2)]))
    return a, b


def _state(admin: RestCatalog, name: str) -> tuple[str, list[str], int | None]:
    table = admin.load_table((NAMESPACE, name))
    snapshot = table.current_snapshot()
    return (
        str(table.metadata_location),
        [f.name for f in table.schema().fields],
        None if snapshot is None else snapshot.snapshot_id,
    )


def test_a_failed_requirement_changes_neither_table(
    admin: RestCatalog,
    tables: tuple[Table, Table],
    cat: Catalog,
    http: Callable[[str | None], httpx.Client],
) -> None:
    a, b = (t.refresh() for t in tables)
    cat.catch_up()
    version = cat.latest_version
    before = {n: _state(admin, n) for n in ("A", "B")}
    stale = _add_column(b, "Y", schema_id=b.schema().schema_id + 7)
    response = _post(http(ADMIN_TOKEN), _body(_add_column(a, "X"), stale))
    error = spec_error(response, 409)
    assert error["type"] == "CommitFailedException"
    assert "B" in error["message"], error
    cat.catch_up()
    assert cat.latest_version == version
    assert {n: _state(admin, n) for n in ("A", "B")} == before
    # The refusal is the same with the failing table first.
    response = _post(http(ADMIN_TOKEN), _body(stale, _add_column(a, "X")))
    assert spec_error(response, 409)["type"] == "CommitFailedException"
    assert {n: _state(admin, n) for n in ("A", "B")} == before


def test_a_transaction_over_two_tables_is_one_catalog_version(
    admin: RestCatalog,
    tables: tuple[Table, Table],
    cat: Catalog,
    http: Callable[[str | None], httpx.Client],
) -> None:
    a, b = (t.refresh() for t in tables)
    cat.catch_up()
    version = cat.latest_version
    response = _post(http(ADMIN_TOKEN), _body(_add_column(a, "P"), _add_column(b, "Q")))
    assert response.status_code == 204, response.text
    cat.catch_up()
    assert cat.latest_version == version + 1
    (made,) = cat.history(version + 1)
    expected = almanac.preview(
        cat.catalog(version),
        parse_script("ALTER TABLE TX.A ADD COLUMN P STRING; ALTER TABLE TX.B ADD COLUMN Q STRING"),
    ).entries
    assert made.update.entries == expected
    after_a, after_b = admin.load_table((NAMESPACE, "A")), admin.load_table((NAMESPACE, "B"))
    assert [f.name for f in after_a.schema().fields] == ["ID", "NAME", "QTY", "P"]
    assert [f.name for f in after_b.schema().fields] == ["ID", "NAME", "QTY", "Q"]
    # The data stayed: both tables read what they held.
    assert scanned(after_a) == [(1, "a", 1, None)]
    assert scanned(after_b) == [(2, "b", 2, None)]
    # Replaying the same body now fails its requirements and changes nothing.
    replay = _post(http(ADMIN_TOKEN), _body(_add_column(a, "P"), _add_column(b, "Q")))
    assert spec_error(replay, 409)["type"] == "CommitFailedException"
    cat.catch_up()
    assert cat.latest_version == version + 1


def test_a_transaction_naming_a_missing_table_or_one_table_twice_is_refused(
    admin: RestCatalog,
    tables: tuple[Table, Table],
    cat: Catalog,
    http: Callable[[str | None], httpx.Client],
) -> None:
    a, _ = (t.refresh() for t in tables)
    cat.catch_up()
    version = cat.latest_version
    ghost = _add_column(a, "G").model_copy(update={"identifier": _identifier("GHOST")})
    response = _post(http(ADMIN_TOKEN), _body(_add_column(a, "G"), ghost))
    assert spec_error(response, 404)["type"] == "NoSuchTableException"
    twice = _post(http(ADMIN_TOKEN), _body(_add_column(a, "G"), _add_column(a, "H")))
    assert twice.status_code in (400, 409), twice.text
    spec_error(twice, twice.status_code)
    empty = _post(http(ADMIN_TOKEN), b'{"table-changes": []}')
    assert empty.status_code in (204, 400), empty.text
    cat.catch_up()
    assert cat.latest_version == version
    assert [f.name for f in admin.load_table((NAMESPACE, "A")).schema().fields][-1] != "G"
