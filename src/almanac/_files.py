"""Reading a small file a user names (a SQL script, a tokens file) without
letting the name hang or exhaust the process.

A FIFO blocks its reader until a writer comes, a device such as
``/dev/zero`` never ends, a directory or a too-long name fails with an
``OSError``: each is refused here as one ``ValidationError`` naming the file,
and a regular file is read up to a cap, never whole.
"""

from __future__ import annotations

import os
import stat

from almanac.errors import ValidationError

__all__ = ["read_small_file", "shown_path"]

_SHOWN_CHARS = 120


def shown_path(path: str) -> str:
    """``path`` quoted, cut to a readable length for a message."""
    text = repr(path)
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 3] + "..."


def read_small_file(path: str, *, limit: int, what: str) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them;
    ``what`` names the file in the message (e.g. ``"script file"``)."""
    shown = shown_path(path)

    def refuse(problem: str, rule: str) -> ValidationError:
        return ValidationError(f"Cannot read {what} {shown}: {problem}", path=shown, rule=rule)

    if "\x00" in path:
        raise refuse("the path contains a NUL character", "file-path")
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except (OSError, UnicodeEncodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "it is not valid Unicode"
        raise refuse(str(reason), "file-path") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
            raise refuse(f"it is {kind}", "file-kind")
        os.set_blocking(fd, True)
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, min(limit + 1 - size, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise refuse(str(exc.strerror), "file-read") from None
    finally:
        os.close(fd)
    if size > limit:
        raise refuse(f"it holds more than {limit} bytes, the most it may have", "file-size")
    return b"".join(chunks)
