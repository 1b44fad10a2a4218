"""The FastAPI application over one catalog node.

Catalog calls block (a commit waits for the store and for its version to be
ready), so every endpoint that calls the catalog is a plain ``def`` and runs
in the threadpool; the event loop only moves bytes. The event stream is the
one ``async`` endpoint, and it never blocks the loop either (see ``sse``).
"""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Callable
from functools import partial
from typing import Any
from urllib.parse import parse_qsl

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from almanac import console
from almanac.access.tokens import Tokens
from almanac.errors import CatalogError
from almanac.iceberg_rest import ICEBERG_PREFIX
from almanac.node.catalog import Catalog
from almanac.server.api import api_router
from almanac.server.auth import AuthError
from almanac.server.docs import docs_router
from almanac.server.errors import RETRY_AFTER_S, error_body, status_of
from almanac.server.streams import EventStreams

__all__ = ["MAX_BODY_BYTES", "create_app", "stop_streams"]

MAX_BODY_BYTES = 8 * 2**20
"""The largest request body the server reads: far above any DDL script or
command batch, far below what would let one request exhaust its memory."""

_access = logging.getLogger("almanac.server.access")


class ErrorBody(BaseModel):
    """Every error response."""

    error: str
    message: str
    details: dict[str, Any]


ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody, "description": why}
    for status, why in (
        (400, "invalid request, validation or parse error"),
        (401, "no token, or a token that is not valid"),
        (403, "a read token asked for a change, or the catalog is read-only"),
        (404, "no such object or version"),
        (409, "already exists, or a conflict"),
        (410, "the version was truncated from the log"),
        (503, "the metastore is unavailable or the node cannot answer now; retry"),
    )
}


def _catalog_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, CatalogError)
    status = status_of(exc)
    headers = {"Retry-After": str(RETRY_AFTER_S)} if status == 503 else None
    return JSONResponse(
        error_body(type(exc).__name__, exc.message, exc.context), status, headers=headers
    )


def _auth_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, AuthError)
    return JSONResponse(
        error_body(exc.error, exc.message),
        exc.status,
        headers={"WWW-Authenticate": exc.challenge},
    )


def _request_error(request: Request, exc: Exception) -> JSONResponse:
    """FastAPI's 422 becomes a 400 in the shape of every other error."""
    assert isinstance(exc, RequestValidationError)
    problems = [
        {
            "location": ".".join(str(p) for p in err.get("loc", ())),
            "problem": str(err.get("msg", "")),
        }
        for err in exc.errors()
    ]
    summary = "; ".join(f"{p['location']}: {p['problem']}" for p in problems[:5])
    return JSONResponse(
        error_body("ValidationError", f"Invalid request: {summary}", {"problems": problems}), 400
    )


def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    """A bug, not the caller's doing: the usual shape, no internals (the log has them)."""
    return JSONResponse(
        error_body("InternalError", "The server failed to answer this request; see its log"), 500
    )


def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HTTPException)
    name = {
        400: "ValidationError",
        404: "NotFoundError",
        405: "MethodNotAllowed",
        413: "PayloadTooLarge",
    }.get(exc.status_code, "HTTPError")
    where = f"{request.method} {request.url.path[:200]}"
    message = {
        404: f"No endpoint answers {where} (see /openapi.json)",
        405: f"No endpoint answers {where}; the path takes other methods",
    }.get(exc.status_code, str(exc.detail))
    return JSONResponse(error_body(name, message), exc.status_code, headers=dict(exc.headers or {}))


class _AccessLog:
    """One line per request: method, path (never the query) and status.
    Headers, where tokens travel, are never logged."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = 0

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            _access.info("%s %s %d", scope["method"], scope["path"], status or 500)


def _too_large() -> HTTPException:
    return HTTPException(
        413, f"The request body is larger than the server accepts ({MAX_BODY_BYTES} bytes)"
    )


class _BodyLimit:
    """Refuses a body over ``MAX_BODY_BYTES``: at once when ``Content-Length``
    says so, else as soon as the streamed bytes pass it (the endpoint's body
    read raises the 413, which the error handler shapes)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length", b"0")
        if not declared.isdigit() or int(declared) > MAX_BODY_BYTES:
            exc = _too_large()
            if scope["path"].startswith(f"{ICEBERG_PREFIX}/") and _has_pyiceberg():
                from almanac.iceberg_rest.errors import iceberg_exception

                refusal = iceberg_exception(Request(scope), exc)
                await refusal(scope, receive, send)
                return
            body = error_body("PayloadTooLarge", str(exc.detail))
            await JSONResponse(body, 413)(scope, receive, send)
            return
        received = 0

        async def counting() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > MAX_BODY_BYTES:
                    raise _too_large()
            return message

        await self.app(scope, counting, send)


class _OneValuePerParameter:
    """A query parameter given twice (``?version=1&version=2``) is a 400:
    no endpoint takes a list, and silently using one of the values would
    answer a question the caller may not have asked."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope.get("query_string"):
            names = [
                name
                for name, _ in parse_qsl(
                    scope["query_string"].decode("latin-1"), keep_blank_values=True
                )
            ]
            repeated = sorted({name for name in names if names.count(name) > 1})
            if repeated:
                message = f"Query parameter '{repeated[0][:60]}' is given more than once"
                body = error_body("ValidationError", message, {"parameters": repeated[:10]})
                await JSONResponse(body, 400)(scope, receive, send)
                return
        await self.app(scope, receive, send)


class _HeadAsGet:
    """``HEAD`` answers as ``GET`` would, headers only (FastAPI routes only
    the methods they declare); the event stream, which never ends, is left out."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope["method"] != "HEAD"
            or scope["path"] == "/v1/events"
            or scope["path"].startswith(f"{ICEBERG_PREFIX}/")  # it has HEAD endpoints
        ):
            await self.app(scope, receive, send)
            return

        async def headers_only(message: Message) -> None:
            if message["type"] == "http.response.body":
                message = {**message, "body": b""}
            await send(message)

        await self.app({**scope, "method": "GET"}, receive, headers_only)


class Health(BaseModel):
    status: str


class Readiness(BaseModel):
    ready: bool
    version: int
    node: str
    event_streams: int


def stop_streams(app: Any) -> None:
    """End the open event streams of an app ``create_app`` made (the server
    is shutting down, and would otherwise wait for them)."""
    streams = getattr(getattr(app, "state", None), "streams", None)
    if isinstance(streams, EventStreams):
        streams.close_all()


def _has_pyiceberg() -> bool:
    return importlib.util.find_spec("pyiceberg") is not None


def _or_iceberg(
    handler: Callable[[Request, Exception], JSONResponse],
) -> Callable[[Request, Exception], JSONResponse]:
    """``handler``, except under ``/iceberg``, whose errors take the Iceberg
    REST spec's error model."""

    def handle(request: Request, exc: Exception) -> JSONResponse:
        if request.url.path.startswith(f"{ICEBERG_PREFIX}/") and _has_pyiceberg():
            from almanac.iceberg_rest.errors import iceberg_exception

            return iceberg_exception(request, exc)
        return handler(request, exc)

    return handle


def _openapi(app: FastAPI) -> dict[str, Any]:
    """FastAPI's schema without its 422 responses: a request that does not
    match its model is a 400 here, in the shape of every other error."""
    if app.openapi_schema is None:
        schema = get_openapi(
            title=app.title,
            version=app.version,
            summary=app.summary,
            routes=app.routes,
        )
        for operations in schema.get("paths", {}).values():
            for operation in operations.values():
                operation.get("responses", {}).pop("422", None)
        for unused in ("HTTPValidationError", "ValidationError"):
            schema.get("components", {}).get("schemas", {}).pop(unused, None)
        app.openapi_schema = schema
    return app.openapi_schema


def create_app(cat: Catalog, *, tokens: Tokens | None) -> FastAPI:
    """The HTTP API over ``cat``; ``tokens=None`` serves without auth (``serve``
    allows that only on a loopback address or when told ``insecure``)."""
    app = FastAPI(
        title="Almanac",
        summary="A versioned, transactional table catalog",
        version="1",
        responses=ERROR_RESPONSES,
        docs_url=None,  # served by almanac.server.docs, without a CDN
        redoc_url=None,
    )
    app.state.catalog = cat
    app.state.tokens = tokens
    app.state.streams = streams = EventStreams(cat)
    for kind, handler in (
        (CatalogError, _catalog_error),
        (AuthError, _auth_error),
        (RequestValidationError, _request_error),
        (HTTPException, _http_error),
        (Exception, _unexpected),
    ):
        app.add_exception_handler(kind, _or_iceberg(handler))
    app.add_middleware(_BodyLimit)
    app.add_middleware(_HeadAsGet)
    app.add_middleware(_OneValuePerParameter)
    app.add_middleware(_AccessLog)
    app.openapi = partial(_openapi, app)  # type: ignore[method-assign]

    @app.get("/health", response_model=Health, tags=["service"])
    def health() -> Health:
        """Liveness: the process answers. Needs no token."""
        return Health(status="ok")

    @app.get("/ready", response_model=Readiness, tags=["service"])
    def ready() -> JSONResponse:
        """Readiness: the node follows its log and can serve (503 when not). Needs no token."""
        body = Readiness(
            ready=not cat.closed,
            version=cat.latest_version,
            node=cat.node_name,
            event_streams=streams.open_streams,
        )
        status = 200 if body.ready else 503
        return JSONResponse(body.model_dump(), status)

    app.include_router(api_router(cat, streams))
    app.include_router(console.router(cat, tokens=tokens))
    app.include_router(docs_router(app.openapi_url or "/openapi.json", app.title))
    if _has_pyiceberg():  # the Iceberg REST catalog needs the spark extra's pyiceberg
        from almanac.iceberg_rest.routes import iceberg_router

        app.include_router(iceberg_router(cat), prefix=ICEBERG_PREFIX)
    return app
