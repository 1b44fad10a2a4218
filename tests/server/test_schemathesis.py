"""schemathesis against ``/openapi.json`` of a real server: whatever the
generated requests hold, no 5xx, and every response matches the schema
(status documented, body of the documented shape, content type).

The event stream is left out: it never ends, and a test client that reads a
whole body would wait for it forever (``test_http`` covers it).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.core.result import Ok
from schemathesis.specs.openapi.checks import positive_data_acceptance

from .conftest import ADMIN_TOKEN
from .support import Server


@pytest.fixture(scope="module")
def fuzzed_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    directory = tmp_path_factory.mktemp("schemathesis")
    tokens = directory / "tokens"
    tokens.write_text(f"admin {ADMIN_TOKEN}\n", encoding="utf-8")
    srv = Server("memory://", "--tokens-file", str(tokens), log=directory / "server.log")
    try:
        yield srv
    finally:
        assert srv.stop() == 0, srv.log_text()


@pytest.mark.parametrize(
    "path",
    [
        "/health",
        "/ready",
        "/v1/sql",
        "/v1/commands",
        "/v1/catalog",
        "/v1/catalog/snapshot",
        "/v1/tables/{schema}/{table}",
        "/v1/history",
        "/v1/diff",
    ],
)
def test_api_conforms(fuzzed_server: Server, path: str) -> None:
    schema = schemathesis.openapi.from_url(f"{fuzzed_server.url}/openapi.json")
    results = list(schema.include(path=path).get_all_operations())
    operations = [result.ok() for result in results if isinstance(result, Ok)]
    assert operations and len(operations) == len(results), path
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    for operation in operations:

        @settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
        @given(case=operation.as_strategy())
        def conforms(case: Any) -> None:
            case.call_and_validate(
                base_url=fuzzed_server.url,
                headers=headers,
                # Schema-valid is not catalog-valid (SQL that does not parse, a
                # table that does not exist): those are 400/404 by design.
                excluded_checks=[positive_data_acceptance],
            )

        conforms()


def test_the_schema_names_every_command_kind(fuzzed_server: Server) -> None:
    import httpx

    from almanac.serialization.commands_json import COMMANDS

    spec = httpx.get(f"{fuzzed_server.url}/openapi.json").json()
    kinds = {
        name
        for name, model in spec["components"]["schemas"].items()
        if model.get("properties", {}).get("kind", {}).get("const") == name
    }
    assert kinds == set(COMMANDS)
    paths = set(spec["paths"])
    assert {
        "/health",
        "/ready",
        "/v1/sql",
        "/v1/commands",
        "/v1/catalog",
        "/v1/catalog/snapshot",
        "/v1/tables/{schema}/{table}",
        "/v1/history",
        "/v1/diff",
        "/v1/events",
    } <= paths
