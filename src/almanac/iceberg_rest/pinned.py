"""The catalog pinned at one version, over Iceberg REST: a consistent,
read-only view of every table as of catalog version V while writers go on.

A client asks for it by warehouse: ``GET /v1/config?warehouse=<warehouse>@v<V>``
(the served warehouse however spelled, or nothing before the ``@``). The
answer overrides the client's ``prefix`` with ``v<V>``, so every later call
goes to ``/v1/v<V>/namespaces/...``: namespaces and tables as version V had
them, each table's metadata that of its data snapshot at V. Every change
there is refused (403): a version never changes.

The version must be available when each call arrives. The server holds no
pin for a client (a REST client never says when it is done): a checkpoint
may truncate V, after which calls answer 400 "no longer available", and the
janitor may expire data only V needed. Hold a pin (``Catalog.pin``) for as
long as V is read; ``almanac.spark.add_catalog(..., version=V)`` does so
for a local catalog.
"""

from __future__ import annotations

import re
from typing import Annotated

from fastapi import Depends, Request

from almanac import _check as check
from almanac.errors import ReadOnlyCatalogError, VersionNotFoundError

__all__ = [
    "PINNED",
    "WRITABLE",
    "Pinned",
    "check_pinned",
    "pinned_of",
    "pinned_prefix",
    "pinned_warehouse",
    "split_warehouse",
]

PINNED = "/v{pinned:int}"
"""The route prefix of a pinned view, below ``/v1``: the client's ``prefix``."""

_PINNED_WAREHOUSE = re.compile(r"(?P<warehouse>.*)@v(?P<version>[0-9]+)")


def pinned_warehouse(version: int, warehouse: str = "") -> str:
    """The ``warehouse`` a client names to read the catalog pinned at ``version``."""
    return f"{warehouse}@v{version}"


def pinned_prefix(version: int) -> str:
    """The Iceberg REST ``prefix`` of the catalog pinned at ``version``."""
    return f"v{version}"


def split_warehouse(asked: str) -> tuple[str, int | None]:
    """A ``warehouse`` query as (warehouse, pinned version): ``<w>@v<V>``
    pins, anything else names the warehouse as is."""
    match = _PINNED_WAREHOUSE.fullmatch(asked)
    if match is None:
        return asked, None
    return match["warehouse"], int(match["version"])


def check_pinned(version: int) -> int:
    """``version`` if a catalog could hold it: versions run from 1 within 64
    bits, so ``v0`` (the empty catalog before the first version) and a number
    past 64 bits are versions that do not exist, not an empty catalog or an
    argument error."""
    if not 1 <= version <= check.INT64_MAX:
        raise VersionNotFoundError(
            f"Catalog version {version} does not exist: versions start at 1"
            + ("" if version < 1 else " and fit in 64 bits"),
            version=version,
        )
    return version


def pinned_of(request: Request) -> int | None:
    """The version a request's path is pinned at; None at the latest."""
    value = request.path_params.get("pinned")
    return check_pinned(value) if isinstance(value, int) else None


Pinned = Annotated[int | None, Depends(pinned_of)]
"""A read's parameter: the version its path is pinned at (``= None``)."""


def _writable(request: Request) -> None:
    pinned = pinned_of(request)
    if pinned is not None:
        raise ReadOnlyCatalogError(
            f"The catalog pinned at version {pinned} is read-only: "
            f"{request.method} {request.url.path} changes it; make changes through the "
            "catalog itself (no version in the warehouse)",
            version=pinned,
            rule="pinned-read-only",
        )


WRITABLE = Depends(_writable)
"""A change's route dependency: refused (403) at a pinned prefix."""
