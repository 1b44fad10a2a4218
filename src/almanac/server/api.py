"""The ``/v1`` endpoints over one catalog node.

Plain ``def`` endpoints: FastAPI runs them in its threadpool, so a commit
waiting for the store never holds up the event loop.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Request
from fastapi.responses import Response, StreamingResponse

from almanac import _check as check
from almanac.access.tokens import Role
from almanac.errors import SqlParseError, ValidationError
from almanac.model.catalog_version import CatalogVersion
from almanac.model.read_point import ReadPoint
from almanac.node.catalog import Catalog
from almanac.serialization import encode_catalog
from almanac.serialization.commands_json import commands_from_json
from almanac.server.auth import ADMIN, READ, forbidden
from almanac.server.models import (
    CatalogSummary,
    CommandsRequest,
    DiffResponse,
    ExecuteResponse,
    HistoryResponse,
    SqlRequest,
    SqlResponse,
    TableResponse,
    dump,
)
from almanac.server.streams import EventStreams
from almanac.server.views import catalog_summary, parse_timestamp, table_view, version_view

__all__ = ["HISTORY_LIMIT", "KEEPALIVE_S", "api_router"]

HISTORY_LIMIT = 1000
"""The most versions one ``/v1/history`` answer lists."""

KEEPALIVE_S = 15.0
"""Seconds between ``: keep-alive`` comments of an idle event stream."""
EVENTS_DOC = (
    "Server-Sent Events: `id: VERSION` and `data: {version, commit_time, activation_time, "
    "activated_at, node, request_id, summary, events: [{type, object_id, data_commit}]}` per "
    "version (`data_commit`: a DATA_COMMIT event's `{snapshot_id, metadata, operation, "
    "rows_added, rows_removed, files_added, files_removed}`, else null); "
    "`: keep-alive` comments while idle; a resume point that was truncated gets "
    "`event: error` with `{error, message, details, status: 410}` and the stream ends."
)

_LAST_RESUMABLE = check.INT64_MAX - 1
"""A stream resumes at the version after its start, which must be a version too."""

Version = Annotated[int | None, Query(description="a catalog version (default: the latest)")]


def _changes_catalog(text: str, default_schema: str) -> bool:
    """Whether a script holds DDL (a read token may only run reads). A script
    that does not parse changes nothing; running it reports the parse error."""
    from almanac.sql.parsing import parse_sql

    try:
        parsed = parse_sql(text, default_schema=default_schema)
    except SqlParseError:
        return False
    return isinstance(parsed, list) and bool(parsed)


def _resume_point(last_event_id: str | None, after: int | None, latest: int) -> int:
    """Where a stream starts: after ``Last-Event-ID`` (a reconnect), else
    after ``?after=``, else after the latest version."""
    if last_event_id is not None:
        text = last_event_id.strip()
        # A version has at most 19 digits; int() of thousands of them would fail.
        if not text.isascii() or not text.isdigit() or len(text.lstrip("0")) > 19:
            raise ValidationError(
                f"Header 'Last-Event-ID' must be a version number from 0 to {_LAST_RESUMABLE}, "
                f"got {last_event_id[:40]!r}",
                parameter="Last-Event-ID",
            )
        return check.integer(int(text), "Header 'Last-Event-ID'", lo=0, hi=_LAST_RESUMABLE)
    if after is not None:
        return check.integer(after, "Query parameter 'after'", lo=0, hi=_LAST_RESUMABLE)
    return latest


def api_router(cat: Catalog, streams: EventStreams) -> APIRouter:
    router = APIRouter(prefix="/v1")

    def at(version: int | None, timestamp: str | None = None) -> CatalogVersion:
        if version is not None and timestamp is not None:
            raise ValidationError(
                "Give query parameter 'version' or 'timestamp', not both",
                parameter="version",
                rule="one of",
            )
        check.optional_int(version, "Query parameter 'version'", lo=0)
        instant = None if timestamp is None else parse_timestamp(timestamp)
        return ReadPoint(version=version, timestamp=instant).resolve(cat)

    @router.post("/sql", response_model=SqlResponse, tags=["change"])
    def sql(body: SqlRequest, role: Annotated[Role, READ]) -> dict[str, Any]:
        """Run a DDL script as one version, or one read statement (a read token
        may run reads only)."""
        if not role.allows(Role.ADMIN) and _changes_catalog(body.sql, body.default_schema):
            raise forbidden("A read token cannot run DDL; this script needs an admin token")
        result = cat.sql(body.sql, default_schema=body.default_schema, request_id=body.request_id)
        return {
            "version": result.version,
            "columns": list(result.columns),
            "rows": [list(row) for row in result.rows],
        }

    @router.post(
        "/commands",
        response_model=ExecuteResponse,
        tags=["change"],
        dependencies=[ADMIN],
    )
    def commands(body: CommandsRequest) -> dict[str, Any]:
        """Apply commands (tagged by ``kind``) in order as one version, or none."""
        batch = commands_from_json([dump(c) for c in body.commands])
        result = cat.execute(batch, request_id=body.request_id)
        return {
            "version": result.version,
            "applied": list(result.applied),
            "created": result.created,
        }

    @router.get("/catalog", response_model=CatalogSummary, tags=["read"], dependencies=[READ])
    def catalog(
        version: Version = None,
        timestamp: Annotated[
            str | None, Query(description="ISO-8601 instant; the version active then")
        ] = None,
    ) -> dict[str, Any]:
        """Every object of one version: by number, at a time, or the latest."""
        return catalog_summary(at(version, timestamp))

    @router.get(
        "/catalog/snapshot",
        tags=["read"],
        dependencies=[READ],
        response_class=Response,
        responses={200: {"content": {"application/octet-stream": {}}}},
    )
    def snapshot(version: Version = None) -> Response:
        """One version in the catalog's binary serialization (``decode_catalog``)."""
        # Exactly what Catalog.catalog(version) holds, version 0 (the empty
        # catalog before init) included: RemoteCatalog.catalog mirrors it.
        check.optional_int(version, "Query parameter 'version'")
        cv = cat.catalog(version)
        return Response(
            encode_catalog(cv),
            media_type="application/octet-stream",
            headers={"X-Almanac-Version": str(cv.version)},
        )

    @router.get(
        "/tables/{schema}/{table}",
        response_model=TableResponse,
        response_model_by_alias=True,
        tags=["read"],
        dependencies=[READ],
    )
    def table(schema: str, table: str, version: Version = None) -> dict[str, Any]:
        """One table with its columns and indexes."""
        return table_view(at(version), schema, table)

    @router.get("/history", response_model=HistoryResponse, tags=["read"], dependencies=[READ])
    def history(
        since: Annotated[
            int | None, Query(description="the first version (default: the newest `limit`)")
        ] = None,
        limit: Annotated[int, Query(ge=1, le=HISTORY_LIMIT)] = 100,
    ) -> dict[str, Any]:
        """What each available version changed, oldest first."""
        check.optional_int(since, "Query parameter 'since'")
        latest = cat.latest_version
        first = max(latest - limit + 1, 0) if since is None else since
        infos = cat.history(first)[:limit]
        return {
            "earliest": cat.earliest_version,
            "latest": latest,
            "versions": [version_view(cat, info) for info in infos],
        }

    @router.get("/diff", response_model=DiffResponse, tags=["read"], dependencies=[READ])
    def diff(
        from_: Annotated[int, Query(alias="from", description="the earlier version")],
        to: Annotated[int | None, Query(description="the later version (default: latest)")] = None,
    ) -> dict[str, Any]:
        """Objects added, removed and changed between two versions (either order)."""
        check.integer(from_, "Query parameter 'from'")
        check.optional_int(to, "Query parameter 'to'")
        return cat.diff(from_, cat.latest_version if to is None else to).to_json()

    @router.get(
        "/events",
        tags=["read"],
        dependencies=[READ],
        response_class=StreamingResponse,
        responses={200: {"content": {"text/event-stream": {}}, "description": EVENTS_DOC}},
    )
    async def events(
        request: Request,
        after: Annotated[
            int | None, Query(description="send the versions after this one (default: latest)")
        ] = None,
        keepalive: Annotated[
            float, Query(ge=0.1, le=300, description="seconds between keep-alive comments")
        ] = KEEPALIVE_S,
        last_event_id: Annotated[str | None, Header()] = None,
    ) -> StreamingResponse:
        """Every version as a Server-Sent Event (``id:`` = version), resumable."""
        start = _resume_point(last_event_id, after, cat.latest_version)
        return StreamingResponse(
            streams.stream(request, start, keepalive),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    return router
