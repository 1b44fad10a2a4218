"""A server killed with SIGKILL while a client commits: once restarted on
the same catalog, every commit the client saw succeed is there, the table
reads, and the next commit lands."""

from __future__ import annotations

import threading
from pathlib import Path

from pyiceberg.exceptions import CommitFailedException

import almanac
from almanac.data import read_table
from tests.server.support import Server
from tests.waiting import wait_for

from .conftest import ADMIN_TOKEN, rest_catalog
from .tables import SCHEMA, arrow_rows, batch, scanned


def _serve(directory: Path, target: str, tokens: Path) -> Server:
    return Server(target, "--tokens-file", str(tokens), log=directory / "server.log")


def test_acknowledged_commits_survive_a_kill_9(tmp_path: Path) -> None:
    target = str(tmp_path / "catalog")
    tokens = tmp_path / "tokens"
    tokens.write_text(f"admin {ADMIN_TOKEN}\n", encoding="utf-8")
    server = _serve(tmp_path, target, tokens)
    acknowledged: list[int] = []
    stop = threading.Event()
    try:
        client = rest_catalog(server)
        client.create_namespace("CRASH")
        table = client.create_table(("CRASH", "T"), SCHEMA)

        def append_until_killed() -> None:
            key = 0
            while not stop.is_set():
                try:
                    table.append(batch([(key, f"k{key}", key)]))
                except CommitFailedException:
                    table.refresh()
                    continue
                except Exception:  # the server died under the request
                    return
                acknowledged.append(key)
                key += 1

        writer = threading.Thread(target=append_until_killed, daemon=True)
        writer.start()
        wait_for(lambda: len(acknowledged) >= 3, "three acknowledged appends")
        server.proc.kill()
        server.proc.wait()
        stop.set()
        writer.join()
    finally:
        stop.set()
        server.stop()

    restarted = _serve(tmp_path, target, tokens)
    try:
        client = rest_catalog(restarted)
        table = client.load_table(("CRASH", "T"))
        keys = [row[0] for row in scanned(table)]
        # Every acknowledged append is there; at most the one in flight besides.
        assert set(acknowledged) <= set(keys), (acknowledged, keys)
        assert len(keys) - len(acknowledged) in (0, 1) and len(set(keys)) == len(keys)
        with almanac.connect(target) as cat:
            assert arrow_rows(read_table(cat, "T", "CRASH")) == scanned(table)
        table.append(batch([(10_000, "after", 1)]))
        assert 10_000 in [row[0] for row in scanned(client.load_table(("CRASH", "T")))]
    finally:
        assert restarted.stop() == 0, restarted.log_text()
