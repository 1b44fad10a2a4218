"""Column type parameters: which a type takes and their ranges."""

from __future__ import annotations

import datetime as dt
import decimal
import uuid
from collections.abc import Mapping
from typing import Any

import pytest

from almanac import (
    AddColumns,
    AlterColumn,
    Catalog,
    ColumnDef,
    ColumnType,
    ConstantDefault,
    ValidationError,
)

from .support import apply, col, rejected, table

MAX_LENGTH = 2**31 - 1
TEMPORAL = [ColumnType.TIME, ColumnType.TIMESTAMP, ColumnType.TIMESTAMP_WITH_LOCAL_TIME_ZONE]
LENGTHED = [ColumnType.STRING, ColumnType.BYTES, ColumnType.FIXED]

VALID: list[tuple[ColumnType, dict[str, int]]] = [
    *((t, {"length": n}) for t in LENGTHED for n in (1, 2, MAX_LENGTH)),
    (ColumnType.DECIMAL, {"precision": 1}),
    (ColumnType.DECIMAL, {"precision": 32767}),
    (ColumnType.DECIMAL, {"precision": 10, "scale": 0}),
    (ColumnType.DECIMAL, {"precision": 10, "scale": 32767}),
    (ColumnType.DECIMAL, {"scale": 5}),
    *((t, {"precision": p}) for t in TEMPORAL for p in (0, 3, 9)),
]

OUT_OF_RANGE: list[tuple[ColumnType, dict[str, int]]] = [
    *((t, {"length": n}) for t in LENGTHED for n in (0, -1, MAX_LENGTH + 1)),
    (ColumnType.DECIMAL, {"precision": 0}),
    (ColumnType.DECIMAL, {"precision": 32768}),
    (ColumnType.DECIMAL, {"precision": 10, "scale": -1}),
    (ColumnType.DECIMAL, {"precision": 10, "scale": 32768}),
    *((t, {"precision": p}) for t in TEMPORAL for p in (-1, 10)),
]

NOT_TAKEN: list[tuple[ColumnType, dict[str, int]]] = [
    *((t, {"length": 10}) for t in ColumnType if t not in LENGTHED),
    *((t, {"precision": 3}) for t in ColumnType if t not in (ColumnType.DECIMAL, *TEMPORAL)),
    *((t, {"scale": 2}) for t in ColumnType if t is not ColumnType.DECIMAL),
]


def _col(ctype: ColumnType, params: Mapping[str, Any]) -> ColumnDef:
    """Column ``C`` of ``ctype`` with the given precision/scale/length."""
    return col(
        "C",
        ctype,
        precision=params.get("precision"),
        scale=params.get("scale"),
        length=params.get("length"),
    )


def _ids(case: tuple[ColumnType, dict[str, int]]) -> str:
    ctype, params = case
    return ctype.name + "-" + "-".join(f"{k}={v}" for k, v in params.items())


@pytest.mark.parametrize("case", VALID, ids=_ids)
def test_parameters_in_range(cat: Catalog, case: tuple[ColumnType, dict[str, int]]) -> None:
    ctype, params = case
    apply(cat, table("T", _col(ctype, params)))
    c = cat.catalog().table("T")
    assert c is not None
    column = c.column("C")
    assert column is not None
    for key, value in params.items():
        assert getattr(column, key) == value


@pytest.mark.parametrize("case", OUT_OF_RANGE, ids=_ids)
def test_parameters_out_of_range(cat: Catalog, case: tuple[ColumnType, dict[str, int]]) -> None:
    ctype, params = case
    rejected(cat, table("T", _col(ctype, params)), ValidationError, "'C'")
    apply(cat, table("T"))
    rejected(cat, AddColumns(table="T", columns=(_col(ctype, params),)), ValidationError, "'C'")


@pytest.mark.parametrize("case", NOT_TAKEN, ids=_ids)
def test_parameter_the_type_does_not_take(
    cat: Catalog, case: tuple[ColumnType, dict[str, int]]
) -> None:
    ctype, params = case
    (what,) = params
    rejected(cat, table("T", _col(ctype, params)), ValidationError, "'C'", what)
    apply(cat, table("T", col("C", ctype)))
    alter = AlterColumn(
        table="T",
        column="C",
        precision=params.get("precision"),
        scale=params.get("scale"),
        length=params.get("length"),
    )
    rejected(cat, alter, ValidationError, "'C'", what)


@pytest.mark.parametrize("value", ["10", 2.5, True])
@pytest.mark.parametrize(
    ("ctype", "param"),
    [
        (ColumnType.STRING, "length"),
        (ColumnType.DECIMAL, "precision"),
        (ColumnType.DECIMAL, "scale"),
        (ColumnType.TIMESTAMP, "precision"),
    ],
)
def test_non_integer_parameter_is_a_validation_error(
    cat: Catalog, ctype: ColumnType, param: str, value: Any
) -> None:
    """Refused when the column definition is built, naming the parameter."""
    with pytest.raises(
        ValidationError, match=f"Parameter '{param}' of ColumnDef 'C' must be an int"
    ):
        _col(ctype, {param: value})


def test_alter_column_to_a_non_type_is_a_validation_error(cat: Catalog) -> None:
    apply(cat, table("T", col("C")))
    bogus: Any = "INT64"
    with pytest.raises(
        ValidationError, match="Parameter 'type' of AlterColumn must be a ColumnType"
    ):
        AlterColumn(table="T", column="C", type=bogus)


def test_types_without_parameters_get_none(cat: Catalog) -> None:
    plain = [t for t in ColumnType if t not in (*TEMPORAL, *LENGTHED, ColumnType.DECIMAL)]
    apply(cat, table("T", *(col(f"C{t.value}", t) for t in plain)))
    t = cat.catalog().table("T")
    assert t is not None
    for column in t.columns[1:]:
        assert (column.precision, column.scale, column.length) == (None, None, None)


def test_parameterized_types_get_defaults(cat: Catalog) -> None:
    apply(cat, table("T", *(col(t.name, t) for t in (*TEMPORAL, *LENGTHED, ColumnType.DECIMAL))))
    t = cat.catalog().table("T")
    assert t is not None
    for ctype in LENGTHED:
        c = t.column(ctype.name)
        assert c is not None and c.length is not None and 1 <= c.length <= MAX_LENGTH
    for ctype in TEMPORAL:
        c = t.column(ctype.name)
        assert c is not None and c.precision is not None and 0 <= c.precision <= 9
    d = t.column("DECIMAL")
    assert d is not None and d.precision is not None and d.scale is not None
    assert 1 <= d.precision <= 32767 and 0 <= d.scale <= d.precision


GOOD_DEFAULTS: list[tuple[ColumnType, object]] = [
    (ColumnType.BOOLEAN, True),
    (ColumnType.INT8, 127),
    (ColumnType.INT16, -(2**15)),
    (ColumnType.INT32, 2**31 - 1),
    (ColumnType.INT64, -(2**63)),
    (ColumnType.FLOAT, 1.5),
    (ColumnType.DOUBLE, 2),
    (ColumnType.DECIMAL, decimal.Decimal("12")),
    (ColumnType.STRING, "x"),
    (ColumnType.BYTES, b"x"),
    (ColumnType.DATE, dt.date(2024, 1, 1)),
    (ColumnType.TIME, dt.time(1, 2)),
    (ColumnType.TIMESTAMP, dt.datetime(2024, 1, 1)),
    (ColumnType.UUID, uuid.UUID(int=1)),
]

BAD_DEFAULTS: list[tuple[ColumnType, object]] = [
    (ColumnType.BOOLEAN, 1),
    (ColumnType.INT8, 128),
    (ColumnType.INT32, True),
    (ColumnType.INT64, "1"),
    (ColumnType.DOUBLE, "1.0"),
    (ColumnType.STRING, b"x"),
    (ColumnType.BYTES, "x"),
    (ColumnType.DATE, dt.datetime(2024, 1, 1)),
    (ColumnType.UUID, "00000000-0000-0000-0000-000000000001"),
]


@pytest.mark.parametrize(("ctype", "value"), GOOD_DEFAULTS, ids=lambda v: repr(v))
def test_constant_default_of_the_column_type(
    cat: Catalog, ctype: ColumnType, value: object
) -> None:
    apply(cat, table("T", col("C", ctype, default=ConstantDefault(value))))


@pytest.mark.parametrize(("ctype", "value"), BAD_DEFAULTS, ids=lambda v: repr(v))
def test_constant_default_of_another_type(cat: Catalog, ctype: ColumnType, value: object) -> None:
    rejected(
        cat, table("T", col("C", ctype, default=ConstantDefault(value))), ValidationError, "'C'"
    )


def test_string_default_longer_than_the_column(cat: Catalog) -> None:
    too_long = col("C", ColumnType.STRING, length=2, default=ConstantDefault("abc"))
    rejected(cat, table("T", too_long), ValidationError, "'C'")
