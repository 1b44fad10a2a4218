"""Who may read a tablet server's Flight endpoint: the bearer tokens of
``almanac serve`` (``almanac.access.tokens.Tokens``, every role reads).

A client sends ``authorization: Bearer TOKEN`` with every call; the
server's middleware admits a call before any handler runs, so every RPC
(``DoGet``, ``GetFlightInfo``, ``ListFlights``, actions, ...) is covered,
including those added later. A server without tokens admits everyone, and
like ``serve`` it may then only listen on a loopback address unless told
``insecure``.
"""

from __future__ import annotations

from typing import Any

import pyarrow.flight as flight

from almanac.access.tokens import Role, Tokens, is_loopback, request_token
from almanac.errors import ValidationError

__all__ = ["HEADER", "RULE", "TokenCheck", "bearer_headers", "check_exposure"]

HEADER = "authorization"
"""gRPC metadata keys are lowercase."""

RULE = "tablet server reads need a bearer token of its tokens"


def bearer_headers(token: str | None) -> list[tuple[bytes, bytes]]:
    """The call headers that carry ``token`` (none without one)."""
    return [] if token is None else [(HEADER.encode(), f"Bearer {token}".encode("ascii"))]


def check_exposure(server: str, host: str, tokens: Tokens | None, insecure: bool) -> None:
    """Refuse, as ``serve`` does, to let anyone off this machine read without a token."""
    if tokens is None and not insecure and not is_loopback(host):
        raise ValidationError(
            f"Tablet server '{server}' refuses to serve Flight on non-loopback address "
            f"'{host}' without tokens: give a tokens file or $ALMANAC_TOKENS, or say insecure "
            "to serve anyone who can reach it",
            host=host,
            rule="tokens required off loopback",
        )


class TokenCheck(flight.ServerMiddlewareFactory):  # type: ignore[misc]
    """Admits a call whose bearer token is one of ``tokens`` (compared in
    constant time); refuses any other as unauthenticated. The token is
    never echoed."""

    def __init__(self, server: str, tokens: Tokens) -> None:
        super().__init__()
        self._server = server
        self._tokens = tokens

    def start_call(self, info: Any, headers: dict[str, list[Any]]) -> None:
        values = headers.get(HEADER, [])
        sent = values[0] if len(values) == 1 and isinstance(values[0], str) else None
        token = None if sent is None else request_token("", sent, None)
        if token is None:
            raise flight.FlightUnauthenticatedError(
                f"Tablet server '{self._server}' needs a bearer token ('{HEADER}: Bearer "
                f"TOKEN'): {RULE}"
            )
        role = self._tokens.role_of(token)
        if role is None:
            raise flight.FlightUnauthenticatedError(
                f"Tablet server '{self._server}' does not know the bearer token sent: {RULE}"
            )
        if not role.allows(Role.READ):  # every role reads today; a write-only one would not
            raise flight.FlightUnauthorizedError(
                f"Tablet server '{self._server}': a {role.value} token cannot read"
            )
        return None
