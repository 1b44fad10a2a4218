"""The ``almanac`` command against a catalog server: ``--store http://…``
with the bearer token of ``--token`` or ``$ALMANAC_TOKEN``, one real server
for the module."""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

import almanac
from almanac.cli import main
from tests.cli.support import almanac as run
from tests.cli.support import start
from tests.server.support import Server
from tests.waiting import PATIENCE, stdout_lines

ADMIN_TOKEN = "admin-5d1e8c2b9f4a7e30"
READ_TOKEN = "read-8b3f6a0c2e9d4f17"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    where = tmp_path_factory.mktemp("clihttp")
    tokens = where / "tokens"
    tokens.write_text(f"admin {ADMIN_TOKEN}\nread {READ_TOKEN}\n", encoding="utf-8")
    srv = Server(str(where / "catalog"), "--tokens-file", str(tokens), log=where / "server.log")
    try:
        yield srv
    finally:
        assert srv.stop() == 0, srv.log_text()


def _call(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(list(args))
    out, err = capsys.readouterr()
    return status, out, err


def test_sql_and_reads_go_through_the_server(
    server: Server,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def ok(*args: str) -> str:
        status, out, err = _call(capsys, "--store", server.url, "--token", ADMIN_TOKEN, *args)
        assert (status, err) == (0, ""), args
        return out

    with almanac.connect(server.url, token=ADMIN_TOKEN) as remote:
        start = remote.latest_version
        schema = ok("sql", "CREATE SCHEMA shop")
        assert schema == f"version {start + 1}\n"
        assert remote.latest_version == start + 1, "the server made the version"
        table = ok("sql", "CREATE TABLE shop.items (id INT64 PRIMARY KEY, label VARCHAR(40))")
        assert table == f"version {start + 2}\n"
        retried = ok("sql", "--request-id", "r-1", "ALTER TABLE shop.items ADD COLUMN n INT64")
        again = ok("sql", "--request-id", "r-1", "ALTER TABLE shop.items ADD COLUMN n INT64")
        assert retried == again == f"version {start + 3}\n", "a retry applies nothing again"
        assert remote.latest_version == start + 3
        items = remote.catalog().table("ITEMS", "SHOP")
        assert items is not None
        expected_columns = [c.name for c in items.columns]

    assert "ITEMS" in ok("show", "tables", "shop")
    described = json.loads(ok("describe", "shop.items", "--json"))
    assert [row[0] for row in described["rows"]] == expected_columns == ["ID", "LABEL", "N"]
    before = json.loads(ok("describe", "shop.items", "--as-of-version", str(start + 2), "--json"))
    assert [row[0] for row in before["rows"]] == ["ID", "LABEL"]
    newest = json.loads(ok("history", "--limit", "3", "--json"))
    assert [row[0] for row in newest["rows"]] == [start + 3, start + 2, start + 1]
    changed = json.loads(ok("diff", str(start + 2), str(start + 3), "--json"))
    cells = [str(cell) for row in changed["rows"] for cell in row]
    assert "SHOP.ITEMS.N" in cells and "SHOP.ITEMS.LABEL" not in cells

    # The store and the token from the environment, through the real entry point.
    monkeypatch.setenv("ALMANAC_TOKEN", READ_TOKEN)
    done = run("history", "--limit", "1", "--json", cwd=tmp_path, store=server.url)
    assert (done.returncode, done.stderr) == (0, "")
    assert [row[0] for row in json.loads(done.stdout)["rows"]] == [start + 3]


def test_a_wrong_token_or_role_is_one_error_line_without_the_token(
    server: Server, capsys: pytest.CaptureFixture[str]
) -> None:
    wrong = "wrong-3c7e1a9f5b2d8e64"
    status, out, err = _call(capsys, "--store", server.url, "--token", wrong, "history")
    assert (status, out) == (1, "")
    assert len(err.splitlines()) == 1 and err.startswith("error: "), err
    assert wrong not in err
    status, out, err = _call(capsys, "--store", server.url, "--token", "a b", "history")
    assert (status, out) == (1, "")
    assert err == (
        "error: --token (or $ALMANAC_TOKEN) must be printable ASCII without spaces "
        "(a bearer token)\n"
    )
    status, out, err = _call(capsys, "--store", server.url, "history")  # no token at all
    assert (status, out) == (1, "") and len(err.splitlines()) == 1, err
    status, out, err = _call(
        capsys, "--store", server.url, "--token", READ_TOKEN, "sql", "CREATE SCHEMA nope"
    )
    assert (status, out) == (1, "")
    assert len(err.splitlines()) == 1 and err.startswith("error: "), err
    assert READ_TOKEN not in err


@pytest.mark.parametrize(
    "command",
    [
        ["init"],
        ["compact", "--keep", "1"],
        ["janitor"],
        ["upgrade-warehouse"],
        ["node"],
        ["serve"],
    ],
)
def test_commands_of_a_local_node_refuse_a_server(
    server: Server, command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = _call(capsys, "--store", server.url, "--token", ADMIN_TOKEN, *command)
    assert (status, out) == (1, "")
    assert err == (
        f"error: `almanac {command[0]}` needs the catalog itself, not a server: "
        f"'{server.url}' is reached over HTTP; run it where the catalog's store is\n"
    )
    assert ADMIN_TOKEN not in err


def test_watch_prints_the_versions_a_server_makes(
    server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ALMANAC_TOKEN", READ_TOKEN)
    with almanac.connect(server.url, token=ADMIN_TOKEN) as remote:
        # Its own zone: a table created in the default zone makes that zone
        # first when no test before this one did, and its events come first.
        remote.sql("CREATE ZONE IF NOT EXISTS watched_zone")
        first = remote.sql("CREATE SCHEMA watched").version
        procs = [
            start("watch", "--from", str(first), "--json", cwd=tmp_path, store=server.url),
            start("watch", "--from", str(first + 1), cwd=tmp_path, store=server.url),
        ]
        try:
            as_json, plain = (stdout_lines(proc) for proc in procs)
            seen = json.loads(as_json.get(timeout=PATIENCE))
            assert (seen["version"], seen["events"]) == (first, [])  # a schema has no events
            assert "WATCHED" in seen["summary"]
            made = remote.sql(
                "CREATE TABLE watched.t (id INT64 PRIMARY KEY) ZONE watched_zone",
                request_id="w-9",
            )
            new = json.loads(as_json.get(timeout=PATIENCE))
            created = remote.catalog(made.version).table("T", "WATCHED")
            assert created is not None
            assert (new["version"], new["request_id"]) == (made.version, "w-9")
            assert new["events"][0] == {
                "type": "TABLE_CREATE",
                "object_id": created.id,
                "data_commit": None,
            }
            assert "WATCHED.T" in new["summary"]
            head = plain.get(timeout=PATIENCE).rstrip("\n").split("  ")
            assert head[:2] == [f"version {made.version}", new["activation_time"]]
            assert head[3] == new["summary"]
            assert plain.get(timeout=PATIENCE) == (
                f"  event TABLE_CREATE WATCHED.T (#{created.id})\n"
            )
            for proc in procs:
                proc.send_signal(signal.SIGINT)
            assert [proc.wait(timeout=PATIENCE) for proc in procs] == [0, 0]
        finally:
            for proc in procs:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
    assert [proc.stderr.read() for proc in procs if proc.stderr is not None] == ["", ""]
