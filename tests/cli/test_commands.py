"""The ``almanac`` command through its real entry point, each call its own
process, output piped (so plain text or JSON, as a script sees it)."""

from __future__ import annotations

import json
import queue
import re
import signal
import threading
from pathlib import Path

import pytest

import almanac
from almanac.cli import main
from almanac.model.clock import to_datetime
from almanac.model.summary import CHECKPOINT_SUMMARY
from tests.cli.support import almanac as run
from tests.cli.support import start
from tests.durable.support import table
from tests.waiting import PATIENCE

HISTORY = (
    "CREATE SCHEMA sales",  # 2
    "CREATE TABLE sales.orders (id INT64 PRIMARY KEY, name VARCHAR(100))",  # 3
    "ALTER TABLE sales.orders ADD COLUMN email VARCHAR(200)",  # 4
    "CREATE INDEX orders_name ON sales.orders (name)",  # 5
    "CREATE ZONE z1 WITH (PARTITIONS=2, REPLICAS=1, STORAGE_PROFILES='default')",  # 6
)


def _iso(ts: int) -> str:
    return to_datetime(ts).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[int, str]]:
    """A catalog made through the library (versions 1 to 6), and the
    activation time of each version as ISO-8601 text."""
    path = str(tmp_path_factory.mktemp("cli") / "catalog")
    with almanac.connect(path) as cat:
        for statement in HISTORY:
            cat.sql(statement)
        return path, {i.version: _iso(i.activation_time) for i in cat.history()}


def _cells(text: str) -> list[list[str]]:
    """A plain table's lines, split into cells (no cell here holds a blank)."""
    return [line.split() for line in text.splitlines()]


def test_init_creates_the_catalog_once_where_the_store_says(tmp_path: Path) -> None:
    first = run("init", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    default = tmp_path / "almanac-data"
    assert first.stdout == f"Created a catalog at {default} (version 1)\n"
    assert (default / "catalog.db").is_file()
    again = run("init", cwd=tmp_path / "..", store=str(default))  # $ALMANAC_STORE
    assert again.returncode == 0, again.stderr
    assert again.stdout == f"Catalog already at {default} (version 1)\n"
    with almanac.connect(default) as cat:
        assert cat.latest_version == 1


def test_sql_from_a_string_stdin_and_a_file_retried(tmp_path: Path) -> None:
    path = str(tmp_path / "c")
    almanac.connect(path).close()
    one = run("--store", path, "sql", "CREATE TABLE a (id INT64 PRIMARY KEY)", cwd=tmp_path)
    assert (one.returncode, one.stdout, one.stderr) == (0, "version 2\n", "")
    script = "CREATE TABLE b (id INT64 PRIMARY KEY);\nCREATE INDEX bi ON b (id);\n"
    # From stdin, the store from $ALMANAC_STORE, as JSON, with a request id.
    two = run("sql", "--json", "--request-id", "req-1", cwd=tmp_path, store=path, stdin=script)
    assert two.returncode == 0, two.stderr
    assert json.loads(two.stdout) == {"version": 3, "columns": [], "rows": []}
    # The same script from a file, retried under the same id: the same answer.
    (tmp_path / "script.sql").write_text(script)
    again = run("--store", path, "sql", "--request-id", "req-1", "-f", "script.sql", cwd=tmp_path)
    assert (again.returncode, again.stdout) == (0, "version 3\n"), again.stderr
    with almanac.connect(path) as cat:
        assert cat.catalog(3).table("B") is not None and cat.catalog(3).index("BI") is not None
        assert cat.catalog(2).table("B") is None, "a script is one version"
        assert cat.latest_version == 3, "the retry applied nothing"
        assert cat.history(3)[0].request_id == "req-1"


def _call(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``almanac ARGS`` through the same entry function, in this process."""
    status = main(list(args))
    out, err = capsys.readouterr()
    return status, out, err


def test_show_describe_history_and_diff(
    store: tuple[str, dict[int, str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, activations = store

    def read(*args: str) -> str:
        status, out, err = _call(capsys, "--store", path, *args)
        assert (status, err) == (0, ""), args
        return out

    def read_apart(*args: str) -> str:
        done = run("--store", path, *args, cwd=tmp_path)
        assert (done.returncode, done.stderr) == (0, ""), args
        return done.stdout

    schemas = read("show", "schemas")
    assert {"PUBLIC", "SALES"} <= {cell for line in _cells(schemas) for cell in line}
    assert "ORDERS" in read("show", "tables", "sales")
    assert "ORDERS_NAME" in read("show", "indexes", "sales.orders")
    assert "Z1" in read("show", "zones")
    columns = {line[0] for line in _cells(read("describe", "sales.orders"))[1:]}
    assert {"ID", "NAME", "EMAIL"} <= columns
    then = _cells(read_apart("describe", "sales.orders", "--as-of-version", "3"))
    assert then[0][:2] == ["NAME", "TYPE"]
    assert [line[0] for line in then[1:]] == ["ID", "NAME"], "before EMAIL was added"
    # The catalog active at version 2's activation: SALES exists, ORDERS not yet.
    assert "ORDERS" not in read("show", "tables", "--as-of-time", activations[2])
    newest = json.loads(read_apart("history", "--limit", "2", "--json"))
    assert newest["columns"] == ["VERSION", "ACTIVATED_AT", "NODE", "SUMMARY"]
    assert [row[0] for row in newest["rows"]] == [6, 5]
    assert newest["rows"][1][1] == activations[5]
    assert "ORDERS_NAME" in newest["rows"][1][3]
    mine = json.loads(read("history", "--table", "sales.orders", "--json"))
    assert [row[0] for row in mine["rows"]] == [5, 4, 3]
    assert mine["rows"][1][3] == "added column EMAIL STRING(200) to SALES.ORDERS"
    assert [
        row[0]
        for row in json.loads(read("history", "--table", "sales.orders", "--limit", "1", "--json"))[
            "rows"
        ]
    ] == [5]
    plain = read("history")
    assert plain.splitlines()[0].split() == ["VERSION", "ACTIVATED_AT", "NODE", "SUMMARY"]
    assert [line[0] for line in _cells(plain)[1:]] == ["6", "5", "4", "3", "2", "1"]
    changed = read_apart("diff", "3", "4")
    assert changed.split("\n")[0].split() == ["CHANGE", "KIND", "NAME", "FIELD", "BEFORE", "AFTER"]
    # Values as a person reads them: a definition, no NULL, no JSON quotes.
    assert ["added", "column", "SALES.ORDERS.EMAIL", "STRING(200)"] in _cells(changed)
    assert ["changed", "table", "SALES.ORDERS", "table_version", "1", "2"] in _cells(changed)
    assert "NULL" not in changed and '"' not in changed, changed
    renamed = read("diff", "1", "6")
    assert "added   column  SALES.ORDERS.ID" in renamed and "INT64 NOT NULL" in renamed
    assert read("diff", "4", "4") == "No differences between version 4 and version 4.\n"
    diff = json.loads(read("diff", "3", "4", "--json"))
    cells = [str(cell) for row in diff["rows"] for cell in row]
    assert "SALES.ORDERS.EMAIL" in cells
    assert "SALES.ORDERS_NAME" not in cells, "version 5 is not in 3..4"


def test_errors_are_one_line_and_debug_shows_the_traceback(
    store: tuple[str, dict[int, str]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path, _ = store
    missing = run("--store", path, "describe", "sales.nosuch", cwd=tmp_path)
    assert missing.returncode == 1 and missing.stdout == ""
    assert len(missing.stderr.splitlines()) == 1, missing.stderr
    assert missing.stderr.startswith("error: ") and "NOSUCH" in missing.stderr
    debug = run("--store", path, "--debug", "describe", "sales.nosuch", cwd=tmp_path)
    assert debug.returncode == 1
    assert debug.stderr.startswith("Traceback (most recent call last):")
    assert "NotFoundError" in debug.stderr
    assert debug.stderr.splitlines()[-1] == missing.stderr.strip()
    monkeypatch.delenv("ALMANAC_STORE", raising=False)
    monkeypatch.chdir(tmp_path)
    status, out, err = _call(capsys, "history")  # ./almanac-data, which does not exist
    assert (status, out) == (1, "")
    data = tmp_path / "almanac-data"
    assert err == (
        f"error: No catalog at {data} (no metastore file '{data / 'catalog.db'}'): create one "
        f"with `almanac --store {data} init`, or name another with --store or $ALMANAC_STORE\n"
    )
    assert not (tmp_path / "almanac-data").exists(), "a read creates nothing"
    status, _, err = _call(
        capsys, "--store", path, "show", "zones", "--as-of-version", "1", "--as-of-time", "x"
    )
    assert status == 2 and "not both" in err
    status, _, err = _call(capsys, "--store", "memory://", "init")
    assert status == 1 and "lives only inside one process" in err


def _reader(stream: object) -> queue.Queue[str]:
    """The lines of a child's stdout as they come, read on a thread so that
    a wait for one can give up."""
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        for line in stream:  # type: ignore[attr-defined]
            lines.put(line)

    threading.Thread(target=pump, daemon=True).start()
    return lines


def test_watch_resumes_from_a_version_and_tails_new_ones(tmp_path: Path) -> None:
    path = str(tmp_path / "c")
    with almanac.connect(path, node_name="writer") as cat:
        cat.execute([table("T1")])  # 2
        cat.execute([table("T2")])  # 3
        procs = [
            start("--store", path, "watch", "--from", "3", "--json", cwd=tmp_path),
            start("--store", path, "watch", "--from", "4", cwd=tmp_path),  # not made yet
        ]
        try:
            as_json, plain = (_reader(p.stdout) for p in procs)
            first = json.loads(as_json.get(timeout=PATIENCE))
            assert first["version"] == 3 and first["node"] == "writer"
            assert first["events"][0]["type"] == "TABLE_CREATE"
            assert "PUBLIC.T2" in first["summary"]
            result = cat.execute([table("T3")], request_id="w-1")
            new = json.loads(as_json.get(timeout=PATIENCE))
            assert new["version"] == result.version == 4
            assert new["request_id"] == "w-1"
            created = cat.catalog().table("T3")
            assert created is not None
            assert new["events"][0] == {
                "type": "TABLE_CREATE",
                "object_id": created.id,
                "data_commit": None,
            }
            assert [e["type"] for e in new["events"]] == ["TABLE_CREATE", "INDEX_CREATE"]
            head = plain.get(timeout=PATIENCE).rstrip("\n").split("  ")
            assert head[:4] == ["version 4", new["activation_time"], "writer", new["summary"]]
            assert plain.get(timeout=PATIENCE) == (
                f"  event TABLE_CREATE PUBLIC.T3 (#{created.id})\n"
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


def test_compact_keeps_the_last_versions(tmp_path: Path) -> None:
    path = str(tmp_path / "c")
    with almanac.connect(path) as cat:
        for i in range(4):
            cat.execute([table(f"T{i}")])  # 2..5
    done = run("--store", path, "compact", "--keep", "2", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == "versions 4 to 5 kept, 3 older versions removed\n"
    with almanac.connect(path) as cat:
        assert (cat.earliest_version, cat.latest_version) == (4, 5)
        assert cat.catalog(4).table("T2") is not None
    again = run("--store", path, "compact", "--keep", "2", cwd=tmp_path)
    assert again.stdout == "versions 4 to 5 kept, none removed\n"
    history = run("--store", path, "history", cwd=tmp_path)
    rows = history.stdout.splitlines()[1:]
    assert [row.split()[0] for row in rows] == ["5", "4"], "the checkpoint version is listed"
    assert rows[1].endswith(CHECKPOINT_SUMMARY)
    fresh = str(tmp_path / "fresh")
    almanac.connect(fresh).close()
    first = run("--store", fresh, "compact", "--keep", "5", cwd=tmp_path)
    assert first.stdout == "version 1 kept, none removed\n", "versions start at 1"
    gone = run("--store", path, "describe", "T0", "--as-of-version", "2", cwd=tmp_path)
    assert gone.returncode == 1 and "earliest available version is 4" in gone.stderr
    bare = run("--store", path, "compact", cwd=tmp_path)
    assert bare.returncode == 2 and "--keep" in bare.stderr
    last = run("--store", path, "compact", "--keep", "1", cwd=tmp_path)
    assert last.stdout == "version 5 kept, 1 older version removed\n"


def test_serve_answers_until_interrupted(tmp_path: Path) -> None:
    import httpx

    path = str(tmp_path / "c")
    almanac.connect(path).close()
    refused = run("--store", path, "serve", "--host", "0.0.0.0", "--port", "0", cwd=tmp_path)
    assert refused.returncode == 1 and refused.stderr.startswith("error: ")
    (tmp_path / "tokens").write_text("read cli-read-token\n")
    proc = start("--store", path, "serve", "--port", "0", "--tokens-file", "tokens", cwd=tmp_path)
    try:
        lines = _reader(proc.stdout)
        line = lines.get(timeout=PATIENCE)
        found = re.fullmatch(r"Listening on (http://127\.0\.0\.1:\d+)\n", line)
        assert found, line
        url = found.group(1)
        assert httpx.get(url + "/health", timeout=PATIENCE).status_code == 200
        assert httpx.get(url + "/v1/history", timeout=PATIENCE).status_code == 401
        token = {"Authorization": "Bearer cli-read-token"}
        history = httpx.get(url + "/v1/history", headers=token, timeout=PATIENCE)
        assert history.status_code == 200, "the tokens of --tokens-file"
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=PATIENCE) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_any_spelling_of_a_name_reaches_what_an_iceberg_client_made(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Lower-case names, as Iceberg clients send them, are found by the
    command line's unquoted (upper-folded) and quoted spellings alike, and
    a case-only twin cannot be made."""
    path = str(tmp_path / "c")
    with almanac.connect(path) as cat:
        cat.execute([almanac.CreateSchema("sales"), table("orders", schema="sales")])
    for spelled in ("sales.orders", "SALES.ORDERS", '"sales"."orders"', '"Sales".Orders'):
        status, out, err = _call(capsys, "--store", path, "describe", spelled)
        assert (status, err) == (0, ""), spelled
        assert _cells(out)[0][:2] == ["NAME", "TYPE"], spelled
    status, out, _ = _call(capsys, "--store", path, "show", "tables", "SALES")
    assert status == 0 and "orders" in out
    refused = run("--store", path, "sql", "CREATE SCHEMA sales", cwd=tmp_path)
    assert refused.returncode == 1
    assert "Schema 'SALES' already exists as 'sales'" in refused.stderr
