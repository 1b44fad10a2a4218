"""The Arrow Flight endpoint of a tablet server: ``DoGet`` on a
``TabletTicket`` streams that tablet's rows. Only tablets the server hosts
are served, so a reader that reached a server its route no longer names is
told so instead of reading behind the placement's back. With ``tokens``
every call needs one of them (``almanac.tserver.auth``)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
import pyarrow.flight as flight

from almanac.access.tokens import Tokens
from almanac.errors import CatalogError, CorruptDataError
from almanac.tserver.auth import TokenCheck
from almanac.tserver.ticket import TabletTicket

__all__ = ["DAMAGED", "TabletFlightService"]

DAMAGED = b"almanac:corrupt-data"
"""The ``extra_info`` of a Flight error for a data file found damaged in the
warehouse (and in the cache): another replica cannot read it either."""

_log = logging.getLogger("almanac.tserver")

Rows = Callable[[TabletTicket], tuple[pa.Schema, Iterator[pa.RecordBatch]]]


class TabletFlightService(flight.FlightServerBase):  # type: ignore[misc]
    """Serves ``rows(ticket)`` on ``location`` (``grpc://127.0.0.1:0`` picks a port)."""

    def __init__(self, location: str, server: str, rows: Rows, tokens: Tokens | None) -> None:
        middleware = None if tokens is None else {"auth": TokenCheck(server, tokens)}
        super().__init__(location, middleware=middleware)
        self._server = server
        self._rows = rows

    def do_get(self, context: Any, ticket: flight.Ticket) -> flight.FlightDataStream:
        try:
            parsed = TabletTicket.decode(ticket.ticket)
            schema, batches = self._rows(parsed)
        except CatalogError as exc:
            raise self._error(exc) from None
        except Exception as exc:
            _log.exception("A read failed on tablet server '%s'", self._server)
            raise flight.FlightServerError(
                f"Tablet server '{self._server}' failed to read: {exc}"
            ) from None
        return flight.GeneratorStream(schema, self._guard(batches))

    def _guard(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        try:
            yield from batches
        except CatalogError as exc:
            raise self._error(exc) from None

    def _error(self, exc: CatalogError) -> flight.FlightServerError:
        info = DAMAGED if isinstance(exc, CorruptDataError) else b""
        return flight.FlightServerError(f"Tablet server '{self._server}': {exc}", extra_info=info)
