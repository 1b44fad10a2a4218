"""The web console: read-only HTML pages over a catalog, served by
``almanac serve`` at ``/`` beside the HTTP API.

Pages are rendered on the server (Jinja2 templates shipped with the
package, autoescaped); one small script follows ``/v1/events`` for live
updates. Nothing is fetched from another site and nothing needs building.
"""

from almanac.console.routes import router

__all__ = ["router"]
