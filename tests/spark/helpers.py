"""Small helpers shared by the Spark tests."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from almanac.catalog import Catalog
from almanac.data.plane import warehouse_of


def load(spark: Any, target: str, name: str, **options: object) -> Any:
    reader = spark.read.format("almanac").option("catalog", target)
    for key, value in options.items():
        reader = reader.option(key, str(value))
    return reader.load(name)


def save(df: Any, target: str, name: str, mode: str = "append", **options: object) -> None:
    writer = df.write.format("almanac").option("catalog", target).mode(mode)
    for key, value in options.items():
        writer = writer.option(key, str(value))
    writer.save(name)


def rows(df: Any) -> list[tuple[Any, ...]]:
    """All rows as sorted tuples (None sorts first)."""
    return sorted(
        (tuple(r) for r in df.collect()),
        key=lambda row: tuple((v is not None, v) for v in row),
    )


def parquet_files(cat: Catalog) -> list[str]:
    """Every Parquet file in the catalog's warehouse."""
    location = warehouse_of(cat)
    assert location is not None
    root = Path(location)
    if not root.exists():
        return []
    return sorted(
        os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs if f.endswith(".parquet")
    )


def write_dirs(cat: Catalog, schema: str, table: str) -> list[str]:
    """The write directories left under the table's directory (by the id
    of the table of that name at the latest version; a dropped table has none)."""
    location = warehouse_of(cat)
    assert location is not None
    found = cat.catalog().table(table, schema)
    if found is None:
        return []
    root = Path(location) / str(found.id)
    if not root.exists():
        return []
    return sorted(p.name for p in root.iterdir() if p.name != "metadata")
