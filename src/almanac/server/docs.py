"""The API's documentation pages (``/docs``, ``/redoc``) with every asset
served by this server, so they work on a machine without internet access.

The Swagger UI and ReDoc bundles come from the ``fastapi-offline`` wheel (a
dependency), read as package data; nothing is fetched from a CDN, and the
page loads no web fonts.
"""

from __future__ import annotations

from importlib import resources

from fastapi import APIRouter
from fastapi.openapi.docs import (
    get_redoc_html,
    get_swagger_ui_html,
    get_swagger_ui_oauth2_redirect_html,
)
from fastapi.responses import HTMLResponse, Response

from almanac.errors import NotFoundError

__all__ = ["ASSETS", "docs_router"]

ASSETS = {
    "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
    "swagger-ui.css": "text/css; charset=utf-8",
    "redoc.standalone.js": "text/javascript; charset=utf-8",
}
"""The files the two pages load, by name, with their media types."""

_STATIC = "/docs/static"
_FAVICON = "/favicon.ico"


def docs_router(openapi_url: str, title: str) -> APIRouter:
    """``/docs`` and ``/redoc`` over ``openapi_url``, and their assets."""
    router = APIRouter(include_in_schema=False)

    @router.get("/docs")
    def swagger() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=openapi_url,
            title=f"{title} API",
            swagger_js_url=f"{_STATIC}/swagger-ui-bundle.js",
            swagger_css_url=f"{_STATIC}/swagger-ui.css",
            swagger_favicon_url=_FAVICON,
            oauth2_redirect_url="/docs/oauth2-redirect",
        )

    @router.get("/docs/oauth2-redirect")
    def oauth2_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()

    @router.get("/redoc")
    def redoc() -> HTMLResponse:
        return get_redoc_html(
            openapi_url=openapi_url,
            title=f"{title} API",
            redoc_js_url=f"{_STATIC}/redoc.standalone.js",
            redoc_favicon_url=_FAVICON,
            with_google_fonts=False,
        )

    @router.get(_STATIC + "/{name}")
    def asset(name: str) -> Response:
        media = ASSETS.get(name)
        if media is None:
            raise NotFoundError(
                f"No documentation asset {name[:80]!r}; there are {', '.join(ASSETS)}",
                rule="docs-asset",
            )
        data = resources.files("fastapi_offline").joinpath("static", name).read_bytes()
        return Response(data, media_type=media, headers={"Cache-Control": "max-age=86400"})

    return router
