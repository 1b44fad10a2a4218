"""``almanac.connect``: a catalog node and, where it has a warehouse, its
data plane. The catalog never imports the data plane; this is the one place
that puts the two together."""

from __future__ import annotations

import os
import threading

from almanac import _check as check
from almanac.catalog import Catalog, RetentionPolicy, open_catalog
from almanac.errors import CatalogError, ValidationError
from almanac.targets import Target, parse_target

__all__ = ["connect"]


def connect(
    target: str | os.PathLike[str] | Target,
    *,
    delay_ms: int | None = None,
    max_clock_skew_ms: int | None = None,
    retention: RetentionPolicy | None = None,
    warehouse: str | None = None,
    janitor_interval_s: float | None = None,
    durability: str = "full",
) -> Catalog:
    """Open a catalog node (see ``almanac.catalog.open_catalog``) with its
    data plane.

    ``memory://`` is a fresh catalog in this process; a directory path (created
    on first use) or ``sqlite:///path/file.db`` is a durable catalog that the
    processes of one machine share. Table data goes to ``warehouse``, by
    default ``<directory>/warehouse``; with ``janitor_interval_s`` this node
    also cleans it periodically (see ``almanac janitor``). ``durability`` is
    ``"full"`` (every version fsynced) or ``"normal"`` (see
    ``almanac.metastore.sqlite``).
    """
    parsed = parse_target(target)
    check.optional_str(warehouse, "Parameter 'warehouse' of connect", nonblank=True)
    check.optional_float(
        janitor_interval_s,
        "Parameter 'janitor_interval_s' of connect",
        positive=True,
        hi=threading.TIMEOUT_MAX,
    )
    location = warehouse if warehouse is not None else parsed.default_warehouse
    if janitor_interval_s is not None and location is None:
        raise ValidationError("A janitor needs a warehouse; this catalog has none")
    cat = open_catalog(
        parsed,
        delay_ms=delay_ms,
        max_clock_skew_ms=max_clock_skew_ms,
        retention=retention,
        durability=durability,
    )
    if location is None:
        return cat
    try:
        try:
            from almanac.data.plane import attach_data_plane
        except ImportError as exc:
            if warehouse is None:
                return cat  # no data-plane packages here: a catalog without table data
            raise CatalogError(
                f"Table data needs pyarrow and pyiceberg (install almanac[spark]): {exc}"
            ) from exc
        attach_data_plane(cat, location, janitor_interval_s=janitor_interval_s)
    except BaseException:
        cat.close()
        raise
    return cat
