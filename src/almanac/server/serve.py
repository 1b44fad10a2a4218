"""``serve``: one catalog node behind the HTTP API, until SIGINT or SIGTERM.

The loopback rule is checked before the catalog is opened and before any
socket is bound: a server reachable from other machines must have tokens,
unless its operator says ``insecure`` in so many words.
"""

from __future__ import annotations

import logging
import signal
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

import uvicorn

from almanac import _check as check
from almanac.access.tokens import Tokens, is_loopback
from almanac.errors import CatalogError, ValidationError
from almanac.placement.settings import PlacementSettings
from almanac.server.app import create_app, stop_streams

__all__ = ["serve"]

_log = logging.getLogger("almanac.server")
_GRACEFUL_SHUTDOWN_S = 5


def _url(host: str, port: int) -> str:
    shown = f"[{host.strip('[]')}]" if ":" in host else host
    return f"http://{shown}:{port}"


def _bind(host: str, port: int) -> socket.socket:
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host.strip("[]"), port, type=socket.SOCK_STREAM
        )[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise CatalogError(
            f"Cannot listen on {_url(host, port)}: {exc}", host=host, port=port
        ) from exc
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise CatalogError(
            f"Cannot listen on {_url(host, port)}: {exc}", host=host, port=port
        ) from exc
    return sock


class _Server(uvicorn.Server):
    """uvicorn, announcing itself once it accepts and ending event streams
    before it waits for open connections to finish."""

    def __init__(self, config: uvicorn.Config, started: Callable[[], None]) -> None:
        super().__init__(config)
        self._on_started = started

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started and not self.should_exit:
            self._on_started()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        stop_streams(self.config.app)
        await super().shutdown(sockets)


@contextmanager
def _signals_end_serving() -> Iterator[None]:
    """uvicorn re-raises the signal that stopped it once it has shut down;
    with these handlers that returns from ``serve`` (closing the catalog)
    instead of killing the process."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def received(signum: int, frame: FrameType | None) -> None:
        _log.info("%s received: stopped", signal.Signals(signum).name)

    previous = {s: signal.signal(s, received) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def serve(
    target: str,
    *,
    host: str = "127.0.0.1",
    port: int = 8181,
    tokens_file: str | None = None,
    insecure: bool = False,
    warehouse: str | None = None,
    ready: Callable[[int], None] | None = None,
    placement: bool | PlacementSettings = True,
    soft_delete_reserve_s: float = 0.0,
    create: bool = True,
) -> None:
    """Open ``target`` and serve the HTTP API on ``host:port`` (0: a free port)
    until SIGINT or SIGTERM, then close the catalog. Tokens come from
    ``tokens_file``, else ``$ALMANAC_TOKENS``; without any, only a loopback
    host is allowed, unless ``insecure``. With ``placement`` the node takes
    part in tablet placement (with these settings, or the defaults for
    ``True``). ``soft_delete_reserve_s`` is the reserve of a DROP TABLE the
    server commits without one. Prints
    ``Listening on URL`` once it accepts connections, and calls ``ready(port)``.
    ``create=False`` refuses a target that holds no catalog (``almanac serve``)."""
    import almanac

    check.string(host, "Parameter 'host' of serve", nonblank=True)
    check.integer(port, "Parameter 'port' of serve", lo=0, hi=65535)
    check.optional_str(tokens_file, "Parameter 'tokens_file' of serve", nonblank=True)
    check.boolean(insecure, "Parameter 'insecure' of serve")
    if ready is not None:
        check.callable_(ready, "Parameter 'ready' of serve")
    tokens = Tokens.load(tokens_file)
    if tokens is None and not insecure and not is_loopback(host):
        raise ValidationError(
            f"Refusing to serve on non-loopback address '{host}' without tokens: give a tokens "
            f"file or $ALMANAC_TOKENS, or say insecure to serve anyone who can reach it",
            host=host,
            rule="tokens required off loopback",
        )
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    if isinstance(placement, PlacementSettings):
        settings: PlacementSettings | None = placement
    else:
        check.boolean(placement, "Parameter 'placement' of serve")
        settings = PlacementSettings() if placement else None
    cat = almanac.connect(
        target,
        warehouse=warehouse,
        placement=settings,
        soft_delete_reserve_s=soft_delete_reserve_s,
        create=create,
    )
    try:
        app = create_app(cat, tokens=tokens)
        sock = _bind(host, port)
        bound = sock.getsockname()[1]

        def started() -> None:
            url = _url(host, bound)
            _log.info("Listening on %s (catalog %s, auth %s)", url, cat.target, _auth_mode(tokens))
            print(f"Listening on {url}", flush=True)
            if ready is not None:
                ready(bound)

        config = uvicorn.Config(
            app,
            log_config=None,
            access_log=False,  # the app logs method, path and status: never a header or query
            lifespan="off",
            timeout_graceful_shutdown=_GRACEFUL_SHUTDOWN_S,
        )
        with _signals_end_serving():
            _Server(config, started).run(sockets=[sock])
    finally:
        cat.close()
    sys.stdout.flush()


def _auth_mode(tokens: Tokens | None) -> str:
    return "off" if tokens is None else f"{len(tokens.entries)} token(s)"
