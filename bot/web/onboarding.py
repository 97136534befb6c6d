"""First run: register the GitHub App from its manifest, without losing it and without letting anyone else.

Until an App is configured, only the person holding the one-time setup token may start the flow
(as Jupyter's token does): `ci-registrar serve` prints a link with it, and it lies in
`<data dir>/setup-token` (0600). The link works once: it sets a cookie holding a fresh grant (whose
hash alone is kept) and the token leaves the address bar; the token file then holds a new token,
so a copy of the link found later in a browser history, a proxy log or a screenshot opens nothing.

Each start of the flow is its own pending state, bound to the browser that started it (a random
browser cookie whose hash the state keeps), so a refresh, a second tab or an uptime probe never
invalidates another, and a callback from another browser is refused. A callback succeeds once and
is safe to repeat (the same page again, no second conversion). The credentials GitHub returns are
checked with a JWT call to GitHub before they are saved: a malformed answer saves nothing.

URLs are never taken from the request's Host header: the public URL comes from
CI_REGISTRAR_PUBLIC_URL, or is typed by the token holder on the setup page.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import hmac
import ipaddress
import json
import os
import re
import secrets
import time
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import requests
from flask import Blueprint, current_app, make_response, redirect, request

from bot.web.pages import render
from bot.infra.settings import github_web_url as web_url
from bot.infra.settings import reload_credentials, write_private
from bot.web.probes import get_settings

blueprint = Blueprint("onboarding", __name__)

MANIFEST_PATH = Path(__file__).resolve().with_name("app-manifest.json")  # package data: a wheel has it
TOKEN_FILE = "setup-token"
GRANTS_FILE = "setup-grants.json"  # hashes of the redeemed links' cookies, and of the spent tokens
MAX_GRANTS = 10
PENDING_FILE = "onboarding-pending.json"
LOCK_FILE = "onboarding.lock"
CALLBACK_PATH = "/onboarding/callback"
START_PATH = "/onboarding/start"
SETUP_COOKIE = "cireg_setup"
BROWSER_COOKIE = "cireg_browser"
STATE_TTL_S = 3600  # GitHub's manifest codes live an hour too
MAX_PENDING = 50
_CODE = re.compile(r"^[A-Za-z0-9_-]{1,200}$")
_ORG = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,37}[A-Za-z0-9])?$")

# Shown to anyone: it names the file, never where the server keeps it.
NEEDS_TOKEN = ("This CI Registrar has no GitHub App yet, and only the person who started it may register one. "
               "Open the setup link that `ci-registrar serve` printed when it started (it holds a one-time "
               "token), or read the token from the file `setup-token` in the service's data directory "
               "(CI_REGISTRAR_DATA_DIR) on the server and open /?token=THE_TOKEN.")
USED_TOKEN = ("This setup link has been used already, and a setup link works once. Go on in the browser that "
              "opened it, or read the new token from the file `setup-token` in the service's data directory "
              "(CI_REGISTRAR_DATA_DIR) on the server (restarting `ci-registrar serve` also prints a new link).")
LOOPBACK_HINT = ("This page was opened on a loopback address, which GitHub cannot send webhooks to. Give a public "
                 "URL (a reverse proxy or a tunnel), or, for local development, set CI_REGISTRAR_WEBHOOK_PROXY_URL "
                 "to a webhook proxy channel (for example a new smee.io channel) and restart: webhooks then come "
                 "through the channel, and this service's local address is enough here.")


def load_manifest() -> dict:
    return json.loads(Path(os.environ.get("CI_REGISTRAR_MANIFEST") or MANIFEST_PATH).read_text())


def proxy_channel() -> str | None:
    """The webhook proxy channel for local development (bot/web/proxy.py), when one is configured."""
    return os.environ.get("CI_REGISTRAR_WEBHOOK_PROXY_URL") or None


MAX_NAME_LENGTH = 34  # GitHub refuses a longer App name ("Name is too long (maximum is 34 characters)")
NAME_PREFIX = "CI Registrar"


def default_app_name(owner: str | None) -> str:
    """A name no other App is likely to hold: App names are unique across GitHub, and the fixed
    "CI Registrar" is taken by the first deployment. The owner's login where it is known (an
    organisation), else a random suffix; at most 34 characters."""
    tail = owner or secrets.token_hex(3)
    room = MAX_NAME_LENGTH - len(NAME_PREFIX) - 3  # " (" and ")"
    return f"{NAME_PREFIX} ({tail[:room]})"


def app_name_problem(name: str) -> str | None:
    """Why GitHub would refuse `name` as an App's name, or None."""
    if not name.strip():
        return "the App needs a name"
    if len(name) > MAX_NAME_LENGTH:
        return f"the App's name has {len(name)} characters; GitHub takes at most {MAX_NAME_LENGTH}"
    return None


def manifest_for(public_url: str, name: str | None = None) -> dict:
    """The manifest for a service at `public_url`; webhooks go to the proxy channel when one is set."""
    manifest = load_manifest()
    if name:
        manifest["name"] = name
    base = public_url.rstrip("/")
    manifest["url"] = manifest.get("url") or base
    hook = proxy_channel() or base + "/webhook"
    manifest["hook_attributes"] = {**manifest.get("hook_attributes", {}), "url": hook}
    manifest["redirect_url"] = base + CALLBACK_PATH
    manifest["callback_urls"] = [base + "/login/callback"]  # "Sign in with GitHub" for the pages
    return manifest


# -- the setup token --------------------------------------------------------------------------------
def _current_token(settings) -> str:
    """The unredeemed token (made when missing); the caller holds the lock."""
    path = settings.data_dir / TOKEN_FILE
    try:
        token = path.read_text().strip()
    except OSError:
        token = ""
    if len(token) < 32:
        token = secrets.token_urlsafe(32)
        write_private(path, token)
    return token


def setup_token(settings) -> str:
    """The one-time token that lets one person start onboarding (created on first use, 0600)."""
    with _locked(settings):
        return _current_token(settings)


def _read_grants(settings) -> dict:
    try:
        data = json.loads((settings.data_dir / GRANTS_FILE).read_text())
    except (OSError, ValueError):
        return {"grants": [], "spent": []}
    return data if isinstance(data, dict) else {"grants": [], "spent": []}


def redeem(settings, token: str) -> str | None:
    """Spend `token` if it is the current one: a new grant for this browser's cookie, a new token on
    file; None when it is not (a wrong token, or one used before: `token_was_spent` tells which)."""
    with _locked(settings):
        if not hmac.compare_digest(token.encode(), _current_token(settings).encode()):
            return None
        grant = secrets.token_urlsafe(32)
        grants = _read_grants(settings)
        grants["grants"] = (grants.get("grants") or [])[-(MAX_GRANTS - 1):] + [_hash(grant)]
        grants["spent"] = (grants.get("spent") or [])[-(MAX_GRANTS - 1):] + [_hash(token)]
        write_private(settings.data_dir / GRANTS_FILE, grants)
        write_private(settings.data_dir / TOKEN_FILE, secrets.token_urlsafe(32))
    return grant


def token_was_spent(settings, token: str) -> bool:
    return _hash(token) in (_read_grants(settings).get("spent") or [])


def setup_link(settings, base_url: str) -> str:
    return f"{base_url.rstrip('/')}/?{urlencode({'token': setup_token(settings)})}"


def _csrf(grant: str, browser: str) -> str:
    return hmac.new(grant.encode(), b"start:" + browser.encode(), hashlib.sha256).hexdigest()


def _held_grant(settings) -> str | None:
    """This browser's grant (the cookie a redeemed setup link set), when it is a live one."""
    cookie = request.cookies.get(SETUP_COOKIE, "")
    if not cookie:
        return None
    digest = _hash(cookie)
    return cookie if any(hmac.compare_digest(digest, kept) for kept in _read_grants(settings).get("grants") or []) \
        else None


# -- pending states ---------------------------------------------------------------------------------
@contextlib.contextmanager
def _locked(settings):
    settings.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(settings.data_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _read_pending(settings) -> dict:
    try:
        data = json.loads((settings.data_dir / PENDING_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _hash(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def _add_pending(settings, state: str, record: dict) -> None:
    with _locked(settings):
        pending = _read_pending(settings)
        now = time.time()
        pending = {k: v for k, v in pending.items() if v.get("done") or now - v.get("created", 0) < STATE_TTL_S}
        live = sorted((k for k, v in pending.items() if not v.get("done")), key=lambda k: pending[k]["created"])
        for old in live[: max(0, len(live) - MAX_PENDING + 1)]:
            pending.pop(old)
        pending[state] = record
        write_private(settings.data_dir / PENDING_FILE, pending)


def _is_loopback(host: str) -> bool:
    name = host.rsplit(":", 1)[0].strip("[]") if host.count(":") <= 1 or host.startswith("[") else host
    if name in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def valid_public_url(url: str) -> str | None:
    """Why `url` cannot be the App's public URL, or None."""
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.netloc or any(c.isspace() for c in url):
        return "the public URL must be an absolute http(s) URL, such as https://ci-registrar.example.com"
    if parts.query or parts.fragment or "@" in parts.netloc:
        return "the public URL may not hold a query, a fragment or credentials"
    return None


# -- pages ------------------------------------------------------------------------------------------
def _manifest_rows(manifest: dict) -> list[tuple[str, str]]:
    return sorted((manifest.get("default_permissions") or {}).items())


def setup_page(settings):
    """GET / while no App is configured (bot.web.status owns the route): the set-up page, for the token holder."""
    setup_token(settings)  # made on first need, so the file the refusal names exists
    token = request.args.get("token")
    if token is not None:
        grant = redeem(settings, token)
        if grant is None:
            if token_was_spent(settings, token):
                return render("message.html", status=403, title="This setup link was used already", error=True,
                              message=USED_TOKEN)
            return render("message.html", status=403, title="Wrong setup token", error=True, message=NEEDS_TOKEN)
        # The token leaves the address bar (and the browser history) at once: a cookie carries the grant on.
        response = make_response(redirect("/"))
        response.set_cookie(SETUP_COOKIE, grant, httponly=True, samesite="Lax",
                            secure=request.is_secure, max_age=24 * 3600)
        return response
    grant = _held_grant(settings)
    if grant is None:
        return render("message.html", status=403, title="Set-up needs the setup token", error=True,
                      message=NEEDS_TOKEN)
    browser = request.cookies.get(BROWSER_COOKIE) or secrets.token_urlsafe(24)
    fixed = os.environ.get("CI_REGISTRAR_PUBLIC_URL", "")
    channel = proxy_channel()
    # With a proxy channel GitHub never needs to reach this machine: the browser does, at the port
    # this service was told to use (not at whatever Host the request names).
    suggested = fixed or (f"http://127.0.0.1:{settings.port}" if channel else "")
    manifest = manifest_for(suggested or "https://ci-registrar.example.com")
    response = make_response(render(
        "onboarding.html", title="Set up CI Registrar", web_url=web_url(settings.github_api_url),
        credentials=str(settings.credentials_path), public_url=suggested, public_url_fixed=bool(fixed),
        channel=channel, loopback=not fixed and not channel and _is_loopback(request.host), loopback_hint=LOOPBACK_HINT,
        csrf=_csrf(grant, browser), permissions=_manifest_rows(manifest),
        events=manifest.get("default_events") or [], org=request.args.get("org", ""),
        max_name=MAX_NAME_LENGTH))
    response.set_cookie(BROWSER_COOKIE, browser, httponly=True, samesite="Lax", secure=request.is_secure,
                        max_age=STATE_TTL_S * 2)
    return response


@blueprint.post(START_PATH)
def start():
    """The token holder chose the public URL and the owner: a new pending state, then off to GitHub."""
    settings = get_settings()
    if settings.app_configured:
        return redirect("/")
    browser = request.cookies.get(BROWSER_COOKIE, "")
    grant = _held_grant(settings)
    if grant is None or not browser or \
            not hmac.compare_digest(request.form.get("csrf", ""), _csrf(grant, browser)):
        return render("message.html", status=403, title="Set-up needs the setup token", error=True,
                      message=NEEDS_TOKEN)
    public_url = os.environ.get("CI_REGISTRAR_PUBLIC_URL") or request.form.get("public_url", "").strip()
    problem = valid_public_url(public_url)
    org = request.form.get("org", "").strip() if request.form.get("owner") == "organization" else ""
    if not problem and request.form.get("owner") == "organization" and not _ORG.fullmatch(org):
        problem = f"`{org[:60]}` is not an organisation login (letters, digits and single hyphens, up to 39)"
    name = " ".join(request.form.get("name", "").split()) or default_app_name(org or None)
    problem = problem or app_name_problem(name)
    if problem:
        return render("message.html", status=400, title="Cannot start the registration", error=True,
                      message=problem, link="/", link_text="Back to the set-up page")
    state = secrets.token_urlsafe(24)
    _add_pending(settings, state, {"browser": _hash(browser), "created": time.time(), "org": org,
                                   "public_url": public_url})
    base = web_url(settings.github_api_url)
    path = f"/organizations/{org}/settings/apps/new" if org else "/settings/apps/new"
    return render("onboarding_redirect.html", title="Registering on GitHub",
                  action=f"{base}{path}?{urlencode({'state': state})}",
                  manifest=json.dumps(manifest_for(public_url, name)), owner=org or "your personal account")


def _app_jwt(app_id: int, pem: str) -> str:
    import jwt

    now = int(time.time())
    return jwt.encode({"iat": now - 60, "exp": now + 540, "iss": str(app_id)}, pem, algorithm="RS256")


def _verified_app(api_url: str, answer) -> dict | str:
    """The conversion's answer, checked by asking GitHub who the key belongs to; or why not."""
    if not isinstance(answer, dict):
        return "GitHub's answer was not a JSON object"
    app_id, pem, secret = answer.get("id"), answer.get("pem"), answer.get("webhook_secret")
    if isinstance(app_id, bool) or not isinstance(app_id, int) or app_id <= 0:
        return "GitHub's answer has no valid App id"
    if not isinstance(pem, str) or "PRIVATE KEY" not in pem or not isinstance(secret, str) or not secret:
        return "GitHub's answer has no private key or webhook secret"
    try:
        token = _app_jwt(app_id, pem)
    except Exception:
        return "the private key in GitHub's answer cannot sign a token"
    try:
        who = requests.get(f"{api_url}/app", timeout=30, headers={
            "Accept": "application/vnd.github+json", "Authorization": f"Bearer {token}"})
    except requests.RequestException:
        return "unreachable"
    if who.status_code != 200 or (who.json() if who.content else {}).get("id") != app_id:
        return f"GitHub did not accept the new App's key ({who.status_code})"
    return answer


@blueprint.get(CALLBACK_PATH)
def callback():
    settings = get_settings()
    code, state = request.args.get("code", ""), request.args.get("state", "")
    browser = request.cookies.get(BROWSER_COOKIE, "")
    pending = _read_pending(settings)
    record = pending.get(state) if state else None
    if record is None or not browser or not hmac.compare_digest(record.get("browser", ""), _hash(browser)):
        return render("message.html", status=400, title="Unknown registration", error=True,
                      message="This registration was not started in this browser, or has expired. "
                              "Start again from the set-up page (it needs the setup token).",
                      link="/", link_text="Set-up page")
    if record.get("done"):
        return _done_page(settings, record["done"])  # a repeated callback: the same answer
    if settings.app_configured:
        return redirect("/")
    if time.time() - record.get("created", 0) > STATE_TTL_S:
        return render("message.html", status=400, title="Registration expired", error=True,
                      message="More than an hour passed since it started. Start again.", link="/",
                      link_text="Set-up page")
    if not _CODE.match(code):
        return render("message.html", status=400, title="Missing code", error=True,
                      message="GitHub's redirect carried no valid code.", link="/", link_text="Set-up page")
    retry = f"{CALLBACK_PATH}?{urlencode({'code': code, 'state': state})}"
    with _locked(settings):
        record = _read_pending(settings).get(state) or record
        if record.get("done"):
            return _done_page(settings, record["done"])
        try:
            resp = requests.post(f"{settings.github_api_url}/app-manifests/{code}/conversions",
                                 headers={"Accept": "application/vnd.github+json"}, timeout=30)
        except requests.RequestException:
            return _unreachable(retry)
        if resp.status_code >= 500:
            return _unreachable(retry)
        if resp.status_code != 201:
            return render("message.html", status=502, title="GitHub refused the registration code", error=True,
                          message=f"GitHub answered {resp.status_code}: the code was used already or has expired "
                                  "(codes live one hour and work once). Start again.", link="/",
                          link_text="Set-up page")
        try:
            answer = resp.json()
        except ValueError:
            answer = None
        checked = _verified_app(settings.github_api_url, answer)
        if checked == "unreachable":
            return _unreachable(retry)
        if isinstance(checked, str):
            return render("message.html", status=502, title="The registration could not be saved", error=True,
                          message=f"Nothing was saved: {checked}.", link="/", link_text="Set-up page")
        app = checked
        write_private(settings.credentials_path, {
            "api_url": settings.github_api_url, "id": app["id"], "slug": app.get("slug"), "name": app.get("name"),
            "client_id": app.get("client_id"), "client_secret": app.get("client_secret"),
            "webhook_secret": app["webhook_secret"], "pem": app["pem"], "html_url": app.get("html_url"),
            "public_url": record.get("public_url"),
        })
        done = {"id": app["id"], "name": app.get("name") or app.get("slug"), "slug": app.get("slug"),
                "html_url": app.get("html_url")}
        pending = _read_pending(settings)
        pending[state] = {**record, "done": done}
        write_private(settings.data_dir / PENDING_FILE, {k: v for k, v in pending.items() if v.get("done")})
        # Onboarding is over: no token, no grant opens the set-up again.
        (settings.data_dir / TOKEN_FILE).unlink(missing_ok=True)
        (settings.data_dir / GRANTS_FILE).unlink(missing_ok=True)
    current_app.config["SETTINGS"] = reload_credentials(settings)
    return _done_page(settings, done)


def _unreachable(retry: str):
    return render("message.html", status=502, title="GitHub could not be reached", error=True,
                  message="The App may be registered on GitHub already, but its credentials have not arrived yet. "
                          "Nothing is lost: the code stays valid for an hour.", link=retry, link_text="Try again",
                  primary=True)


def _done_page(settings, done: dict):
    install = (done.get("html_url") or f"{web_url(settings.github_api_url)}/apps/{done.get('slug')}") \
        + "/installations/new"
    return render("onboarding_done.html", title="CI Registrar is registered", name=done.get("name"),
                  app_id=done.get("id"), install=install)
