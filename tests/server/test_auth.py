"""Tokens files, roles, what a request's token is, the loopback rule, and
how errors map to statuses: in process, except where ``serve`` itself must
refuse to start."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from almanac.access.tokens import Role, Tokens, is_loopback, request_token
from almanac.errors import (
    AlreadyExistsError,
    CatalogError,
    ConflictError,
    CorruptLogError,
    DataError,
    MetastoreUnavailableError,
    NotFoundError,
    SqlParseError,
    ValidationError,
    VersionNotFoundError,
    WaitTimeoutError,
)
from almanac.server.errors import error_body, status_of
from tests.waiting import PATIENCE

from .support import worker

SECRET = "s3cr3t-token-value"


def test_parse_reads_roles_and_skips_comments_and_blank_lines() -> None:
    tokens = Tokens.parse(
        f"# comment\n\n  admin   {SECRET}  \nREAD other-token\n   # indented comment\n", "F"
    )
    assert tokens.role_of(SECRET) is Role.ADMIN
    assert tokens.role_of("other-token") is Role.READ
    assert tokens.role_of("nope") is None
    assert tokens.role_of("") is None
    assert tokens.role_of(SECRET + "x") is None
    assert tokens.role_of(SECRET[:-1]) is None
    assert tokens.role_of("ünïcode") is None
    assert SECRET not in repr(tokens)


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        (f"# c\nwriter {SECRET}\n", 2, "unknown role"),
        (f"admin {SECRET} extra\n", 1, "expected 'ROLE TOKEN'"),
        ("admin\n", 1, "expected 'ROLE TOKEN'"),
        (f"admin {SECRET}\n\nread {SECRET}\n", 3, "already on line 1"),
        (f"admin tok\u00e9n-{SECRET}\n", 1, "printable ASCII"),
    ],
)
def test_a_bad_line_names_the_file_and_line_never_the_token(
    text: str, line: int, words: str
) -> None:
    with pytest.raises(ValidationError) as info:
        Tokens.parse(text, "tokens file 'x.txt'")
    message = str(info.value)
    assert f"tokens file 'x.txt', line {line}" in message and words in message
    assert SECRET not in message and SECRET not in repr(info.value.context)


def test_a_file_without_tokens_is_refused() -> None:
    with pytest.raises(ValidationError, match="holds no tokens"):
        Tokens.parse("# nothing\n\n", "F")


def test_load_prefers_the_file_then_the_environment(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    path.write_text(f"read {SECRET}\n", encoding="utf-8")
    env = {"ALMANAC_TOKENS": "admin env-token"}
    from_file = Tokens.load(str(path), env)
    assert from_file is not None and from_file.role_of(SECRET) is Role.READ
    assert from_file.role_of("env-token") is None
    from_env = Tokens.load(None, env)
    assert from_env is not None and from_env.role_of("env-token") is Role.ADMIN
    assert Tokens.load(None, {}) is None
    with pytest.raises(ValidationError, match=r"\$ALMANAC_TOKENS, line 1"):
        Tokens.load(None, {"ALMANAC_TOKENS": "root x"})
    with pytest.raises(ValidationError, match="Cannot read tokens file"):
        Tokens.load(str(tmp_path / "missing"), env)


@settings(max_examples=200, deadline=None)
@given(
    known=st.lists(
        st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=20),
        min_size=1,
        max_size=5,
        unique=True,
    ),
    guess=st.text(max_size=24),
)
def test_role_of_finds_exactly_the_configured_tokens(known: list[str], guess: str) -> None:
    roles = [Role.ADMIN if i % 2 else Role.READ for i in range(len(known))]
    lines = [f"{r.value} {t}" for r, t in zip(roles, known, strict=True)]
    tokens = Tokens.parse("\n".join(lines), "F")
    expected = dict(zip(known, roles, strict=True)).get(guess)
    assert tokens.role_of(guess) is expected
    for token, role in zip(known, roles, strict=True):
        assert tokens.role_of(token) is role


def test_roles_allow() -> None:
    assert Role.ADMIN.allows(Role.ADMIN) and Role.ADMIN.allows(Role.READ)
    assert Role.READ.allows(Role.READ) and not Role.READ.allows(Role.ADMIN)


def test_the_token_of_a_request() -> None:
    assert request_token("POST", "Bearer abc", None) == "abc"
    assert request_token("GET", "bearer  abc ", "cookie") == "abc"
    assert request_token("GET", "Basic abc", "cookie") is None  # a header that is not ours
    assert request_token("GET", None, "cookie") == "cookie"
    assert request_token("HEAD", None, "cookie") == "cookie"
    assert request_token("POST", None, "cookie") is None
    assert request_token("DELETE", None, "cookie") is None
    assert request_token("GET", "Bearer ", None) is None


def test_loopback_hosts() -> None:
    for host in ("127.0.0.1", "127.8.9.10", "::1", "[::1]", "localhost", "LOCALHOST"):
        assert is_loopback(host), host
    for host in ("0.0.0.0", "::", "192.168.1.2", "example.com", "10.0.0.1", "localhost.evil"):
        assert not is_loopback(host), host


def test_serve_refuses_a_non_loopback_host_without_tokens(tmp_path: Path) -> None:
    log = tmp_path / "log"
    env = {k: v for k, v in os.environ.items() if k != "ALMANAC_TOKENS"}
    proc = worker(str(tmp_path / "catalog"), "--host", "0.0.0.0", env=env, log=log)
    out, _ = proc.communicate(timeout=PATIENCE)
    assert proc.returncode == 1
    assert "Listening" not in out
    text = log.read_text()
    assert "ValidationError: Refusing to serve on non-loopback address '0.0.0.0'" in text
    assert not (tmp_path / "catalog").exists()  # refused before the catalog was opened


def test_serve_names_a_bad_tokens_file_line_without_the_token(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text(f"admin {SECRET}\nsuperuser {SECRET}-2\n", encoding="utf-8")
    log = tmp_path / "log"
    proc = worker(str(tmp_path / "catalog"), "--tokens-file", str(tokens), log=log)
    proc.communicate(timeout=PATIENCE)
    assert proc.returncode == 1
    text = log.read_text()
    assert f"tokens file '{tokens}', line 2: unknown role" in text
    assert SECRET not in text


# --------------------------------------------------------------------------- statuses


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (ValidationError("x"), 400),
        (DataError("x"), 400),
        (SqlParseError("x", line=1, column=2, text="t"), 400),
        (NotFoundError("x"), 404),
        (AlreadyExistsError("x"), 409),
        (ConflictError("x", attempts=3), 409),
        (VersionNotFoundError("x", version=9, earliest=3), 404),  # not made yet
        (VersionNotFoundError("x", version=2, earliest=3), 410),  # truncated
        (VersionNotFoundError("x", version=-1, earliest=3), 404),  # nothing active then
        (MetastoreUnavailableError("x"), 503),
        (WaitTimeoutError("x", awaited="y", timeout=1.0), 503),
        (CatalogError("The catalog is closed"), 503),
        (CorruptLogError("x"), 500),
    ],
)
def test_status_of(error: CatalogError, status: int) -> None:
    assert status_of(error) == status


def test_error_details_are_json_safe() -> None:
    import datetime as dt
    import json

    body = error_body(
        "E",
        "m",
        {
            "when": dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
            "ids": (1, 2),
            "names": frozenset({"b", "a"}),
            "inf": float("inf"),
            "raw": b"\x00\x01",
            "role": Role.READ,
            "obj": object(),
            "nested": {1: [None, True]},
            "big": 2**100,
        },
    )
    json.dumps(body, allow_nan=False)
    assert body["details"]["ids"] == [1, 2] and body["details"]["names"] == ["a", "b"]
    assert body["details"]["nested"] == {"1": [None, True]}
    assert body["details"]["role"] == "read" and body["details"]["big"] == str(2**100)


def test_serve_checks_its_arguments_and_a_busy_port(tmp_path: Path) -> None:
    from almanac.server import serve

    with pytest.raises(ValidationError, match="'port'"):
        serve("memory://", port=70000)
    with pytest.raises(ValidationError, match="'host'"):
        serve("memory://", host="")
    with pytest.raises(ValidationError, match="'insecure'"):
        serve("memory://", insecure="yes")  # type: ignore[arg-type]
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(CatalogError, match=f"Cannot listen on http://127.0.0.1:{port}"):
            serve("memory://", port=port)
