"""The Iceberg REST catalog with pyiceberg's ``RestCatalog`` as the client,
against the app served on a loopback port over a real SQLite catalog and
warehouse (the process-level tests, auth matrix and compliance pass live
with the other server tests): what a client commits is a catalog version or
a data snapshot Almanac itself reads, and a failed requirement changes
nothing."""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import logging
import os
import socket
import threading
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pytest
import uvicorn
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import (
    BadRequestError,
    ForbiddenError,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    NoSuchTableError,
)
from pyiceberg.schema import Schema
from pyiceberg.table import CommitTableResponse
from pyiceberg.table import Table as IcebergTable
from pyiceberg.table.update.schema import UpdateSchema
from pyiceberg.types import GeometryType, IntegerType, LongType, NestedField, StringType

import almanac
from almanac import AddColumns, Catalog, ColumnDef, ColumnType
from almanac.access.tokens import Tokens
from almanac.data import TableData, read_table, write_table
from almanac.data.bounded_io import MAX_METADATA_BYTES, MetadataFileError
from almanac.iceberg import metadata_location
from almanac.server.app import create_app
from tests.waiting import PATIENCE, wait_for

ADMIN = "admin-iceberg-1"
READ = "read-iceberg-2"
ROWS = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.int32())])
SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "v", IntegerType()),
    identifier_field_ids=[1],
)


@dataclass
class Served:
    cat: Catalog
    uri: str

    def client(self, token: str = ADMIN) -> RestCatalog:
        return RestCatalog("almanac", uri=self.uri, token=token)

    def http(self, token: str | None = ADMIN) -> httpx.Client:
        headers = {} if token is None else {"Authorization": f"Bearer {token}"}
        return httpx.Client(base_url=self.uri, headers=headers, timeout=PATIENCE)


@contextlib.contextmanager
def _serve(directory: Path, **settings: Any) -> Iterator[Served]:
    cat = almanac.connect(
        f"sqlite:///{directory}/catalog.db", warehouse=str(directory / "wh"), **settings
    )
    app = create_app(cat, tokens=Tokens.parse(f"admin {ADMIN}\nread {READ}\n", "test tokens"))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(app, log_config=None, access_log=False, lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    wait_for(lambda: server.started or not thread.is_alive(), "the server to start")
    assert server.started, "the server did not start"
    try:
        yield Served(cat, f"http://127.0.0.1:{sock.getsockname()[1]}/iceberg")
    finally:
        server.should_exit = True
        thread.join(PATIENCE)
        cat.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with _serve(tmp_path_factory.mktemp("iceberg_rest")) as served:
        yield served


def _rows(ids: list[int]) -> pa.Table:
    return pa.table({"id": ids, "v": [i * 10 for i in ids]}, schema=ROWS)


def _ids(table: pa.Table) -> list[int]:
    return sorted(table.column("id").to_pylist())


def _table(served: Served, namespace: str, name: str = "t") -> IcebergTable:
    client = served.client()
    client.create_namespace(namespace)
    table: IcebergTable = client.create_table(f"{namespace}.{name}", SCHEMA)
    return table


def test_namespaces(served: Served) -> None:
    client = served.client()
    client.create_namespace("n1", {"owner": "ana"})
    assert ("n1",) in client.list_namespaces()
    assert client.load_namespace_properties("n1") == {"owner": "ana"}
    change = client.update_namespace_properties(
        "n1", removals={"owner", "gone"}, updates={"a": "1"}
    )
    assert (change.removed, change.updated, change.missing) == (["owner"], ["a"], ["gone"])
    assert client.load_namespace_properties("n1") == {"a": "1"}
    assert client.namespace_exists("n1") and not client.namespace_exists("n0")
    with pytest.raises(NamespaceAlreadyExistsError):
        client.create_namespace("n1")
    client.create_table("n1.t", SCHEMA)
    with pytest.raises(NamespaceNotEmptyError):
        client.drop_namespace("n1")
    client.drop_table("n1.t")
    client.drop_namespace("n1")
    assert served.cat.catalog().schema("n1") is None
    with pytest.raises(NoSuchNamespaceError):
        client.load_namespace_properties("n1")
    client.create_namespace("n1")  # a new schema id: the old properties stay gone
    assert client.load_namespace_properties("n1") == {}


def test_errors_take_the_spec_model(served: Served) -> None:
    with served.http() as http:
        nested = http.get("/v1/namespaces/a%1Fb")
        missing = http.get("/v1/namespaces/nope/tables/t")
    with served.http(None) as anonymous:
        unauthorized = anonymous.get("/v1/namespaces")
    with served.http(READ) as reader:
        forbidden = reader.post("/v1/namespaces", json={"namespace": ["x"]})
    for response, code, kind in (
        (nested, 404, "NoSuchNamespaceException"),
        (missing, 404, "NoSuchTableException"),
        (unauthorized, 401, "NotAuthorizedException"),
        (forbidden, 403, "ForbiddenException"),
    ):
        assert response.status_code == code
        error = response.json()["error"]
        assert (error["type"], error["code"]) == (kind, code)
        assert error["message"]
    assert "'a.b'" in nested.json()["error"]["message"]
    assert served.cat.catalog().schema("x") is None


def test_client_writes_are_data_snapshots_almanac_reads(served: Served) -> None:
    table = _table(served, "w")
    table.append(_rows([1, 2, 3]))
    table = served.client().load_table("w.t")
    table.overwrite(_rows([4, 5]))
    table = served.client().load_table("w.t")
    table.append(_rows([6]))
    table = served.client().load_table("w.t")
    table.delete("id = 5")
    table = served.client().load_table("w.t")
    assert _ids(table.scan().to_arrow()) == [4, 6]
    assert _ids(read_table(served.cat, "t", "w")) == [4, 6]
    table_id = served.cat.catalog().table("t", "w").id  # type: ignore[union-attr]
    history = TableData.for_catalog(served.cat).history(table_id)
    assert [s.operation for s in history] == ["append", "overwrite", "append", "overwrite"]
    assert [_ids(read_table(served.cat, "t", "w", timestamp=s.commit_time)) for s in history] == [
        [1, 2, 3],
        [4, 5],
        [4, 5, 6],
        [4, 6],
    ]
    with pytest.raises(ForbiddenError):
        served.client(READ).load_table("w.t").append(_rows([7]))
    assert _ids(read_table(served.cat, "t", "w")) == [4, 6]


def test_a_schema_change_is_one_catalog_version(served: Served) -> None:
    table = _table(served, "s")
    table.append(_rows([1]))
    before = served.cat.latest_version
    with served.client().load_table("s.t").update_schema() as update:
        update.add_column("extra", StringType())
    assert served.cat.latest_version == before + 1
    columns = served.cat.catalog().table("t", "s").columns  # type: ignore[union-attr]
    assert [(c.name, c.type) for c in columns][-1] == ("extra", ColumnType.STRING)
    assert read_table(served.cat, "t", "s", version=before).column_names == ["id", "v"]
    assert read_table(served.cat, "t", "s").column("extra").to_pylist() == [None]
    with served.client().load_table("s.t").update_schema() as update:
        update.rename_column("v", "w")
    assert served.cat.latest_version == before + 2
    assert read_table(served.cat, "t", "s").column_names == ["id", "w", "extra"]
    # An ALTER through Almanac shows up in the next load.
    served.cat.execute(
        [
            AddColumns(
                table="t", columns=(ColumnDef(name="more", type=ColumnType.INT64),), schema="s"
            )
        ]
    )
    fields = served.client().load_table("s.t").schema().fields
    assert [(f.field_id, f.name) for f in fields] == [
        (0, "id"),
        (1, "w"),
        (2, "extra"),
        (3, "more"),
    ]


def test_what_the_catalog_cannot_express_is_refused(served: Served) -> None:
    _table(served, "r")
    version = served.cat.latest_version
    changes: list[Callable[[UpdateSchema], object]] = [
        lambda u: u.rename_column("id", "key"),  # the primary key keeps its name
        lambda u: u.add_column("u", GeometryType()),
    ]
    for change in changes:
        with (
            pytest.raises(BadRequestError),
            served.client().load_table("r.t").update_schema() as update,
        ):
            change(update)
    assert served.cat.latest_version == version


def _commit(table: IcebergTable, requirements: list[dict[str, Any]], key: str) -> dict[str, Any]:
    return {
        "identifier": {"namespace": list(table.name()[:-1]), "name": table.name()[-1]},
        "requirements": requirements,
        "updates": [{"action": "set-properties", "updates": {key: "1"}}],
    }


def test_a_failed_requirement_is_a_409_and_changes_nothing(served: Served) -> None:
    table = _table(served, "q")
    table.append(_rows([1]))
    stale = [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": None}]
    with served.http() as http:
        response = http.post("/v1/namespaces/q/tables/t", json=_commit(table, stale, "k"))
    assert response.status_code == 409
    assert response.json()["error"]["type"] == "CommitFailedException"
    assert "k" not in served.client().load_table("q.t").properties


def test_racing_clients_lose_no_snapshot(served: Served, caplog: pytest.LogCaptureFixture) -> None:
    """Two clients append from the same snapshot: one commit wins, the other
    gets CommitFailedException, which pyiceberg answers by refreshing and
    retrying; both appends land."""
    _table(served, "c").append(_rows([1]))
    first = served.client().load_table("c.t")
    second = served.client().load_table("c.t")

    def statuses() -> list[object]:
        return [
            r.args[2]
            for r in caplog.records
            if r.name == "almanac.server.access"
            and isinstance(r.args, tuple)
            and r.args[:2] == ("POST", "/iceberg/v1/namespaces/c/tables/t")
        ]

    with caplog.at_level(logging.INFO, logger="almanac.server.access"):
        first.append(_rows([2]))
        second.append(_rows([3]))
        # The access line is written once the reply went out: wait for it.
        wait_for(lambda: len(statuses()) >= 3, "the three commits' access lines")
    assert sorted(map(str, statuses())) == ["200", "200", "409"]
    assert _ids(read_table(served.cat, "t", "c")) == [1, 2, 3]


def test_a_transaction_is_one_version_or_nothing(served: Served) -> None:
    a = _table(served, "x", "a")
    b = served.client().create_table("x.b", SCHEMA)
    version = served.cat.latest_version
    good = [{"type": "assert-table-uuid", "uuid": str(a.metadata.table_uuid)}]
    bad = [{"type": "assert-current-schema-id", "current-schema-id": 99}]
    with served.http() as http:
        failed = http.post(
            "/v1/transactions/commit",
            json={"table-changes": [_commit(a, good, "k"), _commit(b, bad, "k")]},
        )
        assert failed.status_code == 409
        assert failed.json()["error"]["type"] == "CommitFailedException"
        assert "k" not in served.client().load_table("x.a").properties

        def add(table: IcebergTable, name: str) -> dict[str, Any]:
            metadata = table.metadata
            fields = [f.model_dump(by_alias=True) for f in metadata.schema().fields]
            fields.append({"id": metadata.last_column_id + 1, "name": name, "type": "long"})
            fields[-1]["required"] = False
            schema = {"type": "struct", "schema-id": 1, "fields": fields}
            return {
                "identifier": {"namespace": ["x"], "name": table.name()[-1]},
                "requirements": [{"type": "assert-current-schema-id", "current-schema-id": 0}],
                "updates": [
                    {"action": "add-schema", "schema": schema},
                    {"action": "set-current-schema", "schema-id": -1},
                ],
            }

        done = http.post(
            "/v1/transactions/commit", json={"table-changes": [add(a, "p"), add(b, "q")]}
        )
        assert done.status_code == 204, done.text
    assert served.cat.latest_version == version + 1
    after = served.cat.catalog()
    assert [c.name for c in after.table("a", "x").columns] == ["id", "v", "p"]  # type: ignore[union-attr]
    assert [c.name for c in after.table("b", "x").columns] == ["id", "v", "q"]  # type: ignore[union-attr]


def test_a_staged_create_commits_with_its_first_snapshot(served: Served) -> None:
    client = served.client()
    client.create_namespace("g")
    transaction = client.create_table_transaction("g.t", SCHEMA)
    transaction.append(_rows([1, 2]))
    assert served.cat.catalog().table("t", "g") is None
    with pytest.raises(NoSuchTableError):
        client.load_table("g.t")
    version = served.cat.latest_version
    transaction.commit_transaction()
    assert served.cat.latest_version == version + 1
    assert _ids(read_table(served.cat, "t", "g")) == [1, 2]
    assert _ids(client.load_table("g.t").scan().to_arrow()) == [1, 2]


def test_rename_and_drop(served: Served) -> None:
    client = served.client()
    _table(served, "m").append(_rows([1]))
    client.rename_table("m.t", "m.u")
    assert client.list_tables("m") == [("m", "u")]
    assert _ids(client.load_table("m.u").scan().to_arrow()) == [1]
    client.create_namespace("m2")
    with client.load_table("m.u").transaction() as change:
        change.set_properties(owner="ana")
    version = served.cat.latest_version
    client.rename_table("m.u", "m2.v")  # to another namespace: one catalog version
    assert served.cat.latest_version == version + 1
    assert client.list_tables("m") == [] and client.list_tables("m2") == [("m2", "v")]
    moved = client.load_table("m2.v")
    assert _ids(moved.scan().to_arrow()) == [1] and moved.properties["owner"] == "ana"
    assert _ids(read_table(served.cat, "v", "m2")) == [1]
    moved.append(_rows([2]))
    assert _ids(read_table(served.cat, "v", "m2")) == [1, 2]
    client.drop_table("m2.v", purge_requested=True)
    assert not client.table_exists("m2.v")


def test_a_drop_and_a_purge_both_take_the_servers_reserve(tmp_path: Path) -> None:
    """The catalog owns the files (gc.enabled=false): a purge is its drop."""
    with _serve(tmp_path, soft_delete_reserve_s=3600.0) as served:
        client = served.client()
        client.create_namespace("r")
        client.create_table("r.kept", SCHEMA, properties={"owner": "ana"}).append(_rows([1, 2]))
        client.create_table("r.purged", SCHEMA)
        client.drop_table("r.kept")
        client.drop_table("r.purged", purge_requested=True)
        assert client.list_tables("r") == []
        dropped = served.cat.catalog().soft_deleted_tables()
        assert sorted(t.name for t in dropped) == ["kept", "purged"]
        served.cat.sql('RECOVER TABLE "r"."kept"')
        back = client.load_table("r.kept")
        assert back.properties.get("owner") == "ana"
        assert _ids(back.scan().to_arrow()) == [1, 2]
        assert not client.table_exists("r.purged")


def test_a_snapshot_of_another_tables_files_is_refused(served: Served) -> None:
    """A commit may only add files below its table's location: a snapshot
    naming another table's files would lose them to that table's janitor."""
    _table(served, "f", "a")
    other = served.client().create_table("f.b", SCHEMA)
    other.append(_rows([1]))
    stolen = served.client().load_table("f.b").metadata.current_snapshot()
    assert stolen is not None
    body = {
        "identifier": {"namespace": ["f"], "name": "a"},
        "requirements": [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": None}],
        "updates": [
            {"action": "add-snapshot", "snapshot": stolen.model_dump(mode="json", by_alias=True)},
            {
                "action": "set-snapshot-ref",
                "ref-name": "main",
                "type": "branch",
                "snapshot-id": stolen.snapshot_id,
            },
        ],
    }
    with served.http() as http:
        response = http.post("/v1/namespaces/f/tables/a", json=body)
    assert response.status_code == 400
    assert "is not where the table's files belong" in response.json()["error"]["message"]
    assert served.client().load_table("f.a").metadata.current_snapshot() is None


def test_register_reads_no_file_of_the_warehouse_and_no_other_file(
    served: Served, tmp_path_factory: pytest.TempPathFactory
) -> None:
    table = _table(served, "reg")
    table.append(_rows([1]))
    inside = served.client().load_table("reg.t").metadata_location
    stray = tmp_path_factory.mktemp("stray") / "plain.txt"
    stray.write_text("not metadata: hunter2\n", encoding="utf-8")
    with served.http() as http:
        for location, message in ((inside, "from outside"), (str(stray), "not a readable")):
            response = http.post(
                "/v1/namespaces/reg/register",
                json={"name": "r", "metadata-location": location, "overwrite": False},
            )
            assert response.status_code == 400
            assert message in response.json()["error"]["message"]
            assert "hunter2" not in response.text
    assert served.cat.catalog().table("r", "reg") is None


def test_a_commit_before_the_first_snapshot_answers_a_metadata_location(served: Served) -> None:
    """Properties, a column and an empty commit on a table with no data yet
    each answer 200 with a metadata file that holds the change (the spec's
    ``CommitTableResponse`` needs one), and a reload shows it."""
    table = _table(served, "early")
    with table.transaction() as tx:
        tx.set_properties(owner="ana")
    assert table.metadata_location is not None
    assert served.client().load_table("early.t").properties["owner"] == "ana"
    with table.update_schema() as update:
        update.add_column("note", StringType())
    reloaded = served.client().load_table("early.t")
    assert [f.name for f in reloaded.schema().fields] == ["id", "v", "note"]
    assert reloaded.properties["owner"] == "ana"
    with served.http() as http:
        empty = http.post("/v1/namespaces/early/tables/t", json={"requirements": [], "updates": []})
    assert empty.status_code == 200, empty.text
    answer = CommitTableResponse.model_validate_json(empty.text)
    data = TableData.for_catalog(served.cat)
    table_id = served.cat.catalog().table("t", "early").id  # type: ignore[union-attr]
    assert answer.metadata_location.startswith(data.warehouse.table_dir(table_id) + "/")
    written = data.iceberg.metadata(answer.metadata_location)
    assert [f.name for f in written.schema().fields] == ["id", "v", "note"]
    assert written.properties["owner"] == "ana"
    staged = served.client().create_table_transaction("early.staged", SCHEMA)
    staged.set_properties(owner="bo")
    staged.commit_transaction()
    assert served.client().load_table("early.staged").properties["owner"] == "bo"
    table = served.client().load_table("early.t")
    table.append(_rows([1]))
    assert _ids(served.client().load_table("early.t").scan().to_arrow()) == [1]
    assert served.client().load_table("early.t").properties["owner"] == "ana"


def test_removing_an_absent_property_changes_nothing(served: Served) -> None:
    """As in Iceberg's own catalogs (Spark's ``UNSET TBLPROPERTIES`` sends
    such removals): once a 400 whose message was the bare key."""
    table = _table(served, "unset")
    with table.transaction() as tx:
        tx.set_properties(owner="ana")

    def commit(*updates: dict[str, Any]) -> httpx.Response:
        with served.http() as http:
            return http.post(
                "/v1/namespaces/unset/tables/t", json={"requirements": [], "updates": updates}
            )

    absent = commit({"action": "remove-properties", "removals": ["gone"]})
    assert absent.status_code == 200, absent.text
    mixed = commit(
        {"action": "set-properties", "updates": {"a": "1"}},
        {"action": "remove-properties", "removals": ["a", "owner", "gone"]},
        {"action": "remove-properties", "removals": ["a"]},
    )
    assert mixed.status_code == 200, mixed.text
    assert served.client().load_table("unset.t").properties.get("owner") is None
    assert "a" not in served.client().load_table("unset.t").properties


def _avro_long(n: int) -> bytes:
    zigzag, out = (n << 1) ^ (n >> 63), bytearray()
    while zigzag > 0x7F:
        out.append(zigzag & 0x7F | 0x80)
        zigzag >>= 7
    return bytes([*out, zigzag])


def _avro_bytes(data: bytes) -> bytes:
    return _avro_long(len(data)) + data


def _deflate_bomb(real: bytes, inflated: int) -> bytes:
    """The Avro file ``real`` with its header kept but its codec set to
    deflate and one block of one record that inflates to ``inflated`` bytes."""
    magic, meta = real[:4], {}
    cursor = io.BytesIO(real[4:])

    def long() -> int:
        shift = result = 0
        while True:
            byte = cursor.read(1)[0]
            result |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return (result >> 1) ^ -(result & 1)

    while (count := long()) != 0:
        for _ in range(abs(count)):
            key = cursor.read(long())
            meta[key] = cursor.read(long())
    sync = cursor.read(16)
    meta[b"avro.codec"] = b"deflate"
    header = magic + _avro_long(len(meta))
    header += b"".join(_avro_bytes(k) + _avro_bytes(v) for k, v in meta.items()) + b"\0" + sync
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = b"".join(packer.compress(bytes(1 << 20)) for _ in range(inflated >> 20))
    block += packer.compress(bytes(inflated & ((1 << 20) - 1))) + packer.flush()
    return header + _avro_long(1) + _avro_bytes(block) + sync


def test_register_refuses_a_manifest_list_that_inflates_past_the_cap(
    served: Served, tmp_path: Path
) -> None:
    """A manifest list of a few hundred kilobytes whose deflate block unpacks
    to more than ``MAX_METADATA_BYTES`` is refused by its size, as a gzipped
    ``metadata.json`` is, before pyiceberg inflates it whole (a larger one
    would take gigabytes)."""
    served.client().create_namespace("regbomb")
    with almanac.connect(str(tmp_path / "other")) as other:
        other.sql("CREATE SCHEMA X; CREATE TABLE X.T (ID INT64 PRIMARY KEY, V INT32)")
        write_table(other, "T", _rows([1, 2]).rename_columns(["ID", "V"]), "X")
        location = metadata_location(other.target, "X.T")
    document = json.loads(Path(location).read_text(encoding="utf-8"))
    (snapshot,) = document["snapshots"]
    bomb = tmp_path / "bomb-list.avro"
    bomb.write_bytes(
        _deflate_bomb(Path(snapshot["manifest-list"]).read_bytes(), MAX_METADATA_BYTES + 1)
    )
    assert bomb.stat().st_size < MAX_METADATA_BYTES // 100
    snapshot["manifest-list"] = str(bomb)
    forged = tmp_path / "bomb.metadata.json"
    forged.write_text(json.dumps(document), encoding="utf-8")
    with served.http() as http:
        response = http.post(
            "/v1/namespaces/regbomb/register",
            json={"name": "r", "metadata-location": str(forged), "overwrite": False},
        )
    assert response.status_code == 400, response.text
    message = response.json()["error"]["message"]
    assert f"'{bomb}' is larger than {MAX_METADATA_BYTES} bytes" in message, message
    assert served.cat.catalog().table("r", "regbomb") is None


@contextlib.contextmanager
def _fifo(path: Path) -> Iterator[Path]:
    """A FIFO at ``path``; on the way out a writer comes and goes, so that a
    reader stuck on it (the server before the fix) gets end-of-file."""
    os.mkfifo(path)
    try:
        yield path
    finally:
        with contextlib.suppress(OSError):  # ENXIO: nobody is reading it
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))


def _register(served: Served, name: str, location: str) -> httpx.Response:
    with served.http() as http:
        return http.post(
            "/v1/namespaces/regsize/register",
            json={"name": name, "metadata-location": location, "overwrite": False},
            timeout=60.0,  # an answer, not a worker stuck on a FIFO
        )


def test_register_refuses_fifos_devices_and_oversized_files(served: Served, tmp_path: Path) -> None:
    """Register reads at most the cap of a regular file: a FIFO, a device or
    a directory is a 400 without being read, a file past the cap (sparse
    here, so nothing is allocated) or a gzipped one that unpacks past it a
    400 naming the rule; and so is a manifest list or manifest the
    metadata names."""
    served.client().create_namespace("regsize")
    big = tmp_path / "big.metadata.json"
    with big.open("wb") as out:
        out.truncate(MAX_METADATA_BYTES + 1)
    bomb = tmp_path / "bomb.gz.metadata.json"
    bomb.write_bytes(gzip.compress(b" " * (MAX_METADATA_BYTES + 1), compresslevel=1))
    with _fifo(tmp_path / "fifo.metadata.json") as fifo:
        for location, rule in (
            (str(fifo), "is a FIFO: only regular files are read"),
            (f"file://{fifo}", "is a FIFO: only regular files are read"),
            ("/dev/zero", "is a device: only regular files are read"),
            (str(tmp_path), "is a directory: only regular files are read"),
            (str(big), f"is larger than {MAX_METADATA_BYTES} bytes"),
            (str(bomb), f"is larger than {MAX_METADATA_BYTES} bytes"),
        ):
            response = _register(served, "r", location)
            assert response.status_code == 400, (location, response.text)
            message = response.json()["error"]["message"]
            assert location in message and rule in message, message

    with almanac.connect(str(tmp_path / "other")) as other:
        other.sql("CREATE SCHEMA X; CREATE TABLE X.T (ID INT64 PRIMARY KEY, V INT32)")
        write_table(other, "T", _rows([1, 2]).rename_columns(["ID", "V"]), "X")
        location = metadata_location(other.target, "X.T")
    document = json.loads(Path(location).read_text(encoding="utf-8"))
    (snapshot,) = document["snapshots"]
    with _fifo(tmp_path / "list.avro") as fifo:
        snapshot["manifest-list"] = str(fifo)
        forged = tmp_path / "forged.metadata.json"
        forged.write_text(json.dumps(document), encoding="utf-8")
        response = _register(served, "r", str(forged))
    assert response.status_code == 400, response.text
    assert f"'{fifo}' is a FIFO" in response.json()["error"]["message"]
    assert served.cat.catalog().table("r", "regsize") is None

    registered = _register(served, "r", location)
    assert registered.status_code == 200, registered.text
    rows = served.client().load_table("regsize.r").scan().to_arrow()
    assert sorted(rows.column("ID").to_pylist()) == [1, 2]
    # Its manifests stay where they were: swapped for a FIFO, a fresh
    # reader gets the typed refusal, never a hang.
    (manifest,) = TableData.for_catalog(served.cat).iceberg.manifests(
        served.client().load_table("regsize.r").metadata
    )
    os.unlink(manifest.manifest_path)
    root = TableData.for_catalog(served.cat).warehouse.root
    with (
        _fifo(Path(manifest.manifest_path)),
        almanac.connect(served.cat.target, warehouse=root) as fresh,
        pytest.raises(MetadataFileError, match="is a FIFO"),
    ):
        read_table(fresh, "r", "regsize")
