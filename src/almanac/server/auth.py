"""Admitting a request to the HTTP API by its bearer token (the tokens and
their roles are ``almanac.access.tokens``): ``require(role)`` is the
FastAPI dependency, and the console's login cookie is honoured for reads.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated

from fastapi import Depends, Request, Security
from fastapi.security import APIKeyCookie, HTTPBearer

from almanac.access.tokens import Role, Tokens, request_token

__all__ = ["ADMIN", "COOKIE", "READ", "AuthError", "forbidden", "require"]

COOKIE = "almanac_token"
"""The cookie the console's login page sets; honoured for GET and HEAD only,
so a page on another site cannot make a browser change the catalog."""


_bearer = HTTPBearer(auto_error=False, description="`Authorization: Bearer TOKEN`")
_cookie = APIKeyCookie(
    name=COOKIE, auto_error=False, description="set by the console's login page; GET/HEAD only"
)


class AuthError(Exception):
    """A request without a valid token (401) or with too weak a role (403)."""

    def __init__(self, status: int, error: str, message: str, challenge: str) -> None:
        super().__init__(message)
        self.status = status
        self.error = error
        self.message = message
        self.challenge = challenge


def forbidden(message: str) -> AuthError:
    """The 403 of a valid token whose role is too weak for the request."""
    challenge = 'Bearer realm="almanac", error="insufficient_scope"'
    return AuthError(403, "Forbidden", message, challenge)


def require(needed: Role) -> Callable[..., Awaitable[Role]]:
    """A dependency that admits a request whose token has the ``needed`` role."""

    async def authorize(  # async: a cheap check that needs no threadpool hop
        request: Request,
        _bearer_doc: Annotated[object, Security(_bearer)] = None,
        _cookie_doc: Annotated[object, Security(_cookie)] = None,
    ) -> Role:
        tokens: Tokens | None = request.app.state.tokens
        if tokens is None:
            return Role.ADMIN
        token = request_token(
            request.method, request.headers.get("authorization"), request.cookies.get(COOKIE)
        )
        if token is None:
            raise AuthError(
                401, "Unauthorized", "This request needs a bearer token", 'Bearer realm="almanac"'
            )
        role = tokens.role_of(token)
        if role is None:
            raise AuthError(
                401,
                "Unauthorized",
                "The bearer token is not valid",
                'Bearer realm="almanac", error="invalid_token"',
            )
        if not role.allows(needed):
            raise forbidden(f"A {role.value} token cannot make changes; this needs an admin token")
        return role

    return authorize


READ = Depends(require(Role.READ))
ADMIN = Depends(require(Role.ADMIN))
