"""Sign in with GitHub for the pages: the App's OAuth client on the simulated github.com; each person
sees only the installations and repositories GitHub says they can see. /metrics takes a token."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

from tests.service_support import build_world
from tests.simulator.fixtures import github_sim  # noqa: F401
from tests.patience import PATIENCE


@pytest.fixture()
def world(github_sim, tmp_path, monkeypatch):
    import dataclasses

    world = build_world(github_sim, tmp_path)
    # As GITHUB_CLIENT_ID, GITHUB_CLIENT_SECRET and CI_REGISTRAR_PUBLIC_URL would set them.
    world.flask.config["SETTINGS"] = dataclasses.replace(
        world.settings, client_id=world.app.client_id, client_secret=world.app.client_secret,
        public_url="http://localhost")
    monkeypatch.setenv("GITHUB_WEB_URL", github_sim.web_url)
    other = github_sim.create_repo("acme/secret-project", private=True)
    other.commit({"README.md": "x\n"})
    github_sim.install(world.app, "acme/secret-project")
    world.deliver(world.sim.webhook("installation", "created", app=world.app, installation=world.installation))
    for inst in github_sim.installations.values():
        world.deliver(world.sim.webhook("installation", "created", app=world.app, installation=inst))
    world.deliver(world.sim.webhook("pull_request", "opened", app=world.app, repo=world.repo, pull=world.pr,
                                    sender="bob"))
    world.drain()
    return world


def _sign_in(world, login: str):
    """The browser's round trip: /login -> github.com -> /login/callback, as `login`."""
    world.sim.web_user = login
    client = world.client
    first = client.get("/")
    assert first.status_code == 302 and first.headers["Location"].startswith("/login")
    to_github = client.get(first.headers["Location"])
    assert to_github.status_code == 302
    authorize = urlsplit(to_github.headers["Location"])
    query = parse_qs(authorize.query)
    assert query["client_id"] == [world.app.client_id] and query["redirect_uri"] == ["http://localhost/login/callback"]
    back = requests.get(to_github.headers["Location"], allow_redirects=False, timeout=PATIENCE)
    assert back.status_code == 302
    callback = urlsplit(back.headers["Location"])
    done = client.get(f"{callback.path}?{callback.query}")
    assert done.status_code == 302 and done.headers["Location"] == "/"
    return client


def test_a_maintainer_signs_in_and_sees_their_repository_only(world):
    world.sim.set_permission(world.repo, "maint", "maintain")
    client = _sign_in(world, "maint")
    page = client.get("/").data.decode()
    assert "radixark/miles" in page and "pull_request.opened" in page and "@maint" in page
    assert "acme/secret-project" not in page and "acme" not in page
    assert client.get("/durations").status_code == 200
    assert client.get("/audit").status_code == 200
    assert client.get("/logout").status_code == 200 and client.get("/").status_code == 200  # GET: a form only
    token = re.search(r'name="csrf" value="([^"]+)"', client.get("/logout").data.decode()).group(1)
    assert client.post("/logout", data={"csrf": token}).status_code == 302
    assert client.get("/").status_code == 302


def test_someone_without_access_sees_nothing(world):
    client = _sign_in(world, "stranger")  # a public repository, but no explicit access: nothing listed
    page = client.get("/").data.decode()
    assert "radixark/miles" not in page and "None that you can see" in page
    assert "acme/secret-project" not in client.get("/audit?repo=acme/secret-project").data.decode()


def test_a_forged_or_replayed_callback_is_refused(world):
    world.sim.web_user = "maint"
    client = world.client
    assert client.get("/login/callback?code=abc&state=forged").status_code == 400
    to_github = client.get("/login")
    back = requests.get(to_github.headers["Location"], allow_redirects=False, timeout=PATIENCE)
    callback = urlsplit(back.headers["Location"])
    assert client.get(f"{callback.path}?{callback.query}").status_code == 302
    assert client.get(f"{callback.path}?{callback.query}").status_code == 400  # the state was spent
    other = world.flask.test_client()  # another browser cannot use it either
    assert other.get(f"{callback.path}?{callback.query}").status_code == 400


def test_next_never_leaves_the_site(world):
    world.sim.web_user = "maint"
    client = world.client
    client.get("/login?next=//evil.example/x")
    to_github = client.get("/login?next=https://evil.example")
    back = requests.get(to_github.headers["Location"], allow_redirects=False, timeout=PATIENCE)
    callback = urlsplit(back.headers["Location"])
    assert client.get(f"{callback.path}?{callback.query}").headers["Location"] == "/"


def test_metrics_need_the_token_or_a_loopback_client(world, monkeypatch):
    client = world.client
    assert client.get("/metrics").status_code == 200  # the test client is 127.0.0.1
    assert client.get("/metrics", environ_base={"REMOTE_ADDR": "203.0.113.9"}).status_code == 403
    monkeypatch.setenv("CI_REGISTRAR_METRICS_TOKEN", "s3cret")
    assert client.get("/metrics", environ_base={"REMOTE_ADDR": "203.0.113.9"}).status_code == 403
    ok = client.get("/metrics", headers={"Authorization": "Bearer s3cret"}, environ_base={"REMOTE_ADDR": "203.0.113.9"})
    assert ok.status_code == 200 and b"ci_registrar" in ok.data
    assert client.get("/healthz").status_code == 200 and client.get("/readyz").status_code == 200
