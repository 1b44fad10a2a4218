"""The HTTP API of a catalog node: FastAPI served by uvicorn.

``create_app(cat, tokens=...)`` builds the application over an open catalog;
``serve(target, ...)`` opens the catalog, checks where it may listen, and
runs the application until SIGINT or SIGTERM.
"""

from almanac.server.app import create_app
from almanac.server.serve import serve

__all__ = ["create_app", "serve"]
