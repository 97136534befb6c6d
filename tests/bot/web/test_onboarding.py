"""First run: the GitHub App manifest flow registers the App and keeps its credentials, owner-only;
nobody without the setup token can start it, and nothing a refresh, a second tab or a stranger does
loses the App or hands the service to someone else."""

from __future__ import annotations

import json
import re
import stat
from html import unescape
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

from app import create_app
from bot.web.onboarding import load_manifest
from bot.infra.settings import github_web_url as web_url
from bot.infra.settings import load_settings
from tests.simulator import sign
from tests.simulator.fixtures import github_sim  # noqa: F401
from tests.patience import PATIENCE


def test_the_manifest_asks_for_exactly_the_permissions_and_events_the_app_needs():
    manifest = load_manifest()
    assert manifest["default_permissions"] == {"checks": "write", "contents": "write", "pull_requests": "write",
                                               "issues": "write", "actions": "write", "metadata": "read",
                                               "members": "read"}  # organisation: team approvers
    # contents: write is for the calibration pull request's own branch only (README, permissions).
    # installation and installation_repositories reach every App unasked; GitHub refuses them here.
    assert set(manifest["default_events"]) == {"pull_request", "issue_comment", "check_run", "check_suite",
                                                "workflow_run"}


def _produced_manifests(monkeypatch, sim, tmp_path) -> dict[str, dict]:
    """Every manifest the project can hand GitHub: the file, `ci-registrar manifest`, and the
    onboarding form for each way it is filled in (personal, organisation, fixed URL, proxy channel)."""
    from click.testing import CliRunner

    from bot.commands.service import manifest as manifest_command

    out = {"bot/web/app-manifest.json": load_manifest()}
    printed = CliRunner().invoke(manifest_command, ["--url", "https://ci.example.org"])
    assert printed.exit_code == 0, printed.output
    out["ci-registrar manifest"] = json.loads(printed.output)
    for name, env, org in [("form, personal", {}, None), ("form, organisation", {}, "radixark"),
                           ("form, CI_REGISTRAR_PUBLIC_URL", {"CI_REGISTRAR_PUBLIC_URL": PUBLIC}, None),
                           ("form, proxy channel", {"CI_REGISTRAR_WEBHOOK_PROXY_URL": "https://smee.io/x"}, None)]:
        data_dir = tmp_path / name.replace(" ", "").replace(",", "-")
        with monkeypatch.context() as patch:
            patch.setenv("CI_REGISTRAR_DATA_DIR", str(data_dir))
            for key, value in env.items():
                patch.setenv(key, value)
            client, page = _setup_client(create_app(), data_dir)
            started = _start(client, page, org=org, public_url="http://127.0.0.1:3000" if env else PUBLIC)
            assert started.status_code == 200, started.data
            action, produced = _form(started.data.decode())
            out[name] = (action, produced)
    return out


def test_github_accepts_every_manifest_the_project_produces(fresh, monkeypatch, tmp_path):
    """Each is posted to the simulated github.com form, which validates it as GitHub does."""
    sim, _, _ = fresh
    produced = _produced_manifests(monkeypatch, sim, tmp_path)
    assert len(produced) == 6
    for name, entry in produced.items():
        action, manifest = entry if isinstance(entry, tuple) else (f"{sim.web_url}/settings/apps/new", entry)
        answer = requests.post(action, data={"manifest": json.dumps(manifest)}, allow_redirects=False, timeout=PATIENCE)
        assert answer.status_code == 302, f"{name}: {answer.text}"
        code = parse_qs(urlsplit(answer.headers["Location"]).query)["code"][0]
        converted = requests.post(f"{sim.url}/app-manifests/{code}/conversions", timeout=PATIENCE)
        assert converted.status_code == 201, f"{name}: {converted.text}"
        assert set(converted.json()["events"]) == set(manifest["default_events"])


def test_the_simulated_form_refuses_what_github_refuses(fresh):
    """The simulator's validation is what makes the test above mean something."""
    sim, _, _ = fresh
    good = load_manifest()
    cases = {
        "Default events unsupported: installation": {"default_events": good["default_events"] + ["installation"]},
        "Default events unsupported: installation_repositories":
            {"default_events": ["installation_repositories"]},
        "Default events unsupported: no_such_event": {"default_events": ["no_such_event"]},
        "Default events are not supported by permissions: check_run":
            {"default_permissions": {k: v for k, v in good["default_permissions"].items() if k != "checks"},
             "default_events": ["check_run"]},
        "Default permissions unsupported: pull_request": {"default_permissions": {"pull_request": "write"}},
        "Default permissions have invalid access levels: metadata=admin": {"default_permissions": {"metadata": "admin"}},
        "Hook url is not a valid URL": {"hook_attributes": {"url": "not a url"}},
        "Redirect url is not a valid URL": {"redirect_url": "javascript:alert(1)"},
        # GitHub's own rules for the name, booleans and keys (issue 27)
        "Name can't be blank": {"name": ""},
        "Name is too long (maximum is 34 characters)": {"name": "CI Registrar (a-very-long-organisation)"},
        "Public must be true or false": {"public": "false"},
        "Hook active must be true or false": {"hook_attributes": {"url": "https://ci.example.org/webhook", "active": 1}},
        "Unknown manifest keys: permissions": {"permissions": {"checks": "write"}},
        "Unknown hook attributes: secret": {"hook_attributes": {"url": "https://ci.example.org/webhook", "secret": "x"}},
    }
    for message, change in cases.items():
        answer = requests.post(f"{sim.web_url}/settings/apps/new", data={"manifest": json.dumps({**good, **change})},
                               allow_redirects=False, timeout=PATIENCE)
        assert answer.status_code == 422 and message in answer.text, (message, answer.status_code, answer.text)
    nameless = {k: v for k, v in good.items() if k != "name"}
    answer = requests.post(f"{sim.web_url}/settings/apps/new", data={"manifest": json.dumps(nameless)},
                           allow_redirects=False, timeout=PATIENCE)
    assert answer.status_code == 422 and "Name can't be blank" in answer.text
    thirty_four = {**good, "name": "CI Registrar (" + "x" * 19 + ")"}
    assert len(thirty_four["name"]) == 34
    assert requests.post(f"{sim.web_url}/settings/apps/new", data={"manifest": json.dumps(thirty_four)},
                         allow_redirects=False, timeout=PATIENCE).status_code == 302
    issue_comment_via_pulls = {**good, "default_permissions": {"pull_requests": "write"}, "default_events": ["issue_comment"]}
    assert requests.post(f"{sim.web_url}/settings/apps/new", data={"manifest": json.dumps(issue_comment_via_pulls)},
                         allow_redirects=False, timeout=PATIENCE).status_code == 302
    assert not sim.apps


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
                 "REDIS_URL", "DATABASE_URL", "CI_REGISTRAR_PUBLIC_URL", "GITHUB_CLIENT_ID", "GITHUB_CLIENT_SECRET"):
        monkeypatch.delenv(name, raising=False)
    return github_sim, create_app(), tmp_path


PUBLIC = "https://registrar.example.org"


def _token(data_dir) -> str:
    return (data_dir / "setup-token").read_text().strip()


def _setup_client(app, data_dir, base_url="http://localhost"):
    """A browser that opened the setup link (the token) and sits on the set-up page."""
    client = app.test_client()
    assert client.get("/", base_url=base_url).status_code == 403  # makes the token, refuses without it
    assert client.get(f"/?token={_token(data_dir)}", base_url=base_url).status_code == 302
    page = client.get("/", base_url=base_url)
    assert page.status_code == 200, page.data
    return client, page.data.decode()


def _start(client, page: str, public_url: str = PUBLIC, org: str | None = None, base_url="http://localhost"):
    csrf = re.search(r'name="csrf" value="([^"]+)"', page).group(1)
    form = {"csrf": csrf, "public_url": public_url, "owner": "organization" if org else "personal", "org": org or ""}
    return client.post("/onboarding/start", data=form, base_url=base_url)


def _form(page: str) -> tuple[str, dict]:
    action = unescape(re.search(r'<form action="([^"]+)"', page).group(1))
    manifest = json.loads(unescape(re.search(r'name="manifest" value="([^"]+)"', page).group(1)))
    return action, manifest


def _to_github(page: str) -> str:
    """The browser posts the manifest to GitHub, which answers with the callback URL (path?query)."""
    action, manifest = _form(page)
    answer = requests.post(action, data={"manifest": json.dumps(manifest)}, allow_redirects=False, timeout=PATIENCE)
    assert answer.status_code == 302
    back = urlsplit(answer.headers["Location"])
    return f"{back.path}?{back.query}"


def test_first_run_registers_the_app_and_saves_its_credentials_owner_only(fresh):
    sim, app, data_dir = fresh
    client, page = _setup_client(app, data_dir)
    assert "loopback" in page  # opened on 127.0.0.1: GitHub could not reach that
    started = _start(client, page)
    assert started.status_code == 200
    action, manifest = _form(started.data.decode())
    assert action.startswith(sim.web_url + "/settings/apps/new?state=")
    assert manifest["hook_attributes"]["url"] == PUBLIC + "/webhook"
    assert manifest["redirect_url"] == PUBLIC + "/onboarding/callback"
    assert manifest["default_permissions"]["members"] == "read"

    callback = _to_github(started.data.decode())
    assert callback.startswith("/onboarding/callback?")
    done = client.get(callback)
    assert done.status_code == 200, done.data
    assert "is registered" in done.data.decode()

    creds_path = data_dir / "credentials.json"
    assert stat.S_IMODE(creds_path.stat().st_mode) == 0o600
    creds = json.loads(creds_path.read_text())
    [registered] = sim.apps.values()
    assert creds["id"] == registered.id and creds["webhook_secret"] == registered.webhook_secret
    assert creds["client_id"] == registered.client_id and creds["public_url"] == PUBLIC
    assert "PRIVATE KEY" in creds["pem"]
    assert not (data_dir / "setup-token").exists()  # spent
    assert not (data_dir / "setup-grants.json").exists()

    settings = load_settings()
    assert settings.app_configured and settings.app_id == str(registered.id)
    body = json.dumps({"zen": "hi", "hook_id": 1}).encode()
    ping = client.post("/webhook", data=body, headers={"X-GitHub-Event": "ping", "X-GitHub-Delivery": "p1",
                                                        "Content-Type": "application/json",
                                                        "X-Hub-Signature-256": sign(body, registered.webhook_secret)})
    assert ping.status_code == 200
    # The same callback again (a reload): the same answer, no second conversion, no error.
    again = client.get(callback)
    assert again.status_code == 200 and str(registered.id) in again.data.decode()
    assert len(sim.apps) == 1
    # From now on the pages need sign-in.
    assert client.get("/").status_code == 302


def test_without_the_setup_token_nobody_starts_or_finishes_onboarding(fresh):
    sim, app, data_dir = fresh
    stranger = app.test_client()
    refused = stranger.get("/")
    assert refused.status_code == 403 and "setup token" in refused.data.decode()
    assert stranger.get("/?token=guess").status_code == 403
    assert stranger.post("/onboarding/start", data={"public_url": "https://evil.example", "csrf": "x"}).status_code == 403
    # The owner starts; the stranger replays the owner's callback from another browser.
    owner, page = _setup_client(app, data_dir)
    callback = _to_github(_start(owner, page).data.decode())
    stolen = stranger.get(callback)
    assert stolen.status_code == 400
    assert not (data_dir / "credentials.json").exists()
    assert owner.get(callback).status_code == 200  # the owner still finishes


def test_the_setup_link_works_once_and_the_refusal_shows_no_server_path(fresh):
    sim, app, data_dir = fresh
    owner = app.test_client()
    refused = owner.get("/")
    assert refused.status_code == 403
    assert str(data_dir) not in refused.data.decode() and "setup-token" in refused.data.decode()
    link = f"/?token={_token(data_dir)}"
    assert owner.get(link).status_code == 302
    assert owner.get("/").status_code == 200  # the cookie carries on
    # The same link later, from the history, another tab's copy or a log: refused, and says why.
    for browser in (app.test_client(), owner):
        again = browser.get(link)
        assert again.status_code == 403 and "used already" in again.data.decode()
        assert str(data_dir) not in again.data.decode()
    stranger = app.test_client()
    assert stranger.get("/").status_code == 403
    # The file holds a new token: the person at the server can open set-up in another browser.
    second = app.test_client()
    assert f"/?token={_token(data_dir)}" != link
    assert second.get(f"/?token={_token(data_dir)}").status_code == 302 and second.get("/").status_code == 200
    assert owner.get("/").status_code == 200  # the first browser keeps its grant


def test_a_refresh_or_a_second_tab_never_invalidates_a_registration(fresh):
    sim, app, data_dir = fresh
    client, page = _setup_client(app, data_dir)
    first = _start(client, page).data.decode()
    for _ in range(3):  # refreshes, a second tab, an uptime probe
        client.get("/")
        app.test_client().get("/")
    second = _start(client, client.get("/").data.decode()).data.decode()
    assert _form(first)[0] != _form(second)[0]
    done = client.get(_to_github(first))
    assert done.status_code == 200
    assert json.loads((data_dir / "credentials.json").read_text())["id"] in sim.apps


def test_the_public_url_comes_from_configuration_never_from_the_host_header(fresh, monkeypatch):
    sim, app, data_dir = fresh
    monkeypatch.setenv("CI_REGISTRAR_PUBLIC_URL", "https://bot.radixark.example")
    client, page = _setup_client(app, data_dir, base_url="http://evil.example")
    assert "readonly" in page and "loopback" not in page
    started = _start(client, page, public_url="https://evil.example", base_url="http://evil.example")
    _, manifest = _form(started.data.decode())
    assert manifest["hook_attributes"]["url"] == "https://bot.radixark.example/webhook"
    assert manifest["redirect_url"] == "https://bot.radixark.example/onboarding/callback"


@pytest.mark.parametrize("public_url", ["", "javascript:alert(1)", "https://a b.example", "https://u:p@x.example",
                                        "ftp://x.example"])
def test_a_bad_public_url_is_refused(fresh, public_url):
    sim, app, data_dir = fresh
    client, page = _setup_client(app, data_dir)
    assert _start(client, page, public_url=public_url).status_code == 400


def test_an_organisation_is_chosen_and_an_invalid_one_is_refused(fresh):
    sim, app, data_dir = fresh
    client, page = _setup_client(app, data_dir)
    bad = _start(client, page, org="no_such org!")
    assert bad.status_code == 400 and "organisation" in bad.data.decode()
    ok = _start(client, client.get("/").data.decode(), org="radixark")
    assert _form(ok.data.decode())[0].startswith(sim.web_url + "/organizations/radixark/settings/apps/new?state=")


def test_github_unreachable_at_the_callback_gives_a_retry_page_and_loses_nothing(fresh, monkeypatch):
    import bot.web.onboarding as onboarding

    sim, app, data_dir = fresh
    client, page = _setup_client(app, data_dir)
    callback = _to_github(_start(client, page).data.decode())
    real_post = onboarding.requests.post

    def down(*args, **kwargs):
        raise requests.ConnectionError("GitHub is down")

    monkeypatch.setattr(onboarding.requests, "post", down)
    retry = client.get(callback)
    assert retry.status_code == 502 and "Try again" in retry.data.decode()
    assert not (data_dir / "credentials.json").exists()
    monkeypatch.setattr(onboarding.requests, "post", real_post)
    assert client.get(callback).status_code == 200
    assert (data_dir / "credentials.json").exists()


@pytest.mark.parametrize("answer", [{"id": "abc"}, {"id": 5, "pem": "nope", "webhook_secret": "s"}, ["x"]])
def test_a_malformed_conversion_saves_nothing_and_leaves_onboarding_open(fresh, monkeypatch, answer):
    import bot.web.onboarding as onboarding

    sim, app, data_dir = fresh
    client, page = _setup_client(app, data_dir)
    callback = _to_github(_start(client, page).data.decode())

    class Answer:
        status_code = 201
        content = b"x"

        def json(self):
            return answer

    monkeypatch.setattr(onboarding.requests, "post", lambda *a, **k: Answer())
    resp = client.get(callback)
    assert resp.status_code == 502 and "Nothing was saved" in resp.data.decode()
    assert not (data_dir / "credentials.json").exists()
    assert client.get("/readyz").status_code == 503
    assert client.get("/").status_code == 200  # the token holder can start again


def test_readyz_names_the_missing_credentials(fresh):
    sim, app, data_dir = fresh
    resp = app.test_client().get("/readyz")
    assert resp.status_code == 503
    assert "credentials" in resp.json["missing"]


def test_error_pages_are_friendly_html_and_probes_stay_json(fresh):
    sim, app, data_dir = fresh
    client = app.test_client()
    missing = client.get("/no/such/page")
    assert missing.status_code == 404 and "There is no such page" in missing.data.decode()
    assert "<!doctype html>" in missing.data.decode()
    assert client.get("/healthz").json == {"status": "alive"}


def test_with_a_proxy_channel_one_click_registers_an_app_that_receives_webhooks_locally(fresh, monkeypatch):
    """`make run` with CI_REGISTRAR_WEBHOOK_PROXY_URL: the set-up page is already filled in; GitHub
    is told to deliver to the channel, and the browser comes back to this machine."""
    sim, app, data_dir = fresh
    monkeypatch.setenv("CI_REGISTRAR_WEBHOOK_PROXY_URL", "https://smee.io/ci-registrar-dev")
    client, page = _setup_client(app, data_dir)
    assert "smee.io/ci-registrar-dev" in page and "loopback" not in page
    prefilled = re.search(r'name="public_url" value="([^"]*)"', page).group(1)
    assert prefilled == "http://127.0.0.1:3000"
    started = _start(client, page, public_url=prefilled)  # the one click: nothing typed
    _, manifest = _form(started.data.decode())
    assert manifest["hook_attributes"]["url"] == "https://smee.io/ci-registrar-dev"
    assert manifest["redirect_url"] == "http://127.0.0.1:3000/onboarding/callback"
    assert client.get(_to_github(started.data.decode())).status_code == 200


def test_the_set_up_page_names_the_app_uniquely_per_owner(fresh):
    """App names are unique across GitHub: the fixed "CI Registrar" is taken by the first
    deployment, so the form asks for a name and defaults to one of the owner's."""
    _sim, app, data_dir = fresh
    client, page = _setup_client(app, data_dir)
    assert 'name="name"' in page and 'maxlength="34"' in page
    _, manifest = _form(_start(client, page, org="radixark").data.decode())
    assert manifest["name"] == "CI Registrar (radixark)"
    _, manifest = _form(_start(client, page, org="a-very-long-organisation-login-of-39ch").data.decode())
    assert manifest["name"].startswith("CI Registrar (a-very-long-organi") and len(manifest["name"]) == 34
    personal = {_form(_start(client, page).data.decode())[1]["name"] for _ in range(2)}
    assert len(personal) == 2 and all(re.fullmatch(r"CI Registrar \([0-9a-f]{6}\)", n) for n in personal)
    csrf = re.search(r'name="csrf" value="([^"]+)"', page).group(1)
    form = {"csrf": csrf, "public_url": PUBLIC, "owner": "personal", "org": "", "name": "  Registrar   of radixark "}
    _, manifest = _form(client.post("/onboarding/start", data=form).data.decode())
    assert manifest["name"] == "Registrar of radixark"
    refused = client.post("/onboarding/start", data={**form, "name": "x" * 35})
    assert refused.status_code == 400 and "at most 34" in refused.data.decode()


def test_the_manifest_command_names_the_app(tmp_path):
    from click.testing import CliRunner

    from bot.commands.service import manifest as manifest_command

    named = CliRunner().invoke(manifest_command, ["--url", "https://ci.example.org", "--name", "CI Registrar (acme)"])
    assert named.exit_code == 0 and json.loads(named.output)["name"] == "CI Registrar (acme)"
    default = json.loads(CliRunner().invoke(manifest_command, ["--url", "https://ci.example.org"]).output)["name"]
    assert re.fullmatch(r"CI Registrar \([0-9a-f]{6}\)", default)
    too_long = CliRunner().invoke(manifest_command, ["--url", "https://ci.example.org", "--name", "y" * 35])
    assert too_long.exit_code == 2
