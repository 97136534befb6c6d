"""From a clean start to a checked pull request, as a new user goes: `ci-registrar serve` with a
webhook proxy channel, the setup link from its log, one click through onboarding on the simulated
github.com, the App installed, a pull request opened: its check run arrives through the channel."""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from html import unescape
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import requests

from bot.worker.handlers.pull_requests import CHECK_NAME
from tests.simulator.fixtures import github_sim  # noqa: F401
from tests.service_support import ROOT, free_port, wait_for
from tests.bot.web.test_webhook_proxy import Channel
from tests import processes
from tests.patience import PATIENCE


@dataclass
class Serving:
    """A `ci-registrar serve` as a new user starts it: its port, the setup link it printed, its log."""
    port: int
    link: str
    log_path: Path
    channel: Channel

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log(self) -> str:
        return self.log_path.read_text()


@contextlib.contextmanager
def serving(sim, tmp_path):
    """`ci-registrar serve` (gunicorn and a worker, as `make run`) on a fresh data directory, against
    the simulator, with a webhook proxy channel as on a laptop; stopped (process group) on the way out.
    Shared with tests/app/test_first_run_browser.py, which walks the same first run in Chromium."""
    channel = Channel()
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "CI_REGISTRAR_", "REDIS_", "DATABASE_"))}
    env.update(CI_REGISTRAR_DATA_DIR=str(tmp_path / "data"), GITHUB_API_URL=sim.url, GITHUB_WEB_URL=sim.web_url,
               CI_REGISTRAR_WEBHOOK_PROXY_URL=channel.url, PORT=str(port), PYTHONPATH=str(ROOT))
    log_path = tmp_path / "serve.log"
    log = open(log_path, "wb")
    proc = processes.start([sys.executable, "-m", "bot.cli", "serve", "--threads", "2"], cwd=ROOT, env=env,
                           stdout=log, stderr=subprocess.STDOUT)
    try:
        link = wait_for(lambda: re.search(r"http://127\.0\.0\.1:\d+/\?token=\S+", log_path.read_text()))
        assert link, log_path.read_text()
        yield Serving(port, link.group(0), log_path, channel)
    finally:
        processes.stop(proc)
        log.close()
        channel.close()


def test_make_run_then_one_click_gives_a_working_app(github_sim, tmp_path):
    sim = github_sim
    with serving(sim, tmp_path) as served:
        port, channel, log_path = served.port, served.channel, served.log_path
        browser = requests.Session()
        assert browser.get(served.link, timeout=PATIENCE).status_code == 200  # the token becomes a cookie
        page = browser.get(f"http://127.0.0.1:{port}/", timeout=PATIENCE).text
        csrf = re.search(r'name="csrf" value="([^"]+)"', page).group(1)
        public_url = re.search(r'name="public_url" value="([^"]*)"', page).group(1)
        assert public_url == f"http://127.0.0.1:{port}"  # filled in: nothing to type
        # The one click: start, the browser posts the manifest to github.com and comes back.
        started = browser.post(f"http://127.0.0.1:{port}/onboarding/start", timeout=PATIENCE,
                               data={"csrf": csrf, "public_url": public_url, "owner": "personal", "org": ""}).text
        action = unescape(re.search(r'<form action="([^"]+)"', started).group(1))
        manifest = unescape(re.search(r'name="manifest" value="([^"]+)"', started).group(1))
        assert json.loads(manifest)["hook_attributes"]["url"] == channel.url
        back = requests.post(action, data={"manifest": manifest}, allow_redirects=False, timeout=PATIENCE)
        callback = urlsplit(back.headers["Location"])
        done = browser.get(f"http://127.0.0.1:{port}{callback.path}?{callback.query}", timeout=PATIENCE)
        assert done.status_code == 200 and "is registered" in done.text
        [app] = sim.apps.values()

        # The user installs the App on a repository and opens a pull request; GitHub delivers to the channel.
        repo = sim.create_repo("radixark/miles")
        repo.commit({"README.md": "x\n"}, branch="main")
        sim.install(app, "radixark/miles")
        repo.commit({"tests/e2e/test_a.py": "x = 1\n"}, branch="feature")
        pr = sim.open_pull_request(repo, "feature", "main", author="bob")
        d = sim.webhook("pull_request", "opened", app=app, repo=repo, pull=pr, sender="bob")
        channel.publish(d.headers, d.body, raw=True)
        assert wait_for(lambda: [r for r in sim.check_runs(repo, sha=pr.head_sha, name=CHECK_NAME)
                                 if r["status"] == "completed"]), log_path.read_text()[-3000:]
        # The channel keeps working after its first delivery (a second one is forwarded too).
        d2 = sim.webhook("pull_request", "reopened", app=app, repo=repo, pull=pr, sender="bob")
        channel.publish(d2.headers, d2.body, raw=True)
        assert wait_for(lambda: log_path.read_text().count('"webhook forwarded"') == 2), \
            log_path.read_text()[-3000:]
        secrets = {"the setup token": served.link.split("token=")[1],
                   "the setup cookie": browser.cookies.get("cireg_setup"),
                   "the manifest code": parse_qs(callback.query)["code"][0],
                   "the onboarding state": parse_qs(callback.query)["state"][0],
                   "the webhook secret": app.webhook_secret, "the client secret": app.client_secret,
                   "the private key": app.private_key_pem.splitlines()[1]}
        secrets.update({f"installation token {i}": t["token"] for i, t in enumerate(sim.tokens_issued)})
        assert all(secrets.values()) and sim.tokens_issued
    _logs_hold_no_secret(log_path.read_text(), secrets)


def _logs_hold_no_secret(text: str, secrets: dict) -> None:
    """Every line is plain JSON, except the set-up banner, the one place the token is shown (and
    spent by the time anyone reads the log again); no secret is anywhere else; the first screen is short."""
    lines = [line for line in text.splitlines() if line.strip()]
    banner = [i for i, line in enumerate(lines) if "?token=" in line]
    assert len(banner) == 1 and lines[banner[0] - 1] == "No GitHub App is configured yet. Set it up at:", lines
    assert banner[0] < 12, lines[:banner[0]]  # the set-up link on the first screen, not after a page of noise
    others = [line for i, line in enumerate(lines) if i not in (banner[0] - 1, banner[0])]
    assert "\x1b" not in text
    def is_json(line):
        try:
            return isinstance(json.loads(line), dict)
        except ValueError:
            return False

    assert all(is_json(line) for line in others), text
    for name, value in secrets.items():
        leaked = [line for line in others if value in line]
        assert not leaked, (name, leaked)
