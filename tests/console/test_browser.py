"""The console in a real browser: a ``serve`` process over a durable catalog
with table data, and headless Chromium reading its pages."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pyarrow as pa
import pytest
from selenium import webdriver
from selenium.common.exceptions import (
    NoAlertPresentException,
    NoSuchElementException,
    StaleElementReferenceException,
)
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

import almanac
from almanac.data import write_table
from tests.waiting import wait_for

from .support import BROWSER_TZ, WAIT_S, chromium, running_server, screenshot

XSS_TABLE = "<script>window.__xss = 1</script>"
XSS_IMG = '<img src=x onerror="window.__xss = 2">'


@dataclass(frozen=True)
class Site:
    url: str
    cat: almanac.Catalog
    before_sales: int
    """The version just before schema SALES was created."""
    altered: int
    """The version that added column NOTE to ORDERS."""
    written: tuple[int, int]
    """The versions of the two appends to ORDERS."""
    shots: Path


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    root = tmp_path_factory.mktemp("console")
    with almanac.connect(root / "catalog") as cat:
        cat.sql(
            "CREATE TABLE ORDERS (ID INT64 PRIMARY KEY, CUSTOMER VARCHAR(100) NOT NULL, "
            "TOTAL DECIMAL(12, 2) DEFAULT 0)"
        )
        cat.sql("CREATE INDEX ORDERS_BY_CUSTOMER ON ORDERS (CUSTOMER)")
        before_sales = cat.latest_version
        cat.sql("CREATE SCHEMA SALES; CREATE TABLE SALES.REGIONS (CODE VARCHAR(8) PRIMARY KEY)")
        cat.sql(f'CREATE TABLE "{XSS_TABLE}" (ID INT64 PRIMARY KEY)')
        quoted = XSS_IMG.replace('"', '""')
        cat.sql(f'CREATE TABLE "{quoted}" (ID INT64 PRIMARY KEY)')
        cat.sql("ALTER TABLE ORDERS ADD COLUMN NOTE VARCHAR(200)")
        altered = cat.latest_version
        rows = {"ID": [1, 2, 3], "CUSTOMER": ["ada", "bob", "cy"]}
        first = write_table(cat, "ORDERS", pa.table(rows)).catalog_version
        second = write_table(cat, "ORDERS", pa.table({"ID": [4, 5], "CUSTOMER": ["di", "ed"]}))
        written = (first, second.catalog_version)
        shots = tmp_path_factory.mktemp("shots")
        with running_server(root / "catalog") as url:
            yield Site(url, cat, before_sales, altered, written, shots)


@pytest.fixture(scope="module")
def browser() -> Iterator[webdriver.Chrome]:
    with chromium() as driver:
        yield driver


def _wait(driver: webdriver.Chrome) -> WebDriverWait[webdriver.Chrome]:
    return WebDriverWait(driver, WAIT_S)


def _cells(driver: webdriver.Chrome, table_id: str, column: int) -> list[str]:
    return [
        td.text
        for td in driver.find_elements(
            By.CSS_SELECTOR, f"#{table_id} tbody tr td:nth-child({column})"
        )
    ]


def test_tree_to_table_to_history_to_diff(site: Site, browser: webdriver.Chrome) -> None:
    browser.get(site.url + "/")
    schemas = [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".schema .name")]
    assert schemas == ["PUBLIC", "SALES"]
    screenshot(browser, site.shots, "tree")

    browser.find_element(By.LINK_TEXT, "ORDERS").click()
    _wait(browser).until(ec.text_to_be_present_in_element((By.ID, "table-name"), "ORDERS"))
    assert _cells(browser, "columns", 2) == ["ID", "CUSTOMER", "TOTAL", "NOTE"]
    assert _cells(browser, "columns", 3) == [
        "INT64",
        "STRING(100)",
        "DECIMAL(12, 2)",
        "STRING(200)",
    ]
    assert _cells(browser, "columns", 5) == ["", "", "0", ""]
    assert "ORDERS_BY_CUSTOMER" in _cells(browser, "indexes", 1)
    assert browser.find_element(By.CSS_SELECTOR, "#zone dd").text == "Default"
    # Two appends: the second snapshot holds every file, 5 rows in all.
    assert _cells(browser, "snapshots", 4) == ["append", "append"]
    assert _cells(browser, "snapshots", 6) == ["3", "5"]
    assert browser.find_elements(By.ID, "data-later") == []
    files = [int(n) for n in _cells(browser, "snapshots", 5)]
    sizes = [int(n.replace(",", "")) for n in _cells(browser, "snapshots", 7)]
    assert files[0] >= 1 and files[1] > files[0] and sizes[1] > sizes[0] > 0
    screenshot(browser, site.shots, "table")

    browser.find_element(By.ID, "table-history").click()
    _wait(browser).until(ec.presence_of_element_located((By.ID, "history-table")))
    own = [
        int(li.get_attribute("data-version") or "0")
        for li in browser.find_elements(By.CSS_SELECTOR, "#timeline li")
    ]
    # Created, indexed, a column added, and its two data commits.
    assert own == [*site.written[::-1], site.altered, site.before_sales, site.before_sales - 1]
    summaries = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#timeline .summary")]
    assert summaries[1].startswith("append 3 rows to PUBLIC.ORDERS (")
    assert summaries[2] == "added column NOTE STRING(200) to PUBLIC.ORDERS"
    screenshot(browser, site.shots, "history-of-orders")

    browser.find_element(By.LINK_TEXT, "History").click()
    _wait(browser).until(ec.presence_of_element_located((By.ID, "timeline")))
    versions = [
        int(li.get_attribute("data-version") or "0")
        for li in browser.find_elements(By.CSS_SELECTOR, "#timeline li")
    ]
    assert versions == list(range(site.cat.latest_version, 0, -1))  # newest first, all kept
    altered = browser.find_element(By.CSS_SELECTOR, f'#timeline li[data-version="{site.altered}"]')
    assert "ORDERS" in altered.find_element(By.CLASS_NAME, "summary").text
    screenshot(browser, site.shots, "history")

    altered.find_element(By.CLASS_NAME, "diff-link").click()
    _wait(browser).until(ec.presence_of_element_located((By.ID, "diff")))
    rows = browser.find_elements(By.CSS_SELECTOR, "#diff tbody tr")
    added = [
        r.find_element(By.CLASS_NAME, "name").text
        for r in rows
        if r.get_attribute("class") == "added"
    ]
    assert "PUBLIC.ORDERS.NOTE" in added
    screenshot(browser, site.shots, "diff")


def test_version_picker_shows_an_old_version(site: Site, browser: webdriver.Chrome) -> None:
    browser.get(site.url + "/")
    field = browser.find_element(By.ID, "version")
    field.clear()
    field.send_keys(str(site.before_sales))
    browser.find_element(By.CSS_SELECTOR, ".picker button").click()
    _wait(browser).until(ec.url_contains(f"version={site.before_sales}"))
    schemas = [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".schema .name")]
    assert schemas == ["PUBLIC"]
    assert f"Showing version {site.before_sales}" in browser.find_element(By.ID, "status").text
    # Links from a pinned page keep the version.
    browser.find_element(By.LINK_TEXT, "ORDERS").click()
    _wait(browser).until(ec.presence_of_element_located((By.ID, "columns")))
    assert _cells(browser, "columns", 2) == ["ID", "CUSTOMER", "TOTAL"]
    # Both snapshots were written against a later catalog version.
    assert browser.find_element(By.ID, "data-missing").text == (
        f"No data at catalog version {site.before_sales}."
    )
    assert browser.find_element(By.ID, "data-later").text.startswith("2 later snapshots")
    screenshot(browser, site.shots, "table-old-version")


def test_a_latest_page_updates_itself(site: Site, browser: webdriver.Chrome) -> None:
    browser.get(site.url + "/")
    browser.execute_script("window.__same_page = true")
    site.cat.sql("CREATE TABLE LIVE_ONE (ID INT64 PRIMARY KEY)")
    _wait(browser).until(ec.presence_of_element_located((By.LINK_TEXT, "LIVE_ONE")))
    assert browser.execute_script("return window.__same_page") is True, "the page reloaded"
    assert f"latest {site.cat.latest_version}" in browser.find_element(By.ID, "status").text


def test_a_table_page_and_the_history_show_a_data_commit_as_it_lands(
    site: Site, browser: webdriver.Chrome
) -> None:
    # The page swaps its content in as the version lands: a cell read then is stale.
    patient = WebDriverWait(
        browser, WAIT_S, ignored_exceptions=(StaleElementReferenceException, NoSuchElementException)
    )
    browser.get(site.url + "/tables/PUBLIC/ORDERS")
    browser.execute_script("window.__same_page = true")
    landed = write_table(site.cat, "ORDERS", pa.table({"ID": [6], "CUSTOMER": ["fi"]}))
    patient.until(lambda d: _cells(d, "snapshots", 2)[-1:] == [str(landed.catalog_version)])
    assert browser.execute_script("return window.__same_page") is True, "the page reloaded"
    assert patient.until(lambda d: _cells(d, "snapshots", 6))[-1] == "6"

    browser.get(site.url + "/history")
    browser.execute_script("window.__same_page = true")
    again = write_table(site.cat, "ORDERS", pa.table({"ID": [7], "CUSTOMER": ["gu"]}))
    row = f'#timeline li[data-version="{again.catalog_version}"] .summary'
    words = patient.until(lambda d: d.find_element(By.CSS_SELECTOR, row).text)
    assert browser.execute_script("return window.__same_page") is True, "the page reloaded"
    assert words == "append 1 row to PUBLIC.ORDERS (1 file)"


def test_a_pinned_page_offers_the_new_version(site: Site, browser: webdriver.Chrome) -> None:
    browser.get(f"{site.url}/?version={site.before_sales}")
    site.cat.sql("CREATE TABLE LIVE_TWO (ID INT64 PRIMARY KEY)")
    new = site.cat.latest_version
    _wait(browser).until(ec.visibility_of_element_located((By.ID, "live")))
    _wait(browser).until(
        ec.text_to_be_present_in_element((By.ID, "live-text"), f"Version {new} is available")
    )
    assert browser.find_elements(By.LINK_TEXT, "LIVE_TWO") == []
    # The footer and the bar agree on the latest version; the page says it is old.
    assert browser.find_element(By.ID, "latest-version").text == str(new)
    banner = browser.find_element(By.ID, "old-version").text
    assert "an old version" in banner and f"the latest is {new}." in banner
    screenshot(browser, site.shots, "tree-pinned-live-bar")
    browser.find_element(By.ID, "live-link").click()
    _wait(browser).until(ec.presence_of_element_located((By.LINK_TEXT, "LIVE_TWO")))


def test_hostile_names_are_shown_as_text(site: Site, browser: webdriver.Chrome) -> None:
    browser.get(site.url + "/")
    links = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "a.table-link")]
    assert XSS_TABLE in links and XSS_IMG in links
    browser.find_element(By.LINK_TEXT, XSS_TABLE).click()
    _wait(browser).until(ec.text_to_be_present_in_element((By.ID, "table-name"), "<script>"))
    assert browser.find_element(By.ID, "table-name").text == XSS_TABLE
    browser.get(site.url + "/")
    browser.find_element(By.LINK_TEXT, XSS_IMG).click()
    _wait(browser).until(ec.text_to_be_present_in_element((By.ID, "table-name"), "<img"))
    assert browser.execute_script("return window.__xss === undefined") is True
    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert.text  # noqa: B018
    screenshot(browser, site.shots, "table-hostile-name")


def test_failures_are_pages_with_their_status(site: Site, browser: webdriver.Chrome) -> None:
    cases = {
        "/tables/PUBLIC/NO_SUCH_TABLE": (404, "Table PUBLIC.NO_SUCH_TABLE does not exist"),
        "/?version=99999": (404, "Catalog version 99999 does not exist"),
        "/?version=abc": (400, "Query parameter 'version' must be a version number"),
        "/history?before=-1": (400, "Query parameter 'before' must be a version number"),
        "/tables/PUBLIC": (404, "A table page is /tables/<schema>/<table>"),
    }
    with httpx.Client(base_url=site.url) as client:
        for path, (status, message) in cases.items():
            response = client.get(path)
            assert response.status_code == status, path
            assert response.headers["content-type"].startswith("text/html"), path
            assert (
                message.replace("'", "&#39;").replace("<", "&lt;").replace(">", "&gt;")
                in response.text
            )
    browser.get(site.url + "/tables/PUBLIC/NO_SUCH_TABLE")
    assert "404" in browser.find_element(By.CSS_SELECTOR, "#error h1").text
    screenshot(browser, site.shots, "error-404")


def test_leaving_a_page_ends_its_event_stream(site: Site, browser: webdriver.Chrome) -> None:
    """A stream the browser kept for a page left behind would hold one of its
    few connections to the server: six such pages and the next one hangs."""
    with httpx.Client(base_url=site.url) as client:

        def streams() -> int:
            return int(client.get("/ready").json()["event_streams"])

        browser.get(site.url + "/history")
        wait_for(lambda: streams() == 1, "the page's event stream to open")
        browser.get(site.url + "/health")
        # Chrome itself drops a left page's stream after 60 s; the page's own
        # pagehide handler ends it at once (measured: under a second idle).
        wait_for(lambda: streams() == 0, "the left page's event stream to end")


WIDTHS = (1400, 400)
"""A desktop window and a phone's."""


def test_every_page_fits_a_wide_and_a_narrow_window(site: Site, browser: webdriver.Chrome) -> None:
    """Screenshots of each page at both widths (kept in ``site.shots``), and
    at 400 px nothing wider than the window: no sideways scrolling."""
    latest = site.cat.latest_version
    pages = {
        "tree": ("/", "content"),
        "tree-old": (f"/?version={site.before_sales}", "old-version"),
        "table": ("/tables/PUBLIC/ORDERS", "columns"),
        "history": ("/history", "timeline"),
        "history-of-table": ("/history?schema=PUBLIC&table=ORDERS", "history-table"),
        "diff-one": (f"/diff?from={site.altered - 1}&to={site.altered}", "diff"),
        "diff-all": (f"/diff?from=1&to={latest}", "diff"),
        "error": ("/tables/PUBLIC/NO_SUCH_TABLE", "error"),
    }
    try:
        for width in WIDTHS:
            for name, (path, marker) in pages.items():
                browser.set_window_size(width, 900)
                browser.get(site.url + path)
                _wait(browser).until(ec.presence_of_element_located((By.ID, marker)))
                inner, scroll = browser.execute_script(
                    "return [window.innerWidth, document.documentElement.scrollWidth]"
                )
                assert inner <= width
                assert scroll <= inner, f"{name} at {width} px is {scroll} px wide"
                screenshot(browser, site.shots, f"{name}-{width}", width=width)
    finally:
        browser.set_window_size(1280, 900)


def test_times_show_utc_and_the_readers_local_time(site: Site, browser: webdriver.Chrome) -> None:
    browser.get(site.url + "/history")
    _wait(browser).until(ec.presence_of_element_located((By.CSS_SELECTOR, ".when .local")))
    first = browser.find_element(By.CSS_SELECTOR, "#timeline .when")
    utc = first.find_element(By.TAG_NAME, "time")
    assert utc.text.endswith(" UTC")
    instant = utc.get_attribute("datetime")
    assert instant is not None and instant.endswith("Z")
    local = first.find_element(By.CLASS_NAME, "local").text
    # The browser runs in BROWSER_TZ, five and a half hours ahead of UTC.
    assert "GMT+5:30" in local, (BROWSER_TZ, local)


def test_the_api_docs_load_without_the_internet(site: Site, browser: webdriver.Chrome) -> None:
    browser.get(site.url + "/docs")
    _wait(browser).until(
        ec.text_to_be_present_in_element((By.CSS_SELECTOR, ".swagger-ui .info .title"), "Almanac")
    )
    assert browser.find_elements(By.CSS_SELECTOR, ".opblock"), "the operations are listed"
    loaded = browser.execute_script(
        "return performance.getEntriesByType('resource').map(function (e) { return e.name; })"
    )
    assert loaded and all(url.startswith(site.url + "/") for url in loaded), loaded
    screenshot(browser, site.shots, "docs")
    browser.get(site.url + "/redoc")
    _wait(browser).until(ec.presence_of_element_located((By.CSS_SELECTOR, "h1")))
    assert "Almanac" in browser.find_element(By.CSS_SELECTOR, "h1").text
    with httpx.Client(base_url=site.url) as client:
        icon = client.get("/favicon.ico")
        assert icon.status_code == 200 and icon.headers["content-type"] == "image/svg+xml"
        assert icon.text.startswith("<svg")


def test_a_new_catalog_starts_at_version_1(tmp_path: Path) -> None:
    """Version 0 is the empty catalog before ``init``: no page offers it."""
    almanac.connect(tmp_path / "catalog").close()
    with running_server(tmp_path / "catalog") as url, httpx.Client(base_url=url) as client:
        tree = client.get("/").text
        assert "versions 1 to" in tree and 'min="1"' in tree and 'min="0"' not in tree
        diff = client.get("/diff")
        assert diff.status_code == 200
        assert 'name="from" type="number" min="1" max="1" value="1"' in diff.text
        assert "No differences between version 1 and version 1." in diff.text
