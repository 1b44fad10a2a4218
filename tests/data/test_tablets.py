"""Tablets are Iceberg ``bucket[N]`` values: equal to pyiceberg's
``BucketTransform`` on every key type, stable across processes, shared by
colocated tables."""

from __future__ import annotations

import contextlib
import datetime as dt
import decimal
import multiprocessing
import struct
import uuid
from collections.abc import Sequence
from typing import Any

import mmh3
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyiceberg.transforms import BucketTransform
from pyiceberg.types import (
    BinaryType,
    DateType,
    DecimalType,
    FixedType,
    IcebergType,
    IntegerType,
    LongType,
    StringType,
    TimestampNanoType,
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

from almanac import Catalog, ColumnDef, ColumnType, CreateZone, Table, ValidationError
from almanac.data import (
    DataError,
    TableData,
    iceberg_bucket_values,
    partition_column,
    tablets_of,
    write_files,
)
from almanac.data.arrow import arrow_type
from almanac.data.conform import conform
from almanac.data.tablets import iceberg_hash_values
from almanac.data.warehouse import new_write_id
from almanac.model.descriptors import Column, IndexKind
from tests.data import workers
from tests.data.support import create

BUCKETS = st.sampled_from([1, 2, 7, 16, 1000])
UTC = dt.UTC
LONGS = st.integers(-(2**63), 2**63 - 1)


def descriptor(*columns: Column, colocation: tuple[str, ...]) -> Table:
    """A table descriptor with these columns, keyed and colocated on ``colocation``."""
    return Table(
        id=7,
        schema_id=1,
        name="T",
        zone_id=1,
        columns=columns,
        primary_key=colocation,
        primary_key_kind=IndexKind.HASH,
        primary_key_collations=(),
        colocation=colocation,
        primary_key_index_id=8,
        storage_profile="default",
    )


def col(
    name: str, kind: ColumnType, precision: int | None = None, scale: int | None = None
) -> Column:
    return Column(id=hash(name) & 0xFFFF, name=name, type=kind, precision=precision, scale=scale)


def expected(values: Sequence[object], kind: IcebergType, n: int) -> list[int]:
    """pyiceberg's bucket of every value, NULL in bucket 0."""
    bucket = BucketTransform(n).transform(kind)
    return [0 if v is None else int(bucket(v) or 0) for v in values]


def shapes(arr: pa.Array) -> list[pa.Array | pa.ChunkedArray]:
    """The same values as a plain, a sliced, a chunked and a dictionary array."""
    padded = pa.concat_arrays([arr[:1], arr, arr[-1:]]) if len(arr) else arr
    half = len(arr) // 2
    out: list[pa.Array | pa.ChunkedArray] = [
        arr,
        padded.slice(1, len(arr)) if len(arr) else arr,
        pa.chunked_array([arr[:half], arr[half:], arr[:0]], arr.type),
    ]
    with contextlib.suppress(pa.ArrowNotImplementedError):
        out.append(arr.dictionary_encode())
    return out


def agrees(arr: pa.Array, kind: IcebergType, n: int, values: Sequence[object]) -> None:
    want = expected(values, kind, n)
    for shape in shapes(arr):
        assert iceberg_bucket_values(shape, n).tolist() == want, shape.type


# ------------------------------------------------------------------ the spec's reference values


def test_hashes_are_the_iceberg_specs_reference_values() -> None:
    """Appendix B of the Iceberg table spec."""
    at = dt.datetime(2017, 11, 16, 22, 31, 8)
    cases: list[tuple[pa.Array, bool, int]] = [
        (pa.array([34], pa.int32()), False, 2017239379),
        (pa.array([34], pa.int64()), False, 2017239379),
        (pa.array([decimal.Decimal("14.20")], pa.decimal128(9, 2)), False, -500754589),
        (pa.array([dt.date(2017, 11, 16)], pa.date32()), False, -653330422),
        (pa.array([dt.time(22, 31, 8)], pa.time64("us")), False, -662762989),
        (pa.array([at], pa.timestamp("us")), False, -2047944441),
        (pa.array([at.replace(tzinfo=UTC)], pa.timestamp("us", tz="UTC")), False, -2047944441),
        (pa.array([at.replace(microsecond=1)], pa.timestamp("us")), False, -1207196810),
        (pa.array(["iceberg"]), False, 1210000089),
        (pa.array(["f79c3e09-677c-4bbd-a479-3f349cb785e7"]), True, 1488055340),
        (pa.array([b"\x00\x01\x02\x03"], pa.binary(4)), False, -188683207),
        (pa.array([b"\x00\x01\x02\x03"]), False, -188683207),
    ]
    for arr, as_uuid, want in cases:
        assert iceberg_hash_values(arr, uuid=as_uuid).tolist() == [want], arr.type
    nanos = pa.array([1510871468000001001], pa.timestamp("ns"))
    assert iceberg_hash_values(nanos).tolist() == [-1207196810]


# ------------------------------------------------------------------ every key type vs pyiceberg


@given(st.lists(st.none() | LONGS, max_size=40), BUCKETS)
def test_longs_agree_with_pyiceberg(values: list[int | None], n: int) -> None:
    agrees(pa.array(values, pa.int64()), LongType(), n, values)


@given(
    st.sampled_from([pa.int8(), pa.int16(), pa.int32(), pa.uint8(), pa.uint16(), pa.uint32()]),
    st.data(),
    BUCKETS,
)
def test_narrow_integers_agree_with_pyiceberg(kind: pa.DataType, data: Any, n: int) -> None:
    info = np.iinfo(kind.to_pandas_dtype())
    values = data.draw(st.lists(st.none() | st.integers(int(info.min), int(info.max)), max_size=40))
    agrees(pa.array(values, kind), IntegerType(), n, values)


@given(st.lists(st.none() | st.text(max_size=300), max_size=30), BUCKETS)
def test_strings_agree_with_pyiceberg(values: list[str | None], n: int) -> None:
    for kind in (pa.string(), pa.large_string(), pa.string_view()):
        agrees(pa.array(values, kind), StringType(), n, values)


@given(st.lists(st.none() | st.binary(max_size=300), max_size=30), BUCKETS)
def test_binary_agrees_with_pyiceberg(values: list[bytes | None], n: int) -> None:
    for kind in (pa.binary(), pa.large_binary(), pa.binary_view()):
        agrees(pa.array(values, kind), BinaryType(), n, values)


@given(st.integers(1, 40), st.data(), BUCKETS)
def test_fixed_binary_agrees_with_pyiceberg(width: int, data: Any, n: int) -> None:
    fixed = st.binary(min_size=width, max_size=width)
    values = data.draw(st.lists(st.none() | fixed, max_size=30))
    agrees(pa.array(values, pa.binary(width)), FixedType(width), n, values)


def test_every_length_around_the_blocks_and_the_long_path() -> None:
    """Lengths 0..600 cross every tail size and the one-by-one hashing of
    values longer than 256 bytes, mixed in one array."""
    rng = np.random.default_rng(5)
    values = [rng.integers(0, 256, size, dtype=np.uint8).tobytes() for size in range(601)]
    want = [mmh3.hash(v) for v in values]
    assert iceberg_hash_values(pa.array(values)).tolist() == want
    shuffled = rng.permutation(len(values))
    mixed = pa.array([values[i] for i in shuffled])
    assert iceberg_hash_values(mixed).tolist() == [want[i] for i in shuffled]


def test_arrays_longer_than_a_window_agree_with_pyiceberg() -> None:
    """Hashing runs over windows of rows; values across several windows, with
    NULLs and an odd slice offset, still match value by value."""
    rng = np.random.default_rng(11)
    count = 140_001
    ids = [uuid.UUID(bytes=rng.bytes(16)) for _ in range(count)]
    texts: list[str | None] = [f"k{i}" * int(i % 9) for i in range(count)]
    for i in range(0, count, 997):
        texts[i] = None
    longs = rng.integers(-(2**63), 2**63 - 1, count, dtype=np.int64).tolist()
    cases: list[tuple[pa.Array, IcebergType, list[Any], bool]] = [
        (pa.array(texts), StringType(), texts, False),
        (pa.array(longs, pa.int64()), LongType(), longs, False),
        (pa.array([str(u) for u in ids]), UUIDType(), ids, True),
        (pa.array([None, *map(str, ids[1:])]), UUIDType(), [None, *ids[1:]], True),
    ]
    for arr, kind, values, as_uuid in cases:
        want = expected(values, kind, 1000)
        assert iceberg_bucket_values(arr, 1000, uuid=as_uuid).tolist() == want
        assert iceberg_bucket_values(arr.slice(3), 1000, uuid=as_uuid).tolist() == want[3:]


@given(st.lists(st.none() | st.dates(), max_size=40), BUCKETS)
def test_dates_agree_with_pyiceberg(values: list[dt.date | None], n: int) -> None:
    agrees(pa.array(values, pa.date32()), DateType(), n, values)
    agrees(pa.array(values, pa.date64()), DateType(), n, values)


@given(st.lists(st.none() | st.times(), max_size=40), BUCKETS)
def test_times_agree_with_pyiceberg(values: list[dt.time | None], n: int) -> None:
    agrees(pa.array(values, pa.time64("us")), TimeType(), n, values)
    agrees(pa.array(values, pa.time64("ns")), TimeType(), n, values)


@given(st.lists(st.none() | st.integers(0, 86_400 * 10**9 - 1), max_size=40), BUCKETS)
def test_nanosecond_times_bucket_as_their_microseconds(values: list[int | None], n: int) -> None:
    """Iceberg's time is microseconds; TIME(9) columns floor to it."""
    micros = [None if v is None else v // 1000 for v in values]
    agrees(pa.array(values, pa.time64("ns")), TimeType(), n, micros)


@given(st.lists(st.none() | st.integers(0, 86_399), max_size=20), BUCKETS)
def test_second_and_milli_times_agree_with_pyiceberg(values: list[int | None], n: int) -> None:
    micros = [None if v is None else v * 1_000_000 for v in values]
    agrees(pa.array(values, pa.time32("s")), TimeType(), n, micros)
    millis = [None if v is None else v * 1000 for v in values]
    agrees(pa.array(millis, pa.time32("ms")), TimeType(), n, micros)


@given(st.lists(st.none() | st.datetimes(), max_size=40), BUCKETS)
def test_naive_timestamps_agree_with_pyiceberg(values: list[dt.datetime | None], n: int) -> None:
    agrees(pa.array(values, pa.timestamp("us")), TimestampType(), n, values)


@given(st.lists(st.none() | st.datetimes(timezones=st.just(UTC)), max_size=40), BUCKETS)
def test_utc_timestamps_agree_with_pyiceberg(values: list[dt.datetime | None], n: int) -> None:
    agrees(pa.array(values, pa.timestamp("us", tz="UTC")), TimestamptzType(), n, values)


@given(st.lists(st.none() | LONGS, max_size=40), BUCKETS)
def test_nanosecond_timestamps_agree_with_pyiceberg(values: list[int | None], n: int) -> None:
    agrees(pa.array(values, pa.timestamp("ns")), TimestampNanoType(), n, values)


@given(st.lists(st.none() | st.integers(-(10**12), 10**12), max_size=20), BUCKETS)
def test_second_and_milli_timestamps_agree_with_pyiceberg(values: list[int | None], n: int) -> None:
    micros = [None if v is None else v * 1_000_000 for v in values]
    agrees(pa.array(values, pa.timestamp("s")), TimestampType(), n, micros)
    micros = [None if v is None else v * 1000 for v in values]
    agrees(pa.array(values, pa.timestamp("ms")), TimestampType(), n, micros)


@st.composite
def decimals(draw: st.DrawFn) -> tuple[pa.DataType, list[decimal.Decimal | None]]:
    precision = draw(st.integers(1, 76))
    scale = draw(st.integers(0, precision))
    kind = pa.decimal128(precision, scale) if precision <= 38 else pa.decimal256(precision, scale)
    limit = 10**precision - 1
    edges = st.sampled_from([0, 1, -1, 127, 128, -128, -129, 255, 256, -256, -257, limit, -limit])
    unscaled = draw(
        st.lists(
            st.none() | edges.filter(lambda v: abs(v) <= limit) | st.integers(-limit, limit),
            max_size=30,
        )
    )
    wide = decimal.Context(prec=100)
    return kind, [None if u is None else decimal.Decimal(u).scaleb(-scale, wide) for u in unscaled]


@given(decimals(), BUCKETS)
def test_decimals_agree_with_pyiceberg(
    case: tuple[pa.DataType, list[decimal.Decimal | None]], n: int
) -> None:
    kind, values = case
    arr = pa.array(values, kind)
    iceberg = DecimalType(min(kind.precision, 38), kind.scale)
    agrees(arr, iceberg, n, arr.to_pylist())


@given(st.lists(st.none() | st.uuids(), max_size=40), BUCKETS)
def test_uuids_agree_with_pyiceberg(values: list[uuid.UUID | None], n: int) -> None:
    """UUID columns are canonical strings; they hash as the 16 UUID bytes,
    whether given as text (in any case) or as ``pa.uuid()`` / 16 bytes."""
    want = expected(values, UUIDType(), n)
    text = pa.array([None if v is None else str(v) for v in values])
    for shape in shapes(text):
        assert iceberg_bucket_values(shape, n, uuid=True).tolist() == want
    upper = pa.array([None if v is None else str(v).upper() for v in values])
    assert iceberg_bucket_values(upper, n, uuid=True).tolist() == want
    raw = [None if v is None else v.bytes for v in values]
    assert iceberg_bucket_values(pa.array(raw, pa.binary(16)), n).tolist() == want
    assert iceberg_bucket_values(pa.array(raw, pa.uuid()), n).tolist() == want
    table = descriptor(col("U", ColumnType.UUID), colocation=("U",))
    as_text = expected([None if v is None else str(v) for v in values], StringType(), n)
    assert tablets_of(pa.table({"U": text}), table, n).tolist() == as_text, (
        "a UUID column is an Iceberg string (its Parquet files hold text): tablets follow that"
    )


# ------------------------------------------------------------------ tables: the partition column


@given(st.lists(st.integers(-(2**15), 2**15 - 1), max_size=40), BUCKETS)
def test_narrow_keys_bucket_as_their_long_value(values: list[int], n: int) -> None:
    """Iceberg promotes int to long without moving rows: an INT16 or INT32
    key lands where the same INT64 key does."""
    wide = tablets_of(
        pa.table({"K": pa.array(values, pa.int64())}),
        descriptor(col("K", ColumnType.INT64), colocation=("K",)),
        n,
    ).tolist()
    for kind in (ColumnType.INT8, ColumnType.INT16, ColumnType.INT32):
        column = col("K", kind)
        if kind is ColumnType.INT8 and any(abs(v) > 127 for v in values):
            continue
        data = pa.table({"K": pa.array(values, arrow_type(column))})
        assert tablets_of(data, descriptor(column, colocation=("K",)), n).tolist() == wide
    assert wide == expected(values, LongType(), n) == expected(values, IntegerType(), n)


@pytest.mark.parametrize(
    ("column", "values", "iceberg"),
    [
        (col("K", ColumnType.DATE), [dt.date(1969, 12, 31), None], DateType()),
        (col("K", ColumnType.TIME, precision=6), [dt.time(23, 59, 59, 999_999)], TimeType()),
        (col("K", ColumnType.TIMESTAMP), [dt.datetime(1, 1, 1)], TimestampType()),
        (
            col("K", ColumnType.TIMESTAMP_WITH_LOCAL_TIME_ZONE),
            [dt.datetime(2262, 4, 11, tzinfo=UTC)],
            TimestamptzType(),
        ),
        (col("K", ColumnType.STRING), ["", "ü", "日本語", None], StringType()),
        (col("K", ColumnType.BYTES), [b"", b"\xff" * 9], BinaryType()),
        (
            col("K", ColumnType.DECIMAL, precision=50, scale=3),
            [decimal.Decimal("-0.001"), decimal.Decimal(0)],
            DecimalType(38, 3),
        ),
    ],
)
def test_every_catalog_key_type_is_bucketed_as_iceberg_does(
    column: Column, values: list[object], iceberg: IcebergType
) -> None:
    table = descriptor(column, colocation=("K",))
    data = conform(pa.table({"K": pa.array(values, arrow_type(column))}), table)
    want = expected(data.column("K").to_pylist(), iceberg, 1000)
    assert tablets_of(data, table, 1000).tolist() == want


def test_the_partition_column_is_the_first_bucketable_colocation_column() -> None:
    flag, ratio = col("F", ColumnType.BOOLEAN), col("R", ColumnType.DOUBLE)
    key, name = col("K", ColumnType.INT32), col("S", ColumnType.STRING)
    assert (
        partition_column(descriptor(flag, ratio, key, name, colocation=("F", "R", "K", "S"))) == key
    )
    assert partition_column(descriptor(key, name, colocation=("S", "K"))) == name
    assert partition_column(descriptor(flag, ratio, colocation=("R", "F"))) is None
    table = descriptor(flag, key, name, colocation=("F", "S", "K"))
    data = pa.table({"F": [True, False, True], "K": [1, 2, 3], "S": ["a", "b", "c"]})
    assert tablets_of(data, table, 7).tolist() == expected(["a", "b", "c"], StringType(), 7)


@given(st.lists(st.none() | st.floats(allow_nan=True, width=32), max_size=30), BUCKETS)
def test_unbucketable_keys_use_murmur_of_the_float64_bits(
    values: list[float | None], n: int
) -> None:
    """A table keyed only on FLOAT/DOUBLE/BOOLEAN: murmur3 of the value's
    float64 bits (-0.0 as 0.0, every NaN as one), so FLOAT and DOUBLE agree."""

    def want(v: float | None) -> int:
        if v is None:
            return 0
        bits = struct.pack("<d", float("nan") if v != v else v + 0.0)
        return (mmh3.hash(bits) & 0x7FFFFFFF) % n

    for kind in (ColumnType.FLOAT, ColumnType.DOUBLE):
        column = col("X", kind)
        table = descriptor(column, colocation=("X",))
        data = pa.table({"X": pa.array(values, arrow_type(column))})
        assert tablets_of(data, table, n).tolist() == [want(v) for v in values]
    flags = descriptor(col("B", ColumnType.BOOLEAN), colocation=("B",))
    bools = [True, False, None]
    want_bools = [
        (mmh3.hash(struct.pack("<q", 1)) & 0x7FFFFFFF) % n,
        (mmh3.hash(bytes(8)) & 0x7FFFFFFF) % n,
        0,
    ]
    assert tablets_of(pa.table({"B": bools}), flags, n).tolist() == want_bools


def test_nan_and_signed_zero_share_a_tablet() -> None:
    table = descriptor(col("X", ColumnType.DOUBLE), colocation=("X",))
    nans = np.array([np.nan, -np.nan, 0.0, -0.0], dtype=np.float64)
    nans[1] = np.frombuffer(struct.pack("<Q", 0x7FF0000000000001), np.float64)[0]
    got = tablets_of(pa.table({"X": nans}), table, 1000).tolist()
    assert got[0] == got[1] and got[2] == got[3]


def test_null_keys_go_to_tablet_zero() -> None:
    table = descriptor(col("S", ColumnType.STRING), colocation=("S",))
    data = pa.table({"S": ["x", None, "y", None]})
    got = tablets_of(data, table, 1000).tolist()
    assert got[1] == got[3] == 0
    assert got[0] == expected(["x"], StringType(), 1000)[0] != 0


# ------------------------------------------------------------------ processes, spread, errors


def test_tablets_are_equal_in_another_process() -> None:
    values = list(range(-50, 50))
    texts = [f"key-{v}" * (v % 7) for v in values]
    data = pa.table({"K": pa.array(values, pa.int64()), "S": texts})
    keyed_on_text = descriptor(
        col("K", ColumnType.INT64), col("S", ColumnType.STRING), colocation=("S", "K")
    )
    keyed_on_int = descriptor(
        col("K", ColumnType.INT64), col("S", ColumnType.STRING), colocation=("K", "S")
    )
    here = [tablets_of(data, t, 12).tolist() for t in (keyed_on_text, keyed_on_int)]
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        there = [pool.apply(workers.tablets, (t, data, 12)) for t in (keyed_on_text, keyed_on_int)]
    assert here == there
    assert here[1] == expected(values, LongType(), 12)
    assert all(len(set(h)) > 6 for h in here)


def test_tablets_spread_and_validate() -> None:
    table = descriptor(col("K", ColumnType.INT64), colocation=("K",))
    counts = np.bincount(tablets_of(pa.table({"K": np.arange(40_000)}), table, 8), minlength=8)
    assert counts.min() > 4_000
    with pytest.raises(ValidationError, match="Partitions"):
        tablets_of(pa.table({"K": [1]}), table, 0)
    with pytest.raises(ValidationError, match="Bucket count"):
        iceberg_bucket_values(pa.array([1]), 0)
    with pytest.raises(DataError, match="'K' of table 'T' is missing"):
        tablets_of(pa.table({"NOPE": [1]}), table, 4)
    with pytest.raises(DataError, match=r"'not-a-uuid' is not a UUID"):
        iceberg_bucket_values(pa.array([str(uuid.uuid4()), "not-a-uuid"]), 4, uuid=True)
    with pytest.raises(DataError, match=r"'K' of table 'T'.*cannot be bucketed"):
        tablets_of(pa.table({"K": [[1]]}), table, 4)
    with pytest.raises(DataError, match="Values of type double cannot be bucketed"):
        iceberg_bucket_values(pa.array([1.5]), 4)
    with pytest.raises(DataError, match="Values of type uint64 cannot be bucketed"):
        iceberg_bucket_values(pa.array([2**64 - 1], pa.uint64()), 4)
    with pytest.raises(ValidationError, match="Bucket count"):
        iceberg_bucket_values(pa.array([1]), True)


def test_colocated_tables_share_tablets(cat: Catalog) -> None:
    cat.execute([CreateZone(name="Z", partitions=8)])
    create(
        cat,
        "CUSTOMERS",
        [
            ColumnDef(name="CID", type=ColumnType.INT64, nullable=False),
            ColumnDef(name="NAME", type=ColumnType.STRING),
        ],
        primary_key=("CID",),
        colocation=("CID",),
        zone="Z",
    )
    create(
        cat,
        "ORDERS",
        [
            ColumnDef(name="OID", type=ColumnType.INT32, nullable=False),
            ColumnDef(name="CID", type=ColumnType.INT32, nullable=False),
        ],
        primary_key=("OID", "CID"),
        colocation=("CID",),
        zone="Z",
    )
    data = TableData.for_catalog(cat)
    version = cat.catalog()
    customers, orders = version.table("CUSTOMERS"), version.table("ORDERS")
    assert customers is not None and orders is not None
    keys = list(range(100))
    placed: list[dict[int, int]] = []
    for table, frame in (
        (customers, pa.table({"CID": keys, "NAME": [str(k) for k in keys]})),
        (orders, pa.table({"OID": [k + 1000 for k in keys], "CID": keys})),
    ):
        write_dir = data.warehouse.write_dir(table.id, new_write_id())
        files = write_files(data.warehouse, table, 8, conform(frame, table), write_dir)
        where: dict[int, int] = {}
        for f in files:
            for key in pq.read_table(f.path, columns=["CID"]).column(0).to_pylist():
                where[key] = f.partition
        placed.append(where)
    assert placed[0] == placed[1] == dict(zip(keys, expected(keys, LongType(), 8), strict=True))
    assert set(placed[0].values()) == set(range(8))
