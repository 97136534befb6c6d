"""The durations dashboard in a real headless Chromium: the page renders and the plot has every point."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
from datetime import datetime, timedelta, timezone

import pytest

from bot.durations import ingest
from bot.infra.settings import load_settings
from bot.store.measurements import ensure_store
from checks.calibration.estimates import duration_stats
from tests import REPO
from tests.patience import PATIENCE
from tests.signin_support import SESSION_COOKIE, session_cookie, sign_in

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
ARTIFACTS = REPO / "test-artifacts"
REPO = "radixark/miles"
FILE = "tests/e2e/megatron/test_qwen3_4B_ppo.py"
NOW = datetime.now(timezone.utc).replace(microsecond=0)

needs_chromium = pytest.mark.skipif(
    not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)),
    reason="needs Debian's chromium and chromium-driver (/usr/bin/chromium, chromedriver): apt-get install -y chromium chromium-driver",
)


def _seed(url: str) -> int:
    items = []
    for i in range(8):  # 8 passing runs, a timeout and a failure: 10 points on the plot
        items.append({"repository": REPO, "file": FILE, "elapsed_s": 780 + 15 * i, "outcome": "PASS", "run_id": 100 + i,
                      "job_id": 1, "measured_at": (NOW - timedelta(days=9 - i)).isoformat(), "hardware": "MI355X",
                      "suite": "nightly-stage-c-4-gpu-mi350", "est_time": 800})
    items.append({"repository": REPO, "file": FILE, "elapsed_s": 1800, "outcome": "TIMEOUT", "run_id": 100, "job_id": 1,
                  "attempt": 0 + 2, "timeout_after_s": 1800, "measured_at": (NOW - timedelta(days=8, hours=-1)).isoformat(),
                  "hardware": "MI355X", "suite": "nightly-stage-c-4-gpu-mi350", "est_time": 800})
    items.append({"repository": REPO, "file": FILE, "elapsed_s": 300, "outcome": "FAIL", "run_id": 200, "job_id": 1,
                  "measured_at": (NOW - timedelta(hours=3)).isoformat(), "hardware": "MI355X",
                  "suite": "nightly-stage-c-4-gpu-mi350", "est_time": 300})
    # a second test in another suite, calibrated too low
    for i in range(4):
        items.append({"repository": REPO, "file": "tests/e2e/test_offload.py", "elapsed_s": 900 + i, "outcome": "PASS",
                      "run_id": 300 + i, "job_id": 1, "measured_at": (NOW - timedelta(days=i + 1)).isoformat(),
                      "hardware": "MI355X", "suite": "nightly-stage-c-2-gpu-mi350", "est_time": 300})
    result = ingest.ingest_json(url, json.dumps(items))
    assert result.ok and not result.malformed, result
    return 10


@pytest.fixture()
def server(tmp_path, monkeypatch):
    from werkzeug.serving import make_server

    from app import create_app

    monkeypatch.setenv("CI_REGISTRAR_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("DATABASE_URL", raising=False)
    settings = load_settings()
    ensure_store(settings.database_url)
    points = _seed(settings.database_url)
    from bot.store.db import upgrade

    upgrade(settings.database_url)
    app = create_app(settings)
    httpd = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    # Signed in as someone who sees radixark/miles (the sign-in flow itself: tests/bot/web/test_signin.py).
    cookie = session_cookie(app, "maint", [REPO])
    yield f"http://127.0.0.1:{httpd.server_port}", points, cookie
    httpd.shutdown()
    thread.join(PATIENCE)


@pytest.fixture()
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="cireg-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                f"--user-data-dir={profile}", "--window-size=1100,1000"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


@needs_chromium
def test_dashboard_table_and_plot_in_chromium(server, browser):
    from selenium.webdriver.common.by import By

    base, points, cookie = server
    ARTIFACTS.mkdir(exist_ok=True)

    browser.get(base + "/healthz")
    browser.add_cookie({"name": SESSION_COOKIE, "value": cookie, "path": "/"})
    browser.get(base + "/durations")
    assert browser.title.startswith("Stored durations")
    suites = [t.get_attribute("data-suite") for t in browser.find_elements(By.CSS_SELECTOR, "table.suite")]
    assert suites == ["nightly-stage-c-2-gpu-mi350", "nightly-stage-c-4-gpu-mi350"]
    rows = browser.find_elements(By.CSS_SELECTOR, "table.suite tbody tr")
    cells = {r.find_element(By.TAG_NAME, "a").text: [c.text for c in r.find_elements(By.TAG_NAME, "td")] for r in rows}
    # est_time is the latest the runner logged (300); the window's 8 passing runs give n, median, p90, max
    expected = duration_stats([780 + 15 * i for i in range(8)])
    assert cells[FILE][3:8] == ["300", "8", f"{expected.median:.0f}", f"{expected.p90:.0f}", "885"]
    assert cells[FILE][8].startswith("exceeds-timeout") is False and "under-estimated" in cells[FILE][8]
    assert "under-estimated (suggest 1040)" == cells["tests/e2e/test_offload.py"][8]
    browser.save_screenshot(str(ARTIFACTS / "durations-index.png"))

    browser.find_element(By.LINK_TEXT, FILE).click()
    assert browser.find_element(By.TAG_NAME, "h1").text == FILE
    svg = browser.find_element(By.ID, "durations-plot")
    assert svg.size["width"] > 500 and svg.size["height"] > 200
    circles = svg.find_elements(By.CSS_SELECTOR, "circle.point")
    assert len(circles) == points
    outcomes = sorted(c.get_attribute("data-outcome") for c in circles)
    assert outcomes == ["FAIL"] + ["PASS"] * 8 + ["TIMEOUT"]
    assert len(svg.find_elements(By.CSS_SELECTOR, "polyline.est-time")) == 1
    assert len(svg.find_elements(By.CSS_SELECTOR, "polyline.timeout")) == 1
    # every point lies inside the plot area, newest to the right
    xs = sorted(float(c.get_attribute("cx")) for c in circles)
    assert 56 <= xs[0] < xs[-1] <= 760 - 44
    # nothing was fetched but the page itself
    entries = browser.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    assert entries == []
    browser.save_screenshot(str(ARTIFACTS / "durations-test-plot.png"))
    assert (ARTIFACTS / "durations-test-plot.png").stat().st_size > 5000


def test_unknown_test_is_404(server):
    import urllib.error
    import urllib.request

    base, _, cookie = server
    for path in ("/durations/a/b/tests/none.py", f"/durations/{REPO}/tests/none.py"):  # unseen, then unknown
        request = urllib.request.Request(base + path, headers={"Cookie": f"{SESSION_COOKIE}={cookie}"})
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(request)
        assert info.value.code == 404


def test_names_from_logs_are_escaped_and_no_external_assets(tmp_path):
    from app import create_app

    url = f"sqlite:///{tmp_path / 'x.db'}"
    ensure_store(url)
    evil = "tests/e2e/test_<script>alert(1)</script>.py"
    log = ("2026-11-20T10:00:00.0000000Z [1/1] " + evil + "  PASS  elapsed=5s\n"
           "2026-11-21T10:00:00.0000000Z [1/1] " + evil + "  FAIL  elapsed=7s retry_of=attempt=1\n")
    ingest.ingest_job_log(url, log, repository="o/r", suite="s<b>", runner_labels=["mi350"])
    settings = load_settings({"CI_REGISTRAR_DATA_DIR": str(tmp_path), "DATABASE_URL": url})
    from bot.store.db import upgrade

    upgrade(url)
    app = create_app(settings)
    client = app.test_client()
    sign_in(client, app, "maint", ["o/r"])
    index = client.get("/durations?window=ignored").get_data(as_text=True)
    assert "<script>" not in index and "&lt;script&gt;" in index and "s&lt;b&gt;" in index
    assert "http://" not in index and "https://" not in index and "<script" not in index
    page = client.get("/durations/o/r/" + evil.replace("<", "%3C").replace(">", "%3E"))
    assert page.status_code == 200
    html = page.get_data(as_text=True)
    assert "<script>" not in html and html.count("<circle class=point") == 2
    assert "https://" not in html and "src=" not in html
