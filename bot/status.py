"""The status page once the App is configured: App name, installations, queue depth, last deliveries."""

from __future__ import annotations

import html
import time

from flask import current_app

_APP_NAME_TTL_S = 300


def _app_name(settings) -> str:
    """The App's name from GET /app (cached five minutes); the credentials file's, if GitHub does not answer."""
    cached = current_app.config.get("APP_NAME")
    if cached and time.monotonic() - cached[1] < _APP_NAME_TTL_S:
        return cached[0]
    from bot.settings import _read_credentials

    name = _read_credentials(settings.credentials_path).get("name") or f"App {settings.app_id}"
    try:
        from bot.github.client import GitHub
        from bot.github.retry import RetryPolicy

        gh = GitHub(settings.github_api_url, settings.app_id, settings.private_key,
                    policy=RetryPolicy(attempts=1, read_timeout_s=5))
        name = gh.app_request("GET", "/app", "/app").get("name") or name
    except Exception:
        pass
    current_app.config["APP_NAME"] = (name, time.monotonic())
    return name


def status_page(settings):
    from bot.onboarding import PAGE
    from bot.store import service as store
    from bot.web import get_queue

    esc = html.escape
    parts = [f"<h1>{esc(_app_name(settings))}</h1>", f"<p>GitHub: <code>{esc(settings.github_api_url)}</code></p>"]
    try:
        queue = get_queue()
        parts.append(f"<p>Queue: {queue.depth()} waiting, {queue.inflight()} running "
                     f"({'Redis' if settings.redis_url else 'SQLite'})</p>")
    except Exception as exc:
        parts.append(f"<p>Queue unreachable: {esc(type(exc).__name__)}</p>")
    try:
        found = store.installations(settings.database_url)
        recent = store.recent_deliveries(settings.database_url)
        dead = store.dead_letters(settings.database_url)
    except Exception as exc:
        parts.append(f"<p>Store unreachable: {esc(type(exc).__name__)}</p>")
        found, recent, dead = [], [], []
    parts.append("<h2>Installations</h2>")
    if found:
        parts.append("<table><tr><th>id</th><th>account</th><th>repositories</th><th>state</th></tr>")
        for inst, repos in found:
            state = "suspended" if inst.suspended else "active"
            shown = ", ".join(repos) if repos else (inst.repository_selection or "")
            parts.append(f"<tr><td>{inst.id}</td><td>{esc(inst.account)}</td><td>{esc(shown)}</td><td>{state}</td></tr>")
        parts.append("</table>")
    else:
        parts.append("<p>None recorded yet.</p>")
    if dead:
        parts.append(f"<h2>Dead letters ({len(dead)})</h2>")
        parts.append("<p>Jobs that crashed their process too often; their check runs were completed with "
                     "the reason. Redeliver one from the App's settings on GitHub to try it again.</p>")
        parts.append("<table><tr><th>delivery</th><th>event</th><th>repository</th><th>attempts</th><th>outcome</th></tr>")
        for d in dead:
            event = d.event + (f".{d.action}" if d.action else "")
            parts.append(f"<tr><td><code>{esc(d.delivery_id)}</code></td><td>{esc(event)}</td>"
                         f"<td>{esc(d.repository or '')}</td><td>{d.attempts}</td><td>{esc(d.outcome or '')}</td></tr>")
        parts.append("</table>")
    parts.append("<h2>Last deliveries</h2>")
    if recent:
        parts.append("<table><tr><th>delivery</th><th>event</th><th>repository</th><th>status</th>"
                     "<th>attempts</th><th>outcome</th><th>started</th></tr>")
        for d in recent:
            event = d.event + (f".{d.action}" if d.action else "")
            parts.append(f"<tr><td><code>{esc(d.delivery_id)}</code></td><td>{esc(event)}</td>"
                         f"<td>{esc(d.repository or '')}</td><td>{esc(d.status)}</td><td>{d.attempts}</td>"
                         f"<td>{esc(d.outcome or '')}</td><td>{esc(str(d.started_at or ''))}</td></tr>")
        parts.append("</table>")
    else:
        parts.append("<p>None processed yet.</p>")
    return PAGE.format(title="CI Registrar", body="\n".join(parts))
