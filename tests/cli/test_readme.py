"""The README's command lines work as written: every ``almanac`` line of the
Quick start, and of the Command line section, run in order in a fresh
directory (with the repository's ``examples/``, as a fresh clone has it),
each exits 0.

The lines come out of README.md itself, so the test follows the document.
Two liberties: ``almanac`` is this interpreter's ``python -m almanac``, and
a ``serve`` gets port 0 for its 8181, so that it never meets another
process's server; a command that runs until Ctrl-C (``serve``, ``watch``)
is interrupted once it has printed its first line, and must then exit 0."""

from __future__ import annotations

import re
import shlex
import shutil
import signal
from pathlib import Path

import pytest

from tests.cli.support import almanac, start
from tests.waiting import PATIENCE, stdout_lines

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
LONG_RUNNING = ("serve", "watch")


def commands(section: str) -> list[list[str]]:
    """The arguments of every ``almanac`` line in the ```sh blocks of the
    README section headed ``section`` (up to the next heading)."""
    text = README.read_text()
    start_at = text.index(section + "\n")
    end = text.find("\n#", start_at + len(section))
    body = text[start_at : end if end >= 0 else len(text)]
    lines = []
    for block in re.findall(r"```sh\n(.*?)```", body, flags=re.DOTALL):
        for line in block.splitlines():
            words = shlex.split(line, comments=True)
            if words and words[0] == "almanac":
                lines.append(words[1:])
    return lines


def _interrupted(args: list[str], cwd: Path) -> None:
    """Start a command that runs until Ctrl-C, wait for its first line of
    output, interrupt it: it must stop with status 0."""
    proc = start(*args, cwd=cwd)
    lines = stdout_lines(proc)
    try:
        first = lines.get(timeout=PATIENCE)
        assert first.strip(), args
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=PATIENCE) == 0, (args, proc.stderr.read() if proc.stderr else "")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("section", ["## Quick start", "### Command line"])
def test_every_almanac_line_of_the_readme_runs_as_written(section: str, tmp_path: Path) -> None:
    lines = commands(section)
    assert len(lines) >= 4, f"the README's {section} shows its almanac lines"
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    for args in lines:
        if "serve" in args and "--port" in args:
            at = args.index("--port") + 1
            args = [*args[:at], "0", *args[at + 1 :]]
        if any(word in LONG_RUNNING for word in args):
            _interrupted(args, tmp_path)
            continue
        done = almanac(*args, cwd=tmp_path)
        assert done.returncode == 0, (args, done.stdout, done.stderr)
        assert not done.stderr, (args, done.stderr)


def test_the_quick_start_starts_with_init() -> None:
    first = commands("## Quick start")[0]
    assert "init" in first, "every other command refuses a store that holds no catalog"
