"""The README's snippets run as written: its Python blocks top to bottom as
one story in a fresh directory (``readme_story``), its ``almanac`` lines by
``tests/cli/test_readme.py``, and every other block says why it is not run.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.cli.support import environment
from tests.cli.test_readme import README, commands
from tests.docs.readme_story import Block, blocks
from tests.waiting import PATIENCE

RUN_SECTIONS = ("## Quick start", "### Command line")
"""The sections whose ``almanac`` lines ``tests/cli/test_readme.py`` runs."""
MAX_PYTHON_NOT_RUN = 1
"""Only Spark's block (a JVM, and a remote server) stays out of the story."""


def _story(readme: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tests.docs.readme_story", str(readme)],
        cwd=cwd,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=PATIENCE,
        check=False,
    )


def _section(text: str, block: Block) -> str:
    """The heading of the section holding ``block`` (a ``#`` line outside
    any fence)."""
    heading, fenced = "", False
    for line in text.splitlines()[: block.line - 1]:
        if line.startswith("```"):
            fenced = not fenced
        elif line.startswith("#") and not fenced:
            heading = line
    return heading


def test_the_readme_python_blocks_run_top_to_bottom_in_a_fresh_directory(tmp_path: Path) -> None:
    done = _story(README, tmp_path)
    assert done.returncode == 0, done.stderr
    python = [b for b in blocks(README.read_text()) if b.language == "python"]
    ran = [b for b in python if b.not_run is None]
    assert done.stdout.splitlines() == [f"ran README.md line {b.line}: {b.first_line}" for b in ran]
    assert len(python) - len(ran) <= MAX_PYTHON_NOT_RUN, [b.first_line for b in python]


def test_every_other_block_is_run_by_the_cli_test_or_says_why_not() -> None:
    text = README.read_text()
    for block in blocks(text):
        if block.language == "python" or block.not_run is not None:
            continue
        where = f"README.md line {block.line} ({block.first_line!r})"
        section = _section(text, block)
        assert block.language == "sh", f"{where}: run it or mark it <!-- not run: why -->"
        assert section in RUN_SECTIONS, f"{where}: tests/cli/test_readme.py does not run {section}"
        lines = [line for line in block.code.splitlines() if line.startswith("almanac ")]
        assert lines, f"{where}: no almanac line to run; mark it <!-- not run: why -->"
        run = commands(section)
        for line in lines:
            assert shlex.split(line, comments=True)[1:] in run, line


def _readme(tmp_path: Path, text: str) -> Path:
    readme = tmp_path / "README.md"
    readme.write_text(textwrap.dedent(text))
    return readme


def test_a_broken_block_fails_the_story_naming_its_line(tmp_path: Path) -> None:
    readme = _readme(
        tmp_path,
        """\
        # Title

        ```python
        made = 41
        ```

        <!-- not run: it would raise -->
        ```python
        raise SystemExit("never run")
        ```

        ```python
        made += 1
        print(made)
        missing_name
        ```
        """,
    )
    done = _story(readme, tmp_path)
    assert done.returncode == 1
    assert done.stdout.splitlines() == ["ran README.md line 4: made = 41", "42"]
    assert "README.md line 13: the block starting 'made += 1' raised" in done.stderr
    assert f'File "{readme}", line 15' in done.stderr, done.stderr
    assert "NameError: name 'missing_name' is not defined" in done.stderr


def test_a_result_a_comment_states_is_checked(tmp_path: Path) -> None:
    readme = _readme(
        tmp_path,
        """\
        ```python
        calls = []
        calls.append(1) or len(calls)  # 1
        sorted({"b": 1, "a": 2})       # ["a", "b"]
        len(calls), "x" * 2            # (1, "xx")
        calls                          # the list: not a literal, not checked
        calls                          # [2]
        ```
        """,
    )
    done = _story(readme, tmp_path)
    assert done.returncode == 1
    assert "line 7 states [2], but the value is [1]" in done.stderr, done.stderr


@pytest.mark.parametrize("marker", ["<!-- not run: -->", "<!-- not run -->"])
def test_a_marker_without_a_reason_does_not_skip(marker: str) -> None:
    [block] = blocks(f"{marker}\n```python\nx = 1\n```\n")
    assert block.not_run is None
