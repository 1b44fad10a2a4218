"""The Iceberg REST catalog endpoints (``/iceberg/v1/...``), following the
published OpenAPI spec, over one catalog node. Bodies are parsed with
pyiceberg's own models and answered with them; the same bearer tokens and
roles as ``/v1`` admit each call (a read token loads, never commits).

Plain ``def`` endpoints: a commit waits for the store, so they run in the
threadpool like the rest of the server's.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Body, Header, Query
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel
from pydantic import ValidationError as PydanticError
from pyiceberg.catalog.rest import (
    Capability,
    ConfigResponse,
    CreateTableRequest,
    Endpoint,
    HttpMethod,
    ListNamespaceResponse,
    ListTablesResponse,
    NamespaceResponse,
    RegisterTableRequest,
    TableResponse,
    UpdateNamespacePropertiesResponse,
)
from pyiceberg.catalog.rest.response import ErrorResponse
from pyiceberg.table import CommitTableRequest, CommitTableResponse

from almanac.commands import CreateSchema, CreateTable, DropSchema, DropTable, RenameTable
from almanac.commands.preview import preview
from almanac.data.bounded_io import MetadataFileError
from almanac.data.commits import TableData
from almanac.data.iceberg_schema import CommitShape
from almanac.data.tablets import table_partitions
from almanac.errors import CatalogError, NotFoundError, VersionNotFoundError
from almanac.iceberg_rest.commit import commit
from almanac.iceberg_rest.errors import CommitFailedError, refused
from almanac.iceberg_rest.mapping import (
    check_expressed,
    check_layout,
    create_command,
    zone_partitions,
)
from almanac.iceberg_rest.models import (
    CommitTransactionRequest,
    CreateNamespaceRequest,
    RenameTableRequest,
    UpdateNamespacePropertiesRequest,
)
from almanac.iceberg_rest.pinned import (
    PINNED,
    WRITABLE,
    Pinned,
    check_pinned,
    pinned_prefix,
    split_warehouse,
)
from almanac.iceberg_rest.plan import created, one_namespace, plan
from almanac.iceberg_rest.properties import (
    GC_ENABLED,
    Properties,
    check_gc,
    check_not_reserved,
    properties_key,
)
from almanac.iceberg_rest.tables import (
    find_table,
    load,
    namespace_of,
    shown,
    stored_json,
    with_snapshots,
)
from almanac.metastore import Compare, Op
from almanac.model.catalog_version import CatalogVersion
from almanac.node.catalog import Catalog
from almanac.server.auth import ADMIN, READ

__all__ = ["iceberg_router"]

"""Where the Iceberg REST catalog is mounted: a client's ``uri``."""
_SEPARATOR = "\x1f"
_M = TypeVar("_M", bound=BaseModel)
_ENDPOINTS = sorted(
    str(e)
    for e in (
        *(
            getattr(Capability, name)
            for name in dir(Capability)
            if name.startswith("V1_")
            and "VIEW" not in name
            and "SCAN" not in name
            and "CREDENTIALS" not in name
        ),
        Endpoint(http_method=HttpMethod.POST, path="/v1/{prefix}/transactions/commit"),
    )
)
_DEFAULTS = {f"table-default.{GC_ENABLED}": "false"}
"""Catalog properties a client starts from: Iceberg clients give tables
created through them these table properties."""
_CREATED = {"write.parquet.compression-codec": "zstd"}
"""Properties a new table gets unless its create sets them, as Iceberg's
own catalogs do (``TableMetadata.newTableMetadata``): without the codec,
Iceberg's Java writers fall back to gzip, several times slower to write."""
_ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorResponse, "description": f"{why} (the Iceberg REST error model)"}
    for status, why in (
        (400, "BadRequestException: malformed, or not expressible in the catalog"),
        (401, "NotAuthorizedException: no token, or one that is not valid"),
        (403, "ForbiddenException: a read token asked for a change"),
        (404, "NoSuchNamespaceException, NoSuchTableException"),
        (409, "AlreadyExistsException, NamespaceNotEmptyException, CommitFailedException"),
        (503, "ServiceUnavailableException: retry"),
    )
}


def _ok(model: type[BaseModel]) -> dict[int | str, dict[str, Any]]:
    return {200: {"model": model, "description": "success"}}


Json = Annotated[dict[str, Any], Body(description="JSON as the Iceberg REST spec gives it")]


def _json(model: BaseModel, status: int = 200) -> Response:
    return Response(model.model_dump_json(), status, media_type="application/json")


def _parse(model: type[_M], body: dict[str, Any]) -> _M:
    try:
        return model.model_validate(body)
    except PydanticError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg', '')}"
            for e in exc.errors()[:5]
        )
        raise refused(f"Invalid {model.__name__}: {problems}", rule="request-body") from None
    except (ValueError, TypeError, AttributeError, KeyError) as exc:  # pyiceberg's validators
        reason = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
        raise refused(f"Invalid {model.__name__}: {reason}", rule="request-body") from None


def _addressable(kind: str, name: str) -> str:
    """A 400 for a name no Iceberg REST path can reach: servers decode
    ``%2F`` in a path into ``/`` before routing, so a name holding ``/``
    would be created and then never found; clients resolve ``.`` and ``..``
    as dot segments of the URL, so those never arrive as names."""
    if name in (".", ".."):
        raise refused(
            f"{kind} name '{name}' is a dot segment, which no Iceberg REST path can carry "
            "(clients resolve it away); choose another name",
            name=name,
            rule="name-in-path",
        )
    if "/" in name:
        raise refused(
            f"{kind} name '{name}' holds '/', which no Iceberg REST path can carry; "
            "choose another name",
            name=name,
            rule="name-in-path",
        )
    return name


def _namespace(path: str, table: str | None = None) -> str:
    """The schema a path's namespace names (see ``one_namespace``)."""
    return one_namespace(path.split(_SEPARATOR), table)


def _new_namespace(parts: Sequence[str]) -> str:
    """A namespace to create: one level, a catalog schema (deeper ones are
    refused here and name nothing on every lookup)."""
    if len(parts) != 1:
        shown = ".".join(parts) or "(empty)"
        raise refused(
            f"Namespace '{shown}' has {len(parts)} levels: a namespace is a catalog schema, "
            "so namespaces have exactly one level",
            namespace=list(parts),
            rule="namespace-levels",
        )
    return _addressable("Namespace", parts[0])


def _table_response(
    cat: Catalog,
    namespace: str,
    name: str,
    snapshots: str = "all",
    if_none_match: str | None = None,
    pinned: int | None = None,
) -> Response:
    """The spec's LoadTableResult: the stored ``metadata.json`` bytes when
    they are what the load shows, with an ``ETag`` of the answer; a 304 when
    ``If-None-Match`` holds it (the client's copy is current). ``pinned``:
    the table as of that catalog version, its data too."""
    if pinned is None:
        loaded = load(cat, namespace, name)
    else:
        loaded = load(cat, namespace, name, cat.catalog(pinned), pinned=True)
    metadata = with_snapshots(loaded.metadata, snapshots)
    raw = stored_json(cat, loaded) if metadata is loaded.metadata else None
    if raw is None:
        body = TableResponse.model_validate(
            {"metadata-location": loaded.location, "metadata": metadata}
        ).model_dump_json()
        content = body.encode()
    else:
        location = json.dumps(loaded.location).encode()
        content = b'{"metadata-location":' + location + b',"metadata":' + raw + b',"config":{}}'
    etag = f'"{hashlib.blake2b(content, digest_size=16).hexdigest()}"'
    if if_none_match is not None and _matches(if_none_match, etag):
        return Response(status_code=304, headers={"ETag": etag})
    return Response(content, 200, media_type="application/json", headers={"ETag": etag})


def _matches(if_none_match: str, etag: str) -> bool:
    """RFC 9110's weak comparison of an ``If-None-Match`` list with ``etag``."""
    tags = [t.strip().removeprefix("W/") for t in if_none_match.split(",")]
    return "*" in tags or etag in tags


def _no_content() -> Response:
    return Response(status_code=204)


def iceberg_router(cat: Catalog) -> APIRouter:
    """The Iceberg REST routes (``/v1/…``) over ``cat``, which needs a
    warehouse for tables; the server mounts them under its Iceberg prefix."""
    router = APIRouter(prefix="/v1", tags=["iceberg"], responses=_ERRORS)
    routes = APIRouter()

    @router.get("/config", dependencies=[READ], responses=_ok(ConfigResponse))
    def get_config(warehouse: Annotated[str | None, Query()] = None) -> Response:
        """Catalog configuration: the endpoints this server implements, and
        ``gc.enabled=false`` as the tables' default (files are the catalog's
        to delete). ``warehouse`` must name the one this catalog serves;
        ``<warehouse>@v<V>`` (or ``@v<V>``) asks for it pinned at catalog
        version V, read-only: the answer's ``prefix`` override names it."""
        overrides: dict[str, str] = {}
        if warehouse is not None:
            asked, pinned = split_warehouse(warehouse)
            if asked or pinned is None:
                _check_warehouse(cat, asked)
            if pinned is not None:
                _check_version(cat, warehouse, pinned)
                overrides["prefix"] = pinned_prefix(pinned)
        body = {"defaults": _DEFAULTS, "overrides": overrides, "endpoints": _ENDPOINTS}
        ConfigResponse.model_validate(body)  # the spec's shape (it writes endpoints as objects)
        return JSONResponse(body)

    # -- namespaces -----------------------------------------------------------

    @routes.get("/namespaces", dependencies=[READ], responses=_ok(ListNamespaceResponse))
    def list_namespaces(
        parent: Annotated[str | None, Query()] = None,
        page_token: Annotated[str | None, Query(alias="pageToken")] = None,
        page_size: Annotated[int | None, Query(alias="pageSize", ge=1)] = None,
        pinned: Pinned = None,
    ) -> Response:
        """Every schema; a namespace has no children (one level only)."""
        version = cat.catalog(pinned)
        if parent:
            namespace_of(version, _namespace(parent))
            names: list[tuple[str, ...]] = []
        else:
            names = [(s.name,) for s in sorted(version.schemas(), key=lambda s: s.name)]
        return _json(ListNamespaceResponse(namespaces=names))

    @routes.post("/namespaces", dependencies=[ADMIN, WRITABLE], responses=_ok(NamespaceResponse))
    def create_namespace(body: Json) -> Response:
        """CREATE SCHEMA, with its properties, as one catalog version."""
        request = _parse(CreateNamespaceRequest, body)
        name = _new_namespace(request.namespace)

        def attach(_base: CatalogVersion, new: CatalogVersion) -> tuple[list[Compare], list[Op]]:
            if not request.properties:
                return [], []
            stored = Properties.read(cat.metastore, "schema", namespace_of(new, name))
            return [stored.unchanged()], [stored.replace(request.properties)]

        cat.execute([CreateSchema(name)], attach=attach)
        return _json(NamespaceResponse(namespace=(name,), properties=request.properties))

    @routes.get("/namespaces/{namespace}", dependencies=[READ], responses=_ok(NamespaceResponse))
    def load_namespace(namespace: str, pinned: Pinned = None) -> Response:
        """A namespace and its properties (the latest ones: properties are
        not versioned)."""
        name = _namespace(namespace)
        schema_id = namespace_of(cat.catalog(pinned), name)
        values = Properties.read(cat.metastore, "schema", schema_id).values
        return _json(NamespaceResponse(namespace=(name,), properties=values))

    @routes.head("/namespaces/{namespace}", dependencies=[READ], status_code=204)
    def namespace_exists(namespace: str, pinned: Pinned = None) -> Response:
        namespace_of(cat.catalog(pinned), _namespace(namespace))
        return _no_content()

    @routes.delete("/namespaces/{namespace}", dependencies=[ADMIN, WRITABLE], status_code=204)
    def drop_namespace(namespace: str) -> Response:
        """DROP SCHEMA; refused (409) while it holds tables."""
        name = _namespace(namespace)

        def attach(base: CatalogVersion, _new: CatalogVersion) -> tuple[list[Compare], list[Op]]:
            stored = Properties.read(cat.metastore, "schema", namespace_of(base, name))
            return ([stored.unchanged()], [stored.replace({})]) if stored.revision else ([], [])

        cat.execute([DropSchema(name)], attach=attach)
        return _no_content()

    @routes.post(
        "/namespaces/{namespace}/properties",
        dependencies=[ADMIN, WRITABLE],
        responses=_ok(UpdateNamespacePropertiesResponse),
    )
    def update_namespace_properties(namespace: str, body: Json) -> Response:
        request = _parse(UpdateNamespacePropertiesRequest, body)
        name = _namespace(namespace)
        both = sorted(set(request.removals) & set(request.updates))
        if both:
            raise refused(
                f"Namespace '{name}': property '{both[0]}' is both removed and updated",
                namespace=name,
                rule="namespace-properties",
            )
        store = cat.metastore
        stored = Properties.read(store, "schema", namespace_of(cat.catalog(), name))
        values = {k: v for k, v in stored.values.items() if k not in request.removals}
        values.update(request.updates)
        if not store.txn([stored.unchanged()], [stored.replace(values)]).succeeded:
            raise CommitFailedError(
                f"The properties of namespace '{name}' changed meanwhile; retry", namespace=name
            )
        return _json(
            UpdateNamespacePropertiesResponse(
                removed=sorted(k for k in request.removals if k in stored.values),
                updated=sorted(request.updates),
                missing=sorted(k for k in request.removals if k not in stored.values),
            )
        )

    # -- tables ---------------------------------------------------------------

    @routes.get(
        "/namespaces/{namespace}/tables", dependencies=[READ], responses=_ok(ListTablesResponse)
    )
    def list_tables(
        namespace: str,
        page_token: Annotated[str | None, Query(alias="pageToken")] = None,
        page_size: Annotated[int | None, Query(alias="pageSize", ge=1)] = None,
        pinned: Pinned = None,
    ) -> Response:
        name = _namespace(namespace)
        version = cat.catalog(pinned)
        namespace_of(version, name)
        tables = sorted(t.name for t in version.tables(name))
        return _json(
            ListTablesResponse.model_validate(
                {"identifiers": [{"namespace": [name], "name": t} for t in tables]}
            )
        )

    @routes.post(
        "/namespaces/{namespace}/tables",
        dependencies=[ADMIN, WRITABLE],
        responses=_ok(TableResponse),
    )
    def create_table(namespace: str, body: Json) -> Response:
        """CREATE TABLE as one catalog version; with ``stage-create`` nothing is
        created: the table it would be comes back for a later commit."""
        name = _namespace(namespace)
        # Optional in the spec, required (though nullable) in pyiceberg's model.
        optional = {"location": None, "partition-spec": None, "write-order": None}
        request = _parse(CreateTableRequest, {**optional, **body})
        _addressable("Table", request.name)
        create = create_command(
            name,
            request.name,
            request.table_schema,
            request.partition_spec,
            request.write_order,
            zone_partitions(cat.catalog()),
        )
        properties = _user_properties(f"{name}.{request.name}", request.properties)
        staged = _check_create(cat, create, request, properties)
        if request.stage_create:
            return _json(TableResponse.model_validate({"metadata": staged}))

        def attach(_base: CatalogVersion, new: CatalogVersion) -> tuple[list[Compare], list[Op]]:
            made = new.table(create.name, name)
            if made is None or not properties:
                return [], []
            stored = Properties.read(cat.metastore, "table", made.id)
            return [stored.unchanged()], [stored.replace(properties)]

        cat.execute([create], attach=attach)
        return _table_response(cat, name, request.name)

    @routes.get(
        "/namespaces/{namespace}/tables/{table}", dependencies=[READ], responses=_ok(TableResponse)
    )
    def load_table(
        namespace: str,
        table: str,
        snapshots: Annotated[str, Query(pattern="^(all|refs)$")] = "all",
        if_none_match: Annotated[str | None, Header()] = None,
        pinned: Pinned = None,
    ) -> Response:
        """The table's metadata; ``metadata-location`` is null before its
        first snapshot. A 304 when ``If-None-Match`` names its ``ETag``.
        Pinned, the metadata of its data snapshot at that version."""
        name = _namespace(namespace, table)
        return _table_response(cat, name, table, snapshots, if_none_match, pinned)

    @routes.head("/namespaces/{namespace}/tables/{table}", dependencies=[READ], status_code=204)
    def table_exists(namespace: str, table: str, pinned: Pinned = None) -> Response:
        find_table(cat.catalog(pinned), _namespace(namespace, table), table)
        return _no_content()

    @routes.post(
        "/namespaces/{namespace}/tables/{table}",
        dependencies=[ADMIN, WRITABLE],
        responses=_ok(CommitTableResponse),
    )
    def commit_table(namespace: str, table: str, body: Json) -> Response:
        """Requirements, then updates: a schema change is the ALTER TABLE it
        amounts to, a snapshot a data snapshot; one transaction."""
        name = _namespace(namespace, table)
        body = {
            **body,
            "identifier": body.get("identifier") or {"namespace": [name], "name": table},
        }
        request = _parse(CommitTableRequest, body)
        named = (request.identifier.namespace.root, request.identifier.name)
        if named != ([name], table):
            raise refused(
                f"The commit names table '{'.'.join(named[0])}.{named[1]}' but is posted to "
                f"'{name}.{table}'",
                rule="commit-identifier",
            )
        commit(cat, [plan(cat, cat.catalog(), request)])
        loaded = load(cat, name, table)
        location = loaded.location
        if location is None:  # no data snapshot yet, but the answer names a file
            data = TableData.for_catalog(cat)
            location = data.iceberg.write_unpublished(
                data.warehouse.table_dir(loaded.table.id), loaded.metadata
            )
        return _json(
            CommitTableResponse.model_validate(
                {"metadata-location": location, "metadata": loaded.metadata}
            )
        )

    @routes.delete(
        "/namespaces/{namespace}/tables/{table}", dependencies=[ADMIN, WRITABLE], status_code=204
    )
    def drop_table(
        namespace: str,
        table: str,
        purge: Annotated[bool, Query(alias="purgeRequested")] = False,
    ) -> Response:
        """DROP TABLE as one catalog version, with the server's soft-delete
        reserve (``serve --soft-delete-reserve``), so RECOVER TABLE can bring
        it back. ``purgeRequested`` drops it the same way: the catalog owns
        the files (``gc.enabled=false``), so a purge is the catalog's, after
        the reserve, once no kept catalog version holds the table (the
        janitor); time travel to before the drop reads until then."""
        name = _namespace(namespace, table)
        del purge  # every drop already ends in the catalog's purge

        def attach(base: CatalogVersion, new: CatalogVersion) -> tuple[list[Compare], list[Op]]:
            gone = find_table(base, name, table)
            if gone.id in new.tables_by_id:
                return [], []  # soft-deleted: its properties come back with it
            stored = Properties.read(cat.metastore, "table", gone.id)
            return ([stored.unchanged()], [stored.replace({})]) if stored.revision else ([], [])

        find_table(cat.catalog(), name, table)
        cat.execute([DropTable(table, name)], attach=attach)
        return _no_content()

    @routes.post("/tables/rename", dependencies=[ADMIN, WRITABLE], status_code=204)
    def rename_table(body: Json) -> Response:
        """RENAME TABLE as one catalog version; to another namespace, it moves
        there with its indexes (its data stays where it is: paths hold ids)."""
        request = _parse(RenameTableRequest, body)
        source = one_namespace(request.source.namespace.root, request.source.name)
        target = one_namespace(request.destination.namespace.root)
        version = cat.catalog()
        find_table(version, source, request.source.name)
        namespace_of(version, target)
        _addressable("Table", request.destination.name)
        new_name = request.destination.name
        cat.execute([RenameTable(request.source.name, new_name, source, new_schema=target)])
        return _no_content()

    @routes.post(
        "/namespaces/{namespace}/register",
        dependencies=[ADMIN, WRITABLE],
        responses=_ok(TableResponse),
    )
    def register_table(namespace: str, body: Json) -> Response:
        """CREATE TABLE from an Iceberg ``metadata.json``, its current snapshot
        the table's first data snapshot, in one catalog version. Its field ids
        must be the column ids the catalog gives (0, 1, ... in order), since
        its data files carry them; its files keep their paths."""
        name = _namespace(namespace)
        # ``overwrite`` is optional (false) in the spec, required in pyiceberg's model.
        request = _parse(RegisterTableRequest, {"overwrite": False, **body})
        _addressable("Table", request.name)
        version = cat.catalog()
        namespace_of(version, name)
        if request.overwrite:
            raise refused(
                f"Table '{name}.{request.name}': registering over a table is not supported; "
                "drop it first",
                rule="register-overwrite",
            )
        data = TableData.for_catalog(cat)
        location = request.metadata_location
        root = data.warehouse.root.rstrip("/")
        if data.warehouse.within(location) or "/../" in location:
            # The janitor owns the warehouse: it would collect the files of a
            # table registered from there once their own table lets go of them
            # (however spelled: file:, //, .., a symlink).
            raise refused(
                f"Table '{name}.{request.name}': register a table from outside the catalog's "
                f"warehouse ('{root}'), not from '{location}'",
                rule="register-location",
            )
        try:
            wanted = data.iceberg.metadata(location)
        except MetadataFileError:  # names the file and the rule, none of its content
            raise
        except CatalogError:  # no content of a file that is not Iceberg metadata goes out
            raise refused(
                f"Table '{name}.{request.name}': '{location}' is not a readable Iceberg "
                "metadata file",
                rule="register-location",
            ) from None
        commit(cat, [created(cat, version, name, request.name, wanted, relocate=True)])
        return _table_response(cat, name, request.name)

    @routes.post("/transactions/commit", dependencies=[ADMIN, WRITABLE], status_code=204)
    def commit_transaction(body: Json) -> Response:
        """Every table's requirements are checked, then all changes commit as
        one catalog version (one metastore transaction), or none does."""
        request = _parse(CommitTransactionRequest, body)
        if not request.table_changes:
            raise refused("A transaction needs at least one table change", rule="transaction")
        version = cat.catalog()
        commit(cat, [plan(cat, version, change) for change in request.table_changes])
        return _no_content()

    router.include_router(routes)
    # The same routes at a pinned prefix (``pinned``): reads as of its version,
    # every change refused. Left out of the OpenAPI document: the same calls.
    router.include_router(routes, prefix=PINNED, include_in_schema=False)
    return router


def _check_version(cat: Catalog, warehouse: str, pinned: int) -> None:
    """The spec's 404 NoSuchWarehouse for a pin on a version this node does
    not hold (truncated by a checkpoint, or not made yet)."""
    try:
        cat.catalog(check_pinned(pinned))
    except VersionNotFoundError as exc:
        raise NotFoundError(
            f"Warehouse '{warehouse}' is not served here: {exc.message}",
            kind="warehouse",
            name=warehouse,
        ) from None


def _check_warehouse(cat: Catalog, asked: str) -> None:
    """The spec's 404 NoSuchWarehouse for a warehouse this catalog does not
    serve: it serves one, named by its location however spelled."""
    served = TableData.for_catalog(cat).warehouse
    if asked.rstrip("/") == served.uri.rstrip("/") or served.normal(asked) == served.root:
        return
    raise NotFoundError(
        f"Warehouse '{asked}' is not served here: this catalog serves one warehouse, "
        f"'{served.uri}' (or leave 'warehouse' out)",
        kind="warehouse",
        name=asked,
    )


def _user_properties(full: str, properties: dict[str, str]) -> dict[str, str]:
    check_not_reserved(full, properties)
    check_gc(full, properties)
    return {**_CREATED, **properties}


def _check_create(
    cat: Catalog, create: CreateTable, request: CreateTableRequest, properties: dict[str, str]
) -> Any:
    """The table ``create`` makes on the latest version, checked against the
    request: the same schema, a bucket count equal to its zone's partitions,
    no location of the client's choosing. Returns its Iceberg metadata."""
    full = f"{create.schema}.{create.name}"
    planned = preview(cat.catalog(), [create]).catalog
    made = planned.table(create.name, create.schema)
    if made is None:  # pragma: no cover - preview either makes it or raises
        raise refused(f"Table '{full}' cannot be created")
    check_expressed(full, made, request.table_schema, same_ids=False)
    check_layout(full, made, table_partitions(planned, made), request)
    data = TableData.for_catalog(cat)
    location = data.warehouse.table_dir(made.id)
    if request.location is not None and request.location.rstrip("/") != location:
        raise refused(
            f"Table '{full}' is stored at the catalog's location ('{location}'), not at "
            f"'{request.location}'",
            table=full,
            rule="location",
        )
    if request.stage_create:  # engines write their first manifests before the commit
        data.warehouse.make_metadata_dir(made.id)
    initial = data.iceberg.initial(CommitShape.of(planned, made), location, made.id)
    return shown(initial, made, Properties(properties_key("table", made.id), properties, 0))
