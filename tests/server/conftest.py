"""One server per module: a real uvicorn process on a free loopback port,
over a durable catalog in a fresh directory, with an admin and a read token."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .support import Server

ADMIN_TOKEN = "admin-7f3c9b1e2d5a4c68"
READ_TOKEN = "read-0e4d2b9a7c1f3e55"


@pytest.fixture(scope="module")
def server_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("server")


@pytest.fixture(scope="module")
def server(server_dir: Path) -> Iterator[Server]:
    tokens = server_dir / "tokens"
    tokens.write_text(
        f"# who may do what\nadmin {ADMIN_TOKEN}\n\nread  {READ_TOKEN}  \n", encoding="utf-8"
    )
    srv = Server(
        str(server_dir / "catalog"), "--tokens-file", str(tokens), log=server_dir / "server.log"
    )
    try:
        yield srv
    finally:
        assert srv.stop() == 0, srv.log_text()
