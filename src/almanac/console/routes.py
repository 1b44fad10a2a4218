"""The console's routes: read-only HTML pages over one catalog node.

Every failure a reader can cause (an unknown table, a truncated version, a
malformed parameter) is a ``CatalogError`` rendered as a page with the HTTP
status the API would give it, never a traceback. With tokens configured a
page needs a ``read`` (or ``admin``) token, which the login form stores in
an HttpOnly, SameSite=Strict cookie that the API honours for GET only.
Every form that changes something (log in, log out) is refused (403) when
the browser says it came from another site (``same_origin``).
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import resources
from urllib.parse import parse_qs, quote, unquote, urlsplit

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from almanac.access.tokens import Tokens, request_token
from almanac.commands.base import require_table
from almanac.console.pages import (
    Chrome,
    DataSnapshots,
    DiffRow,
    HistoryRow,
    SnapshotRow,
    render_diff,
    render_error,
    render_history,
    render_login,
    render_table,
    render_tree,
)
from almanac.errors import CatalogError, NotFoundError, ValidationError
from almanac.model.catalog_version import CatalogVersion
from almanac.model.diff import CatalogDiff, value_text
from almanac.model.read_point import ReadPoint, existing_version
from almanac.node.catalog import Catalog
from almanac.server.auth import COOKIE
from almanac.server.errors import status_of
from almanac.server.views import iso, version_view
from almanac.sql.reads import history_infos

__all__ = [
    "HISTORY_PAGE",
    "MAX_LOGIN_BYTES",
    "SNAPSHOTS_SHOWN",
    "diff_rows",
    "router",
    "same_origin",
    "table_data",
]

HISTORY_PAGE = 100
"""Versions per history page."""
SNAPSHOTS_SHOWN = 50
"""The newest data snapshots a table page lists (each reads Iceberg metadata)."""

MAX_LOGIN_BYTES = 8192
"""The most a login form may send; the server reads no more."""

_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        "img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}
"""No script but the console's own file runs, whatever a page shows."""

_TITLES = {400: "Bad request", 404: "Not found", 409: "Conflict", 410: "Gone", 503: "Unavailable"}


def diff_rows(diff: CatalogDiff) -> list[DiffRow]:
    """The diff as side-by-side lines: one per added or removed object, with
    its definition on the side that holds it, and one per changed field,
    each value as a person reads it."""
    rows = [DiffRow("removed", r.kind, r.name, "", r.definition, "—") for r in diff.removed]
    rows += [DiffRow("added", r.kind, r.name, "", "—", r.definition) for r in diff.added]
    for change in diff.changed:
        rows += [
            DiffRow(
                "changed",
                change.kind,
                change.name,
                f.field,
                value_text(f.before),
                value_text(f.after),
            )
            for f in change.fields
        ]
    return rows


def _int_param(request: Request, name: str) -> int | None:
    """An optional whole-number query parameter; ``ValidationError`` naming it otherwise."""
    text = request.query_params.get(name)
    if text is None or text == "":
        return None
    if not (text.isascii() and text.isdigit()) or len(text) > 19:
        raise ValidationError(
            f"Query parameter '{name}' must be a version number, got {text[:40]!r}",
            parameter=name,
            rule="version-number",
        )
    return int(text)


def _history_table(request: Request) -> tuple[str, str] | None:
    """The table a history page is filtered to (``?schema=S&table=T``), if any."""
    table = request.query_params.get("table")
    if not table:
        return None
    return request.query_params.get("schema") or "PUBLIC", table


def _schema_of(version: CatalogVersion, schema_id: int) -> str:
    schema = version.schemas_by_id.get(schema_id)
    return schema.name if schema is not None else f"#{schema_id}"


def _safe_next(path: str | None) -> str:
    """Where a login returns to: only a path on this server."""
    if not path or not path.startswith("/") or path.startswith("//") or "\\" in path:
        return "/"
    return path


def same_origin(request: Request) -> bool:
    """Whether a form POST may come from this server's own pages: its
    ``Origin`` (else its ``Referer``) must name the host and port it was
    sent to (its ``Host``), so another site cannot log a browser in with the
    attacker's token or out. A request with neither header is taken: every
    browser sends ``Origin`` with a form POST, so it comes from no browser,
    and no browser's cookie rides on it. ``Origin: null`` (a sandboxed or
    privacy-stripped page) is refused."""
    source = request.headers.get("origin")
    if source is None:
        source = request.headers.get("referer")
        if source is None:
            return True
    host = (request.headers.get("host") or "").strip().lower()
    try:
        parts = urlsplit(source.strip())
    except ValueError:  # a malformed URL (a bad IPv6 literal) is no origin of ours
        return False
    return bool(host) and parts.scheme in ("http", "https") and parts.netloc.lower() == host


def _html(text: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(text, status_code=status, headers=_HEADERS)


def _static(name: str) -> bytes:
    return resources.files("almanac.console").joinpath("static", name).read_bytes()


def _table_names(request: Request) -> tuple[str, str]:
    """Schema and table from the raw path, so a name holding ``/`` (sent as
    ``%2F``) stays one name."""
    raw = request.scope.get("raw_path") or request.url.path.encode()
    parts = bytes(raw).decode("latin-1").split("/")
    if len(parts) != 4 or not parts[2] or not parts[3]:
        raise NotFoundError(
            "A table page is /tables/<schema>/<table>, each name percent-encoded",
            rule="table-path",
        )
    return unquote(parts[2], errors="replace"), unquote(parts[3], errors="replace")


def table_data(cat: Catalog, table_id: int, version: int | None = None) -> DataSnapshots:
    """The table's newest data snapshots (as of catalog ``version`` when
    given), or why the catalog has none to show."""
    try:
        from almanac.data.commits import TableData
        from almanac.data.deletes import live_rows
    except ImportError:
        return DataSnapshots(
            missing="This server has no data-plane packages (pyarrow, pyiceberg installed "
            "with almanac[spark]), so table data is not shown."
        )
    try:
        data = TableData.for_catalog(cat)
    except CatalogError:
        return DataSnapshots(missing="This catalog has no warehouse: its tables hold no data.")
    try:
        records = data.records(table_id)
        kept = records
        if version is not None:
            shown = data.record_at(table_id, cat.catalog(version))
            kept = [r for r in records if shown is not None and r.snapshot_id <= shown.snapshot_id]
        snapshots = [data.load(r) for r in kept[-SNAPSHOTS_SHOWN:]]
        rows = [live_rows(s.files, data.warehouse, str(table_id)) for s in snapshots]
    except CatalogError as exc:
        return DataSnapshots(missing=f"The table's data snapshots cannot be read: {exc}")
    return DataSnapshots(
        later=len(records) - len(kept),
        rows=tuple(
            SnapshotRow(
                snapshot_id=s.snapshot_id,
                catalog_version=s.catalog_version,
                committed=iso(s.commit_time),
                operation=s.operation,
                files=len(s.files),
                rows=live,
                bytes=sum(f.size for f in s.files),
            )
            for s, live in zip(snapshots, rows, strict=True)
        ),
    )


def router(cat: Catalog, *, tokens: Tokens | None = None) -> APIRouter:
    """The console's pages over ``cat``; ``tokens`` None means no login."""
    pages = APIRouter(include_in_schema=False)
    css, js, icon = _static("console.css"), _static("console.js"), _static("favicon.svg")

    def first_version() -> int:
        """The oldest version a reader can pick: version 0 is the empty
        catalog before ``init``, which no history or diff names."""
        return max(cat.earliest_version, 1)

    def chrome(version: int, pinned: bool) -> Chrome:
        latest = max(cat.latest_version, version)
        return Chrome(version, latest, first_version(), pinned, auth=tokens is not None)

    def version_of(request: Request) -> tuple[CatalogVersion, Chrome]:
        version = _int_param(request, "version")
        at = ReadPoint(version=version).resolve(cat)
        return at, chrome(at.version, version is not None)

    def respond(request: Request, build: Callable[[], str]) -> Response:
        """The page ``build`` makes, after the log-in check; a ``CatalogError``
        becomes an error page with the status the API gives it."""
        if tokens is not None:
            token = request_token(
                request.method, request.headers.get("authorization"), request.cookies.get(COOKIE)
            )
            if token is None or tokens.role_of(token) is None:
                target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
                return RedirectResponse(f"/login?next={quote(target, safe='')}", 303)
        try:
            return _html(build())
        except CatalogError as exc:
            status = status_of(exc)
            frame = chrome(cat.latest_version, True) if status != 503 else None
            title = _TITLES.get(status, "Error")
            return _html(render_error(status, title, str(exc), frame), status)

    @pages.get("/", response_class=HTMLResponse)
    def tree(request: Request) -> Response:
        def build() -> str:
            version, frame = version_of(request)
            return render_tree(version, frame)

        return respond(request, build)

    @pages.get("/tables/{rest:path}", response_class=HTMLResponse)
    def table(request: Request, rest: str) -> Response:
        return respond(request, lambda: table_page(request))

    def table_page(request: Request) -> str:
        schema_name, table_name = _table_names(request)
        version, frame = version_of(request)
        schema = version.schema(schema_name)
        found = version.table(table_name, schema_name)
        if schema is None or found is None:
            raise NotFoundError(
                f"Table {schema_name}.{table_name} does not exist at catalog version "
                f"{version.version}",
                schema=schema_name,
                table=table_name,
                version=version.version,
            )
        upto = version.version if frame.pinned else None
        return render_table(version, schema, found, table_data(cat, found.id, upto), frame)

    @pages.get("/history", response_class=HTMLResponse)
    def history(request: Request) -> Response:
        return respond(request, lambda: history_page(request))

    def history_page(request: Request) -> str:
        latest, first = cat.latest_version, first_version()
        before = _int_param(request, "before")
        before = latest if before is None else max(first, min(before, latest))
        named = _history_table(request)
        if named is None:
            since = max(first, before - HISTORY_PAGE + 1)
            infos = [i for i in cat.history(since) if i.version <= before][::-1]
            older = since - 1 if since > first else None
            table = None
        else:
            version = cat.catalog(before)
            table = require_table(version, *named)
            infos = list(history_infos(cat, before, HISTORY_PAGE, table.id))
            full = len(infos) == HISTORY_PAGE and infos[-1].version > first
            older = infos[-1].version - 1 if full else None
            named = (_schema_of(version, table.schema_id), table.name)
        views = [version_view(cat, info) for info in infos]
        rows = [HistoryRow(v["version"], v["activated_at"], v["node"], v["summary"]) for v in views]
        newer = min(before + HISTORY_PAGE, latest) if before < latest else None
        return render_history(rows, chrome(latest, False), older=older, newer=newer, table=named)

    @pages.get("/diff", response_class=HTMLResponse)
    def diff(request: Request) -> Response:
        return respond(request, lambda: diff_page(request))

    def diff_page(request: Request) -> str:
        latest = cat.latest_version
        after = _int_param(request, "to")
        after = latest if after is None else after
        before = _int_param(request, "from")
        before = max(after - 1, first_version()) if before is None else before
        found = cat.diff(existing_version(before), existing_version(after))
        return render_diff(found.before, found.after, diff_rows(found), chrome(latest, False))

    def cross_site(request: Request) -> Response | None:
        """The 403 page of a form posted from another site, else None."""
        if same_origin(request):
            return None
        message = (
            f"{request.method} {request.url.path} was sent from another site: the console "
            "takes forms only from its own pages (the Origin or Referer header must name "
            "this server)"
        )
        return _html(render_error(403, "Forbidden", message, None), 403)

    @pages.get("/login", response_class=HTMLResponse)
    def login_form(request: Request) -> Response:
        if tokens is None:
            return RedirectResponse("/", 303)
        return _html(render_login(None, _safe_next(request.query_params.get("next"))))

    @pages.post("/login", response_class=HTMLResponse)
    async def login(request: Request) -> Response:
        refused = cross_site(request)
        if refused is not None:
            return refused
        if tokens is None:
            return RedirectResponse("/", 303)
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_LOGIN_BYTES:
                return _html(render_login("That form is too large.", "/"), 413)
        try:
            form = parse_qs(body.decode("utf-8", "replace"), max_num_fields=4)
        except ValueError:  # more fields than a login form has
            return _html(render_login("That is not the login form.", "/"), 400)
        token = (form.get("token") or [""])[0].strip()
        next_path = _safe_next((form.get("next") or ["/"])[0])
        if not token or tokens.role_of(token) is None:
            message = "That token is not valid here. Ask for a token with the read role."
            return _html(render_login(message, next_path), 401)
        response = RedirectResponse(next_path, 303)
        response.set_cookie(
            COOKIE,
            token,
            httponly=True,
            samesite="strict",
            path="/",
            secure=request.url.scheme == "https",
        )
        return response

    @pages.post("/logout")
    def logout(request: Request) -> Response:
        refused = cross_site(request)
        if refused is not None:
            return refused
        response = RedirectResponse("/login" if tokens is not None else "/", 303)
        response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")
        return response

    @pages.get("/static/console.css")
    def stylesheet() -> Response:
        return Response(css, media_type="text/css; charset=utf-8")

    @pages.get("/static/console.js")
    def script() -> Response:
        return Response(js, media_type="text/javascript; charset=utf-8")

    @pages.get("/favicon.svg")
    @pages.get("/favicon.ico")
    def favicon() -> Response:
        return Response(
            icon, media_type="image/svg+xml", headers={"Cache-Control": "max-age=86400"}
        )

    return pages
