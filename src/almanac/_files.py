"""Reading a file whose name a user or a client chose (a SQL script, a
tokens file, an Iceberg metadata file) without letting the name hang or
exhaust the process.

A FIFO blocks its reader until a writer comes, a device such as
``/dev/zero`` never ends: only a regular file is read, checked before it is
opened (opening a FIFO waits) and again on the open descriptor (it may have
been swapped meanwhile), and read up to a cap and one byte more, so a file
past the cap is refused without being read whole.
"""

from __future__ import annotations

import os
import stat

from almanac.errors import ValidationError

__all__ = ["FileRefused", "read_regular", "read_small_file", "shown_path"]

_SHOWN_CHARS = 120


class FileRefused(Exception):
    """``read_regular`` would not read the file: ``rule`` is ``"file-type"``
    (``problem`` says what it is instead) or ``"file-size"``."""

    def __init__(self, problem: str, rule: str) -> None:
        super().__init__(problem)
        self.problem = problem
        self.rule = rule


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _check(mode: int, size: int, limit: int) -> None:
    if not stat.S_ISREG(mode):
        raise FileRefused(f"is {_kind(mode)}", "file-type")
    if size > limit:
        raise FileRefused(f"is larger than {limit} bytes", "file-size")


def read_regular(path: str, limit: int) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit``;
    ``FileRefused`` for any other file or a larger one, ``OSError`` (as the
    system gave it) when it cannot be found, opened or read."""
    before = os.stat(path)
    _check(before.st_mode, before.st_size, limit)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | os.O_CLOEXEC)
    with os.fdopen(fd, "rb", buffering=0) as file:
        opened = os.fstat(fd)
        _check(opened.st_mode, opened.st_size, limit)
        chunks: list[bytes] = []
        left = limit + 1
        while left > 0:
            chunk = file.read(min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    data = b"".join(chunks)
    if len(data) > limit:  # it grew after its size was checked
        raise FileRefused(f"is larger than {limit} bytes", "file-size")
    return data


def shown_path(path: object) -> str:
    """``path`` (a ``str`` or anything a user gave as one) quoted, cut to a
    readable length for a message."""
    text = repr(path)
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 3] + "..."


def read_small_file(path: str, *, limit: int, what: str) -> bytes:
    """``read_regular`` for a file a user named on a command line or in a
    setting: every refusal is one ``ValidationError`` naming the file (``what``
    says which, e.g. ``"script file"``)."""
    shown = shown_path(path)

    def refuse(problem: str, rule: str) -> ValidationError:
        return ValidationError(f"Cannot read {what} {shown}: {problem}", path=shown, rule=rule)

    if "\x00" in path:
        raise refuse("the path contains a NUL character", "file-path")
    try:
        return read_regular(path, limit)
    except FileRefused as exc:
        raise refuse(f"it {exc.problem}", exc.rule) from None
    except (OSError, UnicodeEncodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "it is not valid Unicode"
        raise refuse(str(reason), "file-path") from None
