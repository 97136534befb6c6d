"""The Flask app factory (and nothing else): every route lives in a bot/ module."""

from __future__ import annotations

from pathlib import Path

from flask import Flask


def create_app(settings=None, queue=None) -> Flask:
    from bot.web import dashboard
    from bot.web import onboarding
    from bot.web import pages
    from bot.web import signin
    from bot.web import status
    from bot.web import probes as web
    from bot.web import webhooks
    from bot.web.client_address import TrustedProxies
    from bot.infra.settings import load_settings

    here = Path(__file__).resolve().parent
    app = Flask(__name__, template_folder=str(here / "templates"), static_folder=None)
    app.config["SETTINGS"] = settings or load_settings()
    app.config["SETTINGS_FROM_ENV"] = settings is None
    app.config["MAX_CONTENT_LENGTH"] = webhooks.MAX_BODY
    if queue is not None:
        app.extensions["ci_registrar.queue"] = queue
    app.secret_key = signin.session_secret(app.config["SETTINGS"])
    app.config.update(SESSION_COOKIE_HTTPONLY=True, SESSION_COOKIE_SAMESITE="Lax", SESSION_COOKIE_NAME="cireg_session")
    for blueprint in (web.blueprint, webhooks.blueprint, onboarding.blueprint, signin.blueprint, status.blueprint,
                      dashboard.blueprint):
        app.register_blueprint(blueprint)
    pages.register(app)
    # Deliveries that pass every check skip Flask's per-request layers; the rest reach the view.
    app.wsgi_app = webhooks.IngressFastPath(app, app.wsgi_app)
    # Outermost: the client's address from a configured proxy's headers, and only from it.
    app.wsgi_app = TrustedProxies(app.wsgi_app)
    return app
