"""The web process's shared state (settings, queue) and its probes: /healthz, /readyz, /metrics."""

from __future__ import annotations

import threading
import time

from flask import Blueprint, Response, current_app, jsonify

from bot.infra import metrics

blueprint = Blueprint("probes", __name__)

_RELOAD_EVERY_S = 2.0
_lock = threading.Lock()


def get_settings(app=None):
    """This app's settings; re-read (at most every 2 s) while the App is not configured yet.

    Onboarding may finish in another gunicorn worker: its credentials file is then picked up here.
    """
    app = app or current_app._get_current_object()
    settings = app.config["SETTINGS"]
    if settings.app_configured or not app.config.get("SETTINGS_FROM_ENV", False):
        return settings
    now = time.monotonic()
    if now - app.config.get("SETTINGS_READ_AT", 0.0) >= _RELOAD_EVERY_S:
        from bot.infra.settings import load_settings

        app.config["SETTINGS_READ_AT"] = now
        settings = app.config["SETTINGS"] = load_settings()
    return settings


def get_queue(app=None):
    """This process's queue, opened on first use (after gunicorn forks, never before)."""
    app = app or current_app._get_current_object()
    queue = app.extensions.get("ci_registrar.queue")
    if queue is None:
        with _lock:
            queue = app.extensions.get("ci_registrar.queue")
            if queue is None:
                from bot.worker.queue import open_queue

                queue = app.extensions["ci_registrar.queue"] = open_queue(app.config["SETTINGS"])
    return queue


def store_ready(settings) -> bool:
    """The store answers and has this service's tables."""
    from sqlalchemy import inspect

    from bot.store.db import get_engine

    return inspect(get_engine(settings.database_url)).has_table("deliveries")


@blueprint.get("/healthz")
def healthz():
    return jsonify(status="alive")


@blueprint.get("/readyz")
def readyz():
    settings = get_settings()
    missing = {}
    try:
        if not store_ready(settings):
            missing["store"] = "store reachable but not migrated (run `ci-registrar db upgrade`)"
    except Exception as exc:
        missing["store"] = f"store unreachable: {type(exc).__name__}"
    try:
        get_queue().storage.ping()
    except Exception as exc:
        missing["queue"] = f"queue unreachable: {type(exc).__name__}"
    # `serve` runs its workers in this process: accepting deliveries nobody here will run is not
    # ready (a web-only process, gunicorn or `serve --no-worker`, registers no consumer).
    consumer = current_app.extensions.get("ci_registrar.consumer")
    if consumer is not None and consumer.workers_alive() == 0:
        missing["workers"] = "no worker thread alive"
    if not settings.app_configured:
        absent = [name for name, value in (("GITHUB_APP_ID", settings.app_id), ("GITHUB_PRIVATE_KEY", settings.private_key),
                                           ("GITHUB_WEBHOOK_SECRET", settings.webhook_secret)) if not value]
        missing["credentials"] = "App credentials not loaded: " + ", ".join(absent)
    # Dead letters are reported, not a reason to be unready: they are past jobs an operator should
    # look at (status page, the ci_registrar_dead_letters gauge); taking this instance out of the
    # load balancer for them would only drop new deliveries as well.
    dead = _dead_letters(settings)
    extra = {} if dead is None else {"dead_letters": dead}
    if missing:
        return jsonify(status="not ready", missing=missing, **extra), 503
    return jsonify(status="ready", **extra)


def _dead_letters(settings) -> int | None:
    from bot.store import service as store

    try:
        return store.dead_letter_count(settings.database_url)
    except Exception:
        return None


def _metrics_allowed() -> bool:
    """An internal client (CI_REGISTRAR_METRICS_ALLOW, default loopback; behind a proxy, the address
    the configured proxy passes on: bot/web/client_address.py) reads /metrics as it is; anyone else
    needs CI_REGISTRAR_METRICS_TOKEN as a Bearer token: queue depth and per-repository counts are
    not public."""
    import hmac
    import os

    from flask import request

    from bot.web.client_address import is_internal

    if is_internal(request.environ):
        return True
    token = os.environ.get("CI_REGISTRAR_METRICS_TOKEN")
    if not token:
        return False
    given = request.headers.get("Authorization", "")
    return hmac.compare_digest(given.encode(), f"Bearer {token}".encode())


@blueprint.get("/metrics")
def metrics_endpoint():
    if not _metrics_allowed():
        return jsonify(error="metrics need CI_REGISTRAR_METRICS_TOKEN as a Bearer token "
                       "(or a client in CI_REGISTRAR_METRICS_ALLOW)"), 403
    try:
        queue = get_queue()
    except Exception:
        queue = None
    body, content_type = metrics.render(queue, _dead_letters(get_settings()))
    return Response(body, content_type=content_type)
