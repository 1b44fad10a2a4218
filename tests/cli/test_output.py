"""What the command prints, as pure functions: plain tables for pipes, the
read statements the subcommands stand for, and rich output on a terminal."""

from __future__ import annotations

import os
import pty
import select
import string
import subprocess
import sys
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

import almanac
from almanac.cli import main
from almanac.cli.output import cell_text, plain_table
from almanac.cli.reads import read_statement
from tests.cli.support import environment
from tests.waiting import PATIENCE

_words = st.text(string.ascii_letters + string.digits + "._-'\"éß€", min_size=1, max_size=12)
_cells = st.one_of(_words, st.integers(), st.booleans(), st.none())


@given(
    st.integers(1, 4).flatmap(
        lambda n: st.tuples(
            st.lists(_words, min_size=n, max_size=n),
            st.lists(st.lists(_cells, min_size=n, max_size=n), max_size=5),
        )
    )
)
def test_a_plain_table_splits_back_into_its_cells(
    table: tuple[list[str], list[list[str | int | bool | None]]],
) -> None:
    columns, rows = table
    lines = plain_table(columns, rows).split("\n")
    assert len(lines) == 1 + len(rows)
    assert lines[0].split() == columns
    assert [line.split() for line in lines[1:]] == [[cell_text(c) for c in row] for row in rows]
    starts = {len(line) - len(line.lstrip()) for line in lines}
    assert starts == {0}, "every line starts at the first column"
    for line in lines:
        assert line == line.rstrip(), "no trailing blanks"


def test_cells_read_the_same_everywhere() -> None:
    assert [cell_text(c) for c in (None, True, False, 7, 1.5, "x")] == [
        "NULL",
        "true",
        "false",
        "7",
        "1.5",
        "x",
    ]


def test_read_statements_quote_the_instant() -> None:
    assert read_statement("SHOW ZONES") == "SHOW ZONES"
    assert read_statement("SHOW ZONES", version=3) == "SHOW ZONES AS OF VERSION 3"
    assert (
        read_statement("SHOW HISTORY", time="2026-11-23T01:02:03Z")
        == "SHOW HISTORY AS OF TIMESTAMP '2026-11-23T01:02:03Z'"
    )
    # A quote in the instant stays inside the literal: the parser sees one bad timestamp.
    assert read_statement("SHOW ZONES", time="x' OR '1").endswith("'x'' OR ''1'")


def test_usage_errors_exit_2_and_help_0() -> None:
    assert main(["--help"]) == 0
    assert main(["no-such-command"]) == 2
    assert main(["diff", "1"]) == 2
    assert main(["history", "--limit", "0"]) == 2
    assert main(["janitor", "./a", "--store", "./b"]) == 2, "one catalog, named once"


def _on_a_terminal(*args: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    """``almanac ARGS`` with stdout and stderr on a pseudo-terminal: what a person sees."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "almanac", *args],
        env=env or environment(),
        stdout=follower,
        stderr=follower,
        cwd=cwd,
    )
    os.close(follower)
    screen = b""
    while True:
        readable, _, _ = select.select([leader], [], [], PATIENCE)
        assert readable, f"the command went silent without exiting: {screen!r}"
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        screen += chunk
    os.close(leader)
    assert proc.wait(timeout=PATIENCE) == 0, screen
    return screen.decode()


def test_a_terminal_gets_progress_and_a_rich_table(tmp_path: Path) -> None:
    path = str(tmp_path / "c")
    almanac.connect(path).close()
    text = _on_a_terminal("--store", path, "show", "schemas", cwd=tmp_path)
    assert "Opening the catalog at" in text, "a spinner while the log replays"
    assert "PUBLIC" in text and "┃" in text, "a rich table, with box drawing"


def test_a_diff_on_a_terminal_is_coloured_unless_no_color(tmp_path: Path) -> None:
    path = str(tmp_path / "c")
    with almanac.connect(path) as cat:
        cat.sql("CREATE TABLE T (ID INT64 PRIMARY KEY)")
        cat.sql("ALTER TABLE T RENAME TO U")
    green, yellow = "\x1b[32m", "\x1b[33m"
    coloured = _on_a_terminal("--store", path, "diff", "1", "3", cwd=tmp_path)
    assert green in coloured and yellow in coloured, coloured
    assert "PUBLIC.U.ID" in coloured and "INT64 NOT NULL" in coloured
    plain = _on_a_terminal(
        "--store", path, "diff", "1", "3", cwd=tmp_path, env={**environment(), "NO_COLOR": "1"}
    )
    assert green not in plain and yellow not in plain, plain
    assert "PUBLIC.U.ID" in plain


def test_the_command_line_imports_no_heavy_package_until_a_command_needs_it() -> None:
    heavy = (
        "rich",
        "fastapi",
        "uvicorn",
        "httpx",
        "pyarrow",
        "pyspark",
        "pyiceberg",
        "pandas",
        "sqlglot",
    )
    probe = (
        "import sys\n"
        "from almanac.cli import main\n"
        "status = main(['--help'])\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {heavy!r}), status)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        env=environment(),
        capture_output=True,
        text=True,
        timeout=PATIENCE,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "[] 0"
