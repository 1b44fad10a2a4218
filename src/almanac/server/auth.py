"""Bearer tokens of the HTTP API: who may read and who may change the catalog.

A tokens file (or ``$ALMANAC_TOKENS``) holds one ``ROLE TOKEN`` pair a line;
``#`` starts a comment and blank lines are skipped. A token is compared with
every configured token in constant time, so neither timing nor an early exit
tells a caller how close a guess came. Tokens never appear in an error
message or a log line: a bad line is named by its file and line number.
``require(role)`` is the FastAPI dependency that admits a request.
"""

from __future__ import annotations

import enum
import hmac
import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request, Security
from fastapi.security import APIKeyCookie, HTTPBearer

from almanac._files import read_small_file, shown_path
from almanac.errors import ValidationError

__all__ = [
    "ADMIN",
    "COOKIE",
    "ENV_VARIABLE",
    "MAX_TOKENS_BYTES",
    "READ",
    "AuthError",
    "Role",
    "Tokens",
    "forbidden",
    "request_token",
    "require",
]

ENV_VARIABLE = "ALMANAC_TOKENS"
MAX_TOKENS_BYTES = 2**20
"""The largest tokens file read (a line is about 70 bytes)."""
COOKIE = "almanac_token"
"""The cookie the console's login page sets; honoured for GET and HEAD only,
so a page on another site cannot make a browser change the catalog."""


class Role(enum.Enum):
    READ = "read"
    ADMIN = "admin"

    def allows(self, needed: Role) -> bool:
        return self is Role.ADMIN or needed is Role.READ


def _valid_token(token: str) -> bool:
    """Printable ASCII without spaces: what an ``Authorization`` header carries."""
    return bool(token) and all("!" <= ch <= "~" for ch in token)


@dataclass(frozen=True, slots=True)
class Tokens:
    """The configured tokens with their roles; ``repr`` never shows a token."""

    entries: tuple[tuple[Role, bytes], ...]

    def __repr__(self) -> str:
        roles = ", ".join(role.value for role, _ in self.entries)
        return f"Tokens({roles})"

    @classmethod
    def parse(cls, text: str, source: str) -> Tokens:
        """Read ``ROLE TOKEN`` lines; ``source`` names the text in errors."""
        entries: list[tuple[Role, bytes]] = []
        seen: dict[bytes, int] = {}
        for number, raw in enumerate(text.splitlines(), start=1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            where = f"{source}, line {number}"
            parts = line.split()
            if len(parts) != 2:
                raise ValidationError(
                    f"{where}: expected 'ROLE TOKEN' (ROLE is read or admin), "
                    f"found {len(parts)} field(s)",
                    source=source,
                    line=number,
                    rule="tokens file",
                )
            role_text, token = parts
            try:
                role = Role(role_text.lower())
            except ValueError:
                raise ValidationError(
                    f"{where}: unknown role (expected read or admin)",
                    source=source,
                    line=number,
                    rule="tokens file",
                ) from None
            if not _valid_token(token):
                raise ValidationError(
                    f"{where}: a token must be printable ASCII without spaces",
                    source=source,
                    line=number,
                    rule="tokens file",
                )
            key = token.encode("ascii")
            if key in seen:
                raise ValidationError(
                    f"{where}: the same token is already on line {seen[key]}",
                    source=source,
                    line=number,
                    rule="tokens file",
                )
            seen[key] = number
            entries.append((role, key))
        if not entries:
            raise ValidationError(
                f"{source} holds no tokens: every request would be refused",
                source=source,
                rule="tokens file",
            )
        return cls(tuple(entries))

    @classmethod
    def load(cls, tokens_file: str | None, env: Mapping[str, str] = os.environ) -> Tokens | None:
        """The tokens of ``tokens_file``, else of ``$ALMANAC_TOKENS``, else None."""
        if tokens_file is not None:
            data = read_small_file(tokens_file, limit=MAX_TOKENS_BYTES, what="tokens file")
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ValidationError(
                    f"Cannot read tokens file {shown_path(tokens_file)}: {exc}",
                    source=tokens_file,
                    rule="tokens file",
                ) from exc
            return cls.parse(text, f"tokens file '{tokens_file}'")
        value = env.get(ENV_VARIABLE)
        if value is None:
            return None
        return cls.parse(value, f"${ENV_VARIABLE}")

    def role_of(self, token: str) -> Role | None:
        """The role of ``token``, or None; every entry is compared, in constant time."""
        try:
            given = token.encode("ascii")
        except UnicodeEncodeError:
            given = b""
        found: Role | None = None
        for role, known in self.entries:
            if hmac.compare_digest(given, known) and found is None:
                found = role
        return found


def request_token(method: str, authorization: str | None, cookie: str | None) -> str | None:
    """The token a request carries: a bearer header, else the console's cookie
    on a GET or HEAD."""
    if authorization is not None:
        scheme, _, value = authorization.strip().partition(" ")
        if scheme.lower() == "bearer" and value.strip():
            return value.strip()
        return None
    if cookie and method in ("GET", "HEAD"):
        return cookie
    return None


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
