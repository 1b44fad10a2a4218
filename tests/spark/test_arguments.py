"""``almanac.spark``'s entry points refuse bad arguments with a
ValidationError naming the parameter, before any Spark session starts."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import almanac.spark
from almanac.errors import ValidationError


def bad(value: object) -> Any:
    return value


def test_add_catalog_refuses_what_is_not_a_session_before_using_it(tmp_path: Path) -> None:
    """Not an AttributeError from inside Spark."""
    spark: object
    for spark in ("s", None, {}):
        with pytest.raises(ValidationError, match="SparkSession") as info:
            almanac.spark.add_catalog(spark, "c", str(tmp_path / "d"))
        assert "'spark' of add_catalog" in str(info.value)


def test_session_refuses_bad_arguments_before_starting_spark(tmp_path: Path) -> None:
    target = str(tmp_path / "d")
    cases: list[tuple[Callable[[], object], str]] = [
        (lambda: almanac.spark.session(target, catalog="a b"), "not a Spark catalog name"),
        (lambda: almanac.spark.session(target, catalog=bad(1)), "'catalog' of session"),
        (lambda: almanac.spark.session(target, conf=bad([])), "'conf' of session"),
        (lambda: almanac.spark.session(target, conf=bad({"k": 1})), "Setting 'k'"),
        (lambda: almanac.spark.session(target, token=bad(2)), "'token' of session"),
        (lambda: almanac.spark.session(target, warehouse=bad(3)), "'warehouse' of session"),
        (lambda: almanac.spark.session("foo://x"), "unsupported scheme"),
    ]
    for call, fragment in cases:
        with pytest.raises(ValidationError) as info:
            call()
        assert fragment in str(info.value)
    assert not (tmp_path / "d").exists()
