"""Sign in with GitHub, for the pages: the App's own OAuth client (the manifest conversion returns
its client id and secret), so a person sees only the installations and repositories GitHub says
they can see. /healthz, /readyz and the webhook stay open; /metrics takes a token (web.py).

The user's access token is used during sign-in only (who they are, which of this App's
installations and repositories they can reach) and never stored; the browser keeps a random
session id in a signed cookie, and the store keeps the rest (bot.store.web_sessions).
"""

from __future__ import annotations

import hmac
import os
import secrets
from dataclasses import dataclass
from functools import wraps
from urllib.parse import urlencode, urlsplit

import requests
from flask import Blueprint, redirect, request, session

from bot.web.csrf import CSRF_KEY, csrf_ok
from bot.web.pages import render
from bot.infra.settings import github_web_url, write_private
from bot.web.probes import get_settings

blueprint = Blueprint("signin", __name__)

SESSION_KEY_FILE = "session-key"
NOT_SET_UP = ("Sign-in is not set up: it needs the App's OAuth client id and secret. Onboarding saves them; "
              "a deployment configured by environment sets GITHUB_CLIENT_ID and GITHUB_CLIENT_SECRET.")


def session_secret(settings) -> str:
    """The key that signs session cookies: CI_REGISTRAR_SESSION_SECRET, else a 0600 file made once."""
    if os.environ.get("CI_REGISTRAR_SESSION_SECRET"):
        return os.environ["CI_REGISTRAR_SESSION_SECRET"]
    path = settings.data_dir / SESSION_KEY_FILE
    try:
        key = path.read_text().strip()
    except OSError:
        key = ""
    if len(key) < 32:
        write_private(path, secrets.token_urlsafe(48))
        key = path.read_text().strip()  # another process may have won the race: theirs is the key
    return key


def oauth_client(settings) -> tuple[str, str] | None:
    return (settings.client_id, settings.client_secret) if settings.client_id and settings.client_secret else None


@dataclass(frozen=True)
class Viewer:
    login: str
    installations: frozenset[int]
    repositories: frozenset[str]

    def sees(self, repository: str | None) -> bool:
        return repository is not None and repository in self.repositories


def current_viewer() -> Viewer | None:
    from bot.store import web_sessions

    row = web_sessions.get(get_settings().database_url, session.get("sid"))
    if row is None:
        return None
    return Viewer(row.login, frozenset(row.installations), frozenset(row.repositories))


def _safe_next(path: str | None) -> str:
    # Only a path on this site: never a scheme, a host or a protocol-relative //host.
    if not path or not path.startswith("/") or path.startswith("//") or "\\" in path or urlsplit(path).netloc:
        return "/"
    return path


def signed_in(view):
    """The page needs a signed-in viewer: passed as `viewer=`; otherwise off to GitHub's sign-in."""
    @wraps(view)
    def wrapper(*args, **kwargs):
        viewer = current_viewer()
        if viewer is None:
            return redirect("/login?" + urlencode({"next": request.full_path.rstrip("?")}))
        return view(*args, viewer=viewer, **kwargs)
    return wrapper


@blueprint.get("/login")
def login():
    settings = get_settings()
    client = oauth_client(settings)
    if not settings.app_configured or client is None:
        return render("message.html", status=503, title="Sign-in is not available", error=True, message=NOT_SET_UP)
    state = secrets.token_urlsafe(24)
    session["oauth_state"] = state
    session["next"] = _safe_next(request.args.get("next"))
    query = {"client_id": client[0], "state": state}
    base = settings.public_url
    if base:  # else GitHub uses the App's registered callback URL; the Host header is never used
        query["redirect_uri"] = base.rstrip("/") + "/login/callback"
    return redirect(f"{github_web_url(settings.github_api_url)}/login/oauth/authorize?{urlencode(query)}")


def _visible(api_url: str, token: str) -> tuple[str, set[int], set[str]]:
    """(login, installation ids, repository full names) this user can see of this App, per GitHub."""
    from github import Auth, Github

    gh = Github(auth=Auth.Token(token), base_url=api_url, per_page=100, retry=None,
                seconds_between_requests=0, seconds_between_writes=0)
    user = gh.get_user()
    installations, repositories = set(), set()
    for installation in user.get_installations():
        installations.add(installation.id)
        # Installation.get_repos() asks /installation/repositories (an installation token's view);
        # a user's view of an installation is /user/installations/{id}/repositories.
        page = 1
        while True:
            _headers, data = gh.requester.requestJsonAndCheck(
                "GET", f"/user/installations/{installation.id}/repositories", parameters={"per_page": 100, "page": page})
            batch = data.get("repositories", [])
            repositories.update(r["full_name"] for r in batch)
            if len(batch) < 100:
                break
            page += 1
    return user.login, installations, repositories


@blueprint.get("/login/callback")
def login_callback():
    from bot.store import web_sessions

    settings = get_settings()
    client = oauth_client(settings)
    expected = session.pop("oauth_state", None)
    state, code = request.args.get("state", ""), request.args.get("code", "")
    if client is None or not expected or not hmac.compare_digest(state, expected) or not code:
        return render("message.html", status=400, title="Sign-in failed", error=True,
                      message="This sign-in was not started here, or has already been used.", link="/login",
                      link_text="Sign in again")
    try:
        answer = requests.post(f"{github_web_url(settings.github_api_url)}/login/oauth/access_token", timeout=30,
                               data={"client_id": client[0], "client_secret": client[1], "code": code},
                               headers={"Accept": "application/json"})
        token = (answer.json() if answer.ok else {}).get("access_token")
        if not token:
            return render("message.html", status=400, title="Sign-in failed", error=True,
                          message="GitHub did not accept the sign-in code.", link="/login", link_text="Sign in again")
        login_name, installations, repositories = _visible(settings.github_api_url, token)
    except (requests.RequestException, ValueError, OSError):
        return render("message.html", status=502, title="GitHub could not be reached", error=True,
                      message="Signing in needs GitHub; try again in a moment.", link="/login", link_text="Try again")
    except Exception as exc:  # PyGithub's errors: GitHub refused a call
        return render("message.html", status=502, title="Sign-in failed", error=True,
                      message=f"GitHub refused a call while signing in ({type(exc).__name__}).", link="/login",
                      link_text="Try again")
    target = session.pop("next", "/")
    session.clear()
    session["sid"] = web_sessions.create(settings.database_url, login_name, installations, repositories)
    session["login"] = login_name
    return redirect(_safe_next(target))


@blueprint.get("/logout")
def logout_page():
    """A link or another site's page can only show this: signing out takes the form's POST."""
    return render("logout.html", title="Sign out")


@blueprint.post("/logout")
def logout():
    from bot.store import web_sessions

    if not csrf_ok(request.form.get(CSRF_KEY)):
        # Another site's form (or a stale page): nothing is changed.
        return render("message.html", status=403, title="Not signed out", error=True,
                      message="This sign-out did not come from this site's own form.", link="/logout",
                      link_text="Sign out")
    web_sessions.delete(get_settings().database_url, session.get("sid"))
    session.clear()
    return redirect("/")
