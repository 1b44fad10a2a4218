"""The console behind tokens: the login form, its cookie, logging out, and
what a truncated version looks like, in a real browser against ``serve``."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from fastapi.routing import APIRoute
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

import almanac
from almanac.console.routes import router
from tests.waiting import wait_for

from .support import WAIT_S, chromium, running_server, screenshot

READ_TOKEN = "read-8c1f0e2a"
ADMIN_TOKEN = "admin-5b7d91c4"


@dataclass(frozen=True)
class Site:
    url: str
    cat: almanac.Catalog
    shots: Path


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    root = tmp_path_factory.mktemp("console-auth")
    tokens = root / "tokens"
    tokens.write_text(f"read {READ_TOKEN}\nadmin {ADMIN_TOKEN}\n", encoding="utf-8")
    with almanac.connect(root / "catalog") as cat:
        cat.sql("CREATE TABLE SECRET_PLANS (ID INT64 PRIMARY KEY)")
        with running_server(root / "catalog", tokens_file=tokens) as url:
            yield Site(url, cat, tmp_path_factory.mktemp("shots"))


@pytest.fixture(scope="module")
def browser() -> Iterator[webdriver.Chrome]:
    with chromium() as driver:
        yield driver


def _wait(driver: webdriver.Chrome) -> WebDriverWait[webdriver.Chrome]:
    return WebDriverWait(driver, WAIT_S)


def _log_in(driver: webdriver.Chrome, token: str) -> None:
    field = driver.find_element(By.ID, "token")
    field.clear()
    field.send_keys(token)
    driver.find_element(By.CSS_SELECTOR, "form.login button").click()
    # Wait for the form's reply: a navigation started before it lands would
    # cancel the POST, and with it the login.
    WebDriverWait(driver, WAIT_S).until(
        lambda d: (
            d.get_cookie("almanac_token") is not None
            or bool(d.find_elements(By.ID, "login-problem"))
        )
    )


def test_pages_need_a_login_that_sets_a_strict_cookie(
    site: Site, browser: webdriver.Chrome
) -> None:
    browser.get(site.url + "/history")
    _wait(browser).until(ec.url_contains("/login"))
    assert "SECRET_PLANS" not in browser.page_source
    screenshot(browser, site.shots, "login")

    _log_in(browser, "not-a-token")
    _wait(browser).until(ec.visibility_of_element_located((By.ID, "login-problem")))
    assert browser.get_cookie("almanac_token") is None

    _log_in(browser, READ_TOKEN)
    _wait(browser).until(ec.presence_of_element_located((By.ID, "timeline")))
    assert browser.current_url == site.url + "/history"  # back where the reader was going
    cookie = browser.get_cookie("almanac_token")
    assert cookie is not None
    assert cookie["value"] == READ_TOKEN
    assert cookie["httpOnly"] is True
    assert cookie["sameSite"] == "Strict"
    assert cookie["path"] == "/"
    assert browser.execute_script("return document.cookie") == ""  # out of scripts' reach

    # The cookie also opens the API's event stream: live updates work behind a login.
    browser.get(site.url + "/")
    site.cat.sql("CREATE TABLE AFTER_LOGIN (ID INT64 PRIMARY KEY)")
    _wait(browser).until(ec.presence_of_element_located((By.LINK_TEXT, "AFTER_LOGIN")))

    browser.find_element(By.CSS_SELECTOR, "form.logout button").click()
    _wait(browser).until(ec.url_contains("/login"))
    assert browser.get_cookie("almanac_token") is None
    browser.get(site.url + "/")
    _wait(browser).until(ec.url_contains("/login"))


def test_the_cookie_opens_no_change(site: Site) -> None:
    """An admin's cookie reads pages but the API takes changes only with a
    bearer header, so another site cannot make a logged-in browser change
    the catalog."""
    with httpx.Client(base_url=site.url) as client:
        assert client.get("/").status_code == 303
        client.cookies.set("almanac_token", ADMIN_TOKEN)
        assert client.get("/").status_code == 200
        refused = client.post("/v1/sql", json={"sql": "CREATE TABLE NOPE (ID INT64 PRIMARY KEY)"})
        assert refused.status_code == 401
        assert site.cat.catalog().table("NOPE") is None


def test_a_login_goes_back_only_to_this_server(site: Site) -> None:
    with httpx.Client(base_url=site.url) as client:
        for next_path, landing in (
            ("/tables/PUBLIC/SECRET_PLANS", "/tables/PUBLIC/SECRET_PLANS"),
            ("https://evil.example/", "/"),
            ("//evil.example/", "/"),
        ):
            answer = client.post("/login", data={"token": READ_TOKEN, "next": next_path})
            assert answer.status_code == 303
            assert answer.headers["location"] == landing
        odd = client.post("/login", data={f"f{i}": "x" for i in range(10)})
        assert odd.status_code == 400
        huge = client.post("/login", data={"token": "x" * 10_000})
        assert huge.status_code == 413
        assert "almanac_token" not in huge.cookies


def test_forms_posted_from_another_site_are_refused(site: Site) -> None:
    """Every console POST (log in, log out) is a 403 when the browser says
    it came from another site, by ``Origin`` or, without one, ``Referer``:
    no login with an attacker's token, no logout; from the console's own
    pages (or from no browser) the form works."""
    posts = sorted(
        route.path
        for route in router(site.cat, tokens=None).routes
        if isinstance(route, APIRoute) and "POST" in (route.methods or ())
    )
    assert posts == ["/login", "/logout"]
    form = {"token": ADMIN_TOKEN, "next": "/"}
    foreign = (
        {"Origin": "https://evil.example"},
        {"Origin": "null"},
        {"Origin": site.url.replace("127.0.0.1", "localhost")},
        {"Origin": site.url + ".evil.example"},
        {"Referer": "https://evil.example/page"},
        {"Origin": "https://evil.example", "Referer": site.url + "/login"},
    )
    with httpx.Client(base_url=site.url) as client:
        for headers in foreign:
            for path in posts:
                client.cookies.set("almanac_token", READ_TOKEN)
                answer = client.post(path, data=form, headers=headers)
                assert answer.status_code == 403, (path, headers, answer.text)
                assert "sent from another site" in answer.text
                assert "set-cookie" not in answer.headers  # neither logged in nor out
        own: tuple[dict[str, str], ...] = (
            {"Origin": site.url},
            {"Referer": site.url + "/login?next=%2F"},
            {},  # no browser: no browser's cookie either
        )
        for headers in own:
            client.cookies.clear()
            answer = client.post("/login", data=form, headers=headers)
            assert answer.status_code == 303, (headers, answer.text)
            assert answer.cookies.get("almanac_token") == ADMIN_TOKEN
            out = client.post("/logout", headers=headers)
            assert out.status_code == 303 and 'almanac_token=""' in out.headers["set-cookie"]


def test_a_truncated_version_is_gone(site: Site, browser: webdriver.Chrome) -> None:
    site.cat.sql("CREATE TABLE LATER (ID INT64 PRIMARY KEY)")
    earliest = site.cat.checkpoint_log()
    assert earliest > 1
    headers = {"Authorization": f"Bearer {READ_TOKEN}"}
    with httpx.Client(base_url=site.url, headers=headers) as client:
        # The server drops the versions once it follows the checkpoint.
        wait_for(lambda: client.get("/?version=1").status_code == 410, "version 1 to be gone")
        answer = client.get("/?version=1")
        assert answer.status_code == 410
        assert "Catalog version 1 is no longer available" in answer.text
    browser.get(site.url + "/login")
    _log_in(browser, READ_TOKEN)
    browser.get(site.url + "/?version=1")
    _wait(browser).until(ec.text_to_be_present_in_element((By.CSS_SELECTOR, "#error h1"), "410"))
    screenshot(browser, site.shots, "error-410")


def test_a_table_page_finds_any_spelling_of_its_name(site: Site) -> None:
    """The console follows the one name rule: ``/tables/public/secret_plans``
    shows the table SQL stored as ``PUBLIC.SECRET_PLANS``."""
    with httpx.Client(base_url=site.url) as client:
        client.cookies.set("almanac_token", READ_TOKEN)
        for path in ("/tables/PUBLIC/SECRET_PLANS", "/tables/public/secret_plans"):
            page = client.get(path)
            assert page.status_code == 200, (path, page.text[:300])
            assert "SECRET_PLANS" in page.text


def test_the_login_page_fits_a_wide_and_a_narrow_window(
    site: Site, browser: webdriver.Chrome
) -> None:
    browser.delete_all_cookies()
    try:
        for width in (1400, 400):
            browser.set_window_size(width, 900)
            browser.get(site.url + "/login")
            _wait(browser).until(ec.presence_of_element_located((By.ID, "token")))
            inner, scroll = browser.execute_script(
                "return [window.innerWidth, document.documentElement.scrollWidth]"
            )
            assert scroll <= inner <= width, f"the login page at {width} px is {scroll} px wide"
            screenshot(browser, site.shots, f"login-{width}", width=width)
    finally:
        browser.set_window_size(1280, 900)
