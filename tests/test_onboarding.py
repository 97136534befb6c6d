"""First run: the GitHub App manifest flow registers the App and keeps its credentials, owner-only."""

from __future__ import annotations

import json
import re
import stat
from html import unescape
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

from app import create_app
from bot.onboarding import load_manifest, web_url
from bot.settings import load_settings
from tests.simulator import sign
from tests.simulator.fixtures import github_sim  # noqa: F401


def test_the_manifest_asks_for_exactly_the_permissions_and_events_the_app_needs():
    manifest = load_manifest()
    assert manifest["default_permissions"] == {"checks": "write", "contents": "read", "pull_requests": "write",
                                               "issues": "write", "actions": "write", "metadata": "read",
                                               "members": "read"}  # organisation: team approvers
    assert set(manifest["default_events"]) == {"pull_request", "issue_comment", "check_run", "check_suite",
                                                "workflow_run", "installation"}


@pytest.mark.parametrize("api, web", [
    ("https://api.github.com", "https://github.com"),
    ("https://ghe.example.com/api/v3", "https://ghe.example.com"),
    ("https://api.acme.ghe.com", "https://acme.ghe.com"),
])
def test_githubs_web_address_follows_its_api_address(api, web, monkeypatch):
    monkeypatch.delenv("GITHUB_WEB_URL", raising=False)
    assert web_url(api) == web


@pytest.fixture()
def fresh(github_sim, tmp_path, monkeypatch):
    monkeypatch.setenv("CI_REGISTRAR_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("GITHUB_API_URL", github_sim.url)
    monkeypatch.setenv("GITHUB_WEB_URL", github_sim.web_url)
    for name in ("GITHUB_APP_ID", "GITHUB_PRIVATE_KEY", "GITHUB_PRIVATE_KEY_PATH", "GITHUB_WEBHOOK_SECRET",
                 "REDIS_URL", "DATABASE_URL"):
        monkeypatch.delenv(name, raising=False)
    return github_sim, create_app(), tmp_path


def _form(page: str) -> tuple[str, dict]:
    action = unescape(re.search(r'<form action="([^"]+)"', page).group(1))
    manifest = json.loads(unescape(re.search(r'name="manifest" value="([^"]+)"', page).group(1)))
    return action, manifest


def test_first_run_registers_the_app_and_saves_its_credentials_owner_only(fresh):
    sim, app, data_dir = fresh
    client = app.test_client()
    page = client.get("/", base_url="http://bot.example:3000").data.decode()
    action, manifest = _form(page)
    assert action.startswith(sim.web_url + "/settings/apps/new?state=")
    assert manifest["hook_attributes"]["url"] == "http://bot.example:3000/webhook"
    assert manifest["redirect_url"] == "http://bot.example:3000/onboarding/callback"

    # The browser posts the form to GitHub, which sends it back with a one-time code.
    answer = requests.post(action, data={"manifest": json.dumps(manifest)}, allow_redirects=False, timeout=10)
    assert answer.status_code == 302
    back = urlsplit(answer.headers["Location"])
    assert back.path == "/onboarding/callback"
    done = client.get(f"{back.path}?{back.query}")
    assert done.status_code == 200, done.data

    creds_path = data_dir / "credentials.json"
    assert stat.S_IMODE(creds_path.stat().st_mode) == 0o600
    creds = json.loads(creds_path.read_text())
    [registered] = sim.apps.values()
    assert creds["id"] == registered.id and creds["webhook_secret"] == registered.webhook_secret
    assert "PRIVATE KEY" in creds["pem"]

    settings = load_settings()
    assert settings.app_configured and settings.app_id == str(registered.id)
    # From now on deliveries signed with the new secret are accepted, and / is the status page.
    body = json.dumps({"zen": "hi", "hook_id": 1}).encode()
    ping = client.post("/webhook", data=body, headers={"X-GitHub-Event": "ping", "X-GitHub-Delivery": "p1",
                                                        "Content-Type": "application/json",
                                                        "X-Hub-Signature-256": sign(body, registered.webhook_secret)})
    assert ping.status_code == 200
    assert "Installations" in client.get("/").data.decode()


def test_a_callback_with_a_foreign_state_is_refused(fresh):
    sim, app, data_dir = fresh
    client = app.test_client()
    action, manifest = _form(client.get("/").data.decode())
    code = parse_qs(urlsplit(requests.post(action, data={"manifest": json.dumps(manifest)}, allow_redirects=False,
                                           timeout=10).headers["Location"]).query)["code"][0]
    resp = client.get(f"/onboarding/callback?code={code}&state=forged")
    assert resp.status_code == 400
    assert not (data_dir / "credentials.json").exists()


def test_readyz_names_the_missing_credentials(fresh):
    sim, app, data_dir = fresh
    resp = app.test_client().get("/readyz")
    assert resp.status_code == 503
    assert "credentials" in resp.json["missing"]
    assert "GITHUB_APP_ID" in resp.json["missing"]["credentials"]
