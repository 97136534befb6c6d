"""The Flask app factory (and nothing else): every route lives in a bot/ module."""

from __future__ import annotations

from flask import Flask


def create_app(settings=None, queue=None) -> Flask:
    from bot import dashboard, onboarding, web, webhooks
    from bot.settings import load_settings

    app = Flask(__name__)
    app.config["SETTINGS"] = settings or load_settings()
    app.config["SETTINGS_FROM_ENV"] = settings is None
    app.config["MAX_CONTENT_LENGTH"] = webhooks.MAX_BODY
    if queue is not None:
        app.extensions["ci_registrar.queue"] = queue
    for blueprint in (web.blueprint, webhooks.blueprint, onboarding.blueprint, dashboard.blueprint):
        app.register_blueprint(blueprint)
    # Deliveries that pass every check skip Flask's per-request layers; the rest reach the view.
    app.wsgi_app = webhooks.IngressFastPath(app, app.wsgi_app)
    return app
