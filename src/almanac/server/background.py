"""The HTTP API of an open catalog on a loopback port of this process, for
as long as its owner needs it: what ``almanac.spark.session`` gives Spark's
Iceberg runtime for a local target, so that no ``almanac serve`` runs beside.

The same application and uvicorn server as ``serve``, on a daemon thread; a
random admin token, handed only to its owner, keeps other local users out.
"""

from __future__ import annotations

import secrets
import threading

import uvicorn

from almanac.access.tokens import Role, Tokens
from almanac.errors import CatalogError
from almanac.node.catalog import Catalog
from almanac.server.app import create_app
from almanac.server.serve import _bind, _Server, _url

__all__ = ["BackgroundServer"]

LOOPBACK_HOST = "127.0.0.1"
_STOP_S = 60.0
"""How long ``stop`` waits for uvicorn to finish: generous, for a loaded machine."""


class BackgroundServer:
    """Serves ``cat`` until ``stop``; ``url`` and ``token`` reach it. The
    catalog stays the caller's to close, after ``stop``."""

    def __init__(self, cat: Catalog) -> None:
        self.token = secrets.token_hex(24)
        self._app = create_app(cat, tokens=Tokens(((Role.ADMIN, self.token.encode()),)))
        self._sock = _bind(LOOPBACK_HOST, 0)
        self.url = _url(LOOPBACK_HOST, self._sock.getsockname()[1])
        self._ready = threading.Event()
        config = uvicorn.Config(
            self._app,
            log_config=None,
            access_log=False,
            lifespan="off",
            timeout_graceful_shutdown=1,
        )
        self._server = _Server(config, self._ready.set)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True
        )

    def start(self) -> BackgroundServer:
        """Start serving; returns once the server accepts connections."""
        self._thread.start()
        while not self._ready.wait(0.05):
            if not self._thread.is_alive():
                self._sock.close()
                raise CatalogError(
                    f"The catalog server for this process could not start on {self.url}",
                    url=self.url,
                )
        return self

    def stop(self) -> None:
        """Stop serving (idempotent); open event streams end first."""
        self._server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(_STOP_S)
        self._sock.close()
