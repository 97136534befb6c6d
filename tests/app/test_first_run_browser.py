"""The first run as a new user sees it, in a real headless Chromium, and README.md's screenshots of it.

`ci-registrar serve` as `make run` starts it on a laptop (a webhook proxy channel, tests/app/test_first_run.py
`serving`), against the simulated GitHub: the setup link from its log opened, the set-up form, the one
click that posts the manifest to the simulated github.com, the "registered" page, the App installed,
then the status page after "Sign in with GitHub". Each step is a screenshot at one window size.

README.md shows these screenshots in its first-run section, each after a caption quoting the page's
heading. Every run checks that section against what Chromium rendered here (the same images in the same
order, each committed under docs/images/, each caption's quoted heading the page's h1), so a page that
changes fails this test until the README and the images are brought back in step. The images are
written to docs/images/ only when CI_REGISTRAR_UPDATE_SCREENSHOTS=1 (`make screenshots`); otherwise to
test-artifacts/, like the other browser tests', so a normal run never rewrites committed files.
"""

from __future__ import annotations

import os
import re
from urllib.parse import urlsplit

import pytest

from bot.infra.settings import load_settings
from bot.store import service as store
from tests.simulator.fixtures import github_sim  # noqa: F401
from tests.app.test_dashboard_browser import ARTIFACTS, browser, needs_chromium  # noqa: F401
from tests.app.test_first_run import serving
from tests.service_support import ROOT, wait_for

README = ROOT / "README.md"
IMAGES = ROOT / "docs" / "images"
UPDATE = os.environ.get("CI_REGISTRAR_UPDATE_SCREENSHOTS") == "1"
# Skipped without Chromium, except in `make screenshots`: there a skip would pass having taken nothing.
pytestmark = [] if UPDATE else [needs_chromium]
WINDOW = (1100, 800)  # one size for every image, so the README's screenshots line up
USER = "octocat"  # signed in on the simulated github.com; the simulator names a personal App's owner so too
REPO = "octocat/hello-world"

# What a first run with `make run` shows in place of this test's random values: serve's default port,
# a data directory under a home, github.com, the README's channel placeholder. Without them every
# regeneration would change every image; nothing else on a page is altered.
SHOWN_PORT = 3000
SHOWN_DATA_DIR = "/home/you/ci-registrar/data"
SHOWN_CHANNEL = "https://smee.io/<channel>"


class Steps:
    """The screenshots of one walk, in order, with the h1 Chromium rendered on each page."""

    def __init__(self, browser, masks: list[tuple[str, str]]):
        self.browser, self.masks = browser, masks
        self.taken: list[tuple[str, str]] = []  # (file name, heading)
        self.out = IMAGES if UPDATE else ARTIFACTS

    def heading(self) -> str:
        from selenium.webdriver.common.by import By

        return self.browser.find_element(By.TAG_NAME, "h1").text

    def shoot(self, step: str) -> str:
        heading = self.heading()  # read before masking: the caption must match the real page
        # Masked in the page itself (text and input values), each value whole (a port is not a prefix of
        # another), and put back after the screenshot: the form must still post the real public URL.
        self.browser.execute_script("""
            const masks = arguments[0].map(([from, to]) => [new RegExp(from + "(?![0-9A-Za-z])", "g"), to]);
            const mask = (text) => masks.reduce((t, [re, to]) => t.replace(re, to), text);
            const kept = [];
            const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
            for (let node; (node = walker.nextNode());) {
              kept.push([node, "nodeValue", node.nodeValue]);
              node.nodeValue = mask(node.nodeValue);
            }
            for (const input of document.querySelectorAll("input")) {
              kept.push([input, "value", input.value]);
              input.value = mask(input.value);
            }
            window.__unmask = () => { for (const [node, key, value] of kept) node[key] = value; };
        """, [[re.escape(a), b] for a, b in self.masks])
        name = f"first-run-{len(self.taken) + 1}-{step}.png"
        self.out.mkdir(parents=True, exist_ok=True)
        assert self.browser.save_screenshot(str(self.out / name)), name
        self.browser.execute_script("window.__unmask()")
        self.taken.append((name, heading))
        return heading


def _readme_steps() -> list[tuple[int, str, str]]:
    """(number, heading quoted in the caption, image path) of each step in README.md's first-run section.

    A step is a numbered line, the caption, whose first "quoted" text is the page's heading, then a
    blank line and the indented image: `1. "Set up CI Registrar": ...` / `   ![...](docs/images/first-run-1-set-up.png)`."""
    text = README.read_text()
    start = text.index("**First run.**")
    section = text[start:text.index("\n**", start + 1)]
    steps = [(int(n), heading, path) for n, heading, path in re.findall(
        r'^(\d+)\. "([^"]+)".*\n\n {3}!\[[^\]\n]*\]\((docs/images/first-run-[^)\s]+\.png)\)$', section, re.M)]
    # An image the pattern missed (a malformed caption, one outside the section) would escape the check.
    assert len(steps) == len(re.findall(r"first-run-[^)\s]*\.png", text)), \
        "every first-run-*.png in README.md is one step of its first-run section, under a caption quoting its heading"
    return steps


def _readme_matches(taken: list[tuple[str, str]]) -> None:
    regenerate = "; run `make screenshots`, edit README.md's first-run captions to the pages' headings, commit both"
    steps = _readme_steps()
    assert [n for n, _, _ in steps] == list(range(1, len(steps) + 1)), steps
    assert [p for _, _, p in steps] == [f"docs/images/{name}" for name, _ in taken], \
        f"README.md's first-run screenshots are not the ones the browser took{regenerate}"
    assert [h for _, h, _ in steps] == [h for _, h in taken], f"a caption no longer quotes its page's heading{regenerate}"
    missing = [p for _, _, p in steps if not (ROOT / p).is_file()]
    assert not missing, f"README.md shows images that are not committed: {missing}{regenerate}"
    committed = sorted(p.name for p in IMAGES.glob("first-run-*.png"))
    assert committed == sorted(name for name, _ in taken), f"docs/images/ holds other first-run images{regenerate}"


@pytest.fixture()
def served(github_sim, tmp_path):
    # A fixture requested before `browser`, so Chromium quits first and gunicorn stops without its
    # kept-alive connections to linger on (two seconds of every run otherwise).
    with serving(github_sim, tmp_path) as running:
        yield running


def test_first_run_in_chromium_matches_the_readme(github_sim, tmp_path, served, browser):
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    sim = github_sim
    sim.web_user = USER  # the new user is signed in on github.com, as anyone who registers an App is
    # WINDOW is the page's viewport, so the images' size: headless Chromium keeps some window height
    # for a browser frame it does not draw.
    browser.set_window_size(*WINDOW)
    frame = browser.execute_script(
        "return [window.outerWidth - window.innerWidth, window.outerHeight - window.innerHeight]")
    browser.set_window_size(WINDOW[0] + frame[0], WINDOW[1] + frame[1])
    steps = Steps(browser, [(str(tmp_path / "data"), SHOWN_DATA_DIR), (served.channel.url, SHOWN_CHANNEL),
                            (served.base, f"http://127.0.0.1:{SHOWN_PORT}"), (sim.url, "https://api.github.com"),
                            (sim.web_url, "https://github.com")])
    token = served.link.split("token=", 1)[1]

    def shows_no_secret():
        page = browser.page_source
        assert token not in page and token not in browser.current_url
        for cookie in browser.get_cookies():
            assert cookie["value"] not in page, cookie["name"]

    def arrived(path):
        # Waits for the page, never for its heading: the headings are README.md's to state (checked below),
        # so a page whose heading changes fails there, naming what to regenerate.
        def loaded(b):
            return (urlsplit(b.current_url).path == path
                and b.execute_script("return document.readyState") == "complete")
        try:
            WebDriverWait(browser, 30).until(loaded)
        except TimeoutException:
            raise AssertionError(f"not at {path} but {browser.current_url}\n{served.log()[-3000:]}") from None

    # 1. The link from serve's log: the token becomes a cookie and leaves the address bar at once.
    browser.get(served.link)
    arrived("/")
    assert browser.current_url == served.base + "/"
    # With the proxy channel the public URL is filled in and the owner defaults to the user: one click.
    assert browser.find_element(By.NAME, "public_url").get_attribute("value") == served.base
    assert browser.find_element(By.CSS_SELECTOR, "input[value=personal]").is_selected()
    # App names are unique across GitHub: the user names theirs (left empty: a random suffix).
    browser.find_element(By.NAME, "name").send_keys(f"CI Registrar ({USER})")
    shows_no_secret()
    steps.shoot("set-up")

    # 2. The click: our page posts the manifest to github.com by itself, and github.com sends the
    # browser back with a code. Real GitHub first shows its own page (the App's name, "Create GitHub
    # App"); the simulator redirects at once, so there is no page of GitHub's to show here.
    browser.find_element(By.CSS_SELECTOR, "form[action='/onboarding/start'] button[type=submit]").click()
    arrived("/onboarding/callback")
    [app] = sim.apps.values()
    assert browser.current_url.startswith(served.base + "/onboarding/callback?")
    assert f"(id {app.id})" in browser.find_element(By.TAG_NAME, "main").text
    install = browser.find_element(By.LINK_TEXT, "Install it on repositories").get_attribute("href")
    assert install == f"{sim.web_url}/apps/{app.slug}/installations/new"
    shows_no_secret()
    steps.shoot("registered")

    # 3. The user installs the App (GitHub's own page; the simulator models its effect, the
    # installation and its webhook through the channel), then follows "Status page": "Sign in with
    # GitHub" goes round github.com and back (real GitHub asks to authorize the App the first time).
    installation = sim.install(app, sim.create_repo(REPO))
    d = sim.webhook("installation", "created", app=app, installation=installation)
    served.channel.publish(d.headers, d.body, raw=True)
    database = load_settings({"CI_REGISTRAR_DATA_DIR": str(tmp_path / "data")}).database_url
    assert wait_for(lambda: any(i.id == installation.id for i, _ in store.installations(database))), \
        served.log()[-3000:]
    browser.find_element(By.LINK_TEXT, "Status page").click()
    arrived("/")
    assert browser.current_url == served.base + "/"
    main = browser.find_element(By.TAG_NAME, "main").text
    assert REPO in main and "active" in main and f"@{USER}" in browser.page_source
    shows_no_secret()
    steps.shoot("status")

    taken = steps.taken
    assert all(heading for _, heading in taken), taken  # every page has an h1 to quote
    for name, _ in taken:
        png = (steps.out / name).read_bytes()
        assert (int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")) == WINDOW, name  # IHDR
        assert 5_000 < len(png) < 300_000, (name, len(png))  # a rendered page, and small enough to commit
    if UPDATE:  # a step taken out leaves no image behind
        for old in set(IMAGES.glob("first-run-*.png")) - {IMAGES / name for name, _ in taken}:
            old.unlink()
    _readme_matches(taken)
