"""Every endpoint of the issue, called over raw HTTP, answers what the REST
catalog spec says: each response parses with pyiceberg's own response
models, each error is the spec's ``{"error": {message, type, code}}``, and
what the catalog cannot express is a 400 that changes nothing."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from pyiceberg.catalog.rest import (
    DEFAULT_ENDPOINTS,
    Capability,
    ConfigResponse,
    ListNamespaceResponse,
    ListTablesResponse,
    NamespaceResponse,
    RestCatalog,
    TableResponse,
    UpdateNamespacePropertiesResponse,
)
from pyiceberg.exceptions import BadRequestError
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table import CommitTableResponse
from pyiceberg.transforms import DayTransform, HourTransform
from pyiceberg.types import (
    GeometryType,
    IcebergType,
    LongType,
    NestedField,
    TimestampType,
    UnknownType,
)

import almanac
from almanac.data import write_table
from almanac.iceberg import metadata_location
from almanac.node.catalog import Catalog

from .conftest import ADMIN_TOKEN, spec_error
from .tables import SCHEMA, batch, scanned

Client = Callable[[str | None], httpx.Client]
JSON = {"content-type": "application/json"}


def _schema_json(schema: Schema) -> Any:
    return json.loads(schema.model_dump_json(by_alias=True))


def _post(client: httpx.Client, path: str, body: object) -> httpx.Response:
    return client.post(path, content=json.dumps(body).encode(), headers=JSON)


def _load(client: httpx.Client, path: str) -> TableResponse:
    response = client.get(path)
    assert response.status_code == 200, response.text
    return TableResponse.model_validate_json(response.text)


def test_config_names_every_endpoint_the_catalog_serves(http: Client) -> None:
    response = http(ADMIN_TOKEN).get("/v1/config")
    assert response.status_code == 200, response.text
    config = ConfigResponse.model_validate_json(response.text)
    if config.endpoints is not None:
        served = DEFAULT_ENDPOINTS | {Capability.V1_NAMESPACE_EXISTS, Capability.V1_TABLE_EXISTS}
        assert served <= config.endpoints, served - config.endpoints
        assert any("transactions/commit" in e.path for e in config.endpoints)


def test_namespace_endpoints_answer_in_the_spec_models(http: Client, cat: Catalog) -> None:
    client = http(ADMIN_TOKEN)
    created = _post(client, "/v1/namespaces", {"namespace": ["CNS"], "properties": {"a": "1"}})
    assert created.status_code == 200, created.text
    answer = NamespaceResponse.model_validate_json(created.text)
    assert answer.namespace == ("CNS",) and answer.properties.get("a") == "1"
    again = _post(client, "/v1/namespaces", {"namespace": ["CNS"]})
    assert spec_error(again, 409)["type"] == "AlreadyExistsException"

    listed = client.get("/v1/namespaces")
    assert listed.status_code == 200, listed.text
    assert ("CNS",) in ListNamespaceResponse.model_validate_json(listed.text).namespaces

    loaded = client.get("/v1/namespaces/CNS")
    assert loaded.status_code == 200, loaded.text
    assert NamespaceResponse.model_validate_json(loaded.text).properties.get("a") == "1"
    assert client.head("/v1/namespaces/CNS").status_code == 204
    assert client.head("/v1/namespaces/NOPE").status_code == 404
    assert spec_error(client.get("/v1/namespaces/NOPE"), 404)["type"] == "NoSuchNamespaceException"

    updated = _post(
        client, "/v1/namespaces/CNS/properties", {"removals": ["a", "gone"], "updates": {"b": "2"}}
    )
    assert updated.status_code == 200, updated.text
    summary = UpdateNamespacePropertiesResponse.model_validate_json(updated.text)
    assert (summary.removed, summary.updated, summary.missing) == (["a"], ["b"], ["gone"])
    properties = NamespaceResponse.model_validate_json(client.get("/v1/namespaces/CNS").text)
    assert properties.properties.get("b") == "2" and "a" not in properties.properties
    clash = _post(
        client, "/v1/namespaces/CNS/properties", {"removals": ["b"], "updates": {"b": "3"}}
    )
    assert clash.status_code in (400, 422), clash.text
    spec_error(clash, clash.status_code)

    cat.catch_up()
    assert cat.catalog().schema("CNS") is not None
    dropped = client.delete("/v1/namespaces/CNS")
    assert dropped.status_code == 204, dropped.text
    assert spec_error(client.delete("/v1/namespaces/CNS"), 404)["type"] == (
        "NoSuchNamespaceException"
    )
    cat.catch_up()
    assert cat.catalog().schema("CNS") is None


def test_table_endpoints_answer_in_the_spec_models(
    http: Client, admin: RestCatalog, cat: Catalog
) -> None:
    client = http(ADMIN_TOKEN)
    _post(client, "/v1/namespaces", {"namespace": ["CT"]}).raise_for_status()
    body = {"name": "T", "schema": _schema_json(SCHEMA), "properties": {"owner": "x"}}
    created = _post(client, "/v1/namespaces/CT/tables", body)
    assert created.status_code == 200, created.text
    table = TableResponse.model_validate_json(created.text)
    cat.catch_up()
    described = cat.catalog().table("T", "CT")
    assert described is not None
    assert [(f.field_id, f.name) for f in table.metadata.schema().fields] == [
        (c.id, c.name) for c in described.columns
    ]
    assert [f.name for f in table.metadata.schema().fields] == ["ID", "NAME", "QTY"]
    assert table.metadata.schema().identifier_field_ids == [described.columns[0].id]
    assert spec_error(_post(client, "/v1/namespaces/CT/tables", body), 409)["type"] == (
        "AlreadyExistsException"
    )
    missing_ns = _post(client, "/v1/namespaces/NOPE/tables", body)
    assert spec_error(missing_ns, 404)["type"] == "NoSuchNamespaceException"

    listed = client.get("/v1/namespaces/CT/tables")
    assert listed.status_code == 200, listed.text
    names = [
        (tuple(e.namespace), e.name)
        for e in ListTablesResponse.model_validate_json(listed.text).identifiers
    ]
    assert names == [(("CT",), "T")]
    assert client.head("/v1/namespaces/CT/tables/T").status_code == 204
    assert client.head("/v1/namespaces/CT/tables/NOPE").status_code == 404
    nope = client.get("/v1/namespaces/CT/tables/NOPE")
    assert spec_error(nope, 404)["type"] == "NoSuchTableException"

    # Two appends through pyiceberg, then load with snapshots=all and =refs.
    pyt = admin.load_table(("CT", "T"))
    pyt.append(batch([(1, "a", 1)]))
    pyt.append(batch([(2, "b", 2)]))
    every = TableResponse.model_validate_json(
        client.get("/v1/namespaces/CT/tables/T?snapshots=all").text
    )
    refs = TableResponse.model_validate_json(
        client.get("/v1/namespaces/CT/tables/T?snapshots=refs").text
    )
    assert len(every.metadata.snapshots) == 2
    assert every.metadata_location is not None and Path(every.metadata_location).is_file()
    current = every.metadata.current_snapshot_id
    assert current is not None and [s.snapshot_id for s in refs.metadata.snapshots] == [current]
    bad_mode = client.get("/v1/namespaces/CT/tables/T?snapshots=some")
    spec_error(bad_mode, 400)

    # A commit answers CommitTableResponse; a stale requirement is a 409.
    commit = {
        "requirements": [
            {"type": "assert-table-uuid", "uuid": str(every.metadata.table_uuid)},
            {"type": "assert-current-schema-id", "current-schema-id": 0},
        ],
        "updates": [{"action": "set-properties", "updates": {"team": "sales"}}],
    }
    done = _post(client, "/v1/namespaces/CT/tables/T", commit)
    assert done.status_code == 200, done.text
    committed = CommitTableResponse.model_validate_json(done.text)
    assert committed.metadata.properties.get("team") == "sales"
    assert committed.metadata_location != every.metadata_location
    stale = {
        **commit,
        "requirements": [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 1}],
    }
    assert spec_error(_post(client, "/v1/namespaces/CT/tables/T", stale), 409)["type"] == (
        "CommitFailedException"
    )
    gone = _post(client, "/v1/namespaces/CT/tables/NOPE", commit)
    assert spec_error(gone, 404)["type"] == "NoSuchTableException"

    # Rename: 204, the old name is gone, the data went along.
    rename = {
        "source": {"namespace": ["CT"], "name": "T"},
        "destination": {"namespace": ["CT"], "name": "U"},
    }
    renamed = _post(client, "/v1/tables/rename", rename)
    assert renamed.status_code == 204, renamed.text
    assert client.head("/v1/namespaces/CT/tables/T").status_code == 404
    assert scanned(admin.load_table(("CT", "U"))) == [(1, "a", 1), (2, "b", 2)]
    assert spec_error(_post(client, "/v1/tables/rename", rename), 404)["type"] == (
        "NoSuchTableException"
    )
    _post(client, "/v1/namespaces/CT/tables", body).raise_for_status()  # T again
    back = {"source": rename["destination"], "destination": rename["source"]}
    assert spec_error(_post(client, "/v1/tables/rename", back), 409)["type"] == (
        "AlreadyExistsException"
    )

    # Drop: 204 then 404; a namespace that holds tables is not dropped.
    not_empty = client.delete("/v1/namespaces/CT")
    assert spec_error(not_empty, 409)["type"] == "NamespaceNotEmptyException"
    assert client.delete("/v1/namespaces/CT/tables/T").status_code == 204
    assert spec_error(client.delete("/v1/namespaces/CT/tables/T"), 404)["type"] == (
        "NoSuchTableException"
    )
    cat.catch_up()
    assert cat.catalog().table("T", "CT") is None and cat.catalog().table("U", "CT") is not None


def test_register_adopts_an_iceberg_table_written_elsewhere(
    http: Client, admin: RestCatalog, cat: Catalog, tmp_path: Path
) -> None:
    """Another catalog's table registers with its rows; a table whose field
    ids are not the column ids the catalog would give (any table pyiceberg
    creates: its ids start at 1) is a 400 naming them, not a silent remap."""
    with almanac.connect(str(tmp_path / "other")) as other:
        other.sql(
            "CREATE SCHEMA X; CREATE TABLE X.T (ID INT64 PRIMARY KEY, NAME STRING, QTY INT32)"
        )
        write_table(other, "T", batch([(7, "seven", 7)]), "X")
        location = metadata_location(other.target, "X.T")
    client = http(ADMIN_TOKEN)
    _post(client, "/v1/namespaces", {"namespace": ["REG"]}).raise_for_status()
    body = {"name": "T", "metadata-location": location, "overwrite": False}
    registered = _post(client, "/v1/namespaces/REG/register", body)
    assert registered.status_code == 200, registered.text
    TableResponse.model_validate_json(registered.text)
    assert scanned(admin.load_table(("REG", "T"))) == [(7, "seven", 7)]
    cat.catch_up()
    assert cat.catalog().table("T", "REG") is not None
    assert spec_error(_post(client, "/v1/namespaces/REG/register", body), 409)["type"] == (
        "AlreadyExistsException"
    )

    from pyiceberg.catalog.sql import SqlCatalog

    elsewhere = SqlCatalog(
        "elsewhere", uri=f"sqlite:///{tmp_path / 'sql.db'}", warehouse=f"file://{tmp_path}"
    )
    elsewhere.create_namespace("X")
    outside = elsewhere.create_table(("X", "T"), SCHEMA)
    outside.append(batch([(8, "eight", 8)]))
    version = cat.latest_version
    for where in (outside.metadata_location, "/etc/passwd", str(tmp_path / "none.json")):
        answer = _post(
            client, "/v1/namespaces/REG/register", {**body, "name": "U", "metadata-location": where}
        )
        spec_error(answer, 400)
    cat.catch_up()
    assert cat.latest_version == version and not admin.table_exists(("REG", "U"))


def test_stage_create_makes_a_table_only_when_its_transaction_commits(
    admin: RestCatalog, cat: Catalog
) -> None:
    admin.create_namespace("STAGE")
    cat.catch_up()
    version = cat.latest_version
    abandoned = admin.create_table_transaction(("STAGE", "NEVER"), SCHEMA)
    assert not admin.table_exists(("STAGE", "NEVER"))
    del abandoned
    with admin.create_table_transaction(("STAGE", "CTAS"), SCHEMA) as tx:
        tx.append(batch([(1, "a", 1), (2, "b", 2)]))
        assert not admin.table_exists(("STAGE", "CTAS"))
    assert scanned(admin.load_table(("STAGE", "CTAS"))) == [(1, "a", 1), (2, "b", 2)]
    assert not admin.table_exists(("STAGE", "NEVER"))
    cat.catch_up()
    assert cat.latest_version == version + 1, "a staged create commits as one version"
    assert cat.catalog().table("CTAS", "STAGE") is not None


def test_staged_creates_each_start_from_empty_metadata_of_their_own(
    admin: RestCatalog, http: Client
) -> None:
    """Every staged create (Spark's CTAS) builds its table from nothing: its
    own uuid and update time, and nothing of an earlier one's properties,
    schema or snapshots, though they all start from one empty metadata."""
    admin.create_namespace("FRESH")
    loaded = []
    for name, properties in (("A", {"only.a": "1"}), ("B", {"only.b": "2"})):
        before = int(time.time() * 1000)
        with admin.create_table_transaction(("FRESH", name), SCHEMA, properties=properties) as tx:
            tx.append(batch([(1, "a", 1)]))
        table = admin.load_table(("FRESH", name))
        assert table.metadata.last_updated_ms >= before
        loaded.append(table.metadata)
    a, b = loaded
    assert a.table_uuid != b.table_uuid
    assert "only.a" not in b.properties and b.properties["only.b"] == "2"
    assert len(a.snapshots) == len(b.snapshots) == 1
    assert [len(m.schemas) for m in loaded] == [1, 1]
    # a staged create that names no uuid (pyiceberg's always does) still gets its own
    for name in ("C", "D"):
        body = {"name": name, "schema": _schema_json(SCHEMA), "stage-create": True}
        staged = TableResponse.model_validate_json(
            _post(http(ADMIN_TOKEN), "/v1/namespaces/FRESH/tables", body).text
        ).metadata
        commit = {
            "requirements": [{"type": "assert-create"}],
            "updates": [
                {"action": "upgrade-format-version", "format-version": 2},
                {"action": "add-schema", "schema": _schema_json(staged.schema())},
                {"action": "set-current-schema", "schema-id": -1},
                {"action": "add-spec", "spec": {"spec-id": 0, "fields": []}},
                {"action": "set-default-spec", "spec-id": -1},
                {"action": "add-sort-order", "sort-order": {"order-id": 0, "fields": []}},
                {"action": "set-default-sort-order", "sort-order-id": -1},
                {"action": "set-location", "location": staged.location},
            ],
        }
        made = _post(http(ADMIN_TOKEN), f"/v1/namespaces/FRESH/tables/{name}", commit)
        assert made.status_code == 200, made.text
    uuids = {admin.load_table(("FRESH", n)).metadata.table_uuid for n in "ABCD"}
    assert len(uuids) == 4


def test_a_new_table_names_zstd_unless_its_create_names_a_codec(
    admin: RestCatalog, http: Client
) -> None:
    """Iceberg's Java writers fall back to gzip for a table that names no
    Parquet codec; Iceberg's own catalogs give every new table zstd, and so
    does this one, created at once or staged (Spark's CTAS)."""
    codec = "write.parquet.compression-codec"
    admin.create_namespace("CODEC")
    assert admin.create_table(("CODEC", "PLAIN"), SCHEMA).properties[codec] == "zstd"
    body = {"name": "STAGED", "schema": _schema_json(SCHEMA), "stage-create": True}
    staged = _post(http(ADMIN_TOKEN), "/v1/namespaces/CODEC/tables", body)
    assert staged.status_code == 200, staged.text
    assert TableResponse.model_validate_json(staged.text).metadata.properties[codec] == "zstd"
    with admin.create_table_transaction(("CODEC", "CTAS"), SCHEMA) as tx:
        tx.append(batch([(1, "a", 1)]))
    assert admin.load_table(("CODEC", "CTAS")).properties[codec] == "zstd"
    admin.create_table(("CODEC", "CHOSEN"), SCHEMA, properties={codec: "snappy"})
    assert admin.load_table(("CODEC", "CHOSEN")).properties[codec] == "snappy"


def _field(kind: IcebergType) -> Schema:
    return Schema(
        NestedField(1, "ID", LongType(), required=True),
        NestedField(2, "X", kind, required=False),
        identifier_field_ids=[1],
    )


@pytest.mark.parametrize(
    "kind",
    [UnknownType(), GeometryType()],
    ids=["unknown", "geometry"],
)
def test_a_type_the_catalog_lacks_is_a_400_that_creates_nothing(
    kind: IcebergType, admin: RestCatalog, http: Client, cat: Catalog
) -> None:
    if not admin.namespace_exists("TYPES"):
        admin.create_namespace("TYPES")
    cat.catch_up()
    version = cat.latest_version
    body = {"name": "T", "schema": _schema_json(_field(kind))}
    error = spec_error(_post(http(ADMIN_TOKEN), "/v1/namespaces/TYPES/tables", body), 400)
    assert "X" in error["message"], error
    cat.catch_up()
    assert cat.latest_version == version
    assert not admin.table_exists(("TYPES", "T"))


def test_a_partition_spec_the_catalog_cannot_express_is_a_400(
    admin: RestCatalog, cat: Catalog
) -> None:
    admin.create_namespace("PARTS")
    schema = Schema(*SCHEMA.fields, NestedField(4, "AT", TimestampType()), identifier_field_ids=[1])
    specs = [
        PartitionSpec(PartitionField(2, 1000, DayTransform(), "day")),  # day of a string
        PartitionSpec(
            PartitionField(4, 1000, DayTransform(), "d"),
            PartitionField(4, 1001, HourTransform(), "h"),  # redundant with the day
        ),
    ]
    cat.catch_up()
    version = cat.latest_version
    for spec in specs:
        with pytest.raises(BadRequestError):
            admin.create_table(("PARTS", "T"), schema, partition_spec=spec)
    cat.catch_up()
    assert cat.latest_version == version
    # Unpartitioned is accepted; a type it cannot hold is refused later too.
    table = admin.create_table(("PARTS", "T"), schema)
    with pytest.raises(BadRequestError), table.update_schema() as update:
        update.add_column("TAGS", GeometryType())
    cat.catch_up()
    assert cat.latest_version == version + 1
    assert [f.name for f in admin.load_table(("PARTS", "T")).schema().fields] == [
        "ID",
        "NAME",
        "QTY",
        "AT",
    ]


def test_a_nested_namespace_is_refused_with_a_clear_400(http: Client, admin: RestCatalog) -> None:
    client = http(ADMIN_TOKEN)
    error = spec_error(_post(client, "/v1/namespaces", {"namespace": ["A", "B"]}), 400)
    assert "nest" in error["message"].lower() or "level" in error["message"].lower(), error
    with pytest.raises(BadRequestError):
        admin.create_namespace(("OUTER", "INNER"))
    assert not admin.namespace_exists("OUTER")
