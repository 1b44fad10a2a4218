"""Wrong arguments of the data plane are a ValidationError, raised where the
value is built (predicates) or where the call is made (timestamps)."""

from __future__ import annotations

import datetime as dt
import decimal
from typing import Any

import pytest

from almanac import Catalog, ValidationError
from almanac.data import Predicate, expire_data, read_table
from tests.data.support import append, create


def bad(value: object) -> Any:
    return value


@pytest.mark.parametrize(
    ("build", "fragment"),
    [
        (lambda: Predicate("ID", "<", 2**70), "signed 64-bit range"),
        (lambda: Predicate("ID", "in", [1, 2**64]), "Item 1 of parameter 'value'"),
        (lambda: Predicate("ID", "in", [1, "x"]), "values of one type"),
        (lambda: Predicate("ID", "in", 5), "a list, tuple or set"),
        (lambda: Predicate("ID", "~", 5), "Parameter 'op' of Predicate"),
        (lambda: Predicate(bad(5), "=", 5), "Parameter 'column' of Predicate"),
        (lambda: Predicate("ID", "=", bad(object())), "Parameter 'value' of Predicate '='"),
        (lambda: Predicate("ID", "=", bad({})), "got dict"),
        (lambda: Predicate("ID", "=", decimal.Decimal("1e100")), "at most 76 digits"),
        (lambda: Predicate("ID", "=", decimal.Decimal("NaN")), "finite Decimal"),
    ],
)
def test_bad_predicates_are_refused_when_built(build: Any, fragment: str) -> None:
    with pytest.raises(ValidationError, match="Predicate") as info:
        build()
    assert fragment in str(info.value)


def test_good_predicates_still_build() -> None:
    assert Predicate("ID", "is_null", object()).op == "is_null"  # the value is ignored
    assert Predicate("ID", "in", {1, None, 3}).op == "in"
    assert Predicate("D", "=", dt.datetime(2024, 1, 1)).value == dt.datetime(2024, 1, 1)


def test_reads_and_expiry_refuse_naive_datetimes(cat: Catalog) -> None:
    create(cat)
    append(cat, [1])
    naive = dt.datetime(2024, 1, 1)
    with pytest.raises(ValidationError, match="naive datetimes are refused"):
        read_table(cat, "T", timestamp=naive)
    with pytest.raises(ValidationError, match="'older_than' of expire_data"):
        expire_data(cat, "T", older_than=naive)
    with pytest.raises(ValidationError, match="'timestamp' of plan_scan"):
        read_table(cat, "T", timestamp=bad("2024"))
    with pytest.raises(ValidationError, match="'version' of plan_scan"):
        read_table(cat, "T", version=bad(1.0))
    assert read_table(cat, "T", timestamp=dt.datetime.now(dt.UTC)).num_rows == 1
