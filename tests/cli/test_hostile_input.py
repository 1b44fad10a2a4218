"""What a careless or hostile command line gets: a usage error or one
``error:`` line, never a traceback."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

import almanac
from almanac.access.connection import open_catalog
from almanac.cli import main
from almanac.cli.reads import MAX_SCRIPT_BYTES
from tests.cli.support import environment
from tests.waiting import PATIENCE


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


def _bounded(*args: str, cwd: Path, stdin: int | None = None) -> subprocess.CompletedProcess[str]:
    """``almanac ARGS`` in its own process with at most 4 GiB of address
    space, so that a command that reads a file without end fails instead of
    taking the machine's memory; ``PATIENCE`` is only a failure guard."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))

    return subprocess.run(
        [sys.executable, "-m", "almanac", *args],
        cwd=cwd,
        env=environment(),
        stdin=stdin if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=PATIENCE,
        preexec_fn=limit,
        check=False,
    )


def _one_error_line(err: str) -> str:
    assert "Traceback" not in err, err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert len(lines[0]) < 600, "a hostile argument is shown cut short"
    return lines[0]


@pytest.mark.parametrize(
    "target",
    [
        "a" * 5000,
        "/tmp/" + "a" * 300 + "/catalog",
        "/tmp" + "/abc" * 1100,
        "sqlite:///" + "a" * 5000,
        "http://" + "h" * 5000,
        "http://" + "h" * 64 + ".example:80",
        "etcd://" + "h" * 300 + ":2379",
    ],
    ids=["5000-chars", "long-name", "long-path", "sqlite", "http-host", "http-label", "etcd-host"],
)
@pytest.mark.parametrize("command", [("show", "tables"), ("init",)], ids=["show", "init"])
def test_a_store_too_long_for_the_file_system_or_dns_is_one_error_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    target: str,
    command: tuple[str, ...],
) -> None:
    """ENAMETOOLONG from the file system and UnicodeError from the IDNA codec
    escaped as tracebacks; the target parser refuses such names."""
    monkeypatch.chdir(tmp_path)
    status, out, err = _call(capsys, "--store", target, *command)
    assert (status, out) == (1, "")
    assert "Unsupported catalog target" in _one_error_line(err)
    assert os.listdir(tmp_path) == [], "nothing was created"


@pytest.mark.parametrize("kind", ["dev-zero", "fifo"])
def test_sql_from_a_device_or_a_fifo_is_refused_at_once(
    store: str, tmp_path: Path, kind: str
) -> None:
    """/dev/zero was read without end (memory), a FIFO blocked for a writer."""
    if kind == "fifo":
        path = tmp_path / "script.fifo"
        os.mkfifo(path)
    else:
        path = Path("/dev/zero")
    result = _bounded("--store", store, "sql", "-f", str(path), cwd=tmp_path)
    assert result.returncode == 1 and result.stdout == ""
    line = _one_error_line(result.stderr)
    kind = "a FIFO" if kind == "fifo" else "a device"
    assert f"Cannot read script file '{path}': it is {kind}" in line, line


def test_sql_from_a_directory_a_huge_file_or_a_bad_path_is_one_error_line(
    store: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    huge = tmp_path / "huge.sql"
    huge.write_bytes(b"CREATE SCHEMA IF NOT EXISTS x;" * (MAX_SCRIPT_BYTES // 30 + 1))
    cases = {
        str(tmp_path): "is a directory",
        str(huge): f"larger than {MAX_SCRIPT_BYTES} bytes",
        str(tmp_path / ("a" * 5000)): "File name too long",
        str(tmp_path / "missing.sql"): "No such file or directory",
        "a\x00b": "NUL character",
    }
    for path, fragment in cases.items():
        status, out, err = _call(capsys, "--store", store, "sql", "-f", path)
        assert (status, out) == (1, ""), path[:80]
        line = _one_error_line(err)
        assert "Cannot read script file" in line and fragment in line, line
    with open_catalog(store) as cat:
        assert cat.catalog().schema("X") is None, "nothing was applied"


def test_sql_on_stdin_is_read_up_to_the_cap(store: str, tmp_path: Path) -> None:
    with open("/dev/zero", "rb") as endless:
        result = _bounded("--store", store, "sql", cwd=tmp_path, stdin=endless.fileno())
    assert result.returncode == 1
    assert f"larger than {MAX_SCRIPT_BYTES} bytes" in _one_error_line(result.stderr)


def test_a_script_at_the_cap_is_still_run(store: str, tmp_path: Path) -> None:
    statement = b"CREATE SCHEMA IF NOT EXISTS capped;"
    script = tmp_path / "cap.sql"
    script.write_bytes(statement + b" " * (MAX_SCRIPT_BYTES - len(statement)))
    result = _bounded("--store", store, "sql", "-f", str(script), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    with open_catalog(store) as cat:
        assert cat.catalog().schema("CAPPED") is not None


@pytest.mark.parametrize("kind", ["dev-zero", "fifo"])
@pytest.mark.parametrize("command", ["serve", "tserver"])
def test_a_tokens_file_that_is_no_regular_file_is_refused(
    store: str, tmp_path: Path, kind: str, command: str
) -> None:
    """``serve`` and ``tserver`` read ``--tokens-file`` whole: /dev/zero took
    memory without end, a FIFO blocked for a writer."""
    path = Path("/dev/zero") if kind == "dev-zero" else tmp_path / "t.fifo"
    if kind == "fifo":
        os.mkfifo(path)
    server = (
        ("serve", "--port", "0")
        if command == "serve"
        else ("tserver", "--name", "t1", "--data-dir", str(tmp_path / "d"))
    )
    result = _bounded("--store", store, *server, "--tokens-file", str(path), cwd=tmp_path)
    assert result.returncode == 1
    line = _one_error_line(result.stderr)
    assert "Cannot read tokens file" in line and ("a FIFO" in line or "a device" in line), line


@pytest.mark.parametrize(
    "text",
    ["SHOW TABLES " + "x" * 100_000, "CREATE SCHEMA s; DROP " + "y" * 100_000],
    ids=["read", "script"],
)
def test_a_huge_token_is_quoted_cut_short(
    store: str, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    """The parse error quoted the whole offending token: one line of megabytes."""
    status, out, err = _call(capsys, "--store", store, "sql", text)
    assert (status, out) == (1, "")
    assert "Unexpected" in _one_error_line(err)
