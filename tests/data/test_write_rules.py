"""What a write guarantees: casts that never change a value, and primary
keys unique within one write. The property tests compare ``conform`` with
an oracle in exact rational arithmetic."""

from __future__ import annotations

import datetime as dt
import decimal
import math
import re
import uuid
from collections.abc import Callable, Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import almanac
from almanac import Catalog, ColumnDef, ColumnType, Table
from almanac.data import DataError, read_table, write_table
from almanac.data.conform import CastRule, cast_is_safe, cast_rule, check_unique_keys, conform
from tests.data.support import connect, create

PROPERTY = settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

TARGETS: dict[str, ColumnDef] = {
    c.name: c
    for c in (
        ColumnDef(name="I8", type=ColumnType.INT8),
        ColumnDef(name="I16", type=ColumnType.INT16),
        ColumnDef(name="I32", type=ColumnType.INT32),
        ColumnDef(name="I64", type=ColumnType.INT64),
        ColumnDef(name="F", type=ColumnType.FLOAT),
        ColumnDef(name="D", type=ColumnType.DOUBLE),
        ColumnDef(name="DEC10_2", type=ColumnType.DECIMAL, precision=10, scale=2),
        ColumnDef(name="DEC5_0", type=ColumnType.DECIMAL, precision=5, scale=0),
        ColumnDef(name="DEC38_10", type=ColumnType.DECIMAL, precision=38, scale=10),
        ColumnDef(name="DEC60_5", type=ColumnType.DECIMAL, precision=60, scale=5),
        ColumnDef(name="TS", type=ColumnType.TIMESTAMP),
        ColumnDef(name="TZ", type=ColumnType.TIMESTAMP_WITH_LOCAL_TIME_ZONE),
    )
}

INT_TYPES = [pa.int8(), pa.int16(), pa.int32(), pa.int64()]
INT_TYPES += [pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64()]
DECIMAL_TYPES = [pa.decimal128(5, 2), pa.decimal128(12, 0), pa.decimal128(20, 4)]
DECIMAL_TYPES += [pa.decimal128(38, 10), pa.decimal256(50, 3)]
TIME_TYPES = [pa.timestamp(u) for u in ("s", "ms", "us", "ns")]
TIME_TYPES += [pa.timestamp("ns", "UTC"), pa.timestamp("s", "+02:00")]
PER_SECOND = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}
INT64 = (-(2**63), 2**63 - 1)
EXACT = decimal.Context(prec=100)
TIES = [decimal.Decimal(d) for d in ("2.5", "-3.5", "0.125", "0.005", "-0.015", "126.5")]
"""Halfway values, where rounding half to even and half up differ."""


@pytest.fixture(scope="module")
def wide() -> Iterator[Table]:
    """One table with a column of every target type."""
    with almanac.connect("memory://") as cat:
        id_column = ColumnDef(name="ID", type=ColumnType.INT64, nullable=False)
        yield create(cat, "WIDE", [id_column, *TARGETS.values()])


def _int_range(t: pa.DataType) -> tuple[int, int]:
    bits = t.bit_width
    if pa.types.is_signed_integer(t):
        return -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    return 0, 2**bits - 1


@st.composite
def sources(draw: st.DrawFn) -> tuple[pa.DataType, list[object]]:
    """An Arrow type and a few values of it, NULLs among them, near the edges."""
    family = draw(st.sampled_from(["int", "float", "decimal", "time"]))
    if family == "int":
        t = draw(st.sampled_from(INT_TYPES))
        lo, hi = _int_range(t)
        edges = [e for e in (0, 2**53 + 1, 2**24 + 1, 127, 128, -129) if lo <= e <= hi]
        value: st.SearchStrategy[object] = st.one_of(
            st.integers(lo, hi), st.sampled_from([lo, hi, *edges])
        )
    elif family == "float":
        t = draw(st.sampled_from([pa.float32(), pa.float64()]))
        value = st.one_of(
            st.floats(width=t.bit_width),
            st.integers(-(10**12), 10**12).map(float),
            st.sampled_from([0.5, 1.25, 0.1, 2.0**60, 1e300, -0.0]),
        )
        if t == pa.float32():
            value = st.floats(width=32) | st.sampled_from([0.5, 1.25, float(np.float32(0.1))])
    elif family == "decimal":
        t = draw(st.sampled_from(DECIMAL_TYPES))
        bound = EXACT.subtract(10 ** (t.precision - t.scale), decimal.Decimal(1).scaleb(-t.scale))
        value = st.decimals(
            min_value=EXACT.minus(bound),
            max_value=bound,
            places=t.scale,
            allow_nan=False,
            allow_infinity=False,
        ) | st.sampled_from(
            [bound, EXACT.minus(bound), decimal.Decimal(0).scaleb(-t.scale)]
            + [d for d in TIES if -d.as_tuple().exponent <= t.scale]  # type: ignore[operator]
        )
    else:
        t = draw(st.sampled_from(TIME_TYPES))
        value = st.one_of(
            st.integers(*INT64), st.integers(-(10**12), 10**12).map(lambda v: v * 1000)
        )
    values = draw(st.lists(st.one_of(st.none(), value), min_size=1, max_size=6))
    return t, values


def _array(t: pa.DataType, values: list[object]) -> pa.Array:
    if t == pa.float16():
        return pa.array(np.array(values, np.float16))
    if pa.types.is_timestamp(t):
        return pa.array(values, pa.int64()).cast(t)
    return pa.array(values, t)


def _exact(value: object) -> Fraction | None:
    """The exact rational value, or None for NaN and infinities."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    assert isinstance(value, int | float | decimal.Decimal)
    return Fraction(value)


def _expected(source: pa.DataType, column: ColumnDef, value: object) -> object:
    """What the column stores for ``value`` (``_LOSSY`` when it cannot)."""
    kind = column.type
    if pa.types.is_timestamp(source):
        assert isinstance(value, int)
        if (source.tz is None) != (kind is ColumnType.TIMESTAMP):
            return _REFUSED
        micros = Fraction(value * 10**6, PER_SECOND[source.unit])
        if micros.denominator != 1 or not INT64[0] <= micros <= INT64[1]:
            return _LOSSY
        return int(micros)
    if kind in (ColumnType.TIMESTAMP, ColumnType.TIMESTAMP_WITH_LOCAL_TIME_ZONE):
        return _REFUSED
    is_float = pa.types.is_floating(source)
    if kind in (ColumnType.FLOAT, ColumnType.DOUBLE):
        if pa.types.is_decimal(source):
            return _REFUSED
        assert isinstance(value, int | float)
        with np.errstate(over="ignore"):
            stored = float(np.float32(value)) if kind is ColumnType.FLOAT else float(value)
        if math.isnan(value) or (math.isinf(value) and stored == value):
            return stored
        return stored if math.isfinite(stored) and Fraction(stored) == Fraction(value) else _LOSSY
    if is_float:
        return _REFUSED
    exact = _exact(value)
    assert exact is not None
    if kind is ColumnType.DECIMAL:
        assert column.precision is not None and column.scale is not None
        scaled = exact * 10**column.scale
        fits = scaled.denominator == 1 and abs(scaled) < 10**column.precision
        return exact if fits else _LOSSY
    bits = {ColumnType.INT8: 8, ColumnType.INT16: 16, ColumnType.INT32: 32}.get(kind, 64)
    fits = exact.denominator == 1 and -(2 ** (bits - 1)) <= exact < 2 ** (bits - 1)
    return int(exact) if fits else _LOSSY


_LOSSY = object()
_REFUSED = object()
_FLOATS_AND_TIMES = (
    ColumnType.FLOAT,
    ColumnType.DOUBLE,
    ColumnType.TIMESTAMP,
    ColumnType.TIMESTAMP_WITH_LOCAL_TIME_ZONE,
)


def _same_value(stored: object, expected: object) -> bool:
    if isinstance(expected, float):
        assert isinstance(stored, float)
        if math.isnan(expected):
            return math.isnan(stored)
        return stored == expected and math.copysign(1, stored) == math.copysign(1, expected)
    if isinstance(expected, Fraction):
        assert isinstance(stored, decimal.Decimal)
        return Fraction(stored) == expected
    return stored == expected


@PROPERTY
@given(source=sources(), name=st.sampled_from(sorted(TARGETS)))
def test_conform_stores_exactly_what_it_accepts(
    wide: Table, source: tuple[pa.DataType, list[object]], name: str
) -> None:
    """Whatever conform accepts is stored unchanged; whatever would change is
    refused with the column, the table and the types named."""
    t, values = source
    column = TARGETS[name]
    expected = [None if v is None else _expected(t, column, v) for v in values]
    data = pa.table({"ID": pa.array(range(len(values)), pa.int64()), name: _array(t, values)})
    target = wide.column(name)
    assert target is not None
    rule = cast_rule(t, target)
    zero: object = 0.0 if pa.types.is_floating(t) else 0
    if _expected(t, column, zero) is _REFUSED or rule is CastRule.REFUSED:
        assert rule is CastRule.REFUSED
        with pytest.raises(
            DataError, match=f"Column '{name}' of table 'WIDE'.*{re.escape(str(t))}.*without loss"
        ):
            conform(data.slice(0, 0), wide)
        return
    if any(e is _LOSSY for e in expected):
        assert rule is CastRule.CHECKED
        with pytest.raises(
            DataError, match=f"Column '{name}' of table 'WIDE'.*{re.escape(str(t))} value"
        ):
            conform(data, wide)
        return
    out = conform(data, wide).column(name)
    if pa.types.is_timestamp(t):
        out = out.cast(pa.int64())
    for stored, want in zip(out.to_pylist(), expected, strict=True):
        assert (stored is None) == (want is None)
        assert want is None or _same_value(stored, want), (stored, want)


def _extremes(t: pa.DataType) -> list[object]:
    """The values of ``t`` hardest to store: its ends and its finest step."""
    if pa.types.is_integer(t):
        return list(_int_range(t))
    if pa.types.is_floating(t):
        if t.bit_width == 16:
            top, tiny = (
                float(np.finfo(np.float16).max),
                float(np.finfo(np.float16).smallest_subnormal),
            )
        elif t.bit_width == 32:
            top, tiny = (
                float(np.finfo(np.float32).max),
                float(np.finfo(np.float32).smallest_subnormal),
            )
        else:
            top, tiny = (
                float(np.finfo(np.float64).max),
                float(np.finfo(np.float64).smallest_subnormal),
            )
        return [top, -top, tiny, -0.0, math.nan, math.inf]
    if pa.types.is_decimal(t):
        bound = EXACT.subtract(10 ** (t.precision - t.scale), decimal.Decimal(1).scaleb(-t.scale))
        return [bound, EXACT.minus(bound), decimal.Decimal(1).scaleb(-t.scale)]
    return [INT64[0], INT64[1], 1]


@pytest.mark.parametrize(
    "t",
    [*INT_TYPES, pa.float16(), pa.float32(), pa.float64(), *DECIMAL_TYPES, *TIME_TYPES],
)
def test_an_exact_cast_takes_every_value(wide: Table, t: pa.DataType) -> None:
    """``cast_is_safe`` holds for the extremes of the type, on every column:
    a writer that skips the value checks on its word loses nothing."""
    values = _extremes(t)
    data = pa.table({"ID": pa.array(range(len(values)), pa.int64()), "X": _array(t, values)})
    for name, column in TARGETS.items():
        target = wide.column(name)
        assert target is not None
        expected = [_expected(t, column, v) for v in values]
        if cast_is_safe(t, target):
            assert all(e is not _LOSSY and e is not _REFUSED for e in expected), name
            conform(data.rename_columns(["ID", name]), wide)


@pytest.mark.parametrize(
    ("source", "name", "rule"),
    [
        (pa.int8(), "I16", CastRule.EXACT),
        (pa.uint8(), "I8", CastRule.CHECKED),
        (pa.int64(), "I32", CastRule.CHECKED),
        (pa.float32(), "D", CastRule.EXACT),
        (pa.float64(), "F", CastRule.CHECKED),
        (pa.float16(), "F", CastRule.EXACT),
        (pa.int16(), "F", CastRule.EXACT),
        (pa.int32(), "F", CastRule.CHECKED),
        (pa.int32(), "D", CastRule.EXACT),
        (pa.int64(), "D", CastRule.CHECKED),
        (pa.float64(), "I64", CastRule.REFUSED),
        (pa.float64(), "DEC38_10", CastRule.REFUSED),
        (pa.decimal128(10, 2), "D", CastRule.REFUSED),
        (pa.int32(), "DEC10_2", CastRule.CHECKED),
        (pa.int16(), "DEC10_2", CastRule.EXACT),
        (pa.uint64(), "DEC38_10", CastRule.EXACT),
        (pa.decimal128(8, 2), "DEC10_2", CastRule.EXACT),
        (pa.decimal128(9, 1), "DEC10_2", CastRule.EXACT),
        (pa.decimal128(9, 3), "DEC10_2", CastRule.CHECKED),
        (pa.decimal128(11, 2), "DEC10_2", CastRule.CHECKED),
        (pa.decimal128(10, 2), "I64", CastRule.CHECKED),
        (pa.decimal128(18, 0), "I64", CastRule.EXACT),
        (pa.decimal128(19, 0), "I64", CastRule.CHECKED),
        (pa.decimal128(2, 0), "I8", CastRule.EXACT),
        (pa.decimal128(3, 0), "I8", CastRule.CHECKED),
        (pa.timestamp("us"), "TS", CastRule.EXACT),
        (pa.timestamp("ns"), "TS", CastRule.CHECKED),
        (pa.timestamp("s"), "TS", CastRule.CHECKED),
        (pa.timestamp("us", "Europe/Paris"), "TZ", CastRule.EXACT),
        (pa.timestamp("us"), "TZ", CastRule.REFUSED),
        (pa.timestamp("us", "UTC"), "TS", CastRule.REFUSED),
        (pa.date32(), "TS", CastRule.REFUSED),
        (pa.string(), "I64", CastRule.REFUSED),
        (pa.null(), "I8", CastRule.EXACT),
        (pa.dictionary(pa.int8(), pa.int16()), "I32", CastRule.EXACT),
    ],
)
def test_cast_rule_by_type(wide: Table, source: pa.DataType, name: str, rule: CastRule) -> None:
    column = wide.column(name)
    assert column is not None
    assert cast_rule(source, column) is rule
    assert cast_is_safe(source, column) is (rule is CastRule.EXACT)


def test_cast_rule_for_text_bytes_uuid_and_dates(cat: Catalog) -> None:
    table = create(
        cat,
        columns=[
            ColumnDef(name="ID", type=ColumnType.INT64, nullable=False),
            ColumnDef(name="S", type=ColumnType.STRING, length=4),
            ColumnDef(name="B", type=ColumnType.BYTES, length=4),
            ColumnDef(name="U", type=ColumnType.UUID),
            ColumnDef(name="DA", type=ColumnType.DATE),
            ColumnDef(name="TI", type=ColumnType.TIME, precision=6),
            ColumnDef(name="OK", type=ColumnType.BOOLEAN),
        ],
    )
    rule = {c.name: c for c in table.columns}
    assert cast_rule(pa.large_string(), rule["S"]) is CastRule.CHECKED
    assert cast_rule(pa.binary(), rule["S"]) is CastRule.REFUSED
    assert cast_rule(pa.binary(3), rule["B"]) is CastRule.EXACT
    assert cast_rule(pa.binary(5), rule["B"]) is CastRule.CHECKED
    assert cast_rule(pa.binary(16), rule["U"]) is CastRule.EXACT
    assert cast_rule(pa.uuid(), rule["U"]) is CastRule.EXACT
    assert cast_rule(pa.string(), rule["U"]) is CastRule.CHECKED
    assert cast_rule(pa.binary(), rule["U"]) is CastRule.REFUSED
    assert cast_rule(pa.date64(), rule["DA"]) is CastRule.CHECKED
    assert cast_rule(pa.time32("s"), rule["TI"]) is CastRule.EXACT
    assert cast_rule(pa.time64("ns"), rule["TI"]) is CastRule.CHECKED
    assert cast_rule(pa.int8(), rule["OK"]) is CastRule.REFUSED
    assert cast_rule(pa.bool_(), rule["OK"]) is CastRule.EXACT
    with pytest.raises(DataError, match=r"'DA'.*date64\[ms\] value"):
        conform(pa.table({"ID": [1], "DA": pa.array([86_400_001], pa.date64())}), table)
    with pytest.raises(DataError, match=r"'TI'.*time64\[ns\] value"):
        conform(pa.table({"ID": [1], "TI": pa.array([1], pa.time64("ns"))}), table)


def test_a_refused_float_names_the_way_out(wide: Table) -> None:
    data = pa.table({"ID": [1], "DEC10_2": [0.1]})
    with pytest.raises(DataError, match="values of type double cannot be stored") as caught:
        conform(data, wide)
    assert "rounding=True" in str(caught.value)
    assert caught.value.context == {"table": "WIDE", "column": "DEC10_2"}


@pytest.mark.parametrize(
    ("name", "values", "stored"),
    [
        ("DEC10_2", [0.1, 0.125, 2.675, -1.005], ["0.10", "0.12", "2.67", "-1.00"]),
        ("I32", [0.5, 1.5, -2.5, 3.0], [0, 2, -2, 3]),
        ("I8", [decimal.Decimal("126.5"), decimal.Decimal("-0.5")], [126, 0]),
        ("DEC5_0", [decimal.Decimal("2.5"), decimal.Decimal("3.5")], ["2", "4"]),
        ("DEC10_2", [decimal.Decimal("999.995"), decimal.Decimal("0.005")], ["1000.00", "0.00"]),
        ("F", [0.1], [float(np.float32(0.1))]),
        ("D", [decimal.Decimal("0.1")], [0.1]),
    ],
)
def test_rounding_rounds_half_to_even(
    wide: Table, name: str, values: list[object], stored: list[object]
) -> None:
    """``rounding=True`` rounds to the column's precision; the nearest value,
    ties to even, from the float's exact binary value (2.675 is below 2.675)."""
    data = pa.table({"ID": pa.array(range(len(values)), pa.int64()), name: values})
    out = conform(data, wide, rounding=True).column(name).to_pylist()
    want = [decimal.Decimal(s) if isinstance(s, str) else s for s in stored]
    assert out == want


@PROPERTY
@given(
    values=st.lists(
        st.floats(allow_nan=False, allow_infinity=False, min_value=-9e7, max_value=9e7)
        | st.integers(-(9 * 10**10), 9 * 10**10).map(lambda n: n / 1000),
        min_size=1,
        max_size=8,
    )
)
def test_rounding_a_float_is_rounding_its_exact_value(wide: Table, values: list[float]) -> None:
    """Rounded into DECIMAL(10, 2), a float is its exact binary value rounded
    half to even, as Python's ``decimal`` rounds it."""
    data = pa.table({"ID": pa.array(range(len(values)), pa.int64()), "DEC10_2": values})
    out = conform(data, wide, rounding=True).column("DEC10_2").to_pylist()
    cents = decimal.Decimal("0.01")
    assert out == [decimal.Decimal(v).quantize(cents, decimal.ROUND_HALF_EVEN) for v in values]


def _rounded(column: ColumnDef, value: object) -> object:
    """What ``rounding=True`` stores for a number: the exact value rounded
    half to even (Python's ``round`` of a ``Fraction``), or ``_LOSSY`` when
    that overflows."""
    exact = _exact(value)
    if exact is None:
        return _LOSSY
    if column.type is ColumnType.DECIMAL:
        assert column.precision is not None and column.scale is not None
        units = round(exact * 10**column.scale)
        return Fraction(units, 10**column.scale) if abs(units) < 10**column.precision else _LOSSY
    bits = {ColumnType.INT8: 8, ColumnType.INT16: 16, ColumnType.INT32: 32}.get(column.type, 64)
    whole = round(exact)
    return whole if -(2 ** (bits - 1)) <= whole < 2 ** (bits - 1) else _LOSSY


@PROPERTY
@given(
    source=sources().filter(lambda s: not pa.types.is_timestamp(s[0])),
    name=st.sampled_from([n for n, c in TARGETS.items() if c.type not in _FLOATS_AND_TIMES]),
)
def test_rounding_stores_the_rounded_exact_value(
    wide: Table, source: tuple[pa.DataType, list[object]], name: str
) -> None:
    """With ``rounding=True`` a number goes into an integer or DECIMAL column
    as its exact value rounded half to even, or is refused for overflow."""
    t, values = source
    expected = [None if v is None else _rounded(TARGETS[name], v) for v in values]
    data = pa.table({"ID": pa.array(range(len(values)), pa.int64()), name: _array(t, values)})
    if any(e is _LOSSY for e in expected):
        with pytest.raises(DataError, match=f"Column '{name}' of table 'WIDE'"):
            conform(data, wide, rounding=True)
        return
    out = conform(data, wide, rounding=True).column(name).to_pylist()
    for stored, want in zip(out, expected, strict=True):
        assert (stored is None) == (want is None)
        assert want is None or _same_value(stored, want), (stored, want)


def test_rounded_rows_are_written_as_they_are(tmp_path: Path) -> None:
    """The opt-in for a write: conform with ``rounding=True`` first; the
    rows then have the table's types and the write casts nothing."""
    with connect(str(tmp_path / "data")) as cat:
        table = create(
            cat,
            columns=[
                ColumnDef(name="ID", type=ColumnType.INT64, nullable=False),
                ColumnDef(name="PRICE", type=ColumnType.DECIMAL, precision=8, scale=2),
            ],
        )
        data = pa.table({"ID": [1, 2], "PRICE": [0.1, 2.675]})
        with pytest.raises(DataError, match=r"'PRICE'.*rounding=True"):
            write_table(cat, "T", data)
        write_table(cat, "T", conform(data, table, rounding=True))
        stored = read_table(cat, "T").sort_by("ID").column("PRICE").to_pylist()
        assert stored == [decimal.Decimal("0.10"), decimal.Decimal("2.67")]


@pytest.mark.parametrize(
    ("name", "values"),
    [
        ("DEC5_0", [123456.0]),
        ("I8", [128.0]),
        ("I8", [math.nan]),
        ("F", [1e300]),
        ("DEC5_0", [decimal.Decimal("99999.5")]),
    ],
)
def test_rounding_never_overflows(wide: Table, name: str, values: list[object]) -> None:
    data = pa.table({"ID": pa.array(range(len(values)), pa.int64()), name: values})
    with pytest.raises(DataError, match=f"Column '{name}' of table 'WIDE'"):
        conform(data, wide, rounding=True)


def test_rounding_is_a_flag(wide: Table) -> None:
    with pytest.raises(almanac.ValidationError, match="rounding"):
        conform(pa.table({"ID": [1]}), wide, rounding="yes")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- primary keys


def _keyed(cat: Catalog) -> Table:
    return create(
        cat,
        "ORDERS",
        [
            ColumnDef(name="REGION", type=ColumnType.STRING, nullable=False),
            ColumnDef(name="NO", type=ColumnType.INT32, nullable=False),
            ColumnDef(name="V", type=ColumnType.STRING),
        ],
        primary_key=("REGION", "NO"),
    )


def test_a_write_that_repeats_a_key_is_refused(cat: Catalog) -> None:
    table = _keyed(cat)
    data = pa.table({"REGION": ["eu", "us", "eu", "eu"], "NO": [1, 1, 2, 1], "V": list("abcd")})
    with pytest.raises(DataError) as caught:
        conform(data, table)
    message = str(caught.value)
    assert "Primary key (REGION, NO) of table 'ORDERS'" in message
    assert "(REGION='eu', NO=1) 2 times" in message
    assert caught.value.context == {
        "table": "ORDERS",
        "columns": ("REGION", "NO"),
        "key": ("eu", 1),
    }
    distinct = pa.table({"REGION": ["eu", "us", "eu"], "NO": [1, 1, 2]})
    assert conform(distinct, table).num_rows == 3


def test_a_refused_write_commits_nothing_and_keys_repeat_across_writes(tmp_path: Path) -> None:
    """The documented limit: keys are unique within a write, not across writes."""
    with connect(str(tmp_path / "data")) as cat:
        create(cat)
        write_table(cat, "T", pa.table({"ID": [1, 2], "V": ["a", "b"]}))
        with pytest.raises(DataError, match="repeats \\(ID=3\\) 2 times"):
            write_table(cat, "T", pa.table({"ID": [3, 3], "V": ["c", "d"]}))
        with pytest.raises(DataError, match="repeats \\(ID=4\\)"):
            write_table(cat, "T", pa.table({"ID": [4, 4]}), operation="overwrite")
        assert sorted(read_table(cat, "T").column("ID").to_pylist()) == [1, 2]
        write_table(cat, "T", pa.table({"ID": [2, 3], "V": ["b2", "c"]}))
        assert sorted(read_table(cat, "T").column("ID").to_pylist()) == [1, 2, 2, 3]
        write_table(cat, "T", pa.table({"ID": [2]}), operation="overwrite")
        assert read_table(cat, "T").column("ID").to_pylist() == [2]


@PROPERTY
@given(
    keys=st.lists(st.tuples(st.sampled_from(["a", "b", "é"]), st.integers(-3, 3)), max_size=30),
    chunks=st.integers(1, 3),
)
def test_keys_are_refused_exactly_when_repeated(
    wide_keyed: Table, keys: list[tuple[str, int]], chunks: int
) -> None:
    step = max(1, len(keys) // chunks)
    parts = [keys[i : i + step] for i in range(0, len(keys), step)] or [[]]
    data = pa.concat_tables(
        pa.table(
            {
                "REGION": pa.array([k[0] for k in part], pa.string()),
                "NO": pa.array([k[1] for k in part], pa.int32()),
            }
        )
        for part in parts
    )
    if len(set(keys)) == len(keys):
        assert conform(data, wide_keyed).num_rows == len(keys)
        return
    with pytest.raises(DataError) as caught:
        conform(data, wide_keyed)
    repeated = caught.value.context["key"]
    assert keys.count(repeated) > 1
    assert f"{keys.count(repeated)} times" in str(caught.value)


@pytest.fixture(scope="module")
def wide_keyed() -> Iterator[Table]:
    with almanac.connect("memory://") as cat:
        yield _keyed(cat)


def test_single_key_columns_of_every_kind(cat: Catalog) -> None:
    table = create(
        cat,
        columns=[
            ColumnDef(name="ID", type=ColumnType.UUID, nullable=False),
            ColumnDef(name="V", type=ColumnType.INT64),
        ],
    )
    same = "12345678-9abc-def0-1234-56789abcdef0"
    with pytest.raises(DataError, match=f"repeats \\(ID='{same}'\\)"):
        conform(pa.table({"ID": [same, same.upper()]}), table)
    check_unique_keys(conform(pa.table({"ID": [same]}), table), table)


KEY_COLUMNS = {
    "F": (ColumnDef(name="F", type=ColumnType.DOUBLE, nullable=False), pa.float64()),
    "B": (ColumnDef(name="B", type=ColumnType.BOOLEAN, nullable=False), pa.bool_()),
    "TS": (ColumnDef(name="TS", type=ColumnType.TIMESTAMP, nullable=False), pa.timestamp("us")),
    "M": (
        ColumnDef(name="M", type=ColumnType.DECIMAL, precision=6, scale=2, nullable=False),
        pa.decimal128(6, 2),
    ),
    "I": (ColumnDef(name="I", type=ColumnType.INT64, nullable=False), pa.int64()),
    "DA": (ColumnDef(name="DA", type=ColumnType.DATE, nullable=False), pa.date32()),
    "TI": (
        ColumnDef(name="TI", type=ColumnType.TIME, precision=9, nullable=False),
        pa.time64("us"),
    ),
    "S": (ColumnDef(name="S", type=ColumnType.STRING, nullable=False), pa.string()),
    "I8": (ColumnDef(name="I8", type=ColumnType.INT8, nullable=False), pa.int8()),
}
KEY_VALUES: dict[str, st.SearchStrategy[object]] = {
    "F": st.sampled_from([0.0, -0.0, 1.5, math.nan, math.inf]),
    "B": st.booleans(),
    "TS": st.sampled_from([INT64[0], -1, 0, INT64[1]]),
    "M": st.sampled_from([decimal.Decimal(v) for v in ("0.00", "-0.01", "9999.99", "1.50")]),
    "I": st.sampled_from([INT64[0], INT64[1], 0, -1]),
    "DA": st.sampled_from([dt.date(1, 1, 1), dt.date(9999, 12, 31), dt.date(1970, 1, 1)]),
    "TI": st.sampled_from([dt.time(0), dt.time(23, 59, 59, 999999), dt.time(12)]),
    "S": st.sampled_from(["", "a", "é", "A"]),
    "I8": st.sampled_from([-128, 127, 0]),
}


@st.composite
def keyed_rows(draw: st.DrawFn) -> tuple[tuple[str, ...], pa.Table]:
    names = tuple(draw(st.lists(st.sampled_from(sorted(KEY_COLUMNS)), min_size=1, unique=True)))
    rows = draw(st.lists(st.tuples(*(KEY_VALUES[n] for n in names)), min_size=2, max_size=12))
    columns = {n: _array(KEY_COLUMNS[n][1], [row[i] for row in rows]) for i, n in enumerate(names)}
    return names, pa.table(columns)


@PROPERTY
@given(keyed=keyed_rows())
def test_the_key_check_agrees_with_a_hash_aggregation(
    keyed_table: Table, keyed: tuple[tuple[str, ...], pa.Table]
) -> None:
    """Whatever the key's types (floats with -0.0 and NaN, int64 at both
    ends, decimals, timestamps), a key repeats exactly when grouping the
    rows by it makes fewer groups than rows."""
    names, data = keyed
    table = keyed_table.evolve(primary_key=names)
    groups = data.group_by(list(names)).aggregate([]).num_rows
    if groups == data.num_rows:
        check_unique_keys(data, table)
    else:
        with pytest.raises(DataError, match="must be unique within a write"):
            check_unique_keys(data, table)


@pytest.fixture(scope="module")
def keyed_table() -> Iterator[Table]:
    """A table with a column of every key kind; each draw keys it on its own columns."""
    with almanac.connect("memory://") as cat:
        yield create(cat, "K", [c for c, _ in KEY_COLUMNS.values()], primary_key=("I",))


def test_wrong_arguments_are_validation_errors(wide: Table) -> None:
    column = wide.column("I8")
    assert column is not None
    cases: list[tuple[Callable[[], object], str]] = [
        (lambda: cast_rule(bad("int64"), column), "Parameter 'source' of cast_rule"),
        (lambda: cast_rule(pa.int64(), bad(wide)), "Parameter 'column' of cast_rule"),
        (lambda: check_unique_keys(bad({"ID": [1]}), wide), "Parameter 'rows'"),
        (lambda: check_unique_keys(pa.table({"ID": [1]}), bad(column)), "Parameter 'table'"),
    ]
    for call, fragment in cases:
        with pytest.raises(almanac.ValidationError, match=fragment):
            call()


def bad(value: object) -> Any:
    """A wrongly typed argument, past the type checker."""
    return value


def test_every_text_bytes_date_time_and_uuid_layout_is_stored(cat: Catalog) -> None:
    table = create(
        cat,
        columns=[
            ColumnDef(name="ID", type=ColumnType.INT64, nullable=False),
            ColumnDef(name="S", type=ColumnType.STRING, length=3),
            ColumnDef(name="B", type=ColumnType.BYTES),
            ColumnDef(name="DA", type=ColumnType.DATE),
            ColumnDef(name="TI", type=ColumnType.TIME, precision=6),
            ColumnDef(name="U", type=ColumnType.UUID),
        ],
    )
    text = "12345678-9abc-def0-1234-56789abcdef0"
    cases: list[tuple[str, pa.Array, object]] = [
        ("S", pa.array(["ab"], pa.string_view()), "ab"),
        ("S", pa.array(["ab"], pa.large_string()), "ab"),
        ("B", pa.array([b"x"], pa.binary_view()), b"x"),
        ("B", pa.array([b"x"], pa.large_binary()), b"x"),
        ("B", pa.array([b"xy"], pa.binary(2)), b"xy"),
        ("DA", pa.array([86_400_000], pa.date64()), dt.date(1970, 1, 2)),
        ("TI", pa.array([5], pa.time32("s")), dt.time(0, 0, 5)),
        ("U", pa.array([text.upper()]).dictionary_encode(), text),
        ("U", pa.array([bytes(16)], pa.uuid()), "00000000-0000-0000-0000-000000000000"),
    ]
    for name, values, stored in cases:
        column = table.column(name)
        assert column is not None and cast_rule(values.type, column) is not CastRule.REFUSED
        out = conform(pa.table({"ID": [1], name: values}), table)
        assert out.column(name).to_pylist() == [stored], (name, values.type)


def test_iceberg_uuid_takes_uuid_bytes_and_canonical_text_and_refuses_other_text(
    cat: Catalog,
) -> None:
    """ICEBERG_UUID (Iceberg's ``uuid``) stores Arrow's ``uuid`` type: 16 bytes
    from a ``uuid`` or ``fixed_size_binary(16)`` array, or canonical text in
    either case; a file written this way is what Iceberg clients write."""
    table = create(
        cat,
        columns=[
            ColumnDef(name="ID", type=ColumnType.INT64, nullable=False),
            ColumnDef(name="U", type=ColumnType.ICEBERG_UUID),
        ],
    )
    (column,) = [c for c in table.columns if c.name == "U"]
    assert cast_rule(pa.uuid(), column) is CastRule.EXACT
    assert cast_rule(pa.binary(16), column) is CastRule.EXACT
    assert cast_rule(pa.large_string(), column) is CastRule.CHECKED
    assert cast_rule(pa.binary(8), column) is CastRule.REFUSED
    value = uuid.UUID("12345678-9abc-def0-1234-56789abcdef0")
    cases = [
        pa.array([value.bytes, None], pa.uuid()),
        pa.array([value.bytes, None], pa.binary(16)),
        pa.array([str(value).upper(), None], pa.large_string()).slice(0),
        pa.chunked_array([[str(value)], [None]]),
    ]
    for values in cases:
        out = conform(pa.table({"ID": [1, 2], "U": values}), table)
        assert out.column("U").type == pa.uuid()
        assert out.column("U").to_pylist() == [value, None], values.type
    with pytest.raises(DataError, match=r"'U' of table 'T' has type ICEBERG_UUID; 'x' is not"):
        conform(pa.table({"ID": [1, 2], "U": [str(value), "x"]}), table)
    write_table(cat, "T", pa.table({"ID": [1, 2], "U": cases[2]}))
    assert read_table(cat, "T").sort_by("ID").column("U").to_pylist() == [value, None]
