"""Catalog targets: the one place that reads what ``almanac.connect`` accepts.

A target names a catalog so that any process can open it:

=============================  =========  ======================================
target                         kind       the metastore behind it
=============================  =========  ======================================
``memory://``                  memory     a fresh store in this process only
``./data``, ``/abs/dir``       directory  ``<dir>/catalog.db`` (SQLite)
``sqlite:///abs/path/file.db`` sqlite     that SQLite file (percent-decoded)
=============================  =========  ======================================

A string with a URI scheme (``word:``) is never read as a directory: only the
two schemes above are known, so ``memory:/`` or ``foo://x`` is refused instead
of quietly making a folder of that name (write ``./memory:`` if you mean one).
Blank targets, surrounding whitespace, NUL characters and text that is not
valid Unicode are refused too. :func:`parse_target` is pure: it touches no
file; relative directories are made absolute against the current directory
at the time of parsing.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import quote, unquote

from almanac.errors import ValidationError

__all__ = ["MEMORY", "STORE_FILE", "Target", "TargetKind", "parse_target"]

STORE_FILE = "catalog.db"
"""The metastore file inside a directory target."""

MEMORY = "memory://"
_SQLITE = "sqlite://"
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*):")
_FORMS = "memory://, sqlite:///abs/path/file.db or a directory path"

TargetKind = Literal["memory", "directory", "sqlite"]


@dataclass(frozen=True, slots=True)
class Target:
    """A parsed catalog target. ``path`` is the catalog directory (directory),
    the database file (sqlite), or ``None`` (memory); it is always absolute.
    ``str(target)`` is the canonical text, and ``parse_target(str(t)) == t``."""

    kind: TargetKind
    path: Path | None = None

    @property
    def durable(self) -> bool:
        """Whether other processes can open it (everything but ``memory://``)."""
        return self.kind != "memory"

    @property
    def store_path(self) -> Path | None:
        """The SQLite file holding the metastore, or ``None`` in memory."""
        if self.path is None:
            return None
        return self.path / STORE_FILE if self.kind == "directory" else self.path

    @property
    def store_uri(self) -> str:
        """The metastore URI another process opens (``open_metastore`` reads it)."""
        store = self.store_path
        return MEMORY if store is None else _SQLITE + quote(str(store))

    @property
    def root(self) -> Path | None:
        """The directory the catalog lives in: the directory itself, or the
        database file's folder."""
        if self.path is None:
            return None
        return self.path if self.kind == "directory" else self.path.parent

    @property
    def default_warehouse(self) -> str | None:
        """Where table data goes unless ``connect(warehouse=...)`` says otherwise."""
        root = self.root
        return None if root is None else str(root / "warehouse")

    def __str__(self) -> str:
        if self.kind == "memory":
            return MEMORY
        if self.kind == "sqlite":
            return _SQLITE + quote(str(self.path))
        return str(self.path)


def _refuse(target: object, problem: str, rule: str) -> ValidationError:
    return ValidationError(
        f"Unsupported catalog target {target!r}: it {problem}; use {_FORMS}",
        target=repr(target),
        rule=rule,
    )


def _check_text(text: str, original: object) -> None:
    if not text.strip():
        raise _refuse(original, "is blank", "blank-target")
    if text != text.strip():
        raise _refuse(original, "has leading or trailing whitespace", "target-whitespace")
    if "\x00" in text:
        raise _refuse(original, "contains a NUL character", "target-nul")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise _refuse(original, "is not valid Unicode", "target-unicode") from None


def parse_target(target: object) -> Target:
    """Read a catalog target: a ``str``, an ``os.PathLike`` or a ``Target``
    (see the module doc); ``ValidationError`` when it is not one."""
    if isinstance(target, Target):
        return target
    if isinstance(target, str):
        text = target
    elif isinstance(target, os.PathLike):
        path = target.__fspath__()
        if not isinstance(path, str):
            raise _refuse(target, "is a bytes path", "target-type")
        text = path
    else:
        raise ValidationError(
            f"Unsupported catalog target {target!r}: it must be a str or a path, "
            f"not {type(target).__name__}",
            target=repr(target),
            rule="target-type",
        )
    _check_text(text, target)
    scheme = _SCHEME.match(text)
    if scheme is not None and len(scheme.group(1)) > 1:
        if text == MEMORY:
            return Target("memory")
        if text.startswith(_SQLITE):
            return Target("sqlite", _sqlite_path(text))
        if scheme.group(1).lower() in ("memory", "sqlite"):
            raise _refuse(target, "is malformed", "target-form")
        raise _refuse(target, f"has the unsupported scheme '{scheme.group(1)}:'", "target-scheme")
    return Target("directory", Path(os.path.abspath(text)))


def _sqlite_path(text: str) -> Path:
    try:
        # strict: an escape of bytes that are not UTF-8 (%ff) would otherwise
        # become U+FFFD and name a different file than the one meant
        raw = unquote(text[len(_SQLITE) :], errors="strict")
    except UnicodeDecodeError:
        raise _refuse(text, "percent-encodes bytes that are not UTF-8", "target-unicode") from None
    if "\x00" in raw:
        raise _refuse(text, "contains a NUL character", "target-nul")
    if not raw.startswith("/"):
        raise _refuse(text, "needs an absolute path (three slashes: sqlite:///...)", "target-form")
    if raw.endswith("/") or raw != raw.strip():
        raise _refuse(text, "does not name a database file", "target-form")
    try:
        raw.encode("utf-8")
    except UnicodeEncodeError:
        raise _refuse(text, "is not valid Unicode", "target-unicode") from None
    return Path(os.path.normpath(raw))
