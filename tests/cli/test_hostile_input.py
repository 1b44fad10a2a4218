"""What a careless or hostile command line gets: a usage error or one
``error:`` line, never a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import almanac
from almanac.cli import main
from almanac.connection import open_catalog
from tests.cli.support import PATIENCE, environment


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = str(tmp_path_factory.mktemp("hostile") / "catalog")
    with almanac.connect(path) as cat:
        cat.sql("CREATE SCHEMA sales")
    return path


def _call(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(list(args))
    out, err = capsys.readouterr()
    return status, out, err


@pytest.mark.parametrize(
    "content",
    [bytes(range(256)), b"CREATE SCHEMA \xff\xfe", b"\x7fELF\x02\x01\x01\x00\xff"],
    ids=["all-bytes", "latin-1", "elf"],
)
def test_a_script_file_that_is_not_utf8_is_one_error_line(
    store: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes
) -> None:
    script = tmp_path / "script.sql"
    script.write_bytes(content)
    status, out, err = _call(capsys, "--store", store, "sql", "-f", str(script))
    assert (status, out) == (1, "")
    assert err.startswith("error: ") and len(err.splitlines()) == 1, err
    assert "valid Unicode text" in err
    with open_catalog(store) as cat:
        assert cat.latest_version == 2, "nothing was applied"


@pytest.mark.parametrize(
    "args",
    [
        ("watch", "--from", str(2**70)),
        ("diff", "1", str(2**63)),
        ("history", "--limit", str(2**64)),
        ("show", "tables", "--as-of-version", str(2**63)),
        ("compact", "--keep", str(2**63)),
    ],
    ids=["watch-from", "diff", "history-limit", "as-of-version", "compact-keep"],
)
def test_numbers_beyond_64_bits_are_usage_errors_naming_the_option(
    store: str, capsys: pytest.CaptureFixture[str], args: tuple[str, ...]
) -> None:
    status, out, err = _call(capsys, "--store", store, *args)
    assert (status, out) == (2, "")
    assert "9223372036854775807" in err and "Catalog." not in err, err


def test_a_closed_pipe_ends_the_command_without_a_traceback(store: str, tmp_path: Path) -> None:
    with almanac.connect(store) as cat:
        cat.sql(";".join(f"CREATE SCHEMA pipe{i}" for i in range(8000)))
    proc = subprocess.Popen(
        [sys.executable, "-m", "almanac", "--store", store, "show", "schemas"],
        cwd=tmp_path,
        env=environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()  # like `| head -1`: one line, then the pipe closes
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(PATIENCE) != 0  # 8000 rows: more than a pipe buffer holds
    assert first.split() == [b"NAME", b"ID", b"TABLES"]
    assert "Traceback" not in err and "Exception ignored" not in err, err
