"""The console's pages as pure functions of catalog values: same input, same
HTML. Every value reaches the page through Jinja2 with autoescaping on, so
a table named ``<script>`` is shown as text, never run."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from urllib.parse import quote

import jinja2
from markupsafe import Markup

from almanac.model.catalog_version import CatalogVersion
from almanac.model.descriptor_sql import default_sql, index_columns_sql, type_sql
from almanac.model.descriptors import Schema, Table, Zone
from almanac.server.views import iso

__all__ = [
    "Chrome",
    "DataSnapshots",
    "DiffRow",
    "HistoryRow",
    "moment",
    "path_segment",
    "SnapshotRow",
    "render_diff",
    "render_error",
    "render_history",
    "render_login",
    "render_table",
    "render_tree",
]


@dataclass(frozen=True, slots=True)
class Chrome:
    """What every page's frame shows: the versions a reader can pick from,
    the one shown, and whether a login is in force."""

    version: int
    latest: int
    earliest: int
    pinned: bool
    """True when the URL names the version: live updates then only offer a
    reload instead of changing the page under the reader."""
    auth: bool = False


@dataclass(frozen=True, slots=True)
class SnapshotRow:
    """One data snapshot of a table, summed over its files."""

    snapshot_id: int
    catalog_version: int
    committed: str
    operation: str
    files: int
    rows: int
    bytes: int


@dataclass(frozen=True, slots=True)
class DataSnapshots:
    """A table's kept data snapshots, oldest first, or why there are none to show."""

    rows: tuple[SnapshotRow, ...] = ()
    missing: str | None = None
    later: int = 0
    """Snapshots left out because they were committed after the catalog
    version shown (what a read at that version skips too)."""


@dataclass(frozen=True, slots=True)
class HistoryRow:
    version: int
    activated: str
    node: str
    summary: str


@dataclass(frozen=True, slots=True)
class DiffRow:
    """One line of the side-by-side diff: what ``name`` was before and after."""

    change: str
    """``added``, ``removed`` or ``changed``."""
    kind: str
    name: str
    field: str
    before: str
    after: str


def path_segment(name: str) -> str:
    """A name as one URL path segment: every reserved character escaped,
    ``/`` included, so any legal name routes to its own page."""
    return quote(name, safe="")


@cache
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("almanac.console", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["type_sql"] = type_sql
    env.filters["default_sql"] = lambda column: default_sql(column.default) or ""
    env.filters["index_columns"] = index_columns_sql
    env.filters["timestamp"] = iso
    env.filters["thousands"] = lambda n: f"{n:,}"
    env.filters["segment"] = path_segment
    env.filters["moment"] = moment
    return env


def moment(iso_text: str) -> Markup:
    """An ISO-8601 UTC instant as a ``<time>`` reading ``2026-11-23
    01:02:03.004 UTC``; the page's script adds the reader's local time."""
    shown = iso_text.replace("T", " ").removesuffix("Z") + " UTC"
    return Markup('<span class="when"><time datetime="{}">{}</time></span>').format(iso_text, shown)


def _render(template: str, chrome: Chrome | None, **values: object) -> str:
    return _environment().get_template(template).render(chrome=chrome, **values)


def render_tree(version: CatalogVersion, chrome: Chrome) -> str:
    """Schemas, each with its tables, and the zones, at ``version``."""
    by_schema: dict[int, list[Table]] = {}
    for table in version.tables():  # one pass, however many schemas
        by_schema.setdefault(table.schema_id, []).append(table)
    schemas: list[tuple[Schema, list[Table]]] = [
        (schema, sorted(by_schema.get(schema.id, ()), key=lambda t: t.name))
        for schema in sorted(version.schemas(), key=lambda s: s.name)
    ]
    return _render(
        "tree.html",
        chrome,
        version=version,
        schemas=schemas,
        zones=version.zones(),
        default_zone=version.default_zone,
        activated=iso(version.activation_time),
    )


def render_table(
    version: CatalogVersion, schema: Schema, table: Table, data: DataSnapshots, chrome: Chrome
) -> str:
    """One table: columns, primary key, indexes, zone and data snapshots."""
    zone: Zone | None = version.zone_by_id(table.zone_id)
    return _render(
        "table.html",
        chrome,
        schema=schema,
        table=table,
        indexes=version.indexes(table.id),
        zone=zone,
        data=data,
    )


def render_history(
    rows: Sequence[HistoryRow],
    chrome: Chrome,
    *,
    older: int | None,
    newer: int | None,
    table: tuple[str, str] | None = None,
) -> str:
    """The timeline, newest first; ``older``/``newer`` are the ``before=``
    bounds of the neighbouring pages, None at either end. With ``table``
    (schema, name) it is that table's history."""
    return _render("history.html", chrome, rows=rows, older=older, newer=newer, table=table)


def render_diff(before: int, after: int, rows: Sequence[DiffRow], chrome: Chrome) -> str:
    return _render("diff.html", chrome, before=before, after=after, rows=rows)


def render_error(status: int, title: str, message: str, chrome: Chrome | None) -> str:
    return _render("error.html", chrome, status=status, title=title, message=message)


def render_login(message: str | None, next_path: str) -> str:
    return _render("login.html", None, message=message, next_path=next_path)
