"""A server's life: a request retried after the server was killed applies
once, and SIGTERM stops a server promptly with event streams still open."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.waiting import PATIENCE, wait_for

from .support import EventReader, Server


def _create(client: httpx.Client) -> httpx.Response:
    return client.post(
        "/v1/sql", json={"sql": "CREATE TABLE K (ID INT64 PRIMARY KEY)", "request_id": "k-1"}
    )


def test_a_retry_after_a_kill_applies_once_and_sigterm_ends_open_streams(tmp_path: Path) -> None:
    target = str(tmp_path / "catalog")
    log = tmp_path / "server.log"

    first = Server(target, log=log)
    with first.client() as client:
        created = _create(client)
    assert created.status_code == 200, created.text
    first.proc.kill()  # SIGKILL right after the reply: no shutdown at all
    first.proc.wait(PATIENCE)
    first.stop()

    second = Server(target, log=log)
    try:
        with second.client() as client:
            again = _create(client)
            assert again.status_code == 200, again.text
            assert again.json() == created.json()
            history = client.get("/v1/history", params={"since": 1}).json()["versions"]
        assert [v["request_id"] for v in history].count("k-1") == 1
        assert history[-1]["version"] == created.json()["version"]
        stream = EventReader(second, params={"after": 0, "keepalive": 300})
        wait_for(lambda: len(stream.events) == created.json()["version"], "every version")
    finally:
        assert second.stop() == 0  # the open stream did not hold the shutdown up
    wait_for(lambda: stream.ended, "the stream to end")
    stream.close()
    assert log.read_text().count("' closed") == 1  # the second node closed; the first never did
