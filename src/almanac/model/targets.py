"""Catalog targets: the one place that reads what ``almanac.connect`` accepts.

A target names a catalog so that any process can open it:

=============================  =========  ======================================
target                         kind       the metastore behind it
=============================  =========  ======================================
``memory://``                  memory     a fresh store in this process only
``./data``, ``/abs/dir``       directory  ``<dir>/catalog.db`` (SQLite)
``sqlite:///abs/path/file.db`` sqlite     that SQLite file (percent-decoded)
``etcd://h1:p1,h2:p2/ns``      etcd       an etcd cluster, keys under ``ns/``
``http://host:port``           http       an ``almanac serve`` server (also
                                          ``https://``); no metastore here
=============================  =========  ======================================

An etcd target lists one or more ``host:port`` client endpoints (or
``[ipv6]:port``), an optional namespace (segments of letters, digits, ``_.-``
joined by ``/``; several catalogs share a cluster under different namespaces) and an optional
``?timeout=S``, the bound in seconds of every metastore call (5 by default).
It has no directory, so no default warehouse: pass
``almanac.connect(uri, warehouse=...)`` for table data.

An http target is ``http://`` or ``https://``, a host (name, IPv4, or
``[ipv6]``), an optional port and an optional path prefix (a server behind a
reverse proxy); no user, query or fragment. It names a server, not a store:
``almanac.connect`` returns a ``RemoteCatalog`` for it, and it has no
``store_uri``.

A string with a URI scheme (``word:``) is never read as a directory: only the
schemes above are known, so ``memory:/`` or ``foo://x`` is refused instead
of quietly making a folder of that name (write ``./memory:`` if you mean one).
Blank targets, surrounding whitespace, NUL characters and text that is not
valid Unicode are refused too. :func:`parse_target` is pure: it touches no
file; relative directories are made absolute against the current directory
at the time of parsing.
"""

from __future__ import annotations

import ipaddress
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import quote, unquote

from almanac._files import shown_path
from almanac.errors import ValidationError

__all__ = ["MAX_TIMEOUT_S", "MEMORY", "STORE_FILE", "Target", "TargetKind", "parse_target"]

STORE_FILE = "catalog.db"
"""The metastore file inside a directory target."""

MEMORY = "memory://"

MAX_TIMEOUT_S = 86400.0
"""The longest metastore call bound: beyond it the event loop's and the
threads' clocks overflow (or a call waits past any useful time)."""
_SQLITE = "sqlite://"
_ETCD = "etcd://"
_HTTP = ("http://", "https://")
_HTTP_PATH = re.compile(r"^(?:/[A-Za-z0-9_.~\-]+)+\Z")
# \Z, not $: $ also matches before a final line break
_ENDPOINT = re.compile(
    r"^(?P<host>[A-Za-z0-9](?:[A-Za-z0-9.\-]*[A-Za-z0-9])?|\[(?P<ipv6>[0-9A-Fa-f:.]+)\])"
    r":(?P<port>[0-9]+)\Z"
)
_NAMESPACE = re.compile(r"^[A-Za-z0-9_.\-]+(?:/[A-Za-z0-9_.\-]+)*\Z")
_RESERVED_SEGMENT = re.compile(r"(?:^|/)(catalog|data)\.")
_SECONDS = re.compile(r"^(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*):")
_FORMS = (
    "memory://, sqlite:///abs/path/file.db, etcd://host:port[,host:port...][/namespace], "
    "http[s]://host[:port][/prefix] or a directory path"
)

TargetKind = Literal["memory", "directory", "sqlite", "etcd", "http"]

MAX_NAME_BYTES = 255
"""The longest file name (one path component) a target may have, in UTF-8
bytes: Linux's NAME_MAX; beyond it every file call fails."""
MAX_PATH_BYTES = 4095
"""The longest path a target may have, in UTF-8 bytes (Linux's PATH_MAX,
less its NUL)."""
MAX_HOST_CHARS = 253
"""The longest host name (DNS: 253 characters, labels of at most 63)."""
_MAX_LABEL_CHARS = 63


@dataclass(frozen=True, slots=True)
class Target:
    """A parsed catalog target. ``path`` is the catalog directory (directory),
    the database file (sqlite), or ``None`` (memory, etcd); it is always
    absolute. An etcd target has its ``endpoints``, ``namespace`` and call
    bound ``timeout_s`` (``None``: the backend's default). An http target
    has its ``url``, the server's base address.
    ``str(target)`` is the canonical text, and ``parse_target(str(t)) == t``."""

    kind: TargetKind
    path: Path | None = None
    endpoints: tuple[str, ...] = ()
    namespace: str = ""
    timeout_s: float | None = None
    url: str = ""

    @property
    def durable(self) -> bool:
        """Whether other processes can open it (everything but ``memory://``)."""
        return self.kind != "memory"

    @property
    def store_path(self) -> Path | None:
        """The SQLite file holding the metastore, or ``None`` (memory, etcd)."""
        if self.path is None:
            return None
        return self.path / STORE_FILE if self.kind == "directory" else self.path

    @property
    def store_uri(self) -> str:
        """The metastore URI another process opens (``open_metastore`` reads it);
        ``ValidationError`` for an http target, which names a server, not a store."""
        if self.kind == "http":
            raise ValidationError(
                f"Catalog target '{self.url}' is a server: it has no metastore to open "
                "(almanac.connect reaches it over HTTP)",
                target=self.url,
                rule="remote-target",
            )
        if self.kind == "etcd":
            return str(self)
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
        if self.kind == "http":
            return self.url
        if self.kind == "etcd":
            text = _ETCD + ",".join(self.endpoints)
            if self.namespace:
                text += "/" + self.namespace
            if self.timeout_s is not None:
                text += f"?timeout={self.timeout_s:g}"
            return text
        return str(self.path)


def _refuse(target: object, problem: str, rule: str) -> ValidationError:
    shown = shown_path(target)
    return ValidationError(
        f"Unsupported catalog target {shown}: it {problem}; use {_FORMS}",
        target=shown,
        rule=rule,
    )


def _check_path(path: Path, original: object) -> Path:
    """Refuse a path the file system would refuse with ENAMETOOLONG, so that
    it is one ``ValidationError`` here and not an ``OSError`` at any later
    file call."""
    size = len(os.fsencode(path))
    if size > MAX_PATH_BYTES:
        raise _refuse(
            original, f"is a path of {size} bytes, over {MAX_PATH_BYTES}", "target-path-length"
        )
    for part in path.parts:
        size = len(os.fsencode(part))
        if size > MAX_NAME_BYTES:
            raise _refuse(
                original,
                f"has a file name of {size} bytes, over {MAX_NAME_BYTES}",
                "target-path-length",
            )
    return path


def _check_host(host: str, original: object) -> None:
    """Refuse a host name DNS cannot carry (the IDNA codec raises
    ``UnicodeError`` on it when a client connects)."""
    labels = host.split(".")
    if len(host) > MAX_HOST_CHARS or any(len(label) > _MAX_LABEL_CHARS for label in labels):
        raise _refuse(
            original,
            f"has a host name over {MAX_HOST_CHARS} characters or with a label over "
            f"{_MAX_LABEL_CHARS}",
            "target-host-length",
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
            return Target("sqlite", _check_path(_sqlite_path(text), target))
        if text.startswith(_ETCD):
            return _etcd_target(text)
        if text.startswith(_HTTP):
            return _http_target(text)
        if scheme.group(1).lower() in ("memory", "sqlite", "etcd", "http", "https"):
            raise _refuse(target, "is malformed", "target-form")
        raise _refuse(target, f"has the unsupported scheme '{scheme.group(1)}:'", "target-scheme")
    return Target("directory", _check_path(Path(os.path.abspath(text)), target))


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


def _etcd_target(text: str) -> Target:
    rest = text[len(_ETCD) :]
    rest, _, query = rest.partition("?")
    hosts, _, namespace = rest.partition("/")
    if not hosts:
        raise _refuse(text, "lists no etcd endpoint (etcd://host:port,...)", "target-form")
    endpoints = tuple(hosts.split(","))
    for endpoint in endpoints:
        match = _ENDPOINT.match(endpoint)
        if match is None or (match["ipv6"] is not None and not _is_ipv6(match["ipv6"])):
            raise _refuse(
                text, f"has the endpoint {endpoint!r}, which is not host:port", "target-form"
            )
        if not 1 <= int(match["port"]) <= 65535:
            raise _refuse(text, f"has the port {match['port']}, outside 1..65535", "target-port")
        if match["ipv6"] is None:
            _check_host(match["host"], text)
    if len(set(endpoints)) != len(endpoints):
        raise _refuse(text, "lists an endpoint twice", "target-form")
    if namespace and not _NAMESPACE.match(namespace):
        raise _refuse(
            text,
            f"has the namespace {namespace!r}: use segments of letters, digits, '_', '.' "
            "or '-' separated by single '/'",
            "target-namespace",
        )
    if rest.endswith("/"):
        raise _refuse(text, "has an empty namespace after '/'", "target-namespace")
    if (problem := reserved_segment(namespace)) is not None:
        raise _refuse(text, f"has the namespace {namespace!r}: {problem}", "target-namespace")
    return Target("etcd", endpoints=endpoints, namespace=namespace, timeout_s=_timeout(text, query))


def _http_target(text: str) -> Target:
    scheme, _, rest = text.partition("://")
    if any(c in rest for c in "?#@"):
        raise _refuse(text, "has a user, query or fragment (only host, port, path)", "target-form")
    netloc, slash, path = rest.partition("/")
    path = (slash + path).removesuffix("/")
    match = _ENDPOINT.match(netloc) or _ENDPOINT.match(netloc + ":0")
    if match is None or (match["ipv6"] is not None and not _is_ipv6(match["ipv6"])):
        raise _refuse(text, f"has the host {netloc!r}, which is not host[:port]", "target-form")
    if match["ipv6"] is None:
        _check_host(match["host"], text)
    port = int(match["port"])
    if netloc.endswith(":" + match["port"]) and not 1 <= port <= 65535:
        raise _refuse(text, f"has the port {match['port']}, outside 1..65535", "target-port")
    if path and not _HTTP_PATH.match(path):
        raise _refuse(
            text,
            f"has the path {path!r}: use segments of letters, digits, '_', '.', '~' or '-' "
            "separated by single '/'",
            "target-form",
        )
    return Target("http", url=f"{scheme}://{netloc}{path}")


def _is_ipv6(text: str) -> bool:
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return True


def reserved_segment(namespace: str) -> str | None:
    """Why ``namespace`` would leak into another catalog's keys, or ``None``.

    A catalog's keys sit under ``ns/`` and its ranges start ``catalog.`` or
    ``data.``, so the namespace ``ns/catalog.x`` (or ``catalog.x`` beside a
    catalog without one) would put its keys inside those ranges: the outer
    catalog would read them as its log, list them as nodes, delete them in
    a checkpoint.
    """
    found = _RESERVED_SEGMENT.search(namespace)
    if found is None:
        return None
    return (
        f"a segment may not begin with '{found[1]}.', reserved for the catalog's own keys "
        "(the keys of a catalog one level up would include it)"
    )


def _timeout(text: str, query: str) -> float | None:
    if not query:
        if text.endswith("?"):
            raise _refuse(text, "has an empty query", "target-form")
        return None
    name, equals, value = query.partition("=")
    if name != "timeout" or not equals:
        raise _refuse(text, f"has the unknown option {query!r} (only timeout=S)", "target-form")
    seconds = float(value) if _SECONDS.match(value) else math.nan
    if not math.isfinite(seconds) or seconds <= 0:
        raise _refuse(
            text, f"has timeout={value!r}: it must be a positive number of seconds", "target-form"
        )
    if seconds > MAX_TIMEOUT_S:
        raise _refuse(
            text, f"has timeout={value!r}: it must be at most {MAX_TIMEOUT_S:g} s", "target-form"
        )
    return seconds
