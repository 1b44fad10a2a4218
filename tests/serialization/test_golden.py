"""Golden files pin the bytes of every released serializer.

``golden/<stem>.v<N>.bin`` holds the example ``EXAMPLES[<stem>]`` written by
version N of its type's serializer. Each file must decode to its example
(or to ``OLD_VERSION_EXPECTED`` when an older version cannot carry every
field), and the newest version must still write exactly the newest file.
So changing a released serializer's output fails here: add version N+1
instead, keep version N's reader, and keep its golden file forever.

Regenerate the newest version's files (never edit a released one by hand)::

    ALMANAC_REGEN_GOLDEN=1 PYTHONPATH=src .venv/bin/python -m pytest \
        tests/serialization/test_golden.py
"""

from __future__ import annotations

import os
import re
from dataclasses import replace
from pathlib import Path

import pytest
from immutables import Map

from almanac.serialization import REGISTRY, decode, encode
from almanac.serialization.io import Reader

from . import CHECKPOINT, EXAMPLES, SNAPSHOT, UPDATE, assert_same

GOLDEN = Path(__file__).parent / "golden"
REGENERATE = os.environ.get("ALMANAC_REGEN_GOLDEN") == "1"
_NAME = re.compile(r"(?P<stem>[A-Za-z]+(?:-\w+)?)\.v(?P<version>\d+)\.bin")

_UPDATE_V1 = replace(UPDATE, node="", request_id=None, request_digest=b"", applied=())
_SNAPSHOT_V1 = SNAPSHOT.evolve(table_data=Map())
_CHECKPOINT_CATALOG_V1 = replace(CHECKPOINT, catalog=_SNAPSHOT_V1)
OLD_VERSION_EXPECTED: dict[tuple[str, int], object] = {
    ("VersionedUpdate", 1): _UPDATE_V1,
    ("VersionedUpdate-column_v1", 1): _UPDATE_V1,
    **{
        (f"CatalogVersion{tail}", 1): _SNAPSHOT_V1
        for tail in ("", "-column_v1", "-column_v2", "-table_v1", "-table_v3")
    },
    **{
        (f"Checkpoint{tail}", 1): _CHECKPOINT_CATALOG_V1
        for tail in ("-catalog_v1", "-column_v2", "-table_v1", "-table_v3")
    },
}
"""(stem, version) → what an old golden file decodes to, when not the example itself.
(VersionedUpdate v1 had no node, request id, digest or applied flags;
CatalogVersion v1, and the checkpoints that nest it, no data snapshots.)"""

OLD_NESTED: dict[str, str] = {
    **{
        f"{stem}-column_v1": stem
        for stem in (
            "Table",
            "TableCreated",
            "ColumnsAdded",
            "ColumnAltered",
            "VersionedUpdate",
            "CatalogVersion",
        )
    },
    **{
        f"{stem}-table_v1": stem
        for stem in ("TableCreated", "VersionedUpdate", "CatalogVersion", "Checkpoint")
    },
    **{
        f"{stem}-column_v2": stem
        for stem in (
            "Table",
            "TableCreated",
            "ColumnsAdded",
            "ColumnAltered",
            "VersionedUpdate",
            "CatalogVersion",
            "Checkpoint",
        )
    },
    "Table-soft_deleted_column_v2": "Table-soft_deleted",
    "Checkpoint-catalog_v1": "Checkpoint",
    **{
        f"{stem}-table_v3": stem
        for stem in ("TableCreated", "VersionedUpdate", "CatalogVersion", "Checkpoint")
    },
}
"""Stem of a released file whose nested objects an older serializer wrote →
the stem of its example. Its own type's serializer did not change, but
writing now nests the newer version, so such a file is only read: its bytes
must keep decoding to the example. (``-column_v1``: written before Column v2;
``-table_v1``: written before Table v2; ``-column_v2`` / ``_column_v2``:
written before Column v3 and Table v3; ``-table_v3``: written before Table v4;
``-catalog_v1``: written before CatalogVersion v2.)"""


def _newest(stem: str) -> int:
    return REGISTRY.serializers(type(EXAMPLES[stem]))[-1].version


def _newest_files() -> list[str]:
    return sorted(f"{stem}.v{_newest(stem)}.bin" for stem in EXAMPLES)


def _all_files() -> list[str]:
    present = {p.name for p in GOLDEN.glob("*.bin")} if GOLDEN.is_dir() else set()
    return sorted(present | set(_newest_files()))


def _parse(name: str) -> tuple[str, int]:
    match = _NAME.fullmatch(name)
    assert match, f"golden file {name} is not named <stem>.v<N>.bin"
    return match["stem"], int(match["version"])


@pytest.mark.parametrize("name", _newest_files())
def test_newest_serializer_writes_the_golden_bytes(name: str) -> None:
    stem, _ = _parse(name)
    path = GOLDEN / name
    data = encode(EXAMPLES[stem])
    if REGENERATE:
        GOLDEN.mkdir(exist_ok=True)
        path.write_bytes(data)
    assert path.exists(), f"{name} is missing; run with ALMANAC_REGEN_GOLDEN=1 to create it"
    assert data == path.read_bytes(), (
        f"{name}: the newest serializer no longer writes the released bytes; "
        "register a new serializer version instead of changing this one"
    )


@pytest.mark.parametrize("name", _all_files())
def test_golden_file_decodes_to_its_example(name: str) -> None:
    stem, version = _parse(name)
    example = OLD_NESTED.get(stem, stem)
    assert example in EXAMPLES, f"golden file {name} has no example in EXAMPLES"
    path = GOLDEN / name
    if not path.exists():
        pytest.fail(f"{name} is missing; run with ALMANAC_REGEN_GOLDEN=1 to create it")
    data = path.read_bytes()
    header = Reader(data, 4)
    assert header.uvarint() == version, f"{name} does not hold a version {version} header"
    assert data[2:4] == REGISTRY.type_id(type(EXAMPLES[example])).to_bytes(2, "big")
    decoded = decode(data)
    assert_same(decoded, OLD_VERSION_EXPECTED.get((stem, version), EXAMPLES[example]))
    if version == _newest(example) and stem not in OLD_NESTED:
        assert encode(decoded) == data


@pytest.mark.parametrize("stem", sorted(OLD_NESTED))
def test_files_with_older_nested_versions_are_kept(stem: str) -> None:
    example = OLD_NESTED[stem]
    paths = sorted(GOLDEN.glob(f"{stem}.v*.bin"))
    assert paths, f"{stem}.v*.bin was released and must stay"
    for path in paths:
        assert path.read_bytes() != encode(EXAMPLES[example]), (
            f"{path.name} is what the newest serializers write; it belongs in {example}.v*.bin"
        )


def test_every_type_and_version_has_a_golden_file() -> None:
    pinned = {_parse(name) for name in _all_files()}
    for cls in REGISTRY.types():
        for info in REGISTRY.serializers(cls):
            assert any(
                type(EXAMPLES[OLD_NESTED.get(stem, stem)]) is cls and version == info.version
                for stem, version in pinned
            ), f"no golden file for {cls.__name__} v{info.version}"
