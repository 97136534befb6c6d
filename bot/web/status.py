"""The status page once the App is configured, and the on-demand audit page: what the signed-in
person may see of installations, deliveries and on-demand runs."""

from __future__ import annotations

import time

from flask import Blueprint, current_app, request

from bot.web.pages import render
from bot.web.signin import signed_in
from bot.web.probes import get_settings

blueprint = Blueprint("status", __name__)

_APP_NAME_TTL_S = 300


def app_identity(settings) -> tuple[str, str | None]:
    """(name, install URL) from GET /app (cached five minutes); the credentials file's if GitHub does not answer."""
    cached = current_app.config.get("APP_NAME")
    if cached and time.monotonic() - cached[2] < _APP_NAME_TTL_S:
        return cached[0], cached[1]
    from bot.infra.settings import read_credentials

    creds = read_credentials(settings.credentials_path)
    name = creds.get("name") or "CI Registrar"
    html_url = creds.get("html_url")
    try:
        from bot.github.client import GitHub
        from bot.github.retry import RetryPolicy

        gh = GitHub(settings.github_api_url, settings.app_id, settings.private_key,
                    policy=RetryPolicy(attempts=1, read_timeout_s=5))
        app = gh.app_request("GET", "/app", "/app")
        name, html_url = app.get("name") or name, app.get("html_url") or html_url
    except Exception:
        pass
    install = f"{html_url}/installations/new" if html_url else None
    current_app.config["APP_NAME"] = (name, install, time.monotonic())
    return name, install


@blueprint.get("/")
def home():
    """The set-up page until an App is configured (bot.web.onboarding), the status page after."""
    settings = get_settings()
    if not settings.app_configured:
        from bot.web.onboarding import setup_page

        return setup_page(settings)
    return _status(settings)


@signed_in
def _status(settings, viewer):
    from bot.store import ondemand
    from bot.store import service as store
    from bot.web.probes import get_queue

    name, install = app_identity(settings)
    queue, queue_error = None, None
    try:
        q = get_queue()
        queue = {"waiting": q.depth(), "running": q.inflight()}
    except Exception as exc:
        queue_error = f"unreachable ({type(exc).__name__})"
    installations, deliveries, entries, dead, store_error = [], [], [], [], None
    try:
        for inst, repos in store.installations(settings.database_url):
            if inst.id not in viewer.installations:
                continue
            installations.append({"id": inst.id, "account": inst.account, "selection": inst.repository_selection or "",
                                  "repositories": [r for r in repos if viewer.sees(r)],
                                  "state": "suspended" if inst.suspended else "active"})
        for d in store.recent_deliveries(settings.database_url, limit=200):
            if viewer.sees(d.repository) and len(deliveries) < 20:
                deliveries.append({"delivery_id": d.delivery_id, "event": d.event + (f".{d.action}" if d.action else ""),
                                   "repository": d.repository, "status": d.status, "attempts": d.attempts,
                                   "outcome": d.outcome or "", "started": str(d.started_at or "")[:19]})
        entries = ondemand.audit_entries(settings.database_url, limit=10, repositories=viewer.repositories)
        dead = [{"delivery_id": d.delivery_id, "event": d.event + (f".{d.action}" if d.action else ""),
                 "repository": d.repository, "attempts": d.attempts, "outcome": d.outcome or ""}
                for d in store.dead_letters(settings.database_url) if viewer.sees(d.repository)]
    except Exception as exc:
        store_error = type(exc).__name__
    return render("status.html", title=name, app_name=name, install_url=install, api_url=settings.github_api_url,
                  queue=queue, queue_error=queue_error, backend="Redis" if settings.redis_url else "SQLite",
                  installations=installations, deliveries=deliveries, entries=entries, dead=dead,
                  store_error=store_error,
                  nav=True, here="status", viewer=viewer.login)


@blueprint.get("/audit")
@signed_in
def audit_page(viewer):
    from bot.store import ondemand

    settings = get_settings()
    repo = request.args.get("repo") or None
    if repo is not None and not viewer.sees(repo):
        repo = None  # never a hint that a repository exists when the viewer cannot see it
    entries = ondemand.audit_entries(settings.database_url, repository=repo, limit=500,
                                     repositories=viewer.repositories)
    name, _install = app_identity(settings)
    return render("audit.html", title="On-demand runs", app_name=name, entries=entries, repo=repo,
                  repositories=sorted(viewer.repositories), nav=True, here="audit", viewer=viewer.login)
