"""Bearer tokens: who may read and who may change a catalog through a server.

The HTTP API (``almanac.server.auth`` admits its requests), the console and
the tablet servers' Flight endpoint (``almanac.tserver.auth``) ask for the
same tokens, and a client (``connect``, ``read_table``) checks the one it
sends by the same rule; none of that needs the web framework, so a Flight
client or a tablet server never loads it.

A tokens file (or ``$ALMANAC_TOKENS``) holds one ``ROLE TOKEN`` pair a line;
``#`` starts a comment and blank lines are skipped. A token is compared with
every configured token in constant time, so neither timing nor an early exit
tells a caller how close a guess came. Tokens never appear in an error
message or a log line: a bad line is named by its file and line number. A
server without tokens may only listen on a loopback address
(:func:`is_loopback`), unless told ``insecure``.
"""

from __future__ import annotations

import enum
import hmac
import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass

from almanac import _check as check
from almanac._files import read_small_file, shown_path
from almanac.errors import ValidationError

__all__ = [
    "ENV_VARIABLE",
    "MAX_TOKENS_BYTES",
    "Role",
    "Tokens",
    "check_token",
    "is_loopback",
    "is_token",
    "request_token",
]

ENV_VARIABLE = "ALMANAC_TOKENS"
MAX_TOKENS_BYTES = 2**20
"""The largest tokens file read (a line is about 70 bytes)."""


class Role(enum.Enum):
    READ = "read"
    ADMIN = "admin"

    def allows(self, needed: Role) -> bool:
        return self is Role.ADMIN or needed is Role.READ


def is_token(text: str) -> bool:
    """The one rule for a bearer token: printable ASCII without spaces (what an
    ``Authorization`` header carries), as a tokens file holds and a client sends."""
    return bool(text) and all("!" <= ch <= "~" for ch in text)


def check_token(token: object, what: str) -> str:
    """A token a client was given, refused before it is sent when it breaks the rule."""
    text = check.string(token, what, nonblank=True)
    if not is_token(text):
        raise ValidationError(
            f"{what} must be printable ASCII without spaces (a bearer token)",
            parameter="token",
        )
    return text


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
            if not is_token(token):
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


def is_loopback(host: str) -> bool:
    """``localhost`` or a loopback address; a host name is not trusted to be one."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
