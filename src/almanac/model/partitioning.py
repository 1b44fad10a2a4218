"""Partition specs and sort orders: Iceberg's, held as frozen catalog values.

A table's partition specs and sort orders are part of its catalog entry, so
they are versioned, diffed and served to engines like its columns. The
shapes follow Iceberg's table spec (format v2):

- a transform is kept in Iceberg's own spelling (``identity``,
  ``bucket[16]``, ``truncate[4]``, ``year``, ``month``, ``day``, ``hour``,
  ``void``), so what an engine sends is what the catalog stores;
- partition field ids start after 1000 and are never reused for another
  (source, transform) pair; evolution adds a spec and keeps the old ones,
  since files written under them keep their spec id;
- sort order 0 is the unsorted order and always exists.

A table made with ``COLOCATE BY`` (or by an older release) is ``bucketed``:
its Iceberg specs start with the hidden ``tablet`` field (id 1000, bucket
on the first colocation column into the zone's partition count), which
``Table.partition_specs`` does not list. Every function here is pure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from almanac import _check as check
from almanac.errors import ValidationError
from almanac.model.datatypes import ColumnType

__all__ = [
    "FIRST_FIELD_ID",
    "UNSORTED",
    "UNPARTITIONED",
    "PartitionField",
    "PartitionSpec",
    "SortField",
    "SortOrder",
    "default_field_name",
    "parse_transform",
    "transform_accepts",
    "transform_name",
    "transform_width",
]

FIRST_FIELD_ID = 1000
"""Iceberg's first partition field id; a bucketed table's hidden ``tablet``
field holds it, so its own fields start after it."""

_BOUNDED = re.compile(r"(bucket|truncate)\[(\d{1,10})\]\Z")
_PLAIN = ("identity", "year", "month", "day", "hour", "void")
_SPELLINGS = {
    "years": "year",
    "months": "month",
    "days": "day",
    "date": "day",
    "hours": "hour",
    "date_hour": "hour",
}

_TIMES = frozenset(
    {
        ColumnType.TIMESTAMP,
        ColumnType.TIMESTAMP_WITH_LOCAL_TIME_ZONE,
        ColumnType.TIMESTAMP_NS,
        ColumnType.TIMESTAMPTZ_NS,
    }
)
_INTEGERS = frozenset({ColumnType.INT8, ColumnType.INT16, ColumnType.INT32, ColumnType.INT64})
_ACCEPTS: dict[str, frozenset[ColumnType]] = {
    "bucket": _INTEGERS
    | _TIMES
    | {
        ColumnType.DECIMAL,
        ColumnType.DATE,
        ColumnType.TIME,
        ColumnType.STRING,
        ColumnType.BYTES,
        ColumnType.UUID,
        ColumnType.FIXED,
    },
    "truncate": _INTEGERS
    | {ColumnType.DECIMAL, ColumnType.STRING, ColumnType.BYTES, ColumnType.FIXED},
    "year": _TIMES | {ColumnType.DATE},
    "month": _TIMES | {ColumnType.DATE},
    "day": _TIMES | {ColumnType.DATE},
    "hour": _TIMES,
}
_NAME_SUFFIX = {
    "bucket": "bucket",
    "truncate": "trunc",
    "year": "year",
    "month": "month",
    "day": "day",
    "hour": "hour",
    "void": "null",
}


def parse_transform(text: str, what: str = "Partition transform") -> str:
    """The canonical Iceberg spelling of a transform, from Iceberg's own
    (``bucket[16]``) or Spark's plural names (``days``); ``ValidationError``
    otherwise."""
    text = check.string(text, what, nonblank=True)
    spelled = text.strip().lower()
    spelled = _SPELLINGS.get(spelled, spelled)
    if spelled in _PLAIN:
        return spelled
    bounded = _BOUNDED.match(spelled)
    if bounded is not None:
        width = int(bounded.group(2))
        if 1 <= width <= 2**31 - 1:
            return f"{bounded.group(1)}[{width}]"
        raise ValidationError(
            f"{what} {text!r} needs a width from 1 to 2147483647",
            transform=text,
            rule="partition-transform",
        )
    raise ValidationError(
        f"{what} {text!r} is not an Iceberg transform: use identity, bucket[N], "
        "truncate[W], year, month, day, hour or void",
        transform=text,
        rule="partition-transform",
    )


def transform_name(transform: str) -> str:
    """``bucket`` for ``bucket[16]``: the transform without its width."""
    return transform.split("[", 1)[0]


def transform_width(transform: str) -> int | None:
    """N of ``bucket[N]``, W of ``truncate[W]``, None for the others."""
    found = _BOUNDED.match(transform)
    return None if found is None else int(found.group(2))


def transform_accepts(transform: str, column_type: ColumnType) -> bool:
    """Whether Iceberg defines ``transform`` on a source of ``column_type``.
    Identity and void take any primitive; nothing takes a nested type."""
    if column_type.nested:
        return False
    name = transform_name(transform)
    if name in ("identity", "void"):
        return True
    return column_type in _ACCEPTS[name]


def default_field_name(column: str, transform: str) -> str:
    """The partition field name Iceberg gives a field with no name of its
    own: the column for identity, else ``<column>_<transform>``."""
    name = transform_name(transform)
    if name == "identity":
        return column
    return f"{column}_{_NAME_SUFFIX[name]}"


@dataclass(frozen=True, slots=True)
class PartitionField:
    """One field of a spec: ``transform`` of the column with id
    ``source_id``, stored under ``field_id`` (unique in the table) and
    ``name`` (unique in the spec)."""

    source_id: int
    field_id: int
    name: str
    transform: str


@dataclass(frozen=True, slots=True)
class PartitionSpec:
    """A partition spec; files keep the ``spec_id`` they were written under."""

    spec_id: int
    fields: tuple[PartitionField, ...] = ()


@dataclass(frozen=True, slots=True)
class SortField:
    """One sort key. Iceberg's defaults: ascending with nulls first,
    descending with nulls last."""

    source_id: int
    transform: str = "identity"
    descending: bool = False
    nulls_first: bool = True


@dataclass(frozen=True, slots=True)
class SortOrder:
    """A sort order; id 0 is reserved for the unsorted order."""

    order_id: int
    fields: tuple[SortField, ...] = ()


UNPARTITIONED = PartitionSpec(0)
UNSORTED = SortOrder(0)
