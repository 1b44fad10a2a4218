"""Manifest lists and manifests are checked before pyiceberg's compiled Avro
decoder reads them: it trusts every length it reads, and a damaged header
(a byte-inverted manifest list) crashed the whole process with a
segmentation fault in a string read past the buffer. A malformed file is a
``MetadataFileError`` naming it; a well-formed one passes untouched."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from almanac import connect
from almanac.data import TableData
from almanac.data.bounded_io import MetadataFileError, check_avro_blocks
from tests.data.support import append, create


@pytest.fixture(scope="module")
def avro_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """A real manifest list and manifest, as Almanac writes them."""
    with connect(str(tmp_path_factory.mktemp("avro") / "data")) as cat:
        table = create(cat)
        append(cat, [1, 2, 3])
        data = TableData.for_catalog(cat)
        location = data.metadata_location(table.id)
        assert location is not None
        metadata = data.iceberg.metadata(location)
        snapshot = metadata.current_snapshot()
        assert snapshot is not None
        manifest = data.iceberg.manifests(metadata)[0].manifest_path
        paths = {"manifest_list": snapshot.manifest_list, "manifest": manifest}
        return {kind: Path(p.removeprefix("file://")).read_bytes() for kind, p in paths.items()}


@pytest.mark.parametrize("kind", ["manifest_list", "manifest"])
def test_a_well_formed_file_passes(avro_files: dict[str, bytes], kind: str) -> None:
    check_avro_blocks(f"/w/{kind}.avro", avro_files[kind])


@pytest.mark.parametrize("kind", ["manifest_list", "manifest"])
def test_inverted_truncated_and_empty_files_are_refused_naming_them(
    avro_files: dict[str, bytes], kind: str
) -> None:
    good = avro_files[kind]
    for damaged in (bytes(255 - c for c in good), good[: len(good) // 2], good[:-1], b""):
        with pytest.raises(MetadataFileError, match=rf"'/w/{kind}\.avro' is not a well-formed"):
            check_avro_blocks(f"/w/{kind}.avro", damaged)


@pytest.mark.parametrize("kind", ["manifest_list", "manifest"])
def test_random_damage_is_refused_or_leaves_every_length_in_bounds(
    avro_files: dict[str, bytes], kind: str
) -> None:
    """Every flip either keeps the framing intact (then each length read is
    inside the file) or is a MetadataFileError: never another exception."""
    good = avro_files[kind]
    rng = random.Random(5)
    refused = 0
    for _ in range(400):
        damaged = bytearray(good)
        for _ in range(rng.randrange(1, 4)):
            damaged[rng.randrange(len(good))] ^= rng.randrange(1, 256)
        try:
            check_avro_blocks(f"/w/{kind}.avro", bytes(damaged))
        except MetadataFileError:
            refused += 1
    assert refused > 0
