"""Reading Iceberg metadata files whose paths a client chose: a size cap and
regular files only.

A ``metadata.json``, manifest list or manifest is read whole into memory
(pyiceberg parses each from one buffer), and a registered table's files lie
wherever its metadata says. Every such read goes through ``BoundedFileIO``:
a local path is read by ``almanac._files.read_regular`` (regular files only,
checked before opening, up to the cap), an object store's file up to the
cap; an Avro file's header and block framing must be well formed and its
compressed blocks may unpack to the cap in all (``check_avro_blocks``).
Writing is pyarrow's, its failures (a full or read-only disk) a
``StorageError`` naming the file.
"""

from __future__ import annotations

import bz2
import io
import os
import zlib
from collections.abc import Callable

from pyiceberg.io import InputFile, InputStream, OutputFile, OutputStream
from pyiceberg.io.pyarrow import PyArrowFileIO
from pyiceberg.typedef import EMPTY_DICT, Properties

from almanac._files import FileRefused, read_regular
from almanac.errors import StorageError, ValidationError

__all__ = [
    "MAX_METADATA_BYTES",
    "BoundedFileIO",
    "MetadataFileError",
    "check_avro_blocks",
    "gunzip_bounded",
]

MAX_METADATA_BYTES = 64 * 1024 * 1024
"""The largest Iceberg metadata file read (``metadata.json``, manifest list,
manifest), after decompression for a gzipped ``metadata.json``. Iceberg's
own manifests aim at 8 MB (``commit.manifest.target-size-bytes``) and a
``metadata.json`` holds kilobytes to a few megabytes unless it keeps
thousands of snapshots; parsing one costs several times its size in memory."""


class MetadataFileError(ValidationError):
    """An Iceberg metadata file that is not read: not a regular file, or
    larger than ``MAX_METADATA_BYTES``."""


def _too_large(location: str, limit: int) -> MetadataFileError:
    return MetadataFileError(
        f"Iceberg metadata file '{location}' is larger than {limit} bytes, the most "
        "Almanac reads of one metadata file",
        path=location,
        limit=limit,
        rule="metadata-file-size",
    )


def gunzip_bounded(location: str, data: bytes, limit: int = MAX_METADATA_BYTES) -> bytes:
    """``data`` (a ``.gz.metadata.json``) decompressed, refused past ``limit``
    bytes: a small file must not unpack into gigabytes."""
    inflater = zlib.decompressobj(wbits=zlib.MAX_WBITS | 16)
    try:
        out = inflater.decompress(data, limit + 1)
    except zlib.error as exc:
        raise MetadataFileError(
            f"Iceberg metadata file '{location}' is not valid gzip: {exc}",
            path=location,
            rule="metadata-file-gzip",
        ) from None
    if len(out) > limit or inflater.unconsumed_tail:
        raise _too_large(location, limit)
    return out


_AVRO_MAGIC = b"Obj\x01"
_AVRO_SYNC = 16


class _Avro:
    """A cursor over an Avro container's bytes: zigzag longs and byte strings."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.at = len(_AVRO_MAGIC)

    def long(self) -> int:
        shift = result = 0
        while True:
            byte = self.data[self.at]  # IndexError past the end
            self.at += 1
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return (result >> 1) ^ -(result & 1)
            shift += 7
            if shift > 63:
                raise ValueError("an Avro long longer than 64 bits")

    def bytes_(self) -> bytes:
        size = self.long()
        if size < 0 or self.at + size > len(self.data):
            raise ValueError("an Avro byte string past the end of the file")
        self.at += size
        return self.data[self.at - size : self.at]

    def codec(self) -> bytes:
        """Reads the header; the value of ``avro.codec`` (``null`` by default)."""
        found = b"null"
        while (count := self.long()) != 0:
            if count < 0:
                count = -count
                self.long()  # the block's size in bytes
            for _ in range(count):
                key, value = self.bytes_(), self.bytes_()
                if key == b"avro.codec":
                    found = value
        self.at += _AVRO_SYNC
        return found


def _inflate_deflate(block: bytes, cap: int) -> int:
    return len(zlib.decompressobj(-15).decompress(block, cap + 1))


def _inflate_bzip2(block: bytes, cap: int) -> int:
    return len(bz2.BZ2Decompressor().decompress(block, cap + 1))


def _inflate_zstandard(block: bytes, cap: int) -> int:
    import zstandard  # pyiceberg's optional codec; absent, pyiceberg refuses the file

    try:
        with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(block)) as reader:
            return len(reader.read(cap + 1))
    except zstandard.ZstdError as exc:
        raise ValueError(str(exc)) from None


_UNCHECKED_CODECS = (b"null", b"snappy")
"""Codecs whose blocks are not inflated here: ``null`` blocks are the file's
own bytes; snappy blocks are framed like the others and pyiceberg's codec
bounds each by its stated length."""

_INFLATE: dict[bytes, Callable[[bytes, int], int]] = {
    b"deflate": _inflate_deflate,
    b"bzip2": _inflate_bzip2,
    b"zstandard": _inflate_zstandard,
}


def _malformed(location: str, problem: str) -> MetadataFileError:
    return MetadataFileError(
        f"Iceberg metadata file '{location}' is not a well-formed Avro file: {problem}",
        path=location,
        rule="metadata-file-format",
    )


def check_avro_blocks(location: str, data: bytes, limit: int = MAX_METADATA_BYTES) -> None:
    """Refuse an Avro file (a manifest list or manifest) whose header or
    block framing is malformed, or whose compressed blocks unpack past
    ``limit`` bytes in all. pyiceberg's compiled decoder trusts the lengths
    it reads (a damaged header crashed the process in a string read past
    the buffer), and it inflates each block whole (a few megabytes of
    deflate would become gigabytes): so every length is checked against the
    file here first, and only as much as the cap is ever inflated."""
    if not data.startswith(_AVRO_MAGIC):
        raise _malformed(location, f"it does not start with the magic {_AVRO_MAGIC!r}")
    cursor = _Avro(data)
    try:
        codec = cursor.codec()
        if cursor.at > len(data):
            raise ValueError("the header's sync marker is past the end of the file")
        inflate = _INFLATE.get(codec)
        if inflate is None and codec not in _UNCHECKED_CODECS:
            raise ValueError(f"unknown codec {codec[:32]!r}")
        left = limit
        while cursor.at < len(data):
            if cursor.long() < 0:  # the block's record count
                raise ValueError("a block with a negative record count")
            block = cursor.bytes_()
            if inflate is not None:
                left -= inflate(block, left)
                if left < 0:
                    raise _too_large(location, limit)
            cursor.at += _AVRO_SYNC
            if cursor.at > len(data):
                raise ValueError("a block's sync marker is past the end of the file")
    except ImportError:
        return  # a codec not installed here: pyiceberg refuses the file itself
    except (ValueError, IndexError, EOFError, OSError, zlib.error) as exc:
        raise _malformed(location, str(exc) or type(exc).__name__) from None


class _BoundedInput(InputFile):
    """One file, read whole (at most the cap) into a seekable buffer."""

    def __init__(self, inner: InputFile, local_path: str | None, limit: int) -> None:
        super().__init__(inner.location)
        self._inner = inner
        self._local = local_path
        self._limit = limit

    def __len__(self) -> int:
        return len(self._inner)

    def exists(self) -> bool:
        return self._inner.exists()

    def open(self, seekable: bool = True) -> InputStream:
        if self._local is None:  # object storage: no FIFOs there, only size
            if len(self._inner) > self._limit:
                raise _too_large(self.location, self._limit)
            with self._inner.open(seekable=False) as stream:
                data = stream.read(self._limit + 1)
        else:
            data = self._read_local(self._local)
        if len(data) > self._limit:  # it grew after the size was checked
            raise _too_large(self.location, self._limit)
        if self.location.endswith(".avro"):  # manifest lists and manifests
            check_avro_blocks(self.location, data, self._limit)
        return io.BytesIO(data)

    def _read_local(self, path: str) -> bytes:
        try:
            return read_regular(path, self._limit)  # OSError goes to the caller as such
        except FileRefused as exc:
            if exc.rule == "file-size":
                raise _too_large(self.location, self._limit) from None
            raise MetadataFileError(
                f"Iceberg metadata file '{self.location}' {exc.problem}: only regular files "
                "are read",
                path=self.location,
                rule="metadata-file-type",
            ) from None


def _unwritable(location: str, exc: OSError) -> StorageError:
    reason = os.strerror(exc.errno) if exc.errno else str(exc)
    return StorageError(
        f"Cannot write Iceberg metadata file '{location}': {reason}",
        path=location,
        rule="metadata-file-write",
    )


class _GuardedStream:
    """An output stream whose failures (a full or read-only disk) are a
    ``StorageError`` naming the file, never a bare ``OSError``."""

    def __init__(self, inner: OutputStream, location: str) -> None:
        self._inner = inner
        self._location = location

    def write(self, b: bytes) -> int:
        try:
            return self._inner.write(b)
        except OSError as exc:
            raise _unwritable(self._location, exc) from exc

    def tell(self) -> int:
        return self._inner.tell()

    def close(self) -> None:
        try:
            self._inner.close()
        except OSError as exc:
            raise _unwritable(self._location, exc) from exc

    def __enter__(self) -> _GuardedStream:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class _GuardedOutput(OutputFile):
    def __init__(self, inner: OutputFile) -> None:
        super().__init__(inner.location)
        self._inner = inner

    def __len__(self) -> int:
        return len(self._inner)

    def exists(self) -> bool:
        return self._inner.exists()

    def to_input_file(self) -> InputFile:
        return self._inner.to_input_file()

    def create(self, overwrite: bool = False) -> OutputStream:
        try:
            stream = self._inner.create(overwrite=overwrite)
        except OSError as exc:
            raise _unwritable(self.location, exc) from exc
        return _GuardedStream(stream, self.location)


class BoundedFileIO(PyArrowFileIO):
    """pyarrow's ``FileIO`` whose every read is bounded as the module says."""

    def __init__(
        self, properties: Properties = EMPTY_DICT, *, limit: int = MAX_METADATA_BYTES
    ) -> None:
        super().__init__(properties)
        self.limit = limit

    def new_input(self, location: str) -> InputFile:  # type: ignore[override]
        scheme, _, path = self.parse_location(location, self.properties)
        local = path if scheme == "file" else None
        return _BoundedInput(super().new_input(location), local, self.limit)

    def new_output(self, location: str) -> OutputFile:  # type: ignore[override]
        return _GuardedOutput(super().new_output(location))
