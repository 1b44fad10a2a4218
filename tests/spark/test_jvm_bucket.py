"""The tablet Spark computes in the JVM is pyiceberg's ``BucketTransform``."""

from __future__ import annotations

import datetime as dt
import decimal
import random
import struct
import uuid
from typing import Any

import mmh3
import pytest
from pyiceberg import types as it
from pyiceberg.transforms import BucketTransform
from pyspark.sql import functions as F

import almanac
from almanac.descriptors import Column
from almanac.spark import jvm
from almanac.spark.native_write import bucket_expr
from almanac.spark.types import spark_type

TABLE = """
CREATE TABLE T (
    I8 INT8, I16 INT16, I32 INT32, I64 INT64 PRIMARY KEY, D DATE,
    TS TIMESTAMP, TSZ TIMESTAMP WITH LOCAL TIME ZONE, S STRING, U UUID, B BYTES,
    DEC DECIMAL(38, 4), DS DECIMAL(9, 2), BO BOOLEAN, F FLOAT, DB DOUBLE
)
"""
EPOCH = dt.datetime(1970, 1, 1)


@pytest.fixture(autouse=True)
def _udfs(spark: Any) -> None:
    jvm.load(spark)


def _columns() -> dict[str, Column]:
    with almanac.connect("memory://") as cat:
        cat.sql(TABLE)
        table = cat.catalog().table("T")
        assert table is not None
        return {c.name: c for c in table.columns}


def _ints(rng: random.Random, bits: int) -> list[int]:
    lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    return [lo, hi, 0, -1, 1] + [rng.randint(lo, hi) for _ in range(200)]


def _text(rng: random.Random) -> str:
    alphabet = "aZ09 é漢🙂\u0000"
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 13)))


def _decimals(rng: random.Random, precision: int, scale: int) -> list[decimal.Decimal]:
    top = 10**precision - 1
    unscaled = [0, 1, -1, 127, 128, -128, -129, 255, 256, top, -top]
    unscaled += [rng.randint(-top, top) for _ in range(150)]
    unscaled += [rng.randint(-(10**k), 10**k) for k in range(1, precision) for _ in range(3)]
    exact = decimal.Context(prec=80)
    return [decimal.Decimal(u).scaleb(-scale, exact) for u in unscaled]


def _micros(value: dt.datetime) -> int:
    delta = value.replace(tzinfo=None) - EPOCH
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds


def _cases(rng: random.Random) -> list[tuple[str, list[Any], Any, Any]]:
    """(column, Spark values, Iceberg type, value -> Iceberg's input)."""
    days = [rng.randint(-700_000, 2_900_000) for _ in range(200)] + [0, -1]
    stamps = [EPOCH + dt.timedelta(microseconds=rng.randint(-(2**55), 2**55)) for _ in range(200)]
    same: Any = lambda v: v  # noqa: E731
    return [
        ("I8", _ints(rng, 8), it.IntegerType(), same),
        ("I16", _ints(rng, 16), it.IntegerType(), same),
        ("I32", _ints(rng, 32), it.IntegerType(), same),
        ("I64", _ints(rng, 64), it.LongType(), same),
        (
            "D",
            [dt.date(1970, 1, 1) + dt.timedelta(days=d) for d in days],
            it.DateType(),
            lambda v: (v - dt.date(1970, 1, 1)).days,
        ),
        ("TS", stamps, it.TimestampType(), _micros),
        ("TSZ", [s.replace(tzinfo=dt.UTC) for s in stamps], it.TimestamptzType(), _micros),
        ("S", [_text(rng) for _ in range(300)] + ["", "abcd", "abcde"], it.StringType(), same),
        (
            "U",
            [str(uuid.UUID(int=rng.getrandbits(128))) for _ in range(200)],
            it.UUIDType(),
            uuid.UUID,
        ),
        ("B", [rng.randbytes(rng.randint(0, 11)) for _ in range(300)], it.BinaryType(), same),
        ("DEC", _decimals(rng, 34, 4), it.DecimalType(38, 4), same),
        ("DS", _decimals(rng, 9, 2), it.DecimalType(9, 2), same),
    ]


@pytest.mark.parametrize("partitions", [7, 1000])
def test_bucket_matches_pyiceberg_for_every_key_type(spark: Any, partitions: int) -> None:
    columns = _columns()
    rng = random.Random(partitions)
    for name, values, iceberg_type, to_iceberg in _cases(rng):
        column = columns[name]
        df = spark.createDataFrame(
            [(v,) for v in values], f"v {spark_type(column, 'T').simpleString()}"
        )
        got = [r[0] for r in df.select(bucket_expr(F.col("v"), column, partitions)).collect()]
        bucket = BucketTransform(partitions).transform(iceberg_type)
        want = [bucket(to_iceberg(v)) for v in values]
        mismatches = [(v, g, w) for v, g, w in zip(values, got, want, strict=True) if g != w]
        assert not mismatches, (name, mismatches[:3])


def _long_bucket(bits: int, n: int) -> int:
    return (mmh3.hash(struct.pack("<q", bits)) & 0x7FFFFFFF) % n


def test_unbucketable_keys_hash_as_a_long(spark: Any) -> None:
    columns = _columns()
    nan = struct.unpack("<q", struct.pack("<Q", 0x7FF8000000000000))[0]
    doubles = [0.0, -0.0, 1.5, -2.25, float("inf"), float("nan"), 1e300]
    df = spark.createDataFrame([(v,) for v in doubles], "v double")
    got = [r[0] for r in df.select(bucket_expr(F.col("v"), columns["DB"], 13)).collect()]
    want = [
        _long_bucket(nan if v != v else struct.unpack("<q", struct.pack("<d", v + 0.0))[0], 13)
        for v in doubles
    ]
    assert got == want
    flags = spark.createDataFrame([(True,), (False,)], "v boolean")
    got = [r[0] for r in flags.select(bucket_expr(F.col("v"), columns["BO"], 13)).collect()]
    assert got == [_long_bucket(1, 13), _long_bucket(0, 13)]


def test_null_key_goes_to_tablet_zero(spark: Any) -> None:
    columns = _columns()
    for name in ("I64", "S", "U", "B", "DEC", "TS", "TSZ", "D", "DB"):
        column = columns[name]
        df = spark.createDataFrame([(None,)], f"v {spark_type(column, 'T').simpleString()}")
        assert df.select(bucket_expr(F.col("v"), column, 9)).collect()[0][0] == 0, name
