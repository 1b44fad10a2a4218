"""The console's pages as pure functions: rendered from catalog values and
read back with ``html.parser``, whatever names the catalog holds."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from urllib.parse import quote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from almanac import (
    AddColumns,
    CatalogVersion,
    ColumnDef,
    ColumnType,
    ConstantDefault,
    CreateIndex,
    CreateSchema,
    CreateTable,
    FunctionDefault,
    RenameTable,
    connect,
    preview,
)
from almanac.commands.base import check_name
from almanac.console.pages import (
    Chrome,
    DataSnapshots,
    HistoryRow,
    SnapshotRow,
    path_segment,
    render_diff,
    render_error,
    render_history,
    render_login,
    render_table,
    render_tree,
)
from almanac.console.routes import diff_rows, table_data
from almanac.errors import ValidationError
from almanac.model.diff import diff_catalogs

CHROME = Chrome(version=2, latest=3, earliest=1, pinned=False)
HOSTILE = (
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(1)>',
    "a/b?c=d#e",
    "&amp; &lt;",
    "{{ 7 * 7 }}",
    "'; DROP",
    "..",
)
VOID = {"meta", "link", "input", "br", "img", "hr"}


@dataclass
class Node:
    tag: str
    attrs: dict[str, str]
    children: list[Node] = field(default_factory=list)
    text: list[str] = field(default_factory=list)

    def walk(self) -> Iterator[Node]:
        yield self
        for child in self.children:
            yield from child.walk()

    def all_text(self) -> str:
        return "".join(self.text) + "".join(c.all_text() for c in self.children)

    def find(self, tag: str | None = None, **attrs: str) -> list[Node]:
        """Elements with ``tag`` whose attributes hold the given values
        (``class_`` matches one of the classes)."""
        found = []
        for node in self.walk():
            if tag is not None and node.tag != tag:
                continue
            ok = True
            for key, value in attrs.items():
                if key == "class_":
                    ok &= value in node.attrs.get("class", "").split()
                else:
                    ok &= node.attrs.get(key) == value
            if ok:
                found.append(node)
        return found


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_endtag(self, tag: str) -> None:
        assert self.stack[-1].tag == tag, f"</{tag}> closes <{self.stack[-1].tag}>"
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.stack[-1].text.append(data)


def parse(html: str) -> Node:
    """The page as a tree; a tag left open or closed out of order fails."""
    builder = _Builder()
    builder.feed(html)
    builder.close()
    assert [n.tag for n in builder.stack] == ["#root"], "unclosed elements"
    return builder.root


def assert_inert(page: Node) -> None:
    """The only script is the console's own file and no element has a handler."""
    scripts = page.find("script")
    assert [s.attrs.get("src") for s in scripts] == ["/static/console.js"]
    assert all(s.all_text() == "" for s in scripts)
    for node in page.walk():
        assert not [a for a in node.attrs if a.startswith("on")], node
        assert not node.attrs.get("href", "").lower().startswith("javascript:")


@pytest.fixture(scope="module")
def base() -> CatalogVersion:
    with connect("memory://") as cat:
        return cat.catalog()


def _with_names(base: CatalogVersion, schema: str, table: str, column: str) -> CatalogVersion:
    commands = [
        CreateSchema(name=schema),
        CreateTable(
            name=table,
            columns=(
                ColumnDef(name="ID", type=ColumnType.INT64, nullable=False),
                ColumnDef(name=column, type=ColumnType.STRING, length=10),
            ),
            primary_key=("ID",),
            schema=schema,
        ),
        CreateIndex(name=f"{table} by {column}", table=table, columns=(column,), schema=schema),
    ]
    return preview(base, commands).catalog


def _legal_name(name: str) -> bool:
    """Whether the catalog takes ``name`` (a name of only invisible
    characters, say, is refused: the pages never see one)."""
    try:
        check_name("Schema", name)
    except ValidationError:
        return False
    return True


names = st.text(st.characters(blacklist_categories=("Cc", "Cs")), min_size=1, max_size=24).filter(
    _legal_name
)


@settings(max_examples=60, deadline=None)
@given(schema=st.sampled_from(HOSTILE) | names, table=st.sampled_from(HOSTILE) | names)
def test_any_name_is_text_and_links_to_its_own_page(
    base: CatalogVersion, schema: str, table: str
) -> None:
    if schema == "PUBLIC":
        schema += "_"
    at = _with_names(base, schema, table, "<b>col</b>")
    page = parse(render_tree(at, CHROME))
    assert_inert(page)
    links = page.find("a", class_="table-link")
    assert [a.all_text() for a in links] == [table]
    assert links[0].attrs["href"] == f"/tables/{quote(schema, safe='')}/{quote(table, safe='')}"
    assert schema in [n.all_text() for n in page.find("span", class_="name")]

    found = at.table(table, schema)
    data = DataSnapshots(missing=f"nothing for {table}")
    detail = parse(render_table(at, at.schema(schema), found, data, CHROME))  # type: ignore[arg-type]
    assert_inert(detail)
    assert [h.all_text() for h in detail.find("h1", id="table-name")] == [table]
    cells = [td.all_text() for td in detail.find("td", class_="name")]
    assert cells == ["ID", "<b>col</b>"]
    assert detail.find("b") == []
    index_names = [
        tr.children[0].all_text()
        for tr in detail.find("table", id="indexes")[0].walk()
        if tr.tag == "tr"
    ][1:]
    assert f"{table} by <b>col</b>" in index_names


def test_path_segments_escape_every_reserved_character() -> None:
    for name in HOSTILE:
        segment = path_segment(name)
        assert "/" not in segment and "?" not in segment and "#" not in segment
        assert segment.isascii()


def test_types_and_defaults_are_spelled_as_ddl() -> None:
    cols = {
        "ID": ColumnDef(name="ID", type=ColumnType.INT64, nullable=False),
        "U": ColumnDef(
            name="U", type=ColumnType.UUID, nullable=False, default=FunctionDefault("RAND_UUID")
        ),
        "S": ColumnDef(name="S", type=ColumnType.STRING, length=100),
        "D": ColumnDef(name="D", type=ColumnType.DECIMAL, precision=12, scale=2),
        "T": ColumnDef(name="T", type=ColumnType.TIMESTAMP, precision=3),
        "Q": ColumnDef(name="Q", type=ColumnType.STRING, default=ConstantDefault("it's <b>")),
    }
    cmd = CreateTable(name="T", columns=tuple(cols.values()), primary_key=("ID", "U"))
    with connect("memory://") as cat:
        at = preview(cat.catalog(), [cmd]).catalog
    table, table_schema = at.table("T"), at.schema("PUBLIC")
    assert table is not None and table_schema is not None
    page = parse(render_table(at, table_schema, table, DataSnapshots(), CHROME))
    assert [
        tr.children[2].all_text()
        for tr in page.find("table", id="columns")[0].walk()
        if tr.tag == "tr" and tr.children[0].tag == "td"
    ] == [
        "INT64",
        "UUID",
        "STRING(100)",
        "DECIMAL(12, 2)",
        "TIMESTAMP(3)",
        "STRING(65536)",
    ]
    defaults = [
        tr.children[4].all_text()
        for tr in page.find("table", id="columns")[0].walk()
        if tr.tag == "tr" and tr.children[0].tag == "td"
    ]
    assert defaults == ["", "RAND_UUID()", "", "", "", "'it''s <b>'"]


def test_data_snapshots_are_summed_per_snapshot(base: CatalogVersion) -> None:
    at = _with_names(base, "S", "T", "C")
    table = at.table("T", "S")
    assert table is not None
    rows = (
        SnapshotRow(7, 4, "2026-11-23T01:02:03.004Z", "append", 2, 1234, 56789),
        SnapshotRow(9, 5, "2026-11-23T01:02:04.000Z", "overwrite", 1, 10, 999),
    )
    page = parse(render_table(at, at.schema("S"), table, DataSnapshots(rows), CHROME))  # type: ignore[arg-type]
    body = [
        [td.all_text() for td in tr.children]
        for tr in page.find("table", id="snapshots")[0].walk()
        if tr.tag == "tr" and tr.children[0].tag == "td"
    ]
    assert body == [
        ["7", "4", "2026-11-23 01:02:03.004 UTC", "append", "2", "1,234", "56,789"],
        ["9", "5", "2026-11-23 01:02:04.000 UTC", "overwrite", "1", "10", "999"],
    ]
    # The instant is machine-readable too: the page's script adds local time from it.
    times = [t.attrs["datetime"] for t in page.find("table", id="snapshots")[0].find("time")]
    assert times == ["2026-11-23T01:02:03.004Z", "2026-11-23T01:02:04.000Z"]


def test_a_catalog_without_a_warehouse_says_so() -> None:
    with connect("memory://") as cat:
        cat.sql("CREATE TABLE T (ID INT64 PRIMARY KEY)")
        table = cat.catalog().table("T")
        assert table is not None
        data = table_data(cat, table.id)
    assert data.rows == ()
    assert data.missing is not None and "no warehouse" in data.missing


def test_diff_rows_put_both_sides_next_to_each_other(base: CatalogVersion) -> None:
    before = _with_names(base, "S", "T", "C")
    after = preview(
        before,
        [
            RenameTable(name="T", new_name="<U>", schema="S"),
            AddColumns(
                table="<U>", columns=(ColumnDef(name="N", type=ColumnType.INT32),), schema="S"
            ),
        ],
    ).catalog
    rows = diff_rows(diff_catalogs(before, after))
    assert ("added", "column", "S.<U>.N", "", "—", "INT32") in [
        (r.change, r.kind, r.name, r.field, r.before, r.after) for r in rows
    ]
    renamed = [r for r in rows if r.change == "changed" and r.field == "name" and r.kind == "table"]
    assert [(r.before, r.after) for r in renamed] == [("T", "<U>")]
    page = parse(render_diff(before.version, after.version, rows, CHROME))
    assert_inert(page)
    shown = [[td.all_text() for td in tr.children] for tr in page.find("tr", class_="changed")]
    assert ["changed", "table", "S.<U>", "name", "T", "<U>"] in shown
    empty = parse(render_diff(3, 3, [], CHROME))
    assert empty.find("p", id="no-changes")


def test_history_error_and_login_pages_escape_what_they_show() -> None:
    rows = [HistoryRow(2, "2026-11-23T01:02:03.004Z", "<node>", "NewTable PUBLIC.<script>")]
    page = parse(render_history(rows, CHROME, older=1, newer=None))
    assert_inert(page)
    items = page.find("li", **{"data-version": "2"})
    assert [n.all_text() for n in items[0].find("span", class_="summary")] == [rows[0].summary]
    assert [n.all_text() for n in items[0].find("span", class_="node")] == ["<node>"]
    assert [a.attrs["href"] for a in page.find("a") if "before=" in a.attrs.get("href", "")] == [
        "/history?before=1"
    ]

    error = parse(render_error(404, "Not found", "Table PUBLIC.<script> does not exist", None))
    assert_inert(error)
    assert "Table PUBLIC.<script> does not exist" in error.find("div", id="error")[0].all_text()

    nasty_next = '/x"><script>alert(1)</script>'
    login = parse(render_login("<b>bad</b>", nasty_next))
    assert_inert(login)
    assert login.find("input", name="next")[0].attrs["value"] == nasty_next
    assert login.find("p", id="login-problem")[0].all_text() == "<b>bad</b>"


def test_an_old_version_says_so_and_the_footer_names_what_is_kept(base: CatalogVersion) -> None:
    at = _with_names(base, "S", "T", "C")
    old = Chrome(version=2, latest=5, earliest=1, pinned=True)
    page = parse(render_tree(at, old))
    banner = page.find("div", id="old-version")
    assert banner and "version 2, an old version" in banner[0].all_text()
    assert [n.all_text() for n in banner[0].find("span", class_="latest-number")] == ["5"]
    assert [a.attrs["href"] for a in banner[0].find("a")] == ["/"]
    [footer] = page.find("footer", id="status")
    assert "".join(footer.text) == "Showing version 2 · latest  · versions 1 to  kept"
    assert [n.all_text() for n in footer.children] == ["5", "5"]
    assert [n.attrs["id"] for n in footer.children] == ["latest-version", "kept-to"]
    for chrome in (
        Chrome(version=5, latest=5, earliest=1, pinned=True),  # pinned to the latest
        Chrome(version=5, latest=5, earliest=1, pinned=False),
    ):
        assert not parse(render_tree(at, chrome)).find("div", id="old-version")
    table = at.table("T", "S")
    assert table is not None
    pinned = parse(render_table(at, at.schema("S"), table, DataSnapshots(), old))  # type: ignore[arg-type]
    assert [a.attrs["href"] for a in pinned.find("div", id="old-version")[0].find("a")] == [
        "/tables/S/T"
    ]


def test_a_table_page_links_its_own_history(base: CatalogVersion) -> None:
    at = _with_names(base, "S&x", "T/1", "C")
    table = at.table("T/1", "S&x")
    schema = at.schema("S&x")
    assert table is not None and schema is not None
    page = parse(render_table(at, schema, table, DataSnapshots(), CHROME))
    [link] = page.find("a", id="table-history")
    assert link.attrs["href"] == "/history?schema=S%26x&table=T/1"
    old = Chrome(version=2, latest=3, earliest=1, pinned=True)
    page = parse(render_table(at, schema, table, DataSnapshots(), old))
    assert page.find("a", id="table-history")[0].attrs["href"].endswith("&before=2")
    rows = [HistoryRow(2, "2026-11-23T01:02:03.004Z", "n", "created table S&x.T/1 (C INT64)")]
    history = parse(render_history(rows, CHROME, older=1, newer=3, table=("S&x", "T/1")))
    assert history.find("a", id="history-table")[0].attrs["href"] == "/tables/S%26x/T%2F1"
    pager = [a.attrs["href"] for a in history.find("a") if "before=" in a.attrs.get("href", "")]
    assert pager == [
        "/history?before=3&schema=S%26x&table=T/1",
        "/history?before=1&schema=S%26x&table=T/1",
    ]
