"""The pages' sign-out and /metrics against another site and behind a proxy (issue 23, Web).

- Signing out takes a POST with this browser's CSRF token: a link, an image or another site's
  form cannot sign anyone out (GET /logout only shows the form).
- /metrics is read by internal addresses (CI_REGISTRAR_METRICS_ALLOW) or with the token. Behind
  deploy/nginx.conf the client's address comes from the proxy's headers, believed only from the
  configured proxy (CI_REGISTRAR_PROXY_COUNT, CI_REGISTRAR_PROXY_ADDRESSES); without that
  configuration a forwarded request is never internal, so /metrics is not public behind nginx.
"""

from __future__ import annotations

import re

import pytest

from tests import REPO
from tests.signin_support import sign_in
from tests.simulator.fixtures import github_sim  # noqa: F401
from tests.service_support import build_world

NGINX = REPO / "deploy" / "nginx.conf"
CLIENT = "203.0.113.9"  # somewhere on the internet


@pytest.fixture()
def world(github_sim, tmp_path):
    return build_world(github_sim, tmp_path)


def _signed_in(world):
    client = world.client
    sign_in(client, world.flask, "maint", ["radixark/miles"], [world.installation.id])
    assert client.get("/").status_code == 200
    return client


def _still_signed_in(client) -> bool:
    return client.get("/").status_code == 200  # signed out: a redirect to /login


def _token(page: str) -> str:
    form = re.search(r'<form[^>]*method="post"[^>]*action="/logout"[^>]*>(.*?)</form>', page, re.S)
    assert form, page
    return re.search(r'name="csrf" value="([^"]+)"', form.group(1)).group(1)


# -- sign out -------------------------------------------------------------------------------------
def test_get_logout_signs_nobody_out_and_shows_a_form(world):
    client = _signed_in(world)
    page = client.get("/logout")
    assert page.status_code == 200
    assert 'method="post"' in page.data.decode() and 'action="/logout"' in page.data.decode()
    assert _still_signed_in(client)


def test_the_pages_sign_out_control_is_a_form_with_a_token(world):
    client = _signed_in(world)
    page = client.get("/").data.decode()
    assert 'href="/logout"' not in page
    assert len(_token(page)) >= 32


def test_a_post_without_the_token_or_with_another_is_refused_and_changes_nothing(world):
    client = _signed_in(world)
    assert client.post("/logout").status_code == 403
    assert client.post("/logout", data={"csrf": "forged"}).status_code == 403
    other = _signed_in(world)  # another browser's token does not sign this one out
    assert client.post("/logout", data={"csrf": _token(other.get("/").data.decode())}).status_code == 403
    assert _still_signed_in(client) and _still_signed_in(other)


def test_the_form_signs_out_and_ends_the_session_in_the_store(world):
    from bot.store import web_sessions

    client = _signed_in(world)
    token = _token(client.get("/").data.decode())
    with client.session_transaction() as session:
        sid = session["sid"]
    done = client.post("/logout", data={"csrf": token})
    assert done.status_code == 302 and done.headers["Location"] == "/"
    assert not _still_signed_in(client)
    assert web_sessions.get(world.settings.database_url, sid) is None


# -- /metrics -------------------------------------------------------------------------------------
def _metrics(world, remote=CLIENT, forwarded=None, token=None, real_ip=None):
    from app import create_app

    app = create_app(world.settings, queue=world.queue)  # reads the proxy settings as the App starts
    headers = {}
    if forwarded is not None:
        headers["X-Forwarded-For"] = forwarded
    if real_ip is not None:
        headers["X-Real-IP"] = real_ip
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return app.test_client().get("/metrics", headers=headers, environ_base={"REMOTE_ADDR": remote}).status_code


def test_metrics_are_for_internal_addresses_or_the_token(world, monkeypatch):
    monkeypatch.delenv("CI_REGISTRAR_METRICS_TOKEN", raising=False)
    assert _metrics(world, remote="127.0.0.1") == 200
    assert _metrics(world, remote="::1") == 200
    assert _metrics(world) == 403
    monkeypatch.setenv("CI_REGISTRAR_METRICS_TOKEN", "s3cret")
    assert _metrics(world, token="s3cret") == 200
    assert _metrics(world, token="wrong") == 403
    monkeypatch.setenv("CI_REGISTRAR_METRICS_ALLOW", "10.0.0.0/8, 192.0.2.7")
    assert _metrics(world, remote="10.1.2.3") == 200 and _metrics(world, remote="192.0.2.7") == 200
    assert _metrics(world, remote="127.0.0.1") == 403  # loopback is no longer listed
    monkeypatch.setenv("CI_REGISTRAR_METRICS_ALLOW", "")
    assert _metrics(world, remote="127.0.0.1") == 403 and _metrics(world, remote="127.0.0.1", token="s3cret") == 200


def test_behind_a_proxy_nobody_configured_a_forwarded_request_is_not_internal(world, monkeypatch):
    """The shipped nginx on the same machine, the App not told about it: every request arrives
    from loopback, carrying the client's address. Not internal, so the token is needed."""
    monkeypatch.delenv("CI_REGISTRAR_METRICS_TOKEN", raising=False)
    monkeypatch.delenv("CI_REGISTRAR_PROXY_COUNT", raising=False)
    assert _metrics(world, remote="127.0.0.1", forwarded=CLIENT) == 403
    assert _metrics(world, remote="127.0.0.1", real_ip=CLIENT) == 403
    assert _metrics(world, remote="127.0.0.1", forwarded="127.0.0.1") == 403  # not believed either way


def test_behind_the_configured_proxy_the_client_address_decides(world, monkeypatch):
    monkeypatch.delenv("CI_REGISTRAR_METRICS_TOKEN", raising=False)
    monkeypatch.setenv("CI_REGISTRAR_PROXY_COUNT", "1")
    assert _metrics(world, remote="127.0.0.1", forwarded=CLIENT) == 403
    assert _metrics(world, remote="127.0.0.1", forwarded="127.0.0.1") == 200  # a scraper on the machine, through nginx
    # A client's own X-Forwarded-For comes first; nginx appends the address it saw: that one counts.
    assert _metrics(world, remote="127.0.0.1", forwarded=f"127.0.0.1, {CLIENT}") == 403
    # A client reaching the App directly, past the proxy, cannot name itself loopback.
    assert _metrics(world, remote=CLIENT, forwarded="127.0.0.1") == 403
    monkeypatch.setenv("CI_REGISTRAR_METRICS_ALLOW", "10.0.0.0/8")
    assert _metrics(world, remote="127.0.0.1", forwarded="10.9.8.7") == 200
    # The proxy on another machine: its address is named, and only it is believed.
    monkeypatch.setenv("CI_REGISTRAR_PROXY_ADDRESSES", "192.0.2.10")
    assert _metrics(world, remote="192.0.2.10", forwarded="10.9.8.7") == 200
    assert _metrics(world, remote="127.0.0.1", forwarded="10.9.8.7") == 403


def test_bad_proxy_settings_stop_the_app_from_starting(world, monkeypatch):
    from app import create_app

    for name, value in (("CI_REGISTRAR_PROXY_COUNT", "-1"), ("CI_REGISTRAR_PROXY_COUNT", "one"),
                        ("CI_REGISTRAR_PROXY_ADDRESSES", "nginx.local"), ("CI_REGISTRAR_METRICS_ALLOW", "10.0.0.0/33")):
        with monkeypatch.context() as m:
            m.setenv(name, value)
            with pytest.raises(ValueError, match=name):
                create_app(world.settings, queue=world.queue)


def test_the_shipped_nginx_passes_the_client_address_on():
    text = NGINX.read_text()
    assert re.search(r"proxy_set_header\s+X-Forwarded-For\s+\$proxy_add_x_forwarded_for;", text)
    assert re.search(r"proxy_set_header\s+X-Real-IP\s+\$remote_addr;", text)
    assert "CI_REGISTRAR_PROXY_COUNT=1" in text
