"""One real ``almanac serve`` per test process, reached by pyiceberg's own
``RestCatalog`` under ``/iceberg``: an admin token that may change the
catalog and a read token that may only look. Each module works in its own
namespaces, so the modules share the server (starting one costs seconds)."""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pyiceberg.catalog.rest import RestCatalog

import almanac
from almanac.node.catalog import Catalog
from tests.server.support import Server
from tests.spark.conftest import spark  # noqa: F401  (the one session of the run)
from tests.waiting import PATIENCE

ADMIN_TOKEN = "iceberg-admin-5b2e8c71d04f"
READ_TOKEN = "iceberg-read-9a13f6e2c7b8"
PREFIX = "/iceberg"


@pytest.fixture(scope="session")
def server_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("iceberg-rest")


@pytest.fixture(scope="session")
def target(server_dir: Path) -> str:
    """The served catalog, which the tests also open as a second node."""
    return str(server_dir / "catalog")


@pytest.fixture(scope="session")
def server(server_dir: Path, target: str) -> Iterator[Server]:
    tokens = server_dir / "tokens"
    tokens.write_text(f"admin {ADMIN_TOKEN}\nread {READ_TOKEN}\n", encoding="utf-8")
    srv = Server(target, "--tokens-file", str(tokens), log=server_dir / "server.log")
    try:
        yield srv
    finally:
        assert srv.stop() == 0, srv.log_text()


@contextlib.contextmanager
def own_server(directory: Path, *serve: str, **connect: Any) -> Iterator[tuple[Server, Catalog]]:
    """A server of its own over a new catalog in ``directory`` (admin token
    only; ``serve``: more arguments of ``serve_worker``) and a second node of
    that catalog opened with ``connect``: for tests that run the janitor over
    the whole warehouse or change retention."""
    tokens = directory / "tokens"
    tokens.write_text(f"admin {ADMIN_TOKEN}\n", encoding="utf-8")
    target = str(directory / "catalog")
    srv = Server(target, "--tokens-file", str(tokens), *serve, log=directory / "server.log")
    try:
        with almanac.connect(target, **connect) as node:
            yield srv, node
    finally:
        assert srv.stop() == 0, srv.log_text()


@pytest.fixture(scope="session")
def cat(server: Server, target: str) -> Iterator[Catalog]:
    """A second node of the served catalog: what Almanac itself sees."""
    with almanac.connect(target) as node:
        yield node


def rest_catalog(server: Server, token: str | None = ADMIN_TOKEN) -> RestCatalog:
    """A pyiceberg client of the server's Iceberg REST catalog."""
    properties = {"uri": server.url + PREFIX}
    if token is not None:
        properties["token"] = token
    with warnings.catch_warnings():  # a token without an OAuth2 server URI is deprecated
        warnings.simplefilter("ignore", DeprecationWarning)
        return RestCatalog("almanac", **properties)


@pytest.fixture(scope="session")
def admin(server: Server) -> RestCatalog:
    return rest_catalog(server, ADMIN_TOKEN)


@pytest.fixture(scope="session")
def reader(server: Server) -> RestCatalog:
    return rest_catalog(server, READ_TOKEN)


@pytest.fixture(scope="session")
def http(server: Server) -> Iterator[Callable[[str | None], httpx.Client]]:
    """Raw HTTP clients under ``/iceberg``, each on its own connection."""
    clients: list[httpx.Client] = []

    def make(token: str | None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
        client = httpx.Client(base_url=server.url + PREFIX, headers=headers, timeout=PATIENCE)
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


def spec_error(response: httpx.Response, status: int) -> dict[str, Any]:
    """The body of an error response, checked against the spec's
    ``IcebergErrorResponse``: ``{"error": {"message", "type", "code"}}``."""
    from pyiceberg.catalog.rest.response import ErrorResponse

    assert response.status_code == status, (response.status_code, response.text)
    parsed = ErrorResponse.model_validate_json(response.text)
    assert parsed.error.code == status, response.text
    assert parsed.error.message.strip() and parsed.error.type.strip(), response.text
    body: dict[str, Any] = response.json()
    return body["error"]  # type: ignore[no-any-return]
