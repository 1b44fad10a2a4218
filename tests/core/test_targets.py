"""Catalog targets are parsed once, by ``parse_target``, into a ``Target``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

import almanac
from almanac import Target, ValidationError, parse_target
from almanac.data.plane import warehouse_of
from almanac.metastore import InvalidArgumentError, MemoryMetastore, open_metastore


def test_memory() -> None:
    t = parse_target("memory://")
    assert t == Target("memory")
    assert (t.durable, t.path, t.store_path, t.root, t.default_warehouse) == (
        False,
        None,
        None,
        None,
        None,
    )
    assert t.store_uri == "memory://" and str(t) == "memory://"


def test_directory_is_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    t = parse_target("data")
    assert t == Target("directory", tmp_path / "data")
    assert t.durable and t.root == tmp_path / "data"
    assert t.store_path == tmp_path / "data" / "catalog.db"
    assert t.store_uri == f"sqlite://{tmp_path}/data/catalog.db"
    assert t.default_warehouse == str(tmp_path / "data" / "warehouse")
    assert str(t) == str(tmp_path / "data")
    assert parse_target(Path("data")) == t
    assert parse_target("./data:v1").path == tmp_path / "data:v1"
    assert parse_target("C:/x").kind == "directory"  # one letter is a drive, not a scheme


def test_sqlite_file() -> None:
    t = parse_target("sqlite:///srv/my%20cat/file.db")
    assert t == Target("sqlite", Path("/srv/my cat/file.db"))
    assert t.root == Path("/srv/my cat")
    assert t.store_uri == "sqlite:///srv/my%20cat/file.db" == str(t)
    assert t.default_warehouse == "/srv/my cat/warehouse"


@pytest.mark.parametrize(
    "text", ["memory://", "/a/b", "sqlite:///a/b.db", "sqlite:///a%25b/c%20d.db", "/x y"]
)
def test_canonical_text_parses_to_the_same_target(text: str) -> None:
    t = parse_target(text)
    assert parse_target(str(t)) == t
    assert parse_target(t) is t


def test_etcd_targets_name_endpoints_namespace_and_bound() -> None:
    t = parse_target("etcd://127.0.0.1:2379,db2.local:2380/cats/prod?timeout=2.5")
    assert t == Target(
        "etcd",
        endpoints=("127.0.0.1:2379", "db2.local:2380"),
        namespace="cats/prod",
        timeout_s=2.5,
    )
    assert (t.durable, t.root, t.store_path, t.default_warehouse) == (True, None, None, None)
    assert parse_target(str(t)) == t and t.store_uri == str(t)
    assert parse_target("etcd://h:1") == Target("etcd", endpoints=("h:1",))


@pytest.mark.parametrize(
    "text",
    [
        "etcd://h:1",
        "etcd://h:1,g:2/ns",
        "etcd://h:1/a/b.c-d_e?timeout=0.25",
        "etcd://[::1]:2379,[fd00::2]:2379/ns",
    ],
)
def test_etcd_canonical_text_round_trips(text: str) -> None:
    assert str(parse_target(text)) == text


@pytest.mark.parametrize(
    ("target", "fragment"),
    [
        ("", "is blank"),
        (" ", "is blank"),
        ("\t\n", "is blank"),
        (" ./data", "whitespace"),
        ("data ", "whitespace"),
        ("\x00", "NUL"),
        ("da\x00ta", "NUL"),
        ("\udcff", "not valid Unicode"),
        ("memory:/", "malformed"),
        ("memory:", "malformed"),
        ("memory://x", "malformed"),
        ("MEMORY://", "malformed"),
        ("sqlite:/x.db", "malformed"),
        ("sqlite://relative.db", "absolute path"),
        ("sqlite:///", "database file"),
        ("sqlite:///dir/", "database file"),
        ("sqlite:///a%00b.db", "NUL"),
        ("sqlite:///a%ffb.db", "not UTF-8"),
        ("sqlite:///a%C3.db", "not UTF-8"),
        ("foo://x", "unsupported scheme 'foo:'"),
        ("etcd://", "no etcd endpoint"),
        ("etcd:///ns", "no etcd endpoint"),
        ("etcd://localhost", "not host:port"),
        ("etcd://localhost:", "not host:port"),
        ("etcd://a:1,,b:2", "not host:port"),
        ("etcd://a:1,a:1", "endpoint twice"),
        ("etcd://a:0", "outside 1..65535"),
        ("etcd://a:65536", "outside 1..65535"),
        ("etcd://a:x", "not host:port"),
        ("etcd://a:1/", "empty namespace"),
        ("etcd://a:1/ns/", "namespace"),
        ("etcd://a:1//ns", "namespace"),
        ("etcd://a:1/n s", "namespace"),
        ("etcd://a:1/ns?timeout=0", "positive number"),
        ("etcd://a:1/ns?timeout=-1", "positive number"),
        ("etcd://a:1/ns?timeout=nan", "positive number"),
        ("etcd://a:1/ns?timeout=", "positive number"),
        ("etcd://a:1/ns?wait=1", "unknown option"),
        ("etcd://[:::]:1", "not host:port"),
        ("etcd://[::1]/ns", "not host:port"),
        ("etcd://::1:2379", "not host:port"),
        # a segment that begins like the catalog's keys would put its keys in
        # the ranges of the catalog one level up
        ("etcd://a:1/catalog.update.7", "reserved"),
        ("etcd://a:1/ns/catalog.node.x", "reserved"),
        ("etcd://a:1/ns/data.snapshot.1/x", "reserved"),
        # a line break before '/' or '?' is not the end of an endpoint or namespace
        ("etcd://a:1\n/ns", "not host:port"),
        ("etcd://a:1/ns\n?timeout=1", "namespace"),
        ("etcd://a:1,b:2\n,c:3", "not host:port"),
        # a bound beyond a day overflows the clocks that enforce it
        ("etcd://a:1/ns?timeout=1e10", "at most 86400"),
        ("etcd://a:1/ns?timeout=1e308", "at most 86400"),
        # only plain decimals: no digit separators, spaces or other scripts
        ("etcd://a:1/ns?timeout=1_0", "positive number"),
        ("etcd://a:1/ns?timeout= 1", "positive number"),
        ("etcd://a:1/ns?timeout=\u0663", "positive number"),
        ("etcd://a:1/ns?timeout=1&timeout=2", "positive number"),
        ("etcd://a:1?", "empty query"),
        ("ETCD://a:1", "malformed"),
        ("file:///tmp/x", "unsupported scheme"),
        ("data:v1", "unsupported scheme"),
        (5, "must be a str or a path, not int"),
        (None, "not NoneType"),
        (b"/tmp/x", "not bytes"),
        (Path("a").__fspath__().encode(), "not bytes"),
        (["memory://"], "not list"),
    ],
)
def test_bad_targets_are_refused(target: Any, fragment: str) -> None:
    with pytest.raises(ValidationError, match="Unsupported catalog target") as info:
        parse_target(target)
    assert fragment in str(info.value)


class _BytesPath(os.PathLike[bytes]):
    def __fspath__(self) -> bytes:
        return b"/tmp/x"


def test_a_bytes_path_is_refused() -> None:
    with pytest.raises(ValidationError, match="bytes path"):
        parse_target(_BytesPath())


@pytest.mark.parametrize("target", ["", " ", "memory:/", "\x00", "foo://x", "  data"])
def test_connect_refuses_and_creates_nothing(
    target: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValidationError):
        almanac.connect(target)
    assert list(tmp_path.iterdir()) == []


def test_connect_accepts_paths_and_targets(tmp_path: Path) -> None:
    with almanac.connect(tmp_path / "a") as cat:
        assert cat.target == str(tmp_path / "a")
        assert warehouse_of(cat) == str(tmp_path / "a" / "warehouse")
        cat.execute([almanac.CreateSchema("S")])
    with almanac.connect(parse_target(str(tmp_path / "a"))) as again:
        assert again.catalog().schema("S") is not None
    uri = f"sqlite://{tmp_path}/b.db"
    with almanac.connect(uri) as cat:
        assert cat.target == uri and cat.root == tmp_path
    assert (tmp_path / "b.db").exists()


def test_open_metastore_reads_targets_with_the_same_parser(tmp_path: Path) -> None:
    with open_metastore("memory://") as store:
        assert isinstance(store, MemoryMetastore)
    with almanac.connect(tmp_path / "c") as cat:
        cat.execute([almanac.CreateSchema("S")])
    with open_metastore(parse_target(tmp_path / "c").store_uri) as store:
        assert store.get("catalog.version") is not None
    with open_metastore(str(tmp_path / "c")) as store:
        assert store.get("catalog.version") is not None
    for bad in ["memory:/", "", "foo://x"]:
        with pytest.raises(InvalidArgumentError, match="Unsupported catalog target"):
            open_metastore(bad)


@pytest.mark.parametrize(
    "text",
    [
        "a" * 5000,
        "/" + "n" * 256,
        "/x" * 2100,
        "sqlite:///" + "b" * 300 + "/c.db",
        "http://" + "h" * 254,
        "https://" + "l" * 64 + ".example",
        "etcd://" + "h" * 64 + ":2379",
    ],
    ids=["relative", "long-name", "long-path", "sqlite", "http-host", "http-label", "etcd"],
)
def test_names_the_file_system_or_dns_cannot_carry_are_refused(text: str) -> None:
    """They failed later as OSError (ENAMETOOLONG) or UnicodeError (IDNA)."""
    with pytest.raises(ValidationError, match="Unsupported catalog target") as info:
        parse_target(text)
    assert info.value.context["rule"] in ("target-path-length", "target-host-length")
    assert len(str(info.value)) < 500, "the target is shown cut short"
    with pytest.raises(ValidationError):
        almanac.connect(text)


def test_the_longest_names_still_parse() -> None:
    assert parse_target("/" + "n" * 255).path == Path("/" + "n" * 255)
    assert parse_target("http://" + "l" * 63 + ".example").url.endswith(".example")
