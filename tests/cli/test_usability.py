"""What a person at a terminal meets: whole help texts, an empty script
refused, ``watch --json`` as the README shows it, and a server that is down
announced while the command keeps trying for ``--timeout`` seconds."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import click
import pytest

import almanac
from almanac.cli import main
from almanac.cli.app import almanac_group
from tests.cli.support import almanac as run
from tests.cli.support import environment, start
from tests.waiting import PATIENCE

README = Path(__file__).resolve().parents[2] / "README.md"


def _words(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("args", [[], ["show"]])
def test_help_shows_every_command_whole(
    args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*args, "--help"]) == 0
    out = capsys.readouterr().out
    commands = out.split("Commands:")[1]
    assert "..." not in commands and "…" not in commands
    group = almanac_group if not args else almanac_group.commands[args[0]]
    assert isinstance(group, click.Group)
    listed = _words(out.split("Commands:")[1])
    for name, command in group.commands.items():
        first = _words((command.help or "").split("\n\n")[0])
        assert f"{name} {first}" in listed, name


@pytest.mark.parametrize("script", ["   ", " ; ;", "-- only a comment\n", "/* nothing */"])
def test_an_empty_script_is_refused_and_makes_no_version(tmp_path: Path, script: str) -> None:
    path = str(tmp_path / "c")
    with almanac.connect(path) as cat:
        before = cat.latest_version
    done = run("--store", path, "sql", cwd=tmp_path, stdin=script)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == (
        "error: The script holds no statement (only blanks, comments or ';'): nothing was run\n"
    )
    as_text = run("--store", path, "sql", "--", script, cwd=tmp_path)
    assert as_text.returncode == 1 and "holds no statement" in as_text.stderr
    with almanac.connect(path) as cat:
        assert cat.latest_version == before


def test_watch_json_prints_the_fields_the_readme_names(tmp_path: Path) -> None:
    text = README.read_text()
    bullet = text[text.index("- `watch --json` prints") :].split("\n- ")[0]
    documented = re.findall(r'"(\w+)"', bullet.split("`{", 1)[1].split("}`", 1)[0])
    event_fields = re.findall(r'"(\w+)"', bullet.split("list of `{", 1)[1].split("}`")[0])
    path = str(tmp_path / "c")
    with almanac.connect(path) as cat:
        cat.sql("CREATE TABLE T (ID BIGINT)")  # 2
    proc = start("--store", path, "watch", "--from", "2", "--json", cwd=tmp_path)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=PATIENCE) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    record = json.loads(line)
    assert list(record) == documented
    assert record["version"] == 2
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", record["activation_time"])
    assert record["events"] and all(list(e) == event_fields for e in record["events"])


def _closed_port() -> int:
    """A loopback port nobody listens on: connections are refused at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _stderr_on_a_terminal(args: list[str], cwd: Path) -> tuple[int, str, str]:
    """Run ``almanac ARGS`` with stderr on a pseudo-terminal (stdout piped):
    its status, stdout and what the terminal showed."""
    controller, terminal = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "almanac", *args],
        cwd=cwd,
        env=environment(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=terminal,
        text=True,
    )
    os.close(terminal)
    shown = b""
    deadline = time.monotonic() + PATIENCE
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([controller], [], [], 1.0)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(controller, 4096)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            shown += chunk
        status = proc.wait(timeout=PATIENCE)
        assert proc.stdout is not None
        return status, proc.stdout.read(), shown.decode("utf-8", "replace")
    finally:
        os.close(controller)
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_server_that_is_down_is_announced_on_a_terminal(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    status, out, shown = _stderr_on_a_terminal(
        ["--store", url, "--timeout", "1", "history"], tmp_path
    )
    assert (status, out) == (1, "")
    assert f"retrying… {url} does not answer (ConnectError" in shown
    assert "(--timeout)" in shown
    assert f"error: The catalog server at {url} did not answer" in shown
    assert "in 1 s" in shown, "the --timeout bounds the retries"


def test_a_server_that_is_down_is_not_announced_in_a_pipe(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    done = run("--store", url, "--timeout", "0.5", "history", cwd=tmp_path)
    assert done.returncode == 1 and done.stdout == ""
    assert "retrying" not in done.stderr
    assert done.stderr.startswith(f"error: The catalog server at {url} did not answer")
    assert "in 0.5 s" in done.stderr
    bad = run("--store", url, "--timeout", "-1", "history", cwd=tmp_path)
    assert bad.returncode == 2 and "--timeout" in bad.stderr
