"""GET /: the first-run GitHub App manifest flow while no App is configured, the status page after."""

from __future__ import annotations

import dataclasses
import html
import json
import os
import re
import secrets
from pathlib import Path
from urllib.parse import urlsplit

import requests
from flask import Blueprint, abort, current_app, redirect, request

from bot.web import get_settings

blueprint = Blueprint("onboarding", __name__)

MANIFEST_PATH = Path(__file__).resolve().parent.parent / "deploy" / "app-manifest.json"
STATE_FILE = "onboarding-state"
CALLBACK_PATH = "/onboarding/callback"
_CODE = re.compile(r"^[A-Za-z0-9_-]{1,200}$")

PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>{title}</title>
<style>body{{font-family:system-ui,sans-serif;max-width:52rem;margin:2rem auto;padding:0 1rem}}
table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:.25rem .5rem;text-align:left}}</style>
</head><body>{body}</body></html>"""

ONBOARDING = """<h1>Set up CI Registrar</h1>
<p>No GitHub App is configured yet. The button registers one on {web_url} from this App's manifest
(permissions and events below); GitHub then sends you back here and the App's id, private key and
webhook secret are saved in <code>{credentials}</code>, readable only by this service's user.</p>
<form action="{action}" method="post">
<input type="hidden" name="manifest" value="{manifest}">
<button type="submit">Create the GitHub App</button></form>
<p>For an organisation, open <code>/?org=NAME</code>.</p>
<pre>{pretty}</pre>"""

DONE = """<h1>CI Registrar is registered</h1><p>GitHub App <b>{name}</b> (id {id}) is saved.
<a href="{install}">Install it on repositories</a>, then come back to <a href="/">the status page</a>.</p>"""


def load_manifest() -> dict:
    return json.loads(Path(os.environ.get("CI_REGISTRAR_MANIFEST") or MANIFEST_PATH).read_text())


def web_url(api_url: str) -> str:
    """GitHub's web address for its REST address: api.github.com, GHES's /api/v3, a GHE.com subdomain."""
    if os.environ.get("GITHUB_WEB_URL"):
        return os.environ["GITHUB_WEB_URL"].rstrip("/")
    parts = urlsplit(api_url)
    host = parts.netloc
    if host == "api.github.com":
        return "https://github.com"
    if parts.path.rstrip("/").endswith("/api/v3"):
        return f"{parts.scheme}://{host}{parts.path.rstrip('/')[: -len('/api/v3')]}"
    if host.startswith("api.") and host.endswith(".ghe.com"):
        return f"{parts.scheme}://{host[4:]}"
    return api_url.rstrip("/")


def manifest_for(public_url: str) -> dict:
    manifest = load_manifest()
    base = public_url.rstrip("/")
    manifest["hook_attributes"] = {**manifest.get("hook_attributes", {}), "url": base + "/webhook"}
    manifest["redirect_url"] = base + CALLBACK_PATH
    return manifest


def write_credentials(path: Path, data: dict) -> None:
    """Atomically, and readable by the owner only (0600) from the first byte on."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, json.dumps(data, indent=2).encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def _public_url() -> str:
    return os.environ.get("CI_REGISTRAR_PUBLIC_URL") or request.url_root


@blueprint.get("/")
def home():
    settings = get_settings()
    if settings.app_configured:
        from bot.status import status_page

        return status_page(settings)
    state = secrets.token_urlsafe(24)
    settings.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    write_credentials(settings.data_dir / STATE_FILE, {"state": state})
    org = request.args.get("org", "")
    base = web_url(settings.github_api_url)
    if org and re.fullmatch(r"[A-Za-z0-9-]{1,39}", org):
        action = f"{base}/organizations/{org}/settings/apps/new?state={state}"
    else:
        action = f"{base}/settings/apps/new?state={state}"
    manifest = manifest_for(_public_url())
    body = ONBOARDING.format(web_url=html.escape(base), credentials=html.escape(str(settings.credentials_path)),
                             action=html.escape(action), manifest=html.escape(json.dumps(manifest)),
                             pretty=html.escape(json.dumps(manifest, indent=2)))
    return PAGE.format(title="Set up CI Registrar", body=body)


@blueprint.get(CALLBACK_PATH)
def callback():
    settings = get_settings()
    if settings.app_configured:
        return redirect("/")
    code, state = request.args.get("code", ""), request.args.get("state", "")
    try:
        expected = json.loads((settings.data_dir / STATE_FILE).read_text()).get("state")
    except (OSError, ValueError):
        expected = None
    if not expected or not secrets.compare_digest(state, expected):
        abort(400, "unknown or expired onboarding state: start again from /")
    if not _CODE.match(code):
        abort(400, "missing or malformed code")
    resp = requests.post(f"{settings.github_api_url}/app-manifests/{code}/conversions",
                         headers={"Accept": "application/vnd.github+json"}, timeout=30)
    if resp.status_code != 201:
        abort(502, f"GitHub refused the manifest code ({resp.status_code}): start again from /")
    app = resp.json()
    write_credentials(settings.credentials_path, {
        "api_url": settings.github_api_url, "id": app["id"], "slug": app.get("slug"), "name": app.get("name"),
        "client_id": app.get("client_id"), "client_secret": app.get("client_secret"),
        "webhook_secret": app["webhook_secret"], "pem": app["pem"],
        "html_url": app.get("html_url"),
    })
    (settings.data_dir / STATE_FILE).unlink(missing_ok=True)
    current_app.config["SETTINGS"] = dataclasses.replace(
        settings, app_id=str(app["id"]), private_key=app["pem"], webhook_secret=app["webhook_secret"])
    install = (app.get("html_url") or f"{web_url(settings.github_api_url)}/apps/{app.get('slug')}") + "/installations/new"
    return PAGE.format(title="CI Registrar registered", body=DONE.format(
        name=html.escape(str(app.get("name") or app.get("slug"))), id=int(app["id"]), install=html.escape(install)))
