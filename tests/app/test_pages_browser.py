"""Every page in a real headless Chromium: set-up, status, on-demand audit, durations, errors.
Screenshots go to test-artifacts/ (look at them); the pages fetch nothing and never scroll sideways."""

from __future__ import annotations

import threading


from tests.ondemand_support import SUITE, build_ondemand
from tests.signin_support import SESSION_COOKIE, session_cookie
from tests.simulator.fixtures import github_sim  # noqa: F401
from tests.app.test_dashboard_browser import ARTIFACTS, browser, needs_chromium  # noqa: F401

pytestmark = needs_chromium


def _serve(flask_app):
    from werkzeug.serving import make_server

    httpd = make_server("127.0.0.1", 0, flask_app, threaded=True)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"http://127.0.0.1:{httpd.server_port}"


def _looks_right(browser, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    for width in (1100, 640):  # a laptop and a narrow window
        browser.set_window_size(width, 900)
        overflow = browser.execute_script("return document.documentElement.scrollWidth - document.documentElement.clientWidth")
        assert overflow <= 1, f"{name} scrolls sideways by {overflow}px at {width}px"
        browser.save_screenshot(str(ARTIFACTS / f"page-{name}-{width}.png"))
    assert browser.execute_script("return performance.getEntriesByType('resource').length") == 0


def test_set_up_pages(tmp_path, monkeypatch, browser):
    from selenium.webdriver.common.by import By

    from app import create_app

    monkeypatch.setenv("CI_REGISTRAR_DATA_DIR", str(tmp_path))
    for name in ("GITHUB_APP_ID", "GITHUB_PRIVATE_KEY", "GITHUB_WEBHOOK_SECRET", "DATABASE_URL", "REDIS_URL",
                 "CI_REGISTRAR_PUBLIC_URL", "CI_REGISTRAR_WEBHOOK_PROXY_URL"):
        monkeypatch.delenv(name, raising=False)
    httpd, base = _serve(create_app())
    try:
        browser.get(base + "/")
        assert browser.find_element(By.TAG_NAME, "h1").text == "Set-up needs the setup token"
        assert str(tmp_path) not in browser.page_source  # no server path for anonymous visitors
        _looks_right(browser, "setup-token-needed")
        token = (tmp_path / "setup-token").read_text().strip()
        browser.get(f"{base}/?token={token}")
        assert browser.current_url == base + "/"  # the token left the address bar
        assert browser.find_element(By.TAG_NAME, "h1").text == "Set up CI Registrar"
        assert browser.find_element(By.NAME, "public_url").get_attribute("required") == "true"
        assert "loopback" in browser.page_source
        _looks_right(browser, "onboarding")
        browser.find_element(By.NAME, "public_url").send_keys("not a url")
        browser.find_element(By.CSS_SELECTOR, "input[value=organization]").click()
        browser.find_element(By.NAME, "org").send_keys("radixark")
        # The link again (the history, a screenshot of the log): it worked once.
        browser.get(f"{base}/?token={token}")
        assert browser.find_element(By.TAG_NAME, "h1").text == "This setup link was used already"
        assert str(tmp_path) not in browser.page_source
        _looks_right(browser, "setup-link-used")
        browser.get(base + "/")
        assert browser.find_element(By.TAG_NAME, "h1").text == "Set up CI Registrar"  # this browser goes on
    finally:
        httpd.shutdown()


def test_signed_in_pages(github_sim, tmp_path, monkeypatch, browser):
    from selenium.webdriver.common.by import By

    monkeypatch.setenv("CI_REGISTRAR_HTTP_BACKOFF_S", "0.01")
    od = build_ondemand(github_sim, tmp_path)
    od.world.deliver(od.sim.webhook("installation", "created", app=od.world.app, installation=od.world.installation))
    od.world.deliver(od.sim.webhook("pull_request", "opened", app=od.world.app, repo=od.repo, pull=od.pr, sender="bob"))
    od.world.drain()
    od.comment(f"/run-rocm {SUITE}", author="bob")
    od.comment("/approve-rocm", author="maint")
    httpd, base = _serve(od.world.flask)
    try:
        browser.get(base + "/")
        assert "/login" in browser.current_url or "Sign-in" in browser.page_source  # nobody signed in yet
        cookie = session_cookie(od.world.flask, "maint", ["radixark/miles"], [od.world.installation.id])
        browser.add_cookie({"name": SESSION_COOKIE, "value": cookie, "path": "/"})
        browser.get(base + "/")
        assert browser.find_element(By.TAG_NAME, "h1").text == "CI Registrar"
        assert "radixark/miles" in browser.page_source and "@maint" in browser.page_source
        assert "dispatch" in browser.find_element(By.CSS_SELECTOR, "main").text
        _looks_right(browser, "status")
        browser.find_element(By.LINK_TEXT, "On-demand runs").click()
        assert browser.find_element(By.TAG_NAME, "h1").text == "On-demand runs"
        actions = [td.text for td in browser.find_elements(By.CSS_SELECTOR, "table tr td:nth-child(3)")]
        assert actions[:3] == ["dispatch", "approval", "command"]
        _looks_right(browser, "audit")
        browser.find_element(By.LINK_TEXT, "Durations").click()
        assert browser.find_element(By.TAG_NAME, "h1").text == "Stored durations"
        _looks_right(browser, "durations-empty")
        browser.get(base + "/no/such/page")
        assert "There is no such page" in browser.page_source
        _looks_right(browser, "not-found")
    finally:
        httpd.shutdown()
